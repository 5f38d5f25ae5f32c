"""Every claim of biobullet.conventions, checked on random trees (fixed and floating, continuous joints)."""
from __future__ import annotations

import numpy as np
import pytest

from biobullet import load_model
from biobullet.conventions import PinocchioMap, PyBulletMap, pybullet_id_quaternion
from biobullet.algorithms.crba import crba
from biobullet.algorithms.kinematics import frame_jacobian, frame_placement
from biobullet.algorithms.rnea import rnea
from biobullet.spatial.rotations import quaternion_to_matrix
from biobullet.validate.random_models import random_urdf
from biobullet.validate.report import random_state

pin = pytest.importorskip("pinocchio")
p = pytest.importorskip("pybullet")

# Seeds chosen so that the trees branch (Pinocchio's depth-first order differs from URDF order) and mix
# revolute, continuous, prismatic and fixed joints.
CASES = [(3, False), (7, True), (11, False), (12, True), (5, True)]


def _model(tmp_path, seed, floating):
    path = tmp_path / f"r{seed}_{int(floating)}.urdf"
    path.write_text(random_urdf(seed, 7, floating_base=floating))
    return load_model(path)


@pytest.fixture
def bullet():
    client = p.connect(p.DIRECT)
    yield client
    p.disconnect(client)


def _pybullet(model, client):
    body = p.loadURDF(str(model.file), useFixedBase=not model.floating_base, flags=p.URDF_USE_INERTIA_FROM_FILE,
                      physicsClientId=client)
    p.setGravity(*model.gravity, physicsClientId=client)
    return PyBulletMap(model, body, client)


def _state(model, seed):
    rng = np.random.default_rng(seed)
    q, v, _ = random_state(model, rng)
    x, xd, _, _ = model.joint_state(q, v)
    return x, xd, rng


@pytest.mark.parametrize("seed, floating", CASES)
def test_pinocchio_map_round_trips_and_placements(tmp_path, seed, floating):
    model = _model(tmp_path, seed, floating)
    pm = pin.buildModelFromUrdf(str(model.file), *( [pin.JointModelFreeFlyer()] if floating else []))
    mapping = PinocchioMap(model, pm)
    x, xd, _ = _state(model, seed)
    base = 7 if floating else 0
    # continuous angles come back modulo 2π, every other coordinate exactly
    back = mapping.config_from_pinocchio(mapping.config_to_pinocchio(x))
    assert np.allclose(np.cos(back - x), 1.0, atol=1e-14) and np.allclose(back[:base], x[:base], atol=0)
    assert np.array_equal(mapping.velocity_from_pinocchio(mapping.velocity_to_pinocchio(xd)), xd)
    # physical meaning: same link placements, same mass matrix
    data = pm.createData()
    pin.framesForwardKinematics(pm, data, mapping.config_to_pinocchio(x))
    for link in model.link_names:
        rotation, position = frame_placement(model, x, link)
        placement = data.oMf[mapping.frame_id(link)]
        assert np.abs(placement.translation - position).max() < 1e-12
        assert np.abs(placement.rotation - rotation).max() < 1e-12
    mass = pin.crba(pm, data, mapping.config_to_pinocchio(x))
    mass = np.triu(mass) + np.triu(mass, 1).T
    assert np.abs(mapping.matrix_from_pinocchio(mass) - crba(model, x)).max() < 1e-12


def test_pinocchio_orders_joints_depth_first(tmp_path):
    """URDF order j1, j2, … differs from Pinocchio's depth-first order on a branching tree: map by name."""
    model = _model(tmp_path, 11, False)
    mapping = PinocchioMap(model, pin.buildModelFromUrdf(str(model.file)))
    assert not np.array_equal(mapping.tangent_index, np.arange(model.n_tangent))
    assert sorted(mapping.tangent_index) == list(range(model.n_tangent))


