"""The contact laws' kernels, the contact state in arrays, and one call for all ground contacts.

Every built-in normal and friction law is written once, here, as a numba-compilable scalar `_NAME_py` (the law
classes of `contact.normal` and `contact.friction` hold and check the parameters and evaluate these functions by
Python; the compiled paths compile them with `biobullet.core.jit`), reached by a kind code and a parameter row
(`builtin_row`, `pack_normal`, `pack_friction`; the class names its `kernel_kind` and `kernel_parameters`):

  normal kind             kernel                     params (row of N_PARAMS floats)
  kelvin_voigt            _kelvin_voigt_py           [adhesion, K, D]
  kelvin_voigt_smooth     _kelvin_voigt_smooth_py    [adhesion, K, D, C]
  hertz                   _hertz_py                  [adhesion, K, n]
  hunt_crossley, flores,  _restitution_py            [adhesion, K, n, c(cr), δ̇⁻_min]  (c from the law's own
  hu_guo                                                                                `damping_factor`)
  opensim_hunt_crossley   _opensim_hunt_crossley_py  [adhesion, K, n, c]
  friction kind           kernel                     params
  none                    μ_eff = 0                  []
  coulomb                 _coulomb_py                [μ]
  regularized             _regularized_py            [μ, v0, tanh?]
  ambrosio                _ambrosio_py               [μ, v0, v1]
  stribeck                _stribeck_py               [μ_k, μ_s, v_s, v0, σ, tanh?]
  opensim                 _opensim_friction_py       [μ_s, μ_d, μ_v, v_t]

A subclass that keeps its parent's formula keeps its kernel; one that brings its own (`NormalLaw._unclipped`,
`FrictionLaw.coefficient`, the documented plug-in callbacks) has none, unless it supplies a compiled twin
(`compiled_twin`, signatures in `contact.base`): that is compiled as a C callable and its address is the law's kind
(any kind ≥ PLUGIN_KIND is an address; `_normal_force_py` and `_friction_coefficient_py` call it through
`core.jit.address_caller`), so every compiled contact path takes it without recompiling. Without either
`pack_normal` / `pack_friction` return None and the owner keeps the Python path (`Contact.forces`). Conventions are
those of `contact.base` (δ > 0 inside, δ̇ > 0 approaching, F_N ≥ 0 unless adhesion, F_T = −μ_eff F_N v̂_t).

The discrete state of one contact during a run (`contact.state.ContactState`: active, δ̇⁻ stored at onset, resting
and slip direction for switched friction) and the open interval's running log (impulse, dissipation, peaks) live in
one float row of STATE_WIDTH (`state_row` / `pull_state`). `_contact_update_py` is one contact's step: the event
action (`_contact_event_py`: onset stores δ̇⁻ and opens the log, separation closes it, the slip mode; `sync_state`
on a ContactState), the forces (`_contact_forces_py`, as `Contact.forces`) and the interval log;
`_contact_kinematics_py` one contact's kinematics with its point Jacobian (`contact.geometry.sphere_kinematics`).
`_ground_contacts_py` is every point/sphere contact against its analytic ground plane: placements from the
compiled tree kinematics (`algorithms.compiled_kernels.placements`), δ, δ̇, slip, the laws and τ = J_pᵀ F, in one
call.

The reference engine's compiled right-hand side (`integrate.compiled_rhs`) calls
`_ground_forces_py`: the same geometry (`_sphere_point_py`, `algorithms.compiled_kernels.point_force`) and forces
(`_contact_forces_py`, also the force part of `_contact_update_py`) at the kernel's own tree placements, with the
state rows only read (`discrete_rows`: the engine's events change the ContactStates in Python). `ContactSampler`
evaluates one contact at many tree states (`_contact_samples_py`): the engine's interval log and contact energy.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from biobullet.algorithms.compiled_kernels import (pack, place_body, place_body_kernel, placements, placements_kernel,
                                                   point_force, point_kernels, point_velocity)
from biobullet.algorithms.vectorized import tree_arrays
from biobullet.contact.state import REST_SPEED, ContactInterval, ContactState
from biobullet.core import jit

N_PARAMS = 6
NORMAL_KELVIN_VOIGT, NORMAL_KELVIN_VOIGT_SMOOTH, NORMAL_HERTZ, NORMAL_RESTITUTION, NORMAL_OPENSIM = 0, 1, 2, 3, 4
FRICTION_NONE, FRICTION_COULOMB, FRICTION_REGULARIZED, FRICTION_AMBROSIO, FRICTION_STRIBECK, FRICTION_OPENSIM = \
    0, 1, 2, 3, 4, 5
#: a law kind at or above this is the address of a plug-in law's compiled twin (`pack_normal`, `pack_friction`)
PLUGIN_KIND = 1 << 16

# state row: discrete state, open interval's log, last step's event and forces
ACTIVE, IMPACT, RESTING, HAS_DIRECTION, DIRECTION = 0, 1, 2, 3, 4        # DIRECTION: 3 entries
IMPULSE, DISSIPATED_NORMAL, DISSIPATED_FRICTION, MAX_PENETRATION, PEAK, PEAK_TIME = 7, 8, 9, 10, 11, 12
EVENT, EVENT_RATE, NORMAL_FORCE, FORCE, DELTA, POINT, NORMAL = 13, 14, 15, 16, 19, 20, 23   # 3-vectors: FORCE..
# switched friction's slide reversals (`_contact_event_py`): how many in a row came at most CHATTER_GAP syncs apart,
# and the syncs since the last — the bridge's chatter watch (`bridge.contact`); the engine does not read them
REVERSALS, SINCE_REVERSAL = 26, 27
STATE_WIDTH = 28
#: a slide reversal at most this many syncs (bridge steps) after the last continues a chatter row (`REVERSALS`)
CHATTER_GAP = 16.0
ONSET, SEPARATION = 1.0, 2.0


class ContactLaws(NamedTuple):
    """One contact's laws as `_contact_update_py` takes them (`pack_laws`): kinds and parameter rows of the normal
    and friction laws (`pack_normal`, `pack_friction`) and the normal law's and friction law's flags."""
    normal_kind: int
    normal_p: np.ndarray
    friction_kind: int
    friction_p: np.ndarray
    outside: bool         # the normal law acts outside contact
    needs_impact: bool    # the normal law reads δ̇⁻ (stored at onset)
    discontinuous: bool   # switched friction (resting / slipping)


class ContactRows(NamedTuple):
    """Ground contacts packed for `_ground_contacts_py` (`pack_ground`) and their discrete state rows."""
    index: np.ndarray       # (n, 4) int64: body, normal kind, friction kind, flags
    geometry: np.ndarray    # (n, 9): centre in the body frame, radius, ground normal, ground height, point depth
    normal_p: np.ndarray    # (n, N_PARAMS)
    friction_p: np.ndarray  # (n, N_PARAMS)
    state: np.ndarray       # (n, STATE_WIDTH)


# ------------------------------------------------------------------------------------------------ normal laws
def _kelvin_voigt_py(p, delta, delta_dot, impact_velocity):
    """Unclipped K δ + D δ̇ [N] (p = [adhesion, K, D])."""
    return p[1] * delta + p[2] * delta_dot


def _kelvin_voigt_smooth_py(p, delta, delta_dot, impact_velocity):
    """Unclipped [½ + atan(C δ)/π](K δ + D δ̇) [N] (p = [adhesion, K, D, C]), acting for every δ."""
    return (0.5 + math.atan(p[3] * delta) / math.pi) * (p[1] * delta + p[2] * delta_dot)


def _hertz_py(p, delta, delta_dot, impact_velocity):
    """Unclipped K δⁿ [N] (p = [adhesion, K, n]; δ > 0)."""
    return p[1] * delta ** p[2]


def _restitution_py(p, delta, delta_dot, impact_velocity):
    """Unclipped K δⁿ [1 + c δ̇ / max(δ̇⁻, floor)] [N] (p = [adhesion, K, n, c(cr), floor]; δ > 0): Hunt–Crossley,
    Flores and Hu–Guo differ in c(cr) only."""
    vi = max(p[4], impact_velocity)
    return p[1] * delta ** p[2] * (1.0 + p[3] * delta_dot / vi)


def _opensim_hunt_crossley_py(p, delta, delta_dot, impact_velocity):
    """Unclipped K δⁿ (1 + (3/2) c δ̇) [N] (p = [adhesion, K, n, c]; δ > 0): Simbody's HuntCrossleyForce."""
    return p[1] * delta ** p[2] * (1.0 + 1.5 * p[3] * delta_dot)


