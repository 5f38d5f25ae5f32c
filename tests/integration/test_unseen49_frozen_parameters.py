"""A loaded model's element parameters are read-only: assigning one raises one clear error.

The defect (merge 12ca69e): assigning a parameter of a loaded model's element was accepted silently and then taken
by some paths and ignored by others. Measured on a 2-link chain (gravity 9.81 along +x, j1 started at 0.3 rad,
0.2 s) with the change made after a first `simulate` / `Bridge.step`, against a model loaded with the new value:

    joint_spring stiffness 2 → 50 N·m/rad     simulate j1: −0.226889 (= fresh)   Bridge.step j1: 0.112208 (fresh −0.225485)
    joint_stop upper 1 → 0.1 rad              simulate j1: −0.734985 (= fresh)   Bridge.step j1: 0.169468 (fresh −0.720004)
    joint_torque value 1 → 5 N·m              simulate j1:  0.673577 (= fresh)   Bridge.step j1: 0.287840 (fresh  0.674522)
    contact (hunt_crossley) stiffness 1e5 → 1e3 N/m^1.5, ball dropped from 0.06 m, 0.1 s:
                                              simulate z: 0.013822 (= fresh)     Bridge.step z: 0.052729 (fresh 0.013782)

The bridge packs the parameters once at `Bridge(model)` and kept the old value (its runs equal the unchanged
model's: 0.112208, 0.169468, 0.287840, 0.052729), while `simulate` and `generalized_force` took the new one: two
paths, two answers, no word. The documented contract (`ForceElement`, `ContactLaw`, `JointFunction`: "immutable
after construction") is now enforced: `FrozenParameterError` (a ModelError and an AttributeError) names the
element and the attribute and says what to do instead; the value stays the file's, which the closed forms below
check.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from biobullet import load_model
from biobullet.constraints.loops import parse_loops
from biobullet.contact.element import contact_elements
from biobullet.core.errors import ModelError
from biobullet.core.frozen import FrozenParameterError
from biobullet.forces import ForceElement, JointSpring, add_force_element, force_elements
from engine_models import chain_urdf

ELEMENTS = (
    '<spring name="sp" link_a="base" xyz_a="0 0.1 0" link_b="l2" xyz_b="0.25 0 0" stiffness="30" rest_length="0.2"/>'
    '<joint_spring name="js" joint="j1" stiffness="2" rest="0.1" damping="0.5"/>'
    '<joint_torque name="tq" joint="j2" value="1.5"/>'
    '<joint_stop name="st" joint="j1" lower="-1" upper="1" stiffness="1e4" damping="0"/>'
    '<coordinate_limit name="cl" joint="j2" upper="90" upper_stiffness="10" lower="-90" lower_stiffness="10" '
    'damping="0.01" transition="5"/>'
    '<joint_spring joint="j2" stiffness="1"/><joint_spring joint="j2" stiffness="3"/>'   # two default names
    '<contact name="tip" link="l2" xyz="0.5 0 0" normal_law="hunt_crossley" stiffness="1e5" restitution="0.8" '
    'friction_law="regularized" mu="0.6" v0="1e-3"/>')
FUNCTION_LINKS = [(0.5, 1.0, 0.25, 0.01)] * 3
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = Path(tmp_path_factory.mktemp("frozen")) / "chain.urdf"
    path.write_text(chain_urdf([(0.5, 1.0, 0.25, 0.01)] * 2, extension=ELEMENTS))
    return load_model(path)


@pytest.fixture(scope="module")
def coupled(tmp_path_factory):
    path = Path(tmp_path_factory.mktemp("frozen_function")) / "coupled.urdf"
    path.write_text(chain_urdf(FUNCTION_LINKS, extension='<joint_function joint="j3" type="linear" inputs="j1" '
                                                         'coefficients="0.5" offset="0.2"/>'))
    return load_model(path)


def _element(model, name):
    return {e.name: e for e in force_elements(model) + contact_elements(model)}[name]


CASES = [  # (element name, what the error names, attribute, a new value)
    ("sp", '<spring name="sp"', "stiffness", 5.0),
    ("js", '<joint_spring name="js"', "stiffness", 50.0),
    ("js", '<joint_spring name="js"', "rest", 0.0),
    ("tq", '<joint_torque name="tq"', "value", 5.0),
    ("st", '<joint_stop name="st"', "upper", 0.1),
    ("cl", '<coordinate_limit name="cl"', "upper_stiffness", 1.0),
    ("tip", '<contact name="tip"', "radius", 0.1),
    ("tip", '<contact name="tip"', "normal_law", None),
]


@pytest.mark.parametrize("name, where, attribute, value", CASES, ids=[f"{c[0]}.{c[2]}" for c in CASES])
def test_assigning_an_element_parameter_raises_naming_element_and_attribute(model, name, where, attribute,
                                                                            value) -> None:
    element = _element(model, name)
    before = getattr(element, attribute)
    with pytest.raises(FrozenParameterError) as caught:
        setattr(element, attribute, value)
    assert isinstance(caught.value, ModelError) and isinstance(caught.value, AttributeError)
    text = str(caught.value)
    assert where in text and f"attribute '{attribute}'" in text, text
    assert "load it again" in text and "read-only" in text, text
    assert str(model.file) in text, text
    assert getattr(element, attribute) is before
    with pytest.raises(FrozenParameterError):
        delattr(element, attribute)


def test_contact_laws_joint_functions_and_loop_types_are_read_only(model, coupled) -> None:
    contact = _element(model, "tip")
    for law, attribute, where in ((contact.normal_law, "stiffness", 'normal law "hunt_crossley"'),
                                  (contact.friction_law, "mu", 'friction law "regularized"')):
        before = getattr(law, attribute)
        with pytest.raises(FrozenParameterError, match=f"{where}.*attribute '{attribute}'"):
            setattr(law, attribute, 1.0)
        assert getattr(law, attribute) == before
    assert (contact.normal_law.stiffness, contact.friction_law.mu) == (1e5, 0.6)   # the file's values
    function = coupled.description.joint_functions[0].function
    with pytest.raises(FrozenParameterError, match="<joint_function type=\"linear\" inputs=\"j1\">.*'offset'"):
        function.offset = 0.0
    assert function.value(np.array([0.4])) == pytest.approx(0.5 * 0.4 + 0.2, abs=1e-15)   # still the file's map
    knee_model = load_model(REPO / "urdf" / "fourbar_knee.urdf")
    knee = parse_loops(knee_model.description, knee_model.link_names)
    law = knee[0].law   # a planar loop: its plane basis is packed into the loop rows
    with pytest.raises(FrozenParameterError, match="<loop type=\"planar\">.*attribute 'basis'"):
        law.basis = np.eye(3)[:, :2]
    np.testing.assert_allclose(law.basis.T @ [0.0, 1.0, 0.0], 0.0, atol=1e-15)   # still ⟂ the file's normal 0 1 0


def test_refused_changes_leave_the_forces_of_the_file(model) -> None:
    """Closed forms with the file's parameters after refused assignments: τ_js = −k (θ − rest) − c θ̇ and the
    actuator's constant torque (no stop or limit acts at θ = 0.3, 0.2 rad)."""
    for name, attribute in (("js", "stiffness"), ("tq", "value")):
        with pytest.raises(FrozenParameterError):
            setattr(_element(model, name), attribute, 99.0)
    x, xd = np.array([0.3, 0.2]), np.array([0.4, 0.0])
    tau_js = _element(model, "js").generalized_force(model, x, xd, 0.0)
    tau_tq = _element(model, "tq").generalized_force(model, x, xd, 0.0)
    np.testing.assert_allclose(tau_js, [-2.0 * (0.3 - 0.1) - 0.5 * 0.4, 0.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(tau_tq, [0.0, 1.5], rtol=0, atol=0)


def test_default_names_are_numbered_and_third_party_elements_are_guarded_too(model) -> None:
    names = [e.name for e in force_elements(model) if e.tag == "joint_spring"]
    assert names == ["js", "joint_spring_j2", "joint_spring_j2_2"]   # the library's own setup still names them

    class Pusher(ForceElement):   # a third party's element, built and attached from Python
        tag = "pusher"

        def __init__(self, name: str, gain: float) -> None:
            super().__init__(name)
            self.gain = gain

        @classmethod
        def from_description(cls, model, element):
            raise NotImplementedError

        def generalized_force(self, model, x, xd, t, placements=None):
            self._calls = getattr(self, "_calls", 0) + 1   # its own private cache stays writable
            return -self.gain * np.asarray(xd, dtype=float)

    pusher = Pusher("push", 2.0)
    assert pusher.gain == 2.0
    with pytest.raises(FrozenParameterError, match="<pusher name=\"push\">.*attribute 'gain'"):
        pusher.gain = 3.0
    pusher.generalized_force(model, np.zeros(2), np.ones(2), 0.0)
    assert pusher._calls == 1
    spring = JointSpring("extra", "j2", 4.0)
    with pytest.raises(FrozenParameterError, match="'stiffness'"):
        spring.stiffness = 1.0
