"""Where the bridge's contact reactions act on a moving scene body: at the contact point, to round-off.

PyBullet places a WORLD_FRAME `applyExternalForce` on a link (index ≥ 0) by the link's cached world transform,
which stepSimulation leaves at the step's start (only forward kinematics updates it); without a refresh the
reaction −F acts O(v dt) away from its point p (1.6e-3 of the velocity change below).

Oracle (independent of the cached transform): PyBullet's step is linear in an external force, so the scene body's
velocity change with the reaction minus without it (the same step from the same saved state) is
dt M(q)⁻¹ J_p(q)ᵀ (−F): for the two-link pendulum (link 1) M from `calculateMassMatrix` at the pre-step q passed
explicitly and J_p's columns a_j × (p − o_j) from the hinges' axes a_j = y and origins o_j computed from q by hand;
for a free box's base (link −1) Δv = dt (−F)/m and Δω = dt I_w⁻¹ ((p − c) × (−F)), I_w = R I Rᵀ at the pre-step
pose — the base is placed by its current pose: no refresh needed, and none is made. Damping off; F and p from
`forces()` (n = (ball centre − p)/r). Checked to 1e-12 of the largest component: seen 6e-15 (pendulum) and 1e-14
(base); placed by the stale transform the pendulum's is off by 1.6e-3.
"""
from __future__ import annotations

import numpy as np
import pytest

pybullet = pytest.importorskip("pybullet")

from biobullet.bridge.bridge import Bridge  # noqa: E402
from biobullet.contact.testbed import drop_urdf  # noqa: E402
from biobullet.loader import load_text  # noqa: E402

DT, RADIUS, HEIGHT = 1e-3, 0.05, 0.5
SHOULDER = np.array([0.25, 0.0, HEIGHT + 0.5])   # the pendulum's base (fixed): its shoulder hinge
INERTIA = 'ixx="0.02" iyy="0.03" izz="0.004" ixy="0" ixz="0" iyz="0"'
# two links of 0.5 m on y hinges, boxes 0.05 m thick along each link; the elbow bent 90°: the lower link lies along
# −x at the elbow's height, under the ball
PENDULUM = f"""<robot name="pendulum">
  <link name="base"/>
  <link name="upper"><inertial><origin xyz="0 0 -0.25"/><mass value="1.0"/><inertia {INERTIA}/></inertial>
    <collision><origin xyz="0 0 -0.25"/><geometry><box size="0.05 0.05 0.5"/></geometry></collision></link>
  <link name="lower"><inertial><origin xyz="0.01 0 -0.25" rpy="0.1 0.2 0.3"/><mass value="1.5"/>
    <inertia {INERTIA}/></inertial>
    <collision><origin xyz="0 0 -0.25"/><geometry><box size="0.05 0.05 0.5"/></geometry></collision></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/><axis xyz="0 1 0"/>
    <limit lower="-10" upper="10" effort="0" velocity="100"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="lower"/><origin xyz="0 0 -0.5"/>
    <axis xyz="0 1 0"/><limit lower="-10" upper="10" effort="0" velocity="100"/></joint>
</robot>"""


def _ball(tmp_path):
    contact = {"normal_law": "hunt_crossley", "stiffness": "1e5", "restitution": "0.8",
               "friction_law": "regularized", "mu": "0.5", "v0": "1e-3"}
    return load_text(drop_urdf(contact, radius=RADIUS), tmp_path)


def _reaction(bridge, body):
    """(link, −F, p) of the one scene pair in contact with `body` in the last apply()."""
    (name, record), = [(k, f) for k, f in bridge.contacts.forces().items() if f.body == body and f.normal > 0]
    centre = np.array([0.0, 0.0, bridge.state()[1][0]])
    normal = (centre - record.point) / RADIUS
    return record.link, -(record.normal * normal + record.friction), np.asarray(record.point)


