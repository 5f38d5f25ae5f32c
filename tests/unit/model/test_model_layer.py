"""The compiled model layer: fixed-joint merging, <mimic>, frames and Jacobians (vs Pinocchio and finite
differences), floating-base configuration integration, initial state, immutability, argument errors."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from biobullet import load_model
from biobullet.algorithms.kinematics import frame_jacobian, frame_placement
from biobullet.core.errors import ModelError
from biobullet.spatial.rotations import rpy_to_matrix
from biobullet.validate.random_models import random_urdf

BASE_Q = ("base_x", "base_y", "base_z", "base_qx", "base_qy", "base_qz", "base_qw")


def _vec(values) -> str:
    return " ".join(repr(float(v)) for v in values)


def _inertial(mass: float, com, inertia: np.ndarray, rpy=(0.0, 0.0, 0.0)) -> str:
    i = {key: repr(float(inertia[a, b])) for key, a, b in
         (("ixx", 0, 0), ("ixy", 0, 1), ("ixz", 0, 2), ("iyy", 1, 1), ("iyz", 1, 2), ("izz", 2, 2))}
    return (f'<inertial><origin xyz="{_vec(com)}" rpy="{_vec(rpy)}"/><mass value="{float(mass)!r}"/>'
            f'<inertia ixx="{i["ixx"]}" ixy="{i["ixy"]}" ixz="{i["ixz"]}" iyy="{i["iyy"]}" '
            f'iyz="{i["iyz"]}" izz="{i["izz"]}"/></inertial>')


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


LIMIT = '<limit lower="-3" upper="3" effort="100" velocity="10"/>'  # urdfdom (Pinocchio) requires limits
# A branched tree: revolute, prismatic, two fixed joints (one welding a link, one a massless marker),
# rotated origins and non-axis-aligned axes.
I_A = np.array([[0.05, 0.004, -0.002], [0.004, 0.04, 0.003], [-0.002, 0.003, 0.03]])
I_B = np.array([[0.02, -0.001, 0.0], [-0.001, 0.025, 0.002], [0.0, 0.002, 0.015]])
TREE = f"""<robot name="tree">
  <link name="base">{_inertial(4.0, (0, 0, 0.1), I_A)}</link>
  <link name="upper">{_inertial(2.0, (0.05, 0.01, 0.2), I_A, (0.2, -0.1, 0.4))}</link>
  <link name="upper_pad">{_inertial(0.7, (0.0, 0.03, -0.05), I_B, (0.5, 0.2, -0.3))}</link>
  <link name="fore">{_inertial(1.5, (0.0, 0.0, 0.15), I_B)}</link>
  <link name="slider">{_inertial(0.8, (0.02, 0.0, 0.0), I_B)}</link>
  <link name="marker"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <origin xyz="0.1 0 0.3" rpy="0.1 0.2 0.3"/><axis xyz="0 0.6 0.8"/>{LIMIT}</joint>
  <joint name="pad_weld" type="fixed"><parent link="upper"/><child link="upper_pad"/>
    <origin xyz="0.02 -0.04 0.25" rpy="-0.4 0.3 1.1"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper_pad"/><child link="fore"/>
    <origin xyz="0 0.1 0.2" rpy="0.3 0 -0.2"/><axis xyz="1 0 0"/>{LIMIT}</joint>
  <joint name="slide" type="prismatic"><parent link="base"/><child link="slider"/>
    <origin xyz="-0.2 0.1 0" rpy="0 0.5 0"/><axis xyz="0.48 0.6 0.64"/>{LIMIT}</joint>
  <joint name="marker_weld" type="fixed"><parent link="fore"/><child link="marker"/>
    <origin xyz="0 0 0.3" rpy="0.7 -0.2 0.1"/></joint>
