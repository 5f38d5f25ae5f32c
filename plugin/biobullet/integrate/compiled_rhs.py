"""One compiled call for the whole right-hand side of a reduced closed-loop model (the integrators' hot path).

For a model whose coordinate map holds loop resolvers (θ_dep implicit in the independent coordinates; all `<loop>`
elements of a model file form one resolver, a map built by hand may hold several) — a fixed-base map that is one
resolver alone (`_fused_rhs_py`), or any sequence of loop resolvers and explicit joint functions (before a loop,
computing its known joints; between loops; after them, taking their dependent joints as inputs), on a fixed or a
free-floating base, in the generic `CoordinateMap`'s order (`_staged_rhs_py`; a free base's loops are solved with
the base held at the identity, `_held_base_tree`, as the generic resolver does) —, whose force elements are
point-to-point
springs, joint torques, joint spring-dampers, joint stops, ground contacts with built-in laws
(`contact.kernels._ground_forces_py`, the contact state given) and third-party elements with a compiled kernel
(`forces.compiled._plugin_forces_py`, called by address), integrated with the "reduced" formulation,
everything `System._rhs` does per call runs in one numba function:

    functions before the loop: θ, G, θ̇, γ              (`model.joint_jets._explicit_jets_py`)
    loop Newton from the cached solution, G, θ̇, γ      (`LoopResolver._resolve_lean`'s kernel, unchanged)
    further functions and loops, each loop from its own resolver's cache
    (then the kinematics again for springs and contacts, if functions followed the last loop or the base floats)
    then the pipeline's stages (`pipeline.stages`, inlined) on the model's compiled arrays and the run's ForceRows:
    τ = Σ springs and ground contacts (from the same kinematics) + joint torques τ(t) + joint spring-dampers and stops
        + plug-in elements' kernels                      (`_applied_forces_py`)
    M(θ), RNEA(θ, θ̇, γ)                                 (`compiled_kernels.tree_dynamics`)
    Q = Gᵀ τ; M_r = Gᵀ M G, h_r = Gᵀ RNEA, M_r v̇ = Q − h_r   (`_generalized_forces_py`, `_solve_stage_py`)
    ẏ = (q̇ — v, or with a free base (R v_lin, ½ z ⊗ (ω, 0), v_θ) —, v̇, θ̇_dep, G_dep v̇ + γ_dep, input power,
         dissipated power)

The Python glue between those kernels (jets, caches, checks, the per-element loop) cost twice the kernels
themselves; this is the same algebra with the same kernels, checked against the generic path in
tests/unit/test_compiled_rhs.py. A call returns None — and the generic path then decides, continues, backtracks
or raises its own clear error — whenever the resolver's hot path would hand over (large input change, Newton not
contracting at once, ill-conditioned loop), a spring has zero length, M_r is not positive definite or anything
is not finite (an expression outside its domain included). Any other model, or numba missing/disabled
(BIOBULLET_NUMBA=0), keeps the generic path.

`CompiledReducedRHS.tree_states` computes the loop-dependent joints of a whole trajectory's samples in one
compiled pass (`_loop_positions_py`: plain Newton on positions from a second-order prediction off the previous
sample, rates from the last Jacobian; about two kinematics passes per sample; trajectory output only), handing a
sample it cannot take to the generic path and resuming after it, stage by stage: explicit functions are evaluated
over all samples at once (`compiled_explicit.explicit_states_batch`) and enter the following loops' passes as given
joints. Models with explicit joint functions instead of a loop: `compiled_explicit.py` (the pipeline's right-hand side;
both take the pipeline's state prologue and q̇: `pipeline.stages._state_into_py`, `_position_rate_py`). The single-loop entry is
also offered to the compiled DOP853 stepper (`stepper_arguments` / `take_cache`; `integrate/compiled_stepper.py`),
which calls it inside numba for whole runs of steps.

numba's on-disk cache of these kernels is keyed on this file and on the source of the kernels bound into them
(`core.jit.compiled`).
"""
from __future__ import annotations

import numpy as np

from biobullet.algorithms import compiled_kernels as _compiled
from biobullet.core import jit

_EMPTY = np.zeros(0)

from biobullet.pipeline.data import DataArrays

#: their multi-DOF block table (`pipeline.compiled_model.multi_dof_blocks`) for this path's only one, a root free base
_FREE_BASE_BLOCKS = np.array([[_compiled.FREE, 0, 0]], dtype=np.int64)
_FUSED = None


def _loop_state_py(y, nq, independent, n_joints):
    """(finite, θ, θ̇, G, γ) of the joints from a loop-map state y = (q, v, …): the independent joints set (G has
    identity rows there), the others zero for the stages to fill; finite False when y is not (compiled inline into
    both loop entries)."""
    theta = np.zeros(n_joints)
    rate = np.zeros(n_joints)
    gradient = np.zeros((n_joints, nq))
    gamma = np.zeros(n_joints)
    for i in range(y.shape[0]):
        if not np.isfinite(y[i]):
            return False, theta, rate, gradient, gamma
    for j in range(nq):
        theta[independent[j]] = y[j]
        rate[independent[j]] = y[nq + j]
        gradient[independent[j], j] = 1.0
    return True, theta, rate, gradient, gamma