_KELVIN_VOIGT, _KELVIN_VOIGT_SMOOTH, _HERTZ, _RESTITUTION = (_kelvin_voigt_py, _kelvin_voigt_smooth_py, _hertz_py,
                                                             _restitution_py)   # compiled twins bound when compiling
_OPENSIM_HUNT_CROSSLEY = _opensim_hunt_crossley_py


def _normal_force_py(kind, p, delta, delta_dot, impact_velocity):
    """F_N [N] of normal law `kind` with params p: `NormalLaw.force` (zero for δ ≤ 0 unless the law acts outside
    contact, clipped at zero unless adhesion p[0] ≠ 0); a plug-in law's twin (kind = its address) does all of that
    itself."""
    if kind >= PLUGIN_KIND:
        return _CALL_NORMAL(kind)(p, delta, delta_dot, impact_velocity)
    if kind == NORMAL_KELVIN_VOIGT_SMOOTH:
        f = _KELVIN_VOIGT_SMOOTH(p, delta, delta_dot, impact_velocity)
    elif delta > 0.0:
        if kind == NORMAL_KELVIN_VOIGT:
            f = _KELVIN_VOIGT(p, delta, delta_dot, impact_velocity)
        elif kind == NORMAL_HERTZ:
            f = _HERTZ(p, delta, delta_dot, impact_velocity)
        elif kind == NORMAL_OPENSIM:
            f = _OPENSIM_HUNT_CROSSLEY(p, delta, delta_dot, impact_velocity)
        else:
            f = _RESTITUTION(p, delta, delta_dot, impact_velocity)
    else:
        f = 0.0
    if p[0] == 0.0 and not f > 0.0:
        f = 0.0
    return f


# ------------------------------------------------------------------------------------------------ friction laws
def _regularize_py(x, tanh):
    """r(x) = tanh x (tanh ≠ 0) or (2/π) atan x."""
    return math.tanh(x) if tanh != 0.0 else (2.0 / math.pi) * math.atan(x)


_REGULARIZE = _regularize_py


def _coulomb_py(p, speed):
    """μ for s > 0, 0 at s = 0 (p = [μ])."""
    return p[0] if speed > 0.0 else 0.0


def _regularized_py(p, speed):
    """μ r(s/v0) (p = [μ, v0, tanh?])."""
    return p[0] * _REGULARIZE(speed / p[1], p[2])


def _ambrosio_py(p, speed):
    """μ · clip((s − v0)/(v1 − v0), 0, 1) (p = [μ, v0, v1])."""
    ramp = (speed - p[1]) / (p[2] - p[1])
    ramp = 0.0 if ramp < 0.0 else min(ramp, 1.0)
    return p[0] * ramp


def _stribeck_py(p, speed):
    """[μ_k + (μ_s − μ_k) exp(−(s/v_s)²)] r(s/v0) + σ s (p = [μ_k, μ_s, v_s, v0, σ, tanh?])."""
    ratio = speed / p[2]
    dry = p[0] + (p[1] - p[0]) * math.exp(-(ratio * ratio))
    return dry * _REGULARIZE(speed / p[3], p[5]) + p[4] * speed


def _opensim_friction_py(p, speed):
    """min(s/v_t, 1) [μ_d + 2 (μ_s − μ_d)/(1 + (s/v_t)²)] + μ_v s (p = [μ_s, μ_d, μ_v, v_t])."""
    ratio = speed / p[3]
    return min(ratio, 1.0) * (p[1] + 2.0 * (p[0] - p[1]) / (1.0 + ratio * ratio)) + p[2] * speed


_COULOMB, _REGULARIZED, _AMBROSIO, _STRIBECK = _coulomb_py, _regularized_py, _ambrosio_py, _stribeck_py
_OPENSIM_FRICTION = _opensim_friction_py


