"""SciPy's DOP853 stepped in one compiled call, for event-free runs whose right-hand side is compiled.

With the right-hand side compiled (`compiled_rhs.CompiledReducedRHS`: the four-bar's ≈ 6 µs per call inside
numba), driving SciPy's `DOP853` from Python costs more than the dynamics: per call ≈ 7 µs of numba argument
unboxing and result boxing plus ≈ 3 µs of glue (`System.rhs`, SciPy's `fun` wrappers), and per step ≈ 250 µs of
SciPy's own Python (12 stage combinations, error norm, controller, dense output). `CompiledSteps.advance` takes
over a running SciPy `DOP853` solver instead: from its state (t, y, f = ẏ(t, y), h_abs) it takes exactly the steps
SciPy would take — SciPy's own tableau (`scipy.integrate._ivp.dop853_coefficients`), error norm (the 5th/3rd-order
blend of `DOP853._estimate_error_norm`), step-size controller (safety 0.9, factors 0.2 … 10, no growth right after
a rejection), minimum step and dense output (`Dop853DenseOutput`, three extra stages) for the output samples inside
each step — in one numba call (`_dop853_segment_py`), writes the samples, and puts the state back into the solver.
Only the order of a few sums differs from SciPy's numpy calls: accepted steps agree to round-off (after a
rejected try, to the round-off of its error norm, which sets the next try's size;
tests/unit/integrate/test_compiled_stepper.py). The whole four-bar swing (1 s, rtol 1e-6) takes SciPy's 12 steps
and 215 evaluations in one segment: 11.3 ms → 4.6 ms for the `simulate` call (docs/speed.md).

Handing back: the compiled right-hand side returns a status. A stage it declines is tried once more from the loop
solution at the step's start or end, whichever is nearer in the step (the dense output's stages go back into the
step from its end; `CompiledReducedRHS.__call__` retries from a recent solution likewise). When it still cannot
evaluate a stage (the loop's hot path hands over: large input change, Newton not contracting, ill-conditioned
loop, not finite — see `compiled_rhs`), or
the step size falls below SciPy's minimum, the segment returns at the last accepted step with the step size to try,
and `run_loop` lets SciPy take the next step through the full right-hand side (`System.rhs`: the retry from recent
solutions, the callback stage and its clear errors); the next segment starts after that step. The loop stage's warm
starts (the last loop solutions, their sensitivities and curvatures) live in the run's Data and move with the
steps, as `CompiledReducedRHS.__call__` moves them; a handover leaves them at the last accepted step's.

Used by `engine.simulate` for method DOP853 with output samples (`t_eval`), no events, no projection and no step
observers, when `CompiledReducedRHS.stepper_arguments()` offers its kernel (any map the pipeline evaluates —
explicit joint functions, or loops the loop stage solves —, time-independent joint torques, no contacts, no
muscles); everything else keeps SciPy's loop. An explicit map has no warm starts: its segment's retries and
handovers have nothing to move.

The segment calls the right-hand side by the address of its compiled C entry (`core.jit.entry_address`,
`address_caller`), not linked into it: one segment serves the explicit and the loop maps' kernels (their arguments
have one numba type), is compiled once per installation, and its compile does not optimise the right-hand side's code again
(per step no slower: docs/speed.md "Cold start"). numba's on-disk cache of it is keyed on this file and on that
signature.
"""
from __future__ import annotations

import hashlib
from typing import NamedTuple

import numpy as np

from biobullet.core import jit

#: SciPy's step-size controller (scipy.integrate._ivp.rk): safety factor, least and largest change per step
SAFETY, MIN_FACTOR, MAX_FACTOR = 0.9, 0.2, 10.0
#: DOP853's error estimator order is 7: the step-size exponent −1/(7 + 1)
ERROR_EXPONENT = -1.0 / 8.0

#: segment status: reached t_bound, the right-hand side handed over, step budget used up, step below the minimum
FINISHED, HANDOVER, BUDGET, TOO_SMALL = 0, 1, 2, 3

class Tableau(NamedTuple):
    """SciPy's DOP853 tableau (`scipy.integrate._ivp.dop853_coefficients`): the 12 stages' A, B, C, the error
    weights E3, E5, the dense output's D and its three extra stages' A and C."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    e3: np.ndarray
    e5: np.ndarray
    d: np.ndarray
    a_extra: np.ndarray
    c_extra: np.ndarray


class StepControl(NamedTuple):
    """SciPy's step-size control of the running solver: end time, tolerances, largest step, step budget."""

    t_bound: float
    rtol: float
    atol: float
    max_step: float
    max_steps: int


