"""The public calls at a state the loop stage declines for its warm start (`pipeline.data.Data._call`).

The loop stage (`constraints.newton_kernel._loop_newton_py`) declines, by design, a state whose known joints
jumped farther from its warm start than from the declared initial solution (the generic resolver's continuation
must solve there), and other states where the generic resolver decides. `Data._call` then only marked the warm
starts stale for the NEXT call: the declining call itself returned "declined", so
`forward_dynamics(..., formulation="reduced")` (and `pipeline.forward`, and the Data's own calls), which have no
second attempt, refused a regular state — with a false diagnosis ("the bias force |h| = 24.1 on 'base_vz'
overflows double precision") — that a fresh process, whose first call seeds its warm start at that very state,
evaluates. Found on the bundled four-bar knee on a massless cart with a prescribed slider, floating base; the walk
of random states below declined on the plain four-bar, the squeezer and the prosthesis on a floating base too.

Each call is compared with `reduced_pinocchio` (Pinocchio's CRBA/RNEA through the same coordinate map) and with a
fresh model's answer at the same state, in both orders of the walk.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet

pytest.importorskip("pinocchio")

ROOT = Path(__file__).parents[2]
EPS = np.finfo(float).eps
T = 0.2   # s: the cart's prescribed slider has moved (slide = v t)


def _cart_fourbar(tmp_path: Path) -> Path:
    """The bundled four-bar knee on a massless cart whose prismatic slider `slide` is prescribed (v t)."""
    text = (ROOT / "urdf" / "fourbar_knee.urdf").read_text()
    text = text.replace('<link name="thigh">', '<link name="cart"/>\n  <joint name="slide" type="prismatic">'
                        '<parent link="cart"/><child link="thigh"/><axis xyz="1 0 0"/>'
                        '<limit lower="-10" upper="10" effort="0" velocity="10"/></joint>\n  <link name="thigh">', 1)
    text = text.replace('<biobullet version="1">', '<biobullet version="1">\n    <joint_function joint="slide" '
                        'type="expression" expression="v*t" parameters="v=0.3"/>', 1)
    path = tmp_path / "cart_fourbar.urdf"
    path.write_text(text)
    return path


def _path(tmp_path: Path, name: str) -> Path:
    return _cart_fourbar(tmp_path) if name == "cart" else ROOT / "urdf" / name


def _states(model, count: int, seed: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Random states around the neutral configuration: every velocity coordinate ±0.5 rad (or m) away, speeds and
    generalized forces ±1."""
    rng = np.random.default_rng(seed)
    states = []
    for _ in range(count):
        q = model.integrate_configuration(model.neutral_configuration(), rng.uniform(-0.5, 0.5, model.nv), 1.0)
        states.append((q, rng.uniform(-1.0, 1.0, model.nv), rng.uniform(-1.0, 1.0, model.nv)))
    return states


def _close(got: np.ndarray, expected: np.ndarray, mass: np.ndarray) -> bool:
    """|got − expected|∞ ≤ 10 cond₂(M_r) ε (|expected|∞ + 1): the round-off of solving M_r v̇ = Q − h_r by two
    independent factorisations of matrices that agree to a few ulp (M_r's entries ~1, so the + 1 covers a v̇ near
    zero). A call on the wrong loop branch or from a stale joint state is off by O(1)."""
    return float(np.abs(got - expected).max()) <= 10.0 * np.linalg.cond(mass) * EPS * (np.abs(expected).max() + 1.0)


