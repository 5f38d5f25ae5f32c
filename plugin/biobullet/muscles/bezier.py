"""Millard 2012's muscle curves: C²-continuous chains of quintic Bézier segments (Millard et al. 2013, J. Biomech.
Eng. 135(2) 021005, appendix; OpenSim's SmoothSegmentedFunctionFactory), built from each curve's published
parameters, and their evaluation at x: find u ∈ [0, 1] with x(u) = x on the segment that holds x, then y(u).
OpenSim finds u by Newton's method to a tolerance; here a safeguarded Newton keeps a bracket and runs until it
collapses to adjacent doubles, so the value is exact to round-off. Outside the curve's domain the end tangents
continue it as straight lines.

Corner segments (`corner`): from (x₀, y₀) with slope s₀ to (x₁, y₁) with slope s₁, the two tangent lines meet at
C; with curviness c the six control points are P₀, P₀ + c(C − P₀) twice, P₁ + c(C − P₁) twice, P₁. A curve's
`curviness` parameter k ∈ [0, 1] enters as c = 0.1 + 0.8 k.

`millard_curves(parameters)` packs the four curves of a Millard2012EquilibriumMuscle (active force–length,
force–velocity, passive force–length, tendon force–length, in that order) into one float vector: four offsets,
then per curve [n, x_lo, x_hi, y_lo, y_hi, slope_lo, slope_hi, control x (n·6), control y (n·6)].
"""
from __future__ import annotations

import math

import numpy as np

from biobullet.core.errors import ModelError

KERNEL_ERROR_MODEL = "numpy"   # one error model wherever reached (the stage's, by address: core.jit._error_model)

ACTIVE_FORCE_LENGTH, FORCE_VELOCITY, PASSIVE_FORCE_LENGTH, TENDON_FORCE_LENGTH = range(4)
SQRT_EPS = math.sqrt(2.220446049250313e-16)


def scale_curviness(curviness: float) -> float:
    return 0.1 + 0.8 * curviness


def corner(x0: float, y0: float, slope0: float, x1: float, y1: float, slope1: float,
           curviness: float) -> tuple[np.ndarray, np.ndarray]:
    """Control points (x, y; 6 each) of the quintic Bézier corner between two points with given slopes."""
    if abs(slope0 - slope1) > SQRT_EPS:
        xc = (y1 - y0 - x1 * slope1 + x0 * slope0) / (slope0 - slope1)
    else:
        xc = 0.5 * (x1 + x0)
    yc = (xc - x1) * slope1 + y1
    x0_mid, y0_mid = x0 + curviness * (xc - x0), y0 + curviness * (yc - y0)
    x1_mid, y1_mid = x1 + curviness * (xc - x1), y1 + curviness * (yc - y1)
    return (np.array([x0, x0_mid, x0_mid, x1_mid, x1_mid, x1]),
            np.array([y0, y0_mid, y0_mid, y1_mid, y1_mid, y1]))


def _pack(segments, x_lo, x_hi, y_lo, y_hi, slope_lo, slope_hi) -> np.ndarray:
    xs = np.concatenate([s[0] for s in segments])
    ys = np.concatenate([s[1] for s in segments])
    return np.concatenate(([len(segments), x_lo, x_hi, y_lo, y_hi, slope_lo, slope_hi], xs, ys))


def active_force_length_curve(x0: float, x1: float, x3: float, y_low: float, slope: float) -> np.ndarray:
    """Millard's active force–length: rising from `x0` (value y_low), shallow ascending slope `slope`
    from the transition `x1`, peak 1 at l̃ = 1 (x2), back to y_low at `x3` (curviness 1)."""
    x2 = 1.0
    c = scale_curviness(1.0)
    delta = 0.05 * x2
    xs = x2 - delta
    y1 = 1.0 - slope * (xs - x1)
    slope01 = 1.25 * (y1 - 0.0) / (x1 - x0)
    x01, y01 = x0 + 0.5 * (x1 - x0), 0.0 + 0.5 * y1
    x1s, y1s = x1 + 0.5 * (xs - x1), y1 + 0.5 * (1.0 - y1)
    x23, y23 = (x2 + delta) + 0.5 * (x3 - (x2 + delta)), 0.5
    slope23 = (0.0 - 1.0) / ((x3 - delta) - (x2 + delta))
    segments = [corner(x0, y_low, 0.0, x01, y01, slope01, c), corner(x01, y01, slope01, x1s, y1s, slope, c),
                corner(x1s, y1s, slope, x2, 1.0, 0.0, c), corner(x2, 1.0, 0.0, x23, y23, slope23, c),
                corner(x23, y23, slope23, x3, y_low, 0.0, c)]
    return _pack(segments, x0, x3, y_low, y_low, 0.0, 0.0)


