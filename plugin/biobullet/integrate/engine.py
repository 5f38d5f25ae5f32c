"""The reference engine: `simulate(model, t_end, ...)` with SciPy integrators.

State vector. Generalized (ODE) formulations ("reduced", "reduced_recursive", "reduced_pinocchio", "matrix_calculus", …):
y = [q (nq), v (nv), W, D] with q̇ from v (floating base: ṗ = R v_lin, quaternion ż = ½ z ⊗ (ω, 0), ω in the
base frame) and v̇ the forward dynamics with Q = Gᵀ τ_applied(x, ẋ, t). Joint-space (DAE) formulations
(`multipliers`): y = [x, ẋ, W, D] over the whole tree, ẍ from the formulation's `joint_accelerations`
(Baumgarte-stabilised index-1 DAE);
with `projection=True` positions and velocities are projected onto the constraints after every accepted step
(the integrator restarts from the projected state). W = ∫ input power of actuators and D = ∫ dissipated power
(J) are integrated as two extra components, so `Trajectory.energy_balance()` is a real check.
The quaternion is renormalised before every evaluation and on output (the ODE keeps |z| = 1 only to the
integration tolerance).

Right-hand side. A "reduced" run calls the pipeline: `integrate/compiled_rhs.py` `CompiledReducedRHS`, one
compiled `pipeline.stages.rhs_py` per evaluation. `System._rhs` is the callback stage, which enters the same
pipeline where a plug-in brings no kernel: the coordinate map in Python (`Model.joint_state_view`: plug-in loop
types without rows, plug-in joint functions without jets, the loop resolvers' continuation where the loop stage
declines a state), the force elements' Python `generalized_force` (plug-in elements and contact laws without
kernels), then the pipeline's M, h and solve on that joint state (`pipeline.data.Data.forward_at_state`). It also
serves a check formulation chosen by name (M and h, or v̇, of the callback's joint state) and the joint-space DAE
(`multipliers`). `trajectory.meta["right_hand_side"]` says which served and why.
"""
from __future__ import annotations

import math
import os
import time
from contextlib import nullcontext
from typing import TYPE_CHECKING, Mapping

import numpy as np

from biobullet.core import jit
from biobullet.core.arguments import MAX_SAMPLES, number_argument
from biobullet.core.atomic import check_writable
from biobullet.core.errors import BiobulletError, ModelError, SolverError, did_you_mean, interrupted
from biobullet.constraints.implicit import newton_tolerance
from biobullet.constraints.loops import tree_kinematics
from biobullet.forces import applied_forces
from biobullet.model.coordinates import finite_weights

if TYPE_CHECKING:
    from biobullet.integrate.trajectory import Trajectory

DEFAULT_METHOD, DEFAULT_RTOL, DEFAULT_ATOL, DEFAULT_SAMPLES = "DOP853", 1e-9, 1e-12, 1001
#: the least rtol SciPy's integrators honour (100 ε; `scipy.integrate._ivp.common.validate_tol`)
RTOL_FLOOR = 100 * float(np.finfo(float).eps)


class IntegrationError(SolverError):
    """The integrator failed: `t` (s), `state` (y), `trajectory` (partial) and `partial_path` (or None)."""

    def __init__(self, message: str, t: float, state: np.ndarray, trajectory, partial_path=None) -> None:
        super().__init__(message)
        self.t, self.state, self.trajectory, self.partial_path = t, state, trajectory, partial_path


class _NonFinite(Exception):
    def __init__(self, message: str, t: float, y: np.ndarray) -> None:
        super().__init__(message)
        self.t, self.y = t, y


