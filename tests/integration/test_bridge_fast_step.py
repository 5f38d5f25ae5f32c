"""The shoulder's per-step fast path (`Bridge._apply_fast`: one getJointStates, one compiled call through numba's
direct entry for M, h and the null-space solve, one setJointMotorControlArray) keeps every behaviour of the slower
paths: its torque is the KKT solution with PyBullet's own M and h; a force element added or cleared after the bridge
was made counts from the next step; a closed bridge, a disconnected client and a client id taken by another
connection are each one BridgeClosedError; several bridges share a client; a non-finite state is a
DivergenceError. (Its speed: tests/benchmarks/test_bridge_model_kinds.py, `biobullet bench`.)"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pybullet
import pytest

import biobullet
from biobullet.bridge import Bridge
from biobullet.bridge.lifecycle import BridgeClosedError, DivergenceError
from biobullet.forces import JointTorque, add_force_element, applied_forces, clear_added_force_elements

SHOULDER = Path(__file__).resolve().parents[2] / "urdf" / "shoulder_rhythm.urdf"


def _kkt_torque(bridge: Bridge, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """τ + Φ_xᵀλ and λ from PyBullet's calculateMassMatrix / calculateInverseDynamics and a dense LAPACK solve of
    [M Φ_xᵀ; Φ_x 0] with the bridge's target a* = −kd Φ̇ − kp Φ (constant rows: no curvature term)."""
    _, x, xd = bridge.state()
    mass, bias = bridge.tree_mass_and_bias(x, xd)
    jac, offset = bridge.linear
    target = -bridge.corrector.kd * (jac @ xd) - bridge.corrector.kp * (jac @ x - offset)
    n, m = len(x), len(jac)
    solution = np.linalg.solve(np.block([[mass, jac.T], [jac, np.zeros((m, m))]]),
                               np.concatenate([tau - bias, target]))
    lam = -solution[n:]
    return tau + jac.T @ lam, lam


def test_fast_step_is_the_kkt_solution_and_sees_late_force_elements():
    model = biobullet.load_model(SHOULDER)
    rng = np.random.default_rng(7)
    with Bridge(model, dt=1e-3) as bridge:
        assert bridge.uses_null_space, "the shoulder's linear rows take the fast path"
        for _ in range(40):
            bridge.step()
        tau = rng.normal(size=model.n_tangent)
        expected, lam = _kkt_torque(bridge, tau)
        out = bridge.apply(tau)            # apply() only sends torques: PyBullet's state is unchanged
        scale = np.abs(expected).max()
        assert np.abs(out - expected).max() <= 1e-9 * scale
        assert np.abs(np.array(list(bridge.reaction_forces().values())) - lam).max() <= 1e-9 * np.abs(lam).max()
        # a force element added after the bridge was made: applied from the next step, as if passed as tau
        joint = model.joint_names[0]
        element = JointTorque("late_torque", joint, value=0.7)
        _, x, xd = bridge.state()
        base = bridge.apply()
        try:
            add_force_element(model, element)
            element_tau = applied_forces(model, x, xd, bridge.time)
            assert element_tau[0] == pytest.approx(0.7) and np.count_nonzero(element_tau) == 1
            with_element = bridge.apply()
            clear_added_force_elements(model)
            assert np.abs(with_element - bridge.apply(element_tau)).max() <= 1e-12 * scale
            assert np.abs(bridge.apply() - base).max() <= 1e-12 * scale    # cleared: gone again
        finally:
            clear_added_force_elements(model)
        # still on the manifold after the extra apply() calls and 200 more steps
        for _ in range(200):
            bridge.step()
        assert max(abs(r) for r in bridge.constraint_residuals().values()) <= 1e-9