# the right-hand side's caller by address (`core.jit.address_caller`) and `_evaluate_py`, bound when the segment
# compiles
_CALL_RHS = _EVALUATE = None


def _evaluate_py(t, y, args, other, retry, out):
    """Status of the right-hand side (`pipeline.stages.rhs_py`, called by its address) into `out` from the warm
    starts in the data arrays (args = (compiled model, data arrays, force rows, shadow rows, the kernel's
    address)), and once more from the warm-start buffer `other` when that fails and `retry` is set: a stage far
    from the last evaluated one (the dense output's stages go back into the step from its end) is usually near the
    step's start or end, as `CompiledReducedRHS.__call__` retries from a recent solution."""
    model, data, forces, shadow_rows, address = args
    rhs = _CALL_RHS(address)
    status = rhs(model, data, forces, shadow_rows, y, t, out)
    if status != 0 and retry:
        values = data.loop_warm.values
        for i in range(values.shape[0]):
            values[i] = other[i]
        status = rhs(model, data, forces, shadow_rows, y, t, out)
    return status


def _dop853_segment_py(state, control, tableau, t_eval, next_eval, samples, args):
    """DOP853 steps from (t, y, f = ẏ(t, y), h_abs) towards t_bound, as SciPy's `RungeKutta._step_impl` and
    `DOP853._dense_output_impl` / `Dop853DenseOutput` compute them; the output samples t_eval[next_eval:] inside
    each accepted step are written to `samples` (rows as t_eval; a sample at a step's end gets that step's y).

    state = (t, y, f, h_abs) of the solver, control = `StepControl`, tableau = `Tableau`, args = the right-hand
    side's (`_evaluate_py`), whose loop warm starts move with the steps (back to the last accepted step's on a
    handover). Returns (status, t, y, f, h_abs, steps, nfev, next_eval): the state after the last accepted step
    and the step size SciPy would try next (HANDOVER: the size of the step that could not be evaluated)."""
    t, y, f, h_abs = state
    t_bound, rtol, atol, max_step, max_steps = control
    a, b, c, e3, e5, d, a_extra, c_extra = tableau
    warm = args[1].loop_warm.values
    start_warm = np.empty_like(warm)   # the warm starts at the step's start and end (retries, handovers)
    end_warm = np.empty_like(warm)
    n_warm = warm.shape[0]
    rate = np.empty(y.shape[0])
    n = y.shape[0]
    k = np.empty((16, n))          # stages 0 … 11, ẏ at the step's end (12), the dense output's three (13 … 15)
    stage = np.empty(n)
    scale = np.empty(n)
    dense = np.empty((7, n))
    n_samples = t_eval.shape[0]
    steps = 0
    nfev = 0
    tried = h_abs
    while t < t_bound:
        if steps >= max_steps:
            return BUDGET, t, y, f, h_abs, steps, nfev, next_eval
        min_step = 10.0 * abs(np.nextafter(t, np.inf) - t)
        if h_abs > max_step:
            h_abs = max_step
        elif h_abs < min_step:
            h_abs = min_step
        rejected = False
        # the solution at (t, y): a failing stage retries from it, a handover returns to it (every copy of the warm
        # starts element by element: a broadcast assignment compiles numba's shape-error message)
        for i in range(n_warm):
            start_warm[i] = warm[i]
        fresh = True           # the warm start is still the step's start
        while True:
            if h_abs < min_step:
                for i in range(n_warm):
                    warm[i] = start_warm[i]
                return TOO_SMALL, t, y, f, h_abs, steps, nfev, next_eval
            t_new = t + h_abs
            if t_new - t_bound > 0:
                t_new = t_bound
            h = t_new - t
            h_abs = abs(h)
            for j in range(n):
                k[0, j] = f[j]
            y_new = np.empty(n)
            f_new = np.empty(n)
            # every evaluation of the step through one call site: stages 1 … 11, ẏ at the step's end (12) and,
            # the step accepted with output samples inside it, the dense output's three stages (13 … 15), as
            # run_loop asks SciPy for them. Each site of the inlined `_evaluate_py` passes the run's ≈ 110 arrays
            # by value to the right-hand side's C entry, ≈ 1.1 s of compile CPU a site (two sites, the call and
            # its retry, where there were six; one call in a loop of tries cost ≈ 2–4 % per step)
            accepted = dense_output = False
            stop = next_eval
            for s in range(1, 16):
                near = start_warm
                if s < 12:
                    for j in range(n):
                        acc = 0.0
                        for r in range(s):
                            acc += k[r, j] * a[s, r]
                        stage[j] = y[j] + acc * h
                    at, point, retry, into = t + c[s] * h, stage, not fresh, rate
                elif s == 12:
                    for j in range(n):
                        acc = 0.0
                        for r in range(12):
                            acc += k[r, j] * b[r]
                        y_new[j] = y[j] + h * acc
                    at, point, retry, into = t + h, y_new, True, f_new
                else:
                    for j in range(n):
                        acc = 0.0
                        for r in range(s):
                            acc += k[r, j] * a_extra[s - 13, r]
                        stage[j] = y[j] + acc * h
                    if c_extra[s - 13] > 0.5:
                        near = end_warm
                    at, point, retry, into = t + c_extra[s - 13] * h, stage, True, rate
                status = _EVALUATE(at, point, args, near, retry, into)
                nfev += 1
                if status != 0:   # (after acceptance SciPy takes this step again, the same size, with its output)
                    for i in range(n_warm):
                        warm[i] = start_warm[i]
                    return HANDOVER, t, y, f, tried if accepted else h_abs, steps, nfev, next_eval
                fresh = False
                for j in range(n):
                    k[s, j] = into[j]
                if s != 12:
                    continue
                # the error norm of DOP853._estimate_error_norm: ‖e5‖² / √((‖e5‖² + 0.01 ‖e3‖²) n), e = K E / scale
                sum5, sum3 = 0.0, 0.0
                for j in range(n):
                    scale[j] = atol + max(abs(y[j]), abs(y_new[j])) * rtol
                    err5, err3 = 0.0, 0.0
                    for r in range(13):
                        err5 += k[r, j] * e5[r]
                        err3 += k[r, j] * e3[r]
                    err5 /= scale[j]
                    err3 /= scale[j]
                    sum5 += err5 * err5
                    sum3 += err3 * err3
                norm5 = np.sqrt(sum5) ** 2   # as numpy's norm(·)**2
                norm3 = np.sqrt(sum3) ** 2
                if norm5 == 0.0 and norm3 == 0.0:
                    error_norm = 0.0
                else:
                    error_norm = abs(h) * norm5 / np.sqrt((norm5 + 0.01 * norm3) * n)
                if not error_norm < 1.0:
                    h_abs *= max(MIN_FACTOR, SAFETY * error_norm ** ERROR_EXPONENT)
                    rejected = True
                    break
                factor = MAX_FACTOR if error_norm == 0.0 else min(MAX_FACTOR, SAFETY * error_norm ** ERROR_EXPONENT)
                if rejected:
                    factor = min(1.0, factor)
                tried = h_abs
                h_abs *= factor
                accepted = True
                for i in range(n_warm):   # the solution at (t_new, y_new)
                    end_warm[i] = warm[i]
                while stop < n_samples and t_eval[stop] <= t_new:
                    stop += 1
                dense_output = stop > next_eval and t_eval[next_eval] < t_new
                if not dense_output:
                    break
            if accepted:
                break
        if dense_output:
            for j in range(n):
                delta = y_new[j] - y[j]
                dense[0, j] = delta
                dense[1, j] = h * f[j] - delta
                dense[2, j] = 2 * delta - h * (f_new[j] + f[j])
                for i in range(4):
                    acc = 0.0
                    for r in range(16):
                        acc += d[i, r] * k[r, j]
                    dense[3 + i, j] = h * acc
        span = t_new - t
        for m in range(next_eval, stop):
            if t_eval[m] < t_new:
                x = (t_eval[m] - t) / span
                for j in range(n):
                    value = 0.0
                    for i in range(7):   # Horner in x and 1 − x over the reversed rows (Dop853DenseOutput)
                        value += dense[6 - i, j]
                        value *= x if i % 2 == 0 else 1.0 - x
                    samples[m, j] = value + y[j]
            else:   # the step's end
                for j in range(n):
                    samples[m, j] = y_new[j]
        next_eval = stop
        for i in range(n_warm):   # the next step starts from the solution at its start
            warm[i] = end_warm[i]
        t, y, f = t_new, y_new, f_new
        steps += 1
    return FINISHED, t, y, f, h_abs, steps, nfev, next_eval


