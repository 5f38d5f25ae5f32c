"""Recursive Gibbs–Appell (paper 002) vs independent references.

* SymPy Lagrange (second kind) on small chains of Timoshenko ss links, whose mode is known in closed form:
  W = sin(πx/L), Θ = a cos(πx/L), a = (π² − ρω²L²/(κG))/π (paper Table 2). The kinetic energy is
  ∫ ½ρA|ṙ|² + ½ρI(φ̇ + θ̇)² with the x-integrals of x^i sin^j(πx/L) by adaptive quadrature (scipy quad), stiffness ∫EIΘ'² + κGA(W' − Θ)², Rayleigh
  damping Kv I ∫W''² + γ∫W² — none of biobullet's modal integrals or recursion is used. Tolerance 1e-11
  relative: the only differences are the 64-point Gauss quadrature of the modal integrals (~1e-15) and the
  root of the frequency equation behind `a` (~1e-15), amplified by cancellation in h (≲ 1e3).
* Rigid limit: links without modes equal biobullet's rigid `reduced` formulation on urdf/elastic_robot_3link.urdf
  (M and bias). Tolerance 1e-9 relative: the URDF writes izz with 10 significant digits.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import quad

from biobullet_studies.paper002 import paper002_chain
from biobullet.flexible.gibbs_appell import ElasticChain, FlexibleLinkData, link_from_beam
from biobullet_studies.paper002 import TABLE3_UNROUNDED

URDF = Path(__file__).resolve().parents[2] / "urdf" / "elastic_robot_3link.urdf"
KV, GAMMA = 125.0, 0.025


def _ss_link(name: str) -> FlexibleLinkData:
    return link_from_beam(name, boundary="ss", n_modes=1, kelvin_voigt=KV, air_damping=GAMMA, **TABLE3_UNROUNDED)


def _lagrange(n_links: int, floating: bool, a: float, g: float = 9.81):
    """Lambdified M(z), h(z, u) (velocity + gravity terms), K, D of a chain of ss links (1 mode each)."""
    p = TABLE3_UNROUNDED
    L, rho_a, rho_i = p["length"], p["density"] * p["area"], p["density"] * p["second_moment"]
    ei = p["youngs_modulus"] * p["second_moment"]
    kga = p["shear_coefficient"] * p["shear_modulus"] * p["area"]
    x, s = sp.symbols("x s")
    names = []
    for i in range(n_links):
        names += [f"q{i + 1}", f"d{i + 1}1"]
    names += ["X1", "X2"] if floating else []
    z = sp.symbols(names)
    u = sp.symbols([f"u_{nm}" for nm in names])
    cz = dict(zip(names, z))
    pos = sp.Matrix([cz["X1"], cz["X2"]]) if floating else sp.zeros(2, 1)
    phi = 0
    # ∫ x^i s^j dx for s = sin(πx/L) (adaptive quadrature, not biobullet's Gauss rule)
    ints = {(i, j): quad(lambda xx, i=i, j=j: xx ** i * math.sin(math.pi * xx / L) ** j, 0.0, L,
                         epsabs=0.0, epsrel=2e-14)[0] for i in range(3) for j in range(3)}
    T, V = 0, 0
    for i in range(n_links):
        q, d = cz[f"q{i + 1}"], cz[f"d{i + 1}1"]
        phi = phi + q if i == 0 else phi + a * sp.cos(sp.pi) * cz[f"d{i}1"] + q  # Θ(L) = −a turns the next frame
        R = sp.Matrix([[sp.cos(phi), -sp.sin(phi)], [sp.sin(phi), sp.cos(phi)]])
        r = pos + R * sp.Matrix([x, d * s])
        rdot = r.jacobian(z) * sp.Matrix(u)
        integrand = sp.Poly(sp.expand((rdot.T * rdot)[0]), x, s)
        T += sp.Rational(1, 2) * rho_a * sum(c * ints[m] for m, c in integrand.terms())
        phidot = sum(sp.diff(phi, zk) * uk for zk, uk in zip(z, u))
        ddot = u[names.index(f"d{i + 1}1")]
        T += sp.Rational(1, 2) * rho_i * (L * phidot ** 2 + a ** 2 * ddot ** 2 * L / 2)  # ∫cos = 0, ∫cos² = L/2
        V += rho_a * g * (L * pos[1] + sp.sin(phi) * L ** 2 / 2 + sp.cos(phi) * d * ints[(0, 1)])
        pos = pos + R * sp.Matrix([L, 0])  # W(L) = 0
    k = ei * a ** 2 * (math.pi / L) ** 2 * L / 2 + kga * (math.pi / L - a) ** 2 * L / 2
    c = KV * p["second_moment"] * (math.pi / L) ** 4 * L / 2 + GAMMA * L / 2
    uvec = sp.Matrix(u)
    M = sp.hessian(T, u)
    dTdu = sp.Matrix([sp.diff(T, uk) for uk in u])
    h = dTdu.jacobian(z) * uvec - sp.Matrix([sp.diff(T, zk) for zk in z]) + sp.Matrix([sp.diff(V, zk) for zk in z])
    return (sp.lambdify([z], M, "numpy"), sp.lambdify([z, u], h, "numpy"), names, k, c)


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


@pytest.fixture(scope="module")
def ss_rotation() -> float:
    link = _ss_link("l")
    shape = link.modes.shapes[0]
    x = np.linspace(0.0, 1.0, 101)
    assert np.abs(shape.W(x) - np.sin(np.pi * x)).max() < 1e-12  # the closed form used by SymPy
    a = float(shape.Theta(0.0))
    assert np.abs(shape.Theta(x) - a * np.cos(np.pi * x)).max() < 1e-12
    return a


def test_one_link_pinned_equals_sympy_lagrange(ss_rotation: float) -> None:
    M_f, h_f, names, k, c = _lagrange(1, False, ss_rotation)
    chain = ElasticChain([_ss_link("link1")], base="pinned")
    assert chain.coordinate_names == tuple(names)
    assert chain.links[0].stiffness[0, 0] == pytest.approx(k, rel=1e-12)
    assert chain.links[0].damping[0, 0] == pytest.approx(c, rel=1e-10)
    rng = np.random.default_rng(1)
    for _ in range(5):
        z = np.array([rng.uniform(-3, 3), rng.uniform(-0.05, 0.05)])
        u = rng.normal(size=2) * np.array([3.0, 0.5])
        M_ref = np.array(M_f(z), float)
        rhs = -np.array(h_f(z, u), float).ravel() - np.array([0.0, k * z[1] + c * u[1]])
        acc_ref = np.linalg.solve(M_ref, rhs)
        assert _rel(chain.mass_matrix(z), M_ref) < 1e-11
        assert _rel(chain.forward_dynamics(z, u), acc_ref) < 1e-11
        # the shared vocabulary: M v̇ + h = Q with h = velocity, gravity and the link's elastic and damping forces
        assert _rel(chain.bias_forces(z, u), -rhs) < 1e-11


def test_two_link_floating_chain_equals_sympy_lagrange(ss_rotation: float) -> None:
    M_f, h_f, names, _, _ = _lagrange(2, True, ss_rotation)
    chain = ElasticChain([_ss_link("link1"), _ss_link("link2")])
    assert chain.coordinate_names == tuple(names)
    rng = np.random.default_rng(2)
    for _ in range(5):
        z = rng.uniform(-2, 2, size=6)
        z[[1, 3]] *= 0.02
        u = rng.normal(size=6) * np.array([3, 0.5, 3, 0.5, 2, 2])
        M, h = chain.mass_and_bias(z, u)
        assert _rel(M, np.array(M_f(z), float)) < 1e-11
        assert _rel(h, np.array(h_f(z, u), float).ravel()) < 1e-11


def test_rigid_limit_equals_reduced_formulation_on_urdf() -> None:
    import biobullet
    model = biobullet.load_model(URDF)
    assert model.coordinate_names == ("base_x", "base_y", "q1", "q2", "q3")
    rigid = [link_from_beam(f"link{i}", boundary="ss", n_modes=0, **TABLE3_UNROUNDED) for i in (1, 2, 3)]
    chain = ElasticChain(rigid)
    assert chain.coordinate_names == ("q1", "q2", "q3", "X1", "X2")
    perm = [3, 4, 0, 1, 2]  # chain order -> model order
    rng = np.random.default_rng(3)
    for _ in range(5):
        z, u = rng.uniform(-2, 2, size=5), rng.normal(size=5) * 2.0
        M, h = chain.mass_and_bias(z, u)
        Mm = model.mass_matrix(z[perm])
        hm = model.bias_forces(z[perm], u[perm])
        assert _rel(M[np.ix_(perm, perm)], Mm) < 1e-9
        assert _rel(h[perm], hm) < 1e-9


def test_mass_matrix_symmetric_positive_definite() -> None:
    rng = np.random.default_rng(4)
    for modes in ("ss-ss-ss", "cc-cc-cc", "sc-cc-cs", "cs-ss-sc"):
        chain = paper002_chain(modes, n_modes=2)
        for _ in range(3):
            z = rng.uniform(-3, 3, size=chain.n_coordinates)
            z[chain.modal_indices] *= 0.01
            M = chain.mass_matrix(z)
            assert np.abs(M - M.T).max() <= 1e-15 * np.abs(M).max()
            assert np.linalg.eigvalsh(M).min() > 0.0
