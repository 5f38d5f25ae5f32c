"""The PyBullet bridge: PyBullet steps the model, biobullet adds what PyBullet cannot say.

Each `step()` = `apply()` + `stepSimulation()` + time bookkeeping. `apply()`:

1. reads the tree state (x, ẋ) from PyBullet (biobullet order, see `conventions.PyBulletMap`);
2. M = calculateMassMatrix, h = calculateInverseDynamics(x, ẋ, 0) (Coriolis, centrifugal, gravity);
3. τ = user torques + force elements (`forces.applied_forces`, skipped while the model has none);
4. velocity projection, only when the velocity residual is not small (max|Φ_x ẋ + Φ_t|·dt >
   `projection_tolerance`, default `PROJECTION_TOLERANCE`): ẋ ← ẋ − M⁻¹Φ_xᵀ(Φ_x M⁻¹Φ_xᵀ)⁻¹(Φ_x ẋ + Φ_t), the
   mass-weighted closest velocity on the constraint manifold, written back with resetJointState (kinetic energy
   can only drop); then h again at the new ẋ;
5. constraint torques τ_c = Φ_xᵀλ from M ẍ = τ − h + Φ_xᵀλ, Φ_x ẍ + b = −2αΦ̇ − β²Φ (Baumgarte stabilisation);
6. τ + τ_c through setJointMotorControlArray(TORQUE_CONTROL) (a floating base gets a base wrench).

Step 5 runs in `bridge.kernels` (numba, one call per step; numpy + LAPACK without numba). Constant rows (linear
joint functions, no loops) on a fixed base take `_apply_fast`: the null-space method with precomputed T (ker Φ_x)
and Φ_x⁺ — (TᵀMT) y = …, a Cholesky of the small reduced mass matrix, better conditioned than the KKT matrix when
links are massless — and the PyBullet state lists go straight back to PyBullet. Other rows (loops, non-linear
functions, floating base) solve the KKT system [[M, Φ_xᵀ], [Φ_x, 0]] by LU (least squares if it is singular).

Default Baumgarte gains α = 1/(2·dt), β = 1/dt: with PyBullet's semi-implicit Euler the linearised
error dynamics (Φ, dt·Φ̇) then have the iteration matrix [[1−β²dt², 1−2αdt], [−β²dt², 1−2αdt]] with both
eigenvalues 0 — a violation is removed within two steps and the correction never oscillates. The velocity part of
that correction, dt·M⁻¹Φ_xᵀλ for the −2αΦ̇ target, is the projection's −M⁻¹Φ_xᵀ(Φ_x M⁻¹Φ_xᵀ)⁻¹Φ̇ (to first
order), which is why the projection can be skipped while Φ̇ is only the step's own small residual. Measured:
shoulder (linear rows), 0.5 s at dt = 1 ms: projection every step vs the default (never due): max|Φ| 3.3e-11 rad
both, trajectories 8e-10 rad apart (halving dt moves them by 0.14 rad). Andrews' squeezer (non-linear loops,
crank ~1.4e3 rad/s), 0.03 s at dt = 1e-5: max|Φ| 5.686e-7 m in every variant, but β(0.03 s) differs from
projecting every step by 2.6e-7 rad with the default (2421 of 3000 steps project), 3e-4 rad with tolerance 1e-7
and 4.6e-3 rad never projecting — there the projection's second-order effect (h at the consistent ẋ) is of the
size of the time-step error, hence the conservative default.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np

from biobullet.bridge.lifecycle import attach, ensure_usable, mark_closed
from biobullet.core.attributes import to_float
from biobullet.core.errors import ModelError, SolverError
from biobullet.bridge.connection import check_inertia, load_body, prepare_body, resolve_client
from biobullet.bridge.constraints import bridge_constraints

DEFAULT_OWNED_DT = 1.0e-3  # s, the time step of a connection the bridge makes itself
#: the velocity projection runs only when the velocity residual would move a constraint by more than this in one
#: step (max|Φ_x ẋ + Φ_t|·dt > PROJECTION_TOLERANCE, rad or m). Below it the dead-beat Baumgarte term removes the
#: residual within the step anyway (its velocity correction −M⁻¹Φ_xᵀ(Φ_x M⁻¹Φ_xᵀ)⁻¹Φ̇ is the projection's, to
#: first order), so projecting would only cost a solve, a joint reset and a second inverse dynamics.
PROJECTION_TOLERANCE = 1.0e-8
#: a projection is written back only if the correction exceeds this × (1 + max|ẋ|) (else it is round-off)
PROJECTION_FLOOR = 1.0e-14
FORCE_TAGS = ("spring", "joint_spring", "joint_torque", "joint_damper", "damper", "joint_stop", "actuator",
              "muscle")


class Bridge:
    """A biobullet Model stepped by PyBullet. See the module docstring for what happens each step.

    client: None (own DIRECT connection; closed by `close()` / `with`), an int physicsClientId, or a
    `pybullet_utils.bullet_client.BulletClient`. body_id: a body the user loaded from `model.file` (with
    URDF_USE_INERTIA_FROM_FILE) instead of loading it here. dt: time step (s); None keeps the client's
    (1 ms for an own connection). baumgarte: (α, β) in 1/s, default (1/(2dt), 1/dt). velocity_projection: allow
    the projection of step 4; projection_tolerance (rad or m, default PROJECTION_TOLERANCE): project only when
    max|Φ̇|·dt exceeds it (0: every step, inf: never; `projections` counts the write-backs). native_loops: close
    `<loop>`s with PyBullet POINT2POINT constraints instead of our constraint forces. joint_limits: keep PyBullet's
    rigid URDF `<limit>` stops (off by default: the reference engine models stops with `<joint_stop>`).
    """

    def __init__(self, model, client=None, *, body_id: int | None = None, dt: float | None = None,
                 baumgarte: tuple[float, float] | None = None, velocity_projection: bool = True,
                 projection_tolerance: float | None = None,
                 native_loops: bool = False, joint_limits: bool = False, gui: bool = False,
                 record: bool = False, initial=None) -> None:
        import pybullet as p
        from biobullet.conventions import PyBulletMap
        from biobullet.model.model import Model
        if not isinstance(model, Model):
            raise ModelError(f"argument 'model' is {type(model).__name__}", attribute="model",
                             expected="a biobullet Model (biobullet.load_model(path))")
        self.model = model
        self._p = p
        self.client, self._owned = resolve_client(client, gui=gui)
        self.body = -1
        try:
            self.body = load_body(model, self.client, body_id)
            self.map = PyBulletMap(model, self.body, self.client)
            check_inertia(model, self.client, self.body, self.map.link_index)
            if dt is not None:
                dt = to_float(None, "dt", dt, positive=True, expected="a positive time step (s)")
                p.setTimeStep(float(dt), physicsClientId=self.client)
            elif self._owned:
                p.setTimeStep(DEFAULT_OWNED_DT, physicsClientId=self.client)
            self.dt = float(p.getPhysicsEngineParameters(physicsClientId=self.client)["fixedTimeStep"])
            prepare_body(model, self.client, self.body, self.map.joint_indices, joint_limits=joint_limits)
            self.alpha, self.beta = self._gains(baumgarte)
            self.velocity_projection = bool(velocity_projection)
            tol = PROJECTION_TOLERANCE if projection_tolerance is None else projection_tolerance
            if not isinstance(tol, (int, float, np.floating, np.integer)) or np.isnan(tol) or tol < 0:
                raise ModelError(f"argument 'projection_tolerance' is {projection_tolerance!r}",
                                 attribute="projection_tolerance",
                                 expected="a number ≥ 0 (0: project every step, inf: never)")
            self.projection_tolerance = float(tol)
            self.native_loops = bool(native_loops)
            self.constraints = bridge_constraints(model, native_loops=self.native_loops)
            self._native = self._create_native_loops() if self.native_loops else {}
            self._forces = self._force_hook()
            self._force_elements = self._force_list() if self._forces is not None else None
        except BaseException:
            self.close()
            raise
        self._base = 7 if model.floating_base else 0
        self._base_v = 6 if model.floating_base else 0
        self._independent_x = np.concatenate([np.arange(self._base),
                                              self._base + np.array(model.coordinate_map.independent, int)])
        self._independent_v = np.concatenate([np.arange(self._base_v),
                                              self._base_v + np.array(model.coordinate_map.independent, int)])
        self._fast_paths()
        self.time = 0.0
        self._lambda = np.zeros(self.constraints.n)
        self._last_torque = np.zeros(model.n_tangent)
        self._auto_record = bool(record)
        self._samples: list[tuple[float, np.ndarray, np.ndarray]] = []
        attach(self)  # lifecycle token: closed / disconnected / reused client ids are detected
        self.reset(*initial_state(model, initial))

    # ------------------------------------------------------------------ life cycle
    def close(self) -> None:
        """Disconnect if the bridge made the connection (else leave the user's client alone)."""
        mark_closed(self)
        if getattr(self, "_owned", False) and self.client is not None:
            try:
                self._p.disconnect(physicsClientId=self.client)
            except self._p.error:
                pass
            self._owned = False

    def __enter__(self) -> "Bridge":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Bridge({self.model.name!r}, client={self.client}, body={self.body}, dt={self.dt:g}, "
                f"constraints={self.constraints.n}, t={self.time:g})")

    # ------------------------------------------------------------------ set-up helpers
    def _gains(self, baumgarte) -> tuple[float, float]:
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

    def _force_hook(self):
        """HOOK: `forces.applied_forces(model, x, xd, t)` (joint-space τ, n_tangent) once it exists."""
        try:
            from biobullet.forces import applied_forces  # type: ignore[attr-defined]
            return applied_forces
        except ImportError:
            elements = [e.tag for e in self.model.description.elements if e.tag in FORCE_TAGS]
            if elements:
                warnings.warn(f"{self.model.file}: force elements {sorted(set(elements))} are ignored by the bridge "
                              "(biobullet.forces is not available)", RuntimeWarning, stacklevel=3)
            return None

    @staticmethod
    def _force_list():
        """`forces.force_elements(model)` (file + Python-added elements) if available: apply() skips the force
        hook while it is empty (checked every step, so elements added after the bridge was made still count)."""
        try:
            from biobullet.forces import force_elements  # type: ignore[attr-defined]
            return force_elements
        except ImportError:
            return None

    def _create_native_loops(self) -> dict[str, int]:
        """POINT2POINT constraints for `<loop>`s (3 rows each; a planar loop's normal row is redundant)."""
        from biobullet.spatial.rotations import quaternion_to_matrix
        p, c, b = self._p, self.client, self.body
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
        self._fixed = not self.model.floating_base
        dof = np.asarray(self.map.dof_of_joint, dtype=np.intp)
        self._dof = dof
        self._dof_identity = bool(np.array_equal(dof, np.arange(len(dof))))
        self._dof_mesh = np.ix_(dof, dof)
        self._zero_list = [0.0] * len(dof)
        from biobullet.bridge.kernels import kernels, pack_linear, resolved
        self._kernels = kernels()
        n, m = self.model.n_tangent, self.constraints.n
        self._kkt_a, self._kkt_r = np.empty((n + m, n + m)), np.empty(n + m)   # kernel work space
        self._phi, self._phi_dot, self._zero_c = np.empty(m), np.empty(m), np.zeros(m)
        self._zero_tau = np.zeros(n)   # never written (every path returns a new array)
        linear = getattr(self.constraints, "linear_form", None)
        linear = linear() if (linear is not None and self._fixed and m) else None
        # writable copies: the kernels are compiled for one array type (read-only arrays would be a second one)
        self._linear = None if linear is None else (np.array(linear[0]), np.array(linear[1]))
        # constant rows of full rank: the null-space kernel (kernels.linear_torque) with its packed constants
        self._null = pack_linear(*self._linear) if self._linear is not None else None
        self._null_work = np.empty((2 * n - m + 1, n))
        self._fast = self._null is not None and self._dof_identity   # see _apply_fast
        self._out_n, self._out_size = n, n + m
        self.projections = 0   # velocity projections written back to PyBullet (see PROJECTION_TOLERANCE)
        # compile (or load from __pycache__) the kernel this bridge uses every step now, not inside the first step;
        # the others compile on first use (projection / fallback paths)
        linear_rows, kkt_torque, linear_torque = self._kernels
        if self._null is not None:
            linear_torque(np.eye(n), np.zeros(n), np.zeros(n), self._null, np.zeros((2, n)), 1.0, 1.0, np.inf,
                          self._null_work, np.empty(n + m))
            linear_torque = resolved(linear_torque)
        elif m:
            kkt_torque(np.eye(n), np.zeros(n), np.zeros(n), np.eye(m, n), self._phi, self._phi_dot, self._zero_c,
                       1.0, 1.0, self._kkt_a, self._kkt_r, np.empty(m), np.empty(n))
            kkt_torque = resolved(kkt_torque)
            if self._linear is not None:
                linear_rows(np.zeros((m, n)), self._zero_c, np.zeros(n), np.zeros(n), self._phi, self._phi_dot)
                linear_rows = resolved(linear_rows)
        self._kernels = (linear_rows, kkt_torque, linear_torque)

    def _to_pybullet(self, theta: np.ndarray) -> list[float]:
        """θ (URDF order) → PyBullet dof order, as a list."""
        if self._dof_identity:
            return theta.tolist()
        out = np.empty(len(self._dof))
        out[self._dof] = theta
        return out.tolist()

    def _read_state(self) -> tuple[np.ndarray, np.ndarray]:
        """(x, ẋ) from PyBullet (one getJointStates call for a fixed base)."""
        if not self._fixed:
            return self.map.state_from_pybullet()
        states = self._p.getJointStates(self.body, self._joint_list, physicsClientId=self.client)
        return np.array([s[0] for s in states]), np.array([s[1] for s in states])

    def _write_state(self, x: np.ndarray, xd: np.ndarray) -> None:
        """(x, ẋ) to PyBullet (one resetJointStatesMultiDof call for a fixed base)."""
        if not self._fixed:
            self.map.state_to_pybullet(x, xd)
            return
        self._p.resetJointStatesMultiDof(self.body, self._joint_list, [[v] for v in x.tolist()],
                                         targetVelocities=[[v] for v in xd.tolist()],
                                         physicsClientId=self.client)

    def _tree_bias(self, x: np.ndarray, xd: np.ndarray) -> np.ndarray:
        """h(x, ẋ) = calculateInverseDynamics(x, ẋ, 0) in our order."""
        if not self._fixed:
            return self.map.inverse_dynamics(x, xd, np.zeros(self.model.n_tangent))
        out = self._p.calculateInverseDynamics(self.body, self._to_pybullet(x), self._to_pybullet(xd),
                                               self._zero_list, physicsClientId=self.client)
        return np.asarray(out)[self._dof]

    # ------------------------------------------------------------------ state
    def reset(self, q=None, v=None, t: float = 0.0) -> None:
        """Put PyBullet at generalized (q, v) (default: the model's `<initial>`) and set the clock to t (s)."""
        q0, v0 = self.model.initial_state()
        q = q0 if q is None else q
        v = v0 if v is None else v
        x, xd, _, _ = self.model.joint_state(q, v, t)
        self.reset_tree(x, xd, t)

    def reset_tree(self, x, xd, t: float = 0.0) -> None:
        """Put PyBullet at tree state (x, ẋ) (biobullet order) and set the clock to t (s)."""
        ensure_usable(self, "reset")
        x = self.model._check("x", x, self.model.n_config)
        xd = self.model._check("xd", xd, self.model.n_tangent)
        self.map.state_to_pybullet(x, xd)
        self.time = float(t)
        self._samples.clear()
        if self._auto_record:
            self.record()

    def state(self) -> tuple[float, np.ndarray, np.ndarray]:
        """(t, x, ẋ): time (s), tree configuration and velocity in biobullet order (see `model.tree`)."""
        ensure_usable(self, "state")
        x, xd = self._read_state()
        return self.time, x, xd

    def generalized_state(self) -> tuple[float, np.ndarray, np.ndarray]:
        """(t, q, v): the independent coordinates (`model.coordinate_names`) read from the tree state."""
        t, x, xd = self.state()
        return t, x[self._independent_x], xd[self._independent_v]

    def constraint_residuals(self) -> dict[str, float]:
        """Φ(x, t) of every enforced constraint row at the current state, by name."""
        t, x, _ = self.state()
        return dict(zip(self.constraints.names, self.constraints.residual(x, t).tolist()))

    # ------------------------------------------------------------------ dynamics on PyBullet's model
    def tree_mass_and_bias(self, x: np.ndarray, xd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """PyBullet's M(x) and h(x, ẋ) (calculateMassMatrix, calculateInverseDynamics with ẍ = 0), our order."""
        ensure_usable(self, "tree_mass_and_bias")
        mass = self._p.calculateMassMatrix(self.body, self._to_pybullet(x[self._base:]),
                                           physicsClientId=self.client)
        if self._fixed:
            mass = np.asarray(mass)[self._dof_mesh]
        else:
            mass = self.map.mass_matrix_from_pybullet(np.asarray(mass))
        return mass, self._tree_bias(x, xd)

    def inverse_dynamics(self, q, v, qdd, t: float = 0.0) -> np.ndarray:
        """Generalized forces Q = Gᵀ ID_pybullet(x, ẋ, G q̈ + γ) = Gᵀ(M_tree(G q̈ + γ) + h_tree) (nv)."""
        ensure_usable(self, "inverse_dynamics")
        x, xd, gradient, gamma = self.model.joint_state(q, v, t)
        qdd = self.model._check("qdd", qdd, self.model.nv)
        return gradient.T @ self.map.inverse_dynamics(x, xd, gradient @ qdd + gamma)

    # ------------------------------------------------------------------ stepping
    def apply(self, tau=None, *, generalized=None) -> np.ndarray:
        """Compute and send this step's joint torques; returns them (n_tangent, our order, N·m / N).

        tau: extra joint-space torques (n_tangent, tree order). generalized: forces Q on the independent
        coordinates (nv), applied at those joints (G has identity rows there, so Gᵀτ = Q).
        """
        ensure_usable(self, "apply")
        if self._fast and generalized is None:
            return self._apply_fast(tau)
        model, t = self.model, self.time
        p, c, b = self._p, self.client, self.body
        if self._fixed:   # one getJointStates; the lists go straight back to PyBullet when the order agrees
            states = p.getJointStates(b, self._joint_list, physicsClientId=c)
            x_list, xd_list = [s[0] for s in states], [s[1] for s in states]
            x, xd = np.array(x_list), np.array(xd_list)
        else:
            x, xd = self.map.state_from_pybullet()
            x_list = xd_list = None
        torque = None
        if tau is not None:
            torque = np.array(model._check("tau", tau, model.n_tangent), dtype=float)
        if generalized is not None:
            if torque is None:
                torque = np.zeros(model.n_tangent)
            torque[self._independent_v] += model._check("generalized", generalized, model.nv)
        if self._forces is not None and (self._force_elements is None or self._force_elements(model)):
            applied = np.asarray(self._forces(model, x, xd, t), dtype=float)
            torque = applied if torque is None else torque + applied
        if torque is None:
            torque = self._zero_tau   # never written: every path below returns a new array
        if self.constraints.n:
            torque = self._constrained_torque(x, xd, x_list, xd_list, torque, t)
        elif torque is self._zero_tau:
            torque = np.zeros(model.n_tangent)
        self._send(x, torque)
        self._last_torque = torque
        return torque

    def _apply_fast(self, tau) -> np.ndarray:
        """apply() for the common case in as few Python → C calls as possible: fixed base in PyBullet's dof order,
        constant rows of full rank (linear joint functions, no loops): one kernel call (kernels.linear_torque).
        Same equations as the general path, which takes over for anything unusual (a velocity projection, a
        failed reduced solve)."""
        p, c, b, model = self._p, self.client, self.body, self.model
        states = p.getJointStates(b, self._joint_list, physicsClientId=c)
        x_list, xd_list = [s[0] for s in states], [s[1] for s in states]
        state = np.array((x_list, xd_list))   # [x; ẋ]
        torque = self._zero_tau if tau is None else np.array(model._check("tau", tau, model.n_tangent), dtype=float)
        if self._forces is not None and (self._force_elements is None or self._force_elements(model)):
            torque = torque + np.asarray(self._forces(model, state[0], state[1], self.time), dtype=float)
        mass = np.asarray(p.calculateMassMatrix(b, x_list, physicsClientId=c))
        bias = np.asarray(p.calculateInverseDynamics(b, x_list, xd_list, self._zero_list, physicsClientId=c))
        out = np.empty(self._out_size)   # [τ_out (n), λ (n_c)]
        limit = self.projection_tolerance / self.dt if self.velocity_projection else np.inf
        if self._kernels[2](mass, bias, torque, self._null, state, self.alpha, self.beta, limit, self._null_work,
                            out) == 0:
            n = self._out_n
            self._lambda, out = out[n:], out[:n]
        else:   # projection due or no reduced solution: the general path (it reads M and h again)
            out = self._constrained_torque(state[0], state[1], x_list, xd_list, torque, self.time)
        p.setJointMotorControlArray(b, self._joint_list, p.TORQUE_CONTROL, forces=out.tolist(), physicsClientId=c)
        self._last_torque = out
        return out

    def _constrained_torque(self, x, xd, x_list, xd_list, torque, t) -> np.ndarray:
        """τ + Φ_xᵀλ (from the kernels), after the velocity projection if it is due (see PROJECTION_TOLERANCE)."""
        constraints, n = self.constraints, self.model.n_tangent
        linear_rows, kkt_torque, linear_torque = self._kernels
        mass, bias = self._mass_and_bias(x, xd, x_list, xd_list)
        limit = self.projection_tolerance / self.dt if self.velocity_projection else np.inf
        if self._null is not None:     # constant rows: one kernel call does Φ, Φ̇, the solve and λ
            state, out = np.array((x, xd)), np.empty(n + constraints.n)
            status = linear_torque(mass, bias, torque, self._null, state, self.alpha, self.beta, limit,
                                   self._null_work, out)
            if status == -1:           # velocity residual above the tolerance: project, then solve
                projected = self._project(x, xd, mass, self._linear[0], None)
                if projected is not None:
                    xd = state[1] = projected
                    bias = self._tree_bias(x, xd)
                status = linear_torque(mass, bias, torque, self._null, state, self.alpha, self.beta, np.inf,
                                       self._null_work, out)
            if status == 0:
                self._lambda = out[n:]
                return out[:n]
        # general rows (loops, non-linear functions, floating base), or a failed reduced solve: the KKT system
        if self._linear is not None:   # Φ = A x − c, Φ_x = A, Φ_t = 0, bias 0
            jac, phi, phi_dot, phi_t, bias_c = self._linear[0], self._phi, self._phi_dot, None, self._zero_c
            residual = linear_rows(jac, self._linear[1], x, xd, phi, phi_dot)
        else:
            phi, jac, phi_t, bias_c = _terms(constraints, x, xd, t)
            phi_dot = jac @ xd + phi_t
            residual = float(np.abs(phi_dot).max()) if len(phi_dot) else 0.0
        if residual > limit:
            projected = self._project(x, xd, mass, jac, phi_t)
            if projected is not None:
                xd = projected
                bias = self._tree_bias(x, xd)
                if self._linear is not None:
                    linear_rows(jac, self._linear[1], x, xd, phi, phi_dot)
                else:
                    bias_c = constraints.velocity_bias(x, xd, t)   # same (x, t): function jets are reused
                    phi_dot = jac @ xd + phi_t
        lam, out = np.empty(constraints.n), np.empty(n)
        status = kkt_torque(mass, bias, torque, jac, phi, phi_dot, bias_c, self.alpha, self.beta,
                            self._kkt_a, self._kkt_r, lam, out)
        if status != 0:   # singular KKT matrix (redundant rows): least squares
            target = -bias_c - 2.0 * self.alpha * phi_dot - self.beta ** 2 * phi
            solution = _solve_kkt(_kkt_matrix(mass, jac), np.concatenate([torque - bias, target]),
                                  self.model.file)
            lam = -solution[n:]          # M ẍ = τ − h + Φ_xᵀλ
            out = torque + jac.T @ lam
        self._lambda = lam
        return out

    def _mass_and_bias(self, x, xd, x_list, xd_list) -> tuple[np.ndarray, np.ndarray]:
        """M and h (our order); a fixed base in PyBullet's dof order passes the state lists through unchanged."""
        if x_list is None or not self._dof_identity:
            return self.tree_mass_and_bias(x, xd)
        p, c, b = self._p, self.client, self.body
        mass = np.asarray(p.calculateMassMatrix(b, x_list, physicsClientId=c))
        bias = np.asarray(p.calculateInverseDynamics(b, x_list, xd_list, self._zero_list, physicsClientId=c))
        return mass, bias

    def _project(self, x, xd, mass, jac, phi_t):
        """ẋ ← the mass-weighted closest velocity with Φ_x ẋ + Φ_t = 0, written back to PyBullet (None if the
        correction is round-off)."""
        n = self.model.n_tangent
        phi_t = np.zeros(len(jac)) if phi_t is None else phi_t
        projected = _solve_kkt(_kkt_matrix(mass, jac), np.concatenate([mass @ xd, -phi_t]), self.model.file)[:n]
        if np.abs(projected - xd).max() <= PROJECTION_FLOOR * (1.0 + np.abs(xd).max()):
            return None
        self._write_state(x, projected)
        self.projections += 1
        return projected

    def _send(self, x: np.ndarray, torque: np.ndarray) -> None:
        p, c, b = self._p, self.client, self.body
        p.setJointMotorControlArray(b, self._joint_list, p.TORQUE_CONTROL,
                                    forces=(torque if self._fixed else torque[self._base_v:]).tolist(),
                                    physicsClientId=c)
        if not self._fixed and np.any(torque[:6]):
            from biobullet.spatial.rotations import quaternion_to_matrix
            rotation = quaternion_to_matrix(x[3:7])
            force, moment = torque[:3], torque[3:6] - np.cross(self.map.inertial_position, torque[:3])
            com = rotation @ self.map.inertial_position + x[:3]
            p.applyExternalForce(b, -1, (rotation @ force).tolist(), com.tolist(), p.WORLD_FRAME, physicsClientId=c)
            p.applyExternalTorque(b, -1, (rotation @ moment).tolist(), p.WORLD_FRAME, physicsClientId=c)

    def step(self, tau=None, *, generalized=None) -> float:
        """apply() + stepSimulation(); returns the new time (s)."""
        self.apply(tau, generalized=generalized)
        self._p.stepSimulation(physicsClientId=self.client)
        self.time += self.dt
        if self._auto_record:
            self.record()
        return self.time

    def reaction_forces(self) -> dict[str, float]:
        """Constraint multipliers λ of the last apply(), by row name (τ_c = Φ_xᵀλ; N·m for joint functions).

        Native loops add `loop:<name>:<k>` entries from getConstraintState (PyBullet's applied force, N).
        """
        ensure_usable(self, "reaction_forces")
        out = dict(zip(self.constraints.names, self._lambda.tolist()))
        for name, cid in self._native.items():
            for k, value in enumerate(self._p.getConstraintState(cid, physicsClientId=self.client)):
                out[f"loop:{name}:{k}"] = float(value)
        return out

    # ------------------------------------------------------------------ recording
    def record(self) -> None:
        """Append the current (t, x, ẋ) to the recording (automatic after every step with record=True)."""
        t, x, xd = self.state()
        self._samples.append((t, x, xd))

    def trajectory(self):
        """The recorded samples as the reference engine's Trajectory (t, joint_names, positions, velocities, q, v)."""
        from biobullet.bridge.records import make_trajectory
        if not self._samples:
            raise ModelError("nothing recorded: call record() or create the bridge with record=True",
                             attribute="record")
        t = np.array([s[0] for s in self._samples])
        x = np.array([s[1] for s in self._samples])
        xd = np.array([s[2] for s in self._samples])
        return make_trajectory(self.model, t, x[:, self._base:], xd[:, self._base_v:], x[:, self._independent_x],
                               xd[:, self._independent_v], metadata=dict(engine="pybullet", dt=self.dt))


def initial_state(model, initial) -> tuple[np.ndarray, np.ndarray]:
    """(q0, v0) from None (the model's `<initial>`), a {NAME or NAME_dot: value} mapping of overrides, or (q0, v0)."""
    if initial is None or isinstance(initial, Mapping):
        return model.initial_state(initial)
    try:
        q0, v0 = initial
    except (TypeError, ValueError):
        raise ModelError(f"argument 'initial' is {type(initial).__name__}", attribute="initial",
                         expected="(q0, v0), a {name: value} mapping, or None") from None
    return model._check("q", q0, model.nq), model._check("v", v0, model.nv)


def _terms(constraints, x: np.ndarray, xd: np.ndarray, t: float):
    """(Φ, Φ_x, Φ_t, bias) in one pass when the row set offers `all_terms`."""
    if hasattr(constraints, "all_terms"):
        phi, jac, phi_t, bias = constraints.all_terms(x, xd, t)
    else:
        phi, jac = constraints.residual(x, t), constraints.jacobian(x, t)
        phi_t, bias = constraints.time_derivative(x, t), constraints.velocity_bias(x, xd, t)
    return (np.asarray(phi, float), np.atleast_2d(np.asarray(jac, float)), np.asarray(phi_t, float),
            np.asarray(bias, float))


def _kkt_matrix(mass: np.ndarray, jac: np.ndarray) -> np.ndarray:
    """[[M, Φ_xᵀ], [Φ_x, 0]] (filled in place: np.block costs more than the solve)."""
    n, n_c = mass.shape[0], jac.shape[0]
    kkt = np.empty((n + n_c, n + n_c))
    kkt[:n, :n] = mass
    kkt[:n, n:] = jac.T
    kkt[n:, :n] = jac
    kkt[n:, n:] = 0.0
    return kkt


def _solve_kkt(kkt: np.ndarray, rhs: np.ndarray, file, factor=None) -> np.ndarray:
    """Solve the KKT system (with `factor` = LAPACK getrf's (lu, piv) if given); least squares if it is singular
    (redundant constraint rows)."""
    if factor is not None:
        from scipy.linalg.lapack import dgetrs
        solution, info = dgetrs(factor[0], factor[1], rhs)
        if info == 0 and np.all(np.isfinite(solution)):
            return solution
    else:
        try:
            solution = np.linalg.solve(kkt, rhs)
            if np.all(np.isfinite(solution)):
                return solution
        except np.linalg.LinAlgError:
            pass
    solution = np.linalg.lstsq(kkt, rhs, rcond=1e-13)[0]
    if not np.all(np.isfinite(solution)):
        raise SolverError(f"{file}: the bridge's constraint (KKT) system has no solution")
    return solution
