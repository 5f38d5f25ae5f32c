"""Cost per right-hand side versus the number of joints (`biobullet bench --scaling`,
tests/benchmarks/test_rhs_scaling.py): serial chains and branched trees of 7 … 100 revolute joints, generated
with full inertia tensors and rotated joint frames.

Timed, in turns (`bench.interleaved_best`): biobullet's reference-engine right-hand side (`System.rhs`, formulation
"reduced": compiled kernel — M, RNEA, Cholesky — for these models), the "reduced" formulation's M and h alone
(`mass_and_bias`), Pinocchio's forward dynamics (ABA) and Pinocchio's CRBA + RNEA on the same URDF and state.
"""
from __future__ import annotations

import itertools
import json
import os
import sys
import tempfile
from typing import Any, Callable

import numpy as np

from biobullet.bench import kept_on_interrupt

SIZES = (7, 15, 30, 50, 75, 100)


def tree_urdf(n: int, branched: bool) -> str:
    """URDF text of n revolute joints: a chain (each body on the previous one) or a branched tree (body k on
    body (k − 1) // 2: a binary tree). Axes cycle through z, y, x; joint frames carry small rotations."""
    rng = np.random.default_rng(n + (1000 if branched else 0))
    lines = [f'<robot name="{"tree" if branched else "chain"}{n}">',
             '<link name="l0"><inertial><origin xyz="0 0 0"/><mass value="1"/>'
             '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>']
    axes = ("0 0 1", "0 1 0", "1 0 0")
    for k in range(1, n + 1):
        m = 0.5 + rng.uniform(0.0, 1.0)
        lines.append(f'<link name="l{k}"><inertial><origin xyz="0.05 0.01 0"/><mass value="{m:.4f}"/>'
                     '<inertia ixx="0.004" ixy="0.0002" ixz="0.0001" iyy="0.005" iyz="0.0003" izz="0.006"/>'
                     '</inertial></link>')
        parent = (k - 1) // 2 if branched else k - 1
        rpy = " ".join(f"{v:.3f}" for v in rng.uniform(-0.2, 0.2, 3))
        lines.append(f'<joint name="j{k}" type="revolute"><parent link="l{parent}"/><child link="l{k}"/>'
                     f'<origin xyz="0.1 0.02 0" rpy="{rpy}"/><axis xyz="{axes[k % 3]}"/>'
                     '<limit lower="-3" upper="3" effort="100" velocity="10"/></joint>')
    lines.append('<biobullet version="1"><gravity xyz="0 0 -9.81"/></biobullet></robot>')
    return "\n".join(lines)


def _pinocchio_solve(pin, pm, data, q, v, tau):
    pin.crba(pm, data, q)
    h = pin.rnea(pm, data, q, v, tau)
    pin.cholesky.decompose(pm, data)
    return pin.cholesky.solve(pm, data, tau - h)


def measure(n: int, branched: bool, folder: str, *, rounds: int = 20, number: int = 20) -> dict[str, float]:
    """Seconds per call of each candidate on the n-joint model."""
    import pinocchio as pin

    from biobullet.bench import interleaved_best
    from biobullet.conventions import PinocchioMap, build_pinocchio_model
    from biobullet.dynamics.formulation import get_formulation
    from biobullet.integrate.engine import System
    from biobullet.loader import load_model

    path = os.path.join(folder, f"{'tree' if branched else 'chain'}{n}.urdf")
    with open(path, "w") as handle:
        handle.write(tree_urdf(n, branched))
    model = load_model(path)
    rng = np.random.default_rng(3)
    q, v = rng.uniform(-1, 1, model.nq), rng.normal(size=model.nv)
    system = System(model, "reduced")
    y = np.concatenate([q, v, [0.0, 0.0]])
    reduced = get_formulation("reduced")
    pm = build_pinocchio_model(model)
    data = pm.createData()
    index = PinocchioMap(model, pm)
    pq, pv, tau = index.config_to_pinocchio(q), index.velocity_to_pinocchio(v), np.zeros(pm.nv)
    # a new time per call: the right-hand side's memo of the last (t, y) never answers (the model has no drivers,
    # so the work is the same at every t) — what an integrator pays per new evaluation
    new_times = itertools.count()
    functions: dict[str, Callable[[], Any]] = {
        "biobullet rhs": lambda: system.rhs(float(next(new_times)), y),
        "reduced mass_and_bias": lambda: reduced.mass_and_bias(model, q, v, 0.0),
        "pinocchio aba": lambda: pin.aba(pm, data, pq, pv, tau),
        # the same work as the M-based right-hand side: M, h and a (tree-sparse) Cholesky solve of M v̇ = τ − h
        "pinocchio crba+rnea+cholesky": lambda: _pinocchio_solve(pin, pm, data, pq, pv, tau),
        "pinocchio crba+rnea": lambda: (pin.crba(pm, data, pq), pin.rnea(pm, data, pq, pv, tau)),
    }
    return interleaved_best(functions, rounds=rounds, number=number)


