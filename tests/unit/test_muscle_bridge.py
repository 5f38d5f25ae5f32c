"""Muscles on the PyBullet bridge as forces along their paths (`bridge/muscles.py`): each loaded body gets one
external force and torque, and only a moving point's motion along its coordinate is a joint torque.

Model: a free-floating pelvis with a hip and a knee (`muscle_models.LEG_URDF`), three muscles — one over a cylinder
on the thigh (its tangent points load the thigh), one to a moving point on the shank (knee-driven), one straight.

- The wrenches are the path's forces: Σ_b J_bᵀ w_b (Pinocchio's world-frame joint Jacobians of the bodies) plus
  the moving point's joint torque equals −(∂l/∂v)ᵀ T, with ∂l/∂v by central differences of `muscles.lengths` along
  Pinocchio's own integration of the free flyer (h = 1e-5 and h/2, Richardson: truncation O(h⁴) ≈ 1e-20, round-off
  ≈ 1e-16 · l / h ≈ 1e-11 m).
- On PyBullet the floating model tracks the reference engine (rtol 1e-10) at first order in dt: the gap halves when
  dt halves, the turning pelvis included (observed 8.5e-3, 4.2e-3, 2.1e-3 at dt = 1, 0.5, 0.25 ms: orders 1.01).
- The joints transmit what the muscles' pull on the bodies leaves: `joint_reactions(bridge)` equals PyBullet's own
  force-torque sensors (as joint torques the muscles would give other reactions: 250 N off here).
"""
from __future__ import annotations

import numpy as np
import pytest

import biobullet
from muscle_models import LEG_URDF, leg_pose

pytest.importorskip("pybullet")

EXCITATIONS = {"extensor": 0.6, "flexor": 0.3, "hip_flexor": 0.5}


@pytest.fixture(scope="module")
def leg(tmp_path_factory):
    path = tmp_path_factory.mktemp("leg") / "leg.urdf"
    path.write_text(LEG_URDF)
    return biobullet.load_model(str(path), floating_base=True)


def test_body_wrenches_are_the_paths_generalized_force(leg):
    import pinocchio as pin
    from biobullet.bridge.bridge import Bridge
    from biobullet.conventions import PinocchioMap, build_pinocchio_model
    q, v = leg_pose()
    pin_model = build_pinocchio_model(leg)
    mapping = PinocchioMap(leg, pin_model)
    with Bridge(leg, dt=1e-3, initial=(q, v)) as bridge:
        muscles = bridge.set_excitations(0.5, **EXCITATIONS)
        _, x, xd = bridge.state()
        muscles.torques(x, xd)
        wrenches, bodies, tension = muscles.wrenches, muscles.bodies, muscles.tensions
        joint_torque = mapping.velocity_to_pinocchio(muscles.joint_torque)
    assert np.all(tension > 10.0) and len(bodies) == 3   # pelvis, thigh (points and the wrap), shank
    pin_q = mapping.config_to_pinocchio(x)
    data = pin_model.createData()
    pin.computeJointJacobians(pin_model, data, pin_q)
    pin.updateFramePlacements(pin_model, data)
    applied = joint_torque.copy()
    for b, wrench in zip(bodies, wrenches):   # [F; M about the world origin] ↔ Pinocchio's WORLD Jacobian
        joint = pin_model.frames[mapping.frame_id(leg.bodies[b].link)].parentJoint
        applied += pin.getJointJacobian(pin_model, data, joint, pin.ReferenceFrame.WORLD).T @ wrench

    def lengths(step: np.ndarray) -> np.ndarray:
        return biobullet.muscles.lengths(leg, mapping.config_from_pinocchio(pin.integrate(pin_model, pin_q, step)))

    def derivative(h: float) -> np.ndarray:
        return np.column_stack([(lengths(h * e) - lengths(-h * e)) / (2 * h) for e in np.eye(pin_model.nv)])

    h = 1e-5
    gradient = (4.0 * derivative(h / 2) - derivative(h)) / 3.0   # Richardson: O(h⁴)
    expected = -gradient.T @ tension
    # internal forces: no net wrench on the free flyer's directions, but tens of newtons on each body
    assert np.abs(expected[6:]).min() > 1.0 and np.abs(wrenches[:, :3]).max(axis=1).min() > 10.0
    assert np.abs(applied - expected).max() <= 1e-10 * tension.sum(), np.abs(applied - expected).max()


def test_floating_base_tracks_the_engine_at_first_order(leg):
    """0.15 s from the pose at rest under gravity: the muscles swing the leg and turn the falling pelvis; the gap
    to the reference engine (largest over q and v at the end) halves with dt."""
    from biobullet.bridge.simulation import simulate_bridge
    q, _ = leg_pose()
    start = (q, np.zeros(leg.nv))
    t_end = 0.15
    reference = biobullet.simulate(leg, t_end, initial=start, excitations=EXCITATIONS, activations=0.5, rtol=1e-10,
                                   atol=1e-10, progress=False)
    assert np.abs(reference.v[-1, 3:6]).max() > 0.5   # the pelvis turns (base angular velocity, rad/s)
    gaps = []
    for dt in (1e-3, 5e-4, 2.5e-4):
        run = simulate_bridge(leg, t_end, dt, initial=start, excitations=EXCITATIONS, activations=0.5)
        gaps.append(max(np.abs(run.q[-1] - reference.q[-1]).max(), np.abs(run.v[-1] - reference.v[-1]).max()))
    orders = np.log2(np.array(gaps[:-1]) / np.array(gaps[1:]))
    assert np.all((orders > 0.85) & (orders < 1.2)), (gaps, orders)


def test_joint_reactions_with_muscles_equal_pybullet_sensors(leg):
    """The joints transmit what the muscles' forces on the bodies leave (`bridge.reactions.joint_reactions`, with the
    wrenches as external loads) — against PyBullet's own force-torque sensors over one step from rest at
    dt = 0.01 ms (their reading belongs to a state inside the step: O(dt²), tests/integration/
    test_bridge_reactions.py), 1e-6 relative. The pelvis floats: the reactions are the muscles' alone (free fall)."""
    from biobullet.bridge.bridge import Bridge
    from biobullet.bridge.reactions import enable_force_torque_sensors, joint_reactions, pybullet_sensor_reactions
    q, _ = leg_pose()
    with Bridge(leg, dt=1e-5, initial=(q, np.zeros(leg.nv))) as bridge:
        bridge.set_excitations(0.5, **EXCITATIONS)
        enable_force_torque_sensors(bridge)
        _, x, _ = bridge.state()
        bridge.apply()
        ours = joint_reactions(bridge)
        bridge.pybullet.stepSimulation(physicsClientId=bridge.client)
        theirs = pybullet_sensor_reactions(bridge, x)
    scale = max(max(np.abs(r.force).max(), np.abs(r.moment).max()) for r in theirs.values())
    assert scale > 10.0   # the muscles load the joints (N or N·m)
    for name in theirs:
        assert np.abs(ours[name].force - theirs[name].force).max() <= 1e-6 * scale
        assert np.abs(ours[name].moment - theirs[name].moment).max() <= 1e-6 * scale
