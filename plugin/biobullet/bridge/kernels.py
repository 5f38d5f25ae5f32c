"""Per-step arithmetic of `Bridge.apply()`: thin compiled adapters around THE constrained solve
(`biobullet.constraints.solve`), which owns the equations. Arguments are structured (`TreeModel`, `StepGains`,
`LoopData`, `joint_jets.FunctionTable`, `solve.ConstraintRows`): built once per bridge (or per time-step change),
so a step passes a dozen references, each kernel compiled for one set of types.

    linear_rows   Φ = Φ_x x − c and Φ̇ = Φ_x ẋ for constant rows (linear joint functions, fixed base); max |Φ̇|.
    linear_torque `constraints.solve`'s null-space kernel (`linear_own`: with M, h from the tree recursions).
    kkt_torque    `constraints.solve`'s range-space (Schur complement) kernel, then τ_out = τ + Φ_xᵀλ.
    rows_torque   explicit joint functions (`model.joint_jets`) on any base: rows, M and h (own recursions or
                  PyBullet's), the step-end target, the Schur solve and the step-end Newton correction — one call
                  per step (`Bridge._rows_stage`).
    loop_torque   the same with `<loop>` rows after the function rows and point-to-point springs, loops in the
                  step-end correction too — their end point evaluated on the steps whose predicted Taylor miss
                  asks for it (`_loops_due_py`, from the start residual the step computes anyway).
    rows_at, loop_at, read_rows
                  rows_torque / loop_torque with the bridge's constants (tree, function and loop rows, M and h work
                  arrays, gains: `RowsRecord`, `LoopRecord`) read from one record passed by its address
                  (`at_kernel`: a borrowed `core.jit_pair` record — no per-call conversion or reference counts of
                  its arrays); read_rows also converts PyBullet's raw state first and packs the torques as
                  PyBullet takes them after (`ReadRecord`: floating base, spherical joints). Called from Python
                  through a thin entry compiled without numba's reference-counting runtime (`at_entry`).
    base_wrench   a floating base's wrench τ[:6] (root frame) as PyBullet takes it: the world force, the world
                  moment about the base COM and the COM's world position (`Bridge._send_base_wrench`).
    end_newton    the step-end correction of both: Φ at the end point x + dt ẋ + c dt² ẍ (function values; loop rows
                  and their Jacobian on the compiled tree kinematics) and Newton steps on λ (`Bridge._end_correction`;
                  inside rows_torque and loop_torque).

The sizes are tiny (n + n_c ≈ 10…40), so the cost of a step is the number of Python → C calls, not flops: with
numba each kernel is one call; with BIOBULLET_NUMBA=0 (debugging) the same functions run by Python. A status ≠ 0
means the solve declined (M not positive definite, dependent rows, a value not finite): the caller's general path
then decides, with least squares (`constraints.solve.constrained_acceleration(..., redundant="least_squares")`) or
its clear error.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from biobullet.core import jit
from biobullet.constraints import solve


def _linear_rows_py(jac, offset, x, xd, phi, phi_dot):
    m, n = jac.shape
    worst = 0.0
    for i in range(m):
        a = 0.0
        b = 0.0
        for j in range(n):
            a += jac[i, j] * x[j]
            b += jac[i, j] * xd[j]
        phi[i] = a - offset[i]
        phi_dot[i] = b
        if abs(b) > worst:
            worst = abs(b)
    return worst


class TreeModel(NamedTuple):
    """The body for the per-step kernels: own (M, h from the compiled tree recursions with meta, body, gravity —
    `compiled_kernels.pack`, gravity updated in place by `Bridge.engine_parameters` — else the M and h given), base
    = (configuration, velocity) entries of the floating base and spherical joints leading x and ẋ (int64 (2,))."""
    own: bool
    meta: np.ndarray
    body: np.ndarray
    gravity: np.ndarray
    base: np.ndarray


class StepGains(NamedTuple):
    """The bridge's target and step-end check for a step of dt: the corrector's kp (1/s²), kd (1/s), kb; dt (s),
    weight c (x_end = x + dt ẋ + c dt² ẍ, `bridge.substep_weight`); check: the rows kernels run the step-end Newton
    correction (`_end_newton_py`) until the function rows are within `tolerance` (rad or m) and the loop rows within
    `loop_tolerance` (m, or direction cosines), in at most `iterations` steps. The loop rows' end point is evaluated
    only on the steps whose predicted Taylor miss exceeds `loop_skip_below` (m; `_loops_due_py`), from `loop_record`
    (the bridge's, written in place: `LOOP_MISS` … `LOOP_EVALUATED`); a skipped step whose real gap (the
    next step's start residual) exceeds `promise` (m) is reported (`LOOP_GAP`)."""
    kp: float
    kd: float
    kb: float
    dt: float
    weight: float
    check: bool
    tolerance: float
    loop_tolerance: float
    iterations: int
    loop_skip_below: float
    promise: float
    loop_record: np.ndarray


class LoopData(NamedTuple):
    """`<loop>` rows (`constraints.loop_kernels.LoopRows`), the tree's ancestry and the point-to-point springs
    (`pipeline.force_rows.pack_springs`: bodies, points, params, zero length) of `_loop_torque_py`."""
    rows: tuple
    ancestry: np.ndarray
    spring_bodies: np.ndarray
    spring_points: np.ndarray
    spring_params: np.ndarray
    zero_length: float


def _kkt_torque_py(mass, bias, tau, rows, xd, xdd, out):
    """out = [τ_out (n), λ (m)], τ_out = τ + Φ_xᵀλ with λ from the Schur kernel (`_schur`, bound before this
    compiles) for `rows` (`solve.ConstraintRows`); its status."""
    n, m = mass.shape[0], rows.jac.shape[0]
    status = _schur(mass, bias, tau, bool(True), rows, xd, _PIVOT, 0.0, xdd, out[n:])
    if status != 0:
        return status
    for i in range(n):
        s = tau[i]
        for k in range(m):
            s += rows.jac[k, i] * out[n + k]
        out[i] = s
    return 0


_PIVOT = solve.PIVOT_CHECK
_schur = solve.schur_solve   # the Schur kernel: `kernels` binds the compiled one; this serves the Python form


def _own_dynamics_py(tree, x, xd, mass, bias):
    """M and h from the tree recursions into mass and bias when tree.own (else they stay the caller's)."""
    if tree.own:
        n = xd.shape[0]
        m_own, h_own = _tree(tree.meta, tree.body, x, xd, xd, tree.gravity, n, bool(True), bool(True), bool(False))
        for i in range(n):
            bias[i] = h_own[i]
            for j in range(n):
                mass[i, j] = m_own[i, j]


#: the rows kernels' status when the solve stood but the step-end Newton correction did not reach its tolerance
#: (`_end_newton_py` ≠ 0): τ and λ are the solve's, the caller names the rows that miss (`Bridge._end_missed`)
END_MISSED = 9
#: the loop kernel's status when this step stood but the last step, which skipped its loops' end point
#: (`_loops_due_py`), left a loop gap beyond `StepGains.promise` (the start residual): the caller names it
LOOP_GAP = 10
#: `StepGains.loop_record` entries: the last known Taylor miss of the loop rows (m: the correction's first evaluation
#: on a step that evaluated the end point, else the next step's start residual — that step's real end gap; inf:
#: unknown, after a reset, a projection or a time-step change), the step size that miss came with
#: (`_step_size_py`), 1.0 when the last step skipped the loops' end point, and the largest miss per step size seen
#: (m, fading by RATIO_MEMORY a step: the loops' curvature along the motion, `_learn_miss_py`); the count of steps
#: that evaluated it
LOOP_MISS, LOOP_SIZE, LOOP_SKIPPED, LOOP_RATIO, LOOP_EVALUATED = 0, 1, 2, 3, 4
#: the largest miss per step size fades by this a step (forgotten over ≈ 100 steps: a loop leaving a strongly curved
#: configuration gets its skipping back)
RATIO_MEMORY = 0.99


def _rows_torque_py(tree, functions, mass, bias, tau, t, x, xd, gains, xdd, out):
    """out = [τ_out, λ], τ_out = τ + Φ_xᵀλ for explicit function rows (`model.joint_jets.FunctionTable`) at the
    tree state (x, ẋ) — any base (`TreeModel`); then, with gains.check, the step-end Newton correction
    (`_end_newton_py`, no loops). Status 0, END_MISSED when the correction missed, or another ≠ 0 when the solve
    declines (the caller's general path decides)."""
    n, m = xd.shape[0], functions.table.shape[0]
    _own_dynamics(tree, x, xd, mass, bias)
    phi, jac, phi_t, bias_c = np.empty(m), np.empty((m, n)), np.empty(m), np.empty(m)
    base = tree.base
    if _rows(functions.table, functions.inputs, functions.coef, t, base[0], base[1], x, xd, phi, jac, phi_t,
             bias_c) < 0.0:
        return 4   # an expression not finite here: the general path reports it
    for r in range(m):
        bias_c[r] *= gains.kb
    rows = solve.ConstraintRows(jac, phi, phi_t, bool(True), bias_c, gains.kp, gains.kd)
    status = _kkt(mass, bias, tau, rows, xd, xdd, out)
    if status == 0 and gains.check and _end_newton(functions, None, tree, gains, t, x, xd, mass, jac, xdd, out[:n],
                                                   out[n:]) != 0:
        return END_MISSED
    return status


def _loop_torque_py(tree, functions, loops, mass, bias, tau, t, x, xd, gains, xdd, out):
    """out = [τ_out, λ], τ_out = τ + τ_springs + Φ_xᵀλ for explicit function rows (possibly none) followed by
    `<loop>` rows (point, planar and revolute loops: `constraints.loop_kernels`, on the compiled tree kinematics),
    in `ConstraintSet` order; point-to-point springs (`forces.compiled._spring_forces_py`) from the same kinematics
    (`LoopData`); M, h and the base as in `_rows_torque_py`, and the same step-end correction, loops included.
    Status 0, END_MISSED, or ≠ 0 when the solve declines or a spring has zero length (the general path then decides
    and reports)."""
    n = xd.shape[0]
    nf = functions.table.shape[0]
    n_rows = loops.rows.n_rows[0] if loops.rows.n_rows.shape[0] else 0
    m = nf + n_rows
    phi, jac, phi_t, bias_c = np.empty(m), np.empty((m, n)), np.zeros(m), np.empty(m)
    base = tree.base
    if nf > 0 and _rows(functions.table, functions.inputs, functions.coef, t, base[0], base[1], x, xd, phi[:nf],
                        jac[:nf], phi_t[:nf], bias_c[:nf]) < 0.0:
        return 4   # an expression not finite here: the general path reports it
    rot, pos, sub, vel, acc = _kin(tree.meta, tree.body, x, xd, n, bool(True))
    total = tau.copy()
    status, _ = _spring_forces(rot, pos, sub, loops.ancestry, xd, loops.spring_bodies, loops.spring_points,
                               loops.spring_params, loops.zero_length, total)
    if status != 0:
        return 3
    gap = False
    if n_rows:
        l_phi, l_jac, l_bias = _loop_rows(loops.rows, int(0), (rot, pos, sub, vel, acc), bool(True), bool(True))
        start = 0.0
        for r in range(n_rows):
            phi[nf + r] = l_phi[r]
            start = max(start, abs(l_phi[r]))
            bias_c[nf + r] = l_bias[r]
            for c in range(n):
                jac[nf + r, c] = l_jac[r, c]
        # the start residual is the last step's real end gap (a clean step ends where the bridge predicted, to
        # round-off): the miss of a step that skipped its end point, a bound on the loops' miss otherwise
        record = gains.loop_record
        if record[LOOP_SKIPPED] != 0.0:
            _learn_miss(record, start, record[LOOP_SIZE])
            gap = start > gains.promise
        elif not start <= record[LOOP_MISS]:
            record[LOOP_MISS] = start
    for r in range(m):
        bias_c[r] *= gains.kb
    _own_dynamics(tree, x, xd, mass, bias)
    rows = solve.ConstraintRows(jac, phi, phi_t, bool(True), bias_c, gains.kp, gains.kd)
    status = _kkt(mass, bias, total, rows, xd, xdd, out)
    if status == 0 and gains.check:
        # loops alone whose end point the step skips: no call (passing the row records costs ≈ 0.5 µs of
        # reference counts); else `_end_newton_py`, which decides the same for the loops beside function rows
        skip = False
        if nf == 0 and n_rows:
            size = _step_size(xd, xdd, tree.base[1], gains.dt, gains.weight * gains.dt * gains.dt)
            skip = not _loops_due(gains.loop_record, size, gains.loop_skip_below)
            if skip:
                _record_skip(gains.loop_record, size)
        if not skip and _end_newton(functions, loops.rows, tree, gains, t, x, xd, mass, jac, xdd, out[:n],
                                    out[n:]) != 0:
            return END_MISSED
    if status == 0 and gap:
        return LOOP_GAP
    return status


def _end_residual_py(functions, loops, with_loops, tree, t, x_full, xd, x_end, phi, jac_end):
    """Φ at the end point into phi, in `ConstraintSet` order: the function rows (`FunctionTable`) at the 1-DOF
    joints' end positions x_end and t (their values alone, `joint_jets._function_values_py`); with_loops, the loop
    rows (`LoopRows`, or None: no loops) and their Jacobian, into the loop rows of jac_end, on the tree kinematics of
    (tree.meta, tree.body) at x_full with its 1-DOF joints set to x_end (in place) — the base entries (tree.base)
    keep their pose: a floating base's loops close between two links of the body, which a rigid motion of the whole
    body leaves closed (the caller holds no loop to the ground on a floating base, and no loop with spherical
    joints). (max |Φ| of the function rows, of the loop rows), or (−1, 0) when a function value is not finite."""
    nf = functions.table.shape[0]
    worst_functions, worst_loops = 0.0, 0.0
    if nf > 0:
        worst_functions = _values(functions, t, x_end, phi[:nf])
        if worst_functions < 0.0:
            return -1.0, 0.0
    if loops is not None:
        n_loop = loops.n_rows[0] if loops.n_rows.shape[0] else 0
        if n_loop and with_loops:
            n = jac_end.shape[1]
            base_q = tree.base[0]
            for i in range(x_end.shape[0]):
                x_full[base_q + i] = x_end[i]
            kin = _kin(tree.meta, tree.body, x_full, xd, n, bool(False))   # (positions only: ẋ unread)
            l_phi, l_jac, _ = _loop_rows(loops, int(0), kin, bool(True), bool(False))
            for r in range(n_loop):
                phi[nf + r] = l_phi[r]
                worst_loops = max(worst_loops, abs(l_phi[r]))
                for c in range(n):
                    jac_end[nf + r, c] = l_jac[r, c]
    return worst_functions, worst_loops


def _step_size_py(xd, xdd, base_v, dt, h):
    """The size of a step for the loops' Taylor miss: with a = dt max|ẋ| and b = c dt² max|ẍ| over the 1-DOF joints
    (rad or m), a b + b²/2 + (a + b)³/6 — the orders of what Taylor's target leaves of Φ(x + dt ẋ + c dt² ẍ): the
    cross and ẍ² terms of ½ Φ_xx Δ Δ (its ẋ ẋ term is in the target) and Φ_xxx Δ³/6."""
    a, b = 0.0, 0.0
    for i in range(base_v, xd.shape[0]):
        a = max(a, abs(xd[i]))
        b = max(b, abs(xdd[i]))
    a, b = dt * a, h * b
    return a * b + 0.5 * b * b + (a + b) ** 3 / 6.0


def _loops_due_py(record, size, skip_below):
    """Whether this step evaluates the loops' end point (`StepGains.loop_record`): unless both predictions of its
    Taylor miss are within skip_below (m) — the largest miss per step size seen (`LOOP_RATIO`) times this step's
    size, and the last known miss scaled up by the growth of the step size since (never down). The miss is O(dt³),
    a smooth function of the state and of ẍ; its sign-changing terms (ẋ Φ_xx ẍ against Φ_xxx ẋ³) can cancel, so the
    ratio bound holds where the last miss alone would not (a torque that flips from step to step). A reset, a
    projection or a new time step set the miss to inf (unknown): due. Measured in docs/bridge.md, "Skipping the loops'
    end point"."""
    miss, known = record[LOOP_MISS], record[LOOP_SIZE]
    if not record[LOOP_RATIO] * size <= skip_below:
        return True
    if size > known:
        return not miss * size <= skip_below * known   # (NaN or inf: due)
    return not miss <= skip_below


def _record_skip_py(record, size):
    """Record in `StepGains.loop_record` a step of the given size that skipped the loops' end point."""
    record[LOOP_SIZE] = size
    record[LOOP_SKIPPED] = 1.0


def _learn_miss_py(record, miss, size):
    """Record the Taylor miss (m) of a step of the given size (`_step_size_py`) in `StepGains.loop_record`."""
    record[LOOP_MISS] = miss
    ratio = RATIO_MEMORY * record[LOOP_RATIO]
    if size > 0.0 and miss > ratio * size:   # (a step of size 0 has no Taylor remainder: its miss is round-off)
        ratio = miss / size
    record[LOOP_RATIO] = ratio


def _end_newton_py(functions, loops, tree, gains, t, x, xd, mass, jac, xdd, torque, lam):
    """The step-end correction of explicit function rows (`FunctionTable`, any base) and loop rows (`LoopRows`, or
    None; see `_end_residual_py`) on the tree (`TreeModel`: its meta, body and base are read):
    Φ at the end point of the 1-DOF joints θ + dt θ̇ + c dt² θ̈, t + dt (`_end_residual_py`) — the loop rows only
    on the steps `_loops_due_py` asks for (`StepGains.loop_record`, updated here), or when the function rows need a
    Newton step — and, while the function rows exceed gains.tolerance or the loop rows gains.loop_tolerance, at most
    gains.iterations Newton steps on the constraint forces Δλ = −(J M⁻¹ Jᵀ)⁻¹ Φ/(c dt²) — J the function rows' Φ_x
    of the step's start (`jac`: a chord step; Φ_x moves by O(dt ẋ) over the step) and the loop rows' Jacobian at
    the end point (a Newton step: a fast mechanism's loops turn too far in a step for a chord) — the Schur kernel
    with h = 0, no τ and the target −Φ/(c dt²), which also gives M⁻¹JᵀΔλ — added to ẍ, τ (JᵀΔλ) and λ in place.
    0 when the end point is within the tolerances, 1 when a value is not finite at the end point, 2 when the Schur
    kernel declines, 3 when the iterations ran out (the caller names the rows)."""
    n, m = xd.shape[0], jac.shape[0]
    nf = functions.table.shape[0]
    c, dt = gains.weight, gains.dt
    h = c * dt * dt
    base_q, base_v = tree.base[0], tree.base[1]
    record = gains.loop_record
    skipping, size, has_loops = False, 0.0, False
    if loops is not None:
        has_loops = (loops.n_rows[0] if loops.n_rows.shape[0] else 0) > 0
        if has_loops:
            size = _step_size(xd, xdd, base_v, dt, h)
            skipping = not _loops_due(record, size, gains.loop_skip_below)
            if skipping and nf == 0:
                _record_skip(record, size)
                return 0
    x_end, phi, x_full = np.empty(x.shape[0] - base_q), np.empty(m), x.copy()
    # the Newton matrix rows: the function rows' Φ_x of the start (copied at the first Newton step), the loop rows'
    # at each end point (`_end_residual_py`); the Newton step's arrays allocated when a step is needed
    jac_newton = np.empty((m, n))
    step, delta, none_n, none_m = np.empty(0), np.empty(0), np.empty(0), np.empty(0)
    for k in range(gains.iterations + 1):
        for i in range(x_end.shape[0]):
            x_end[i] = x[base_q + i] + dt * xd[base_v + i] + h * xdd[base_v + i]
        worst_functions, worst_loops = _end_residual(functions, loops, not skipping, tree, t + dt, x_full, xd, x_end,
                                                     phi, jac_newton)
        if worst_functions < 0.0:
            return 1
        if skipping:   # the function rows alone at the end point
            if worst_functions <= gains.tolerance:
                _record_skip(record, size)
                return 0
            skipping = False   # they need a Newton step: the loop rows join it, evaluated at the same end point
            # (`not skipping`, not the literal True: numba compiled _end_residual once more for Literal[bool])
            worst_functions, worst_loops = _end_residual(functions, loops, not skipping, tree, t + dt, x_full, xd,
                                                         x_end, phi, jac_newton)
        if k == 0 and has_loops:   # the step's Taylor miss
            _learn_miss(record, worst_loops, size)
            record[LOOP_SIZE] = size
            record[LOOP_SKIPPED] = 0.0
            record[LOOP_EVALUATED] += 1.0
        if worst_functions <= gains.tolerance and worst_loops <= gains.loop_tolerance:
            return 0
        if k == gains.iterations:
            return 3
        if k == 0:
            step, delta, none_n, none_m = np.empty(n), np.empty(m), np.zeros(n), np.zeros(m)
            for r in range(nf):
                for i in range(n):
                    jac_newton[r, i] = jac[r, i]
        newton_rows = solve.ConstraintRows(jac_newton, phi, none_m, bool(False), none_m, 1.0 / h, 0.0)
        if _schur(mass, none_n, none_n, bool(False), newton_rows, none_n, _PIVOT, 0.0, step, delta) != 0:
            return 2
        for i in range(n):
            xdd[i] += step[i]
            s = 0.0
            for r in range(m):
                s += jac_newton[r, i] * delta[r]
            torque[i] += s
        for r in range(m):
            lam[r] += delta[r]
    return 0


def _end_bindings() -> dict:
    """The callees of `_end_newton_py`: the Schur kernel, the function values, the tree kinematics and loop rows."""
    from biobullet.constraints.loop_kernels import loop_kernels
    from biobullet.model.joint_jets import function_values_kernel
    kin, loop_rows = loop_kernels()
    return {"_schur": solve.schur_kernel(), "_values": function_values_kernel(), "_kin": kin,
            "_loop_rows": loop_rows}


def end_newton_kernel():
    """The compiled `_end_newton_py` (its uncompiled form with BIOBULLET_NUMBA=0: debugging)."""
    return jit.compiled(_end_newton_py, bind=lambda: {
        "_schur": solve.schur_kernel(), "_end_residual": jit.compiled(_end_residual_py, bind=_end_bindings),
        **_skip_bindings(), "_learn_miss": jit.compiled(_learn_miss_py)})


def _skip_bindings() -> dict:
    """The loops' skip decision and its record (`_loops_due_py`), for `_end_newton_py` and `_loop_torque_py`."""
    return {"_step_size": jit.compiled(_step_size_py), "_loops_due": jit.compiled(_loops_due_py),
            "_record_skip": jit.compiled(_record_skip_py)}


def _step_bindings() -> dict:
    """The callees of `_rows_torque_py` and `_loop_torque_py`."""
    from biobullet.algorithms.compiled_kernels import tree_dynamics_kernel
    from biobullet.model.joint_jets import function_rows_kernel
    return {"_tree": tree_dynamics_kernel(), "_own_dynamics": _own_dynamics_py, "_rows": function_rows_kernel(),
            "_kkt": jit.compiled(_kkt_torque_py, bind={"_schur": solve.schur_kernel()}),
            "_end_newton": end_newton_kernel()}


def rows_torque_kernel():
    """The compiled `_rows_torque_py`."""
    return jit.compiled(_rows_torque_py, bind=_step_bindings)


def loop_torque_kernel():
    """The compiled `_loop_torque_py`."""
    from biobullet.constraints.loop_kernels import loop_kernels
    from biobullet.forces.compiled import spring_forces_kernel
    kin, loop_rows = loop_kernels()
    return jit.compiled(_loop_torque_py, bind=lambda: {**_step_bindings(), "_kin": kin, "_loop_rows": loop_rows,
                                                       "_spring_forces": spring_forces_kernel(),
                                                       "_learn_miss": jit.compiled(_learn_miss_py),
                                                       **_skip_bindings()})


#: the rows kernels' status when the watch's state check before the solve (`bridge.outside._clean_step_py`) did not
#: find a clean step: nothing was solved — the watch looks at the state in Python (`OutsideWatch.observe`), then
#: the stage solves
UNWATCHED = 11


class RowsRecord(NamedTuple):
    """A bridge's constants of `_rows_torque_py`, passed by address (`at_kernel`): the tree, the function rows
    (`joint_jets.FunctionTable`), M and h (work arrays: the own recursions write them, else the bridge copies
    PyBullet's in), the step gains, and the watch's state check before the solve (`outside.WatchedRows`; its
    max |ẋ|, max |x| written to peaks)."""
    tree: TreeModel
    functions: tuple
    mass: np.ndarray
    bias: np.ndarray
    gains: StepGains
    watched: tuple
    peaks: np.ndarray


class LoopRecord(NamedTuple):
    """`RowsRecord` with the loop rows and springs (`LoopData`) of `_loop_torque_py`."""
    tree: TreeModel
    functions: tuple
    loops: LoopData
    mass: np.ndarray
    bias: np.ndarray
    gains: StepGains
    watched: tuple
    peaks: np.ndarray


class ReadRecord(NamedTuple):
    """`RowsRecord` with the state conversion (`conventions.StateConversion`) and the torques as sent of
    `_read_rows_py`: R_iᵀ τ per spherical joint (n_s × 3) and the 1-DOF joints' τ (n_1)."""
    conversion: tuple
    tree: TreeModel
    functions: tuple
    mass: np.ndarray
    bias: np.ndarray
    gains: StepGains
    watched: tuple
    peaks: np.ndarray
    spherical: np.ndarray
    joints: np.ndarray


def _rows_at_py(address, tau, t, x, xd, xdd, out, prev_x, prev_v, prev_xdd, jump_tolerance):
    """`_rows_torque_py` with the `RowsRecord` at address; its status. With jump_tolerance ≥ 0 the watch's check of
    the state against the last step (x_n, ẋ_n, ẍ_n: prev_*) first: UNWATCHED, nothing solved, unless a clean step
    (`outside._clean_step_py`)."""
    r = _RECORD(address)
    if jump_tolerance >= 0.0 and not _CLEAN(x, xd, prev_x, prev_v, prev_xdd, r.gains.dt, r.gains.weight, r.watched,
                                            jump_tolerance, r.peaks):
        return UNWATCHED
    return _rows_torque(r.tree, r.functions, r.mass, r.bias, tau, t, x, xd, r.gains, xdd, out)


def _loop_at_py(address, tau, t, x, xd, xdd, out, prev_x, prev_v, prev_xdd, jump_tolerance):
    """`_loop_torque_py` with the `LoopRecord` at address, after the watch's check as `_rows_at_py`; its status."""
    r = _RECORD(address)
    if jump_tolerance >= 0.0 and not _CLEAN(x, xd, prev_x, prev_v, prev_xdd, r.gains.dt, r.gains.weight, r.watched,
                                            jump_tolerance, r.peaks):
        return UNWATCHED
    return _loop_torque(r.tree, r.functions, r.loops, r.mass, r.bias, tau, t, x, xd, r.gains, xdd, out)


def _read_rows_py(address, raw, tau, t, x, xd, xdd, out, prev_x, prev_v, prev_xdd, jump_tolerance):
    """`_rows_torque_py` on PyBullet's raw state with the `ReadRecord` at address: (x, ẋ) from `raw`
    (`conventions.PyBulletMap.raw_state`, converted by `conventions.state_kernel` into x and ẋ), the watch's check
    as `_rows_at_py` (UNWATCHED: nothing solved), the rows kernel,
    then — when the solve stood (status 0 or END_MISSED) — the torques as PyBullet takes them into r.spherical
    (R_iᵀ τ per spherical joint, `conventions.spherical_torques_kernel`) and r.joints (the 1-DOF joints' τ); a
    floating base's wrench stays in out. The status of `_rows_torque_py`."""
    r = _RECORD(address)
    conversion = r.conversion
    _convert(raw, conversion.floating, conversion.base_conjugate, conversion.offset, conversion.conjugations,
             conversion.rotations, conversion.starts, x, xd)
    if jump_tolerance >= 0.0 and not _CLEAN(x, xd, prev_x, prev_v, prev_xdd, r.gains.dt, r.gains.weight, r.watched,
                                            jump_tolerance, r.peaks):
        return UNWATCHED
    status = _rows_torque(r.tree, r.functions, r.mass, r.bias, tau, t, x, xd, r.gains, xdd, out)
    if status == 0 or status == END_MISSED:
        _spherical_torques(out, conversion.rotations, conversion.starts, r.spherical)
        joints = r.joints
        base_v = r.tree.base[1]
        for j in range(joints.shape[0]):
            joints[j] = out[base_v + j]
    return status


class PlainRecord(NamedTuple):
    """The constants of `_plain_read_py`: the state conversion (`conventions.StateConversion`), the entries the
    watch's plain check tests from (jb, vb: after a floating base and the spherical joints), a floating base's COM
    offset p_i (empty without one) and the check's max |ẋ|, max |x| (peaks, written)."""
    conversion: tuple
    jb: int
    vb: int
    offset: np.ndarray
    peaks: np.ndarray


def _plain_read_py(address, raw, x, xd, prev_x, prev_v, dt, weight, jump_tolerance):
    """The plan without rows on a floating base or spherical joints (`Bridge._apply_plain`): (x, ẋ) from PyBullet's
    raw state (`conventions.state_kernel`), then the watch's plain check against the last step (x_n, ẋ_n: prev_*;
    `outside.plain_check_kernel`) with the `PlainRecord` at address — one call from Python instead of two. Returns
    True for a moving body's step (no jump, not blind, not the same state, finite, no runaway: what
    `OutsideWatch.check_runaway` passes after its one test; peaks ← max |ẋ|, max |x|), else False: the watch
    looks at (x, ẋ) itself."""
    r = _RECORD(address)
    conversion = r.conversion
    _convert(raw, conversion.floating, conversion.base_conjugate, conversion.offset, conversion.conjugations,
             conversion.rotations, conversion.starts, x, xd)
    peak_v, peak_x, same, code = _PLAIN_CHECK(x, xd, prev_x, prev_v, r.jb, r.vb, dt, weight, jump_tolerance, r.offset)
    r.peaks[0] = peak_v
    r.peaks[1] = peak_x
    return not (code != 0 or same) and peak_v <= _RUNAWAY_RATE and peak_x <= _POSITION_LIMIT


def _rows_entry_py(address, tau, t, x, xd, xdd, out, prev_x, prev_v, prev_xdd, jump_tolerance):
    """`_rows_at_py` / `_loop_at_py` (bound as _AT) from Python, compiled without the runtime (`at_entry`)."""
    return _AT(address, tau, t, x, xd, xdd, out, prev_x, prev_v, prev_xdd, jump_tolerance)


def _read_rows_entry_py(address, raw, tau, t, x, xd, xdd, out, prev_x, prev_v, prev_xdd, jump_tolerance):
    """`_read_rows_py` (bound as _AT) from Python, compiled without the runtime (`at_entry`)."""
    return _AT(address, raw, tau, t, x, xd, xdd, out, prev_x, prev_v, prev_xdd, jump_tolerance)


def _plain_entry_py(address, raw, x, xd, prev_x, prev_v, dt, weight, jump_tolerance):
    """`_plain_read_py` (bound as _AT) from Python, compiled without the runtime (`at_entry`)."""
    return _AT(address, raw, x, xd, prev_x, prev_v, dt, weight, jump_tolerance)


#: each record kernel's entry from Python
_ENTRIES = {"_rows_at_py": _rows_entry_py, "_loop_at_py": _rows_entry_py, "_read_rows_py": _read_rows_entry_py,
            "_plain_read_py": _plain_entry_py}


def _at_bindings(record) -> dict:
    """The callees of the kernel `at_kernel` gives for `record`."""
    from biobullet.bridge.outside import clean_step_kernel
    if isinstance(record, PlainRecord):
        from biobullet.bridge.lifecycle import RUNAWAY_RATE
        from biobullet.bridge.outside import POSITION_LIMIT, plain_check_kernel
        from biobullet.conventions import state_kernel
        return {"_convert": state_kernel(), "_PLAIN_CHECK": plain_check_kernel(), "_RUNAWAY_RATE": RUNAWAY_RATE,
                "_POSITION_LIMIT": POSITION_LIMIT}
    if isinstance(record, LoopRecord):
        return {"_loop_torque": loop_torque_kernel(), "_CLEAN": clean_step_kernel()}
    if isinstance(record, ReadRecord):
        from biobullet.conventions import spherical_torques_kernel, state_kernel
        return {"_rows_torque": rows_torque_kernel(), "_convert": state_kernel(),
                "_spherical_torques": spherical_torques_kernel(), "_CLEAN": clean_step_kernel()}
    return {"_rows_torque": rows_torque_kernel(), "_CLEAN": clean_step_kernel()}


def at_kernel(record) -> tuple:
    """(the kernel of `record` — `_rows_at_py` for a RowsRecord, `_loop_at_py` for a LoopRecord, `_read_rows_py`
    for a ReadRecord — its record as a `core.jit_pair` record that borrows the arrays, the record's address).
    Passing one integer instead of the ≈ 15–30 arrays of the records saves their conversion at every call from
    Python (≈ 0.05 µs an array); the caller keeps `record` and the packed record alive while it uses the address.
    The kernel reads the record by a reader of its numba type (a variant per type: one in practice)."""
    import hashlib
    from biobullet.core.jit_pair import pack_record, record_reader, record_type
    from biobullet.muscles.dynamics import NoFields
    function = {LoopRecord: _loop_at_py, ReadRecord: _read_rows_py, PlainRecord: _plain_read_py}.get(type(record),
                                                                                                  _rows_at_py)
    layout = (hashlib.sha256(str(record_type(record, NoFields())).encode()).hexdigest()[:16] if jit.compiling()
              else "")
    variant = f"record_{layout}" if layout else ""
    kernel = jit.compiled(function, variant=variant, nogil=False,
                          bind=lambda: {"_RECORD": record_reader(record, NoFields()), **_at_bindings(record)})
    packed, address = pack_record(record, NoFields(), borrowed=True)
    if not jit.compiling():   # (its uncompiled form: nothing to convert)
        return AtKernel(kernel, kernel), packed, address
    entry = jit.compiled(_ENTRIES[function.__name__], variant=f"{function.__name__}_{variant}", nogil=False,
                         nrt=False, bind=lambda: {"_AT": kernel})
    return AtKernel(kernel, entry), packed, address


class AtKernel(NamedTuple):
    """`at_kernel`'s kernel of a record and its entry from Python (`at_entry`)."""
    kernel: object
    entry: object


def at_entry(kernels: AtKernel, *args):
    """The per-step entry from Python of an `at_kernel` kernel for the types of `args` (called once with them,
    `core.jit.direct_entry`): a thin kernel over it compiled without numba's reference-counting runtime
    (`core.jit.compiled(nrt=False)`, as the public calls' `pipeline.stages.forward_entry_py`): its wrapper converts
    each of the 7–9 arrays without a memory-info record, and the kernels below count no references on them.
    Measured hot, paired with the runtime's entry (load ≈ 10): 0.80–0.85 of the call on the rows kernels
    (coupled arm, four-bar, polynomial pendulum), 0.65 on the plain read (humanoids). The kernel is compiled first,
    under its own flags (a callee first compiled inside the entry's compile would take its runtime switch)."""
    kernel, entry = kernels
    if entry is not kernel and not jit.is_cached(entry, *args):
        jit.matched_entry(kernel, *args)
    return jit.direct_entry(entry, *args)


#: quaternion → rotation matrix as `_base_wrench_py` calls it (bound to the compiled `spatial.rotations` function)
_rotation = None


def _base_wrench_py(x, torque, offset, out):
    """A floating base's wrench τ[:6] (force at the root-link origin, moment; root frame, N and N·m) for
    applyExternalForce / applyExternalTorque(WORLD_FRAME) on PyBullet's base: out = [R f, R (m − p_i × f), R p_i + r]
    (world force, world moment about the COM, the COM's world position; R, r: the root's rotation and position from
    x's pose, p_i: the COM offset in the root-link frame). The same products as numpy's (3 × 3) @ 3 and cross, one
    call instead of ≈ 10 µs of numpy calls on 3-vectors per step."""
    rotation = _rotation(x[3:7])
    f0, f1, f2 = torque[0], torque[1], torque[2]
    m0 = torque[3] - (offset[1] * f2 - offset[2] * f1)
    m1 = torque[4] - (offset[2] * f0 - offset[0] * f2)
    m2 = torque[5] - (offset[0] * f1 - offset[1] * f0)
    for i in range(3):
        out[i] = rotation[i, 0] * f0 + rotation[i, 1] * f1 + rotation[i, 2] * f2
        out[3 + i] = rotation[i, 0] * m0 + rotation[i, 1] * m1 + rotation[i, 2] * m2
        out[6 + i] = (rotation[i, 0] * offset[0] + rotation[i, 1] * offset[1] + rotation[i, 2] * offset[2]) + x[i]


def base_wrench_kernel():
    """The compiled `_base_wrench_py`."""
    from biobullet.spatial.rotations import quaternion_to_matrix
    return jit.compiled(_base_wrench_py, bind={"_rotation": quaternion_to_matrix})


def _linear_own_py(meta, body, gravity, tau, null, flat, kp, kd, limit, work, out):
    """`linear_torque` (the null-space kernel) with M and h from the tree recursions, in one call (status as
    the null-space kernel's); flat = [x, ẋ] (2n, as read from PyBullet: no reshape per step in Python)."""
    n = tau.shape[0]
    state = flat.reshape((2, n))
    mass, bias = _tree(meta, body, state[0], state[1], state[1], gravity, n, bool(True), bool(True), bool(False))
    return _null(mass, bias, tau, null, state, kp, kd, limit, work, out)


def linear_own_kernel():
    """The compiled `_linear_own_py`."""
    from biobullet.algorithms.compiled_kernels import tree_dynamics_kernel
    return jit.compiled(_linear_own_py, bind={"_tree": tree_dynamics_kernel(), "_null": solve.null_space_kernel()})


def kernels():
    """(linear_rows, kkt_torque, linear_torque): numba-compiled (cached on disk), or the same functions run by
    Python with BIOBULLET_NUMBA=0 (debugging)."""
    return (jit.compiled(_linear_rows_py), jit.compiled(_kkt_torque_py, bind={"_schur": solve.schur_kernel()}),
            solve.null_space_kernel())


pack_linear = solve.null_space_basis

__all__ = ["base_wrench_kernel", "END_MISSED", "LOOP_EVALUATED", "LOOP_GAP", "LOOP_MISS", "LOOP_RATIO", "LOOP_SIZE", "LOOP_SKIPPED", "LoopData", "LoopRecord", "ReadRecord",
           "RowsRecord", "StepGains",
           "TreeModel", "end_newton_kernel", "kernels", "linear_own_kernel", "loop_torque_kernel", "pack_linear",
           "AtKernel", "at_entry", "at_kernel", "rows_torque_kernel"]
