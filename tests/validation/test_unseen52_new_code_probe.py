"""An independent probe of the code that landed in the twentieth session (6af066f^1..eba0b5c) on inputs its authors
did not try: read-only element parameters (core/frozen.py), the loop resolver's fresh-start retry, validate's
scales, the parameter bounds, the bridge's runtime-free entries, OpenSim's coordinate actuators. Each defect found
is a test here that failed on main, against an independent oracle (a closed form, the reference engine).
"""
from __future__ import annotations

import copy
import pickle
from pathlib import Path

import numpy as np
import pytest

from biobullet import load_model
from biobullet.contact.element import contact_elements
from biobullet.forces import force_elements
from biobullet.integrate import simulate
from engine_models import chain_urdf

ROOT = Path(__file__).parents[2]
pin = pytest.importorskip("pinocchio")


# ------------------------------------------------ read-only parameters: arrays written in place
#: a spring from the base to l2 (its attachment point xyz_b on l2) and a contact point on l2; j1 starts at 0.3 rad
_ARRAY_ELEMENTS = (
    '<spring name="sp" link_a="base" xyz_a="0 0.1 0" link_b="l2" xyz_b="0.25 0 0" stiffness="30" rest_length="0.2"/>'
    '<contact name="tip" link="l2" xyz="0.5 0 0" normal_law="hunt_crossley" stiffness="1e5" restitution="0.8"/>'
    '<initial joint="j1" position="0.3"/>')


@pytest.fixture(scope="module")
def array_model(tmp_path_factory):
    path = Path(tmp_path_factory.mktemp("frozen_arrays")) / "chain.urdf"
    path.write_text(chain_urdf([(0.5, 1.0, 0.25, 0.01)] * 2, extension=_ARRAY_ELEMENTS))
    return load_model(path)


def _spring_force_closed_form(x: np.ndarray) -> np.ndarray:
    """τ of the file's spring (k 30 N/m, rest 0.2 m, from (0, 0.1, 0) on the base to (0.25, 0, 0) on l2) on the
    planar chain about z (j1 at the base origin, j2 at 0.5 m along l1): τ_j = (r_b − p_j) × F · z, F = −k (ℓ − ℓ₀)
    along base → b, written here from the geometry alone."""
    a1, a2 = x[0], x[0] + x[1]
    p2 = 0.5 * np.array([np.cos(a1), np.sin(a1)])
    b = p2 + 0.25 * np.array([np.cos(a2), np.sin(a2)])
    d = b - np.array([0.0, 0.1])
    length = float(np.hypot(*d))
    force = -30.0 * (length - 0.2) * d / length
    cross = lambda r, f: r[0] * f[1] - r[1] * f[0]   # noqa: E731
    return np.array([cross(b, force), cross(b - p2, force)])


def test_element_arrays_cannot_be_written_in_place(array_model):
    """On main `spring.xyz_b[0] = 0.05` (and `contact.xyz[...]`) was accepted — the assignment guard saw no
    attribute assigned — and reached some paths only, the same split the guard exists for: with xyz_b 0.25 → 0.05
    m written in place after a `Bridge` was built, `simulate` gave j1(0.2 s) = 0.262227 rad (the new point) while
    that bridge gave 0.142336 (the file's). Now the element's arrays are read-only copies: the write raises, and
    the spring's force stays the file's (closed form)."""
    spring = next(e for e in force_elements(array_model) if e.name == "sp")
    contact = next(iter(contact_elements(array_model)))
    for array in (spring.xyz_a, spring.xyz_b, contact.xyz):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0.05
    x = np.array([0.3, -0.4])
    tau = spring.generalized_force(array_model, x, np.zeros(2), 0.0)
    np.testing.assert_allclose(tau, _spring_force_closed_form(x), rtol=0, atol=1e-13)


def test_copies_and_pickles_of_an_element_are_read_only_too(array_model):
    """A copy, deep copy or pickle round trip of an element keeps its arrays read-only (on main a deep copy's and
    an unpickled element's arrays were writable), and its force is the original's."""
    spring = next(e for e in force_elements(array_model) if e.name == "sp")
    x = np.array([0.3, -0.4])
    for twin in (copy.copy(spring), copy.deepcopy(spring), pickle.loads(pickle.dumps(spring))):
        with pytest.raises(ValueError, match="read-only"):
            twin.xyz_b[0] = 0.05
        np.testing.assert_allclose(twin.generalized_force(array_model, x, np.zeros(2), 0.0),
                                   _spring_force_closed_form(x), rtol=0, atol=1e-13)


