"""Support controllers of the paper-004 jump (`biobullet_studies.anthropomorph_control`), checked against the constrained
dynamics of `phases` (an independent KKT solve), Newton–Euler momentum identities and finite differences."""
from __future__ import annotations

import numpy as np
import pytest
from biobullet.core.errors import ModelError
from biobullet.extensible import kinematics as kin
from biobullet.extensible.chain_model import six_link_reference
from biobullet_studies.anthropomorph_control import (
    SupportTasks,
    TaskWeights,
    com_jacobian,
    support_inverse_dynamics,
    virtual_force_moments,
)
from biobullet.extensible.phases import FootConstraint, constrained_accelerations


def _crouched_state(model, rng):
    from biobullet_studies.anthropomorph import crouch_state, posture
    q = crouch_state(model, posture(model, 0.5, 0.5, 0.2) + 0.02 * rng.standard_normal(model.n_links))
    # close leg 2 on leg 1's foot is not needed: the controller holds each foot where it is
    v = 0.3 * rng.standard_normal(model.dof)
    v[2 + model.n_links:] *= 0.01
    return q, v


def test_com_jacobian_matches_finite_differences():
    model = six_link_reference()
    rng = np.random.default_rng(3)
    q, _ = _crouched_state(model, rng)
    J = com_jacobian(model, q)
    eps = 1e-7
    fd = np.column_stack([(kin.center_of_mass(model, q + eps * e) - kin.center_of_mass(model, q - eps * e)) / (2 * eps)
                          for e in np.eye(model.dof)])
    assert np.max(np.abs(J - fd)) < 1e-8


def test_inverse_dynamics_realises_the_momentum_tasks():
    """Apply the returned moments to the pinned-feet dynamics (phases.constrained_accelerations, a separate KKT
    solve): the reactions it finds give m ẍ_G = ΣR_x and L̇_G = Σ(r_A − G)×R_A + Σa equal to the tasks."""
    model = six_link_reference()
    rng = np.random.default_rng(7)
    q, v = _crouched_state(model, rng)
    tasks = SupportTasks(com_acc=(0.7, None), momentum_rate=-3.0)   # feasible: met up to the regularisation
    # tiny regularisation: the tasks are met to ~(w_reg / w_task)² relative
    sol = support_inverse_dynamics(model, q, v, 0.0, [0, 1], tasks,
                                   TaskWeights(moments=1e-6, ankle=0.0, reactions=1e-7, equal_loading=1e-6))
    Q = kin.joint_moment_force(model, sol.tau, sol.ankle)
    anchors = [tuple(kin.foot_position(model, q, i)) for i in range(2)]
    # alpha = 20 as in the controller, beta = 0: the feet sit exactly at their anchors here
    cons = [FootConstraint(i, anchors[i], 20.0, 0.0) for i in range(2)]
    a, R = constrained_accelerations(model, q, v, 0.0, Q, cons)
    assert np.allclose(a, sol.qdd, atol=1e-8 * np.max(np.abs(a)))
    assert np.allclose(R, sol.reactions, atol=1e-8 * np.max(np.abs(R)))
    m = model.total_mass
    G = kin.center_of_mass(model, q)
    assert R[:, 0].sum() / m == pytest.approx(0.7, abs=1e-9)
    d = [np.array(anchors[i]) - G for i in range(2)]
    Ldot = sum(d[i][0] * R[i, 1] - d[i][1] * R[i, 0] for i in range(2)) + sol.ankle.sum()
    assert Ldot == pytest.approx(-3.0, abs=1e-8)
    # and L̇_G from the motion itself (finite difference of L_G along q̈): the same number
    h = 1e-6
    Lp = kin.angular_momentum_about_com(model, q + h * v, v + h * a)
    Lm = kin.angular_momentum_about_com(model, q - h * v, v - h * a)
    assert (Lp - Lm) / (2 * h) == pytest.approx(-3.0, abs=1e-5)


def test_virtual_force_moments_have_the_power_of_the_virtual_force():
    """Jacobian transpose: for any motion that keeps the feet and the link lengths fixed, the power of the joint
    and ankle moments equals F · Ġ (the power the virtual force would do on the COM)."""
    model = six_link_reference()
    rng = np.random.default_rng(11)
    q, _ = _crouched_state(model, rng)
    F = np.array([40.0, 700.0])
    tau, ankle = virtual_force_moments(model, q, [0, 1], F)
    n, N = model.n_links, model.dof
    # velocities with fixed lengths and both feet at rest: null space of [J_A1; J_A2; l-rows]
    C = np.vstack([kin.foot_jacobian(model, q, 0), kin.foot_jacobian(model, q, 1), np.eye(N)[2 + n:]])
    _, s, Vt = np.linalg.svd(C)
    null = Vt[np.sum(s > 1e-10):]
    assert null.shape[0] >= 1
    Q = kin.joint_moment_force(model, tau, ankle)
    JG = com_jacobian(model, q)
    for v in null:
        assert Q @ v == pytest.approx(F @ (JG @ v), rel=1e-10, abs=1e-10)


def test_bad_feet_argument():
    model = six_link_reference()
    q, v = _crouched_state(model, np.random.default_rng(0))
    with pytest.raises(ModelError, match="feet"):
        support_inverse_dynamics(model, q, v, 0.0, [], SupportTasks())
