"""What acts on the bridge's body outside its constrained solve, seen in the state PyBullet reports — and how the
joint functions and loops still hold (docs/bridge.md, "Using the bridge in your own loop").

The bridge computes its constraint torques in `apply()`, before the user's `stepSimulation()`. Anything else the
user does to the body — PyBullet motors (POSITION/VELOCITY_CONTROL constraints solved inside the step), PyBullet's
rigid contact, `applyExternalForce`, `changeDynamics` damping or friction, user constraints, `setGravity`, a changed
time step or sub-steps, `resetJointState` — happens where the solve cannot see it. PyBullet has no getter for most of
it (motor settings, external forces), so the bridge does not try to read the settings: it reads their *effect*.
After a clean step PyBullet's state is exactly the semi-implicit Euler step of the bridge's own prediction
(ẋ_{n+1} = ẋ_n + dt ẍ, x_{n+1} = x_n + dt ẋ_{n+1}; equal to round-off, docs/bridge.md); every `apply()` compares
(`_surprise_py`, one compiled call, ≈ 1 µs per step; at the start of the rows kernels' call where they follow,
`_clean_step_py`, which hand every step that is not clean back to `observe`):

* **positions jumped** (x_{n+1} ≠ x_n + dt ẋ_{n+1}): a reset (`resetJointState`, `resetJointStatesMultiDof`), or
  a changed time step / sub-steps. The dependent joints follow their inputs at once (projection below); a reset of
  a dependent joint itself is undone with one `CouplingWarning` naming it.
* **velocities differ from the prediction** (or, for constant rows, whose prediction the null-space kernel does not
  return, the rows are violated): a generalized force acted outside the solve during the step.
* **the state equals the last one bit for bit** although that apply() predicted a change or sent a torque: no
  stepSimulation() since — apply() called again, which then replaces the last one (`repeated`: `Bridge.apply` keeps
  the clock and sends the difference, as PyBullet adds TORQUE_CONTROL torques up until its step).

A model without rows has nothing to project: its bridge asks only for the runaway check (`check_runaway`, one
compiled call, which also tells a repeated apply(); on a floating base or spherical joints inside the state
conversion's call, `bridge.kernels._plain_read_py`, a moving body's step recorded by `clean`).

Feeding the read-back force (inverse dynamics of the observed step minus the torque sent) forward into the next solve
was tried and dropped: a PyBullet motor, contact or constraint reacts to the bridge's torques inside the step and the
two solves chase each other, and even force-like influences diverged (joint damping on light links, two apply() calls
per step) — measured, so projection it is.

After every disturbed step the state is **projected** onto the constraint manifold holding the independent
coordinates (`Model.joint_state(q, v, t)`: dependent positions and velocities recomputed from the inputs, the loops
closed by the model's own solver) and written back to PyBullet. Energy: the projection replaces the dependent
velocities by the ones the inputs imply; measured in docs/bridge.md (a disturbed step changes the kinetic energy
by O(residual)). When the residual after a step exceeds `PROMISE` (1e-6 rad or m) the bridge warns once per cause
(`CouplingWarning`: the joint, the cause, the remedy); beyond `RESIDUAL_DIVERGENCE` without a reset, or rates and
positions beyond plausibility, it raises `DivergenceError` naming the joint and the step.
"""
from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from biobullet.core import jit
from biobullet.bridge.connection import check_real_time
from biobullet.bridge.lifecycle import TOKEN_KEY, BridgeWarning, DivergenceError, RUNAWAY_RATE

#: the promise: every joint function and loop holds to this after every step (rad or m), or the bridge says why
PROMISE = 1.0e-6
#: a position jump beyond this × (1 + max|x|) (rad or m) that the step's velocities do not explain is a reset
JUMP_TOLERANCE = 1.0e-10
#: a step that moved no joint and no floating base's COM by more than this × (1 + max |x|) (m or rad) cannot show a
#: time step changed by less than JUMP_TOLERANCE / BLIND_STEP (0.1 %) in its positions (a body at rest, a ball
#: resting on its contact): the plan without rows then re-reads the client's time step (`check_runaway`, ≈ 1.5 µs)
BLIND_STEP = 1.0e-7
#: relative precision to which `OutsideWatch.step_length` must tell the length of a step read, and within which a
#: length it tells is taken for a known time step (the bridge's or the client's) exactly
STEP_MATCH = 1.0e-6
#: a velocity beyond this × (1 + max|ẋ|) (rad/s or m/s) away from the bridge's prediction: a force acted outside
#: the solve (a clean step matches to ≈ 1e-13)
SURPRISE_TOLERANCE = 1.0e-9
#: constant rows (no velocity prediction): a residual |Φ| or dt·|Φ̇| beyond this (rad or m) after a step (a clean
#: step leaves round-off: the step-end target is exact for constant rows)
LINEAR_TOLERANCE = 1.0e-10
#: a residual beyond this (rad or m) after DIVERGENCE_STEPS disturbed steps in a row (no reset), although each was
#: projected back: the simulation has left the model
RESIDUAL_DIVERGENCE = 1.0
DIVERGENCE_STEPS = 3
#: joint positions beyond this (rad or m) are taken as a runaway (a joint wound up ~1600 turns, or 10 km)
POSITION_LIMIT = 1.0e4
#: the residual of loops without the step-end correction after clean steps is measured at steps 1, 2, 4, … and then
#: every this many steps (`_clean_loop_step`): the O(dt³) residual of their target changes smoothly, and one
#: measurement costs ≈ 22 µs (a four-bar step is ≈ 15 µs): every 16th step put the loop models' step at 1.25–1.29×
#: the minimal loop (issue 23's bar: ≤ 1.25×), every 64th costs ≈ 0.35 µs a step
LOOP_CHECK_STEPS = 64
#: an exact rest: every rate so small that a step moves no position (dt |ẋ| ≤ this × (1 + max |x|), a few units
#: of round-off) — where a step can leave the state equal bit for bit, so the state cannot tell it from a repeated
#: apply() and the watch marks the step (`OutsideWatch.sent`)
REST_BITS = 4.0 * float(np.finfo(float).eps)
#: the nudge (× (1 + max |τ|), N or N·m, alternating sign) added at an exact rest to the torque the plain path sends
#: (`OutsideWatch.nudge`): a step then changes its rates (by ≈ dt × 1e-11 m/s on a 2 kg ball resting
#: on its contact) where a repeated apply() leaves them — far below every tolerance of the watch (SURPRISE_TOLERANCE)
NUDGE = 1.0e-12
#: a jump that fits k = 2 … SKIPPED_STEPS free steps to SKIP_FIT of its size is an action repeat, not a reset, for
#: the contacts (`OutsideWatch._reset`; the free motion's acceleration changes over the k steps: ≈ 1e-4 of the jump)
SKIPPED_STEPS = 16
SKIP_FIT = 1.0e-3
#: Newton steps for the rates a reset between apply() and stepSimulation() set (`OutsideWatch._reset_in_step`)
RESET_ITERATIONS = 8
#: what a DivergenceError soon after a jump of every joint off the rows names (`OutsideWatch._disturbed`)
WHOLE_RESET = ("a jump of every joint (a reset or restoreState of every joint between apply() and stepSimulation(), "
               "or several stepSimulation() per apply())")
#: the remedy of a reset between apply() and stepSimulation() (`OutsideWatch._reset_in_step`)
RESET_REMEDY = ("reset joints before apply() (or with bridge.reset(NAME=value, ...)), never between apply() and "
                "stepSimulation()")


class CouplingWarning(BridgeWarning):
    """A joint function or loop could not hold to PROMISE in a step, or a dependent joint was reset: the message
    names the joint, the cause and the remedy (issued once per cause and bridge)."""


class WatchedRows(NamedTuple):
    """What `_surprise_py` compares beyond the state: the first 1-DOF joint entry of x (jb, after a floating base
    and spherical joints) and of ẋ (vb), the entries of ẋ whose prediction is not checked (skip: 3, a floating
    base's linear velocity, see `OutsideWatch.skip`; else 0), the constant rows jac x − offset (m × n; none when
    m = 0) — and with a floating base, which has no constant rows, offset is its COM offset p_i (root-link frame;
    one array fewer to convert per call)."""
    jb: int
    vb: int
    skip: int
    jac: np.ndarray
    offset: np.ndarray


def _surprise_py(x, xd, prev_x, prev_v, xdd, has_xdd, dt, weight, watched, jump_tolerance):
    """Compare the state read (x, ẋ) with the last step (x_n, ẋ_n, its ẍ): returns (disturbed, jumped, max |ẋ|,
    max |x|, same, base; inf for a non-finite state; same: x and ẋ equal x_n and ẋ_n bit for bit — no step since).
    jumped: `_plain_check_py`'s position test (the 1-DOF joints and a floating base's COM), 1 — a reset, or a time
    step changed by the user —, 2 where no tested position moved enough to show a changed time step (blind), else
    0; disturbed: jumped (1), or
    ẋ beyond SURPRISE_TOLERANCE × (1 + max |ẋ|) from ẋ_n + dt ẍ (has_xdd; the entries after watched.skip), or
    else the constant rows of `watched` (`WatchedRows`) violated: |Φ| or dt |Φ̇| beyond LINEAR_TOLERANCE.
    base (has_xdd and a floating base, watched.offset its COM offset p_i): its COM's world velocity beyond
    SURPRISE_TOLERANCE × (1 + max |ẋ|) from v_n + dt a_n, a_n its world acceleration from ẍ — what PyBullet's step
    integrates exactly (to 1e-11 of dt |a| measured; read in the root frame it differs at first order in dt, hence
    not a disturbance of the rows): a force outside on the base alone, or a `setGravity`."""
    jac, offset, skip = watched.jac, watched.offset, watched.skip
    peak_v, peak_x, same, code = _PLAIN_CHECK(x, xd, prev_x, prev_v, watched.jb, watched.vb, dt, weight,
                                              jump_tolerance, offset if skip == 3 else offset[:0])
    if not peak_v < np.inf:   # a non-finite state
        return True, 0, np.inf, np.inf, False, False
    if code == 1:
        return True, 1, peak_v, peak_x, same, False
    if has_xdd:
        peak_checked = 0.0
        for i in range(skip, xd.shape[0]):
            peak_checked = max(peak_checked, abs(xd[i]))
        limit = SURPRISE_TOLERANCE * (1.0 + peak_checked)
        for i in range(skip, xd.shape[0]):
            if abs(xd[i] - prev_v[i] - dt * xdd[i]) > limit:
                return True, code, peak_v, peak_x, same, False
        base = False
        if skip == 3:   # (its own scale: every rate, the base's linear velocity included; scalars, no array)
            limit = SURPRISE_TOLERANCE * (1.0 + peak_v)
            now, before = _BASE_COM(x, xd, offset), _BASE_COM(prev_x, prev_v, offset)
            rate = _BASE_RATE(prev_x, prev_v, xdd, offset)
            for i in range(3):
                if abs(now[3 + i] - before[3 + i] - dt * rate[i]) > limit:
                    base = True
        return False, code, peak_v, peak_x, same, base
    for r in range(jac.shape[0]):
        phi = -offset[r]
        phi_dot = 0.0
        for c in range(jac.shape[1]):
            phi += jac[r, c] * x[c]
            phi_dot += jac[r, c] * xd[c]
        if abs(phi) > LINEAR_TOLERANCE or dt * abs(phi_dot) > LINEAR_TOLERANCE:
            return True, code, peak_v, peak_x, same, False
    return False, code, peak_v, peak_x, same, False


