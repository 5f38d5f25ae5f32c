"""The bridge's time step against each stiff element's explicit stability limit (`bridge.stability`).

Oracles: the slider of mass m on a joint spring k (damping c) has the exact inverse mass w = 1/m, so its limit is
the positive root of (k/m) dt² + 2 (c/m) dt = 4 (ω = √(k/m) = 707.1 rad/s here: 2/ω = 2.83 ms without damping); and
PyBullet's own integrator — the same spring applied by hand (TORQUE_CONTROL with τ = −k x − c ẋ, no bridge) stays
bounded 2 % below that dt (a transient of 4.5× the start near the edge) and runs away 2 % above it (PyBullet's joint
velocity clamp off, which would otherwise cap the runaway at 100 m/s). The bridge refuses a dt beyond the limit of
an always-acting spring (ModelError naming the element) and warns once for a linear (switched) stop, which acts only
when engaged. A linearisation (`natural_frequencies`) leaves no trace on a model with a loop: later solves are
bit-identical.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

p = pytest.importorskip("pybullet")

from biobullet.bridge import Bridge  # noqa: E402
from biobullet.bridge.lifecycle import BridgeWarning  # noqa: E402
from biobullet.bridge.stability import stiff_elements  # noqa: E402
from biobullet.core.errors import ModelError  # noqa: E402
from biobullet.loader import load_model, load_text  # noqa: E402

MASS, STIFFNESS, DAMPING = 2.0, 1.0e6, 40.0


def slider(element: str) -> str:
    return f"""<robot name="slider">
  <link name="base"/>
  <link name="cart"><inertial><origin xyz="0 0 0"/><mass value="{MASS}"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="slide" type="prismatic"><parent link="base"/><child link="cart"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="100" velocity="10"/></joint>
  <biobullet version="1"><gravity xyz="0 0 0"/>{element}
    <initial joint="slide" position="0.01" velocity="0"/></biobullet>
