"""The compiled DOP853 stepper (integrate/compiled_stepper.py `CompiledSteps`) against SciPy's own DOP853.

- Step by step from the same state and the same loop warm starts, on the four-bar knee (a loop map), the coupled
  chain (explicit joint functions) and the floating-base humanoid (a free joint's quaternion): the compiled step is
  SciPy's step — the same accepted time and state, the same next step size, the same dense-output samples — up
  to the order of a few sums (numpy's dot products against loops), including a step whose first try is rejected.
- Whole runs (`simulate`) with the compiled segments and with SciPy's loop alone (the stepper switched off) agree
  within the integration tolerance on the four-bar, two four-bar knees, Andrews' squeezer and the coupled chain, and
  the segments take almost every step.
- Handing over: from a warm start the loop stage cannot use, a segment takes no step and leaves the solver and
  the warm start as they were; SciPy's step (callback stage) then goes through and the next segment continues.
- Not used where it does not apply (events, other methods, every-step output).
"""
from __future__ import annotations

import biobullet
import numpy as np
import pytest
from biobullet.integrate.compiled_stepper import CompiledSteps
from biobullet.integrate.engine import System
from biobullet.model.bundled import bundled_model
from multiloop_models import two_knees
from scipy.integrate import DOP853


KNEE = {"knee_A": 0.5}   # the work–precision case: a 1 s passive swing from 0.5 rad


#: the step-by-step cases: model file, initial coordinates, run length (s), the next step size's relative round-off
#: (the error norm sums 13 stages that cancel to ~atol where a component is near zero: its round-off is
#: ~ε |ẏ| h / atol of the norm — ~1e-10 for the four-bar and the chain, ~1e-5 for the humanoid's ẏ of 10–100 at
#: atol 1e-9; the step size moves by 1/8 of it)
STEP_CASES = {"fourbar_knee": (KNEE, 1.0, 1e-9), "coupled_chain": (None, 1.0, 1e-9),
              "humanoid": ({"l_shoulder_pitch": 0.6, "r_elbow_dot": 1.0}, 1.0, 1e-4)}


def _solver(rtol: float, name: str = "fourbar_knee") -> tuple[System, DOP853]:
    """A SciPy DOP853 on a bundled model's right-hand side (its own model: its own loop resolver and cache)."""
    initial, t_end, _ = STEP_CASES[name]
    system = System(biobullet.load_model(bundled_model(f"{name}.urdf")), None, {"shadow": name == "fourbar_knee"})
    y0 = system.initial_vector(initial, 0.0)
    return system, DOP853(system.rhs, 0.0, y0, t_end, rtol=rtol, atol=rtol * 1e-3)


def _copy_warm_starts(source, target) -> None:
    """The loop stage's warm starts (a run's Data; none for an explicit map) of one compiled right-hand side into
    the other's."""
    target._data.arrays.loop_warm.values[:] = source._data.arrays.loop_warm.values


