"""Multi-DOF joints (URDF planar and floating, PyBullet's spherical) against Pinocchio's own joint models.

Pinocchio's JointModelSpherical / JointModelPlanar / JointModelFreeFlyer are built explicitly
(`pinocchio_model_from_description`), independently of biobullet's tree compilation. Tolerances: round-off of
6×6 products along a 5-body chain (1e-13 relative); forward dynamics through M⁻¹ with cond(M) ~ 1e4 (1e-10).
"""
from __future__ import annotations

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from biobullet import load_model
from biobullet.algorithms.crba import crba
from biobullet.algorithms.kinematics import frame_jacobian
from biobullet.algorithms.rnea import rnea
from biobullet.algorithms.vectorized import mass_matrix_and_bias
from biobullet.core.errors import ModelError
from biobullet.validate.oracles import PinocchioOracle

BALL_CHAIN = """<?xml version="1.0"?>
<robot name="ball_chain">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial></link>
  <link name="upper"><inertial><origin xyz="0.02 -0.01 -0.2" rpy="0.1 0.2 0.3"/><mass value="2"/>
    <inertia ixx="0.03" iyy="0.025" izz="0.01" ixy="0.001" ixz="0.002" iyz="-0.001"/></inertial></link>
  <link name="lower"><inertial><origin xyz="0 0.01 -0.15"/><mass value="1.5"/>
    <inertia ixx="0.02" iyy="0.018" izz="0.005"/></inertial></link>
  <link name="slider"><inertial><origin xyz="0.05 0 0"/><mass value="0.7"/>
    <inertia ixx="0.002" iyy="0.003" izz="0.004"/></inertial></link>
  <link name="puck"><inertial><origin xyz="0.01 0.02 0.03"/><mass value="0.3"/>
    <inertia ixx="0.001" iyy="0.002" izz="0.0025"/></inertial></link>
  <link name="flyer"><inertial><origin xyz="0.0 0.02 0.01"/><mass value="0.4"/>
    <inertia ixx="0.001" iyy="0.0015" izz="0.002"/></inertial></link>
  <joint name="shoulder" type="spherical"><parent link="base"/><child link="upper"/>
    <origin xyz="0.1 0 0.5" rpy="0.3 -0.2 0.1"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="lower"/><origin xyz="0 0 -0.4"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="wrist" type="spherical"><parent link="lower"/><child link="slider"/>
    <origin xyz="0 0 -0.3" rpy="0 0.5 0"/></joint>
  <joint name="table" type="planar"><parent link="slider"/><child link="puck"/><origin xyz="0.1 0 0" rpy="0.2 0 0"/>
    <axis xyz="0.3 0.4 0.866"/></joint>
  <joint name="free" type="floating"><parent link="puck"/><child link="flyer"/>
    <origin xyz="0.0 0.1 0" rpy="0 0 0.4"/></joint>
</robot>
"""


@pytest.fixture(scope="module")
def ball_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("joints") / "ball_chain.urdf"
    path.write_text(BALL_CHAIN)
    return load_model(path)


def _states(model, seed, count=3):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        q = model.normalize_configuration(model.neutral_configuration() + 0.5 * rng.normal(size=model.nq))
        yield q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def test_layout_and_names(ball_model):
    m = ball_model
    assert (m.nq, m.nv, m.base_nq, m.base_nv) == (20, 16, 19, 15)
    assert m.coordinate_names[:4] == ("shoulder_qx", "shoulder_qy", "shoulder_qz", "shoulder_qw")
    assert m.coordinate_names[8:12] == ("table_x", "table_y", "table_cos", "table_sin")
    assert m.coordinate_names[-1] == "elbow" and m.velocity_names[-1] == "elbow"
    assert m.neutral_configuration()[[3, 7, 10, 18]].tolist() == [1.0, 1.0, 1.0, 1.0]


def test_dynamics_equal_pinocchio_joint_models(ball_model):
    m = ball_model
    oracle = PinocchioOracle(m)
    for q, v, a in _states(m, 0):
        scale_m = np.abs(oracle.mass_matrix(q)).max()
        for formulation in ("reduced", "reduced_recursive"):
            assert np.abs(m.mass_matrix(q, formulation=formulation) - oracle.mass_matrix(q)).max() < 1e-13 * scale_m
            bias = oracle.bias_forces(q, v)
            assert np.abs(m.bias_forces(q, v, formulation=formulation) - bias).max() < 1e-13 * np.abs(bias).max()
        fd = oracle.forward_dynamics(q, v, np.zeros(m.nv))
        assert np.abs(m.forward_dynamics(q, v) - fd).max() < 1e-10 * max(1.0, np.abs(fd).max())
        for link in m.link_names:
            assert np.abs(frame_jacobian(m, q, link) - oracle.frame_jacobian(q, link)).max() < 1e-14


def test_kernel_and_recursions_agree(ball_model):
    m = ball_model
    for q, v, a in _states(m, 1):
        mass, tau = mass_matrix_and_bias(m, q, v, a)
        assert np.abs(crba(m, q) - mass).max() < 1e-13
        assert np.abs(rnea(m, q, v, a) - tau).max() < 1e-12