</robot>
"""


@pytest.fixture
def tree_path(tmp_path: Path) -> Path:
    return _write(tmp_path, "tree.urdf", TREE)


def _pinocchio(path: Path, floating: bool):
    model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating \
        else pin.buildModelFromUrdf(str(path))
    return model, model.createData()


def _to_pinocchio(model, pin_model, x: np.ndarray) -> np.ndarray:
    """Our tree configuration x (URDF joint order) → Pinocchio's q (its depth-first order)."""
    q = np.zeros(pin_model.nq)
    if model.floating_base:
        q[:7] = x[:7]
    offset = 7 if model.floating_base else 0
    for k, name in enumerate(model.joint_names):
        q[pin_model.idx_qs[pin_model.getJointId(name)]] = x[offset + k]
    return q


def _random_q(model, rng: np.random.Generator) -> np.ndarray:
    q = rng.uniform(-1.5, 1.5, model.nq)
    if model.floating_base:
        quaternion = rng.normal(size=4)
        q[3:7] = quaternion / np.linalg.norm(quaternion)
    return q


# ------------------------------------------------------------------------------------------------ fixed joints
def test_fixed_joint_merging_equals_hand_combined_inertia(tmp_path: Path) -> None:
    m1, c1 = 2.0, np.array([0.05, 0.01, 0.2])
    m2, c2 = 0.7, np.array([0.0, 0.03, -0.05])
    rpy_i2 = (0.5, 0.2, -0.3)                        # rotation of upper_pad's inertial frame
    weld_xyz, weld_rpy = np.array([0.02, -0.04, 0.25]), (-0.4, 0.3, 1.1)
    j2_xyz = np.array([0.0, 0.1, 0.2])
    welded = f"""<robot name="welded">
  <link name="base"/>
  <link name="upper">{_inertial(m1, c1, I_A)}</link>
  <link name="pad">{_inertial(m2, c2, I_B, rpy_i2)}</link>
  <link name="fore">{_inertial(1.5, (0, 0, 0.15), I_B)}</link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.3" rpy="0.1 0.2 0.3"/><axis xyz="0 0.6 0.8"/></joint>
  <joint name="weld" type="fixed"><parent link="upper"/><child link="pad"/>
    <origin xyz="{_vec(weld_xyz)}" rpy="{_vec(weld_rpy)}"/></joint>
  <joint name="j2" type="revolute"><parent link="pad"/><child link="fore"/>
    <origin xyz="{_vec(j2_xyz)}"/><axis xyz="1 0 0"/></joint>
</robot>"""
    # By hand: pad's inertial data expressed in upper's frame, then the parallel-axis theorem.
    r_weld = rpy_to_matrix(weld_rpy)
    c2_upper = r_weld @ c2 + weld_xyz
    i2_upper = r_weld @ rpy_to_matrix(rpy_i2) @ I_B @ rpy_to_matrix(rpy_i2).T @ r_weld.T
    mass = m1 + m2
    com = (m1 * c1 + m2 * c2_upper) / mass

    def shifted(inertia: np.ndarray, m: float, d: np.ndarray) -> np.ndarray:
        return inertia + m * (d @ d * np.eye(3) - np.outer(d, d))

    combined = shifted(I_A, m1, c1 - com) + shifted(i2_upper, m2, c2_upper - com)
    # j2 placed directly in upper's frame: origin = weld ∘ j2-origin (j2 has no rpy, so the rotation is the weld's)
    merged = f"""<robot name="merged">
  <link name="base"/>
  <link name="upper">{_inertial(mass, com, combined)}</link>
  <link name="fore">{_inertial(1.5, (0, 0, 0.15), I_B)}</link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.3" rpy="0.1 0.2 0.3"/><axis xyz="0 0.6 0.8"/></joint>
  <joint name="j2" type="revolute"><parent link="upper"/><child link="fore"/>
    <origin xyz="{_vec(weld_xyz + r_weld @ j2_xyz)}" rpy="{_vec(weld_rpy)}"/><axis xyz="1 0 0"/></joint>
</robot>"""
    a = load_model(_write(tmp_path, "welded.urdf", welded))
    b = load_model(_write(tmp_path, "merged.urdf", merged))
    assert len(a.bodies) == len(b.bodies) == 2
    assert a.bodies[0].mass == pytest.approx(mass, abs=1e-14)
    np.testing.assert_allclose(a.bodies[0].com, com, atol=1e-14)
    np.testing.assert_allclose(a.bodies[0].inertia_com, combined, atol=1e-14)
    rng = np.random.default_rng(7)
    for _ in range(5):
        q, v = rng.uniform(-2, 2, 2), rng.normal(size=2)
        np.testing.assert_allclose(a.mass_matrix(q), b.mass_matrix(q), atol=1e-12, rtol=0)
        np.testing.assert_allclose(a.bias_forces(q, v), b.bias_forces(q, v), atol=1e-12, rtol=0)