def _friction_coefficient_py(kind, p, speed):
    """μ_eff(s) ≥ 0 of friction law `kind` at slip speed s ≥ 0 [m/s] (`FrictionLaw.coefficient`); a plug-in
    law's twin when kind is its address."""
    if kind >= PLUGIN_KIND:
        return _CALL_FRICTION(kind)(p, speed)
    if kind == FRICTION_COULOMB:
        return _COULOMB(p, speed)
    if kind == FRICTION_REGULARIZED:
        return _REGULARIZED(p, speed)
    if kind == FRICTION_AMBROSIO:
        return _AMBROSIO(p, speed)
    if kind == FRICTION_STRIBECK:
        return _STRIBECK(p, speed)
    if kind == FRICTION_OPENSIM:
        return _OPENSIM_FRICTION(p, speed)
    return 0.0


_NORMAL_FORCE, _FRICTION_COEFFICIENT = _normal_force_py, _friction_coefficient_py
#: the built-in law kernels run by Python (kinds below PLUGIN_KIND), for other modules' uncompiled kernels; compiled:
#: `normal_force_kernel()`, `friction_coefficient_kernel()`
normal_force, friction_coefficient = _normal_force_py, _friction_coefficient_py


# ------------------------------------------------------------------------------------------------ one contact's step
def _contact_forces_py(normal_kind, normal_p, friction_kind, friction_p, outside, needs_impact, discontinuous,
                       state, delta, delta_dot, slip, speed):
    """(on, F_N [N], F_N(δ, 0) [N], F_T world [N] as 3 floats) of one contact at kinematics (δ, δ̇, slip v_t with
    |v_t| = speed) given its discrete state row, which is only read (`Contact.forces`): the normal law acts while the
    contact is active (or always for a law acting outside contact), δ̇⁻ from the row; friction is off at rest
    (switched friction) or without normal force or slip. Shared by the bridge's step (`_contact_update_py`) and the
    engine's right-hand side (`_ground_forces_py`)."""
    fn = 0.0
    elastic = 0.0
    ft0 = ft1 = ft2 = 0.0
    on = outside or state[ACTIVE] != 0.0
    if on:
        vi = state[IMPACT] if needs_impact else 0.0
        fn = _NORMAL_FORCE(normal_kind, normal_p, delta, delta_dot, vi)
        elastic = _NORMAL_FORCE(normal_kind, normal_p, delta, 0.0, 1.0)
        resting = discontinuous and state[RESTING] != 0.0
        if fn > 0.0 and not resting and speed > 0.0:
            scale = -_FRICTION_COEFFICIENT(friction_kind, friction_p, speed) * fn / speed
            s0, s1, s2 = slip[0], slip[1], slip[2]
            if discontinuous and state[HAS_DIRECTION] != 0.0:
                along = s0 * state[DIRECTION] + s1 * state[DIRECTION + 1] + s2 * state[DIRECTION + 2]
                if along < 0.0:
                    # past the sliding mode's stop surface (slip·d = 0; the engine's trial stages before its
                    # slip_stop event is located): the slip mirrored in it, so that friction keeps opposing the
                    # slide and stays smooth across — flipping with the slip, it held a block that sticks on an
                    # incline at the surface and the integrator crept to it in steps of 1e-12 s
                    s0 -= 2.0 * along * state[DIRECTION]
                    s1 -= 2.0 * along * state[DIRECTION + 1]
                    s2 -= 2.0 * along * state[DIRECTION + 2]
            ft0, ft1, ft2 = scale * s0, scale * s1, scale * s2
    return on, fn, elastic, ft0, ft1, ft2


_CONTACT_FORCES = _contact_forces_py


def contact_forces_by_laws(normal_law, friction_law):
    """`_contact_forces_py` run by Python with the two law objects bound as its law kernels (`NormalLaw.force`,
    `FrictionLaw.coefficient`): `Contact.forces` for any law, a plug-in's Python callback included."""
    def normal(kind, p, delta, delta_dot, impact_velocity):
        vi = impact_velocity if normal_law.needs_impact_velocity else None
        return float(normal_law.force(delta, delta_dot, vi))

    def friction(kind, p, speed):
        return float(friction_law.coefficient(speed))
    return jit.twin(_contact_forces_py, {"_NORMAL_FORCE": normal, "_FRICTION_COEFFICIENT": friction})


def _contact_event_py(discontinuous, state, delta, delta_dot, slip, speed):
    """The discrete state of one contact (row `state`) brought in line with its kinematics (δ [m], δ̇ [m/s], slip
    v_t with |v_t| = speed [m/s]): onset (δ > 0, or δ = 0 approaching) stores δ̇⁻ and clears the interval log,
    separation clears ACTIVE, and for switched friction the slip mode: at rest below REST_SPEED when the slip
    reversed (or already at rest), sliding with the slip direction otherwise. Writes EVENT (0, ONSET or
    SEPARATION) and EVENT_RATE δ̇; returns the event. The engine's event action and the bridge's step
    (`sync_state`, `_contact_update_py`)."""
    event = 0.0
    inside = delta > 0.0 or (delta == 0.0 and delta_dot > 0.0)
    if inside and state[ACTIVE] == 0.0:
        event = ONSET
        state[ACTIVE] = 1.0
        state[IMPACT] = delta_dot
        state[IMPULSE] = state[DISSIPATED_NORMAL] = state[DISSIPATED_FRICTION] = 0.0
        state[MAX_PENETRATION] = state[PEAK] = 0.0
        state[PEAK_TIME] = np.nan
    elif state[ACTIVE] != 0.0 and not inside:
        event = SEPARATION
        state[ACTIVE] = 0.0
    state[EVENT] = event
    state[EVENT_RATE] = delta_dot
    if discontinuous:
        reversed_ = state[HAS_DIRECTION] == 0.0 or (slip[0] * state[DIRECTION] + slip[1] * state[DIRECTION + 1]
                                                    + slip[2] * state[DIRECTION + 2]) <= 0.0
        flipped = False
        if speed < REST_SPEED and (state[RESTING] != 0.0 or reversed_):
            state[RESTING], state[HAS_DIRECTION] = 1.0, 0.0
        elif speed > 0.0:
            # a slide reversed without a rest between (a bridge step crossed the stop: no stiction, the slip
            # after it is O(μ g dt), far above REST_SPEED), counted for the bridge's chatter watch
            flipped = reversed_ and state[HAS_DIRECTION] != 0.0
            state[RESTING], state[HAS_DIRECTION] = 0.0, 1.0
            for a in range(3):
                state[DIRECTION + a] = slip[a] / speed
        if flipped:
            state[REVERSALS] = state[REVERSALS] + 1.0 if state[SINCE_REVERSAL] <= CHATTER_GAP else 1.0
            state[SINCE_REVERSAL] = 0.0
        else:
            state[SINCE_REVERSAL] += 1.0
    return event