def _loop_tail_py(y, nq, shadow_rows, theta, rate, gradient, gamma, rot, pos, sub, pipeline, t):
    """(status, ẏ) from the tree's jets x, G, ẋ, γ (`theta`, `gradient`, `rate`, `gamma`: n_config, n_tangent × nv,
    n_tangent, n_tangent) and the kinematics (rot, pos, sub) at x, by the pipeline's stages: the applied forces
    (`_applied_forces_py`), the tree dynamics, Q = Gᵀ τ and the projected solve (`_solve_stage_py`) — the part
    shared by both loop entries. pipeline = (the model's CompiledModel, the run's ForceRows, a DataArrays whose τ,
    rhs, factor and power buffers serve). nv = G's columns; nq ≠ nv means a free base (this path's only multi-DOF
    joint): q̇ = (R v_lin, ½ z ⊗ (ω, 0), v_θ) (`pipeline.stages._position_rate_py`)."""
    model, forces, work = pipeline
    size = y.shape[0]
    nv = gradient.shape[1]
    data = DataArrays(theta, rate, gradient, gamma, work.tau, work.rhs, work.low, work.power)
    if _APPLIED(model, data, forces, t, rot, pos, sub) != 0:
        return 1, np.zeros(0)
    # bool(): not literals, so the tree kernel keeps one specialisation
    mass, bias = _TREE(model.tree_meta, model.tree_body, theta, rate, gamma, model.gravity, model.n_tangent,
                       bool(True), bool(True), bool(True))
    accel = np.empty(nv)
    if not _SOLVE(model, data, mass, bias, _GENERALIZED(model, data), accel):
        return 1, np.zeros(0)
    out = np.empty(size)
    free = 1 if nq != nv else 0
    _POSITION_RATE(y, nq, 7 * free, 6 * free, _FREE_BASE_BLOCKS[:free], theta, rate, out)
    for j in range(nv):
        out[nq + j] = accel[j]
    m = shadow_rows.shape[0]
    n_pv = nq + nv
    for i in range(m):
        row = shadow_rows[i]
        out[n_pv + i] = rate[row]
        s = gamma[row]
        for c in range(nv):
            s += gradient[row, c] * accel[c]
        out[n_pv + m + i] = s
    out[size - 2] = data.power[0]
    out[size - 1] = data.power[1]
    for i in range(size):
        if not np.isfinite(out[i]):
            return 1, np.zeros(0)
    return 0, out


def _fused_rhs_py(y, nq, independent, n_joints, shadow_rows,
                  meta, body, n_tangent, dep, known, known0, dep0, sensitivity, u0, h0, anchor, tolerance, loose,
                  warm_condition, revolute, condition_limit, l_ancestry, point_body, offset, basis, kinds,
                  row_start, n_rows, pipeline, t):
    """(status, condition, sensitivity, h, u, θ_known, θ_dep, ẏ) of a map that is the loop alone: status 0 on
    success, else the generic path must evaluate this state (nothing of the resolver's cache is changed by a failed
    call). pipeline: as `_loop_tail_py`."""
    nd = dep.shape[0]
    fail = (1, np.inf, np.zeros((nd, known.shape[0])), np.zeros(nd), np.zeros(0), np.zeros(0), np.zeros(0),
            np.zeros(0))
    finite, theta, rate, gradient, gamma = _STATE(y, nq, independent, n_joints)
    if not finite:
        return fail
    status, condition, sens, h, u, known_new, dep_new, rot, pos, sub, vel, acc = _LEAN(
        meta, body, n_tangent, theta, rate, gradient, gamma, dep, known, known0, dep0, sensitivity, u0, h0,
        anchor, tolerance, loose, warm_condition, revolute, condition_limit, l_ancestry, point_body, offset, basis,
        kinds, row_start, n_rows)
    if status != 0:
        return fail
    status, out = _TAIL(y, nq, shadow_rows, theta, rate, gradient, gamma, rot, pos, sub, pipeline, t)
    if status != 0:
        return fail
    return 0, condition, sens, h, u, known_new, dep_new, out


def _staged_rhs_py(y, nq, nv, base_q, base_v, independent, n_config, shadow_rows,
                   meta, body, n_tangent, stages, table, inputs, coef, t,
                   deps, knowns, known0s, dep0s, sensitivities, u0s, h0s, anchors, scalars, revolutes,
                   condition_limit, rows, pipeline,
                   conditions, sensitivities_out, h_out, u_out, knowns_out, deps_out, curved):
    """(status, ẏ) of a map of several stages in the generic `CoordinateMap`'s order — `stages` rows (0, a, b):
    the explicit joint functions of `table` rows a … b−1 (`_explicit_jets_py`'s format: they may compute a loop's
    known joints, or take loop-dependent joints as inputs); (1, k, 0): loop resolver k, whose data are entry k of
    the tuples `deps` … `rows` (`scalars[k]` = its residual tolerance, loose acceptance, cached condition) — on a
    fixed base or a free base (`base_q`, `base_v` = 7, 6: its pose and twist lead y's q and v, as
    `compiled_explicit`'s kernel takes them). The loop kernel (`_LEAN`, unchanged) sees the joints through the
    view x[base_q − base_v:], where joint j sits at base_v + j as in ẋ (`deps`, `knowns` carry that offset), and
    the packed tree `meta`, `body` holds a free base at the identity (`_held_base_tree`: loop equations are
    invariant under a rigid motion of the whole tree, as the generic resolver evaluates them). On success each
    resolver's new cache is written into `conditions` … `curved` (entry k; `curved[k]` = 0: no curvature term)
    for the caller to store; status 1 — nothing of the resolvers' caches to change — where the generic path must
    evaluate this state. pipeline: as `_loop_tail_py`. A separate entry from `_fused_rhs_py` so that the single-loop hot path keeps its
    argument list and code (measured: carrying the stages there cost the four-bar ≈ 1 µs of its ≈ 15 µs per
    call)."""
    fail = (1, np.zeros(0))
    blocks = _FREE_BASE_BLOCKS[:1 if base_q else 0]
    x = np.empty(n_config)
    xd = np.empty(n_tangent)
    gradient = np.empty((n_tangent, nv))
    gamma = np.empty(n_tangent)
    if not _REDUCED_STATE(y[:nq], y[nq:nq + nv], base_q, base_v, blocks, independent, x, xd, gradient, gamma):
        return fail
    view = x[base_q - base_v:]   # the loop kernel's joint layout: index = tangent index
    rot = np.empty((0, 3, 3))
    pos = np.empty((0, 3))
    sub = np.empty((6, 0))
    fresh = False   # rot, pos, sub are the tree's kinematics at the current x
    for s in range(stages.shape[0]):
        if stages[s, 0] == 0:
            if _JETS(table[stages[s, 1]:stages[s, 2]], inputs, coef, t, base_q, base_v, x, xd, gradient,
                     gamma) != 0:
                return fail   # an expression not finite: the generic path raises its EvaluationError
            fresh = False
            continue
        k = stages[s, 1]
        ancestry_k, point_body, offset, basis, kinds, row_start, n_rows = rows[k]
        status, condition, sens, h, u, known_new, dep_new, rot, pos, sub, vel, acc = _LEAN(
            meta, body, n_tangent, view, xd, gradient, gamma, deps[k], knowns[k], known0s[k], dep0s[k],
            sensitivities[k], u0s[k], h0s[k], anchors[k], scalars[k, 0], scalars[k, 1], scalars[k, 2],
            revolutes[k], condition_limit, ancestry_k, point_body, offset, basis, kinds, row_start, n_rows)
        if status != 0:
            return fail
        conditions[k] = condition
        sensitivities_out[k][:, :] = sens
        knowns_out[k][:] = known_new
        deps_out[k][:] = dep_new
        curved[k] = u.shape[0]
        if u.shape[0]:
            u_out[k][:] = u
            h_out[k][:] = h
        fresh = base_q == 0   # a free base was held at the identity there
    forces = pipeline[1]
    if (forces.spring_bodies.shape[0] or forces.contact_index.shape[0] or forces.plugin_addresses.shape[0]) \
            and not fresh:
        model = pipeline[0]
        rot, pos, sub, _, _ = _KIN(model.tree_meta, model.tree_body, x, xd, n_tangent, bool(False))
    return _TAIL(y, nq, shadow_rows, x, xd, gradient, gamma, rot, pos, sub, pipeline, t)