# ------------------------------------------------------------------------------------------------ mimic
def test_mimic_is_read_as_linear_function(tmp_path: Path) -> None:
    text = TREE.replace(f'<axis xyz="1 0 0"/>{LIMIT}</joint>',
                        f'<axis xyz="1 0 0"/>{LIMIT}<mimic joint="shoulder" multiplier="-0.7" offset="0.25"/></joint>')
    assert "<mimic" in text
    model = load_model(_write(tmp_path, "mimic.urdf", text))
    assert model.coordinate_names == ("shoulder", "slide")
    assert model.joint_names == ("shoulder", "elbow", "slide")
    (function,) = model.description.joint_functions
    assert function.joint == "elbow" and function.function.type_name == "linear"
    assert function.function.inputs == ("shoulder",)
    rng = np.random.default_rng(1)
    for _ in range(10):
        q = rng.uniform(-3, 3, 2)
        theta = model.joint_positions(q)
        np.testing.assert_allclose(theta, [q[0], -0.7 * q[0] + 0.25, q[1]], atol=1e-15, rtol=0)


# ------------------------------------------------------------------------------------------------ frames
@pytest.mark.parametrize("floating", [False, True], ids=["fixed_base", "floating_base"])
def test_frames_of_merged_links_match_pinocchio(tree_path: Path, floating: bool) -> None:
    model = load_model(tree_path, floating_base=floating)
    assert set(model.link_names) == {"base", "upper", "upper_pad", "fore", "slider", "marker"}
    assert model.frame("upper_pad").body == model.frame("upper").body      # welded: same body
    assert model.frame("marker").body == model.frame("fore").body
    pin_model, pin_data = _pinocchio(tree_path, floating)
    rng = np.random.default_rng(3)
    for _ in range(5):
        x = model.joint_configuration(_random_q(model, rng))
        pin.framesForwardKinematics(pin_model, pin_data, _to_pinocchio(model, pin_model, x))
        for name in model.link_names:
            placement = pin_data.oMf[pin_model.getFrameId(name, pin.FrameType.BODY)]
            rotation, translation = frame_placement(model, x, name)
            np.testing.assert_allclose(rotation, placement.rotation, atol=1e-12, rtol=0, err_msg=name)
            np.testing.assert_allclose(translation, placement.translation, atol=1e-12, rtol=0, err_msg=name)


def _vee(matrix: np.ndarray) -> np.ndarray:
    return np.array([matrix[2, 1] - matrix[1, 2], matrix[0, 2] - matrix[2, 0], matrix[1, 0] - matrix[0, 1]]) / 2


@pytest.mark.parametrize("floating", [False, True], ids=["fixed_base", "floating_base"])
def test_frame_jacobian_matches_finite_differences(tree_path: Path, floating: bool) -> None:
    model = load_model(tree_path, floating_base=floating)
    rng = np.random.default_rng(5)
    h = 1e-6
    q = _random_q(model, rng)           # no joint functions: q is the tree configuration
    for name in ("upper_pad", "fore", "marker", "slider"):
        jacobian = frame_jacobian(model, q, name)
        numeric = np.zeros_like(jacobian)
        for k in range(model.nv):
            step = np.zeros(model.nv)
            step[k] = h
            r_plus, p_plus = frame_placement(model, model.integrate_configuration(q, step, 1.0), name)
            r_minus, p_minus = frame_placement(model, model.integrate_configuration(q, -step, 1.0), name)
            rotation, _ = frame_placement(model, q, name)
            numeric[:3, k] = (p_plus - p_minus) / (2 * h)
            numeric[3:, k] = _vee((r_plus - r_minus) / (2 * h) @ rotation.T)
        np.testing.assert_allclose(jacobian, numeric, atol=1e-7, rtol=0, err_msg=name)