def _segment_kernel(signature):
    """The compiled `_dop853_segment_py` calling a right-hand side of numba `signature` by its address. The
    right-hand side is not linked into the segment, so one segment serves the explicit and the loop maps' kernels
    (their arguments have one type) and its compile does not optimise the right-hand side's code again."""
    evaluate = jit.compiled(_evaluate_py, bind={"_CALL_RHS": jit.address_caller(signature)}, inline=True)
    # (named by its signature: a kernel of other argument types is another segment)
    variant = "s" + hashlib.sha256(str(signature).encode()).hexdigest()[:12]
    return jit.compiled(_dop853_segment_py, bind={"_EVALUATE": evaluate}, variant=variant)


def _tableau() -> Tableau:
    from scipy.integrate._ivp import dop853_coefficients as coefficients
    n = coefficients.N_STAGES
    return Tableau(np.ascontiguousarray(coefficients.A[:n, :n]), np.ascontiguousarray(coefficients.B),
            np.ascontiguousarray(coefficients.C[:n]), np.ascontiguousarray(coefficients.E3),
            np.ascontiguousarray(coefficients.E5), np.ascontiguousarray(coefficients.D),
            np.ascontiguousarray(coefficients.A[n + 1:]), np.ascontiguousarray(coefficients.C[n + 1:]))