def _held_base_tree(model) -> tuple[np.ndarray, np.ndarray]:
    """(meta, body) of `compiled_kernels.pack` for the loop kernels on a free-base model, over the joint layout
    x[1:] of `_staged_rhs_py` (n_tangent entries, joint j at 6 + j): the base becomes a joint that never moves
    (prismatic, zero axis, identity origin: identity placement, a zero motion-subspace column), so the loop rows
    are evaluated with the base at the identity and at rest, as `LoopResolver.terms` evaluates them."""
    meta, body = (a.copy() for a in _compiled.pack(model))
    meta[0, 1], meta[0, 2], meta[0, 3], meta[0, 4] = _compiled.PRISMATIC, 0, 0, 1
    body[0, _compiled._AXIS:_compiled._AXIS + 3] = 0.0
    body[0, _compiled._ROT:_compiled._ROT + 9] = np.eye(3).reshape(9)
    body[0, _compiled._TRANS:_compiled._TRANS + 3] = 0.0
    meta[1:, 2] -= 1   # q indices into x[1:]; tangent indices unchanged
    return meta, body


def _held_base_lean(model, resolver):
    """`LoopResolver._lean`'s (kernel, meta, body, n_tangent, row data) for a free-base model (whose resolver
    has none: its generic hot path works on the joints alone): the same compiled kernel over `_held_base_tree`,
    or None (numba off, or loop types the kernel does not evaluate)."""
    from biobullet.constraints.loop_kernels import _kernels
    from biobullet.constraints.newton_kernel import _lean_kernel
    kernels = _kernels()
    v = resolver._vector
    kernel = _lean_kernel(kernels) if kernels is not None and v is not None else None
    if kernel is None:
        return None
    meta, body = _held_base_tree(model)
    return (kernel, meta, body, model.n_tangent,
            (v.k_ancestry, v.k_body, v.offset, v.basis, v.k_kinds, v.k_rows, v.n_rows))


def _fused_kernel(lean_kernel):
    """(the compiled `_fused_rhs_py`, the compiled `_staged_rhs_py`) (loaded from numba's on-disk cache after the
    first compile), or None."""
    global _FUSED
    if _FUSED is None:
        from biobullet.constraints.loop_kernels import tree_kinematics_kernel
        from biobullet.model.joint_jets import jets_kernel
        from biobullet.pipeline import kernels as stages
        # the stages that take the pipeline's tuples inlined (`pipeline.kernels`: no per-call reference counting)
        callees = {"_TREE": _compiled.tree_dynamics_kernel(), "_APPLIED": stages.applied_forces_kernel(inline=True),
                   "_GENERALIZED": stages.generalized_forces_kernel(inline=True),
                   "_SOLVE": stages.solve_kernel(inline=True), "_POSITION_RATE": stages.position_rate_kernel()}
        jets, kinematics, reduced_state = jets_kernel(), tree_kinematics_kernel(), stages.state_kernel()
        if None in (*callees.values(), jets, kinematics, reduced_state):
            _FUSED = False
        else:   # bound through core.jit, which also keys the disk cache on these callees
            tail = jit.compiled(_loop_tail_py, bind=callees, inline=True)
            state = jit.compiled(_loop_state_py, inline=True)
            fused = staged = None
            if tail is not None and state is not None:
                fused = jit.compiled(_fused_rhs_py, bind={"_LEAN": lean_kernel, "_TAIL": tail, "_STATE": state})
                staged = jit.compiled(_staged_rhs_py, bind={"_LEAN": lean_kernel, "_TAIL": tail, "_JETS": jets,
                                                            "_KIN": kinematics,
                                                            "_REDUCED_STATE": reduced_state})
            _FUSED = (fused, staged) if fused is not None and staged is not None else False
    return _FUSED or None


_POSITIONS = None
_NEWTON_ITERATIONS = 12
#: largest change of an independent coordinate between samples, and largest Newton step, of the output pass
MAX_SAMPLE_STEP = 0.05