def test_integrate_configuration_equals_pinocchio(ball_model):
    m = ball_model
    oracle = PinocchioOracle(m)
    for q, v, _ in _states(m, 2):
        ours = oracle.map.config_to_pinocchio(m.integrate_configuration(q, v, 0.3))
        theirs = pin.integrate(oracle.pin_model, oracle.map.config_to_pinocchio(q), oracle.map.velocity_to_pinocchio(0.3 * v))
        assert np.abs(ours - theirs).max() < 1e-14
        # q̇ = d/dt (q ⊕ v t) at t = 0 (central difference, O(h²) ~ 1e-10)
        h = 1e-5
        numeric = (m.integrate_configuration(q, v, h) - m.integrate_configuration(q, v, -h)) / (2 * h)
        assert np.abs(m.configuration_rate(q, v) - numeric).max() < 1e-8


@pytest.mark.parametrize("floating_base", [False, True])
def test_configuration_rate_is_the_derivative_of_pinocchios_integrate(tmp_path, floating_base):
    """q̇ (`Model.configuration_rate`, the pipeline's q̇ kernel) of spherical, planar and free joints (and a
    floating base) against the central difference of Pinocchio's exponential map, d/dt integrate(q, v t) at t = 0,
    mapped back to our coordinates (a permutation here: no continuous joint); O(h²) ≈ 1e-10 at h = 1e-5."""
    path = tmp_path / "ball_chain.urdf"
    path.write_text(BALL_CHAIN)
    model = load_model(path, floating_base=floating_base)
    oracle = PinocchioOracle(model)
    assert len(oracle.map.cont_src) == 0   # the map is a permutation: it maps rates too
    h = 1e-5
    for q, v, _ in _states(model, 3):
        q_pin, v_pin = oracle.map.config_to_pinocchio(q), oracle.map.velocity_to_pinocchio(v)
        numeric = (pin.integrate(oracle.pin_model, q_pin, h * v_pin)
                   - pin.integrate(oracle.pin_model, q_pin, -h * v_pin)) / (2 * h)
        rate = model.configuration_rate(q, v)
        assert np.abs(oracle.map.config_to_pinocchio(rate) - numeric).max() < 1e-8
        assert np.abs(rate).max() > 0.1   # every block moves (the check is not of zeros)


def test_engine_conserves_energy(ball_model):
    from biobullet.integrate.engine import simulate
    m = ball_model
    q, v, _ = next(_states(m, 3, 1))
    trajectory = simulate(m, 0.5, initial=(q, v), rtol=1e-10, atol=1e-10, progress=False)
    total = trajectory.energy["kinetic"] + trajectory.energy["potential_gravity"]
    assert np.abs(total - total[0]).max() < 1e-7 * abs(total[0])
    quaternion = trajectory.q[:, 0:4]
    assert np.abs(np.linalg.norm(quaternion, axis=1) - 1).max() < 1e-12


def test_matrix_calculus_says_it_handles_one_dof_joints_only(ball_model):
    q = ball_model.neutral_configuration()
    with pytest.raises(ModelError, match="shoulder, wrist, table, free"):
        ball_model.mass_matrix(q, formulation="matrix_calculus")


def test_one_dof_elements_index_past_the_multi_dof_block(ball_model):
    """A force element on the 1-DOF elbow acts on the elbow's velocity, behind the 15 multi-DOF velocities."""
    from biobullet.core.errors import SourceRef
    from biobullet.forces.base import joint_indices
    x_index, v_index = joint_indices(ball_model, "elbow", SourceRef(ball_model.file, "<test>"))
    assert ball_model.velocity_names[v_index] == "elbow" and ball_model.coordinate_names[x_index] == "elbow"


def test_branched_spherical_tree_pybullet_humanoid():
    """pybullet_data's humanoid (8 spherical joints on a branched tree; the file ends in NUL padding, which
    PyBullet ignores and so do we): Pinocchio's CRBA on the explicitly built model equals the mass matrix
    assembled column by column from Pinocchio's own RNEA — which holds only when the joints are added depth
    first — and biobullet's M and h equal Pinocchio's. Tolerance: round-off of 6×6 products over ≈ 30 bodies
    on entries of ≈ 30 kg·m² (1e-12 relative)."""
    pybullet_data = pytest.importorskip("pybullet_data")
    import os
    file = os.path.join(pybullet_data.getDataPath(), "humanoid", "humanoid.urdf")
    model = load_model(file)
    oracle = PinocchioOracle(model, file)
    pm, data = oracle.pin_model, oracle.data
    # depth-first numbering: every joint's subtree is the contiguous block that starts at it
    for j in range(1, pm.njoints):
        assert pm.subtrees[j][0] == j and list(pm.subtrees[j]) == list(range(j, j + len(pm.subtrees[j])))
    rng = np.random.default_rng(7)
    for _ in range(3):
        x = model.normalize_configuration(model.neutral_configuration() + 0.4 * rng.normal(size=model.n_config))
        v = rng.normal(size=model.n_tangent)
        q = oracle.map.config_to_pinocchio(x)
        zero = np.zeros(pm.nv)
        bias = pin.rnea(pm, data, q, zero, zero).copy()
        columns = np.column_stack([pin.rnea(pm, data, q, zero, e).copy() - bias for e in np.eye(pm.nv)])
        scale = np.abs(columns).max()
        assert np.abs(oracle.tree_mass_matrix(x) - oracle.map.matrix_from_pinocchio(columns)).max() < 1e-12 * scale
        assert np.abs(model.mass_matrix(x) - oracle.tree_mass_matrix(x)).max() < 1e-12 * scale
        h = oracle.tree_inverse_dynamics(x, v, np.zeros(model.n_tangent))
        assert np.abs(model.bias_forces(x, v) - h).max() < 1e-12 * max(1.0, np.abs(h).max())
