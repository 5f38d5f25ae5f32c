"""Compliant `<contact>` on the PyBullet bridge: our laws, PyBullet's geometry queries.

The same Contact elements (normal and friction law objects, discrete state, interval log) as the reference engine,
evaluated on the PyBullet state before every step.

Geometry (`geometry=`):

* ``"pybullet"`` (default): for a contact whose link carries the matching collision sphere (exactly one collision
  shape on the link: a sphere of the contact's radius centred at its `xyz`, both to 1e-9 m),
  ``getClosestPoints(body, ground, d, link, -1)`` against the ground body gives penetration δ = −contactDistance,
  normal n = contactNormalOnB (out of the ground) and point p = positionOnA (the sphere point deepest in the
  ground). The ground body is the user's (`ground_body`, e.g. a `GEOM_PLANE` multibody) or, if none is given, one
  `GEOM_PLANE` per distinct `<contact>` ground (ground_height h, ground_normal n: base at h·n), created here as a
  pure query object (collision group and mask 0: it touches nothing; `close()` removes it). d = `query_distance`
  (beyond it the contact is "far": no force, δ = −d); laws acting outside contact query 1e4 m.
  A contact without a matching collision shape (a point contact, a link without or with other/several collision
  shapes, a radius or centre that differs) falls back to the analytic geometry — one RuntimeWarning lists them.
* ``"analytic"``: δ, n and p from biobullet's kinematics of the PyBullet state against the `<contact>` element's
  analytic plane (identical to the reference engine); `ground_body` is then only used to switch contact off.

Rates: δ̇ = −n·v_p and the slip v_t = v_p − (n·v_p) n, with v_p = J_p ẋ the velocity of the link's material
point at p (J_p: biobullet's world-aligned point Jacobian of the state read from PyBullet).

Forces: F = F_N n + F_T (same law objects as the engine) enter as joint-space torques τ = J_pᵀ F through
`Bridge.step(tau)` — the way the bridge applies every force: the bridge's constraint solve (joint functions, loop
closures) then sees the contact torques, which `applyExternalForce` would bypass.

PyBullet's own rigid contact never acts on these links: every (contact link, ground body) pair gets
`setCollisionFilterPair(..., enableCollision=0)` (getClosestPoints ignores collision filters).

Discrete state: onsets and separations are detected at step granularity (δ changes sign between two steps);
δ̇⁻ is the penetration rate at the first step with δ > 0, so it is late by at most one step (error O(g·dt)).
The log (`intervals`) has the same fields as the engine's (impulse Σ F_N dt, peak F_N over the steps).
"""
from __future__ import annotations

import warnings

import numpy as np

from biobullet.contact.geometry import ContactKinematics
from biobullet.algorithms.kinematics import body_placements, frame_jacobian, frame_placement
from biobullet.core.errors import ModelError

GEOMETRIES = ("pybullet", "analytic")
#: default getClosestPoints distance [m]: a contact farther than this from the ground is "far" (no force)
QUERY_DISTANCE = 1.0
#: query distance [m] for laws that act outside contact (their tail is evaluated at the true distance)
OUTSIDE_QUERY_DISTANCE = 1.0e4
#: a URDF collision sphere matches a `<contact>` if radius and centre agree to this [m]
MATCH_TOLERANCE = 1.0e-9


