"""Wall time of the paper-002 1.5 s drop per mode set (recursive Gibbs–Appell, DOP853 rtol 1e-9, mirror
projection on), and the compiled right-hand side against the numpy one on ss-ss-ss in one run. Not in the default
run; prints tables and writes out/benchmarks/elastic_drop_speed.json; asserts only correctness (no wall-clock
thresholds): the drop completes, stays mirror symmetric (≤ 1e-8) and balances energy (eq. 31, ≤ 1e-5 %), and both
paths give the same impacts and trajectory."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from biobullet.core import jit
from biobullet_studies.elastic_robot import MODE_SETS, symmetry_residual
from biobullet_studies.gibbs_appell_drop import simulate_drop
from biobullet_studies.paper002 import paper002_chain

ROOT = Path(__file__).resolve().parents[2]
ROWS: list[str] = []


@pytest.mark.parametrize("modes", MODE_SETS)
def test_drop_wall_time(modes) -> None:
    chain = paper002_chain(modes)
    simulate_drop(chain, t_end=1e-3)   # compile (or load from numba's cache) outside the timing
    start = time.perf_counter()
    r = simulate_drop(chain, t_end=1.5)
    wall = time.perf_counter() - start
    ROWS.append(f"| {modes} | {wall:.2f} | {r.n_rhs} | {1e6 * wall / r.n_rhs:.1f} | {len(r.contacts)} | "
                f"{len(r.impacts)} | {symmetry_residual(r):.1e} |")
    print("\n| modes | wall s | rhs calls | µs/rhs | onsets | impacts | symmetry |\n|---|---|---|---|---|---|---|")
    print("\n".join(ROWS))
    assert symmetry_residual(r) <= 1e-8
    assert np.abs(r.energy_error_percent).max() < 1e-5


@pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: no compiled path to compare")
def test_compiled_vs_numpy_ss(capsys) -> None:
    """Before (numpy right-hand side, events and output sampling) / after (compiled) for the ss-ss-ss 1.5 s drop,
    same tolerances, taken in turns within one run (best of 2 each)."""
    chain = paper002_chain("ss-ss-ss")
    simulate_drop(chain, t_end=1e-3)
    walls: dict[bool, list[float]] = {True: [], False: []}
    results = {}
    for _ in range(2):
        for compiled in (False, True):
            start = time.perf_counter()
            results[compiled] = simulate_drop(chain, t_end=1.5, compiled=compiled)
            walls[compiled].append(time.perf_counter() - start)
    fast, slow = results[True], results[False]
    before, after = min(walls[False]), min(walls[True])
    grid = np.arange(0.0, 1.5 + 5e-5, 1e-4)[1:-1]
    ia, ib = np.searchsorted(fast.t, grid), np.searchsorted(slow.t, grid)
    scale = np.abs(slow.z[ib]).max(axis=0)
    state_diff = float((np.abs(fast.z[ia] - slow.z[ib]) / scale).max())
    onset_diff = max(abs(a["time"] - b["time"]) for a, b in zip(fast.contacts, slow.contacts))
    row = {"modes": "ss-ss-ss", "t_end": 1.5, "numpy_s": walls[False], "compiled_s": walls[True],
           "ratio": before / after, "rhs_numpy": slow.n_rhs, "rhs_compiled": fast.n_rhs,
           "onsets": [len(slow.contacts), len(fast.contacts)], "impacts": [len(slow.impacts), len(fast.impacts)],
           "max_onset_time_difference_s": onset_diff, "max_relative_state_difference": state_diff,
           "compiled_calls_declined": fast.n_rhs_numpy_fallback}
    with capsys.disabled():
        print(f"\nelastic drop ss-ss-ss 1.5 s: numpy {before:.2f} s ({slow.n_rhs} rhs), compiled {after:.2f} s "
              f"({fast.n_rhs} rhs), ratio {before / after:.1f}x; onsets {len(slow.contacts)}/{len(fast.contacts)}, "
              f"max onset-time difference {onset_diff:.1e} s, max relative state difference {state_diff:.1e}")
    out = ROOT / "out" / "benchmarks"
    out.mkdir(parents=True, exist_ok=True)
    from biobullet.core.atomic import write_text
    write_text(out / "elastic_drop_speed.json", json.dumps(row, indent=2))
    assert len(fast.contacts) == len(slow.contacts) and len(fast.impacts) == len(slow.impacts)
    assert [c["point"] for c in fast.contacts] == [c["point"] for c in slow.contacts]
    assert onset_diff < 1e-6
    assert state_diff < 1e-5
    for r in (fast, slow):
        assert symmetry_residual(r) <= 1e-8
        assert np.abs(r.energy_error_percent).max() < 1e-5
