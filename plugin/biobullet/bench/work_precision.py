"""Work–precision: error at t_end against a tight reference versus wall time, biobullet against the engines a
user would pick instead, in one run (`biobullet bench --work-precision`, tests/benchmarks/test_work_precision.py).

Models (`CASES`): the polynomially coupled 3-link chain (urdf/coupled_chain.urdf, 1 s), the four-bar knee
(urdf/fourbar_knee.urdf, 1 s passive swing from 0.5 rad), Andrews' squeezer (0–0.03 s) and a ball drop on
compliant ground (contact, 0.3 s).
Engines: biobullet's reference engine (each integrator over an rtol sweep, atol = 1e-3 rtol, the whole
`simulate` call timed: integration and the default 1,001-sample trajectory with energies); MuJoCo (RK4 and
implicitfast over a dt sweep, stepped in C by `mujoco.rollout`; model from the same numbers,
`bench.competitors.mjcf_text`); Pinocchio's `constraintDynamics` (proximal) with SciPy's DOP853 where it applies
(loop models without force elements: the four-bar).
Error: max |x_joint(t_end) − x_ref| over every joint coordinate (rad or m), x_ref from biobullet's DOP853 at
rtol 1e-13. The contact case compares each engine with its own tightest run instead (MuJoCo's soft contact is a
different law: the two references differ by `reference_gap`). Times are the best of `repeats` runs.
"""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Callable

import numpy as np

METHODS = ("DOP853", "RK45", "Radau", "LSODA")
RTOLS = tuple(10.0 ** -k for k in range(3, 12))
STEPS = (100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600)
TARGETS = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8)
DROP = {"normal_law": "kelvin_voigt", "stiffness": "1e5", "damping": "50"}


def _drop_model(folder: str):
    from biobullet.contact.testbed import drop_urdf
    from biobullet.loader import load_text
    return load_text(drop_urdf(DROP, mass=1.0, radius=0.05), folder, name="ball_drop.urdf")


def cases(folder: str) -> dict[str, dict[str, Any]]:
    """name → {model, t_end, initial, self_reference}."""
    from biobullet.loader import load_model
    from biobullet.model.bundled import bundled_model
    return {
        "coupled_chain": {"model": load_model(bundled_model("coupled_chain.urdf")), "t_end": 1.0, "initial": None},
        "fourbar_knee": {"model": load_model(bundled_model("fourbar_knee.urdf")), "t_end": 1.0,
                         "initial": {"knee_A": 0.5}},
        "andrews": {"model": load_model(bundled_model("andrews_squeezer.urdf")), "t_end": 0.03, "initial": None},
        "ball_drop": {"model": _drop_model(folder), "t_end": 0.3, "initial": {"drop": 0.15},
                      "self_reference": True},
    }


def _best(function: Callable[[], tuple[np.ndarray, float]], repeats: int) -> tuple[np.ndarray, float]:
    best, x = np.inf, None
    for _ in range(repeats):
        x, wall = function()
        best = min(best, wall)
    return x, best


def _biobullet(model, t_end, initial, method, rtol, final_only=False):
    from biobullet.integrate import simulate
    started = time.perf_counter()
    trajectory = simulate(model, t_end, method=method, rtol=rtol, atol=rtol * 1e-3, initial=initial,
                          progress=False,
                          t_eval=np.array([0.0, t_end]) if final_only else None)
    wall = time.perf_counter() - started
    return trajectory.positions[-1].copy(), wall


