"""Compliant `<contact>` on the PyBullet bridge: our laws, PyBullet's geometry queries. An internal of `Bridge`:
`Bridge(model)` builds it for a model with `<contact>`s and adds its forces in every `apply()`; the bridge's
options `ground_body`, `contact_geometry`, `scene_contacts` and `query_distance` are passed through, and
`bridge.contacts` is this object (`intervals()`, `kinematics()`, `geometry_of(name)`, `forces()`).

The same Contact elements (normal and friction law objects, discrete state, interval log) as the reference engine,
evaluated on the PyBullet state before every step.

Two kinds of counterpart:

* the `<contact>`'s own ground (the analytic plane of the file, the only ground the reference engine knows),
  with the geometry below;
* every other body in the PyBullet scene (`scene_contacts=True`, default): a plane, stairs, a box, another robot,
  loaded before or after the bridge was made (the scene is rescanned when the number of bodies changes). The
  contact's sphere (the link's own collision sphere when it matches, else a query sphere of radius
  max(r, QUERY_RADIUS) moved to the contact centre every step: collision group and mask 0, it touches nothing)
  is queried with getClosestPoints against each body: δ = −(distance + r_query − r), n = contactNormalOnB,
  p = c − r n (lifted for a law's point depth, `contact.geometry`). Rates are relative to the other body's
  material point at p (getLinkState / getBaseVelocity), so
  moving bodies work; the first link pair of a body per step asks for forward kinematics, as PyBullet reports and
  places forces on links by transforms cached from the step's start (docs/bridge.md). One discrete state (onset, impact velocity, slip mode, interval log) per (contact, body,
  link) pair. The force F acts on the model (τ = J_pᵀF, through the constraint solve) and −F on the other body
  at p (applyExternalForce, WORLD_FRAME; ignored by PyBullet for a static body). PyBullet's own rigid contact
  between the contact links and every scene body is switched off. Excluded from the scene: the bridge's own body,
  the query objects of every bridge (PyBullet user data `QUERY_KEY` on them), and `ground_body` (the user's
  stand-in for the file's ground; removed, its contacts take the file's analytic ground).

Geometry of the file's ground (`geometry=`, the bridge's `contact_geometry`):

* default (None): ``"analytic"`` when no `ground_body` is given (the file's plane is analytic: a query plane would
  give the same δ one PyBullet call later), else ``"pybullet"`` against the user's body.
* ``"pybullet"``: for a contact whose link carries the matching collision sphere
  (exactly one collision shape on the link: a sphere of the contact's radius centred at its `xyz`, both to 1e-9 m),
  ``getClosestPoints(body, ground, d, link, -1)`` against the ground body gives penetration δ = −contactDistance,
  normal n = contactNormalOnB (out of the ground) and point p = positionOnA (the sphere point deepest in the
  ground; lifted for a law's point depth). The ground body is the user's (`ground_body`, e.g. a `GEOM_PLANE`
  multibody) or, if none is given, one
  `GEOM_PLANE` per distinct `<contact>` ground (ground_height h, ground_normal n: base at h·n), created here as a
  pure query object (collision group and mask 0: it touches nothing; `close()` removes it). d = `query_distance`
  (beyond it the contact is "far": no force, δ = −d); laws acting outside contact query 1e4 m.
  A contact without a matching collision shape (a point contact, a link without or with other/several collision
  shapes, a radius or centre that differs) uses the analytic geometry — silently by default, with one
  RuntimeWarning listing them when "pybullet" was asked for explicitly.
* ``"analytic"``: δ, n and p from biobullet's kinematics of the PyBullet state against the `<contact>` element's
  analytic plane (identical to the reference engine); `ground_body` is then only used to switch contact off.

Rates: δ̇ = −n·v_p and the slip v_t = v_p − (n·v_p) n, with v_p = J_p ẋ the velocity of the link's material
point at p (J_p: biobullet's world-aligned point Jacobian of the state read from PyBullet).

Forces: F = F_N n + F_T (same law objects as the engine) enter as joint-space torques τ = J_pᵀ F, added by
`Bridge.apply()` to the user's τ — the way the bridge applies every force: its constraint solve (joint functions,
loop closures) then sees the contact torques, which `applyExternalForce` would bypass.

PyBullet's own rigid contact never acts on these links: every (contact link, ground body) pair gets
`setCollisionFilterPair(..., enableCollision=0)` (getClosestPoints ignores collision filters).

Compiled path (`contact.kernels`): the analytic-plane contacts whose laws have compiled twins are one
`GroundContacts` call per step on the state read once (kinematics, discrete state in array rows, laws, log,
τ = J_pᵀF); `state_read` hands that state to `Bridge.apply()`. Onsets and separations are replayed on the
ContactState objects as they happen, the rest of the row (slip mode, the open interval's log) by `sync_states()`
(`intervals()` calls it). Queried contacts use the compiled one-contact step (`_contact_update_py`) with their own
rows. Laws without twins, `far_jacobians` or an overridden `kinematics` take the Python laws.

Discrete state: onsets and separations are detected at step granularity (δ changes sign between two steps);
δ̇⁻ is the penetration rate at the first step with δ > 0, so it is late by at most one step (error O(g·dt)).
The log (`intervals`) has the same fields as the engine's (impulse Σ F_N dt, peak F_N over the steps).
"""
from __future__ import annotations

import uuid
import warnings

import numpy as np

from biobullet.algorithms.kinematics import (
    body_placements,
    frame_jacobian,
    frame_placement,
)
from biobullet.contact.geometry import ContactKinematics
from biobullet.contact.kernels import (
    ACTIVE,
    DELTA,
    EVENT,
    FORCE,
    NORMAL,
    POINT,
    REVERSALS,
    ContactLaws,
    GroundContacts,
    contact_update_by_laws,
    contact_update_kernel,
    pack_laws,
    point_lift,
    pull_event,
    pull_state,
    state_row,
)
from biobullet.bridge.connection import body_argument, existing_body
from biobullet.core.errors import ModelError

