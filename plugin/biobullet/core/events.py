"""Event functions for the reference engine (SciPy convention: a root of g(t, y) is an event).

An `Event` is evaluated on the tree state: `function(t, x, xd) -> float` with x the configuration
[base pose?, θ] and xd = [base twist?, θ̇]. `direction` > 0 fires only on − → + crossings, < 0 only on + → −,
0 on both. `terminal=True` stops the simulation at the event; `restart=True` stops the integrator there and
restarts it from the event state (used by switched force elements and contact so that no step straddles a
discontinuity of the right-hand side). `action(t, x, xd)` (optional, needs `restart` or `terminal`) is called
with the located event state before the integrator restarts: it updates the per-run discrete state of a force
element (see `integrate.discrete`).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from biobullet.core.errors import ModelError

EventFunction = Callable[[float, np.ndarray, np.ndarray], float]


@dataclass(frozen=True)
class Event:
    """A named scalar event function g(t, x, ẋ); see the module docstring for the flags."""

    name: str
    function: EventFunction
    direction: float = 0.0
    terminal: bool = False
    restart: bool = False
    action: Callable[[float, np.ndarray, np.ndarray], None] | None = None
    #: a user's event (`as_event`): its value is checked to be one finite number (the library's own events — stops,
    #: contacts — are finite wherever the state is; a diverged state is reported as such, not as a bad event)
    checked: bool = False
    #: the right-hand side switches at g = 0 by the state alone (a switched stop's law reads θ), not by the event's
    #: action: the step that crosses it is taken across the kink, and the state at the event is re-integrated from
    #: that step's start instead of cut from its dense output (`integrate.stepper._SmoothSide`). A callable () → bool
    #: is asked when the event is located, before its action (a contact's touch is a kink on the way out only)
    kink: bool | Callable[[], bool] = False

    def __post_init__(self) -> None:
        if self.action is not None and not (self.restart or self.terminal):
            raise ValueError(f"event {self.name!r}: an action needs restart=True (or terminal=True)")

    def __call__(self, t: float, x: np.ndarray, xd: np.ndarray) -> float:
        """g(t, x, ẋ) as a float; of a user's event (`checked`), a value that is not one finite number (text, None,
        NaN, ±inf) is one ModelError naming the event (a NaN never changes sign: the event would silently never
        fire)."""
        value = self.function(t, x, xd)
        if not self.checked:
            return float(value)
        try:
            number = math.nan if isinstance(value, (str, bytes)) else float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number):
            raise ModelError(f"event {self.name!r} returned {value!r:.60} at t = {t:.9g} s", argument="events",
                             expected="one finite number g(t, x, xd) whose sign change marks the event")
        return number


def as_event(item, index: int) -> Event:
    """Accept an Event, or a plain callable f(t, x, ẋ) (with optional scipy-style `terminal`/`direction`
    attributes and an optional `__name__`)."""
    if isinstance(item, Event):
        return dataclasses.replace(item, checked=True)
    if not callable(item):
        raise ModelError(f"event {index} is neither an Event nor a callable f(t, x, xd) (got {type(item).__name__})",
                         argument="events", expected="a list of Event objects or callables")
    name = getattr(item, "name", None) or getattr(item, "__name__", None) or f"event_{index}"
    if name == "<lambda>":
        name = f"event_{index}"
    return Event(str(name), item, float(getattr(item, "direction", 0.0)), bool(getattr(item, "terminal", False)),
                 checked=True)
