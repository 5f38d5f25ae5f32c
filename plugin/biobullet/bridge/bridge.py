"""The PyBullet bridge: PyBullet steps the model, biobullet adds what PyBullet cannot say — one object for the
whole model file.

`Bridge(model)` loads the URDF text `load_model` checked (`connection.checked_text`; flexible links first expanded
into rigid segments, `expand_flexible_links`), switches off PyBullet's joint motors, link damping and rigid contact
on compliant-contact links, and refuses an element it cannot apply (`check_elements`: one ModelError naming it).
Each `step()` = `apply()` + `stepSimulation()`; in a user's own loop, call `apply()` then `p.stepSimulation()`.
`apply()`:

1. reads the tree state (x, ẋ) from PyBullet (biobullet order, see `conventions.PyBulletMap`) and checks it
   against the last step (`bridge.outside`: resets, PyBullet motors, contacts, outside forces, engine changes are
   seen there, the state is put back onto the rows and the cause named once; runaways raise DivergenceError);
2. τ = user torques + contact forces (`bridge.contact.BridgeContacts`: the file's ground and every body in the
   scene; the reactions go to the other bodies) + force elements (`forces.applied_forces`: springs, dampers,
   stops, actuators, the segments' bending springs);
3. M = calculateMassMatrix, h = calculateInverseDynamics(x, ẋ, 0) (Coriolis, centrifugal, gravity) — or the
   same from biobullet's compiled recursions where they equal PyBullet's (`own_dynamics`) and for bodies with
   spherical joints, which PyBullet's calls do not take (one place: `Bridge.tree_mass_and_bias`);
4. constraint torques τ_c = Φ_xᵀλ from THE constrained solve (`constraints.solve`, compiled kernels in
   `bridge.kernels`): M ẍ = τ − h + Φ_xᵀλ, Φ_x ẍ = a* (with the bridge's own motors as more rows,
   `bridge.motors`), the end point refined by Newton's method when Taylor's target misses it (`_end_correction`);
5. τ + τ_c through setJointMotorControlArray(TORQUE_CONTROL) (a floating base gets a base wrench) — the muscles'
   share as forces along their paths instead, one external force and torque per loaded body (`bridge.muscles`);
   the clock advances by dt.

Drift correction (the target a*). PyBullet's semi-implicit Euler moves x_{n+1} = x_n + dt ẋ_n + dt² ẍ_n. With
drift="predictor" (default) the rows are asked to hold at the step's end: Φ(x_n + dt ẋ_n + dt² ẍ_n, t + dt) = 0
to first order in dt² ẍ, i.e. Φ_x ẍ = −Φ(x_n + dt ẋ_n, t + dt)/dt² — a position projection built into the
acceleration. The predicted residual comes from the rows' one evaluation per step by Taylor's formula,
Φ(x + dt ẋ, t + dt) = Φ + dt Φ̇ + ½ dt² b + O(dt³) (b = żᵀΦ_zz ż, the rows' velocity bias, z = (x, t)), so the
target is a* = −½ b − Φ̇/dt − Φ/dt²: Baumgarte's form with the dead-beat gains α = 1/(2dt), β = 1/dt but HALF the
curvature term. The residual left after each step is then O(dt³) — not the O(dt²) curvature error that the full
−b of velocity-level Baumgarte leaves for nonlinear functions and loops (for constant rows b = 0 and both agree,
solved by the null-space kernel in `_null_space_stage`). drift="baumgarte" or explicit `baumgarte=(α, β)` give
a* = −b − 2αΦ̇ − β²Φ with the velocity projection of `PROJECTION_TOLERANCE` (the previous default). The gains
belong to the bridge's `corrector` (`constraints.solve.Corrector.step_end(dt)` or `.baumgarte(α, β)`), not to
the model's shared constraint set. With the step-end target, non-constant rows are never velocity-projected.

Constant rows on a fixed base take `_null_space_stage`: the null-space method with precomputed T (ker Φ_x) and Φ_x⁺ —
(TᵀMT) y = …, a Cholesky of the small reduced mass matrix, better conditioned than the KKT matrix when links are
massless — and the PyBullet state lists go straight back to PyBullet. Other rows (loops, non-linear functions,
floating base) use the range-space (Schur complement) solve; least squares if the rows are redundant. Explicit
joint functions on any base and point/planar/revolute loops on a fixed base take `_rows_stage`: rows, springs, M, h
and the Schur solve in one compiled call (`bridge.kernels`; a floating base or spherical joints with M and h from
biobullet's recursions read PyBullet's raw state, solve and pack the torques to send in that one call,
`_apply_read_rows`, the watch looking after it). On both compiled stages M and h come from biobullet's
compiled recursions when they equal PyBullet's for this body (`own_dynamics`, checked at construction);
docs/bridge.md lists the stages.
"""
from __future__ import annotations

import math

from collections.abc import Mapping
from operator import itemgetter

import numpy as np

from biobullet.bridge.lifecycle import (attach, check_divergence, ensure_owned_body, ensure_usable, is_closed,
                                        mark_closed)
from biobullet.core.native import import_pybullet
from biobullet.core.arguments import first_flag, number_argument
from biobullet.core.errors import ModelError, SolverError, did_you_mean
from biobullet.core.jit import direct_entry
from biobullet.bridge.connection import body_argument, load_body, loaded_base_pose, prepare_body, resolve_client
from biobullet.bridge.inertia import massless_base_error, massless_links, match_inertia
from biobullet.constraints.equations import constraint_set
from biobullet.constraints.solve import ConstraintRows, Corrector, constrained_acceleration, velocity_projection
from biobullet.bridge.force_stage import ForceStage
from biobullet.forces.collection import added_generation
from biobullet.bridge.kernels import (END_MISSED, LOOP_EVALUATED, LOOP_GAP, LOOP_MISS, LOOP_RATIO, LOOP_SKIPPED,
                                     UNWATCHED)
from biobullet.bridge.outside import JUMP_TOLERANCE, PROMISE, STEP_MATCH, massless_cause
from biobullet.bridge.stability import check_stiff_elements, check_stop_penetration

DEFAULT_OWNED_DT = 1.0e-3  # s, the time step of a connection the bridge makes itself
#: the velocity projection runs only when the velocity residual would move a constraint by more than this in one
#: step (max|Φ_x ẋ + Φ_t|·dt > PROJECTION_TOLERANCE, rad or m). Below it the dead-beat Baumgarte term removes the
#: residual within the step anyway (its velocity correction −M⁻¹Φ_xᵀ(Φ_x M⁻¹Φ_xᵀ)⁻¹Φ̇ is the projection's, to
#: first order), so projecting would only cost a solve, a joint reset and a second inverse dynamics.
PROJECTION_TOLERANCE = 1.0e-8
#: float64: a tau= or generalized= of this dtype skips the check for flags (`_refuse_flags`)
FLOAT = np.dtype(float)
#: the step-end Newton correction (`Bridge._end_correction`) runs when the end point of the solve's ẍ misses the
#: rows by more than this (rad or m; a tenth of the promise `outside.PROMISE`), with at most END_ITERATIONS Newton
#: steps (each takes the residual from O(dt³) to round-off; below the tolerance the Taylor target is kept as it is)
END_TOLERANCE = 1.0e-7
#: loops' step-end Newton steps (Jacobian at the end point: quadratic convergence) go on until their rows are
#: within this (m, or direction cosines): a hundredth of the loop gap the bridge promises after a clean step (1e-9 m)
LOOP_END_TOLERANCE = 1.0e-11
END_ITERATIONS = 8
#: `kernels._end_newton_py`'s status where its Schur kernel declined (M not positive definite: `_end_newton_kkt`)
END_SCHUR_DECLINED = 2
#: on the one-call loop stage the loops' end point is evaluated (≈ 1.3–1.9 µs on the four-bar, 2.1–2.7 on the
#: squeezer) only on the steps whose predicted Taylor miss exceeds this (m; `kernels._loops_due_py`): the last known
#: miss (the last evaluation's, or the last skipped step's real gap, read free as the next step's start residual)
#: scaled by the growth of the step size, and the largest miss per step size seen. A skipped step then ends within
#: ≈ this: measured ≤ 1.04e-9 m on the bundled loops under ramps, steps and random torques (docs/bridge.md,
#: "Skipping the loops' end point") — a tenth of the 1e-8 m (1 % of the promise) the tests allow
LOOP_SKIP_BELOW = 1.0e-9
#: a projection is written back only if the correction exceeds this × (1 + max|ẋ|) (else it is round-off)
PROJECTION_FLOOR = 1.0e-14
#: biobullet's M and h replace PyBullet's calls only if they agree to this relative error (round-off) at
#: construction (`Bridge._own_dynamics`)
OWN_DYNAMICS_TOLERANCE = 1.0e-9
#: where `Bridge.tree_mass_and_bias` takes M and h
MASS_SOURCES = ("pybullet", "stored", "model", "solve", "current")
#: a joint's position and velocity in a getJointStates entry
_POSITION, _VELOCITY = itemgetter(0), itemgetter(1)


class ReactionForces(dict):
    """`Bridge.reaction_forces()`: constraint multipliers by row name (a plain dict of floats) with `units` per row,
    shown by its repr."""

    units: dict[str, str] = {}

    def __repr__(self) -> str:
        return "ReactionForces({" + ", ".join(f"{name!r}: {value:.6g} {self.units.get(name, '')}".rstrip()
                                              for name, value in self.items()) + "})"


#: most PyBullet sub-steps per step `Bridge.set_time_step` takes (10⁹ was accepted: every stepSimulation() would run
#: 10⁹ sub-steps)
MAX_SUBSTEPS = 10_000


