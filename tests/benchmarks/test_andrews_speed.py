"""Benchmark: wall time to reach |β(0.03) − β_ref| ≤ 1e-8 |β_ref| on Andrews' squeezer, per formulation
(reduced, multipliers) and integrator (DOP853, Radau, LSODA), against the hand-written classic 7-coordinate
solver (tests/andrews_classic.py) — all measured in one run, reported as ratios.

Fair comparison: the classic solver is run with each integrator too (same scipy solver classes), and every
library row is reported against the classic solver with the SAME integrator ("ratio") and against the classic
DOP853 (the fastest classic configuration, "vs DOP853"). For each combination the tolerance ladder
rtol = atol = 1e-7, 1e-8, … 1e-13 is walked from loose to tight and the first tolerance that meets the
accuracy target is kept. β_ref is the IVP test set's published value (PSIDE, 1e-14). Timing: after one untimed
warm-up run per formulation (see `_warm_up`), every combination (classic and library alike) is run REPEATS
times at its passing tolerance, the combinations interleaved round by round (so that a change of machine load
hits all of them alike), and the best wall time is kept.
Not in the default test run (`make bench`); prints a table and writes out/benchmarks/andrews_speed.json. The
target ratio is ≤ 1.5×; it is reported, not asserted (no wall-clock thresholds in tests). Only accuracy is
asserted.
"""
import importlib.util
import json
import os
import sys
import time
from pathlib import Path


import biobullet
from biobullet.core.errors import SolverError

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("andrews_classic", ROOT / "tests" / "andrews_classic.py")
ac = importlib.util.module_from_spec(spec)
sys.modules.setdefault("andrews_classic", ac)
spec.loader.exec_module(ac)

TARGET = 1e-8
LADDER = (1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13)
FORMULATIONS = ("reduced", "multipliers")
#: rows of the library: (formulation, error_control) — the reduced formulation with its default error control
#: over every joint ("joints": the loop-dependent joints integrated as output-only components) and with the
#: error control over its own state only ("state": β, β̇), the multipliers (state = every joint already)
VARIANTS = (("reduced", "joints"), ("reduced", "state"), ("multipliers", "joints"))
METHODS = ("DOP853", "Radau", "LSODA")
BETA_REF = ac.REFERENCE_Q[0]


def _error(beta):
    return abs(beta - BETA_REF) / abs(BETA_REF)


def _classic(method, tol):
    started = time.perf_counter()
    _, y = ac.solve_andrews(t_end=0.03, rtol=tol, atol=tol, method=method)
    return time.perf_counter() - started, float(y[-1, 0]), None


def _library(model, formulation, method, tol, error_control="joints"):
    started = time.perf_counter()
    trajectory = biobullet.simulate(model, 0.03, formulation=formulation, method=method, rtol=tol, atol=tol,
                                    t_eval=[0.03], progress=False, error_control=error_control)
    wall = time.perf_counter() - started
    return wall, float(trajectory.column("beta")[-1]), trajectory.meta["nfev"]


def _warm_up(model):
    """One short untimed run per formulation: process-start costs (numba loading its compiled kernels from the
    on-disk cache, ~1–2 s once per process, or compiling them on the very first run) are not part of the
    per-run time being compared. The classic solver has no such cost."""
    for formulation in FORMULATIONS:
        biobullet.simulate(model, 1e-4, formulation=formulation, t_eval=[1e-4], progress=False)


def _first_passing(run):
    """(tolerance, wall, beta, nfev) at the loosest tolerance of the ladder that meets TARGET, else the last."""
    for tol in LADDER:
        try:
            wall, beta, nfev = run(tol)
        except SolverError as exc:   # an integrator failing at a loose tolerance
            print(f"    rtol {tol:g}: failed ({str(exc)[:80]})")
            continue
        print(f"    rtol {tol:g}: β error {_error(beta):.2e}, {wall:.2f} s")
        if _error(beta) <= TARGET:
            return tol, wall, beta, nfev
    return tol, wall, beta, nfev


REPEATS = 3


def test_andrews_time_to_accuracy():
    model = biobullet.load_model(ROOT / "urdf" / "andrews_squeezer.urdf")
    _warm_up(model)
    combos = [("classic", method, lambda t, m=method: _classic(m, t)) for method in METHODS]
    combos += [(formulation if formulation == "multipliers" else f"{formulation}/{control}", method,
                lambda t, f=formulation, m=method, c=control: _library(model, f, m, t, c))
               for formulation, control in VARIANTS for method in METHODS]
    rows = []
    for formulation, method, run in combos:              # 1. the passing tolerance of every combination
        print(f"[andrews speed] {formulation} {method} …")
        tol, wall, beta, nfev = _first_passing(run)
        rows.append({"solver": "classic (7 coords, KKT)" if formulation == "classic" else "biobullet",
                     "formulation": formulation, "method": method, "rtol": tol, "wall_s": wall,
                     "beta_rel_error": _error(beta), "nfev": nfev})
    for _ in range(REPEATS):                             # 2. best of REPEATS, interleaved
        for row, (_, _, run) in zip(rows, combos):
            row["wall_s"] = min(row["wall_s"], run(row["rtol"])[0])
    classic = {r["method"]: r["wall_s"] for r in rows if r["formulation"] == "classic"}
    for r in rows:
        r["ratio"] = r["wall_s"] / classic[r["method"]]            # vs the classic solver, same integrator
        r["ratio_vs_classic_dop853"] = r["wall_s"] / classic["DOP853"]
    header = f"{'solver':<24} {'formulation':<15} {'method':<7} {'rtol':>7} {'nfev':>6} {'wall (s)':>9} " \
             f"{'β rel err':>10} {'ratio':>7} {'vs DOP853':>9}"
    print("\n" + header + "\n" + "-" * len(header))
    for r in rows:
        print(f"{r['solver']:<24} {r['formulation']:<15} {r['method']:<7} {r['rtol']:>7.0e} "
              f"{'' if r['nfev'] is None else r['nfev']:>6} {r['wall_s']:>9.3f} {r['beta_rel_error']:>10.2e} "
              f"{r['ratio']:>6.2f}x {r['ratio_vs_classic_dop853']:>8.2f}x")
    out = ROOT / "out" / "benchmarks"
    out.mkdir(parents=True, exist_ok=True)
    path = out / "andrews_speed.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"target_relative_error": TARGET, "beta_reference": BETA_REF,
                               "target_ratio": 1.5, "repeats": REPEATS,
                               "ratio": "wall / classic wall with the same integrator",
                               "ratio_vs_classic_dop853": "wall / classic DOP853 wall", "rows": rows}, indent=2))
    os.replace(tmp, path)
    # accuracy is the assertion: every combination reaches the target somewhere on the ladder
    assert all(r["beta_rel_error"] <= TARGET for r in rows), [r for r in rows if r["beta_rel_error"] > TARGET]
