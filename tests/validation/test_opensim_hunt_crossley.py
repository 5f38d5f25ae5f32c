"""An imported OpenSim HuntCrossleyForce is Simbody's, friction included, against OpenSim 4.6 itself.

Simbody applies the force at the plane point moved into the overlap by δ k'_sphere/(k'_sphere + k'_plane) and
takes the slip velocity of the sphere's material point there. Two oracles:

- the force and torque OpenSim reports on the sphere's body (`HuntCrossleyForce.getRecordValues`) at 48 states of a
  ball on a six-coordinate CustomJoint (a spinning ball, its sphere off the body origin, a tilted half-space, the
  two surfaces with different parameters): penetrations 1e-4 … 5e-3 m, approach rates from separating fast to
  approaching, slip below and beyond the transition velocity, spin alone and with slip;
- OpenSim's Manager on WalkerModel (opensim-models: feet, knees and hips on a tilted platform, friction on), a fall
  from its default pose for 0.5 s, both integrators at 1e-10.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from opensim_oracle import import_opensim

osim = import_opensim()

import biobullet  # noqa: E402
from biobullet.contact.element import contact_elements  # noqa: E402

HERE = Path(__file__).resolve().parents[1]
BALL = HERE / "unit" / "opensim" / "ball_on_ground.osim"
WALKER = HERE / "data" / "osim_unseen" / "WalkerModel.osim"
CENTRE = np.array([0.01, -0.02, 0.005])   # the sphere's centre in the ball's frame
RADIUS = 0.1

#: the ball's three rotations (rotation1–3 of its CustomJoint) as coordinates, u = q̇
ROTATION = """<TransformAxis name="{axis}">
    <coordinates>{name}</coordinates><axis>{direction}</axis>
    <LinearFunction name="function"><coefficients> 1 0</coefficients></LinearFunction></TransformAxis>"""


def _spinning_ball(tmp_path: Path) -> Path:
    """ball_on_ground.osim with its three rotations free and its half-space tilted (0.3 rad about x)."""
    text = BALL.read_text()
    for axis, name, direction in (("rotation1", "ball_rx", "1 0 0"), ("rotation2", "ball_ry", "0 1 0"),
                                  ("rotation3", "ball_rz", "0 0 1")):
        text, count = re.subn(rf'<TransformAxis name="{axis}">.*?</TransformAxis>',
                              ROTATION.format(axis=axis, name=name, direction=direction), text, flags=re.S)
        assert count == 1
        text = text.replace("<coordinates>\n", f'<coordinates>\n<Coordinate name="{name}"><range>-10 10</range>'
                            "</Coordinate>\n", 1)
    text = text.replace("<orientation>0 0 -1.5707963267948966</orientation>",
                        "<orientation>0.3 0 -1.5707963267948966</orientation>")
    path = tmp_path / "spinning_ball.osim"
    path.write_text(text)
    return path


def _vec(values) -> np.ndarray:
    return np.array([values.get(i) for i in range(3)])


class BallStates:
    """The spinning ball in OpenSim: `place(δ, δ̇, slip, spin)` sets a state δ [m] into the tilted half-space
    (OpenSim's own placement of the sphere and the plane), the centre approaching at δ̇ [m/s] and slipping at
    `slip` [m/s] along the plane, the rotations turning at `spin` × (3, −2, 4) rad/s, and gives (q, v) in the
    model's coordinate order with OpenSim's force and torque on the ball (about its origin, ground axes), q̈, the
    ball's origin and the plane's normal."""

    def __init__(self, path: Path, names: tuple[str, ...]) -> None:
        self.model = osim.Model(str(path))
        self.state = self.model.initSystem()
        self.force = self.model.getForceSet().get("contact")
        self.ball = self.model.getBodySet().get("ball")
        self.floor = self.model.getContactGeometrySet().get("floor")
        self.coordinates = {c.getName(): c for c in self.model.getCoordinateSet()}
        self.names = names

    def _set(self, values: dict, rates: dict) -> None:
        for name in self.names:
            self.coordinates[name].setValue(self.state, values[name], False)
            self.coordinates[name].setSpeedValue(self.state, rates[name])

    def place(self, delta: float, delta_dot: float, slip: float, spin: float):
        values = {"ball_rx": 0.3, "ball_ry": -0.2, "ball_rz": 0.5, "ball_tx": 0.2, "ball_ty": 0.0, "ball_tz": -0.1}
        self._set(values, dict.fromkeys(values, 0.0))
        self.model.realizePosition(self.state)
        plane = self.floor.getFrame().getTransformInGround(self.state).compose(self.floor.getTransform())
        normal = -np.array([plane.R().get(i, 0) for i in range(3)])   # out of the half-space (its +x side)
        centre = _vec(self.ball.findStationLocationInGround(self.state, osim.Vec3(*CENTRE)))
        # ty moves the centre along ground y: chosen for the penetration δ
        values["ball_ty"] = (normal @ _vec(plane.p()) + RADIUS - normal @ centre - delta) / normal[1]
        tangent = np.cross(normal, [0.0, 0.0, 1.0])
        velocity = -delta_dot * normal + slip * tangent / np.linalg.norm(tangent)
        rates = {"ball_rx": 3.0 * spin, "ball_ry": -2.0 * spin, "ball_rz": 4.0 * spin,
                 "ball_tx": velocity[0], "ball_ty": velocity[1], "ball_tz": velocity[2]}
        self._set(values, rates)
        self.model.realizeAcceleration(self.state)
        record = self.force.getRecordValues(self.state)
        return (np.array([values[n] for n in self.names]), np.array([rates[n] for n in self.names]),
                np.array([record.get(i) for i in range(3)]), np.array([record.get(i) for i in range(3, 6)]),
                np.array([self.coordinates[n].getAccelerationValue(self.state) for n in self.names]),
                _vec(self.ball.getPositionInGround(self.state)), normal)


def test_the_force_on_the_body_is_opensims_at_48_contact_states(tmp_path):
    """Force and torque (about the body origin) on the ball: 3 penetrations × 4 approach rates (−1.5 m/s separates
    faster than 1/(1.5 c) = 1.01 m/s: OpenSim 4.6 applies no force at all there, friction included — Simbody's
    source scales friction with the unclipped normal force, which would push along the slip, but OpenSim's own
    force and q̈ are those of the clipped one) × 4 motions (slip 0.02 m/s, below the transition velocity 0.05;
    slip 0.3 m/s; spin (3, −2, 4) rad/s alone, whose slip at the point depends on where the point is; both): 36
    states in contact. The same closed-form law on the same point: the bound is 1e-10 of the force (the round-off
    of δ from positions of 0.3 m is ≤ 1e-12 relative at δ = 1e-4). Two of our paths: `Contact.kinematics` +
    `Contact.forces` (the engine's Python path, whose force on the body is compared) and the compiled
    ground-contact kernel of the bridge and the pipeline (`GroundContacts`: its generalized force, through M⁻¹,
    against OpenSim's q̈ with only the contact and gravity on, ≤ 1e-10 relative). With the force at the sphere's
    deepest point (the code before) the first state's torque is 7e-6 N·m off (1e-4 of |F| · 0.2 m)."""
    from biobullet.contact.kernels import GroundContacts
    path = _spinning_ball(tmp_path)
    model = biobullet.load_model(str(path))
    (contact,) = contact_elements(model)
    compiled = GroundContacts(model, [contact])
    states = BallStates(path, model.coordinate_names)
    checked = 0
    for delta in (1e-4, 1e-3, 5e-3):
        for delta_dot in (-1.5, -0.3, 0.0, 0.4):
            for slip, spin in ((0.02, 0.0), (0.3, 0.0), (0.0, 1.0), (0.1, 1.0)):
                q, v, expected_force, expected_torque, expected_a, body_origin, _ = states.place(delta, delta_dot,
                                                                                                 slip, spin)
                x, x_dot, _, _ = model.joint_state(q, v)
                kin = contact.kinematics(model, x, x_dot)
                assert abs(kin.delta - delta) <= 1e-12   # (δ̇: the rate set, and the spin moves the off-body centre)
                fn, ft, _ = contact.forces(kin)
                ours = fn * kin.normal + ft
                scale = np.linalg.norm(expected_force)
                assert (scale == 0.0) == (delta_dot == -1.5)
                assert np.abs(ours - expected_force).max() <= 1e-10 * scale, (delta, delta_dot, slip, spin)
                assert np.abs(np.cross(kin.point - body_origin, ours) - expected_torque).max() <= 1e-10 * scale * 0.2

                compiled.state[:] = 0.0   # out of contact before: this call's onset
                tau = np.zeros(model.n_tangent)
                assert compiled.step(x, x_dot, 0.0, 0.0, tau) == 1
                a = model.forward_dynamics(q, v, model.generalized_forces(tau, q))
                assert np.linalg.norm(a - expected_a) <= 1e-10 * np.linalg.norm(expected_a)
                checked += scale > 0.0
    assert checked == 36


def test_the_bridge_applies_opensims_force_on_the_spinning_ball(tmp_path):
    """The bridge's contact step (PyBullet's state, the compiled ground-contact kernel) at 4 states, sliding or
    spinning, approaching or separating: the force it applies (normal along the plane's normal + friction) and its
    torque about the ball's origin at the point it reports equal OpenSim's to 1e-10 of the force."""
    pytest.importorskip("pybullet", reason="the bridge needs PyBullet")
    import warnings
    from biobullet.bridge import Bridge
    path = _spinning_ball(tmp_path)
    model = biobullet.load_model(str(path))
    states = BallStates(path, model.coordinate_names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the stiff contact's explicit step limit at this dt is named, not used
        with Bridge(model, dt=1e-4) as bridge:
            for delta_dot, slip, spin in ((-0.3, 0.3, 0.0), (0.4, 0.1, 1.0), (0.0, 0.0, 1.0), (-0.3, 0.02, 1.0)):
                q, v, expected_force, expected_torque, _, body_origin, normal = states.place(2e-3, delta_dot, slip,
                                                                                             spin)
                bridge.reset(q, v)
                bridge.apply()
                (applied,) = bridge.contacts.forces().values()
                ours = applied.normal * normal + applied.friction
                scale = np.linalg.norm(expected_force)
                assert np.abs(ours - expected_force).max() <= 1e-10 * scale
                assert np.abs(np.cross(applied.point - body_origin, ours) - expected_torque).max() <= \
                    1e-10 * scale * 0.2


def test_walkers_fall_with_friction_follows_opensims_manager():
    """WalkerModel from its default pose (one hip at 60°) falls onto its tilted platform and slides, its six
    spheres (5 cm, k = 1e6, c = 1, friction 0.8 / 0.4 / 0.4) on the platform's half-space, with the file's knee and
    hip limit torques: OpenSim's Manager (accuracy 1e-10) against the reference engine (rtol 1e-10, atol 1e-12).
    Observed 1.1e-10 rad after 0.1 s and 5.0e-9 rad after 0.5 s; bound 1e-7 rad (the two integrators' error through
    the impacts and stick–slip: with both at 1e-12 the gap is 2.6e-13 and 3.2e-11 rad). With the force at the sphere's deepest point the two parted by 3e-2 rad after
    0.1 s and 0.18 rad after 0.5 s."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # the walker's impossible inertias, kept as OpenSim keeps them
        model = biobullet.load_model(str(WALKER))
    reference = osim.Model(str(WALKER))
    state = reference.initSystem()
    coordinates = {c.getName(): c for c in reference.getCoordinateSet()}
    names = model.coordinate_names
    q0 = np.array([coordinates[n].getValue(state) for n in names])
    manager = osim.Manager(reference)
    manager.setIntegratorAccuracy(1e-10)
    state.setTime(0.0)
    manager.initialize(state)
    expected = []
    for t in (0.1, 0.5):
        end = manager.integrate(t)
        expected.append([coordinates[n].getValue(end) for n in names])
    run = biobullet.simulate(model, 0.5, initial=(q0, np.zeros(len(names))), rtol=1e-10, atol=1e-12,
                             t_eval=[0.0, 0.1, 0.5], progress=False)
    assert np.abs(run.q[2] - q0).max() > 0.1          # it fell
    assert np.abs(run.q[1:] - np.array(expected)).max() <= 1e-7
