"""Compliant `<contact>` on the PyBullet bridge: the same Contact elements as the reference engine, evaluated on
the PyBullet state every step and sent as extra joint-space torques through `Bridge.step(tau)` (the bridge's
per-step force hook: `apply(tau=...)`).

Geometry: δ, δ̇ and the slip come from the biobullet kinematics of the PyBullet state (the ground is the
analytic plane of the `<contact>` element, identical to the reference engine). PyBullet's own rigid contact must
not act as well: pass the PyBullet ground body (`ground_body`, e.g. a `GEOM_PLANE` multibody) and its collision
pairs with every link of the model are switched off with `setCollisionFilterPair`.

Discrete state: onsets and separations are detected at step granularity (δ changes sign between two steps);
δ̇⁻ is the penetration rate at the first step with δ > 0, so it is late by at most one step (error O(g·dt)).
The log (`intervals`) has the same fields as the engine's (impulse Σ F_N dt, peak F_N over the steps).
"""
from __future__ import annotations

import numpy as np


class BridgeContacts:
    """Contact forces for a `Bridge` (see the module docstring). Use `step()` instead of `bridge.step()`."""

    def __init__(self, bridge, contacts=None, *, ground_body: int | None = None) -> None:
        from ..contact.element import contact_elements
        self.bridge = bridge
        model = bridge.model
        templates = contact_elements(model) if contacts is None else tuple(contacts)
        self.contacts = [c.for_run(model) for c in templates]
        t, x, xd = bridge.state()
        for contact in self.contacts:
            contact.start_run(model, t, x, xd)
        if ground_body is not None:
            self.disable_rigid_contact(ground_body)

    def disable_rigid_contact(self, ground_body: int) -> None:
        """Switch off PyBullet's contact between every link of the model and `ground_body`."""
        p, c, body = self.bridge._p, self.bridge.client, self.bridge.body
        for link in range(-1, p.getNumJoints(body, physicsClientId=c)):
            p.setCollisionFilterPair(body, int(ground_body), link, -1, 0, physicsClientId=c)

    def torques(self) -> np.ndarray:
        """τ (n_tangent, tree order) of all contacts at the bridge's current state; updates the discrete state."""
        model, dt = self.bridge.model, self.bridge.dt
        t, x, xd = self.bridge.state()
        tau = np.zeros(model.n_tangent)
        for contact in self.contacts:
            contact._sync(t, x, xd)
            kin = contact.kinematics(model, x, xd)
            fn, ft, elastic = contact.forces(kin)
            interval = contact.state.current
            if interval is not None:
                normal, friction = contact.power_split(kin, (fn, ft, elastic))
                interval.impulse += fn * dt
                interval.dissipated_normal += normal * dt
                interval.dissipated_friction += friction * dt
                interval.max_penetration = max(interval.max_penetration, kin.delta)
                if fn > interval.peak_force:
                    interval.peak_force, interval.peak_force_time = fn, t
            if fn or np.any(ft):
                tau += kin.generalized(fn * kin.normal + ft)
        return tau

    def step(self, tau=None) -> float:
        """Contact torques + `tau` (optional) through `bridge.step`; returns the new time (s)."""
        extra = self.torques()
        return self.bridge.step(extra if tau is None else extra + np.asarray(tau, dtype=float))

    def intervals(self) -> list[dict]:
        """The contact intervals of all contacts (engine format, plus `contact`)."""
        out = [{**i.as_dict(), "contact": c.name} for c in self.contacts for i in c.state.intervals]
        return sorted(out, key=lambda item: item["start"])
