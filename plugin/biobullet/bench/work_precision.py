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
different law: the two references differ by `reference_gap`). Times are the best of `repeats` rounds in which every
engine's points run in turns (`_timed_in_turns`); each biobullet / MuJoCo ratio comes from PAIRS more runs of the
two settings that reach the target fastest, taken alternately (`paired_ratios`): a shared machine's load falls on
both sides of a ratio.
"""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Callable

import numpy as np

from biobullet.bench import kept_on_interrupt

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


def _biobullet(model, t_end, initial, method, rtol, final_only=False):
    from biobullet.integrate import simulate
    started = time.perf_counter()
    trajectory = simulate(model, t_end, method=method, rtol=rtol, atol=rtol * 1e-3, initial=initial,
                          progress=False,
                          t_eval=np.array([0.0, t_end]) if final_only else None)
    wall = time.perf_counter() - started
    return trajectory.positions[-1].copy(), wall


def _timed_in_turns(points: list[tuple[str, float, Callable]], rounds: int,
                    log: Callable[[str], None] = lambda s: None) -> tuple[dict, dict]:
    """({(label, setting): (x at t_end of the first round, least wall time over `rounds`)}, {(label, setting):
    why it failed}) of the points (label, setting, run → (x, wall)), timed in turns: each round runs every point
    once, the engines' points interleaved and the order reversed every other round, so a burst of load on a shared
    machine falls on both engines' runs alike instead of on one engine's curve. A point whose run fails with a
    SolverError is left out (the caller records it)."""
    from itertools import chain, zip_longest

    from biobullet.core.errors import SolverError
    families: dict[str, list] = {}
    for point in points:
        families.setdefault(point[0].split()[0], []).append(point)
    order = [p for p in chain.from_iterable(zip_longest(*families.values())) if p is not None]
    results: dict[tuple[str, float], tuple] = {}
    failed: dict[tuple[str, float], str] = {}
    for r in range(rounds):
        log(f"round {r + 1} of {rounds} ({len(order)} points in turns)")
        for label, setting, run in (order if r % 2 == 0 else order[::-1]):
            key = (label, setting)
            if key in failed:
                continue
            try:
                x, wall = run()
            except SolverError as exc:   # recorded, not hidden: the curve simply lacks this point
                failed[key] = str(exc)[:300]
                continue
            results[key] = (x, wall) if key not in results else (results[key][0], min(results[key][1], wall))
    return results, failed


def measure_case(name: str, case: dict[str, Any], *, quick: bool = False, repeats: int = 5,
                 log: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """All curves of one model: {engine label: [{"setting", "error", "wall"}…]} plus the reference. Every point's
    wall time is the least of `repeats` runs taken in turns with the other engines' (`_timed_in_turns`)."""
    from biobullet.bench import competitors
    from biobullet.integrate import simulate

    model, t_end, initial = case["model"], case["t_end"], case["initial"]
    log(f"work-precision: {name}: reference …")
    reference = simulate(model, t_end, rtol=1e-13, atol=1e-15, initial=initial, progress=False,
                         t_eval=np.array([0.0, t_end]))
    x0, xd0, x_ref = reference.positions[0], reference.velocities[0], reference.positions[-1]
    methods = ("DOP853", "Radau") if quick else METHODS
    rtols = RTOLS[::2] if quick else RTOLS
    steps = STEPS[::2] if quick else STEPS
    points: list[tuple[str, float, Callable]] = []
    for method in methods:
        for rtol in rtols:
            if method != "DOP853" and rtol < 1e-10:
                continue   # implicit and multistep methods at 1e-11: minutes for nothing new
            points.append((f"biobullet {method}", rtol,
                           lambda method=method, rtol=rtol: _biobullet(model, t_end, initial, method, rtol)))
    # what the default output costs: DOP853 asked for the final state only (like Pinocchio's runs here); kept out
    # of the biobullet-vs-MuJoCo ratios, which use the default 1,001-sample trajectory
    for rtol in rtols:
        points.append(("final-state-only biobullet DOP853", rtol,
                       lambda rtol=rtol: _biobullet(model, t_end, initial, "DOP853", rtol, final_only=True)))
    result: dict[str, Any] = {"t_end": t_end, "initial": initial, "curves": {}, "repeats": repeats,
                              "reference": {"engine": "biobullet DOP853 rtol 1e-13", "x": x_ref.tolist()},
                              "not_compared": {}, "failures": []}
    own_reference = bool(case.get("self_reference"))
    mujoco_target = x_ref
    if competitors.available("mujoco"):
        try:
            for integrator in ("RK4", "implicitfast"):
                for n in steps:
                    run = competitors.MujocoRun(model, t_end / n, integrator)
                    points.append((f"MuJoCo {integrator}", t_end / n, lambda run=run: run.run(x0, xd0, t_end)))
            if own_reference:   # MuJoCo's own tight solution: RK4 at dt / 4
                mujoco_target = competitors.MujocoRun(model, t_end / (4 * steps[-1]), "RK4").run(x0, xd0, t_end)[0]
                result["reference_gap"] = float(np.max(np.abs(mujoco_target - x_ref)))
        except competitors.Unsupported as exc:
            result["not_compared"]["MuJoCo"] = str(exc)
            points = [p for p in points if not p[0].startswith("MuJoCo")]
    else:
        result["not_compared"]["MuJoCo"] = "mujoco is not installed (pip install '.[bench]')"
    try:
        rhs = competitors.pinocchio_fourbar_rhs(model)
        for rtol in rtols:
            points.append(("Pinocchio constraintDynamics + DOP853", rtol,
                           lambda rtol=rtol: competitors.pinocchio_run(rhs, x0, xd0, t_end, "DOP853", rtol)))
    except competitors.Unsupported as exc:
        result["not_compared"]["Pinocchio"] = str(exc)
    timed, failed = _timed_in_turns(points, repeats, lambda text: log(f"work-precision: {name}: {text}"))
    curves: dict[str, list[dict[str, float]]] = {}
    for label, setting, _ in points:
        rows = curves.setdefault(label, [])
        if (label, setting) in failed:
            result["failures"].append({"engine": label, "setting": setting, "error": failed[label, setting]})
            continue
        x, wall = timed[label, setting]
        target = mujoco_target if label.startswith("MuJoCo") else x_ref
        rows.append({"setting": setting, "error": float(np.max(np.abs(x - target))), "wall": wall})
    result["curves"] = curves
    result["time_to_reach"] = time_to_reach(curves)
    result["ratio_biobullet_to_mujoco"] = paired_ratios(curves, {(label, setting): run for label, setting, run in points})
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