_CONTACT_EVENT = _contact_event_py


def _contact_update_py(laws, state, delta, delta_dot, slip, normal, t, dt):
    """One step of one contact at kinematics (δ [m], δ̇ [m/s], slip v_t [m/s], normal n): sync the discrete state
    (`_contact_event_py`), evaluate the laws (`_contact_forces_py`) and add to the open interval's log (impulse
    Σ F_N dt, dissipation, max δ, peak F_N). Writes into `state` (a row, see STATE_WIDTH): EVENT (0, ONSET or
    SEPARATION) with EVENT_RATE δ̇, NORMAL_FORCE, FORCE (F = F_N n + F_T, world N), DELTA. Returns the event code."""
    discontinuous = laws.discontinuous
    speed = math.sqrt(slip[0] * slip[0] + slip[1] * slip[1] + slip[2] * slip[2])
    event = _CONTACT_EVENT(discontinuous, state, delta, delta_dot, slip, speed)
    on, fn, elastic, ft0, ft1, ft2 = _CONTACT_FORCES(laws.normal_kind, laws.normal_p, laws.friction_kind,
                                                     laws.friction_p, laws.outside, laws.needs_impact, discontinuous,
                                                     state, delta, delta_dot, slip, speed)
    state[NORMAL_FORCE] = fn
    state[FORCE] = fn * normal[0] + ft0
    state[FORCE + 1] = fn * normal[1] + ft1
    state[FORCE + 2] = fn * normal[2] + ft2
    state[DELTA] = delta
    if state[ACTIVE] != 0.0:   # the open interval's log
        state[IMPULSE] += fn * dt
        if on:
            state[DISSIPATED_NORMAL] += (fn - elastic) * delta_dot * dt
            state[DISSIPATED_FRICTION] -= (ft0 * slip[0] + ft1 * slip[1] + ft2 * slip[2]) * dt
        state[MAX_PENETRATION] = max(state[MAX_PENETRATION], delta)
        if fn > state[PEAK]:
            state[PEAK], state[PEAK_TIME] = fn, t
    return event


_CONTACT_UPDATE = _contact_update_py
_PLACE_BODY, _PLACEMENTS = place_body, placements


# ------------------------------------------------------------------------------------------------ ground contacts
def _point_lift_py(point_depth, delta):
    """How far above the sphere's deepest point [m] a force acts that acts `point_depth` δ below the plane (a
    fraction; 1: at the deepest point, 0 for δ ≤ 0) — Simbody's HuntCrossleyForce: k'_sphere/(k'_sphere +
    k'_plane)."""
    return (1.0 - point_depth) * delta if delta > 0.0 else 0.0


def _sphere_point_py(rot, pos, sub, ancestry, b, g, xd, point, normal, slip):
    """(δ [m], n·v_p [m/s]) of one sphere/point (geometry row g, body b, −1: the world) against its plane, at tree
    placements rot, pos and motion subspaces sub: writes the contact point p = c − r n + lift n (the deepest point
    lifted by `_point_lift_py` of the row's point depth), the normal n and the slip v_t = v_p − (n·v_p) n of the
    body's material point at p into point, normal, slip (`contact.geometry.sphere_kinematics`)."""
    radius = g[3]
    normal[0], normal[1], normal[2] = g[4], g[5], g[6]
    if b >= 0:
        for a in range(3):
            point[a] = rot[b, a, 0] * g[0] + rot[b, a, 1] * g[1] + rot[b, a, 2] * g[2] + pos[b, a]
    else:
        point[0], point[1], point[2] = g[0], g[1], g[2]
    delta = g[7] + radius - (normal[0] * point[0] + normal[1] * point[1] + normal[2] * point[2])
    below = radius - _POINT_LIFT(g[8], delta)   # the point's distance from the centre along −n
    for a in range(3):
        point[a] -= below * normal[a]
    _POINT_VELOCITY(sub, ancestry, b, point, xd, slip)   # v_p, then its tangential part
    normal_speed = normal[0] * slip[0] + normal[1] * slip[1] + normal[2] * slip[2]
    for a in range(3):
        slip[a] -= normal_speed * normal[a]
    return delta, normal_speed


_SPHERE_POINT, _POINT_VELOCITY, _POINT_FORCE, _POINT_LIFT = _sphere_point_py, point_velocity, point_force, \
    _point_lift_py
#: `_point_lift_py` for other modules (the bridge's PyBullet geometry)
point_lift = _point_lift_py


def _workspace(n_bodies, n_tangent):
    """Buffers of the ground-contact kernels: tree placements rot, pos, motion subspaces sub (`placements`), and
    one contact's point, normal and slip."""
    return (np.empty((n_bodies, 3, 3)), np.empty((n_bodies, 3)), np.zeros((6, n_tangent)), np.empty(3),
            np.empty(3), np.empty(3))


