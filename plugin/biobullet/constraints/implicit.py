"""Implicit coordinates: joints made dependent by loop closures, for the `reduced` formulations.

Φ(θ_dep; θ_known) = 0 is solved by Newton for the dependent joint angles; derivatives by implicit
differentiation (Φ_dep = ∂Φ/∂θ_dep, Φ_kn = ∂Φ/∂θ_known, b(θ, u) = Φ̇_θ u the velocity product):
    G_dep = −Φ_dep⁻¹ Φ_kn G_kn,   θ̇_dep = −Φ_dep⁻¹ Φ_kn θ̇_kn,   γ_dep = −Φ_dep⁻¹ (Φ_kn γ_kn + b(θ, θ̇))
and for the Hessians over q̃ = (q, t): H_dep[i, j] = −Φ_dep⁻¹ (Φ_kn H_kn[i, j] + Φ_θθ(∇θ_i, ∇θ_j)), the bilinear
form obtained from b by polarization. Loop equations are invariant under a rigid motion of the whole tree, so a
floating base is held at the identity here (the base never becomes dependent).
"""
from __future__ import annotations

import warnings
import weakref
from contextlib import contextmanager

import numpy as np

from biobullet.core import jit
from biobullet.core.errors import ModelError, SolverError, clean_message
from biobullet.constraints.loops import (Loop, VectorLoops, joint_layout_tree, loop_supports, loop_terms,
                                         parse_loops)
from biobullet.constraints.loop_kernels import pack_loop_rows
from biobullet.constraints.loop_types import get_loop_type, loop_type_names

#: condition number of Φ_dep above which the configuration is reported as singular (e.g. a four-bar toggle)
CONDITION_LIMIT = 1e8
from biobullet.constraints.newton_kernel import (CONTINUATION_STEP, CONVERGED, GUARD, ITERATION_LIMIT, LEFT_REACH,
                                                  NEWTON_REACH, NO_DESCENT, PREDICTION_CONDITION, SINGULAR, ZERO_STEP,
                                                  LoopWarm, dense_blocks, loop_namespace, loop_parts, loop_record,
                                                  loop_set_blocks, loop_warm, newton_solve_entry_kernel,
                                                  newton_solve_twin, newton_work)

#: most continuation substeps of one loop solve (a jump of MAX_SUBSTEPS · CONTINUATION_STEP, e.g. 100 rad)
MAX_SUBSTEPS = 1000
#: why a Newton solve stopped without converging, for the error message
_STOPPED = {ITERATION_LIMIT: "iteration limit", ZERO_STEP: "the Newton step is zero",
            NO_DESCENT: "no descent along the Newton direction",
            LEFT_REACH: f"left the ±{NEWTON_REACH:.3g} neighbourhood of the prediction"}



class LoopBranchWarning(UserWarning):
    """A loop solve that failed from the last solution (or, a workspace's first, from the declared configuration) was
    solved from the model's initial guess: the result may be on another branch (assembly mode) than the last
    solution (the declared configuration's) (`LoopResolver.solve`)."""


class _NeedsContinuation(Exception):
    """The prediction is too far from the solution for a direct Newton solve (internal)."""