#: alternating runs of each side behind a biobullet / MuJoCo ratio (`paired_ratios`)
PAIRS = 9


def paired_ratios(curves: dict[str, list[dict[str, float]]], runs: dict[tuple[str, float], Callable],
                  pairs: int = PAIRS) -> dict[str, dict[str, float] | None]:
    """biobullet's time / MuJoCo's time to reach each target error (< 1: biobullet first): the setting of each that
    reaches the target fastest in the sweep is run `pairs` times more, the two alternately, so that both sides see
    the same load of a shared machine (the sweep's least times can catch one engine in a quiet moment and the other
    not). {"least": the ratio of the two sides' least times, "median", "min", "max": of the pairs' own ratios}, or
    None where either never reaches the target."""
    out: dict[str, dict[str, float] | None] = {}
    for target in TARGETS:
        fastest = {}
        for family in ("biobullet", "MuJoCo"):
            reached = [(r["wall"], label, r["setting"]) for label, rows in curves.items() if label.startswith(family)
                       for r in rows if r["error"] <= target]
            fastest[family] = min(reached)[1:] if reached else None
        if None in fastest.values():
            out[f"{target:g}"] = None
            continue
        walls = np.array([(runs[fastest["biobullet"]]()[1], runs[fastest["MuJoCo"]]()[1]) for _ in range(pairs)])
        each = walls[:, 0] / walls[:, 1]
        out[f"{target:g}"] = {"least": float(walls[:, 0].min() / walls[:, 1].min()), "median": float(np.median(each)),
                              "min": float(each.min()), "max": float(each.max())}
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
    repeats = repeats if repeats is not None else (2 if quick else 5)
    summary: dict[str, Any] = {"quick": quick, "repeats": repeats, "models": {}}
    path = os.path.join(out, "work_precision.json")
    with kept_on_interrupt(summary, path, "the models measured so far"):
        for name, case in cases(os.path.join(out, "models")).items():
            if only and name not in only:
                continue
            result = measure_case(name, case, quick=quick, repeats=repeats, log=log)
            plot(name, result, os.path.join(out, f"work_precision_{name}.png"))
            summary["models"][name] = result
    write_text(path, json.dumps(summary, indent=2) + "\n")
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
        if any(v is not None for v in ratio.values()):   # (least times of alternating runs: `paired_ratios`)
            lines.append("  " + f"{'bb/MuJoCo paired':<17}" + "".join(
                f"{(v['least'] if v is not None else float('nan')):>10.2f}" for v in ratio.values()))
        for failure in result.get("failures", []):
            lines.append(f"  failed: {failure['engine']} at {failure['setting']:g} ({failure['error'][:120]})")
        for engine, why in result["not_compared"].items():
            lines.append(f"  {engine}: not compared ({why})")
        if "reference_gap" in result:
            lines.append(f"  errors against each engine's own reference; the references differ by "
                         f"{result['reference_gap']:.2e} (different contact laws)")
    return "\n".join(lines)


__all__ = ["cases", "measure_case", "time_to_reach", "paired_ratios", "plot", "run_work_precision",
           "format_work_precision"]
