"""Flags among the numbers of the public calls' vectors and of `simulate`'s baumgarte gains (flags round).

- `Model.forward_dynamics`, `bias_forces`, `mass_matrix` (and every call through `Model.checked`) took a bool among
  q, v or τ as the number 1: NumPy reads [True, 0.5] as [1.0, 0.5] and a bool array converts to 0/1, so
  `forward_dynamics(q, v, [True, 0, …])` applied 1 N·m. Now one ModelError names the argument and the entry (the
  coordinate's name), as the bridge's `apply` does; float arrays, lists of floats and ints, tuples, float32 arrays
  and column vectors are still taken, and give Pinocchio's aba on the same file.
- `simulate(..., baumgarte=(np.True_, 10.0))` ran with α = 1.0 (a Python bool was dropped from the pair, NumPy's
  was read by float()): now refused naming `baumgarte` and the gain.
"""
from __future__ import annotations

import numpy as np
import pytest

import biobullet
from biobullet import simulate
from biobullet.core.errors import ModelError
from biobullet.model.bundled import bundled_model

pin = pytest.importorskip("pinocchio")

ARM7 = bundled_model("arm7.urdf")


@pytest.fixture(scope="module")
def arm7():
    return biobullet.load_model(ARM7)


def _state(model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (np.linspace(-0.5, 0.6, model.nq), np.linspace(0.3, -0.2, model.nv), np.linspace(1.0, -1.0, model.nv))


def _with_flag(values: np.ndarray, k: int, flag) -> list:
    """`values` as a list of floats with entry k replaced by `flag`."""
    out = values.tolist()
    out[k] = flag
    return out


# ------------------------------------------------------------------ 1. flags among q, v, τ
@pytest.mark.parametrize("flag", [True, np.True_, False])
@pytest.mark.parametrize("bound", [False, True], ids=["first call", "bound calls"])
def test_public_calls_refuse_a_flag_among_the_numbers(arm7, flag, bound) -> None:
    """A bool in a list of floats (Python's or NumPy's, True or False) is refused naming the argument and the
    coordinate — on the model's class methods and on the per-model calls bound after the first call."""
    model = biobullet.load_model(ARM7) if not bound else arm7
    q, v, tau = _state(model)
    if bound:
        model.forward_dynamics(q, v, tau)
        assert "forward_dynamics" in model.__dict__   # the closures of `Data.public_calls` are in place
    cases = [
        (lambda: model.forward_dynamics(q, v, _with_flag(tau, 0, flag)), "'tau'", "joint_1"),
        (lambda: model.forward_dynamics(_with_flag(q, 3, flag), v, tau), "'q'", "joint_4"),
        (lambda: model.forward_dynamics(q, tuple(_with_flag(v, 6, flag)), tau), "'v'", "joint_7"),
        (lambda: model.bias_forces(q, _with_flag(v, 2, flag)), "'v'", "joint_3"),
        (lambda: model.mass_matrix(_with_flag(q, 1, flag)), "'q'", "joint_2"),
        (lambda: model.forward_dynamics(q, v, [_with_flag(tau, 5, flag)]), "'tau'", "joint_6"),   # a row vector
    ]
    for call, argument, joint in cases:
        with pytest.raises(ModelError, match="bool") as info:
            call()
        assert f"argument {argument}" in str(info.value) and joint in str(info.value)


def test_public_calls_refuse_a_bool_array(arm7) -> None:
    """A bool array (the result of a comparison passed by mistake) is refused naming the argument."""
    q, v, tau = _state(arm7)
    mask = tau > 0
    for call, argument in ((lambda: arm7.forward_dynamics(q, v, mask), "'tau'"),
                           (lambda: arm7.bias_forces(q, v > 0), "'v'"),
                           (lambda: arm7.mass_matrix(q > 0), "'q'"),
                           (lambda: arm7.forward_dynamics(q, v, mask, formulation="reduced"), "'tau'")):
        with pytest.raises(ModelError, match="array of bools") as info:
            call()
        assert f"argument {argument}" in str(info.value)


def test_checked_names_the_argument(arm7) -> None:
    """`Model.checked`, which every public call reaches for a vector it converts, names the argument it is given."""
    with pytest.raises(ModelError, match=r"argument 'tau_joints': entry 4 \(joint_5\) is a bool"):
        arm7.checked("tau_joints", [0.0, 0.0, 0.0, 0.0, np.False_, 0.0, 0.0], arm7.nv)


# ------------------------------------------------------------------ 2. numbers are still taken (against Pinocchio)
def test_number_vectors_are_taken_and_equal_pinocchio(arm7) -> None:
    """Float arrays, lists of floats and ints, tuples, float32 arrays and column vectors give Pinocchio's aba on the
    same file (arm7: seven revolute joints, fixed base, the tool merged by both) at the same float64 values."""
    pin_model = pin.buildModelFromUrdf(str(ARM7))
    pin_data = pin_model.createData()
    assert [pin_model.names[i] for i in range(1, pin_model.njoints)] == list(arm7.velocity_names)
    q, v, _ = _state(arm7)
    tau_int = [3, -2, 1, 0, -1, 2, 0]
    tau32 = np.linspace(1.0, -1.0, arm7.nv, dtype=np.float32)
    cases = [
        (q, v, np.array(tau_int, dtype=float)),
        (q.tolist(), v.tolist(), tau_int),
        (tuple(q), tuple(v), tuple(float(x) for x in tau_int)),
        (q.astype(np.float32), v.astype(np.float32), tau32),
        (q.reshape(-1, 1), v.reshape(1, -1), tau32.astype(float).reshape(-1, 1)),
    ]
    for q_in, v_in, tau_in in cases:
        q64, v64, tau64 = (np.asarray(x, dtype=float).reshape(-1) for x in (q_in, v_in, tau_in))
        expected = pin.aba(pin_model, pin_data, q64, v64, tau64)
        for _ in range(2):   # the class method, then the bound call
            got = arm7.forward_dynamics(q_in, v_in, tau_in)
            # the two recursions in float64 (|v̇| ≈ 10–100 rad/s²): round-off, relative 1e-11 of the largest entry
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-11 * np.abs(expected).max())
        mass = _symmetric(pin.crba(pin_model, pin_data, q64))
        np.testing.assert_allclose(arm7.mass_matrix(q_in), mass, rtol=0, atol=1e-12 * np.abs(mass).max())


def _symmetric(upper: np.ndarray) -> np.ndarray:
    """Pinocchio's crba fills the upper triangle only."""
    return np.triu(upper) + np.triu(upper, 1).T


# ------------------------------------------------------------------ 3. simulate's baumgarte gains
@pytest.mark.parametrize("gains, gain", [((np.True_, 10.0), "α"), ((20.0, np.False_), "β"),
                                         (np.array([True, False]), "α")])
def test_simulate_refuses_flags_as_baumgarte_gains(arm7, gains, gain) -> None:
    """NumPy's flags were read by float() as gains 1.0 / 0.0 (Python's were dropped, the pair then too short)."""
    with pytest.raises(ModelError, match="argument 'baumgarte'") as info:
        simulate(arm7, 0.01, formulation="multipliers", baumgarte=gains)
    assert f"'{gain}'" in str(info.value) and "bool" in str(info.value)
