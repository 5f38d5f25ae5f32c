"""Shared by the compiled-right-hand-side benchmarks: whole `simulate` runs with `compiled=False` (the generic
path) and `compiled=True`, in turns, best of `repeats`, after one compiled run that compiles or loads the kernels."""
from __future__ import annotations

import time

import numpy as np

import biobullet


def _run(model, t_end, initial, compiled):
    started = time.perf_counter()
    trajectory = biobullet.simulate(model, t_end, rtol=1e-8, atol=1e-11, initial=initial, progress=False,
                                    compiled=compiled)
    return trajectory, time.perf_counter() - started


def best_walls(model, t_end: float, initial, repeats: int = 3) -> tuple[float, float, float]:
    """(best generic wall s, best compiled wall s, max |Δx| between the two paths' joint positions)."""
    _run(model, t_end, initial, True)
    best = {True: np.inf, False: np.inf}
    runs = {}
    for _ in range(repeats):
        for compiled in (False, True):
            runs[compiled], wall = _run(model, t_end, initial, compiled)
            best[compiled] = min(best[compiled], wall)
    return best[False], best[True], float(np.max(np.abs(runs[True].positions - runs[False].positions)))
