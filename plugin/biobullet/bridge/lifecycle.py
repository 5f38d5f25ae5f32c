"""Bridge life cycle and runaway detection: one clear error instead of a raw `pybullet.error` or a silent mistake.

* `attach(bridge)` marks the bridge's body with a unique token (PyBullet user data on the body).
* `ensure_usable(bridge, action)` (first line of every public Bridge method that talks to PyBullet) raises a
  BridgeClosedError when the bridge was closed, when its PyBullet client was disconnected, or when the client id
  now belongs to *another* connection — PyBullet reuses ids, so after `p.disconnect(); p.connect()` an old Bridge
  would otherwise drive an unrelated simulation: the token is gone from the body there, which is how we notice.
* `mark_closed(bridge)` (in `close()`).
* The token and its state live in `bridge.lifecycle` (a `Lifecycle`; None before `attach`), which the bridge's
  per-step check reads directly.
* `check_divergence(bridge, t, x, xd)`: a non-finite state, or a joint rate above `RUNAWAY_RATE` (rad/s or m/s),
  raises a DivergenceError naming the time, the joint, the step dt and the limit (a too-large step makes the
  semi-implicit integrator blow up: PyBullet then reports 1e6 rad/s without complaint).
"""
from __future__ import annotations

import math
import uuid

import numpy as np

from biobullet.core.native import import_pybullet
from biobullet.core.errors import BiobulletError, SolverError

TOKEN_KEY = "biobullet.bridge"
#: joint rates above this are taken as a diverging step (rad/s or m/s; a sprinting human's fastest joint is
#: below 100 rad/s, PyBullet's own default clamp)
RUNAWAY_RATE = 1.0e4


class BridgeWarning(UserWarning):
    """The bridge changed something of the user's client (e.g. its gravity), or something in the user's loop keeps a
    joint function or loop from holding (`bridge.outside.CouplingWarning`)."""


class BridgeClosedError(BiobulletError):
    """The bridge cannot be used any more (closed, disconnected, or its client id taken by another connection)."""


class DivergenceError(SolverError):
    """The PyBullet state became non-finite or ran away (usually: the time step is too large)."""


class Lifecycle:
    """A bridge's token on its body: `token` (str), `token_bytes` (what getUserData returns for it, compared every
    step), `data` (the user-data id holding it; looked up again when PyBullet renumbers) and `closed`."""

    __slots__ = ("token", "token_bytes", "data", "closed")

    def __init__(self, token: str, data: int) -> None:
        self.token, self.token_bytes, self.data, self.closed = token, token.encode(), data, False


def attach(bridge) -> None:
    """Mark `bridge.body` in `bridge.client` with a fresh token (see module docstring): `bridge.lifecycle`."""
    p = import_pybullet()   # banner kept off the terminal (core.native)
    token = uuid.uuid4().hex
    bridge.lifecycle = Lifecycle(token, p.addUserData(bridge.body, TOKEN_KEY, token, physicsClientId=bridge.client))


def is_closed(bridge) -> bool:
    """True once `mark_closed(bridge)` ran."""
    life = getattr(bridge, "lifecycle", None)
    return life is not None and life.closed


def mark_closed(bridge) -> None:
    life = getattr(bridge, "lifecycle", None)
    if life is not None:
        life.closed = True
    else:   # construction failed before `attach`: a closed record without a token
        bridge.lifecycle = Lifecycle("", -1)
        bridge.lifecycle.closed = True


