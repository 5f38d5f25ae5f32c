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
solutions, the generic path and its clear errors); the next segment starts after that step. The resolver's cache
(the last loop solution, its sensitivity and curvature) is carried through the segment and handed back to the
resolver, as `CompiledReducedRHS.__call__` moves it.

Used by `engine.simulate` for method DOP853 with output samples (`t_eval`), no events, no projection and no step
observers, when `CompiledReducedRHS.stepper_arguments()` offers its kernel (a single loop resolver without explicit
joint-function stages, time-independent joint torques, no contacts); everything else keeps SciPy's loop.
`simulate(..., compiled=False)` turns it off with the compiled right-hand side.

numba's on-disk cache of these kernels is keyed on this file and (through `core.jit`'s bindings stamp) on the
compiled right-hand side they call.
"""
from __future__ import annotations

import numpy as np

from biobullet.core import jit

#: SciPy's step-size controller (scipy.integrate._ivp.rk): safety factor, least and largest change per step
SAFETY, MIN_FACTOR, MAX_FACTOR = 0.9, 0.2, 10.0
#: DOP853's error estimator order is 7: the step-size exponent −1/(7 + 1)
ERROR_EXPONENT = -1.0 / 8.0

#: segment status: reached t_bound, the right-hand side handed over, step budget used up, step below the minimum
FINISHED, HANDOVER, BUDGET, TOO_SMALL = 0, 1, 2, 3



def _evaluate_py(t, y, args, cache, other, retry):
    """(status, ẏ, cache) of `_RHS` from the resolver cache `cache`, and once more from `other` when that fails and
    `retry` is set: a stage far from the last evaluated one (the dense output's stages go back into the step from
    its end) is usually near the step's start or end, as `CompiledReducedRHS.__call__` retries from a recent
    solution."""
    status, rate, new_cache = _RHS(t, y, args, cache)
    if status != 0 and retry:
        status, rate, new_cache = _RHS(t, y, args, other)
    return status, rate, new_cache


def _dop853_segment_py(t, y, f, h_abs, t_bound, rtol, atol, max_step, t_eval, next_eval, samples, max_steps,
                       a, b, c, e3, e5, d, a_extra, c_extra, args, cache):
    """DOP853 steps from (t, y, f = ẏ(t, y), h_abs) towards t_bound, as SciPy's `RungeKutta._step_impl` and
    `DOP853._dense_output_impl` / `Dop853DenseOutput` compute them; the output samples t_eval[next_eval:] inside
    each accepted step are written to `samples` (rows as t_eval; a sample at a step's end gets that step's y).

    Returns (status, t, y, f, h_abs, steps, nfev, next_eval, cache): the state after the last accepted step and
    the step size SciPy would try next (HANDOVER: the size of the step that could not be evaluated)."""
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
            return BUDGET, t, y, f, h_abs, steps, nfev, next_eval, cache
        min_step = 10.0 * abs(np.nextafter(t, np.inf) - t)
        if h_abs > max_step:
            h_abs = max_step
        elif h_abs < min_step:
            h_abs = min_step
        rejected = False
        start_cache = cache   # the solution at (t, y): a failing stage retries from it, a handover returns it
        fresh = True          # `cache` is still `start_cache`
        while True:
            if h_abs < min_step:
                return TOO_SMALL, t, y, f, h_abs, steps, nfev, next_eval, start_cache
            t_new = t + h_abs
            if t_new - t_bound > 0:
                t_new = t_bound
            h = t_new - t
            h_abs = abs(h)
            for j in range(n):
                k[0, j] = f[j]
            for s in range(1, 12):
                for j in range(n):
                    acc = 0.0
                    for r in range(s):
                        acc += k[r, j] * a[s, r]
                    stage[j] = y[j] + acc * h
                status, rate, new_cache = _EVALUATE(t + c[s] * h, stage, args, cache, start_cache, not fresh)
                nfev += 1
                if status != 0:
                    return HANDOVER, t, y, f, h_abs, steps, nfev, next_eval, start_cache
                cache = new_cache
                fresh = False
                for j in range(n):
                    k[s, j] = rate[j]
            y_new = np.empty(n)
            for j in range(n):
                acc = 0.0
                for r in range(12):
                    acc += k[r, j] * b[r]
                y_new[j] = y[j] + h * acc
            status, f_new, new_cache = _EVALUATE(t + h, y_new, args, cache, start_cache, True)
            nfev += 1
            if status != 0:
                return HANDOVER, t, y, f, h_abs, steps, nfev, next_eval, start_cache
            cache = new_cache
            for j in range(n):
                k[12, j] = f_new[j]
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
            if error_norm < 1.0:
                factor = MAX_FACTOR if error_norm == 0.0 else min(MAX_FACTOR, SAFETY * error_norm ** ERROR_EXPONENT)
                if rejected:
                    factor = min(1.0, factor)
                tried = h_abs
                h_abs *= factor
                break
            h_abs *= max(MIN_FACTOR, SAFETY * error_norm ** ERROR_EXPONENT)
            rejected = True
        end_cache = cache   # the solution at (t_new, y_new)
        # the samples inside this step: the dense output (three more stages), as run_loop asks SciPy for it
        stop = next_eval
        while stop < n_samples and t_eval[stop] <= t_new:
            stop += 1
        if stop > next_eval and t_eval[next_eval] < t_new:
            for s in range(13, 16):
                for j in range(n):
                    acc = 0.0
                    for r in range(s):
                        acc += k[r, j] * a_extra[s - 13, r]
                    stage[j] = y[j] + acc * h
                near = start_cache if c_extra[s - 13] <= 0.5 else end_cache
                status, rate, new_cache = _EVALUATE(t + c_extra[s - 13] * h, stage, args, cache, near, True)
                nfev += 1
                if status != 0:   # SciPy takes this step again (the same size: accepted again) with its output
                    return HANDOVER, t, y, f, tried, steps, nfev, next_eval, start_cache
                cache = new_cache
                for j in range(n):
                    k[s, j] = rate[j]
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
        cache = end_cache   # the next step starts from the solution at its start
        t, y, f = t_new, y_new, f_new
        steps += 1
    return FINISHED, t, y, f, h_abs, steps, nfev, next_eval, cache




def _loop_rhs_py(t, y, args, cache):
    """(status, ẏ, cache) of the single-loop compiled right-hand side (`compiled_rhs._fused_rhs_py`) for the
    stepper: args = (leading constants, trailing constants, anchor, residual tolerance, loose acceptance,
    the pipeline's (compiled model, force rows, buffers)), cache =
    (θ_known, θ_dep, sensitivity, u, h, condition) of the resolver's last solution (u, h empty: no curvature)."""
    head, tail, anchor, tolerance, loose, pipeline = args
    known0, dep0, sensitivity, u0, h0, condition = cache
    status, condition_new, sens, h, u, known_new, dep_new, out = _FUSED(
        y, *head, known0, dep0, sensitivity, u0, h0, anchor, tolerance, loose, condition, *tail, pipeline, t)
    if status != 0:
        return 1, out, cache
    return 0, out, (known_new, dep_new, sens, u, h, condition_new)


_SEGMENT = None


def _segment_kernel(fused):
    global _SEGMENT
    if _SEGMENT is None:
        rhs = jit.compiled(_loop_rhs_py, bind={"_FUSED": fused}, inline=True)
        evaluate = jit.compiled(_evaluate_py, bind={"_RHS": rhs}, inline=True) if rhs is not None else None
        _SEGMENT = (jit.compiled(_dop853_segment_py, bind={"_EVALUATE": evaluate}) if evaluate is not None
                    else None) or False
    return _SEGMENT or None


def _tableau() -> tuple:
    from scipy.integrate._ivp import dop853_coefficients as coefficients
    n = coefficients.N_STAGES
    return (np.ascontiguousarray(coefficients.A[:n, :n]), np.ascontiguousarray(coefficients.B),
            np.ascontiguousarray(coefficients.C[:n]), np.ascontiguousarray(coefficients.E3),
            np.ascontiguousarray(coefficients.E5), np.ascontiguousarray(coefficients.D),
            np.ascontiguousarray(coefficients.A[n + 1:]), np.ascontiguousarray(coefficients.C[n + 1:]))


class CompiledSteps:
    """`advance(solver, t_eval, next_eval, max_steps)`: a running SciPy DOP853 solver moved on by compiled steps.

    Build with :meth:`for_rhs`, which returns None where this path does not apply."""

    #: segments in a row that take no step before the run stops trying (a model the kernel keeps declining)
    MISSES = 8

    def __init__(self, rhs, kernel) -> None:
        self.rhs, self.kernel = rhs, kernel
        self.tableau = _tableau()
        self.misses = 0
        self.steps = 0   # steps taken in compiled segments over the run

    @classmethod
    def for_rhs(cls, rhs) -> "CompiledSteps | None":
        """For a compiled right-hand side that offers its kernel to the stepper (`stepper_arguments`), numba
        enabled; else None."""
        offer = getattr(rhs, "stepper_arguments", None)
        if offer is None or not jit.ENABLED or offer() is None:
            return None
        kernel = _segment_kernel(rhs._kernel)
        return cls(rhs, kernel) if kernel is not None else None

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
        args, cache = offer
        t_eval = np.ascontiguousarray(t_eval, dtype=float)   # (one compiled signature)
        samples = np.empty((len(t_eval), len(solver.y)))
        status, t, y, f, h_abs, steps, nfev, stop, cache = self.kernel(
            float(solver.t), np.array(solver.y, dtype=float), np.array(solver.f, dtype=float), float(solver.h_abs),
            float(solver.t_bound), float(solver.rtol), float(solver.atol), float(solver.max_step),
            t_eval, int(next_eval), samples, int(max_steps), *self.tableau, args, cache)
        self.rhs.take_cache(cache)
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