@pytest.mark.parametrize("name", sorted(STEP_CASES))
def test_each_step_is_scipys_step(name):
    rtol = 1e-6
    system_a, scipy_side = _solver(rtol, name)
    system_b, compiled_side = _solver(rtol, name)
    fast = CompiledSteps.for_rhs(system_b._compiled)
    assert fast is not None
    t_eval = np.linspace(0.0, STEP_CASES[name][1], 101)
    steps = rejected = samples = 0
    while scipy_side.status == "running":
        # the same state, step size and loop warm starts on both sides
        compiled_side.t, compiled_side.y = scipy_side.t, scipy_side.y.copy()
        compiled_side.f, compiled_side.h_abs = scipy_side.f.copy(), scipy_side.h_abs
        _copy_warm_starts(system_a._compiled, system_b._compiled)
        if steps == 3:   # a first try far too long: rejected, then shortened by the controller on both sides
            scipy_side.h_abs = compiled_side.h_abs = 0.6
        first = int(np.searchsorted(t_eval, scipy_side.t, side="right"))
        evaluations = scipy_side.nfev
        scipy_side.step()
        stop, rows, taken, nfev = fast.advance(compiled_side, t_eval, first, 1)
        assert taken == 1, f"the compiled segment handed over at t = {compiled_side.t}"
        assert nfev >= scipy_side.nfev - evaluations   # + the dense output's three stages where samples lie inside
        retried = nfev > 15
        rejected += retried
        t_new = scipy_side.t
        if retried:
            # a rejected try: its error norm (a difference of stages, ~1e-11 relative round-off) sets the next
            # try's size, so the accepted step moves by that much
            loose = STEP_CASES[name][2] / 1e-9   # (the error norm's round-off, relative to the four-bar's)
            assert abs(compiled_side.t - t_new) <= loose * 1e-11 * t_new
            np.testing.assert_allclose(compiled_side.y, scipy_side.y, rtol=0,
                                       atol=loose * 1e-11 * t_new * np.max(np.abs(scipy_side.f)) + 1e-14)
        else:   # the same step: the same time, the state to round-off
            assert compiled_side.t == t_new
            # (round-off relative to the state's largest component: its sums mix all of them)
            np.testing.assert_allclose(compiled_side.y, scipy_side.y, rtol=1e-13,
                                       atol=1e-13 * np.max(np.abs(scipy_side.y)) + 1e-15)
        # the next step size: from the error norm, whose round-off is ~1e-16 / (its size ≈ rtol)
        assert abs(compiled_side.h_abs - scipy_side.h_abs) <= STEP_CASES[name][2] * scipy_side.h_abs
        # the output samples inside the step: SciPy's dense output of the same step
        assert stop == int(np.searchsorted(t_eval, t_new, side="right"))
        if stop > first:
            dense = scipy_side.dense_output()(t_eval[first:stop]).T
            # (round-off of the order of sums, relative to the state's size: the chain's speeds reach 10 rad/s)
            np.testing.assert_allclose(rows, dense, rtol=0, atol=1e-12 * max(1.0, np.max(np.abs(dense))))
            samples += stop - first
        steps += 1
    assert compiled_side.status == "finished" and steps >= 4 and rejected >= 1 and samples == 100


@pytest.mark.parametrize("name, rtol", [("fourbar", 1e-6), ("fourbar", 1e-9), ("andrews", 1e-6),
                                        ("two knees", 1e-9), ("coupled chain", 1e-9)])
def test_whole_runs_agree_with_scipys_loop(tmp_path, monkeypatch, name, rtol):
    if name == "fourbar":
        model, t_end, initial = biobullet.load_model(bundled_model("fourbar_knee.urdf")), 1.0, KNEE
    elif name == "coupled chain":   # an explicit map (joint function, no loop)
        model, t_end, initial = biobullet.load_model(bundled_model("coupled_chain.urdf")), 1.0, None
    elif name == "andrews":
        model, t_end, initial = biobullet.load_model(bundled_model("andrews_squeezer.urdf")), 0.03, None
    else:
        model, t_end, initial = biobullet.load_model(two_knees(tmp_path)), 0.5, {"knee_A_1": 0.5, "hip_2": 0.3}
    taken = []
    original = CompiledSteps.advance

    def counted(self, solver, t_eval, next_eval, max_steps):
        out = original(self, solver, t_eval, next_eval, max_steps)
        taken.append(out[2])
        return out

    monkeypatch.setattr(CompiledSteps, "advance", counted)
    kw = {"rtol": rtol, "atol": rtol * 1e-3, "initial": initial, "progress": False}
    fast = biobullet.simulate(model, t_end, **kw)
    monkeypatch.setattr(CompiledSteps, "for_rhs", classmethod(lambda cls, rhs: None))
    slow = biobullet.simulate(model, t_end, **kw)
    assert fast.meta["status"] == slow.meta["status"] == "finished"
    assert sum(taken) >= 0.9 * fast.meta["steps"], (taken, fast.meta["steps"])
    assert abs(fast.meta["steps"] - slow.meta["steps"]) <= 0.05 * slow.meta["steps"] + 1
    # the same steps up to round-off in the error norms: the runs differ by far less than the tolerance
    # (Andrews' squeezer: its stiff spring amplifies a step moved by round-off to ~1e-9 at rtol 1e-9)
    np.testing.assert_allclose(fast.positions, slow.positions, rtol=0, atol=10 * rtol)
    # (speeds against their size: the chain's reach 10 rad/s, where a step accepted on one side and rejected on the
    # other by the error norm's round-off moves the dense output by ~rtol × 10)
    np.testing.assert_allclose(fast.velocities, slow.velocities, rtol=0,
                               atol=100 * rtol * max(1.0, np.max(np.abs(slow.velocities))))
    np.testing.assert_allclose(fast.energy["dissipated"], slow.energy["dissipated"], rtol=0,
                               atol=10 * rtol * max(1.0, np.max(np.abs(slow.energy["dissipated"]))))


