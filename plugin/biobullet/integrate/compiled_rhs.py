"""The engine's compiled right-hand side of a "reduced" run: `CompiledReducedRHS`, one call of the pipeline's
right-hand-side kernel (`pipeline.stages.rhs_py`: joint state (explicit joint functions, the loop stage) → forces →
M, h → solve → q̇) on the model's compiled arrays, a Data of its own and the run's packed force rows
(`pipeline.force_rows`), for every model whose coordinate map the pipeline's joint-state stage evaluates (identity,
affine, explicit joint functions, loop resolvers; fixed or floating base, spherical, planar and inner free joints)
with built-in elements, contacts with compiled laws, third-party elements' kernels and muscles: one compiled kernel
for every explicit map and one for every loop map (`pipeline.kernels.rhs_kernel`, compiled once per installation). A model with loops gets the loop
stage's warm starts managed around the call and the rows of error_control="joints" (`rhs_py`'s shadow rows: none for
an explicit map).

The loop stage (`constraints.newton_kernel._loop_newton_py`) starts from the Data's warm start (`LoopWarm`), which a
call moves to its solution. A call returns None — the engine's callback stage (`System._rhs`) then decides,
continues, backtracks or raises its own clear error — for a non-finite state or result (an expression outside its
domain included), a zero-length spring, M_r not positive definite, or where the loop stage declines (large input
change, Newton not contracting at once, ill-conditioned loop). Before that the resolvers are bound to the Data's
warm starts (`Data.bind_loops`: the callback stage continues on the same branch and leaves its solution there for
the next call). An explicit integrator's trial stages can lie far apart: a declined call is first tried once more
from the nearest of the last solutions the stage reached (`_recent`).

`CompiledReducedRHS.tree_states` computes the loop-dependent joints of a whole trajectory's samples in one
compiled pass per loop resolver (`_loop_positions_py`: the loop Newton solve `newton_kernel._newton_solve_py` on
positions from a second-order prediction off the previous sample, rates from its factor Φ_dep⁻¹; about two
kinematics passes per sample, in the Data's Newton work arrays; trajectory output only), handing a sample it cannot
take to the callback stage and resuming after it, stage by stage: explicit functions are evaluated over all samples
at once (`explicit_states_batch`) and enter the following loops' passes as given joints. The kernel is also stepped
by the compiled DOP853 stepper (`integrate/compiled_stepper.py`), which calls it by its address.

Cold start (`CompiledReducedRHS.python_start`, `simulate(python_start_seconds=)`): while numba has no compiled
kernel for a run's right-hand side, the run goes by the kernels' uncompiled forms (`core.jit.uncompiled`) until
its calls have used that much CPU and it would not end by Python soon (`PYTHON_FINISH_FACTOR`), then compiles.
"""
from __future__ import annotations

import hashlib
import time
from contextlib import contextmanager

import numpy as np

from biobullet.constraints.newton_kernel import CONVERGED
from biobullet.core import jit
from biobullet.model.joint_jets import jets_kernel
from biobullet.pipeline.compiled_model import COMPILED_STATE, TREE_JOINTS
from biobullet.pipeline.force_rows import NO_PLUGINS, pack_force_rows


def plugin_elements(system, builtins) -> tuple[list, tuple | None]:
    """(the run's elements that are not of the `builtins` types, their packed kernels): the packed kernels are
    `forces.compiled.pack_plugins`'s tuple, `NO_PLUGINS` without such elements, or None when one of them has no
    compiled kernel (the run then keeps the callback stage)."""
    from biobullet.forces.compiled import pack_plugins
    others = [e for e in system.elements if type(e) not in builtins]
    if not others:
        return others, NO_PLUGINS
    return others, pack_plugins(system.model, others)


# the compiled callees, bound when the kernels below compile
_NEWTON = _NEWTON_SOLVE = _SAMPLE_JETS = None

#: a run past its uncompiled start's `python_start_seconds` goes on by Python while its pace says it would end within
#: this many times those seconds in all (the CLI: 12 s of CPU; compiling the right-hand side takes ≈ 12–50 s)
PYTHON_FINISH_FACTOR = 4.0

