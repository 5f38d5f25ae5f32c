"""One small registry class for every plugin family: joint functions, force elements, normal and friction laws.

A family maps names to subclasses of its base class. Built-in classes register themselves with a class decorator
when their module is imported; third-party packages add classes through the family's entry-point group
(name = the key, value = ``package.module:Class``). Both are loaded lazily, on the first lookup, so that importing
biobullet imports no plugin module. A broken third-party entry point gives one :class:`PluginError` that names
the group, the entry point and what is wrong — never a bare traceback from inside the plugin's import.
"""
from __future__ import annotations

from importlib import metadata
from typing import Callable, Generic, TypeVar

from biobullet.core.errors import BiobulletError

T = TypeVar("T", bound=type)


class PluginError(BiobulletError):
    """A third-party plugin (entry point) cannot be loaded or is not a subclass of its family's base class."""


class PluginRegistry(Generic[T]):
    """Name → class table of one plugin family.

    `builtins` imports the modules whose decorators register the built-in classes; `on_entry_point(cls, name)`
    (optional) adapts a class loaded from an entry point before it is added (e.g. gives it its tag). Names added
    explicitly win over entry points of the same name."""

    def __init__(self, family: str, base: type, group: str, builtins: Callable[[], None],
                 on_entry_point: Callable[[type, str], None] | None = None) -> None:
        self.family = family
        self.base = base
        self.group = group
        self._builtins = builtins
        self._on_entry_point = on_entry_point
        self._table: dict[str, T] = {}
        self._loaded = False

    def add(self, name: str, cls: T) -> T:
        """Register `cls` under `name` (replacing an earlier class of that name)."""
        if not name:
            raise ValueError(f"{cls.__name__}: a {self.family} needs a non-empty name")
        self._table[name] = cls
        return cls

    def decorator(self, attribute: str) -> Callable[[T], T]:
        """A class decorator registering its class under the class attribute `attribute` (`type_name`, …)."""
        return lambda cls: self.add(getattr(cls, attribute), cls)

    def get(self, name: str) -> T | None:
        """The class registered as `name`, or None."""
        self.load()
        return self._table.get(name)

    def names(self) -> list[str]:
        self.load()
        return sorted(self._table)

    def classes(self) -> list[T]:
        self.load()
        return list(self._table.values())

    def load(self) -> None:
        """Import the built-ins and read the entry-point group (once)."""
        if self._loaded:
            return
        self._builtins()
        for ep in metadata.entry_points(group=self.group):
            try:
                cls = ep.load()
            except Exception as exc:   # noqa: BLE001  (a third party's import error, reported with its origin)
                raise PluginError(f"entry point {ep.name!r} = {ep.value!r} of group {self.group!r} cannot be "
                                  f"loaded: {type(exc).__name__}: {exc}") from None
            if not (isinstance(cls, type) and issubclass(cls, self.base)):
                raise PluginError(f"entry point {ep.name!r} = {ep.value!r} of group {self.group!r} is not a "
                                  f"{self.base.__name__} subclass")
            if self._on_entry_point is not None:
                self._on_entry_point(cls, ep.name)
            self._table.setdefault(ep.name, cls)
        self._loaded = True


def entry_point_names(group: str) -> frozenset[str]:
    """The names declared in an entry-point group, without importing anything (broken metadata: none)."""
    try:
        return frozenset(ep.name for ep in metadata.entry_points(group=group))
    except Exception:  # noqa: BLE001  (another package's broken metadata must not break loading a model)
        return frozenset()


__all__ = ["PluginError", "PluginRegistry", "entry_point_names"]