def test_a_joint_function_s_coefficients_cannot_be_written_in_place():
    """A Fourier driver's `a` and `b` (public arrays): on main `function.a[0] = 5.0` was accepted and silently
    ignored (every path evaluates the series from the tuple packed at construction). Now the write raises and the
    value is the closed form of the constructor's coefficients: θ(t) = a0 + a1 cos(2πt/T) + b1 sin(2πt/T)."""
    from biobullet.functions.fourier import FourierFunction
    coefficients = np.array([0.5])
    function = FourierFunction(1.2, 0.1, coefficients, [0.2])
    with pytest.raises(ValueError, match="read-only"):
        function.a[0] = 5.0
    coefficients[0] = 7.0   # the caller's array stays the caller's (the element keeps its own copy)
    t = 0.37
    phase = 2.0 * np.pi * t / 1.2
    assert function.value(np.zeros(0), t) == pytest.approx(0.1 + 0.5 * np.cos(phase) + 0.2 * np.sin(phase),
                                                           abs=1e-15)


# ------------------------------------------------ loop anchor: the declared initial configuration, not the first call
KNEE = ROOT / "urdf" / "fourbar_knee.urdf"


#: the planar loops of the bundled files: (link a, point on a, link b, point on b, in-plane axes)
_LOOPS = {"fourbar_knee": [("anterior_link", (0.019, 0.0, -0.083), "shank", (0.034, 0.0, 0.009), [0, 2])],
          "andrews_squeezer": [("body2", (-0.028, 0.0, 0.0), link, xyz, [0, 1]) for link, xyz in
                               (("body3", (0.0, -0.035, 0.0)), ("body4", (0.0, -0.02, 0.0)),
                                ("body6", (0.02, 0.0, 0.0)))]}


def _loop_residual(model, x: np.ndarray) -> float:
    """max |Φ| of the file's planar loops at the joint angles x: each loop's two points apart in its plane, from
    Pinocchio's forward kinematics of the file (independent of biobullet's loop rows)."""
    name = Path(model.file).stem
    pin_model = pin.buildModelFromUrdf(str(model.file))
    data = pin_model.createData()
    q = np.zeros(pin_model.nq)
    for joint, value in zip(model.joint_names, x):   # (continuous joints: Pinocchio's (cos, sin) pair)
        at = pin_model.joints[pin_model.getJointId(joint)].idx_q
        q[at:at + 2] = np.cos(value), np.sin(value)
    pin.forwardKinematics(pin_model, data, q)
    pin.updateFramePlacements(pin_model, data)
    worst = 0.0
    for link_a, xyz_a, link_b, xyz_b, plane in _LOOPS[name]:
        a, b = (data.oMf[pin_model.getFrameId(link)].act(np.array(xyz))
                for link, xyz in ((link_a, xyz_a), (link_b, xyz_b)))
        worst = max(worst, float(np.linalg.norm((a - b)[plane])))
    return worst