def force_velocity_curve(fmax_eccentric: float, slope_concentric: float, slope_near_concentric: float,
                         slope_isometric: float, slope_eccentric: float, slope_near_eccentric: float,
                         curviness_concentric: float, curviness_eccentric: float) -> np.ndarray:
    """Millard's force–velocity on ṽ ∈ [−1, 1]: 0 at −1, 1 at 0 (slope `slope_isometric`), f_max at +1."""
    cc, ce = scale_curviness(curviness_concentric), scale_curviness(curviness_eccentric)
    y_near_c = 0.5 * slope_near_concentric * 0.1 + 0.5 * slope_concentric * 0.1
    y_near_e = fmax_eccentric - 0.5 * slope_near_eccentric * 0.1 - 0.5 * slope_eccentric * 0.1
    segments = [corner(-1.0, 0.0, slope_concentric, -0.9, y_near_c, slope_near_concentric, cc),
                corner(-0.9, y_near_c, slope_near_concentric, 0.0, 1.0, slope_isometric, cc),
                corner(0.0, 1.0, slope_isometric, 0.9, y_near_e, slope_near_eccentric, ce),
                corner(0.9, y_near_e, slope_near_eccentric, 1.0, fmax_eccentric, slope_eccentric, ce)]
    return _pack(segments, -1.0, 1.0, 0.0, fmax_eccentric, slope_concentric, slope_eccentric)


def passive_force_length_curve(strain_zero: float, strain_one: float, stiffness_low: float, stiffness_one: float,
                               curviness: float) -> np.ndarray:
    """Millard's passive fiber force–length: 0 at l̃ = 1 + ε₀, 1 at 1 + ε₁ with slope `stiffness_one`."""
    c = scale_curviness(curviness)
    x_zero, x_iso = 1.0 + strain_zero, 1.0 + strain_one
    delta = min(0.1 / stiffness_one, 0.1 * (x_iso - x_zero))
    x_low = x_zero + delta
    x_foot = x_zero + 0.5 * (x_low - x_zero)
    y_low = stiffness_low * (x_low - x_foot)
    segments = [corner(x_zero, 0.0, 0.0, x_low, y_low, stiffness_low, c),
                corner(x_low, y_low, stiffness_low, x_iso, 1.0, stiffness_one, c)]
    return _pack(segments, x_zero, x_iso, 0.0, 1.0, 0.0, stiffness_one)


def tendon_force_length_curve(strain_one: float, stiffness_one: float, toe_force: float,
                              curviness: float) -> np.ndarray:
    """Millard's tendon force–length: 0 at l̃_T = 1, toe region up to force `toe_force`, then slope
    `stiffness_one` through (1 + ε₁, 1)."""
    c = scale_curviness(curviness)
    x_iso = 1.0 + strain_one
    x_toe = (toe_force - 1.0) / stiffness_one + x_iso
    x_foot = 1.0 + (x_toe - 1.0) / 10.0
    y_mid = 0.5 * toe_force
    x_mid = (y_mid - 1.0) / stiffness_one + x_iso
    slope_mid = y_mid / (x_mid - x_foot)
    x_ctrl = x_foot + 0.5 * (x_mid - x_foot)
    y_ctrl = slope_mid * (x_ctrl - x_foot)
    segments = [corner(1.0, 0.0, 0.0, x_ctrl, y_ctrl, slope_mid, c),
                corner(x_ctrl, y_ctrl, slope_mid, x_toe, toe_force, stiffness_one, c)]
    return _pack(segments, 1.0, x_toe, 0.0, toe_force, 0.0, stiffness_one)


