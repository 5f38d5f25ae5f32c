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


#: class decorator: register a JointFunction subclass under its `type_name`
register = JOINT_FUNCTIONS.decorator("type_name")
get, names = JOINT_FUNCTIONS.get, JOINT_FUNCTIONS.names
