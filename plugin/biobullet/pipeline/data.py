"""The data workspace of a compiled model: every buffer the pipeline writes, and what a run caches.

`Data(compiled)` (or `model.data()`) owns
- `arrays` (`DataArrays`, a NamedTuple the kernels take as one structured argument): the joint state x, ẋ, G, γ;
  the applied joint forces τ; the solve's right-hand side and Cholesky factor; (input power, dissipated power) of
  the force stage; CRBA + RNEA's work arrays with M and h, and the projected solve's Gᵀ M G and Gᵀ h (each
  allocation a kernel saves is ≈ 0.035 µs of a call of 1–3 µs);
- `entries`: the compiled kernels' direct entries for these argument types (`core.jit.direct_entry`: a call then
  skips numba's argument matching, ≈ 2 µs for the structured arguments); the forward kernel's entry takes the
  compiled model's and the arrays' fields as one flat record (`core.jit_pair.PairRef`, `core.jit_pair.pack_record`),
  built with it and passed by its address; `public_calls` gives the Model's three calls as closures over it;
- the state the public calls' joint-state stage kept (`arrays.positions`: q's values, t, a valid flag —
  `pipeline.stages.joint_state_stage_py`): the mass matrix at the same values reads the last call's x and G;
- the loop stage's warm starts (`constraints.newton_kernel.LoopWarm`, `arrays.loop_warm`): per loop resolver
  the last solution, its sensitivity, condition and curvature — a cache for speed and branch continuity, per
  workspace (a run, a bridge, the model's own calls each continue their own branch) — and the Newton solve's work
  arrays (`loop_work`), which the kernels read with the loop table's constants as one flat record
  (`kernel_arrays().loop`, `constraints.newton_kernel.loop_record`: passed from kernel to kernel as one pointer).
  Before a resolver's first solve, or where the stage declined, the generic resolvers solve (continuation, clear
  errors) in this workspace's warm starts (`bind_loops`): one record, no copies. A record's first solve continues
  from the model's declared solution (`LoopResolver.declared`), not from what other workspaces solved, and is the
  record's anchor.
One Data per concurrent user (a Model's convenience methods use `model.workspace`; a run or a bridge makes its
own): the kernels write into it.
"""
from __future__ import annotations

import functools
from sys import getrefcount
from typing import Any, NamedTuple

import numpy as np

from biobullet.algorithms.compiled_kernels import tree_work
from biobullet.constraints.newton_kernel import (LoopWarm, loop_namespace, loop_parts, loop_record, loop_warm,
                                                 newton_work)
from biobullet.core import jit
from biobullet.core.arguments import first_flag, time_argument
from biobullet.pipeline.compiled_model import CALLBACK_STATE, CompiledModel, empty_loop_table
from biobullet.pipeline.stages import ACCELERATION, BIAS, MASS

_FLOAT = np.dtype(float)
_NDARRAY = np.ndarray
_empty = np.empty
_NO_MATRIX = np.zeros((0, 0))


def _vector(value, size: int) -> np.ndarray | None:
    """`value` as a float64 vector of `size` entries — the kernel entry's argument type —, or None (the generic
    path then reports what is wrong with it)."""
    try:   # (any shape of `size` entries, as `Model.checked` takes it: a column or row vector too)
        array = np.asarray(value)
    except (TypeError, ValueError):
        return None
    if array.dtype.kind not in "iuf":   # text, None, complex, a bool array: `Model.checked` reports it
        return None
    if type(value) is not _NDARRAY and first_flag(value) is not None:   # [True, 0.5] reads as [1.0, 0.5]
        return None
    array = array.astype(float).reshape(-1)
    return array if array.shape == (size,) else None


def _is_output(out, shape: tuple) -> bool:
    """Whether `out` is what the entry writes into: a writable, aligned, C-contiguous float64 array of `shape`
    (`flags.carray`: the three flags in one lookup)."""
    return type(out) is _NDARRAY and out.dtype is _FLOAT and out.shape == shape and out.flags.carray


