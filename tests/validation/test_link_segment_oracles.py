"""Paper 001's link-segment formulation against Pinocchio (ABA, RNEA joint forces data.f) and our reduced formulation.

Tolerances: 1e-10 relative — both sides are direct double-precision solves of well-conditioned systems on these
trees (measured ≤ 5e-14); anything larger would be a wrong term, not round-off.
"""
from __future__ import annotations

import numpy as np
import pytest

import biobullet
from biobullet.dynamics import link_segment as ls
from biobullet.model.bundled import bundled_model
from biobullet.validate.random_models import random_urdf

pin = pytest.importorskip("pinocchio")
from biobullet.validate.oracles import PinocchioOracle  # noqa: E402


def _random_model(tmp_path, seed, floating, hinges_only=True, couplings=0):
    text = random_urdf(seed, 6, floating_base=floating, couplings=couplings)
    if hinges_only:
        text = text.replace('type="prismatic"', 'type="revolute"')
    path = tmp_path / f"random_{seed}_{floating}_{hinges_only}_{couplings}.urdf"
    path.write_text(text)
    return biobullet.load_model(path)


def _random_state(model, rng):
    q = model.neutral_configuration()
    q[model._base_q:] = rng.uniform(-2.0, 2.0, model.nq - model._base_q)
    if model.floating_base:
        q[:3] = rng.normal(size=3)
        quaternion = rng.normal(size=4)
        q[3:7] = quaternion / np.linalg.norm(quaternion)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def _pinocchio_reactions(oracle, model, q, v, tau):
    """data.f of Pinocchio's RNEA at the ABA accelerations, moved to world axes at each joint origin."""
    x, xd, gradient, gamma = model.joint_state(q, v)
    xdd = gradient @ oracle.forward_dynamics(q, v, tau) + gamma
    m = oracle.map
    pin.rnea(oracle.pin_model, oracle.data, m.config_to_pinocchio(x), m.velocity_to_pinocchio(xd),
             m.velocity_to_pinocchio(xdd))
    pin.forwardKinematics(oracle.pin_model, oracle.data, m.config_to_pinocchio(x))
    out = {}
    for name in (body.joint for body in model.bodies if body.joint):   # 1-DOF and multi-DOF joints alike
        if not oracle.pin_model.existJointName(name):
            raise AssertionError(f"Pinocchio has no joint {name!r}")
        jid = oracle.pin_model.getJointId(name)
        rotation = oracle.data.oMi[jid].rotation
        out[name] = (rotation @ oracle.data.f[jid].linear, rotation @ oracle.data.f[jid].angular)
    return out


