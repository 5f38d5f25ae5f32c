"""Andrews' squeezer through biobullet's loop closures vs the hand-written classic solver (tests/andrews_classic.py).

Forces are applied BY HAND here (spring D→C through the Jacobian transpose at D, motor torque on beta) so the
check does not depend on the force-element layer. Published t = 0 values (IVP test set, Hairer & Wanner):
β''(0) = 14222.4439199541, Θ''(0) = −10666.8329399656; dΘ/dβ(0) = −0.75 and M_r(0) from the classic solver.
"""
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.constraints.equations import constraint_set
from biobullet.algorithms.kinematics import frame_jacobian, frame_placement
from biobullet.dynamics.multipliers import constrained_accelerations, joint_reactions

ROOT = Path(__file__).resolve().parents[2]
import andrews_classic as ac  # tests/andrews_classic.py

SPRING_POINT_D = np.array([0.02, -0.018, 0.0])   # on body3 (sd, -sc)
POINT_C = np.array([ac.XC, ac.YC, 0.0])


@pytest.fixture(scope="module")
def model():
    return biobullet.load_model(ROOT / "urdf" / "andrews_squeezer.urdf")


def classic_index(model):
    """Position of each classic coordinate in the model's joint order."""
    return [model.joint_names.index(n) for n in ac.COORDINATE_NAMES]


def applied_forces(model, x):
    """Joint-space τ: motor torque on beta + spring D→C mapped by the Jacobian transpose of D."""
    rotation, origin = frame_placement(model, x, "body3")
    d = rotation @ SPRING_POINT_D + origin
    length = np.linalg.norm(d - POINT_C)
    force_on_d = -ac.C0 * (length - ac.L0) * (d - POINT_C) / length
    tau = frame_jacobian(model, x, "body3", SPRING_POINT_D)[:3].T @ force_on_d
    tau[model.joint_names.index("beta")] += ac.MOM
    return tau


def test_initial_state_sensitivity_and_reduced_mass(model):
    q, _ = model.initial_state()
    x, gradient = model.coordinate_gradient(q)
    idx = classic_index(model)
    # joint angles resolved by Newton agree with the published 30-digit initial state to round-off
    np.testing.assert_allclose(x[idx], ac.Q0, rtol=0, atol=1e-14)
    assert gradient[model.joint_names.index("theta"), 0] == pytest.approx(-0.75, rel=1e-12)
    # the whole tangent vector equals the classic null-space vector (β' = 1)
    np.testing.assert_allclose(gradient[idx, 0], ac.tangent(ac.Q0), rtol=0, atol=1e-12)
    reduced = model.mass_matrix(q)[0, 0]
    assert reduced == pytest.approx(2.3202763313e-06, rel=1e-10)   # 11 published digits
    assert reduced == pytest.approx(ac.reduced_mass(ac.Q0), rel=1e-12)


@pytest.mark.parametrize("formulation", ["reduced", "reduced_recursive", "matrix_calculus"])
def test_t0_accelerations_reduced(model, formulation):
    q, v = model.initial_state()
    x, xd, gradient, gamma = model.joint_state(q, v)
    assert np.max(np.abs(constraint_set(model).residual(x))) <= 1e-16  # |Φ| at round-off (m)
    tau = applied_forces(model, x)
    mass, bias = (model.mass_matrix(q, formulation=formulation), model.bias_forces(q, v, formulation=formulation))
    qdd = np.linalg.solve(mass, gradient.T @ tau - bias)
    xdd = gradient @ qdd + gamma
    assert xdd[model.joint_names.index("beta")] == pytest.approx(14222.4439199541, rel=1e-11)
    assert xdd[model.joint_names.index("theta")] == pytest.approx(-10666.83294, rel=1e-9)
    np.testing.assert_allclose(xdd[classic_index(model)], ac.initial_accelerations()[0], rtol=1e-10, atol=1e-8)


def test_t0_accelerations_multipliers(model):
    q, v = model.initial_state()
    x, xd = model.joint_configuration(q), np.zeros(model.n_tangent)
    xdd, lam = constrained_accelerations(model, x, xd, applied_forces(model, x))
    assert xdd[model.joint_names.index("beta")] == pytest.approx(14222.4439199541, rel=1e-11)
    assert xdd[model.joint_names.index("theta")] == pytest.approx(-10666.83294, rel=1e-9)
    np.testing.assert_allclose(xdd[classic_index(model)], ac.initial_accelerations()[0], rtol=1e-10, atol=1e-8)
    # λ of a planar loop are in-plane components in body2's plane basis; joint_reactions gives the world force on
    # body2's E. The classic problem writes M q'' = f − Gᵀλ with g = E(body2) − E(other) in world x, y, so its
    # published multipliers are the opposite of our world forces.
    generalized, per_loop = joint_reactions(model, x, lam)
    forces = np.concatenate([per_loop[name]["force"][:2] for name in
                             ("E_body2_body3", "E_body2_body4", "E_body2_body6")])
    np.testing.assert_allclose(forces, -ac.REFERENCE_LAMBDA0, rtol=0, atol=1e-10 * 98.57)
    np.testing.assert_allclose(generalized, constraint_set(model).jacobian(x).T @ lam, rtol=0, atol=1e-12)


def test_random_states_against_the_classic_solver(model):
    """Off the initial state (crank angle and rate random): both formulations = classic index-1 solve."""
    rng = np.random.default_rng(3)
    idx = classic_index(model)
    for _ in range(4):
        q = np.array([ac.Q0[0] + rng.uniform(-1.0, 1.0)])
        v = np.array([rng.uniform(-50.0, 50.0)])
        x, xd, gradient, gamma = model.joint_state(q, v)
        tau = applied_forces(model, x)
        qdd = np.linalg.solve(model.mass_matrix(q), gradient.T @ tau - model.bias_forces(q, v))
        classic, _ = ac.accelerations(x[idx], xd[idx])
        scale = np.max(np.abs(classic))
        np.testing.assert_allclose((gradient @ qdd + gamma)[idx], classic, rtol=0, atol=1e-10 * scale)
        xdd, _ = constrained_accelerations(model, x, xd, tau)
        np.testing.assert_allclose(xdd[idx], classic, rtol=0, atol=1e-10 * scale)
