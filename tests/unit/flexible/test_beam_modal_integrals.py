"""Assumed-modes integrals of beam modes against closed forms (pinned-pinned sine modes)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from biobullet.flexible import beam_modes, modal_integrals
from biobullet_studies.paper002 import TABLE3_UNROUNDED as P

RHO_A = P["density"] * P["area"]
RHO_I = P["density"] * P["second_moment"]
EI = P["youngs_modulus"] * P["second_moment"]
L = P["length"]
KV, GAMMA = 125.0, 0.025  # paper 002 Table 3


def test_euler_bernoulli_ss_closed_forms():
    """W_n = sin(nπx/L): every integral has a closed form."""
    m = beam_modes(boundary="ss", n_modes=3, theory="euler_bernoulli", **P)
    mi = modal_integrals(m, kelvin_voigt=KV, air_damping=GAMMA)
    n = np.arange(1, 4)
    k = n * math.pi / L
    np.testing.assert_allclose(mi.mass, RHO_A * L / 2 * np.eye(3), atol=1e-14)
    np.testing.assert_allclose(mi.mass_rotary, RHO_I * L / 2 * np.diag(k ** 2), atol=1e-14)
    np.testing.assert_allclose(mi.stiffness, EI * L / 2 * np.diag(k ** 4), rtol=1e-13, atol=1e-8)
    assert np.all(mi.stiffness_shear == 0)
    np.testing.assert_allclose(mi.kelvin_voigt, KV * P["second_moment"] * L / 2 * np.diag(k ** 4),
                               rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(mi.air_damping, GAMMA * L / 2 * np.eye(3), atol=1e-16)
    np.testing.assert_allclose(mi.w_integral, RHO_A * L * (1 - np.cos(n * math.pi)) / (n * math.pi),
                               atol=1e-14)
    np.testing.assert_allclose(mi.xw_integral, RHO_A * L ** 2 * (-np.cos(n * math.pi)) / (n * math.pi),
                               atol=1e-14)
    np.testing.assert_allclose(mi.theta_integral, 0.0, atol=1e-18)
    np.testing.assert_allclose(mi.end_w, 0.0, atol=1e-14)
    np.testing.assert_allclose(mi.end_theta, [k, k * np.cos(n * math.pi)], rtol=1e-13)
    assert mi.link_mass == pytest.approx(RHO_A * L) and mi.link_inertia == pytest.approx(
        RHO_A * L ** 3 / 3 + RHO_I * L)


def test_timoshenko_ss_split_of_energy():
    """W = sin(kx), Θ = a cos(kx): bending EI a²k²L/2, shear κGA (k − a)² L/2, mass (ρA + ρI a²) L/2."""
    m = beam_modes(boundary="ss", n_modes=2, **P)
    mi = modal_integrals(m, kelvin_voigt=KV, air_damping=GAMMA)
    kga = P["shear_coefficient"] * P["shear_modulus"] * P["area"]
    for i, s in enumerate(m.shapes):
        k = (i + 1) * math.pi / L
        a = float(s.Theta(0.0))
        assert mi.stiffness_bending[i, i] == pytest.approx(EI * a * a * k * k * L / 2, rel=1e-12)
        assert mi.stiffness_shear[i, i] == pytest.approx(kga * (k - a) ** 2 * L / 2, rel=1e-7)
        assert mi.mass[i, i] == pytest.approx((RHO_A + RHO_I * a * a) * L / 2, rel=1e-13)
        assert mi.stiffness[i, i] / mi.mass[i, i] == pytest.approx(m.omega[i] ** 2, rel=1e-11)
    print("K11 (N/m), M11 (kg):", mi.stiffness[0, 0], mi.mass[0, 0])


@pytest.mark.parametrize("bc", ["cc", "sc", "cf"])
def test_quadrature_converged(bc):
    m = beam_modes(boundary=bc, n_modes=6, **P)
    a = modal_integrals(m, kelvin_voigt=KV, air_damping=GAMMA)
    b = modal_integrals(m, kelvin_voigt=KV, air_damping=GAMMA, n_points=400)
    for name in ("mass", "stiffness", "kelvin_voigt", "air_damping", "w_integral", "xw_integral",
                 "theta_integral"):
        x, y = getattr(a, name), getattr(b, name)
        scale = np.max(np.abs(y))
        if name == "theta_integral":  # ≈ 0 by cancellation; Cauchy–Schwarz bound of |∫ρIΘ| instead
            scale = math.sqrt(RHO_I * L * np.max(np.diag(b.mass_rotary)))
        assert np.max(np.abs(x - y)) <= 1e-12 * scale, name