#: the most solutions kept for a retry (an explicit step has up to 12 stages: more than one step's)
RECENT = 16


#: largest change of an independent coordinate between samples, and of the dependent joints from their
#: prediction, in the output pass
MAX_SAMPLE_STEP = 0.05


def _loop_positions_py(loop, k, theta_all, rate_all, first, guess):
    """Loop resolver k's dependent joints at samples first … n−1 into θ and θ̇ (theta_all, rate_all: (n, the loop
    kernels' joint layout), the known joints set) by the loop Newton solve (`newton_kernel._newton_solve_py`, in
    the Data's loop record `loop`, `newton_kernel.loop_record`) on the loop rows (positions), then θ̇_dep = −Φ_dep⁻¹ Φ_known θ̇_known — trajectory output only: no G, γ or
    curvature. Returns the first sample not done (no convergence, an ill-conditioned Φ_dep, a large step between
    samples or a solution far from its prediction): the caller takes over.

    Each sample starts from the previous one's solution moved along its sensitivity S = −Φ_dep⁻¹ Φ_known to
    second order (θ_dep ≈ θ_dep' + S Δθ_known + the change of S over the previous step; `guess` for the first
    sample); the solve's factor Φ_dep⁻¹ at the solution gives S and the rates."""
    n = theta_all.shape[0]
    d0, d1 = loop.dep_start[k], loop.dep_start[k + 1]
    k0, k1 = loop.known_start[k], loop.known_start[k + 1]
    dep, known = loop.dep[d0:d1], loop.known[k0:k1]
    nd, nk = d1 - d0, k1 - k0
    condition_limit = loop.condition_limit
    current = guess.copy()
    sensitivity = np.zeros((nd, nk))       # −Φ_dep⁻¹ Φ_known at the previous sample's solution
    sensitivity_old = np.zeros((nd, nk))   # … and at the one before
    jk = np.empty((nd, nk))
    for s in range(first, n):
        theta = theta_all[s]
        rate = rate_all[s]
        if s > first:
            jump = 0.0
            for c in range(nk):
                jump = max(jump, abs(theta[known[c]] - theta_all[s - 1, known[c]]))
            if jump > MAX_SAMPLE_STEP:   # far from the last solution: the branch-safe callback stage decides
                return s
            # second order along the path: S changed by S' − S'' over the previous known step δ; this step
            # Δ ≈ α δ, so θ_dep ≈ θ_dep' + S' Δ + ½ α (S' − S'') Δ (exact to O(Δ³) for one known coordinate)
            along = 0.0
            if s > first + 1:
                dd, dp = 0.0, 0.0
                for c in range(nk):
                    d_prev = theta_all[s - 1, known[c]] - theta_all[s - 2, known[c]]
                    dd += d_prev * d_prev
                    dp += d_prev * (theta[known[c]] - theta_all[s - 1, known[c]])
                if dd > 0.0 and abs(dp) <= 4.0 * dd:
                    along = 0.5 * dp / dd
            for i in range(nd):
                move = 0.0
                for c in range(nk):
                    delta = theta[known[c]] - theta_all[s - 1, known[c]]
                    move += (sensitivity[i, c] + along * (sensitivity[i, c] - sensitivity_old[i, c])) * delta
                current[i] += move
        status, _, _, jac, inverse, condition = _NEWTON_SOLVE(loop, k, theta, current, -1.0, -1.0)
        if status != CONVERGED or not condition < condition_limit:
            return s
        for i in range(nd):   # far from the prediction: maybe another branch, the callback stage decides
            if not abs(theta[dep[i]] - current[i]) <= MAX_SAMPLE_STEP:
                return s
        for i in range(nd):
            for c in range(nk):
                jk[i, c] = jac[i, known[c]]
        for i in range(nd):
            current[i] = theta[dep[i]]
            dependent = 0.0
            for c in range(nk):
                total = 0.0
                for m in range(nd):
                    total += inverse[i, m] * jk[m, c]
                sensitivity_old[i, c] = sensitivity[i, c]
                sensitivity[i, c] = -total
                dependent -= total * rate[known[c]]
            rate[dep[i]] = dependent
    return n