def _loop_positions_py(q, v, independent, n_joints, dep, known, guess, meta, body, n_tangent, l_ancestry,
                       point_body, offset, basis, kinds, row_start, n_rows):
    """θ and θ̇ (n, n_joints) at n samples by plain Newton on the loop rows (positions), then
    θ̇_dep = −Φ_dep⁻¹ Φ_known θ̇_known — trajectory output only: no G, γ or curvature.

    Each sample starts from the previous one's solution moved along its sensitivity S = −Φ_dep⁻¹ Φ_known to
    second order (θ_dep ≈ θ_dep' + S Δθ_known + the change of S over the previous step; `guess` for the first
    sample) and iterates until the step is at round-off. One LU factorisation per iteration gives the step, S
    and the rates together; the rates and S are taken from the last iteration, whose step is a few ε, so they are
    those at the solution to round-off. About two kinematics passes per sample (five before). Returns
    (θ, θ̇, done): from sample `done` on (no convergence, singular Φ_dep, a large step between samples or within
    Newton) the caller takes over."""
    n, nq = q.shape
    nd = dep.shape[0]
    nk = known.shape[0]
    theta_all = np.zeros((n, n_joints))
    rate_all = np.zeros((n, n_joints))
    current = guess.copy()
    sensitivity = np.zeros((nd, nk))       # −Φ_dep⁻¹ Φ_known at the previous sample's solution
    sensitivity_old = np.zeros((nd, nk))   # … and at the one before
    a = np.empty((nd, nd))
    columns = np.empty((nd, 2 + nk))   # [Φ | Φ_known | Φ_known θ̇_known]; the LU overwrites it by the solution
    # the placement pass of the loop kinematics (positions only), the loop rows and the LU into buffers allocated
    # once: `_PLACE_BODY` per body is `_tree_kinematics_kernel_py` without rates, and the rows' and the LU's
    # per-call allocations cost more than their algebra at this size
    nb = meta.shape[0]
    rot = np.empty((nb, 3, 3))
    pos = np.empty((nb, 3))
    sub = np.zeros((6, n_tangent))   # each body writes only its own columns
    loc = np.empty((3, 3))
    jr = np.empty((3, 3))
    no_motion = np.zeros((1, 6))
    phi = np.zeros(n_rows)
    jac = np.zeros((n_rows, n_tangent))
    no_bias = np.zeros(0)
    work = np.zeros((6, 2, 3))
    jl = np.zeros((2, 3, n_tangent))
    theta = np.zeros(n_joints)
    rate = np.zeros(n_joints)
    for s in range(n):
        theta[:] = 0.0
        rate[:] = 0.0
        for j in range(nq):
            theta[independent[j]] = q[s, j]
            rate[independent[j]] = v[s, j]
        if s > 0:
            jump = 0.0
            for j in range(nq):
                jump = max(jump, abs(q[s, j] - q[s - 1, j]))
            if jump > MAX_SAMPLE_STEP:   # far from the last solution: the branch-safe generic path decides
                return theta_all, rate_all, s
            # second order along the path: S changed by S' − S'' over the previous known step δ; this step
            # Δ ≈ α δ, so θ_dep ≈ θ_dep' + S' Δ + ½ α (S' − S'') Δ (exact to O(Δ³) for one known coordinate)
            along = 0.0
            if s > 1:
                dd, dp = 0.0, 0.0
                for c in range(nk):
                    d_prev = theta_all[s - 1, known[c]] - theta_all[s - 2, known[c]]
                    dd += d_prev * d_prev
                    dp += d_prev * (theta[known[c]] - theta_all[s - 1, known[c]])
                if dd > 0.0 and abs(dp) <= 4.0 * dd:
                    along = 0.5 * dp / dd
            for i in range(nd):
                move = 0.0
                for c in range(nk):
                    delta = theta[known[c]] - theta_all[s - 1, known[c]]
                    move += (sensitivity[i, c] + along * (sensitivity[i, c] - sensitivity_old[i, c])) * delta
                current[i] += move
        for i in range(nd):
            theta[dep[i]] = current[i]
        converged = False
        previous = np.inf
        solution = columns
        for _ in range(_NEWTON_ITERATIONS):
            for b in range(nb):
                _PLACE_BODY(meta, body, theta, b, loc, jr, rot, pos, sub)
            _LOOP_ROWS_INTO(rot, pos, sub, no_motion, no_motion, l_ancestry, point_body, offset, basis, kinds,
                            row_start, True, False, phi, jac, no_bias, work, jl)
            for r in range(nd):
                for c in range(nd):
                    a[r, c] = jac[r, dep[c]]
                columns[r, 0] = phi[r]
                product = 0.0
                for c in range(nk):
                    columns[r, 1 + c] = jac[r, known[c]]
                    product += jac[r, known[c]] * rate[known[c]]
                columns[r, 1 + nk] = product
            ok = _LU_INTO(a, columns)
            if not ok:
                return theta_all, rate_all, s
            size = 0.0
            scale = 1.0
            for i in range(nd):
                step = solution[i, 0]
                if not abs(step) <= MAX_SAMPLE_STEP:   # Newton far from home: hand over rather than risk a branch
                    return theta_all, rate_all, s
                theta[dep[i]] -= step
                size = max(size, abs(step))
                scale = max(scale, abs(theta[dep[i]]))
            # at round-off: a step of a few ε, or one that stopped shrinking below 1e-14 (the residual's floor)
            if size <= 4e-16 * scale or (size <= 1e-14 * scale and size > 0.5 * previous):
                converged = True
                break
            previous = size
        if not converged:
            return theta_all, rate_all, s
        for i in range(nd):
            rate[dep[i]] = -solution[i, 1 + nk]
            current[i] = theta[dep[i]]
            for c in range(nk):
                sensitivity_old[i, c] = sensitivity[i, c]
                sensitivity[i, c] = -solution[i, 1 + c]
        theta_all[s] = theta
        rate_all[s] = rate
    return theta_all, rate_all, n



def _positions_kernel():
    global _POSITIONS
    if _POSITIONS is None:
        from biobullet.constraints.loop_kernels import rows_into_kernel
        from biobullet.constraints.newton_kernel import _lu_solve_into_py
        rows = rows_into_kernel()
        solve = jit.compiled(_lu_solve_into_py, inline=True)
        place = _compiled.place_body_kernel()
        if rows is None or solve is None or place is None:
            _POSITIONS = False
        else:
            _POSITIONS = jit.compiled(_loop_positions_py, bind={
                "_PLACE_BODY": place, "_LOOP_ROWS_INTO": rows, "_LU_INTO": solve}) or False
    return _POSITIONS or None

_STATES = None


