"""The support phases' constrained solve near the upright stance, where the links are nearly parallel and M is
ill-conditioned (cond 1e9–1e11) while the constrained system is not: the accelerations and foot reactions satisfy
both equations, M q̈ + h = Q + Jᵀ R and J q̈ = γ, to round-off of the KKT system (a Schur complement through M⁻¹
leaves residuals of cond(M)·ε there: 7e-12 and 4e-8, and the jump's impact landing took ≈ 10× the evaluations)."""
from __future__ import annotations

import numpy as np
import pytest
from biobullet.extensible import kinematics as kin
from biobullet.extensible.chain_model import six_link_reference
from biobullet.extensible.phases import FootConstraint, constrained_accelerations, stance_configuration


@pytest.mark.parametrize("spread", [1e-3, 1e-4])
def test_nearly_parallel_links_solve_to_round_off(spread):
    model = six_link_reference()
    rng = np.random.default_rng(3)
    q = stance_configuration(model)
    q[2:8] += spread * rng.normal(size=6)
    v = 0.1 * rng.normal(size=model.dof)
    assert np.linalg.cond(model.mass_matrix(q)) > 1e8
    feet = [FootConstraint(foot, tuple(kin.foot_position(model, q, foot) + 1e-4)) for foot in (0, 1)]
    Q = kin.joint_moment_force(model, rng.normal(size=5) * 10.0)
    qdd, reactions = constrained_accelerations(model, q, v, 0.0, Q, feet)
    J = np.vstack([kin.foot_jacobian(model, q, c.foot) for c in feet])
    gamma = np.concatenate([c.acceleration_rhs(model, q, v, J[2 * i:2 * i + 2]) for i, c in enumerate(feet)])
    M, h = model.mass_matrix(q), model.bias_forces(q, v)
    assert np.abs(M @ qdd + h - Q - J.T @ reactions.reshape(-1)).max() <= 1e-13 * np.abs(h).max()
    assert np.abs(J @ qdd - gamma).max() <= 1e-13 * max(1.0, np.abs(gamma).max())
