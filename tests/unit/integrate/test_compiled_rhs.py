"""The compiled right-hand side of reduced closed-loop models (integrate/compiled_rhs.py): whole Andrews runs meet
the published reference (IVP test set); ẏ where the compiled call hands over (large input change) or retries from
a recent solution (a far trial stage) satisfies d'Alembert's principle with Pinocchio's inverse dynamics and the
forces written out (`rhs_oracles`); non-finite states are refused; the models it covers; the trajectory output's
batch pass keeps every loop closed in position and velocity (Pinocchio's kinematics).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet
from andrews_classic import REFERENCE_Q
from biobullet.integrate import compiled_rhs
from biobullet.integrate.engine import System, _NonFinite
from rhs_oracles import PinocchioTree, assert_dalembert, assert_trajectory_closed, loop_closure, spring_force

ROOT = Path(__file__).resolve().parents[3]
ANDREWS = ROOT / "urdf" / "andrews_squeezer.urdf"



def _andrews_law(model, tree):
    """The squeezer's forces written out from the file: the spring body3 (0.02, −0.018, 0) → ground
    (0.014, 0.072, 0), k = 4530 N/m, L₀ = 0.07785 m, undamped, and the constant drive 0.033 N m at beta."""
    from biobullet.forces.base import joint_indices
    _, k = joint_indices(model, "beta", None)

    def force(x, xd, t):
        tau = spring_force(tree, x, xd, ("body3", [0.02, -0.018, 0.0]), ("ground", [0.014, 0.072, 0.0]), 4530.0,
                           0.07785, 0.0)
        tau[k] += 0.033
        return tau
    return force


def test_simulation_meets_the_published_reference():
    """β(0.03 s) of the squeezer against the IVP test set's value (PSIDE at 1e-14), to the run's accuracy."""
    model = biobullet.load_model(ANDREWS)
    kw = dict(formulation="reduced", method="DOP853", rtol=1e-8, atol=1e-8, t_eval=[0.01, 0.03], progress=False)
    fast = biobullet.simulate(model, 0.03, **kw)
    assert fast.meta["status"] == "finished"
    assert fast.meta["right_hand_side"]["path"] == "compiled loop map"
    reference = REFERENCE_Q[0]
    assert abs(fast.column("beta")[-1] - reference) <= 1e-7 * reference


def test_hands_over_on_a_large_input_change_and_on_non_finite_states():
    model = biobullet.load_model(ANDREWS)
    fast = System(model, "reduced", {"shadow": False})
    y0 = fast.initial_vector(None, 0.0)
    assert fast._compiled(0.0, y0) is not None
    far = y0.copy()
    far[0] += 0.5   # β jumps by 0.5 rad from the cached solution: continuation belongs to the callback stage
    far[1] = 3.0
    assert fast._compiled(0.0, far) is None
    tree = PinocchioTree(model)
    out = fast.rhs(0.0, far)   # served by the hand-over: still the squeezer's dynamics
    assert loop_closure(tree, fast.tree_state(0.0, far)[0]) <= 1e-10
    assert_dalembert(fast, tree, 0.0, far, out, _andrews_law(model, tree))
    bad = y0.copy()
    bad[1] = np.nan
    assert fast._compiled(0.0, bad) is None
    with pytest.raises(_NonFinite, match="not finite"):
        fast.rhs(0.0, bad)


def test_only_models_it_covers(monkeypatch):
    andrews = biobullet.load_model(ANDREWS)
    assert System(andrews, "reduced", {"shadow": False})._compiled is not None
    for formulation in ("reduced_recursive", "multipliers", "matrix_calculus"):
        assert System(andrews, formulation, {"shadow": False})._compiled is None, formulation
    assert System(biobullet.load_model(ROOT / "urdf" / "fourbar_knee.urdf"), "reduced", {"shadow": True})._compiled
    prosthesis = biobullet.load_model(ROOT / "urdf" / "prosthesis_fourbar.urdf")   # third-party force elements
    arm = biobullet.load_model(ROOT / "urdf" / "arm7.urdf")   # no loop: the explicit-map kernel instead
    # the study's elements hand over their compiled kernels (`ForceElement.compiled_kernel`); an element without
    # one keeps the callback stage
    assert type(System(prosthesis, "reduced", {"shadow": True})._compiled) is compiled_rhs.CompiledReducedRHS
    from biobullet.forces import force_elements
    stop = type(next(e for e in force_elements(prosthesis) if e.name == "knee_stop"))
    monkeypatch.setattr(stop, "compiled_kernel", lambda self, model: None)
    assert System(prosthesis, "reduced", {"shadow": True})._compiled is None
    assert type(System(arm, "reduced", {"shadow": True})._compiled).__name__ == "CompiledReducedRHS"


@pytest.mark.parametrize("control", ["state", "joints"])
@pytest.mark.parametrize("name, t_end, initial", [("fourbar_knee.urdf", 1.0, {"knee_A": 0.5}),
                                                  ("andrews_squeezer.urdf", 0.03, None)])
def test_trajectory_output_keeps_the_loops_closed(name, t_end, initial, control):
    """The default 1,001-sample trajectory of a loop model (loop-dependent joints in one compiled Newton pass,
    `_loop_positions_py`, second-order prediction, rates from the last Jacobian): at every sample the loop points
    coincide to 1e-10 m and move together to 1e-9 of the largest rate (Pinocchio's point kinematics; the Newton
    tolerance is far below both)."""
    model = biobullet.load_model(ROOT / "urdf" / name)
    trajectory = biobullet.simulate(model, t_end, rtol=1e-8, atol=1e-11, initial=initial, progress=False,
                                    error_control=control)
    assert len(trajectory.t) == 1001
    assert_trajectory_closed(PinocchioTree(model), trajectory)


def test_a_far_trial_stage_retries_from_a_recent_solution():
    """A state 0.43 rad from the run's loop warm start (an explicit integrator's far trial stage), where the loop
    stage alone hands over (the declared initial solution is nearer than the warm start: continuation), is taken
    from the nearest of the stage's recent solutions, with a ẏ that satisfies d'Alembert's principle (Pinocchio, to
    the oracle's 1e-6) — and a state far from every recent solution still hands over."""
    model = biobullet.load_model(ROOT / "urdf" / "fourbar_knee.urdf")
    fast = System(model, "reduced", {"shadow": True})
    y = {a: fast.initial_vector({"knee_A": a, "knee_A_dot": 1.0}, 0.0) for a in (0.30, 0.32, 0.34, -0.1, 0.33, -0.5)}
    model.joint_state(y[0.30][:1], y[0.30][1:2], 0.0)   # the resolver's cache at 0.30, then the stage's own
    for a in (0.32, 0.34):
        assert fast._compiled(0.0, y[a]) is not None
    assert fast._compiled(0.0, y[-0.1]) is None  # a trial stage far away: the callback stage's …
    fast.rhs(0.0, y[-0.1])                       # … solution there becomes the warm start
    assert fast._compiled.ready()
    assert fast._compiled._evaluate(0.0, y[0.33]) is None   # the stage alone hands over here …
    out = fast._compiled(0.0, y[0.33])                       # … the retry from 0.34 does not
    assert out is not None
    assert fast._compiled(0.0, y[-0.5]) is None              # nothing recent within 0.1 rad
    tree = PinocchioTree(model)   # no elements: Gᵀ RNEA(x, ẋ, ẍ) = 0
    assert loop_closure(tree, fast.tree_state(0.0, y[0.33])[0]) <= 1e-10
    assert_dalembert(fast, tree, 0.0, y[0.33], out)