def _loop_states_py(q, v, independent, n_joints, meta, body, n_tangent, dep, known, known0, dep0, sensitivity, u0,
                    h0, anchor, tolerance, loose, warm_condition, revolute, condition_limit, l_ancestry, point_body,
                    offset, basis, kinds, row_start, n_rows):
    """θ and θ̇ (n, n_joints) at n samples (q, v: (n, nq)), the loop Newton warm-started from the previous
    sample (the resolver's hot-path kernel). Returns (θ, θ̇, done, cache after the last done sample): samples from
    `done` on were not evaluated (the kernel handed over there: the generic path takes that sample)."""
    n, nq = q.shape
    theta_all = np.zeros((n, n_joints))
    rate_all = np.zeros((n, n_joints))
    condition = warm_condition
    for s in range(n):
        theta = np.zeros(n_joints)
        rate = np.zeros(n_joints)
        gradient = np.zeros((n_joints, nq))
        gamma = np.zeros(n_joints)
        for j in range(nq):
            theta[independent[j]] = q[s, j]
            rate[independent[j]] = v[s, j]
            gradient[independent[j], j] = 1.0
        status, condition_new, sens, h, u, known_new, dep_new, _, _, _, _, _ = _LEAN(
            meta, body, n_tangent, theta, rate, gradient, gamma, dep, known, known0, dep0, sensitivity, u0, h0,
            anchor, tolerance, loose, condition, revolute, condition_limit, l_ancestry, point_body, offset, basis,
            kinds, row_start, n_rows)
        if status != 0:
            return theta_all, rate_all, s, known0, dep0, sensitivity, condition, u0, h0
        theta_all[s] = theta
        rate_all[s] = rate
        known0, dep0, sensitivity, condition, u0, h0 = known_new, dep_new, sens, condition_new, u, h
    return theta_all, rate_all, n, known0, dep0, sensitivity, condition, u0, h0


