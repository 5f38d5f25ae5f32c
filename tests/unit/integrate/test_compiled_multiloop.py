"""The compiled loop right-hand side (integrate/compiled_rhs.py `CompiledReducedRHS`) on coordinate maps of
several stages — two loops, a loop whose known joint is an explicit function's output, functions that take a
loop-dependent joint as input, and the bundled prosthesis (four Fourier/expression drivers before its four-bar
loop, a damped spring, two ground contacts) — against the generic path (`System._checked_rhs`: the
`CoordinateMap`'s resolvers one by one, force elements, tree dynamics, projection as separate calls).

Whole runs must agree within the integration tolerance, handovers go to the generic path, and the trajectory
output's batch pass equals the per-sample path."""
from __future__ import annotations

import re
from pathlib import Path

import biobullet
import numpy as np
import pytest
from biobullet.core import jit
from biobullet.integrate import compiled_rhs
from biobullet.integrate.compiled_stepper import CompiledSteps
from biobullet.integrate.engine import System
from multiloop_models import ROOT, count_compiled_calls, driven_knee, two_knees

pytestmark = pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: the compiled path is off")


def _prosthesis(directory: Path) -> Path:
    """urdf/prosthesis_fourbar.urdf without its two third-party (paper-study) force elements, which keep the
    generic path; its library elements (damped spring, ground contacts) and all its joint functions stay."""
    text = (ROOT / "urdf" / "prosthesis_fourbar.urdf").read_text()
    text, n = re.subn(r"<joint_contact_stop [^>]*/>|<joint_spring_reference [^>]*/>", "", text)
    assert n == 2
    path = directory / "prosthesis_library_elements.urdf"
    path.write_text(text)
    return path


MODELS = {"two knees": (two_knees, {"hip_1": 0.3, "knee_A_1": 0.4, "knee_A_2": 0.2}, 0.3),
          "driven knee": (driven_knee, {"hip": 0.3}, 0.3),
          "functions after the loop": (lambda d: driven_knee(d, drive_known=False), {"hip": 0.3, "knee_A": 0.4},
                                       0.3),
          "prosthesis": (_prosthesis, None, 0.02)}


def _stages(model) -> list[str]:
    return [type(r).__name__ for r in model.coordinate_map.resolvers]


@pytest.mark.parametrize("name", list(MODELS))
def test_whole_runs_agree_with_the_generic_path(tmp_path, name, monkeypatch):
    build, initial, t_end = MODELS[name]
    model = biobullet.load_model(build(tmp_path))
    kw = {"rtol": 1e-9, "atol": 1e-12, "initial": initial, "progress": False, "t_eval": np.linspace(0, t_end, 51)}
    calls = count_compiled_calls(monkeypatch)
    # every evaluation through `__call__` (the compiled stepper, which calls the kernel inside numba, has its own
    # comparison with the generic path in test_compiled_stepper.py)
    monkeypatch.setattr(CompiledSteps, "for_rhs", classmethod(lambda cls, rhs: None))
    fast = biobullet.simulate(model, t_end, **kw)
    slow = biobullet.simulate(model, t_end, compiled=False, **kw)
    assert calls["compiled"] > 20 and calls["handed over"] <= 0.1 * calls["compiled"], calls
    assert fast.meta["status"] == slow.meta["status"] == "finished"
    # the same equations to round-off, integrated at rtol 1e-9: the runs differ by the integrator's error growth
    np.testing.assert_allclose(fast.positions, slow.positions, rtol=0, atol=1e-7)
    np.testing.assert_allclose(fast.velocities, slow.velocities, rtol=0, atol=1e-6)


def test_hands_over_where_a_function_stage_would(tmp_path):
    """An expression outside its domain after the loop: the compiled call returns None (the generic path then
    raises the expression's EvaluationError), every time."""
    path = driven_knee(tmp_path)
    path.write_text(path.read_text().replace('expression="0.4*sin(knee_D) + 0.5*t"',
                                             'expression="log(knee_D - 0.5) + 0.5*t"'))
    model = biobullet.load_model(path)
    fast = System(model, "reduced", {"shadow": True})
    y = np.zeros(fast.size)
    y[0] = 0.3
    for _ in range(2):
        with pytest.raises(Exception, match="log|undefined|not finite"):
            fast.rhs(0.0, y)   # the generic path solves the loop, then reports the expression
        assert fast._compiled.ready() and fast._compiled(0.0, y) is None


def test_only_library_functions(tmp_path, monkeypatch):
    """A joint function of a type the kernel does not evaluate keeps the generic path."""
    from biobullet.model.joint_jets import function_table as real
    model = biobullet.load_model(driven_knee(tmp_path))
    assert System(model, "reduced", {"shadow": True})._compiled is not None
    monkeypatch.setattr("biobullet.model.joint_jets.function_table", lambda entries: None)
    assert System(biobullet.load_model(driven_knee(tmp_path)), "reduced", {"shadow": True})._compiled is None
    monkeypatch.setattr("biobullet.model.joint_jets.function_table", real)
    monkeypatch.setattr(jit, "ENABLED", False)   # BIOBULLET_NUMBA=0
    assert System(model, "reduced", {"shadow": True})._compiled is None


@pytest.mark.parametrize("control", ["state", "joints"])
@pytest.mark.parametrize("name", ["driven knee", "functions after the loop"])
def test_trajectory_batch_equals_the_per_sample_path(tmp_path, name, control, monkeypatch):
    """The 1,001-sample trajectory of a loop mixed with functions: the functions before the loop vectorised over
    samples, the loop-dependent joints in one compiled Newton pass, the functions after it vectorised — equal to
    the per-sample generic path (`CoordinateMap.evaluate` resolver by resolver) to round-off."""
    from trajectory_batch import assert_same_states, batch_and_per_sample
    build, initial, _ = MODELS[name]
    model = biobullet.load_model(build(tmp_path))
    trajectory = biobullet.simulate(model, 1.0, rtol=1e-8, atol=1e-11, initial=initial, progress=False,
                                    error_control=control)
    assert len(trajectory.t) == 1001
    fast, slow, generic = batch_and_per_sample(model, trajectory, control, monkeypatch)
    assert len(generic) <= 1, f"{len(generic)} samples on the generic path"
    assert_same_states(fast, slow)
