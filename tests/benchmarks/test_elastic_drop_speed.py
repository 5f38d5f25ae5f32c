"""Wall time of the paper-002 1.5 s drop per mode set (recursive Gibbs–Appell, DOP853 rtol 1e-9, mirror
projection on) on the drop's kernels (`flexible/gibbs_appell_kernels.py`). Not in the default run; prints a table;
asserts only correctness (no wall-clock thresholds): the drop stays mirror symmetric (≤ 1e-8) and balances energy
(eq. 31, ≤ 1e-5 %). (The numpy path it was once measured against, later `simulate_drop(compiled=False)`, is
deleted; the ratio is in README and docs/speed.md.)"""
from __future__ import annotations

import time

import numpy as np
import pytest

from biobullet_studies.paper002 import paper002_chain
from biobullet_studies.gibbs_appell_drop import simulate_drop
from biobullet_studies.elastic_robot import MODE_SETS, symmetry_residual

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