class Bridge:
    """A biobullet Model stepped by PyBullet, every element of its file applied. See the module docstring.

    client: None (own DIRECT connection; closed by `close()` / `with`), an int physicsClientId, or a
    `pybullet_utils.bullet_client.BulletClient` (several bridges may share one). body_id: a body the user loaded
    from `model.file` (with URDF_USE_INERTIA_FROM_FILE) instead of loading it here. dt: time step (s); None keeps
    the client's (own connection: `stable_step`: 1 ms, at most ¼ of flexible links' explicit stability limit, ¼ of
    an always-acting spring's where 1 ms is beyond it).
    initial: (q0, v0), a {name: value} mapping, or None (the file's `<initial>`). record: keep every step for
    `trajectory()`. drift: "predictor" (default) or "baumgarte" (see the module docstring); baumgarte: (α, β) in
    1/s (implies "baumgarte"). velocity_projection / projection_tolerance (rad or m): Baumgarte mode only —
    project ẋ when max|Φ̇|·dt exceeds the tolerance (0: every step, inf: never; `projections` counts them).
    native_loops: close `<loop>`s with PyBullet POINT2POINT constraints instead of our constraint forces.
    joint_limits: keep PyBullet's rigid URDF `<limit>` stops (off by default: the reference engine models stops
    with `<joint_stop>`). gui: own connection in GUI mode.
    Flexible links: segments (one number or {link: number}; default the element's `segments`, else
    DEFAULT_SEGMENTS), shear (default False), air_damping (the segments' air drag, default True).
    Contacts: ground_body (a PyBullet body standing for the file's ground; None: the file's analytic plane),
    contact_geometry (None / "pybullet" / "analytic" for the file's ground; None: analytic unless a ground_body is
    given), scene_contacts (contact with every other body of the
    client, default True), query_distance (m).
    dynamics: "auto" (default): the compiled constraint stages (constant rows, explicit joint functions) compute M and h
    with biobullet's compiled recursions (`algorithms.compiled_kernels.tree_dynamics`, with the inertia PyBullet
    stores for the body's links and the bridge's gravity, both followed when changed: `engine_parameters`) when
    they equal PyBullet's calculateMassMatrix / calculateInverseDynamics for this body (checked at construction,
    `own_dynamics`), and so does the general path of a floating base (checked the same way through `PyBulletMap`'s
    tangent maps); "pybullet" always asks PyBullet. The general path of a fixed base (plug-in rows, motors,
    projections) always asks PyBullet. One method takes M and h for every caller (`tree_mass_and_bias`).
    Spherical joints (PyBullet's ball joint): state, torques and PyBullet's default spherical
    motor are handled through PyBullet's multi-DOF calls; with rows such a body takes the rows stage (explicit
    functions) or the general one (loops) with M and h from biobullet's recursions (PyBullet's calls do not take
    spherical joints), whatever `dynamics` says, without rows nothing to solve; a spherical `<limit>` is a
    ModelError unless joint_limits=True.
    """

    def __init__(self, model, client=None, *, body_id: int | None = None, dt: float | None = None,
                 baumgarte: tuple[float, float] | None = None, velocity_projection: bool = True,
                 projection_tolerance: float | None = None,
                 native_loops: bool = False, joint_limits: bool = False, gui: bool = False,
                 record: bool = False, initial=None, drift: str = "predictor",
                 segments: int | dict[str, int] | None = None, shear: bool | None = None, air_damping: bool = True,
                 ground_body: int | None = None, contact_geometry: str | None = None, scene_contacts: bool = True,
                 query_distance: float | None = None, dynamics: str = "auto", gravity: str = "model") -> None:
        import os
        p = import_pybullet()   # banner kept off the terminal (core.native)
        from biobullet.conventions import PyBulletMap
        from biobullet.model.model import Model
        if isinstance(model, (str, os.PathLike)):   # Bridge("file.urdf")
            from biobullet.dynamics.api import model_from_file
            model = model_from_file(model)
        if not isinstance(model, Model):
            raise ModelError(f"argument 'model' is {type(model).__name__}", attribute="model",
                             expected="a biobullet Model (biobullet.load_model(path))")
        self.source_model = model
        model, self.layouts = expand_flexible_links(model, segments, shear, air_damping)
        check_elements(model)
        self.model = model
        self.muscles = None   # `bridge.muscles.BridgeMuscles` once `set_excitations` is called
        self.contacts = None
        #: the pybullet module the bridge calls (its calls take `physicsClientId=self.client`)
        self.pybullet = p
        #: the bridge's token on its body (`bridge.lifecycle.Lifecycle`, set by `attach`; None before)
        self.lifecycle = None
        if gravity not in ("model", "client"):
            raise ModelError(f"argument 'gravity' is {gravity!r}", attribute="gravity",
                             expected="'model' (the file's <gravity>, set on the client) or 'client' (keep the "
                                      "client's)")
        # the contact options are checked here, before any client work, also on a model without contacts (where
        # they would otherwise be accepted and ignored)
        from biobullet.bridge.contact import GEOMETRIES
        if contact_geometry is not None and not (isinstance(contact_geometry, str)
                                                 and contact_geometry in GEOMETRIES):
            raise ModelError(f"argument 'contact_geometry' is {contact_geometry!r:.60}", attribute="contact_geometry",
                             expected="None, " + " or ".join(repr(name) for name in GEOMETRIES))
        if ground_body is not None:   # (its existence is checked on the client: BridgeContacts)
            ground_body = body_argument(ground_body, "ground_body")
        if query_distance is not None:
            query_distance = number_argument(query_distance, "query_distance", positive=True,
                                             expected="a positive distance (m)")
        self.client, self._owned = resolve_client(client, gui=gui)
        #: the user's BulletClient object, held while the bridge is open: a BulletClient disconnects its client when it
        #: is collected, so one made in the call (`Bridge(model, client=BulletClient(p.DIRECT))`) was gone before the
        #: first step (BridgeClosedError "client was disconnected")
        self._client_object = client if hasattr(client, "_client") else None
        self.body = -1
        #: True when the bridge loaded the body (close() then removes it from a client the user owns)
        self._loaded_body = body_id is None
        try:
            self.gravity = self._gravity_rule(gravity)
            self.body = load_body(model, self.client, body_id)
            self.map = PyBulletMap(model, self.body, self.client)
            match_inertia(model, self.client, self.body, self.map.link_index)  # bridge/inertia.py
            if dt is not None:
                dt = number_argument(dt, "dt", positive=True, expected="a positive time step (s)")
                p.setTimeStep(float(dt), physicsClientId=self.client)
            elif self._owned:   # flexible links and stiff springs: ¼ of PyBullet's explicit stability limit
                p.setTimeStep(stable_step(model, bool(self.layouts)), physicsClientId=self.client)
            engine = p.getPhysicsEngineParameters(physicsClientId=self.client)
            self.dt = float(engine["fixedTimeStep"])
            #: PyBullet's sub-steps per stepSimulation (numSubSteps; 1 = none): the torques are held over all of them
            self.substeps = max(1, int(engine["numSubSteps"]))
            check_time_step(model, self.dt, "dt" if dt is not None else "the client's time step")
            if self.layouts:
                check_flexible_step(model, self.dt)
            check_stiff_elements(model, self.dt, "dt" if dt is not None else "the client's time step",
                                 self.substeps)
            prepare_body(model, self.client, self.body, self.map.joint_indices, joint_limits=joint_limits,
                         gravity=self.gravity)
            #: a fixed base's inertial offset in its link frame (None on a floating base): `base_origin`
            self._base_local = (None if model.floating_base else
                                np.asarray(p.getDynamicsInfo(self.body, -1, physicsClientId=self.client)[3], float))
            self._floating = bool(model.floating_base)
            #: every link's (mass, local inertia diagonal) as the bridge's M and h take them: a changeDynamics of
            #: either afterwards is followed at the next disturbed step (`engine_parameters`)
            self._inertias = self._link_inertias()
            #: links given mass 0 by changeDynamics since (`engine_parameters`; the watch names them as the cause)
            self.massless_links: list[str] = []
            #: spherical joints: M and h from the pipeline's tree kernel (PyBullet's calls do not take them) on the
            #: inertia PyBullet stores (`_mass_and_bias`); their torques through the multi-DOF call (`_send`)
            self._spherical = bool(self.map.multi_dof)
            if self._spherical:
                #: the one torque call's joints: the spherical joints, then the 1-DOF joints (τ after the base and
                #: the spherical block, `model.base_nv`: `_send` gives each its [τ] entry)
                self._multi_dof_joints = list(self.map.spherical_indices) + self.map.joint_indices.tolist()
            self.alpha, self.beta = self._baumgarte_gains(baumgarte)
            #: the drift-correction gains of the rows this bridge enforces (owned here, not by the model's cached
            #: constraint set, whose rows the reference engine corrects with its own gains)
            self.corrector = Corrector.baumgarte(self.alpha, self.beta)
            if drift not in ("predictor", "baumgarte"):
                raise ModelError(f"argument 'drift' is {drift!r}", attribute="drift",
                                 expected="'predictor' or 'baumgarte'")
            #: drift="predictor" (default, no gains given): `Corrector.step_end(dt)`, the target that puts the step's
            #: end position on the manifold (see the module docstring); else Baumgarte's gains above.
            #: step-end target: no velocity projection for non-constant rows (their Φ̇ after a step is the
            #: O(dt) secant error the target corrects itself; projecting would cost a solve and a reset per step)
            self._step_end = drift == "predictor" and baumgarte is None
            if self._step_end:
                self.corrector = Corrector.step_end(self.dt, substep_weight(self.substeps))
            self.velocity_projection = bool(velocity_projection)
            tol = PROJECTION_TOLERANCE if projection_tolerance is None else projection_tolerance
            if not isinstance(tol, (int, float, np.floating, np.integer)) or np.isnan(tol) or tol < 0:
                raise ModelError(f"argument 'projection_tolerance' is {projection_tolerance!r}",
                                 attribute="projection_tolerance",
                                 expected="a number ≥ 0 (0: project every step, inf: never)")
            self.projection_tolerance = float(tol)
            self.native_loops = bool(native_loops)
            #: the rows enforced with forces: joint functions and, unless PyBullet closes them, `<loop>`s
            self.constraints = constraint_set(model, functions=True, loops=bool(
                model.description.elements_of("loop")) and not self.native_loops)
            #: {loop name: PyBullet constraint id} of the native loops (empty without native_loops)
            self.native_constraints = self._create_native_loops() if self.native_loops else {}
            self._refuse_unheld_massless()
            #: the force elements' τ per step: the pipeline's compiled force stage or the Python hook
            self.forces = ForceStage(model)
        except BaseException:
            self.close()
            raise
        if dynamics not in ("auto", "pybullet"):
            self.close()
            raise ModelError(f"argument 'dynamics' is {dynamics!r}", attribute="dynamics",
                             expected="'auto' or 'pybullet'")
        self._dynamics_choice = dynamics
        self._base = model.base_nq     # floating base (7) and spherical joints (4 each) lead x
        self._base_v = model.base_nv   # (6, 3 each) lead ẋ
        #: the tree entries of the independent coordinates: q = x[independent_x], v = ẋ[independent_v]
        self.independent_x = np.concatenate([np.arange(self._base),
                                              self._base + np.array(model.coordinate_map.independent, int)])
        self.independent_v = np.concatenate([np.arange(self._base_v),
                                              self._base_v + np.array(model.coordinate_map.independent, int)])
        self._fast_paths()
        #: tau=: names of its entries (n_tangent, tree order: a floating base's twist, spherical joints, then every
        #: 1-DOF joint in `model.joint_names` order)
        self.torque_names: tuple[str, ...] = tuple(model.velocity_names[:model.base_nv]) + tuple(model.joint_names)
        #: {joint name: PyBullet joint index} of every model joint (1-DOF and spherical)
        self.joint_index: dict[str, int] = {name: int(j) for name, j in zip(model.joint_names, self.map.joint_indices)}
        self.joint_index.update({model.bodies[k].joint: int(s[0]) for k, s in
                                 ((next(i for i, b in enumerate(model.bodies) if b.q_index == s[1]), s)
                                  for s in self.map.spherical)})
        #: {independent coordinate name: PyBullet joint index} (`model.coordinate_names` that are model joints)
        self.coordinate_index: dict[str, int] = {name: self.joint_index[name] for name in model.coordinate_names
                                                 if name in self.joint_index}
        from biobullet.bridge.outside import OutsideWatch
        #: what acts outside the solve, read back from the state after every step (bridge/outside.py)
        self.watch = OutsideWatch(self, self._write_state)
        #: the plan of a model without rows or native loops (`_apply_plain`); the state read and PyBullet's
        #: getUserData bound once (no per-step lookups)
        self._plain = not self.constraints.n and not self.native_constraints
        self._read = self._read_state if self._fixed else self.map.state_from_pybullet
        #: the plan on a floating base or spherical joints: PyBullet's raw state → (x, ẋ) and the watch's check in one
        #: call (`kernels._plain_read_py`, its `PlainRecord` at `_plain_address`), else None
        self._plain_read = self._plain_entry() if self._plain and not self._fixed else None
        self._get_user_data = self.pybullet.getUserData
        #: the bridge's own motors (set_motor): rows of the constrained solve
        self.motors: dict[str, dict] = {}
        #: {joint: N·m or N} each motor applied in the last apply() (its row's multiplier, or its force limit)
        self.motor_torques: dict[str, float] = {}
        self.time = 0.0
        self._lambda = np.zeros(self.constraints.n)
        #: τ (n_tangent, N·m or N) of the last apply(): every generalized force of the step, constraint forces and
        #: the muscles' share included (read by `joint_reactions`; do not modify)
        self.last_torque = np.zeros(model.n_tangent)
        self._auto_record = bool(record)
        #: the recording: (t, x, ẋ) per `record()` (every step with record=True), read by `trajectory()`
        self.samples: list[tuple[float, np.ndarray, np.ndarray]] = []
        attach(self)  # lifecycle token: closed / disconnected / reused client ids are detected
        try:
            q0, v0 = initial_state(model, initial)
            if body_id is not None and model.floating_base:   # the pose the user loaded the body at stays
                q0 = loaded_base_pose(initial, q0, self.map.state_from_pybullet()[0])
            self.reset(q0, v0)
            if any(e.tag == "contact" for e in model.description.elements):
                from biobullet.bridge.contact import QUERY_DISTANCE, BridgeContacts
                self.contacts = BridgeContacts(
                    self, read_state=self._read_state, ground_body=ground_body, geometry=contact_geometry,
                    scene=scene_contacts, query_distance=QUERY_DISTANCE if query_distance is None else query_distance)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ life cycle
    def close(self) -> None:
        """Remove the bridge's query objects; disconnect if the bridge made the connection (else leave the user's
        client and the model's body alone). Any later use of the bridge raises one clear error."""
        contacts = getattr(self, "contacts", None)
        if contacts is not None:
            try:
                contacts.close()
            except self.pybullet.error:
                pass
            self.contacts = None
        closing = not is_closed(self)
        mark_closed(self)
        if closing and getattr(self, "_loaded_body", False) and not getattr(self, "_owned", False) \
                and getattr(self, "body", -1) >= 0:
            # the body the bridge loaded into the user's client (a body_id the user passed stays the user's);
            # its lifecycle token is gone with it, so a later Bridge on the same client is not confused
            try:
                if ensure_owned_body(self):   # (after resetSimulation its constraint ids are the next episode's: before,
                    # an old bridge closed late removed the new bridge's native loop constraint at the same id)
                    for cid in getattr(self, "native_constraints", {}).values():
                        self.pybullet.removeConstraint(cid, physicsClientId=self.client)
                    self.pybullet.removeBody(self.body, physicsClientId=self.client)
            except self.pybullet.error:
                pass
        if getattr(self, "_owned", False) and self.client is not None:
            try:
                self.pybullet.disconnect(physicsClientId=self.client)
            except self.pybullet.error:
                pass
            self._owned = False
        self._client_object = None   # (the user's BulletClient: its lifetime is the user's again)

    def __enter__(self) -> "Bridge":
        return self

    def __reduce__(self):
        """A Bridge is its PyBullet client's body: a copy would step, write and close the same body, and a pickle
        cannot carry a client to another process (copy.copy shared the body; pickle said "cannot pickle 'module'
        object")."""
        raise TypeError(f"a Bridge of {self.model.name!r} is attached to PyBullet body {self.body} of client "
                        f"{self.client}: it cannot be copied or pickled; pickle the model (biobullet.load_model's "
                        "Model pickles) and make a Bridge in each process")

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Bridge({self.model.name!r}, client={self.client}, body={self.body}, dt={self.dt:g}, "
                f"constraints={self.constraints.n}, t={self.time:g})")

    # ------------------------------------------------------------------ set-up helpers
    def _baumgarte_gains(self, baumgarte) -> tuple[float, float]:
        if baumgarte is None:
            return 0.5 / self.dt, 1.0 / self.dt
        try:
            alpha, beta = (float(g) for g in baumgarte)
        except (TypeError, ValueError):
            raise ModelError(f"argument 'baumgarte' is {baumgarte!r}", attribute="baumgarte",
                             expected="(alpha, beta) in 1/s, both ≥ 0") from None
        if not (np.isfinite(alpha) and np.isfinite(beta)) or alpha < 0 or beta < 0:
            raise ModelError(f"argument 'baumgarte' is {baumgarte!r}", attribute="baumgarte",
                             expected="(alpha, beta) in 1/s, both ≥ 0")
        return alpha, beta

    def _gravity_rule(self, rule: str) -> tuple[float, float, float]:
        """The gravity the body falls with (m/s², world frame), by the explicit rule: "model" — the model file's
        `<gravity>`, set on the client (on a client of the user's whose gravity differs, with one BridgeWarning naming
        both); "client" — the client's, left as it is. Later `setGravity` calls are followed (`engine_parameters`)."""
        import warnings
        from biobullet.bridge.lifecycle import BridgeWarning
        engine = self.pybullet.getPhysicsEngineParameters(physicsClientId=self.client)
        client = tuple(float(engine[f"gravityAcceleration{a}"]) for a in "XYZ")
        if rule == "client":
            return client
        model = tuple(float(g) for g in self.model.gravity)
        if not self._owned and client != model:
            warnings.warn(f"Bridge: PyBullet client {self.client}'s gravity {client} m/s² is set to the model's "
                          f"<gravity> {model} (gravity='model'); pass gravity='client' to keep the client's",
                          BridgeWarning, stacklevel=3)
        return model

    def engine_parameters(self, ran: float | None = None) -> str:
        """Re-read the client's time step, sub-steps, gravity and the links' masses and inertias and follow a change
        (the drift target, the own dynamics' gravity and inertias); returns what changed ("" if nothing). Called by
        the watch after a disturbed step; `ran`: the length (s) of the step just read as its joints show it
        (`OutsideWatch.step_length`), None when they do not tell it — the clock counts that step at it."""
        ensure_usable(self, "engine_parameters")
        engine = self.pybullet.getPhysicsEngineParameters(physicsClientId=self.client)
        dt, substeps = float(engine["fixedTimeStep"]), max(1, int(engine["numSubSteps"]))
        # the step just read ran `ran` s: the client's dt now is the coming step's, so a setTimeStep before this
        # apply() (a schedule of time steps set before every apply()) is not the length of the step read; before,
        # the clock counted it so (3 ms off PyBullet's after 200 steps of 0.5 / 1 ms, silently)
        ran = dt if ran is None else ran
        for known in (dt, self.dt):   # (a measured length within STEP_MATCH of a known one is that one, exactly)
            if abs(ran - known) <= STEP_MATCH * known:
                ran = known
                break
        self.time += ran - self.dt   # apply() advanced the clock by the old dt: it follows PyBullet's
        changes = []
        gravity = tuple(float(engine[f"gravityAcceleration{a}"]) for a in "XYZ")
        links = self.changed_inertias()
        if links:   # changeDynamics(mass / localInertiaDiagonal): the own recursions take PyBullet's new values
            before, after = self._inertias, self._link_inertias()
            root = self.model.description.root_link
            if self._floating and after.get(root, (1.0,))[0] == 0.0:   # (was a SystemError of calculateMassMatrix)
                raise massless_base_error(self.model, root, "was given mass 0 (changeDynamics)")
            #: links given mass 0 by changeDynamics (`inertia.massless_links`): named as what cannot be held
            self.massless_links = massless_links(before, after) + [
                name for name in self.massless_links if after.get(name, (1.0,))[0] == 0.0]
            changes.append(f"mass or inertia of link {links[0]!r}"
                           + (f" (and {len(links) - 1} more)" if len(links) > 1 else "") + " changed (changeDynamics)")
            self._follow_inertia()
        if dt != self.dt or substeps != self.substeps:
            changes.append(f"time step {self.dt:g} s × {self.substeps} sub-step(s) → {dt:g} s × {substeps}")
            self._follow_time_step(dt, substeps)
        if ran not in (dt, self.dt):
            changes.append(f"time step {ran:g} s in the last step (set back since)")
        if gravity != self.gravity:
            changes.append(f"gravity {self.gravity} → {gravity} m/s²")
            self.gravity = gravity
            if self._stored is not None:   # the own recursions' gravity vector, shared by every stage, in place
                self._stored[-1][:] = gravity
        return "; ".join(changes)

    def _link_inertias(self) -> dict[str, tuple]:
        """Every link's (mass, local inertia diagonal) as PyBullet stores them now (getDynamicsInfo; a fixed base's
        root does not enter the dynamics)."""
        p, c, b = self.pybullet, self.client, self.body
        return {name: tuple(p.getDynamicsInfo(b, index, physicsClientId=c)[0:3:2])
                for name, index in self.map.link_index.items() if index >= 0 or self._floating}

    def changed_inertias(self) -> list[str]:
        """The links whose mass or inertia PyBullet stores otherwise than the bridge's M and h take them
        (changeDynamics after the bridge was made; `_follow_inertia`)."""
        ensure_usable(self, "changed_inertias")
        return [name for name, values in self._link_inertias().items() if values != self._inertias.get(name)]

    def stored_bodies(self) -> np.ndarray:
        """The model's packed body records (`model.tree.pack_tree`) with the masses, centres of mass and inertias
        PyBullet stores for the links now (getDynamicsInfo, a changeDynamics included): the bodies its step
        integrates (read afresh: the joint reactions take them)."""
        ensure_usable(self, "stored_bodies")
        return self._pybullet_inertia(self.model.compiled.tree_body)

    def _follow_inertia(self) -> None:
        """Take PyBullet's stored masses and inertias into the own recursions' packed bodies (in place: every
        compiled stage holds these arrays), and from now on every M and h from them (`_kernel_only`): PyBullet's
        calculateMassMatrix / calculateInverseDynamics keep the body as they first saw it (measured: M unchanged
        to 1e-15 after a changeDynamics that tripled a link's mass, while stepSimulation integrates the new one)."""
        self._inertias = self._link_inertias()
        body = self._stored_tree()[2]
        body[:] = self._pybullet_inertia(self.model.compiled.tree_body)
        self._kernel_only, self._solve_source = True, "stored"
        if self._own_tree is not None:   # (revolute/prismatic trees: a copy without the motion subspace)
            self._own_tree[1][:] = body[:, :self._own_tree[1].shape[1]]

    def base_origin(self) -> np.ndarray:
        """World position (m) of a fixed base's link frame, where the model's kinematics put the origin (zeros on a
        floating base, whose pose is in x): a body the user loaded at a basePosition (taken: the same robot in an
        inertial frame) or moved since. What the bridge places in PyBullet's world — scene contact points, muscle
        wrenches — is the model's plus this (a fixed base turned away from the world frame is refused or named)."""
        if self.lifecycle is not None and self.lifecycle.closed:   # (per-step callers checked the client already)
            ensure_usable(self, "base_origin")
        if self._base_local is None:
            return np.zeros(3)
        try:
            position = self.pybullet.getBasePositionAndOrientation(self.body, physicsClientId=self.client)[0]
        except self.pybullet.error:   # a disconnected client or a removed body: BridgeClosedError saying which
            ensure_usable(self, "base_origin")
            raise
        return np.asarray(position, float) - self._base_local

    def _follow_time_step(self, dt: float, substeps: int, checked: bool = False) -> None:
        if not checked:   # (`set_time_step` checks before it changes the client)
            check_time_step(self.model, dt, "the client's time step")
            check_stiff_elements(self.model, dt, "the client's time step", substeps)   # τ held over sub-steps
        self.dt, self.substeps = dt, substeps
        if self._step_end:
            self.corrector = Corrector.step_end(dt, substep_weight(substeps))
        self.watch.weight = substep_weight(substeps)
        self._gains = self._step_gains()
        if self._rows_fast:   # (the records hold the gains)
            self._pack_rows()

    def set_time_step(self, dt: float, substeps: int | None = None) -> None:
        """Change the client's time step (s) and, if given, PyBullet's sub-steps per stepSimulation, and the bridge's
        drift target with them (calling setTimeStep directly works too, but the step in which it changed was
        computed for the old value)."""
        ensure_usable(self, "set_time_step")
        dt = number_argument(dt, "dt", positive=True, expected="a positive time step (s)")
        check_time_step(self.model, dt, "dt")
        if substeps is not None:
            if (isinstance(substeps, bool) or not isinstance(substeps, (int, np.integer)) or substeps < 1
                    or substeps > MAX_SUBSTEPS):
                raise ModelError(f"argument 'substeps' is {substeps!r}", attribute="substeps",
                                 expected=f"an integer from 1 to {MAX_SUBSTEPS} (PyBullet runs every sub-step of "
                                          "every stepSimulation())")
        # (checked before the client changes: a refused step leaves the client's as it was)
        check_stiff_elements(self.model, dt, "dt", self.substeps if substeps is None else int(substeps))
        if substeps is not None:
            self.pybullet.setPhysicsEngineParameter(numSubSteps=int(substeps) if substeps > 1 else 0,
                                              physicsClientId=self.client)
        self.pybullet.setTimeStep(dt, physicsClientId=self.client)
        self._follow_time_step(dt, self.substeps if substeps is None else int(substeps), checked=True)
        self.watch.disarm()

    def _refuse_unheld_massless(self) -> None:
        """SolverError naming a joint that moves no mass (its diagonal entry of M below its floor,
        `spatial.dense.MASS_FLOOR_RATIO`) and that no row of the bridge's constrained solve holds
        (`constraints.solve.refuse_unheld`), at the model's initial state: there the KKT matrix is singular and the
        solve's ẍ meaningless (a hinge through a point mass beside a joint function: 71 rad/s² predicted). Tested
        once here, not per step: the solve kernels keep their relative pivot tests. A bridge without rows leaves
        the tree's dynamics to PyBullet, and so does one with native loops (PyBullet's constraints may hold what
        the rows do not)."""
        if not self.constraints.n or self.native_constraints:
            return
        from biobullet.algorithms.vectorized import mass_matrix_and_bias
        from biobullet.constraints.solve import TreeDirections, refuse_unheld
        from biobullet.dynamics.multipliers import tree_direction_names
        model = self.model
        x, xd, _, _ = model.joint_state(*model.initial_state())
        mass = mass_matrix_and_bias(model, x)[0]
        tree = TreeDirections(tree_direction_names(model), model.compiled.mass_floor_root,
                              f"{model.file}: the bridge's constrained solve: ")
        refuse_unheld(mass, constraint_terms(self.constraints, x, xd, 0.0)[1], tree, x, xd, 0.0)

    def _create_native_loops(self) -> dict[str, int]:
        """POINT2POINT constraints for `<loop>`s (3 rows each; a planar loop's normal row is redundant)."""
        from biobullet.spatial.rotations import quaternion_to_matrix
        p, c, b = self.pybullet, self.client, self.body
        out: dict[str, int] = {}
        for k, loop in enumerate(self.model.description.elements_of("loop")):
            pivots = []
            for side in ("a", "b"):
                link = loop.get(f"link_{side}")
                xyz = np.array([float(s) for s in (loop.get(f"xyz_{side}") or "0 0 0").split()])
                if link not in self.map.link_index or xyz.shape != (3,):
                    raise ModelError(f"loop link {link!r} / xyz {xyz}", file=self.model.file,
                                     element=loop.source.element, attribute=f"link_{side}")
                index = self.map.link_index[link]
                dyn = p.getDynamicsInfo(b, index, physicsClientId=c)
                rotation = quaternion_to_matrix(dyn[4])
                pivots.append((index, rotation.T @ (xyz - np.asarray(dyn[3]))))  # in the link's COM frame
            (ia, pa), (ib, pb) = pivots
            cid = p.createConstraint(b, ia, b, ib, p.JOINT_POINT2POINT, [0, 0, 0], pa.tolist(), pb.tolist(),
                                     physicsClientId=c)
            p.changeConstraint(cid, maxForce=1e12, physicsClientId=c)
            out[loop.get("name") or f"loop{k}"] = cid
        return out

    def _fast_paths(self) -> None:
        """Per-step constants: the joint list sent to PyBullet and, for a fixed base, the dof permutation d
        (θ_k ↔ PyBullet dof d_k). With a fixed base the tangent map of `conventions.PyBulletMap` is that
        permutation, so M = M_pb[d, d], h = h_pb[d] and θ → PyBullet is `out[d] = θ` — the same numbers
        as the general conversions (products with exact 0/1 entries), without building n × n matrices."""
        self._joint_list = self.map.joint_indices.tolist()
        # "fixed": the state is the 1-DOF joint list alone (spherical joints: the multi-DOF state read and send)
        self._fixed = not self.model.floating_base and not self._spherical
        dof = np.asarray(self.map.dof_of_joint, dtype=np.intp)
        self._dof = dof
        self._dof_identity = bool(np.array_equal(dof, np.arange(len(dof))))
        self._dof_mesh = np.ix_(dof, dof)
        self._zero_list = [0.0] * len(dof)
        from biobullet.bridge.kernels import kernels, pack_linear
        self._kernels = kernels()
        n, m = self.model.n_tangent, self.constraints.n
        self._xdd = np.empty(n)   # kernel work space
        self._flat = None         # [x, ẋ] of the last fixed-base read (`_read_state`)
        self._solved_xdd = None   # ẍ of the last general-path solve (None: the null-space kernel gives none)
        self._phi, self._phi_dot, self._zero_c = np.empty(m), np.empty(m), np.zeros(m)
        self._zero_tau = np.zeros(n)   # never written (every path returns a new array)
        self._zero_sent = np.zeros(n)  # apply()'s τ when nothing acts (read-only: the caller may keep it)
        self._zero_sent.flags.writeable = False
        linear = getattr(self.constraints, "linear_form", None)
        linear = linear() if (linear is not None and self._fixed and m) else None
        #: constant rows on a fixed base: (A, c) with Φ = A x − c, else None. Writable copies: the kernels are
        #: compiled for one array type (read-only arrays would be a second one)
        self.linear = None if linear is None else (np.array(linear[0]), np.array(linear[1]))
        # constant rows of full rank: the null-space kernel (kernels.linear_torque) with its packed constants
        self._null = pack_linear(*self.linear) if self.linear is not None else None
        self._null_work = np.empty((2 * n - m + 1, n))
        #: True when `apply()` solves the constant rows with the null-space kernel (`_null_space_stage`)
        self.uses_null_space = self._null is not None and self._dof_identity
        self._out_n, self._out_size = n, n + m
        self.projections = 0   # velocity projections written back to PyBullet (see PROJECTION_TOLERANCE)
        # compile (or load from __pycache__) the kernel this bridge uses every step now, not inside the first step;
        # the others compile on first use (projection / fallback paths)
        linear_rows, kkt_torque, linear_torque = self._kernels
        if self.uses_null_space:
            linear_torque(np.eye(n), np.zeros(n), np.zeros(n), self._null, np.zeros((2, n)), 1.0, 2.0, np.inf,
                          self._null_work, np.empty(n + m))
        elif m:
            kkt_torque(np.eye(n), np.zeros(n), np.zeros(n),
                       ConstraintRows(np.eye(m, n), self._phi, self._zero_c, False, self._zero_c, 1.0, 2.0),
                       np.zeros(n), self._xdd, np.empty(n + m))
            if self.linear is not None:
                linear_rows(np.zeros((m, n)), self._zero_c, np.zeros(n), np.zeros(n), self._phi, self._phi_dot)
        #: the pipeline's tree kernel on PyBullet's stored inertia (`_stored_tree`, made on first use), and whether
        #: every M and h comes from it, "pybullet" too: spherical joints (PyBullet's calls do not take them), or
        #: after a change of the links' inertia (`_follow_inertia`)
        self._stored = self._tree_entry = None
        self._kernel_only = self._spherical
        self._model_gravity = np.array(self.model.gravity, dtype=float)   # (source="model")
        if self._kernel_only:
            self._stored_tree()   # (compiled or loaded now, not inside a step)
        own = self._dynamics_choice == "auto" and (self._kernel_only or self._own_dynamics())
        self._own = self._stored_tree() if own else None
        #: True when M and h come from biobullet's compiled recursions (equal to PyBullet's, checked here)
        self.own_dynamics = self._own is not None
        #: where the general path takes M and h (`_mass_and_bias`): the own recursions on a floating base or with
        #: spherical joints; PyBullet's calls on a fixed base (docs/bridge.md, "Own M and h": its KKT solve on light
        #: links amplifies the round-off difference of the two to ~1e-9), where the compiled stages take them
        self._solve_source = "stored" if self.own_dynamics and not self._fixed else "pybullet"
        self._linear_own = None
        #: the force elements `_kernel_forces_only` was decided for (None: not yet)
        self._kernel_forces_for = None
        #: whether the one-call rows kernel evaluates every force element
        self._kernel_forces_only = False
        self._own_tree = None if self._own is None else self._own_tree_arguments(*self._own[1:])
        if self.uses_null_space and self._own is not None:
            from biobullet.bridge.kernels import linear_own_kernel
            # `_null_space_stage` passes exactly these types every step
            self._linear_own = direct_entry(linear_own_kernel(), *self._own_tree, self._zero_tau, self._null,
                                            np.zeros(2 * n), 1.0, 2.0, 1.0, self._null_work, np.empty(n + m))
        self._mass_work, self._bias_work = np.zeros((n, n)), np.zeros(n)
        if self._floating:   # `_send_base_wrench`'s entry, the COM offset p_i and its output (compiled now)
            from biobullet.bridge.kernels import base_wrench_kernel
            offset, wrench = np.array(self.map.inertial_position, dtype=float), np.empty(9)
            pose = np.zeros(self.model.n_config)
            pose[6] = 1.0
            self._wrench = (direct_entry(base_wrench_kernel(), pose, np.zeros(n), offset, wrench), offset, wrench)
        # the step-end Newton correction of explicit function and loop rows (`_end_correction`), one call
        self._end_newton, self._rows_kernel, self._loops_data = None, None, None
        #: the loops' step-end record (`kernels.StepGains.loop_record`: miss, step size, skipped, miss per size,
        #: evaluations), kept by the kernels
        self._loop_record = np.array([np.inf, 0.0, 0.0, 0.0, 0.0])
        #: the rows of the step-end correction: (function table, loop rows or None, `kernels.TreeModel` of their
        #: kinematics), or None (`_end_point_rows`)
        self._end = self._end_point_rows()
        #: True when the step-end correction holds every row, loops included (else `bridge.outside` watches them)
        self.end_correction = self._end is not None
        if self.end_correction:
            from biobullet.bridge.kernels import end_newton_kernel
            x0, xd0, _, _ = self.model.joint_state(*self.model.initial_state())   # (unit quaternions)
            self._end_newton = direct_entry(end_newton_kernel(), *self._end, self._step_gains(), 0.0,
                                            np.array(x0, dtype=float), np.array(xd0, dtype=float), np.eye(n),
                                            np.zeros((m, n)), np.zeros(n), np.zeros(n), np.zeros(m))
        #: the targets' gains and the rows kernel's step-end check, rebuilt when the time step changes
        self._gains = self._step_gains()
        # explicit joint functions and/or point/planar/revolute loops, step-end target: one compiled call per step
        # (_rows_stage; linear rows without loops take _null_space_stage above)
        self._compiled_forces = None
        #: a floating base or spherical joints on the one-call rows kernel with the own M and h: PyBullet's raw
        #: state → the torques as sent in one call (`_apply_read_rows`; its entry), else None
        self._read_rows = None
        any_base = self._fixed and self._dof_identity or not self._fixed and not self.constraints.loops
        if any_base and self._step_end and m and not self.uses_null_space:
            # springs inside the kernel on a fixed base (its loop kinematics); elsewhere the force stage
            self._compiled_forces = self._forces_in_kernel() if self._fixed else None
            compiled, self._loops_data = self._compiled_rows()
            if compiled:
                from biobullet.bridge.kernels import TreeModel
                # M and h: the own recursions' packed tree, else placeholders of the same types
                self._tree = TreeModel(self._own is not None, *self._stored_tree()[1:],
                                       np.array([self._base, self._base_v], dtype=np.int64))
                self._rows_kernel = self._rows_entry()
        self._rows_fast = self._rows_kernel is not None
        self._loop_record[LOOP_EVALUATED] = 0.0   # (the direct entries' first calls above are no steps)

    def _plain_entry(self):
        """The direct entry of `kernels._plain_read_py` for `_apply_plain` on a floating base or spherical joints
        (compiled or loaded now, not inside a step); its record at `_plain_address` (kept alive in `_plain_record`)
        writes the watch's max |ẋ|, max |x| to `_peaks`."""
        from biobullet.bridge.kernels import PlainRecord, at_entry, at_kernel
        model = self.model
        offset = np.array(self.map.inertial_position, dtype=float) if self._floating else np.zeros(0)
        self._n_config, self._peaks = model.n_config, np.zeros(2)
        record = PlainRecord(self.map.conversion, int(model.base_nq), int(model.base_nv), offset, self._peaks)
        kernel, packed, self._plain_address = at_kernel(record)
        self._plain_record = (record, packed)
        x, xd = np.zeros(model.n_config), np.zeros(model.n_tangent)
        return at_entry(kernel, self._plain_address, self.map.raw_state(), x, xd, x.copy(), xd.copy(), self.dt, 1.0,
                        JUMP_TOLERANCE)

    def _step_gains(self):
        """`kernels.StepGains` of the corrector, the time step and the rows kernels' step-end check
        (`_end_correction` inside the kernel)."""
        from biobullet.bridge.kernels import StepGains
        corrector = self.corrector
        self._restart_loop_record()
        return StepGains(float(corrector.kp), float(corrector.kd), float(corrector.kb), float(self.dt),
                         substep_weight(self.substeps), self._end_newton is not None, END_TOLERANCE,
                         LOOP_END_TOLERANCE, END_ITERATIONS, LOOP_SKIP_BELOW, PROMISE, self._loop_record)

    @property
    def loop_end_evaluations(self) -> int:
        """Steps so far whose loops' end point the step-end correction evaluated: on the one-call loop stage only
        those whose predicted Taylor miss exceeded LOOP_SKIP_BELOW (the others end within it: docs/bridge.md)."""
        return int(self._loop_record[LOOP_EVALUATED])

    def _restart_loop_record(self) -> None:
        """The loops' Taylor miss unknown (a new time step, a state written by the bridge — reset or projection —
        or the general path, which does not pass the start residual): the next step evaluates their end point."""
        record = self._loop_record
        record[LOOP_MISS], record[LOOP_SKIPPED], record[LOOP_RATIO] = np.inf, 0.0, 0.0

    def _end_point_rows(self):
        """(function table, loop rows or None, `kernels.TreeModel` for their kinematics) of the step-end correction
        when it holds every row: drift="predictor", rows that are not constant, explicit function rows (compiled
        jets) on any base and point/planar/revolute loops (compiled rows) on a body without spherical joints — a
        floating base's loops between two of its links (`kernels._end_residual_py`: the base keeps its pose in the
        end point's kinematics). None otherwise (plug-in rows, a floating base's loop to the ground: their Taylor
        target stays, watched by `bridge.outside`)."""
        from biobullet.bridge.kernels import TreeModel
        from biobullet.model.joint_jets import function_table
        constraints, model = self.constraints, self.model
        if not self._step_end or self.linear is not None or not constraints.n:
            return None
        functions = function_table(constraints.functions)
        if functions is None:
            return None
        if constraints.loops:
            from biobullet.constraints.loops import vector_loops
            vector = None if self._spherical else vector_loops(model, constraints.loops)
            if vector is None or (self._floating and (vector.rows.point_body < 0).any()):
                return None
            loops = vector.rows
        else:
            loops = None
        compiled = model.compiled
        return functions, loops, TreeModel(False, compiled.tree_meta, compiled.tree_body, np.zeros(3),
                                           np.array([self._base, self._base_v], dtype=np.int64))

    def _rows_entry(self):
        """The rows kernel's direct entry for the argument types `_rows_stage` passes every step, its record by
        address (`_pack_rows`), compiled or loaded from numba's cache now, not inside the first step; with a floating
        base or spherical joints `_read_rows` too (`_apply_read_rows`)."""
        n, m = self.model.n_tangent, self.constraints.n
        n_s, n_1 = len(self.map.spherical), len(self._joint_list)
        #: the torques as sent by `_read_rows`: R_iᵀ τ per spherical joint, the 1-DOF joints' τ ([τ] per joint as a
        #: view for the multi-DOF call)
        self._sent_spherical, self._sent_joints = np.empty((n_s, 3)), np.empty(n_1)
        self._sent_column = self._sent_joints[:, None] if self._spherical else self._sent_joints
        self._n_config = self.model.n_config
        #: `_read_rows` runs before the watch looks at the state: its ẍ goes to the array that is not the watch's
        #: prediction of this step
        self._read_xdd = (self._xdd, np.empty(n))
        from biobullet.bridge.outside import watched_rows
        #: the watch's state check inside the rows kernels (`outside._clean_step_py`): its rows, and its max |ẋ|,
        #: max |x| of the state read (`OutsideWatch.clean`)
        self._watched, self._peaks = watched_rows(self), np.zeros(2)
        from biobullet.bridge.kernels import at_entry
        kernel, read_kernel = self._pack_rows()
        x, xd, _, _ = self.model.joint_state(*self.model.initial_state())
        x, xd = np.array(x, dtype=float), np.array(xd, dtype=float)
        if read_kernel is not None:   # (no check: jump tolerance −1)
            self._read_rows = at_entry(read_kernel, self._read_address, self.map.raw_state(), np.zeros(n), 0.0,
                                       x.copy(), xd.copy(), self._read_xdd[1], np.empty(n + m), x.copy(), xd.copy(),
                                       self._read_xdd[1], -1.0)
        return at_entry(kernel, self._rows_address, np.zeros(n), 0.0, x, xd, self._xdd, np.empty(n + m), x, xd,
                        self._xdd, -1.0)

    def _pack_rows(self):
        """(Re)pack the rows kernels' constants with the current step gains as records passed by address
        (`kernels.at_kernel`: `RowsRecord`, `LoopRecord` — `_no_springs_address` the loop rows without the springs
        —, and with a floating base or spherical joints on the own M and h `ReadRecord` at `_read_address`);
        returns (the rows kernel, the read kernel or None). The records and what they hold are kept on the bridge
        (they borrow its arrays)."""
        from biobullet.bridge.kernels import LoopRecord, ReadRecord, RowsRecord, at_kernel
        common = (self._tree, self._end[0])
        work = (self._mass_work, self._bias_work, self._gains, self._watched, self._peaks)
        if self._loops_data is None:
            records = [RowsRecord(*common, *work)]
        else:
            records = [LoopRecord(*common, self._loops_data, *work),
                       LoopRecord(*common, self._loops_no_springs, *work)]
        reads = not self._fixed and self._own is not None   # (the read path has no PyBullet M and h)
        if reads:
            records.append(ReadRecord(self.map.conversion, *common, *work, self._sent_spherical, self._sent_joints))
        packed = [at_kernel(record) for record in records]
        #: the records and their packed forms, alive while their addresses are in use
        self._records = (records, packed)
        self._rows_address = packed[0][2]
        self._no_springs_address = packed[1][2] if self._loops_data is not None else None
        self._read_address = packed[-1][2] if reads else None
        return packed[0][0], (packed[-1][0] if reads else None)

    def _look_at_forces(self) -> None:
        """Decide, once per change of the force-element list, whether the one-call rows kernel evaluates every
        element (`_kernel_forces_only`: the springs and constant torques of `_forces_in_kernel`)."""
        elements = self.forces.elements
        self._kernel_forces_for = elements
        compiled = self._compiled_forces
        self._kernel_forces_only = compiled is not None and len(elements) == compiled[3]

    def _compiled_rows(self):
        """(kernel, loop and spring data or None) of the one-call path, or (None, None) when a row is not compiled
        (plug-in functions, plug-in loop types: no `_end`).
        Loops, or point-to-point springs among the force elements, take `kernels.loop_torque_kernel` (with zero
        loop rows for springs alone); other rows `rows_torque_kernel`."""
        constraints = self.constraints
        if self._end is None:
            return False, None
        springs = self._compiled_forces[0] if self._compiled_forces is not None else ()
        if not constraints.loops and not springs:
            return True, None
        from biobullet.algorithms.vectorized import tree_arrays
        from biobullet.bridge.kernels import LoopData
        from biobullet.pipeline.force_rows import pack_springs
        n = self.model.n_tangent
        loops = self._end[1]
        if loops is None:   # point-to-point springs alone: zero loop rows
            from biobullet.constraints.loop_kernels import pack_loop_rows
            loops = pack_loop_rows(np.zeros((len(self.model.bodies), n)), ())
        ancestry = np.ascontiguousarray(tree_arrays(self.model).ancestry, dtype=float)
        #: the loop rows without springs: an element added later makes the force stage apply them all
        self._loops_no_springs = LoopData(loops, ancestry, *pack_springs(self.model, ()))
        return True, LoopData(loops, ancestry, *pack_springs(self.model, springs))

    def _forces_in_kernel(self):
        """(springs, constant τ, time-dependent JointTorques, element count) when every force element is a
        point-to-point `<spring>` or a `<joint_torque>` (the one-call path then evaluates the springs in its
        kernel), else None. Elements added later (a different count) send the step back to the Python hook."""
        from biobullet.forces.elements import JointTorque, Spring
        elements = list(self.forces.elements)
        if not elements or any(type(e) not in (Spring, JointTorque) for e in elements):
            return None
        constant = np.zeros(self.model.n_tangent)
        timed = []
        for e in elements:
            if type(e) is JointTorque:
                if e.value is not None:
                    constant += e.generalized_force(self.model, None, None, 0.0)
                else:
                    timed.append(e)
        return tuple(e for e in elements if type(e) is Spring), constant, tuple(timed), len(elements)

    def _pybullet_inertia(self, packed: np.ndarray) -> np.ndarray:
        """The packed bodies (`compiled_kernels.pack`) with the mass, COM and inertia PyBullet stores for the
        body's links (getDynamicsInfo: URDF_USE_INERTIA_FROM_FILE keeps the file's values up to the round-off of
        PyBullet's principal-axes diagonalisation; a link without <inertial> gets PyBullet's default), lumped per
        model body by the parallel-axis theorem — the bodies PyBullet simulates, so M and h equal its own."""
        from biobullet.spatial.rotations import quaternion_to_matrix
        model, p, c, b = self.model, self.pybullet, self.client, self.body
        lumps: dict[int, list] = {}
        for name, index in self.map.link_index.items():
            frame = model.frame(name)
            # (a floating base's root link is PyBullet's base, index −1: its mass counts — skipped, a
            # changeDynamics(body, -1, mass=) was named as followed and never followed)
            if frame.body < 0 or (index < 0 and not model.floating_base):
                continue
            info = p.getDynamicsInfo(b, index, physicsClientId=c)
            rotation = frame.rotation @ quaternion_to_matrix(info[4])
            com = frame.rotation @ np.asarray(info[3], dtype=float) + frame.translation
            lumps.setdefault(frame.body, []).append((float(info[0]), com,
                                                     rotation @ np.diag(info[2]) @ rotation.T))
        out = packed.copy()
        for i, parts in lumps.items():
            mass = sum(m for m, _, _ in parts)
            com = sum(m * r for m, r, _ in parts) / mass if mass > 0 else np.zeros(3)
            inertia = np.zeros((3, 3))
            for m, r, inertia_c in parts:   # parallel axes: I + m (|d|² 1 − d dᵀ), d = r − com
                d = r - com
                inertia += inertia_c + m * (float(d @ d) * np.eye(3) - np.outer(d, d))
            out[i, 15] = mass
            out[i, 16:19] = com
            out[i, 19:28] = inertia.reshape(9)
        return out

    def _stored_tree(self) -> tuple:
        """(kernel, meta, body, gravity), made once: the pipeline's M, h kernel (`compiled_kernels._tree_dynamics_py`)
        on the inertia PyBullet stores for the links (`_pybullet_inertia`) and the bridge's gravity (both updated in
        place: `engine_parameters`); with it `_tree_entry`, the kernel's direct entry for `_mass_and_bias`."""
        if self._stored is None:
            from biobullet.algorithms.compiled_kernels import tree_dynamics_kernel
            compiled, kernel = self.model.compiled, tree_dynamics_kernel()
            self._stored = (kernel, compiled.tree_meta, self._pybullet_inertia(compiled.tree_body),
                            np.array(self.gravity, dtype=float))
            x0, xd0, _, _ = self.model.joint_state(*self.model.initial_state())   # unit quaternions
            x0, xd0 = np.array(x0, dtype=float), np.array(xd0, dtype=float)
            self._tree_entry = direct_entry(kernel, *self._stored[1:3], x0, xd0, xd0, self._stored[3],
                                            self.model.n_tangent, True, True, False)
        return self._stored

    def _own_dynamics(self) -> bool:
        """Whether the tree kernel on PyBullet's stored inertia ("stored") equals PyBullet's calculateMassMatrix /
        calculateInverseDynamics ("pybullet") at three random states (relative OWN_DYNAMICS_TOLERANCE: round-off; a
        link PyBullet gives a default inertia fails it): a fixed base in PyBullet's dof order (the fast stages pass
        PyBullet's state lists as they are) or a floating base (through `PyBulletMap`'s tangent maps)."""
        if (self._fixed and not self._dof_identity) or not len(self._joint_list):
            return False
        model = self.model
        rng = np.random.default_rng(0)
        for _ in range(3):
            x, xd = rng.uniform(-1.0, 1.0, model.n_config), rng.uniform(-1.0, 1.0, model.n_tangent)
            if self._floating:
                x[3:7] /= np.linalg.norm(x[3:7])
            mass, bias = self._mass_and_bias(x, xd, "pybullet")
            own_mass, own_bias = self._mass_and_bias(x, xd, "stored")
            if (np.abs(own_mass - mass).max() > OWN_DYNAMICS_TOLERANCE * max(np.abs(mass).max(), 1e-300)
                    or np.abs(own_bias - bias).max() > OWN_DYNAMICS_TOLERANCE * max(np.abs(bias).max(), 1.0)):
                return False
        return True

    @staticmethod
    def _own_tree_arguments(meta: np.ndarray, body: np.ndarray, gravity: np.ndarray) -> tuple:
        """(meta, body, gravity) for `_null_space_stage`'s kernel; with only revolute and prismatic joints the packed body
        records without their motion-subspace block (`compiled_kernels.pack`: read for spherical and planar joints
        only), so the per-step kernel touches 28 instead of 64 numbers per body (≈ 0.5 µs less per shoulder step:
        PyBullet's step evicts them from the cache)."""
        from biobullet.model.tree import PRISMATIC, REVOLUTE, SUBSPACE
        if np.isin(meta[:, 1], (REVOLUTE, PRISMATIC)).all():
            body = np.ascontiguousarray(body[:, :SUBSPACE])
        return meta, body, gravity

    def _to_pybullet(self, theta: np.ndarray) -> list[float]:
        """θ (URDF order) → PyBullet dof order, as a list."""
        if self._dof_identity:
            return theta.tolist()
        out = np.empty(len(self._dof))
        out[self._dof] = theta
        return out.tolist()

    def _read_state(self) -> tuple[np.ndarray, np.ndarray]:
        """(x, ẋ) from PyBullet: a fixed base in one getJointStates call, as views of one array [x, ẋ] kept in
        `_flat` (the per-step kernels take it whole); otherwise `PyBulletMap.state_from_pybullet` (base calls, one
        joint call, one compiled conversion; `_flat` None)."""
        if not self._fixed:
            self._flat = None
            return self.map.state_from_pybullet()
        states = self.pybullet.getJointStates(self.body, self._joint_list, self.client)   # (client id by position)
        n = len(states)
        # [x, ẋ] flat: fromiter of one list built by C-level maps (0.5 µs less than np.array of two comprehensions)
        flat = self._flat = np.fromiter([*map(_POSITION, states), *map(_VELOCITY, states)], float, 2 * n)
        return flat[:n], flat[n:]

    def _write_state(self, x: np.ndarray, xd: np.ndarray) -> None:
        """(x, ẋ) to PyBullet (one resetJointStatesMultiDof call for a fixed base)."""
        self._restart_loop_record()
        if not self._fixed:
            self.map.state_to_pybullet(x, xd)
            return
        self.pybullet.resetJointStatesMultiDof(self.body, self._joint_list, [[v] for v in x.tolist()],
                                         targetVelocities=[[v] for v in xd.tolist()],
                                         physicsClientId=self.client)

    # ------------------------------------------------------------------ state
    def reset(self, q=None, v=None, t: float = 0.0, **by_name: float) -> None:
        """Put PyBullet at generalized (q, v) (nv each, `model.coordinate_names` / `model.velocity_names` order;
        default: the model's `<initial>`), then NAME=value / NAME_dot=value overrides of independent coordinates
        (`bridge.reset(elevation=0.5)`); the dependent joints follow. Sets the clock to t (s)."""
        ensure_usable(self, "reset")
        model = self.model
        q0, v0 = model.initial_state()
        q = q0 if q is None else np.array(model.checked("q", q, model.nq), dtype=float)
        v = v0 if v is None else np.array(model.checked("v", v, model.nv), dtype=float)
        for key, value in by_name.items():
            name, target = (key[:-4], v) if key.endswith("_dot") else (key, q)
            names = model.velocity_names if target is v else model.coordinate_names
            if name not in names:
                raise ModelError(f"Bridge.reset: {key!r} is "
                                 + ("a dependent joint: it follows its inputs, reset those" if name in model.joint_names
                                    else "not a coordinate of this model"), file=model.file, argument=key,
                                 expected="independent coordinates " + ", ".join(model.coordinate_names)
                                          + " (NAME_dot for a rate)")
            target[list(names).index(name)] = number_argument(value, key, expected="a finite number (rad, m, or "
                                                                               "their rates)")
        model.check_rotations(q)   # (PyBullet would take a zero quaternion as NaN)
        check_stop_penetration(model, q, self.dt)
        x, xd, _, _ = model.joint_state(q, v, t)
        self.reset_tree(x, xd, t)

    def reset_tree(self, x, xd, t: float = 0.0) -> None:
        """Put PyBullet at tree state (x, ẋ) (biobullet order) and set the clock to t (s); contact states,
        muscle states (initial activations, fibers in equilibrium here) and logs start afresh."""
        ensure_usable(self, "reset")
        x = self.model.checked("x", x, self.model.n_config)
        xd = self.model.checked("xd", xd, self.model.n_tangent)
        self.map.state_to_pybullet(x, xd)
        self.time = float(t)
        self.watch.disarm()   # a new start: no step to compare with, but the state written (`OutsideWatch.written`)
        self.watch.written = (np.array(x, dtype=float), np.array(xd, dtype=float))
        self.samples.clear()
        if self.muscles is not None:   # a new run: the muscles' initial state at this pose
            self.muscles.restart()
        if self.contacts is not None:   # a new run: fresh contact states and logs
            self.contacts.restart()
        self._restart_loop_record()
        if self._auto_record:
            self.record()

    def state(self) -> tuple[float, np.ndarray, np.ndarray]:
        """(t, x, ẋ): time (s), tree configuration and velocity in biobullet order (see `model.tree`).
        A non-finite state (PyBullet diverged, usually a too-large time step) raises DivergenceError naming dt:
        never NaN."""
        ensure_usable(self, "state")
        x, xd = self._read_state()
        if not math.isfinite(float(x.sum()) + float(xd.sum())):
            check_divergence(self, self.time, x, xd)
        return self.time, x, xd

    def generalized_state(self) -> tuple[float, np.ndarray, np.ndarray]:
        """(t, q, v): the independent coordinates (`model.coordinate_names`) read from the tree state."""
        t, x, xd = self.state()
        return t, x[self.independent_x], xd[self.independent_v]

    def constraint_residuals(self) -> dict[str, float]:
        """Φ(x, t) of every enforced constraint row at the current state, by name."""
        t, x, _ = self.state()
        return dict(zip(self.constraints.names, self.constraints.residual(x, t).tolist()))

    # ------------------------------------------------------------------ dynamics on PyBullet's model
    def tree_mass_and_bias(self, x, xd, *, source: str = "pybullet") -> tuple[np.ndarray, np.ndarray]:
        """M(x) and h(x, ẋ) (Coriolis, centrifugal, gravity) of the tree, biobullet's order. source: "pybullet"
        (default): PyBullet's calculateMassMatrix and calculateInverseDynamics with ẍ = 0 ("stored" with spherical
        joints, which they do not take, and after a changeDynamics, which they do not see: `_follow_inertia`);
        "stored": the pipeline's tree kernel on the inertia PyBullet stores and the bridge's gravity; "model": the
        same kernel on the model's inertia and gravity; "solve": the bridge's general path's (`_solve_source`);
        "current": the same kernel on the inertia PyBullet stores now (`stored_bodies`, a changeDynamics the bridge
        has not followed yet included) and the client's gravity — the dynamics of the next step (joint reactions)."""
        ensure_usable(self, "tree_mass_and_bias")
        if source not in MASS_SOURCES:
            raise ModelError(f"argument 'source' is {source!r:.60}", argument="source",
                             expected=" or ".join(repr(name) for name in MASS_SOURCES))
        model = self.model
        x = np.array(model.checked("x", x, model.n_config), dtype=float)
        xd = np.array(model.checked("xd", xd, model.n_tangent), dtype=float)
        return self._mass_and_bias(x, xd, source)

    def inverse_dynamics(self, q, v, qdd, t: float = 0.0) -> np.ndarray:
        """Generalized forces Q = Gᵀ ID(x, ẋ, G q̈ + γ) = Gᵀ(M_tree(G q̈ + γ) + h_tree) (nv), ID of PyBullet's
        model (`tree_mass_and_bias`'s "pybullet")."""
        ensure_usable(self, "inverse_dynamics")
        x, xd, gradient, gamma = self.model.joint_state(q, v, t)
        qdd = self.model.checked("qdd", qdd, self.model.nv)
        x, xd = np.array(x, dtype=float), np.array(xd, dtype=float)
        return gradient.T @ self._mass_and_bias(x, xd, "pybullet", gradient @ qdd + gamma, need_mass=False)[1]

    # ------------------------------------------------------------------ stepping
    def apply(self, tau=None, *, generalized=None) -> np.ndarray:
        """Compute and send this step's joint torques; returns them (n_tangent, our order, N·m / N; the muscles'
        forces go to their bodies as external forces, `bridge.muscles.wrenches`, and are not among them).

        tau: extra joint-space torques (n_tangent, tree order). generalized: forces Q on the independent
        coordinates (nv), applied at those joints (G has identity rows there, so Gᵀτ = Q).
        Contact forces (`bridge.contacts`) are added to tau; their reactions go to the other bodies.
        The torques are for the step [t, t + dt] that the next stepSimulation() makes: apply() advances the
        bridge's clock (`time`) by dt, so call it once per stepSimulation() (in your own loop: apply(), then any
        other forces and motor commands of yours, then p.stepSimulation()); a second call before the step replaces
        the first (same clock; `OutsideWatch.repeated`).

        One path for every model kind: read the state → the watch (`bridge.outside`) → the user's, the contacts'
        and the force elements' τ (`ForceStage`) → the constraint stage (`_constraint_stage`: nothing to hold, the
        null-space kernel of constant rows, the one-call kernel of function and loop rows, or the general
        KKT solve; the bridge's motors are rows of the general one) → send.
        """
        # the lifecycle check of `ensure_usable` inlined (one getUserData call; its clear error otherwise). The
        # client id by position: a keyword makes Python build a dict for the call (hot: 0.27 → 0.13 µs, load 7)
        life = self.lifecycle
        try:
            usable = not life.closed and self._get_user_data(life.data, self.client) == life.token_bytes
        except self.pybullet.error:   # disconnected
            usable = False
        if not usable:
            ensure_usable(self, "apply")
        if self._plain and tau is None and generalized is None and self.muscles is None and not self.motors:
            return self._apply_plain()
        # the arguments before the state is read: a refused one finds the contacts' logs and the watch as they were
        # (before, the contacts had logged a step that was never sent)
        user = None if tau is None else self._torque_argument(tau)   # a new array, or None
        general = None if generalized is None else self._generalized_argument(generalized)
        # (attributes read once into locals: each read costs ≈ 30 ns on a ≈ 12 µs step)
        contacts, muscles, watch = self.contacts, self.muscles, self.watch
        extra = None
        if self._read_rows is not None and contacts is None and muscles is None and not self.motors:
            torque, x, xd = self._apply_read_rows(user, general)   # (x, ẋ) observed by the watch
            if torque is not None:
                return torque
        else:
            if contacts is not None:
                extra = contacts.torques()   # reads the state (kept in state_read) unless it needs PyBullet's geometry
                state = contacts.state_read
                x, xd = state if state is not None else self._read_state()
            else:
                x, xd = self._read_state()
                if self._rows_fast and tau is None and generalized is None and muscles is None and not self.motors \
                        and (self._kernel_forces_only or not self._kernel_forces_for or self.forces.idle_below > 0.0) \
                        and watch.kernel_checks:
                    # the watch's check and the rows' solve in one call (force elements as the last look found
                    # them: none, the kernel's own, or stops that act only beyond a bound — else the force stage,
                    # which takes the watch's peak)
                    torque = self._apply_checked_rows(x, xd)
                    if torque is not None:
                        return torque
            first = contacts is not None and watch.written is not None and not watch.armed
            if first:   # (the first apply() after the bridge wrote a state: the first look may project)
                read = (x.copy(), xd.copy())
            watch.observe(x, xd)   # may project (x, ẋ) in place (bridge/outside.py)
            if contacts is not None and (watch.jumped or first and not (np.array_equal(x, read[0])
                                                                        and np.array_equal(xd, read[1]))):
                # a reset / restoreState, or the first look's projection (written back to PyBullet): the contacts
                # start from the state the solve takes (before, the first apply()'s forces were those of the state
                # read, its dependent joints off the rows)
                extra = contacts.after_jump()
        repeated = watch.repeated
        if repeated:   # apply() again before stepSimulation(): it replaces the last one (same step, same clock)
            self.time -= self.dt
            sent = self.last_torque.copy()   # (the stages may return their work arrays, which this call rewrites)
        if extra is not None:
            user = extra if user is None else user + extra
        if muscles is not None:   # the muscles' τ at the state read (their state advanced by dt)
            if repeated:   # from their state as the last apply() found it; what it sent through the joints and paths
                muscles.state = muscles.started
                sent = sent - muscles.body_torque
                sent_wrenches = muscles.wrenches
            muscles.started = muscles.state.copy()
            muscle_tau = muscles.torques(x, xd)
            user = muscle_tau if user is None else user + muscle_tau
        if general is not None:
            user = self._add_generalized(user, general)
        if self.motors:
            torque, xdd = self._motor_stage(x, xd, user)
        elif self._rows_fast and not self.uses_null_space:   # `_constraint_stage`'s choice, one call less
            torque, xdd = self._rows_stage(x, xd, user)
        else:
            torque, xdd = self._constraint_stage(x, xd, user)
        if muscles is not None:   # the muscles act as forces along their paths, not through the joints
            self.last_torque = torque   # (the joint reactions' ẍ: every generalized force of the step)
            torque = torque - muscles.body_torque
            self._send(x, torque - sent if repeated else torque)
            muscles.send(sent_wrenches if repeated else None)
        elif torque is None and not repeated and not watch.resting:   # nothing acts: nothing to send (PyBullet
            torque = self.last_torque = self._zero_sent   # clears joint torques after every step)
        else:
            torque = self._zero_sent if torque is None else torque
            if watch.resting:   # an exact rest: a step must show (`OutsideWatch.nudge`; the stages' arrays kept)
                torque = torque.copy()
                watch.nudge(torque)
            # a repeated apply(): PyBullet adds TORQUE_CONTROL torques (and external forces) up until its step, so
            # the difference makes the step's torque this apply()'s
            self._send(x, torque - sent if repeated else torque)
            self.last_torque = torque
        if contacts is not None and not repeated:   # (a repeated apply(): the same state, the reactions are sent)
            contacts.apply_reactions()
        watch.sent(x, xd, xdd)
        self.time += self.dt
        return torque

    def _apply_checked_rows(self, x: np.ndarray, xd: np.ndarray) -> np.ndarray | None:
        """`apply()` on the one-call rows kernel (`_rows_stage`, own M and h) with nothing acting but the rows and the
        force elements that kernel evaluates (no tau= / generalized=, contacts, muscles or motors; the watch armed:
        `OutsideWatch.kernel_checks`): the watch's check of the state read and the solve in one kernel call (the
        check first — `outside._clean_step_py` —, `kernels.UNWATCHED` and nothing solved unless a clean step:
        `OutsideWatch.clean`), then the send and the clock. Stops alone (URDF `<limit>`s: `ForceStage.idle_below`)
        take this path too: solved without them, then — where the check's max |θ| may reach one — the rows stage with
        the force stage solves again. Returns τ sent, or None — nothing sent — where the watch
        must look at the state (`OutsideWatch.observe`) or a force element needs the force stage: `apply` then goes
        on from (x, ẋ) as read. Before, the watch's check was a call of its own between the read and the solve
        (≈ 1–1.5 µs of a ≈ 20 µs step with its Python)."""
        watch = self.watch
        prev_xdd = watch.xdd   # (the last step's ẍ: the kernel reads it before its solve writes this step's there)
        if prev_xdd is not self._xdd or self._own is None:
            return None
        elements = self.forces.elements
        if self._kernel_forces_for is not elements:   # elements added or cleared since the last look
            self._look_at_forces()
        address = self._rows_address
        if self._kernel_forces_only:   # (as `_rows_stage`: springs in the kernel, constant and timed torques here)
            forces = self._compiled_forces
            torque = forces[1]
            for element in forces[2]:
                torque = torque + element.generalized_force(self.model, x, xd, self.time)
        elif elements and not self.forces.idle_below > 0.0:   # the force stage takes the watch's peak: `observe`
            return None
        else:   # no element, or stops alone (`ForceStage.idle_below`): solved without them, tested after the check
            torque = self._zero_tau
            if self._compiled_forces is not None and self._loops_data is not None:   # (elements cleared)
                address = self._no_springs_address
        out = np.empty(self._out_size)   # [τ_out, λ]
        status = self._rows_kernel(address, torque, self.time, x, xd, prev_xdd, out, watch.prev_x, watch.prev_v,
                                   prev_xdd, JUMP_TOLERANCE)
        if status == UNWATCHED:
            return None
        if watch.clean(self._peaks):   # an exact rest: `apply` nudges the step (`OutsideWatch.nudge`)
            return None
        stage = self.forces
        if elements and not self._kernel_forces_only and not (watch.peak < stage.idle_below
                                                              and stage.generation == added_generation()):
            # a stop may act at this state (or elements changed): the rows stage with the force stage, solved again
            torque, xdd = self._rows_stage(x, xd, None)
        elif status == 0:   # (`_kernel_stood`'s common case without its call)
            self._lambda = out[self._out_n:]
            torque, xdd = out[:self._out_n], prev_xdd
        elif self._kernel_stood(status, out, x, xd):
            torque, xdd = out[:self._out_n], prev_xdd
        else:   # the general solve (as `_rows_stage`), with every force element
            if self._kernel_forces_only:
                torque = self._with_forces(None, x, xd)
            torque, xdd = self._constrained_torque(x, xd, torque, self.time), self._solved_xdd
        # `_send` of a fixed base in tree order (this path's only kind), without its call
        p = self.pybullet
        p.setJointMotorControlArray(self.body, self._joint_list, p.TORQUE_CONTROL, forces=torque.tolist(),
                                    physicsClientId=self.client)
        self.last_torque = torque
        watch.sent(x, xd, xdd)
        self.time += self.dt
        return torque

    def _apply_read_rows(self, user: np.ndarray | None,
                         general: np.ndarray | None) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """`apply()` of a floating base or spherical joints held by the one-call rows kernel with nothing acting
        but the rows, tau= / generalized= and force elements that do not act (no contacts, muscles or motors; URDF
        `<limit>` stops away from their limits): PyBullet's raw state (`PyBulletMap.raw_state`) → (x, ẋ), the rows
        stage and the torques as PyBullet takes them in one kernel call (`kernels.at_kernel` of a `ReadRecord`;
        M and h from the own recursions: `own_dynamics`), then the watch
        on the state it read, the force elements' τ there (`ForceStage`: None), the send, the clock. Returns (τ
        sent, x, ẋ); τ None when the watch moved the state (a projection, the first look after a reset) or found
        no step since the last apply(), or a force element acts: `apply` then goes on from the watched (x, ẋ) as
        every other path does (this kernel's solve is dropped: it wrote only its own work arrays)."""
        watch = self.watch
        if general is not None:   # (a copy: `apply` goes on from the checked arguments when this path declines)
            user = self._add_generalized(None if user is None else user.copy(), general)
        torque = self._zero_tau if user is None else user
        pair = self._read_xdd
        prev_xdd = watch.xdd
        xdd = pair[prev_xdd is pair[0]]   # (not the watch's prediction of this step)
        x, xd, out = np.empty(self._n_config), np.empty(self._out_n), np.empty(self._out_size)
        if watch.kernel_checks and (prev_xdd is pair[0] or prev_xdd is pair[1]):   # the watch's check inside
            status = self._read_rows(self._read_address, self.map.raw_state(), torque, self.time, x, xd, xdd, out,
                                     watch.prev_x, watch.prev_v, prev_xdd, JUMP_TOLERANCE)
            if status == UNWATCHED:   # nothing solved: the watch looks (`observe`), then the stage solves
                watch.observe(x, xd)
                return None, x, xd
            if watch.clean(self._peaks):   # an exact rest: `apply` nudges the step (`OutsideWatch.nudge`)
                return None, x, xd
        else:
            status = self._read_rows(self._read_address, self.map.raw_state(), torque, self.time, x, xd, xdd, out,
                                     x, xd, xdd, -1.0)
            if not watch.observe(x, xd) or watch.resting:   # (an exact rest: as above)
                return None, x, xd
        forces = self.forces
        if not (watch.peak < forces.idle_below and forces.generation == added_generation()) \
                and forces.torque(x, xd, self.time, watch.peak) is not None:   # (no call while none can act)
            return None, x, xd
        self._xdd = xdd   # (the work array of this step's solves from here on)
        if status == 0:   # (`_kernel_stood`'s common case without its call)
            self._lambda = out[self._out_n:]
        if status == 0 or self._kernel_stood(status, out, x, xd):
            sent = out[:self._out_n]
            p = self.pybullet
            if self._spherical:   # (as `_send`: [τx, τy, τz] per spherical joint, then [τ] per 1-DOF joint)
                p.setJointMotorControlMultiDofArray(self.body, self._multi_dof_joints, p.TORQUE_CONTROL,
                                                    forces=self._sent_spherical.tolist() + self._sent_column.tolist(),
                                                    physicsClientId=self.client)
            else:
                p.setJointMotorControlArray(self.body, self._joint_list, p.TORQUE_CONTROL,
                                            forces=self._sent_joints.tolist(),
                                            physicsClientId=self.client)
            if self._floating:
                self._send_base_wrench(x, sent)
            xdd = self._xdd
        else:   # the general solve (it reads M and h again)
            sent = self._constrained_torque(x, xd, torque, self.time)
            xdd = self._solved_xdd
            self._send(x, sent)
        self.last_torque = sent
        watch.sent(x, xd, xdd)
        self.time += self.dt
        return sent, x, xd

    def _add_generalized(self, user: np.ndarray | None, general: np.ndarray) -> np.ndarray:
        """user τ (or None; added to in place) + the checked `generalized=` (`_generalized_argument`) at the
        independent coordinates' entries (G has identity rows there)."""
        user = np.zeros(self.model.n_tangent) if user is None else user
        user[self.independent_v] += general
        return user

    def _apply_plain(self) -> np.ndarray:
        """`apply()` of a model with nothing to hold (no rows, no native loops) and no muscles, motors or torque
        arguments (the plan `_plain`, decided at construction): read (by the contacts when they read it) → the watch's
        runaway check (nothing to project without rows) → the contacts' and force elements' τ → send (the
        lifecycle checked by `apply`)."""
        contacts, watch = self.contacts, self.watch
        if contacts is None:
            torque = None
            entry = self._plain_read
            if entry is not None and watch.armed and watch.weight == 1.0:
                # a floating base or spherical joints: the conversion and the watch's check in one call
                x, xd = np.empty(self._n_config), np.empty(self._out_n)
                if entry(self._plain_address, self.map.raw_state(), x, xd, watch.prev_x, watch.prev_v, self.dt, 1.0,
                         JUMP_TOLERANCE):   # a moving body's step: the watch's record of it
                    resting = watch.clean(self._peaks)   # (a local: no attribute read on this path)
                    repeated = False
                else:   # the watch looks at the state
                    repeated = watch.check_runaway(x, xd)
                    resting = watch.resting
            else:
                x, xd = self._read()
                repeated = watch.armed and watch.check_runaway(x, xd)
                resting = watch.resting
        else:
            torque = contacts.torques()   # a new array; reads the state (kept in state_read) unless it needs
            state = contacts.state_read   # PyBullet's geometry
            x, xd = state if state is not None else self._read()
            repeated = watch.armed and watch.check_runaway(x, xd)
            resting = watch.resting
        if repeated:   # apply() again before stepSimulation(): it replaces the last one (see `apply`)
            self.time -= self.dt
            sent = self.last_torque.copy()
        elif watch.jumped and contacts is not None:   # a reset / restoreState: the contacts start from it
            torque = contacts.after_jump()
        forces = self.forces
        # no stage call while no element can act (≈ 0.5 µs a step: `ForceStage.idle_below`)
        applied = None if watch.peak < forces.idle_below and forces.generation == added_generation() \
            else forces.torque(x, xd, self.time, watch.peak)
        if torque is not None:   # the contacts' τ (a new array), and the force elements'
            if applied is not None:
                torque += applied
            if resting:   # an exact rest: a step must show (`OutsideWatch.nudge`)
                watch.nudge(torque)
            self._send(x, torque - sent if repeated else torque)
            if not repeated:   # (the same state: its reactions are sent)
                contacts.apply_reactions()
        elif applied is None:   # nothing acts: nothing to send (PyBullet clears joint torques after every step)
            torque = self._zero_sent
            if resting:   # an exact rest: the nudge alone marks the step (`OutsideWatch.nudge`)
                torque = torque.copy()
                watch.nudge(torque)
                self._send(x, torque - sent if repeated else torque)
            elif repeated:
                self._send(x, -sent)
        else:
            torque = applied.copy()
            if resting:   # an exact rest: a step must show (`OutsideWatch.nudge`)
                watch.nudge(torque)
            if repeated:
                self._send(x, torque - sent)
            elif forces.joint_only:   # τ on the 1-DOF joints alone: no base wrench, nothing for spherical joints
                self._send_joints(torque)
            else:
                self._send(x, torque)
        self.last_torque = torque
        watch.sent(x, xd, None)
        self.time += self.dt
        return torque

    def _with_forces(self, user: np.ndarray | None, x, xd) -> np.ndarray:
        """user τ + the force elements' τ (`ForceStage`) as an array the caller may keep (never written later)."""
        applied = self.forces.torque(x, xd, self.time, self.watch.peak)
        if applied is None:
            return self._zero_tau if user is None else user
        return applied.copy() if user is None else user + applied

    def _constraint_stage(self, x, xd, user) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(τ to send, or None when nothing acts; ẍ of the solve for the watch, or None): the stage chosen at
        construction (`_fast_paths`) — a loop stage of the pipeline would slot in here."""
        if self.uses_null_space:
            return self._null_space_stage(x, xd, user)
        if self._rows_fast:
            return self._rows_stage(x, xd, user)
        torque = self._with_forces(user, x, xd)
        if self.constraints.n:
            return self._constrained_torque(x, xd, torque, self.time), self._solved_xdd
        return (None if torque is self._zero_tau else torque), None


    def _torque_argument(self, tau) -> np.ndarray:
        """`tau=` as a new float array (n_tangent, tree order): a vector, or {joint name: N·m or N} (a floating base's
        components by `base_vx` … `base_wz`)."""
        model = self.model
        if isinstance(tau, Mapping):
            return _by_name(tau, self.torque_names, "tau", model)
        if type(tau) is not np.ndarray or tau.dtype is not FLOAT:   # (a float array, every step's case: no test)
            _refuse_flags(tau, "tau", self.torque_names)
        return np.array(model.checked("tau", tau, model.n_tangent), dtype=float)

    def _generalized_argument(self, generalized) -> np.ndarray:
        """`generalized=` (nv, the independent coordinates' order `model.velocity_names`), or {coordinate name: Q}."""
        model = self.model
        if isinstance(generalized, Mapping):
            return _by_name(generalized, tuple(model.velocity_names), "generalized", model)
        if type(generalized) is not np.ndarray or generalized.dtype is not FLOAT:
            _refuse_flags(generalized, "generalized", tuple(model.velocity_names))
        return model.checked("generalized", generalized, model.nv)

    def _null_space_stage(self, x, xd, user) -> tuple[np.ndarray, np.ndarray | None]:
        """Constant rows of full rank on a fixed base in PyBullet's dof order (linear joint functions, no loops):
        Φ, Φ̇, M, h (own recursions when `own_dynamics`), the null-space solve and λ in one kernel call
        (`kernels.linear_own_kernel`, else PyBullet's M and h and `kernels.linear_torque`). The general solve takes
        over for a velocity projection or a failed reduced solve."""
        n = self._out_n
        flat = self._state_pair(x, xd)
        torque = self._with_forces(user, x, xd)
        out = np.empty(self._out_size)   # [τ_out (n), λ (n_c)]
        limit = self.projection_tolerance / self.dt if self.velocity_projection else np.inf
        corrector = self.corrector
        if self._linear_own is not None:   # M, h and the null-space solve in one call
            status = self._linear_own(*self._own_tree, torque, self._null, flat, corrector.kp, corrector.kd, limit,
                                      self._null_work, out)
        else:
            mass, bias = self._mass_and_bias(x, xd)
            status = self._kernels[2](mass, bias, torque, self._null, flat.reshape(2, n), corrector.kp,
                                      corrector.kd, limit, self._null_work, out)
        if status == 0:
            self._lambda = out[n:]
            return out[:n], None
        # projection due or no reduced solution: the general solve (it reads M and h again)
        return self._constrained_torque(x, xd, torque, self.time), self._solved_xdd

    def _rows_stage(self, x, xd, user) -> tuple[np.ndarray, np.ndarray | None]:
        """Explicit joint functions (polynomial, spline, Fourier, linear, expression) on any base (fixed in
        PyBullet's dof order, floating, spherical joints) and point/planar/revolute `<loop>`s on a fixed base,
        step-end target: rows, M and h (own recursions when `own_dynamics`), point-to-point springs and the Schur
        solve in one kernel call (`kernels.rows_torque_kernel` / `loop_torque_kernel`, their constants by address:
        `_pack_rows`), then the step-end check. The general solve takes over when the kernel declines."""
        address = self._rows_address
        forces = self._compiled_forces
        elements = self.forces.elements
        if self._kernel_forces_for is not elements:   # elements added or cleared since the last look
            self._look_at_forces()
        if self._kernel_forces_only:   # springs in the kernel, constant and timed torques here
            torque = forces[1] if user is None else user + forces[1]   # (the kernel never writes τ)
            for element in forces[2]:
                torque = torque + element.generalized_force(self.model, x, xd, self.time)
        else:   # (no element: `_with_forces`' τ without its calls, ≈ 0.3 µs)
            torque = (self._zero_tau if user is None else user) if not elements else self._with_forces(user, x, xd)
            if forces is not None and self._loops_data is not None:   # an element was added: the force stage
                address = self._no_springs_address                        # applied every element, the kernel none
        if self._own is None:   # PyBullet's M and h into the record's work arrays
            mass, bias = self._mass_and_bias(x, xd)
            self._mass_work[:] = mass
            self._bias_work[:] = bias
        out = np.empty(self._out_size)   # [τ_out, λ]
        # (the step-end check inside, `_end_correction`'s kernel; the watch's check done: jump tolerance −1)
        status = self._rows_kernel(address, torque, self.time, x, xd, self._xdd, out, x, xd, self._xdd, -1.0)
        if self._kernel_stood(status, out, x, xd):
            return out[:self._out_n], self._xdd
        # the general solve (it reads M and h again), with every force element
        if self._kernel_forces_only:
            torque = self._with_forces(user, x, xd)
        return self._constrained_torque(x, xd, torque, self.time), self._solved_xdd

    def _kernel_stood(self, status: int, out: np.ndarray, x, xd) -> bool:
        """Whether a rows kernel's solve stood (status 0, END_MISSED or LOOP_GAP): then its λ (out = [τ, λ]) is kept
        and a missed step end or a loop gap named; False when it declined (the general solve decides)."""
        if status == 0 or status == END_MISSED or status == LOOP_GAP:
            self._lambda = out[self._out_n:]
            if status == END_MISSED:
                self._end_missed(x, xd, self._xdd)
            elif status:
                self._loop_gap(x)
            return True
        return False

    def _state_pair(self, x, xd) -> np.ndarray:
        """[x, ẋ] as one array (2n): the read's own (`_flat`) when x and ẋ are its views, else a new one."""
        flat = self._flat
        if flat is None or x.base is not flat:
            flat = np.concatenate((x, xd))
        return flat


    def _constrained_torque(self, x, xd, torque, t) -> np.ndarray:
        """τ + Φ_xᵀλ (from the kernels), after the velocity projection if it is due (see PROJECTION_TOLERANCE)."""
        constraints, n = self.constraints, self.model.n_tangent
        linear_rows, kkt_torque, _ = self._kernels
        mass, bias = self._mass_and_bias(x, xd)
        limit = self.projection_tolerance / self.dt if self.velocity_projection else np.inf
        # the KKT system: general rows (loops, non-linear functions, floating base), and constant rows where the
        # null-space stage does not serve or hands over (a velocity projection due, TᵀMT not positive definite)
        if self.linear is not None:   # Φ = A x − c, Φ_x = A, Φ_t = 0, bias 0
            jac, phi, phi_dot, phi_t, bias_c = self.linear[0], self._phi, self._phi_dot, None, self._zero_c
            residual = linear_rows(jac, self.linear[1], x, xd, phi, phi_dot)
        else:
            phi, jac, phi_t, bias_c = constraint_terms(constraints, x, xd, t)   # (or its clear error)
            if self._step_end:   # no projection (see `_step_end`); Φ̇ is formed in the kernel
                phi_dot, residual = None, 0.0
            else:
                phi_dot = jac @ xd + phi_t
                residual = float(np.abs(phi_dot).max()) if len(phi_dot) else 0.0
        if residual > limit:
            projected = self._project(x, xd, mass, jac, phi_t)
            if projected is not None:
                xd = projected
                bias = self._mass_and_bias(x, xd, need_mass=False)[1]
                if self.linear is not None:
                    linear_rows(jac, self.linear[1], x, xd, phi, phi_dot)
                else:
                    bias_c = constraints.velocity_bias(x, xd, t)   # same (x, t): function jets are reused
                    phi_dot = jac @ xd + phi_t
        if self.corrector.kb != 1.0:
            bias_c = self.corrector.kb * bias_c
        rows = ConstraintRows(jac, phi, self._zero_c if phi_t is None else phi_t, phi_t is not None, bias_c,
                              self.corrector.kp, self.corrector.kd)
        out = np.empty(n + constraints.n)   # [τ_out, λ]
        if kkt_torque(mass, bias, torque, rows, xd, self._xdd, out) == 0:
            lam, out = out[n:], out[:n]
        else:   # singular KKT matrix (redundant rows): least squares
            phi_dot = jac @ xd + (0.0 if phi_t is None else phi_t)
            target = -bias_c - self.corrector.kd * phi_dot - self.corrector.kp * phi   # bias_c already × kb
            xdd, lam = constrained_acceleration(mass, bias, torque, jac, target, redundant="least_squares")
            lam = np.ascontiguousarray(lam, dtype=float)   # (`_end_correction`'s kernel updates it in place)
            out = torque + jac.T @ lam
            self._xdd[:] = xdd
        self._lambda = lam
        self._solved_xdd = self._xdd   # ẍ of the solve: the watch's prediction of the next step
        if self.linear is None and self._step_end:
            out = self._end_correction(x, xd, self._xdd, np.ascontiguousarray(mass, dtype=float),
                                       np.ascontiguousarray(jac, dtype=float), out)
        return out

    def _motor_stage(self, x, xd, user) -> tuple[np.ndarray, np.ndarray]:
        """(τ to send, ẍ of the solve): the rows and the bridge's motors in one solve (`bridge.motors.motor_torque`),
        its λ and ẍ kept like the general solve's, the rows' end point refined by Newton's method as well."""
        from biobullet.bridge.motors import motor_torque
        out, xdd, lam, self.motor_torques, mass, jac = motor_torque(self, x, xd, self._with_forces(user, x, xd),
                                                                    self.time)
        self._lambda = np.ascontiguousarray(lam, dtype=float)   # (`_end_correction` updates it in place)
        self._xdd[:] = xdd
        self._solved_xdd = self._xdd
        if lam.size and self.linear is None and self._step_end:
            out = self._end_correction(x, xd, self._xdd, np.ascontiguousarray(mass, dtype=float),
                                       np.ascontiguousarray(jac, dtype=float), out)
        return out, self._xdd

    def _end_correction(self, x, xd, xdd, mass, jac, torque) -> np.ndarray:
        """The step-end target by Newton's method instead of Taylor's formula (explicit function rows and loops,
        `_end_point_rows`): the solve asked Φ(x + dt ẋ + c dt² ẍ, t + dt) = 0 to second order, which leaves an
        O(dt³) residual (4.9e-4 rad at 240 Hz on a flailing 7-DOF arm, 5e-3 m on Andrews' squeezer at 1 ms); while
        the end-point residual of the solve's ẍ exceeds END_TOLERANCE (function rows) or LOOP_END_TOLERANCE
        (loops), up to END_ITERATIONS Newton steps Δλ = −(J M⁻¹ Jᵀ)⁻¹ Φ_end/(c dt²) on the constraint forces (J:
        the function rows' Φ_x of the step's start `jac`, chord steps; the loop rows' Jacobian at the end point)
        put the end point on the manifold — one compiled call (`kernels.end_newton`, also inside the rows kernels
        of `_rows_stage`, which evaluates the loops' end point only where their predicted Taylor miss exceeds
        LOOP_SKIP_BELOW; here, every step), ẍ (the watch's prediction), τ and λ updated in place. A miss is named
        (`_end_missed`). Plug-in rows without compiled jets keep the Taylor target (watched, `bridge.outside`).
        Where the kernel's Schur complement declines (its M⁻¹ does not exist: a massless link the rows hold), the
        same Newton steps on the KKT matrix (`_end_newton_kkt`)."""
        if self._end_newton is not None:   # (C-contiguous arrays: its direct entry)
            functions, loops, tree = self._end
            self._restart_loop_record()   # (no start residual here: every step evaluates the loops' end point)
            status = self._end_newton(functions, loops, tree, self._gains, self.time, x, xd, mass, jac, xdd, torque,
                                      self._lambda)
            if status == END_SCHUR_DECLINED:
                status = self._end_newton_kkt(x, xd, xdd, mass, torque)
            if status:
                self._end_missed(x, xd, xdd)
        return torque

    def _end_newton_kkt(self, x, xd, xdd, mass, torque) -> int:
        """`_end_correction`'s Newton steps where the compiled ones declined because they go through M⁻¹, singular
        where a link without mass is held by the rows (a four-bar's massless coupler: before, every step warned that
        the Newton steps "did not converge" at the Taylor miss, 4.5e-11 m, which no step had corrected): Δλ from
        the minimum-norm KKT solution of M Δẍ = Φ_xᵀΔλ, Φ_x Δẍ = −Φ/(c dt²) (`constrained_acceleration`,
        least squares), Φ and Φ_x at each end point (the base's pose held, as in the kernel), ẍ, τ and λ updated in
        place until every row is within LOOP_END_TOLERANCE (the tighter of the kernel's two tolerances). Only this
        rare path pays for it (Python, one KKT solve per Newton step). 0 when within it, 1 when a value is not
        finite, 3 when END_ITERATIONS steps were not enough (the caller names the rows)."""
        c, dt = substep_weight(self.substeps), self.dt
        h, t_end, zero = c * dt * dt, self.time + dt, np.zeros(len(xd))
        base, base_v = self._base, self._base_v
        for k in range(END_ITERATIONS + 1):
            x_end = np.array(x, dtype=float)
            x_end[base:] += dt * xd[base_v:] + h * xdd[base_v:]
            phi, jac = constraint_terms(self.constraints, x_end, xd, t_end)[:2]
            worst = float(np.abs(phi).max(initial=0.0))
            if not math.isfinite(worst):
                return 1
            if worst <= LOOP_END_TOLERANCE:
                return 0
            if k == END_ITERATIONS:
                return 3
            step, delta = constrained_acceleration(mass, zero, None, jac, -phi / h, redundant="least_squares")
            xdd += step
            torque += jac.T @ delta
            self._lambda += delta
        return 3

    def _end_missed(self, x, xd, xdd) -> None:
        """The step-end correction left a row beyond its tolerance (END_ITERATIONS Newton steps were not enough, a
        function value was not finite or the Newton matrix singular at the end point): one CouplingWarning naming
        the worst row at the end point the step now aims at (the base's pose held, as in the kernel)."""
        if self.massless_links:   # (its M is singular: the correction cannot converge — named as what it is)
            cause, remedy, key = massless_cause(self.massless_links[0])
            self.watch.warn(key, f"constraint rows cannot be held from t = {self.time:.6g} s: {cause}", remedy)
            return
        c, dt = substep_weight(self.substeps), self.dt
        x_end = np.array(x, dtype=float)
        x_end[self._base:] += dt * xd[self._base_v:] + c * dt * dt * xdd[self._base_v:]
        residual = np.abs(self.constraints.residual(x_end, self.time + dt))
        worst = int(np.argmax(residual)) if len(residual) else 0
        name = self.constraints.names[worst] if len(residual) else "(none)"
        self.watch.warn("end_newton", f"the step-end Newton correction left constraint {name!r} off by "
                                      f"{float(residual.max(initial=0.0)):.3g} rad or m at the end of the step from "
                                      f"t = {self.time:.6g} s (dt = {dt:g} s): its Newton steps did not converge "
                                      "(the rows move too far in one step, or a loop is near a singular "
                                      "configuration)",
                        "a smaller time step (Bridge(model, dt=...) or bridge.set_time_step(dt))")

    def _loop_gap(self, x) -> None:
        """The last step skipped the loops' end point (its predicted Taylor miss was within LOOP_SKIP_BELOW) and
        ended beyond the promise (`kernels.LOOP_GAP`): one CouplingWarning naming the loop row and its gap, read
        at the start of this step (whose end point is evaluated)."""
        residual = np.abs(self.constraints.residual(x, self.time))
        worst = int(np.argmax(residual))
        self.watch.warn("loop_skip", f"constraint {self.constraints.names[worst]!r} was off by "
                                     f"{float(residual[worst]):.3g} m at t = {self.time:.6g} s after a step that did "
                                     "not evaluate the loops' end point (its predicted Taylor miss was below "
                                     f"{LOOP_SKIP_BELOW:g} m): the loop's motion changed faster than predicted",
                        "a smaller time step (Bridge(model, dt=...) or bridge.set_time_step(dt))")

    def _mass_and_bias(self, x, xd, source: str = "solve", xdd=None,
                       need_mass: bool = True) -> tuple[np.ndarray | None, np.ndarray]:
        """(M(x) or None, ID(x, ẋ, ẍ): h with ẍ = 0 when xdd is None) in biobullet's tree order: the one place the
        bridge takes M and h — its solve (`source` "solve"), the start check of `own_dynamics`, `tree_mass_and_bias`,
        `inverse_dynamics` and the joint reactions (sources as `tree_mass_and_bias`; x, ẋ, ẍ C-contiguous float
        arrays). PyBullet's calls: a fixed base in PyBullet's dof order passes the state lists straight; another
        fixed base through the dof permutation; a floating base through `conventions.PyBulletMap`'s tangent maps."""
        if source == "solve":
            source = self._solve_source
        if source != "pybullet" or self._kernel_only:   # the pipeline's tree kernel, on PyBullet's or the model's body
            if source == "model":
                compiled = self.model.compiled
                self._stored_tree()   # (its direct entry)
                meta, body, gravity = compiled.tree_meta, compiled.tree_body, self._model_gravity
            elif source == "current":
                self._stored_tree()   # (its direct entry)
                engine = self.pybullet.getPhysicsEngineParameters(physicsClientId=self.client)
                meta, body = self.model.compiled.tree_meta, self.stored_bodies()
                gravity = np.array([engine[f"gravityAcceleration{a}"] for a in "XYZ"], dtype=float)
            else:
                _, meta, body, gravity = self._stored or self._stored_tree()
            mass, bias = self._tree_entry(meta, body, x, xd, xd if xdd is None else xdd, gravity, self._out_n,
                                          need_mass, True, xdd is not None)
            return (mass if need_mass else None), bias
        p, c, b = self.pybullet, self.client, self.body
        if not self._fixed:
            mass = (self.map.mass_matrix_from_pybullet(np.asarray(p.calculateMassMatrix(
                b, self._to_pybullet(x[self._base:]), physicsClientId=c))) if need_mass else None)
            return mass, self.map.inverse_dynamics(x, xd, np.zeros(self._out_n) if xdd is None else xdd)
        x_list, xd_list = self._to_pybullet(x), self._to_pybullet(xd)
        mass = np.asarray(p.calculateMassMatrix(b, x_list, physicsClientId=c)) if need_mass else None
        bias = np.asarray(p.calculateInverseDynamics(b, x_list, xd_list, self._zero_list if xdd is None
                                                     else self._to_pybullet(xdd), physicsClientId=c))
        if self._dof_identity:
            return mass, bias
        return (mass[self._dof_mesh] if need_mass else None), bias[self._dof]

    def _project(self, x, xd, mass, jac, phi_t):
        """ẋ ← the mass-weighted closest velocity with Φ_x ẋ + Φ_t = 0, written back to PyBullet (None if the
        correction is round-off)."""
        phi_t = np.zeros(len(jac)) if phi_t is None else phi_t
        projected = velocity_projection(mass, jac, xd, phi_t, redundant="least_squares")
        if np.abs(projected - xd).max() <= PROJECTION_FLOOR * (1.0 + np.abs(xd).max()):
            return None
        self._write_state(x, projected)
        self.projections += 1
        xd[:] = projected   # the caller's state (and the watch's record of this step) is the projected one
        return projected

    def _send_joints(self, torque: np.ndarray) -> None:
        """`_send` of a τ that is zero on a floating base and on every spherical joint: the 1-DOF joints' call alone
        (PyBullet clears every joint torque after each step, so a zero needs no call)."""
        self.pybullet.setJointMotorControlArray(self.body, self._joint_list, self.pybullet.TORQUE_CONTROL,
                                          forces=torque[self._base_v:].tolist(), physicsClientId=self.client)

    def _send(self, x: np.ndarray, torque: np.ndarray) -> None:
        """τ (n_tangent, our order) to PyBullet: the joints in one call (every joint through the multi-DOF call when
        the body has spherical joints: τ_pb = R_iᵀ τ per spherical joint, `PyBulletMap.spherical_torques`, and
        [τ] per 1-DOF joint — 0.7 µs less than a second call for the 1-DOF joints), a floating base's wrench as
        external force and torque when it is not zero."""
        p, c, b = self.pybullet, self.client, self.body
        if self._spherical:
            forces = self.map.spherical_torques(torque)   # a new list of [τx, τy, τz] per spherical joint
            forces += torque[self._base_v:, None].tolist()   # [[τ] per 1-DOF joint] in one C call
            p.setJointMotorControlMultiDofArray(b, self._multi_dof_joints, p.TORQUE_CONTROL, forces=forces,
                                                physicsClientId=c)
        elif self._joint_list:   # (a body that is only a floating base has no joint to send to)
            p.setJointMotorControlArray(b, self._joint_list, p.TORQUE_CONTROL,
                                        forces=(torque if self._fixed else torque[self._base_v:]).tolist(),
                                        physicsClientId=c)
        if self._floating:
            self._send_base_wrench(x, torque)

    def _send_base_wrench(self, x: np.ndarray, torque: np.ndarray) -> None:
        """A floating base's wrench τ[:6] as external force and torque on PyBullet's base, when it is not zero
        (world force, moment and COM from one compiled call, `kernels.base_wrench_kernel`)."""
        if np.count_nonzero(torque[:6]):   # (.any() costs 3 µs here, count_nonzero 0.7)
            p, c, b = self.pybullet, self.client, self.body
            entry, offset, out = self._wrench
            entry(np.ascontiguousarray(x), np.ascontiguousarray(torque), offset, out)
            world = out.tolist()
            p.applyExternalForce(b, -1, world[:3], world[6:], p.WORLD_FRAME, physicsClientId=c)
            p.applyExternalTorque(b, -1, world[3:6], p.WORLD_FRAME, physicsClientId=c)

    def step(self, tau=None, *, generalized=None) -> float:
        """apply() + stepSimulation(); returns the new time (s)."""
        self.apply(tau, generalized=generalized)
        self.pybullet.stepSimulation(self.client)   # (client id by position: no keyword dict)
        if self._auto_record:
            self.record()
        return self.time

    def set_excitations(self, activations=None, **excitations: float):
        """Put the model's muscles into the bridge's dynamics (first call: activations — a number or a mapping by
        name, default each muscle's default_activation — and compliant fibers in static equilibrium at the current
        pose) and set constant excitations by muscle name, each in [0, 1] (`bridge.muscles`); returns the
        BridgeMuscles. Activations on a later call are a ModelError (the state is the dynamics' by then; `reset()`
        restarts it from the first call's)."""
        ensure_usable(self, "set_excitations")
        from biobullet.bridge.muscles import set_excitations
        return set_excitations(self, activations, **excitations)

    def set_motor(self, name: str, position: float | None = None, velocity: float = 0.0, *,
                  position_gain: float | None = None, velocity_gain: float | None = None,
                  max_force: float | None = None) -> None:
        """A motor of the bridge on 1-DOF joint `name` (an independent coordinate or a dependent joint), with
        PyBullet's POSITION_CONTROL (position given) or VELOCITY_CONTROL meaning — positionGain (default 0.1),
        velocityGain (1.0), force limit max_force (N·m or N; default unlimited) — acting inside the bridge's
        constrained solve, so joint functions and loops hold (`bridge.motors`). `set_motor(name, None,
        velocity_gain=0)` leaves it without effect; `clear_motor(name)` removes it. Motors take the general path."""
        ensure_usable(self, "set_motor")
        from biobullet.bridge.motors import motor_settings
        self.motors[name] = motor_settings(self, name, position, velocity, position_gain, velocity_gain, max_force)

    def clear_motor(self, name: str | None = None) -> None:
        """Remove the bridge's motor on `name` (None: every motor)."""
        ensure_usable(self, "clear_motor")
        if name is None:
            self.motors.clear()
        elif self.motors.pop(name, None) is None:
            raise ModelError(f"Bridge.clear_motor: no motor on {name!r}", argument="name",
                             expected="one of " + (", ".join(self.motors) or "(no motors set)"))

    def contact_forces(self) -> dict[str, dict]:
        """The contact forces of the last apply(): per contact on the file's ground, and per `CONTACT@BODY:LINK`
        for scene bodies ({"normal": N, "friction": world N, "point": world m, "penetration": m, "body", "link"});
        empty without `<contact>`s."""
        ensure_usable(self, "contact_forces")
        return {} if self.contacts is None else self.contacts.forces()

    def joint_reactions(self):
        """What each parent exerts on its child at the joint (see `bridge.reactions.joint_reactions`)."""
        ensure_usable(self, "joint_reactions")
        from biobullet.bridge.reactions import joint_reactions
        return joint_reactions(self)

    def reaction_forces(self) -> "ReactionForces":
        """Constraint multipliers λ of the last apply(), by row name (τ_c = Φ_xᵀλ), as a `ReactionForces` dict
        whose repr gives each row's unit: `JOINT.function` N·m (N for a prismatic joint), loop rows `LOOP.x|y|z`
        N along the world axes, `LOOP.e1|e2` N along the planar loop's in-plane axes, `LOOP.axis1|axis2` N·m.

        Native loops add `loop:<name>:<k>` entries from getConstraintState (PyBullet's applied force, N).
        """
        ensure_usable(self, "reaction_forces")
        out = ReactionForces(zip(self.constraints.names, self._lambda.tolist()))
        for name, cid in self.native_constraints.items():
            for k, value in enumerate(self.pybullet.getConstraintState(cid, physicsClientId=self.client)):
                out[f"loop:{name}:{k}"] = float(value)
        out.units = {name: self._row_unit(name) for name in out}
        return out

    def _row_unit(self, name: str) -> str:
        if name.endswith(".function"):
            joint = name[:-len(".function")]
            prismatic = joint in self.model.joint_names and self.model.description.joint(joint).type == "prismatic"
            return "N" if prismatic else "N·m"
        if name.endswith((".axis1", ".axis2")):
            return "N·m"
        if name.endswith((".e1", ".e2")):
            return "N (in-plane axis)"
        return "N (world axes)" if name.endswith((".x", ".y", ".z")) else "N"

    # ------------------------------------------------------------------ recording
    def record(self) -> None:
        """Append the current (t, x, ẋ) to the recording (automatic after every step with record=True)."""
        t, x, xd = self.state()   # checks that the bridge is usable
        self.samples.append((t, x, xd))
        if self.muscles is not None:
            self.muscles.record(len(self.samples) - 1)

    def trajectory(self):
        """The recorded samples as the reference engine's `integrate.Trajectory`, in its layout: `positions` /
        `velocities` the tree state x / ẋ (a floating base's pose and twist first, named base_x … base_qw /
        base_vx … base_wz, then every joint), q, v the independent coordinates; meta = {"engine": "pybullet",
        "dt": s}. No energies (PyBullet reports none)."""
        from biobullet.integrate.trajectory import Trajectory
        ensure_usable(self, "trajectory")
        if not self.samples:
            raise ModelError("nothing recorded: call record() or create the bridge with record=True",
                             attribute="record")
        model = self.model
        t = np.array([s[0] for s in self.samples])
        x = np.array([s[1] for s in self.samples])
        xd = np.array([s[2] for s in self.samples])
        base_q = tuple(model.coordinate_names[:model.base_nq])   # floating base and spherical joints
        base_v = tuple(model.velocity_names[:model.base_nv])
        return Trajectory(t=t, position_names=base_q + tuple(model.joint_names),
                          velocity_names=base_v + tuple(f"{name}_dot" for name in model.joint_names),
                          positions=x, velocities=xd, q=x[:, self.independent_x], v=xd[:, self.independent_v],
                          coordinate_names=tuple(model.coordinate_names),
                          meta=dict(engine="pybullet", dt=self.dt), model=model,
                          muscles={} if self.muscles is None else self.muscles.samples(x, xd),
                          muscle_names=() if self.muscles is None else tuple(self.muscles.names))


def initial_state(model, initial) -> tuple[np.ndarray, np.ndarray]:
    """(q0, v0) from None (the model's `<initial>`), a {NAME or NAME_dot: value} mapping of overrides, or (q0, v0)."""
    if initial is None or isinstance(initial, Mapping):
        return model.initial_state(initial)
    try:
        q0, v0 = initial
    except (TypeError, ValueError):
        raise ModelError(f"argument 'initial' is {type(initial).__name__}", attribute="initial",
                         expected="(q0, v0), a {name: value} mapping, or None") from None
    return model.checked("q", q0, model.nq), model.checked("v", v0, model.nv)


def _by_name(values: Mapping, names: tuple[str, ...], argument: str, model) -> np.ndarray:
    """A vector over `names` from {name: value} (others 0); ModelError naming an unknown or dependent name."""
    out = np.zeros(len(names))
    index = {name: k for k, name in enumerate(names)}
    for key, value in values.items():
        if key not in index:
            dependent = key in model.joint_names
            raise ModelError(f"argument {argument!r}: {key!r} is "
                             + ("a dependent joint (a joint function's output or closed by a loop): a force on the "
                                "independent coordinates acts on it through the coupling" if dependent
                                else f"not a name of this model{did_you_mean(key, names)}"),
                             file=model.file, attribute=argument, expected="names among " + ", ".join(names))
        if type(value) is float and math.isfinite(value):   # (the common case, per step: no call)
            out[index[key]] = value
        else:
            out[index[key]] = number_argument(value, argument, entry=key, expected="a finite number (N·m or N)")
    return out


def _refuse_flags(values, argument: str, names: tuple[str, ...]) -> None:
    """ModelError naming the argument and the entry for a bool among a vector's values (`core.arguments.first_flag`:
    NumPy reads [True, 0.5] as [1.0, 0.5], a flag would be sent as 1 N·m); text and other non-numbers are
    `Model.checked`'s."""
    k = first_flag(values)
    if k is None:
        return
    if getattr(getattr(values, "dtype", None), "kind", None) == "b":
        raise ModelError("is an array of bools, not of numbers", argument=argument, expected="real numbers (N·m or N)")
    entry = repr(names[k]) if k < len(names) else f"entry {k}"
    raise ModelError(f"{entry}: not a number (got a bool)", argument=argument, expected="real numbers (N·m or N)")


def constraint_terms(constraints, x: np.ndarray, xd: np.ndarray, t: float):
    """(Φ, Φ_x, Φ_t, bias) of a `constraints.equations.ConstraintSet` in one pass, as float arrays."""
    phi, jac, phi_t, bias = constraints.all_terms(x, xd, t)
    return (np.asarray(phi, float), np.atleast_2d(np.asarray(jac, float)), np.asarray(phi_t, float),
            np.asarray(bias, float))


#: segments per `<flexible>` link on the bridge when neither the element nor the caller gives a number: the
#: convergence table of the README (first bending frequency 1.45e-2 / 3.6e-3 relative error for N = 4 / 8; paper
#: 002's drop within 5 mm / 4 mm of Gibbs–Appell) against the explicit step, which shrinks as 1/N (ω_max ∝ N)
DEFAULT_SEGMENTS = 4


def expand_flexible_links(model, segments, shear, air_damping: bool = True):
    """(model, layouts): a model with `<flexible>` links re-loaded with each link expanded into rigid segments
    (`flexible.segments`: bending springs EI/h with Kelvin–Voigt dampers, shear springs κGA/h if shear=True,
    `SegmentAirDamping` unless air_damping=False). segments: one number or {link: number}; default: the
    element's `segments` attribute, else DEFAULT_SEGMENTS.
    shear: default False on the bridge — shear joints raise ω_max by orders of magnitude
    for slender links, and PyBullet's explicit step must stay below 2/ω_max. A model without `<flexible>` is
    returned as it is ({} layouts)."""
    elements = model.description.elements_of("flexible")
    if not elements:
        if segments is not None or shear is not None:
            raise ModelError("arguments 'segments'/'shear' given but the model has no <flexible> link",
                             file=model.file, attribute="segments", expected="a model with <flexible> links")
        return model, {}
    from biobullet.flexible.segments import load_segmented_model
    if segments is None:   # the file's own `segments` is read (and checked) by the expansion (int('2.5') raised)
        segments = {e.get("link"): DEFAULT_SEGMENTS for e in elements if e.get("segments") is None}
    return load_segmented_model(model.file, segments=segments, shear=False if shear is None else shear,
                                air_damping=air_damping, floating_base=model.floating_base)


#: the largest time step the bridge accepts (s): PyBullet's semi-implicit Euler is a 60–1000 Hz integrator; a step of
#: 10 s (or 1e300) is a mistake, not a time step
MAX_TIME_STEP = 0.1


def check_time_step(model, dt: float, what: str) -> None:
    """ModelError unless 0 < dt ≤ MAX_TIME_STEP. Flexible segments are checked against their explicit stability
    limit ω_max·dt < 2 by `check_flexible_step`, every linear spring, stop and contact against its own by
    `bridge.stability.check_stiff_elements`; anything else too stiff for dt (an over-stiff PD of the user's) shows as
    a DivergenceError at the first runaway step (`bridge.outside`)."""
    if not (math.isfinite(dt) and 0.0 < dt <= MAX_TIME_STEP):
        raise ModelError(f"{what} = {dt:g} s is not a usable time step", file=model.file, attribute="dt",
                         expected=f"0 < dt ≤ {MAX_TIME_STEP:g} s (PyBullet's default is 1/240 s; use sub-steps "
                                  "for coarser control rates)")


def substep_weight(substeps: int) -> float:
    """c in x_end = x + dt ẋ + c dt² ẍ for `substeps` semi-implicit Euler sub-steps of dt/k with ẍ held: (k+1)/(2k)."""
    return (substeps + 1.0) / (2.0 * substeps)


def stable_step(model, flexible_links: bool = True) -> float:
    """The default step (s) of a bridge on its own connection: 1 ms, at most ¼ of the flexible links' explicit
    limit 2/ω_max; ¼ of the always-acting springs' tightest limit where 1 ms is beyond it
    (`stability.always_acting_step_limit`; 1 ms inside it is kept, as before)."""
    from biobullet.bridge.flexible import stable_time_step
    from biobullet.bridge.stability import always_acting_step_limit
    step = min(DEFAULT_OWNED_DT, stable_time_step(model)) if flexible_links else DEFAULT_OWNED_DT
    springs = always_acting_step_limit(model)
    return step if step < springs else 0.25 * springs


def check_flexible_step(model, dt: float) -> None:
    """ModelError unless dt is inside PyBullet's explicit stability limit ω_max·dt < 2 of the segmented links."""
    from biobullet.bridge.flexible import highest_frequency
    w_max = highest_frequency(model)
    if dt * w_max >= 2.0:
        raise ModelError(f"dt = {dt:g} s is unstable for the segmented flexible links (ω_max = {w_max:.4g} rad/s)",
                         file=model.file, element="<flexible>", attribute="dt",
                         expected=f"dt < {2.0 / w_max:.3g} s (e.g. bridge.flexible.stable_time_step(model) = "
                                  f"{0.5 / w_max:.3g} s), fewer segments or shear=False")


def check_elements(model) -> None:
    """ModelError naming the first element of the model file the bridge cannot apply (nothing is dropped
    silently): it applies joint functions, `<loop>`s, `<contact>`s, expanded `<flexible>` links and every
    registered force element (annotations such as `<segment_joint>` add no force)."""
    from biobullet.forces import force_type
    from biobullet.model.extension import ANNOTATION_ELEMENTS
    for element in model.description.elements:
        if element.tag in ("loop", "contact") or element.tag in ANNOTATION_ELEMENTS \
                or force_type(element.tag) is not None:
            continue
        raise ModelError(f"the PyBullet bridge cannot apply <{element.tag}>", file=model.file,
                         element=element.source.element, attribute=None,
                         expected="joint functions, <loop>, <contact>, <flexible> or a registered force element")
