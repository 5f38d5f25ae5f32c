"""Timoshenko / Euler–Bernoulli beam modes against paper 002 Table 2 and closed-form results."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from biobullet.core.errors import ModelError
from biobullet.flexible import beam_modes, modal_integrals
from biobullet_studies.paper002 import table2_comparison
from biobullet_studies.paper002 import TABLE3_PRINTED, TABLE3_UNROUNDED

E, NU = 2e11, 0.3
G = E / (2 * (1 + NU))
KAPPA = 5.0 / 6.0
RHO = 7800.0


def rect(length: float, h: float, b: float = 0.02) -> dict:
    """Steel rectangular section b×h (m) of the given length (m)."""
    return dict(length=length, youngs_modulus=E, shear_modulus=G, shear_coefficient=KAPPA, area=b * h,
                second_moment=b * h ** 3 / 12, density=RHO)


THICK = rect(1.0, 0.2)  # L/h = 5: strong shear and rotary inertia, transition at mode ≈ 8
PAPER = TABLE3_PRINTED


# ---------------------------------------------------------------- paper 002, Table 2
def test_table2_printed_data_six_digits_and_residuals():
    cmp = table2_comparison()
    for name, row in cmp["table3_printed"].items():
        print(f"printed Table 3 data  {name:10s} printed {row['printed']:.16g} ours {row['ours']:.16g} "
              f"rel.diff {row['relative_difference']:+.2e} residual(printed) {row['printed_residual']:.2e} "
              f"residual(ours) {row['our_residual']:.1e}")
        assert abs(row["relative_difference"]) < 1e-6  # Table 3 prints I, G to 4 and 2 digits
        assert row["our_residual"] <= 1e-12
    for name, row in cmp["table3_unrounded"].items():
        print(f"unrounded data        {name:10s} rel.diff {row['relative_difference']:+.2e} "
              f"residual(printed) {row['printed_residual']:.2e}")
        assert abs(row["relative_difference"]) < 4e-15  # 15–16 digits printed
        assert row["our_residual"] <= 1e-12 and row["printed_residual"] <= 1e-12


@pytest.mark.parametrize("bc, coeffs", [
    ("cc", {"C1": 0.6189067368941716, "C2": -0.6292076184824934, "C3": -0.6181543604098716,
            "C4": 0.6292076184824934, "aC1": 2.924089234018893, "-aC2": 2.97275682019588,
            "bC3": -2.924089234018893, "bC4": 2.976375062609595}),
    ("sc", {"C1": 0.937356072626805, "C2": 0.0, "C3": 0.02617115567137916, "C4": 0.0,
            "aC1": 3.677927210568842, "-aC2": 0.0, "bC3": 0.1027745658114473, "bC4": 0.0}),
    ("cs", {"C1": 0.6633471080156852, "C2": -0.6622741284223433, "C3": -0.6627910308436212,
            "C4": 0.6622741284223433, "aC1": 2.602791457664548, "-aC2": 2.598581381090682,
            "bC3": -2.602791457664547, "bC4": 2.600761573215394}),
])
def test_table2_mode_shape_coefficients(bc, coeffs):
    """Every printed W and Θ coefficient (max|W| = 1, W > 0 first lobe) with the unrounded data."""
    pf = beam_modes(boundary=bc, n_modes=1, **TABLE3_UNROUNDED).shapes[0].paper_form()
    ours = {"C1": pf["C1"], "C2": pf["C2"], "C3": pf["C3"], "C4": pf["C4"], "aC1": pf["a"] * pf["C1"],
            "-aC2": -pf["a"] * pf["C2"], "bC3": pf["b"] * pf["C3"], "bC4": pf["b"] * pf["C4"]}
    for key, value in coeffs.items():
        assert ours[key] == pytest.approx(value, rel=1e-12, abs=1e-14), key


def test_ss_shape_is_paper_sine():
    m = beam_modes(boundary="ss", n_modes=1, **TABLE3_UNROUNDED)
    x = np.linspace(0, 1, 101)
    assert np.max(np.abs(m.shapes[0].W(x) - np.sin(np.pi * x))) < 1e-13
    assert np.max(np.abs(m.shapes[0].Theta(x) - 3.140333690109594 * np.cos(np.pi * x))) < 1e-13


# ---------------------------------------------------------------- closed forms
def test_euler_bernoulli_cantilever_roots():
    m = beam_modes(boundary="cf", n_modes=4, theory="euler_bernoulli", **PAPER)
    np.testing.assert_allclose(m.wavenumbers[:3, 0], [1.87510407, 4.69409113, 7.85475744], atol=1e-8)
    beta = m.wavenumbers[:, 0]
    assert np.all(np.abs(np.cos(beta) * np.cosh(beta) + 1) / np.cosh(beta) < 1e-14)  # cos·cosh = −1
    np.testing.assert_allclose(m.wavenumbers[:, 1], beta, rtol=1e-15)
    p = PAPER
    scale = math.sqrt(p["youngs_modulus"] * p["second_moment"] / (p["density"] * p["area"]))
    np.testing.assert_allclose(m.omega, beta ** 2 * scale / p["length"] ** 2, rtol=1e-14)


def test_euler_bernoulli_ss_and_cc():
    ss = beam_modes(boundary="ss", n_modes=5, theory="euler_bernoulli", **THICK)
    np.testing.assert_allclose(ss.wavenumbers[:, 0], np.pi * np.arange(1, 6), rtol=1e-14)
    cc = beam_modes(boundary="cc", n_modes=2, theory="euler_bernoulli", **THICK)
    np.testing.assert_allclose(cc.wavenumbers[:, 0], [4.730040744862704, 7.853204624095838], rtol=1e-14)


def _ss_timoshenko_closed_form(p: dict, n_max: int) -> np.ndarray:
    """Both Timoshenko spectra of the pinned-pinned beam, W = sin(nπx/L) (quadratic in ω²)."""
    ea = p["density"] * p["area"]
    ri = p["density"] * p["second_moment"]
    ei = p["youngs_modulus"] * p["second_moment"]
    kga = p["shear_coefficient"] * p["shear_modulus"] * p["area"]
    out = [kga / ri]  # n = 0: pure rotation W ≡ 0, Θ uniform, at the transition ω_c² = κGA/(ρI)
    for n in range(1, n_max + 1):
        k = n * math.pi / p["length"]
        a, b, c = ri * ea / kga, ea + (ri + ea * ei / kga) * k * k, ei * k ** 4
        disc = math.sqrt(b * b - 4 * a * c)
        out += [2 * c / (b + disc), (b + disc) / (2 * a)]  # stable small root, large root
    return np.sqrt(np.sort(out))


def test_timoshenko_ss_both_spectra_across_transition():
    """Thick beam, 14 modes: crosses ω_c = sqrt(κGA/ρI); second-spectrum modes appear in order."""
    m = beam_modes(boundary="ss", n_modes=14, **THICK)
    omega_c = math.sqrt(KAPPA * G * THICK["area"] / (RHO * THICK["second_moment"]))
    assert m.omega[-1] > omega_c > m.omega[0]
    assert np.any(m.wavenumbers[:, 1] < 0)  # second trigonometric wavenumber above the transition
    np.testing.assert_allclose(m.omega, _ss_timoshenko_closed_form(THICK, 20)[:14], rtol=1e-12)
    assert np.all(m.residuals <= 1e-12)
    rot = m.shapes[int(np.argmin(np.abs(m.omega - omega_c)))]  # the pure-rotation mode
    x = np.linspace(0, 1, 11)
    assert np.max(np.abs(rot.W(x))) < 1e-12 and np.allclose(rot.Theta(x), 1.0, atol=1e-12)


# ---------------------------------------------------------------- boundary conditions
def _max_abs(f, length: float) -> float:
    """max |f| on [0, L]: grid, then bounded refinement around the best grid point."""
    x = np.linspace(0, length, 4001)
    i = int(np.argmax(np.abs(f(x))))
    lo, hi = x[max(i - 1, 0)], x[min(i + 1, x.size - 1)]
    res = minimize_scalar(lambda t: -abs(float(f(t))), bounds=(lo, hi), method="bounded",
                          options={"xatol": 1e-13})
    return max(float(np.max(np.abs(f(x)))), -res.fun)


@pytest.mark.parametrize("data", [PAPER, THICK], ids=["paper", "thick"])
@pytest.mark.parametrize("bc", ["ss", "cc", "sc", "cs", "cf"])
def test_boundary_conditions(bc, data):
    m = beam_modes(boundary=bc, n_modes=12, **data)
    L = data["length"]
    ei = data["youngs_modulus"] * data["second_moment"]
    kga = data["shear_coefficient"] * data["shear_modulus"] * data["area"]
    x = np.linspace(0, L, 4001)
    assert np.all(np.diff(m.omega) > 0) and np.all(m.residuals <= 1e-12)
    for s in m.shapes:
        if not (bc == "ss" and np.max(np.abs(s.W(x))) < 1e-12):  # (ss pure-rotation mode: W ≡ 0)
            assert _max_abs(s.W, L) == pytest.approx(1.0, abs=1e-12)  # max|W| = 1
        moment_scale = ei * (np.max(np.abs(s.dTheta(x))) + np.max(np.abs(s.Theta(x))) / L)
        shear_scale = kga * np.max(np.abs(s.dW(x) - s.Theta(x)))
        for end, kind in zip((0.0, L), bc):
            if kind in "sc":
                assert abs(s.W(end)) <= 1e-10
            if kind == "c":
                assert abs(s.Theta(end)) * L <= 1e-10
            if kind in "sf":
                assert abs(ei * s.dTheta(end)) <= 1e-10 * moment_scale
            if kind == "f":
                assert abs(kga * (s.dW(end) - s.Theta(end))) <= 1e-9 * shear_scale


def test_shapes_vectorised_and_sign_convention():
    m = beam_modes(boundary="cf", n_modes=3, **PAPER)
    s = m.shapes[0]
    assert np.shape(s.W(0.5)) == () and s.W(np.zeros((3, 2))).shape == (3, 2)
    for mode in m.shapes:  # W > 0 on the first lobe next to x = 0
        assert mode.W(0.02) > 0
    assert np.all(m.shapes[0].W(np.linspace(0.01, 1, 50)) > 0)


@pytest.mark.parametrize("data", [PAPER, THICK], ids=["paper", "thick"])
def test_cs_is_mirror_of_sc(data):
    sc = beam_modes(boundary="sc", n_modes=6, **data)
    cs = beam_modes(boundary="cs", n_modes=6, **data)
    np.testing.assert_allclose(cs.omega, sc.omega, rtol=1e-13)
    L = data["length"]
    x = np.linspace(0, L, 501)
    for a, b in zip(sc.shapes, cs.shapes):
        sign = np.sign(b.W(x) @ a.W(L - x))
        assert np.max(np.abs(b.W(x) - sign * a.W(L - x))) < 1e-10
        assert np.max(np.abs(b.Theta(x) + sign * a.Theta(L - x))) * L < 1e-9  # Θ flips under mirror


# ---------------------------------------------------------------- slender limit
def test_timoshenko_cantilever_converges_to_euler_bernoulli():
    slenderness = [5.0, 20.0, 100.0]
    ratios = []
    for lh in slenderness:
        data = rect(1.0, 1.0 / lh)
        t = beam_modes(boundary="cf", n_modes=3, **data).omega
        e = beam_modes(boundary="cf", n_modes=3, theory="euler_bernoulli", **data).omega
        ratios.append(t / e)
        print(f"L/h = {lh:5.0f}: omega_T/omega_EB = {np.array2string(t / e, precision=8)}")
    ratios = np.array(ratios)
    assert np.all(ratios < 1.0)
    assert np.all(np.diff(ratios, axis=0) > 0)  # monotone in slenderness, every mode
    assert np.all(1.0 - ratios[-1] < 2e-3)
    # shear/rotary correction ∝ (h/L)² for a slender beam: 1 − ratio drops ≈ 25× from L/h = 20 to 100
    assert (1 - ratios[1, 0]) / (1 - ratios[2, 0]) == pytest.approx(25.0, rel=0.01)


# ---------------------------------------------------------------- orthogonality
@pytest.mark.parametrize("data", [PAPER, THICK], ids=["paper", "thick"])
@pytest.mark.parametrize("bc", ["ss", "cc", "sc", "cs", "cf"])
def test_mass_and_stiffness_orthogonality(bc, data):
    m = beam_modes(boundary=bc, n_modes=10, **data)
    mi = modal_integrals(m)
    for mat in (mi.mass, mi.stiffness):
        d = np.sqrt(np.diag(mat))
        off = mat / np.outer(d, d) - np.eye(len(d))
        assert np.max(np.abs(off)) <= 1e-8
    # Rayleigh quotient of an exact mode equals ω²
    np.testing.assert_allclose(np.diag(mi.stiffness) / np.diag(mi.mass), m.omega ** 2, rtol=1e-10)


# ---------------------------------------------------------------- input validation
GOOD = dict(PAPER, boundary="cc", n_modes=1)


@pytest.mark.parametrize("name, value", [
    ("length", 0.0), ("length", -1.0), ("youngs_modulus", -2e11), ("shear_modulus", 0.0),
    ("shear_coefficient", 0.0), ("shear_coefficient", 1.5), ("area", -1e-4), ("second_moment", 0.0),
    ("density", float("nan")), ("density", "heavy"), ("boundary", "sf"), ("boundary", None),
    ("n_modes", 0), ("n_modes", 1.5), ("theory", "rayleigh")])
def test_bad_data_raises_model_error(name, value):
    with pytest.raises(ModelError) as err:
        beam_modes(**dict(GOOD, **{name: value}))
    assert name in str(err.value) and err.value.attribute == name


@pytest.mark.parametrize("kw", [{"kelvin_voigt": -1.0}, {"air_damping": float("inf")}, {"n_points": 2}])
def test_modal_integrals_bad_input(kw):
    m = beam_modes(**GOOD)
    with pytest.raises(ModelError) as err:
        modal_integrals(m, **kw)
    assert next(iter(kw)) in str(err.value)
    with pytest.raises(ModelError, match="modes"):
        modal_integrals("not modes")
