"""The drop on the PyBullet bridge (dt = 1e-4 s) against the reference engine (rtol 1e-9).

Run with PyBullet's geometry queries (the default: against a query plane the bridge creates, and against a plane
the user loaded and passed as `ground_body`) and with the analytic geometry. Tolerances come from the bridge's step-granular onset (≤ one step
late) and PyBullet's semi-implicit Euler (first order): seen 4e-5 s, 1.2e-3 in e, 0.1 % in peak force and
impulse, 6e-5 m in height; checked at about 2–4×. Both geometries give the same δ to round-off (sphere–plane,
see test_bridge_contact_geometry), so the tolerances are the same.
"""
from __future__ import annotations

import numpy as np
import pytest

pybullet = pytest.importorskip("pybullet")

from biobullet.bridge.bridge import Bridge  # noqa: E402
from biobullet.contact.element import contact_intervals  # noqa: E402
from biobullet.contact.testbed import drop_urdf  # noqa: E402
from biobullet.loader import load_text  # noqa: E402
from biobullet.integrate import simulate  # noqa: E402

DT, Z0, T = 1e-4, 0.1, 0.5
STEPS = int(round(T / DT))


@pytest.fixture(scope="module")
def drop(tmp_path_factory):
    model = load_text(drop_urdf({"normal_law": "hunt_crossley", "stiffness": "1e5", "restitution": "0.8"}),
                      tmp_path_factory.mktemp("drop"))
    reference = simulate(model, T, initial={"drop": Z0}, progress=False, t_eval=np.linspace(0.0, T, STEPS + 1))
    return model, reference


@pytest.mark.parametrize("geometry, user_plane", [("pybullet", False), ("pybullet", True), ("analytic", True),
                                                   (None, False)])
def test_drop_on_bridge_matches_reference(drop, geometry, user_plane):
    """geometry None: the default — the file's plane analytic, in the compiled ground call (contact.kernels)."""
    model, reference = drop
    client = pybullet.connect(pybullet.DIRECT)
    try:
        plane = None
        if user_plane:   # the user's plane stands for the file's ground (ground_body): PyBullet's rigid contact off
            plane = pybullet.createMultiBody(0, pybullet.createCollisionShape(pybullet.GEOM_PLANE,
                                                                              physicsClientId=client),
                                             physicsClientId=client)
        with Bridge(model, client, dt=DT, initial={"drop": Z0}, ground_body=plane,
                    contact_geometry=geometry) as bridge:
            contacts = bridge.contacts
            assert contacts.geometry_of("C") == (geometry or "analytic")
            assert len(contacts.ground_bodies) == (0 if user_plane or geometry is None else 1)
            heights = [bridge.state()[1][0]]
            for _ in range(STEPS):
                bridge.step()
                heights.append(bridge.state()[1][0])
            got = contacts.intervals()
    finally:
        pybullet.disconnect(client)
    expected = contact_intervals(reference)
    assert len(got) == len(expected) == 3
    for a, b in zip(expected, got):
        assert abs(a["start"] - b["start"]) <= 2 * DT
        assert abs(a["restitution"] - b["restitution"]) <= 3e-3
        assert b["peak_force"] == pytest.approx(a["peak_force"], rel=5e-3)
        assert b["impulse"] == pytest.approx(a["impulse"], rel=2e-3)
    assert np.max(np.abs(np.array(heights) - reference.column("drop"))) <= 2e-4