@pytest.mark.parametrize("name", ["cart", "fourbar_knee.urdf", "andrews_squeezer.urdf", "prosthesis_fourbar.urdf"])
@pytest.mark.parametrize("reverse", [False, True])
def test_a_walk_of_states_equals_pinocchio_and_a_fresh_model(tmp_path, name, reverse):
    """Many random states in one model, in order and reversed: every `reduced` call (the pipeline, no second
    attempt) equals Pinocchio's projection and a fresh model's first call at that state. On the old code the
    cart model's third state (seed 0) raised SolverError, and the walks declined on every model."""
    path = _path(tmp_path, name)
    model = biobullet.load_model(path, floating_base=True)
    states = _states(model, 12, seed=0)
    if reverse:
        states = states[::-1]
    for k, (q, v, tau) in enumerate(states):
        # the pipeline's three calls first, a different one first at each state (the first meets the warm start
        # of the last state; Pinocchio's projection below solves the loops in the same warm starts, the generic
        # resolvers', and would seed them at this state)
        calls = [lambda: model.forward_dynamics(q, v, tau, T, formulation="reduced"),
                 lambda: model.mass_matrix(q, T, formulation="reduced"),
                 lambda: model.bias_forces(q, v, T, formulation="reduced")]
        order = np.roll(np.arange(3), -(k % 3))
        got = dict(zip(order, (calls[i]() for i in order)))
        mass = model.mass_matrix(q, T, formulation="reduced_pinocchio")
        expected = model.forward_dynamics(q, v, tau, T, formulation="reduced_pinocchio")
        bias = model.bias_forces(q, v, T, formulation="reduced_pinocchio")
        assert _close(got[0], expected, mass), (name, k, got[0], expected)
        np.testing.assert_allclose(got[1], mass, rtol=0, atol=10 * EPS * np.linalg.cond(mass) * np.abs(mass).max())
        np.testing.assert_allclose(got[2], bias, rtol=0,
                                   atol=10 * EPS * np.linalg.cond(mass) * (np.abs(bias).max() + 1.0))
        if k % 4 == 0:   # a fresh model: its first call seeds its warm start at this very state
            fresh = biobullet.load_model(path, floating_base=True).forward_dynamics(q, v, tau, T,
                                                                                 formulation="reduced")
            assert _close(got[0], fresh, mass), (name, k, got[0], fresh)


def test_the_pipelines_data_calls_evaluate_a_state_the_loop_stage_declines(tmp_path):
    """`pipeline.data.Data.forward` (what `formulation="reduced"` and `pipeline.forward` call, one attempt): the
    third state of the cart model's walk is one the loop stage declines (its knee jumped 0.90 rad from the warm
    start, 0.42 rad from the declared initial solution); the call now evaluates it (before: None)."""
    model = biobullet.load_model(_cart_fourbar(tmp_path), floating_base=True)
    data = model.data()
    for q, v, tau in _states(model, 3, seed=0):
        got = data.forward(model, q, v, tau, T)
        assert got is not None
        expected = model.forward_dynamics(q, v, tau, T, formulation="reduced_pinocchio")
        assert _close(got, expected, model.mass_matrix(q, T, formulation="reduced_pinocchio"))


def test_the_overflow_diagnosis_names_the_quantity_that_is_not_finite(tmp_path):
    """Generalized forces of 1e308 (finite, as is Q − h): M⁻¹ (Q − h) overflows, and the text names the
    acceleration; speeds of 1e200: h(q, v) itself is not finite, and the text names it. Before, the text called
    the larger of |Q| and |h| "overflowing" whether or not it was finite (the state this file's walks decline
    read "the bias force |h| = 24.1 on 'base_vz' overflows double precision")."""
    model = biobullet.load_model(_cart_fourbar(tmp_path), floating_base=True)
    q, v, tau = _states(model, 1, seed=0)[0]
    for formulation in ("reduced", None):
        with pytest.raises(biobullet.SolverError, match=r"the acceleration on '\w+' is not finite \(the mass "
                                                        r"matrix is regular here\): it overflows double precision — the "
                                                        r"largest generalized force \|Q\| = 1e\+308 on '\w+'"):
            model.forward_dynamics(q, v, np.full(model.nv, 1e308), T, formulation=formulation)
        with pytest.raises(biobullet.SolverError, match=r"the velocity terms h\(q, v\) are not finite"):
            model.forward_dynamics(q, np.full(model.nv, 1e200), tau, T, formulation=formulation)
    # and the calls after them are Pinocchio's again
    expected = model.forward_dynamics(q, v, tau, T, formulation="reduced_pinocchio")
    assert _close(model.forward_dynamics(q, v, tau, T), expected,
                  model.mass_matrix(q, T, formulation="reduced_pinocchio"))
