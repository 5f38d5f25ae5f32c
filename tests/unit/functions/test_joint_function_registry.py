"""Registry lookup of the built-in types and third-party registration (decorator and entry point)."""
from __future__ import annotations

from importlib import metadata
from types import SimpleNamespace
from typing import ClassVar

import numpy as np
import pytest

from biobullet.core import plugins
from biobullet.core.errors import SourceRef
from biobullet.core.plugins import PluginError
from biobullet.functions import JointFunction, check_derivatives, get, names, register, registry
from biobullet.functions.linear import LinearFunction

SRC = SourceRef("test.urdf", '<joint_function joint="J">')


@pytest.fixture()
def clean_registry(monkeypatch: pytest.MonkeyPatch):
    """Let a test add types without leaking them into other tests."""
    get("linear")  # make sure the built-ins are in before the snapshot
    monkeypatch.setattr(registry.JOINT_FUNCTIONS, "_table", dict(registry.JOINT_FUNCTIONS._table))
    yield registry


def test_builtin_types_are_registered() -> None:
    assert {"linear", "polynomial", "spline", "fourier", "expression"} <= set(names())
    for type_name in ("linear", "polynomial", "spline", "fourier", "expression"):
        cls = get(type_name)
        assert issubclass(cls, JointFunction) and cls.type_name == type_name
    assert get("linear") is LinearFunction
    assert get("no_such_type") is None


class Quadratic(JointFunction):
    """A third-party type: θ = k x² (k from the attribute 'gain')."""

    type_name: ClassVar[str] = "thirdparty_quadratic"
    attributes: ClassVar[tuple[str, ...]] = ("gain",)

    def __init__(self, inputs, gain: float) -> None:
        super().__init__(inputs)
        self.gain = gain

    @classmethod
    def from_attributes(cls, attributes, inputs, source):
        return cls(inputs, float(attributes["gain"]))

    def evaluate(self, x, t):
        return self.gain * x[0] ** 2, np.array([2 * self.gain * x[0], 0.0]), np.diag([2 * self.gain, 0.0])


def test_register_decorator_adds_a_third_party_type(clean_registry) -> None:
    assert register(Quadratic) is Quadratic
    cls = get("thirdparty_quadratic")
    assert cls is Quadratic and "thirdparty_quadratic" in names()
    f = cls.from_attributes({"joint": "J", "type": "thirdparty_quadratic", "gain": "3"}, ("A",), SRC)
    assert f.value(np.array([2.0])) == 12.0
    assert check_derivatives(f, [0.7]).ok


def test_register_requires_a_type_name() -> None:
    class Nameless(Quadratic):
        type_name: ClassVar[str] = ""

    with pytest.raises(ValueError):
        register(Nameless)


def test_entry_point_registration(clean_registry, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real EntryPoint object, loaded the way an installed third-party package would be.
    ep = metadata.EntryPoint(name="aliased_linear", value="biobullet.functions.linear:LinearFunction",
                             group=registry.ENTRY_POINT_GROUP)
    calls = []

    def fake_entry_points(group: str):
        calls.append(group)
        return [ep]

    monkeypatch.setattr(plugins, "metadata", SimpleNamespace(entry_points=fake_entry_points))
    monkeypatch.setattr(registry.JOINT_FUNCTIONS, "_loaded", False)
    assert get("aliased_linear") is LinearFunction
    assert calls == [registry.ENTRY_POINT_GROUP]


def test_entry_point_that_is_not_a_joint_function_is_refused(clean_registry, monkeypatch) -> None:
    ep = metadata.EntryPoint(name="bogus", value="math:sqrt", group=registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(plugins, "metadata", SimpleNamespace(entry_points=lambda group: [ep]))
    monkeypatch.setattr(registry.JOINT_FUNCTIONS, "_loaded", False)
    with pytest.raises(PluginError, match="bogus.*not a JointFunction subclass"):
        get("bogus")