def test_a_first_call_far_away_does_not_move_simulate_to_the_other_assembly_mode():
    """The loop resolver's anchor — documented as the model's declared initial configuration, from which every new
    workspace starts — was the first state solved, by a plain Newton from the initial guess. The bundled four-bar
    knee's first call at knee_A = 2.25 rad landed on its other assembly mode (knee_D = −3.088, where 2.0 and 2.5 rad
    give −0.282 and −0.045), and on main `simulate(model, 0.2)` afterwards started from knee_D = −2.3008,
    knee_B = 0.7733 — not the file's <initial> (all three 0, which close the loop) — and reached knee_A(0.2 s) =
    0.4979 rad instead of 0.0387. Now a record's first solve continues from the declared solution, so that call is
    on the declared mode (knee_D = −0.18); the other mode is still reached where that continuation cannot go — the
    same crank angle wound by 200 turns, beyond its budget: Newton from the initial guess, announced — and a run
    started afterwards still starts at the file's initial state (Pinocchio: the loop closes there) and is the fresh
    model's run: the run's anchor is its own first solution, not the model's history."""
    from biobullet.constraints.implicit import LoopBranchWarning
    model = load_model(KNEE)
    with pytest.warns(LoopBranchWarning, match="declared configuration"):
        x_far = model.joint_state(np.array([2.25 + 400.0 * np.pi]), np.zeros(1))[0]
    assert x_far[1] < -3.0 and _loop_residual(model, x_far) <= 1e-12   # the other assembly mode
    assert model.joint_state(np.array([2.25 + 400.0 * np.pi + 0.01]), np.zeros(1))[0][1] < -3.0   # kept there
    after = simulate(model, 0.2, progress=False, t_eval=[0.0, 0.2])
    start = np.array([after.column(name)[0] for name in model.joint_names])
    np.testing.assert_allclose(start, 0.0, rtol=0, atol=1e-12)   # the file's <initial>
    assert _loop_residual(model, start) <= 1e-12
    fresh = simulate(load_model(KNEE), 0.2, progress=False, t_eval=[0.0, 0.2])
    for name in model.joint_names:
        assert after.column(name)[-1] == pytest.approx(fresh.column(name)[-1], abs=1e-9), name


def test_a_fresh_start_retry_that_changes_the_assembly_mode_is_announced():
    """`LoopResolver.fresh_retry`: a warm-started solve that fails is solved from the model's initial guess. The
    four-bar knee brought onto its other assembly mode (first call at knee_A = 2.25 + 400π rad, beyond the
    continuation's budget from the declared configuration: Newton from the initial guess, knee_D = −3.088; then down
    to 1 + 400π rad in 0.05 rad steps: knee_D = −2.387) and called at the same physical input unwound by 200 turns
    (1 rad: the continuation would need 12,566 substeps, over its budget) came back on the declared mode (knee_D =
    −0.382) on main without a word. Both are closed configurations (Pinocchio's kinematics of the file), at the
    same crank angle, more than 1 rad apart in knee_D: another branch. Now the retry warns."""
    model = load_model(KNEE)
    with pytest.warns(UserWarning, match="declared configuration"):
        model.joint_state(np.array([2.25 + 400.0 * np.pi]), np.zeros(1))
    for angle in np.arange(2.25, 0.99, -0.05):
        other = model.joint_state(np.array([angle + 400.0 * np.pi]), np.zeros(1))[0]
    other = np.array([1.0, *other[1:]])
    assert _loop_residual(model, other) <= 1e-12 and other[1] < -2.0
    with pytest.warns(UserWarning, match="another assembly mode") as said:
        unwrapped = model.joint_state(np.array([1.0]), np.zeros(1))[0]
    assert [w.category.__name__ for w in said] == ["LoopBranchWarning"] and "knee_C" in str(said[0].message)
    assert _loop_residual(model, unwrapped) <= 1e-12
    assert abs(unwrapped[1] - other[1]) > 1.0   # the branch changed: what the warning says


def test_a_fresh_model_solves_a_far_first_state_its_history_would_solve():
    """Andrews' squeezer (bundled), fresh: the first call at β = 4 rad raised SolverError on main — Newton from the
    declared initial guess, 4.06 rad from the declared β, does not converge — while a model that had answered any
    call first solved the same state (continued from the declared configuration: `solve`'s documented "a state a
    fresh model solves is solved after any history", which the converse broke). Now a fresh model's failed first
    solve continues from the declared configuration too. Checked: the loops close there (Pinocchio) and the
    answer is the one the model gives when walked there by 0.05 rad steps."""
    path = ROOT / "urdf" / "andrews_squeezer.urdf"
    model = load_model(path)
    first = model.joint_state(np.array([4.0]), np.zeros(1))[0]
    assert first[0] == 4.0 and _loop_residual(model, first) <= 1e-12
    walked = load_model(path)
    start = float(walked.initial_state()[0][0])
    for beta in np.linspace(start, 4.0, int(np.ceil((4.0 - start) / 0.05)) + 1):
        last = walked.joint_state(np.array([beta]), np.zeros(1))[0]
    np.testing.assert_allclose(first, last, rtol=0, atol=1e-10)
