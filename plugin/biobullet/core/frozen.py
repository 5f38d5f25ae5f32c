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
way (`__setstate__`).
The library's own setup after construction (numbering a default name) goes through `set_parameter`.
"""
from __future__ import annotations

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


def _locked(value: Any) -> Any:
    """A read-only copy of a writable array, and of each one inside a tuple (an expression function's `tape`:
    (words, constants)); anything else as it is."""
    if isinstance(value, np.ndarray) and value.flags.writeable:
        locked = value.copy()
        locked.flags.writeable = False
        return locked
    if type(value) is tuple:
        items = tuple(_locked(item) for item in value)
        return value if all(a is b for a, b in zip(items, value)) else items
    return value


def _freeze(instance: Any) -> None:
    """Set the frozen flag and make every public array attribute (or array in a tuple attribute) a read-only copy (a
    caller's array passed to the constructor stays writable: only the element's own copy is locked)."""
    for attribute, value in list(vars(instance).items()):
        if not attribute.startswith("_"):
            locked = _locked(value)
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
    """The library's own setup of a built element before anyone packed it (e.g. numbering a default name)."""
    object.__setattr__(element, attribute, value)
