"""One-degree-of-freedom impact: a point mass m hits a rigid half-space with approach velocity v⁻ > 0.

    m δ̈ = −F_N(δ, δ̇, δ̇⁻ = v⁻),   δ(0) = 0,   δ̇(0) = v⁻        (δ penetration, δ̇ > 0 approaching)

`simulate_impact` integrates this with scipy's DOP853 (rtol 1e-12) and events for
  * δ̇ = 0 (downward): maximum penetration;
  * release (downward zero of `law.release_function`): the unclipped force would start pulling while δ > 0 —
    the clipped force is zero from there on, so the mass leaves with constant velocity (free flight to δ = 0 is
    done analytically);
  * δ = 0 (downward): separation.
It is the independent reference for the contact laws (their closed forms: tests/impact_closed_forms.py); linear
Kelvin–Voigt's textbook damping ratio for a restitution is given alongside.

Laws that act outside contact (``kelvin_voigt_smooth``) are measured between the δ = 0 crossings; the
smoothing tail at δ < 0 (width ~1/C) is ignored.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq, minimize_scalar

from biobullet.core.attributes import to_float
from biobullet.core.errors import SolverError
from biobullet.contact.base import NormalLaw


@dataclass(frozen=True)
class ImpactResult:
    """Outcome of one 1-DOF impact (SI units). Arrays sample the contact phase (force > 0 or δ > 0)."""

    impact_velocity: float      # v⁻ [m/s]
    rebound_velocity: float     # separation speed [m/s] (> 0 when leaving)
    restitution: float          # rebound / impact velocity
    contact_duration: float     # time with non-zero force [s] (ends at release or δ = 0)
    separation_time: float      # time until δ returns to 0 [s] (= contact_duration unless released early)
    released_early: bool        # True if the clipped force reached zero while δ > 0
    max_penetration: float      # [m]
    max_penetration_time: float
    peak_force: float           # [N]
    peak_force_time: float
    t: np.ndarray
    delta: np.ndarray
    delta_dot: np.ndarray
    force: np.ndarray


def _energy_penetration(law: NormalLaw, mass: float, velocity: float, vi: float | None) -> float:
    """δ_e with ∫₀^δe F(x, 0) dx = ½ m v² (elastic estimate; sets scales only)."""
    energy = 0.5 * mass * velocity ** 2
    nodes, weights = np.polynomial.legendre.leggauss(24)

    def work(d: float) -> float:  # 24-point Gauss–Legendre: ample for a scale estimate
        x = 0.5 * d * (nodes + 1.0)
        return 0.5 * d * float(np.dot(weights, law.force(x, np.zeros_like(x), vi))) - energy

    hi = 1e-9
    while work(hi) < 0.0:
        hi *= 4.0
        if hi > 1e6:
            raise SolverError(f"law {law.law_name!r} cannot stop mass {mass} kg at {velocity} m/s")
    return brentq(work, 0.0, hi, xtol=1e-3 * hi)


def simulate_impact(law: NormalLaw, *, mass: float, velocity: float, method: str = "DOP853",
                    rtol: float = 1e-12, samples: int = 400) -> ImpactResult:
    """Integrate the impact of `mass` [kg] at `velocity` v⁻ [m/s] under `law` (see module docstring)."""
    m = to_float(None, "mass", mass, positive=True)
    v_in = to_float(None, "velocity", velocity, positive=True)
    vi = v_in if law.needs_impact_velocity else None
    d_scale = _energy_penetration(law, m, v_in, vi)
    t_scale = d_scale / v_in
    atol = 1e-3 * rtol * np.array([d_scale, v_in])

    def rhs(t: float, y: np.ndarray) -> list[float]:
        return [y[1], -law.force(y[0], y[1], vi) / m]

    def separation(t, y):
        return y[0]
    separation.terminal, separation.direction = True, -1.0

    def turning(t, y):
        return y[1]
    turning.terminal, turning.direction = False, -1.0

    events = [separation, turning]
    can_release = not law.adhesion and law.release_function(d_scale, v_in, vi) is not None
    if can_release:
        def release(t, y):
            return law.release_function(y[0], y[1], vi)
        release.terminal, release.direction = True, -1.0
        events.append(release)

    sol = solve_ivp(rhs, (0.0, 1e3 * t_scale), [0.0, v_in], method=method, rtol=rtol, atol=atol,
                    events=events, dense_output=True, first_step=1e-4 * t_scale)
    if sol.status != 1:
        raise SolverError(f"1-DOF impact under {law.law_name!r} did not separate: {sol.message}")
    released = can_release and len(sol.t_events[2]) > 0 and (
        len(sol.t_events[0]) == 0 or sol.t_events[2][0] < sol.t_events[0][0])
    k = 2 if released else 0
    t_end, (d_end, v_end) = float(sol.t_events[k][0]), sol.y_events[k][0]
    rebound = -float(v_end)
    separation_time = t_end + (float(d_end) / rebound if released else 0.0)

    if len(sol.t_events[1]):
        t_max, d_max = float(sol.t_events[1][0]), float(sol.y_events[1][0][0])
    else:  # cannot happen for a pushing law; keep a defined value
        t_max, d_max = 0.0, 0.0

    def neg_force(t: float) -> float:
        y = sol.sol(t)
        return -float(law.force(y[0], y[1], vi))

    grid = np.linspace(0.0, t_end, 2001)
    y_grid = sol.sol(grid)
    f_grid = np.asarray(law.force(y_grid[0], y_grid[1], vi))
    i = int(np.argmax(f_grid))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    res = minimize_scalar(neg_force, bounds=(lo, hi), method="bounded",
                          options={"xatol": 1e-13 * t_end})
    t_peak, f_peak = (float(res.x), -float(res.fun)) if -res.fun >= f_grid[i] else (float(grid[i]), f_grid[i])
    if len(sol.t_events[1]) and law.force(d_max, 0.0, vi) > f_peak:
        t_peak, f_peak = t_max, float(law.force(d_max, 0.0, vi))

    ts = np.linspace(0.0, t_end, max(int(samples), 2))
    ys = sol.sol(ts)
    return ImpactResult(
        impact_velocity=v_in, rebound_velocity=rebound, restitution=rebound / v_in,
        contact_duration=t_end, separation_time=separation_time, released_early=bool(released),
        max_penetration=d_max, max_penetration_time=t_max, peak_force=float(f_peak), peak_force_time=t_peak,
        t=ts, delta=ys[0], delta_dot=ys[1], force=np.asarray(law.force(ys[0], ys[1], vi), dtype=float))


def kelvin_voigt_damping_ratio(restitution: float) -> float:
    """ζ = −ln e / √(π² + ln² e) giving restitution e ∈ (0, 1] to m δ̈ + D δ̇ + K δ = 0 (adhesive: separation at
    δ = 0 after half a damped period)."""
    e = float(restitution)
    if not 0.0 < e <= 1.0:
        raise ValueError(f"restitution must be in (0, 1], got {restitution}")
    return -math.log(e) / math.sqrt(math.pi ** 2 + math.log(e) ** 2)