class BridgeContacts:
    """Contact forces for a `Bridge` (see the module docstring). Use `step()` instead of `bridge.step()`.

    contacts: Contact elements (default: the model's `<contact>`s). geometry: "pybullet" or "analytic".
    ground_body: the PyBullet ground body (None: a plane per `<contact>` ground is created for "pybullet").
    query_distance: getClosestPoints distance (m).
    """

    def __init__(self, bridge, contacts=None, *, ground_body: int | None = None, geometry: str = "pybullet",
                 query_distance: float = QUERY_DISTANCE) -> None:
        from biobullet.contact.element import contact_elements
        if geometry not in GEOMETRIES:
            raise ModelError(f"argument 'geometry' is {geometry!r}", attribute="geometry",
                             expected=" or ".join(GEOMETRIES))
        if not (np.isfinite(query_distance) and query_distance > 0):
            raise ModelError(f"argument 'query_distance' is {query_distance!r}", attribute="query_distance",
                             expected="a positive distance (m)")
        self.bridge = bridge
        self.geometry = geometry
        self.query_distance = float(query_distance)
        model = bridge.model
        templates = contact_elements(model) if contacts is None else tuple(contacts)
        self.contacts = [c.for_run(model) for c in templates]
        self._own_grounds: list[int] = []
        #: per contact: (PyBullet link index, ground body) for PyBullet geometry, None for the analytic one
        self._queries: list[tuple[int, int] | None] = [None] * len(self.contacts)
        if geometry == "pybullet":
            self._set_up_queries(ground_body)
        grounds = set(self._own_grounds) | ({int(ground_body)} if ground_body is not None else set())
        for ground in sorted(grounds):
            self.disable_rigid_contact(ground)
        t, x, xd = bridge.state()
        for contact, kin in zip(self.contacts, self.kinematics()):
            if kin.delta > 0.0:
                contact.state.touch(t, kin.delta_dot, initial=True)
            if contact.friction_law.discontinuous:
                contact.state.update_slip(kin.slip)

    # ------------------------------------------------------------------ set-up
    def _set_up_queries(self, ground_body: int | None) -> None:
        fallback = []
        planes: dict[tuple, int] = {}
        for k, contact in enumerate(self.contacts):
            index, reason = self._collision_sphere(contact)
            if reason is not None:
                fallback.append(f"{contact.name} ({reason})")
                continue
            if ground_body is not None:
                ground = int(ground_body)
            else:
                key = (contact.ground.height, contact.ground.normal)
                if key not in planes:
                    planes[key] = self._create_plane(contact.ground)
                ground = planes[key]
            self._queries[k] = (index, ground)
        if fallback:
            warnings.warn(f"{self.bridge.model.file}: contacts without a matching URDF collision sphere use the "
                          "analytic point/sphere–plane geometry on the bridge: " + "; ".join(fallback),
                          RuntimeWarning, stacklevel=3)

    def _collision_sphere(self, contact) -> tuple[int | None, str | None]:
        """(PyBullet link index, None) if `contact`'s link has exactly its sphere as collision shape, else
        (None, reason)."""
        from biobullet.spatial.rotations import quaternion_to_matrix
        p, c, body = self.bridge._p, self.bridge.client, self.bridge.body
        index = self.bridge.map.link_index.get(contact.link)
        if index is None:
            return None, f"link {contact.link!r} is not a PyBullet link"
        if contact.radius <= 0.0:
            return None, "a point contact has no collision shape"
        shapes = p.getCollisionShapeData(body, index, physicsClientId=c)
        if len(shapes) != 1:
            return None, f"link {contact.link!r} has {len(shapes)} collision shapes, not one sphere"
        shape = shapes[0]
        if shape[2] != p.GEOM_SPHERE:
            return None, f"link {contact.link!r}'s collision shape is not a sphere"
        if abs(shape[3][0] - contact.radius) > MATCH_TOLERANCE:
            return None, f"collision sphere radius {shape[3][0]:g} m ≠ contact radius {contact.radius:g} m"
        dyn = p.getDynamicsInfo(body, index, physicsClientId=c)  # collision frame is given in the inertial frame
        centre = np.asarray(dyn[3]) + quaternion_to_matrix(dyn[4]) @ np.asarray(shape[5])
        if np.max(np.abs(centre - contact.xyz)) > MATCH_TOLERANCE:
            return None, f"collision sphere centre {centre.tolist()} ≠ contact xyz {contact.xyz.tolist()}"
        return index, None

    def _create_plane(self, ground) -> int:
        """A GEOM_PLANE body for `ground` (n·p = h) that collides with nothing (a query object only)."""
        p, c = self.bridge._p, self.bridge.client
        shape = p.createCollisionShape(p.GEOM_PLANE, planeNormal=list(ground.normal), physicsClientId=c)
        plane = p.createMultiBody(0, shape, basePosition=(ground.height * ground.n).tolist(), physicsClientId=c)
        p.setCollisionFilterGroupMask(plane, -1, 0, 0, physicsClientId=c)
        self._own_grounds.append(plane)
        return plane

    def disable_rigid_contact(self, ground_body: int) -> None:
        """Switch off PyBullet's contact between every link carrying a `<contact>` and `ground_body`."""
        p, c, body = self.bridge._p, self.bridge.client, self.bridge.body
        links = {self.bridge.map.link_index[k.link] for k in self.contacts if k.link in self.bridge.map.link_index}
        for link in sorted(links):
            p.setCollisionFilterPair(body, int(ground_body), link, -1, 0, physicsClientId=c)

    @property
    def ground_bodies(self) -> tuple[int, ...]:
        """The ground planes this object created (removed by `close()`)."""
        return tuple(self._own_grounds)

    def geometry_of(self, name: str) -> str:
        """"pybullet" or "analytic": the geometry used for the contact called `name`."""
        for contact, query in zip(self.contacts, self._queries):
            if contact.name == name:
                return "analytic" if query is None else "pybullet"
        raise KeyError(name)

    def close(self) -> None:
        """Remove the ground planes this object created (a client the bridge owns is closed by the bridge)."""
        p, c = self.bridge._p, self.bridge.client
        while self._own_grounds:
            plane = self._own_grounds.pop()
            try:
                p.removeBody(plane, physicsClientId=c)
            except p.error:
                pass

    # ------------------------------------------------------------------ geometry
    def kinematics(self) -> list[ContactKinematics]:
        """ContactKinematics (δ, δ̇, p, v_t, n, J_p) of every contact at the bridge's current state."""
        model = self.bridge.model
        _, x, xd = self.bridge.state()
        placements = body_placements(model, x)
        out = []
        for contact, query in zip(self.contacts, self._queries):
            if query is None:
                out.append(contact.kinematics(model, x, xd, placements))
            else:
                out.append(self._queried_kinematics(contact, query, x, xd, placements))
        return out

    def _queried_kinematics(self, contact, query, x, xd, placements) -> ContactKinematics:
        p, c, body = self.bridge._p, self.bridge.client, self.bridge.body
        model = self.bridge.model
        index, ground = query
        distance = OUTSIDE_QUERY_DISTANCE if contact.normal_law.acts_outside_contact else self.query_distance
        points = p.getClosestPoints(body, ground, distance, index, -1, physicsClientId=c)
        if not points:  # far from the ground: no force (the Jacobian is not needed)
            return ContactKinematics(-distance, 0.0, np.full(3, np.nan), np.zeros(3), contact.ground.n,
                                     np.zeros((3, model.n_tangent)))
        nearest = min(points, key=lambda item: item[8])
        delta = -float(nearest[8])
        point = np.asarray(nearest[5], dtype=float)
        normal = np.asarray(nearest[7], dtype=float)
        rotation, origin = frame_placement(model, x, contact.link, placements)
        jac = frame_jacobian(model, x, contact.link, rotation.T @ (point - origin), placements)[:3]
        velocity = jac @ xd
        normal_speed = float(normal @ velocity)
        return ContactKinematics(delta, -normal_speed, point, velocity - normal_speed * normal, normal, jac)

    # ------------------------------------------------------------------ forces
    def torques(self) -> np.ndarray:
        """τ (n_tangent, tree order) of all contacts at the bridge's current state; updates the discrete state."""
        model, dt = self.bridge.model, self.bridge.dt
        t = self.bridge.time
        tau = np.zeros(model.n_tangent)
        for contact, kin in zip(self.contacts, self.kinematics()):
            _sync(contact, t, kin)
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


def _sync(contact, t: float, kin: ContactKinematics) -> None:
    """The engine's event action, applied with the bridge's kinematics once per step."""
    from biobullet.contact.element import sync_state
    sync_state(contact.state, contact.friction_law, t, kin)