class LoopResolver:
    """Resolver (model.coordinates protocol) for the joints that loop closures make dependent.

    `outputs`: dependent joint indices; `known`: the other joints the loop equations depend on, which earlier
    resolvers must have filled. Newton starts from a warm start (last solution, its sensitivity and curvature) so
    that it continues along the branch it is on; this is a cache for speed and branch continuity, not model
    state — any consistent starting guess gives the same solution on the same branch. The warm start is an entry
    of a `LoopWarm` record: the resolver's own, or a Data's (`use_warm`: the loop stage and this resolver then
    continue each other's branch). A record's first solve (a run's initial state, a workspace's first call, a
    fresh model's first call) is continued from the declared solution (`declared`: the file's <initial>
    configuration solved from the initial guess, a property of the model), never from what another workspace
    solved before, and is that record's anchor: its continuation starts there when it is nearer than the warm
    start, in the loop stage and here alike (the stage reads the same record). A warm-started solve that
    fails is retried from a fresh model's start before it is refused (`solve`): the warm start decides the branch,
    never whether a state is solved.
    """

    def __init__(self, model, loops: tuple[Loop, ...], dependent: tuple[int, ...], known: tuple[int, ...],
                 initial_guess: np.ndarray, revolute: np.ndarray) -> None:
        self._model = weakref.ref(model)  # the model owns this resolver: no reference cycle
        self.loops = loops
        self.outputs = tuple(dependent)
        self.known = tuple(known)
        self.n_equations = sum(loop.n_equations for loop in loops)
        self._dep = np.array(self.outputs, dtype=np.int64)     # index arrays (fancy indexing in the hot path)
        self._kn = np.array(self.known, dtype=np.intp)
        self._offset_q = model.base_nq
        self._initial = np.array(initial_guess, dtype=float)   # θ_dep guess when there is no warm start
        self.revolute = np.asarray(revolute, dtype=bool)      # dependents whose angle may be wrapped by 2π
        self._warm_fresh = False        # the warm start was set by the last solve
        #: (θ_known, θ_dep, sensitivity, condition) at the declared configuration, or None (`declared`)
        self._declared: tuple | None = None
        self._declared_done = False
        self._declaring = False   # the map is evaluated at the declared configuration (`declared`)
        nd, nk = len(dependent), len(known)
        self.use_warm(loop_warm(np.array([0, nk]), np.array([0, nd]), np.array([0, nd * nk])), 0)
        scale = max([np.linalg.norm(b.translation) for b in model.bodies]
                    + [np.linalg.norm(l.xyz_a) + np.linalg.norm(l.xyz_b) for l in loops] + [1e-3])
        self.residual_tolerance = 1e-12 * scale
        self.length_scale = scale
        #: residual accepted without a further Newton evaluation while an integration runs at a loose tolerance
        #: (set by `newton_tolerance`; None = converge to round-off)
        self.accept_residual: float | None = None
        #: a failed warm-started solve is retried from a fresh model's start (`solve`); False while an integration
        #: runs (set by `newton_tolerance`): a run keeps its branch or stops, it never jumps to the fresh start's
        self.fresh_retry = True
        self._vector = VectorLoops(model, loops) if VectorLoops.supports(loops) else None
        self._kin: tuple[bytes, object] | None = None   # tree kinematics of the last θ (reused for the rates)
        self._memo: tuple[tuple, tuple] | None = None   # last resolve(): exact inputs -> outputs
        #: the Newton kernel and its arguments (`_newton_form`, built on first use), by whether kernels compile
        #: (`core.jit.compiling`: a run's uncompiled start solves by the kernel's uncompiled form)
        self._forms: dict[bool, tuple] = {}

    # ------------------------------------------------------------------ helpers
    @property
    def model(self):
        return self._model()

    def _x(self, theta: np.ndarray) -> np.ndarray:
        if self._offset_q:
            return np.concatenate([[0, 0, 0, 0, 0, 0, 1.0], theta])
        return np.array(theta, dtype=float)

    def _xd(self, rate: np.ndarray) -> np.ndarray:
        return np.concatenate([np.zeros(6), rate]) if self._offset_q else rate

    def terms(self, theta: np.ndarray, rate: np.ndarray | None = None):
        """(Φ, Φ_θ over all joints, b) at joint angles θ (base at identity)."""
        if self._vector is not None:
            key = theta.tobytes()
            kin = self._kin[1] if self._kin is not None and self._kin[0] == key else None
            phi, jac, bias, kin = self._vector.evaluate(self.model, self._x(theta),
                                                        None if rate is None else self._xd(rate), kin)
            self._kin = (key, kin)
        else:
            phi, jac, bias = loop_terms(self.model, self.loops, self._x(theta),
                                        None if rate is None else self._xd(rate))
        return phi, jac[:, (6 if self._offset_q else 0):], bias

    def _which(self) -> str:
        """The model file and the loops of this resolver, for an error message."""
        names = ", ".join(repr(loop.name) for loop in self.loops)
        return f"{self.model.file}: <loop> {names}" if len(self.loops) == 1 else f"{self.model.file}: <loop>s {names}"

    def _state_text(self, theta: np.ndarray, t: float) -> str:
        names = self.model.joint_names
        return f"t = {t:.17g}, " + ", ".join(f"{names[k]} = {theta[k]:.17g}" for k in range(len(theta)))

    # ------------------------------------------------------------------ warm start
    def use_warm(self, warm: LoopWarm, k: int) -> None:
        """Read and write the warm start in entry k of `warm` from now on (class docstring)."""
        k0, k1 = int(warm.known_start[k]), int(warm.known_start[k + 1])
        d0, d1 = int(warm.dep_start[k]), int(warm.dep_start[k + 1])
        s0 = int(warm.sensitivity_start[k])
        self._record, self._k = warm, k
        self._known0, self._dep0, self._u0, self._h0 = warm.known0[k0:k1], warm.dep0[d0:d1], warm.u0[k0:k1], \
            warm.h0[d0:d1]
        self._sensitivity = warm.sensitivity[s0:s0 + (d1 - d0) * (k1 - k0)].reshape(d1 - d0, k1 - k0)
        self._anchor_known, self._anchor_dep = warm.anchor[k0:k1], warm.anchor_dep[d0:d1]
        self._anchor_sensitivity = warm.anchor_sensitivity[s0:s0 + (d1 - d0) * (k1 - k0)].reshape(d1 - d0, k1 - k0)
        self._memo = None

    @property
    def _valid(self) -> bool:
        return bool(self._record.valid[self._k])

    def _set_warm(self, known: np.ndarray, dep: np.ndarray, sensitivity: np.ndarray, condition: float) -> None:
        """The warm start := this solution (no curvature yet)."""
        record, k = self._record, self._k
        self._known0[:], self._dep0[:], self._sensitivity[:, :] = known, dep, sensitivity
        record.condition[k], record.curved[k], record.valid[k] = condition, 0.0, 1.0

    @property
    def _anchored(self) -> bool:
        return bool(self._record.anchored[self._k])

    def _anchor(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """The record's anchor (its first solution) as `_set_warm` takes it (copies: the warm start's views are
        written)."""
        return (self._anchor_known.copy(), self._anchor_dep.copy(), self._anchor_sensitivity.copy(),
                float(self._record.anchor_condition[self._k]))

    def _set_anchor(self) -> None:
        """The record's anchor := its warm start, the solution of its first solve (`solve`)."""
        record, k = self._record, self._k
        self._anchor_known[:], self._anchor_dep[:], self._anchor_sensitivity[:, :] = \
            self._known0, self._dep0, self._sensitivity
        record.anchor_condition[k], record.anchored[k] = record.condition[k], 1.0

    def declared(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
        """(θ_known, θ_dep, sensitivity −Φ_dep⁻¹ Φ_kn, cond₁ Φ_dep) of the declared configuration — the coordinate
        map evaluated at `model.initial_state()` (the file's <initial>; a driven input its function's value there,
        an input behind another loop that loop's declared solution) at t = 0, each loop solved by Newton from the
        initial guess —, or None where it does not close regularly. A property of the model, solved once for
        every loop resolver of the map, in no workspace's record: where each record's first solve starts."""
        if not self._declared_done:
            try:
                declared_configuration(self.model)
            except Exception:   # noqa: BLE001  (a loop or function that fails there: no declared solution)
                self._declared_done = True
        return self._declared

    def evaluate_declared(self, on: bool) -> None:
        """Begin (True) or end (False) the coordinate map's evaluation at the declared configuration
        (`declared_configuration`): meanwhile `solve` keeps its solution as the declared one and touches no record;
        the memo is dropped at both ends (it holds a workspace's solution, not the declared one)."""
        self._declaring, self._memo = on, None
        if not on:
            self._declared_done = True

    def _solve_declared(self, theta: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray, float]:
        """`solve` while the map is evaluated at the declared configuration (`declared`): Newton from the initial
        guess, kept as the declared solution; no record is read or written."""
        jac, inverse, condition = self._newton(theta, t, guess=self._initial)
        if condition < CONDITION_LIMIT:
            known = self._kn
            self._declared = (theta[known].copy(), theta[self._dep].copy(), -inverse @ jac[:, known], condition)
        return jac, inverse, condition

    # ------------------------------------------------------------------ Newton
    def _guess(self, theta_known: np.ndarray) -> np.ndarray:
        if not self._valid:
            return self._initial.copy()
        delta = theta_known - self._known0
        guess = self._dep0 + self._sensitivity @ delta
        if self._record.curved[self._k]:
            # second-order term along the known rate u of the cached solution: θ_dep'' = h there (exact for one
            # known input; the other directions keep the first-order prediction)
            u = self._u0
            along = (u @ delta) / (u @ u)
            guess += 0.5 * along * along * self._h0
        # beside a toggle the sensitivity is huge and the prediction lands far off (hundreds of rad), from where
        # Newton diverges or converges wound by 2π·k: shortened along its direction to NEWTON_REACH from the cached
        # solution. Away from toggles (cond ≤ PREDICTION_CONDITION) or within reach it is unchanged, bit for bit
        reach = float(np.max(np.abs(guess - self._dep0), initial=0.0))
        if self._record.condition[self._k] > PREDICTION_CONDITION and reach > NEWTON_REACH:
            guess = self._dep0 + (guess - self._dep0) * (NEWTON_REACH / reach)
        return guess

    def solve(self, theta: np.ndarray, t: float, *, check_singular: bool = True
              ) -> tuple[np.ndarray, np.ndarray, float]:
        """Fill θ_dep in `theta` (in place) so that Φ = 0; returns (Φ_θ, Φ_dep⁻¹, cond₁(Φ_dep)) there.

        Newton starts from the first-order prediction of the cached solution. When a known joint moved by more
        than CONTINUATION_STEP *and* the first Newton step fails the Kantorovich-type test
        cond₁(Φ_dep)·‖δ‖₁ ≤ KANTOROVICH (the step is large relative to the loop's conditioning, so Newton might
        leave the branch), the inputs are moved there in substeps, each solved from the linear prediction of the
        previous: continuation along the branch instead of one Newton solve from a poor guess. The continuation
        starts from the cached solution or from the record's anchor (its first solution), whichever is nearer.

        A solve that started from a warm start and fails (no convergence, a singular solution) is retried from the
        start a fresh model uses — Newton from the declared initial guess of the dependent joints at these inputs,
        the same tolerance and ±NEWTON_REACH rule — before it is refused: a state a fresh model solves is solved
        after any history. Where both would converge, the warm start's solution is returned (branch continuity).
        A retried solve warns (`LoopBranchWarning`): its branch is the fresh start's, not necessarily the last
        solution's. Refused by both, the warm start is left as the warm attempt left it and that attempt's error is
        raised. Inside an integration (`fresh_retry` False) there is no retry: a run keeps its branch or stops there.

        A record's first solve (`_solve_first`) is continued from the declared solution, so that its branch is the
        declared configuration's whatever other workspaces solved before; that solution is the record's anchor.
        """
        if self._declaring:
            return self._solve_declared(theta, t)
        target = theta[self._kn]
        if not self._anchored:
            return self._solve_first(theta, t, target, check_singular)
        if not self.fresh_retry:
            return self._solve_warm(theta, t, target, check_singular)
        try:
            return self._solve_warm(theta, t, target, check_singular)
        except SolverError as error:
            kept = self._record.values.copy()   # (one buffer: every entry of the record)
            theta[self._kn] = target    # (a failed continuation leaves a substep's inputs)
            self._record.valid[self._k] = 0.0   # `_guess`: the initial guess
            try:
                solved = self._finish(theta, t, *self._newton(theta, t), check_singular=check_singular)
            except SolverError:
                self._record.values[:] = kept
                raise error from None
            # (said: the fresh start picks the branch nearest the initial guess, which need not be the last
            # solution's — the four-bar knee on its other assembly mode at knee_A = 1 rad, called at 1 + 400π rad,
            # came back on the declared one)
            warnings.warn(clean_message(
                f"{self._which()}: the loop solve from the last solution failed there (a jump beyond the "
                f"continuation's budget, or no convergence); solved from the model's initial guess instead, which may "
                f"be on another assembly mode (branch) than the last solution — at " + self._state_text(theta, t)),
                LoopBranchWarning, stacklevel=2)
            return solved

    def _solve_first(self, theta: np.ndarray, t: float, target: np.ndarray, check_singular: bool
                     ) -> tuple[np.ndarray, np.ndarray, float]:
        """The record's first solve: continued from the declared solution (`declared`; a fresh model's, a new run's
        and a new workspace's alike — hunt30: the four-bar knee's first call at knee_A = 2.25 rad, on its other
        assembly mode, was the anchor every later `simulate` from <initial> continued from), else, where there is
        none or the continuation fails (a jump beyond its budget, a toggle on the way), Newton from the initial
        guess — which may land on another assembly mode than the declared one: said (`LoopBranchWarning`); its
        solution becomes the record's anchor. Refused by both: the continuation's error."""
        home = self.declared()
        error = None
        if home is not None:
            self._set_warm(*home)
            try:
                solved = self._solve_warm(theta, t, target, check_singular)
            except SolverError as failed:
                error = failed
                theta[self._kn] = target   # (a failed continuation leaves a substep's inputs)
        if home is None or error is not None:
            self._record.valid[self._k] = 0.0   # (`_guess`: the initial guess)
            try:
                solved = self._finish(theta, t, *self._newton(theta, t), check_singular=check_singular)
            except SolverError:
                if error is None:
                    raise
                raise error from None
            if error is not None:
                warnings.warn(clean_message(
                    f"{self._which()}: the loop solve continued from the declared configuration (<initial>) failed "
                    f"there (a jump beyond the continuation's budget, a singular configuration on the way, or no "
                    f"convergence); solved from the model's initial guess instead, which may be on another assembly "
                    f"mode (branch) than the declared configuration — at " + self._state_text(theta, t)),
                    LoopBranchWarning, stacklevel=3)
        if self._valid:
            self._set_anchor()
        return solved

    def _solve_warm(self, theta: np.ndarray, t: float, target: np.ndarray, check_singular: bool
                    ) -> tuple[np.ndarray, np.ndarray, float]:
        """`solve` from the warm start (or the record's anchor, whichever is nearer), with continuation."""
        known = self._kn
        if not self._valid and self._anchored:   # (the warm start forgotten after a failed run: from the anchor)
            self._set_warm(*self._anchor())
        if self._valid:
            start = self._known0.copy()   # (the warm start moves with the continuation's substeps)
            jump = np.max(np.abs(target - start), initial=0.0)
            if jump > CONTINUATION_STEP and self._anchored:   # (the loop stage's rule: `_loop_newton_py`)
                anchor = self._anchor()
                anchor_jump = np.max(np.abs(target - anchor[0]), initial=0.0)
                if anchor_jump < jump:
                    self._set_warm(*anchor)
                    start, jump = anchor[0], anchor_jump
            if jump > CONTINUATION_STEP:
                try:
                    return self._finish(theta, t, *self._newton(theta, t, guard=True),
                                        check_singular=check_singular)
                except (_NeedsContinuation, SolverError):   # too far, or not converged: go in substeps
                    pass
                substeps = int(np.ceil(jump / CONTINUATION_STEP)) if np.isfinite(jump) else MAX_SUBSTEPS + 1
                if substeps > MAX_SUBSTEPS:  # bounded work: a jump of 1e12 would ask for 1e13 Newton solves
                    raise SolverError(f"{self._which()}: loop closure: an independent coordinate jumped by {jump:.3g} from the last "
                                      f"solved configuration; continuation would need {substeps:.3g} substeps of "
                                      f"{CONTINUATION_STEP:g} (limit {MAX_SUBSTEPS}) — is the state in range?")
                for s in np.linspace(0.0, 1.0, substeps + 1)[1:-1]:
                    theta[known] = start + s * (target - start)
                    self._finish(theta, t, *self._newton(theta, t), check_singular=False)
                theta[known] = target
        return self._finish(theta, t, *self._newton(theta, t), check_singular=check_singular)

    def rewind(self) -> None:
        """Start the next solve from the record's anchor (the run's first solution) instead of the cached one:
        after a run failed at a singular configuration, the cache's linear prediction is useless (its sensitivity
        is huge) and the samples before the failure are solved again from the start."""
        if self._anchored:
            self._set_warm(*self._anchor())
        self._memo = None

    def _newton_form(self) -> tuple:
        """(solve, loop, offset, view, parts) of the one Newton kernel (`constraints.newton_kernel._newton_solve_py`):
        compiled over the loop kernels' rows where the loops have them and the tree has the loop kernels' joint
        layout (joint j at base_v + j: a fixed base, or a root free base held at the identity), else its Python
        form over `terms` (a plug-in loop type, multi-DOF joints inside the tree); `loop` this resolver's loop
        record (`newton_kernel.loop_record`: its one loop set, the solve's work arrays allocated here once; `parts`
        keep the arrays the record borrows alive); `view` the joint layout buffer the solve works in, θ at
        view[offset:]."""
        form = self._forms.get(jit.compiling())
        if form is None:
            model = self.model
            tree = joint_layout_tree(model) if self._vector is not None else None
            nd, nk = len(self._dep), len(self._kn)
            compiled = tree is not None and model.n_tangent == model.coordinate_map.n_joints + model.base_nv
            offset = model.base_nv if compiled else 0
            width = model.n_tangent if compiled else model.coordinate_map.n_joints
            starts = [np.array([0, size], dtype=np.int64) for size in (nd, nk, nd * nk)]
            if compiled:
                meta, body = (np.ascontiguousarray(a) for a in tree)
                rows = self._vector.rows
            else:   # no tree, no rows: the residual is the resolver's own (`_resolver_residual`)
                meta, body = np.zeros((0, 5), dtype=np.int64), np.zeros((0, 1))
                rows = pack_loop_rows(np.zeros((0, width)), ())
            # (Φ_dep's blocks from the rows' structure: one dense block for the residual of a plug-in loop type)
            blocks = loop_set_blocks(rows, 0, self._dep + offset) if compiled else dense_blocks(nd)
            table = (np.zeros((0, 3), dtype=np.int64), starts[0], self._dep + offset, starts[1], self._kn + offset,
                     starts[2], self.revolute.astype(float), np.array([self.residual_tolerance]),
                     float(CONDITION_LIMIT), 0, meta, body, *blocks, rows)
            parts = loop_parts(table, loop_warm(*starts), newton_work(meta.shape[0], nd, width, 0, nk))
            if compiled:
                form = (newton_solve_entry_kernel(), loop_record(parts), offset, np.zeros(width), parts)
            else:   # the resolver as the residual's source (a proxy: the resolver keeps no cycle through _forms)
                loop = loop_namespace(parts)
                loop.resolver = weakref.proxy(self)
                form = (_python_solve(), loop, 0, np.zeros(width), parts)
            self._forms[jit.compiling()] = form
        return form

    def _newton(self, theta: np.ndarray, t: float, guard: bool = False, guess: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray, float]:
        """θ_dep into `theta` by the Newton kernel from the prediction of the cached solution (or from `guess`);
        (Φ_θ, Φ_dep⁻¹, cond₁(Φ_dep)) there. `guard`: raise _NeedsContinuation if the first step is too large for
        the conditioning of the cached solution; SolverError naming the loops where Newton does not converge."""
        solve, loop, offset, view, _ = self._newton_form()
        guess = self._guess(theta[self._kn]) if guess is None else guess.copy()
        view[offset:] = theta
        loose = -1.0 if self.accept_residual is None else float(self.accept_residual)
        status, iterations, norm, jac, inverse, condition = solve(
            loop, 0, view, guess, loose, float(self._record.condition[self._k]) if guard else -1.0)
        theta[:] = view[offset:]
        jac, inverse = jac[:, offset:].copy(), inverse.copy()   # (views of the work arrays)
        if status == CONVERGED:
            return jac, inverse, condition
        if status == GUARD:
            raise _NeedsContinuation
        if status == SINGULAR:
            raise SolverError(f"{self._which()}: loop closure: singular constraint Jacobian (|Φ| = {norm:.3g} m) at "
                              + self._state_text(theta, t))
        raise SolverError(f"{self._which()}: loop closure did not converge: |Φ| = {norm:.3g} m after {iterations} "
                          f"damped Newton steps ({_STOPPED[status]}); the loop may not close for these inputs "
                          f"(cond(∂Φ/∂θ_dep) = {np.linalg.cond(jac[:, self._dep]):.3g}) at "
                          + self._state_text(theta, t))

    def _finish(self, theta: np.ndarray, t: float, jac: np.ndarray, inverse: np.ndarray, condition: float, *,
                check_singular: bool) -> tuple[np.ndarray, np.ndarray, float]:
        """Report a singular configuration; cache the solution (θ_known, θ_dep, sensitivity −Φ_dep⁻¹ Φ_kn)."""
        dep, known = self._dep, self._kn
        if check_singular and not condition < CONDITION_LIMIT:
            raise SolverError(f"{self._which()}: singular loop configuration: cond₁(∂Φ/∂θ_dep) = {condition:.3g} > "
                              f"{CONDITION_LIMIT:g} (toggle/locked position)"
                              " at " + self._state_text(theta, t))
        if np.isfinite(condition):
            self._set_warm(theta[known], theta[dep], -inverse @ jac[:, known], condition)
            self._warm_fresh = True
        return jac, inverse, condition

    # ------------------------------------------------------------------ Resolver protocol
    def resolve(self, jets, t: float, need_rates: bool) -> None:
        dep, known = self._dep, self._kn
        # exact memo of the last call of the callback stage (trajectory output evaluates a sample state again)
        key = (float(t), need_rates, jets.theta[known].tobytes() + jets.gradient[known].tobytes()
               + (jets.rate[known].tobytes() + jets.gamma[known].tobytes() if need_rates else b""))
        if self._memo is not None and self._memo[0] == key:
            jets.theta[dep], jets.gradient[dep], rate, gamma = self._memo[1]
            if need_rates:
                jets.rate[dep], jets.gamma[dep] = rate, gamma
            return
        self._warm_fresh = False
        jac, inverse, _ = self.solve(jets.theta, t)
        jac_known = jac[:, known]
        jets.gradient[dep] = -inverse @ (jac_known @ jets.gradient[known])
        if need_rates:
            jets.rate[dep] = -inverse @ (jac_known @ jets.rate[known])
            _, _, bias = self.terms(jets.theta, jets.rate)
            jets.gamma[dep] = -inverse @ (jac_known @ jets.gamma[known] + bias)
            u = jets.rate[known]
            with np.errstate(all="ignore"):   # (an overflowing rate: no curvature is kept, below)
                uu, curvature = float(u @ u), -inverse @ bias
            # the cached solution is this θ; a non-finite curvature (a rate of 1e200) would poison every later
            # prediction, so it is not kept
            if self._warm_fresh and 1e-24 < uu < np.inf and np.all(np.isfinite(curvature)):
                self._u0[:], self._h0[:] = u, curvature
                self._record.curved[self._k] = 1.0
        self._memo = (key, (jets.theta[dep].copy(), jets.gradient[dep].copy(), jets.rate[dep].copy(),
                            jets.gamma[dep].copy()))

    @property
    def kernel_rows(self) -> VectorLoops | None:
        """The loops packed for the compiled rows kernel (`constraints.loop_kernels`), or None (a loop type it does
        not evaluate: the pipeline's callback stage serves)."""
        return self._vector

    def resolve_hessians(self, theta: np.ndarray, gradient: np.ndarray, hessian: np.ndarray | None,
                         t: float) -> None:
        dep, known = self._dep, self._kn
        jac, inverse, _ = self.solve(theta, t)
        jac_known = jac[:, known]
        gradient[dep] = -inverse @ (jac_known @ gradient[known])
        if hessian is None:
            return
        size = gradient.shape[1]
        # Φ_θθ(g_i, g_j) = (b(g_i + g_j) − b(g_i) − b(g_j)) / 2, b(u) = Φ_θθ(u, u)
        directions = gradient.T  # (n_ext, n_joints)
        single = [self.terms(theta, directions[i])[2] for i in range(size)]
        curvature = np.zeros((self.n_equations, size, size))
        for i in range(size):
            curvature[:, i, i] = single[i]
            for j in range(i + 1, size):
                both = self.terms(theta, directions[i] + directions[j])[2]
                curvature[:, i, j] = curvature[:, j, i] = 0.5 * (both - single[i] - single[j])
        rhs = np.tensordot(jac_known, hessian[known], axes=1) + curvature
        hessian[dep] = -(inverse @ rhs.reshape(self.n_equations, -1)).reshape(len(dep), size, size)


def _resolver_residual(loop, k, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Φ, Φ_θ) of the resolver `loop.resolver`'s loops at joint angles θ (`LoopResolver.terms`): the residual of
    the Newton kernel's Python form."""
    phi, jac, _ = loop.resolver.terms(theta)
    return phi, jac


_PYTHON_SOLVE: list = []   # the Newton kernel's Python form over `_resolver_residual` (made on first use)


def _python_solve():
    if not _PYTHON_SOLVE:
        _PYTHON_SOLVE.append(newton_solve_twin(_resolver_residual))
    return _PYTHON_SOLVE[0]


def loop_resolvers(model) -> list[LoopResolver]:
    """The coordinate map's loop resolvers, in its order (the order of the compiled model's LoopTable)."""
    return [r for r in model.coordinate_map.resolvers if type(r) is LoopResolver]


def declared_configuration(model) -> np.ndarray:
    """Tree configuration x = [base pose?, θ] at the model's declared state (`model.initial_state()`, t = 0) with
    each loop solved by Newton from its initial guess — the declared solutions (`LoopResolver.declared`, kept) —
    in no workspace's record: the same whatever the model solved before (`joint_configuration` continues from the
    last solution). SolverError where a loop does not close there."""
    resolvers = loop_resolvers(model)
    for resolver in resolvers:
        resolver.evaluate_declared(True)
    try:
        q = model.initial_state()[0]
        theta = model.coordinate_map.evaluate(q[model.base_nq:], 0.0).theta
    finally:
        for resolver in resolvers:
            resolver.evaluate_declared(False)
    return np.concatenate([q[:model.base_nq], theta])


def loop_condition(model, q, t: float = 0.0) -> float:
    """1-norm condition number of ∂Φ/∂θ_dep at generalized positions q (∞ if Newton fails there); the
    reduced formulations raise SolverError when it exceeds CONDITION_LIMIT."""
    resolvers = [r for r in model.coordinate_map.resolvers if isinstance(r, LoopResolver)]
    if not resolvers:
        raise SolverError(f"{model.file}: the model has no implicit (loop-dependent) coordinates")
    q = np.asarray(q, dtype=float)
    base = model.base_nq
    cmap = model.coordinate_map
    theta = np.zeros(cmap.n_joints)
    theta[list(cmap.independent)] = q[base:]
    worst = 0.0
    from biobullet.model.coordinates import CoordinateJets
    jets = CoordinateJets(theta, np.zeros((cmap.n_joints, cmap.nq)), np.zeros(cmap.n_joints),
                          np.zeros(cmap.n_joints))
    for resolver in cmap.resolvers:
        if isinstance(resolver, LoopResolver):
            try:
                _, _, condition = resolver.solve(jets.theta, t, check_singular=False)
            except SolverError:
                return float("inf")
            worst = max(worst, condition)
        else:
            resolver.resolve(jets, t, False)
    return worst


#: loop residual accepted during an integration, relative to rtol × the loop's length scale (θ errors ≈ 1 % of rtol)
LOOSE_RESIDUAL = 1e-2


@contextmanager
def newton_tolerance(model, rtol: float):
    """While an integration at relative tolerance `rtol` runs: Newton accepts |Φ| ≤ 1e-2·rtol·(length scale)
    (one correction from the prediction is then usually enough; the last correction in `_finish` takes the
    error to O(|Φ|²)). No effect where that is below the round-off tolerance. A failed solve is not retried from a
    fresh model's start meanwhile (`LoopResolver.fresh_retry`). Restored on exit."""
    resolvers = [r for r in getattr(getattr(model, "coordinate_map", None), "resolvers", ())
                 if isinstance(r, LoopResolver)]
    saved = [(r.accept_residual, r.fresh_retry) for r in resolvers]
    for r in resolvers:
        loose = LOOSE_RESIDUAL * float(rtol) * r.length_scale
        r.accept_residual = loose if loose > r.residual_tolerance else None
        r.fresh_retry = False   # (a run keeps its branch: `LoopResolver.fresh_retry`)
    try:
        yield
    finally:
        for r, (value, retry) in zip(resolvers, saved):
            r.accept_residual, r.fresh_retry = value, retry


def _loop_type_hint(loops: tuple[Loop, ...], n_dependent: int) -> str:
    """A pointer to the loop type whose equation count matches (a planar four-bar written with type="point",
    the habit from OpenSim and Pinocchio, has 3 equations for 2 dependent joints: type="planar" has 2)."""
    others = sum(loop.n_equations for loop in loops[1:])
    fitting = [name for name in loop_type_names()
               if (law := get_loop_type(name)) is not None and law.n_equations == n_dependent - others
               and name != loops[0].type]
    if not fitting:
        return ""
    kind = " or ".join(f'type="{name}"' for name in fitting)
    return (f"; use {kind} for loop {loops[0].name!r} ({n_dependent - others} equations instead of "
            f"{loops[0].n_equations})" + ("; a planar mechanism closes with type=\"planar\", not \"point\""
                                          if "planar" in fitting and loops[0].type == "point" else ""))


def build_loop_resolver(model, description, dependent) -> tuple["LoopResolver | None", set[int]]:
    """(LoopResolver or None, set of implicit joint indices) from the model's `<loop>` elements: the factory the
    loader hands to `Model` (loop-closed joints that are neither listed in `<coordinates>` nor driven by a joint
    function become dependent)."""
    if not description.elements_of("loop"):
        return None, set()

    loops = parse_loops(description, model.link_names)
    listed = set(description.coordinates or ())
    support = sorted(set().union(*(loop_supports(model, loop) for loop in loops)))
    implicit = [k for k in support if model.joint_names[k] not in listed and model.joint_names[k] not in dependent]
    known = [k for k in support if k not in implicit]
    n_equations = sum(loop.n_equations for loop in loops)
    if n_equations != len(implicit):
        names = ", ".join(model.joint_names[k] for k in implicit) or "none"
        which = f"loop {loops[0].name!r} gives" if len(loops) == 1 else \
            f"loops {', '.join(repr(l.name) for l in loops)} give"
        raise ModelError(f"{which} {n_equations} equations for {len(implicit)} dependent joints ({names})"
                         + _loop_type_hint(loops, len(implicit)), file=description.file,
                         element=loops[0].source.element, attribute="type",
                         expected="as many loop equations as loop joints that are neither listed in "
                                  "<coordinates> nor driven by a function")
    initial = {i.joint: i.position for i in description.initial if i.position is not None}
    guess = [initial.get(model.joint_names[k], 0.0) for k in implicit]
    revolute = [model.bodies[[b.joint for b in model.bodies].index(model.joint_names[k])].joint_type == "revolute"
                for k in implicit]
    resolver = LoopResolver(model, loops, tuple(implicit), tuple(known), np.array(guess), np.array(revolute))
    return resolver, set(implicit)

