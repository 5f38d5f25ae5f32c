"""Force elements against hand computations: the spring through a hand-written Jacobian transpose, every
elastic force as −∂V/∂x (central differences), the power split τ·ẋ = −dV/dt − D + P_in, and input errors."""
from __future__ import annotations


import numpy as np
import pytest

from biobullet import ModelError, SolverError
from biobullet.forces import (JointSpring, JointStop, JointTorque, Spring, add_force_element, applied_forces,
                              force_elements)

import engine_models as models  # tests/engine_models.py

L1, L2 = 1.0, 0.8
ARM = [(L1, 1.0, 0.5, 1e-2), (L2, 0.5, 0.4, 2e-2)]
SPRING = ('<spring name="s" link_a="base" xyz_a="0.3 0.5 0" link_b="l2" xyz_b="0.5 0.1 0" stiffness="30" '
          'rest_length="0.2" damping="2"/>')
ALL = (SPRING + '<spring name="s0" link_a="l1" xyz_a="0.2 0 0" link_b="l2" xyz_b="0.6 0.05 0" stiffness="7"/>'
       '<joint_spring joint="j1" stiffness="5" rest="0.1" damping="0.3"/>'
       '<joint_torque joint="j2" type="fourier" period="2" a0="0.5" a="1" b="0.2"/>'
       '<joint_torque joint="j1" value="-0.7"/>'
       '<joint_stop joint="j2" lower="-0.5" upper="0.5" stiffness="100" damping="1" exponent="2.5"/>'
       '<joint_stop joint="j1" lower="-0.2" stiffness="300" damping="4" type="switched"/>'
       '<coordinate_limit joint="j2" upper="0.3" upper_stiffness="50" lower="-0.4" lower_stiffness="80" damping="0.5" '
       'transition="0.2"/>')


def _perp(v):
    return np.array([-v[1], v[0]])


def _rot(a):
    return np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])


def test_spring_matches_hand_jacobian_transpose(tmp_path):
    model = models.load_chain(tmp_path, ARM, extension=SPRING)
    (spring,) = force_elements(model)
    k, l0, c = 30.0, 0.2, 2.0
    rng = np.random.default_rng(0)
    for _ in range(5):
        th, thd = rng.uniform(-2, 2, 2), rng.normal(size=2)
        pa = np.array([0.3, 0.5])
        local_b = _rot(th[0] + th[1]) @ np.array([0.5, 0.1])
        pb = _rot(th[0]) @ np.array([L1, 0.0]) + local_b
        jac_b = np.column_stack([_perp(pb), _perp(local_b)])  # ∂pb/∂θ (2×2)
        d = pb - pa
        length = np.linalg.norm(d)
        u = d / length
        tension = k * (length - l0) + c * u @ (jac_b @ thd)
        expected = jac_b.T @ (-tension * u)
        np.testing.assert_allclose(spring.generalized_force(model, th, thd, 0.0), expected, rtol=0, atol=1e-12)
        assert spring.potential_energy(model, th) == pytest.approx(0.5 * k * (length - l0) ** 2, rel=1e-14)
        assert spring.dissipated_power(model, th, thd) == pytest.approx(c * (u @ jac_b @ thd) ** 2, rel=1e-12)


# the last two: inside the coordinate limit's quintic transition, above and below
@pytest.mark.parametrize("state", [(0.3, 0.7), (-0.35, -0.9), (1.1, 0.6), (0.3, 0.42), (-0.35, -0.5)])
def test_elastic_forces_are_minus_potential_gradient(tmp_path, state):
    """τ(x, ẋ = 0) minus the actuator torques = −∂V/∂x, central differences (h = 1e-6: error ~1e-10)."""
    model = models.load_chain(tmp_path, ARM, extension=ALL)
    elements = [e for e in force_elements(model) if not isinstance(e, JointTorque)]
    assert len(elements) == 6
    x = np.array(state)
    h = 1e-6
    for element in elements:
        tau = element.generalized_force(model, x, np.zeros(2), 0.0)
        grad = np.array([(element.potential_energy(model, x + h * e) - element.potential_energy(model, x - h * e))
                         / (2 * h) for e in np.eye(2)])
        np.testing.assert_allclose(tau, -grad, rtol=0, atol=1e-7, err_msg=element.name)