class System:
    """The first-order system of one simulation run."""

    def __init__(self, model, formulation: str | None, options: Mapping | None = None) -> None:
        from biobullet.dynamics.formulation import DEFAULT_FORMULATION, JOINT, get_formulation
        from biobullet.forces import force_elements

        self.model = model
        self.formulation = formulation or DEFAULT_FORMULATION
        self.method = get_formulation(self.formulation)   # ModelError naming the argument if unknown
        # joint-space (DAE) formulations integrate the whole tree's (x, ẋ); generalized ones (q, v)
        self.joint_space = self.method.state_space == JOINT
        self.options = dict(options or {})
        from biobullet.integrate.discrete import layer_elements, run_elements
        self.elements = run_elements(model, tuple(force_elements(model)) + layer_elements(model))
        self.floating = model.base_nq > 0   # quaternion (or planar) coordinates: q̇ ≠ v
        if self.joint_space:
            self.loops = bool(model.description.elements_of("loop"))
            self.n_pos, self.n_vel = model.n_config, model.n_tangent
        else:
            self.n_pos, self.n_vel = model.nq, model.nv
        # error control over the dependent joints (reduced formulations with loop-dependent coordinates): their
        # positions and rates are integrated alongside as output-only components (see `_shadow_joints`)
        self.shadow = _shadow_joints(model) if (not self.joint_space and self.options.get("shadow", False)) \
            else None
        n_shadow = 0 if self.shadow is None else 2 * len(self.shadow[0])
        self.n_shadow = n_shadow
        # muscles enter the dynamics when the run gives excitations: their states sit before the two power entries
        self.muscles = None
        if self.options.get("excitations") is not None:
            from biobullet.muscles.dynamics import MuscleRun
            self.muscles = MuscleRun(model, self.options["excitations"], self.options.get("activations"))
        self.n_muscle = 0 if self.muscles is None else self.muscles.size
        # the shadow rows of ẋ as a slice when they are contiguous (views instead of fancy-index copies)
        self._shadow_rows = None if self.shadow is None else _as_slice(self.shadow[1])
        # energy-rate components: only the elements that can contribute (no actuators and no damping → 0 W)
        self._inputs, self._dissipators = _power_elements(self.elements)
        self.size = self.n_pos + self.n_vel + n_shadow + self.n_muscle + 2
        # the callback stage's M, h and solve: the pipeline's kernels on its joint state (`Data.forward_at_state`, a
        # workspace made on the stage's first call: most runs never hand it one); a check formulation chosen by
        # name gives v̇ from the same state itself
        self._state_data = None
        self._pipeline_state = not self.joint_space and self.method.is_pipeline
        self._from_state = None if self.joint_space or self._pipeline_state else \
            getattr(self.method, "accelerations_from_state", None)
        self._memo: tuple | None = None   # last right-hand side: ((t, y bytes), value)
        # the pipeline's right-hand side in one compiled call where every plug-in of the run brings a kernel; a
        # call it declines goes to the callback stage (`_checked_rhs`)
        from biobullet.integrate.compiled_rhs import CompiledReducedRHS
        self._compiled = CompiledReducedRHS.for_system(self)
        self.callback_calls = 0   # calls the compiled right-hand side handed to the callback stage

    # ------------------------------------------------------------------ state
    def right_hand_side(self) -> dict:
        """Which right-hand side served the run: {"path": "compiled loop map" | "compiled explicit map",
        "callback_calls": calls the compiled one handed to the callback stage} or {"path": "callback stage",
        "reason": why} — for `Trajectory.meta` (a user asking why a run is slow)."""
        if self._compiled is not None:
            kind = "loop" if self._compiled.loops else "explicit"
            # (calls its kernel's uncompiled form served while numba had no compiled one: `python_start`)
            return {"path": f"compiled {kind} map", "callback_calls": int(self.callback_calls),
                    "uncompiled_calls": int(getattr(self._compiled, "uncompiled_calls", 0))}
        from biobullet.integrate.compiled_rhs import callback_reason
        return {"path": "callback stage", "reason": callback_reason(self)}

    def split(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pos = np.array(y[:self.n_pos])
        if self.model.base_nq:   # floating base and multi-DOF joints: unit quaternions (and planar cos, sin)
            pos = self.model.normalize_configuration(pos)
        return pos, y[self.n_pos:self.n_pos + self.n_vel]

    def tree_state(self, t: float, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(x, ẋ) of the tree for a state vector (the callback stage's coordinate map; loop resolvers continue from
        the compiled right-hand side's last solution: `CompiledReducedRHS.hand_over`)."""
        pos, vel = self.split(y)
        if self.joint_space:
            return pos, np.array(vel)
        hand_over = getattr(self._compiled, "hand_over", None)
        if hand_over is not None:
            hand_over()
        x, xd, _, _ = self.model.joint_state(pos, vel, t)
        return x, xd

    def observed_state(self, t: float, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(x, ẋ) for event functions and step observers, as the trajectory output computes them
        (`_tree_states_batch` of one sample): on a loop map with a compiled right-hand side one compiled Newton
        solve (`CompiledReducedRHS.tree_states`, started from the integrated loop-dependent joints of
        `error_control="joints"`, else from the run's loop warm starts — the right-hand side's last state, inside
        the current step; the callback stage where it hands over) instead of the coordinate map in Python (≈ 0.35 ms
        on the prosthesis); explicit maps by the compiled jets."""
        x, xd = _tree_states_batch(self, np.array([float(t)]), np.asarray(y, dtype=float)[None, :], warm=True)
        return x[0], xd[0]

    def observed_states(self, t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(x (n, n_config), ẋ (n, n_tangent)) of states y (n, size) at times t (n,): every sample at once, as the
        trajectory output computes them (compiled where the coordinate map allows)."""
        return _tree_states_batch(self, np.asarray(t, dtype=float), np.asarray(y, dtype=float), warm=True)

    def position_rate(self, pos: np.ndarray, vel: np.ndarray) -> np.ndarray:
        rate = np.array(vel[:len(vel)], dtype=float)
        if not self.model.base_nq:
            return rate
        return self.model.configuration_rate(pos, vel)

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        key = (t, y.tobytes())
        if self._memo is not None and self._memo[0] == key:   # integrators re-evaluate the same (t, y)
            return self._memo[1].copy()
        out = self._compiled(t, y) if self._compiled is not None else None
        if out is None:
            if self._compiled is not None:
                self.callback_calls += 1
            out = self._checked_rhs(t, y)
        self._memo = (key, out.copy())
        return out

    def _checked_rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        tiny = finite_weights(len(y))   # finiteness of a whole vector in one dot product (see Model._check)
        with np.errstate(all="ignore"):
            if not math.isfinite(y.dot(tiny)):
                raise _NonFinite("the state is not finite", t, y)
            try:
                out = self._rhs(t, y)
            except (ModelError, SolverError, np.linalg.LinAlgError, FloatingPointError) as exc:
                raise _NonFinite(str(exc), t, y) from None
            finite = math.isfinite(out.dot(tiny))
        if not finite:
            raise _NonFinite("the right-hand side is not finite (forces or accelerations overflowed)", t, y)
        return out

    def _rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        """The callback stage: ẏ with the joint state, the forces and (for a check formulation or the joint-space
        DAE) the dynamics evaluated in Python — the plug-ins without kernels — and the pipeline's M, h and solve."""
        pos, vel = self.split(y)
        model = self.model
        if self.joint_space:
            x, xd = pos, np.array(vel)
            if self.loops:   # tree kinematics with rates once: shared by force elements and loop rows
                tree_kinematics(model, x, xd)
            tau = applied_forces(model, x, xd, t, self.elements)
            muscle_power = self._muscle_forces(t, y, pos, vel, x, xd, tau)
            accel, _ = self.method.joint_accelerations(model, x, xd, tau, t, **self._baumgarte())
        else:
            # (no defensive copies; G None = identity, γ None = zero); x, ẋ are only read here
            x, xd, gradient, gamma = model.joint_state_view(pos, vel, t)
            tau = applied_forces(model, x, xd, t, self.elements)
            if not math.isfinite(tau.dot(finite_weights(len(tau)))):   # (else the solve blames its argument 'tau')
                _non_finite_force(model, x, xd, t, self.elements)
            muscle_power = self._muscle_forces(t, y, pos, vel, x, xd, tau)
            generalized = tau if gradient is None else gradient.T @ tau
            accel = None   # one coordinate-map evaluation per right-hand side: M, h and the solve take its state
            if self._pipeline_state:
                if self._state_data is None:
                    from biobullet.pipeline.data import state_workspace
                    self._state_data = state_workspace(model)
                accel = self._state_data.forward_at_state(model, (x, xd, gradient, gamma), generalized)
            elif self._from_state is not None:
                accel = self._from_state(model, x, xd, gradient, gamma, generalized)
            if accel is None:   # (the pipeline declined: M_r not positive definite, …; the formulation says why)
                try:
                    accel = model.forward_dynamics(pos, vel, generalized, t, formulation=self.formulation)
                except SolverError as exc:   # (+ the element whose force is largest: an overflow names its cause)
                    raise SolverError(f"{exc}{_largest_force(model, x, xd, t, self.elements, gradient)}") from None
        power_in = float(sum(e.input_power(model, x, xd, t) for e in self._inputs)) if self._inputs else 0.0
        power_in += muscle_power
        dissipated = float(sum(e.dissipated_power(model, x, xd) for e in self._dissipators)) \
            if self._dissipators else 0.0
        out = np.empty(self.size)
        n_pos = self.n_pos
        n_pv = n_pos + self.n_vel
        if self.floating:
            out[:n_pos] = self.position_rate(pos, vel)
        else:
            out[:n_pos] = vel
        out[n_pos:n_pv] = accel
        if self.shadow is not None:
            rows_v = self._shadow_rows if self._shadow_rows is not None else self.shadow[1]
            k = len(self.shadow[0])
            out[n_pv:n_pv + k] = xd[rows_v]
            rates = out[n_pv + k:n_pv + 2 * k]
            np.dot(gradient[rows_v], accel, out=rates)
            rates += gamma[rows_v]
        if self.muscles is not None:
            out[-2 - self.n_muscle:-2] = self.muscles.rows.rate
        out[-2] = power_in
        out[-1] = dissipated
        return out

    def _muscle_forces(self, t: float, y: np.ndarray, pos, vel, x, xd, tau: np.ndarray) -> float:
        """The muscle stage on the callback stage: τ −= the muscles' forces (in place), their state rates into the
        rows; returns the fibers' power (W), 0 without muscles."""
        if self.muscles is None:
            return 0.0
        from biobullet.muscles.dynamics import evaluate_stage
        self.muscles.refresh(t, pos, vel)
        return evaluate_stage(self.model, self.muscles.rows, x, xd, y[-2 - self.n_muscle:-2], tau)

    def muscle_block(self, y: np.ndarray) -> np.ndarray:
        """The muscle states of state vector(s) y (activations, then the compliant muscles' fiber lengths)."""
        return y[..., self.size - 2 - self.n_muscle:self.size - 2]

    def _baumgarte(self) -> dict:
        return {"baumgarte": self.options["baumgarte"]} if self.options.get("baumgarte") is not None else {}

    def project(self, t: float, y: np.ndarray) -> np.ndarray:
        """Project (x, ẋ) onto the position and velocity constraints (joint-space formulations)."""
        x, xd = self.split(y)
        x = np.asarray(self.method.project_positions(self.model, x, t), dtype=float)
        xd = np.asarray(self.method.project_velocities(self.model, x, np.array(xd), t), dtype=float)
        return np.concatenate([x, xd, y[self.n_pos + self.n_vel:]])

    def initial_vector(self, initial, t0: float) -> np.ndarray:
        model = self.model
        if initial is None or isinstance(initial, Mapping):
            q0, v0 = model.initial_state(dict(initial or {}))
        else:
            try:
                q0, v0 = (np.asarray(a, dtype=float).reshape(-1) for a in initial)
            except (TypeError, ValueError):
                raise ModelError("initial must be a dict NAME=VALUE or a pair (q0, v0)", attribute="initial",
                                 expected="{'joint': value, 'joint_dot': value} or (q0, v0)") from None
        if model.base_nq and q0.shape == (model.nq,) and np.all(np.isfinite(q0)):
            # the integrated quaternions (and planar cos, sin) start at unit length: the right-hand side's rates are
            # those of the normalised block (`split`), so a quaternion 2·z turned at half the rate — the whole run
            # wrong while every sample showed a unit quaternion (ModelError naming q for a zero one)
            q0 = model.normalize_configuration(q0)
        x, xd = _initial_joint_state(model, q0, v0, t0, initial)
        muscles = np.zeros(0) if self.muscles is None else self.muscles.initial_state(q0, v0, t0)
        if self.joint_space:
            y = np.concatenate([x, xd, muscles, [0.0, 0.0]])
            return self.project(t0, y) if self.method.can_project else y
        if self.shadow is not None:
            rows_x, rows_v = self.shadow
            return np.concatenate([q0, v0, x[rows_x], xd[rows_v], muscles, [0.0, 0.0]])
        return np.concatenate([q0, v0, muscles, [0.0, 0.0]])


def _initial_joint_state(model, q0: np.ndarray, v0: np.ndarray, t0: float, initial) -> tuple[np.ndarray, np.ndarray]:
    """(x, ẋ) at the initial state, validating shapes and finiteness. Finite values can still overflow on the way
    (`--set knee_A_dot=1e300`: the loop's rates and their squares): evaluated without NumPy's overflow warnings, a
    state that does not evaluate to finite numbers is one ModelError naming the values set."""
    with np.errstate(all="ignore"):
        try:
            x, xd, gradient, gamma = model.joint_state(q0, v0, t0)
            finite = all(np.all(np.isfinite(a)) for a in (x, xd, gradient, gamma))
            failure = "" if finite else "its joint coordinates, rates or their derivatives are not finite (overflow)"
        except SolverError as exc:
            model.joint_state(q0, np.zeros_like(v0), t0)   # at rest: a configuration's own failure is raised
            failure = f"at these rates, {exc}"
    if failure:
        given = ", ".join(f"{k}={v!r}" for k, v in initial.items()) if isinstance(initial, Mapping) and initial \
            else "the model's <initial> values" if initial is None or isinstance(initial, Mapping) else "(q0, v0)"
        raise ModelError(f"the initial state ({given}) cannot be evaluated: {failure}", file=model.file,
                         attribute="initial", expected="initial positions and rates of a physical size "
                         "(the joint rates and their squares finite)")
    return x, xd


def _shadow_joints(model):
    """(rows of x, rows of ẋ) of the loop-dependent joints, or None when the model has none.

    With the reduced formulations only the independent coordinates are state, so the integrator's error
    estimate sees only them; a joint that depends on them strongly (large G) may carry a much larger error
    than rtol promises. Their positions θ_dep and rates θ̇_dep are therefore integrated too, as output-only
    components (θ̇_dep, G_dep v̇ + γ_dep — no extra evaluation, nothing feeds back into the dynamics): their
    error estimates enter the step-size control exactly as they would in a formulation over all joints.
    The trajectory reports the dependent joints from the coordinate map, not from these components."""
    cmap = model.coordinate_map
    if cmap.kind != "general" or not any(type(r).__name__ == "LoopResolver" for r in cmap.resolvers):
        return None
    independent = set(cmap.independent)
    dependent = np.array([k for k in range(cmap.n_joints) if k not in independent], dtype=np.intp)
    if not dependent.size:
        return None
    return dependent + model.base_nq, dependent + model.base_nv


def _as_slice(rows: np.ndarray):
    """slice(a, b) when `rows` are the consecutive indices a … b−1, else None."""
    if len(rows) and np.array_equal(rows, np.arange(rows[0], rows[0] + len(rows))):
        return slice(int(rows[0]), int(rows[0]) + len(rows))
    return None


def _power_elements(elements) -> tuple[tuple, tuple]:
    """(elements with input power, elements with dissipated power): the ones that do not inherit the base
    class's zero, less the built-in spring-dampers without damping (their dissipated power is exactly 0)."""
    from biobullet.forces.base import ForceElement
    from biobullet.forces.elements import JointSpring, JointStop, Spring

    inputs = tuple(e for e in elements if type(e).input_power is not ForceElement.input_power)
    dissipators = tuple(e for e in elements if type(e).dissipated_power is not ForceElement.dissipated_power
                        and not (type(e) in (Spring, JointSpring, JointStop) and e.damping == 0.0))
    return inputs, dissipators



def _non_finite_force(model, x: np.ndarray, xd: np.ndarray, t: float, elements) -> None:
    """SolverError naming the first force element whose generalized force is not finite at (x, ẋ, t)."""
    with np.errstate(all="ignore"):
        culprit = next((e for e in elements if not np.all(np.isfinite(applied_forces(model, x, xd, t, (e,))))), None)
    raise SolverError(f"the force of {culprit if culprit is not None else 'the force elements'} is not finite at "
                      f"t = {t:.9g} s (it overflows: check its parameters and the state)")


def _largest_force(model, x: np.ndarray, xd: np.ndarray, t: float, elements, gradient) -> str:
    """'; the largest applied force there is <ELEMENT>'s (|Q| on COORDINATE)' — the element whose generalized
    force Gᵀ τ is largest at (x, ẋ, t), for an error whose cause may be its size (huge torques overflow v̇, then the
    state) — or '' without force elements."""
    largest, culprit, where = 0.0, None, 0
    with np.errstate(all="ignore"):
        for element in elements:
            force = applied_forces(model, x, xd, t, (element,))
            force = np.abs(force if gradient is None else gradient.T @ force)
            k = int(np.argmax(force)) if force.size else 0
            if force.size and not force[k] <= largest:   # (NaN or larger)
                largest, culprit, where = float(force[k]), element, k
    if culprit is None:
        return ""
    source = getattr(culprit, "source", None)
    name = getattr(source, "element", None) or str(culprit)
    names = model.velocity_names
    return (f"; the largest applied force there is that of {name} (|Q| = {largest:.3g} on "
            f"{names[where] if where < len(names) else f'direction {where}'!r})")


# ---------------------------------------------------------------------------------------------- energies
def tree_energies(model, positions: np.ndarray, velocities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(kinetic ½ ẋᵀ M(x) ẋ, gravity potential −Σ m g·c) (J, (n,) each) of n tree states (positions (n, n_config),
    velocities (n, n_tangent)) in one call of the tree energies kernel (`compiled_kernels.tree_energies`)."""
    from biobullet.algorithms.compiled_kernels import tree_energies as energies_kernel

    meta, body = model.tree_pack
    n = len(positions)
    kinetic, potential = np.empty(n), np.empty(n)
    energies_kernel(meta, body, np.ascontiguousarray(positions, dtype=float),
                    np.ascontiguousarray(velocities, dtype=float).reshape(n, model.n_tangent),
                    np.asarray(model.gravity, dtype=float), kinetic, potential)
    return kinetic, potential


def kinetic_energy(model, x: np.ndarray, xd: np.ndarray) -> float:
    """½ ẋᵀ M(x) ẋ (J) of one tree state (`tree_energies`)."""
    return float(tree_energies(model, np.asarray(x, dtype=float)[None], np.asarray(xd, dtype=float)[None])[0][0])


def gravity_potential(model, x: np.ndarray) -> float:
    """−Σ m g·c (J), c the world position of each body's centre of mass (`tree_energies`)."""
    return float(tree_energies(model, np.asarray(x, dtype=float)[None], np.zeros((1, model.n_tangent)))[1][0])


# ---------------------------------------------------------------------------------------------- trajectory
def build_trajectory(system: System, times, states, events, meta) -> "Trajectory":
    """The Trajectory of a run from its samples: tree states, energies, multipliers, events.

    The tree states of all samples at once where the coordinate map allows (`_tree_states_batch`: loop-dependent
    joints in one compiled Newton pass, `CompiledReducedRHS.tree_states`). Kinetic and gravity energies of
    all samples in one kernel call (`tree_energies`), elastic energies per element (`potential_energy_batch`);
    multipliers per sample."""
    from biobullet.integrate.trajectory import Trajectory

    model = system.model
    n = len(times)
    t = np.array(times, dtype=float)
    y = np.array(states, dtype=float).reshape(n, system.size)
    energy = {}
    if n > 0:
        positions, velocities = _tree_states_batch(system, t, y)
    else:
        positions, velocities = np.zeros((0, model.n_config)), np.zeros((0, model.n_tangent))
    energy["kinetic"], energy["potential_gravity"] = tree_energies(model, positions, velocities)
    energy["potential_elastic"] = _elastic_energy_batch(model, positions, system.elements)
    lam = None
    if system.method.has_multipliers:
        lam = [_multipliers_at(system, t[k], positions[k], velocities[k]) for k in range(n)]
    energy["work_applied"], energy["dissipated"] = y[:, -2].copy(), y[:, -1].copy()
    muscles = {}
    if system.muscles is not None:   # the stage's outputs per sample; the tendons' energy is elastic energy
        muscles = system.muscles.samples(positions, velocities, system.muscle_block(y))
        energy["potential_elastic"] = energy["potential_elastic"] + muscles["tendon_energy"].sum(axis=1)
    base_q = tuple(model.coordinate_names[:model.base_nq])   # floating base and multi-DOF joints
    base_v = tuple(model.velocity_names[:model.base_nv])
    trajectory = Trajectory(
        t=t, position_names=base_q + tuple(model.joint_names),
        velocity_names=base_v + tuple(f"{name}_dot" for name in model.joint_names), positions=positions,
        velocities=velocities, energy=energy,
        multipliers=np.array(lam) if lam is not None and lam and np.ndim(lam[0]) == 1 else None,
        events=[(name, te, np.concatenate(system.tree_state(te, ye))) for name, te, ye in events],
        meta=meta, model=model, muscles=muscles,
        muscle_names=() if system.muscles is None else tuple(system.muscles.names))
    from biobullet.integrate.trajectory import fill_generalized
    fill_generalized(trajectory, model)
    return trajectory


def _tree_states_batch(system: System, t: np.ndarray, y: np.ndarray, *, warm: bool = False
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(x (n, n_config), ẋ (n, n_tangent)) at every sample: `System.tree_state` for all rows at once where the
    coordinate map allows (identity, affine, explicit polynomial / linear / spline / Fourier functions), per
    sample otherwise (loop-dependent joints need their Newton solve, expression functions their evaluator).
    warm: the samples lie in the step being integrated, so without integrated dependent joints the loop solve may
    start from the run's loop warm starts (never for a whole trajectory: its first sample may be far from them)."""
    model = system.model
    n = len(t)
    pos = y[:, :system.n_pos].copy()
    vel = y[:, system.n_pos:system.n_pos + system.n_vel].copy()
    if model.base_nq:   # as `split`: quaternions (floating base, free and spherical joints), planar pairs
        pos = model.normalize_configuration(pos)   # all rows at once
    if system.joint_space:
        return pos, vel
    cmap = model.coordinate_map
    bq, bv = model.base_nq, model.base_nv
    if cmap.kind == "identity":
        return pos, vel
    positions = np.zeros((n, model.n_config))
    velocities = np.zeros((n, model.n_tangent))
    positions[:, :bq], velocities[:, :bv] = pos[:, :bq], vel[:, :bv]
    if cmap.kind == "affine":
        positions[:, bq:] = pos[:, bq:] @ cmap.affine_matrix.T + cmap.affine_offset
        velocities[:, bv:] = vel[:, bv:] @ cmap.affine_matrix.T
        return positions, velocities
    from biobullet.integrate.compiled_rhs import explicit_states_batch
    from biobullet.model.joint_jets import explicit_table
    if system._compiled is not None and system._compiled.loops:   # loop-dependent joints: one compiled Newton pass
        def fallback(k: int):
            x, xd = system.tree_state(t[k], y[k])
            return x[bq:], xd[bv:]
        guess = None
        if system.shadow is not None and len(t):   # integrated loop-dependent joints: the first sample's guess
            n_pv = system.n_pos + system.n_vel
            rows_x = system.shadow[0]
            guess = np.zeros(cmap.n_joints)
            guess[rows_x - bq] = y[0, n_pv:n_pv + len(rows_x)]
        elif warm and len(t):
            guess = system._compiled.warm_guess(pos[0, bq:])
        positions[:, bq:], velocities[:, bv:] = system._compiled.tree_states(t, pos[:, bq:], vel[:, bv:], fallback,
                                                                             guess)
        return positions, velocities
    table = explicit_table(cmap)
    if table is not None:
        theta, rate = positions[:, bq:], velocities[:, bv:]
        independent = list(cmap.independent)
        theta[:, independent] = pos[:, bq:]
        rate[:, independent] = vel[:, bv:]
        if explicit_states_batch(*table, t, theta, rate):
            return positions, velocities
    # other resolvers, or an expression not finite at some sample: per sample (which reports it)
    for k in range(n):
        positions[k], velocities[k] = system.tree_state(t[k], y[k])
    return positions, velocities


def _elastic_energy_batch(model, positions: np.ndarray, elements) -> np.ndarray:
    """Σ V of the force elements at every sample (each element's `potential_energy_batch`: vectorised or compiled
    where the element has such a form, sample by sample otherwise)."""
    energy = np.zeros(len(positions))
    for element in elements:
        energy += element.potential_energy_batch(model, positions)
    return energy


def _multipliers_at(system: System, t: float, x, xd):
    from biobullet.forces import applied_forces
    tau = applied_forces(system.model, x, xd, t, system.elements)
    return np.asarray(system.method.joint_accelerations(system.model, x, xd, tau, t,
                                                        **system._baumgarte())[1], dtype=float)


def state_accelerations(model, trajectory, *, generalized: bool = False) -> np.ndarray:
    """ẍ (or v̇) at every sample of `trajectory`, from the equations of motion with the model's forces."""
    from biobullet.forces import applied_forces
    from biobullet.dynamics.formulation import JOINT, get_formulation
    formulation = trajectory.meta.get("formulation") or None
    method = get_formulation(formulation)
    out = []
    for k, t in enumerate(trajectory.t):
        x, xd = trajectory.positions[k], trajectory.velocities[k]
        tau = applied_forces(model, x, xd, t)
        if method.state_space == JOINT:
            xdd = method.joint_accelerations(model, x, xd, tau, t)[0]
            out.append(xdd)
            continue
        q, v = trajectory.q[k], trajectory.v[k]
        _, _, gradient, gamma = model.joint_state(q, v, t)
        vdot = model.forward_dynamics(q, v, gradient.T @ tau, t, formulation=formulation)
        out.append(vdot if generalized else gradient @ vdot + gamma)
    return np.array(out)


# ---------------------------------------------------------------------------------------------- simulate

def nothing_to_simulate(model) -> ModelError:
    """The error for a model with no independent coordinate (nothing for the dynamics to integrate): no movable
    joint, every joint prescribed by joint functions (its motion is theirs, evaluated, not integrated), or joints
    that loop closures hold in place."""
    names = model.joint_names
    if not names:
        return ModelError("the model has no moving joint (0 degrees of freedom): nothing to simulate",
                          file=model.file, expected="a movable joint, or --floating-base")
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    driven = {function.joint for function in model.description.joint_functions}
    if driven.issuperset(names):
        return ModelError(f"every joint ({shown}) is prescribed by joint functions: 0 independent coordinates, so no "
                          "dynamics to integrate (the motion is the functions' own: model.joint_state([], [], t) "
                          "gives the joints' positions and rates at time t)", file=model.file,
                          expected="a joint not driven by a <joint_function>, or --floating-base")
    return ModelError(f"the joints ({shown}) have 0 independent coordinates (loop closures and joint functions fix "
                      "them all): nothing to simulate", file=model.file,
                      expected="a mechanism with a degree of freedom, or --floating-base")


def simulate(model, t_end: float, *, formulation: str | None = None, method: str | None = None,
             rtol: float | None = None, atol: float | None = None, t_eval=None, initial=None, events=None,
             progress: bool | None = None, out=None, max_step: float | None = None, t0: float = 0.0,
             baumgarte=None, projection: bool = False, error_control: str = "joints", excitations=None, activations=None, max_evaluations: int | None = None,
             python_start_seconds: float = 0.0):
    """Integrate `model` from t0 (default 0) to `t_end` (s) and return a Trajectory.

    method: DOP853 (default), Radau, BDF, LSODA (also RK45, RK23); rtol/atol default 1e-9/1e-12 (rtol ≥ RTOL_FLOOR).
    t_eval: sample times (dense output); default 1001 uniform points on [t0, t_end]; "steps" = every accepted step.
    initial: dict NAME=VALUE (joint coordinate or NAME_dot) on top of the model's <initial>, or a pair (q0, v0).
    events: Event objects or callables g(t, x, ẋ), one or a list (attributes `terminal`, `direction` honoured), added
    to the force elements' own events; all are recorded in `trajectory.events` as (name, t, [x, ẋ]).
    baumgarte: drift-correction gains (α, β) ≥ 0 of a joint-space formulation (multipliers; refused for the
    reduced ones).
    progress: None = tqdm bar on stderr once a run takes > 2 s, True = always, False = never.
    out: write the trajectory there (.npz, else CSV); on failure `out + ".partial.csv"` is written.
    error_control: "joints" (default) = with a reduced formulation, the loop-dependent joints' positions and rates
    are under the integrator's error control too (integrated as output-only components), so rtol/atol bound
    the error of every joint coordinate as in a formulation over all joints; "state" = only the integrated
    independent coordinates (fewer steps at a given rtol, larger errors in the dependent joints).
    excitations: the model's muscles enter the dynamics (docs/muscles.md): a number for every muscle, a mapping
    muscle name → number or function of t, or a callable f(t, q, v) → such a mapping (or one value per muscle);
    values in [0, 1]. None (default): no muscle forces (the skeleton alone). activations: the initial activations
    (a number or a mapping by name; default each muscle's `default_activation`, else OpenSim's: 0.5 for
    DeGroote, 0.05 otherwise); compliant tendons start in static equilibrium.
    max_evaluations: the implicit method's work budget in right-hand-side evaluations (default 100,000 + 2·10⁶
    per simulated second, `stepper.MAX_EVALUATIONS`): a
    problem so stiff that even the implicit method crawls stops there with an IntegrationError naming the stiffest
    element, the time reached and the remedies (the partial trajectory kept).
    python_start_seconds: while numba has no compiled kernel for the run's right-hand side, the run (its loop solves,
    right-hand side, trajectory output) goes by the kernels' uncompiled forms until the right-hand side's calls have
    taken this much CPU and the run would not end by Python soon, then compiles (default 0: compile at once; the CLI
    gives `PYTHON_START_SECONDS`, so that a newcomer's short first run does not wait for the compile;
    `CompiledReducedRHS.python_start`).
    Raises IntegrationError (a SolverError) with t, state and the partial trajectory.
    """
    from biobullet.core.events import as_event
    from biobullet.integrate.stepper import METHODS, LoopEvent, LoopResult, Progress, StepFailure, run_loop

    _check_arguments(model, method, progress, projection, max_evaluations, out, python_start_seconds)
    if activations is not None and excitations is None:   # (were ignored: `activations="x"` ran)
        raise ModelError("initial activations given, but no excitations: the muscles are off in this run",
                         argument="activations", expected="excitations= too (docs/muscles.md), or no activations")
    baumgarte, events = _run_options(model, baumgarte, excitations, events)
    t0, t_end = number_argument(t0, "t0"), number_argument(t_end, "t_end")
    if out is not None:   # before the run: an output that cannot be written, or is the model file, is refused
        check_writable(out, inputs=(model.file,))
    if not t_end > t0:
        raise ModelError(f"t_end = {t_end!r} is not after t0 = {t0:g}", attribute="t_end", expected="t_end > t0")
    from biobullet.integrate.checks import runnable_check
    runnable_check(model, "reference")   # (the CLI refused a <flexible> link; the Python call ran the rigid model)
    if model.nv == 0:
        raise nothing_to_simulate(model)
    singular = time_function_finding(model, t0, t_end)
    chosen = method is not None   # (a default method may be switched to an implicit one on a stiff problem)
    method = (method or DEFAULT_METHOD)
    if method.upper() not in METHODS:
        raise ModelError(f"unknown integration method {method!r}{did_you_mean(method.upper(), METHODS)}",
                         attribute="method",
                         expected="one of DOP853, Radau, BDF, LSODA, RK45, RK23")
    # (rtol ≥ 1 accepts any error: `rtol=10` ran and gave numbers far off)
    # (below RTOL_FLOOR SciPy's methods raise rtol to it with a warning about "an element of `rtol`", and meta
    # recorded the rtol asked for, not the one run)
    rtol = DEFAULT_RTOL if rtol is None else number_argument(rtol, "rtol", at_least=RTOL_FLOOR, below=1,
                                                             expected=f"a number in [{RTOL_FLOOR:.3g}, 1): SciPy's "
                                                             "integrators take no smaller rtol (100 ε)")
    atol = DEFAULT_ATOL if atol is None else number_argument(atol, "atol", positive=True)
    max_step = np.inf if max_step is None or isinstance(max_step, float) and max_step == np.inf else \
        number_argument(max_step, "max_step", positive=True)
    if error_control not in ("joints", "state"):
        raise ModelError(f"error_control = {error_control!r}", attribute="error_control",
                         expected='"joints" or "state"')
    if baumgarte is not None and not _joint_space(formulation):
        from biobullet.dynamics.formulation import DEFAULT_FORMULATION
        raise ModelError(f"baumgarte gains {baumgarte} given, but the {formulation or DEFAULT_FORMULATION!r} "
                         "formulation has no constraint drift to correct (they were ignored)", argument="baumgarte",
                         expected="formulation='multipliers' (the joint-space DAE), or no baumgarte")
    system = System(model, formulation, {"baumgarte": baumgarte, "shadow": error_control == "joints",
                                         "excitations": excitations,
                                         "activations": activations, "python_start_seconds": python_start_seconds,
                                         "t_span": (t0, t_end)})
    # (a cold numba cache: the run may start by Python, `CompiledReducedRHS.python_start`)
    with system._compiled.python_start() if system._compiled is not None else nullcontext():
        samples = _sample_times(t_eval, t0, t_end)
        _check_output_size(system, samples)
        y0 = system.initial_vector(initial, t0)
        all_events = [as_event(e, k) for k, e in enumerate(events or [])]
        from biobullet.forces import force_events
        all_events += force_events(model, system.elements)
        loop_events = [LoopEvent(e.name, _event_on_state(system, e), e.direction, e.terminal, e.restart,
                                 _action_on_state(system, e), e.kink)
                       for e in all_events]
        from biobullet.integrate.discrete import run_logs, start_run, step_observer
        # (solved even where no element starts a run: on a loop map it leaves the first compiled call's warm start)
        start_run(model, system.elements, t0, *system.tree_state(t0, y0))
        observe = step_observer(model, system.elements, system.observed_state, system.observed_states)
        project = system.project if (system.method.can_project and projection) else None
        meta = {"model": model.file, "formulation": system.formulation, "method": method, "rtol": rtol,
                "atol": atol, "max_step": None if np.isinf(max_step) else max_step, "t0": t0, "t_end": t_end,
                "projection": bool(project), "error_control": error_control}
        result = LoopResult()
        fast = None   # DOP853 stepped in compiled segments where the compiled right-hand side offers its kernel
        if (system._compiled is not None and method.upper() == "DOP853" and not loop_events and project is None
                and observe is None and samples is not None):
            from biobullet.integrate.compiled_stepper import CompiledSteps
            fast = CompiledSteps.for_rhs(system._compiled)

        def on_stiff(t: float, mean_step: float) -> str | None:
            runaway = runaway_message(system, result.last_y)   # steps held down by a runaway state: no method follows
            if runaway:
                raise StepFailure(f"steps of {mean_step:.2g} s at t = {t:.6g} s: {runaway}", t, result.last_y.copy())
            failure = StepFailure(f"steps of {mean_step:.2g} s at t = {t:.6g} s", t, result.last_y.copy())
            if _near_singular_loops(system, failure, t, result.last_y):   # a toggle, not stiffness: no method passes
                raise failure
            return _on_stiff(model, method, t, mean_step, switch=not chosen, meta=meta)

        bar = Progress(t0, t_end, progress, f"simulate {model.name}")
        started = time.perf_counter()
        compiling = jit.CompileClock()   # a first run compiles its kernels inside the loop: reported apart
        try:
            # (NumPy's overflow warnings off inside the solver too: huge but finite states — `--set j_dot=1e154` —
            # overflow in SciPy's error norms; the run checks finiteness itself and fails with one clear error)
            with newton_tolerance(model, rtol) if not system.joint_space else nullcontext(), \
                    jit.compile_clock() as compiling, np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                run_loop(system.rhs, t0, y0, t_end, method=method, rtol=rtol, atol=atol, max_step=max_step,
                         t_eval=samples, events=loop_events, project=project, on_step=bar, result=result,
                         observe=observe, fast=fast, rejects=(_NonFinite,), max_evaluations=max_evaluations,
                         on_stiff=on_stiff)
            bar.close()
            meta.update(_stats(result, started, compiling.seconds), status=result.status, message=result.message,
                        right_hand_side={**system.right_hand_side(),
                                         **({"compiled_stepper_steps": fast.steps} if fast is not None else {})})
            if run_logs(system.elements):
                meta["discrete"] = run_logs(system.elements)
            with jit.compile_clock() as output_compiling:   # the trajectory's kernels (states, energies): apart
                trajectory = build_trajectory(system, result.t, result.state_array(system.size), result.events,
                                              meta)
            trajectory.meta["compile_time"] += output_compiling.seconds
        except BaseException as exc:  # every failure (also Ctrl-C or an internal error) keeps the partial trajectory
            bar.close()
            if isinstance(exc, StepFailure) and result.status == "budget":
                runaway = runaway_message(system, exc.y)
                exc = StepFailure(f"{exc}: {runaway}" if runaway else
                                  f"{exc}: the problem is too stiff for the method's steps"
                                  f"{stiffest_element(model)}; make it less extreme (that stiffness, damping or mass), "
                                  "simulate a shorter time, loosen rtol/atol (--rtol 1e-6), or raise the budget "
                                  "(max_evaluations=)", exc.t, exc.y)
            failure = _keep_partial(system, result, meta, started, exc, out, compiling.seconds)
            if singular is not None:   # the element the run ran into, as the CLI names it before the run
                failure = IntegrationError(f"{failure}; found before the run: "
                                           f"{str(singular).removeprefix(f'{model.file}: ')}",
                                           failure.t, failure.state, failure.trajectory, failure.partial_path)
            if interrupted(exc):   # Ctrl-C (inside a compiled kernel: numba's SystemError caused by it)
                raise KeyboardInterrupt(failure) from exc
            if not isinstance(exc, (StepFailure, *_EXPECTED_FAILURES)):
                raise
            raise failure from None
    if singular is not None:   # (the run went through it: its samples there may be meaningless)
        import warnings
        warnings.warn(f"{singular}; the run ended, but check its samples near that time", stacklevel=2)
    if out is not None:
        (trajectory.to_npz if str(out).lower().endswith(".npz") else trajectory.to_csv)(out)
    return trajectory


def time_function_finding(model, t0: float, t_end: float) -> BiobulletError | None:
    """The CLI's up-front check of the time-dependent joint functions and torques over [t0, t_end]
    (`integrate.checks.time_function_check`: a pole, or a non-finite value at a sample): its error naming the
    element (a SolverError where the function's own evaluation refuses), or None. `simulate` still runs, so
    that a failure keeps its partial trajectory up to that time, and names the element in its IntegrationError
    (the run's own cause is a runaway state or a step size collapse, which names no element). Kept in the model's
    `derived` for these times and force elements: the CLI's check before the run is the run's (≈ 40 ms, once)."""
    from biobullet.forces import force_elements
    from biobullet.integrate.checks import time_function_check
    elements = force_elements(model)   # (a torque added in Python since is checked anew)
    kept = model.derived.get(_TIME_FINDING)
    if kept is not None and kept[0] == (t0, t_end) and len(kept[1]) == len(elements) \
            and all(a is b for a, b in zip(kept[1], elements)):
        return kept[2]
    finding = None
    try:
        with jit.uncompiled():   # (as the CLI's check: nothing compiles before the run's cold start decides)
            time_function_check(model, t_end, t0)
    except (ModelError, SolverError) as error:   # (a function's own evaluation may refuse: SolverError)
        finding = error
    except Exception:  # noqa: BLE001  (a plug-in's own exception at a sample: the run meets and reports it)
        pass
    model.derived[_TIME_FINDING] = ((t0, t_end), elements, finding)
    return finding


#: `Model.derived`'s key of `time_function_finding`'s last result
_TIME_FINDING = "biobullet.integrate.engine.time_function_finding"


def _run_options(model, baumgarte, excitations, events) -> tuple:
    """(baumgarte as a pair of floats or None, events as a list): ModelError naming `baumgarte` unless it is two
    finite gains ≥ 0 (α, β) ("x" failed at t = 0 with "not enough values to unpack", -1 was a bare TypeError), or
    `excitations` for a model without muscles (they were ignored); a single event is taken as a list of one
    (`events=f` was "'function' object is not iterable")."""
    from biobullet.core.events import Event
    if baumgarte is not None:
        expected = "two finite gains (α, β) ≥ 0 in 1/s, e.g. (20.0, 20.0)"
        try:
            values = () if isinstance(baumgarte, (str, bytes)) else tuple(baumgarte)
        except TypeError:
            values = ()
        if len(values) != 2:
            raise ModelError(f"is {baumgarte!r:.40}", argument="baumgarte", expected=expected)
        # number_argument refuses flags (NumPy's too: float(np.True_) read (np.True_, 10.0) as α = 1.0) and text
        baumgarte = tuple(number_argument(value, "baumgarte", entry=gain, at_least=0.0, expected=expected)
                          for gain, value in zip("αβ", values))
    if excitations is not None and not model.description.muscles:
        raise ModelError("excitations given, but the model has no muscles (they would be ignored)",
                         file=model.file, argument="excitations", expected="a model with <muscle> elements, or none")
    if events is not None and (callable(events) or isinstance(events, Event)):
        events = [events]
    return baumgarte, events


def _joint_space(formulation: str | None) -> bool:
    """Whether the named formulation integrates the tree's (x, ẋ) (a DAE with constraint drift: `multipliers`)."""
    from biobullet.dynamics.formulation import JOINT, get_formulation
    return formulation is not None and get_formulation(formulation).state_space == JOINT


def _check_arguments(model, method, progress, projection, max_evaluations, out, python_start_seconds) -> None:
    """ModelError naming the first of `simulate`'s arguments whose type is wrong (they were read as flags or text,
    e.g. `projection="no"` projected, `max_evaluations=-1` ended an implicit run at once, `rtol=10` ran)."""
    from biobullet.model import Model
    if not isinstance(model, Model):
        raise ModelError(f"is not a Model (got {type(model).__name__})", argument="model",
                         expected="a model made by biobullet.load_model(path)")
    if method is not None and not isinstance(method, str):
        raise ModelError(f"is not a name (got {type(method).__name__})", argument="method",
                         expected="one of DOP853, Radau, BDF, LSODA, RK45, RK23")
    for name, value, allowed in (("progress", progress, (type(None), bool, np.bool_)),
                                  ("projection", projection, (bool, np.bool_))):
        if not isinstance(value, allowed):
            raise ModelError(f"is not {'None, ' if name == 'progress' else ''}True or False (got {value!r:.40})",
                             argument=name, expected="a bool")
    if max_evaluations is not None and (isinstance(max_evaluations, bool)
                                        or not isinstance(max_evaluations, (int, np.integer))
                                        or max_evaluations < 1):
        raise ModelError(f"is not a positive integer (got {max_evaluations!r:.40})", argument="max_evaluations",
                         expected="an integer ≥ 1, e.g. 10**7")
    if isinstance(python_start_seconds, bool) or not isinstance(python_start_seconds, (int, float, np.number)) \
            or not python_start_seconds >= 0:   # (inf: never compile; NaN fails the comparison)
        raise ModelError(f"is {python_start_seconds!r:.40}", argument="python_start_seconds",
                         expected="a CPU time in s ≥ 0 (inf: run uncompiled throughout)")
    if out is not None and not isinstance(out, (str, os.PathLike)):
        raise ModelError(f"is not a path (got {type(out).__name__})", argument="out",
                         expected="a file name ending in .csv or .npz")


#: the implicit method a stiff run of the default explicit method switches to
STIFF_METHOD = "Radau"


#: a generalized speed (rad/s or m/s) above this is no mechanism's motion (a turbine spins at ≈ 10⁴ rad/s) but a
#: runaway state: every method's steps shrink to follow it, so it is named instead of stiffness
RUNAWAY_SPEED = 1e6


def runaway_message(system: System, y: np.ndarray | None) -> str:
    """'the state runs away: …' naming the fastest generalized speed of state `y` when it exceeds RUNAWAY_SPEED,
    else ''."""
    if y is None:
        return ""
    speeds = np.abs(system.split(y)[1])
    fastest = int(np.argmax(speeds)) if speeds.size else 0
    if not speeds.size or not speeds[fastest] > RUNAWAY_SPEED:
        return ""
    names = system.model.velocity_names
    name = names[fastest] if len(names) == speeds.size else f"speed {fastest}"
    return (f"the state runs away: {name} moves at {speeds[fastest]:.3g} (rad/s or m/s), faster than any mechanism "
            f"(> {RUNAWAY_SPEED:g}), so the steps shrink to follow it; check the initial state (--set, initial=) "
            "and the forces that drive it")


def _on_stiff(model, method: str, t: float, mean_step: float, *, switch: bool, meta: dict) -> str | None:
    """Say once that an explicit method's steps are held down by stiffness, naming the likely stiff element; with
    `switch` (the caller chose no method) go on with STIFF_METHOD and say so (recorded in `meta`)."""
    import warnings
    rate = f" ({1 / mean_step:.2g} steps per simulated second)" if mean_step > 0 else ""
    looks = (f"{model.file}: the problem looks stiff for the explicit {method}: mean step {mean_step:.2g} s{rate} "
             f"at t = {t:.6g} s{stiffest_element(model)}")
    if switch:
        meta["method"] = f"{method}, then {STIFF_METHOD} from t = {t:.9g} s (stiff)"
        warnings.warn(f"{looks}; going on with the implicit {STIFF_METHOD} (choose a method with method=... / "
                      "--method to keep one, or lower the stiffness)", stacklevel=2)
        return STIFF_METHOD
    warnings.warn(f"{looks}; an implicit method takes far fewer steps: method='Radau' or 'LSODA' (CLI: --method "
                  "Radau), or lower the stiffness", stacklevel=2)
    return None


#: bodies whose masses differ by more than this factor make a stiff problem (fast modes of the light ones beside
#: the heavy one: a forearm of 10¹² kg on the pitching arm)
STIFF_MASS_RATIO = 1e6


def stiffest_element(model) -> str:
    """', probably <TAG name="N"> (stiffness K, damping C)' for the force element or contact with the largest
    stiffness (then damping) attribute; without one, ', probably <link name="L"> (mass M kg, R times the lightest
    moving body)' when the moving bodies' masses differ by more than STIFF_MASS_RATIO; else ''."""
    best, best_key = None, (0.0, 0.0)
    for element in model.description.elements:
        values = []
        for key in ("stiffness", "damping"):
            try:
                values.append(abs(float(element.attributes.get(key, 0.0))))
            except ValueError:   # (an expression or a plugin's own syntax: not comparable)
                values.append(0.0)
        if tuple(values) > best_key:
            best, best_key = element, tuple(values)
    if best is None:
        masses = [body for body in model.bodies if body.mass > 0]
        if not masses:
            return ""
        heavy, light = max(masses, key=lambda b: b.mass), min(masses, key=lambda b: b.mass)
        ratio = heavy.mass / light.mass
        return "" if ratio <= STIFF_MASS_RATIO else \
            f', probably <link name="{heavy.link}"> (mass {heavy.mass:g} kg, {ratio:.2g} times the lightest moving body)'
    key = next((k for k in ("name", "joint", "link") if best.attributes.get(k)), None)
    named = f' {key}="{best.attributes[key]}"' if key else ""
    return f", probably <{best.tag}{named}> (stiffness {best_key[0]:g}, damping {best_key[1]:g})"


#: failures of the model's numerics (reported as an IntegrationError); any other exception is re-raised as it is,
#: after the partial trajectory was written all the same
_EXPECTED_FAILURES = (_NonFinite, SolverError, np.linalg.LinAlgError, FloatingPointError, ModelError,
                      ArithmeticError, ValueError, RecursionError)


#: cond₁(∂Φ/∂θ_dep) from which a run whose steps collapsed is said to be at a loop's toggle: the bundled and test
#: loops stay ≤ 40 away from their toggles, and cond grows like |q − q_toggle|^(−1/2) (4e3 at 1e-6 rad from it)
NEAR_SINGULAR_LOOP = 1e4


def _near_singular_loops(system: System, exc: BaseException, t: float, y) -> str:
    """'; near a singular loop configuration …' when the steps of a loop model collapsed (SciPy's "required step
    size is less than spacing between numbers", a stiffness switch that did not help) or its loop solve failed
    ("did not converge" from a prediction thrown far by the growing sensitivity) with the last accepted state's
    cond₁(∂Φ/∂θ_dep) ≥ NEAR_SINGULAR_LOOP: the coordinates cannot pass the toggle there; else ''."""
    from biobullet.integrate.stepper import StepFailure
    model = system.model
    if not isinstance(exc, (StepFailure, _NonFinite)) or "singular loop configuration" in str(exc) or y is None \
            or not model.description.elements_of("loop") or system.joint_space:
        return ""
    from biobullet.constraints.implicit import loop_condition
    q = np.asarray(y, dtype=float)[:system.n_pos]
    try:
        condition = loop_condition(model, q, t)
    except Exception:  # noqa: BLE001  (a diagnosis only: the run's own failure is the one to report)
        return ""
    if not condition >= NEAR_SINGULAR_LOOP:
        return ""
    names = ", ".join(repr(e.attributes.get("name")) for e in model.description.elements_of("loop"))
    where = "the loops no longer close" if math.isinf(condition) else f"cond₁(∂Φ/∂θ_dep) = {condition:.3g}"
    return (f"; <loop> {names}: near a singular loop configuration ({where}: a toggle or locked position) — "
            "the coordinates cannot move through it; choose coordinates that do (<coordinates>)")


def _keep_partial(system: System, result, meta: dict, started: float, exc: BaseException, out,
                  compile_time: float = 0.0):
    """Write the samples accepted before failure `exc` to `out + ".partial.csv"` (when `out` is given) and return
    the IntegrationError describing the failure. The samples are written even when the trajectory's derived
    quantities cannot be evaluated at all of them (a singular loop configuration, a blown-up state): the longest
    prefix of samples that evaluates is kept, down to none (a CSV with its header only)."""
    fail_t = getattr(exc, "t", result.last_t)
    fail_y = getattr(exc, "y", result.last_y)
    meta.update(_stats(result, started, compile_time), status="failed", message=str(exc) or type(exc).__name__,
                right_hand_side=system.right_hand_side())
    from biobullet.integrate.discrete import run_logs
    if run_logs(system.elements):
        meta["discrete"] = run_logs(system.elements)
    times, states = list(result.t), list(result.state_array(system.size))
    if result.last_y is not None and (not times or times[-1] < result.last_t):
        times.append(result.last_t)
        states.append(result.last_y)
    # (before the warm starts are forgotten; at the last accepted state, not at a trial stage beyond it)
    toggle = _near_singular_loops(system, exc, result.last_t, result.last_y)
    forget = getattr(system._compiled, "forget_loops", None)   # the run's loop warm starts too
    if forget is not None:
        forget()
    for resolver in system.model.coordinate_map.resolvers:   # the failure may have left them at a singular point
        if hasattr(resolver, "rewind"):
            resolver.rewind()
    partial, kept, path = None, 0, None
    try:
        with np.errstate(all="ignore"):   # (a blown-up last state: its energies may overflow; the CSV has q and v)
            partial, kept = _longest_partial(system, times, states, result.events, meta)
        if out is not None:
            partial.to_csv(str(out) + ".partial.csv")
            path = str(out) + ".partial.csv"
    except Exception:  # noqa: BLE001  (the run's own failure is the one to report)
        pass
    state_text = "(none accepted)" if fail_y is None else np.array2string(
        np.asarray(fail_y)[:system.n_pos + system.n_vel], precision=6, max_line_width=200)
    written = ""
    if path:
        written = f"; partial trajectory written to {path}" + \
            (f" ({kept} of {len(times)} samples: the later ones could not be evaluated)" if kept < len(times) else "")
    cause = str(exc).removeprefix(f"{system.model.file}: ") + toggle   # (the file is named once, here)
    return IntegrationError(f"{system.model.file}: integration failed at t = {fail_t:.9g} s ({cause}); "
                            f"state [q, v] = {state_text}; last accepted t = {result.last_t:.9g} s" + written,
                            fail_t, fail_y, partial, path)


def _longest_partial(system: System, times: list, states: list, events, meta: dict):
    """(trajectory, n) of the longest prefix of the samples whose trajectory can be built (bisection: the samples
    before a failure evaluate, so the buildable prefixes are an initial segment)."""
    try:
        return build_trajectory(system, times, states, events, meta), len(times)
    except Exception:  # noqa: BLE001  (a sample that cannot be evaluated: find the ones that can)
        pass
    good, bad = 0, len(times)
    best = None
    while bad - good > 1:
        middle = (good + bad) // 2
        try:
            best = build_trajectory(system, times[:middle], states[:middle], events, meta)
            good = middle
        except Exception:  # noqa: BLE001
            bad = middle
    if best is None or len(best.t) != good:
        best = build_trajectory(system, times[:good], states[:good], events, meta)
    return best, good


def _stats(result, started: float, compile_time: float) -> dict:
    """Run statistics: wall_time (s) of the integration without compile_time (s), the kernels numba compiled
    during it (a first run on an empty cache)."""
    return {"wall_time": time.perf_counter() - started - compile_time, "compile_time": compile_time,
            "nfev": int(result.nfev), "njev": int(result.njev), "steps": int(result.steps),
            "restarts": int(result.restarts)}


def _event_on_state(system: System, event):
    def g(t: float, y: np.ndarray) -> float:
        x, xd = system.observed_state(t, y)
        return event(t, x, xd)
    return g


def _action_on_state(system: System, event):
    if getattr(event, "action", None) is None:
        return None

    def action(t: float, y: np.ndarray) -> None:
        x, xd = system.tree_state(t, y)
        event.action(t, x, xd)
    return action




def _sample_times(t_eval, t0: float, t_end: float):
    """The output times of `t_eval` (None: DEFAULT_SAMPLES uniform ones; "steps": None, every accepted step), or a
    ModelError naming t_eval and its first wrong entry. Times of a lower-precision float array (float32) within its
    rounding of t0 or t_end are taken as t0 or t_end: np.float32(0.1) is 0.10000000149, past a run's t_end = 0.1."""
    if t_eval is None:   # (distinct times: a span of few representable times, 1e9 … 1e9 + 1e-6 s, repeated them)
        return np.unique(np.linspace(t0, t_end, DEFAULT_SAMPLES))
    if isinstance(t_eval, str):
        if t_eval != "steps":
            raise ModelError(f"t_eval = {t_eval!r}", attribute="t_eval", expected='an array of times or "steps"')
        return None
    try:
        given = np.asarray(t_eval)
    except (TypeError, ValueError):   # (a ragged nesting)
        given = np.asarray(None)
    if given.dtype.kind not in "biuf":   # (text was read as numbers, None was a bare TypeError)
        raise ModelError(f"t_eval is not an array of times (got {type(t_eval).__name__} of {given.dtype})",
                         attribute="t_eval", expected=f"times in [{t0:g}, {t_end:g}] s, or \"steps\"")
    samples = given.astype(float).reshape(-1)
    if samples.size > MAX_SAMPLES:   # (10⁸ samples of a 7-joint arm: the run was killed for memory at its end)
        raise ModelError(f"t_eval holds {samples.size:,} times", attribute="t_eval",
                         expected=f"at most {MAX_SAMPLES:,} samples (the CLI's limit)")
    if given.dtype.kind == "f" and given.dtype.itemsize < 8:
        rounding = 2 * float(np.finfo(given.dtype).eps) * max(abs(t0), abs(t_end), 1.0)
        samples[np.abs(samples - t0) <= rounding] = t0
        samples[np.abs(samples - t_end) <= rounding] = t_end
    wrong = np.flatnonzero(~np.isfinite(samples) | (samples < t0) | (samples > t_end)
                           | np.r_[False, np.diff(samples) <= 0])
    if samples.size == 0 or wrong.size:
        if samples.size == 0:
            what = " is empty"
        else:
            k = int(wrong[0])
            value = float(samples[k])
            what = f"[{k}] = {value!r} is " + ("not finite" if not np.isfinite(value) else "outside [t0, t_end]"
                                               if not t0 <= value <= t_end else "not after the time before it")
        raise ModelError(f"t_eval must be strictly increasing finite times within [t0, t_end]: t_eval{what}",
                         attribute="t_eval", expected=f"times in [{t0:g}, {t_end:g}]")
    return samples


#: a run's output at its peak (the samples' states, their tree states, generalized coordinates and energies, and
#: the copies the trajectory's assembly makes) per sample: OUTPUT_SAMPLE_BYTES + OUTPUT_COLUMN_BYTES per column
#: (`_output_columns`). Measured with tracemalloc at 10⁶ samples: the two-link chain (14 columns) 320 B, arm7
#: (44 columns) 760 B a sample; this estimate gives 352 B and 832 B (10 % above). 10⁷ samples of the chain peaked
#: at 2.4 GB (resident) before this ceiling
OUTPUT_SAMPLE_BYTES, OUTPUT_COLUMN_BYTES = 128, 16
#: the largest estimated output of a run (bytes): a run asking for more is refused before it starts, not killed for
#: memory at its end (README, "Limits")
MAX_OUTPUT_BYTES = 2_000_000_000


def _output_columns(system: System) -> int:
    """Numbers a run stores per sample: its integrated state, the tree state (x, ẋ), the generalized q and v, and
    each muscle's outputs."""
    from biobullet.muscles.dynamics import MUSCLE_OUTPUTS
    model = system.model
    muscles = 0 if system.muscles is None else len(system.muscles.names) * len(MUSCLE_OUTPUTS)
    return system.size + model.n_config + model.n_tangent + model.nq + model.nv + muscles


def _check_output_size(system: System, samples) -> None:
    """ModelError naming t_eval when the run's output would exceed MAX_OUTPUT_BYTES at its peak (samples ×
    columns; "steps", whose number is not known before the run, is not checked)."""
    if samples is None:
        return
    columns = _output_columns(system)
    estimate = samples.size * (OUTPUT_SAMPLE_BYTES + OUTPUT_COLUMN_BYTES * columns)
    if estimate > MAX_OUTPUT_BYTES:
        most = MAX_OUTPUT_BYTES // (OUTPUT_SAMPLE_BYTES + OUTPUT_COLUMN_BYTES * columns)
        raise ModelError(f"t_eval asks for {samples.size:,} samples of {columns} columns: about {estimate / 1e9:.3g} GB "
                         f"of output at its peak, above the ceiling of {MAX_OUTPUT_BYTES / 1e9:g} GB",
                         argument="t_eval", expected=f"at most {most:,} samples for this model: fewer times in "
                                                     "t_eval (CLI: a larger --dt), or split the run into shorter ones "
                                                     "(t0 and initial= from the last sample)")


#: the CLI's `simulate(python_start_seconds=)`: on a cold numba cache a run goes by the kernels' uncompiled forms
#: for at least this much CPU of right-hand-side calls before its kernel is compiled (longer while its pace says it
#: ends by Python within 4× this: `compiled_rhs.PYTHON_FINISH_FACTOR`). The coupled chain's 1 s takes 0.4 s by
#: Python (a thousand times a compiled call's cost, but SciPy's own steps cost as much) where compiling its kernel
#: takes ≈ 12 s, the four-bar's ≈ 1 s where its loop map compiles ≈ 60 s (docs/speed.md, cold start)
PYTHON_START_SECONDS = 3.0


#: a multiple of the CLI's --dt closer than this fraction of dt to t_end is t_end (its rounding, not a sample)
SAMPLE_MERGE = 1e-9


def output_times(t_end: float, dt: float) -> np.ndarray:
    """The CLI's output times (s) for `--dt`: k·dt below t_end, then t_end itself. A multiple that is t_end up to
    rounding is not a sample of its own (--t-end 0.081 --dt 0.009 wrote 0.080999999999999989 and then 0.081)."""
    times = np.arange(int(math.ceil(t_end / dt))) * dt
    return np.append(times[times < t_end - SAMPLE_MERGE * dt], t_end)


def _path_summary(right_hand_side: dict) -> str:
    """The right-hand side's path for the CLI's summary line, with the calls its uncompiled form served."""
    calls = right_hand_side.get("uncompiled_calls", 0)
    return right_hand_side["path"] + (f" ({calls} calls by its uncompiled form: cold cache)" if calls else "")


def cli_simulate(args, model=None) -> int:
    """`biobullet simulate` for the reference engine, from the argparse namespace (model, t_end, formulation,
    method, rtol, atol, dt, overrides, out, floating_base). Writes args.out; returns the exit code 0. `model`:
    the model of args.model when the caller loaded it already (e.g. an .osim file, through `load_model`)."""
    import sys

    from biobullet.dynamics.api import model_from_file
    from biobullet.integrate.checks import check_elements, runnable_check
    # the checks evaluate the model at a few states (loop solves, expressions): by Python, so that nothing compiles
    # before the run's cold start decides (`CompiledReducedRHS.python_start`)
    with jit.uncompiled():
        if model is None:
            model = check_elements(model_from_file(args.model, floating_base=getattr(args, "floating_base", None),
                                                   inertia=getattr(args, "inertia", "warn"),
                                                   joint_limits=getattr(args, "joint_limits", True)))
        runnable_check(model, "reference")
    # refused before the run, naming the element; `simulate` finds the same result kept in the model (one check)
    finding = time_function_finding(model, 0.0, float(args.t_end))
    if finding is not None:
        raise finding
    overrides = dict(getattr(args, "overrides", None) or [])
    dt = getattr(args, "dt", None)
    t_eval = None if dt is None else output_times(args.t_end, dt)
    excitations = None
    if getattr(args, "excitations", None):
        from biobullet.muscles.dynamics import excitations_by_name
        excitations = excitations_by_name(model, args.excitations)
    trajectory = simulate(model, args.t_end, formulation=getattr(args, "formulation", None),
                          method=getattr(args, "method", None), rtol=getattr(args, "rtol", None),
                          atol=getattr(args, "atol", None), t_eval=t_eval, initial=overrides, out=args.out,
                          progress=getattr(args, "progress", None), excitations=excitations,
                          python_start_seconds=PYTHON_START_SECONDS)
    compile_time = trajectory.meta["compile_time"]
    compiled = f" + {compile_time:.1f} s compiling kernels (first run only)" if compile_time > 0.05 else ""
    print(f"wrote {args.out} ({len(trajectory.t)} samples, t = 0 … {args.t_end:g} s, "
          f"{trajectory.meta['nfev']} evaluations, {trajectory.meta['wall_time']:.2f} s{compiled}, "
          f"{_path_summary(trajectory.meta['right_hand_side'])} right-hand side)", file=sys.stderr)
    return 0
