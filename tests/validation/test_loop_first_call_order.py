"""A loop model's new workspace — a run, a `model.data()` — and a fresh model's first call do not depend on the calls
made on the model before (hunt30, hunt31: a first call on the four-bar knee's other assembly mode became the loop
anchor that every later `simulate` from the file's <initial> continued from: knee_D(0) = −2.3008 instead of 0).

A loop record's first solve is continued from the model's declared solution (`LoopResolver.declared`: the file's
<initial> solved from the initial guess), and that first solution is the record's own anchor. The class: the
bundled four-bar knee, Andrews' squeezer (three loops), the prosthesis (a loop and joint functions), a knee whose
loop input a joint function drives, a welded loop (six dependent joints) and two knees on one base (two loop
resolvers). Each model is first called far away — at the state that put main's knees on their other assembly mode
(a Newton from the initial guess there), and with the crank wound by 200 turns, beyond the continuation's budget
from the declared configuration, so that Newton from the initial guess decides again (the knees' other assembly
mode, announced) — and then a run from <initial> and a new workspace's public calls at a state S must give what a
fresh model gives, to round-off. Independent checks: the loops close at every state compared (Pinocchio's kinematics of the file,
`rhs_oracles.loop_closure`), the run starts at the file's <initial>, and the branch is the declared configuration's:
the one a fresh model reaches by walking from <initial> in 0.05 rad steps (the knees' other mode is another
solution more than 1 rad away in knee_D).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pinocchio")

from biobullet import load_model  # noqa: E402
from biobullet.constraints.implicit import LoopBranchWarning  # noqa: E402
from biobullet.integrate import simulate  # noqa: E402
from biobullet.pipeline.forward import bias_forces, forward, mass_matrix  # noqa: E402
from rhs_oracles import PinocchioTree, loop_closure  # noqa: E402

#: loop points' distance (m) at a solved state: Newton converges to 1e-12 of the model's length scale
CLOSED = 1e-10
#: a new workspace after the far call against a fresh model's: the same solve from the same declared solution
ROUND_OFF = 1e-12
#: the walk's continuation and a first call's guarded Newton converge to the same solution within their tolerance
SAME_BRANCH = 1e-9
WOUND = 400.0 * np.pi
T_END = 0.05


def _models(directory):
    """name → (path, coordinate wound by WOUND in the far call, its far physical value, state S offsets of q)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parents[1] / "unit" / "integrate"))
    sys.path.insert(0, str(Path(__file__).parents[1] / "unit" / "constraints"))
    from multiloop_models import driven_knee, two_knees
    from test_weld_loop import WELDED
    welded = directory / "welded.urdf"
    welded.write_text(WELDED)
    return {"fourbar_knee": ("fourbar_knee", 0, 2.25, [0.5]),
            "andrews_squeezer": ("andrews_squeezer", 0, 2.0, [1.0]),
            "prosthesis_fourbar": ("prosthesis_fourbar", 0, 2.25, [0.6, 0.1]),
            "driven_knee": (str(driven_knee(directory)), 0, 2.25, [0.3]),   # (knee_A's value: hip solved below)
            "welded": (str(welded), 0, 1.5, [0.4, -0.3]),
            "two_knees": (str(two_knees(directory)), 1, 2.25, [0.2, 0.5, -0.1, 0.4])}


NAMES = ("fourbar_knee", "andrews_squeezer", "prosthesis_fourbar", "driven_knee", "welded", "two_knees")


def _far(model, name: str, column: int, value: float, wound: float) -> np.ndarray:
    """q of the far call: the coordinate at `value` + `wound` (the driven knee: the hip whose polynomial
    knee_A = 0.3 + 0.8 hip + 0.2 hip² gives it)."""
    q = model.initial_state()[0].copy()
    if name == "driven_knee":
        q[0] = (-0.8 + np.sqrt(0.64 + 0.8 * (value + wound - 0.3))) / 0.4
    else:
        q[column] = value + wound
    return q


def _walk(model, q_to: np.ndarray, t: float = 0.0) -> np.ndarray:
    """x at q_to reached from the declared state in steps of at most 0.05 rad (continuation: the declared branch)."""
    q_from = model.initial_state()[0]
    steps = int(np.ceil(np.max(np.abs(q_to - q_from)) / 0.05))
    for s in np.linspace(0.0, 1.0, steps + 1):
        x = model.joint_state(q_from + s * (q_to - q_from), np.zeros(model.nv), t)[0]
    return x