def _pendulum(tmp_path, p, c):
    path = tmp_path / "pendulum.urdf"
    path.write_text(PENDULUM)
    body = p.loadURDF(str(path), SHOULDER.tolist(), useFixedBase=True, physicsClientId=c)
    for j in range(2):
        p.setJointMotorControl2(body, j, p.VELOCITY_CONTROL, force=0, physicsClientId=c)
        p.changeDynamics(body, j, linearDamping=0, angularDamping=0, jointDamping=0, physicsClientId=c)
    p.resetJointState(body, 0, 0.0, -1.5, physicsClientId=c)
    p.resetJointState(body, 1, np.pi / 2, 3.0, physicsClientId=c)
    return body


def _free_box(p, c):
    shape = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.25, 0.1, 0.025], physicsClientId=c)
    body = p.createMultiBody(2.0, shape, basePosition=[0.0, 0.0, HEIGHT], physicsClientId=c)
    p.changeDynamics(body, -1, linearDamping=0, angularDamping=0, physicsClientId=c)
    p.resetBaseVelocity(body, [0.3, -0.2, 0.1], [0.5, 4.0, -2.0], physicsClientId=c)
    return body


def _velocity(p, c, body):
    if p.getNumJoints(body, physicsClientId=c):
        return np.array([s[1] for s in p.getJointStates(body, range(2), physicsClientId=c)])
    return np.concatenate(p.getBaseVelocity(body, physicsClientId=c))


def _expected_change(p, c, body, link, force, point, q):
    """dt × (the velocity response to −F at p), from the pre-step state (see the module docstring)."""
    if link == -1:
        mass, _, diagonal, _, _ = p.getDynamicsInfo(body, -1, physicsClientId=c)[:5]
        com, quaternion = p.getBasePositionAndOrientation(body, physicsClientId=c)
        rotation = np.array(p.getMatrixFromQuaternion(quaternion)).reshape(3, 3)
        inertia = rotation @ np.diag(diagonal) @ rotation.T
        return DT * np.concatenate([force / mass, np.linalg.solve(inertia, np.cross(point - com, force))])
    mass_matrix = np.array(p.calculateMassMatrix(body, q.tolist(), physicsClientId=c))
    origins = [SHOULDER, SHOULDER + 0.5 * np.array([-np.sin(q[0]), 0.0, -np.cos(q[0])])][:link + 1]
    jacobian = np.array([np.cross([0.0, 1.0, 0.0], point - np.asarray(o)) for o in origins]).T   # y hinges
    return DT * np.linalg.solve(mass_matrix, jacobian.T @ force)


@pytest.mark.parametrize("scene", ["pendulum", "free_box"])
def test_reaction_acts_at_the_contact_point(tmp_path, scene):
    """A ball pressing on a moving scene body: the body's velocity change from the reaction equals the oracle."""
    p = pybullet
    c = p.connect(p.DIRECT)
    try:
        p.setTimeStep(DT, physicsClientId=c)
        p.setGravity(0, 0, -9.81, physicsClientId=c)
        body = _pendulum(tmp_path, p, c) if scene == "pendulum" else _free_box(p, c)
        top = HEIGHT + 0.025
        with Bridge(_ball(tmp_path), c, dt=DT, initial={"drop": top + RADIUS - 2e-3}) as bridge:
            for _ in range(3):   # the scene body moves on: its links' cached transforms fall behind
                bridge.step()
            saved = p.saveState(physicsClientId=c)
            q = np.array([s[0] for s in p.getJointStates(body, range(p.getNumJoints(body, physicsClientId=c)),
                                                        physicsClientId=c) or ()])
            bridge.apply()
            link, force, point = _reaction(bridge, body)
            assert link == (1 if scene == "pendulum" else -1) and np.linalg.norm(force) > 1.0
            p.stepSimulation(physicsClientId=c)
            pushed = _velocity(p, c, body)
            p.restoreState(saved, physicsClientId=c)
            expected = _expected_change(p, c, body, link, force, point, q)
            p.stepSimulation(physicsClientId=c)   # the same step without the reaction
            change = pushed - _velocity(p, c, body)
    finally:
        p.disconnect(c)
    np.testing.assert_allclose(change, expected, rtol=0, atol=1e-12 * np.max(np.abs(expected)))