GEOMETRIES = ("pybullet", "analytic")
#: default getClosestPoints distance [m]: a contact farther than this from the ground is "far" (no force)
QUERY_DISTANCE = 1.0
#: query distance [m] for laws that act outside contact (their tail is evaluated at the true distance)
OUTSIDE_QUERY_DISTANCE = 1.0e4
#: a URDF collision sphere matches a `<contact>` if radius and centre agree to this [m]
MATCH_TOLERANCE = 1.0e-9
#: smallest radius of a query sphere [m] (a point contact is queried as a sphere of this radius, δ corrected)
QUERY_RADIUS = 1.0e-3
#: user-data key marking a query body (plane, sphere) of a bridge — never part of any bridge's scene. The mark lives
#: on the body in PyBullet, not in a table of ids here: PyBullet gives a removed body's id, and a disconnected
#: client's id, to the next one created, and `resetSimulation` clears every body at once, so an id once a query
#: object's may be a user's box in the next episode (before: that box was skipped, and a ball fell through it)
QUERY_KEY = "biobullet.query"
#: user-data key on every link of a bridged body that carries a `<contact>` acting on scene bodies: a bridge whose
#: contact touches such a link knows that the other bridge's law pushes the same pair (`_both_push`)
CONTACT_KEY = "biobullet.contact"
#: switched friction chatters on the bridge once its slide reversed this many times in a row, each within
#: `contact.kernels.CHATTER_GAP` steps of the last (`BridgeContacts._watch_chatter`; a stuck block on an incline
#: reverses twice every ~9 steps, a rolling ball every step)
CHATTER_REVERSALS = 200
#: the chatter watch reads the state rows every this many steps (its cost off the per-step path)
CHATTER_EVERY = 64


