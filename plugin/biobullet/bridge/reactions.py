"""Joint reactions on the PyBullet bridge, and PyBullet's own joint force-torque sensors in the same convention.

`joint_reactions(bridge)` → {URDF joint name: Reaction}: what the parent exerts on the child at the joint origin,
world axes (see `biobullet.dynamics.joint_reactions`), at the bridge's current state under the tree torques of the
last `apply()` and its muscles' forces on the bodies (or `tau`, as joint torques alone), under the gravity the
client steps with (the file's, or the client's with gravity="client" or after a setGravity: `gravity_shift`). Call it between `apply()` and `stepSimulation()`: PyBullet's sensors report the
reactions of the step they were computed in, i.e. at the pre-step state.

`enable_force_torque_sensors(bridge)` switches on PyBullet's sensors (enableJointForceTorqueSensor) and sets
`jointFeedbackMode = JOINT_FEEDBACK_IN_WORLD_SPACE` (an engine-wide parameter of the client). In that mode PyBullet
reports the force the parent exerts on the child in world axes and the moment about the child LINK's inertial-frame
origin (its own COM, not the COM of links welded to it); `pybullet_sensor_reactions(bridge)` moves that moment to the
joint origin so both read alike (checked in tests/integration/test_bridge_reactions.py).

PyBullet caveat (bullet3 issue #2966, fixed upstream by PR #4583): with TORQUE_CONTROL some PyBullet versions count
the motor torque twice in the sensor's moment; the comparison test measures what the installed version does.
"""
from __future__ import annotations

import numpy as np

from biobullet.algorithms.kinematics import frame_jacobian, world_tree
from biobullet.dynamics.joint_reactions import Reaction, tree_reactions
from biobullet.spatial.dense import solve_spd

__all__ = ["joint_reactions", "enable_force_torque_sensors", "gravity_shift", "pybullet_sensor_reactions"]


def joint_reactions(bridge, tau=None) -> dict[str, Reaction]:
    """Reactions at the bridge's current tree state under tree torques `tau` (n_tangent, biobullet order, N·m / N;
    default: the torques the last `apply()` sent, constraint forces of joint functions and loops included)."""
    model = bridge.model
    _, x, xd = bridge.state()
    torque = np.asarray(bridge.last_torque if tau is None else tau, dtype=float)
    external = None
    if bridge.muscles is not None and tau is None:   # the muscles pull on the bodies, not through the joints
        external = np.zeros((len(model.bodies), 6))
        external[bridge.muscles.bodies] = bridge.muscles.wrenches
    mass, bias = bridge.tree_mass_and_bias(x, xd, source="model")   # the tree's ẍ under τ: M ẍ = τ − h
    # the step's gravity is the client's (gravity="client", a setGravity since): before, the file's was taken —
    # arm7 under the client's −3 m/s² 150 % off PyBullet's sensors
    engine = bridge.pybullet.getPhysicsEngineParameters(physicsClientId=bridge.client)
    shift = np.array([engine[f"gravityAcceleration{a}"] for a in "XYZ"], dtype=float) - model.gravity
    if shift.any():
        wrenches, generalized = gravity_shift(model, x, shift)
        torque = torque + generalized
        external = wrenches if external is None else external + wrenches
    return tree_reactions(model, x, xd, solve_spd(mass, torque - bias, model.file), external)


def gravity_shift(model, x: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gravity g + `shift` (m/s², world) on the model whose file says g, as what `tree_reactions` and M ẍ = τ − h
    take besides: the force m_i·shift at each body's centre of mass (n_bodies × 6 wrenches: force, moment about the
    world origin) and its generalized force Σ J_iᵀ m_i·shift (n_tangent)."""
    rot, pos, _ = world_tree(model, x)
    wrenches, generalized = np.zeros((len(model.bodies), 6)), np.zeros(model.n_tangent)
    for body in model.bodies:
        force = body.mass * shift
        centre = rot[body.index] @ body.com + pos[body.index]
        wrenches[body.index] = np.concatenate((force, np.cross(centre, force)))
        generalized += frame_jacobian(model, x, body.link, body.com)[:3].T @ force
    return wrenches, generalized


def enable_force_torque_sensors(bridge) -> None:
    """Enable PyBullet's joint force-torque sensor on every joint, feedback in world space (client-wide)."""
    p = bridge.pybullet
    p.setPhysicsEngineParameter(jointFeedbackMode=p.JOINT_FEEDBACK_IN_WORLD_SPACE, physicsClientId=bridge.client)
    for j in range(p.getNumJoints(bridge.body, physicsClientId=bridge.client)):
        p.enableJointForceTorqueSensor(bridge.body, j, True, physicsClientId=bridge.client)


def pybullet_sensor_reactions(bridge, x=None) -> dict[str, Reaction]:
    """PyBullet's sensor readings of the last step as Reactions (moment moved to the joint origin, world axes).

    `x`: the tree configuration the step started from (default: the current one — pass the pre-step x, read
    before stepSimulation, for an exact comparison; the readings belong to that state)."""
    from biobullet.algorithms.kinematics import body_placements
    p, c, b = bridge.pybullet, bridge.client, bridge.body
    model = bridge.model
    if x is None:
        x = bridge.state()[1]
    placements = body_placements(model, x)
    out: dict[str, Reaction] = {}
    for body in model.bodies:
        if body.joint_type == "free":
            continue
        index = bridge.map.link_index[body.link]   # PyBullet: joint j moves link j
        reading = np.asarray(p.getJointState(b, index, physicsClientId=c)[2], dtype=float)
        rotation, origin = placements[body.index]
        frame = model.frame(body.link)   # the child link in its body (identity for the body's own link)
        com_link = bridge.map.link_com(body.link)
        com = origin + rotation @ (frame.rotation @ com_link + frame.translation)
        force, moment = reading[:3], reading[3:]
        out[body.joint] = Reaction(force, moment + np.cross(com - origin, force))
    return out
