"""Convergence of `Bridge(model)` (PyBullet stepping) to the reference engine as dt shrinks, for every bundled model.

For each model: max |q_bridge − q_reference| over a common time grid for three steps dt, 2dt → dt → dt/2, and the
observed order log2(e(2dt)/e(dt)) (1 expected: PyBullet's semi-implicit Euler). References: the reference engine
(`biobullet.simulate`, DOP853, rtol 1e-10), except the prosthesis (the study's fast right-hand side, checked
against the engine to 1e-9, Radau rtol 1e-10: the general engine needs minutes per 0.1 s there) and the elastic
robot (the engine on the bridge's own segmented model, 4 segments, air damping as in the file).

    PYTHONPATH=plugin python tools/bridge_convergence.py [--out out/bridge_convergence.md]

Prints a markdown table (the README's) and writes it atomically to --out. Progress on stderr.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

# model file, horizon (s), steps
CASES = [
    ("shoulder_rhythm.urdf", 0.2, (4e-4, 2e-4, 1e-4)),
    ("shoulder_simplified.urdf", 0.2, (4e-4, 2e-4, 1e-4)),
    ("arm7.urdf", 0.2, (4e-4, 2e-4, 1e-4)),
    ("humanoid.urdf", 0.2, (4e-4, 2e-4, 1e-4)),
    ("fourbar_knee.urdf", 0.2, (4e-4, 2e-4, 1e-4)),
    ("andrews_squeezer.urdf", 0.005, (4e-5, 2e-5, 1e-5)),
    ("prosthesis_fourbar.urdf", 0.1, (4e-4, 2e-4, 1e-4)),
    ("elastic_robot_3link.urdf", 0.02, None),     # steps from the stability limit: dt, dt/2, dt/4
]


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _reference(name: str, model, t_end: float):
    """A callable t ↦ q (rows) of the reference solution."""
    import biobullet
    if name == "prosthesis_fourbar.urdf":
        from scipy.integrate import solve_ivp
        from biobullet_studies.prosthesis_model import FastProsthesis
        fast = FastProsthesis(str(model.file))
        q0, v0 = model.initial_state()
        sol = solve_ivp(lambda t, y: fast.rhs(t, y), (0.0, t_end), [*q0, *v0], method="Radau", rtol=1e-10,
                        atol=1e-12, dense_output=True)
        return lambda t: sol.sol(t).T[:, :2]
    grid = np.linspace(0.0, t_end, 2001)
    trajectory = biobullet.simulate(model, t_end, rtol=1e-10, atol=1e-12, t_eval=grid, progress=False)
    q = np.asarray(trajectory.q)
    return lambda t: np.column_stack([np.interp(t, grid, q[:, k]) for k in range(q.shape[1])])


def main(argv=None) -> int:
    import biobullet
    from biobullet.bridge import Bridge
    from biobullet.core.atomic import write_text
    from biobullet.model.bundled import bundled_model
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "out" / "bridge_convergence.md"))
    parser.add_argument("--only", default=None, help="one model file name")
    args = parser.parse_args(argv)
    lines = ["| model | elements | t_end (s) | dt (s) | max abs(Δq) | order |", "|---|---|---|---|---|---|"]
    for name, t_end, steps in CASES:
        if args.only and args.only != name:
            continue
        source = biobullet.load_model(bundled_model(name))
        with Bridge(source) as probe:
            model, default_dt = probe.model, probe.dt
        if steps is None:
            steps = (default_dt, default_dt / 2, default_dt / 4)
        tags = sorted({e.tag for e in source.description.elements} | ({"joint_function"} if
                      source.description.joint_functions else set()))
        wall = time.perf_counter()
        _say(f"[convergence] {name}: reference …")
        reference = _reference(name, model, t_end)
        errors = []
        for dt in steps:
            with Bridge(source, dt=dt, record=True) as bridge:
                for _ in range(int(round(t_end / dt))):
                    bridge.step()
                trajectory = bridge.trajectory()
            t = np.asarray(trajectory.t)
            inside = t <= t_end * (1 + 1e-12)   # a run that ends one step past t_end: no extrapolated reference
            errors.append(float(np.abs(np.asarray(trajectory.q)[inside] - reference(t[inside])).max()))
            _say(f"[convergence] {name}: dt = {dt:.3g} s → {errors[-1]:.3e}")
        for k, (dt, error) in enumerate(zip(steps, errors)):
            order = "" if k == 0 else f"{np.log2(errors[k - 1] / error):.2f}"
            lines.append(f"| {name if k == 0 else ''} | {', '.join(tags) if k == 0 else ''} | "
                         f"{t_end if k == 0 else ''} | {dt:.3g} | {error:.2e} | {order} |")
        _say(f"[convergence] {name}: {time.perf_counter() - wall:.0f} s")
    table = "\n".join(lines)
    print(table)
    write_text(args.out, table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