def run_scaling(*, quick: bool = False, out: str | os.PathLike[str] = "out/bench",
                log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Both families over `SIZES`; `out`/scaling.json and `out`/scaling.png."""
    from biobullet.core.atomic import write_text

    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    out = os.fspath(out)
    os.makedirs(out, exist_ok=True)
    rounds = 6 if quick else 20
    summary: dict[str, Any] = {"quick": quick, "sizes": list(SIZES), "families": {}}
    path = os.path.join(out, "scaling.json")
    with kept_on_interrupt(summary, path, "the sizes measured so far"), \
            tempfile.TemporaryDirectory(prefix="biobullet_scaling_") as folder:
        for branched in (False, True):
            family = "branched tree" if branched else "chain"
            rows = summary["families"][family] = []
            for n in SIZES:
                log(f"scaling: {family} of {n} joints …")
                times = measure(n, branched, folder, rounds=rounds)
                rows.append({"joints": n, "us": {k: s * 1e6 for k, s in times.items()},
                             "rhs_over_pinocchio_aba": times["biobullet rhs"] / times["pinocchio aba"],
                             "rhs_over_pinocchio_solve":
                                 times["biobullet rhs"] / times["pinocchio crba+rnea+cholesky"],
                             "mass_and_bias_over_crba_rnea":
                                 times["reduced mass_and_bias"] / times["pinocchio crba+rnea"]})
    _plot(summary, os.path.join(out, "scaling.png"))
    write_text(path, json.dumps(summary, indent=2) + "\n")
    return summary


def _plot(summary: dict[str, Any], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from biobullet.core import atomic
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for family, rows in summary["families"].items():
        n = [r["joints"] for r in rows]
        style = "-" if family == "chain" else "--"
        for label in rows[0]["us"]:
            axes[0].loglog(n, [r["us"][label] for r in rows], style, marker="o", ms=3, label=f"{label} ({family})")
        axes[1].plot(n, [r["rhs_over_pinocchio_solve"] for r in rows], style, marker="o",
                     label=f"rhs / Pinocchio CRBA + RNEA + Cholesky ({family})")
        axes[1].plot(n, [r["rhs_over_pinocchio_aba"] for r in rows], style, marker="^",
                     label=f"rhs / Pinocchio ABA ({family})")
        axes[1].plot(n, [r["mass_and_bias_over_crba_rnea"] for r in rows], style, marker="s",
                     label=f"M, h / Pinocchio CRBA + RNEA ({family})")
    axes[0].set_xlabel("joints")
    axes[0].set_ylabel("µs per call")
    axes[0].legend(fontsize=6)
    axes[0].grid(alpha=0.3, which="both")
    axes[1].set_xlabel("joints")
    axes[1].set_ylabel("ratio to Pinocchio")
    axes[1].set_ylim(bottom=0)
    axes[1].legend(fontsize=7)
    axes[1].grid(alpha=0.3)
    fig.suptitle("cost per right-hand side vs DOF")
    fig.tight_layout()
    atomic.save_figure(fig, path, dpi=120)
    plt.close(fig)


def format_scaling(summary: dict[str, Any]) -> str:
    lines = ["scaling: µs per call and ratios to Pinocchio"]
    for family, rows in summary["families"].items():
        lines.append(f"\n{family}")
        lines.append(f"  {'joints':>6}{'rhs':>10}{'M,h':>10}{'pin aba':>10}{'crba+rnea':>11}{'+chol':>10}"
                     f"{'rhs/aba':>9}{'rhs/+chol':>10}{'M,h/c+r':>9}")
        for r in rows:
            u = r["us"]
            lines.append(f"  {r['joints']:>6}{u['biobullet rhs']:>10.1f}{u['reduced mass_and_bias']:>10.1f}"
                         f"{u['pinocchio aba']:>10.1f}{u['pinocchio crba+rnea']:>11.1f}"
                         f"{u['pinocchio crba+rnea+cholesky']:>10.1f}{r['rhs_over_pinocchio_aba']:>9.2f}"
                         f"{r['rhs_over_pinocchio_solve']:>10.2f}{r['mass_and_bias_over_crba_rnea']:>9.2f}")
    return "\n".join(lines)


__all__ = ["SIZES", "tree_urdf", "measure", "run_scaling", "format_scaling"]
