"""OpenSim's Hill-type muscle models as numba kernels: normalized curves, first-order activation dynamics, and
static equilibrium of fiber and tendon at zero fiber velocity.

Models (codes in `MODEL_CODES`): DeGrooteFregly2016 (De Groote et al. 2016, Ann. Biomed. Eng. 44, with OpenSim's
refits: curve constants below), Millard2012Equilibrium (Millard et al. 2013, J. Biomech. Eng. 135; quintic Bézier
curves, `bezier`), Thelen2003 (Thelen 2003, J. Biomech. Eng. 125). Normalization (OpenSim's): fiber length
l̃ = l_M / l₀, fiber velocity ṽ = v_M / (v_max l₀) (DeGroote, Millard; Thelen's ṽ is the same quantity), tendon
length l̃_T = l_T / l_s; forces in units of F₀.

Each muscle is two flat float vectors: `muscle` (MUSCLE_FIELDS: F₀ N, l₀ m, l_s m, α₀ rad, v_max l₀/s,
compliant 0/1, maximum pennation rad, fiber damping, activation and deactivation time constants s, minimum
activation, DeGroote's tanh smoothing) and `curves` (the model's curve parameters, `curve_parameters`).

Pennation is constant-height (OpenSim's MuscleFixedWidthPennationModel): h = l₀ sin α₀, sin α = h / l_M, the
tendon l_T = l_MT − l_M cos α. Thelen and Millard clamp α at the maximum pennation angle (the fiber at
h / sin α_max); DeGroote does not.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from biobullet.core import jit
from biobullet.core.errors import ModelError
from biobullet.muscles.bezier import (MILLARD_MIN_DAMPING, bezier_point_py, bezier_slope_py, bezier_value_py,
                                     newton_in_bracket_py, bezier_bindings, millard_curves)
from biobullet.muscles.description import MuscleParameters

KERNEL_ERROR_MODEL = "numpy"   # one error model wherever reached (the stage's, by address: core.jit._error_model)

DEGROOTE, MILLARD, THELEN = 0, 1, 2
MODEL_CODES = {"degroote2016": DEGROOTE, "millard2012": MILLARD, "thelen2003": THELEN}
MUSCLE_FIELDS = ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length", "pennation_angle",
                 "max_contraction_velocity", "compliant", "maximum_pennation_angle", "fiber_damping",
                 "activation_time_constant", "deactivation_time_constant", "minimum_activation",
                 "activation_smoothing")
(F_MAX, L_OPT, L_SLACK, PENNATION, V_MAX, COMPLIANT, MAX_PENNATION, DAMPING, TAU_ACT, TAU_DEACT, A_MIN,
 SMOOTHING) = range(len(MUSCLE_FIELDS))

# DeGroote et al. 2016 as refitted in OpenSim 4.6 (DeGrooteFregly2016Muscle.h): active force–length, three
# Gaussian-like terms b1 exp(−½ (x − b2)² / (b3 + b4 x)²)
DEGROOTE_ACTIVE = np.array([[0.8150671134243542, 1.055033428970575, 0.162384573599574, 0.063303448465465],
                            [0.433004984392647, 0.716775413397760, -0.029947116970696, 0.200356847296188],
                            [0.1, 1.0, 0.353553390593274, 0.0]])
DEGROOTE_PASSIVE_SHAPE = 4.0          # kPE
DEGROOTE_MIN_FIBER = 0.2              # the passive curve is zero at this normalized length
DEGROOTE_TENDON = (0.2, 1.0, 0.2)     # c1, c2, c3: f_T = c1 exp(k_T (l̃_T − c2)) − c3
DEGROOTE_VELOCITY = (-0.3211346127989808, -8.149, -0.374, 0.8825327733249912)   # d1..d4
# Thelen 2003's tendon toe region (Thelen2003Muscle::calcfse)
THELEN_TOE_SHAPE, THELEN_TOE_FORCE = 3.0, 0.33


def muscle_vector(model: str, parameters: MuscleParameters) -> np.ndarray:
    """The `muscle` vector (MUSCLE_FIELDS) of one muscle."""
    default_max = 0.0 if model == "degroote2016" else math.acos(0.1)
    values = np.zeros(len(MUSCLE_FIELDS))
    values[F_MAX] = parameters.max_isometric_force
    values[L_OPT] = parameters.optimal_fiber_length
    values[L_SLACK] = parameters.tendon_slack_length
    values[PENNATION] = parameters.pennation_angle
    values[V_MAX] = parameters.max_contraction_velocity
    values[COMPLIANT] = 1.0 if parameters.tendon == "compliant" else 0.0
    values[MAX_PENNATION] = parameters.value("maximum_pennation_angle", default_max)
    values[DAMPING] = parameters.fiber_damping
    if model == "millard2012" and parameters.fiber_damping < MILLARD_MIN_DAMPING:
        values[DAMPING] = 0.0   # OpenSim 4.6 switches to its undamped model there
    values[TAU_ACT] = parameters.activation_time_constant
    values[TAU_DEACT] = parameters.deactivation_time_constant
    values[A_MIN] = parameters.minimum_activation
    values[SMOOTHING] = parameters.value("activation_dynamics_smoothing", 0.1)
    return values


def curve_parameters(model: str, parameters: MuscleParameters) -> np.ndarray:
    """The `curves` vector of one muscle: DeGroote [width scale, e₀ passive strain, tendon strain at F₀, passive
    on (0/1)]; Thelen [FmaxTendonStrain, FmaxMuscleStrain, KshapeActive, KshapePassive, Af, Flen,
    fv_linear_extrap_threshold]; Millard: its four Bézier curves (`bezier.millard_curves`)."""
    value = parameters.value
    if model == "degroote2016":
        return np.array([value("active_force_width_scale", 1.0), value("passive_fiber_strain_at_one_norm_force", 0.6),
                         value("tendon_strain_at_one_norm_force", 0.049),
                         0.0 if value("ignore_passive_fiber_force", 0.0) else 1.0])
    if model == "thelen2003":
        return np.array([value("FmaxTendonStrain", 0.04), value("FmaxMuscleStrain", 0.6), value("KshapeActive", 0.45),
                         value("KshapePassive", 5.0), value("Af", 0.25), value("Flen", 1.4),
                         value("fv_linear_extrap_threshold", 0.95)])
    if model == "millard2012":
        return millard_curves(parameters)
    raise ModelError(f"unknown muscle model {model!r}", argument="model", expected=", ".join(MODEL_CODES))


# ------------------------------------------------------------------------------------------------ curves
def active_force_length_py(model, curves, length):
    """f_L(l̃): active force–length multiplier at normalized fiber length l̃."""
    if model == DEGROOTE:
        x = (length - 1.0) / curves[0] + 1.0
        total = 0.0
        for k in range(3):
            b1, b2, b3, b4 = DEGROOTE_ACTIVE[k, 0], DEGROOTE_ACTIVE[k, 1], DEGROOTE_ACTIVE[k, 2], DEGROOTE_ACTIVE[k, 3]
            width = b3 + b4 * x
            total += b1 * math.exp(-0.5 * (x - b2) * (x - b2) / (width * width))
        return total
    if model == THELEN:
        return math.exp(-(length - 1.0) * (length - 1.0) / curves[2])
    return bezier_value_py(curves, np.int64(0), length)


def passive_force_length_py(model, curves, length):
    """f_PE(l̃): passive (parallel elastic) force–length multiplier."""
    if model == DEGROOTE:
        if curves[3] == 0.0:
            return 0.0
        e0 = curves[1]
        offset = math.exp(DEGROOTE_PASSIVE_SHAPE * (DEGROOTE_MIN_FIBER - 1.0) / e0)
        return ((math.exp(DEGROOTE_PASSIVE_SHAPE * (length - 1.0) / e0) - offset)
                / (math.exp(DEGROOTE_PASSIVE_SHAPE) - offset))
    if model == THELEN:
        if length <= 1.0:
            return 0.0
        e0, shape = curves[1], curves[3]
        return (math.exp(shape * (length - 1.0) / e0) - 1.0) / (math.exp(shape) - 1.0)
    return bezier_value_py(curves, np.int64(2), length)


def tendon_force_length_py(model, curves, length):
    """f_T(l̃_T): tendon force (units of F₀) at normalized tendon length l̃_T = l_T / l_s."""
    if model == DEGROOTE:
        c1, c2, c3 = DEGROOTE_TENDON
        stiffness = math.log((1.0 + c3) / c1) / (1.0 + curves[2] - c2)
        return c1 * math.exp(stiffness * (length - c2)) - c3
    if model == THELEN:
        strain = length - 1.0
        e0 = curves[0]
        e3 = math.exp(3.0)
        toe = 99.0 * e0 * e3 / (166.0 * e3 - 67.0)     # exact form of Thelen's ε_toe = 0.609 ε₀
        linear = 0.67 / (e0 - toe)
        if strain > toe:
            return linear * (strain - toe) + THELEN_TOE_FORCE
        if strain > 0.0:
            return THELEN_TOE_FORCE / (math.exp(THELEN_TOE_SHAPE) - 1.0) * (math.exp(THELEN_TOE_SHAPE * strain / toe)
                                                                        - 1.0)
        return 0.0
    return bezier_value_py(curves, np.int64(3), length)


def force_velocity_py(model, curves, velocity):
    """f_V(ṽ): force–velocity multiplier at normalized fiber velocity ṽ (positive lengthening); Thelen's curve
    has no activation-free form and gives NaN here (see `fiber_velocity_py`)."""
    if model == DEGROOTE:
        d1, d2, d3, d4 = DEGROOTE_VELOCITY
        t = d2 * velocity + d3
        return d1 * math.log(t + math.sqrt(t * t + 1.0)) + d4
    if model == MILLARD:
        return bezier_value_py(curves, np.int64(1), velocity)
    return math.nan


def fiber_velocity_py(model, curves, muscle, activation, active_fl, passive, length, force):
    """ṽ from the fiber's force balance: the normalized fiber velocity at which the fiber, at normalized length
    `length` with multipliers `active_fl`, `passive`, develops `force` (units of F₀) — OpenSim's inverse
    force–velocity of each model (Thelen: calcdlceN with its linear extrapolation; Millard:
    a f_L f_V(ṽ) + f_PE + β ṽ = force in the Bézier parameter; DeGroote: f_V's closed-form inverse, β ignored as
    in OpenSim 4.6)."""
    if model == THELEN:
        af, flen, threshold = curves[4], curves[5], curves[6]
        afl = activation * active_fl
        if afl <= 0.0:   # f_L underflows (a fiber ~18 l₀ from optimal, a rejected trial state): no velocity
            return math.nan
        fm = force - passive
        scale = 0.25 + 0.75 * activation
        if 0.0 < fm < afl * flen * threshold:
            b = afl + fm / af if fm <= afl else (2.0 + 2.0 / af) * (afl * flen - fm) / (flen - 1.0)
            return scale * (fm - afl) / b
        if fm <= 0.0:
            f0 = 0.0
            b = afl + f0 / af
            db = 1.0 / af
        else:
            f0 = threshold * afl * flen
            b = (2.0 + 2.0 / af) * (afl * flen - f0) / (flen - 1.0)
            db = -(2.0 + 2.0 / af) / (flen - 1.0)
        v0 = scale * (f0 - afl) / b
        slope = scale / b - scale * (f0 - afl) / (b * b) * db
        return v0 + slope * (fm - f0)
    afl = activation * active_fl
    if model == MILLARD:
        return _millard_fiber_velocity_py(curves, afl, passive, muscle[DAMPING], force)
    # DeGroote: f_V's closed-form inverse without the damping term, as OpenSim 4.6's explicit tendon dynamics
    # (DeGrooteFregly2016Muscle::calcFiberVelocityInfoHelper) computes it: there fiber_damping acts only on a rigid
    # tendon (the tendon force is the state, the fiber's damping force never enters the balance)
    d1, d2, d3, d4 = DEGROOTE_VELOCITY
    if afl <= 0.0:
        return math.nan
    return (math.sinh((((force - passive) / afl) - d4) / d1) - d3) / d2


def _millard_fiber_velocity_py(curves, afl, passive, damping, force):
    """ṽ ∈ [−1, 1] with a f_L f_V(ṽ) + f_PE + β ṽ = force on Millard's force–velocity curve (`afl` = a f_L).
    Solved in the Bézier parameter: on the segment holding the root, ṽ = x(u) and f_V = y(u) are quintics in u,
    so g(u) = afl y(u) + β x(u) + f_PE − force (increasing) is a polynomial — one safeguarded Newton iteration
    to adjacent doubles of u, where solving for ṽ with f_V(ṽ) as a function needs an inner solve x(u) = ṽ per
    evaluation. Beyond the curve's ends (|ṽ| past v_max) f_V continues as the line of its end slope, as OpenSim's
    curve and its unbounded Newton solve (calcDampedNormFiberVelocity) do: there the root is that line's; NaN when
    g is flat there (OpenSim's Newton fails)."""
    base = int(curves[1])
    n = int(curves[base])
    xs = base + 7
    ys = xs + 6 * n
    offset = passive - force
    if afl * curves[ys] + damping * curves[xs] + offset >= 0.0:
        return _millard_extension_root_py(afl, damping, offset, curves[base + 1], curves[base + 3], curves[base + 5])
    segment = -1
    for k in range(n):   # the first segment whose end has g > 0 holds the root
        if afl * curves[ys + 6 * k + 5] + damping * curves[xs + 6 * k + 5] + offset > 0.0:
            segment = k
            break
    if segment < 0:
        return _millard_extension_root_py(afl, damping, offset, curves[base + 2], curves[base + 4], curves[base + 6])
    xk, yk = xs + 6 * segment, ys + 6 * segment
    g_low = afl * curves[yk] + damping * curves[xk] + offset
    g_high = afl * curves[yk + 5] + damping * curves[xk + 5] + offset
    low, high = 0.0, 1.0
    u = g_low / (g_low - g_high)   # the secant of the bracket: the seed
    for _ in range(200):
        g = afl * bezier_point_py(curves, yk, u) + damping * bezier_point_py(curves, xk, u) + offset
        if g == 0.0:
            break
        slope = afl * bezier_slope_py(curves, yk, u) + damping * bezier_slope_py(curves, xk, u)
        low, high, step = newton_in_bracket_py(u, g, slope, low, high)
        if step != step:
            break
        u = step
    return bezier_point_py(curves, xk, u)


def _millard_extension_root_py(afl, damping, offset, x_end, y_end, slope):
    """ṽ with afl (y_end + slope (ṽ − x_end)) + β ṽ + offset = 0: the root on f_V's linear extension past an end
    (x_end, y_end) of the curve; NaN when that line is flat."""
    denominator = afl * slope + damping
    if not denominator > 0.0:
        return math.nan
    return (afl * (slope * x_end - y_end) - offset) / denominator


# ------------------------------------------------------------------------------------------------ activation
def activation_rate_py(model, muscle, activation, excitation):
    """ȧ (1/s) from excitation u and activation a: Thelen and Millard (OpenSim's
    MuscleFirstOrderActivationDynamicModel): a clamped to [a_min, 1], τ = τ_a (0.5 + 1.5 a) when u > a, else
    τ_d / (0.5 + 1.5 a), ȧ = (u − a)/τ. DeGroote: the tanh-blended form of De Groote et al. 2016 (eq. 2 with
    smoothing b): f = ½ tanh(b (u − a)), ȧ = [(f + ½)/(τ_a (0.5 + 1.5 a)) + (0.5 + 1.5 a)(½ − f)/τ_d] (u − a)."""
    if model == DEGROOTE:
        factor = 0.5 + 1.5 * activation
        f = 0.5 * math.tanh(muscle[SMOOTHING] * (excitation - activation))
        return ((f + 0.5) / (muscle[TAU_ACT] * factor) + factor / muscle[TAU_DEACT] * (0.5 - f)) * (excitation
                                                                                                  - activation)
    a = min(max(activation, muscle[A_MIN]), 1.0)
    if excitation > a:
        tau = muscle[TAU_ACT] * (0.5 + 1.5 * a)
    else:
        tau = muscle[TAU_DEACT] / (0.5 + 1.5 * a)
    return (excitation - a) / tau


# ------------------------------------------------------------------------------------------------ equilibrium
def shortest_fiber_py(model, curves, muscle):
    """The shortest fiber length (m) the model allows: DeGroote the width h (fiber across the tendon); Thelen the pennation model's
    h / sin α_max (0.01 l₀ when α_max is 0); Millard the larger of that and the active curve's lower end."""
    height = muscle[L_OPT] * math.sin(muscle[PENNATION])
    if model == DEGROOTE:
        return height
    max_angle = muscle[MAX_PENNATION]
    shortest = height / math.sin(max_angle) if max_angle > 1e-14 else 0.01 * muscle[L_OPT]
    if model == MILLARD:
        active_start = curves[int(curves[0]) + 1]
        shortest = max(1e-14, max(active_start * muscle[L_OPT], shortest))
    return shortest


def pennation_py(model, curves, muscle, fiber_length):
    """(cos α, fiber length clamped at the model's shortest) of the constant-height pennation model at fiber
    length l_M (m); Thelen and Millard hold α at α_max below h / sin α_max (OpenSim's
    MuscleFixedWidthPennationModel)."""
    height = muscle[L_OPT] * math.sin(muscle[PENNATION])
    length = max(shortest_fiber_py(model, curves, muscle), fiber_length)
    if height == 0.0 or muscle[PENNATION] <= 2.220446049250313e-16:
        return 1.0, length
    ratio = height / length
    if model == DEGROOTE or ratio < math.sin(muscle[MAX_PENNATION]):
        return math.sqrt(max(0.0, 1.0 - ratio * ratio)), length
    return math.cos(muscle[MAX_PENNATION]), length


def _fiber_force_along_tendon_py(model, curves, muscle, activation, along):
    """Fiber force along the tendon (units of F₀) at zero fiber velocity when the fiber's projection on the
    tendon is `along` (m); also returns the fiber length (m)."""
    height = muscle[L_OPT] * math.sin(muscle[PENNATION])
    fiber = math.sqrt(height * height + along * along)
    cos_alpha, fiber = pennation_py(model, curves, muscle, fiber)
    length = fiber / muscle[L_OPT]
    force = activation * active_force_length_py(model, curves, length) * _resting_force_velocity_py(model, curves) \
        + passive_force_length_py(model, curves, length)
    return force * cos_alpha, fiber


def _resting_force_velocity_py(model, curves):
    """f_V(0): 1 by each model's definition (OpenSim's DeGroote refit passes through (0, 1); Millard's curve
    and Thelen's hyperbola too)."""
    if model == THELEN:
        return 1.0
    return force_velocity_py(model, curves, 0.0)


def _equilibrium_py(model, curves, muscle, length, activation, out):
    """Static equilibrium at zero fiber velocity for musculotendon length `length` (m) and activation a (Thelen
    and Millard clamp it to [a_min, 1], as OpenSim does): out = [tendon force (N), fiber length (m), tendon length
    (m), cos α, residual f_T − fiber force along the tendon (units of F₀)]. Status 0; 1 when the fiber is at its
    shortest and still too long for the path (the tendon then takes the rest: OpenSim's clamped fiber).

    Rigid tendon: l_T = l_s. Compliant: f_T((l_MT − x)/l_s) = fiber force along the tendon at projection x,
    solved by bisection on x down to adjacent doubles (the residual is then round-off, not a tolerance)."""
    if model != DEGROOTE:
        activation = min(max(activation, muscle[A_MIN]), 1.0)
    cos_alpha, shortest = pennation_py(model, curves, muscle, 0.0)
    low = shortest * cos_alpha
    high = length - muscle[L_SLACK]
    status = 0
    if muscle[COMPLIANT] == 0.0 or high <= low:
        along = max(high, low)
        status = 0 if high >= low else 1
        force, fiber = _fiber_force_along_tendon_py(model, curves, muscle, activation, along)
        cos_alpha, fiber = pennation_py(model, curves, muscle, fiber)
        tendon = length - along
        out[0] = force * muscle[F_MAX]
        if muscle[COMPLIANT] != 0.0:
            out[0] = tendon_force_length_py(model, curves, tendon / muscle[L_SLACK]) * muscle[F_MAX]
        out[1] = fiber
        out[2] = tendon
        out[3] = cos_alpha
        out[4] = 0.0 if muscle[COMPLIANT] == 0.0 else out[0] / muscle[F_MAX] - force
        return status
    # tendon longest at x = low (f_T ≥ fiber force), at slack at x = high (f_T ≤ fiber force)
    for _ in range(2000):
        middle = 0.5 * (low + high)
        if middle <= low or middle >= high:
            break
        fiber_force, fiber = _fiber_force_along_tendon_py(model, curves, muscle, activation, middle)
        if tendon_force_length_py(model, curves, (length - middle) / muscle[L_SLACK]) - fiber_force > 0.0:
            low = middle
        else:
            high = middle
    best = low
    best_residual = math.inf
    for along in (low, high):   # of the two bracketing doubles, the one with the smaller residual
        fiber_force, fiber = _fiber_force_along_tendon_py(model, curves, muscle, activation, along)
        residual = tendon_force_length_py(model, curves, (length - along) / muscle[L_SLACK]) - fiber_force
        if abs(residual) < abs(best_residual):
            best, best_residual = along, residual
    fiber_force, fiber = _fiber_force_along_tendon_py(model, curves, muscle, activation, best)
    cos_alpha, fiber = pennation_py(model, curves, muscle, fiber)
    tendon = length - best
    out[0] = tendon_force_length_py(model, curves, tendon / muscle[L_SLACK]) * muscle[F_MAX]
    out[1] = fiber
    out[2] = tendon
    out[3] = cos_alpha
    out[4] = best_residual
    return status


def _curve_bindings():
    return {"bezier_value_py": jit.compiled(bezier_value_py, bind=bezier_bindings)}


def fiber_velocity_bindings() -> dict:
    """`fiber_velocity_py`'s callee: Millard's inverse force–velocity."""
    return {"_millard_fiber_velocity_py": jit.compiled(_millard_fiber_velocity_py, bind=lambda: {
        **bezier_bindings(), "_millard_extension_root_py": _millard_extension_root_py})}


def equilibrium_bindings():
    """The curves compiled once each (not inlined into every caller: that multiplies the compile time)."""
    curves = {name: jit.compiled(kernel, bind=_curve_bindings) for name, kernel in (
        ("active_force_length_py", active_force_length_py), ("passive_force_length_py", passive_force_length_py),
        ("tendon_force_length_py", tendon_force_length_py), ("force_velocity_py", force_velocity_py))}
    shortest = jit.compiled(shortest_fiber_py)
    pennation = jit.compiled(pennation_py, bind={"shortest_fiber_py": shortest})
    resting = jit.compiled(_resting_force_velocity_py, bind=curves)
    along = jit.compiled(_fiber_force_along_tendon_py, bind={
        **curves, "pennation_py": pennation, "_resting_force_velocity_py": resting})
    return {**curves, "shortest_fiber_py": shortest, "pennation_py": pennation,
            "_resting_force_velocity_py": resting, "_fiber_force_along_tendon_py": along}


active_force_length = jit.lazy(active_force_length_py, bind=_curve_bindings)
passive_force_length = jit.lazy(passive_force_length_py, bind=_curve_bindings)
tendon_force_length = jit.lazy(tendon_force_length_py, bind=_curve_bindings)
force_velocity = jit.lazy(force_velocity_py, bind=_curve_bindings)
fiber_velocity = jit.lazy(fiber_velocity_py, bind=fiber_velocity_bindings)
activation_rate = jit.lazy(activation_rate_py)
equilibrium = jit.lazy(_equilibrium_py, bind=equilibrium_bindings)

__all__ = ["DEGROOTE", "MILLARD", "THELEN", "MODEL_CODES", "MUSCLE_FIELDS", "muscle_vector", "curve_parameters",
           "active_force_length", "passive_force_length", "tendon_force_length", "force_velocity", "fiber_velocity",
           "fiber_velocity_bindings", "activation_rate", "equilibrium"]


# ------------------------------------------------------------------------------------------------ all muscles
MuscleTable = namedtuple("MuscleTable", [
    "model",          # int64 (n_muscles,): MODEL_CODES
    "muscle",         # float64 (n_muscles, len(MUSCLE_FIELDS))
    "curve_offset",   # int64 (n_muscles + 1,): muscle m's curves are curves[curve_offset[m]:curve_offset[m+1]]
    "curves",         # float64
])


def muscle_table(muscles) -> MuscleTable:
    """The Hill parameters of `muscles` (MuscleDescription sequence, e.g. `MuscleSetDescription.muscles`) as one
    kernel argument, in that order."""
    curves = [curve_parameters(m.model, m.parameters) for m in muscles]
    return MuscleTable(model=np.array([MODEL_CODES[m.model] for m in muscles], dtype=np.int64),
                       muscle=np.array([muscle_vector(m.model, m.parameters) for m in muscles],
                                       dtype=float).reshape(-1, len(MUSCLE_FIELDS)),
                       curve_offset=np.cumsum([0] + [c.size for c in curves]).astype(np.int64),
                       curves=np.concatenate(curves) if curves else np.zeros(0))


def _equilibria_py(table, lengths, activations, out):
    """Every muscle's static equilibrium (`_equilibrium_py`) at musculotendon lengths (m) and activations:
    out (n_muscles, 5) rows as there; returns the number of muscles at their shortest fiber."""
    clamped = 0
    row = np.empty(5)
    for m in range(table.model.shape[0]):
        curves = table.curves[table.curve_offset[m]:table.curve_offset[m + 1]]
        clamped += _equilibrium_py(table.model[m], curves, table.muscle[m], lengths[m], activations[m], row)
        for k in range(5):
            out[m, k] = row[k]
    return clamped


def _activation_rates_py(table, activations, excitations, out):
    """ȧ of every muscle (`activation_rate_py`), 1/s."""
    for m in range(table.model.shape[0]):
        out[m] = activation_rate_py(table.model[m], table.muscle[m], activations[m], excitations[m])


_equilibria = jit.lazy(_equilibria_py, bind=lambda: {
    "_equilibrium_py": jit.compiled(_equilibrium_py, bind=equilibrium_bindings)})
_activation_rates = jit.lazy(_activation_rates_py, bind=lambda: {
    "activation_rate_py": jit.compiled(activation_rate_py)})


def equilibrium_tendon_forces(table: MuscleTable, lengths, activations) -> np.ndarray:
    """Tendon forces (N) of every muscle in static equilibrium at zero fiber velocity, at musculotendon lengths
    (m) and activations (one each, or one activation for all), each with its tendon setting."""
    return equilibrium_states(table, lengths, activations)[:, 0]


def equilibrium_states(table: MuscleTable, lengths, activations) -> np.ndarray:
    """(n_muscles, 5): tendon force (N), fiber length (m), tendon length (m), cos α, residual (units of F₀)."""
    n = table.model.shape[0]
    values = _vector(lengths, n, "lengths")
    levels = _vector(activations, n, "activations")
    out = np.zeros((n, 5))
    _equilibria(table, values, levels, out)
    return out


def activation_rates(table: MuscleTable, activations, excitations) -> np.ndarray:
    """ȧ (1/s) of every muscle from activations and excitations (one each, or one for all)."""
    n = table.model.shape[0]
    out = np.zeros(n)
    _activation_rates(table, _vector(activations, n, "activations"), _vector(excitations, n, "excitations"), out)
    return out


def _vector(values, n: int, argument: str) -> np.ndarray:
    array = np.asarray(values, dtype=float).reshape(-1)
    if array.size == 1:
        array = np.full(n, float(array[0]))
    if array.shape != (n,):
        raise ModelError(f"{array.size} values", argument=argument, expected=f"{n} values (one per muscle) or one")
    if not np.all(np.isfinite(array)):
        raise ModelError("non-finite value", argument=argument, expected="finite numbers")
    return np.ascontiguousarray(array)


__all__ += ["MuscleTable", "muscle_table", "equilibrium_tendon_forces", "equilibrium_states", "activation_rates"]