def _loop_states_py(loop, k, theta_all, rate_all, first, newton_at):
    """Loop resolver k's dependent joints at samples first … n−1 (as `_loop_positions_py`) by the loop stage's
    Newton warm-started from the Data's warm starts in its loop record `loop` (moved along from sample to sample). Returns the first
    sample not done (the stage declined there: the callback stage takes that sample). `newton_at`: the address of
    the compiled loop stage's C entry (`_newton_entry`)."""
    newton = _NEWTON(newton_at)
    n, width = theta_all.shape
    no_gradient = np.zeros((width, 0))
    gamma = np.zeros(width)
    for s in range(first, n):
        if newton(loop, k, theta_all[s], rate_all[s], no_gradient, gamma, True) != 0:
            return s
    return n


def _positions_kernel():
    from biobullet.constraints.newton_kernel import with_newton_solve
    return with_newton_solve(_loop_positions_py)


# The states pass calls the loop stage's Newton by the address of its C entry (`core.jit.entry_address`: the
# overload the right-hand side compiled, for the argument types the pass passes), not linked: linked, its compile
# optimised and generated the Newton's code again (≈ 4 s of CPU for a loop over the few samples the positions pass
# hands over). The positions pass, which takes nearly every sample, keeps the solve linked: by its C entry (1.8 s
# less to compile) a four-bar's 1 s run took ≈ 3 % longer (1,001 calls passing the loop set by value).

#: id of the Newton entry's signature → (that signature, the states pass compiled against it): the variant's
#: name hashes the signature's text (≈ 40 µs a run), and `entry_address` gives the same object at every run
_STATES: dict[int, tuple] = {}


def _states_kernel(signature):
    """`_loop_states_py` compiled to call the Newton of `signature` by its address (a variant per signature)."""
    known = _STATES.get(id(signature))
    if known is None or known[0] is not signature:
        variant = "s" + hashlib.sha256(str(signature).encode()).hexdigest()[:12]
        known = _STATES[id(signature)] = (signature, jit.compiled(
            _loop_states_py, bind={"_NEWTON": jit.address_caller(signature)}, variant=variant))
    return known[1]


def _newton_entry(loop, k: int, theta_all: np.ndarray, rate_all: np.ndarray) -> tuple[int, object]:
    """(address, numba signature) of the loop stage's compiled Newton (`newton_kernel`) for `_loop_states_py`'s
    arguments."""
    from biobullet.constraints.newton_kernel import newton_kernel
    width = theta_all.shape[1]
    return jit.entry_address(newton_kernel(), loop, k, theta_all[0], rate_all[0], np.zeros((width, 0)),
                             np.zeros(width), True)


def _coverage(system) -> tuple[str | None, tuple | None]:
    """(why the callback stage serves this run, or None; the run's packed plug-in kernels). The compiled right-hand
    side takes formulation "reduced", a coordinate map the pipeline's joint-state stage evaluates
    (`pipeline.compiled_model`: identity, affine, explicit joint functions of the types `model.joint_jets`
    evaluates, point, planar and revolute loops, in any order), joints of the tree kernel's types, the built-in
    elements (a switched stop's restart events stay with the engine), contacts whose laws have compiled twins,
    third-party elements with a compiled kernel (`ForceElement.compiled_kernel`) and muscles."""
    from biobullet.contact.element import Contact
    from biobullet.contact.kernels import has_twins
    from biobullet.forces.elements import JointSpring, JointStop, JointTorque, Spring

    model = system.model
    if system.joint_space:
        return f"formulation {system.formulation!r}: the joint-space DAE with multipliers", None
    if not system.method.is_pipeline:
        return f"formulation {system.formulation!r}: a check formulation, evaluated by name on the joint state", None
    compiled = model.compiled
    if not model.bodies or any(b.joint_type not in TREE_JOINTS for b in model.bodies):
        return "a joint type the tree kernel does not take", None
    if compiled.state_stage != COMPILED_STATE:
        return ("the coordinate map has a plug-in joint function without compiled jets or a plug-in loop type "
                "(joint state by `Model.joint_state_view`)"), None
    if system.shadow is not None and not compiled.loops.stages.shape[0]:
        return "loop-dependent joints outside the loop stage", None
    if any(not has_twins(e) or e.state is None for e in system.elements if type(e) is Contact):
        return "a contact law without a compiled twin (its Python law)", None
    others, plugins = plugin_elements(system, (Spring, JointTorque, JointSpring, JointStop, Contact))
    if plugins is None:
        names = ", ".join(sorted({type(e).__name__ for e in others}))
        return f"a force element without a compiled kernel ({names}: its Python `generalized_force`)", None
    return None, plugins


