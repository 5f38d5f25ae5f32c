"""The compiled loop right-hand side (integrate/compiled_rhs.py `CompiledReducedRHS`) on coordinate maps of
several stages — two loops, a loop whose known joint is an explicit function's output, functions that take a
loop-dependent joint as input, and the bundled prosthesis (four Fourier/expression drivers before its four-bar
loop, a damped spring, two ground contacts) — checked against physics (`rhs_oracles`):

- whole runs are served by the compiled call (few hand-overs), and at states of the run ẏ satisfies d'Alembert's
  principle with Pinocchio's inverse dynamics and the forces written out in the test (the prosthesis's contacts
  not acting in its first 20 ms); its loops are closed (Pinocchio);
- an expression outside its domain hands over; the trajectory output keeps every loop closed."""
from __future__ import annotations

import re
from pathlib import Path

import biobullet
import numpy as np
import pytest
from biobullet.integrate.compiled_stepper import CompiledSteps
from biobullet.integrate.engine import System
from multiloop_models import ROOT, count_compiled_calls, driven_knee, two_knees
from rhs_oracles import (PinocchioTree, assert_dalembert, assert_trajectory_closed, loop_closure,
                         prosthesis_forces, spring_force, states_of)



def _prosthesis(directory: Path) -> Path:
    """urdf/prosthesis_fourbar.urdf without its two third-party (paper-study) force elements, which keep the
    callback stage; its library elements (damped spring, ground contacts) and all its joint functions stay."""
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


def _law(name: str, model, tree):
    """The files' force elements written out (multiloop_models): two knees — the damped spring thigh_1 → shank_1
    (k 300 N/m, L₀ 0.12 m, c 2 N s/m) and the joint spring-damper at hip_2 (5 N m/rad, rest 0.2, 0.1 N m s);
    the driven knee — the damped spring thigh → foot (k 300, L₀ 0.3, c 2); the prosthesis — its damper, with
    the heel and toe contacts not acting (`rhs_oracles.prosthesis_forces`)."""
    from biobullet.forces.base import joint_indices
    if name == "prosthesis":
        return prosthesis_forces(tree, Path(model.file).read_text())
    if name == "two knees":
        i, k = joint_indices(model, "hip_2", None)

        def force(x, xd, t):
            tau = spring_force(tree, x, xd, ("thigh_1", [-0.01, 0.0, -0.05]), ("shank_1", [0.03, 0.0, -0.1]),
                               300.0, 0.12, 2.0)
            tau[k] += -5.0 * (x[i] - 0.2) - 0.1 * xd[k]
            return tau
        return force
    return lambda x, xd, t: spring_force(tree, x, xd, ("thigh", [-0.01, 0.0, -0.05]), ("foot", [0.03, 0.0, 0.0]),
                                         300.0, 0.3, 2.0)


@pytest.mark.parametrize("name", list(MODELS))
def test_runs_are_compiled_and_their_states_satisfy_the_dynamics(tmp_path, name, monkeypatch):
    build, initial, t_end = MODELS[name]
    model = biobullet.load_model(build(tmp_path))
    kw = {"rtol": 1e-9, "atol": 1e-12, "initial": initial, "progress": False, "t_eval": np.linspace(0, t_end, 11)}
    calls = count_compiled_calls(monkeypatch)
    # every evaluation through `__call__` (the compiled stepper calls the kernel inside numba: test_compiled_stepper)
    monkeypatch.setattr(CompiledSteps, "for_rhs", classmethod(lambda cls, rhs: None))
    run = biobullet.simulate(model, t_end, **kw)
    assert calls["compiled"] > 20 and calls["handed over"] <= 0.1 * calls["compiled"], calls
    assert run.meta["status"] == "finished"
    tree = PinocchioTree(model)
    assert max(loop_closure(tree, x) for x in run.positions) <= 1e-10
    system = System(model, None)
    law = _law(name, model, tree)
    for t, y in states_of(system, run, (3, 7, 10)):
        assert_dalembert(system, tree, t, y, system.rhs(t, y), law)


def test_hands_over_where_a_function_stage_would(tmp_path):
    """An expression outside its domain after the loop: the compiled call returns None (the callback stage then
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
            fast.rhs(0.0, y)   # the callback stage solves the loop, then reports the expression
        assert fast._compiled.ready() and fast._compiled(0.0, y) is None


def test_only_library_functions(tmp_path, monkeypatch):
    """A joint function of a type the kernel does not evaluate keeps the callback stage."""
    model = biobullet.load_model(driven_knee(tmp_path))
    assert System(model, "reduced", {"shadow": True})._compiled is not None
    monkeypatch.setattr("biobullet.model.joint_jets.function_table", lambda entries: None)
    assert System(biobullet.load_model(driven_knee(tmp_path)), "reduced", {"shadow": True})._compiled is None


@pytest.mark.parametrize("control", ["state", "joints"])
@pytest.mark.parametrize("name", ["driven knee", "functions after the loop"])
def test_trajectory_output_keeps_the_loops_closed(tmp_path, name, control):
    """The 1,001-sample trajectory of a loop mixed with functions (the functions before the loop vectorised over
    samples, the loop-dependent joints in one compiled Newton pass, the functions after it vectorised): every
    sample's loop closed in position and velocity (Pinocchio's point kinematics)."""
    build, initial, _ = MODELS[name]
    model = biobullet.load_model(build(tmp_path))
    trajectory = biobullet.simulate(model, 1.0, rtol=1e-8, atol=1e-11, initial=initial, progress=False,
                                    error_control=control)
    assert len(trajectory.t) == 1001
    assert_trajectory_closed(PinocchioTree(model), trajectory)
