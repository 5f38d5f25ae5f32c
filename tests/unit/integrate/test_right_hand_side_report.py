"""`Trajectory.meta["right_hand_side"]`: which right-hand side served a run, and how many calls it handed to the
generic path — checked against what actually ran (the compiled objects the engine built, a kernel forced to
decline every call, numba switched off, the `compiled=False` switch)."""
from __future__ import annotations

import biobullet
import pytest
from biobullet.core import jit
from biobullet.integrate.compiled_explicit import CompiledExplicitRHS
from biobullet.integrate.compiled_rhs import CompiledReducedRHS
from biobullet.model.bundled import bundled_model

compiled_only = pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: no compiled right-hand side to report")


@compiled_only
@pytest.mark.parametrize("name, path", [("fourbar_knee.urdf", "compiled loop map"),
                                        ("coupled_chain.urdf", "compiled explicit map")])
def test_compiled_paths_are_named(name, path):
    run = biobullet.simulate(biobullet.load_model(bundled_model(name)), 0.05, progress=False)
    report = run.meta["right_hand_side"]
    assert report["path"] == path and report["generic_calls"] == 0
    if path == "compiled loop map":   # event-free DOP853 on a single loop: the compiled stepper takes the steps
        assert report["compiled_stepper_steps"] == run.meta["steps"]


@compiled_only
def test_per_call_fallback_is_counted(monkeypatch):
    monkeypatch.setattr(CompiledExplicitRHS, "__call__", lambda self, t, y: None)   # every call declined
    run = biobullet.simulate(biobullet.load_model(bundled_model("coupled_chain.urdf")), 0.02, progress=False)
    report = run.meta["right_hand_side"]
    assert report["path"] == "compiled explicit map"
    assert report["generic_calls"] == run.meta["nfev"] > 0


def test_generic_path_says_why(monkeypatch):
    model = biobullet.load_model(bundled_model("fourbar_knee.urdf"))
    assert biobullet.simulate(model, 0.02, progress=False, compiled=False).meta["right_hand_side"] == \
        {"path": "generic", "reason": "compiled=False"}
    monkeypatch.setattr(jit, "ENABLED", False)
    report = biobullet.simulate(model, 0.02, progress=False).meta["right_hand_side"]
    assert report["path"] == "generic" and "BIOBULLET_NUMBA" in report["reason"]
    monkeypatch.setattr(jit, "ENABLED", True)
    monkeypatch.setattr(CompiledReducedRHS, "for_system", classmethod(lambda cls, system: None))
    monkeypatch.setattr(CompiledExplicitRHS, "for_system", classmethod(lambda cls, system: None))
    report = biobullet.simulate(model, 0.02, progress=False).meta["right_hand_side"]
    assert report["path"] == "generic" and "docs/speed.md" in report["reason"]