def callback_reason(system) -> str:
    """Why the engine's callback stage serves `system`'s whole run (no compiled right-hand side)."""
    return _coverage(system)[0] or "the compiled right-hand side did not build"


class CompiledReducedRHS:
    """`__call__(t, y)` → ẏ of a "reduced" run in one compiled call, or None where the engine's callback stage
    must evaluate the state. Built by :meth:`for_system` (None for the model kinds the pipeline's joint-state stage
    does not evaluate: plug-in joint functions without compiled jets, plug-in loop types, …; and for runs with
    elements or contact laws without a compiled form)."""

    def __init__(self, system, springs, joint_springs, torques, joint_stops=(), contacts=(), plugins=None) -> None:
        from biobullet.constraints.implicit import LoopResolver
        from biobullet.pipeline.kernels import has_loops, rhs_kernel

        model = system.model
        self._model = model
        self._compiled = model.compiled
        self._data = model.data()
        self._muscles = system.muscles
        # (muscles: the address of their record, set where the compiled kernel is first entered, `_evaluate`;
        # the uncompiled calls get the record itself, `_timed_uncompiled`)
        self._forces = pack_force_rows(model, springs, joint_springs, joint_stops, contacts, plugins)
        self._muscle_record = None
        self._nq, self._nv = model.nq, model.nv
        self._torques = [(torque, torque.joint_slots(model)[1]) for torque in torques]
        self._constant_tau = np.zeros(model.n_tangent)
        for torque, k in self._torques:
            if torque.value is not None:
                self._constant_tau[k] += torque.value
        self._forces.tau_time[:] = self._constant_tau
        self._varying = [(torque, k) for torque, k in self._torques if torque.value is None]
        # ground contacts: state rows refreshed from the run's ContactStates at every call (the engine's event
        # actions change those in Python)
        self._contact_states = [contact.state for contact in contacts]
        for contact in contacts:   # the interval log's samples by the same compiled laws
            contact.use_compiled_observer(model)
        self._entry = None
        self._uncompiled = None   # the kernel's uncompiled form while the run starts by Python (`python_start`)
        self.python_start_seconds = float(system.options.get("python_start_seconds") or 0.0)
        self._span = system.options.get("t_span") or (0.0, 0.0)   # (t0, t_end) of the run (`_by_python`)
        self._reached = self._span[0]   # the latest time the uncompiled calls evaluated
        self._size = system.size
        self._address = None   # (the kernel's C entry, its signature) for the compiled stepper (`stepper_arguments`)
        self.uncompiled_calls = 0
        self.uncompiled_seconds = 0.0
        #: the loop stage's resolvers (none: an explicit map, one plain call of the pipeline per evaluation)
        self.resolvers = tuple(r for r in model.coordinate_map.resolvers if type(r) is LoopResolver) \
            if self._compiled.loops.stages.shape[0] else ()
        self.loops = bool(self.resolvers)
        # (one kernel for every explicit map and one for every loop map: `pipeline.kernels.rhs_kernel`)
        self._kernel = rhs_kernel(loops=has_loops(self._compiled))
        self._shadow = np.asarray(system.shadow[1], dtype=np.int64) if system.shadow is not None \
            else np.zeros(0, dtype=np.int64)
        if not self.loops:
            return
        self._warm = self._data.arrays.loop_warm
        self._data.bind_loops(model)   # the run's warm starts from its first solve (the initial state) on
        self._recent: list[np.ndarray] = []   # the last few warm starts the stage reached (`_retry`)
        # where the first resolver's known joints sit in y (the retry's distance), when all of them are there
        independent = list(model.coordinate_map.independent)
        resolver = self.resolvers[0]
        self._known_in_y = np.array([model.base_nq + independent.index(k) for k in resolver.known], dtype=np.intp) \
            if len(self.resolvers) == 1 and all(k in independent for k in resolver.known) else None
        loops = model.compiled.loops
        self._known_slice = slice(int(loops.known_start[0]), int(loops.known_start[1]))

    @classmethod
    def for_system(cls, system) -> "CompiledReducedRHS | None":
        """The compiled right-hand side for this run, or None where the callback stage serves it
        (`callback_reason` says why)."""
        from biobullet.contact.element import Contact
        from biobullet.forces.elements import JointSpring, JointStop, JointTorque, Spring

        reason, plugins = _coverage(system)
        if reason is not None:
            return None
        elements = system.elements
        return cls(system, [e for e in elements if type(e) is Spring], [e for e in elements if type(e) is JointSpring],
                   [e for e in elements if type(e) is JointTorque], [e for e in elements if type(e) is JointStop],
                   [e for e in elements if type(e) is Contact], plugins)

    def _refreshed(self, t: float, y: np.ndarray):
        """The run's ForceRows with τ(t), the contacts' discrete state rows and the muscles' excitations of this
        call (state y) written in."""
        forces = self._forces
        if self._varying:
            tau = forces.tau_time
            tau[:] = self._constant_tau
            for torque, k in self._varying:
                tau[k] += torque.torque(t)
        if self._muscles is not None:
            self._muscles.refresh(t, y[:self._nq], y[self._nq:self._nq + self._nv])
        if self._contact_states:
            from biobullet.contact.kernels import discrete_rows
            discrete_rows(self._contact_states, forces.contact_state)
        return forces

    # ------------------------------------------------------------------ warm starts
    def ready(self, t: float | None = None, y: np.ndarray | None = None) -> bool:
        """The Data's warm starts set (where not, the loop resolvers solve state y into them first,
        `Data.start_loops`; without a state the callback stage serves), and their Newton acceptance the resolvers'
        (`implicit.newton_tolerance` loosens it while an integration runs)."""
        warm = self._warm
        if not warm.valid.all():
            if y is None or not self._data.start_loops(self._model, y[:self._nq], y[self._nq:self._nq + self._nv],
                                                        float(t)):
                self.hand_over()
                return False
        for k, r in enumerate(self.resolvers):
            warm.loose[k] = -1.0 if r.accept_residual is None else r.accept_residual
        return True

    def hand_over(self) -> None:
        """Before the callback stage evaluates: the resolvers continue from the Data's warm start and leave their
        solution there for the next compiled call (`Data.bind_loops`)."""
        if self.loops:
            self._data.bind_loops(self._model)

    def forget_loops(self) -> None:
        """Drop the run's loop warm starts (after a failure at a singular point: `LoopResolver.rewind` then moves
        them back to the first solution)."""
        if not self.loops:
            return
        self._warm.valid[:] = 0.0
        self._recent.clear()

    def _remember(self) -> None:
        recent = self._recent
        if len(recent) >= RECENT:
            del recent[0]
        recent.append(self._warm.values.copy())

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray | None:
        if not self.loops:
            return self._evaluate(t, y)
        if not self.ready(t, y):
            return None
        out = self._evaluate(t, y)
        if out is None:
            out = self._retry(t, y)
        if out is None:
            self.hand_over()
        return out

    def _evaluate(self, t: float, y: np.ndarray) -> np.ndarray | None:
        if not (y.flags.c_contiguous and y.flags.writeable and y.dtype == np.float64):
            y = np.array(y, dtype=float)
        args = self._arguments(t, y)
        out = args[-1]
        if self._entry is self._uncompiled:
            if self._entry is not None and self._by_python(t):
                self._reached = max(self._reached, float(t))
            else:   # (after the uncompiled start: this thread compiles again)
                if self._entry is not None:
                    jit.resume_compiling()
                    # (the arguments again: taken uncompiled, the data's loop record was the namespace of its
                    # arrays, which the compiled kernel cannot take — `Data.kernel_arrays`)
                    args = self._arguments(t, y)
                    out = args[-1]
                if self._muscles is not None:   # (the compiled kernel calls the muscle stage by its address)
                    from biobullet.muscles.dynamics import stage_address
                    from biobullet.pipeline.force_rows import muscle_record
                    stage_address(self._muscles.rows)
                    self._muscle_record, address = muscle_record(self._muscles.rows)
                    self._forces = self._forces._replace(muscles=address)   # (the same arrays, refreshed)
                    args = (*args[:2], self._forces, *args[3:])
                self._entry = jit.direct_entry(self._kernel, *args)
        if self._entry(*args) != 0:
            return None
        if self.loops:
            self._remember()
        return out

    def _retry(self, t: float, y: np.ndarray) -> np.ndarray | None:
        """An explicit integrator's trial stages can lie far from each other (a large trial step): the last stage's
        solution is then more than CONTINUATION_STEP from this state and the stage declines (the callback stage's
        continuation costs ~40× a compiled call). One of the last solutions reached on this trajectory is usually
        near: try once from the nearest within the stage's no-continuation radius."""
        from biobullet.constraints.newton_kernel import CONTINUATION_STEP
        if self._known_in_y is None or not self._recent:
            return None
        warm = self._warm
        target = y[self._known_in_y]
        current = warm.known0[self._known_slice]
        best, jump = None, CONTINUATION_STEP
        for values in self._recent:
            known = values[self._known_slice]   # known0 leads the buffer (`LoopWarm`)
            distance = float(np.max(np.abs(known - target))) if target.size else 0.0
            if distance <= jump and not np.array_equal(known, current):
                best, jump = values, distance
        if best is None:
            return None
        saved = warm.values.copy()
        warm.values[:] = best
        out = self._evaluate(t, y)
        if out is None:
            warm.values[:] = saved
        return out

    def steps_compiled(self) -> bool:
        """Whether the compiled DOP853 stepper (`compiled_stepper`) may step this run: any map (explicit or loop)
        without time-dependent joint torques, contacts or muscles (their rows are refreshed in Python between
        calls: τ(t), the contacts' discrete states, the excitations)."""
        return not (self._varying or self._contact_states or self._muscles is not None)

    def stepper_arguments(self) -> tuple | None:
        """(compiled model, data arrays, force rows, shadow rows, the kernel's address, its numba signature) for
        `compiled_stepper`'s steps, which call the kernel by its address (`core.jit.entry_address`), a loop map's
        warm starts in the data arrays; or None where that path does not apply (`steps_compiled`), while the run
        starts by Python (`python_start`) or, for a loop map, without a warm start yet."""
        if not self.steps_compiled() or self.by_python or (self.loops and not self.ready()):
            return None
        if self._address is None:
            self._address = jit.entry_address(self._kernel, *self._arguments(0.0, np.zeros(self._size)))
        return (self._compiled, self._data.kernel_arrays(), self._forces, self._shadow, *self._address)

    def _arguments(self, t: float, y: np.ndarray, probe: bool = False) -> tuple:
        """The kernel's arguments for state y at time t (a new output array); `probe`: for a look-up of their types
        only (`Data.probe_arrays`: the loop record not built)."""
        out = np.empty(y.shape[0])
        arrays = self._data.probe_arrays() if probe else self._data.kernel_arrays()
        return self._compiled, arrays, self._refreshed(t, y), self._shadow, y, float(t), out

    # ------------------------------------------------------------------ cold start
    @property
    def by_python(self) -> bool:
        """Whether the kernel's uncompiled form serves the calls (the run's uncompiled start, `python_start`)."""
        return self._uncompiled is not None and self._entry is self._uncompiled

    @contextmanager
    def python_start(self):
        """The block of a run (`engine.simulate`: its initial state, the integration, the trajectory output) that
        may start by Python: given `python_start_seconds` > 0, while numba has no compiled kernel for this run's
        right-hand side (neither in this process nor in its on-disk cache), everything inside runs uncompiled
        (`core.jit.uncompiled`: the kernels' uncompiled forms — the right-hand side, the loop resolvers' Newton
        solve, SciPy's steps instead of the compiled stepper, the trajectory's states and energies) until the
        right-hand side's calls have used `python_start_seconds` of CPU and the run is not about to end (`_by_python`);
        then the block compiles again (`core.jit.resume_compiling`) and the next call compiles the kernel. Plug-in
        kernels (joint functions, force elements, contact laws, the muscle stage) are called by their uncompiled
        forms there too (`core.jit.address_caller` finds them by their compiled addresses)."""
        if self.python_start_seconds <= 0 or not jit.compiling() \
                or jit.is_cached(self._kernel, *self._arguments(0.0, np.zeros(self._size), probe=True)):
            yield
            return
        with jit.uncompiled():
            self._uncompiled = self._entry = self._timed_uncompiled()
            yield

    def _by_python(self, t: float) -> bool:
        """Whether the uncompiled start goes on at a call at time t: while its calls have used less than
        `python_start_seconds` of CPU, and after that while the run, at the pace it went so far, would end by Python
        within PYTHON_FINISH_FACTOR times that in all (less than a right-hand side's compile: a short run is not held
        up by a compile longer than itself)."""
        used = self.uncompiled_seconds
        if used < self.python_start_seconds:
            return True
        t0, t_end = self._span
        done = (self._reached - t0) / (t_end - t0) if t_end > t0 else 0.0
        return done > 0.0 and used / done <= PYTHON_FINISH_FACTOR * self.python_start_seconds

    def _timed_uncompiled(self):
        """The kernel's uncompiled form (`core.jit.uncompiled`), counting its calls and their CPU time."""
        from biobullet.pipeline.kernels import has_loops, rhs_kernel
        from biobullet.pipeline.force_rows import muscle_record
        with jit.uncompiled():
            python_kernel = rhs_kernel(loops=has_loops(self._compiled))
            record = muscle_record(self._muscles.rows)[1] if self._muscles is not None else 0
            python_arrays = self._data.kernel_arrays()   # (the loop record as a namespace)

        def timed(model, data, forces, *args):
            started = time.process_time()
            try:
                return python_kernel(model, python_arrays, forces._replace(muscles=record), *args)
            finally:
                self.uncompiled_seconds += time.process_time() - started
                self.uncompiled_calls += 1

        return timed

    # ------------------------------------------------------------------ trajectory output
    def tree_states(self, t: np.ndarray, q: np.ndarray, v: np.ndarray, fallback,
                    first_guess: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(θ, θ̇) (n, n_joints) of the joints at n samples (q, v: the independent joints' columns, base
        excluded), stage by stage in the map's order: explicit functions vectorised over samples
        (`explicit_states_batch`), each loop's dependent joints in one compiled Newton pass
        (warm-started sample to sample; the joints computed so far enter as given). A sample a loop pass hands
        over goes to `fallback(k)` → (θ, θ̇) (the callback stage) and the pass resumes after it. `first_guess` (θ
        of all joints at the first sample, e.g. the integrated loop-dependent joints of `error_control="joints"`)
        lets the passes start at the first sample; without it the first sample takes the callback stage, which
        fixes the assembly branch."""
        model = self._model
        compiled = model.compiled
        loops = compiled.loops
        cmap = model.coordinate_map
        n = len(t)
        t = np.asarray(t, dtype=float)
        o = model.base_nv   # the loop kernels' joint layout: joint j at o + j
        theta_all, rate_all = np.zeros((n, o + cmap.n_joints)), np.zeros((n, o + cmap.n_joints))
        theta, rate = theta_all[:, o:], rate_all[:, o:]
        theta[:, compiled.independent], rate[:, compiled.independent] = q, v
        if n and (first_guess is None or not np.all(np.isfinite(first_guess))):
            first_guess = None
        first = 0
        for kind, a, b in loops.stages.tolist():
            if kind == 0:   # explicit functions (they may compute a loop's known joints or take its outputs)
                if not explicit_states_batch(compiled.jets_table[a:b], compiled.jets_inputs, compiled.jets_coef, t,
                                             theta, rate):
                    for s in range(n):   # an expression not finite somewhere: per sample (which reports it)
                        theta[s], rate[s] = fallback(s)
                    return theta.copy(), rate.copy()
                continue
            if n and first_guess is None:   # the first sample by the callback stage: its branch decides
                theta[0], rate[0] = fallback(0)
                first_guess, first = theta[0].copy(), 1
            self._loop_states(a, theta_all, rate_all, first, first_guess, fallback)
        return theta.copy(), rate.copy()

    def warm_guess(self, q: np.ndarray) -> np.ndarray | None:
        """θ of all joints for `tree_states`' `first_guess`: the independent joints `q`, each loop's dependent
        joints from the Data's warm start (the last state the right-hand side solved — within the current step
        while integrating, so the guess is on the same assembly branch), or None without one."""
        model = self._model
        loops = model.compiled.loops
        if not self.ready():
            return None
        theta = np.zeros(model.coordinate_map.n_joints)
        theta[model.compiled.independent] = q
        theta[loops.dep - model.base_nv] = self._warm.dep0
        return theta

    def _loop_states(self, k: int, theta_all: np.ndarray, rate_all: np.ndarray, first: int,
                     first_guess: np.ndarray, fallback) -> None:
        """Loop resolver k's dependent joints at samples `first` … n−1 into theta_all, rate_all (the loop kernels'
        layout, the known joints set): plain Newton on positions from sample to sample (`_loop_positions_py`),
        then the loop stage from the Data's warm start (`_loop_states_py`), then the callback stage for one sample,
        and again."""
        loops = self._model.compiled.loops
        o = self._model.base_nv
        n = theta_all.shape[0]
        dep = loops.dep[loops.dep_start[k]:loops.dep_start[k + 1]]
        loop = self._data.kernel_arrays().loop
        positions, states, newton_at = _positions_kernel(), None, 0
        start, guess = first, first_guess[dep - o]

        def callback(s: int) -> None:
            self.hand_over()
            theta_all[s, o:], rate_all[s, o:] = fallback(s)

        while start < n:
            if n - start > 1:
                start = positions(loop, k, theta_all, rate_all, start, np.array(guess, dtype=float))
                if start >= n:
                    break
            if self.ready():   # from the warm start (branch-safe continuation limits)
                if states is None:
                    newton_at, signature = _newton_entry(loop, k, theta_all, rate_all)
                    states = _states_kernel(signature)
                start = states(loop, k, theta_all, rate_all, start, newton_at)
            if start < n:
                callback(start)
                guess = theta_all[start, dep]
                start += 1


def _explicit_states_py(table, inputs, coef, t, theta, rate):
    """θ, θ̇ of the dependent joints at each sample by the kernel's own jets (`_explicit_jets_py`); G and γ are
    not wanted (a one-column zero gradient). False when an expression is not finite at some sample."""
    gradient = np.zeros((theta.shape[1], 1))
    gamma = np.zeros(theta.shape[1])
    for k in range(t.shape[0]):
        x = theta[k]
        xd = rate[k]
        if _SAMPLE_JETS(table, inputs, coef, t[k], int(0), int(0), x, xd, gradient, gamma) != 0:
            return False
    return True


def explicit_states_batch(table, inputs, coef, t: np.ndarray, theta: np.ndarray, rate: np.ndarray) -> bool:
    """θ and θ̇ of the dependent joints at n samples, in place (theta, rate: (n, n_joints), independent columns
    set; t: (n,)): the kernel's own jets sample by sample, in one compiled call. False when an expression is not
    finite at some sample (the caller's per-sample path then reports it)."""
    if not table.shape[0]:
        return True
    kernel = jit.compiled(_explicit_states_py, bind=lambda: {"_SAMPLE_JETS": jets_kernel()})
    # C-contiguous arrays: one specialisation of the kernel for every caller
    theta_c, rate_c = np.ascontiguousarray(theta), np.ascontiguousarray(rate)
    with np.errstate(all="ignore"):   # (run by Python, BIOBULLET_NUMBA=0: overflow becomes inf, then False)
        done = bool(kernel(np.ascontiguousarray(table), np.ascontiguousarray(inputs),
                           np.ascontiguousarray(coef, dtype=float), np.ascontiguousarray(t, dtype=float), theta_c,
                           rate_c))
    if theta_c is not theta:
        theta[...] = theta_c
    if rate_c is not rate:
        rate[...] = rate_c
    return done
