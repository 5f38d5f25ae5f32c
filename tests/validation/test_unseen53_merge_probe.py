"""An independent probe of the code merged in round 2 (main..merge: the loop Newton's block solve, the loop anchor at
the declared configuration, read-only element arrays, numba's shared-scope inlining) on inputs its authors did not
try. Each defect found is a test here that failed on `merge`, against an independent oracle (a closed form).
"""
from __future__ import annotations

import copy
import gc
import pickle

import numpy as np
import pytest

from biobullet import load_model
from biobullet.functions.expression import ExpressionFunction


# ------------------------------------------------ read-only element arrays: an array inside a tuple attribute
def test_an_expression_function_s_tape_cannot_be_written_in_place():
    """The prosthesis four-bar's treadmill is the expression `v*t` (v = 1.0 in the file). Its instruction tape
    (`function.tape` = (words, constants), public arrays in a tuple) was left writable by the freezing of element
    arrays, which looked at array attributes only: on `merge` `function.tape[1][0] = 3.0` was accepted and
    `evaluate` and `joint_positions` then gave 1.5 at t = 0.5 s, not the file's 0.5 (and a word written into the
    int64 instructions is an index the compiled interpreter reads unchecked). Now both arrays are read-only (also
    in a copy and a pickle round trip) and the value is the closed form v·t."""
    model = load_model("prosthesis_fourbar")
    function = next(o for o in gc.get_objects() if isinstance(o, ExpressionFunction)
                    and o.expression_text == "v*t")
    treadmill = model.joint_names.index("treadmill")
    q0 = model.initial_state()[0]
    for element in (function, copy.deepcopy(function), pickle.loads(pickle.dumps(function))):
        words, constants = element.tape
        with pytest.raises(ValueError, match="read-only"):
            constants[0] = 3.0
        with pytest.raises(ValueError, match="read-only"):
            words[0] = 10 ** 6
        assert element.evaluate(np.zeros(0), 0.5)[0] == pytest.approx(1.0 * 0.5, abs=1e-15)
    assert model.joint_positions(q0, 0.5)[treadmill] == pytest.approx(1.0 * 0.5, abs=1e-15)


# ------------------------------------------------ loop anchor: a loop input driven by a joint function
def _knee_loop_residual(path, names, x: np.ndarray) -> float:
    """|Φ| of the knee's planar loop (anterior_link (0.019, 0, −0.083) to shank (0.034, 0, 0.009), in the x–z
    plane) at the joint angles x, from Pinocchio's forward kinematics of the file (not biobullet's loop rows)."""
    pin = pytest.importorskip("pinocchio")
    pin_model = pin.buildModelFromUrdf(str(path))
    data = pin_model.createData()
    q = np.zeros(pin_model.nq)
    for joint, value in zip(names, x):   # (continuous joints: Pinocchio's (cos, sin) pair)
        at = pin_model.joints[pin_model.getJointId(joint)].idx_q
        q[at:at + 2] = np.cos(value), np.sin(value)
    pin.forwardKinematics(pin_model, data, q)
    pin.updateFramePlacements(pin_model, data)
    a, b = (data.oMf[pin_model.getFrameId(link)].act(np.array(xyz)) for link, xyz in
            (("anterior_link", (0.019, 0.0, -0.083)), ("shank", (0.034, 0.0, 0.009))))
    return float(np.linalg.norm((a - b)[[0, 2]]))


def test_a_first_call_far_away_does_not_move_a_driven_loop_onto_the_other_assembly_mode(tmp_path):
    """hunt30's anchor at the declared configuration skipped models whose loop input a joint function drives (its
    declared value was taken to be unknown): the driven knee (tests/unit/integrate/multiloop_models.py: knee_A =
    0.3 + 0.8 hip + 0.2 hip², the file's <initial> all 0) called first at hip = 1.708 rad (knee_A = 2.25 rad:
    knee_D = −3.088, the other assembly mode) kept that solution as its anchor, and on `merge` `simulate` from the
    file's hip = 0 then started at knee_D = −2.2743, knee_B = 0.9886 — not the fresh model's −0.1588, 0.2523 —
    and stayed there. Both are closed configurations (Pinocchio); the declared one is the fresh model's. Now the
    declared solution is the coordinate map's at the declared coordinates (the driven input its function's value
    there), a record's first solve continues from it — so the far first call is on the declared mode; the other
    mode is reached with the crank wound by 200 turns (hip giving knee_A = 2.25 + 400π rad, beyond the
    continuation's budget: Newton from the initial guess, announced) — and the run is the fresh model's."""
    import sys
    from pathlib import Path
    from biobullet.integrate import simulate
    sys.path.insert(0, str(Path(__file__).parents[1] / "unit" / "integrate"))
    from multiloop_models import driven_knee
    path = driven_knee(tmp_path)
    model = load_model(path)
    from biobullet.constraints.implicit import LoopBranchWarning
    q = model.initial_state()[0].copy()
    q[0] = (-0.8 + np.sqrt(0.64 + 0.8 * (1.95 + 400.0 * np.pi))) / 0.4   # knee_A = 2.25 + 400π rad
    with pytest.warns(LoopBranchWarning, match="declared configuration"):
        far = model.joint_positions(q)
    assert far[1] == pytest.approx(2.25 + 400.0 * np.pi, abs=1e-9) and far[2] < -3.0   # the other assembly mode
    assert _knee_loop_residual(path, model.joint_names, far) <= 1e-12
    names = list(model.joint_names)
    import warnings
    with warnings.catch_warnings():   # (the run's checks read the declared configuration, not the far branch)
        warnings.simplefilter("error", LoopBranchWarning)
        after = simulate(model, 0.1, progress=False, t_eval=[0.0, 0.1])
    fresh = simulate(load_model(path), 0.1, progress=False, t_eval=[0.0, 0.1])
    start = np.array([after.column(name)[0] for name in names])
    assert start[1] == pytest.approx(0.3, abs=1e-12)   # knee_A = 0.3 + 0.8·0 + 0.2·0²
    assert _knee_loop_residual(path, names, start) <= 1e-12
    for name in names:
        assert after.column(name)[0] == pytest.approx(fresh.column(name)[0], abs=1e-9), name
        assert after.column(name)[-1] == pytest.approx(fresh.column(name)[-1], abs=1e-9), name
