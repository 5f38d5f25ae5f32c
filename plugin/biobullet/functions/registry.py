"""Registry of joint-function types, keyed by the `type` attribute.

Third-party packages add types through the entry-point group ``biobullet.joint_functions``
(name = type, value = a JointFunction subclass). Entry points are read lazily, on first lookup
(`biobullet.core.plugins.PluginRegistry`).
"""
from __future__ import annotations

from collections.abc import Mapping

from biobullet.core.errors import SourceRef, did_you_mean
from biobullet.core.plugins import PluginRegistry
from biobullet.functions.base import JointFunction

ENTRY_POINT_GROUP = "biobullet.joint_functions"


def _builtins() -> None:
    from biobullet.functions import expression, fourier, linear, natural_spline, polynomial, spline  # noqa: F401


JOINT_FUNCTIONS: PluginRegistry[type[JointFunction]] = PluginRegistry(
    "joint-function type", JointFunction, ENTRY_POINT_GROUP, _builtins)


#: class decorator: register a JointFunction subclass under its `type_name`
register = JOINT_FUNCTIONS.decorator("type_name")
get, names = JOINT_FUNCTIONS.get, JOINT_FUNCTIONS.names


def time_function(source: SourceRef, attributes: Mapping[str, str], what: str) -> JointFunction:
    """The joint function of time only that `attributes["type"]` names (its other attributes as for a
    `<joint_function>`): `source.error` for an unknown type, for inputs, or for a type that needs inputs; `what`
    says in the message what is a function of time only ("a joint torque")."""
    type_name = attributes.get("type", "")
    function_class = get(type_name)
    if function_class is None:
        raise source.error("type", f"unknown function type {type_name!r}{did_you_mean(type_name, names())}",
                           "one of " + ", ".join(names()))
    if attributes.get("inputs", "").strip():
        raise source.error("inputs", f"{what} is a function of time only", "no inputs")
    function = function_class.from_attributes(attributes, (), source)
    if function.inputs:
        raise source.error("type", f"function type {type_name!r} needs inputs", "a time function (e.g. fourier)")
    return function
