"""Shoulder-rhythm study (paper 000, Table 1): computed torques against Pinocchio, power balance, metrics, identities.

The Pinocchio check is independent of biobullet's dynamics and coordinate machinery: the dependent joint angles
θ(t) are read from `model.joint_positions(q(t))` only, θ̇ and θ̈ are finite differences along the trajectory,
G = ∂θ/∂q is a finite difference in q, and the torques come from Pinocchio's RNEA on the same URDF.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from biobullet import load_model  # noqa: E402
from biobullet_studies.common import bundled_model  # noqa: E402
from biobullet_studies.shoulder_dynamics import (CASES_DEG, MODELS, PERIOD, Motion, inverse_dynamics,  # noqa: E402
                                                   nrmse, pearson, power_balance, relative_difference, rmse)

TIME_STEP = 1.0e-3   # s, finite-difference step along the trajectory
Q_STEP = 1.0e-6      # rad, finite-difference step for G = ∂θ/∂q
CHECK_TIMES = np.linspace(0.0, PERIOD, 9)[:-1] + 0.137  # s, away from the symmetric points of the cosine


@pytest.fixture(scope="module")
def models():
    return {key: load_model(bundled_model(file)) for key, file in MODELS.items()}


def pinocchio_torques(model, path: str, motion: Motion, t: float) -> np.ndarray:
    """Q = Gᵀ RNEA(θ, θ̇, θ̈) with θ̇, θ̈ from 5-point central differences of θ(t) and G from central differences."""
    pmodel = pin.buildModelFromUrdf(path)
    data = pmodel.createData()
    pmodel.gravity.linear = np.array(model.gravity)
    names = model.coordinate_names
    theta = [model.joint_positions(motion(t + k * TIME_STEP, names)[0][0]) for k in (-2, -1, 0, 1, 2)]
    rate = (theta[0] - 8 * theta[1] + 8 * theta[3] - theta[4]) / (12 * TIME_STEP)
    accel = (-theta[0] + 16 * theta[1] - 30 * theta[2] + 16 * theta[3] - theta[4]) / (12 * TIME_STEP ** 2)
    q = motion(t, names)[0][0]
    gradient = np.column_stack([(model.joint_positions(q + Q_STEP * e) - model.joint_positions(q - Q_STEP * e))
                                / (2 * Q_STEP) for e in np.eye(model.nq)])
    # Pinocchio's joint order may differ from the URDF's: map by name (every joint here is 1-DOF revolute)
    slots = [pmodel.joints[pmodel.getJointId(name)].idx_q for name in model.joint_names]
    x, xd, xdd = (np.zeros(pmodel.nq) for _ in range(3))
    x[slots], xd[slots], xdd[slots] = theta[2], rate, accel
    tau = pin.rnea(pmodel, data, x, xd, xdd)[slots]
    return gradient.T @ tau


@pytest.mark.parametrize("case", sorted(CASES_DEG))
@pytest.mark.parametrize("key", sorted(MODELS))
def test_computed_torques_match_pinocchio_rnea(models, case, key):
    # error budget: 5-point stencils with h = 1 ms have truncation ~h⁴·|θ⁽⁶⁾|/90 < 1e-12 rad/s² here
    # (ω = π/2 s⁻¹) and round-off ~ 3ε|θ|/h² ≈ 1e-9 rad/s²; G's round-off ≈ ε|θ|/h ≈ 1e-10. With |M| < 1 kg·m²
    # and torques of order 1–12 N·m, the expected relative error is ≲1e-9 (measured 4e-11 … 9e-11): 1e-7 leaves
    # a wide margin and still catches any modelling error (a 1e-4 rad slope error gives ~1e-4).
    model, motion = models[key], Motion(CASES_DEG[case])
    ours = inverse_dynamics(model, motion, CHECK_TIMES).torque
    oracle = np.array([pinocchio_torques(model, bundled_model(MODELS[key]), motion, t) for t in CHECK_TIMES])
    assert relative_difference(ours, oracle) < 1e-7


@pytest.mark.parametrize("key", sorted(MODELS))
def test_power_balance_over_one_period(models, key):
    # ∫Q·q̇ dt (cumulative Simpson, h = 10 ms) = Δ(½q̇ᵀMq̇ + V) at every sample. Simpson's error ~h⁴·|P⁗|/180
    # with P's harmonics up to ~3ω ≈ 5 s⁻¹ is ~1e-8 of max|ΔE| (measured 1.3e-8); 1e-6 as in the study.
    result = inverse_dynamics(models[key], Motion(CASES_DEG["case1"]), np.linspace(0.0, PERIOD, 401))
    balance = power_balance(result)
    assert balance["max_delta_energy"] > 0.3  # J: a real exchange of energy, not 0 = 0
    assert balance["relative_error"] < 1e-6


def test_power_balance_detects_a_wrong_torque(models):
    result = inverse_dynamics(models["de_groot"], Motion(CASES_DEG["case2"]), np.linspace(0.0, PERIOD, 201))
    result.torque[:, 0] *= 1.01  # a 1 % error on the plane-of-elevation torque
    assert power_balance(result)["relative_error"] > 1e-3


def test_rmse_and_nrmse_by_hand():
    reference, other = np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 1.0, 1.0, 1.0])
    # errors 1, 0, −1, −2: mean square 6/4; reference range 3
    assert rmse(reference, other) == pytest.approx(np.sqrt(1.5), rel=1e-15)
    assert nrmse(reference, other) == pytest.approx(np.sqrt(1.5) / 3.0, rel=1e-15)
    assert nrmse(reference, reference) == 0.0
    assert nrmse(other, reference) == np.inf  # constant reference: no range to normalise by


def test_pearson_by_hand():
    # x − x̄ = (−1.5, −.5, .5, 1.5), y − ȳ = (−1.5, .5, −.5, 1.5): Σ = 4, Σx² = Σy² = 5 → r = 0.8
    assert pearson([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8, rel=1e-15)
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0, rel=1e-15)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0, rel=1e-15)
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=50), rng.normal(size=50)
    assert pearson(x, y) == pytest.approx(np.corrcoef(x, y)[0, 1], rel=1e-12)
    assert pearson(x, 3.0 * y + 7.0) == pytest.approx(pearson(x, y), rel=1e-12)
    assert np.isnan(pearson([1, 1, 1], [1, 2, 3]))


def test_rhythms_identical_at_zero_plane_and_elevation(models):
    """urdf/README: both files agree exactly at plane = elevation = 0. There θ is the same, so the tree torques τ
    are the same for any axial-rotation/elbow motion: Q_axial and Q_elbow agree, and the plane/elevation torques
    differ exactly by (G_deGroot − G_Holzbaur)ᵀ τ — the rhythm slopes, nothing else."""
    dg, hz = models["de_groot"], models["holzbaur"]
    rng = np.random.default_rng(7)
    pmodel = pin.buildModelFromUrdf(bundled_model(MODELS["de_groot"]))
    pmodel.gravity.linear = np.array(dg.gravity)
    data = pmodel.createData()
    slots = [pmodel.joints[pmodel.getJointId(name)].idx_q for name in dg.joint_names]
    for _ in range(5):
        q = np.array([0.0, 0.0, *rng.uniform(-1.0, 1.0, 2)])
        v = np.array([0.0, 0.0, *rng.normal(size=2)])
        a = np.array([0.0, 0.0, *rng.normal(size=2)])
        x, xd, gradient_dg, gamma = dg.joint_state(q, v)
        np.testing.assert_allclose(hz.joint_positions(q), x, rtol=0, atol=1e-15)
        q_dg = dg.mass_matrix(q) @ a + dg.bias_forces(q, v)
        q_hz = hz.mass_matrix(q) @ a + hz.bias_forces(q, v)
        scale = np.abs(q_dg).max()
        np.testing.assert_allclose(q_hz[2:], q_dg[2:], rtol=0, atol=1e-12 * scale)
        # plane and elevation rates are zero, so γ vanishes in both models and ẍ = G q̈ is the same
        np.testing.assert_allclose(gamma, 0.0, atol=1e-15)
        theta, rate, accel = (np.zeros(pmodel.nq) for _ in range(3))
        theta[slots], rate[slots], accel[slots] = x, xd, gradient_dg @ a
        tau = pin.rnea(pmodel, data, theta, rate, accel)[slots]
        _, gradient_hz = hz.coordinate_gradient(q)
        np.testing.assert_allclose(q_dg - q_hz, (gradient_dg - gradient_hz).T @ tau, rtol=0, atol=1e-12 * scale)


def test_bridge_inverse_dynamics_matches(models):
    bridge_module = pytest.importorskip("biobullet.bridge")
    from biobullet_studies.shoulder_dynamics import bridge_inverse_dynamics
    result = inverse_dynamics(models["de_groot"], Motion(CASES_DEG["case2"]), CHECK_TIMES)
    with bridge_module.Bridge(models["de_groot"]) as bridge:
        assert relative_difference(bridge_inverse_dynamics(bridge, result), result.torque) < 1e-9


def test_study_writes_documented_outputs(tmp_path):
    from biobullet_studies import shoulder
    summary = shoulder.run(str(tmp_path), samples=81, bridge=False, video=False)
    with open(tmp_path / "summary.json") as handle:
        stored = json.load(handle)
    for key in ("motion", "nrmse_definition", "table", "paper_table", "torque_range", "cross_check",
                "power_balance", "bridge", "video", "figures", "ok"):
        assert key in stored and key in (shoulder.__doc__ or "")
    for case in CASES_DEG:
        assert stored["cross_check"][case]["de_groot"]["matrix_calculus"] < 1e-9
        for name in ("plane_of_elevation", "elevation"):
            assert 0.0 < stored["table"][case][name]["nrmse"] < 1.0
            assert -1.0 <= stored["table"][case][name]["r"] <= 1.0
    assert stored["table"] == json.loads(json.dumps(summary["table"]))
    for name in ["report.md", *stored["figures"]]:
        assert os.path.getsize(tmp_path / name) > 0