@pytest.mark.parametrize("floating", [False, True], ids=["fixed_base", "floating_base"])
def test_frame_jacobian_matches_pinocchio(tree_path: Path, floating: bool) -> None:
    model = load_model(tree_path, floating_base=floating)
    pin_model, pin_data = _pinocchio(tree_path, floating)
    rng = np.random.default_rng(11)
    offset = 6 if floating else 0
    for _ in range(5):
        x = model.joint_configuration(_random_q(model, rng))
        pin_q = _to_pinocchio(model, pin_model, x)
        pin.computeJointJacobians(pin_model, pin_data, pin_q)
        pin.updateFramePlacements(pin_model, pin_data)
        for name in model.link_names:
            frame_id = pin_model.getFrameId(name, pin.FrameType.BODY)
            expected_pin = pin.computeFrameJacobian(pin_model, pin_data, pin_q, frame_id,
                                                    pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
            expected = np.zeros((6, model.n_tangent))
            expected[:, :offset] = expected_pin[:, :offset]
            for k, joint in enumerate(model.joint_names):
                expected[:, offset + k] = expected_pin[:, pin_model.idx_vs[pin_model.getJointId(joint)]]
            np.testing.assert_allclose(frame_jacobian(model, x, name), expected, atol=1e-12, rtol=0, err_msg=name)


# ------------------------------------------------------------------------------------------------ floating base
def test_integrate_configuration_keeps_unit_quaternion_and_matches_pinocchio(tree_path: Path) -> None:
    model = load_model(tree_path, floating_base=True)
    assert model.coordinate_names[:7] == BASE_Q
    pin_model, _ = _pinocchio(tree_path, True)
    rng = np.random.default_rng(13)
    for _ in range(10):
        q, v, dt = _random_q(model, rng), rng.normal(size=model.nv), float(rng.uniform(0.01, 0.5))
        result = model.integrate_configuration(q, v, dt)
        assert np.linalg.norm(result[3:7]) == pytest.approx(1.0, abs=1e-14)
        pin_v = np.zeros(pin_model.nv)
        pin_v[:6] = v[:6]
        for k, joint in enumerate(model.joint_names):
            pin_v[pin_model.idx_vs[pin_model.getJointId(joint)]] = v[6 + k]
        expected = pin.integrate(pin_model, _to_pinocchio(model, pin_model, q), pin_v * dt)
        np.testing.assert_allclose(_to_pinocchio(model, pin_model, result), expected, atol=1e-12, rtol=0)


def test_integrate_configuration_many_steps_stays_on_the_sphere(tree_path: Path) -> None:
    model = load_model(tree_path, floating_base=True)
    q, v = model.neutral_configuration(), np.random.default_rng(2).normal(size=model.nv) * 3
    for _ in range(1000):
        q = model.integrate_configuration(q, v, 0.01)
    assert np.linalg.norm(q[3:7]) == pytest.approx(1.0, abs=1e-14)


# ------------------------------------------------------------------------------------------------ initial state
def test_initial_state_with_overrides(tmp_path: Path) -> None:
    text = TREE.replace("</robot>", '<biobullet version="1"><initial joint="shoulder" position="0.3" '
                        'velocity="-0.2"/><initial joint="slide" position="0.05"/></biobullet></robot>')
    model = load_model(_write(tmp_path, "initial.urdf", text))
    q, v = model.initial_state()
    np.testing.assert_array_equal(q, [0.3, 0.0, 0.05])
    np.testing.assert_array_equal(v, [-0.2, 0.0, 0.0])
    q, v = model.initial_state({"elbow": 1.25, "shoulder_dot": 2.0, "slide": -0.1})
    np.testing.assert_array_equal(q, [0.3, 1.25, -0.1])
    np.testing.assert_array_equal(v, [2.0, 0.0, 0.0])
    with pytest.raises(ModelError, match="cannot set 'wrist': not an independent coordinate or its _dot"):
        model.initial_state({"wrist": 1.0})
    floating = load_model(_write(tmp_path, "initial.urdf", text), floating_base=True)
    q, v = floating.initial_state({"base_z": 1.0, "base_wz_dot": 0.5})
    np.testing.assert_array_equal(q[:7], [0, 0, 1.0, 0, 0, 0, 1.0])
    assert v[5] == 0.5 and q[7] == 0.3


# ------------------------------------------------------------------------------------------------ immutability
def test_model_is_immutable(tree_path: Path) -> None:
    model = load_model(tree_path)
    with pytest.raises(ValueError):
        model.gravity[2] = 0.0
    body = model.bodies[0]
    for array in (body.rotation, body.translation, body.axis, body.com, body.inertia_com, body.spatial_inertia,
                  body.motion_subspace, model.frame("marker").rotation, model.frame("marker").translation):
        with pytest.raises(ValueError):
            array[0] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        body.mass = 3.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.frame("marker").body = 0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.description.base_type = "floating"  # type: ignore[misc]
    with pytest.raises(TypeError):
        model.description.elements[0:0] = ()  # type: ignore[index]
    assert isinstance(model.bodies, tuple) and isinstance(model.joint_names, tuple)
    assert isinstance(model.coordinate_names, tuple)
    q = np.array([0.1, 0.2, 0.3])
    before = q.copy()
    model.mass_matrix(q)
    model.integrate_configuration(q, np.ones(3), 0.1)
    np.testing.assert_array_equal(q, before)  # inputs are not modified


# ------------------------------------------------------------------------------------------------ argument errors
def test_argument_shape_errors_name_the_argument(tree_path: Path) -> None:
    model = load_model(tree_path)
    q, v = np.zeros(3), np.zeros(3)
    with pytest.raises(ModelError, match=r"argument 'q' has 4 entries \(expected 3 \(shoulder, elbow, slide\)\)"):
        model.mass_matrix(np.zeros(4))
    with pytest.raises(ModelError, match="argument 'v' has 2 entries"):
        model.bias_forces(q, np.zeros(2))
    with pytest.raises(ModelError, match="argument 'tau' has 5 entries"):
        model.forward_dynamics(q, v, tau=np.zeros(5))
    with pytest.raises(ModelError, match="argument 'q' contains NaN or infinite values"):
        model.joint_positions([0.0, np.nan, 0.0])
    with pytest.raises(ModelError, match="unknown link 'hand'"):
        model.frame("hand")


def test_random_trees_frames_match_pinocchio(tmp_path: Path) -> None:
    for seed in range(4):
        path = _write(tmp_path, f"random_{seed}.urdf",
                      random_urdf(seed, 7, fixed_probability=0.3, continuous=False, floating_base=seed % 2 == 1))
        model = load_model(path)
        pin_model, pin_data = _pinocchio(path, model.floating_base)
        x = model.joint_configuration(_random_q(model, np.random.default_rng(seed)))
        pin.framesForwardKinematics(pin_model, pin_data, _to_pinocchio(model, pin_model, x))
        for name in model.link_names:
            placement = pin_data.oMf[pin_model.getFrameId(name, pin.FrameType.BODY)]
            rotation, translation = frame_placement(model, x, name)
            np.testing.assert_allclose(rotation, placement.rotation, atol=1e-12, rtol=0)
            np.testing.assert_allclose(translation, placement.translation, atol=1e-12, rtol=0)
