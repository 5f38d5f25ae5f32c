"""Per-run discrete state of force elements (contact active sets, impact velocities, stick/slip modes).

A Model and its force elements are immutable; one `simulate()` run may need state that changes only at events
(which contacts touch, the approach velocity δ̇⁻ captured at onset, …). That state lives in the run, not in the
model. The protocol, all optional and duck-typed on a ForceElement:

  for_run(model) -> ForceElement          a fresh copy carrying the run's discrete state; the engine uses the
                                          copy in place of the element for the whole run
  start_run(model, t0, x0, xd0)           initialise the discrete state from the initial tree state
  events(model) -> [Event]                Events with `action(t, x, ẋ)` and restart=True: the engine locates the
                                          root, calls the action with the event state, and restarts the
                                          integrator there, so a step never straddles a change of discrete state
  observe_step(model, t_old, t_new, state_at)   after every accepted step; state_at(s) -> (x, ẋ) from the
                                          step's dense output (for logs: peak forces, impulses); where given,
                                          state_at.many(times) -> (X, Ẋ) rows of several times at once
  run_log() -> dict                       JSON-ready record, stored in trajectory.meta["discrete"][element.name]

The engine also runs the elements of the contact layer (`<contact>` elements are not ordinary force elements:
see `forces.collection.NOT_FORCES`), through `run_elements(model)`.
"""
from __future__ import annotations

from typing import Callable

import numpy as np


def layer_elements(model) -> tuple:
    """Force elements of layers the engine owns besides `forces`: the `<contact>` elements."""
    if not model.description.elements_of("contact"):
        return ()
    from biobullet.contact.element import contact_elements
    return tuple(contact_elements(model))


def run_elements(model, elements) -> tuple:
    """`elements` with every element that has per-run state replaced by its fresh run copy."""
    return tuple(e.for_run(model) if hasattr(e, "for_run") else e for e in elements)


def start_run(model, elements, t0: float, x0: np.ndarray, xd0: np.ndarray) -> None:
    for element in elements:
        if hasattr(element, "start_run"):
            element.start_run(model, t0, np.array(x0), np.array(xd0))


def step_observer(model, elements, tree_state: Callable, tree_states: Callable | None = None) -> Callable | None:
    """observe(t_old, t_new, sol) for the stepping loop, or None when no element observes steps. `state_at(s)`
    gives (x, ẋ) at one time of the step; with `tree_states(t, y)` (rows of many states at once) it also has
    `state_at.many(times)` → (x (n, n_config), ẋ (n, n_tangent)), which observers sampling several times of a
    step use (one compiled pass instead of one coordinate-map solve per sample)."""
    observers = [e for e in elements if hasattr(e, "observe_step")]
    if not observers:
        return None

    def observe(t_old: float, t_new: float, sol) -> None:
        def state_at(s: float):
            return tree_state(s, sol(s))
        if tree_states is not None:
            def many(times) -> tuple[np.ndarray, np.ndarray]:
                times = np.asarray(times, dtype=float)
                return tree_states(times, np.atleast_2d(sol(times)).T.reshape(len(times), -1))
            state_at.many = many
        for element in observers:
            element.observe_step(model, t_old, t_new, state_at)
    return observe


def run_logs(elements) -> dict:
    """{element name: run_log()} of the elements that keep one."""
    return {e.name: e.run_log() for e in elements if hasattr(e, "run_log")}
