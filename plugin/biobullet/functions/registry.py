"""Registry of joint-function types, keyed by the `type` attribute.

Third-party packages add types through the entry-point group ``biobullet.joint_functions``
(name = type, value = a JointFunction subclass). Entry points are read lazily, on first lookup.
"""
from __future__ import annotations

from importlib import metadata

from .base import JointFunction

ENTRY_POINT_GROUP = "biobullet.joint_functions"
_registry: dict[str, type[JointFunction]] = {}
_entry_points_loaded = False


def register(cls: type[JointFunction]) -> type[JointFunction]:
    """Class decorator: register a JointFunction subclass under its `type_name`."""
    if not cls.type_name:
        raise ValueError(f"{cls.__name__} has no type_name")
    _registry[cls.type_name] = cls
    return cls


def _load_builtin_and_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    from . import builtin  # noqa: F401  (registers the built-in types)
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        cls = ep.load()
        if not (isinstance(cls, type) and issubclass(cls, JointFunction)):
            raise TypeError(f"entry point {ep.name} in {ENTRY_POINT_GROUP} is not a JointFunction subclass")
        _registry.setdefault(ep.name, cls)
    _entry_points_loaded = True


def get(type_name: str) -> type[JointFunction] | None:
    _load_builtin_and_entry_points()
    return _registry.get(type_name)


def names() -> list[str]:
    _load_builtin_and_entry_points()
    return sorted(_registry)