#: Millard2012EquilibriumMuscle's MIN_NONZERO_DAMPING_COEFFICIENT: a smaller fiber_damping is taken as 0 (OpenSim
#: 4.6 switches to its undamped model)
MILLARD_MIN_DAMPING = 0.001


def millard_curves(parameters) -> np.ndarray:
    """The four curves of a Millard2012EquilibriumMuscle from its parameters (`MuscleParameters.extra`, OpenSim's
    property names under their curve; OpenSim 4.6's defaults where absent, including its fitted optional
    stiffness and curviness values)."""
    def value(curve: str, name: str, default: float) -> float:
        return parameters.value(f"{curve}.{name}", default)

    afl = "ActiveForceLengthCurve"
    fv = "ForceVelocityCurve"
    fpe = "FiberForceLengthCurve"
    ft = "TendonForceLengthCurve"
    e0, e1 = value(fpe, "strain_at_zero_force", 0.0), value(fpe, "strain_at_one_norm_force", 0.7)
    passive_optional = [parameters.value(f"{fpe}.{n}", math.nan) for n in
                        ("stiffness_at_low_force", "stiffness_at_one_norm_force", "curviness")]
    if all(math.isnan(v) for v in passive_optional):
        passive_optional = [0.2, 2.0 / (e1 - e0), 0.75]
    elif any(math.isnan(v) for v in passive_optional):
        raise ModelError("stiffness_at_low_force, stiffness_at_one_norm_force and curviness must all be given or "
                         "all be left out", element=f"<{fpe}>", attribute="curviness")
    et = value(ft, "strain_at_one_norm_force", 0.049)
    tendon_optional = [parameters.value(f"{ft}.{n}", math.nan) for n in
                       ("stiffness_at_one_norm_force", "norm_force_at_toe_end", "curviness")]
    if all(math.isnan(v) for v in tendon_optional):
        tendon_optional = [1.375 / et, 2.0 / 3.0, 0.5]
    elif any(math.isnan(v) for v in tendon_optional):
        raise ModelError("stiffness_at_one_norm_force, norm_force_at_toe_end and curviness must all be given or "
                         "all be left out", element=f"<{ft}>", attribute="curviness")
    minimum = value(afl, "minimum_value", 0.1)
    concentric_near = value(fv, "concentric_slope_near_vmax", 0.25)
    eccentric_near = value(fv, "eccentric_slope_near_vmax", 0.15)
    concentric, eccentric = value(fv, "concentric_slope_at_vmax", 0.0), value(fv, "eccentric_slope_at_vmax", 0.0)
    # OpenSim 4.6 (extendFinalizeFromProperties) fits the curves to the model it runs, whatever the file says: the
    # undamped model with a compliant tendon needs f_L ≥ 0.1 and f_V with slopes at ±v_max (it inverts f_V), the
    # others take f_L down to 0 and f_V flat at ±v_max
    if parameters.tendon == "compliant" and parameters.fiber_damping < MILLARD_MIN_DAMPING:
        minimum, concentric, eccentric = (max(minimum, 0.1), max(concentric, 0.5 * concentric_near),
                                          max(eccentric, 0.5 * eccentric_near))
    else:
        minimum, concentric, eccentric = min(minimum, 0.0), min(concentric, 0.0), min(eccentric, 0.0)
    curves = [
        active_force_length_curve(value(afl, "min_norm_active_fiber_length", 0.47 - 0.0259),
                                  value(afl, "transition_norm_fiber_length", 0.73),
                                  value(afl, "max_norm_active_fiber_length", 1.8123),
                                  minimum, value(afl, "shallow_ascending_slope", 0.8616)),
        force_velocity_curve(value(fv, "max_eccentric_velocity_force_multiplier", 1.4), concentric, concentric_near,
                             value(fv, "isometric_slope", 5.0), eccentric, eccentric_near,
                             value(fv, "concentric_curviness", 0.6), value(fv, "eccentric_curviness", 0.9)),
        passive_force_length_curve(e0, e1, passive_optional[0], passive_optional[1], passive_optional[2]),
        tendon_force_length_curve(et, tendon_optional[0], tendon_optional[1], tendon_optional[2]),
    ]
    offsets = np.cumsum([4] + [c.size for c in curves[:-1]]).astype(float)
    return np.concatenate([offsets, *curves])


