"""The public calls' kept positions (`pipeline.stages.joint_state_stage_py`, `Data.arrays.positions`): a call at the
state (q, t) of the last one — `mass_matrix(q)` then `bias_forces(q, v)`, as a control loop asks them — takes the
tree configuration x, G and each loop set's factor from that call (`constraints.newton_kernel.loop_rates_py`), and
computes only the rates. The key is a copy of q's values and t, never the array's identity.

Every result is checked against the `reduced_pinocchio` check formulation (its own tree algorithms and the
generic resolver, on another model object: its own warm starts) to 1e-12 of the result's largest entry — the bound
of tests/unit/pipeline/test_loop_stage.py: a kept factor is that of a point within cond₁ · 1e-3 of the solver's
tolerance of the solution (≈ 1e-16 relative in the results), while a stale x, G or rate misses by the state's
change (≥ 1e-6 here). The prosthesis has joint functions of time (its treadmill and gait functions), so a changed t
moves x.
"""
from __future__ import annotations

import numpy as np
import pytest

import biobullet
from biobullet.core.errors import ModelError

pytest.importorskip("pinocchio")
MODELS = ["fourbar_knee", "andrews_squeezer", "prosthesis_fourbar"]


def _agree(result, expected) -> None:
    np.testing.assert_allclose(result, expected, rtol=0, atol=1e-12 * np.max(np.abs(expected)))


def _differ(result, expected) -> bool:
    return bool(np.max(np.abs(result - expected)) > 1e-6 * np.max(np.abs(expected)))


@pytest.mark.parametrize("name", MODELS)
def test_mass_matrix_then_bias_forces_at_each_state_of_a_walk(name):
    """M, h, v̇ at each state of a walk of 1e-3 steps (t moving too), M first: the second and third calls take the
    first's positions (the key holds q and t) and agree with the check formulation; a q changed in place, a new
    v, τ or t are computed afresh."""
    model, check = biobullet.load_model(name), biobullet.load_model(name)
    rng = np.random.default_rng(240)
    q, _ = model.initial_state()
    v, force = rng.normal(size=model.nv), rng.normal(size=model.nv)
    positions = model.workspace.arrays.positions
    for k in range(8):
        q = q + 1e-3 * rng.uniform(-1.0, 1.0, model.nq)
        t = 0.01 * k
        mass = model.mass_matrix(q, t)
        np.testing.assert_array_equal(positions, np.r_[q, t, 1.0])   # kept: this call's state
        bias = model.bias_forces(q, v, t)
        accel = model.forward_dynamics(q, v, force, t)
        _agree(mass, check.mass_matrix(q, t, formulation="reduced_pinocchio"))
        _agree(bias, check.bias_forces(q, v, t, formulation="reduced_pinocchio"))
        _agree(accel, check.forward_dynamics(q, v, force, t, formulation="reduced_pinocchio"))
        # another v, then another τ, at the same state
        w = v + rng.normal(size=model.nv)
        _agree(model.bias_forces(q, w, t), check.bias_forces(q, w, t, formulation="reduced_pinocchio"))
        other = force + rng.normal(size=model.nv)
        _agree(model.forward_dynamics(q, w, other, t),
               check.forward_dynamics(q, w, other, t, formulation="reduced_pinocchio"))


@pytest.mark.parametrize("name", MODELS)
def test_the_kept_positions_are_taken_only_at_the_same_values(name):
    """After `mass_matrix(q)`, G in the workspace is scaled by 2: `bias_forces(q, v)` at the same values reads
    it (h = Gᵀ h_tree is off: the kept positions are taken, no joint-state stage writes G again) — the same
    numbers in a new array too. Then the same array changed in place, another t (the prosthesis's x moves with
    t) and another model object each get the check formulation's result: G computed again."""
    model, check = biobullet.load_model(name), biobullet.load_model(name)
    rng = np.random.default_rng(241)
    q0, _ = model.initial_state()
    v = rng.normal(size=model.nv)
    gradient = model.workspace.arrays.gradient
    q = q0 + 0.01 * rng.uniform(-1.0, 1.0, model.nq)
    expected = check.bias_forces(q, v, formulation="reduced_pinocchio")
    model.mass_matrix(q)
    gradient *= 2.0
    assert _differ(model.bias_forces(q.copy(), v), expected)   # taken: the poisoned G
    # the same array, changed in place
    model.mass_matrix(q)
    gradient *= 2.0
    q += 1e-3
    _agree(model.bias_forces(q, v), check.bias_forces(q, v, formulation="reduced_pinocchio"))
    # the same q at another t
    model.mass_matrix(q, 0.0)
    gradient *= 2.0
    _agree(model.bias_forces(q, v, 0.05), check.bias_forces(q, v, 0.05, formulation="reduced_pinocchio"))
    # another model object of the same file: its own workspace and key
    other = biobullet.load_model(name)
    model.mass_matrix(q)
    gradient *= 2.0
    _agree(other.bias_forces(q, v), check.bias_forces(q, v, formulation="reduced_pinocchio"))


def test_a_declined_call_clears_the_kept_positions():
    """A bias call at the kept state with a non-finite v declines (one ModelError naming 'v', as without the kept
    positions); the next call at that state agrees with the check formulation."""
    model, check = biobullet.load_model("fourbar_knee"), biobullet.load_model("fourbar_knee")
    q, _ = model.initial_state()
    q = q + 0.02
    v = np.array([0.7])
    model.mass_matrix(q)
    with pytest.raises(ModelError, match="'v'"):
        model.bias_forces(q, np.array([np.nan]))
    assert model.workspace.arrays.positions[-1] == 0.0
    _agree(model.bias_forces(q, v), check.bias_forces(q, v, formulation="reduced_pinocchio"))
    _agree(model.mass_matrix(q), check.mass_matrix(q, formulation="reduced_pinocchio"))
