"""The compiled twin of the prosthesis right-hand side (biobullet_studies/prosthesis_kernel.py) against the
plain-Python `FastProsthesis` path, which tests/validation/test_prosthesis_model.py checks against the general
engine: equal ẏ (with the work components) to round-off at random states over a gait cycle, with contacts, stop
and damper active, and equal 1-cycle runs to the integration tolerance."""
from __future__ import annotations

import numpy as np
import pytest

from biobullet.core import jit
from biobullet.model.bundled import bundled_model
from biobullet_studies.prosthesis import simulate_cycles
from biobullet_studies.prosthesis_model import FastProsthesis

pytestmark = pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: the compiled twin is off")
PATH = bundled_model("prosthesis_fourbar.urdf")


def test_compiled_rhs_equals_the_python_path():
    fast = FastProsthesis(PATH)
    rng = np.random.default_rng(5)
    active = {"stop": 0, "contact": 0}
    for _ in range(200):
        t = float(rng.uniform(0.0, 1.2))
        y = np.array([rng.uniform(-0.15, 1.2), rng.uniform(-0.3, 0.3), rng.normal(scale=3), rng.normal(scale=3)])
        for work in (False, True):
            got = fast.rhs(t, y, work)
            ref = np.array(fast._rhs_python(t, y, work))
            assert isinstance(got, np.ndarray), "the compiled twin did not evaluate this state"
            assert np.allclose(got, ref, rtol=1e-12, atol=1e-9), (t, y, got - ref)
        details = fast.evaluate(t, y, details=True)[1]
        active["stop"] += details["stop_force"] > 0
        active["contact"] += any(f[1] > 0 for f in details["forces"])
    assert active["stop"] and active["contact"], active   # the comparison covered the switched force terms


def test_runs_equal_to_the_python_path():
    # 0.3 gait cycles (heel strike and stance: contacts on) at rtol 1e-9: the runs agree to 1e-7
    # (at the study's rtol 1e-6 they differ by ~1e-5 rad, the tolerance amplified by the stiff contact)
    runs = [simulate_cycles(FastProsthesis(PATH, compiled=c), 0.3, details=False, rtol=1e-9, atol=1e-11)
            for c in (True, False)]
    assert runs[0]["nfev"] > 1000
    assert np.max(np.abs(runs[0]["y"][:, :2] - runs[1]["y"][:, :2])) < 1e-7
