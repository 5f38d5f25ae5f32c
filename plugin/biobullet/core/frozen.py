"""Parameters read-only after construction: the guard of the model's elements (force elements, contacts, contact
laws, joint functions, loop types).

The library packs an element's parameters once — the bridge at `Bridge(model)`, the compiled rows and
`Model.derived` at first use — while a Python-side `generalized_force` reads them on every call. A parameter
changed after load was therefore taken by some paths and silently ignored by others (a joint spring's stiffness
2 → 50 N·m/rad changed `simulate` and left `Bridge.step` on the old value). So assigning (or deleting) a public
attribute of a constructed element raises `FrozenParameterError`, which names the element and the attribute and
says what to do instead. Attributes whose names start with "_" stay writable: an element's own per-run caches.
A public numpy array attribute (a spring's attachment point, a contact's point, a Fourier function's coefficients;
also an array inside a tuple attribute, an expression function's `tape`) is replaced at freezing by a read-only
copy, so writing into it in place (`spring.xyz_b[0] = ...`) raises numpy's "assignment destination is read-only"
instead of reaching `simulate` and not a bridge built before; a copy or pickle of an element is frozen the same
way (`__setstate__`). Containers are locked the same way, to any depth: a list attribute becomes a tuple, a dict a
`ReadOnlyDict` (its writes raise FrozenParameterError), a NamedTuple or a dataclass holding an array a copy holding
a read-only one (before, `element.points[0][0] = ...` on a list of arrays, or a write into an expression function's
`parameters` dict, changed a built element silently).
The library's own setup after construction (numbering a default name) goes through `set_parameter`, which locks
the value it sets the same way (before, an array it was given stayed the caller's, writable).
"""
from __future__ import annotations

import copy
import dataclasses
from abc import ABCMeta
from typing import Any

import numpy as np

from biobullet.core.errors import ModelError

#: the instance flag set once `__init__` has returned (stored in `__dict__`, so a pickle or copy keeps it)
_FROZEN = "_frozen_parameters"

WHAT_TO_DO = ("edit the model file and load it again, or build the element anew and add it to a freshly loaded "
              "model; for a torque that varies in time: a <joint_torque> time function (type=...) in the file, or "
              "the bridge's tau= / the tau argument of forward_dynamics")


class FrozenParameterError(ModelError, AttributeError):
    """An element's parameter was assigned after construction (a ModelError, and an AttributeError as for any
    read-only attribute)."""


class FrozenAfterInit(ABCMeta):
    """Metaclass: marks an instance frozen once its class's `__init__` (the most derived one) has returned."""

    def __call__(cls, *args: Any, **kwargs: Any):
        instance = super().__call__(*args, **kwargs)
        _freeze(instance)
        return instance


#: how deep `_locked` looks into containers and dataclasses (a parameter nests a few levels at most)
LOCK_DEPTH = 8


class ReadOnlyDict(dict):
    """A dict parameter of a built element: reads as a dict, refuses every write (FrozenParameterError naming the
    element and attribute). A copy (`copy()`, `dict(d)`) is an ordinary dict."""

    def __init__(self, items: dict, where: tuple[str | None, str, str] = (None, "<element>", "")) -> None:
        super().__init__(items)
        self.where = where

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        file, element, attribute = self.where
        raise FrozenParameterError(
            "this dict is a parameter of a built element and is read-only: the bridge and the compiled rows packed "
            "its values at load or first use", file=file, element=element, attribute=attribute, expected=WHAT_TO_DO)

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse

    def copy(self) -> dict:
        return dict(self)

    def __reduce__(self):
        return ReadOnlyDict, (dict(self), self.where)


