"""The `<contact>` element: attribute errors, geometry and Jacobian-transpose forces, the engine hooks."""
from __future__ import annotations

import numpy as np
import pytest

from biobullet.contact.element import Contact, contact_elements, law_potential
from biobullet.contact.normal import Hertz, KelvinVoigtSmooth
from biobullet.contact.testbed import drop_urdf
from biobullet.loader import load_text
from biobullet.core.errors import ModelError
from biobullet.integrate import Event

HC = {"normal_law": "hunt_crossley", "stiffness": "1e6", "restitution": "0.8"}


def build(tmp_path, attributes):
    return contact_elements(load_text(drop_urdf(attributes), tmp_path))


@pytest.mark.parametrize("attributes, attribute, words", [
    ({**HC, "normal_law": "bouncy"}, "normal_law", ["unknown normal law", "hunt_crossley", "hertz"]),
    ({**HC, "friction_law": "sticky"}, "friction_law", ["unknown friction law", "coulomb", "stribeck"]),
    ({"normal_law": "hunt_crossley", "restitution": "0.8"}, "stiffness", ["missing"]),
    ({**HC, "restitution": "1.5"}, "restitution", ["[0.01, 1]"]),
    ({**HC, "restitution": "0"}, "restitution", ["[0.01, 1]"]),
    ({**HC, "stiffness": "-1"}, "stiffness", ["positive"]),
    ({**HC, "radius": "-0.1"}, "radius", ["negative"]),
    ({**HC, "friction_law": "coulomb"}, "mu", ["missing"]),
    ({**HC, "mu": "0.5"}, "mu", ["not used"]),
    ({**HC, "ground": "sphere"}, "ground", ["plane"]),
    ({**HC, "ground_normal": "0 0 0"}, "ground_normal", ["zero"]),
    ({"stiffness": "1e6"}, "normal_law", ["missing"]),
])
def test_bad_contact_data_names_file_element_attribute(tmp_path, attributes, attribute, words):
    with pytest.raises(ModelError) as info:
        build(tmp_path, attributes)
    error = info.value
    assert error.attribute == attribute and error.file and "contact" in (error.element or "")
    for word in words:
        assert word in str(error)


def test_forces_are_jacobian_transpose_of_potential_gradient(tmp_path):
    """Elastic part: τ = −∂V/∂q (central differences), and δ, δ̇ of the sphere on a tilted plane."""
    attributes = {"normal_law": "hertz", "stiffness": "1e5", "ground_normal": "0 0.6 0.8", "ground_height": "0.1"}
    model = load_text(drop_urdf(attributes, radius=0.05), tmp_path)
    contact = contact_elements(model)[0]
    q = np.array([0.1])
    kin = contact.kinematics(model, q, np.array([-0.3]))
    assert kin.delta == pytest.approx(0.1 + 0.05 - 0.8 * 0.1)
    assert kin.delta_dot == pytest.approx(0.8 * 0.3)
    np.testing.assert_allclose(kin.slip, -0.3 * (np.array([0, 0, 1.0]) - 0.8 * np.array([0, 0.6, 0.8])))
    tau = contact.generalized_force(model, q, np.zeros(1), 0.0)
    h = 1e-7
    grad = (contact.potential_energy(model, q + h) - contact.potential_energy(model, q - h)) / (2 * h)
    assert tau[0] == pytest.approx(-grad, rel=1e-6)


def test_law_potential_integrates_the_static_force():
    from scipy.integrate import quad
    for law in (Hertz(stiffness=2e5, exponent=1.5), KelvinVoigtSmooth(stiffness=1e5, damping=10, smoothing=1e4)):
        for delta in (1e-4, 3e-3):
            reference = quad(lambda s: law.force(s, 0.0), 0.0, delta, epsabs=0, epsrel=1e-12, limit=200)[0]
            assert law_potential(law, delta) == pytest.approx(reference, rel=1e-9)


def test_run_copies_carry_separate_state(tmp_path):
    model = load_text(drop_urdf(HC), tmp_path)
    template = contact_elements(model)[0]
    a, b = template.for_run(model), template.for_run(model)
    assert template.state is None and a.state is not b.state
    a.start_run(model, 0.0, np.array([0.04]), np.array([0.0]))   # radius 0.05: in contact at rest
    assert a.state.active and a.state.intervals[0].initial and not b.state.intervals
    names = [e.name for e in a.events(model)]
    assert names[0] == "C:touch"


def test_event_action_needs_restart():
    with pytest.raises(ValueError):
        Event("e", lambda t, x, xd: 0.0, action=lambda t, x, xd: None)
    assert isinstance(Contact, type)
