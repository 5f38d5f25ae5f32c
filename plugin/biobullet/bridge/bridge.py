"""The PyBullet bridge: PyBullet steps the model, biobullet adds what PyBullet cannot say.

Each `step()` = `apply()` + `stepSimulation()` + time bookkeeping. `apply()`:

1. reads the tree state (x, ẋ) from PyBullet (biobullet order, see `conventions.PyBulletMap`);
2. optional *velocity projection*: ẋ ← ẋ − M⁻¹Φ_xᵀ(Φ_x M⁻¹Φ_xᵀ)⁻¹(Φ_x ẋ + Φ_t), the mass-weighted closest
   velocity on the constraint manifold, written back with resetJointState (kinetic energy can only drop);
3. M = calculateMassMatrix, h = calculateInverseDynamics(x, ẋ, 0) (Coriolis, centrifugal, gravity);
4. τ = user torques + force elements (`forces.applied_forces`, when available);
5. constraint torques τ_c = Φ_xᵀλ from the KKT system M ẍ = τ − h + Φ_xᵀλ, Φ_x ẍ + b = −2αΦ̇ − β²Φ
   (Baumgarte stabilisation);
6. τ + τ_c through setJointMotorControlArray(TORQUE_CONTROL) (a floating base gets a base wrench).

Default Baumgarte gains α = 1/(2·dt), β = 1/dt: with PyBullet's semi-implicit Euler the linearised
error dynamics (Φ, dt·Φ̇) then have the iteration matrix [[1−β²dt², 1−2αdt], [−β²dt², 1−2αdt]] with both
eigenvalues 0 — a violation is removed within two steps and the correction never oscillates.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np

from ..errors import ModelError, SolverError
from .connection import check_inertia, load_body, prepare_body, resolve_client
from .constraints import bridge_constraints

DEFAULT_OWNED_DT = 1.0e-3  # s, the time step of a connection the bridge makes itself
#: velocity projection writes ẋ back to PyBullet only if the correction exceeds this × (1 + max|ẋ|): below it
#: the correction is round-off and resetting the joints would only cost time
PROJECTION_FLOOR = 1.0e-14
FORCE_TAGS = ("spring", "joint_spring", "joint_torque", "joint_damper", "damper", "joint_stop", "actuator",
              "muscle")


class Bridge:
    """A biobullet Model stepped by PyBullet. See the module docstring for what happens each step.

    client: None (own DIRECT connection; closed by `close()` / `with`), an int physicsClientId, or a
    `pybullet_utils.bullet_client.BulletClient`. body_id: a body the user loaded from `model.file` (with
    URDF_USE_INERTIA_FROM_FILE) instead of loading it here. dt: time step (s); None keeps the client's
    (1 ms for an own connection). baumgarte: (α, β) in 1/s, default (1/(2dt), 1/dt). native_loops: close
    `<loop>`s with PyBullet POINT2POINT constraints instead of our constraint forces. joint_limits: keep PyBullet's
    rigid URDF `<limit>` stops (off by default: the reference engine models stops with `<joint_stop>`).
    """

    def __init__(self, model, client=None, *, body_id: int | None = None, dt: float | None = None,
                 baumgarte: tuple[float, float] | None = None, velocity_projection: bool = True,
                 native_loops: bool = False, joint_limits: bool = False, gui: bool = False,
                 record: bool = False, initial=None) -> None:
        import pybullet as p
        from ..conventions import PyBulletMap
        from ..model.compiled import Model
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
                if not np.isfinite(dt) or dt <= 0:
                    raise ModelError(f"argument 'dt' is {dt!r}", attribute="dt", expected="a positive time step (s)")
                p.setTimeStep(float(dt), physicsClientId=self.client)
            elif self._owned:
                p.setTimeStep(DEFAULT_OWNED_DT, physicsClientId=self.client)
            self.dt = float(p.getPhysicsEngineParameters(physicsClientId=self.client)["fixedTimeStep"])
            prepare_body(model, self.client, self.body, self.map.joint_indices, joint_limits=joint_limits)
            self.alpha, self.beta = self._gains(baumgarte)
            self.velocity_projection = bool(velocity_projection)
            self.native_loops = bool(native_loops)
            self.constraints = bridge_constraints(model, native_loops=self.native_loops)
            self._native = self._create_native_loops() if self.native_loops else {}
            self._forces = self._force_hook()
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
        self.reset(*initial_state(model, initial))

    # ------------------------------------------------------------------ life cycle
    def close(self) -> None:
        """Disconnect if the bridge made the connection (else leave the user's client alone)."""
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
            from ..forces import applied_forces  # type: ignore[attr-defined]
            return applied_forces
        except ImportError:
            elements = [e.tag for e in self.model.description.elements if e.tag in FORCE_TAGS]
            if elements:
                warnings.warn(f"{self.model.file}: force elements {sorted(set(elements))} are ignored by the bridge "
                              "(biobullet.forces is not available)", RuntimeWarning, stacklevel=3)
            return None

    def _create_native_loops(self) -> dict[str, int]:
        """POINT2POINT constraints for `<loop>`s (3 rows each; a planar loop's normal row is redundant)."""
        from ..model.rotations import quaternion_to_matrix
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
        x = self.model._check("x", x, self.model.n_config)
        xd = self.model._check("xd", xd, self.model.n_tangent)
        self.map.state_to_pybullet(x, xd)
        self.time = float(t)
        self._samples.clear()
        if self._auto_record:
            self.record()

    def state(self) -> tuple[float, np.ndarray, np.ndarray]:
        """(t, x, ẋ): time (s), tree configuration and velocity in biobullet order (see `model.tree`)."""
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
        mass = self._p.calculateMassMatrix(self.body, self._to_pybullet(x[self._base:]),
                                           physicsClientId=self.client)
        if self._fixed:
            mass = np.asarray(mass)[self._dof_mesh]
        else:
            mass = self.map.mass_matrix_from_pybullet(np.asarray(mass))
        return mass, self._tree_bias(x, xd)

    def inverse_dynamics(self, q, v, qdd, t: float = 0.0) -> np.ndarray:
        """Generalized forces Q = Gᵀ ID_pybullet(x, ẋ, G q̈ + γ) = Gᵀ(M_tree(G q̈ + γ) + h_tree) (nv)."""
        x, xd, gradient, gamma = self.model.joint_state(q, v, t)
        qdd = self.model._check("qdd", qdd, self.model.nv)
        return gradient.T @ self.map.inverse_dynamics(x, xd, gradient @ qdd + gamma)

    # ------------------------------------------------------------------ stepping
    def apply(self, tau=None, *, generalized=None) -> np.ndarray:
        """Compute and send this step's joint torques; returns them (n_tangent, our order, N·m / N).

        tau: extra joint-space torques (n_tangent, tree order). generalized: forces Q on the independent
        coordinates (nv), applied at those joints (G has identity rows there, so Gᵀτ = Q).
        """
        model, t = self.model, self.time
        x, xd = self._read_state()
        torque = np.zeros(model.n_tangent)
        if tau is not None:
            torque += model._check("tau", tau, model.n_tangent)
        if generalized is not None:
            torque[self._independent_v] += model._check("generalized", generalized, model.nv)
        if self._forces is not None:
            torque += np.asarray(self._forces(model, x, xd, t), dtype=float)
        constraints = self.constraints
        if constraints.n:
            phi, jac, phi_t, bias_c = _terms(constraints, x, xd, t)
            mass, bias = self.tree_mass_and_bias(x, xd)
            # augmented (KKT) matrix: M alone is nearly singular when links are (almost) massless, the KKT
            # matrix is not (the constraints fix exactly those directions), so never form M⁻¹
            kkt = _kkt_matrix(mass, jac)
            factor = _factor_kkt(kkt)   # one LU per step, used by both solves below
            n = model.n_tangent
            if self.velocity_projection:
                projected = _solve_kkt(kkt, np.concatenate([mass @ xd, -phi_t]), model.file, factor)[:n]
                if np.abs(projected - xd).max() > PROJECTION_FLOOR * (1.0 + np.abs(xd).max()):
                    xd = projected
                    self._write_state(x, xd)
                    bias = self._tree_bias(x, xd)
                    bias_c = constraints.velocity_bias(x, xd, t)   # same (x, t): function jets are reused
            phi_dot = jac @ xd + phi_t
            target = -bias_c - 2.0 * self.alpha * phi_dot - self.beta ** 2 * phi
            solution = _solve_kkt(kkt, np.concatenate([torque - bias, target]), model.file, factor)
            self._lambda = -solution[n:]          # M ẍ = τ − h + Φ_xᵀλ
            torque = torque + jac.T @ self._lambda
        self._send(x, torque)
        self._last_torque = torque
        return torque

    def _send(self, x: np.ndarray, torque: np.ndarray) -> None:
        p, c, b = self._p, self.client, self.body
        p.setJointMotorControlArray(b, self._joint_list, p.TORQUE_CONTROL,
                                    forces=torque[self._base_v:].tolist(), physicsClientId=c)
        if self.model.floating_base and np.any(torque[:6]):
            from ..model.rotations import quaternion_to_matrix
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
        from .records import make_trajectory
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


def _factor_kkt(kkt: np.ndarray):
    """LAPACK LU (getrf) of the KKT matrix, or None if it is exactly singular (then `_solve_kkt` falls back
    to least squares). getrf + getrs is what np.linalg.solve (gesv) does, without its per-call overhead."""
    from scipy.linalg.lapack import dgetrf
    lu, piv, info = dgetrf(kkt)
    return (lu, piv) if info == 0 else None


def _solve_kkt(kkt: np.ndarray, rhs: np.ndarray, file, factor=None) -> np.ndarray:
    """Solve the KKT system (with `factor` from `_factor_kkt` if given); least squares if it is singular
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
