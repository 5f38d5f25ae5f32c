"""The `weld` loop type (point rows + Simbody's three orientation rows): Φ_x and b = Φ̇_x ẋ against finite
differences of Φ, the closed-loop accelerations against Pinocchio's 6D constraint dynamics, and the rigid
attachment held along a simulation."""
from __future__ import annotations

import numpy as np
import pytest

import biobullet
from biobullet.constraints.equations import constraint_set
from biobullet.constraints.loops import loop_terms
from biobullet.core.errors import ModelError
from biobullet.spatial.rotations import rpy_to_matrix

LINK = ('<link name="{0}"><inertial><origin xyz="{1}"/><mass value="{2}"/>'
        '<inertia ixx="0.01" ixy="0.001" ixz="0" iyy="0.02" iyz="0.002" izz="0.015"/></inertial></link>')
# an arm j1, j2 (2 DOF) and a body on six joints (3 slides, 3 hinges) welded to the arm's tip: 2 DOF left
WELDED = f"""<?xml version="1.0"?>
<robot name="welded">
  <link name="ground"/>
  {LINK.format("link1", "0.2 0 0", 1.0)}
  {LINK.format("link2", "0.15 0.02 0", 0.5)}
  <link name="s1"/><link name="s2"/><link name="s3"/><link name="r1"/><link name="r2"/>
  {LINK.format("block", "0.05 0 0.03", 0.3)}
  <joint name="j1" type="continuous"><parent link="ground"/><child link="link1"/><axis xyz="0 1 0"/></joint>
  <joint name="j2" type="continuous"><parent link="link1"/><child link="link2"/>
    <origin xyz="0.4 0 0"/><axis xyz="1 0 0"/></joint>
  <joint name="x" type="prismatic"><parent link="ground"/><child link="s1"/><axis xyz="1 0 0"/>
    <limit lower="-5" upper="5" effort="0" velocity="0"/></joint>
  <joint name="y" type="prismatic"><parent link="s1"/><child link="s2"/><axis xyz="0 1 0"/>
    <limit lower="-5" upper="5" effort="0" velocity="0"/></joint>
  <joint name="z" type="prismatic"><parent link="s2"/><child link="s3"/><axis xyz="0 0 1"/>
    <limit lower="-5" upper="5" effort="0" velocity="0"/></joint>
  <joint name="a" type="continuous"><parent link="s3"/><child link="r1"/><axis xyz="1 0 0"/></joint>
  <joint name="b" type="continuous"><parent link="r1"/><child link="r2"/><axis xyz="0 1 0"/></joint>
  <joint name="c" type="continuous"><parent link="r2"/><child link="block"/><axis xyz="0 0 1"/></joint>
  <biobullet version="1">
    <gravity xyz="0 0 -9.81"/>
    <loop name="weld" type="weld" link_a="link2" xyz_a="0.3 0.05 -0.02" rpy_a="0.3 -0.2 0.5" link_b="block"
          xyz_b="-0.1 0.02 0.04" rpy_b="0.1 0.4 -0.3"/>
    <coordinates names="j1 j2"/>
    <initial joint="j1" position="0.3"/><initial joint="j2" position="-0.2"/>
  </biobullet>
</robot>
"""


@pytest.fixture(scope="module")
def welded(tmp_path_factory):
    path = tmp_path_factory.mktemp("weld") / "welded.urdf"
    path.write_text(WELDED)
    return biobullet.load_model(path)


def test_weld_rows_match_finite_differences(welded):
    loops = constraint_set(welded).loops
    assert loops[0].row_names == ("weld.x", "weld.y", "weld.z", "weld.rx", "weld.ry", "weld.rz")
    rng = np.random.default_rng(5)
    for _ in range(5):
        x, xd = rng.uniform(-1.0, 1.0, welded.n_tangent), rng.normal(size=welded.n_tangent)
        phi, jac, bias = loop_terms(welded, loops, x, xd)
        h = 1e-5

        def phi_at(s):
            return loop_terms(welded, loops, x + s * xd, None, jacobian=False)[0]
        np.testing.assert_allclose(jac @ xd, (phi_at(h) - phi_at(-h)) / (2 * h), rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(bias, (phi_at(h) - 2 * phi_at(0.0) + phi_at(-h)) / h ** 2, rtol=1e-5, atol=1e-5)


def test_assembled_weld_makes_the_frames_coincide(welded):
    q, v = welded.initial_state()
    x = welded.joint_state(q, v)[0]
    loop = constraint_set(welded).loops[0]
    from biobullet.constraints.loops import point_state, tree_kinematics
    kin = tree_kinematics(welded, x)
    a = point_state(welded, kin, "link2", loop.xyz_a)
    b = point_state(welded, kin, "block", loop.xyz_b)
    np.testing.assert_allclose(a.position, b.position, atol=1e-12)
    np.testing.assert_allclose(a.rotation @ rpy_to_matrix((0.3, -0.2, 0.5)),
                               b.rotation @ rpy_to_matrix((0.1, 0.4, -0.3)), atol=1e-12)


def test_weld_accelerations_match_pinocchio(welded):
    pytest.importorskip("pinocchio")
    from loop_oracle import PinocchioLoopOracle
    from biobullet.dynamics.multipliers import constrained_accelerations
    oracle = PinocchioLoopOracle(welded)
    rng = np.random.default_rng(11)
    for _ in range(4):
        q, v = rng.uniform(-1.0, 1.0, 2), rng.normal(size=2)
        x, xd, gradient, gamma = welded.joint_state(q, v)
        tau = rng.normal(size=welded.n_tangent)
        expected, forces = oracle.accelerations(x, xd, tau)
        scale = np.max(np.abs(expected))
        # reduced: ẍ = G q̈ + γ with M q̈ = Gᵀ τ − h
        qdd = np.linalg.solve(welded.mass_matrix(q), gradient.T @ tau - welded.bias_forces(q, v))
        np.testing.assert_allclose(gradient @ qdd + gamma, expected, rtol=0, atol=1e-9 * scale)
        # multipliers (KKT over the whole tree): the same accelerations, and Pinocchio's 6D force part
        xdd, lam = constrained_accelerations(welded, x, xd, tau, baumgarte=(0.0, 0.0))
        np.testing.assert_allclose(xdd, expected, rtol=0, atol=1e-9 * scale)
        np.testing.assert_allclose(lam[:3], forces[0], rtol=0, atol=1e-8 * max(1.0, np.max(np.abs(lam))))


def test_weld_holds_along_a_simulation(welded):
    run = biobullet.simulate(welded, 0.5, method="DOP853", rtol=1e-10, atol=1e-12,
                             t_eval=np.linspace(0, 0.5, 6), progress=False)
    loops = constraint_set(welded).loops
    assert np.ptp(run.column("j1")) > 0.05
    for x in run.positions:
        assert np.max(np.abs(loop_terms(welded, loops, x, None, jacobian=False)[0])) <= 1e-11
    energy = run.total_energy()
    assert np.max(np.abs(energy - energy[0])) <= 1e-7 * max(1.0, np.max(np.abs(energy)))


def test_weld_attributes_are_checked(tmp_path):
    path = tmp_path / "bad.urdf"
    path.write_text(WELDED.replace('rpy_a="0.3 -0.2 0.5"', 'rpy_a="0.3 nan"'))
    with pytest.raises(ModelError) as error:
        biobullet.load_model(path)
    assert error.value.attribute == "rpy_a"
