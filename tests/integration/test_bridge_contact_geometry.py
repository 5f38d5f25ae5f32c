"""Contact geometry on the PyBullet bridge from PyBullet's own queries (getClosestPoints) vs the analytic
sphere–plane geometry, and PyBullet's rigid contact being really off for contact links.

PyBullet (double precision) computes sphere–plane distances in closed form, so the queried δ, contact point and
normal agree with the analytic ones to round-off: checked to 1e-9 m (lengths, m/s) and 1e-12 (unit normal).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pybullet = pytest.importorskip("pybullet")

from biobullet.bridge.bridge import Bridge  # noqa: E402
from biobullet.contact.testbed import drop_urdf  # noqa: E402
from biobullet.loader import load_text  # noqa: E402

RADIUS = 0.05

# arm on a hinge (y axis); inertial frame offset and rotated (the collision frame PyBullet reports is relative to
# it); collision sphere and contact S off the link origin; tilted, lifted ground; a point contact P (no collision
# shape: analytic fallback)
ARM = """<robot name="arm">
  <link name="world"/>
  <link name="arm">
    <inertial><origin xyz="0.1 0.01 -0.02" rpy="0.3 0.2 0.1"/><mass value="2.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/></inertial>
    <collision><origin xyz="0.3 0.01 0.02"/><geometry><sphere radius="0.04"/></geometry></collision>
  </link>
  <joint name="hinge" type="revolute"><parent link="world"/><child link="arm"/><origin xyz="0 0 0.05"/>
    <axis xyz="0 1 0"/><limit lower="-10" upper="10" effort="1e9" velocity="1e9"/></joint>
  <biobullet version="1"><gravity xyz="0 0 -9.81"/>
    <contact name="S" link="arm" xyz="0.3 0.01 0.02" radius="0.04" ground_height="-0.1" ground_normal="0.2 0.1 1"
             normal_law="hunt_crossley" stiffness="1e5" restitution="0.8" friction_law="regularized" mu="0.5"
             v0="1e-3"/>
    <contact name="P" link="arm" xyz="0.35 0 0" ground_height="-0.1" ground_normal="0.2 0.1 1"
             normal_law="hertz" stiffness="1e5"/>
  </biobullet>
</robot>"""


def _drop(tmp_path, contact):
    return load_text(drop_urdf(contact, radius=RADIUS), tmp_path)


def test_queried_penetration_equals_sphere_plane(tmp_path):
    """Drop model: δ from getClosestPoints = r − z (plane z = 0) at several heights, in and out of contact."""
    model = _drop(tmp_path, {"normal_law": "hunt_crossley", "stiffness": "1e5", "restitution": "0.8"})
    with Bridge(model, dt=1e-4, initial={"drop": 0.2}) as bridge:   # default: the file's plane is analytic
        assert bridge.contacts.geometry_of("C") == "analytic" and bridge.contacts.ground_bodies == ()
    with Bridge(model, dt=1e-4, initial={"drop": 0.2}, contact_geometry="pybullet") as bridge:
        contacts = bridge.contacts
        assert contacts.geometry_of("C") == "pybullet"
        for z in (0.5, 0.2, 0.0500001, RADIUS, 0.0499999, 0.049, 0.03, 0.0, -0.3):
            bridge.reset(np.array([z]), np.array([-1.3]))
            (kin,) = contacts.kinematics()
            assert abs(kin.delta - (RADIUS - z)) <= 1e-9
            assert kin.delta_dot == pytest.approx(1.3, abs=1e-9)
            np.testing.assert_allclose(kin.normal, [0.0, 0.0, 1.0], atol=1e-12)
            np.testing.assert_allclose(kin.point, [0.0, 0.0, z - RADIUS], atol=1e-9)


def test_queried_kinematics_equal_analytic_on_tilted_ground(tmp_path):
    """Offset sphere on a rotating link, tilted ground: δ, δ̇, p, n, v_t, J_p equal the engine's analytic ones."""
    model = load_text(ARM, tmp_path, "arm.urdf")
    with pytest.warns(RuntimeWarning) as caught:
        bridge = Bridge(model, dt=1e-4, contact_geometry="pybullet")
    with bridge:
        contacts = bridge.contacts
        messages = [str(w.message) for w in caught if "analytic" in str(w.message)]
        assert len(messages) == 1 and "P (a point contact" in messages[0] and "S (" not in messages[0]
        assert contacts.geometry_of("S") == "pybullet" and contacts.geometry_of("P") == "analytic"
        sphere = contacts.contacts[0]
        deltas = []
        for angle in np.linspace(-1.2, 1.5, 10):
            bridge.reset(np.array([angle]), np.array([2.7]))
            _, x, xd = bridge.state()
            got = contacts.kinematics()[0]
            ref = sphere.kinematics(model, x, xd)
            deltas.append(ref.delta)
            assert abs(got.delta - ref.delta) <= 1e-9
            assert abs(got.delta_dot - ref.delta_dot) <= 1e-9
            np.testing.assert_allclose(got.normal, ref.normal, atol=1e-12)
            np.testing.assert_allclose(got.point, ref.point, atol=1e-9)
            np.testing.assert_allclose(got.slip, ref.slip, atol=1e-9)
            np.testing.assert_allclose(got.jacobian, ref.jacobian, atol=1e-9)
        assert min(deltas) < -0.1 and max(deltas) > 0.01   # the sweep covers both sides of the ground