def _strided(vector: np.ndarray) -> np.ndarray:
    """A copy of `vector` with a stride of two entries: typed by numba as an array of any layout ('A'), the type
    the entry is built for."""
    copy = np.empty(2 * vector.shape[0])[::2]
    copy[:] = vector
    return copy


class DataArrays(NamedTuple):
    """The pipeline's buffers (module docstring); sizes from the compiled model."""

    x: np.ndarray            # (n_config,) tree configuration
    xd: np.ndarray           # (n_tangent,) tree velocity
    gradient: np.ndarray     # (n_tangent, nv) G: ẋ = G v
    gamma: np.ndarray        # (n_tangent,) γ: ẍ = G v̇ + γ
    tau: np.ndarray          # (n_tangent,) applied joint-space forces
    rhs: np.ndarray          # (nv,) Q (= Gᵀ τ in the right-hand side), then Q − h_r
    low: np.ndarray          # (nv, nv) Cholesky factor
    power: np.ndarray        # (2,) input and dissipated power of the force stage
    reduced_mass: np.ndarray  # (nv, nv) Gᵀ M G of a projected solve (`compiled_kernels._project_upper_into_py`)
    reduced_bias: np.ndarray  # (nv,) Gᵀ h
    project_work: np.ndarray  # (n_tangent, nv) M G
    project_columns: np.ndarray  # (nv,) int64: the non-zero columns of a row of G
    tree_work: tuple         # CRBA + RNEA's work arrays, M and h (`algorithms.compiled_kernels.tree_work`)
    positions: np.ndarray    # (nq + 2,) the state the joint-state stage kept: (q, t, 1.0), or 0.0 last: none
    #                          (`pipeline.stages.joint_state_stage_py`)
    loop_warm: LoopWarm      # the loop stage's warm starts
    loop: Any                # the loop table, warm starts and work arrays as one record: here a namespace
    #                          (`loop_namespace`), compiled in `Data.kernel_arrays` (`loop_record`)


