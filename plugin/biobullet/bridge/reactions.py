"""Joint reactions on the PyBullet bridge, and PyBullet's own joint force-torque sensors in the same convention.

`joint_reactions(bridge)` → {URDF joint name: Reaction}: what the parent exerts on the child at the joint origin,
world axes (see `biobullet.dynamics.joint_reactions`), at the bridge's current state under the tree torques of the
last `apply()` and its muscles' forces on the bodies (or `tau`, as joint torques alone), for the body PyBullet
steps: under the gravity the client steps with (the file's, or the client's with gravity="client" or after a
setGravity) and with the masses and inertias PyBullet stores (the file's, or a `changeDynamics` since), both as
external wrenches on the file's bodies (`body_difference`). Call it between `apply()` and `stepSimulation()`:
PyBullet's sensors report the reactions of the step they were computed in, i.e. at the pre-step state.

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

from biobullet.dynamics.joint_reactions import Reaction, tree_reactions
from biobullet.dynamics.link_segment import body_accelerations, body_kinematics
from biobullet.model.tree import COM, INERTIA, MASS
from biobullet.spatial.dense import solve_spd

__all__ = ["joint_reactions", "enable_force_torque_sensors", "body_difference", "pybullet_sensor_reactions"]


def joint_reactions(bridge, tau=None) -> dict[str, Reaction]:
    """Reactions at the bridge's current tree state under tree torques `tau` (n_tangent, biobullet order, N·m / N;
    default: the torques the last `apply()` sent, constraint forces of joint functions and loops included), for the
    body PyBullet steps: the masses, centres of mass and inertias it stores now (`Bridge.stored_bodies`: a
    `changeDynamics(body, link, mass=...)` since included) and the client's gravity."""
    model = bridge.model
    _, x, xd = bridge.state()
    torque = np.ascontiguousarray(bridge.last_torque if tau is None else tau, dtype=float)
    external = None
    if bridge.muscles is not None and tau is None:   # the muscles pull on the bodies, not through the joints
        external = np.zeros((len(model.bodies), 6))
        external[bridge.muscles.bodies] = bridge.muscles.wrenches
    # the step's gravity is the client's (gravity="client", a setGravity since): before, the file's was taken —
    # arm7 under the client's −3 m/s² 150 % off PyBullet's sensors; and its inertias are the ones PyBullet stores:
    # before, the file's were taken after a changeDynamics (arm7's forearm at 3× its mass: 0.52 of the sensor
    # reading off)
    engine = bridge.pybullet.getPhysicsEngineParameters(physicsClientId=bridge.client)
    gravity = np.array([engine[f"gravityAcceleration{a}"] for a in "XYZ"], dtype=float)
    mass, bias = bridge.tree_mass_and_bias(x, xd, source="current")   # the tree's ẍ under τ: M ẍ = τ − h
    xdd = solve_spd(mass, torque - bias, model.file)
    shift = body_difference(model, x, xd, xdd, bridge.stored_bodies(), gravity)
    return tree_reactions(model, x, xd, xdd, shift if external is None else external + shift)


def body_difference(model, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray, bodies: np.ndarray,
                    gravity: np.ndarray) -> np.ndarray:
    """The bodies `bodies` (packed records, `model.tree.pack_tree`: mass, COM and inertia about it, body frame)
    under `gravity` (m/s², world) in place of the file's under its `<gravity>`, as the external wrenches
    `tree_reactions` then takes (n_bodies × 6: force, moment about the world origin; N, N·m): per body its inertial
    and weight wrench W = (m (a_c − g), I α + ω × I ω + p × m (a_c − g)) with the file's values minus the same with
    the given ones, at the motion (x, ẋ, ẍ)."""
    rot, pos, omega, _ = body_kinematics(model, x, xd)
    alpha, acc = body_accelerations(model, x, xd, xdd)
    out = np.zeros((len(model.bodies), 6))
    for body in model.bodies:
        i = body.index
        for sign, m, com, inertia, g in ((1.0, body.mass, body.com, body.inertia_com, model.gravity),
                                         (-1.0, bodies[i, MASS], bodies[i, COM:COM + 3],
                                          bodies[i, INERTIA:INERTIA + 9].reshape(3, 3), gravity)):
            arm = rot[i] @ np.asarray(com, dtype=float)
            force = m * (acc[i] + np.cross(alpha[i], arm) + np.cross(omega[i], np.cross(omega[i], arm)) - g)
            world = rot[i] @ inertia @ rot[i].T
            moment = world @ alpha[i] + np.cross(omega[i], world @ omega[i]) + np.cross(arm + pos[i], force)
            out[i] += sign * np.concatenate((force, moment))
    return out


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