def test_power_split_of_every_element(tmp_path):
    """τ·ẋ = −dV/dt − dissipated + input (dV/dt = ∇V·ẋ by central differences along ẋ)."""
    model = models.load_chain(tmp_path, ARM, extension=ALL)
    rng = np.random.default_rng(3)
    for _ in range(4):
        x, xd, t = rng.uniform(-0.8, 0.8, 2), rng.normal(size=2), rng.uniform(0, 2)
        x[0] = -0.3  # inside the switched stop
        for e in force_elements(model):
            h = 1e-6
            v_rate = (e.potential_energy(model, x + h * xd) - e.potential_energy(model, x - h * xd)) / (2 * h)
            power = e.generalized_force(model, x, xd, t) @ xd
            expected = -v_rate - e.dissipated_power(model, x, xd) + e.input_power(model, x, xd, t)
            assert power == pytest.approx(expected, abs=1e-7), e.name
            assert e.dissipated_power(model, x, xd) >= 0.0


def test_joint_elements_closed_forms(tmp_path):
    model = models.load_chain(tmp_path, ARM, extension=ALL)
    by_name = {e.name: e for e in force_elements(model)}
    x, xd, t = np.array([-0.3, 0.6]), np.array([0.4, 1.5]), 0.37
    np.testing.assert_allclose(by_name["joint_spring_j1"].generalized_force(model, x, xd, t),
                               [-5 * (-0.3 - 0.1) - 0.3 * 0.4, 0.0], atol=1e-15)
    w = 2 * np.pi / 2
    fourier = 0.5 + np.cos(w * t) + 0.2 * np.sin(w * t)
    np.testing.assert_allclose(by_name["joint_torque_j2"].generalized_force(model, x, xd, t), [0, fourier],
                               atol=1e-15)
    assert by_name["joint_torque_j2"].input_power(model, x, xd, t) == pytest.approx(fourier * 1.5, rel=1e-15)
    np.testing.assert_allclose(by_name["joint_torque_j1"].generalized_force(model, x, xd, t), [-0.7, 0.0])
    pen, gate = 0.1, 1.0  # upper stop: θ2 = 0.6 > 0.5; smoothing 1e-3 ≪ pen
    np.testing.assert_allclose(by_name["joint_stop_j2"].generalized_force(model, x, xd, t),
                               [0.0, -(100 * pen ** 2.5 + 1.0 * gate * 1.5)], atol=1e-13)
    np.testing.assert_allclose(by_name["joint_stop_j1"].generalized_force(model, x, xd, t), [300 * 0.1 - 4 * 0.4, 0.0],
                               atol=1e-13)
    assert np.all(by_name["joint_stop_j1"].generalized_force(model, np.array([-0.1, 0.0]), xd, t) == 0.0)
    events = by_name["joint_stop_j1"].events(model)
    assert [e.name for e in events] == ["joint_stop_j1.lower"] and events[0].restart
    assert events[0](0.0, x, xd) == pytest.approx(-0.1)
    assert by_name["joint_stop_j2"].events(model) == []
    np.testing.assert_allclose(applied_forces(model, x, xd, t),
                               sum(e.generalized_force(model, x, xd, t) for e in force_elements(model)))


def test_smooth_stop_is_c1_at_contact(tmp_path):
    model = models.load_chain(tmp_path, ARM)
    stop = JointStop("s", "j1", -0.5, None, 100.0, damping=3.0, smoothing=1e-2)
    xd = np.array([-2.0, 0.0])
    f = lambda th: stop.generalized_force(model, np.array([th, 0.0]), xd, 0.0)[0]  # noqa: E731
    bound = 100.0 + 3 * 3.0 * 2.0 / 1e-2 ** 2  # k + 3 c |ṗ| / smoothing²: slope ≤ bound·h → 0 (C¹)
    for h in (1e-4, 1e-5, 1e-6):
        assert abs(f(-0.5 - h) - f(-0.5)) / h <= bound * h * (1 + 1e-6)
        assert f(-0.5 + h) == 0.0