def bezier_point_py(points, start, u):
    """Σ_k C(5,k) u^k (1−u)^(5−k) P_k of the six control values points[start:start+6]."""
    v = 1.0 - u
    u2, v2 = u * u, v * v
    return (points[start] * v2 * v2 * v + 5.0 * points[start + 1] * u * v2 * v2
            + 10.0 * points[start + 2] * u2 * v2 * v + 10.0 * points[start + 3] * u2 * u * v2
            + 5.0 * points[start + 4] * u2 * u2 * v + points[start + 5] * u2 * u2 * u)


def bezier_slope_py(points, start, u):
    """d/du of `bezier_point_py`."""
    v = 1.0 - u
    total = 0.0
    for k in range(5):
        # 5 C(4,k) u^k v^(4−k) (P_{k+1} − P_k)
        binomial = 1.0 if k == 0 or k == 4 else (4.0 if k == 1 or k == 3 else 6.0)
        total += 5.0 * binomial * u ** k * v ** (4 - k) * (points[start + k + 1] - points[start + k])
    return total


def bezier_value_py(curves, which, x):
    """Value of Millard curve `which` (0 active force–length, 1 force–velocity, 2 passive force–length,
    3 tendon force–length) of the packed vector `curves` at x."""
    base = int(curves[which])
    n = int(curves[base])
    x_lo, x_hi = curves[base + 1], curves[base + 2]
    if x < x_lo:
        return curves[base + 3] + curves[base + 5] * (x - x_lo)
    if x > x_hi:
        return curves[base + 4] + curves[base + 6] * (x - x_hi)
    xs = base + 7
    segment = n - 1
    for k in range(n):
        if curves[xs + 6 * k] <= x < curves[xs + 6 * k + 5]:
            segment = k
            break
    start = xs + 6 * segment
    low, high = 0.0, 1.0   # x(u) increases on a corner segment: keep the bracket, Newton inside it
    u = (x - curves[start]) / max(curves[start + 5] - curves[start], 1e-300)
    for _ in range(200):
        f = bezier_point_py(curves, start, u) - x
        if f == 0.0:
            break
        low, high, step = newton_in_bracket_py(u, f, bezier_slope_py(curves, start, u), low, high)
        if step != step:
            break
        u = step
    return bezier_point_py(curves, start + 6 * n, u)   # the segment's y control points


def newton_in_bracket_py(u, f, slope, low, high):
    """One step of Newton's method on an increasing function with value f and slope at u inside its bracket:
    (low, high) narrowed by the sign of f, and the next iterate — the Newton step, or the bisection when that
    leaves the bracket — or NaN once the bracket has collapsed to adjacent doubles (converged)."""
    if f > 0.0:
        high = u
    else:
        low = u
    step = u - f / slope if slope > 0.0 else -1.0
    if not (low < step < high):
        step = 0.5 * (low + high)
    if step == u or not (low < step < high) or high - low <= 4.0 * 2.220446049250313e-16 * max(high, 1e-300):
        step = math.nan
    return low, high, step


def bezier_bindings() -> dict:
    """The kernels `bezier_value_py` calls (for `core.jit.compiled`'s bind)."""
    return {"bezier_point_py": bezier_point_py, "bezier_slope_py": bezier_slope_py,
            "newton_in_bracket_py": newton_in_bracket_py}


__all__ = ["bezier_bindings", "corner", "scale_curviness", "active_force_length_curve", "force_velocity_curve",
           "passive_force_length_curve", "tendon_force_length_curve", "millard_curves"]