@pytest.mark.parametrize("floating", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forward_dynamics_equals_reduced_and_pinocchio_aba(tmp_path, seed, floating):
    model = _random_model(tmp_path, seed, floating)
    oracle = PinocchioOracle(model)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q, v, tau = _random_state(model, rng)
        ours = model.forward_dynamics(q, v, tau, formulation="link_segment")
        assert _rel(ours, oracle.forward_dynamics(q, v, tau)) <= 1e-10
        assert _rel(ours, model.forward_dynamics(q, v, tau, formulation="reduced")) <= 1e-10
    # M and h derived through the same system
    assert _rel(model.mass_matrix(q, formulation="link_segment"), oracle.mass_matrix(q)) <= 1e-10
    assert _rel(model.bias_forces(q, v, formulation="link_segment"), oracle.bias_forces(q, v)) <= 1e-10


@pytest.mark.parametrize("floating", [False, True])
@pytest.mark.parametrize("seed", [0, 3])
def test_joint_reactions_equal_pinocchio_rnea_forces(tmp_path, seed, floating):
    model = _random_model(tmp_path, seed, floating)
    oracle = PinocchioOracle(model)
    q, v, tau = _random_state(model, np.random.default_rng(seed))
    reference = _pinocchio_reactions(oracle, model, q, v, tau)
    scale = max(max(np.max(np.abs(f)), np.max(np.abs(m))) for f, m in reference.values())
    for method in ("link_segment", "tree"):
        ours = biobullet.joint_reactions(model, q, v, tau, method=method)
        for name, (force, moment) in reference.items():
            assert np.max(np.abs(ours[name].force - force)) <= 1e-10 * scale, (method, name)
            assert np.max(np.abs(ours[name].moment - moment)) <= 1e-10 * scale, (method, name)


def test_tree_reactions_with_prismatic_joints_and_joint_functions(tmp_path):
    """Any tree model: prismatic joints and joint functions go through the tree method (the default there)."""
    model = _random_model(tmp_path, 2, True, hinges_only=False, couplings=2)
    with pytest.raises(biobullet.ModelError, match="joint_function"):
        model.forward_dynamics(*_random_state(model, np.random.default_rng(0)), formulation="link_segment")
    oracle = PinocchioOracle(model)
    q, v, tau = _random_state(model, np.random.default_rng(5))
    reference = _pinocchio_reactions(oracle, model, q, v, tau)
    ours = biobullet.joint_reactions(model, q, v, tau)
    scale = max(max(np.max(np.abs(f)), np.max(np.abs(m))) for f, m in reference.values())
    for name, (force, moment) in reference.items():
        assert np.max(np.abs(ours[name].force - force)) <= 1e-10 * scale
        assert np.max(np.abs(ours[name].moment - moment)) <= 1e-10 * scale


def test_system_sizes_from_the_model_files():
    pitching = biobullet.load_model(bundled_model("pitching_arm.urdf"))
    sprint = biobullet.load_model(bundled_model("sprint_leg.urdf"))
    # pitching: N = 3 segments, J = 2 (ball shoulder C = 0, two-axis elbow C = 1): 6·3 + 3·2 + 1 = 25
    assert ls.system_size(pitching) == 25
    system = ls.assemble(pitching, *pitching.joint_state(pitching.neutral_configuration(), np.zeros(pitching.nv))[:2])
    assert system.matrix.shape == (25, 25)
    # sprint: 2D, N = 3 (the thigh is free: the hip force is an input), J = 2: 3·3 + 2·2 = 13
    assert ls.system_size(sprint, planar=(0, -1, 0)) == 13
    x, xd, _, _ = sprint.joint_state(sprint.neutral_configuration(), np.zeros(sprint.nv))
    assert ls.assemble(sprint, x, xd, planar=(0, -1, 0)).matrix.shape == (13, 13)


def test_grouped_ball_and_two_axis_joints_equal_pinocchio():
    """The pitching arm: ball shoulder (3 revolute through massless links), two-axis elbow."""
    model = biobullet.load_model(bundled_model("pitching_arm.urdf"))
    oracle = PinocchioOracle(model)
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, v, tau = _random_state(model, rng)
        q[7:] = rng.uniform(-1.0, 1.0, 5)  # away from the shoulder's gimbal lock (|sh_horizontal| = π/2)
        ours = model.forward_dynamics(q, v, tau, formulation="link_segment")
        assert _rel(ours, oracle.forward_dynamics(q, v, tau)) <= 1e-10
        reference = _pinocchio_reactions(oracle, model, q, v, tau)
        reactions = biobullet.joint_reactions(model, q, v, tau)
        scale = max(max(np.max(np.abs(f)), np.max(np.abs(m))) for f, m in reference.values())
        for group, first in (("shoulder", "sh_abduction"), ("elbow", "elbow_flexion")):
            assert np.max(np.abs(reactions[group].force - reference[first][0])) <= 1e-10 * scale
            assert np.max(np.abs(reactions[group].moment - reference[first][1])) <= 1e-10 * scale
        # the elbow's one constraint torque is the moment along U_a × U_b (flexion axis × pronation axis)
        elbow = reactions["elbow"]
        assert elbow.constraint_torques.shape == (1,)
        assert elbow.constraint_torques[0] == pytest.approx(elbow.moment @ elbow.constraint_axes[0], abs=1e-9 * scale)


def test_unsupported_joints_give_one_clear_error(tmp_path):
    text = random_urdf(4, 4)
    if 'type="prismatic"' not in text:
        text = text.replace('type="revolute"', 'type="prismatic"', 1)
    path = tmp_path / "prismatic.urdf"
    path.write_text(text)
    model = biobullet.load_model(path)
    with pytest.raises(biobullet.ModelError, match="prismatic"):
        model.forward_dynamics(model.neutral_configuration(), np.zeros(model.nv), formulation="link_segment")


def _ball_tree(tmp_path, seed, floating, free_joint=False):
    """A random tree whose continuous joints become PyBullet `spherical` ball joints (and, optionally, one revolute
    joint a URDF `floating` joint: a free segment hanging from its parent)."""
    text = random_urdf(seed, 6, floating_base=floating).replace('type="prismatic"', 'type="revolute"')
    text = text.replace('type="continuous"', 'type="spherical"')
    if 'type="spherical"' not in text:
        text = text.replace('type="revolute"', 'type="spherical"', 1)
    if free_joint:
        text = text.replace('type="revolute"', 'type="floating"', 1)
    path = tmp_path / f"ball_{seed}_{floating}_{free_joint}.urdf"
    path.write_text(text)
    return biobullet.load_model(path)


def _multi_dof_state(model, rng):
    """A random state with unit quaternions for every free / spherical joint."""
    x = np.zeros(model.n_config)
    for body in model.bodies:
        k = body.q_index
        if body.joint_type == "free":
            quaternion = rng.normal(size=4)
            x[k:k + 3], x[k + 3:k + 7] = rng.normal(size=3) * 0.3, quaternion / np.linalg.norm(quaternion)
        elif body.joint_type == "spherical":
            quaternion = rng.normal(size=4)
            x[k:k + 4] = quaternion / np.linalg.norm(quaternion)
        else:
            x[k] = rng.uniform(-2.0, 2.0)
    return x, rng.normal(size=model.nv), rng.normal(size=model.nv)


@pytest.mark.parametrize("floating, free_joint", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("seed", [0, 2])
def test_ball_joints_and_free_segments_equal_pinocchio(tmp_path, seed, floating, free_joint):
    model = _ball_tree(tmp_path, seed, floating, free_joint)
    kinds = {b.joint_type for b in model.bodies}
    assert "spherical" in kinds and (("free" in kinds) == (floating or free_joint))
    oracle = PinocchioOracle(model)
    rng = np.random.default_rng(seed)
    for _ in range(2):
        q, v, tau = _multi_dof_state(model, rng)
        ours = model.forward_dynamics(q, v, tau, formulation="link_segment")
        assert _rel(ours, oracle.forward_dynamics(q, v, tau)) <= 1e-10
        # a URDF floating joint below a fixed root keeps its <origin> in every tree path (the compiled placement
        # once took it for the identity-origin floating base: 0.7 relative off Pinocchio)
        for reduced in ("reduced", "reduced_recursive"):
            assert _rel(ours, model.forward_dynamics(q, v, tau, formulation=reduced)) <= 1e-10
        reference = _pinocchio_reactions(oracle, model, q, v, tau)
        scale = max(max(np.max(np.abs(f)), np.max(np.abs(m))) for f, m in reference.values())
        both = {method: biobullet.joint_reactions(model, q, v, tau, method=method, formulation=reduced)
                for method in ("link_segment", "tree")}
        for name, reaction in both["link_segment"].items():   # constraint torques: λ of the rows = moment · n
            assert reaction.constraint_torques.shape == both["tree"][name].constraint_torques.shape
            assert np.allclose(reaction.constraint_torques, both["tree"][name].constraint_torques,
                               rtol=0.0, atol=1e-10 * scale)
        for method, reactions in both.items():
            for name, (force, moment) in reference.items():
                assert np.max(np.abs(reactions[name].force - force)) <= 1e-10 * scale, (method, name)
                assert np.max(np.abs(reactions[name].moment - moment)) <= 1e-10 * scale, (method, name)
    structure = ls.structure(model)
    balls = [j for j in structure.joints if j.kind == "ball"]
    assert balls and all(j.n_constraints == 0 for j in balls)
