"""The public calls' kept state (`pipeline.stages.joint_state_stage_py`, `Data.arrays.positions`): the mass matrix at
the state (q, t) of the last call — after `bias_forces(q, v)` or `forward_dynamics(q, v, tau)` there — reads that
call's x and G as they are, without the joint-state stage. The key is a copy of q's values and t, never the array's
identity.

Every result is checked against the `reduced_pinocchio` check formulation (its own tree algorithms and the
generic resolver, on another model object: its own warm starts) to 1e-12 of the result's largest entry — the bound
of tests/unit/pipeline/test_loop_stage.py: a loop solution taken instead of a solve is that of a point within
cond₁ · 1e-3 of the solver's tolerance (≈ 1e-16 relative in the results), while a stale x or G misses by the
state's change (≥ 1e-6 here). The prosthesis has joint functions of time (its treadmill and gait functions), so
a changed t moves x.
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
def test_the_public_calls_at_each_state_of_a_walk(name):
    """h, v̇, M, then M again, at each state of a walk of 1e-3 steps (t moving too): the key holds the last
    call's q and t, the mass-matrix calls take the kept state, and every result agrees with the check
    formulation; another v or τ at one state too."""
    model, check = biobullet.load_model(name), biobullet.load_model(name)
    rng = np.random.default_rng(240)
    q, _ = model.initial_state()
    v, force = rng.normal(size=model.nv), rng.normal(size=model.nv)
    positions = model.workspace.arrays.positions
    for k in range(8):
        q = q + 1e-3 * rng.uniform(-1.0, 1.0, model.nq)
        t = 0.01 * k
        bias = model.bias_forces(q, v, t)
        np.testing.assert_array_equal(positions, np.r_[q, t, 1.0])   # kept: this call's state
        accel = model.forward_dynamics(q, v, force, t)
        mass = model.mass_matrix(q, t)
        np.testing.assert_array_equal(model.mass_matrix(q, t), mass)
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
def test_the_kept_state_is_taken_only_at_the_same_values(name):
    """After `bias_forces(q, v)`, G in the workspace is scaled by 2: `mass_matrix(q)` at the same values (a new
    array holding them) reads it (M = Gᵀ M_tree G is off: the kept state is taken, no joint-state stage writes G
    again). Then the same array changed in place, another t (the prosthesis's x moves with t) and another model
    object each get the check formulation's M: G computed again."""
    model, check = biobullet.load_model(name), biobullet.load_model(name)
    rng = np.random.default_rng(241)
    q0, _ = model.initial_state()
    v = rng.normal(size=model.nv)
    gradient = model.workspace.arrays.gradient
    q = q0 + 0.01 * rng.uniform(-1.0, 1.0, model.nq)
    expected = check.mass_matrix(q, formulation="reduced_pinocchio")
    model.bias_forces(q, v)
    gradient *= 2.0
    assert _differ(model.mass_matrix(q.copy()), expected)   # taken: the scaled G
    # the same array, changed in place
    model.bias_forces(q, v)
    gradient *= 2.0
    q += 1e-3
    _agree(model.mass_matrix(q), check.mass_matrix(q, formulation="reduced_pinocchio"))
    # the same q at another t
    model.bias_forces(q, v, 0.0)
    gradient *= 2.0
    _agree(model.mass_matrix(q, 0.05), check.mass_matrix(q, 0.05, formulation="reduced_pinocchio"))
    # another model object of the same file: its own workspace and key
    other = biobullet.load_model(name)
    model.bias_forces(q, v)
    gradient *= 2.0
    _agree(other.mass_matrix(q), check.mass_matrix(q, formulation="reduced_pinocchio"))


def test_a_declined_call_clears_the_kept_state():
    """A bias call at the kept state with a non-finite v declines (one ModelError naming 'v', as without the kept
    state) and clears the key; the next calls at that state agree with the check formulation."""
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


@pytest.mark.parametrize("name", MODELS + ["arm7"])
def test_the_tree_placements_are_taken_only_at_the_same_joint_layout(name):
    """The tree kernel places the bodies and computes their inertias only where x is not its last call's
    (`algorithms.compiled_kernels._tree_dynamics_into_py`, the tree work's `placed_at`). After `mass_matrix(q)`
    the bodies' inertias in the tree work are scaled by 2: `bias_forces(q, v)` at the same values reads them (h is
    off: they were taken, not computed again); at the same array changed in place, and at another t of the
    prosthesis (its x moves with t), h, v̇ and M agree with the check formulation."""
    model, check = biobullet.load_model(name), biobullet.load_model(name)
    rng = np.random.default_rng(242)
    q0, _ = model.initial_state()
    v = rng.normal(size=model.nv)
    inertias = model.workspace.arrays.tree_work[3]
    q = q0 + 0.01 * rng.uniform(-1.0, 1.0, model.nq)
    expected = check.bias_forces(q, v, formulation="reduced_pinocchio")
    model.mass_matrix(q)
    inertias *= 2.0
    assert _differ(model.bias_forces(q.copy(), v), expected)   # taken: the scaled inertias
    model.mass_matrix(q)
    inertias *= 2.0
    q += 1e-3
    _agree(model.bias_forces(q, v), check.bias_forces(q, v, formulation="reduced_pinocchio"))
    _agree(model.forward_dynamics(q, v), check.forward_dynamics(q, v, formulation="reduced_pinocchio"))
    _agree(model.mass_matrix(q), check.mass_matrix(q, formulation="reduced_pinocchio"))
    model.mass_matrix(q, 0.0)
    inertias *= 2.0
    t = 0.05 if name == "prosthesis_fourbar" else 0.0
    if t:
        _agree(model.bias_forces(q, v, t), check.bias_forces(q, v, t, formulation="reduced_pinocchio"))
