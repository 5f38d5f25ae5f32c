"""Assumed-modes integrals of a uniform beam (paper 002 eqs. 7–11), by Gauss–Legendre quadrature.

All integrals run over 0 ≤ x ≤ L (m) with the normalised shapes of `beam_modes` (W dimensionless, Θ in 1/m,
so that the deflection is w(x, t) = Σ δ_i(t) W_i(x) with δ_i in m).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biobullet.core.attributes import to_float
from biobullet.core.errors import ModelError
from biobullet.flexible.beam import BeamModes


@dataclass(frozen=True)
class ModalIntegrals:
    """Modal matrices (n×n) and vectors (n) of one beam; SI units given per field.

    mass_translational  ∫ ρA W_i W_j dx                      (kg)
    mass_rotary         ∫ ρI Θ_i Θ_j dx                      (kg)  rotary inertia (0 weight for EB theory)
    mass                modal mass consistent with the theory: translational + rotary (Timoshenko),
                        translational only (Euler–Bernoulli)  (kg)
    stiffness_bending   ∫ EI Θ_i' Θ_j' dx                    (N/m)
    stiffness_shear     ∫ κGA (W_i' − Θ_i)(W_j' − Θ_j) dx    (N/m)  0 for Euler–Bernoulli (Θ = W')
    stiffness           bending + shear (paper eq. 9, planar terms)  (N/m)
    kelvin_voigt        Kv ∫ I W_i'' W_j'' dx  (paper eq. 11, Kv in kg m⁻¹ s ⇒ N s/m)
    air_damping         γ ∫ W_i W_j dx          (paper eq. 11, γ in kg m⁻¹ s⁻¹ ⇒ N s/m)
    w_integral          ∫ ρA W_i dx             (kg)      linear momentum of a mode
    xw_integral         ∫ ρA x W_i dx           (kg m)    angular momentum about x = 0 / rigid coupling
    theta_integral      ∫ ρI Θ_i dx             (kg m)    rotary-inertia coupling with link rotation
    link_mass           ∫ ρA dx                  (kg)
    link_first_moment   ∫ ρA x dx                (kg m)
    link_inertia        ∫ (ρA x² + ρI) dx        (kg m²)  about the x = 0 end, planar
    end_w, end_theta, end_dw   W, Θ, W' at x = 0 and x = L, arrays (2, n)  (-, 1/m, 1/m)
    """

    mass_translational: np.ndarray
    mass_rotary: np.ndarray
    mass: np.ndarray
    stiffness_bending: np.ndarray
    stiffness_shear: np.ndarray
    stiffness: np.ndarray
    kelvin_voigt: np.ndarray
    air_damping: np.ndarray
    w_integral: np.ndarray
    xw_integral: np.ndarray
    theta_integral: np.ndarray
    link_mass: float
    link_first_moment: float
    link_inertia: float
    end_w: np.ndarray
    end_theta: np.ndarray
    end_dw: np.ndarray


def modal_integrals(modes: BeamModes, kelvin_voigt: float = 0.0, air_damping: float = 0.0,
                    n_points: int | None = None) -> ModalIntegrals:
    """Assumed-modes integrals of `modes` (see ModalIntegrals for each definition and unit).

    kelvin_voigt: Kv (kg m⁻¹ s), air_damping: γ (kg m⁻¹ s⁻¹), n_points: Gauss–Legendre nodes
    (default 64 + 16·n_modes, exact to rounding for the highest product of shapes).
    """
    if not isinstance(modes, BeamModes):
        raise ModelError(f"'modes' must be a BeamModes from beam_modes(), got {type(modes).__name__}",
                         attribute="modes", expected="BeamModes")
    kv = to_float(None, "kelvin_voigt", kelvin_voigt, non_negative=True)
    gamma = to_float(None, "air_damping", air_damping, non_negative=True)
    n = len(modes.shapes)
    if n_points is None:
        n_points = 64 + 16 * n
    if isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)) or n_points < 8:
        raise ModelError(f"'n_points' must be an integer >= 8, got {n_points!r}", attribute="n_points",
                         expected="an integer >= 8")
    p = modes.params
    length = p.length
    nodes, weights = np.polynomial.legendre.leggauss(int(n_points))
    x = 0.5 * length * (nodes + 1.0)
    wq = 0.5 * length * weights
    rho_a, rho_i = p.density * p.area, p.density * p.second_moment
    ei, kga = p.youngs_modulus * p.second_moment, p.shear_coefficient * p.shear_modulus * p.area
    W = np.array([s.W(x) for s in modes.shapes])
    T = np.array([s.Theta(x) for s in modes.shapes])
    dW = np.array([s.dW(x) for s in modes.shapes])
    dT = np.array([s.dTheta(x) for s in modes.shapes])
    d2W = np.array([s.d2W(x) for s in modes.shapes])

    def gram(a: np.ndarray, b: np.ndarray, coef: float) -> np.ndarray:
        return coef * (a * wq) @ b.T

    timo = p.theory == "timoshenko"
    m_t = gram(W, W, rho_a)
    m_r = gram(T, T, rho_i)
    k_b = gram(dT, dT, ei)
    gam = dW - T
    k_s = gram(gam, gam, kga) if timo else np.zeros((n, n))
    ends = np.array([0.0, length])
    return ModalIntegrals(
        mass_translational=m_t, mass_rotary=m_r, mass=m_t + m_r if timo else m_t.copy(),
        stiffness_bending=k_b, stiffness_shear=k_s, stiffness=k_b + k_s,
        kelvin_voigt=gram(d2W, d2W, kv * p.second_moment), air_damping=gram(W, W, gamma),
        w_integral=rho_a * W @ wq, xw_integral=rho_a * (W * x) @ wq, theta_integral=rho_i * T @ wq,
        link_mass=rho_a * length, link_first_moment=0.5 * rho_a * length ** 2,
        link_inertia=rho_a * length ** 3 / 3.0 + rho_i * length,
        end_w=np.array([s.W(ends) for s in modes.shapes]).T,
        end_theta=np.array([s.Theta(ends) for s in modes.shapes]).T,
        end_dw=np.array([s.dW(ends) for s in modes.shapes]).T)