def ensure_usable(bridge, action: str) -> None:
    """Raise BridgeClosedError unless `bridge` is open, connected and still owns its client (see module doc)."""
    life = getattr(bridge, "lifecycle", None)
    try:   # the per-step fast path, one PyBullet call (the step's cost is its PyBullet calls): open, and our
        # user-data entry still holds our token as the bytes getUserData returns
        if not life.closed and bridge.pybullet.getUserData(life.data, physicsClientId=bridge.client) \
                == life.token_bytes:
            return
    except Exception:   # not attached (AttributeError) or disconnected (pybullet.error): the checks below say which
        pass
    if life is not None and life.closed:
        raise BridgeClosedError(f"Bridge.{action}: the bridge is closed (create a new Bridge)")
    if life is None:  # not attached (construction failed half-way)
        raise BridgeClosedError(f"Bridge.{action}: the bridge was not set up completely")
    token = life.token
    p = import_pybullet()   # banner kept off the terminal (core.native)
    client = bridge.client
    try:  # the per-step fast path, one call: our user-data entry still holds our token
        if p.getUserData(life.data, physicsClientId=client) in (token, life.token_bytes):
            return
        data = p.getUserDataId(bridge.body, TOKEN_KEY, physicsClientId=client)   # ids renumbered: look it up
        if data >= 0 and p.getUserData(data, physicsClientId=client) in (token, life.token_bytes):
            life.data = data
            return
    except p.error:
        pass
    if not p.isConnected(physicsClientId=client):
        raise BridgeClosedError(f"Bridge.{action}: PyBullet client {client} was disconnected (create a new Bridge "
                                "on a connected client)")
    try:   # the body still carries a bridge token, not ours: a Bridge made on the same body since took it over
        taken = p.getUserDataId(bridge.body, TOKEN_KEY, physicsClientId=client) >= 0
    except p.error:
        taken = False
    if taken:
        raise BridgeClosedError(f"Bridge.{action}: body {bridge.body} of PyBullet client {client} was taken over by "
                                "another Bridge made on it (one bridge per body: use that one, or close it and make "
                                "a new one)")
    raise BridgeClosedError(f"Bridge.{action}: the bridge's body {bridge.body} is gone from PyBullet client {client} "
                            "(removeBody or resetSimulation), or the client id now belongs to another connection (the "
                            "original one was disconnected and the id reused) — create a new Bridge")


def ensure_owned_body(bridge) -> bool:
    """True if `bridge.body` is still the body the bridge loaded: it carries the bridge's token (or the bridge was
    not attached yet — construction failed after loading). False after resetSimulation or a removeBody by the
    user (the id may belong to another body now) or when the client is gone."""
    import pybullet as p
    client = bridge.client
    if not p.isConnected(physicsClientId=client):
        return False
    life = getattr(bridge, "lifecycle", None)
    if life is None or not life.token:
        return True
    token = life.token
    try:
        data = p.getUserDataId(bridge.body, TOKEN_KEY, physicsClientId=client)
        return data >= 0 and p.getUserData(data, physicsClientId=client) in (token, token.encode())
    except p.error:
        return False


def check_divergence(bridge, t: float, x: np.ndarray, xd: np.ndarray, limit: float = RUNAWAY_RATE) -> None:
    """DivergenceError if the state (x, ẋ) at time t is non-finite or a rate exceeds `limit`."""
    x, xd = np.asarray(x, dtype=float), np.asarray(xd, dtype=float)
    finite = math.isfinite(float(x.sum()) + float(xd.sum()))
    peak = float(np.max(np.abs(xd))) if finite and xd.size else 0.0
    if finite and peak <= limit:
        return
    names = list(getattr(bridge.model, "joint_names", ()))
    base = int(getattr(bridge.model, "base_nv", 0))   # floating base (6) and spherical joints (3 each) lead ẋ
    if finite:
        k = int(np.argmax(np.abs(xd)))
        what = (f"joint {names[k - base]!r}" if 0 <= k - base < len(names) else f"velocity component {k}")
        detail = f"{what} moves at {xd[k]:.3g} (limit {limit:g} rad/s or m/s)"
    else:
        detail = "the state is not finite"
    raise DivergenceError(f"{bridge.model.file}: the PyBullet simulation diverged at t = {t:.6g} s: {detail}, "
                          f"with step dt = {bridge.dt:g} s — use a smaller dt (e.g. --dt {bridge.dt / 10:g})")


__all__ = ["BridgeWarning", "BridgeClosedError", "DivergenceError", "Lifecycle", "attach", "is_closed", "mark_closed",
           "ensure_owned_body", "ensure_usable", "check_divergence",
           "RUNAWAY_RATE"]
