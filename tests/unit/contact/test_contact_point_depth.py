"""`point_depth` of the `opensim_hunt_crossley` law (Simbody's point of application, docs/opensim.md): the contact
point s δ below the plane on every path that places it — the contact kinematics, the compiled ground call on the
bridge's analytic plane, PyBullet's queried plane and a PyBullet scene body — against the closed form
p = (0, 0, z − r + (1 − s) δ), δ = r − z, of a ball of radius r at height z over the plane z = 0 (PyBullet's
sphere–plane distances are closed-form: 1e-9 m, as tests/integration/test_bridge_contact_geometry.py)."""
from __future__ import annotations

import numpy as np
import pytest

from biobullet.contact.element import contact_elements
from biobullet.contact.testbed import drop_urdf
from biobullet.core.errors import ModelError
from biobullet.loader import load_text

RADIUS, DEPTH = 0.05, 0.3
LAW = {"normal_law": "opensim_hunt_crossley", "stiffness": "1e5", "dissipation": "0.5", "point_depth": repr(DEPTH)}
HEIGHTS = (0.0499, 0.049, 0.045, 0.03)


def _expected(z: float) -> np.ndarray:
    return np.array([0.0, 0.0, z - RADIUS + (1.0 - DEPTH) * (RADIUS - z)])


def test_the_contact_kinematics_place_the_point_s_delta_below_the_plane(tmp_path):
    model = load_text(drop_urdf(LAW, radius=RADIUS), tmp_path)
    (contact,) = contact_elements(model)
    for z in HEIGHTS + (0.06,):
        x, xd, _, _ = model.joint_state(np.array([z]), np.array([-0.2]))
        kin = contact.kinematics(model, x, xd)
        expected = _expected(z) if z < RADIUS else np.array([0.0, 0.0, z - RADIUS])   # apart: the deepest point
        assert np.abs(kin.point - expected).max() <= 1e-15


@pytest.mark.parametrize("where", ["analytic", "pybullet", "scene"])
def test_the_bridge_places_the_point_as_the_kernel(tmp_path, where):
    pybullet = pytest.importorskip("pybullet")
    from biobullet.bridge.bridge import Bridge
    ground = {"ground_height": "-10"} if where == "scene" else {}   # the scene's plane only
    model = load_text(drop_urdf({**LAW, **ground}, radius=RADIUS), tmp_path)
    client = pybullet.connect(pybullet.DIRECT)
    try:
        if where == "scene":
            pybullet.createMultiBody(0, pybullet.createCollisionShape(pybullet.GEOM_PLANE, physicsClientId=client),
                                     physicsClientId=client)
        with Bridge(model, client, dt=1e-4, contact_geometry=None if where == "scene" else where) as bridge:
            for z in HEIGHTS:
                bridge.reset(np.array([z]), np.array([-0.2]))
                bridge.apply()
                (force,) = [f for f in bridge.contacts.forces().values() if (f.body is not None) == (where == "scene")]
                assert force.penetration == pytest.approx(RADIUS - z, abs=1e-9)
                assert np.abs(np.asarray(force.point) - _expected(z)).max() <= 1e-9
                bridge.step()
    finally:
        pybullet.disconnect(client)


def test_point_depth_is_the_opensim_laws_only(tmp_path):
    with pytest.raises(ModelError, match="point_depth"):
        load_text(drop_urdf({"normal_law": "hertz", "stiffness": "1e5", "point_depth": "0.3"}, radius=RADIUS),
                  tmp_path)


def test_an_elastic_chain_refuses_a_point_depth(tmp_path):
    """The elastic chain's contacts are its joint points (no sphere to lift): a point depth is one error, not
    silently ignored."""
    from pathlib import Path
    from biobullet.flexible.gibbs_appell import ElasticChain
    text = (Path(__file__).resolve().parents[3] / "urdf" / "elastic_robot_3link.urdf").read_text()
    assert text.count('normal_law="hu_guo"') == 4 and text.count(' restitution="0.8"') == 4
    bad = tmp_path / "chain.urdf"
    bad.write_text(text.replace('normal_law="hu_guo"', 'normal_law="opensim_hunt_crossley" dissipation="1" '
                                'point_depth="0.5"').replace(' restitution="0.8"', ''))
    with pytest.raises(ModelError) as info:
        ElasticChain.from_model_file(bad)
    assert info.value.attribute == "point_depth"
