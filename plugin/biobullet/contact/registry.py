"""Registries of normal and friction laws, keyed by the XML ``normal_law`` / ``friction_law`` names.

Third-party packages add laws through the entry-point groups ``biobullet.normal_laws`` and
``biobullet.friction_laws`` (name = law name, value = a NormalLaw / FrictionLaw subclass), read lazily on the
first lookup. Built-ins are registered when `normal` / `friction` are imported (also lazily, here).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from biobullet.core.errors import SourceRef, did_you_mean
from biobullet.core.plugins import PluginRegistry
from biobullet.contact.base import FrictionLaw, NormalLaw
from biobullet.core.attributes import error

NORMAL_ENTRY_POINT_GROUP = "biobullet.normal_laws"
FRICTION_ENTRY_POINT_GROUP = "biobullet.friction_laws"


def _builtins() -> None:
    from biobullet.contact import friction, normal  # noqa: F401  (register the built-ins)


NORMAL_LAWS: PluginRegistry[type[NormalLaw]] = PluginRegistry(
    "normal law", NormalLaw, NORMAL_ENTRY_POINT_GROUP, _builtins)
FRICTION_LAWS: PluginRegistry[type[FrictionLaw]] = PluginRegistry(
    "friction law", FrictionLaw, FRICTION_ENTRY_POINT_GROUP, _builtins)


#: class decorators: register a NormalLaw / FrictionLaw subclass under its `law_name`
register_normal_law = NORMAL_LAWS.decorator("law_name")
register_friction_law = FRICTION_LAWS.decorator("law_name")


def normal_law_names() -> list[str]:
    return NORMAL_LAWS.names()


def friction_law_names() -> list[str]:
    return FRICTION_LAWS.names()


def _lookup(registry: PluginRegistry, name: str, source: SourceRef | None, attribute: str):
    cls = registry.get(str(name).strip())
    if cls is None:
        raise error(source, attribute, f"unknown {registry.family} '{name}'{did_you_mean(name, registry.names())}",
                          "one of: " + ", ".join(registry.names()))
    return cls


def get_normal_law(name: str, source: SourceRef | None = None,
                   attribute: str = "normal_law") -> type[NormalLaw]:
    """The NormalLaw class registered as `name`; ModelError listing the known names otherwise."""
    return _lookup(NORMAL_LAWS, name, source, attribute)


def get_friction_law(name: str, source: SourceRef | None = None,
                     attribute: str = "friction_law") -> type[FrictionLaw]:
    """The FrictionLaw class registered as `name`; ModelError listing the known names otherwise."""
    return _lookup(FRICTION_LAWS, name, source, attribute)


def normal_law_from_attributes(attributes: Mapping[str, Any], source: SourceRef | None = None,
                               default: str | None = None) -> NormalLaw:
    """Build the normal law named by attribute ``normal_law`` (or `default` if absent)."""
    name = attributes.get("normal_law", default)
    if name is None:
        raise error(source, "normal_law", "missing attribute", "one of: " + ", ".join(normal_law_names()))
    return get_normal_law(name, source).from_attributes(attributes, source)


def friction_law_from_attributes(attributes: Mapping[str, Any], source: SourceRef | None = None,
                                 default: str | None = "none") -> FrictionLaw:
    """Build the friction law named by attribute ``friction_law`` (default ``none``)."""
    name = attributes.get("friction_law", default)
    if name is None:
        raise error(source, "friction_law", "missing attribute",
                          "one of: " + ", ".join(friction_law_names()))
    return get_friction_law(name, source).from_attributes(attributes, source)