class Data:
    """The workspace of one compiled model (module docstring)."""

    def __init__(self, compiled: CompiledModel) -> None:
        nv, n_tangent, loops = compiled.nv, compiled.n_tangent, compiled.loops
        self.compiled = compiled
        warm = loop_warm(loops.known_start, loops.dep_start, loops.sensitivity_start)
        #: the loop Newton solve's work arrays (`constraints.newton_kernel.NewtonWork`)
        self.loop_work = newton_work(loops.meta.shape[0], int(np.max(np.diff(loops.dep_start), initial=0)),
                                     compiled.n_config - loops.view_start, loops.dep_start.shape[0] - 1,
                                     int(np.max(np.diff(loops.known_start), initial=0)))
        # (the compiled record borrows the arrays of its parts: this Data keeps them alive)
        self._loop_parts = loop_parts(loops, warm, self.loop_work)
        self.arrays = DataArrays(np.zeros(compiled.n_config), np.zeros(n_tangent), np.zeros((n_tangent, nv)),
                                 np.zeros(n_tangent), np.zeros(n_tangent), np.zeros(nv), np.zeros((nv, nv)),
                                 np.zeros(2), np.zeros((nv, nv)), np.zeros(nv), np.zeros((n_tangent, nv)),
                                 np.zeros(nv, dtype=np.int64),
                                 tree_work(compiled.tree_meta.shape[0], n_tangent, compiled.n_config),
                                 np.zeros(compiled.nq + 2), warm, loop_namespace(self._loop_parts))
        self.acceleration = np.zeros(nv)   # `forward`'s v̇ when no output array is given
        self.zero_velocity = np.zeros(nv)   # v of the mass-matrix call; Q of a call without forces
        self.entries: dict[str, Any] = {}
        self._forward = None   # the forward kernel's direct entry for these argument types
        # the compiled model's and the arrays' fields in one record (`core.jit_pair.pack_record`), borrowing their arrays
        # (no reference counts in the kernels): self.compiled and self.arrays keep them alive
        self._record = None
        self._workspace = None   # its address, as the entry takes it (the record above keeps it valid)
        self._callback = compiled.state_stage == CALLBACK_STATE
        self._v_shape, self._mass_shape = (nv,), (nv, nv)
        self._loops = compiled.loops.stages.shape[0] > 0   # a loop stage, whose warm starts the callback stage seeds
        self._direct = False   # True once the entry is built, for a model with neither a callback stage nor loops:
        # the public calls then go to the entry without `_call`
        self._seeded = False   # the warm starts continue the last call's state (False: the generic resolvers solve first)
        self._identity = np.eye(n_tangent, nv)
        self._compiled_arrays: DataArrays | None = None   # `kernel_arrays` for compiled kernels
        self._no_q = np.zeros(compiled.nq)

    def kernel_arrays(self) -> DataArrays:
        """`arrays` as the kernels take them now: `arrays` itself, whose loop record is a namespace of the loop
        arrays (`constraints.newton_kernel.loop_namespace`), where they run uncompiled (numba off, or inside
        `core.jit.uncompiled()`: a run's uncompiled start, the engine's checks); compiled, `arrays` with the
        compiled record of the same arrays (`loop_record`, built on the first compiled use: a run that never
        compiles — the CLI's cold start — does not compile its packing kernel either)."""
        if not jit.compiling():
            return self.arrays
        if self._compiled_arrays is None:
            self._compiled_arrays = self.arrays._replace(loop=loop_record(self._loop_parts))
        return self._compiled_arrays

    def probe_arrays(self) -> DataArrays:
        """`kernel_arrays` for a look-up of the kernels' argument types only (`core.jit.is_cached`): compiled and
        not built yet, the loop record is a stand-in of its numba type (`core.jit_pair.type_stand_in`), so that
        asking whether a run's kernel is cached compiles nothing (the CLI's cold start then runs by Python)."""
        if not jit.compiling() or self._compiled_arrays is not None:
            return self.kernel_arrays()
        from biobullet.core.jit_pair import type_stand_in
        return self.arrays._replace(loop=type_stand_in(*self._loop_parts))

    def bind_loops(self, model) -> None:
        """The model's loop resolvers read and write this workspace's warm starts: the callback stage continues from
        the branch the loop stage is on, and the stage from the callback stage's solution."""
        from biobullet.constraints.implicit import loop_resolvers
        for k, resolver in enumerate(loop_resolvers(model)):
            resolver.use_warm(self.arrays.loop_warm, k)

    def start_loops(self, model, q, v, t: float) -> bool:
        """No warm start yet: the generic resolvers solve this state into this workspace's record (a first solve
        continued from the model's declared solution, clear errors); True when every loop resolver's warm start is
        set."""
        self.bind_loops(model)
        try:
            model.joint_state_view(q, v, t)
        except Exception:   # (the callback stage the caller falls back to reports it)
            return False
        return bool(self.arrays.loop_warm.valid.all())

    def _entry(self, q, v, tau, t: float, want: int, out_vector, out_matrix):
        """The public calls' direct entry (`pipeline.kernels.forward_entry`: compiled, or loaded from numba's cache, on
        the first call). It is
        built for q, v, τ of any layout (strided copies of them in the first call), so a call checks only their
        type, dtype and shape."""
        if self._forward is None:
            from biobullet.core.jit_pair import pack_record, record_reader
            from biobullet.pipeline.kernels import forward_entry, has_loops
            arrays = self.kernel_arrays()
            self._record, self._workspace = pack_record(self.compiled, arrays, borrowed=True)
            self._forward = self.entries["forward"] = forward_entry(
                record_reader(self.compiled, arrays), has_loops(self.compiled), self._workspace, _strided(q),
                _strided(v), _strided(tau), t, want, out_vector, out_matrix)
            self._direct = not (self._callback or self._loops)
        return self._forward

    def _callback_state(self, model, q, v, t: float) -> bool:
        """The callback stage: x, ẋ, G, γ from `model.joint_state_view` into the arrays (False: it raised, the
        callback stage then reports the same error)."""
        try:
            x, xd, gradient, gamma = model.joint_state_view(q, v, t)
        except Exception:
            return False
        arrays = self.arrays
        arrays.x[:] = x
        arrays.xd[:] = xd
        arrays.gradient[:, :] = np.eye(model.n_tangent, model.nv) if gradient is None else gradient
        arrays.gamma[:] = 0.0 if gamma is None else gamma
        return True

    def forward_at_state(self, model, state: tuple, tau: np.ndarray) -> np.ndarray | None:
        """v̇ of generalized forces `tau` (nv) at a joint state (x, ẋ, G, γ) the caller's callback stage computed
        (`Model.joint_state_view`: G None = identity, γ None = zero): the pipeline's M, h and solve, into a new
        array; None: declined. Only on a `state_workspace`."""
        x, xd, gradient, gamma = state
        arrays = self.arrays
        arrays.x[:] = x
        arrays.xd[:] = xd
        if gradient is None:
            arrays.gradient[:, :] = self._identity
        else:
            arrays.gradient[:, :] = gradient
        arrays.gamma[:] = 0.0 if gamma is None else gamma
        tau = _vector(tau, self.compiled.nv)
        if tau is None:
            return None
        out = np.empty(self.compiled.nv)
        args = (self._no_q, self.zero_velocity, tau, 0.0, ACCELERATION, out, _NO_MATRIX)
        entry = self._forward or self._entry(*args)
        return out if entry(self._workspace, *args) == 0 else None

    def _call(self, model, q, v, tau, t: float, want: int, out_vector, out_matrix) -> bool:
        """The callback stage if the model needs it, then one call of the forward kernel's direct entry; False:
        declined. (q, v, τ float64 vectors of their sizes, t a float, the outputs C-contiguous float64 arrays of
        theirs: the entry converts but does not check.)"""
        if self._callback and not self._callback_state(model, q, v, t):
            return False
        seeded_here = False
        if self._loops and not self._seeded:
            # the generic resolvers solve this state first even where every warm start is valid: after a decline
            # (a jump) the warm starts are still those of the last state, from which the stage declines again
            self._seeded = seeded_here = self.start_loops(model, q, v, t)
            if not self._seeded:
                return False   # no solution to start from: the callback stage solves (the next call starts from it)
        entry = self._forward or self._entry(q, v, tau, t, want, out_vector, out_matrix)
        if entry(self._workspace, q, v, tau, t, want, out_vector, out_matrix) == 0:
            return True
        if not self._loops:
            return False
        # the loop stage declines where the generic resolver must decide (an input jump farther from the warm start
        # than from the declared initial solution, no convergence, an ill-conditioned loop), the state restored:
        # the generic resolvers solve this state (continuation) into the warm starts and the stage runs again from
        # their solution — in this call: declined here, a call without a fallback ("reduced", `pipeline.forward`)
        # refused a regular state that a fresh workspace (seeded at it) evaluates
        self.bind_loops(model)
        self._seeded = False
        # what the stage kept — its last solution's factor, its last residual's placements — is not trusted after
        # a decline: its next run solves and places again (a generic solve that lands on the kept solution bit for
        # bit would otherwise take them, and decline again)
        work = self.loop_work
        work.fixed[:, 0] = 0.0
        work.placed[:] = np.nan
        if not seeded_here and self.start_loops(model, q, v, t):
            if entry(self._workspace, q, v, tau, t, want, out_vector, out_matrix) == 0:
                self._seeded = True
                return True
            self.bind_loops(model)
        return False

    def _public(self, model, q, v, tau, t, want: int, out) -> np.ndarray | None:
        """One call of `forward`, `mass_matrix` or `bias_forces` (`want`): the result into `out` (a new array when
        None), returned; None: declined. q, v, τ that are already 1-D float64 arrays go to the kernel as they are
        (any layout, read-only too: the kernel only reads them), and the kernel checks their sizes (a wrong one
        declines); type, dtype and dimension are checked here, because the entry reads an array of another
        dimension or an 8-byte integer type as if it were its own. Anything else is converted once (`_vector`)."""
        if not (type(q) is _NDARRAY and type(v) is _NDARRAY and type(tau) is _NDARRAY and q.dtype is _FLOAT
                and v.dtype is _FLOAT and tau.dtype is _FLOAT and q.ndim == 1 and v.ndim == 1 and tau.ndim == 1
                and type(t) is float and t - t == 0.0):   # (t − t: NaN for a NaN or ±inf t; time_argument names it)
            nv = self.compiled.nv
            q, v, tau, t = _vector(q, self.compiled.nq), _vector(v, nv), _vector(tau, nv), time_argument(t)
            if q is None or v is None or tau is None:
                return None
        shape = self._mass_shape if want == MASS else self._v_shape
        if out is None:
            out = _empty(shape)
        elif not _is_output(out, shape):
            return None
        out_vector, out_matrix = (self.zero_velocity, out) if want == MASS else (out, _NO_MATRIX)
        if self._direct:   # (decided when the entry was built: no callback stage, no loop warm starts)
            return out if self._forward(self._workspace, q, v, tau, t, want, out_vector, out_matrix) == 0 else None
        return out if self._call(model, q, v, tau, t, want, out_vector, out_matrix) else None

    # The three calls of `pipeline.forward` and the Model's class methods (the Model's own calls go through
    # `public_calls` after the first).
    def forward(self, model, q, v, tau=None, t: float = 0.0, out: np.ndarray | None = None) -> np.ndarray | None:
        """v̇ of generalized forces `tau` (nv, default zero) into `out` (default: `acceleration`), returned; None:
        declined."""
        return self._public(model, q, v, self.zero_velocity if tau is None else tau, t, ACCELERATION,
                            self.acceleration if out is None else out)

    def mass_matrix(self, model, q, t: float = 0.0, out: np.ndarray | None = None) -> np.ndarray | None:
        """M_r(q, t) into `out` (nv × nv; a new array by default), returned; None: declined."""
        return self._public(model, q, self.zero_velocity, self.zero_velocity, t, MASS, out)

    def bias_forces(self, model, q, v, t: float = 0.0, out: np.ndarray | None = None) -> np.ndarray | None:
        """h_r(q, v, t) into `out` (nv; a new array by default), returned; None: declined."""
        return self._public(model, q, v, self.zero_velocity, t, BIAS, out)

    def public_calls(self, model) -> dict[str, Any]:
        """`model`'s three public calls (`Model.mass_matrix`, `bias_forces`, `forward_dynamics`: same signatures,
        results and errors) as closures over this workspace's entry, which the model sets as its own attributes
        after its first pipeline call: a control loop's call is then one Python frame and the entry (each
        method layer and attribute read cost ≈ 0.05–0.1 µs of a small tree's ≈ 1 µs call). Arguments the entry
        does not take as they are (a list, another dtype or dimension, a NumPy scalar t, a formulation, an `out`
        that is not a C-contiguous writable float64 array of the result's shape) and a declined call go to the
        model's class methods, which convert or report. A model with loops takes the same closures: its entry
        declines where a loop resolver has no warm start or the loop stage declines (`_loop_newton_py`: θ_dep
        restored), and the class method then runs `_call`, which seeds the warm starts or hands the state to the
        callback stage. {} when the entry is not built or the model needs the callback stage before every call.

        Results without `out`: a new array, or the one this call returned two calls before when nothing holds it
        any more (`sys.getrefcount`: only this closure's list, its local name and the count's own argument) —
        allocating a result array costs ≈ 0.2 µs beside the entry (measured: the entry with a fresh array against
        the same array again), a fifth of a small tree's call; a control loop that keeps each step's result until
        the next (`M = model.mass_matrix(q)`) gets two arrays in turn. An array the caller still holds is never
        written."""
        if self._forward is None or self._callback:
            return {}
        entry, workspace, zero = self._forward, self._workspace, self.zero_velocity
        mass_shape, v_shape = self._mass_shape, self._v_shape
        methods = type(model)
        # per call: [the result of two calls before, the last result]
        masses, biases, accelerations = ([_empty(shape), _empty(shape)] for shape in (mass_shape, v_shape, v_shape))

        def mass_matrix(q, t: float = 0.0, *, formulation: str | None = None, out: np.ndarray | None = None):
            # (a NaN or ±inf t: the entry declines it, the class method names it)
            if (formulation is None and type(q) is _NDARRAY and q.dtype is _FLOAT and q.ndim == 1
                    and type(t) is float):
                if out is None:
                    result = masses[0]
                    if getrefcount(result) > 3:   # still held by the caller
                        result = _empty(mass_shape)
                    masses[0], masses[1] = masses[1], result
                else:
                    result = out if _is_output(out, mass_shape) else None
                if result is not None and entry(workspace, q, zero, zero, t, MASS, zero, result) == 0:
                    return result
            return methods.mass_matrix(model, q, t, formulation=formulation, out=out)

        def bias_forces(q, v, t: float = 0.0, *, formulation: str | None = None, out: np.ndarray | None = None):
            if (formulation is None and type(q) is _NDARRAY and type(v) is _NDARRAY and q.dtype is _FLOAT
                    and v.dtype is _FLOAT and q.ndim == 1 and v.ndim == 1 and type(t) is float):
                if out is None:
                    result = biases[0]
                    if getrefcount(result) > 3:
                        result = _empty(v_shape)
                    biases[0], biases[1] = biases[1], result
                else:
                    result = out if _is_output(out, v_shape) else None
                if result is not None and entry(workspace, q, v, zero, t, BIAS, result, _NO_MATRIX) == 0:
                    return result
            return methods.bias_forces(model, q, v, t, formulation=formulation, out=out)

        def forward_dynamics(q, v, tau=None, t: float = 0.0, *, formulation: str | None = None,
                             out: np.ndarray | None = None):
            force = zero if tau is None else tau
            if (formulation is None and type(q) is _NDARRAY and type(v) is _NDARRAY and type(force) is _NDARRAY
                    and q.dtype is _FLOAT and v.dtype is _FLOAT and force.dtype is _FLOAT and q.ndim == 1
                    and v.ndim == 1 and force.ndim == 1 and type(t) is float):
                if out is None:
                    result = accelerations[0]
                    if getrefcount(result) > 3:
                        result = _empty(v_shape)
                    accelerations[0], accelerations[1] = accelerations[1], result
                else:
                    result = out if _is_output(out, v_shape) else None
                if result is not None and entry(workspace, q, v, force, t, ACCELERATION, result, _NO_MATRIX) == 0:
                    return result
            return methods.forward_dynamics(model, q, v, tau, t, formulation=formulation, out=out)

        calls = {"mass_matrix": mass_matrix, "bias_forces": bias_forces, "forward_dynamics": forward_dynamics}
        for name, call in calls.items():
            functools.update_wrapper(call, getattr(methods, name))
            # the entry reads the record at `workspace` and the arrays it borrows: this Data keeps both alive as
            # long as a closure lives (a model whose `workspace` was deleted still holds its closures)
            call.workspace_data = self
        return calls


def state_workspace(model) -> Data:
    """A workspace whose pipeline takes the joint state from its caller (`Data.forward_at_state`: the callback
    stage), for the model's compiled arrays: the joint-state stage is off (CALLBACK_STATE, no loop or
    joint-function rows), so the forward kernel is the plain variant every model shares."""
    compiled = model.compiled
    return Data(compiled._replace(state_stage=CALLBACK_STATE, jets_table=compiled.jets_table[:0],
                                  loops=empty_loop_table(len(model.bodies), compiled.n_tangent)))