class BridgeContacts:
    """Contact forces for a `Bridge` (see the module docstring); built by the bridge, not by users.

    contacts: Contact elements (default: the model's `<contact>`s). geometry: "pybullet" or "analytic" for the
    file's ground (None: "pybullet" where the link has the matching collision sphere, else analytic, silently;
    an explicit "pybullet" warns about the contacts it cannot query). ground_body: a PyBullet body standing for
    the file's ground (None: a query plane per `<contact>` ground). query_distance: getClosestPoints distance (m).
    scene: also contact every other body in the client.
    """

    def __init__(self, bridge, contacts=None, *, read_state, ground_body: int | None = None,
                 geometry: str | None = None, query_distance: float = QUERY_DISTANCE, scene: bool = True) -> None:
        from biobullet.contact.element import contact_elements
        self._warn = geometry is not None      # an explicit "pybullet" warns about contacts it cannot query
        if geometry is None:   # the file's own plane is analytic: a query plane would give the same δ, one call later
            geometry = "analytic" if ground_body is None else "pybullet"
        if geometry not in GEOMETRIES:
            raise ModelError(f"argument 'geometry' is {geometry!r}", attribute="geometry",
                             expected=" or ".join(GEOMETRIES))
        if not (np.isfinite(query_distance) and query_distance > 0):
            raise ModelError(f"argument 'query_distance' is {query_distance!r}", attribute="query_distance",
                             expected="a positive distance (m)")
        self.bridge = bridge
        #: this object's value of its user-data marks (QUERY_KEY, CONTACT_KEY): `close()` removes only what still
        #: carries it — after resetSimulation an old id may be the next episode's robot or box
        self._stamp = uuid.uuid4().hex
        self._read_state = read_state   # () → (x, ẋ): the bridge's state read (one getJointStates on a fixed base)
        self.geometry = geometry
        self.query_distance = float(query_distance)
        model = bridge.model
        templates = contact_elements(model) if contacts is None else tuple(contacts)
        self.contacts = [c.for_run(model) for c in templates]
        self._own_grounds: list[int] = []
        if ground_body is not None:   # (before, an id of no body was taken: the contact had no ground, silently)
            ground_body = existing_body(bridge.client, body_argument(ground_body, "ground_body"), "ground_body")
            if ground_body == bridge.body:
                raise ModelError(f"argument 'ground_body' is {ground_body}, the bridge's own body",
                                 attribute="ground_body", expected="another body of the client (a plane, a box)")
        self._ground_body = ground_body
        self.scene = bool(scene)
        self._scene: list[int] = []            # other bodies in the client (see the module docstring)
        self._seen: set[int] = set()
        self._n_bodies = -1
        self._sources: list = [None] * len(self.contacts)   # per contact: (body, link, radius offset) for the scene
        self._pairs: dict[tuple[int, int, int], object] = {}  # (contact, body, link) → Contact run copy
        self._retired: list[tuple[tuple[int, int, int], object]] = []   # pairs of removed bodies (their logs)
        self._touching: set[tuple[int, int, int]] = set()    # scene pairs in contact (their onsets: `_double_ground`)
        self._double_named: set[int] = set()                  # scene bodies `_double_ground` named
        self._both_named: set[int] = set()                    # scene bodies `_both_push` named
        self._rigid_named: set[int] = set()                   # scene bodies `_rigid_too` named
        self._reactions: list = []            # (body, link, −F, p) of the last torques() for the other bodies
        #: steps to the next chatter watch (`_watch_chatter`; None: no contact has switched friction)
        self._chatter_in = (CHATTER_EVERY if any(c.friction_law.discontinuous for c in templates) else None)
        self._chatter_named: set[str] = set()   # contacts the chatter watch named
        #: (x, ẋ) read by the last torques() on its compiled path (Bridge.apply reuses it: one state read per step),
        #: None otherwise
        self.state_read = None
        #: False: `torques()` asks for lazy kinematics (see `kinematics`); True: full kinematics every step (for
        #: callers that record the points' velocities in flight from `kinematics()`)
        self.far_jacobians = False
        #: per contact: (PyBullet link index, ground body) for PyBullet geometry, None for the analytic one
        self._queries: list[tuple[int, int] | None] = [None] * len(self.contacts)
        if geometry == "pybullet":
            self._set_up_queries(ground_body)
        grounds = set(self._own_grounds) | ({int(ground_body)} if ground_body is not None else set())
        for ground in sorted(grounds):
            self.disable_rigid_contact(ground)
        self._marks: list[int] = []            # user data CONTACT_KEY on this body's contact links (scene on)
        #: torques() watches the client's body count: for the scene, and for a `ground_body` queried for geometry
        #: (its removal is followed: `_ground_gone`)
        self._counting = self.scene or any(q is not None for q in self._queries)
        if self.scene:
            self._set_up_sources()
            self._scan_scene()
            for link in self._contact_links():
                self._marks.append(bridge.pybullet.addUserData(bridge.body, CONTACT_KEY, self._stamp, link,
                                                               physicsClientId=bridge.client))
        self._set_up_kernels()
        self.restart()

    def restart(self) -> None:
        """Fresh discrete states and logs at the bridge's current state (called by `Bridge.reset_tree`): a contact
        already touching its ground starts an initial interval, as in the engine's `start_run`. The first
        `torques()` after it starts them again from the state it reads (`_first_torques`)."""
        self._begin()
        self._begun = tuple(np.array(part, dtype=float) for part in self._read_state())   # (copies)
        self.torques = self._first_torques   # (for one call: the class's torques() then runs without a test)

    def _first_torques(self) -> np.ndarray:
        """`torques()` of the first apply() after the bridge wrote a state (construction, `bridge.reset`): the
        contacts start from the state read now, so that a resetJointState, resetBasePositionAndOrientation or
        restoreState of the user's before that apply() is the run's start, as for the engine started there. The
        watch has no step yet to find such a jump by (`after_jump` restarts the episodes after later ones): before,
        the episode begun at the bridge's state kept its δ̇⁻ (a Hu–Guo ball reset into its contact at 0.5 m/s rose
        to the rebound of the 2 m/s it was built with, 5e-3 m above the engine's)."""
        del self.torques
        now = self._read_state()
        if not all(np.array_equal(a, b) for a, b in zip(now, self._begun)):   # (unchanged: begun already, warned)
            self._begin()
        return self.torques()

    def _begin(self) -> None:
        """Every contact's discrete state and log begun afresh at the state PyBullet holds (`restart`)."""
        model = self.bridge.model
        self.contacts = [c.for_run(model) for c in self.contacts]
        self._pairs.clear()
        self._retired.clear()
        t = self.bridge.time
        for contact, kin in zip(self.contacts, self.kinematics()):
            contact.begin(model, t, kin)
        self._reset_rows()

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
        if fallback and self._warn:
            warnings.warn(f"{self.bridge.model.file}: contacts without a matching URDF collision sphere use the "
                          "analytic point/sphere–plane geometry on the bridge: " + "; ".join(fallback),
                          RuntimeWarning, stacklevel=3)

    def _collision_sphere(self, contact) -> tuple[int | None, str | None]:
        """(PyBullet link index, None) if `contact`'s link has exactly its sphere as collision shape, else
        (None, reason)."""
        from biobullet.spatial.rotations import quaternion_to_matrix
        p, c, body = self.bridge.pybullet, self.bridge.client, self.bridge.body
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
        p, c = self.bridge.pybullet, self.bridge.client
        shape = p.createCollisionShape(p.GEOM_PLANE, planeNormal=list(ground.normal), physicsClientId=c)
        plane = p.createMultiBody(0, shape, basePosition=(ground.height * ground.n).tolist(), physicsClientId=c)
        p.setCollisionFilterGroupMask(plane, -1, 0, 0, physicsClientId=c)
        self._mark_query(plane)
        self._own_grounds.append(plane)
        return plane

    def disable_rigid_contact(self, ground_body: int) -> None:
        """Switch off PyBullet's contact between every link carrying a `<contact>` and `ground_body`."""
        p, c, body = self.bridge.pybullet, self.bridge.client, self.bridge.body
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
        p, c = self.bridge.pybullet, self.bridge.client
        owned = self._own_grounds + [s[0] for s in self._sources if s is not None and s[0] != self.bridge.body]
        self._own_grounds, self._sources = [], [None] * len(self.contacts)
        for data in self._marks:   # (a body_id of the user's stays: it is no bridged contact link any more)
            try:
                if p.getUserData(data, physicsClientId=c) in (self._stamp, self._stamp.encode()):
                    p.removeUserData(data, physicsClientId=c)
            except p.error:
                pass
        self._marks = []
        for body in owned:   # only what is still ours: after resetSimulation an old id is another body (before,
            # a stale bridge's close() removed the next episode's robot at its query sphere's id)
            try:
                if self._ours(body):
                    p.removeBody(body, physicsClientId=c)
            except p.error:
                pass

    # ------------------------------------------------------------------ compiled laws and state rows
    def _set_up_kernels(self) -> None:
        """Compiled twins of the laws (`contact.kernels`): per contact its packed laws (None: a law without a twin:
        the Python laws serve); the contacts on their analytic plane with twins go to one
        `GroundContacts` call per step."""
        self._rows: dict = {}     # contact index or scene key → state row (the discrete state while a run goes)
        self._records: list = []  # the last torques(): (name, ContactKinematics or None, force or row index, body, link)
        self._update = contact_update_kernel()
        self._python_steps: dict = {}   # contact index → `_contact_update_py` with Python laws bound
        self._packed: list = []
        for contact in self.contacts:
            self._packed.append(pack_laws(contact))
        ground = [k for k, (query, packed) in enumerate(zip(self._queries, self._packed))
                  if query is None and packed is not None]
        self._ground = None
        if ground:
            self._ground = GroundContacts(self.bridge.model, [self.contacts[k] for k in ground])
        self._ground_ids = ground if self._ground is not None else []
        self._ground_records = [(self.contacts[k].name, None, i, None, None) for i, k in enumerate(self._ground_ids)]
        self._n_tangent = self.bridge.model.n_tangent
        if self._ground is not None:   # the call's constant arguments (one Python call per step)
            g = self._ground
            self._ground_args = (g.meta, g.body, g.ancestry, g.rows)
            # its compiled entry for the types `torques` passes (the bridge's state read: C-contiguous float arrays),
            # without the dispatcher's per-call matching of nine arguments and the rows' NamedTuple (≈ 2 µs a step)
            from biobullet.core.jit import matched_entry
            model = self.bridge.model
            self._ground_kernel = matched_entry(g.kernel, *self._ground_args, np.zeros(model.n_config),
                                                np.zeros(model.n_tangent), 0.0, 1e-3, np.zeros(model.n_tangent))
        self._other_ids = [k for k in range(len(self.contacts)) if k not in self._ground_ids]

    def _reset_rows(self) -> None:
        """State rows from the (fresh) ContactStates; the ground kernel's rows are views into its array."""
        self._rows.clear()
        self._records = []
        for i, k in enumerate(self._ground_ids):
            self._rows[k] = state_row(self.contacts[k].state, out=self._ground.state[i])

    def sync_states(self) -> None:
        """Copy the state rows of the compiled laws into the contacts' ContactState objects (slip mode, the open
        interval's log). Onsets and separations are replayed on them as they happen; `intervals()` calls this."""
        for key, row in self._rows.items():
            pull_state(row, (self.contacts[key] if isinstance(key, int) else self._pairs[key]).state)

    def _account(self, key, contact, kin: ContactKinematics, t: float, dt: float):
        """One contact's step (`contact.kernels._contact_update_py`: discrete state, laws, interval log) on its
        state row — compiled when its laws have twins, else run by Python with the law objects bound; the world
        force F = F_N n + F_T (N) or None."""
        index = key if isinstance(key, int) else key[0]
        packed = self._packed[index]
        if packed is None:
            step = self._python_steps.get(index)
            if step is None:
                step = self._python_steps[index] = contact_update_by_laws(contact.normal_law, contact.friction_law)
            packed = ContactLaws(0, None, 0, None, contact.normal_law.acts_outside_contact,
                                 contact.normal_law.needs_impact_velocity, contact.friction_law.discontinuous)
        else:
            step = self._update
        row = self._rows.get(key)
        if row is None:
            row = self._rows[key] = state_row(contact.state)
        if step(packed, row, kin.delta, kin.delta_dot, np.asarray(kin.slip, dtype=float), kin.normal, t, dt):
            pull_event(row, contact.state, t)
        force = row[FORCE:FORCE + 3]
        return force.copy() if force.any() else None

    # ------------------------------------------------------------------ geometry
    def kinematics(self, lazy: bool = False) -> list[ContactKinematics]:
        """ContactKinematics (δ, δ̇, p, v_t, n, J_p) of every contact at the bridge's current state. lazy: a contact
        apart from its ground (δ ≤ 0, not in contact, no force outside contact) gets δ, p and n only (rates, slip
        and Jacobian zero) — what `torques()` needs, sparing a point Jacobian per contact and step in flight."""
        return self._kinematics_of(range(len(self.contacts)), lazy)

    def _kinematics_of(self, indices, lazy: bool = False) -> list[ContactKinematics]:
        model = self.bridge.model
        _, x, xd = self.bridge.state()
        placements = []   # computed by the first queried contact that needs a Jacobian (none in flight)
        out = []
        for k in indices:
            contact, query = self.contacts[k], self._queries[k]
            if query is None:
                kin = None
                if lazy and not contact.normal_law.acts_outside_contact and not contact.state.active:
                    kin = contact.kinematics(model, x, None, need_jacobian=False)   # δ only
                    if kin.delta > 0.0:
                        kin = None
                out.append(kin if kin is not None else contact.kinematics(model, x, xd))
            else:
                out.append(self._queried_kinematics(contact, query, x, xd, placements, lazy))
        return out

    def _queried_kinematics(self, contact, query, x, xd, placements, lazy: bool = False) -> ContactKinematics:
        p, c, body = self.bridge.pybullet, self.bridge.client, self.bridge.body
        model = self.bridge.model
        index, ground = query
        distance = OUTSIDE_QUERY_DISTANCE if contact.normal_law.acts_outside_contact else self.query_distance
        points = p.getClosestPoints(body, ground, distance, index, -1, physicsClientId=c)
        if not points:  # far from the ground: no force (the Jacobian is not needed)
            return ContactKinematics(-distance, 0.0, np.full(3, np.nan), np.zeros(3), contact.ground.n,
                                     np.zeros((3, model.n_tangent)))
        nearest = min(points, key=lambda item: item[8])
        delta = -float(nearest[8])
        normal = np.asarray(nearest[7], dtype=float)
        point = np.asarray(nearest[5], dtype=float) + point_lift(contact.normal_law.point_depth, delta) * normal
        if (lazy and delta <= 0.0 and not contact.normal_law.acts_outside_contact
                and not contact.state.active):   # apart: δ only (see `kinematics`)
            return ContactKinematics(delta, 0.0, point, np.zeros(3), normal, np.zeros((3, model.n_tangent)))
        if not placements:
            placements.extend(body_placements(model, x))
        rotation, origin = frame_placement(model, x, contact.link, placements)
        origin = origin + self.bridge.base_origin()   # (point is PyBullet's, in its world: `Bridge.base_origin`)
        jac = frame_jacobian(model, x, contact.link, rotation.T @ (point - origin))[:3]
        velocity = jac @ xd
        normal_speed = float(normal @ velocity)
        return ContactKinematics(delta, -normal_speed, point, velocity - normal_speed * normal, normal, jac)

    # ------------------------------------------------------------------ forces
    def torques(self) -> np.ndarray:
        """τ (n_tangent, tree order) of all contacts at the bridge's current state (ground and scene bodies);
        updates the discrete states and queues the reactions on the other bodies (`apply_reactions`).

        The contacts on their analytic plane whose laws have compiled twins take one `GroundContacts` call
        (kinematics from the state read once, laws, state, τ); the others (PyBullet geometry, plug-in laws, numba
        off, `far_jacobians`, an overridden `kinematics`) their ContactKinematics here, with the compiled laws
        where they have twins."""
        bridge = self.bridge
        t, dt = bridge.time, bridge.dt
        if self._reactions:
            self._reactions = []
        if self._ground is not None and not self.far_jacobians and "kinematics" not in self.__dict__:
            x, xd = self.state_read = self._read_state()   # one getJointStates (fixed base), kept for apply()
            tau = np.zeros(self._n_tangent)
            events = self._ground_kernel(*self._ground_args, x, xd, t, dt, tau)
            if events:
                self._replay(events, t)
            records = self._ground_records   # (copied before appending to it)
            others = self._other_ids
            pairs = zip(others, self._kinematics_of(others, lazy=True)) if others else ()
        else:
            self.state_read = None
            records = []
            pairs = enumerate(self.kinematics() if self.far_jacobians else self.kinematics(True))
            tau = np.zeros(self._n_tangent)
        for k, kin in pairs:
            if records is self._ground_records:
                records = list(records)
            contact = self.contacts[k]
            force = self._account(k, contact, kin, t, dt)
            records.append((contact.name, kin, force, None, None))
            if force is not None:
                tau += kin.generalized(force)
        if self._counting:   # scene bodies, or a user's body standing for the file's ground (`_scan_scene`)
            if bridge.pybullet.getNumBodies(physicsClientId=bridge.client) != self._n_bodies:
                self._scan_scene()
            if self._scene:
                if records is self._ground_records:
                    records = list(records)
                for key, contact, kin, v_other in self._scene_kinematics():
                    force = self._account(key, contact, kin, t, dt)
                    records.append((f"{contact.name}@{key[1]}:{key[2]}", kin, force, key[1], key[2]))
                    if force is not None:
                        tau += kin.generalized(force)
                        self._reactions.append((key[1], key[2], -force, kin.point))
                    if kin.delta <= 0.0:
                        self._touching.discard(key)
                    elif key not in self._touching:   # an onset: the file's ground or another bridge's law again?
                        self._touching.add(key)
                        self._double_ground(key, kin)
                        self._both_push(key, kin)
                        self._rigid_too(key)
        self._records = records
        if self._chatter_in is not None:
            self._chatter_in -= 1
            if self._chatter_in <= 0:
                self._chatter_in = CHATTER_EVERY
                self._watch_chatter()
        return tau

    def after_jump(self) -> np.ndarray:
        """`torques()` again, after the watch found that the state read jumped since the last step (a resetJointState,
        resetBasePositionAndOrientation, resetBaseVelocity or restoreState between two apply() calls): every contact
        starts again from that state as a run does (`Contact.begin`, the reference engine's start). An interval open
        before the jump ends at it (no rebound velocity: no separation was seen; its log counts the steps before
        the jump and the first look at the state jumped to), and a contact inside its ground there opens a new one
        flagged `initial`, with δ̇⁻ the penetration rate read there — the velocity at the onset of this episode as far
        as the state tells it (floored at a restitution law's min_impact_velocity: PyBullet's
        resetBasePositionAndOrientation zeroes the base velocity). Before, a restoreState into a contact kept the
        δ̇⁻ of the episode the bridge was in (a Hu–Guo ball's rebound 0.297 m where the reference engine started from
        the restored state reaches 0.328 m), and a jump into the ground opened an episode counted as an impact."""
        t = self.bridge.time
        self.sync_states()
        for key, row in self._rows.items():
            state = (self.contacts[key] if isinstance(key, int) else self._pairs[key]).state
            if row[ACTIVE] == 0.0:
                continue
            row[ACTIVE] = 0.0
            if state.current is not None:
                if state.current.start == t:   # opened by this step's first look: the new episode replaces it
                    state.intervals.pop()
                else:
                    state.current.end = t
            state.active = False
        tau = self.torques()
        for key in self._rows:
            current = (self.contacts[key] if isinstance(key, int) else self._pairs[key]).state.current
            if current is not None and current.start == t:
                current.initial = True
        return tau

    def _watch_chatter(self) -> None:
        """One BridgeWarning per contact whose switched friction chatters: CHATTER_REVERSALS slide reversals in a row
        (`contact.kernels.REVERSALS`). Switched Coulomb has no stiction, and on the bridge a step that crosses the
        slip's stop leaves a slip of O(μ g dt), far above REST_SPEED, so the slide reverses instead of resting:
        a contact the law should hold never rests. A block on an incline below the friction angle creeps at a rate
        proportional to dt (2.9e-4 m in 1 s at dt = 1e-4 s, 1.4e-4 m at 5e-5 s), a rolling ball's friction
        flips sign every step — silently, where the reference engine stops with an error naming the contact."""
        for key, row in self._rows.items():
            contact = self.contacts[key] if isinstance(key, int) else self._pairs[key]
            if row[REVERSALS] < CHATTER_REVERSALS or contact.name in self._chatter_named:
                continue
            self._chatter_named.add(contact.name)
            from biobullet.bridge.lifecycle import BridgeWarning
            law, dt = contact.friction_law, self.bridge.dt
            warnings.warn(f"{contact.source.file}: {contact.source.element}: friction_law '{law.law_name}' has no "
                          f"stiction: on the bridge its slide reversed {int(row[REVERSALS])} times in a row (slip "
                          "≈ μ g dt after each step that crosses the stop), so a contact the law should hold at rest "
                          "(a block on an incline below the friction angle, a rolling wheel) creeps or chatters at "
                          f"a rate set by the time step (first order in dt = {dt:.3g} s). Choose a regularized law "
                          "(friction_law=\"regularized\", \"stribeck\" or \"opensim\"), which holds it by "
                          "creeping at a slip speed set by its v0", BridgeWarning, stacklevel=5)

    def _double_ground(self, key: tuple[int, int, int], kin: ContactKinematics) -> None:
        """One BridgeWarning when a scene pair's onset (δ > 0) finds the contact inside the file's own ground as
        well, pushed the same way (normals within 2.6°): a plane loaded where the file's ground is (pybullet_data's
        plane.urdf at z = 0, PyBullet's most common first line) pushes the contact a second time. Measured on a
        Hu–Guo ball dropped from 0.5 m: peak normal force 524 N instead of the reference engine's 400 N, silently."""
        contact = self.contacts[key[0]]
        if key[1] in self._double_named:
            return
        _, x, _ = self.bridge.state()
        ground = contact.kinematics(self.bridge.model, x, None, need_jacobian=False)
        inside = ground.delta > 0.0 or abs(ground.delta - kin.delta) <= 1e-6   # (an onset on both, to round-off)
        if inside and float(np.asarray(kin.normal) @ np.asarray(contact.ground.n)) > 0.999:
            self._double_named.add(key[1])
            from biobullet.bridge.lifecycle import BridgeWarning
            warnings.warn(f"{self.bridge.model.file}: contact {contact.name!r} touches PyBullet body {key[1]} (link "
                          f"{key[2]}) inside the model file's own ground (penetration {kin.delta:.3g} m there, "
                          f"{ground.delta:.3g} m in the file's ground, the same direction): both push it, so it "
                          "bears twice the file's contact force at the same penetration (a plane loaded where the "
                          f"file's <contact> ground is). Remedy: Bridge(..., ground_body={key[1]}) to let that body "
                          "stand for the file's ground, or scene_contacts=False, or remove the body", BridgeWarning,
                          stacklevel=5)

    def _both_push(self, key: tuple[int, int, int], kin: ContactKinematics) -> None:
        """One BridgeWarning when a scene pair's onset is on a link of another bridged body that carries a
        `<contact>` of its own (`CONTACT_KEY`): that bridge finds the same touch from its side, applies its law and
        the reaction on this body, so the pair bears the sum of both laws. Measured: two 1 kg balls (Kelvin–Voigt,
        k = 1e4 N/m each) meeting at 2 m/s overlapped by 0.0100 m instead of one law's 0.0141 m, silently."""
        if key[1] in self._both_named:
            return
        p, c = self.bridge.pybullet, self.bridge.client
        if p.getUserDataId(key[1], CONTACT_KEY, key[2], physicsClientId=c) < 0:
            return
        self._both_named.add(key[1])
        from biobullet.bridge.lifecycle import BridgeWarning
        warnings.warn(f"{self.bridge.model.file}: contact {self.contacts[key[0]].name!r} touches PyBullet body "
                      f"{key[1]} (link {key[2]}), a body another Bridge runs with a <contact> on that link: each "
                      "bridge finds the touch and applies its own law and the reaction on the other body, so the pair "
                      f"bears the sum of both laws' forces (penetration {kin.delta:.3g} m). Remedy: "
                      "scene_contacts=False on one of the two bridges (the other's law then acts alone on the pair)",
                      BridgeWarning, stacklevel=5)

    def _rigid_too(self, key: tuple[int, int, int]) -> None:
        """One BridgeWarning when a scene pair's onset finds PyBullet's own rigid contact acting on the same pair
        in the last step: the pair filter the bridge set (`_scan_scene`) was switched on again by the user
        (setCollisionFilterPair(..., enableCollision=1)), and PyBullet's contact, solved inside stepSimulation,
        pushes beside the file's law. Measured: a Hu–Guo ball (restitution 0.8) dropped on a box was held at its top
        (rebound 0 instead of the engine's 0.028 m), silently. Checked at onsets only (no per-step cost)."""
        if key[1] in self._rigid_named:
            return
        p, c, body = self.bridge.pybullet, self.bridge.client, self.bridge.body
        link = self.bridge.map.link_index.get(self.contacts[key[0]].link, -1)
        if not p.getContactPoints(body, key[1], link, key[2], physicsClientId=c):
            return
        self._rigid_named.add(key[1])
        from biobullet.bridge.lifecycle import BridgeWarning
        warnings.warn(f"{self.bridge.model.file}: PyBullet's own rigid contact acts between link "
                      f"{self.contacts[key[0]].link!r} and PyBullet body {key[1]} (link {key[2]}) beside contact "
                      f"{self.contacts[key[0]].name!r}: the collision filter the bridge switched off for the pair was "
                      "switched on again (setCollisionFilterPair(..., enableCollision=1)) — or the body has more links "
                      "than one removed at its id between the same two apply() calls — so both push it and the "
                      "file's law is not what the pair bears. Remedy: leave PyBullet's contact off for that pair "
                      "(setCollisionFilterPair(..., enableCollision=0)), or scene_contacts=False to leave the scene "
                      "to PyBullet", BridgeWarning, stacklevel=5)

    def _replay(self, events: int, t: float) -> None:
        """After the ground call: its onsets and separations on the ContactState objects (or the divergence)."""
        if events < 0:   # PyBullet diverged: state() raises the DivergenceError naming dt
            self.bridge.state()
        for row, k in zip(self._ground.state, self._ground_ids):
            if row[EVENT]:
                pull_event(row, self.contacts[k].state, t)

    @property
    def last_forces(self) -> dict[str, ContactForce]:
        """`forces()` of the last step."""
        out = {}
        for name, kin, force, body, link in self._records:
            if kin is None:   # a row of the ground kernel
                row = self._ground.state[force]
                n = row[NORMAL:NORMAL + 3].copy()
                f = row[FORCE:FORCE + 3]
                normal = float(f @ n)
                out[name] = ContactForce(normal=normal, friction=f - normal * n, point=row[POINT:POINT + 3].copy(),
                                         penetration=float(row[DELTA]), body=None, link=None)
            else:
                out[name] = _record(kin, force, body, link)
        return out

    def apply_reactions(self) -> None:
        """−F on the other bodies at the contact points (applyExternalForce, cleared by PyBullet after the step).
        A link's force is placed by its cached transform, which `_scene_kinematics` refreshed this step."""
        if not self._reactions:
            return
        p, c = self.bridge.pybullet, self.bridge.client
        for body, link, force, point in self._reactions:
            p.applyExternalForce(body, link, force.tolist(), point.tolist(), p.WORLD_FRAME, physicsClientId=c)

    # ------------------------------------------------------------------ scene bodies
    def _set_up_sources(self) -> None:
        """Per contact: its link's collision sphere (offset 0) or a query sphere body (offset r_query − r)."""
        p, c = self.bridge.pybullet, self.bridge.client
        for k, contact in enumerate(self.contacts):
            index, reason = self._collision_sphere(contact)
            self._sources[k] = (self.bridge.body, index, 0.0) if reason is None else self._query_sphere(contact)

    def _query_sphere(self, contact) -> tuple[int, int, float]:
        """A query sphere body for `contact` (collision group and mask 0: it touches nothing): (body, −1, offset)."""
        p, c = self.bridge.pybullet, self.bridge.client
        radius = max(contact.radius, QUERY_RADIUS)
        shape = p.createCollisionShape(p.GEOM_SPHERE, radius=radius, physicsClientId=c)
        sphere = p.createMultiBody(0, shape, basePosition=[0.0, 0.0, -1e6], physicsClientId=c)
        p.setCollisionFilterGroupMask(sphere, -1, 0, 0, physicsClientId=c)
        self._mark_query(sphere)
        return sphere, -1, radius - contact.radius

    def _ours(self, body: int) -> bool:
        """Whether `body` is still one of this object's query bodies (it carries its mark)."""
        p, c = self.bridge.pybullet, self.bridge.client
        data = p.getUserDataId(body, QUERY_KEY, physicsClientId=c)
        return data >= 0 and p.getUserData(data, physicsClientId=c) in (self._stamp, self._stamp.encode())

    def _renew_query_objects(self, current: set[int]) -> None:
        """Make again the query spheres and planes the user removed — a cleanup loop over every body but the robot
        removes them too. Before, the contact queried a body that was gone (no contact with anything: a ball fell
        through a box made afterwards), and a user's body given the sphere's id was moved to the contact every step
        and queried as the sphere, silently."""
        for k, source in enumerate(self._sources):
            if source is not None and source[0] != self.bridge.body and not (source[0] in current
                                                                              and self._ours(source[0])):
                self._seen.discard(source[0])   # (its id, if taken again, is a new body: scanned)
                self._sources[k] = self._query_sphere(self.contacts[k])
        for old in [plane for plane in self._own_grounds if not (plane in current and self._ours(plane))]:
            self._seen.discard(old)
            self._own_grounds.remove(old)
            users = [k for k, query in enumerate(self._queries) if query is not None and query[1] == old]
            plane = self._create_plane(self.contacts[users[0]].ground) if users else None
            for k in users:
                self._queries[k] = (self._queries[k][0], plane)
            if plane is not None:
                self.disable_rigid_contact(plane)

    def _contact_links(self) -> list[int]:
        """PyBullet link indices of the model's links that carry a `<contact>`."""
        index = self.bridge.map.link_index
        return sorted({index[k.link] for k in self.contacts if k.link in index})

    def _ground_gone(self) -> None:
        """The user removed the `ground_body` that stood for the file's ground: its contacts take the file's own
        analytic ground from now on, named once (before, getClosestPoints found nothing and they had no ground at
        all: a ball fell through where its <contact> ground was, silently)."""
        gone, self._ground_body = self._ground_body, None
        names = [c.name for c, q in zip(self.contacts, self._queries) if q is not None and q[1] == gone]
        self._queries = [None if q is not None and q[1] == gone else q for q in self._queries]
        if names:
            from biobullet.bridge.lifecycle import BridgeWarning
            warnings.warn(f"{self.bridge.model.file}: PyBullet body {gone}, the ground_body standing for the model "
                          f"file's ground of contact(s) {', '.join(map(repr, names))}, was removed from the client: "
                          "they take the file's own <contact> ground (the analytic plane of ground_height / "
                          "ground_normal) from now on. Remedy: a new Bridge(..., ground_body=...) for another body",
                          BridgeWarning, stacklevel=5)

    def _mark_query(self, body: int) -> None:
        """Mark `body` as a query object of a bridge (`QUERY_KEY`): no bridge takes it for a scene body."""
        self.bridge.pybullet.addUserData(body, QUERY_KEY, self._stamp, physicsClientId=self.bridge.client)

    def _scan_scene(self) -> None:
        """Add bodies that appeared since the last scan (one getNumBodies call when nothing changed). A body removed
        is forgotten with its pairs' states: PyBullet gives its id to the next body created, which is scanned as
        new (before, an id once seen was never scanned again: a box put where a removed one had been was no scene
        body, and its PyBullet contact stayed switched off by the pair filter set for the old one)."""
        p, c, body = self.bridge.pybullet, self.bridge.client, self.bridge.body
        count = p.getNumBodies(physicsClientId=c)
        if count == self._n_bodies:
            return
        self._n_bodies = count
        current = {p.getBodyUniqueId(i, physicsClientId=c) for i in range(count)}
        self._renew_query_objects(current)
        if self._ground_body is not None and self._ground_body not in current:
            self._ground_gone()   # (its id may come back as another body: then a scene body)
        excluded = {body} | set(self._own_grounds)
        if self._ground_body is not None:
            excluded.add(self._ground_body)
        links = self._contact_links()
        if not self.scene:
            return
        self._scene = [b for b in self._scene if b in current]
        self._seen &= current
        for key in [key for key in self._pairs if key[1] not in current]:   # (their logs stay in intervals())
            pair = self._pairs.pop(key)
            row = self._rows.pop(key, None)
            if row is not None:
                pull_state(row, pair.state)
            self._retired.append((key, pair))
            self._touching.discard(key)
        self._double_named &= current
        self._both_named &= current
        self._rigid_named &= current
        for other in sorted(current - self._seen):
            self._seen.add(other)
            if other in excluded or p.getUserDataId(other, QUERY_KEY, physicsClientId=c) >= 0:
                continue
            self._scene.append(other)
            for link in links:                  # PyBullet's rigid contact off on every link of the other body
                for other_link in range(-1, p.getNumJoints(other, physicsClientId=c)):
                    p.setCollisionFilterPair(body, other, link, other_link, 0, physicsClientId=c)

    def _scene_kinematics(self):
        """(key, pair contact, ContactKinematics, other body's point velocity) of every (contact, body, link) pair
        within the query distance, and far kinematics for pairs that were active and are no longer near."""
        p, c = self.bridge.pybullet, self.bridge.client
        model = self.bridge.model
        _, x, xd = self.bridge.state()
        placements = body_placements(model, x)
        # (PyBullet's world: a fixed base loaded at a basePosition, or moved since — before, its scene contacts
        # were queried at the model's positions: a pendulum hung 1 m up passed through the box under it)
        shift = self.bridge.base_origin()
        seen = set()
        out = []
        for k, (contact, source) in enumerate(zip(self.contacts, self._sources)):
            rotation, origin = frame_placement(model, x, contact.link, placements)
            origin = origin + shift
            centre = rotation @ contact.xyz + origin
            body, link, offset = source
            if body != self.bridge.body:   # a query sphere (the model's own base link is link −1 too: not moved)
                p.resetBasePositionAndOrientation(body, centre.tolist(), [0.0, 0.0, 0.0, 1.0], physicsClientId=c)
            distance = OUTSIDE_QUERY_DISTANCE if contact.normal_law.acts_outside_contact else self.query_distance
            for other in self._scene:
                stale = True   # the other body's link transforms are PyBullet's cached ones (see `_point_velocity`)
                nearest: dict[int, tuple] = {}
                points = p.getClosestPoints(body, other, distance, link, physicsClientId=c)
                for item in points:
                    if item[4] not in nearest or item[8] < nearest[item[4]][8]:
                        nearest[item[4]] = item
                for other_link, item in nearest.items():
                    key = (k, other, other_link)
                    seen.add(key)
                    pair = self._pair(key, contact)
                    normal = np.asarray(item[7], dtype=float)
                    delta = -(float(item[8]) + offset)
                    point = centre - (contact.radius - point_lift(contact.normal_law.point_depth, delta)) * normal
                    jac = frame_jacobian(model, x, contact.link, rotation.T @ (point - origin))[:3]
                    v_other = self._point_velocity(other, other_link, point, refresh=stale and other_link != -1)
                    stale = stale and other_link == -1
                    relative = jac @ xd - v_other
                    normal_speed = float(normal @ relative)
                    kin = ContactKinematics(delta, -normal_speed, point,
                                            relative - normal_speed * normal, normal, jac)
                    out.append((key, pair, kin, v_other))
        for key, pair in self._pairs.items():
            if key not in seen and pair.state.active:
                far = ContactKinematics(-self.query_distance, 0.0, np.full(3, np.nan), np.zeros(3),
                                        np.array([0.0, 0.0, 1.0]), np.zeros((3, model.n_tangent)))
                out.append((key, pair, far, np.zeros(3)))
        return out

    def _pair(self, key, contact):
        pair = self._pairs.get(key)
        if pair is None:
            pair = self._pairs[key] = contact.for_run(self.bridge.model)
        return pair

    def _point_velocity(self, body: int, link: int, point: np.ndarray, refresh: bool = False) -> np.ndarray:
        """World velocity of the material point of (body, link) at `point` (m/s). refresh: recompute the body's
        forward kinematics first — PyBullet keeps each link's world transform (its pose here, its placement of a
        WORLD_FRAME force in `apply_reactions`) cached from the last step's start; one refresh per body and step
        brings all its links up to date. A base (link −1) is always read at its current pose."""
        p, c = self.bridge.pybullet, self.bridge.client
        if link == -1:
            linear, angular = p.getBaseVelocity(body, physicsClientId=c)
            position = p.getBasePositionAndOrientation(body, physicsClientId=c)[0]
        else:
            state = p.getLinkState(body, link, computeLinkVelocity=1, computeForwardKinematics=refresh,
                                   physicsClientId=c)
            position, linear, angular = state[0], state[6], state[7]
        return np.asarray(linear) + np.cross(np.asarray(angular), point - np.asarray(position))

    def forces(self) -> dict[str, dict]:
        """The contact forces of the last step, per contact (ground) and per `CONTACT@BODY:LINK` (scene): normal
        force "normal" (N), friction "friction" (world, N), "point" (world, m), "penetration" (m), "body", "link"
        (None for the file's ground)."""
        return self.last_forces

    def intervals(self) -> list[dict]:
        """The contact intervals of all contacts (engine format, plus `contact`; scene pairs also `body`, `link`)."""
        self.sync_states()
        out = [{**i.as_dict(), "contact": c.name} for c in self.contacts for i in c.state.intervals]
        out += [{**i.as_dict(), "contact": c.name, "body": key[1], "link": key[2]}
                for key, c in [*self._retired, *self._pairs.items()] for i in c.state.intervals]
        return sorted(out, key=lambda item: item["start"])


class ContactForce(dict):
    """One contact's force of the last step, a labelled record: keys (also attributes) "normal" (N, along the
    ground normal), "friction" (N, world axes), "point" (m, world), "penetration" (m), "body", "link" (the scene
    body's ids; None for the file's ground)."""

    UNITS = {"normal": "N (along the contact normal)", "friction": "N (world axes)", "point": "m (world)",
             "penetration": "m"}

    def __getattr__(self, key: str):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __repr__(self) -> str:
        def text(value) -> str:
            return np.array2string(np.asarray(value), precision=4) if np.ndim(value) else f"{value:.6g}"
        parts = [f"{key}={text(self[key])} {unit}" for key, unit in self.UNITS.items() if key in self]
        where = "the file's ground" if self.get("body") is None else f"body {self['body']} link {self['link']}"
        return f"ContactForce({', '.join(parts)}; against {where})"


def _record(kin: ContactKinematics, force, body, link) -> ContactForce:
    normal = 0.0 if force is None else float(force @ kin.normal)
    friction = np.zeros(3) if force is None else force - normal * kin.normal
    return ContactForce(normal=normal, friction=friction, point=kin.point, penetration=kin.delta, body=body,
                        link=link)