# per contact, integer row: body index (−1: fixed to the world), normal kind, friction kind, flags
# (1 acts outside contact, 2 needs δ̇⁻, 4 discontinuous friction); float row: centre in the body frame (3), radius,
# ground normal n (3), ground height h, point depth s (`_point_lift_py`)
def _ground_contacts_py(meta, body, ancestry, contacts, x, xd, t, dt, tau):
    """Every point/sphere contact against its analytic plane (`contact.geometry`): δ = h + r − n·c, p = c − r n
    (lifted by (1 − s) δ for a point depth s < 1),
    v_p = J_p ẋ, δ̇ = −n·v_p, v_t = v_p − (n·v_p) n; `_contact_update_py` per contact; τ += J_pᵀ F (tau, n_tangent,
    added to). ancestry[b, j] ≠ 0: velocity column j moves body b. Returns the number of onsets and separations,
    or −1 (nothing computed) when x or ẋ is not finite (the caller reports the divergence)."""
    for j in range(x.shape[0]):
        if not math.isfinite(x[j]):
            return -1
    for j in range(xd.shape[0]):
        if not math.isfinite(xd[j]):
            return -1
    index, geometry, state = contacts.index, contacts.geometry, contacts.state
    rot, pos, sub, slip, normal, point = _workspace(meta.shape[0], tau.shape[0])
    _PLACEMENTS(meta, body, x, rot, pos, sub)
    events = 0
    for k in range(index.shape[0]):
        b = index[k, 0]
        delta, normal_speed = _SPHERE_POINT(rot, pos, sub, ancestry, b, geometry[k], xd, point, normal, slip)
        flags = index[k, 3]
        row = state[k]
        laws = ContactLaws(index[k, 1], contacts.normal_p[k], index[k, 2], contacts.friction_p[k], (flags & 1) != 0,
                           (flags & 2) != 0, (flags & 4) != 0)
        event = _CONTACT_UPDATE(laws, row, delta, -normal_speed, slip, normal, t, dt)
        if event != 0.0:
            events += 1
        for a in range(3):
            row[POINT + a] = point[a]
            row[NORMAL + a] = normal[a]
        _POINT_FORCE(sub, ancestry, b, point, row[FORCE], row[FORCE + 1], row[FORCE + 2], tau)
    return events


def _ground_forces_py(rot, pos, sub, ancestry, index, geometry, normal_p, friction_p, state, xd, tau):
    """The engine's right-hand side share of every point/sphere ground contact (packed as for `_ground_contacts_py`)
    at placements rot, pos and motion subspaces sub of the tree (`_place_body_py`), given the discrete state rows,
    which are only read — the engine's events change them (`sync_state`): τ += J_pᵀ F (added to
    tau), returns the dissipated power Σ (F_N − F_N(δ, 0)) δ̇ − F_T·v_t [W] of the contacts whose normal law acts
    (`Contact.dissipated_power`)."""
    slip = np.empty(3)
    normal = np.empty(3)
    point = np.empty(3)
    dissipated = 0.0
    for k in range(index.shape[0]):
        b = index[k, 0]
        delta, normal_speed = _SPHERE_POINT(rot, pos, sub, ancestry, b, geometry[k], xd, point, normal, slip)
        speed = math.sqrt(slip[0] * slip[0] + slip[1] * slip[1] + slip[2] * slip[2])
        flags = index[k, 3]
        on, fn, elastic, ft0, ft1, ft2 = _CONTACT_FORCES(index[k, 1], normal_p[k], index[k, 2], friction_p[k],
                                                         (flags & 1) != 0, (flags & 2) != 0, (flags & 4) != 0,
                                                         state[k], delta, -normal_speed, slip, speed)
        if on:
            dissipated += (fn - elastic) * (-normal_speed) - (ft0 * slip[0] + ft1 * slip[1] + ft2 * slip[2])
        _POINT_FORCE(sub, ancestry, b, point, fn * normal[0] + ft0, fn * normal[1] + ft1, fn * normal[2] + ft2,
                     tau)
    return dissipated


def _contact_samples_py(meta, body, ancestry, index, geometry, normal_p, friction_p, state, xs, xds, k, out):
    """Contact k at tree states (xs[s], xds[s]) given its discrete state row (only read): out[s] = (F_N [N],
    normal dissipated power (F_N − F_N(δ, 0)) δ̇ [W], friction dissipated power −F_T·v_t [W], δ [m]) —
    `Contact.forces` and `Contact.power_split` at many samples (the engine's step observer, the interval log)."""
    rot, pos, sub, slip, normal, point = _workspace(meta.shape[0], xds.shape[1])
    b = index[k, 0]
    flags = index[k, 3]
    for s in range(xs.shape[0]):
        x = xs[s]
        xd = xds[s]
        _PLACEMENTS(meta, body, x, rot, pos, sub)
        delta, normal_speed = _SPHERE_POINT(rot, pos, sub, ancestry, b, geometry[k], xd, point, normal, slip)
        speed = math.sqrt(slip[0] * slip[0] + slip[1] * slip[1] + slip[2] * slip[2])
        on, fn, elastic, ft0, ft1, ft2 = _CONTACT_FORCES(index[k, 1], normal_p[k], index[k, 2], friction_p[k],
                                                         (flags & 1) != 0, (flags & 2) != 0, (flags & 4) != 0,
                                                         state[k], delta, -normal_speed, slip, speed)
        out[s, 0] = fn
        out[s, 1] = (fn - elastic) * (-normal_speed) if on else 0.0
        out[s, 2] = -(ft0 * slip[0] + ft1 * slip[1] + ft2 * slip[2]) if on else 0.0
        out[s, 3] = delta


def _contact_kinematics_py(meta, body, ancestry, b, g, x, xd, out, jacobian):
    """One sphere/point (geometry row g, body b) at the tree state (x, ẋ): out = (δ [m], δ̇ [m/s] (> 0
    approaching), slip v_t (3) [m/s], deepest point p (3) [m, world], ground normal n (3)) and, when `jacobian` has
    columns, the world-aligned point Jacobian J_p (3, n_tangent) of the body's material point at p, column j = the
    velocity of p for ẋ = e_j (`contact.geometry.sphere_kinematics`; the engine's contact event functions). Places
    only b and its ancestors."""
    nb = meta.shape[0]
    rot, pos, sub, slip, normal, point = _workspace(nb, xd.shape[0])
    if b >= 0:
        loc = np.empty((3, 3))
        jr = np.empty((3, 3))
        chain = np.empty(nb, dtype=np.int64)   # b's path to the root, placed root first
        depth = 0
        i = b
        while i >= 0:
            chain[depth] = i
            depth += 1
            i = meta[i, 0]
        for d in range(depth - 1, -1, -1):
            _PLACE_BODY(meta, body, x, chain[d], loc, jr, rot, pos, sub)
    delta, normal_speed = _SPHERE_POINT(rot, pos, sub, ancestry, b, g, xd, point, normal, slip)
    out[0] = delta
    out[1] = -normal_speed
    for a in range(3):
        out[2 + a] = slip[a]
        out[5 + a] = point[a]
        out[8 + a] = normal[a]
    if jacobian.shape[1] > 0:
        unit = np.zeros(xd.shape[0])
        column = np.empty(3)
        for j in range(xd.shape[0]):
            unit[j] = 1.0
            _POINT_VELOCITY(sub, ancestry, b, point, unit, column)
            unit[j] = 0.0
            for a in range(3):
                jacobian[a, j] = column[a]