def measure_case(name: str, case: dict[str, Any], *, quick: bool = False, repeats: int = 2,
                 log: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """All curves of one model: {engine label: [{"setting", "error", "wall"}…]} plus the reference."""
    from biobullet.bench import competitors
    from biobullet.core.errors import SolverError
    from biobullet.integrate import simulate

    model, t_end, initial = case["model"], case["t_end"], case["initial"]
    log(f"work-precision: {name}: reference …")
    reference = simulate(model, t_end, rtol=1e-13, atol=1e-15, initial=initial, progress=False,
                         t_eval=np.array([0.0, t_end]))
    x0, xd0, x_ref = reference.positions[0], reference.velocities[0], reference.positions[-1]
    methods = ("DOP853", "Radau") if quick else METHODS
    rtols = RTOLS[::2] if quick else RTOLS
    steps = STEPS[::2] if quick else STEPS
    curves: dict[str, list[dict[str, float]]] = {}
    failures: list[dict[str, Any]] = []
    own_reference = bool(case.get("self_reference"))
    for method in methods:
        rows = []
        for rtol in rtols:
            if method != "DOP853" and rtol < 1e-10:
                continue   # implicit and multistep methods at 1e-11: minutes for nothing new
            try:
                x, wall = _best(lambda: _biobullet(model, t_end, initial, method, rtol), repeats)
            except SolverError as exc:   # recorded, not hidden: the curve simply lacks this point
                failures.append({"engine": f"biobullet {method}", "setting": rtol, "error": str(exc)[:300]})
                log(f"work-precision: {name}: biobullet {method} rtol {rtol:g} failed")
                continue
            rows.append({"setting": rtol, "error": float(np.max(np.abs(x - x_ref))), "wall": wall})
        curves[f"biobullet {method}"] = rows
        log(f"work-precision: {name}: biobullet {method} done")
    # what the default output costs: DOP853 asked for the final state only (like Pinocchio's runs here); kept out
    # of the biobullet-vs-MuJoCo ratios, which use the default 1,001-sample trajectory
    rows = []
    for rtol in rtols:
        x, wall = _best(lambda: _biobullet(model, t_end, initial, "DOP853", rtol, final_only=True), repeats)
        rows.append({"setting": rtol, "error": float(np.max(np.abs(x - x_ref))), "wall": wall})
    curves["final-state-only biobullet DOP853"] = rows
    result: dict[str, Any] = {"t_end": t_end, "initial": initial, "curves": curves,
                              "reference": {"engine": "biobullet DOP853 rtol 1e-13", "x": x_ref.tolist()},
                              "not_compared": {}, "failures": failures}
    if competitors.available("mujoco"):
        mujoco_ref = None
        for integrator in ("RK4", "implicitfast"):
            rows = []
            try:
                for n in steps:
                    run = competitors.MujocoRun(model, t_end / n, integrator)
                    x, wall = _best(lambda: run.run(x0, xd0, t_end), repeats)
                    rows.append({"setting": t_end / n, "x": x, "wall": wall})
            except competitors.Unsupported as exc:
                result["not_compared"]["MuJoCo"] = str(exc)
                break
            if own_reference and mujoco_ref is None:   # MuJoCo's own tight solution: RK4 at dt / 4
                mujoco_ref = competitors.MujocoRun(model, t_end / (4 * steps[-1]), "RK4").run(x0, xd0, t_end)[0]
                result["reference_gap"] = float(np.max(np.abs(mujoco_ref - x_ref)))
            target = mujoco_ref if own_reference else x_ref
            curves[f"MuJoCo {integrator}"] = [{"setting": r["setting"], "wall": r["wall"],
                                               "error": float(np.max(np.abs(r["x"] - target)))} for r in rows]
            log(f"work-precision: {name}: MuJoCo {integrator} done")
    else:
        result["not_compared"]["MuJoCo"] = "mujoco is not installed (pip install '.[bench]')"
    try:
        rhs = competitors.pinocchio_fourbar_rhs(model)
        rows = []
        for rtol in rtols:
            x, wall = _best(lambda: competitors.pinocchio_run(rhs, x0, xd0, t_end, "DOP853", rtol), repeats)
            rows.append({"setting": rtol, "error": float(np.max(np.abs(x - x_ref))), "wall": wall})
        curves["Pinocchio constraintDynamics + DOP853"] = rows
    except competitors.Unsupported as exc:
        result["not_compared"]["Pinocchio"] = str(exc)
    result["time_to_reach"] = time_to_reach(curves)
    result["ratio_biobullet_to_mujoco"] = ratios(result["time_to_reach"])
    return result


def time_to_reach(curves: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, float | None]]:
    """Per engine family (biobullet, MuJoCo, Pinocchio) and target error: the least wall time of any of its runs
    whose error is ≤ the target (None: no run got there)."""
    out: dict[str, dict[str, float | None]] = {}
    for family in ("biobullet", "MuJoCo", "Pinocchio", "final-state-only"):
        rows = [r for label, rs in curves.items() if label.startswith(family) for r in rs]
        if not rows:
            continue
        out[family] = {f"{e:g}": min((r["wall"] for r in rows if r["error"] <= e), default=None) for e in TARGETS}
    return out


