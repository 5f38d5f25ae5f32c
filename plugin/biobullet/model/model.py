"""The compiled, immutable Model: tree bodies, frames, coordinate map, and the public dynamics API.

Vectors: generalized positions q = [base pose (7, if floating)] + independent joint coordinates
(`coordinate_names`); generalized velocities v = [base twist in the base frame (6)] + their rates
(`velocity_names`). Joint configuration x = [base pose] + every joint coordinate θ in URDF order
(`joint_names`). Dynamics: M(q, t) q̈ + h(q, v, t) = Q, where Q are applied generalized forces.
"""
from __future__ import annotations

from math import isfinite as _isfinite
from collections import deque
from functools import cached_property
from typing import Callable, Mapping, TypeVar

import numpy as np

from biobullet.core import jit
from biobullet.core.arguments import first_flag, number_argument, time_argument
from biobullet.core.errors import ModelError, SolverError, did_you_mean
from biobullet.model.coordinates import CoordinateMap, ExplicitFunction, finite_weights, readonly
from biobullet.model.description import ModelDescription
from biobullet.model.tree import (Body, Frame, block_sizes, compile_tree, multi_dof_blocks, pack_tree,
                                  position_rate_py)

T = TypeVar("T")
#: `position_rate_py` compiled on its first call: `Model.configuration_rate`
_position_rate = jit.lazy(position_rate_py)

BASE_POSITION_NAMES = ("base_x", "base_y", "base_z", "base_qx", "base_qy", "base_qz", "base_qw")
BASE_VELOCITY_NAMES = ("base_vx", "base_vy", "base_vz", "base_wx", "base_wy", "base_wz")