def test_fast_step_lifecycle_errors_and_shared_client():
    model = biobullet.load_model(SHOULDER)
    bridge = Bridge(model, dt=1e-3)
    bridge.step()
    bridge.close()
    with pytest.raises(BridgeClosedError, match="closed"):
        bridge.step()

    client = pybullet.connect(pybullet.DIRECT)
    try:
        first, second = Bridge(model, client, dt=1e-3), Bridge(model, client, dt=1e-3)
        for _ in range(5):                 # two bodies, one client: each bridge steps its own
            first.apply()
            second.step()
        assert first.state()[0] == pytest.approx(5e-3) and second.state()[0] == pytest.approx(5e-3)
        first.close()
        second.step()                      # closing one leaves the other usable
        with pytest.raises(BridgeClosedError):
            first.step()
    finally:
        pybullet.disconnect(client)
    with pytest.raises(BridgeClosedError, match="disconnected"):
        second.step()
    # the id now belongs to a new connection with bodies of the same ids: the token tells them apart
    reused = pybullet.connect(pybullet.DIRECT)
    try:
        for _ in range(second.body + 1):
            pybullet.loadURDF(str(SHOULDER), useFixedBase=True, physicsClientId=reused)
        with pytest.raises(BridgeClosedError, match="another connection" if reused == client else "disconnected"):
            second.step()
    finally:
        pybullet.disconnect(reused)


def test_fast_step_with_a_non_finite_state_ends_in_a_divergence_error():
    model = biobullet.load_model(SHOULDER)
    with Bridge(model, dt=1e-3) as bridge:
        for _ in range(3):
            bridge.step()
        pybullet.resetJointState(bridge.body, bridge._joint_list[0], 0.0, float("nan"),
                                 physicsClientId=bridge.client)
        # the first step that reads the non-finite state says so (bridge.outside): no crash, no silent NaN state
        with pytest.raises(DivergenceError, match="dt"):
            bridge.step()
        with pytest.raises(DivergenceError, match="dt"):
            bridge.state()


def test_rows_step_sees_late_force_elements():
    """The one-call rows path (`Bridge._apply_rows`, Andrews' squeezer: loops and springs in one kernel) decides
    whether the kernel evaluates every force element once per change of the element lists: an element added after
    the bridge was made counts from the next apply() exactly as if passed as tau, and is gone once cleared."""
    model = biobullet.load_model(SHOULDER.parent / "andrews_squeezer.urdf")
    with Bridge(model, dt=1e-5) as bridge:
        assert bridge._rows_fast and not bridge.uses_null_space, "Andrews takes the one-call rows path"
        for _ in range(20):
            bridge.step()
        _, x, xd = bridge.state()
        base = bridge.apply()
        scale = np.abs(base).max()
        element = JointTorque("late_torque", model.joint_names[1], value=0.3)
        try:
            add_force_element(model, element)
            with_element = bridge.apply()
            clear_added_force_elements(model)
            element_tau = np.zeros(model.n_tangent)
            element_tau[1] = 0.3
            assert np.abs(with_element - bridge.apply(element_tau)).max() <= 1e-12 * scale
            assert np.abs(with_element - base).max() > 1e-3 * scale      # the element did act
            assert np.abs(bridge.apply() - base).max() <= 1e-12 * scale
        finally:
            clear_added_force_elements(model)


def test_general_step_with_contacts_sees_late_force_elements(tmp_path):
    """The general path (`Bridge._apply`, here a ball on compliant ground: contacts, no rows) also decides once per
    change of the element lists whether force elements act: one added after the bridge was made counts from the
    next step as if passed as tau (the contact torque is the same at the same state), and is gone once cleared."""
    from biobullet.contact.testbed import drop_urdf
    from biobullet.loader import load_text
    model = load_text(drop_urdf({"normal_law": "hu_guo", "stiffness": "1e5", "restitution": "0.8"}), tmp_path)
    with Bridge(model, dt=1e-4) as bridge:
        bridge.reset(q=[0.045])   # resting in contact, 5 mm deep
        base = bridge.apply()
        element = JointTorque("late_push", model.joint_names[0], value=2.5)
        try:
            add_force_element(model, element)
            with_element = bridge.apply()
            clear_added_force_elements(model)
            assert with_element[0] - base[0] == pytest.approx(2.5, abs=1e-9 * abs(base[0]))
            assert bridge.apply()[0] == pytest.approx(base[0], abs=1e-9 * abs(base[0]))
        finally:
            clear_added_force_elements(model)