def ratios(reach: dict[str, dict[str, float | None]]) -> dict[str, float | None]:
    """biobullet's time / MuJoCo's time to reach each target error (< 1: biobullet first)."""
    if "biobullet" not in reach or "MuJoCo" not in reach:
        return {}
    out = {}
    for key, mine in reach["biobullet"].items():
        theirs = reach["MuJoCo"][key]
        out[key] = None if mine is None or theirs is None else mine / theirs
    return out


def plot(name: str, result: dict[str, Any], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from biobullet.core import atomic
    fig, ax = plt.subplots(figsize=(7, 5))
    styles = {"biobullet": "-o", "MuJoCo": "--s", "Pinocchio": ":^", "final-state-only": "-.x"}
    for label, rows in result["curves"].items():
        rows = [r for r in rows if r["error"] > 0]
        if rows:
            style = styles[label.split()[0]]
            ax.loglog([r["wall"] for r in rows], [r["error"] for r in rows], style, ms=4, label=label)
    ax.axhline(1e-6, color="grey", lw=0.6)
    ax.set_xlabel("wall time [s]")
    ax.set_ylabel("max joint error at t_end" + (" (vs own reference)" if "reference_gap" in result else ""))
    ax.set_title(f"work–precision: {name} (t_end = {result['t_end']:g} s)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    fig.tight_layout()
    atomic.save_figure(fig, path, dpi=120)
    plt.close(fig)


def run_work_precision(*, quick: bool = False, out: str | os.PathLike[str] = "out/bench", repeats: int | None = None,
                       only: tuple[str, ...] | None = None, log: Callable[[str], None] | None = None
                       ) -> dict[str, Any]:
    """Every case (or `only`), one plot per model (`out`/work_precision_NAME.png) and `out`/work_precision.json."""
    from biobullet.core.atomic import write_text

    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    out = os.fspath(out)
    os.makedirs(out, exist_ok=True)
    repeats = repeats if repeats is not None else (1 if quick else 2)
    summary: dict[str, Any] = {"quick": quick, "repeats": repeats, "models": {}}
    for name, case in cases(os.path.join(out, "models")).items():
        if only and name not in only:
            continue
        result = measure_case(name, case, quick=quick, repeats=repeats, log=log)
        plot(name, result, os.path.join(out, f"work_precision_{name}.png"))
        summary["models"][name] = result
    write_text(os.path.join(out, "work_precision.json"), json.dumps(summary, indent=2) + "\n")
    return summary


def format_work_precision(summary: dict[str, Any]) -> str:
    lines = ["work–precision: wall time [ms] to reach each max joint error at t_end (least over settings)"]
    for name, result in summary["models"].items():
        lines.append(f"\n{name} (t_end = {result['t_end']:g} s)")
        lines.append("  " + f"{'engine':<17}" + "".join(f"{e:>10g}" for e in TARGETS))
        for family, row in result["time_to_reach"].items():
            cells = "".join(f"{(v * 1e3 if v is not None else float('nan')):>10.1f}" for v in row.values())
            lines.append(f"  {family:<17}{cells}")
        ratio = result["ratio_biobullet_to_mujoco"]
        if ratio:
            lines.append("  " + f"{'bb/MuJoCo':<17}" + "".join(
                f"{(v if v is not None else float('nan')):>10.2f}" for v in ratio.values()))
        for failure in result.get("failures", []):
            lines.append(f"  failed: {failure['engine']} at {failure['setting']:g} ({failure['error'][:120]})")
        for engine, why in result["not_compared"].items():
            lines.append(f"  {engine}: not compared ({why})")
        if "reference_gap" in result:
            lines.append(f"  errors against each engine's own reference; the references differ by "
                         f"{result['reference_gap']:.2e} (different contact laws)")
    return "\n".join(lines)


__all__ = ["cases", "measure_case", "time_to_reach", "ratios", "plot", "run_work_precision",
           "format_work_precision"]
