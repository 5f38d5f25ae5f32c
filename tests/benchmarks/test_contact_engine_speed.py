"""Wall time of the work–precision ball drop (bench/work_precision.py `DROP`: Kelvin–Voigt ground, 1 kg ball from
0.15 m, 0.3 s, DOP853, default 1,001-sample output with energies) on the reference engine, before (generic
Python right-hand side, Python interval log and elastic energy: `compiled=False`, what every contact model ran
before) and after (compiled explicit right-hand side with the ground contacts, compiled interval-log samples and
elastic energy), taken in turns within one run (best of 5 each), plus the cost of one right-hand side call. Not in
the default run; prints a table and writes out/benchmarks/contact_engine_speed.json; asserts only correctness (no
wall-clock thresholds): both paths locate the same contact intervals and end in the same state within the
integration tolerance."""
from __future__ import annotations

import tempfile
import time

import numpy as np
import pytest
from biobullet.bench.work_precision import _drop_model
from biobullet.contact.element import contact_intervals
from biobullet.core import jit
from biobullet.core.atomic import write_json
from biobullet.integrate import simulate
from biobullet.integrate.engine import System

RTOLS = (1e-6, 1e-9, 1e-11)


def _run(model, rtol: float, compiled: bool):
    start = time.perf_counter()
    trajectory = simulate(model, 0.3, method="DOP853", rtol=rtol, atol=rtol * 1e-3, initial={"drop": 0.15},
                          progress=False, compiled=compiled)
    return trajectory, time.perf_counter() - start


def _rhs_cost(model) -> dict[str, float]:
    """µs per right-hand side call at a state in contact (active, compressing), compiled and generic."""
    out = {}
    for compiled in (True, False):
        system = System(model, None, {"compiled": compiled})
        contact = next(e for e in system.elements if type(e).__name__ == "Contact")
        contact.state.touch(0.0, 1.5)
        y = system.initial_vector({"drop": 0.049}, 0.0)
        y[1] = -1.0
        call = system._compiled if compiled else system._checked_rhs
        call(0.0, y)
        n = 2000
        start = time.perf_counter()
        for _ in range(n):
            call(0.0, y)
        out["compiled" if compiled else "generic"] = 1e6 * (time.perf_counter() - start) / n
    return out


@pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: no compiled path to compare")
def test_ball_drop_compiled_vs_generic(capsys) -> None:
    model = _drop_model(tempfile.mkdtemp(prefix="biobullet_drop_"))
    _run(model, 1e-6, True)   # compile (or load numba's cache) outside the timing
    rows = []
    for rtol in RTOLS:
        walls: dict[bool, list[float]] = {True: [], False: []}
        runs = {}
        for _ in range(5):
            for compiled in (False, True):
                runs[compiled], wall = _run(model, rtol, compiled)
                walls[compiled].append(wall)
        fast, slow = runs[True], runs[False]
        a, b = contact_intervals(fast), contact_intervals(slow)
        assert len(a) == len(b) >= 1
        for x, y in zip(a, b):
            assert abs(x["start"] - y["start"]) < 1e-6 and abs(x["end"] - y["end"]) < 1e-6
        tol = 100 * rtol * max(1.0, float(np.max(np.abs(slow.positions))))
        assert np.max(np.abs(fast.positions[-1] - slow.positions[-1])) < tol
        before, after = min(walls[False]), min(walls[True])
        rows.append({"rtol": rtol, "before_ms": 1e3 * before, "after_ms": 1e3 * after, "speedup": before / after,
                     "nfev": fast.meta["nfev"], "intervals": len(a)})
    cost = _rhs_cost(model)
    write_json("out/benchmarks/contact_engine_speed.json", {"rows": rows, "rhs_us": cost})
    with capsys.disabled():
        print("\n| ball drop 0.3 s, DOP853 rtol | before (generic) ms | after (compiled) ms | speed-up | rhs calls |"
              "\n|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['rtol']:g} | {r['before_ms']:.1f} | {r['after_ms']:.1f} | {r['speedup']:.1f}× | "
                  f"{r['nfev']} |")
        print(f"one right-hand side in contact: compiled {cost['compiled']:.1f} µs, generic {cost['generic']:.1f} µs")