def _locked(value: Any, where: tuple[str | None, str, str] = (None, "<element>", ""), depth: int = 0) -> Any:
    """`value` with every writable array in it a read-only copy — itself, or inside a tuple (an expression
    function's `tape`: (words, constants)), a list (returned as a tuple), a dict (returned as a `ReadOnlyDict`), a
    NamedTuple or a dataclass instance (a copy) —; anything else as it is. `where`: (file, element, attribute)
    a `ReadOnlyDict` names."""
    if isinstance(value, np.ndarray):
        if not value.flags.writeable:
            return value
        locked = value.copy()
        locked.flags.writeable = False
        return locked
    if depth >= LOCK_DEPTH:
        return value
    if isinstance(value, (tuple, list)):
        items = tuple(_locked(item, where, depth + 1) for item in value)
        if type(value) is list:
            return items
        if hasattr(value, "_fields"):   # a NamedTuple
            return value if all(a is b for a, b in zip(items, value)) else type(value)._make(items)
        return value if type(value) is tuple and all(a is b for a, b in zip(items, value)) else items
    if isinstance(value, dict):
        items = {key: _locked(item, where, depth + 1) for key, item in value.items()}
        if type(value) is ReadOnlyDict and all(items[key] is item for key, item in value.items()):
            return value
        return ReadOnlyDict(items, where)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed = {field.name: _locked(getattr(value, field.name), where, depth + 1)
                   for field in dataclasses.fields(value)}
        changed = {name: item for name, item in changed.items() if item is not getattr(value, name)}
        if changed:
            value = copy.copy(value)
            for name, item in changed.items():
                object.__setattr__(value, name, item)   # (a frozen dataclass too: its copy is ours)
    return value


def _element_where(instance: Any) -> tuple[str | None, str]:
    """(file, element) an error about `instance` names."""
    return instance._where() if isinstance(instance, FrozenParameters) else (None, f"<{type(instance).__name__}>")


def _freeze(instance: Any) -> None:
    """Set the frozen flag and make every public array attribute (or array in a container attribute) a read-only
    copy (a caller's array passed to the constructor stays writable: only the element's own copy is locked)."""
    where = None
    for attribute, value in list(vars(instance).items()):
        if attribute.startswith("_") or isinstance(value, (str, int, float)):   # ("_": per-run caches)
            continue
        where = _element_where(instance) if where is None else where
        locked = _locked(value, (*where, attribute))
        if locked is not value:
            object.__setattr__(instance, attribute, locked)
    object.__setattr__(instance, _FROZEN, True)


class FrozenParameters(metaclass=FrozenAfterInit):
    """Mixin: public attributes are read-only after construction (module docstring). `_where()` names the element
    in the error (default: its class)."""

    def _where(self) -> tuple[str | None, str]:
        """(file, element) the error names."""
        return None, f"<{type(self).__name__}>"

    def _refuse(self, attribute: str) -> None:
        if attribute.startswith("_") or not self.__dict__.get(_FROZEN, False):
            return
        file, element = self._where()
        raise FrozenParameterError(
            "parameters are read-only once the element is built: the bridge and the compiled rows packed this "
            "value at load or first use, so a change would be ignored by some paths and taken by others",
            file=file, element=element, attribute=attribute, expected=WHAT_TO_DO)

    def __setattr__(self, attribute: str, value: Any) -> None:
        self._refuse(attribute)
        object.__setattr__(self, attribute, value)

    def __delattr__(self, attribute: str) -> None:
        self._refuse(attribute)
        object.__delattr__(self, attribute)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """copy / deepcopy / pickle: the state as saved, frozen again (an unpickled array is writable)."""
        self.__dict__.update(state)
        if state.get(_FROZEN, False):
            _freeze(self)


def set_parameter(element: FrozenParameters, attribute: str, value: Any) -> None:
    """The library's own setup of a built element before anyone packed it (e.g. numbering a default name); the value
    is locked as the constructor's are (`_locked`: the caller's array stays the caller's)."""
    if not attribute.startswith("_"):
        value = _locked(value, (*_element_where(element), attribute))
    object.__setattr__(element, attribute, value)