class Model:
    """Immutable model data: tree, frames, coordinate map. Create with `biobullet.load_model(path)`.

    The dynamics methods (`mass_matrix`, `bias_forces`, `forward_dynamics`, …) are conveniences over the free
    functions of `biobullet.dynamics.api`, which the loader hands in as `dynamics` (this layer imports no
    algorithm). Loops make joints dependent through `loop_resolver_factory(model, description, dependent)` →
    (resolver, implicit joint indices), handed in the same way (`biobullet.constraints.implicit`).
    """

    def __init__(self, description: ModelDescription, *, loop_resolver_factory=None, dynamics=None) -> None:
        #: what library modules derive from this model and keep with it (packed arrays, cached kinematics, built
        #: elements), each under its module's key: it lives and dies with the model (no module-level cache keyed
        #: on models)
        self.derived: dict = {}
        self._dynamics = dynamics
        self._loop_resolver_factory = loop_resolver_factory
        bodies, frames, joint_names = compile_tree(description)
        self.description = description
        self.name = description.name
        self.file = description.file
        self.bodies: tuple[Body, ...] = bodies
        self._frames: Mapping[str, Frame] = frames
        self.joint_names: tuple[str, ...] = joint_names
        self.floating_base = description.base_type == "floating"
        self.gravity = np.array(description.gravity, dtype=float)
        self.gravity.setflags(write=False)
        self.n_joints = len(joint_names)
        # leading block of x and ẋ that the coordinate map passes through: floating base + multi-DOF joints
        self.base_nq, self.base_nv = block_sizes(bodies)
        self.n_config = self.n_joints + self.base_nq
        self.n_tangent = self.n_joints + self.base_nv
        self.coordinate_map = self._build_coordinate_map(description)
        independent = [joint_names[k] for k in self.coordinate_map.independent]
        base_q, base_v = _block_names(bodies)
        self.independent_joint_names: tuple[str, ...] = tuple(independent)
        self.coordinate_names: tuple[str, ...] = base_q + tuple(independent)
        self.velocity_names: tuple[str, ...] = base_v + tuple(independent)
        self.nq, self.nv = len(self.coordinate_names), len(self.velocity_names)
        self._base_q, self._base_v = len(base_q), len(base_v)
        self._q_shape, self._v_shape = (self.nq,), (self.nv,)
        self._tiny_q, self._tiny_v = finite_weights(self.nq), finite_weights(self.nv)
        self._check_loop_initial_velocities(description)

    # ------------------------------------------------------------------ construction
    def _build_coordinate_map(self, description: ModelDescription) -> CoordinateMap:
        slot = {name: k for k, name in enumerate(self.joint_names)}
        dependent = {f.joint: f for f in description.joint_functions}
        loop_resolver, implicit = self._build_loop_resolver(description, dependent)
        if description.coordinates is not None:
            for name in description.coordinates:
                if name in dependent:
                    raise ModelError(f"joint {name!r} is listed as independent but is made dependent by "
                                     f"{dependent[name].source.element}", file=description.file,
                                     element="<coordinates>", attribute="names")
            missing = [n for n in self.joint_names
                       if n not in dependent and n not in description.coordinates and slot[n] not in implicit]
            if missing:
                raise ModelError(f"joints {', '.join(missing)} are neither listed nor driven by a function"
                                 + (" nor closed by a loop" if implicit else ""),
                                 file=description.file, element="<coordinates>", attribute="names",
                                 expected="every joint that no function drives (loops may make the rest dependent)")
            independent = [slot[n] for n in description.coordinates]
        else:   # every joint that no function drives and no loop closes
            independent = [slot[n] for n in self.joint_names if n not in dependent and slot[n] not in implicit]
        order = _dependency_order(self.joint_names, slot, independent, dependent, loop_resolver, description)
        return CoordinateMap(self.n_joints, independent, order)

    def _check_loop_initial_velocities(self, description: ModelDescription) -> None:
        """ModelError for a nonzero `<initial velocity=...>` of a joint a loop closes: its position is the assembly's
        first guess, but its velocity follows from the coordinates' (ẋ = G v) and `initial_state` never read it
        (velocity="0", as the bundled loop files write, states nothing and stays accepted)."""
        if not description.elements_of("loop"):
            return
        free = set(self.velocity_names) | {f.joint for f in description.joint_functions}
        for item in description.initial:
            if item.velocity and item.joint not in free:
                raise item.source.error("velocity", f"joint {item.joint!r} is closed by a loop: its velocity follows "
                                        "from the coordinates' velocities, so this value would be ignored",
                                        "a velocity for a coordinate only (a loop's dependent joint takes a "
                                        "position, the assembly's first guess; set the coordinates' velocities)")

    def _build_loop_resolver(self, description: ModelDescription, dependent: Mapping):
        """(LoopResolver or None, set of implicit joint indices) from the `<loop>` elements."""
        if not description.elements_of("loop"):
            return None, set()
        if self._loop_resolver_factory is None:
            raise ModelError("this model has <loop> elements but was built without a loop resolver",
                             file=description.file, element="<loop>",
                             expected="a model made by biobullet.load_model(path)")
        return self._loop_resolver_factory(self, description, dependent)

    # ------------------------------------------------------------------ frames
    def frame(self, name: str) -> Frame:
        try:
            return self._frames[name]
        except (KeyError, TypeError):   # (TypeError: an unhashable name such as a list)
            raise ModelError(f"unknown link {name!r}{did_you_mean(name, self._frames)}", file=self.file,
                             expected="one of " + ", ".join(sorted(self._frames))) from None

    @property
    def link_names(self) -> tuple[str, ...]:
        return tuple(self._frames)

    # ------------------------------------------------------------------ coordinates
    def checked(self, name: str, value, size: int) -> np.ndarray:
        """`value` as a finite float vector of `size` entries; ModelError naming the argument otherwise."""
        # fast path (every integrator step): a float64 vector of the right size, finiteness by one dot product
        # with 1e-300 weights (finite for finite entries, no overflow possible; NaN or ±inf otherwise)
        if type(value) is np.ndarray and value.dtype is _FLOAT and value.shape == (size,):
            if _isfinite(value.dot(finite_weights(size))):
                return value
            raise ModelError(f"argument {name!r} contains NaN or infinite values", file=self.file)
        try:
            array = np.asarray(value)
        except (TypeError, ValueError):   # a ragged nesting ([1, [2, 3]]) or an object NumPy cannot read
            raise ModelError(f"argument {name!r} is not a vector of real numbers (got {type(value).__name__} that "
                             "NumPy cannot read as one array)", file=self.file, expected=f"{size} floats") from None
        flag = first_flag(value)   # (NumPy reads [True, 0.5] as [1.0, 0.5]: a flag would be taken as 1)
        if flag is not None:
            names = self.coordinate_names if name == "q" else self.velocity_names if size == self.nv else ()
            what = "is an array of bools, not of numbers" if array.dtype.kind == "b" else \
                f"entry {flag}{f' ({names[flag]})' if flag < len(names) else ''} is a bool, not a number"
            raise ModelError(f"argument {name!r}: {what}", file=self.file,
                             expected=f"{size} real numbers")
        if array.dtype.kind not in "iuf":   # strings, None, complex numbers, objects: no silent float()
            raise ModelError(f"argument {name!r} is not a vector of real numbers (got {type(value).__name__}"
                             f"{'' if array.dtype.kind == 'O' else f' of dtype {array.dtype}'})", file=self.file,
                             expected=f"{size} floats")
        array = array.astype(float).reshape(-1)
        if array.shape != (size,):
            raise ModelError(f"argument {name!r} has {array.size} entries", file=self.file,
                             expected=f"{size} ({', '.join((self.coordinate_names if name == 'q' else self.velocity_names)[:8])}"
                             f"{', …' if size > 8 else ''})" if name in ('q', 'v') else f"{size} entries")
        if not np.all(np.isfinite(array)):
            raise ModelError(f"argument {name!r} contains NaN or infinite values", file=self.file)
        return array

    def _check_pair(self, q, v) -> tuple[np.ndarray, np.ndarray]:
        """`checked` of q and v together (the per-step hot path: one finiteness sum for both)."""
        if (type(q) is np.ndarray and type(v) is np.ndarray and q.dtype is _FLOAT and v.dtype is _FLOAT
                and q.shape == self._q_shape and v.shape == self._v_shape
                and _isfinite(q.dot(self._tiny_q) + v.dot(self._tiny_v))):
            return q, v
        return self.checked("q", q, self.nq), self.checked("v", v, self.nv)

    def joint_configuration(self, q, t: float = 0.0) -> np.ndarray:
        """Tree configuration x = [base pose?, θ] for generalized positions q."""
        q = self.checked("q", q, self.nq)
        jets = self.coordinate_map.evaluate(q[self._base_q:], time_argument(t))
        return np.concatenate([q[:self._base_q], jets.theta])

    def joint_positions(self, q, t: float = 0.0) -> np.ndarray:
        """Every joint coordinate θ (URDF joint order) for generalized positions q at time t."""
        q = self.checked("q", q, self.nq)
        return self.coordinate_map.evaluate(q[self._base_q:], time_argument(t)).theta

    def joint_state(self, q, v, t: float = 0.0):
        """(x, ẋ, G, γ): tree configuration and velocity, and the map ẍ = G q̈ + γ (G includes the base block)."""
        x, xd, gradient, gamma = self.joint_state_view(q, v, time_argument(t))
        if gradient is None:
            gradient = self._identity_gradient
        if self.coordinate_map.kind == "identity":
            x, xd = x.copy(), xd.copy()
        return (x, xd, gradient.copy(), np.zeros(self.n_tangent) if gamma is None else gamma)

    def joint_state_view(self, q, v, t: float = 0.0):
        """`joint_state` for hot paths (integrators, formulations): (x, ẋ, G or None, γ or None), None meaning identity G / zero γ.

        Returned arrays may alias q and v (identity map) or be shared read-only (G of linear joint functions,
        constant): do not modify them.
        """
        if type(t) is not float:   # (the engine passes floats; text, None, a list or a flag: one error naming t)
            t = time_argument(t)
        cmap = self.coordinate_map
        kind = cmap.kind
        bq, bv = self._base_q, self._base_v
        if kind == "affine" and not bq:
            x, xd = self._affine_state(cmap.affine_matrix, cmap.affine_offset, q, v)
            return x, xd, cmap.affine_matrix, None
        q, v = self._check_pair(q, v)
        if kind == "identity":
            return q, v, None, None
        if kind == "affine":
            a = cmap.affine_matrix
            x = np.empty(self.n_config)
            x[:bq] = q[:bq]
            x[bq:] = a @ q[bq:] + cmap.affine_offset
            xd = np.empty(self.n_tangent)
            xd[:bv] = v[:bv]
            xd[bv:] = a @ v[bv:]
            return x, xd, self._affine_full_gradient, None
        jets = cmap.evaluate(q[bq:], t, v[bv:])
        if not bq:
            return jets.theta, jets.rate, jets.gradient, jets.gamma
        return (np.concatenate([q[:bq], jets.theta]), np.concatenate([v[:bv], jets.rate]),
                self._full_gradient(jets.gradient), np.concatenate([np.zeros(bv), jets.gamma]))

    def _affine_state(self, matrix: np.ndarray, offset: np.ndarray, q, v) -> tuple[np.ndarray, np.ndarray]:
        """(A q + b, A v) of checked q, v (fixed base, linear joint functions)."""
        q, v = self._check_pair(q, v)
        return matrix @ q + offset, matrix @ v

    @cached_property
    def _identity_gradient(self) -> np.ndarray:
        return readonly(np.eye(self.n_tangent))

    @cached_property
    def _affine_full_gradient(self) -> np.ndarray:
        return readonly(self._full_gradient(self.coordinate_map.affine_matrix.copy()))

    def coordinate_gradient(self, q, t: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """(x, G) without rates."""
        q = self.checked("q", q, self.nq)
        jets = self.coordinate_map.evaluate(q[self._base_q:], time_argument(t))
        return np.concatenate([q[:self._base_q], jets.theta]), self._full_gradient(jets.gradient)

    def _full_gradient(self, gradient: np.ndarray) -> np.ndarray:
        bv = self._base_v
        if not bv:
            return gradient
        full = np.zeros((self.n_tangent, self.nv))
        full[:bv, :bv] = np.eye(bv)
        full[bv:, bv:] = gradient
        return full

    # ------------------------------------------------------------------ dynamics (reduced equations)
    def _api(self):
        if self._dynamics is None:
            raise ModelError("this model was built without its dynamics", file=self.file,
                             expected="a model made by biobullet.load_model(path)")
        return self._dynamics

    def derive(self, key: str, build: Callable[[], T]) -> T:
        """What a library module derives from this model, kept in `derived` under `key` (its module's name):
        `build()` on first use, then the kept value."""
        value = self.derived.get(key)
        if value is None:
            value = self.derived[key] = build()
        return value

    @cached_property
    def tree_pack(self) -> tuple[np.ndarray, np.ndarray]:
        """(meta, body) of the bodies for the compiled tree kernels (`model.tree.pack_tree`), packed once; read
        only by convention (the kernels do not write them)."""
        return pack_tree(self.bodies)

    @cached_property
    def compiled(self):
        """The model finalized into immutable named arrays (`biobullet.pipeline.compiled_model.CompiledModel`),
        built once on first use; the pipeline's kernels read it."""
        return self._api().compile_model(self)

    def data(self):
        """A new data workspace (`biobullet.pipeline.data.Data`: every buffer and per-run cache of the pipeline)
        of this model, for `biobullet.pipeline.forward.forward(model, data, q, v, tau, t)`."""
        return self._api().make_data(self)

    @cached_property
    def workspace(self):
        """The data workspace the convenience methods below use (one per model; a run or a bridge makes its own
        with `data()`)."""
        return self.data()

    def _bind_public_calls(self) -> None:
        """After the first pipeline call: the workspace's closures of `mass_matrix`, `bias_forces` and
        `forward_dynamics` (`biobullet.pipeline.data.Data.public_calls`: the same calls, one Python frame instead
        of three) become this model's instance attributes, so a control loop's call skips these methods; the
        closures fall back to them for anything but the plain case."""
        if "forward_dynamics" not in self.__dict__:
            calls = self.workspace.public_calls(self)
            if calls:
                from inspect import signature
                for name, call in calls.items():   # help() and inspect.signature(...).bind: the bound method's
                    call.__signature__ = signature(getattr(type(self), name).__get__(self))   # parameters, no self
            self.__dict__.update(calls)

    def mass_matrix(self, q, t: float = 0.0, *, formulation: str | None = None,
                    out: np.ndarray | None = None) -> np.ndarray:
        """M(q, t), nv × nv, kg·m² / kg: the pipeline by default, else the named formulation
        (`biobullet.dynamics.api.mass_matrix`); never NaN (SolverError). `out`: a float64 nv × nv array to write
        it into (returned; a control loop's call then allocates nothing), default a new array."""
        if formulation is None:
            result = self.workspace.mass_matrix(self, q, t, out)
            if result is not None:   # finite (the kernel checks)
                self._bind_public_calls()
                return result
        return self._written(out, _finite_result(
            "mass_matrix", self._api().mass_matrix(self, q, t, formulation=formulation), self.file, t))

    def bias_forces(self, q, v, t: float = 0.0, *, formulation: str | None = None,
                    out: np.ndarray | None = None) -> np.ndarray:
        """h(q, v, t) such that M q̈ + h = Q: Coriolis, centrifugal, gravity and joint-function γ terms. `out`: as
        for `mass_matrix` (nv)."""
        if formulation is None:
            result = self.workspace.bias_forces(self, q, v, t, out)
            if result is not None:
                self._bind_public_calls()
                return result
        return self._written(out, _finite_result(
            "bias_forces", self._api().bias_forces(self, q, v, t, formulation=formulation), self.file, t))

    def _written(self, out: np.ndarray | None, value: np.ndarray) -> np.ndarray:
        """`value`, or `value` copied into `out` (ModelError naming the argument when it cannot take it)."""
        if out is None:
            return value
        if not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == value.shape
                and out.flags.writeable):
            raise ModelError("argument 'out' is not a writable float64 array of the result's shape", file=self.file,
                             expected=f"shape {value.shape}")
        out[...] = value
        return out

    def generalized_forces(self, tau_joints, q, t: float = 0.0) -> np.ndarray:
        """Q = Gᵀ τ: joint-space forces/torques (n_tangent, tree order) projected onto generalized velocities."""
        _, gradient = self.coordinate_gradient(q, t)
        return gradient.T @ self.checked("tau_joints", tau_joints, self.n_tangent)

    def forward_dynamics(self, q, v, tau=None, t: float = 0.0, *, formulation: str | None = None,
                         out: np.ndarray | None = None) -> np.ndarray:
        """v̇ from M v̇ = Q − h. `tau`: generalized forces Q (nv), default zero. `out`: as for `mass_matrix` (nv)."""
        if formulation is None:
            result = self.workspace.forward(self, q, v, tau, t, out)
            if result is not None:   # (without `out`: the workspace's buffer, so a copy)
                self._bind_public_calls()
                return result if out is not None else result.copy()
        return self._written(out, _finite_result(
            "forward_dynamics", self._api().forward_dynamics(self, q, v, tau, t, formulation=formulation), self.file, t))

    @cached_property
    def velocity_slots(self) -> np.ndarray:
        """Index in the tree's tangent vector ẋ of every generalized velocity (base twist first)."""
        base = list(range(self._base_v))
        return readonly(np.array(base + [self._base_v + k for k in self.coordinate_map.independent], dtype=int))

    def integrate_configuration(self, q, v, dt: float) -> np.ndarray:
        """q ⊕ v·dt: each multi-DOF joint by the exponential of its body-frame velocity (as pin.integrate) —
        free joints (and the floating base) on SE(3), spherical joints on SO(3), planar joints on SE(2) —
        the 1-DOF coordinates by q += v dt. Also of the tree's (x, ẋ) (sizes n_config, n_tangent)."""
        from biobullet.spatial.rotations import exp_quaternion, quaternion_multiply, quaternion_to_matrix, skew
        # (sizes and finiteness checked: a short v was a NumPy broadcast error, a NaN in q, v or dt a NaN result)
        tree = self._tree_sized(q)
        q = self.checked("q", q, self.n_config if tree else self.nq).copy()
        v = self.checked("v", v, self.n_tangent if tree else self.nv)
        dt = time_argument(dt, "dt")
        self.check_rotations(q)
        for body in self._multi_dof_bodies:
            k, j = body.q_index, body.v_index
            if body.joint_type == "free":
                # exact SE(3) exponential of the body twist: p += R V(ω dt) v dt
                rotation = quaternion_to_matrix(q[k + 3:k + 7])
                phi = v[j + 3:j + 6] * dt
                angle = float(np.linalg.norm(phi))
                w = skew(phi)
                if angle < 1e-8:
                    left_jacobian = np.eye(3) + 0.5 * w + w @ w / 6.0
                else:
                    left_jacobian = (np.eye(3) + (1 - np.cos(angle)) / angle ** 2 * w
                                     + (angle - np.sin(angle)) / angle ** 3 * (w @ w))
                q[k:k + 3] += rotation @ left_jacobian @ v[j:j + 3] * dt
                q[k + 3:k + 7] = quaternion_multiply(q[k + 3:k + 7], exp_quaternion(phi))
                q[k + 3:k + 7] /= np.linalg.norm(q[k + 3:k + 7])
            elif body.joint_type == "spherical":
                q[k:k + 4] = quaternion_multiply(q[k:k + 4], exp_quaternion(v[j:j + 3] * dt))
                q[k:k + 4] /= np.linalg.norm(q[k:k + 4])
            else:  # planar: SE(2) exponential of (vx, vy, φ̇) dt in the child frame
                c, s = q[k + 2], q[k + 3]
                norm = np.hypot(c, s)
                c, s = c / norm, s / norm
                phi = v[j + 2] * dt
                if abs(phi) < 1e-8:
                    a, b = 1.0 - phi * phi / 6.0, 0.5 * phi
                else:
                    a, b = np.sin(phi) / phi, (1.0 - np.cos(phi)) / phi
                dx, dy = v[j] * dt, v[j + 1] * dt
                local = np.array([a * dx - b * dy, b * dx + a * dy])
                q[k] += c * local[0] - s * local[1]
                q[k + 1] += s * local[0] + c * local[1]
                q[k + 2], q[k + 3] = c * np.cos(phi) - s * np.sin(phi), s * np.cos(phi) + c * np.sin(phi)
        q[self._base_q:] += v[self._base_v:] * dt
        return q

    def _tree_sized(self, q) -> bool:
        """True where q has the tree's n_config entries and not nq: the constraint solvers and the joint-space
        formulations pass the tree's x, ẋ, which differ in size from q, v with joint functions or loops."""
        try:
            return self.n_config != self.nq and np.size(q) == self.n_config
        except ValueError:   # (a ragged nesting: `checked` names it)
            return False

    def configuration_rate(self, q, v) -> np.ndarray:
        """q̇ for velocity v (`model.tree.position_rate_py`, the pipeline's q̇ stage): quaternions q̇ = ½ q ⊗ (ω, 0),
        free-joint position ṗ = R v, planar (ẋ, ẏ) = R(φ) (vx, vy) and d(cos φ, sin φ)/dt = (−sin φ, cos φ) φ̇;
        1-DOF coordinates q̇ = v. Also of the tree's (x, ẋ) (sizes n_config, n_tangent), as the joint-space
        formulations integrate them."""
        if self._tree_sized(q):   # (a floating base with joint functions or loops under `multipliers` raised here)
            q, v = self.checked("q", q, self.n_config), self.checked("v", v, self.n_tangent)
        else:
            q, v = self._check_pair(q, v)
        q, v = np.ascontiguousarray(q), np.ascontiguousarray(v)   # sizes checked: the kernel indexes them
        out = np.empty(len(q))
        _position_rate(np.concatenate((q, v)), len(q), self._base_q, self._base_v, self._blocks, q, v, out)
        return out

    def normalize_configuration(self, q) -> np.ndarray:
        """A copy of q with every quaternion and planar (cos, sin) pair scaled to unit length; q may also be a
        stack of configurations (..., nq), each normalised (trajectory post-processing), or the tree's x (n_config).
        ModelError naming the joint for a quaternion that has no unit length (zero, or its squares overflow), and
        naming q for a wrong size."""
        q_in = q
        try:
            q = np.array(q, dtype=float)
        except (TypeError, ValueError):   # (a ragged nesting, text: `checked` names it)
            self.checked("q", q, self.nq)
            raise
        # the size only (a short q was normalised at the wrong entries); NaN stays NaN: the engine's state split
        # takes a runaway trial state through here, and its NaN rejects that step (a refusal would end the run)
        if q.ndim == 0 or q.shape[-1] not in (self.nq, self.n_config):
            raise ModelError(f"argument 'q' has shape {q.shape}", file=self.file,
                             expected=f"({self.nq},) or a stack (..., {self.nq}) of configurations")
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):   # (reported below)
            for body in self._multi_dof_bodies:
                k = body.q_index + (3 if body.joint_type == "free" else 2 if body.joint_type == "planar" else 0)
                n = 4 if body.joint_type != "planar" else 2
                q[..., k:k + n] /= np.linalg.norm(q[..., k:k + n], axis=-1, keepdims=True)
        if self._multi_dof_bodies and not _isfinite(float(np.sum(q))):   # (q finite: a block with no unit length)
            self.check_rotations(np.array(q_in, dtype=float).reshape(-1, self.nq)[
                int(np.argmax(~np.isfinite(q.reshape(-1, self.nq)).any(axis=1)))])
        return q

    def check_rotations(self, q: np.ndarray) -> None:
        """ModelError naming argument q and the joint whose quaternion (or planar cos, sin pair) in q is zero or so
        large that its squared norm overflows — no unit length to scale it to."""
        for body in self._multi_dof_bodies:
            k = body.q_index + (3 if body.joint_type == "free" else 2 if body.joint_type == "planar" else 0)
            block = q[k:k + (2 if body.joint_type == "planar" else 4)]
            with np.errstate(over="ignore", invalid="ignore"):
                square = float(block @ block)
            if not 0.0 < square < np.inf:
                joint = f"joint {body.joint!r}" if body.joint else "the floating base"
                names = ", ".join(self.coordinate_names[k:k + block.size])
                raise ModelError(f"the {'rotation' if body.joint_type == 'planar' else 'quaternion'} of {joint} "
                                 f"({names}) is {'zero' if square == 0.0 else 'too large or not finite'}: "
                                 f"{np.array2string(block, precision=3)}", file=self.file, argument="q",
                                 expected="a non-zero (cos, sin) pair (scaled to unit length), e.g. 1 0"
                                 if body.joint_type == "planar" else
                                 "a non-zero quaternion x y z w (scaled to unit length), e.g. 0 0 0 1")

    @cached_property
    def _blocks(self) -> np.ndarray:
        return multi_dof_blocks(self.bodies)

    @cached_property
    def _multi_dof_bodies(self) -> tuple[Body, ...]:
        return tuple(b for b in self.bodies if b.multi_dof)

    def neutral_configuration(self) -> np.ndarray:
        """Zero joint coordinates, identity quaternions, planar (cos, sin) = (1, 0)."""
        q = np.zeros(self.nq)
        for body in self._multi_dof_bodies:
            q[body.q_index + {"free": 6, "spherical": 3, "planar": 2}[body.joint_type]] = 1.0
        return q

    def initial_state(self, overrides: Mapping[str, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(q0, v0) from the model's `<initial>` elements, with NAME=VALUE overrides (NAME or NAME_dot)."""
        if overrides is not None and not (isinstance(overrides, Mapping)
                                          and all(isinstance(key, str) for key in overrides)):
            raise ModelError(f"is not a mapping of names to numbers (got {type(overrides).__name__})",
                             file=self.file, argument="overrides", expected="e.g. {'knee': 0.3, 'knee_dot': 0.0}")
        q, v = self.neutral_configuration(), np.zeros(self.nv)
        values = {i.joint: i for i in self.description.initial}
        for k, name in enumerate(self.coordinate_names):
            if name in values and values[name].position is not None:
                q[k] = values[name].position
        for k, name in enumerate(self.velocity_names):
            if name in values and values[name].velocity is not None:
                v[k] = values[name].velocity
        for key, value in (overrides or {}).items():
            value = number_argument(value, key)   # (one ModelError naming it: text such as "0.3", None, NaN)
            if key in self.coordinate_names:
                q[self.coordinate_names.index(key)] = value
            elif key.endswith("_dot") and key[:-4] in self.velocity_names:
                v[self.velocity_names.index(key[:-4])] = value
            else:
                names = (*self.coordinate_names, *(f"{name}_dot" for name in self.velocity_names))
                raise ModelError(f"cannot set {key!r}: not an independent coordinate or its _dot"
                                 f"{did_you_mean(key, names)}", file=self.file,
                                 expected="one of " + ", ".join(self.coordinate_names))
        return q, v

    def __reduce__(self):
        """pickle, `copy.copy` and `copy.deepcopy` (multiprocessing workers, dask, a second model for a second
        thread): the model rebuilt from its description by the builder that made it (`load_model`'s checks ran on
        this one), with the force elements added by `biobullet.forces.add_force_element`; derived data, workspace
        and compiled calls are the copy's own, built on its first use (a shallow copy sharing them would share one
        workspace, whose buffers every call writes)."""
        build = getattr(self._dynamics, "build_model", None)
        if build is None:
            raise TypeError(f"{self.file}: this model was built without its dynamics, so it cannot be rebuilt in "
                            "a copy or another process; make it with biobullet.load_model(path)")
        return rebuilt_model, (build, self.description, tuple(self.derived.get(ADDED_FORCES, ())))

    @cached_property
    def total_mass(self) -> float:
        return float(sum(body.mass for body in self.bodies))

    def __repr__(self) -> str:
        return (f"Model({self.name!r}, bodies={len(self.bodies)}, joints={self.n_joints}, nq={self.nq}, "
                f"nv={self.nv}, floating_base={self.floating_base})")

    def _repr_html_(self) -> str:
        """Jupyter's view: name, file, size and what the `<biobullet>` block adds, as a small table."""
        from html import escape
        d = self.description
        counts = {tag: len(d.elements_of(tag)) for tag in ("loop", "contact", "flexible")}
        forces = sum(1 for e in d.elements if e.tag not in counts)
        rows = [("file", d.file), ("base", d.base_type), ("bodies / joints", f"{len(self.bodies)} / {self.n_joints}"),
                ("coordinates (nq, nv)", f"{', '.join(self.coordinate_names) or '-'} ({self.nq}, {self.nv})"),
                ("joint functions", str(len(d.joint_functions))), ("loops", str(counts["loop"])),
                ("force elements (file)", str(forces)), ("contacts", str(counts["contact"])),
                ("flexible links", str(counts["flexible"])),
                ("URDF joint limits", "joint stops" if d.joint_limits else "ignored"),
                ("total mass", f"{self.total_mass:.6g} kg"), ("gravity", f"{tuple(self.gravity)} m/s²")]
        body = "".join(f"<tr><th style='text-align:left'>{escape(k)}</th><td style='text-align:left'>{escape(v)}"
                       "</td></tr>" for k, v in rows)
        return f"<b>biobullet Model {escape(self.name)!s}</b><table>{body}</table>"


_FLOAT = np.dtype(float)
#: `Model.derived`'s key of the force elements added in Python (`biobullet.forces.add_force_element`): the one
#: entry there that is not derived from the file, so a copy of the model carries it
ADDED_FORCES = "forces.added"


def rebuilt_model(build: Callable[[ModelDescription], Model], description: ModelDescription,
                  added_forces: tuple = ()) -> Model:
    """`Model.__reduce__`'s counterpart: the model `build` makes of `description`, with `added_forces`."""
    model = build(description)
    if added_forces:
        model.derived[ADDED_FORCES] = list(added_forces)
    return model


def _finite_result(name: str, value: np.ndarray, file: str, t: float) -> np.ndarray:
    """`value` if every entry is finite; else a SolverError (never NaN out of the public API)."""
    with np.errstate(all="ignore"):
        total = float(np.sum(value))
    if _isfinite(total):
        return value
    raise SolverError(f"{file}: {name} is not finite at t = {float(t):.9g} s (the model's magnitudes overflow "
                      "double precision, e.g. a coordinate of 1e200 m, or the state is out of range)")


def _block_names(bodies) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Names of the leading block of q and v: base_* for the floating base, JOINT_* for multi-DOF joints."""
    suffixes = {"free": (("x", "y", "z", "qx", "qy", "qz", "qw"), ("vx", "vy", "vz", "wx", "wy", "wz")),
                "spherical": (("qx", "qy", "qz", "qw"), ("wx", "wy", "wz")),
                "planar": (("x", "y", "cos", "sin"), ("vx", "vy", "w"))}
    names_q: list[str] = []
    names_v: list[str] = []
    for body in sorted((b for b in bodies if b.multi_dof), key=lambda b: b.q_index):
        if body.joint == "":
            names_q += BASE_POSITION_NAMES
            names_v += BASE_VELOCITY_NAMES
            continue
        sq, sv = suffixes[body.joint_type]
        names_q += [f"{body.joint}_{x}" for x in sq]
        names_v += [f"{body.joint}_{x}" for x in sv]
    return tuple(names_q), tuple(names_v)


def _dependency_order(joint_names, slot: Mapping[str, int], independent: list[int], dependent: Mapping,
                      loop_resolver, description: ModelDescription) -> list:
    """The joint functions (and the loop resolver, as early as its known joints allow) in an order where every
    function comes after its inputs: Kahn's topological sort, linear in the number of functions and inputs (a
    pass over all pending functions per resolved one was quadratic: a 1,500-long `<mimic>` chain took seconds)."""
    order: list = []
    done = set(independent)
    waiting: dict[int, list[str]] = {}   # slot → the functions still waiting for it
    missing: dict[str, int] = {}
    for joint, f in dependent.items():
        needs = {slot[i] for i in f.function.inputs} - done
        missing[joint] = len(needs)
        for need in needs:
            waiting.setdefault(need, []).append(joint)
    ready = deque(joint for joint in dependent if missing[joint] == 0)
    resolver_needs = None if loop_resolver is None else set(loop_resolver.known) - done

    def finish(k: int) -> None:
        if k in done:
            return
        done.add(k)
        if resolver_needs is not None:
            resolver_needs.discard(k)
        for joint in waiting.pop(k, ()):
            missing[joint] -= 1
            if missing[joint] == 0:
                ready.append(joint)

    placed = set()
    while True:
        if loop_resolver is not None and not resolver_needs:
            order.append(loop_resolver)
            for k in loop_resolver.outputs:
                finish(k)
            loop_resolver = None
            continue
        if not ready:
            break
        joint = ready.popleft()
        f = dependent[joint]
        order.append(ExplicitFunction(slot[joint], tuple(slot[i] for i in f.function.inputs), f.function, f.source))
        placed.add(joint)
        finish(slot[joint])
    if len(placed) < len(dependent) or loop_resolver is not None:
        pending = sorted(j for j in dependent if j not in placed) + (
            [] if loop_resolver is None else [joint_names[k] for k in loop_resolver.known if k not in done])
        raise ModelError("joint functions and loop closures depend on joints that are neither independent "
                         "nor computed: " + ", ".join(pending), file=description.file,
                         element="<joint_function>" if loop_resolver is None else "<loop>",
                         expected="functions of loop-dependent joints must not drive joints of the loops")
    return order