# ------------------------------------------------------------------------------------------------ compiling
def _law_bindings() -> dict:
    from biobullet.contact.base import NORMAL_TWIN_SIGNATURE
    return {"_KELVIN_VOIGT": _kelvin_voigt_py, "_KELVIN_VOIGT_SMOOTH": _kelvin_voigt_smooth_py, "_HERTZ": _hertz_py,
            "_RESTITUTION": _restitution_py, "_OPENSIM_HUNT_CROSSLEY": _opensim_hunt_crossley_py,
            "_CALL_NORMAL": jit.address_caller(NORMAL_TWIN_SIGNATURE)}


def _friction_bindings() -> dict:
    from biobullet.contact.base import FRICTION_TWIN_SIGNATURE
    regularize = {"_REGULARIZE": _regularize_py}
    return {"_COULOMB": _coulomb_py, "_AMBROSIO": _ambrosio_py, "_OPENSIM_FRICTION": _opensim_friction_py,
            "_CALL_FRICTION": jit.address_caller(FRICTION_TWIN_SIGNATURE),
            "_REGULARIZED": jit.compiled(_regularized_py, bind=regularize, inline=True),
            "_STRIBECK": jit.compiled(_stribeck_py, bind=regularize, inline=True)}


def normal_force_kernel():
    """The compiled `_normal_force_py` (its twins bound)."""
    return jit.compiled(_normal_force_py, bind=_law_bindings)


def friction_coefficient_kernel():
    """The compiled `_friction_coefficient_py` (its twins bound)."""
    return jit.compiled(_friction_coefficient_py, bind=_friction_bindings)


def contact_forces_kernel():
    """The compiled `_contact_forces_py` (laws bound)."""
    return jit.compiled(_contact_forces_py, bind=lambda: {"_NORMAL_FORCE": normal_force_kernel(),
                                                         "_FRICTION_COEFFICIENT": friction_coefficient_kernel()},
                        inline=True)


def _update_bindings() -> dict:
    return {"_CONTACT_FORCES": contact_forces_kernel(), "_CONTACT_EVENT": jit.compiled(_contact_event_py, inline=True)}


def contact_update_kernel():
    """The compiled `_contact_update_py` (laws bound)."""
    return jit.compiled(_contact_update_py, bind=_update_bindings)


def _placed_bindings(name: str, contact_kernel) -> dict:
    """`contact_kernel` bound as `name`, the tree placements and the contact geometry."""
    return {name: contact_kernel, "_PLACEMENTS": placements_kernel(inline=True), **_geometry_bindings()}


def _geometry_bindings() -> dict:
    points = point_kernels()
    return {"_SPHERE_POINT": jit.compiled(_sphere_point_py, bind=lambda: {**points, "_POINT_LIFT": _point_lift_py},
                                          inline=True), **points, "_workspace": _workspace}


def _forces_bindings() -> dict:
    return {"_CONTACT_FORCES": contact_forces_kernel(), **_geometry_bindings()}


def contact_samples_kernel():
    """The compiled `_contact_samples_py`."""
    return jit.compiled(_contact_samples_py,
                        bind=lambda: _placed_bindings("_CONTACT_FORCES", contact_forces_kernel()))


def _kinematics_bindings() -> dict:
    return {"_PLACE_BODY": place_body_kernel(inline=True), **_geometry_bindings()}


#: `_contact_kinematics_py` compiled on first call, or run by Python without numba (`contact.geometry`)
contact_kinematics = jit.lazy(_contact_kinematics_py, bind=_kinematics_bindings)


def ground_forces_kernel():
    """The compiled `_ground_forces_py` (everything it calls bound; inlined into its caller)."""
    return jit.compiled(_ground_forces_py, bind=_forces_bindings, inline=True)


def ground_contacts_kernel():
    """The compiled `_ground_contacts_py` (everything it calls bound)."""
    return jit.compiled(_ground_contacts_py,
                        bind=lambda: _placed_bindings("_CONTACT_UPDATE", contact_update_kernel()))


# ------------------------------------------------------------------------------------------------ packing
def builtin_row(law) -> tuple[int, np.ndarray] | None:
    """(kind, params) of a law that a built-in kernel evaluates: the first class of its MRO that names a
    `kernel_kind` comes before any that brings its own formula (`_unclipped`, `coefficient`: a plug-in's); None
    otherwise."""
    for cls in type(law).__mro__:
        if cls.__dict__.get("kernel_kind") is not None:
            values = law.kernel_parameters()
            p = np.zeros(N_PARAMS)
            p[:len(values)] = values
            return cls.__dict__["kernel_kind"], p
        if "_unclipped" in cls.__dict__ or "coefficient" in cls.__dict__:
            return None
    return None


def normal_forces(row: tuple[int, np.ndarray], delta, delta_dot, impact_velocity):
    """F_N [N] of a built-in law's (kind, params) row (`builtin_row`), element-wise over broadcast arrays:
    `_normal_force_py` run by Python (the law classes' `force`)."""
    kind, p = row
    if np.ndim(delta) == 0 and np.ndim(delta_dot) == 0 and np.ndim(impact_velocity) == 0:
        return _normal_force_py(kind, p, float(delta), float(delta_dot), float(impact_velocity))
    return _NORMAL_FORCES(kind, p, delta, delta_dot, impact_velocity)


