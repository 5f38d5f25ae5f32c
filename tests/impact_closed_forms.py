"""Closed forms of the 1-DOF impact m δ̈ = −F_N(δ, δ̇) (`biobullet.contact.impact1d.simulate_impact`'s problem): the
undamped Hertz impact, linear Kelvin–Voigt's restitution, clipped or adhesive, and the Hunt–Crossley family's —
the independent references of the contact tests."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import beta


@dataclass(frozen=True)
class HertzImpact:
    max_penetration: float  # δ_max = ((n+1) m v²/(2K))^(1/(n+1)) [m]
    duration: float         # t_c = c_n δ_max / v [s]
    peak_force: float       # K δ_max^n [N]
    duration_constant: float  # c_n = (2/(n+1)) B(1/(n+1), 1/2); 2.943237 for n = 3/2


def hertz_duration_constant(exponent: float = 1.5) -> float:
    """c_n in t_c = c_n δ_max / v⁻ for m δ̈ = −K δⁿ.

    Energy: δ̇² = v² (1 − (δ/δ_max)^(n+1)), so t_c = 2 (δ_max/v) ∫₀¹ (1 − x^(n+1))^(−1/2) dx
    = (2/(n+1)) B(1/(n+1), 1/2) · δ_max/v  (substitute u = x^(n+1)). For n = 3/2: (4/5) B(2/5, 1/2) = 2.9432…
    (In the form t_c = k (m²/(K² v))^(1/5) the constant is k = 2.9432·(5/4)^(2/5) = 3.2181…, not 2.9432.)
    """
    n = float(exponent)
    return 2.0 / (n + 1.0) * beta(1.0 / (n + 1.0), 0.5)


def hertz_impact_closed_form(mass: float, velocity: float, stiffness: float,
                             exponent: float = 1.5) -> HertzImpact:
    """Exact undamped Hertz impact (any exponent n > 0)."""
    n = float(exponent)
    d_max = ((n + 1.0) * mass * velocity ** 2 / (2.0 * stiffness)) ** (1.0 / (n + 1.0))
    c = hertz_duration_constant(n)
    return HertzImpact(max_penetration=d_max, duration=c * d_max / velocity,
                       peak_force=stiffness * d_max ** n, duration_constant=c)


def kelvin_voigt_restitution(zeta: float, clipped: bool = True) -> float:
    """Restitution of m δ̈ + D δ̇ + K δ = 0 (ζ = D/(2√(Km)) < 1), independent of v⁻.

    unclipped (adhesion; separation at δ = 0 after half a damped period): e = exp(−ζπ/√(1−ζ²)).
    clipped (F = max(Kδ + Dδ̇, 0)): the force vanishes at ω_d t* = φ with tan φ = −2ζ√(1−ζ²)/(1−2ζ²), i.e.
    φ = π − 2 asin ζ; there δ̇(t*) = −v⁻ e^(−ζφ/√(1−ζ²)) exactly (the bracket cos φ − ζ sin φ/√(1−ζ²) = −1),
    and the mass flies off freely, so e = exp(−ζ(π − 2 asin ζ)/√(1−ζ²)) > the unclipped value.
    """
    z = float(zeta)
    if not 0.0 <= z < 1.0:
        raise ValueError(f"closed form needs 0 ≤ ζ < 1, got {zeta}")
    phase = math.pi - 2.0 * math.asin(z) if clipped else math.pi
    return math.exp(-z * phase / math.sqrt(1.0 - z * z))


def hunt_crossley_family_restitution(factor: float) -> float:
    """Exact restitution of m δ̈ = −K δⁿ (1 + c δ̇/v⁻) (hunt_crossley, flores, hu_guo with c = c(cr)).

    Phase plane: v dv/dδ = −(K/m) δⁿ (1 + αv), α = c/v⁻, so ∮ v dv/(1 + αv) = 0 over the contact; with
    u = αv this gives −ce − ln(1 − ce) = c − ln(1 + c) for e = v_out/v⁻. The force never needs clipping
    (1 + αv > 0 throughout), and e depends on c only — not on m, K, n or v⁻.
    """
    c = float(factor)
    if c < 0.0:
        raise ValueError(f"factor must be ≥ 0, got {factor}")
    if c == 0.0:
        return 1.0
    target = c - math.log1p(c)

    def h(y: float) -> float:
        return -y - math.log1p(-y) - target
    y = brentq(h, 0.0, float(np.nextafter(1.0, 0.0)), xtol=1e-17, rtol=1e-15, maxiter=500)
    return y / c