def test_python_api_adds_elements(tmp_path):
    model = models.load_chain(tmp_path, ARM)
    assert force_elements(model) == ()
    add_force_element(model, JointSpring("k1", "j1", stiffness=2.0, rest=0.5))
    add_force_element(model, Spring("cable", "base", (0, 0.2, 0), "l2", (0.3, 0, 0), stiffness=4.0))
    assert [e.name for e in force_elements(model)] == ["k1", "cable"]
    np.testing.assert_allclose(applied_forces(model, np.zeros(2), np.zeros(2))[0],
                               1.0 + force_elements(model)[1].generalized_force(model, np.zeros(2), np.zeros(2), 0)[0])
    with pytest.raises(ModelError, match="already used"):
        add_force_element(model, JointSpring("k1", "j2", stiffness=1.0))
    with pytest.raises(ModelError, match="unknown joint 'nope'"):
        add_force_element(model, JointSpring("k2", "nope", stiffness=1.0))
    other = models.load_chain(tmp_path / "other", ARM) if (tmp_path / "other").mkdir() is None else None
    assert force_elements(other) == ()  # per-model cache


def test_zero_length_spring(tmp_path):
    model = models.load_chain(tmp_path, ARM)
    same = Spring("z", "l1", (0.2, 0, 0), "l1", (0.2, 0, 0), stiffness=5.0, rest_length=0.0, damping=1.0)
    np.testing.assert_array_equal(same.generalized_force(model, np.zeros(2), np.ones(2), 0.0), np.zeros(2))
    bad = Spring("z", "l1", (0.2, 0, 0), "l1", (0.2, 0, 0), stiffness=5.0, rest_length=0.1)
    with pytest.raises(SolverError, match="zero length"):
        bad.generalized_force(model, np.zeros(2), np.zeros(2), 0.0)


@pytest.mark.parametrize("element, attribute, message", [
    ('<joint_spring joint="j1" stiffness="-1"/>', "stiffness", "must not be negative"),
    ('<joint_spring joint="j1" stiffness="1" damping="nan"/>', "damping", "not finite"),
    ('<joint_spring joint="j1"/>', "stiffness", "missing required attribute"),
    ('<spring link_a="base" link_b="l1" stiffness="1" rest_length="-0.1"/>', "rest_length", "must not be negative"),
    ('<spring link_a="base" link_b="l1" xyz_a="0 1" stiffness="1"/>', "xyz_a", "has 2 numbers"),
    ('<joint_stop joint="j1" lower="1" upper="0.5" stiffness="1"/>', "upper", "not above lower"),
    ('<joint_stop joint="j1" stiffness="1"/>', "lower", "neither lower nor upper"),
    ('<joint_stop joint="j1" lower="0" stiffness="1" type="hard"/>', "type", "unknown stop type"),
    ('<joint_stop joint="j1" lower="0" stiffness="1" exponent="1"/>', "exponent", "not C¹"),
    ('<joint_stop joint="j1" lower="0" stiffness="1" type="switched" smoothing="0.1"/>', "smoothing", "smooth only"),
    ('<joint_torque joint="j1"/>', "value", "missing required attribute"),
    ('<joint_torque joint="j1" value="1" type="fourier" period="1"/>', "value", "both given"),
    ('<joint_torque joint="j1" type="fourier" period="-1"/>', "period", "not positive"),
    ('<joint_torque joint="j1" type="nosuch"/>', "type", "unknown function type"),
    ('<joint_torque joint="j1" value="1" gain="2"/>', "gain", "unknown attribute"),
])
def test_bad_attributes_name_file_element_attribute(tmp_path, element, attribute, message):
    # every element is validated when the model is loaded (info/validate reject what simulate would)
    with pytest.raises(ModelError) as info:
        force_elements(models.load_chain(tmp_path, ARM, extension=element))
    error = info.value
    assert error.attribute == attribute and message in str(error)
    assert error.file.endswith("chain.urdf") and error.element.startswith("<")
