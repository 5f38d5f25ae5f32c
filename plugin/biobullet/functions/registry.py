"""Registry of joint-function types, keyed by the `type` attribute.

Third-party packages add types through the entry-point group ``biobullet.joint_functions``
(name = type, value = a JointFunction subclass). Entry points are read lazily, on first lookup
(`biobullet.core.plugins.PluginRegistry`).
"""
from __future__ import annotations

from biobullet.core.plugins import PluginRegistry
from biobullet.functions.base import JointFunction

ENTRY_POINT_GROUP = "biobullet.joint_functions"


def _builtins() -> None:
    from biobullet.functions import builtin  # noqa: F401  (registers the built-in types)


JOINT_FUNCTIONS: PluginRegistry[type[JointFunction]] = PluginRegistry(
    "joint-function type", JointFunction, ENTRY_POINT_GROUP, _builtins)


def register(cls: type[JointFunction]) -> type[JointFunction]:
    """Class decorator: register a JointFunction subclass under its `type_name`."""
    if not cls.type_name:
        raise ValueError(f"{cls.__name__} has no type_name")
    return JOINT_FUNCTIONS.add(cls.type_name, cls)


def get(type_name: str) -> type[JointFunction] | None:
    return JOINT_FUNCTIONS.get(type_name)


def names() -> list[str]:
    return JOINT_FUNCTIONS.names()