@pytest.mark.parametrize("seed, floating", CASES)
def test_pybullet_state_round_trip_positions_and_velocities(tmp_path, bullet, seed, floating):
    model = _model(tmp_path, seed, floating)
    mapping = _pybullet(model, bullet)
    x, xd, _ = _state(model, seed)
    mapping.state_to_pybullet(x, xd)
    x_back, xd_back = mapping.state_from_pybullet()
    if floating:  # q and −q are the same rotation
        x_back[3:7] *= np.sign(x_back[3:7] @ x[3:7])
    assert np.abs(x_back - x).max() < 1e-12 and np.abs(xd_back - xd).max() < 1e-12
    for link in model.link_names:
        rotation, position, linear, angular = mapping.link_state(link)
        our_r, our_p = frame_placement(model, x, link)
        assert np.abs(position - our_p).max() < 1e-9, link
        assert np.abs(rotation - our_r).max() < 1e-9, link
        if mapping.link_index[link] >= 0:  # getLinkState's own link-frame position is rounded to ~1e-8 m
            raw = p.getLinkState(mapping.body_id, mapping.link_index[link], computeForwardKinematics=1,
                                 physicsClientId=bullet)[4]
            assert np.abs(np.array(raw) - our_p).max() < 1e-6
        # getLinkState / getBaseVelocity: linear velocity of the link COM, world frame
        twist = frame_jacobian(model, x, link, point=mapping.link_com(link)) @ xd
        assert np.abs(linear - twist[:3]).max() < 1e-9, link
        assert np.abs(angular - twist[3:]).max() < 1e-9, link


def test_pybullet_base_is_the_root_inertial_frame(tmp_path, bullet):
    model = _model(tmp_path, 12, True)
    mapping = _pybullet(model, bullet)
    x, xd, _ = _state(model, 1)
    mapping.state_to_pybullet(x, xd)
    position, quaternion = p.getBasePositionAndOrientation(mapping.body_id, physicsClientId=bullet)
    rotation = quaternion_to_matrix(x[3:7])
    assert np.abs(np.array(position) - (rotation @ mapping.inertial_position + x[:3])).max() < 1e-12
    assert np.abs(quaternion_to_matrix(quaternion) - rotation @ mapping.inertial_rotation).max() < 1e-12
    assert np.abs(mapping.inertial_position).max() > 1e-3  # the claim is not vacuous


@pytest.mark.parametrize("seed, floating", CASES)
def test_pybullet_mass_matrix_and_inverse_dynamics_conventions(tmp_path, bullet, seed, floating):
    model = _model(tmp_path, seed, floating)
    mapping = _pybullet(model, bullet)
    x, xd, rng = _state(model, seed)
    xdd = rng.normal(size=model.n_tangent)
    base = 7 if floating else 0
    mass = np.asarray(p.calculateMassMatrix(mapping.body_id, mapping.joints_to_pybullet(x[base:]),
                                            physicsClientId=bullet))
    ours = crba(model, x)
    scale = max(np.abs(ours).max(), 1.0)
    # PyBullet diagonalises inertias with a loose eigen-solver threshold: ~1e-10 kg·m² on random tensors
    assert np.abs(mapping.mass_matrix_from_pybullet(mass) - ours).max() / scale < 1e-8
    tau = rnea(model, x, xd, xdd)
    assert np.abs(mapping.inverse_dynamics(x, xd, xdd) - tau).max() / max(np.abs(tau).max(), 1) < 1e-8


def test_pybullet_inverse_dynamics_misreads_base_quaternion(tmp_path, bullet):
    """The documented quirk: passing the true base quaternion gives wrong gravity forces; ours fixes it."""
    model = _model(tmp_path, 12, True)
    mapping = _pybullet(model, bullet)
    x, _, _ = _state(model, 5)
    zero = np.zeros(model.n_tangent)
    position, quaternion = mapping.base_pose_to_pybullet(x)
    naive = np.concatenate([position, quaternion, mapping.joints_to_pybullet(x[7:])])
    out = np.asarray(p.calculateInverseDynamics(mapping.body_id, naive.tolist(), zero.tolist(), zero.tolist(),
                                                physicsClientId=bullet))
    wrong = mapping.tangent_map(angular_first=False).T @ out
    tau = rnea(model, x, zero, zero)
    assert np.abs(wrong - tau).max() > 1e-2
    assert np.abs(mapping.inverse_dynamics(x, zero, zero) - tau).max() < 1e-8
    rotation = quaternion_to_matrix(quaternion)
    fixed = pybullet_id_quaternion(rotation)
    assert np.abs(quaternion_to_matrix(fixed) - rotation).max() > 1e-3  # a different quaternion is needed