def friction_coefficients(row: tuple[int, np.ndarray], speed):
    """μ_eff of a built-in friction law's (kind, params) row at slip speeds s ≥ 0 [m/s], element-wise:
    `_friction_coefficient_py` run by Python (the law classes' `coefficient`)."""
    kind, p = row
    if np.ndim(speed) == 0:
        return np.asarray(_friction_coefficient_py(kind, p, float(speed)))
    return _FRICTION_COEFFICIENTS(kind, p, speed)


_NORMAL_FORCES = np.vectorize(_normal_force_py, otypes=[float], excluded={0, 1})
_FRICTION_COEFFICIENTS = np.vectorize(_friction_coefficient_py, otypes=[float], excluded={0, 1})


def pack_normal(law) -> tuple[int, np.ndarray] | None:
    """(kind, params) of a normal law for the compiled paths: its plug-in twin's address when it brings one, else
    its built-in kernel's row; None: no kernel (the Python law serves)."""
    from biobullet.contact.base import NORMAL_TWIN_SIGNATURE
    return _packed(law, NORMAL_TWIN_SIGNATURE)


def pack_friction(law) -> tuple[int, np.ndarray] | None:
    """(kind, params) of a friction law for the compiled paths (as `pack_normal`)."""
    from biobullet.contact.base import FRICTION_TWIN_SIGNATURE
    return _packed(law, FRICTION_TWIN_SIGNATURE)


def _packed(law, signature: str) -> tuple[int, np.ndarray] | None:
    from biobullet.contact.base import ContactLaw
    if type(law).compiled_twin is not ContactLaw.compiled_twin:
        return _plugin_twin(law, signature)
    return builtin_row(law)


def _plugin_twin(law, signature: str) -> tuple[int, np.ndarray] | None:
    """(address as the kind, params row) of a plug-in law's compiled twin, or None (no twin, more than N_PARAMS
    parameters or the twin not compiling: the Python law serves)."""
    twin = law.compiled_twin()
    if twin is None:
        return None
    params = np.asarray(twin.params, dtype=float).reshape(-1)
    if params.size > N_PARAMS:
        return None
    address = jit.function_address(twin.function, signature, bind=twin.bind, plugin=f"contact law {law.law_name!r}")
    if address is None or address < PLUGIN_KIND:
        return None
    p = np.zeros(N_PARAMS)
    p[:params.size] = params
    return address, p


def flags(contact) -> int:
    """Flag bits of a Contact element for `_contact_update_py`: 1 acts outside contact, 2 needs δ̇⁻, 4 discontinuous
    friction."""
    law = contact.normal_law
    return ((1 if law.acts_outside_contact else 0) | (2 if law.needs_impact_velocity else 0)
            | (4 if contact.friction_law.discontinuous else 0))


def state_row(state: ContactState, out: np.ndarray | None = None) -> np.ndarray:
    """The array row of a ContactState (the open interval's log included)."""
    row = np.zeros(STATE_WIDTH) if out is None else out
    row[:] = 0.0
    discrete_rows((state,), row[None, :])
    interval = state.current
    row[PEAK_TIME] = np.nan
    if interval is not None:
        row[IMPULSE], row[DISSIPATED_NORMAL] = interval.impulse, interval.dissipated_normal
        row[DISSIPATED_FRICTION], row[MAX_PENETRATION] = interval.dissipated_friction, interval.max_penetration
        row[PEAK] = interval.peak_force
        row[PEAK_TIME] = np.nan if interval.peak_force_time is None else interval.peak_force_time
    return row


def _log_into(row: np.ndarray, interval: ContactInterval) -> None:
    interval.impulse, interval.dissipated_normal = float(row[IMPULSE]), float(row[DISSIPATED_NORMAL])
    interval.dissipated_friction = float(row[DISSIPATED_FRICTION])
    interval.max_penetration, interval.peak_force = float(row[MAX_PENETRATION]), float(row[PEAK])
    interval.peak_force_time = None if math.isnan(row[PEAK_TIME]) else float(row[PEAK_TIME])


def pull_event(row: np.ndarray, state: ContactState, t: float) -> None:
    """Replay the kernel's event of this step on the Python ContactState (its interval list): an onset opens an
    interval with δ̇⁻, a separation closes the open one (its log copied from the row first)."""
    if row[EVENT] == ONSET:
        state.touch(t, float(row[EVENT_RATE]))
    elif row[EVENT] == SEPARATION:
        if state.current is not None:
            _log_into(row, state.current)
        state.separate(t, float(row[EVENT_RATE]))


def pull_state(row: np.ndarray, state: ContactState) -> None:
    """Copy the row's slip mode and open interval's log into the ContactState (active and δ̇⁻ follow the events)."""
    state.active = bool(row[ACTIVE])
    state.impact_velocity = float(row[IMPACT])
    state.resting = bool(row[RESTING])
    state.slip_direction = row[DIRECTION:DIRECTION + 3].copy() if row[HAS_DIRECTION] else None
    if state.current is not None:
        _log_into(row, state.current)


def sync_state(state: ContactState, discontinuous: bool, t: float, delta: float, delta_dot: float,
               slip: np.ndarray) -> None:
    """`_contact_event_py` on a ContactState at time t [s] (its interval list follows the event): the engine's
    event action and the bridge's step for contacts on the Python laws. Run by Python: one scalar call per located
    event, cheaper than a compile."""
    row = state_row(state)
    slip = np.asarray(slip, dtype=float)
    _contact_event_py(discontinuous, row, float(delta), float(delta_dot), slip, float(np.linalg.norm(slip)))
    pull_event(row, state, t)
    pull_state(row, state)


def contact_update_by_laws(normal_law, friction_law):
    """`_contact_update_py` run by Python with the two law objects bound (`contact_forces_by_laws`): the bridge's
    step of a contact whose laws have no compiled twin (a plug-in's Python callback)."""
    return jit.twin(_contact_update_py, {"_CONTACT_FORCES": contact_forces_by_laws(normal_law, friction_law),
                                         "_CONTACT_EVENT": _contact_event_py})