def _dependent_distance(model, x: np.ndarray, y: np.ndarray) -> float:
    """Largest difference of the joints (revolute ones modulo 2π) between two tree configurations."""
    gap = np.abs(x - y)
    return float(np.max(np.minimum(gap, np.abs(gap - 2.0 * np.pi * np.round(gap / (2.0 * np.pi))))))


def _workspace_calls(model, q, v, tau, t) -> tuple[np.ndarray, ...]:
    """A new workspace's public calls at a state (q̈, M, h), and x there (the resolvers are then bound to it)."""
    data = model.data()
    qdd = forward(model, data, q, v, tau, t).copy()
    m, h = mass_matrix(model, data, q, t), bias_forces(model, data, q, v, t)
    return qdd, m, h, model.joint_state(q, v, t)[0]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return _models(tmp_path_factory.mktemp("loop_order"))


@pytest.mark.parametrize("wound", [0.0, WOUND], ids=["far", "wound"])
@pytest.mark.parametrize("name", NAMES)
def test_a_run_and_a_new_workspace_after_a_far_first_call_are_a_fresh_model_s(name, wound, models):
    path, column, value, offsets = models[name]
    tree = PinocchioTree(load_model(path))
    fresh = load_model(path)
    q0 = fresh.initial_state()[0]
    rng = np.random.default_rng(56)
    q_s, v_s, tau_s = q0 + np.array(offsets), rng.uniform(-1.0, 1.0, fresh.nv), rng.uniform(-1.0, 1.0, fresh.nv)
    expected_run = simulate(fresh, T_END, progress=False, t_eval=[0.0, T_END])
    expected = _workspace_calls(fresh, q_s, v_s, tau_s, 0.1)

    model = load_model(path)
    q_far = _far(model, name, column, value, wound)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoopBranchWarning)   # (Newton from the initial guess decides: announced)
        x_far = model.joint_state(q_far, np.zeros(model.nv))[0]
        model.forward_dynamics(q_far, np.zeros(model.nv))
        model.mass_matrix(q_far)
    assert loop_closure(tree, x_far) <= CLOSED
    if "knee" in name and wound:   # the knees' other assembly mode: knee_D > 1 rad from the declared branch's
        walked = _walk(load_model(path), _far(model, name, column, value, 0.0))
        assert _dependent_distance(model, x_far, walked) > 1.0

    run = simulate(model, T_END, progress=False, t_eval=[0.0, T_END])
    np.testing.assert_allclose(run.positions, expected_run.positions, rtol=0, atol=ROUND_OFF)
    np.testing.assert_allclose(run.velocities, expected_run.velocities, rtol=0, atol=ROUND_OFF)
    start = run.positions[0]
    assert loop_closure(tree, start) <= CLOSED
    np.testing.assert_array_equal(run.q[0], q0)   # the file's <initial>
    assert _dependent_distance(model, start, _walk(load_model(path), q0)) <= SAME_BRANCH

    got = _workspace_calls(model, q_s, v_s, tau_s, 0.1)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=0, atol=ROUND_OFF * max(1.0, float(np.max(np.abs(b)))))
    x_s = got[-1]
    assert loop_closure(tree, x_s) <= CLOSED
    assert _dependent_distance(model, x_s, _walk(load_model(path), q_s, 0.1)) <= SAME_BRANCH


@pytest.mark.parametrize("name", NAMES)
def test_a_fresh_model_s_first_call_far_away_is_on_the_declared_branch(name, models):
    """A fresh model's first call at the far state itself (not wound): continued from the declared solution, it
    lands where a walk from <initial> lands (on main the four-bar knee's first call at knee_A = 2.25 rad was a
    Newton from the initial guess: knee_D = −3.088, the other assembly mode, while 2.0 and 2.5 rad gave −0.282 and
    −0.045)."""
    path, column, value, _ = models[name]
    tree = PinocchioTree(load_model(path))
    model = load_model(path)
    q = _far(model, name, column, value, 0.0)
    x = model.joint_state(q, np.zeros(model.nv))[0]
    assert loop_closure(tree, x) <= CLOSED
    assert _dependent_distance(model, x, _walk(load_model(path), q)) <= SAME_BRANCH