def test_hands_over_and_resumes():
    system, solver = _solver(1e-6)
    fast = CompiledSteps.for_rhs(system._compiled)
    warm = system._compiled._warm
    t_eval = np.linspace(0.0, 1.0, 11)
    # a loop warm start 0.5 rad away from the state: the stage declines (continuation is the callback stage's),
    # the segment takes no step and leaves the solver and the warm start as they were
    warm.known0[:] += 0.5
    far = warm.values.copy()
    before = (solver.t, solver.y.copy(), solver.f.copy(), solver.h_abs)
    stop, rows, taken, nfev = fast.advance(solver, t_eval, 1, 100)
    assert taken == 0 and stop == 1 and rows.shape == (0, len(solver.y)) and nfev >= 1
    assert solver.status == "running" and solver.t == before[0] and solver.h_abs == before[3]
    np.testing.assert_array_equal(solver.y, before[1])
    np.testing.assert_array_equal(solver.f, before[2])
    np.testing.assert_array_equal(warm.values, far)
    # SciPy's own step (its right-hand side falls back to the callback stage's continuation), then segments again
    solver.step()
    assert solver.status == "running"
    stop, rows, taken, nfev = fast.advance(solver, t_eval, 1, 100)
    assert taken > 0 and solver.status == "finished" and stop == len(t_eval)
    # against a run at 1e4× tighter tolerance: the rtol 1e-6 segments are within their own error (1e-5 rad)
    reference = biobullet.simulate(system.model, 1.0, rtol=1e-10, atol=1e-13, initial=KNEE, progress=False,
                                   t_eval=t_eval)
    np.testing.assert_allclose(rows[:, :system.n_pos], reference.q[1:], rtol=0, atol=1e-5)


@pytest.mark.parametrize("options", [{"method": "RK45"}, {"t_eval": "steps"}, {"events": "user"}])
def test_only_where_it_applies(monkeypatch, options):
    calls = []
    monkeypatch.setattr(CompiledSteps, "advance", lambda self, *a: calls.append(a) or (a[1], None, 0, 0))
    model = biobullet.load_model(bundled_model("fourbar_knee.urdf"))
    options = dict(options)
    if options.get("events") == "user":
        def crossing(t, x, xd):
            return x[0] - 0.1
        options["events"] = [crossing]
    biobullet.simulate(model, 0.05, rtol=1e-6, initial=KNEE, progress=False, **options)
    assert not calls


def test_step_budget_holds_with_segments():
    """The segments count their steps against run_loop's budget: the run stops with its clear error."""
    from biobullet.constraints.implicit import newton_tolerance
    from biobullet.integrate.stepper import StepFailure, run_loop
    system, _ = _solver(1e-6)
    fast = CompiledSteps.for_rhs(system._compiled)
    y0 = system.initial_vector(KNEE, 0.0)
    with newton_tolerance(system.model, 1e-6), pytest.raises(StepFailure, match="step budget exhausted: 5 steps"):
        run_loop(system.rhs, 0.0, y0, 1.0, method="DOP853", rtol=1e-6, atol=1e-9, max_step=np.inf,
                 t_eval=np.linspace(0.0, 1.0, 11), events=[], max_steps=5, fast=fast)


def test_long_runs_return_to_python_between_segments(monkeypatch):
    """A run longer than one segment is cut into segments of at most SEGMENT_STEPS steps (the progress bar moves
    and Ctrl-C lands between them), each followed by one SciPy step: the samples equal the one-segment run's to
    round-off and every segment respects the cap."""
    model = biobullet.load_model(bundled_model("fourbar_knee.urdf"))
    kw = {"rtol": 1e-6, "atol": 1e-9, "initial": KNEE, "progress": False}
    whole = biobullet.simulate(model, 1.0, **kw)
    caps, taken = [], []
    original = CompiledSteps.advance

    def counted(self, solver, t_eval, next_eval, max_steps):
        caps.append(max_steps)
        out = original(self, solver, t_eval, next_eval, max_steps)
        taken.append(out[2])
        return out

    monkeypatch.setattr(CompiledSteps, "SEGMENT_STEPS", 3)
    monkeypatch.setattr(CompiledSteps, "advance", counted)
    cut = biobullet.simulate(model, 1.0, **kw)
    assert len(taken) >= 3 and max(caps) == 3 and max(taken) <= 3, (caps, taken)
    np.testing.assert_allclose(cut.positions, whole.positions, rtol=0, atol=1e-9)