</robot>"""


def limit(k: float, c: float, m: float) -> float:
    """The positive root of (k/m) dt² + 2 (c/m) dt − 4 = 0."""
    a, b = k / m, c / m
    return (-b + math.sqrt(b * b + 4.0 * a)) / a


def bare_pybullet_peak(model, dt: float, steps: int = 400) -> float:
    """max |x| of the slider stepped by PyBullet alone with τ = −k x − c ẋ held over each step (no bridge)."""
    from biobullet.bridge.connection import load_body
    client = p.connect(p.DIRECT)
    try:
        p.setGravity(0, 0, 0, physicsClientId=client)
        p.setTimeStep(dt, physicsClientId=client)
        body = load_body(model, client, None)
        p.setJointMotorControl2(body, 0, p.VELOCITY_CONTROL, force=0, physicsClientId=client)
        p.changeDynamics(body, 0, linearDamping=0, angularDamping=0, jointDamping=0, maxJointVelocity=1e9,
                         physicsClientId=client)   # no velocity clamp (default 100 m/s) to hide a runaway
        p.resetJointState(body, 0, 0.01, 0.0, physicsClientId=client)
        peak = 0.0
        for _ in range(steps):
            x, v = p.getJointState(body, 0, physicsClientId=client)[:2]
            peak = max(peak, abs(x))
            if peak > 1e3:
                break
            p.setJointMotorControl2(body, 0, p.TORQUE_CONTROL, force=-STIFFNESS * x - DAMPING * v,
                                    physicsClientId=client)
            p.stepSimulation(physicsClientId=client)
        return peak
    finally:
        p.disconnect(client)


def test_joint_spring_limit_is_pybullets_and_the_bridge_refuses_beyond_it(tmp_path):
    model = load_text(slider(f'<joint_spring name="stiff" joint="slide" stiffness="{STIFFNESS}" '
                             f'damping="{DAMPING}"/>'), tmp_path)
    (element, k_r, c_r, always), = stiff_elements(model)
    assert always and k_r == pytest.approx(STIFFNESS / MASS, rel=1e-12)
    assert c_r == pytest.approx(DAMPING / MASS, rel=1e-12)
    dt_max = limit(STIFFNESS, DAMPING, MASS)
    # PyBullet's semi-implicit Euler itself: bounded below the limit, runaway above it
    assert bare_pybullet_peak(model, 0.98 * dt_max) < 0.1   # 1 cm start, a transient of ≈ 4.5 cm near the edge
    assert bare_pybullet_peak(model, 1.02 * dt_max) > 1.0
    with pytest.raises(ModelError) as error:
        Bridge(model, dt=1.02 * dt_max)
    text = str(error.value)
    assert '<joint_spring name="stiff"' in text and "explicit stability limit" in text and "dt <" in text
    with Bridge(model, dt=0.98 * dt_max) as bridge:
        for _ in range(200):
            bridge.step()
        assert abs(bridge.state()[1][0]) < 0.1
        with pytest.raises(ModelError):
            bridge.set_time_step(1.02 * dt_max)


def test_stop_beyond_its_limit_warns_once_naming_it(tmp_path):
    model = load_text(slider(f'<joint_stop name="hard" joint="slide" type="switched" lower="-0.5" upper="0.5" '
                             f'stiffness="{STIFFNESS}"/>'), tmp_path)
    dt_max = 2.0 / math.sqrt(STIFFNESS / MASS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridge = Bridge(model, dt=1.5 * dt_max)
    bridge.close()
    stops = [w for w in caught if issubclass(w.category, BridgeWarning) and "hard" in str(w.message)]
    assert len(stops) == 1 and "when it engages" in str(stops[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BridgeWarning)
        Bridge(model, dt=0.9 * dt_max).close()


def test_natural_frequencies_leave_no_trace_on_a_loop_model():
    from biobullet.flexible.segments import natural_frequencies

    def solves(probe: bool) -> np.ndarray:
        model = load_model("prosthesis_fourbar")
        q0, v0 = model.initial_state()
        out = [model.joint_state(q0 + 0.01 * k, v0, 0.1 * k)[0] for k in range(3)]
        if probe:
            natural_frequencies(model, q0)
        out += [model.joint_state(q0 + 0.013 * k, v0, 0.1 * k)[0] for k in range(3)]
        return np.array(out)

    assert np.array_equal(solves(False), solves(True))


def test_linear_contact_beyond_its_limit_warns_naming_it(tmp_path):
    """A ball of mass m on a vertical slider with a Kelvin–Voigt contact (k, c) on the ground z = 0: the normal's
    inverse mass is exactly 1/m, so k_r = k/m and c_r = c/m; a dt beyond the root of k_r dt² + 2 c_r dt = 4 gives one
    BridgeWarning naming the contact (it acts only while touching), a dt inside it none. A nonlinear law (Hertz,
    exponent 1.5) has no fixed limit and is not checked. (The ball starts 5 cm deep: the contacts' own deep-start
    warning, not a BridgeWarning.)"""
    from biobullet.contact.testbed import drop_urdf
    k, c, m = 1.0e6, 50.0, 2.0
    model = load_text(drop_urdf({"normal_law": "kelvin_voigt", "stiffness": repr(k), "damping": repr(c)}, mass=m),
                      tmp_path)
    (contact, k_r, c_r, always), = stiff_elements(model)   # (the URDF limit's smooth stop is nonlinear: p²)
    assert not always and k_r == pytest.approx(k / m, rel=1e-12) and c_r == pytest.approx(c / m, rel=1e-12)
    dt_max = limit(k, c, m)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Bridge(model, dt=1.05 * dt_max).close()
    named = [w for w in caught if issubclass(w.category, BridgeWarning) and "<contact" in str(w.message)]
    assert len(named) == 1 and "when it engages" in str(named[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BridgeWarning)
        Bridge(model, dt=0.95 * dt_max).close()
    hertz = load_text(drop_urdf({"normal_law": "hertz", "stiffness": repr(k), "exponent": "1.5"}, mass=m),
                      tmp_path / "hertz")
    assert stiff_elements(hertz) == []