@pytest.mark.parametrize("kind", ["arm", "coupled_arm"])
def test_floating_step_without_force_call_sees_late_force_elements(kind, tmp_path):
    """A floating base skips the force stage's call while no element can act (`ForceStage.idle_below`: the URDF
    stops far from their limits — the spherical arm on the plan without rows, the coupled arm on the read-rows
    path); an element added after the bridge was made still counts from the next apply() exactly as if passed as
    tau (the same solve), and is gone once cleared."""
    from spherical_arms import ARM, COUPLED
    (tmp_path / "arm.urdf").write_text(ARM if kind == "arm" else COUPLED)
    model = biobullet.load_model(tmp_path / "arm.urdf", floating_base=True)
    joint = "elbow"
    with Bridge(model, dt=1e-3) as bridge:
        for _ in range(5):
            bridge.step()
        assert bridge.watch.peak < bridge.forces.idle_below, "no element can act: the stage is not called"
        base = bridge.apply().copy()
        element = JointTorque("late_torque", joint, value=0.3)
        try:
            add_force_element(model, element)
            with_element = bridge.apply().copy()
            _, x, xd = bridge.state()
            element_tau = element.generalized_force(model, x, xd, 0.0)
            clear_added_force_elements(model)
            scale = max(np.abs(base).max(), 1.0)
            assert np.abs(with_element - bridge.apply(element_tau)).max() <= 1e-12 * scale
            assert np.abs(with_element - base).max() > 0.1      # the element did act (0.3 N·m)
            assert np.abs(bridge.apply() - base).max() <= 1e-12 * scale
        finally:
            clear_added_force_elements(model)


def test_rows_step_with_urdf_stops_acts_from_the_first_step_beyond_a_limit(tmp_path):
    """KUKA iiwa with q3 = f(q2, q4), whose force elements are its URDF `<limit>` stops alone (`ForceStage.idle_below`:
    the smallest |limit|), takes the one-call rows path with the watch's check inside (`_apply_checked_rows`) on
    every step — solved without the stops, the force stage called only where the check's max |θ| may reach a limit.
    Joint 1 driven through its upper limit (no row holds it: its column of Φ_x is 0, so the τ sent there is the
    stop's alone) gets 0 inside and, from the first step beyond, the smooth stop law f = k p² + c s(p) ṗ written out
    here (p = θ − upper, s the smoothstep over 1e-3 rad; k, c the limit's parameters)."""
    from bridge_user_loop import write_coupled_kuka
    from biobullet.forces.collection import force_elements
    model = biobullet.load_model(write_coupled_kuka(tmp_path))
    name = model.joint_names[0]
    stop = next(e for e in force_elements(model) if e.name == f"limit_{name}")
    assert all(type(e).__name__ == "JointStop" for e in force_elements(model))
    with Bridge(model, dt=1e-3) as bridge:
        checked, sent = bridge._apply_checked_rows, []
        bridge._apply_checked_rows = lambda x, xd: sent.append(checked(x, xd)) or sent[-1]
        bridge.reset(**{name: stop.upper - 0.03, f"{name}_dot": 4.0})
        k = bridge.torque_names.index(name)
        inside = beyond = 0
        for _ in range(40):
            _, x, xd = bridge.state()
            theta, rate = x[k], xd[k]
            tau = bridge.apply()[k]
            pybullet.stepSimulation(physicsClientId=bridge.client)
            if theta <= stop.upper:
                inside += 1
                assert tau == 0.0
            else:
                beyond += 1
                pen = theta - stop.upper
                u = min(pen / 1e-3, 1.0)
                expected = -(stop.stiffness * pen ** 2 + stop.damping * u * u * (3.0 - 2.0 * u) * rate)
                assert tau == pytest.approx(expected, rel=1e-12, abs=1e-12)
        assert inside >= 3 and beyond >= 3
        assert sum(torque is not None for torque in sent) >= 38   # every step after the first on the one-call path
        assert max(abs(r) for r in bridge.constraint_residuals().values()) <= 1e-6