class CompiledSteps:
    """`advance(solver, t_eval, next_eval, max_steps)`: a running SciPy DOP853 solver moved on by compiled steps.

    Build with :meth:`for_rhs`, which returns None where this path does not apply."""

    #: segments in a row that take no step before the run stops trying (a model the kernel keeps declining)
    MISSES = 8

    def __init__(self, rhs) -> None:
        self.rhs = rhs
        self.tableau = _tableau()
        self.misses = 0
        self.steps = 0   # steps taken in compiled segments over the run
        self._kernel = None   # (the right-hand side's signature, the segment kernel for it)

    @classmethod
    def for_rhs(cls, rhs) -> "CompiledSteps | None":
        """For a compiled right-hand side whose runs its kernel can step (`CompiledReducedRHS.steps_compiled`; each
        segment asks for its arguments, `stepper_arguments`); else None."""
        offers = getattr(rhs, "steps_compiled", None)
        return cls(rhs) if offers is not None and offers() else None

    #: most steps in one compiled call: a long run returns to Python between segments (progress bar, Ctrl-C)
    SEGMENT_STEPS = 2000

    def advance(self, solver, t_eval: np.ndarray, next_eval: int, max_steps: int
                ) -> tuple[int, np.ndarray, int, int]:
        """Steps of `solver` (a running scipy DOP853) until t_bound, a handover or `max_steps`; the solver is left
        at the last accepted step (t, y, f, h_abs as SciPy's own step would leave them). Returns (the next sample
        index, the samples t_eval[next_eval:returned index] (rows), steps taken, right-hand side evaluations)."""
        # (a per-component atol, or a model the kernel keeps declining: SciPy's steps)
        usable = self.misses < self.MISSES and np.ndim(solver.atol) == 0
        offer = self.rhs.stepper_arguments() if usable else None
        if offer is None:
            return next_eval, np.zeros((0, len(solver.y))), 0, 0
        t_eval = np.ascontiguousarray(t_eval, dtype=float)   # (one compiled signature)
        samples = np.empty((len(t_eval), len(solver.y)))
        state = (float(solver.t), np.array(solver.y, dtype=float), np.array(solver.f, dtype=float),
                 float(solver.h_abs))
        control = StepControl(float(solver.t_bound), float(solver.rtol), float(solver.atol), float(solver.max_step),
                              int(max_steps))
        *args, signature = offer
        if self._kernel is None or self._kernel[0] != signature:
            self._kernel = (signature, _segment_kernel(signature))
        arguments = (state, control, self.tableau, t_eval, int(next_eval), samples, tuple(args))
        status, t, y, f, h_abs, steps, nfev, stop = jit.matched_entry(self._kernel[1], *arguments)(*arguments)
        self.misses = 0 if steps else self.misses + 1
        self.steps += int(steps)
        if steps:   # (SciPy's own next step sets t_old, y_old and its dense output's data)
            solver.t, solver.y, solver.f = t, y, f
        solver.h_abs = h_abs
        solver.nfev += nfev
        if status == FINISHED:
            solver.status = "finished"
        return stop, samples[next_eval:stop], steps, nfev


__all__ = ["CompiledSteps"]