def _runaway_py(x, xd, prev_x, prev_v, jb):
    """(max |ẋ|, max |x| over the entries from jb on — the joints after a floating base's pose —, same: x and ẋ
    equal the last step's x_n, ẋ_n bit for bit); inf for a non-finite state. The watch's check of a model without
    rows (nothing to project, only a runaway to report, or a repeated apply())."""
    same = True
    peak_x = 0.0
    for i in range(x.shape[0]):
        a = abs(x[i])
        if not a <= 1e300:   # NaN or inf (NaN fails every comparison)
            return np.inf, np.inf, False
        if i >= jb and a > peak_x:
            peak_x = a
        if x[i] != prev_x[i]:
            same = False
    peak_v = 0.0
    for i in range(xd.shape[0]):
        a = abs(xd[i])
        if not a <= 1e300:
            return np.inf, np.inf, False
        if a > peak_v:
            peak_v = a
        if xd[i] != prev_v[i]:
            same = False
    return peak_v, peak_x, same


def _base_rotation_py(x):
    """The rotation matrix of a floating base's quaternion x y z w at x[3:7], row by row as 9 scalars (no array:
    the watch needs it twice or three times per step; `quaternion_to_matrix`'s formula, normalised first; a zero
    quaternion — the warm-up call of `direct_entry` — gives the identity)."""
    qx, qy, qz, qw = x[3], x[4], x[5], x[6]
    norm = qx * qx + qy * qy + qz * qz + qw * qw
    if norm == 0.0:
        return 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    s = np.sqrt(norm)
    qx, qy, qz, qw = qx / s, qy / s, qz / s, qw / s
    return (1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw),
            2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw),
            2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy))


_BASE_ROTATION = _base_rotation_py   # (bound to its compiled twin where `_base_com_py` compiles)


def _base_com_py(x, xd, offset):
    """A floating base's COM in the world (p = r + R p_i) and its world velocity (R (v + ω × p_i)) from our x, ẋ
    (root-frame position r, quaternion x y z w at x[3:7], root-frame v, ω) and the COM offset p_i (root-link frame):
    what PyBullet's step moves as p_{n+1} = p_n + h v_{n+1} (`conventions.PyBulletMap`). Six scalars (px, py, pz,
    vx, vy, vz): the kernels call it per step, and an array per call cost ≈ 0.5 µs of the floating base's check."""
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = _BASE_ROTATION(x)
    o0, o1, o2 = offset[0], offset[1], offset[2]
    u0 = xd[0] + xd[4] * o2 - xd[5] * o1   # v + ω × p_i
    u1 = xd[1] + xd[5] * o0 - xd[3] * o2
    u2 = xd[2] + xd[3] * o1 - xd[4] * o0
    return (x[0] + r00 * o0 + r01 * o1 + r02 * o2, x[1] + r10 * o0 + r11 * o1 + r12 * o2,
            x[2] + r20 * o0 + r21 * o1 + r22 * o2,
            r00 * u0 + r01 * u1 + r02 * u2, r10 * u0 + r11 * u1 + r12 * u2, r20 * u0 + r21 * u1 + r22 * u2)


def _base_rate_py(x, xd, xdd, offset):
    """A floating base's COM acceleration in the world, d/dt R (v + ω × p_i) = R (ω × (v + ω × p_i) + v̇ + ω̇ × p_i),
    from our x, ẋ, ẍ (root-frame v, ω and their rates) and the COM offset p_i (`_base_com_py`'s velocity's rate);
    three scalars."""
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = _BASE_ROTATION(x)
    o0, o1, o2 = offset[0], offset[1], offset[2]
    u0 = xd[0] + xd[4] * o2 - xd[5] * o1   # v + ω × p_i
    u1 = xd[1] + xd[5] * o0 - xd[3] * o2
    u2 = xd[2] + xd[3] * o1 - xd[4] * o0
    a0 = xd[4] * u2 - xd[5] * u1 + xdd[0] + xdd[4] * o2 - xdd[5] * o1
    a1 = xd[5] * u0 - xd[3] * u2 + xdd[1] + xdd[5] * o0 - xdd[3] * o2
    a2 = xd[3] * u1 - xd[4] * u0 + xdd[2] + xdd[3] * o1 - xdd[4] * o0
    return (r00 * a0 + r01 * a1 + r02 * a2, r10 * a0 + r11 * a1 + r12 * a2, r20 * a0 + r21 * a1 + r22 * a2)


def _plain_check_py(x, xd, prev_x, prev_v, jb, vb, dt, weight, jump_tolerance, offset):
    """`_runaway_py` (max |ẋ|, max |x|, same) and jumped (1; 2: blind — no tested position moved by more than
    BLIND_STEP × (1 + max |x|, |p|), so a changed time step cannot show; 0 otherwise): a 1-DOF joint's position
    beyond jump_tolerance × (1 + max |x|) from x_n + dt((1 − c) ẋ_n + c ẋ) (`_surprise_py`'s test), or a floating
    base's COM (offset: its p_i; empty without a floating base) beyond jump_tolerance × (1 + max |p|) from
    p_n + dt((1 − c) v_n + c v) — a reset, or a time step or sub-steps changed by the user (setTimeStep /
    setPhysicsEngineParameter), which the plan without rows must follow too (before, a model that is only a floating
    base — a ball, a box — never did)."""
    peak_v, peak_x, same = _RUNAWAY(x, xd, prev_x, prev_v, jb)
    if not peak_v < np.inf:
        return peak_v, peak_x, same, 0
    limit = jump_tolerance * (1.0 + peak_x)
    motion = 0.0   # the largest position change dt |ẋ| of the tested entries
    for i in range(x.shape[0] - jb):
        rate = (1.0 - weight) * prev_v[vb + i] + weight * xd[vb + i]
        if abs(x[jb + i] - prev_x[jb + i] - dt * rate) > limit:
            return peak_v, peak_x, same, 1
        motion = max(motion, dt * abs(rate))
    scale = 1.0 + peak_x
    if offset.shape[0] == 3:
        now, before = _BASE_COM(x, xd, offset), _BASE_COM(prev_x, prev_v, offset)
        scale = 1.0 + max(peak_x, abs(now[0]), abs(now[1]), abs(now[2]))
        limit = jump_tolerance * scale
        for i in range(3):
            rate = (1.0 - weight) * before[3 + i] + weight * now[3 + i]
            if abs(now[i] - before[i] - dt * rate) > limit:
                return peak_v, peak_x, same, 1
            motion = max(motion, dt * abs(rate))
    return peak_v, peak_x, same, 2 if motion <= BLIND_STEP * scale else 0


def plain_check_kernel(inline: bool = False):
    """The compiled `_plain_check_py` (compiled or loaded from the cache on first use; `inline`: the form inlined
    into its caller)."""
    return jit.compiled(_plain_check_py, inline=inline, bind={
        "_RUNAWAY": jit.compiled(_runaway_py, inline=inline),
        "_BASE_COM": _base_com_kernel()})


def _base_com_kernel():
    return jit.compiled(_base_com_py, bind={"_BASE_ROTATION": jit.compiled(_base_rotation_py)})


def surprise_kernel():
    """The compiled `_surprise_py` (compiled or loaded from the cache on first use), the position test inlined (a
    call of its separate kernel cost ≈ 0.2 µs of a ≈ 0.5 µs check)."""
    return jit.compiled(_surprise_py, bind={
        "_PLAIN_CHECK": plain_check_kernel(inline=True),
        "_BASE_COM": _base_com_kernel(),
        "_BASE_RATE": jit.compiled(_base_rate_py, bind={"_BASE_ROTATION": jit.compiled(_base_rotation_py)})})


def native_loops_cause(loops) -> tuple[str, str, str]:
    """(cause, remedy, key) of a step that left the rows on a bridge with native loops (`Bridge(native_loops=True)`):
    PyBullet's own POINT2POINT constraints close the loops inside stepSimulation, after the bridge's torques were
    computed, so the bridge's solve holds its rows without the loops' forces — a joint function of a joint the loop
    turns, or any row the loop's force reaches, misses by what that force does in the step (the 1e-6 promise holds
    only for loops held in the solve, native_loops=False)."""
    names = ", ".join(repr(name) for name in loops)
    return (f"PyBullet's own loop constraint (native_loops=True: {names}, POINT2POINT) acts inside stepSimulation, "
            "after the bridge's torques were computed: the bridge's solve holds its rows without the loop's forces, "
            "so a joint function of a joint the loop turns misses by what they do in the step (the 1e-6 promise "
            "covers loops held in the bridge's solve only)",
            "Bridge(model, native_loops=False) (the default: the loops are held in the solve with the other rows)",
            "native_loops")