class CompiledReducedRHS:
    """`__call__(t, y)` → ẏ of the compiled path, or None where the generic path must evaluate the state.

    Build with :meth:`for_system`, which returns None for models this path does not cover."""

    def __init__(self, system, resolvers, leans, springs, torques, joint_springs=(), joint_stops=(),
                 contacts=(), stages=None, plugins=None) -> None:
        """`resolvers`: the map's loop resolvers in its order, `leans` their (kernel, meta, body, n_tangent, rows)
        (`LoopResolver._lean`, or `_held_base_tree`'s for a free base); `stages`: None for a fixed-base map that is
        one loop resolver alone (`_fused_rhs_py`), else ((kind, a, b) rows of `_staged_rhs_py`, the explicit
        functions' `_explicit_jets_py` table in map order); `plugins`: `forces.compiled.pack_plugins` of the
        third-party elements' kernels (None: none)."""
        from biobullet.constraints.implicit import CONDITION_LIMIT
        from biobullet.pipeline.force_rows import pack_force_rows

        model = system.model
        cmap = model.coordinate_map
        self.resolvers = tuple(resolvers)
        self.resolver = self.resolvers[0] if len(self.resolvers) == 1 else None
        self._condition_limit = CONDITION_LIMIT
        kernel, meta, body, n_tangent, rows_data = leans[0]
        kernels = _fused_kernel(kernel)
        self._lean = kernel   # the compiled loop kernel, bound into `_loop_states_py` too
        self._kernel = kernels[0] if kernels else None
        self._lean_args = (meta, body, n_tangent)
        self._rows = rows_data
        self._all_rows = tuple(lean[4] for lean in leans)
        self._torques = [(torque, torque._indices(model)[1]) for torque in torques]
        self._constant = all(torque.value is not None for torque in torques)
        # the pipeline's arguments: the model's compiled arrays, the run's force rows (τ(t) and the contacts'
        # state rows refreshed before each call), buffers of a Data of its own
        forces = pack_force_rows(model, springs, joint_springs, joint_stops, contacts, plugins)
        self._constant_tau = np.zeros(model.n_tangent)
        for torque, k in self._torques:
            if torque.value is not None:
                self._constant_tau[k] += torque.value
        forces.tau_time[:] = self._constant_tau
        self._pipeline = (model.compiled, forces, model.data().arrays)
        self._entry = None   # the kernel's direct entry (`_call`)
        base_q, base_v = (7, 6) if system.floating else (0, 0)
        self._base = (base_q, base_v)
        # the last few solutions the kernel reached (a retry starts from the nearest: see `__call__`), and where
        # the resolver's known joints sit in y (one loop resolver)
        self._recent: list = []
        independent = list(cmap.independent)
        resolver = self.resolver
        self._known_in_y = np.array([base_q + independent.index(k) for k in resolver._kn], dtype=np.intp) \
            if resolver is not None and all(k in independent for k in resolver._kn) else None
        shadow_rows = np.asarray(system.shadow[1], dtype=np.int64) if system.shadow is not None \
            else np.zeros(0, dtype=np.int64)
        self._static = (model.nq, np.array(cmap.independent, dtype=np.int64), cmap.n_joints, shadow_rows)
        # ground contacts with compiled laws (as `CompiledExplicitRHS`): state rows refreshed every call
        self._contact_states = [contact.state for contact in contacts]
        for contact in contacts:   # the interval log's samples by the same compiled laws
            contact.use_compiled_observer(model)
        self._staged = stages is not None
        if stages is None:   # one loop resolver alone: the single-loop entry
            from biobullet.model.joint_jets import function_table
            self._stages, self._table = np.array([[1, 0, 0]], dtype=np.int64), function_table(())
            self._arguments = (self._static, (meta, body, n_tangent, resolver._dep, resolver._kn),
                               (resolver._revolute_float, self._condition_limit, *self._rows))
            return
        self._stages, self._table = stages
        if kernels:
            self._kernel = kernels[1]
        # the staged entry's constant arguments: the loop kernel's joint layout puts joint j at base_v + j
        self._head = (model.nq, model.nv, base_q, base_v, np.array(cmap.independent, dtype=np.int64),
                      model.n_config, shadow_rows)
        self._middle = (meta, body, n_tangent, self._stages, *self._table)
        self._loop_data = (tuple(np.ascontiguousarray(r._dep + base_v, dtype=np.int64) for r in self.resolvers),
                           tuple(np.ascontiguousarray(r._kn + base_v, dtype=np.int64) for r in self.resolvers))
        self._revolutes = tuple(np.ascontiguousarray(r._revolute_float, dtype=float) for r in self.resolvers)

    @classmethod
    def for_system(cls, system) -> "CompiledReducedRHS | None":
        """The compiled path for this run, or None: formulation "reduced", a fixed base or a free base (1-DOF joints
        otherwise), a coordinate map of loop resolvers (all `<loop>` elements of a model file form one; a map
        built by hand may hold several) and any explicit joint functions of the types `model.joint_jets`
        evaluates, in any order around them (before a loop, e.g. computing its known joints; between loops; after
        them, e.g. taking their dependent joints as inputs), point, planar and revolute loops, only Spring,
        JointTorque, JointSpring, JointStop (a switched stop's restart events stay with the engine) and Contact
        (laws with compiled twins) elements and third-party elements with a compiled kernel
        (`ForceElement.compiled_kernel`), numba available and enabled. A fixed-base map that is one loop resolver alone
        takes the single-loop entry `_fused_rhs_py`, every other one `_staged_rhs_py`."""
        from biobullet.constraints.implicit import LoopResolver
        from biobullet.contact.element import Contact
        from biobullet.contact.kernels import has_twins
        from biobullet.forces.elements import JointSpring, JointStop, JointTorque, Spring

        model = system.model
        cmap = model.coordinate_map
        from biobullet.model.coordinates import ExplicitFunction
        from biobullet.model.joint_jets import function_table

        if (system.joint_space or system.formulation != "reduced" or not jit.ENABLED or cmap.kind != "general"
                or len(model.bodies) == 0):
            return None
        floating = bool(system.floating)
        if floating:   # the root free base only (a URDF floating joint inside the tree is a multi-DOF joint)
            if not (model.floating_base and model.base_nq == 7 and model.base_nv == 6
                    and model.bodies[0].joint_type == "free" and not model.bodies[0].joint
                    and all(b.joint_type in ("revolute", "prismatic") for b in model.bodies[1:])):
                return None
        if (model.n_tangent != cmap.n_joints + model.base_nv or model.nq != len(cmap.independent) + model.base_nq
                or model.base_nq != (7 if floating else 0)):
            return None
        if any(type(r) not in (LoopResolver, ExplicitFunction) for r in cmap.resolvers):
            return None
        resolvers = [r for r in cmap.resolvers if type(r) is LoopResolver]
        if not resolvers:
            return None
        contacts = [e for e in system.elements if type(e) is Contact]   # built-in laws only
        if any(not has_twins(e) or e.state is None for e in contacts):
            return None
        # third-party elements: each with its compiled kernel (`ForceElement.compiled_kernel`), else generic
        from biobullet.integrate.compiled_explicit import plugin_elements
        _, plugins = plugin_elements(system, (Spring, JointTorque, JointSpring, JointStop, Contact))
        if plugins is None:
            return None
        if floating:
            leans = [_held_base_lean(model, r) for r in resolvers]
        else:
            leans = [r._lean for r in resolvers]
        if any(lean is None for lean in leans):
            return None
        stages = None
        if floating or len(cmap.resolvers) > 1:
            # the generic map's order: runs of explicit functions (rows of one table) and loop resolvers
            functions = [r for r in cmap.resolvers if type(r) is ExplicitFunction]
            table = function_table((r.output, r.inputs, r.function) for r in functions)
            if table is None:   # a third-party joint function: the generic path
                return None
            rows, row = [], 0
            for r in cmap.resolvers:
                if type(r) is LoopResolver:
                    rows.append([1, resolvers.index(r), 0])
                elif rows and rows[-1][0] == 0:
                    rows[-1][2] = row = row + 1
                else:
                    rows.append([0, row, row + 1])
                    row += 1
            stages = (np.array(rows, dtype=np.int64).reshape(-1, 3), table)
        springs = [e for e in system.elements if type(e) is Spring]
        torques = [e for e in system.elements if type(e) is JointTorque]
        path = cls(system, resolvers, leans, springs, torques, [e for e in system.elements if type(e) is JointSpring],
                   [e for e in system.elements if type(e) is JointStop], contacts, stages, plugins)
        return path if path._kernel is not None else None

    def tree_states(self, t: np.ndarray, q: np.ndarray, v: np.ndarray, fallback,
                    first_guess: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(θ, θ̇) (n, n_joints) of the joints at n samples (q, v: the independent joints' columns, base
        excluded), stage by stage in the map's order: explicit functions vectorised over samples
        (`compiled_explicit.explicit_states_batch`), each loop's dependent joints in one compiled Newton pass
        (warm-started sample to sample; the joints computed so far enter as given). A sample a loop pass hands
        over goes to `fallback(k)` → (θ, θ̇) (the generic path, which also refreshes the resolvers' caches) and the
        pass resumes after it. `first_guess` (θ of all joints at the first sample, e.g. the integrated
        loop-dependent joints of `error_control="joints"`) lets the passes start at the first sample; without it
        the first sample takes the generic path, which fixes the assembly branch."""
        from biobullet.integrate.compiled_explicit import explicit_states_batch
        _, independent, n_joints, _ = self._static
        n = len(t)
        t = np.asarray(t, dtype=float)
        # the loop kernels' joint layout (joint j at `o` + j, `o` = 6 with a free base held at the identity)
        o = self._base[1]
        theta_all, rate_all = np.zeros((n, o + n_joints)), np.zeros((n, o + n_joints))
        theta, rate = theta_all[:, o:], rate_all[:, o:]
        theta[:, independent], rate[:, independent] = q, v
        given = [int(k) for k in independent]
        first = 0
        if n and (first_guess is None or not np.all(np.isfinite(first_guess))):
            first_guess = None
        table = self._table
        for kind, a, b in self._stages.tolist():
            if kind == 0:   # explicit functions (they may compute a loop's known joints or take its outputs)
                if not explicit_states_batch(table[0][a:b], table[1], table[2], t, theta, rate):
                    for k in range(n):   # an expression not finite somewhere: per sample (which reports it)
                        theta[k], rate[k] = fallback(k)
                    return theta.copy(), rate.copy()
                given.extend(int(k) for k in table[0][a:b, 1])
                continue
            if n and first_guess is None:   # the first sample by the generic path: its branch decides
                theta[0], rate[0] = fallback(0)
                first_guess, first = theta[0].copy(), 1
            self._loop_states(a, t, theta_all, rate_all, np.array(given, dtype=np.int64) + o, first,
                              first_guess, fallback)
            given.extend(int(k) for k in self.resolvers[a]._dep)
        return theta.copy(), rate.copy()

    def warm_guess(self, q: np.ndarray) -> np.ndarray | None:
        """θ of all joints for `tree_states`' `first_guess`: the independent joints `q`, each loop's dependent
        joints from its resolver's cache (the last state the right-hand side solved — within the current step
        while integrating, so the guess is on the same assembly branch), or None without a cache."""
        _, independent, n_joints, _ = self._static
        theta = np.zeros(n_joints)
        theta[independent] = q
        for r in self.resolvers:
            if r._warm is None:
                return None
            theta[r._dep] = r._warm[1]
        return theta

    def _loop_states(self, k: int, t: np.ndarray, theta_all: np.ndarray, rate_all: np.ndarray,
                     given: np.ndarray, first: int, first_guess: np.ndarray, fallback) -> None:
        """Loop resolver k's dependent joints at samples `first` … n−1 into theta_all, rate_all (the loop kernels'
        layout; the joints `given` set at every sample): plain Newton on positions from sample to sample
        (`_loop_positions_py`), then the resolver's hot-path kernel from its cache (`_loop_states_py`), then the
        generic path for one sample, and again."""
        global _STATES
        if _STATES is None:   # this path exists only once the fused kernel compiled (with the same loop kernel)
            _STATES = jit.compiled(_loop_states_py, bind={"_LEAN": self._lean}) or False
        r = self.resolvers[k]
        _, meta, body, n_tangent, rows = (None, *self._lean_args, self._all_rows[k])
        o = self._base[1]
        n, width = theta_all.shape
        dep, known = (np.asarray(r._dep, dtype=np.int64) + o), (np.asarray(r._kn, dtype=np.int64) + o)

        def generic(s: int) -> None:
            theta_all[s, o:], rate_all[s, o:] = fallback(s)

        positions = _positions_kernel()
        start, guess = first, first_guess[dep - o]
        while start < n:
            if positions is not None and rows[-1] == len(dep) and n - start > 1:
                q = np.ascontiguousarray(theta_all[start:, given])
                v = np.ascontiguousarray(rate_all[start:, given])
                th, rt, done = positions(q, v, given, width, dep, known, np.array(guess, dtype=float), meta, body,
                                         n_tangent, *rows)
                theta_all[start:start + done, dep], rate_all[start:start + done, dep] = th[:done, dep], rt[:done, dep]
                start += done
                if start >= n:
                    break
            if _STATES and r._warm is not None:   # from the resolver's cache (branch-safe continuation limits)
                known0, dep0, sensitivity = r._warm
                curvature = r._warm_curvature
                u0, h0 = curvature if curvature is not None else (_EMPTY, _EMPTY)
                anchor = r._anchor[0][0] if r._anchor is not None else _EMPTY
                loose = r.accept_residual
                q = np.ascontiguousarray(theta_all[start:, given])
                v = np.ascontiguousarray(rate_all[start:, given])
                th, rt, done, known0, dep0, sensitivity, condition, u0, h0 = _STATES(
                    q, v, given, width, meta, body, n_tangent, dep, known, known0, dep0, sensitivity, u0, h0,
                    anchor, r.residual_tolerance, -1.0 if loose is None else loose, r._warm_condition,
                    r._revolute_float, self._condition_limit, *rows)
                theta_all[start:start + done, dep], rate_all[start:start + done, dep] = th[:done, dep], rt[:done, dep]
                if done:   # the resolver's cache moves as after the last evaluated sample
                    r._warm = (known0, dep0, sensitivity)
                    r._warm_condition = condition
                    r._warm_curvature = (u0, h0) if u0.shape[0] else None
                    r._memo = None
                start += done
            if start < n:
                generic(start)
                guess = theta_all[start, dep]
                start += 1

    def _call(self, *args):
        """The kernel through its direct entry for these argument types (numba's argument matching would type the
        pipeline's NamedTuples field by field on every call, ≈ 20 µs; the callers pass arrays as C-contiguous float
        arrays and scalars as floats, so the types do not change between calls)."""
        entry = self._entry
        if entry is None:
            entry = self._entry = jit.direct_entry(self._kernel, *args)
        return entry(*args)

    def _refreshed(self, t: float) -> tuple:
        """The pipeline's arguments with τ(t) and the contacts' discrete state rows of this call written in."""
        forces = self._pipeline[1]
        if not self._constant:
            tau = forces.tau_time
            tau[:] = 0.0
            for torque, k in self._torques:
                tau[k] += torque.torque(t)
        if self._contact_states:
            from biobullet.contact.kernels import discrete_rows
            discrete_rows(self._contact_states, forces.contact_state)
        return self._pipeline

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray | None:
        if not (y.flags.c_contiguous and y.dtype == np.float64):
            y = np.ascontiguousarray(y, dtype=float)
        r = self.resolver
        if r is None:   # several loop resolvers: no retry from recent solutions
            return self._evaluate_staged(t, y)
        warm = r._warm
        if warm is None:
            return None
        out = self._evaluate_staged(t, y) if self._staged else self._evaluate(t, y)
        if out is not None or self._known_in_y is None or not self._recent:
            return out
        # An explicit integrator's trial stages can lie far from each other (a large trial step): the cached
        # solution of the last stage is then more than CONTINUATION_STEP from this state and the kernel hands over
        # to the generic path (continuation, ~40× a compiled call). One of the last solutions the kernel reached
        # on this trajectory is usually near: retry once from the nearest within the kernel's own no-continuation
        # radius, else hand over with the resolver's cache as it was.
        from biobullet.constraints.newton_kernel import CONTINUATION_STEP
        target = y[self._known_in_y]
        best, jump = None, CONTINUATION_STEP
        for entry in self._recent:
            distance = float(np.max(np.abs(entry[0][0] - target))) if target.size else 0.0
            if distance <= jump and entry[0] is not warm:
                best, jump = entry, distance
        if best is None:
            return None
        saved = (r._warm, r._warm_condition, r._warm_curvature)
        r._warm, r._warm_condition, r._warm_curvature = best
        out = self._evaluate_staged(t, y) if self._staged else self._evaluate(t, y)
        if out is None:
            r._warm, r._warm_condition, r._warm_curvature = saved
        return out

    def _evaluate(self, t: float, y: np.ndarray) -> np.ndarray | None:
        """One compiled call from the resolver's cached solution; on success the cache moves to the new solution
        (kept in `_recent` too)."""
        r = self.resolver
        known0, dep0, sensitivity = r._warm
        curvature = r._warm_curvature
        u0, h0 = curvature if curvature is not None else (_EMPTY, _EMPTY)
        anchor = r._anchor[0][0] if r._anchor is not None else _EMPTY
        loose = r.accept_residual
        head, middle, tail = self._arguments   # the constant arguments, packed once (Python glue per call)
        c = np.ascontiguousarray
        status, condition, sensitivity, h, u, known_new, dep_new, out = self._call(
            y, *head, *middle, c(known0, dtype=float), c(dep0, dtype=float), c(sensitivity, dtype=float),
            c(u0, dtype=float), c(h0, dtype=float), c(anchor, dtype=float), float(r.residual_tolerance),
            -1.0 if loose is None else float(loose), float(r._warm_condition), *tail, self._refreshed(t), float(t))
        if status != 0:
            return None
        # the resolver's cache moves exactly as `LoopResolver._resolve_lean` moves it
        r._warm = (known_new, dep_new, sensitivity)
        r._warm_condition = condition
        r._warm_curvature = (u, h) if u.shape[0] else None
        r._warm_fresh = True
        r._memo = None
        recent = self._recent
        if len(recent) >= 16:   # an explicit step has up to 12 stages: keep more than one step's
            del recent[0]
        recent.append((r._warm, condition, r._warm_curvature))
        return out

    def stepper_arguments(self) -> tuple[tuple, tuple] | None:
        """(constant arguments, resolver cache) of the single-loop kernel for `compiled_stepper`'s steps, or None
        where that path does not apply: explicit joint-function stages, time-dependent joint torques, contacts (their
        state rows change at events), or no cached loop solution yet. The cache is (θ_known, θ_dep, sensitivity,
        u, h, condition) as `_evaluate` passes it; `take_cache` puts the one the steps end with back."""
        r = self.resolver
        if self._staged or not self._constant or self._contact_states or r._warm is None:
            return None
        head, middle, tail = self._arguments
        known0, dep0, sensitivity = r._warm
        curvature = r._warm_curvature
        u0, h0 = curvature if curvature is not None else (_EMPTY, _EMPTY)
        anchor = r._anchor[0][0] if r._anchor is not None else _EMPTY
        loose = r.accept_residual
        as_c = np.ascontiguousarray
        args = ((*head, *middle), tail, as_c(anchor, dtype=float), float(r.residual_tolerance),
                -1.0 if loose is None else float(loose), self._pipeline)
        cache = (as_c(known0, dtype=float), as_c(dep0, dtype=float), as_c(sensitivity, dtype=float),
                 as_c(u0, dtype=float), as_c(h0, dtype=float), float(r._warm_condition))
        return args, cache

    def take_cache(self, cache: tuple) -> None:
        """The resolver's cache moves to `cache` (from `compiled_stepper`), as after a successful `_evaluate`."""
        r = self.resolver
        known, dep, sensitivity, u, h, condition = cache
        warm = r._warm
        if warm is not None and (known is warm[0] or (np.array_equal(known, warm[0])
                                                      and np.array_equal(dep, warm[1]))):
            return   # unchanged (no evaluation succeeded)
        r._warm = (known, dep, sensitivity)
        r._warm_condition = condition
        r._warm_curvature = (u, h) if u.shape[0] else None
        r._warm_fresh = True
        r._memo = None
        recent = self._recent
        if len(recent) >= 16:
            del recent[0]
        recent.append((r._warm, condition, r._warm_curvature))

    def _evaluate_staged(self, t: float, y: np.ndarray) -> np.ndarray | None:
        """`_evaluate` of the staged entry (several stages, several loop resolvers, a free base): one compiled
        call from every resolver's cached solution; on success each cache moves to its new solution."""
        resolvers = self.resolvers
        warm = [r._warm for r in resolvers]
        if any(w is None for w in warm):
            return None
        c = np.ascontiguousarray
        known0s = tuple(c(w[0], dtype=float) for w in warm)
        dep0s = tuple(c(w[1], dtype=float) for w in warm)
        sensitivities = tuple(c(w[2], dtype=float) for w in warm)
        curvatures = [r._warm_curvature or (_EMPTY, _EMPTY) for r in resolvers]
        anchors = tuple(c(r._anchor[0][0], dtype=float) if r._anchor is not None else _EMPTY for r in resolvers)
        scalars = np.array([[r.residual_tolerance, -1.0 if r.accept_residual is None else r.accept_residual,
                             r._warm_condition] for r in resolvers], dtype=float)
        n = len(resolvers)
        conditions, curved = np.empty(n), np.zeros(n, dtype=np.int64)
        sens_out = tuple(np.empty_like(w) for w in sensitivities)
        known_out = tuple(np.empty_like(w) for w in known0s)
        dep_out = tuple(np.empty_like(w) for w in dep0s)
        h_out = tuple(np.empty_like(w) for w in dep0s)
        u_out = tuple(np.empty_like(w) for w in known0s)
        head = self._head
        status, out = self._call(
            y, *head, *self._middle, float(t), *self._loop_data, known0s, dep0s,
            sensitivities, tuple(c(u, dtype=float) for u, _ in curvatures),
            tuple(c(h, dtype=float) for _, h in curvatures), anchors, scalars, self._revolutes,
            self._condition_limit, self._all_rows, self._refreshed(t), conditions, sens_out,
            h_out, u_out, known_out, dep_out, curved)
        if status != 0:
            return None
        # every resolver's cache moves exactly as `LoopResolver._resolve_lean` moves it
        for k, r in enumerate(resolvers):
            r._warm = (known_out[k], dep_out[k], sens_out[k])
            r._warm_condition = float(conditions[k])
            r._warm_curvature = (u_out[k], h_out[k]) if curved[k] else None
            r._warm_fresh = True
            r._memo = None
        if self.resolver is not None:
            recent = self._recent
            if len(recent) >= 16:
                del recent[0]
            recent.append((self.resolver._warm, self.resolver._warm_condition, self.resolver._warm_curvature))
        return out