def test_mismatched_collision_sphere_falls_back_with_one_warning(tmp_path):
    model = load_text(ARM.replace('radius="0.04" ground', 'radius="0.045" ground'), tmp_path, "arm.urdf")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridge = Bridge(model, dt=1e-4, contact_geometry="pybullet")
    with bridge:
        contacts = bridge.contacts
        fallback = [str(w.message) for w in caught if "analytic" in str(w.message)]
        assert len(fallback) == 1 and "S (collision sphere radius 0.04 m" in fallback[0]
        assert contacts.geometry_of("S") == contacts.geometry_of("P") == "analytic"
        assert contacts.ground_bodies == ()      # nothing to query: no plane created


@pytest.mark.parametrize("user_plane", [False, True])
def test_pybullet_rigid_contact_is_off(tmp_path, user_plane):
    """A ball with a tiny contact stiffness sinks through the ground; PyBullet's own contact would stop it.

    Hertz K = 1e-3 N/m^1.5: at δ ≤ 5 m the force is ≤ 0.012 N (weight 9.81 N), which moves a 1 kg ball by
    ≤ 0.5·0.012·1² = 6e-3 m in 1 s: the ball follows PyBullet's semi-implicit Euler free fall
    z_N = z0 − g dt² N(N+1)/2 to 6e-3 m (seen 5e-4 m). The control run (a plane the bridge leaves to
    PyBullet: scene_contacts=False) stays on the plane.
    """
    dt, steps, z0, g = 1e-3, 1000, 0.1, 9.81
    model = _drop(tmp_path, {"normal_law": "hertz", "stiffness": "1e-3"})
    p = pybullet
    c = p.connect(p.DIRECT)
    try:
        plane = None
        if user_plane:
            plane = p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE, physicsClientId=c), physicsClientId=c)
        with Bridge(model, c, dt=dt, initial={"drop": z0}, ground_body=plane,
                    contact_geometry="pybullet") as bridge:   # without a user plane: the bridge's query plane
            contacts = bridge.contacts
            (ground,) = (plane,) if user_plane else contacts.ground_bodies
            for _ in range(steps):
                bridge.step()
                assert p.getContactPoints(bridge.body, ground, physicsClientId=c) == ()
            z = bridge.state()[1][0]
            (interval,) = contacts.intervals()
    finally:
        p.disconnect(c)
    assert abs(z - (z0 - g * dt * dt * steps * (steps + 1) / 2)) <= 6e-3
    assert z < -4.0
    assert interval["max_penetration"] > 4.0 and interval["end"] is None
    assert interval["start"] == pytest.approx(np.sqrt(2 * (z0 - RADIUS) / g), abs=2 * dt)

    # control: a plane the bridge leaves to PyBullet (scene_contacts=False): PyBullet's rigid contact acts
    with Bridge(model, dt=dt, initial={"drop": z0}, scene_contacts=False) as bridge:
        p, c = pybullet, bridge.client
        p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE, physicsClientId=c), physicsClientId=c)
        for _ in range(steps):
            bridge.step()
        assert bridge.state()[1][0] == pytest.approx(RADIUS, abs=5e-3)