def _clean_step_py(x, xd, prev_x, prev_v, prev_xdd, dt, weight, watched, jump_tolerance, peaks):
    """Whether the state read (x, ẋ) is a clean step after the last one (x_n, ẋ_n, its ẍ), as `OutsideWatch.observe`
    takes one with nothing to do: `_surprise_py` finds nothing — no jump, not blind, velocities as predicted, not
    the same state, a floating base's COM as stepped — and the state is finite and no runaway. peaks ← (max |ẋ|,
    max |x|). The rows kernels run it before their solve (`bridge.kernels`: the watch's check and the solve in one
    call from Python); False sends the step through `observe`."""
    disturbed, code, peak_v, peak_x, same, base = _SURPRISE(x, xd, prev_x, prev_v, prev_xdd, bool(True), dt, weight,
                                                            watched, jump_tolerance)
    peaks[0] = peak_v
    peaks[1] = peak_x
    return not (disturbed or same or base or code != 0) and peak_v <= RUNAWAY_RATE and peak_x <= POSITION_LIMIT


def clean_step_kernel():
    """The compiled `_clean_step_py` (compiled or loaded from the cache on first use)."""
    return jit.compiled(_clean_step_py, bind={"_SURPRISE": surprise_kernel()})


def watched_rows(bridge) -> WatchedRows:
    """The `WatchedRows` of a bridge: its constant rows (`Bridge.linear`; none on the rows kernels' paths) or a
    floating base's COM offset p_i."""
    model, linear = bridge.model, bridge.linear
    jac, offset = ((np.ascontiguousarray(linear[0], dtype=float), np.ascontiguousarray(linear[1], dtype=float))
                   if linear is not None else (np.zeros((0, model.n_config)), np.zeros(0)))
    if model.floating_base:   # (no constant rows there)
        offset = np.array(bridge.map.inertial_position, dtype=float)
    return WatchedRows(int(model.base_nq), int(model.base_nv), 3 if model.floating_base else 0, jac, offset)


def massless_cause(name: str) -> tuple[str, str, str]:
    """(cause, remedy, warning key) of a link given mass 0 by changeDynamics: what no step can hold, named once
    by whichever check sees it first (the watch, or the step-end Newton correction that cannot converge)."""
    return (f"link {name!r} was given mass 0 (changeDynamics), which zeroes its inertia in PyBullet: its joint "
            "carries no inertia, and no step has a defined acceleration for it",
            f"give link {name!r} a mass (changeDynamics(body, link, mass=...)) or remove the joint from the model "
            "file", "inertia:" + name)


