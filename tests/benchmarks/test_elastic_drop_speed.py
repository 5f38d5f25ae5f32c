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

from biobullet_studies.paper002 import paper002_chain
from biobullet_studies.gibbs_appell_drop import simulate_drop
from biobullet_studies.elastic_robot import MODE_SETS, symmetry_residual

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


def _differences(a, b) -> tuple[float, float, float]:
    """Largest relative state difference on the 0.1 ms output grid (per coordinate, scaled by b's range), the
    same before 0.6 s, and the largest difference of matching contact-onset times (s)."""
    grid = np.arange(0.0, 1.5 + 5e-5, 1e-4)[1:-1]
    ia, ib = np.searchsorted(a.t, grid), np.searchsorted(b.t, grid)
    diff = (np.abs(a.z[ia] - b.z[ib]) / np.abs(b.z[ib]).max(axis=0)).max(axis=1)
    onsets = max(abs(x["time"] - y["time"]) for x, y in zip(a.contacts, b.contacts))
    return float(diff.max()), float(diff[grid < 0.6].max()), float(onsets)


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
    # The drop is sensitive to round-off once impacts pile up (30 onsets, 14 impacts): the paths' right-hand
    # sides differ by round-off (≤ 1e-13 relative), so compare them with what a 1e-15 relative change of the
    # initial q1 does to the compiled drop itself.
    z0, zd0 = chain.initial_state()
    z0[chain.idx_q[0]] *= 1.0 + 1e-15
    nudged = simulate_drop(chain, t_end=1.5, initial=(z0, zd0))
    state_diff, early_diff, onset_diff = _differences(fast, slow)
    state_nudge, early_nudge, onset_nudge = _differences(fast, nudged)
    row = {"modes": "ss-ss-ss", "t_end": 1.5, "numpy_s": walls[False], "compiled_s": walls[True],
           "ratio": before / after, "rhs_numpy": slow.n_rhs, "rhs_compiled": fast.n_rhs,
           "onsets": [len(slow.contacts), len(fast.contacts)], "impacts": [len(slow.impacts), len(fast.impacts)],
           "max_onset_time_difference_s": onset_diff, "max_relative_state_difference": state_diff,
           "max_relative_state_difference_before_0.6s": early_diff,
           "round_off_reference": {"perturbation": "q1 * (1 + 1e-15), compiled",
                                   "max_onset_time_difference_s": onset_nudge,
                                   "max_relative_state_difference": state_nudge,
                                   "max_relative_state_difference_before_0.6s": early_nudge},
           "compiled_calls_declined": fast.n_rhs_general}
    with capsys.disabled():
        print(f"\nelastic drop ss-ss-ss 1.5 s: numpy {before:.2f} s ({slow.n_rhs} rhs), compiled {after:.2f} s "
              f"({fast.n_rhs} rhs), ratio {before / after:.1f}x; onsets {len(slow.contacts)}/{len(fast.contacts)}, "
              f"max onset-time difference {onset_diff:.1e} s, max relative state difference {state_diff:.1e} "
              f"(before 0.6 s: {early_diff:.1e}); a 1e-15 nudge of q1 gives {onset_nudge:.1e} s, {state_nudge:.1e} "
              f"(before 0.6 s: {early_nudge:.1e})")
    out = ROOT / "out" / "benchmarks"
    out.mkdir(parents=True, exist_ok=True)
    from biobullet.core.atomic import write_text
    write_text(out / "elastic_drop_speed.json", json.dumps(row, indent=2))
    assert len(fast.contacts) == len(slow.contacts) and len(fast.impacts) == len(slow.impacts)
    assert [c["point"] for c in fast.contacts] == [c["point"] for c in slow.contacts]
    assert early_diff < 1e-7                 # through the first impacts: integration-tolerance agreement
    assert onset_diff <= 5.0 * onset_nudge   # later: no larger than round-off itself makes it
    assert state_diff <= 5.0 * state_nudge
    for r in (fast, slow):
        assert symmetry_residual(r) <= 1e-8
        assert np.abs(r.energy_error_percent).max() < 1e-5
