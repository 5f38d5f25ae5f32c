"""Registries of normal and friction laws, keyed by the XML ``normal_law`` / ``friction_law`` names.

Third-party packages add laws through the entry-point groups ``biobullet.normal_laws`` and
``biobullet.friction_laws`` (name = law name, value = a NormalLaw / FrictionLaw subclass), read lazily on the
first lookup. Built-ins are registered when `normal` / `friction` are imported (also lazily, here).
"""
from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata
from typing import Any

from ..errors import SourceRef
from .base import FrictionLaw, NormalLaw, model_error

NORMAL_ENTRY_POINT_GROUP = "biobullet.normal_laws"
FRICTION_ENTRY_POINT_GROUP = "biobullet.friction_laws"

_normal: dict[str, type[NormalLaw]] = {}
_friction: dict[str, type[FrictionLaw]] = {}
_loaded = False


def register_normal_law(cls: type[NormalLaw]) -> type[NormalLaw]:
    """Class decorator: register a NormalLaw subclass under its `law_name`."""
    if not cls.law_name:
        raise ValueError(f"{cls.__name__} has no law_name")
    _normal[cls.law_name] = cls
    return cls


def register_friction_law(cls: type[FrictionLaw]) -> type[FrictionLaw]:
    """Class decorator: register a FrictionLaw subclass under its `law_name`."""
    if not cls.law_name:
        raise ValueError(f"{cls.__name__} has no law_name")
    _friction[cls.law_name] = cls
    return cls


def _load() -> None:
    global _loaded
    if _loaded:
        return
    from . import friction, normal  # noqa: F401  (register the built-ins)
    for group, table, base in ((NORMAL_ENTRY_POINT_GROUP, _normal, NormalLaw),
                               (FRICTION_ENTRY_POINT_GROUP, _friction, FrictionLaw)):
        for ep in metadata.entry_points(group=group):
            cls = ep.load()
            if not (isinstance(cls, type) and issubclass(cls, base)):
                raise TypeError(f"entry point {ep.name} in {group} is not a {base.__name__} subclass")
            table.setdefault(ep.name, cls)
    _loaded = True


def normal_law_names() -> list[str]:
    _load()
    return sorted(_normal)


def friction_law_names() -> list[str]:
    _load()
    return sorted(_friction)


def get_normal_law(name: str, source: SourceRef | None = None,
                   attribute: str = "normal_law") -> type[NormalLaw]:
    """The NormalLaw class registered as `name`; ModelError listing the known names otherwise."""
    _load()
    cls = _normal.get(str(name).strip())
    if cls is None:
        raise model_error(source, attribute, f"unknown normal law '{name}'",
                          "one of: " + ", ".join(sorted(_normal)))
    return cls


def get_friction_law(name: str, source: SourceRef | None = None,
                     attribute: str = "friction_law") -> type[FrictionLaw]:
    """The FrictionLaw class registered as `name`; ModelError listing the known names otherwise."""
    _load()
    cls = _friction.get(str(name).strip())
    if cls is None:
        raise model_error(source, attribute, f"unknown friction law '{name}'",
                          "one of: " + ", ".join(sorted(_friction)))
    return cls


def normal_law_from_attributes(attributes: Mapping[str, Any], source: SourceRef | None = None,
                               default: str | None = None) -> NormalLaw:
    """Build the normal law named by attribute ``normal_law`` (or `default` if absent)."""
    name = attributes.get("normal_law", default)
    if name is None:
        raise model_error(source, "normal_law", "missing attribute", "one of: " + ", ".join(normal_law_names()))
    return get_normal_law(name, source).from_attributes(attributes, source)


def friction_law_from_attributes(attributes: Mapping[str, Any], source: SourceRef | None = None,
                                 default: str | None = "none") -> FrictionLaw:
    """Build the friction law named by attribute ``friction_law`` (default ``none``)."""
    name = attributes.get("friction_law", default)
    if name is None:
        raise model_error(source, "friction_law", "missing attribute",
                          "one of: " + ", ".join(friction_law_names()))
    return get_friction_law(name, source).from_attributes(attributes, source)