class OutsideWatch:
    """The per-bridge record of the last step (state and the solve's ẍ; see the module docstring).
    `Bridge.apply` calls `observe` right after reading the state and `sent` after sending the torques."""

    def __init__(self, bridge, write_state) -> None:
        self.bridge = bridge
        self._write_state = write_state   # (x, ẋ) → PyBullet: the bridge's writer (its projections go back there)
        model = bridge.model
        self.rows = bridge.constraints.n
        #: loops the step-end correction does not hold (`Bridge.end_correction`: plug-in loop types, drift="baumgarte",
        #: spherical joints, a floating base's loop to the ground): their residual after a clean step is measured
        #: (`_clean_loop_step`)
        self.loops = bool(self.rows and model.description.elements_of("loop")) and not bridge.end_correction
        #: the bridge's native loop constraints (native_loops=True) and what PyBullet reports of each at construction: a
        #: removeConstraint of one (a user's cleanup of "every constraint") opens its loop, which no row of the
        #: bridge sees (`_native_loops_kept`, on the steps the loops' residual is checked)
        self.native = {name: tuple(bridge.pybullet.getConstraintInfo(cid, physicsClientId=bridge.client)[:5])
                       for name, cid in bridge.native_constraints.items()}
        #: a check on the clean steps 1, 2, 4, … and every LOOP_CHECK_STEPS-th (one test on the others)
        self.periodic = self.loops or bool(self.native)
        self.jb, self.vb = model.base_nq, model.base_nv
        #: a floating base: the velocity prediction ẋ_n + dt ẍ skips the base's linear velocity (the first 3 of ẋ;
        #: `_surprise_py` checks it in the world frame instead, where the step is exact, for a setGravity only).
        #: PyBullet steps the base COM's velocity in the world frame; read back in the root frame it differs from
        #: the prediction at first order in dt (frame rotation and COM-offset terms: 2e-8 m/s on the coupled arm at
        #: 1 ms, above SURPRISE_TOLERANCE), so every step would pass for a disturbed one and be projected. The base's
        #: angular velocity and every joint stay checked; an outside force that changes only the base's linear
        #: velocity leaves the joints' motion, and so the rows, as predicted.
        self.floating = bool(model.floating_base)
        self.skip = 3 if self.floating else 0
        # the last step, by reference: every apply() path reads a fresh state array and the solve's ẍ stays in
        # the bridge's work array until the next solve, which comes after the next observe()
        self.prev_x = np.zeros(model.n_config)
        self.prev_v = np.zeros(model.n_tangent)
        self.xdd: np.ndarray | None = None
        self.armed = False            # False until a step was sent (after construction and every reset)
        #: (x, ẋ) the bridge last wrote to PyBullet (`Bridge.reset_tree`), compared at the next apply() if no step
        #: was sent since (`_first_look`); None once compared
        self.written: tuple[np.ndarray, np.ndarray] | None = None
        #: max |θ| over the 1-DOF joints of the state checked in this apply() (rad or m; inf when unknown: not armed,
        #: or the state was projected) — the force stage's range check of the stops (`ForceStage.quiet_below`)
        self.peak = np.inf
        #: True when this apply() found the state of the last one unchanged (no stepSimulation since): PyBullet adds
        #: up TORQUE_CONTROL torques until its next step, so `Bridge.apply` then sends only the difference
        self.repeated = False
        #: max |ẋ| of the state checked in this apply() (inf when unknown) and whether it is at an exact rest
        #: (REST_BITS) or in a recognised frame skip: the bridge then nudges the torque it sends (`nudge`)
        self.peak_v = np.inf
        self.resting = False
        #: how the last step at an exact rest was marked (`sent`): "nudge" — its torque sent with a NUDGE; "" — not
        #: marked (`_step_moves` tells a repeat by the mark)
        self.marked = ""
        self._nudged = False
        self._nudge_sign = 1.0
        # (the steps at an exact rest, and of a recognised frame skip, are marked by a nudge, `nudge`, on every path
        # but the muscles'. A force-torque sensor as the mark was dropped: switched on, it cannot be told from a
        # user's and switched off again (PyBullet has no getter), and it slowed every later stepSimulation() by up to
        # 20 %, humanoid.urdf 38 → 47 µs; PyBullet has no step counter to read)
        #: True when this apply() found the state jumped since the last step (a reset or restoreState between two
        #: apply() calls; not a changed time step): the contacts start again from it (`BridgeContacts.after_jump`)
        self.jumped = False
        self.disturbed_steps = 0      # steps in which something outside the solve acted (or a reset)
        self._constraint = (-1, -1)   # (the user's PyBullet constraint `_cause` last named, its step; −1: none)
        self._woke = -2               # step_index of the last repeated apply() (`_wake`)
        self.projections = 0          # projections onto the constraint manifold written back to PyBullet
        self.max_residual = 0.0       # largest |Φ| seen after a step (rad or m), before its projection
        self.step_index = 0
        self.warned: set[str] = set()
        #: (step index, message) of the last reset between apply() and stepSimulation() (`_reset_in_step`), named by
        #: a DivergenceError within DIVERGENCE_STEPS after it (light links held by the constraint torques, as the
        #: shoulder's 1e-6 kg, run away in such a step)
        self.reset_in_step: tuple[int, str] = (-DIVERGENCE_STEPS - 1, "")
        self.large_in_a_row = 0       # disturbed steps in a row with a residual beyond RESIDUAL_DIVERGENCE
        from biobullet.bridge.bridge import substep_weight
        #: c = (k + 1)/(2k) with k sub-steps: x_end = x + dt((1 − c) ẋ + c ẋ_end) (`bridge.substep_weight`)
        self.weight = substep_weight(bridge.substeps)
        self._dependent = np.setdiff1d(np.arange(model.n_joints), np.asarray(model.coordinate_map.independent, int))
        # constant rows (the null-space paths return no ẍ): the kernel checks them instead
        self._watched = watched_rows(bridge)
        #: a floating base's COM offset p_i (root-link frame; empty without one): the position tests' base test and
        #: `_surprise_py`'s base-velocity test
        self._offset = self._watched.offset if self.floating else np.zeros(0)
        self._check = jit.direct_entry(surprise_kernel(), self.prev_x, self.prev_v, self.prev_x, self.prev_v,
                                       self.prev_v, False, 1e-3, 1.0, self._watched, JUMP_TOLERANCE)
        self._runaway = jit.direct_entry(plain_check_kernel(), self.prev_x, self.prev_v, self.prev_x, self.prev_v,
                                         self.jb, self.vb, 1e-3, 1.0, JUMP_TOLERANCE, self._offset)

    def check_runaway(self, x: np.ndarray, xd: np.ndarray) -> bool:
        """`observe` of a model without rows: DivergenceError on a non-finite or runaway state (one compiled call);
        returns `repeated` (the state unchanged bit for bit, a torque sent, and a step with it would have moved the
        state: `_step_moves`). A step too small to show a changed time step (blind) reads the client's.
        A position jump (a reset, or a time step changed by the user) re-reads the client's parameters
        (`Bridge.engine_parameters`): before, a setTimeStep was never followed on this plan — the clock ran on the
        old dt (a ball's contact onset logged at 0.2015 s where PyBullet was at 0.303 s after doubling dt)."""
        bridge = self.bridge
        jump_tolerance = JUMP_TOLERANCE
        if self.weight != 1.0:   # sub-steps: as in `observe`
            jump_tolerance += 0.5 * bridge.dt * float(np.abs(xd - self.prev_v).max(initial=0.0))
        peak_v, peak_x, same, jumped = self._runaway(x, xd, self.prev_x, self.prev_v, self.jb, self.vb, bridge.dt,
                                                     self.weight, jump_tolerance, self._offset)
        self.peak, self.peak_v = peak_x, peak_v
        self.resting = bridge.dt * peak_v <= REST_BITS * (1.0 + peak_x)
        self.jumped = False
        if not (jumped or same) and peak_v <= RUNAWAY_RATE and peak_x <= POSITION_LIMIT:
            self.repeated = False   # (a moving body's step: one test)
            return False
        if peak_v > RUNAWAY_RATE or peak_x > POSITION_LIMIT:
            self._diverged(x, xd, peak_v, peak_x)
        if jumped == 1 and not same:
            self._jumped_without_rows(x, xd)
        self.repeated = same and self._step_moves(x, xd)
        if self.repeated:
            self.step_index -= 1
            self._wake()
        elif jumped == 2:
            self._blind_step()
        return self.repeated

    def _jumped_without_rows(self, x: np.ndarray, xd: np.ndarray) -> None:
        """A position jump on a model without rows (nothing to project): a time step or sub-steps changed by the
        user (the client's parameters re-read, `Bridge.engine_parameters`), several stepSimulation() per apply()
        (named), or a reset (a stop deep beyond its limit named; `jumped` for the contacts, `_reset`)."""
        bridge = self.bridge
        length = self.step_length(x, xd)
        changed = bridge.engine_parameters(length)
        steps, free = 0, None
        if not changed and np.count_nonzero(bridge.last_torque):   # (nothing sent: a repeat costs nothing but time)
            steps = self._skipped_without_rows(x, xd)
        if not changed and length is None and steps < 2:
            steps = free = self._free_steps(x, xd)
            if steps >= 2:
                self._name_skipped(steps, "its force elements and contacts did not act there")
        if steps >= 2:   # PyBullet's clock ran them (before, one per apply(): a dropped ball 0.3 s where it was 0.6 s)
            bridge.time += (steps - 1) * bridge.dt
            # and the coming step is nudged (`nudge`): k steps can end on the state they started from bit for bit (a
            # ball settled on its contact, the contact in one step of two), which reads as a repeated apply() — a
            # ball on a prismatic joint was taken so twice in 0.6 s (the clock 4 ms behind PyBullet's, the contact
            # force missing from two steps); a nudged step cannot end there
            self.resting = True
        # (a step of another length is no jump: a setTimeStep; nor are several steps: an action repeat)
        # (`_reset`'s test, from the free-motion fit above where it ran: PyBullet's M and h once per jump)
        self.jumped = length is None and not changed and (self._reset(x, xd) if free is None else
                                                           bridge.contacts is not None and not free)
        self._stops_after_reset(x)

    def _blind_step(self) -> None:
        """A step whose tested positions (1-DOF joints, a floating base's COM) moved too little to show a changed
        time step (`_plain_check_py`'s blind): the client's time step is read (≈ 1 µs, only then; before, a ball
        resting on its contact, a loop model at rest or a body of spherical joints alone kept the old dt for good);
        a change found so is the coming step's (the last apply() read the old one), and the step read counts at
        the bridge's dt. Its gravity too: a body at rest on its contact, or held, shows a setGravity nowhere else
        (before, bridge.gravity kept the old one)."""
        bridge = self.bridge
        engine = bridge.pybullet.getPhysicsEngineParameters(physicsClientId=bridge.client)
        if engine["fixedTimeStep"] != bridge.dt or max(1, int(engine["numSubSteps"])) != bridge.substeps \
                or tuple(float(engine[f"gravityAcceleration{a}"]) for a in "XYZ") != bridge.gravity:
            bridge.engine_parameters(bridge.dt)

    def _step_moves(self, x: np.ndarray, xd: np.ndarray) -> bool:
        """Whether a step from (x, ẋ), equal bit for bit to the last apply()'s state, would have changed the state —
        so that the same state read again is a repeated apply(): its positions by dt ẋ beyond round-off; else, at an
        exact rest, by the mark the last apply() left (`sent`): its torque carried a nudge; else (with a torque
        sent or not) its rates by dt ẍ beyond SURPRISE_TOLERANCE × (1 + max |ẋ|), ẍ = M⁻¹(τ_n − h) on PyBullet's M and
        h (before, not asked with nothing sent: a second apply() at a start at rest under gravity was a step). Before
        the marks a step at an exact rest, where forces balance to the last bit, could not be told from a
        repeat and was taken for a step: a repeated apply() advanced the clock again (arm7 at rest without gravity,
        apply() twice per step: 5.0 s where PyBullet was at 3.0 s) and sent the step's forces twice (a ball resting
        on its contact 14 times in 2000 steps). The muscle path's steps carry no mark (see `nudge`): at an exact rest
        there a repeated apply() is still taken for a step; with nothing sent that is named once (`BridgeWarning`).
        Called only when the state is unchanged."""
        dt = self.bridge.dt
        if dt * float(np.abs(xd).max(initial=0.0)) > REST_BITS * (1.0 + float(np.abs(x).max())):
            return True
        sent = bool(np.count_nonzero(self.bridge.last_torque))
        if self.marked == "nudge":
            return True
        xdd = self._acceleration(x, xd)
        if dt * float(np.abs(xdd).max(initial=0.0)) > SURPRISE_TOLERANCE * (1.0 + float(np.abs(xd).max())):
            return True
        if not sent:
            self._unmarked_rest()
        return False

    def _unmarked_rest(self) -> None:
        """One BridgeWarning: a state read equal bit for bit to the last one at an exact rest, nothing sent and no
        mark that tells a step from a repeated apply() (`_step_moves`): taken for a step."""
        if "rest" in self.warned:
            return
        self.warned.add("rest")
        bridge = self.bridge
        warnings.warn(f"{bridge.model.file}: PyBullet body {bridge.body} is at an exact rest with nothing acting at "
                      f"t = {bridge.time:.6g} s: its state cannot tell a stepSimulation() from a second apply() "
                      "before it, and the bridge counts a step (bridge.time advances by dt): right for one apply() "
                      "per stepSimulation(), one dt ahead for every second apply() before a step. Remedy: call "
                      "apply() once per stepSimulation() (or use bridge.step())", BridgeWarning, stacklevel=5)

    def nudge(self, torque: np.ndarray) -> None:
        """Add this step's NUDGE to `torque` (in place; a new array the caller sends) at an exact rest or in a
        recognised frame skip (`resting`, `marked`): what marks the step for the next apply() (every path but the
        muscles'; before, a pendulum hanging straight down with nothing sent, and the paths with rows, were not
        marked: a repeated apply() there was taken for a step)."""
        if not self.repeated:   # (a repeated apply() replaces the last one: its step keeps that sign)
            self._nudge_sign = -self._nudge_sign
        torque[0] += self._nudge_sign * NUDGE * (1.0 + float(np.abs(torque).max()))
        self._nudged = True

    def _stops_after_reset(self, x: np.ndarray) -> None:
        """A jump (a resetJointState of the user's) deep beyond a URDF `<limit>` or a `<joint_stop>`: named as
        `Bridge.reset` names it (`stability.check_stop_penetration`), before the run diverges — the humanoid's
        spine_stretch reset 0.22 m beyond its limit ran away within 6 steps at 240 Hz, blamed on "a smaller dt,
        weaker gains, or a force outside the bridge"."""
        from biobullet.bridge.stability import check_stop_penetration
        check_stop_penetration(self.bridge.model, np.ascontiguousarray(x[self.bridge.independent_x]), self.bridge.dt)

    def _skipped_without_rows(self, x: np.ndarray, xd: np.ndarray) -> int:
        """Several stepSimulation() per apply() (an action repeat) on the plan without rows: its force elements and
        contacts acted in the first step alone (springs every other step: the sprung double pendulum of
        test_unseen15 0.1 rad and more off the engine's after 0.5 s, silently). Named as on the rows' path, from the
        first step's ẍ = M⁻¹(τ − h) (PyBullet's M and h, on such a jump only); one joint's jump fits any number of
        steps (a reset), so at least two joints must have moved as k steps would."""
        moved = self._moved(x, xd)
        if np.count_nonzero(moved) < 2:
            return 0
        self.xdd = self._acceleration(self.prev_x, self.prev_v)   # (until the next `sent`)
        steps = self._skipped_steps(x, xd, moved)
        if steps >= 2:
            self._name_skipped(steps, "its force elements and contacts did not act there")
        return steps

    def disarm(self) -> None:
        """Forget the last step (after a reset by the bridge: nothing to compare with); the nudges start again with
        the same sign (a run after a reset repeats the run before it bit for bit)."""
        self.armed = self.jumped = self.resting = False
        self._nudge_sign = 1.0
        self.peak = np.inf

    # ------------------------------------------------------------------ per step
    @property
    def kernel_checks(self) -> bool:
        """Whether this apply()'s state check may run inside the rows kernel before its solve (`_clean_step_py`,
        then `clean`): armed (a step was sent since the last reset), no sub-steps (the jump tolerance is
        JUMP_TOLERANCE) and no loops whose clean steps `observe` measures."""
        return self.armed and self.weight == 1.0 and not self.loops

    def clean(self, peaks: np.ndarray) -> bool:
        """`observe` of a state the rows kernel found a clean step (`_clean_step_py`; peaks: its max |ẋ|, max |x|):
        the record of this apply(), nothing else to do. Returns `resting` (the caller then nudges, `nudge`)."""
        self.repeated = self.jumped = False
        self.peak_v, self.peak = peak_v, peak_x = peaks.tolist()
        self.resting = resting = self.bridge.dt * peak_v <= REST_BITS * (1.0 + peak_x)
        return resting

    def sent(self, x, xd, xdd=None) -> None:
        """Record the step the bridge just sent: its state and, when the solve gave one, ẍ (references); mark a
        step at an exact rest (`_mark`)."""
        self.prev_x, self.prev_v, self.xdd = x, xd, xdd
        self.step_index += 1
        if self.resting or self.marked or self._nudged or not self.armed:   # (one test on a moving body's step)
            self._mark(x, xd)
        self.armed = True

    def _mark(self, x, xd) -> None:
        """Mark the step just sent when it starts at an exact rest (`_step_moves` reads the mark): the nudge
        the bridge added (`nudge`)."""
        self.marked, self._nudged = "nudge" if self._nudged else "", False

    def observe(self, x: np.ndarray, xd: np.ndarray) -> bool:
        """Check the state read at the start of apply() against the last step; x and ẋ are updated in place when
        they are projected back onto the rows. Returns True for a new step whose (x, ẋ) it left as read (False:
        not armed — the first look may move them —, disturbed, or no step since the last apply())."""
        self.repeated = self.jumped = self.resting = False
        if not self.armed:
            self.peak = np.inf
            if self.written is not None:
                self._first_look(x, xd)
            return False
        bridge = self.bridge
        xdd = self.xdd
        jump_tolerance = JUMP_TOLERANCE
        if self.weight != 1.0:   # sub-steps: ẍ is not constant over them; x_end is known to dt·|Δẋ| only
            jump_tolerance += 0.5 * bridge.dt * float(np.abs(xd - self.prev_v).max())
        # (a floating base's linear velocity is not predicted, `skip`; its size still counts)
        disturbed, code, peak_v, peak_x, same, base = self._check(
            x, xd, self.prev_x, self.prev_v, self.prev_v if xdd is None else xdd, xdd is not None, bridge.dt,
            self.weight, self._watched, jump_tolerance)
        jumped = code == 1
        if base and not same:   # a floating base's COM off its step: a setGravity? (else a force on the base alone)
            self._follow_gravity()
        self.peak, self.peak_v = peak_x, peak_v
        self.resting = bridge.dt * peak_v <= REST_BITS * (1.0 + peak_x)
        runaway = (peak_v, peak_x) if peak_v > RUNAWAY_RATE or peak_x > POSITION_LIMIT else None
        if runaway and not (jumped and self.rows):
            # (a reset between apply() and stepSimulation() can run light links away in that step: `_disturbed`
            # puts such a step back, or raises)
            self._diverged(x, xd, peak_v, peak_x)
        if same and (disturbed or self._step_moves(x, xd)):
            # no stepSimulation since the last apply() (apply() called again): nothing happened, but PyBullet still
            # holds that apply()'s torques (it adds them up until its step). (A real step leaves the state equal bit
            # for bit where it moves nothing: no torque sent, or the torque sent balancing the rest — a resting
            # contact — `_step_moves`: a step then.)
            self.repeated = True
            self.step_index -= 1
            self._wake()
            return False
        if disturbed and self.rows:   # without joint functions or loops there is nothing to hold
            self.peak, self.resting = np.inf, False   # the projection moves x in place
            self._disturbed(x, xd, jumped, runaway)
            return False
        if jumped:   # (before, a time step changed by the user was never followed here without rows; a floating
            self._jumped_without_rows(x, xd)   # base's COM jump is a code 1 too: the contacts see it, `jumped`)
        elif code == 2:   # blind (before, nor a body at rest, or whose only moving positions are not tested)
            self._blind_step()
        if self.periodic and (self.step_index % LOOP_CHECK_STEPS == 0 or self.step_index & (self.step_index - 1) == 0):
            if self.loops and "loop_step" not in self.warned:
                self._clean_loop_step(x)
            if self.native and "native_removed" not in self.warned:
                self._native_loops_kept()
        return True

    def _wake(self) -> None:
        """Wake the body and keep it from sleeping again (one PyBullet call, on a repeated apply() only). A body the
        user let sleep (changeDynamics(activationState=ACTIVATION_STATE_ENABLE_SLEEPING); the bridge disables
        sleeping at construction, `connection.prepare_body`) is not stepped while asleep, and PyBullet has no getter
        for that: its state then reads equal bit for bit after a step that should have moved it — what a repeated
        apply() looks like. Before, it stayed asleep under every later torque (the coupled chain at rest, then 3 N·m
        on the shoulder for 1 s: it never moved), silently; now the step after is its first step awake."""
        p = self.bridge.pybullet
        self._woke = self.step_index
        p.changeDynamics(self.bridge.body, -1, activationState=p.ACTIVATION_STATE_WAKE_UP
                         | p.ACTIVATION_STATE_DISABLE_SLEEPING, physicsClientId=self.bridge.client)

    def _follow_gravity(self) -> None:
        """A floating base's COM velocity left the step PyBullet takes from the last one (`_surprise_py`'s base test)
        while its joints did not: the client's gravity is read, and a change followed (`Bridge.engine_parameters`;
        a uniform gravity moves no joint of a body in flight, so no other check of the watch sees it: bridge.gravity
        stayed the old one for good). Else a force acted on the base alone, which leaves the rows as they were."""
        bridge = self.bridge
        engine = bridge.pybullet.getPhysicsEngineParameters(physicsClientId=bridge.client)
        if tuple(float(engine[f"gravityAcceleration{a}"]) for a in "XYZ") != bridge.gravity:
            bridge.engine_parameters(bridge.dt)   # (the step read ran at the bridge's dt: its joints showed no other)

    def _reset(self, x: np.ndarray, xd: np.ndarray) -> bool:
        """Whether a jump of the state read is a reset or restoreState for the contacts (`jumped`): True unless the
        bridge has no contacts (asked only then), or the jump is k = 2 … SKIPPED_STEPS steps of dt — several
        stepSimulation() per apply() (an action repeat), in which a contact episode goes on: PyBullet clears the
        bridge's torques after the first, so the later steps are free motion, ẍ_f = M⁻¹(−h) (a body without joints:
        its COM falls at the client's gravity), and semi-implicit Euler's positions end at
        Δx = dt (k ẋ − dt ẍ_f k (k − 1)/2) from the last rate ẋ (within SKIP_FIT of |Δx|)."""
        return self.bridge.contacts is not None and not self._free_steps(x, xd)

    def _free_steps(self, x: np.ndarray, xd: np.ndarray) -> int:
        """k = 2 … SKIPPED_STEPS when the jump of the state read fits k steps of dt whose later ones were free motion
        (`_reset`'s test, to SKIP_FIT of the jump), else 0 — also 0 for a fixed body without joints. On a jump only
        (PyBullet's M and h where there are joints)."""
        bridge = self.bridge
        jb, vb, dt = self.jb, self.vb, bridge.dt
        if x.shape[0] > jb:
            mass, bias = bridge.tree_mass_and_bias(x, xd)
            free = np.linalg.solve(mass, -bias)[vb:]
            step, rate = x[jb:] - self.prev_x[jb:], xd[vb:]
        elif self.floating:
            now = np.array(_base_com_py(x, xd, self._offset))
            before = np.array(_base_com_py(self.prev_x, self.prev_v, self._offset))
            step, rate, free = now[:3] - before[:3], now[3:], np.asarray(bridge.gravity, dtype=float)
        else:
            return 0
        limit = SKIP_FIT * float(np.abs(step).max(initial=0.0)) + JUMP_TOLERANCE
        return next((k for k in range(2, SKIPPED_STEPS + 1)
                     if float(np.abs(step - dt * (k * rate - 0.5 * dt * free * k * (k - 1))).max()) <= limit), 0)

    def _first_look(self, x: np.ndarray, xd: np.ndarray) -> None:
        """The first apply() after the bridge wrote a state (construction, `bridge.reset`): what changed since is the
        user's — a resetJointState of the starting pose before the loop, a settling stepSimulation() — and the
        dependent joints follow their inputs, as after a reset in the loop (they were stepped off the rows, and the
        step-end target pulled them back in one step: 0.36 rad on the coupled chain, a runaway on the shoulder)."""
        before, before_rates = self.written
        self.written = None
        # (a quaternion comes back from PyBullet as written to round-off, not bit for bit: 4e-19 on a spherical
        # joint, which a projection at every reset would answer with ≈ 50 µs)
        moved = np.abs(x - before).max(initial=0.0) > JUMP_TOLERANCE * (1.0 + np.abs(x).max(initial=0.0))
        sped = np.abs(xd - before_rates).max(initial=0.0) > SURPRISE_TOLERANCE * (1.0 + np.abs(xd).max(initial=0.0))
        if not self.rows or not (moved or sped):
            return
        self._dependent_reset(x, np.abs(x[self.jb:] - before[self.jb:]) > JUMP_TOLERANCE * (1.0 + np.abs(x).max()),
                              before, self._residual(x), first=True)
        self._project(x, xd, reset=True)

    def _clean_loop_step(self, x: np.ndarray) -> None:
        """A step nothing disturbed, on a model with loops the step-end correction does not hold (the first steps
        at powers of two, then every LOOP_CHECK_STEPS-th, until it warned): their target is Taylor's (second order,
        no Newton: `Bridge._end_correction`), so its O(dt³) residual is measured here and named once beyond PROMISE
        (the bridge does not project after a clean step)."""
        residual = self._residual(x)
        if not len(residual):
            return
        worst = int(np.argmax(np.abs(residual)))
        size = float(abs(residual[worst]))
        self.max_residual = max(self.max_residual, size)
        if size > PROMISE:
            self.warn("loop_step", f"constraint {self.bridge.constraints.names[worst]!r} was off by {size:.3g} rad "
                                   f"or m after step {self.step_index} (t = {self.bridge.time:.6g} s) with nothing "
                                   "acting outside the solve: the loops' step-end target is second order in dt, "
                                   f"too coarse at this speed for dt = {self.bridge.dt:g} s",
                      "a smaller time step (Bridge(model, dt=...) or bridge.set_time_step(dt)); the residual "
                      "scales with dt³")

    def _native_loops_kept(self) -> None:
        """Name once a native loop whose PyBullet constraint is gone or is another one now (a removeConstraint of
        it — a cleanup of every constraint —, its id reused by a later createConstraint): the loop is open, and no
        row of the bridge holds it (before, silently: the knee four-bar 3.4e-2 m open within 0.3 s at 1 ms)."""
        bridge = self.bridge
        p, c = bridge.pybullet, bridge.client
        for name, cid in bridge.native_constraints.items():
            try:
                info = tuple(p.getConstraintInfo(cid, physicsClientId=c)[:5])
            except p.error:
                info = None
            if info != self.native[name]:   # (bodies, links and type of the bridge's own constraint)
                self.warn("native_removed", f"PyBullet constraint {cid} of native loop {name!r} (native_loops=True) "
                                            "was removed (removeConstraint): the loop is open, and the bridge's "
                                            "rows do not hold it",
                          "remove only your own constraints (bridge.native_constraints are the bridge's), or make "
                          "a new Bridge; Bridge(model, native_loops=False) holds the loops in the bridge's solve")
                return

    # ------------------------------------------------------------------ a disturbed step
    def _disturbed(self, x, xd, jumped: bool, runaway: tuple[float, float] | None = None) -> None:
        bridge, model = self.bridge, self.bridge.model
        self.disturbed_steps += 1
        check_real_time(bridge.client)   # a client that steps itself: nothing to hold (ModelError)
        # follows setTimeStep / sub-steps / setGravity; a jump may be a step of another length
        changed = bridge.engine_parameters(self.step_length(x, xd) if jumped else None)
        self.jumped = (self.jumped or bool(jumped)) and not changed and self._reset(x, xd)
        residual = self._residual(x)
        worst = int(np.argmax(np.abs(residual))) if len(residual) else 0
        size = float(abs(residual[worst])) if len(residual) else 0.0
        # (a jump that leaves the rows holding is no frame skip, whatever it looks like: a restoreState, a reset of
        # every joint onto the rows — consistent states pass the constant rows' test of two steps)
        moved = self._moved(x, xd) if jumped and not changed else None
        stepped = self._reset_in_step(x, xd, moved) if moved is not None else None
        # every joint jumped: nothing left to tell a reset before apply() from one between (the shoulder's light
        # links run away in such a step: the DivergenceError names the reset, not "a force outside the bridge")
        whole = moved is not None and stepped is None and bool(moved.all())
        if runaway and stepped is None:
            if whole:   # (a runaway state fits the frame-skip test of constant rows loosely: both are named)
                self.reset_in_step = (self.step_index, WHOLE_RESET)
            self._diverged(x, xd, *runaway)
        reset_in_step = [] if stepped is None else [model.joint_names[k] for k in np.flatnonzero(moved)]
        skipped = (self._skipped_steps(x, xd, moved) if moved is not None and size > PROMISE and not reset_in_step
                   else 0)
        if whole and size > PROMISE and not skipped:
            self.reset_in_step = (self.step_index, WHOLE_RESET)
        if reset_in_step:
            if size > PROMISE:
                self.warn("reset_in_step", self._reset_in_step_message(reset_in_step)
                          + f", so constraint {bridge.constraints.names[worst]!r} was off by {size:.3g} rad or m "
                            "after it; the bridge puts the state where a reset before apply() would have put it "
                            "(the other joints as the step predicted, the dependent joints following the inputs as "
                            "reset)", RESET_REMEDY)
            self._undo_step(x, xd, moved, stepped)
            self.reset_in_step = (self.step_index, self._reset_in_step_message(reset_in_step))
        elif skipped:
            bridge.time += (skipped - 1) * bridge.dt   # PyBullet's clock ran the skipped steps: the rows' t follows
            # (before, the clock counted one step per apply(): a time-dependent row held at a time PyBullet had left)
            self._name_skipped(skipped, "its joint functions and loops were not enforced there; the bridge puts "
                                        "the state back onto them")
        if moved is not None and not reset_in_step:   # a reset: of dependent joints alone?
            self._dependent_reset(x, moved, self.prev_x, residual[:0] if skipped else residual)
        if self.rows:
            self.max_residual = max(self.max_residual, 0.0 if jumped else size)
            broken = changed or not jumped   # a reset's jump is no broken promise
            self.large_in_a_row = self.large_in_a_row + 1 if broken and size > RESIDUAL_DIVERGENCE else 0
            if size > PROMISE and broken:
                row = bridge.constraints.names[worst]
                if self.large_in_a_row >= DIVERGENCE_STEPS:
                    raise DivergenceError(f"{model.file}: constraint {row!r} is off by {size:.3g} rad or m after "
                                          f"step {self.step_index} (t = {bridge.time:.6g} s), the "
                                          f"{DIVERGENCE_STEPS}th such step in a row — {self._cause()[0]}; the "
                                          "simulation has left the model (use a smaller dt, weaker gains or "
                                          "bridge.set_motor inside the solve)")
                if bridge.massless_links:   # (a change no step can follow: named as what it is, once)
                    cause, remedy, key = self._cause()
                elif changed:
                    cause, remedy, key = (f"the client's {changed} in the middle of the run (setTimeStep / "
                                          "setPhysicsEngineParameter / setGravity / changeDynamics); the bridge "
                                          "follows it from now on",
                                          "make such changes through bridge.set_time_step(dt, substeps), or before "
                                          "the bridge is made; change masses and inertias before apply()",
                                          "inertia" if changed.startswith("mass") else "engine")
                else:
                    cause, remedy, key = self._cause()
                self.warn(key, f"constraint {row!r} was off by {size:.3g} rad or m after step {self.step_index} "
                               f"(t = {bridge.time:.6g} s): {cause}; the bridge projects the state back onto the "
                               "constraint after every such step", remedy)
            self._project(x, xd, reset=jumped and not changed, moved=bool(reset_in_step))
            if jumped and not changed and not skipped:
                self._stops_after_reset(x)

    def _name_skipped(self, steps: int, what: str) -> None:
        """One warning: stepSimulation() ran `steps` times since the last apply(); `what` it cost. Where other
        bridges share the client, the remedy says how to step them together: `bridge.step()` of each steps the whole
        client (two bridges each calling step() were told to "use bridge.step()", which they did)."""
        if "skipped" in self.warned:
            return
        p, c, body = self.bridge.pybullet, self.bridge.client, self.bridge.body
        others = [b for b in (p.getBodyUniqueId(i, physicsClientId=c) for i in range(p.getNumBodies(physicsClientId=c)))
                  if b != body and p.getUserDataId(b, TOKEN_KEY, physicsClientId=c) >= 0]
        remedy = ("call bridge.apply() before every stepSimulation() (or use bridge.step())" if not others else
                  f"other bridges run bodies {others} of this client, and each bridge.step() steps the whole client: "
                  "call apply() of every bridge, then stepSimulation() once")
        self.warn("skipped", f"stepSimulation() ran {steps} times since the last apply() (t = {self.bridge.time:.6g} "
                             "s): the steps after the first had none of the bridge's torques (PyBullet clears them "
                             f"after every step), so {what}", remedy)

    def _dependent_reset(self, x: np.ndarray, moved: np.ndarray, before: np.ndarray, residual: np.ndarray,
                         first: bool = False) -> None:
        """One warning when, of the 1-DOF joints that `moved` from the state `before`, only dependent ones did (a
        resetJointState of a joint the bridge puts back where its inputs place it) — or dependent joints and inputs
        did and left the rows (`residual` at x) beyond PROMISE: dependent joints set off their functions with their
        inputs, or a restoreState / reset of every joint between apply() and stepSimulation() (no joint left that
        the step predicted, so `_reset_in_step` cannot tell it from a reset before apply()). Before, the second case
        was put back silently: restoreState between apply() and the step left that step 6.8e-5 rad off the coupled
        chain, 8.3e-5 m off the four-bar and 4.0e-3 off the prosthesis at 240 Hz / 10 kHz, unnamed."""
        bridge, model = self.bridge, self.bridge.model
        names = [model.joint_names[k] for k in self._dependent if moved[k]]
        inputs_moved = bool(np.any(np.delete(moved, self._dependent))) if len(self._dependent) else True
        size = float(np.abs(residual).max(initial=0.0))
        if names and inputs_moved and size > PROMISE:
            row = bridge.constraints.names[int(np.argmax(np.abs(residual)))]
            self.warn("reset_off_rows",
                      f"joints {', '.join(names[:3])}{' …' if len(names) > 3 else ''} (dependent) and their inputs "
                      f"jumped together at t = {bridge.time:.6g} s to a state {size:.3g} rad or m off constraint "
                      f"{row!r}: set off the rows (resetJointState of dependent joints), "
                      + ("or stepped before this bridge's first apply() (stepSimulation() — also another bridge's "
                         "step(), which steps the whole client — ran without its torques), " if first else "")
                      + "or reset or restored "
                      "(restoreState) between apply() and stepSimulation(), a step that then ran with the torques "
                      "apply() computed for the state before (a restoreState does not rewind bridge.time: functions "
                      "of time hold at the bridge's clock); the bridge put the dependent joints back where their "
                      "inputs place them", RESET_REMEDY + "; reset the independent coordinates only")
        if names and not inputs_moved:
            self.warn("reset:" + names[0],
                      f"dependent joint {names[0]!r} was reset (resetJointState) by "
                      f"{float(np.abs(x[self.jb:] - before[self.jb:])[model.joint_names.index(names[0])]):.3g}"
                      f" rad or m at t = {bridge.time:.6g} s, but it is a function of other joints: the bridge "
                      f"put it back where its inputs place it",
                      "reset the independent coordinates instead (bridge.reset(NAME=value, ...) or "
                      "resetJointState on " + ", ".join(model.coordinate_names) + ")")

    def step_length(self, x: np.ndarray, xd: np.ndarray) -> float | None:
        """The length h (s) of the step just read, as its joints show it: PyBullet's semi-implicit Euler moves the
        1-DOF joints by x − x_n = h((1 − c) ẋ_n + c ẋ) and the rates by ẋ − ẋ_n = h ẍ. h is the positions' least-
        squares fit where it explains every joint to the jump test's tolerance, is known to STEP_MATCH and the rates
        moved by h ẍ; None otherwise (joints at rest, a reset, sub-steps with ẍ changing, no ẍ predicted, a force
        outside), and for a whole multiple of the bridge's dt where ẍ is too small to tell it from several
        stepSimulation() per apply() (named as such)."""
        c, jb, vb, dt = self.weight, self.jb, self.vb, self.bridge.dt
        moved = x[jb:] - self.prev_x[jb:]
        rate = (1.0 - c) * self.prev_v[vb:] + c * xd[vb:]
        size = float(np.sqrt(rate @ rate))
        scale = 1.0 + np.abs(x).max(initial=0.0)
        tolerance = JUMP_TOLERANCE * scale
        if not size > 0.0:
            return None
        h = float(moved @ rate) / size ** 2
        miss = float(np.abs(moved - h * rate).max(initial=0.0))
        # h is known to ≈ (its fit's miss + the positions' round-off) / |rate|
        if not (h > 0.0 and miss <= tolerance and miss + 4.0 * np.finfo(float).eps * scale <= STEP_MATCH * h * size):
            return None
        # the rates too must be the step's: ẋ = ẋ_n + h ẍ (as `observe` checks them, a floating base's linear velocity
        # aside) — else a rate reset (resetJointState's targetVelocity, resetBaseVelocity) where one joint moves
        # would pass for a step of another length
        xdd, skip = self.xdd, self.skip
        if xdd is None or np.abs(xd[skip:] - self.prev_v[skip:] - h * xdd[skip:]).max(initial=0.0) \
                > SURPRISE_TOLERANCE * (1.0 + np.abs(xd[skip:]).max(initial=0.0)):
            return None
        # k steps of dt without the bridge's torques end off one step of k dt by ≈ dt² ẍ: a whole multiple is one
        # long step only where that gap would show
        multiple = round(h / dt)
        if multiple >= 2 and abs(h - multiple * dt) <= STEP_MATCH * h \
                and dt * dt * np.abs(xdd[vb:]).max(initial=0.0) <= tolerance:
            return None
        return h

    def _moved(self, x: np.ndarray, xd: np.ndarray) -> np.ndarray:
        """Per 1-DOF joint: its position jumped since the last step (x − x_n − dt((1 − c) ẋ_n + c ẋ) beyond
        JUMP_TOLERANCE × (1 + max |x|), the kernel's test per joint)."""
        dt, c, jb, vb = self.bridge.dt, self.weight, self.jb, self.vb
        step = dt * ((1.0 - c) * self.prev_v[vb:] + c * xd[vb:])
        return np.abs(x[jb:] - self.prev_x[jb:] - step) > JUMP_TOLERANCE * (1.0 + np.abs(x).max())

    def _reset_in_step(self, x: np.ndarray, xd: np.ndarray, moved: np.ndarray) -> np.ndarray | None:
        """ẍ' of the step PyBullet took when the joints that `moved` were reset (resetJointState,
        resetJointStatesMultiDof) between the last apply() and its stepSimulation(), else None. A reset after the step
        (before this apply()) leaves every other joint's rate as the step predicted (ẋ_n + dt ẍ_n, to round-off:
        PyBullet's step is the bridge's semi-implicit Euler); a reset before it steps them with the torques τ_n
        apply() computed, at the state the reset made. So: some positions jumped, the joints that did not miss the
        prediction, and the step from that state — x_n with the reset joints at the values set, x − dt ẋ and
        v' = ẋ − dt ẍ', ẍ' = M⁻¹(τ_n − h) on PyBullet's M and h (v' by Newton's method) — explains their rates to a
        tenth of the miss (an outside force in the step before a reset does not). (A step whose rates do not depend
        on the reset — at rest with nothing acting — ends where the reset alone would put it: there is nothing to
        tell, and nothing to hold.)"""
        still = ~moved
        if not moved.any() or not still.any() or not (np.isfinite(x).all() and np.isfinite(xd).all()):
            return None
        jb, vb, dt = self.jb, self.vb, self.bridge.dt
        xdd = self.xdd if self.xdd is not None else self._acceleration(self.prev_x, self.prev_v)
        miss = np.abs(xd[vb:] - self.prev_v[vb:] - dt * xdd[vb:])[still].max()
        if not miss > SURPRISE_TOLERANCE * (1.0 + float(np.abs(xd).max())):
            return None
        start_x, start_v = np.array(self.prev_x, dtype=float), np.array(self.prev_v, dtype=float)
        start_x[jb:][moved] = x[jb:][moved] - dt * xd[vb:][moved]
        index = vb + np.flatnonzero(moved)
        end = xd[index]

        def stepped_from(rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:   # (ẍ'(v'), v' + dt ẍ'_reset − ẋ)
            start_v[index] = rates
            acceleration = self._acceleration(start_x, start_v)
            return acceleration, rates + dt * acceleration[index] - end

        # the rates set, v' = ẋ − dt ẍ'(v'): Newton's method (finite-difference Jacobian: one more M, h per reset
        # joint) from resetJointState's default 0 or ẋ − dt ẍ_n, whichever is closer
        starts = [stepped_from(rates) + (rates,) for rates in (np.zeros(len(index)), end - dt * xdd[index])]
        acceleration, gap, rates = min(starts, key=lambda start: float(np.abs(start[1]).max()))
        best, stepped = miss, None
        for _ in range(RESET_ITERATIONS):
            fit = np.abs(xd[vb:] - self.prev_v[vb:] - dt * acceleration[vb:])[still].max()
            if fit < best:
                best, stepped = fit, acceleration
            size = 1e-7 * (1.0 + float(np.abs(rates).max()))
            columns = [(stepped_from(rates + size * unit)[1] - gap) / size for unit in np.eye(len(index))]
            try:
                rates = rates - np.linalg.solve(np.array(columns).T, gap)
            except np.linalg.LinAlgError:
                break
            acceleration, gap = stepped_from(rates)
            if not np.isfinite(gap).all():
                break
        return stepped if best <= 0.1 * miss else None

    def _undo_step(self, x: np.ndarray, xd: np.ndarray, moved: np.ndarray, stepped: np.ndarray) -> None:
        """x, ẋ (in place) as a reset after a clean step would have left them: the joints that did not jump at the
        step's prediction (ẋ_n + dt ẍ_n, and the position of that rate), the reset joints at the values set (the
        position x − dt ẋ: PyBullet's step moved it by its end rate; the rate ẋ − dt ẍ' with the step's ẍ',
        `stepped`). Then `_project` puts the dependent joints where the inputs place them, as after any reset. A
        floating base's pose and twist stay as read."""
        jb, vb, dt, c = self.jb, self.vb, self.bridge.dt, self.weight
        xdd = (self.xdd if self.xdd is not None else self._acceleration(self.prev_x, self.prev_v))[vb:]
        rate = self.prev_v[vb:] + dt * xdd
        joints, rates = x[jb:], xd[vb:]
        joints[moved] -= dt * rates[moved]
        rates[moved] -= dt * stepped[vb:][moved]
        still = ~moved
        rates[still] = rate[still]
        joints[still] = self.prev_x[jb:][still] + dt * ((1.0 - c) * self.prev_v[vb:][still] + c * rate[still])

    def _acceleration(self, x: np.ndarray, xd: np.ndarray) -> np.ndarray:
        """M(x)⁻¹ (τ_n − h(x, ẋ)) on PyBullet's M and h with the torque of the last step — what PyBullet's step
        integrates from (x, ẋ) (the last step's ẍ where its solve returned none: the null-space stage)."""
        bridge = self.bridge
        mass, bias = bridge.tree_mass_and_bias(x, xd)
        return np.linalg.solve(mass, bridge.last_torque - bias)

    def _reset_in_step_message(self, names: list[str]) -> str:
        dependent = [name for name in names if name not in self.bridge.model.coordinate_names]
        return (f"joint {names[0]!r}{f' (and {len(names) - 1} more)' if len(names) > 1 else ''} was reset "
                f"(resetJointState / resetJointStatesMultiDof) between apply() and stepSimulation() (t = "
                f"{self.bridge.time:.6g} s){' — a dependent joint, put back where its inputs place it' if dependent else ''}"
                ": that step ran with the torques apply() computed for the state before the reset")

    def _skipped_steps(self, x: np.ndarray, xd: np.ndarray, moved: np.ndarray) -> int:
        """k ≥ 2 when the jump looks like k steps instead of one (x − x_n ≈ k dt (ẋ₁ + ẋ)/2 within 10 % over the
        joints that moved, ẋ₁ = ẋ_n + dt ẍ the first step's predicted rate: semi-implicit Euler's positions under a
        roughly constant acceleration, which holds from rest too, where x − x_n ≈ k dt ẋ misses by a third: several
        stepSimulation() calls per apply()), else 0 (a reset). Constant rows J x = b (the null-space stage returns no
        ẍ, so ẋ₁ is unknown): two steps are x − x_n = dt (ẋ₁ + ẋ) exactly, with J ẋ₁ = 0 after the bridge's step.
        A joint that moved by one step's dt ẋ without a jump (not in `moved`) rules k steps out: they move every
        moving joint by about k dt ẋ (a reset of one input on the floating coupled arm was named "stepSimulation()
        ran 19 times": one joint's jump fits any k)."""
        still = ~moved
        if (self.bridge.dt * np.abs(xd[self.vb:][still]) > PROMISE).any():
            return 0
        dx = x[self.jb:] - self.prev_x[self.jb:]
        jac = self._watched.jac
        if self.xdd is None and jac.shape[0]:
            first = dx / self.bridge.dt - xd[self.vb:]
            if np.abs(jac @ first).max() <= SURPRISE_TOLERANCE * (1.0 + float(np.abs(first).max())) / self.bridge.dt:
                return 2
        first = self.prev_v[self.vb:]
        if self.xdd is not None:
            first = first + self.bridge.dt * self.xdd[self.vb:]
        v = 0.5 * (first + xd[self.vb:])
        vv = float(v @ v)
        if vv == 0.0 or not float(dx @ dx):
            return 0
        k = float(dx @ v) / (self.bridge.dt * vv)
        steps = int(round(k))
        fit = np.abs(dx - steps * self.bridge.dt * v).max() if steps >= 2 else np.inf
        return steps if fit <= 0.1 * float(np.abs(dx).max()) else 0

    def _residual(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.bridge.constraints.residual(x, self.bridge.time), dtype=float)

    def _project(self, x: np.ndarray, xd: np.ndarray, reset: bool, moved: bool = False) -> None:
        """x, ẋ (in place, and in PyBullet) back onto the rows. Positions: the model's joint state of the independent
        coordinates read (`Model.joint_state`: dependent joints from their inputs, loops closed by the model's
        solver). Velocities: after a reset the same (the user's rates of the independent joints stay); after a force
        outside the solve the M-weighted projection (`constraints.solve.velocity_projection`: the plastic
        constraint impulse, which changes the kinetic energy by −½ δẋᵀM δẋ, second order in the violation δẋ).
        moved: x, ẋ were changed in place since the read (`_undo_step`): written back even where on the rows."""
        from biobullet.constraints.solve import velocity_projection
        bridge, model = self.bridge, self.bridge.model
        q, v = x[bridge.independent_x], xd[bridge.independent_v]
        x_new, xd_new, _, _ = model.joint_state(q, v, bridge.time)
        if not reset and self.rows:
            constraints, t = bridge.constraints, bridge.time
            mass = bridge.tree_mass_and_bias(x_new, xd)[0]
            jac = np.atleast_2d(np.asarray(constraints.jacobian(x_new, t), dtype=float))
            xd_new = velocity_projection(mass, jac, np.array(xd, dtype=float),
                                         np.asarray(constraints.time_derivative(x_new, t), dtype=float),
                                         redundant="least_squares")
        if np.abs(x_new - x).max() == 0.0 and np.abs(xd_new - xd).max() == 0.0 and not moved:
            return
        x[:] = x_new
        xd[:] = xd_new
        self._write_state(x, xd)
        self.projections += 1

    # ------------------------------------------------------------------ causes and messages
    def _cause(self) -> tuple[str, str, str]:
        """(cause, remedy, key) of the last disturbed step, from what PyBullet reports about the body."""
        bridge = self.bridge
        p, c, b = bridge.pybullet, bridge.client, bridge.body
        model = bridge.model
        joints = bridge.map.joint_indices.tolist()
        if joints:
            motors = [(model.joint_names[k], s[3]) for k, s in
                      enumerate(p.getJointStates(b, joints, physicsClientId=c)) if s[3] != 0.0]
            if motors:
                name, torque = motors[0]
                dependent = name not in model.coordinate_names
                return (f"a PyBullet motor (POSITION_CONTROL or VELOCITY_CONTROL) acts on "
                        f"{'dependent ' if dependent else ''}joint {name!r} ({torque:.3g} N·m or N in the last step): "
                        "PyBullet solves it inside stepSimulation, after the bridge's torques were computed",
                        f"drive it with bridge.set_motor({name!r}, position=..., max_force=...) — it acts inside "
                        "the constrained solve — or switch the PyBullet motor off with setJointMotorControl2(body, "
                        f"{int(joints[k_of(model, name)])}, VELOCITY_CONTROL, force=0)", "motor:" + name)
        spherical = [int(j) for j in bridge.map.spherical_indices]
        if spherical:   # a multi-DOF motor: before, named "a force outside the bridge's solve" (remedy apply(tau=))
            for joint, state in zip(spherical, p.getJointStatesMultiDof(b, spherical, physicsClientId=c)):
                torque = float(np.linalg.norm(state[3]))
                if torque != 0.0:
                    name = p.getJointInfo(b, joint, physicsClientId=c)[1].decode()
                    return (f"a PyBullet motor (setJointMotorControlMultiDof POSITION_CONTROL) acts on spherical "
                            f"joint {name!r} (|τ| = {torque:.3g} N·m in the last step): PyBullet solves it inside "
                            "stepSimulation, after the bridge's torques were computed",
                            "pass its torque through bridge.apply(tau=...) so the solve accounts for it, or switch "
                            f"the motor off with setJointMotorControlMultiDof(body, {joint}, POSITION_CONTROL, "
                            "targetPosition=[0, 0, 0, 1], positionGain=0, velocityGain=1, force=[0, 0, 0])",
                            "motor:" + name)
        contacts = p.getContactPoints(bodyA=b, physicsClientId=c)
        if contacts:
            link = contacts[0][3]
            names = {v: k for k, v in bridge.map.link_index.items()}
            return (f"PyBullet's rigid contact of link {names.get(link, link)!r} with body {contacts[0][2]} pushes "
                    "it during stepSimulation",
                    "give the link a <contact> element (the bridge's compliant contact acts inside the solve), or use "
                    "a smaller dt (the residual of an impact step scales with dt²)", "contact")
        own = set(bridge.native_constraints.values())
        for k in range(p.getNumConstraints(physicsClientId=c)):
            cid = p.getConstraintUniqueId(k, physicsClientId=c)
            info = p.getConstraintInfo(cid, physicsClientId=c)
            if cid not in own and b in (info[0], info[2]):
                self._constraint = (cid, self.step_index)
                return (f"PyBullet constraint {cid} (createConstraint) acts on the body inside stepSimulation",
                        "write the closure as a <loop> of the model file (the bridge holds loops in its solve), or "
                        "use a smaller dt", "constraint")
        cid, named_at = self._constraint
        if cid >= 0 and named_at == self.step_index - 1:   # named in the step before, removed (removeConstraint)
            # since: this step is its doing (before, named "a force outside the bridge's solve", a second cause)
            return (f"PyBullet constraint {cid} (createConstraint, removed since) acted on the body in the last step",
                    "write the closure as a <loop> of the model file (the bridge holds loops in its solve), or "
                    "use a smaller dt", "constraint")
        if bridge.native_constraints:   # (before: "a force outside the bridge's solve")
            return native_loops_cause(bridge.native_constraints)
        if not model.floating_base:   # (the bridge checked the base's frame at construction)
            orientation = p.getBasePositionAndOrientation(b, physicsClientId=c)[1]
            if abs(abs(orientation[3]) - 1.0) > 1e-12 or any(p.getBaseVelocity(b, physicsClientId=c)[1]):
                return ("the fixed base was rotated or set turning (resetBasePositionAndOrientation, or "
                        "resetBaseVelocity — PyBullet moves a fixed base at the velocity it is given): the bridge's "
                        "dynamics take the model's gravity in a base frame at rest, so every step leaves the rows",
                        "leave a fixed base in its orientation at construction and at rest (resetBaseVelocity(body, "
                        "[0, 0, 0], [0, 0, 0])); rotate the model file's <gravity> instead", "base")
        if bridge.massless_links:   # (every later step misses: named as such, not as "a force outside")
            return massless_cause(bridge.massless_links[0])
        changed = bridge.changed_inertias()
        if changed:   # (`engine_parameters` follows such a change; this names it where a runaway came first)
            return (f"the mass or inertia of link {changed[0]!r} changed (changeDynamics) in the last step, and "
                    "PyBullet's step with it left the constraint the solve held with the inertias before",
                    "change masses and inertias before apply(), or change the link's <inertial> in the model file",
                    "inertia:" + changed[0])
        if bridge.substeps > 1:
            return (f"PyBullet's {bridge.substeps} sub-steps per stepSimulation (numSubSteps): the bridge's torques, "
                    "computed at the step's start, are held over sub-steps in which the state moves",
                    "no sub-steps: setPhysicsEngineParameter(numSubSteps=0) and a smaller time step (setTimeStep, "
                    "or bridge.set_time_step(dt, substeps=1))", "substeps")
        if self.step_index == self._woke + 1:   # the step after a repeated apply() that woke the body (`_wake`)
            return ("the body was asleep (changeDynamics(activationState=ACTIVATION_STATE_ENABLE_SLEEPING)) — PyBullet "
                    "did not step it while the bridge's torques asked it to move, which the bridge cannot tell from "
                    "apply() called twice before a step; it woke the body and disabled sleeping — or apply() was "
                    "called twice before a step and something else acted",
                    "leave sleeping disabled on a bridged body (the bridge disables it at construction)", "sleep")
        # (PyBullet reports none of changeDynamics' joint limits, maxJointVelocity or damping back: named as possible)
        return ("a force outside the bridge's solve acted on the body (applyExternalForce / applyExternalTorque, "
                "changeDynamics damping, friction, joint limits (jointLowerLimit / jointUpperLimit) or "
                "maxJointVelocity, your own TORQUE_CONTROL or PD_CONTROL / STABLE_PD_CONTROL, or a "
                "changed time step), or the state was reset between apply() and stepSimulation() "
                "(resetBaseVelocity, resetBasePositionAndOrientation, resetJointState with a velocity, "
                "resetJointStatesMultiDof of a spherical joint)",
                "pass joint torques through bridge.apply(tau=...) / bridge.step(tau=...) so the solve accounts for "
                "them, change the time step with bridge.set_time_step(dt), and reset the state before apply() "
                "(bridge.reset(NAME=value) for the coordinates)", "outside")

    def warn(self, key: str, message: str, remedy: str) -> None:
        """One CouplingWarning per key and bridge."""
        if key in self.warned:
            return
        self.warned.add(key)
        warnings.warn(f"{self.bridge.model.file}: {message}. Remedy: {remedy}.", CouplingWarning, stacklevel=4)

    def _diverged(self, x, xd, peak_v: float, peak_x: float) -> None:
        bridge, model = self.bridge, self.bridge.model
        names = list(model.joint_names)
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(xd))):
            what = "the state is not finite"
        elif peak_v > RUNAWAY_RATE:
            k = int(np.argmax(np.abs(xd)))
            name = f"joint {names[k - self.vb]!r}" if k >= self.vb else f"base velocity component {k}"
            what = f"{name} moves at {float(xd[k]):.3g} rad/s or m/s (limit {RUNAWAY_RATE:g})"
        else:
            k = int(np.argmax(np.abs(x[self.jb:])))
            what = f"joint {names[k]!r} is at {float(x[k + self.jb]):.3g} rad or m (limit {POSITION_LIMIT:g})"
        at, reset = self.reset_in_step
        if self.step_index - at <= DIVERGENCE_STEPS:
            raise DivergenceError(f"{model.file}: the PyBullet simulation diverged after step {self.step_index} "
                                  f"(t = {bridge.time:.6g} s): {what}, after {reset} — "
                                  f"{RESET_REMEDY}")
        if what != "the state is not finite":   # what PyBullet reports about the body (a motor, a contact, ...)
            cause, _, key = self._cause()
            what += f"; {cause}" if key not in ("outside", "substeps") else ""
        # (read afresh: a setPhysicsEngineParameter(numSubSteps=) of this step is followed only after this check)
        substeps = max(1, int(bridge.pybullet.getPhysicsEngineParameters(physicsClientId=bridge.client)["numSubSteps"]))
        raise DivergenceError(f"{model.file}: the PyBullet simulation diverged after step {self.step_index} "
                              f"(t = {bridge.time:.6g} s): {what}, with dt = {bridge.dt:g} s"
                              + (f" and {substeps} PyBullet sub-steps (numSubSteps: the bridge's torques are "
                                 "held over sub-steps it cannot see; near-massless links, as the shoulder's, blow up) "
                                 "— use no sub-steps and a smaller dt" if substeps > 1 else
                                 " — use a smaller dt, weaker gains, or look for a force outside the bridge"))


def k_of(model, name: str) -> int:
    """The tree index of joint `name`."""
    return list(model.joint_names).index(name)


__all__ = ["CouplingWarning", "OutsideWatch", "PROMISE"]
