"""Every formulation against Pinocchio and PyBullet (validate_model), on random trees and bundled models."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from biobullet import ModelError, load_model
from biobullet.validate import validate_model
from biobullet.validate.random_models import random_urdf
from biobullet.validate.report import random_state

pytest.importorskip("pinocchio")
pytest.importorskip("pybullet")

URDF_DIR = Path(__file__).resolve().parents[2] / "urdf"
BUNDLED = sorted(URDF_DIR.glob("*.urdf"))
# (seed, floating base, couplings): fixed and floating, with polynomial and expression joint functions;
# random_urdf always mixes revolute, continuous, prismatic and fixed joints.
RANDOM = [(1, False, 0), (2, True, 0), (3, False, 2), (4, True, 2), (5, False, 3), (6, True, 1)]


def _random_model(tmp_path, seed, floating, couplings, n_links=7):
    path = tmp_path / f"random_{seed}.urdf"
    path.write_text(random_urdf(seed, n_links, floating_base=floating, couplings=couplings))
    return load_model(path)


def _assert_ok(report):
    assert report.ok, "\n" + report.to_table()
    pinocchio = [c for c in report.checks if c.oracle == "pinocchio"]
    assert pinocchio and all(c.tolerance == 1e-9 and c.max_rel_error <= 1e-9 for c in pinocchio)


@pytest.mark.parametrize("seed, floating, couplings", RANDOM)
def test_random_trees_agree_with_oracles(tmp_path, seed, floating, couplings):
    model = _random_model(tmp_path, seed, floating, couplings)
    report = validate_model(model, samples=4, seed=seed, tol=1e-9)
    _assert_ok(report)
    quantities = {(c.quantity, c.formulation, c.oracle) for c in report.checks}
    for q in ("mass_matrix", "bias_forces", "forward_dynamics"):
        assert (q, "reduced", "pinocchio") in quantities and (q, "reduced", "pybullet") in quantities
    assert ("jacobian", "kinematics", "pinocchio") in quantities
    assert ("link_velocity", "kinematics", "pybullet") in quantities
    assert not any(c.formulation == "reduced_pinocchio" for c in report.checks)


@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_bundled_models_agree_with_oracles(path):
    model = load_model(path)  # a bundled file that does not load is a failure, never a skip
    _assert_ok(validate_model(model, samples=3, seed=1, tol=1e-9))


def test_bundled_models_exist():
    assert BUNDLED, f"no bundled models in {URDF_DIR}"


@pytest.mark.parametrize("seed, floating, couplings", [(7, True, 2), (8, False, 3), (9, False, 0)])
def test_reduced_pinocchio_equals_reduced(tmp_path, seed, floating, couplings):
    model = _random_model(tmp_path, seed, floating, couplings)
    rng = np.random.default_rng(seed)
    for _ in range(5):
        q, v, tau = random_state(model, rng)
        for a, b in ((model.mass_matrix(q, formulation="reduced_pinocchio"), model.mass_matrix(q)),
                     (model.bias_forces(q, v, formulation="reduced_pinocchio"), model.bias_forces(q, v)),
                     (model.forward_dynamics(q, v, tau, formulation="reduced_pinocchio"),
                      model.forward_dynamics(q, v, tau))):
            assert np.abs(a - b).max() / max(np.abs(b).max(), 1.0) < 1e-10


def check_coordinate_map(model, q, v, t: float = 0.0, *, step: float = 1e-5) -> tuple[float, float]:
    """Relative errors (G vs central differences of θ(q), γ vs second differences along q + s v).

    G: columns (θ(q + h e_k) − θ(q − h e_k)) / 2h; γ(q, v) at fixed t (when no function uses time) equals
    d²θ/ds² along q(s) = q + s v minus G·0, i.e. (θ(q+hv) − 2θ(q) + θ(q−hv)) / h². Truncation O(h²) and
    rounding O(ε/h²) give ~1e-7 relative at h = 1e-4 for the second difference; both are reported.
    Floating bases are excluded (their block is the identity).
    """
    b = model.base_nq   # floating base and multi-DOF joints
    bv = model.base_nv
    q = np.asarray(q, float)
    v = np.asarray(v, float)
    _, gradient = model.coordinate_gradient(q, t)
    gradient = gradient[bv:, bv:]
    numeric = np.zeros_like(gradient)
    for k in range(gradient.shape[1]):
        dq = np.zeros_like(q)
        dq[b + k] = step
        numeric[:, k] = (model.joint_positions(q + dq, t) - model.joint_positions(q - dq, t)) / (2 * step)
    g_err = np.abs(gradient - numeric).max(initial=0.0) / max(np.abs(gradient).max(initial=0.0), 1.0)
    if model.coordinate_map.uses_time:
        raise ModelError("check_coordinate_map handles time-independent joint functions only", file=model.file)
    _, _, _, gamma = model.joint_state(q, v, t)
    gamma = gamma[bv:]
    h = 1e-4
    dq = np.zeros_like(q)
    dq[b:] = v[bv:] * h
    second = (model.joint_positions(q + dq, t) - 2 * model.joint_positions(q, t)
              + model.joint_positions(q - dq, t)) / h ** 2
    c_err = np.abs(gamma - second).max(initial=0.0) / max(np.abs(gamma).max(initial=0.0), 1.0)
    return float(g_err), float(c_err)


@pytest.mark.parametrize("seed, floating, couplings", [(3, False, 2), (4, True, 2), (5, False, 3)])
def test_coordinate_map_matches_finite_differences(tmp_path, seed, floating, couplings):
    model = _random_model(tmp_path, seed, floating, couplings)
    assert not model.coordinate_map.identity
    rng = np.random.default_rng(seed)
    for _ in range(5):
        q, v, _ = random_state(model, rng)
        g_err, gamma_err = check_coordinate_map(model, q, v)
        # central differences: O(h²) truncation + O(ε/h) rounding ≈ 1e-10; second differences ≈ 1e-8
        assert g_err < 1e-6 and gamma_err < 1e-6


@pytest.mark.parametrize("oracle", ["pinocchio", "pybullet"])
def test_wrong_model_fails_validation(tmp_path, oracle):
    """Our side loads a copy with one inertia off by 1e-5 kg·m² (≈1e-4 relative); the oracles read the original."""
    original = tmp_path / "original.urdf"
    text = random_urdf(21, 6, floating_base=True, couplings=1)
    original.write_text(text)
    match = re.search(r'(<link name="l3">.*?izz=")([^"]+)(")', text)
    perturbed_text = text[:match.start(2)] + repr(float(match.group(2)) + 1e-5) + text[match.end(2):]
    perturbed = tmp_path / "perturbed.urdf"
    perturbed.write_text(perturbed_text)
    good = validate_model(load_model(perturbed), samples=2, oracles=(oracle,), reference_file=str(perturbed))
    assert good.ok, good.to_table()
    bad = validate_model(load_model(perturbed), samples=2, oracles=(oracle,), reference_file=str(original))
    assert not bad.ok
    failed = {c.quantity for c in bad.checks if not c.ok}
    assert {"mass_matrix", "bias_forces", "forward_dynamics"} <= failed


def test_report_json_and_table(tmp_path):
    model = _random_model(tmp_path, 2, True, 1, n_links=4)
    calls = []
    report = validate_model(model, samples=2, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 2), (2, 2)]
    data = json.loads(report.to_json())
    assert data["model"] == model.name and data["ok"] is report.ok and data["samples"] == 2
    for check in data["checks"]:
        assert {"quantity", "formulation", "oracle", "max_abs_error", "max_rel_error", "ok"} <= set(check)
    table = report.to_table()
    assert model.name in table and "forward_dynamics" in table


def test_bad_arguments_raise_model_error(tmp_path):
    model = _random_model(tmp_path, 2, False, 0, n_links=3)
    with pytest.raises(ModelError):
        validate_model(model, samples=0)
    with pytest.raises(ModelError):
        validate_model(model, oracles=("sympy_maybe",))
