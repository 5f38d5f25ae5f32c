"""`Trajectory.meta["right_hand_side"]`: which right-hand side served a run, and how many calls it handed to the
callback stage — checked against what actually ran (the compiled objects the engine built, a kernel forced to
decline every call, a plug-in element without a kernel, a check formulation chosen by name)."""
from __future__ import annotations

import biobullet
import pytest
from biobullet.forces import force_elements
from biobullet.integrate.compiled_rhs import CompiledReducedRHS
from biobullet.integrate.engine import System
from biobullet.model.bundled import bundled_model


@pytest.mark.parametrize("name, path", [("fourbar_knee.urdf", "compiled loop map"),
                                        ("coupled_chain.urdf", "compiled explicit map")])
def test_compiled_paths_are_named(name, path):
    run = biobullet.simulate(biobullet.load_model(bundled_model(name)), 0.05, progress=False)
    report = run.meta["right_hand_side"]
    assert report["path"] == path and report["callback_calls"] == 0
    # event-free DOP853 (a loop map or an explicit one): the compiled stepper takes the steps
    assert report["compiled_stepper_steps"] == run.meta["steps"]


def test_per_call_hand_over_is_counted(monkeypatch):
    monkeypatch.setattr(CompiledReducedRHS, "__call__", lambda self, t, y: None)   # every call declined
    monkeypatch.setattr(CompiledReducedRHS, "steps_compiled", lambda self: False)   # (SciPy's steps: every call)
    run = biobullet.simulate(biobullet.load_model(bundled_model("coupled_chain.urdf")), 0.02, progress=False)
    report = run.meta["right_hand_side"]
    assert report["path"] == "compiled explicit map"
    assert report["callback_calls"] == run.meta["nfev"] > 0


def test_the_callback_stage_says_why(monkeypatch):
    """A check formulation chosen by name, and an element whose kernel is withdrawn (a plug-in without one): the
    callback stage serves the whole run and names the reason."""
    model = biobullet.load_model(bundled_model("fourbar_knee.urdf"))
    report = biobullet.simulate(model, 0.02, progress=False, formulation="reduced_recursive").meta["right_hand_side"]
    assert report == {"path": "callback stage", "reason": report["reason"]} and "reduced_recursive" in report["reason"]
    prosthesis = biobullet.load_model(bundled_model("prosthesis_fourbar.urdf"))   # the study's force elements
    stop = type(next(e for e in force_elements(prosthesis) if e.name == "knee_stop"))
    monkeypatch.setattr(stop, "compiled_kernel", lambda self, model: None)   # a plug-in that brings no kernel
    report = System(prosthesis, "reduced", {"shadow": True}).right_hand_side()
    assert report["path"] == "callback stage" and stop.__name__ in report["reason"], report
