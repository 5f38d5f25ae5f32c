"""The plugin registries of every family (joint functions, force elements, normal and friction laws, loop types) share
`biobullet.core.plugins.PluginRegistry`: built-ins present, third-party classes from entry points (real EntryPoint
objects), and one PluginError naming the entry point when a plugin cannot be imported or has the wrong type."""
from __future__ import annotations

from importlib import metadata
from types import SimpleNamespace

import pytest

from biobullet.core import plugins
from biobullet.contact.base import FrictionLaw, NormalLaw
from biobullet.constraints.loop_types import LOOP_TYPES, LoopType
from biobullet.contact.registry import FRICTION_LAWS, NORMAL_LAWS
from biobullet.forces.base import FORCE_ELEMENTS, ForceElement
from biobullet.functions.base import JointFunction
from biobullet.functions.registry import JOINT_FUNCTIONS
from biobullet.core.plugins import PluginError

FAMILIES = {
    "joint functions": (JOINT_FUNCTIONS, JointFunction, {"linear", "polynomial", "spline", "fourier", "expression"},
                        "biobullet.functions.linear:LinearFunction"),
    "force elements": (FORCE_ELEMENTS, ForceElement, {"spring", "joint_spring", "joint_torque", "joint_stop"},
                       "biobullet.forces.elements:Spring"),
    "normal laws": (NORMAL_LAWS, NormalLaw, {"kelvin_voigt", "hunt_crossley", "hu_guo", "flores", "hertz"},
                    "biobullet.contact.normal:HuntCrossley"),
    "friction laws": (FRICTION_LAWS, FrictionLaw, {"none", "coulomb", "regularized", "ambrosio", "stribeck"},
                      "biobullet.contact.friction:Coulomb"),
    "loop types": (LOOP_TYPES, LoopType, {"point", "planar", "revolute"},
                   "biobullet.constraints.loop_types:PlanarLoop"),
}


@pytest.fixture(params=list(FAMILIES))
def family(request, monkeypatch):
    registry, base, builtins, target = FAMILIES[request.param]
    registry.load()
    monkeypatch.setattr(registry, "_table", dict(registry._table))   # nothing leaks into other tests

    def with_entry_points(*eps):
        monkeypatch.setattr(plugins, "metadata", SimpleNamespace(entry_points=lambda group: [
            metadata.EntryPoint(name=name, value=value, group=group) for name, value in eps]))
        monkeypatch.setattr(registry, "_loaded", False)
    return registry, base, builtins, target, with_entry_points


def test_builtins_are_registered_as_subclasses_of_the_family_base(family):
    registry, base, builtins, _, _ = family
    assert builtins <= set(registry.names())
    assert all(isinstance(cls, type) and issubclass(cls, base) for cls in registry.classes())
    assert registry.get("no_such_plugin") is None


def test_an_entry_point_adds_a_class_under_its_name(family):
    registry, base, _, target, with_entry_points = family
    with_entry_points(("third_party_alias", target))
    cls = registry.get("third_party_alias")
    module, _, name = target.partition(":")
    assert cls is getattr(__import__(module, fromlist=[name]), name) and issubclass(cls, base)
    assert "third_party_alias" in registry.names()


def test_an_entry_point_that_cannot_be_imported_gives_one_clear_error(family):
    registry, _, _, _, with_entry_points = family
    with_entry_points(("broken", "no_such_package_xyz.module:Thing"))
    with pytest.raises(PluginError, match=r"entry point 'broken' = 'no_such_package_xyz.module:Thing' of group "
                                          r"'biobullet\.[a-z_]+' cannot be loaded: ModuleNotFoundError"):
        registry.get("anything")


def test_an_entry_point_of_the_wrong_type_is_refused(family):
    registry, base, _, _, with_entry_points = family
    with_entry_points(("bogus", "math:sqrt"))
    with pytest.raises(PluginError, match=f"'bogus' = 'math:sqrt' .* is not a {base.__name__} subclass"):
        registry.names()


def test_explicit_registration_wins_over_an_entry_point_of_the_same_name(family):
    registry, _, builtins, target, with_entry_points = family
    module, _, attr = target.partition(":")
    other = getattr(__import__(module, fromlist=[attr]), attr)
    name = next(n for n in sorted(builtins) if registry.get(n) is not other)
    before = registry.get(name)
    with_entry_points((name, target))
    assert registry.get(name) is before
