"""The stepping loop: SciPy's OdeSolver classes driven one accepted step at a time.

Driving the steps ourselves (instead of `solve_ivp`) keeps every accepted state, so a failure still yields the
partial trajectory, lets a progress bar follow simulated time, and lets the loop restart the integrator at
events of switched force elements (no step straddles a discontinuity) or after a projection.
Event location: a strict sign change of g between the ends of a step (honouring `direction`), the root by
Brent's method on the dense output (xtol 4 ε), then moved to the first representable time on the far side of the
surface so that a restarted integrator starts where the new right-hand side applies. The state there is not the
crossing step's dense output where the surface is a kink of the right-hand side (`LoopEvent.kink`; that step was
taken across it): it is re-integrated from the step's start (`_SmoothSide`; by Radau in a multistep run).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy.integrate import BDF, DOP853, LSODA, RK23, RK45, Radau
from scipy.optimize import brentq

METHODS = {"DOP853": DOP853, "RADAU": Radau, "BDF": BDF, "LSODA": LSODA, "RK45": RK45, "RK23": RK23}
EPS = np.finfo(float).eps


class _LazyDense:
    """The dense output of the solver's last step, built on the first call (most steps need none: no
    sample inside, no event crossed, no observer)."""

    __slots__ = ("solver", "interpolant")

    def __init__(self, solver) -> None:
        self.solver, self.interpolant = solver, None

    def __call__(self, s):
        if self.interpolant is None:
            self.interpolant = self.solver.dense_output()
        return self.interpolant(s)


class _StepRhs:
    """`rhs` as the solver sees it. Inside a step (`stepping`), a failure of one of the `rejects` types (the
    right-hand side cannot be evaluated at a trial stage: forces overflowed, a loop that does not close) returns
    NaN, which makes the solver reject the step and try a shorter one: a stage of a step that is far too long (the
    first step after a restart reuses the last step size) can land deep inside a stop the accepted path never
    nears. The failure is kept (`failure`) and raised if the step cannot be taken at all. Outside a step (the
    solver's start, dense output) failures propagate."""

    __slots__ = ("rhs", "rejects", "stepping", "failure", "calls")

    def __init__(self, rhs: Callable[[float, np.ndarray], np.ndarray], rejects: tuple[type[Exception], ...]) -> None:
        self.rhs, self.rejects, self.stepping, self.failure = rhs, rejects, False, None
        self.calls = 0   # every evaluation of the run, the Jacobians' included (the work budget counts these)

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        self.calls += 1
        if not self.stepping:
            return self.rhs(t, y)
        try:
            return self.rhs(t, y)
        except self.rejects as exc:
            # a stage after a failed one is fed its NaN ("the state is not finite"): keep the cause, not that echo
            if self.failure is None or np.all(np.isfinite(y)):
                self.failure = exc
            return np.full(len(y), np.nan)

    def step(self, solver) -> str | None:
        """solver.step() with trial failures rejecting the step; raises the kept failure when the step failed
        (or the solver broke on the NaN) after one, or took a step to a state that is not finite."""
        self.stepping, self.failure = True, None
        try:
            message = solver.step()
        except Exception:
            if self.failure is not None:
                raise self.failure from None
            raise
        finally:
            self.stepping = False
        if self.failure is not None and (solver.status == "failed" or not np.all(np.isfinite(solver.y))):
            raise self.failure
        return message


def finite_difference_jacobian(rhs: Callable[[float, np.ndarray], np.ndarray]):
    """jac(t, y) for the implicit methods: forward differences with the step √ε·max(|yⱼ|, 1) (rad, m, rad/s, …)
    — fixed, unlike SciPy's own `num_jac`, whose adaptive factor grows tenfold whenever a column's difference looks
    small next to the largest entry of f; on a very stiff model (a spring of 10⁹ N/m beside a loop's small terms)
    it grew until the perturbed state overflowed, and Radau failed at t = 1e-9 s. A column whose forward stage
    cannot be evaluated (NaN from a rejected stage) is taken backwards; where neither can (the state is within a
    step of a singular loop configuration) it raises FloatingPointError, and `_StepRhs.step` stops the run with the
    failure the right-hand side reported (a NaN Jacobian, as SciPy's would be, is kept by Radau for later steps
    and failed one of them with LAPACK's "array must not contain infs or NaNs"). While `jac.near_switch` is set
    (`run_loop`: a restart on the surface of a kink event) each column is taken both ways and the smaller kept: a
    damped switched stop's force jumps by c ṗ there, and the forward difference from a state 1e-17 rad inside, taken
    across the surface, made a column of jump / 1.5e-8 — Radau's Newton failed on it, and the run stopped with
    "step size less than spacing between numbers"."""
    def jac(t: float, y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        f0 = np.asarray(rhs(t, y), dtype=float)
        n = len(y)
        out = np.empty((len(f0), n))
        if not np.all(np.isfinite(f0)):
            raise FloatingPointError("the right-hand side cannot be evaluated at the Jacobian's state")
        steps = np.sqrt(EPS) * np.maximum(np.abs(y), 1.0)
        probe = y.copy()
        for j in range(n):
            for h in (steps[j], -steps[j]):
                probe[j] = y[j] + h
                h = probe[j] - y[j]   # (the step as represented)
                column = np.asarray(rhs(t, probe), dtype=float)
                if np.all(np.isfinite(column)):
                    out[:, j] = (column - f0) / h
                    break
            else:
                raise FloatingPointError(f"the right-hand side cannot be evaluated on either side of the state "
                                         f"(Jacobian column {j})")
            if jac.near_switch and h > 0.0:   # (the side without the jump: the smaller difference)
                probe[j] = y[j] - steps[j]
                back = (np.asarray(rhs(t, probe), dtype=float) - f0) / (probe[j] - y[j])
                if np.all(np.isfinite(back)) and np.linalg.norm(back) < np.linalg.norm(out[:, j]):
                    out[:, j] = back
            probe[j] = y[j]
        return out
    jac.near_switch = False
    return jac


class StepFailure(Exception):
    """The solver could not continue (message, time and last accepted state)."""

    def __init__(self, message: str, t: float, y: np.ndarray) -> None:
        super().__init__(message)
        self.t, self.y = t, y


@dataclass
class LoopEvent:
    """An event as the loop sees it: g(t, y), flags, and the name to record."""

    name: str
    g: Callable[[float, np.ndarray], float]
    direction: float = 0.0
    terminal: bool = False
    restart: bool = False
    action: Callable[[float, np.ndarray], None] | None = None
    # the right-hand side switches at g = 0 by the state alone (`core.events.Event.kink`; a callable is asked when
    # the event is located)
    kink: bool | Callable[[], bool] = False

    def kinked(self) -> bool:
        return bool(self.kink() if callable(self.kink) else self.kink)


#: events located within this many ε·max(1, |t|) of the cut are simultaneous: all their actions run
SIMULTANEOUS = 64.0


@dataclass
class LoopResult:
    """A run's samples and statistics. `y` holds the states at the times of `t`: a row per sample (the initial
    state; every accepted step without `t_eval`), or a block of rows (2-D) for the consecutive samples of one step
    or one compiled segment (`state_array` joins them)."""

    t: list[float] = field(default_factory=list)
    y: list[np.ndarray] = field(default_factory=list)
    events: list[tuple[str, float, np.ndarray]] = field(default_factory=list)
    status: str = "running"
    message: str = ""
    nfev: int = 0
    njev: int = 0
    steps: int = 0
    restarts: int = 0
    last_t: float = 0.0
    last_y: np.ndarray | None = None

    def state_array(self, size: int) -> np.ndarray:
        """The states of the samples as one (n, size) array (a segment's block copied whole, not row by row)."""
        return np.concatenate([np.reshape(entry, (-1, size)) for entry in self.y]) if self.y \
            else np.zeros((0, size))


#: accepted steps of one run before it stops with a clear error (bounded work; `max_steps` overrides)
MAX_STEPS = 200_000
#: right-hand-side evaluations (Jacobians included) an implicit method may take in one run before it stops with a
#: clear error: MAX_EVALUATIONS + EVALUATIONS_PER_SECOND · (t_end − t0) (`max_evaluations` overrides). It bounds
#: the work of a problem too stiff even for the implicit method (a stiffened Andrews squeezer crawls at ~4·10⁸
#: evaluations per simulated second, about 0.07 ms of CPU each: ~10 s for `--t-end 0.02`); the bundled squeezer,
#: the fastest bundled mechanism, takes ~6·10⁵ per second with Radau at rtol 1e-9. Explicit methods are bounded by
#: MAX_STEPS and, when stiff, switch to an implicit one (see STIFF_MEAN_STEP)
MAX_EVALUATIONS = 100_000
EVALUATIONS_PER_SECOND = 2_000_000
#: stiffness watch of the explicit methods: after STIFF_CHECK_STEPS accepted steps, a mean step below
#: STIFF_MEAN_STEP (s) — more than 10⁵ steps per simulated second, where the bundled models take 10²–10⁴ — is
#: reported once (`on_stiff`): the step size is then held down by stability, not accuracy, and an implicit method
#: takes far fewer steps
STIFF_CHECK_STEPS = 5_000   # (steps per window)
STIFF_MEAN_STEP = 1e-5
#: a mean step of at least this fraction of the caller's `max_step` is held down by max_step, not by stiffness: such
#: a window is not reported (a pendulum run with max_step=2e-6 was called stiff, switched to Radau — whose steps
#: max_step holds down alike — and stopped at its evaluation budget, where DOP853 alone finished)
HELD_BY_MAX_STEP = 0.5
IMPLICIT = ("RADAU", "BDF", "LSODA")
MULTISTEP = (BDF, LSODA)


def _crossed(g_old: float, g_new: float, direction: float) -> bool:
    up = g_old < 0.0 <= g_new
    down = g_old > 0.0 >= g_new
    return (up and direction >= 0) or (down and direction <= 0)


def _locate(event: LoopEvent, sol, t_old: float, t_new: float, g_new: float) -> float:
    """Root of g in [t_old, t_new], moved to the side of t_new (g has g_new's sign there, or is 0)."""
    g = lambda s: event.g(s, sol(s))  # noqa: E731
    g_start, g_end = g(t_old), g(t_new)
    if not (np.isfinite(g_start) and np.isfinite(g_end)) or np.sign(g_start) == np.sign(g_end) != 0:
        # the dense output does not bracket the crossing that the step ends saw (a stiff surface can make
        # the interpolant miss it): the event is taken at the step's end, where it was detected
        return t_new
    try:
        root = brentq(g, t_old, t_new, xtol=4 * EPS, rtol=4 * EPS)
    except ValueError:
        # g at an end was at round-off from zero and changed sign when evaluated again (a loop model's g comes
        # through Newton from the resolver's moving warm start): the crossing is at that end — the one where
        # |g| was smaller; from t_old the loop below moves it to g_new's side
        if abs(g_start) > abs(g_end):
            return t_new
        root = t_old
    delta = 4 * EPS * max(1.0, abs(root))
    while root < t_new:
        value = g(root)
        if value == 0.0 or np.sign(value) == np.sign(g_new):
            break
        root = min(root + delta, t_new)
        delta *= 2.0
    return root


def _has_crossed(value: float, g_new: float) -> bool:
    return value == 0.0 or np.sign(value) == np.sign(g_new)


class _SmoothSide:
    """The state at a cutting event whose surface is a kink of the right-hand side (`LoopEvent.kink`: a switched
    stop's law reads θ) from the smooth side. The step that crossed it was taken across the kink: its dense
    output, cut at the root, carries that step's error of a non-smooth step (an elastic stop's energy jumped by
    ~10³ rtol per event). Instead the state is re-integrated from the step's start (t_old, y_old) to the root by a
    fresh solver whose first step spans exactly that interval (its stages stay on the smooth side; error control
    may split it), and the root is located again on that step's dense output. Events whose action switches the
    right-hand side (contacts: friction keeps opposing the slide until the slip stop is located) have a smooth
    crossing step: its output is exact there, and a re-integration ending on the surface only added its end's
    error (3e-12 m on a uniformly decelerated block). A multistep method (BDF, LSODA) restarted there would climb
    from order 1 in many short steps (LSODA's energy error at a stop grew with it), and its crossing step's output
    kept the kink's error: its runs re-integrate by Radau (one-step, fifth order, as fit for stiffness as they)."""

    def __init__(self, make: Callable, step_rhs: _StepRhs, t_old: float, y_old: np.ndarray) -> None:
        self.make, self.step_rhs, self.t_old, self.y_old = make, step_rhs, t_old, y_old
        self.nfev = 0

    def restep(self, t_stop: float):
        """A solver stepped from (t_old, y_old) to exactly t_stop, or None when it could not get there."""
        if not t_stop > self.t_old:
            return None
        sub = None
        try:
            sub = self.make(self.t_old, self.y_old, t_stop, t_stop - self.t_old)
            while sub.status == "running":
                self.step_rhs.step(sub)
        except (ArithmeticError, ValueError, *self.step_rhs.rejects):
            return None   # (the crossing step's own dense output serves, as before)
        finally:
            self.nfev += 0 if sub is None else sub.nfev
        return sub if sub.status == "finished" and np.all(np.isfinite(sub.y)) else None

    def cut(self, event: LoopEvent, root: float, t_new: float, g_new: float):
        """(t, y) at the event located at `root` on the crossing step: y re-integrated, t moved to the first time
        where it has crossed; None when the re-integration cannot serve (the caller keeps the crossing step's
        interpolant). Samples and observers inside the step keep the crossing step's output: the smooth step's
        is built on f at its end, on the surface, where a discontinuous right-hand side (Coulomb friction at slip
        stop) takes either side's value and bent the whole output (4e-5 m/s off a linear velocity)."""
        sub = self.restep(root)
        if sub is None:
            return None
        dense = _LazyDense(sub)
        t_high, delta = root, 4 * EPS * max(1.0, abs(root))
        # the root as located on the crossing step may fall short of the surface on the smooth side: the smooth
        # step's output (a polynomial, good a little beyond its end) brackets it from there
        while not _has_crossed(event.g(t_high, sub.y if t_high == root else dense(t_high)), g_new):
            if t_high >= t_new:
                return None
            t_high, delta = min(t_high + delta, t_new), 2.0 * delta
        # (error control may have split the re-integration: the output is the last step's, over [sub.t_old, root])
        t = _locate(event, dense, sub.t_old, t_high, g_new)
        if t == root:
            return root, sub.y.copy()
        again = self.restep(t)
        if again is not None and _has_crossed(event.g(t, again.y), g_new):
            return t, again.y.copy()
        return (root, sub.y.copy()) if t_high == root else None


Switch = Callable[[float, np.ndarray, tuple[str, ...]], "np.ndarray | None"]


def _switched(switch: Switch, t: float, y: np.ndarray, names: tuple[str, ...], out: LoopResult) -> np.ndarray:
    """The state a hybrid run restarts from after `switch` (its new state, or y)."""
    y_new = switch(t, y.copy(), names)
    if y_new is None:
        return y
    out.last_y = np.array(y_new, dtype=float)
    return out.last_y.copy()


def run_loop(rhs, t0: float, y0: np.ndarray, t_end: float, *, method: str, rtol: float, atol: float,
             max_step: float, t_eval: np.ndarray | None,
             events: list[LoopEvent] | Callable[[], list[LoopEvent]],
             project: Callable[[float, np.ndarray], np.ndarray] | None = None,
             on_step: Callable[[float], None] | None = None, result: LoopResult | None = None,
             observe: Callable[[float, float, Callable], None] | None = None,
             max_steps: int | None = None, fast=None,
             on_stiff: Callable[[float, float], str | None] | None = None,
             rejects: tuple[type[Exception], ...] = (), switch: Switch | None = None,
             breakpoints: np.ndarray | list[float] = (), max_evaluations: int | None = None) -> LoopResult:
    """Integrate y' = rhs(t, y) from t0 to t_end. Samples at `t_eval` (dense output) or, if None, at every
    accepted step. `project(t, y)` is applied after each accepted step; when it moves y by more than atol the
    integrator restarts from the projected state. Raises StepFailure; `result` (pass one in) then holds
    everything up to the failure. `observe(t_old, t_stop, sol)` sees every accepted step (cut at an event) with
    its dense output; at a restart the `action(t, y)` of the cutting event, and of every event located at the
    same time or whose surface the cut state has crossed, runs before the integrator restarts. `fast` (`compiled_stepper.CompiledSteps`, DOP853 only) takes
    the steps it can in compiled segments between SciPy's own steps, on runs without events, projection or step
    observers that sample at `t_eval`. `on_stiff(t, mean_step)` is called once when an explicit method's steps
    look held down by stiffness (see STIFF_MEAN_STEP); when it returns a method name (e.g. "Radau"), the run goes on
    with that method from the last accepted state. An exception of a `rejects` type raised by `rhs` at a stage of a
    step rejects that step (the solver tries a shorter one); it is re-raised when no step can be taken. Radau and BDF
    get `finite_difference_jacobian` (LSODA keeps its own). After `max_evaluations` (default: see MAX_EVALUATIONS)
    evaluations by an implicit method the run stops with a StepFailure saying so (`LoopResult.status` = "budget").

    Hybrid runs (a discrete mode that changes the right-hand side, the events and the state at events): `events`
    may be a callable returning the current mode's events, asked again at every restart; `switch(t, y, names)`
    runs at every restart after the events' actions, with the names of the events located at that time (or
    ("breakpoint",) at a breakpoint); it updates the mode and returns the state to restart from (an impact map, a
    projection) or None to keep y. `breakpoints`: times the integrator steps to exactly and restarts at (switched
    controllers, periodic projections)."""
    solver_class = METHODS[method.upper()]
    watch_stiffness = on_stiff is not None and method.upper() not in IMPLICIT
    window = (0, float(t0))   # (steps, t) at the start of the stiffness watch's current window
    out = result if result is not None else LoopResult()
    t, y = float(t0), np.array(y0, dtype=float)
    out.last_t, out.last_y = t, y.copy()
    next_eval = 0
    if t_eval is None:
        out.t.append(t)
        out.y.append(y.copy())
    else:
        while next_eval < len(t_eval) and t_eval[next_eval] <= t:
            out.t.append(float(t_eval[next_eval]))
            out.y.append(y.copy())
            next_eval += 1
    first_step = None
    step_rhs = _StepRhs(rhs, rejects)
    budget = MAX_STEPS if max_steps is None else int(max_steps)
    mode_events = events if callable(events) else (lambda: events)
    stops = [float(b) for b in sorted(breakpoints) if t0 < b < t_end] + [float(t_end)]
    evaluation_budget = int(MAX_EVALUATIONS + EVALUATIONS_PER_SECOND * (t_end - t0)) if max_evaluations is None \
        else int(max_evaluations)
    jacobian = finite_difference_jacobian(step_rhs)
    on_kink = False   # the run restarts on the surface of a kink event (until its first accepted step)
    implicit_from = None   # step_rhs.calls when an implicit method took over (the evaluation budget counts from there)
    if (events or project is not None or observe is not None or t_eval is None or method.upper() != "DOP853"
            or switch is not None or len(stops) > 1):
        fast = None   # the compiled segments write samples only (no event checks, projection or observers)
    def make(t_start: float, y_start: np.ndarray, t_stop: float, first: float | None, kind=None):
        kind = kind or solver_class
        return kind(step_rhs, t_start, y_start, t_stop, rtol=rtol, atol=atol, max_step=max_step,
                    **({"first_step": first} if first else {}), **({"jac": jacobian} if kind in (Radau, BDF) else {}))

    def make_smooth(t_start: float, y_start: np.ndarray, t_stop: float, first: float | None):
        # (the smooth side of a multistep run by Radau: see _SmoothSide)
        return make(t_start, y_start, t_stop, first, Radau if solver_class in MULTISTEP else None)

    while True:
        t_bound = next((b for b in stops if b > t), float(t_end))
        events = mode_events()
        implicit = solver_class.__name__.upper() in IMPLICIT
        if implicit and implicit_from is None:
            implicit_from = step_rhs.calls
        jacobian.near_switch = on_kink   # (the new solver's first Jacobian: see finite_difference_jacobian)
        solver = make(t, y, t_bound, first_step)
        g_old = [e.g(t, y) for e in events]
        restart_at = None
        while solver.status == "running":
            if implicit and step_rhs.calls - implicit_from > evaluation_budget:   # (checked between steps)
                out.nfev += solver.nfev
                out.status = "budget"
                last_step = "" if solver.t_old is None else f", the last {solver.t - solver.t_old:.3g} s"
                raise StepFailure(f"work budget exhausted: {step_rhs.calls - implicit_from} right-hand-side "
                                  f"evaluations of the implicit {solver_class.__name__} ({out.steps} steps"
                                  f"{last_step}) reached only t = {out.last_t:.6g} s of t_end = {t_end:g} s",
                                  out.last_t, out.last_y.copy())
            if watch_stiffness and out.steps - window[0] >= STIFF_CHECK_STEPS:   # over the last window of steps
                mean_step = (out.last_t - window[1]) / (out.steps - window[0])
                window = (out.steps, out.last_t)
                if mean_step < STIFF_MEAN_STEP and not mean_step >= HELD_BY_MAX_STEP * max_step:
                    watch_stiffness = False   # said once
                    # (its own name: `switch` is the caller's mode switch, called at every later event)
                    stiff_method = on_stiff(out.last_t, mean_step)
                    if stiff_method:   # go on from the last accepted state with the implicit method named
                        solver_class, fast = METHODS[stiff_method.upper()], None
                        restart_at = (out.last_t, out.last_y.copy())
                        break
            if fast is not None:
                start = next_eval
                next_eval, rows, taken, _ = fast.advance(solver, t_eval, next_eval,
                                                           min(budget - out.steps, fast.SEGMENT_STEPS))
                if taken:
                    out.steps += taken
                    out.t.extend(t_eval[start:next_eval].tolist())
                    if len(rows):
                        out.y.append(rows)
                    out.last_t, out.last_y = float(solver.t), solver.y.copy()
                    if on_step is not None:
                        on_step(out.last_t)
                if solver.status != "running":
                    break
            start = (solver.t, solver.y.copy()) if events else None   # (a cutting event re-integrates from it)
            message = step_rhs.step(solver)
            if solver.status == "failed":
                out.nfev += solver.nfev
                raise StepFailure(message or "step failed", solver.t, solver.y.copy())
            out.steps += 1
            jacobian.near_switch = on_kink = False
            if out.steps > budget:
                out.nfev += solver.nfev
                mean_step = (solver.t - t0) / out.steps
                stiff = f"; the steps are held at max_step = {max_step:g} s: raise max_step" \
                    if mean_step >= HELD_BY_MAX_STEP * max_step else "" if method.upper() in IMPLICIT else (
                    f"; the problem looks stiff for the explicit {method} (step size {solver.t - solver.t_old:.3g} s):"
                    " use an implicit method, e.g. method='Radau' or 'LSODA' (CLI: --method Radau)"
                    if mean_step < STIFF_MEAN_STEP else   # steps of a non-stiff motion: the run is just long
                    f"; a long run, not a stiff one: steps of {mean_step:.3g} s on average reached t = {solver.t:.6g} s,"
                    f" t_end needs about {(t_end - t0) / mean_step:.2g} steps: simulate a shorter time (or in parts, "
                    "each from the last state), or loosen rtol (--rtol 1e-6)")
                raise StepFailure(f"step budget exhausted: {budget} steps taken without reaching t_end = "
                                  f"{t_end:g} s{stiff}", solver.t, solver.y.copy())
            t_old, t_new = solver.t_old, solver.t
            sol = _LazyDense(solver)   # built on first use only (DOP853's costs 3 extra evaluations)
            g_new = [e.g(t_new, solver.y) for e in events]
            fired = []
            for k, event in enumerate(events):
                if _crossed(g_old[k], g_new[k], event.direction):
                    fired.append((_locate(event, sol, t_old, t_new, g_new[k]), k))
            fired.sort()
            cut = None
            for position, (root, k) in enumerate(fired):
                if events[k].terminal or events[k].restart:
                    refined = None
                    if root < t_new and events[k].kinked():   # (see _SmoothSide)
                        on_kink = True
                        smooth = _SmoothSide(make_smooth, step_rhs, start[0], start[1])
                        refined = smooth.cut(events[k], root, t_new, g_new[k])
                        out.nfev += smooth.nfev
                    if refined is not None:
                        root, state = refined
                        fired[position] = (root, k)   # (its action runs at the cut below)
                    else:
                        state = sol(root)
                    out.events.append((events[k].name, float(root), state.copy()))
                    cut = (root, k, state, position)
                    break
                out.events.append((events[k].name, float(root), sol(root).copy()))
            t_stop, y_stop = (cut[0], cut[2]) if cut else (t_new, solver.y.copy())
            if observe is not None:
                observe(t_old, float(t_stop), sol)
            if t_eval is None:
                out.t.append(float(t_stop))
                out.y.append(y_stop.copy())
            else:
                # every sample inside this step from one dense-output call (an interpolant takes an array of
                # times; per-sample calls cost more than the step itself with many samples), kept as one block
                stop = int(np.searchsorted(t_eval, t_stop, side="right"))
                if stop > next_eval:
                    times = t_eval[next_eval:stop]
                    inside = int(np.searchsorted(times, t_stop))   # (before t_stop; a sample at t_stop is y_stop)
                    block = np.empty((len(times), len(y_stop)))
                    if inside:
                        block[:inside] = sol(times[:inside]).T
                    block[inside:] = y_stop
                    out.t.extend(times.tolist())
                    out.y.append(block)
                    next_eval = stop
            out.last_t, out.last_y = float(t_stop), y_stop.copy()
            if on_step is not None:
                on_step(t_stop)
            if cut is not None:
                if events[cut[1]].terminal:
                    out.nfev += solver.nfev
                    out.status = "terminated"
                    out.message = f"terminal event {events[cut[1]].name} at t = {cut[0]:.17g} s"
                    if t_eval is not None and out.t[-1] != t_stop:
                        out.t.append(float(t_stop))
                        out.y.append(y_stop.copy())
                    return out
                tol = SIMULTANEOUS * EPS * max(1.0, abs(t_stop))
                # the events located with the cut (not yet recorded) whose surface the cut state has crossed:
                # recorded there, their actions run below (one that has not crossed yet fires in the next step).
                # Crossed is what counts, not the root on the crossing step's interpolant: a cut re-integrated from
                # the step's start (_SmoothSide) may stop 1e-11 s before that root of an event that has crossed with
                # it (two contacts of one body leaving together), and the restart past its surface lost the event and
                # its action (a contact left active out of contact: its next onset kept the old impact velocity)
                at_cut = [root <= t_stop + tol for root, k in fired]
                for position, (root, k) in enumerate(fired):
                    if position > cut[3]:
                        value = events[k].g(t_stop, y_stop)
                        if value == 0.0 or np.sign(value) == np.sign(g_new[k]):
                            out.events.append((events[k].name, float(t_stop), y_stop.copy()))
                            at_cut[position] = True
                for position, (root, k) in enumerate(fired):
                    if events[k].action is not None and at_cut[position]:
                        events[k].action(float(t_stop), y_stop.copy())
                if switch is not None:
                    names = tuple(events[k].name for position, (root, k) in enumerate(fired) if at_cut[position])
                    y_stop = _switched(switch, float(t_stop), y_stop, names, out)
                restart_at = (t_stop, y_stop)
                break
            if project is not None and solver.status == "running":
                projected = project(t_new, solver.y)
                if np.max(np.abs(projected - solver.y)) > atol:  # below atol: not worth a restart
                    out.last_y = projected.copy()
                    restart_at = (t_new, projected)
                    break
            g_old = g_new
        out.nfev += solver.nfev
        out.njev += getattr(solver, "njev", 0) or 0
        if restart_at is None and t_bound < t_end:   # a breakpoint: restart there exactly
            y_stop = solver.y.copy()
            if switch is not None:
                y_stop = _switched(switch, t_bound, y_stop, ("breakpoint",), out)
            restart_at = (t_bound, y_stop)
        if restart_at is None:
            out.status, out.message = "finished", "reached t_end"
            return out
        out.restarts += 1
        # one-step methods go on with the last step size; the multistep ones (LSODA, BDF) restart at order 1,
        # where that size (taken at a high order) is rejected again and again: they choose their own first step
        first_step = None if solver_class in MULTISTEP else max(solver.step_size or 0.0, 0.0) or None
        if first_step is not None:
            bound = next((b for b in stops if b > restart_at[0]), t_end)
            first_step = min(first_step, max_step, bound - restart_at[0]) if bound > restart_at[0] else None
        t, y = float(restart_at[0]), np.array(restart_at[1], dtype=float)
        if t >= t_end:
            out.status, out.message = "finished", "reached t_end"
            return out


class Progress:
    """A tqdm bar on stderr over simulated time; shown after ~2 s of wall time (or at once if forced)."""

    def __init__(self, t0: float, t_end: float, mode: bool | None, label: str) -> None:
        self.bar = None
        self.t0, self.last, self.started = t0, t0, time.perf_counter()
        if mode is False:
            return
        try:
            from tqdm import tqdm
        except ImportError:  # pragma: no cover - tqdm is a dependency, but progress is optional
            return
        import sys
        self.bar = tqdm(total=t_end - t0, desc=label, unit="s", file=sys.stderr, delay=0.0 if mode else 2.0,
                        bar_format="{desc}: {percentage:3.0f}%|{bar}| t = {n:.4g}/{total:.4g} s [{elapsed}<{remaining}]")

    def __call__(self, t: float) -> None:
        if self.bar is not None and t > self.last:
            self.bar.update(t - self.last)
            self.last = t

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