def ancestry(model) -> np.ndarray:
    """int64 (n_bodies, n_tangent): 1 where velocity column j moves body b (`algorithms.vectorized.tree_arrays`),
    kept once per model (read only)."""
    return model.derive("contact.kernels.ancestry",
                        lambda: np.ascontiguousarray(tree_arrays(model).ancestry, dtype=np.int64))


def has_twins(contact) -> bool:
    """True when both laws of a Contact element have compiled twins (exact built-in classes, or plug-in laws whose
    `compiled_twin` compiles)."""
    return pack_laws(contact) is not None


def pack_laws(contact) -> ContactLaws | None:
    """The ContactLaws of a Contact element, or None when a law has no compiled twin (the Python laws serve)."""
    normal, friction = pack_normal(contact.normal_law), pack_friction(contact.friction_law)
    if normal is None or friction is None:
        return None
    return ContactLaws(normal[0], normal[1], friction[0], friction[1], contact.normal_law.acts_outside_contact,
                       contact.normal_law.needs_impact_velocity, contact.friction_law.discontinuous)


def pack_ground(model, contacts) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(index (n, 4) int64, geometry (n, 8), normal params (n, N_PARAMS), friction params (n, N_PARAMS)) of Contact
    elements whose laws all have twins, as `_ground_contacts_py` / `_ground_forces_py` take them."""
    n = len(contacts)
    index = np.zeros((n, 4), dtype=np.int64)
    geometry = np.zeros((n, 9))
    normal_p = np.zeros((n, N_PARAMS))
    friction_p = np.zeros((n, N_PARAMS))
    for k, contact in enumerate(contacts):
        normal, friction = pack_normal(contact.normal_law), pack_friction(contact.friction_law)
        if normal is None or friction is None:
            raise ValueError(f"contact {contact.name!r} has a law without a compiled twin")
        frame = model.frame(contact.link)
        index[k] = frame.body, normal[0], friction[0], flags(contact)
        normal_p[k], friction_p[k] = normal[1], friction[1]
        geometry[k, :3] = frame.rotation @ contact.xyz + frame.translation   # centre in the body frame
        geometry[k, 3] = contact.radius
        geometry[k, 4:7] = contact.ground.n
        geometry[k, 7] = contact.ground.height
        geometry[k, 8] = contact.normal_law.point_depth
    return index, geometry, normal_p, friction_p


def discrete_rows(states, out: np.ndarray) -> np.ndarray:
    """The discrete part of the state rows (ACTIVE, IMPACT, RESTING, slip direction) of ContactStates, in place:
    what the forces depend on besides (x, ẋ) — the right-hand side's read-only view of the engine's state."""
    for k, state in enumerate(states):
        row = out[k]
        row[ACTIVE] = 1.0 if state.active else 0.0
        row[IMPACT] = state.impact_velocity
        row[RESTING] = 1.0 if state.resting else 0.0
        direction = state.slip_direction
        if direction is None:
            row[HAS_DIRECTION] = 0.0
        else:
            row[HAS_DIRECTION] = 1.0
            row[DIRECTION], row[DIRECTION + 1], row[DIRECTION + 2] = direction[0], direction[1], direction[2]
    return out


class ContactSampler:
    """`Contact.forces` + `Contact.power_split` of one Contact (laws with twins) at many tree states in one
    compiled call (`_contact_samples_py`): `sampler(state, xs, xds)` → (n, 4) rows (F_N, normal and friction
    dissipated power, δ), `state` the run's ContactState (read). None from `for_contact` without twins."""

    def __init__(self, model, contact, kernel) -> None:
        self.meta, self.body = pack(model)
        self.ancestry = ancestry(model)
        self.packed = pack_ground(model, [contact])
        self.state = np.zeros((1, STATE_WIDTH))
        self.kernel = kernel

    @classmethod
    def for_contact(cls, model, contact) -> ContactSampler | None:
        if not has_twins(contact):
            return None
        return cls(model, contact, contact_samples_kernel())

    def __call__(self, state: ContactState, xs: np.ndarray, xds: np.ndarray) -> np.ndarray:
        discrete_rows((state,), self.state)
        out = np.empty((xs.shape[0], 4))
        index, geometry, normal_p, friction_p = self.packed
        self.kernel(self.meta, self.body, self.ancestry, index, geometry, normal_p, friction_p, self.state,
                    np.ascontiguousarray(xs, dtype=float), np.ascontiguousarray(xds, dtype=float), 0, out)
        return out


class GroundContacts:
    """Packed constants and state rows of a list of Contact run copies (all with twins) for `_ground_contacts_py`.

    `step(x, xd, t, dt, tau)` adds their τ (n_tangent) and returns the number of events (replay them with
    `pull_event`); `kernel` is the compiled call (its uncompiled form with BIOBULLET_NUMBA=0)."""

    def __init__(self, model, contacts) -> None:
        meta, body = pack(model)
        self.meta, self.body = meta, body
        self.ancestry = ancestry(model)
        self.rows = ContactRows(*pack_ground(model, contacts), np.zeros((len(contacts), STATE_WIDTH)))
        self.state = self.rows.state
        self.kernel = ground_contacts_kernel()

    def step(self, x: np.ndarray, xd: np.ndarray, t: float, dt: float, tau: np.ndarray) -> int:
        return self.kernel(self.meta, self.body, self.ancestry, self.rows, x, xd, t, dt, tau)


__all__ = [
    "N_PARAMS",
    "STATE_WIDTH",
    "ContactLaws",
    "ContactRows",
    "ContactSampler",
    "GroundContacts",
    "contact_forces_by_laws",
    "contact_forces_kernel",
    "contact_samples_kernel",
    "contact_update_kernel",
    "discrete_rows",
    "builtin_row",
    "friction_coefficient",
    "friction_coefficient_kernel",
    "friction_coefficients",
    "ground_contacts_kernel",
    "ground_forces_kernel",
    "has_twins",
    "normal_force",
    "normal_force_kernel",
    "normal_forces",
    "point_lift",
    "pack_friction",
    "pack_ground",
    "pack_laws",
    "pack_normal",
    "pull_event",
    "pull_state",
    "state_row",
]
