"""Compiled vs generic right-hand side on models with multi-DOF joints (integrate/compiled_explicit.py
`CompiledExplicitRHS` with spherical / planar / inner free joints): pybullet_data's humanoid (8 spherical + 4
revolute joints, nv 28, swinging for 1 s with every joint moving at the start) — whole `simulate` runs (best of
3, `compiled_vs_generic.best_walls`) and single right-hand-side calls. Not in the default run; prints a table;
asserts only correctness (same trajectory, the compiled path serving), no wall-clock thresholds."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.core import jit
from biobullet.integrate.engine import System
from compiled_vs_generic import best_walls

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "integrate"))
from test_compiled_multidof import pybullet_humanoid, spherical_arm  # noqa: E402


def _per_call(function, y, repeats: int = 5, n: int = 2000) -> float:
    """Best mean seconds per call of function(0.1, y)."""
    best = np.inf
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(n):
            function(0.1, y)
        best = min(best, (time.perf_counter() - started) / n)
    return best


@pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: nothing compiled to compare")
def test_multidof_compiled_vs_generic(tmp_path, capsys):
    models = {"spherical arm (test model)": spherical_arm(tmp_path)}
    humanoid = pybullet_humanoid()
    if humanoid is None:
        pytest.skip("pybullet_data is not installed")
    models["pybullet_data humanoid"] = humanoid
    lines = ["multi-DOF joints: compiled explicit map vs generic, rtol 1e-8 (best of 3)",
             f"  {'model':<28}{'nv':>4}{'generic run [ms]':>18}{'compiled [ms]':>15}{'speed-up':>10}"
             f"{'rhs generic [µs]':>18}{'compiled [µs]':>15}{'speed-up':>10}{'max |Δx|':>11}"]
    for label, path in models.items():
        model = biobullet.load_model(path)
        q0, v0 = model.initial_state()
        v0[:] = np.linspace(-1.0, 1.2, model.nv)
        generic, compiled, difference = best_walls(model, 1.0, (q0, v0))
        assert difference < 1e-6, (label, difference)
        run = biobullet.simulate(model, 0.01, initial=(q0, v0), progress=False)
        assert run.meta["right_hand_side"]["path"] == "compiled explicit map", label
        fast = System(model, "reduced", {"compiled": True})
        slow = System(model, "reduced", {"compiled": False})
        y = fast.initial_vector((q0, v0), 0.0)
        per_fast, per_slow = _per_call(fast._compiled, y), _per_call(slow._checked_rhs, y, n=200)
        lines.append(f"  {label:<28}{model.nv:>4}{generic * 1e3:>18.1f}{compiled * 1e3:>15.1f}"
                     f"{generic / compiled:>9.1f}×{per_slow * 1e6:>18.1f}{per_fast * 1e6:>15.1f}"
                     f"{per_slow / per_fast:>9.1f}×{difference:>11.1e}")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
