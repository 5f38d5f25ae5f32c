"""One compiled call for the whole right-hand side of a reduced closed-loop model (the integrators' hot path).

For a fixed-base model whose coordinate map is a loop resolver (θ_dep implicit in the independent coordinates;
all `<loop>` elements of a model form one resolver) — alone (`_fused_rhs_py`), or with explicit joint functions
evaluated before it (they may compute the loop's known joints) and after it (they may take its dependent joints as
inputs), in the generic `CoordinateMap`'s order (`_staged_rhs_py`) —, whose force elements are point-to-point
springs, joint torques, joint spring-dampers, joint stops, ground contacts with built-in laws
(`contact.kernels._ground_forces_py`, the contact state given) and third-party elements with a compiled kernel
(`forces.compiled._plugin_forces_py`, called by address), integrated with the "reduced" formulation,
everything `System._rhs` does per call runs in one numba function:

    functions before the loop: θ, G, θ̇, γ              (`model.joint_jets._explicit_jets_py`)
    loop Newton from the cached solution, G, θ̇, γ      (`LoopResolver._resolve_lean`'s kernel, unchanged)
    functions after the loop (then the kinematics again for springs and contacts)
    τ = Σ springs and ground contacts (from the same kinematics) + joint torques τ(t) + joint spring-dampers and stops
    M(θ), RNEA(θ, θ̇, γ)                                 (`compiled_kernels.tree_dynamics`)
    M_r = Gᵀ M G, h_r = Gᵀ RNEA, M_r v̇ = Gᵀ τ − h_r     (Cholesky)
    ẏ = (v, v̇, θ̇_dep, G_dep v̇ + γ_dep, input power, dissipated power)

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
sample it cannot take to the generic path and resuming after it; the functions before the loop are evaluated
first over all samples (`compiled_explicit.explicit_states_batch`) and enter that pass as given joints, those after
it last. Models with explicit joint functions instead of a loop: `compiled_explicit.py`. The single-loop entry is
also offered to the compiled DOP853 stepper (`stepper_arguments` / `take_cache`; `integrate/compiled_stepper.py`),
which calls it inside numba for whole runs of steps.

numba's on-disk cache of this kernel is keyed on this file only: after editing the kernels it calls
(constraints.newton_kernel, constraints.loop_kernels, algorithms.compiled_kernels, forces.compiled,
model.joint_jets, contact.kernels), touch this file.
"""
from __future__ import annotations

import numpy as np

from biobullet.algorithms import compiled_kernels as _compiled
from biobullet.core import jit

_EMPTY = np.zeros(0)

# the compiled callees, bound before `_fused_rhs_py` is compiled (numba resolves globals at compile time)
_LEAN = _TREE = _SPRING_FORCES = _PROJECTED_SOLVE = _JOINT_FORCES = None
_GROUND_FORCES = None   # contact.kernels._ground_forces_py (ground contacts)
_PLUGIN_FORCES = None   # forces.compiled._plugin_forces_py (third-party elements' kernels, by address)
_JETS = _KIN = None     # model.joint_jets._explicit_jets_py (explicit-function stages), loop_kernels tree kinematics
_TAIL = None            # the compiled `_loop_tail_py`
_STATE = None           # the compiled `_loop_state_py`
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


def _loop_tail_py(y, nq, n_tangent, shadow_rows, tau_time, theta, rate, gradient, gamma, rot, pos, sub,
                  tree_meta, tree_body, gravity, ancestry, spring_bodies, spring_points, spring_params, zero_length,
                  joint_springs, joint_spring_params, joint_stops, joint_stop_params,
                  contact_index, contact_geometry, contact_normal_p, contact_friction_p, contact_state, plugins):
    """(status, ẏ) from the coordinate jets θ, G, θ̇, γ (n_joints) and the kinematics (rot, pos, sub) at θ: the
    applied forces, the tree dynamics and the projected solve — the part shared by both loop entries (compiled
    inline into each: as a called function it cost the single-loop path ≈ 0.4 µs per call). plugins = (t, the
    plug-in elements' addresses, fparams, iparams): one tuple, because CPython passes a call of more than 30
    arguments as *args, which numba cannot inline."""
    t, plugin_addresses, plugin_fparams, plugin_iparams = plugins
    size = y.shape[0]
    # applied forces: joint torques τ(t) (given), joint spring-dampers and stops, and the springs, from the
    # kinematics of the loop solve
    tau = tau_time.copy()
    power_in = 0.0
    for k in range(n_tangent):
        power_in += tau_time[k] * rate[k]
    joint_dissipated = _JOINT_FORCES(theta, rate, joint_springs, joint_spring_params, joint_stops,
                                     joint_stop_params, tau)
    spring_status, dissipated = _SPRING_FORCES(rot, pos, sub, ancestry, rate, spring_bodies, spring_points,
                                               spring_params, zero_length, tau)
    if spring_status != 0:
        return 1, np.zeros(0)
    dissipated += joint_dissipated
    # ground contacts: the state rows are given (the engine's events set them), laws from contact.kernels
    if contact_index.shape[0]:
        dissipated += _GROUND_FORCES(rot, pos, sub, ancestry, contact_index, contact_geometry, contact_normal_p,
                                     contact_friction_p, contact_state, rate, tau)
    # plug-in force elements (`ForceElement.compiled_kernel`), called through their addresses, at the same
    # kinematics; a kernel's non-zero status hands the state to the generic path
    if plugin_addresses.shape[0]:
        power = np.zeros(2)
        if _PLUGIN_FORCES(t, theta, rate, rot, pos, sub, ancestry, plugin_addresses, plugin_fparams, plugin_iparams,
                          tau, power) != 0:
            return 1, np.zeros(0)
        power_in += power[0]
        dissipated += power[1]
    mass, bias = _TREE(tree_meta, tree_body, theta, rate, gamma, gravity, n_tangent, True, True, True)
    # M_r v̇ = Gᵀ τ − h_r by Cholesky (M_r is symmetric positive definite for a physical model)
    accel = np.empty(nq)
    if not _PROJECTED_SOLVE(mass, bias, gradient, tau, accel):
        return 1, np.zeros(0)
    out = np.empty(size)
    for j in range(nq):
        out[j] = y[nq + j]
        out[nq + j] = accel[j]
    m = shadow_rows.shape[0]
    for i in range(m):
        row = shadow_rows[i]
        out[2 * nq + i] = rate[row]
        s = gamma[row]
        for c in range(nq):
            s += gradient[row, c] * accel[c]
        out[2 * nq + m + i] = s
    out[size - 2] = power_in
    out[size - 1] = dissipated
    for i in range(size):
        if not np.isfinite(out[i]):
            return 1, np.zeros(0)
    return 0, out


def _fused_rhs_py(y, nq, independent, n_joints, shadow_rows, tau_time,
                  meta, body, n_tangent, dep, known, known0, dep0, sensitivity, u0, h0, anchor, tolerance, loose,
                  warm_condition, revolute, condition_limit, l_ancestry, point_body, offset, basis, kinds,
                  row_start, n_rows,
                  tree_meta, tree_body, gravity, ancestry, spring_bodies, spring_points, spring_params, zero_length,
                  joint_springs, joint_spring_params, joint_stops, joint_stop_params,
                  contact_index, contact_geometry, contact_normal_p, contact_friction_p, contact_state,
                  t, plugin_addresses, plugin_fparams, plugin_iparams):
    """(status, condition, sensitivity, h, u, θ_known, θ_dep, ẏ) of a map that is the loop alone: status 0 on
    success, else the generic path must evaluate this state (nothing of the resolver's cache is changed by a failed
    call)."""
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
    status, out = _TAIL(y, nq, n_tangent, shadow_rows, tau_time, theta, rate, gradient, gamma, rot, pos, sub,
                        tree_meta, tree_body, gravity, ancestry, spring_bodies, spring_points, spring_params,
                        zero_length, joint_springs, joint_spring_params, joint_stops, joint_stop_params,
                        contact_index, contact_geometry, contact_normal_p, contact_friction_p, contact_state,
                        (t, plugin_addresses, plugin_fparams, plugin_iparams))
    if status != 0:
        return fail
    return 0, condition, sens, h, u, known_new, dep_new, out


def _staged_rhs_py(y, nq, independent, n_joints, shadow_rows, tau_time,
                  meta, body, n_tangent, dep, known, known0, dep0, sensitivity, u0, h0, anchor, tolerance, loose,
                  warm_condition, revolute, condition_limit, l_ancestry, point_body, offset, basis, kinds,
                  row_start, n_rows,
                  tree_meta, tree_body, gravity, ancestry, spring_bodies, spring_points, spring_params, zero_length,
                  joint_springs, joint_spring_params, joint_stops, joint_stop_params,
                  contact_index, contact_geometry, contact_normal_p, contact_friction_p, contact_state,
                   t, pre_table, pre_inputs, pre_coef, post_table, post_inputs, post_coef,
                   plugin_addresses, plugin_fparams, plugin_iparams):
    """`_fused_rhs_py` for a map of several stages, in the generic `CoordinateMap`'s order: the explicit joint
    functions before the loop resolver (`pre_table`: they may compute the loop's known joints), the loop, then the
    functions after it (`post_table`: they may take loop-dependent joints as inputs), each table in
    `_explicit_jets_py`'s format. A separate entry so that the single-loop hot path keeps its argument list and
    code (measured: carrying the stages there cost the four-bar ≈ 1 µs of its ≈ 15 µs per call)."""
    nd = dep.shape[0]
    fail = (1, np.inf, np.zeros((nd, known.shape[0])), np.zeros(nd), np.zeros(0), np.zeros(0), np.zeros(0),
            np.zeros(0))
    finite, theta, rate, gradient, gamma = _STATE(y, nq, independent, n_joints)
    if not finite:
        return fail
    if pre_table.shape[0] and _JETS(pre_table, pre_inputs, pre_coef, t, 0, 0, theta, rate, gradient, gamma) != 0:
        return fail   # an expression not finite: the generic path raises its EvaluationError
    status, condition, sens, h, u, known_new, dep_new, rot, pos, sub, vel, acc = _LEAN(
        meta, body, n_tangent, theta, rate, gradient, gamma, dep, known, known0, dep0, sensitivity, u0, h0,
        anchor, tolerance, loose, warm_condition, revolute, condition_limit, l_ancestry, point_body, offset, basis,
        kinds, row_start, n_rows)
    if status != 0:
        return fail
    if post_table.shape[0]:
        if _JETS(post_table, post_inputs, post_coef, t, 0, 0, theta, rate, gradient, gamma) != 0:
            return fail
        if spring_bodies.shape[0] or contact_index.shape[0] or plugin_addresses.shape[0]:   # the loop's
            # kinematics predate these joints
            rot, pos, sub, _, _ = _KIN(meta, body, theta, rate, n_tangent, False)
    status, out = _TAIL(y, nq, n_tangent, shadow_rows, tau_time, theta, rate, gradient, gamma, rot, pos, sub,
                        tree_meta, tree_body, gravity, ancestry, spring_bodies, spring_points, spring_params,
                        zero_length, joint_springs, joint_spring_params, joint_stops, joint_stop_params,
                        contact_index, contact_geometry, contact_normal_p, contact_friction_p, contact_state,
                        (t, plugin_addresses, plugin_fparams, plugin_iparams))
    if status != 0:
        return fail
    return 0, condition, sens, h, u, known_new, dep_new, out


def _fused_kernel(lean_kernel):
    """(the compiled `_fused_rhs_py`, the compiled `_staged_rhs_py`) (loaded from numba's on-disk cache after the
    first compile), or None."""
    global _FUSED
    if _FUSED is None:
        from biobullet.forces.compiled import joint_forces_kernel, spring_forces_kernel
        tree = _compiled.tree_dynamics_kernel()
        springs = spring_forces_kernel()
        solve = _compiled.projected_solve_kernel()
        joint_forces = joint_forces_kernel()
        from biobullet.contact.kernels import ground_forces_kernel
        from biobullet.constraints.loop_kernels import _kernels as loop_kernels
        from biobullet.model.joint_jets import _explicit_jets_py
        from biobullet.forces.compiled import plugin_forces_kernel
        ground = ground_forces_kernel()
        plugins = plugin_forces_kernel()
        jets = jit.compiled(_explicit_jets_py)
        kinematics = loop_kernels()
        if None in (tree, springs, solve, joint_forces, ground, jets, kinematics, plugins):
            _FUSED = False
        else:   # bound through core.jit, which also keys the disk cache on these callees
            tail = jit.compiled(_loop_tail_py, bind={
                "_TREE": tree, "_SPRING_FORCES": springs, "_PROJECTED_SOLVE": solve, "_JOINT_FORCES": joint_forces,
                "_GROUND_FORCES": ground, "_PLUGIN_FORCES": plugins}, inline=True)
            state = jit.compiled(_loop_state_py, inline=True)
            fused = staged = None
            if tail is not None and state is not None:
                fused = jit.compiled(_fused_rhs_py, bind={"_LEAN": lean_kernel, "_TAIL": tail, "_STATE": state})
                staged = jit.compiled(_staged_rhs_py, bind={"_LEAN": lean_kernel, "_TAIL": tail, "_JETS": jets,
                                                            "_KIN": kinematics[0], "_STATE": state})
            _FUSED = (fused, staged) if fused is not None and staged is not None else False
    return _FUSED or None


_POSITIONS = _LOOP_ROWS_INTO = None
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


_LU_INTO = _PLACE_BODY = None


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

    def __init__(self, system, resolver, lean, springs, torques, joint_springs=(), joint_stops=(),
                 contacts=(), functions=None, plugins=None) -> None:
        from biobullet.algorithms.vectorized import tree_arrays
        from biobullet.constraints.implicit import CONDITION_LIMIT
        from biobullet.forces.compiled import pack_joint_forces
        from biobullet.integrate.compiled_explicit import pack_springs

        model = system.model
        self.resolver = resolver
        self._condition_limit = CONDITION_LIMIT
        kernel, meta, body, n_tangent, rows_data = lean
        kernels = _fused_kernel(kernel)
        self._kernel = kernels[0] if kernels else None
        self._lean_args = (meta, body, n_tangent)
        self._rows = rows_data
        tree_meta, tree_body = _compiled.pack(model)
        self._tree = (tree_meta, tree_body, np.array(model.gravity, dtype=float), tree_arrays(model).ancestry)
        self._springs = pack_springs(model, springs)
        self._joint_forces = pack_joint_forces(model, joint_springs, joint_stops)
        self._torques = [(torque, torque._indices(model)[1]) for torque in torques]
        self._constant = all(torque.value is not None for torque in torques)
        self._tau_time = np.zeros(model.n_tangent)
        for torque, k in self._torques:
            if torque.value is not None:
                self._tau_time[k] += torque.value
        # the last few solutions the kernel reached (a retry starts from the nearest: see `__call__`), and where
        # the resolver's known joints sit in y
        self._recent: list = []
        independent = list(model.coordinate_map.independent)
        self._known_in_y = np.array([independent.index(k) for k in resolver._kn], dtype=np.intp) \
            if all(k in independent for k in resolver._kn) else None
        self._static = (model.nq, np.array(model.coordinate_map.independent, dtype=np.int64),
                        model.coordinate_map.n_joints, np.asarray(system.shadow[1], dtype=np.int64)
                        if system.shadow is not None else np.zeros(0, dtype=np.int64))
        self._arguments = (self._static, (meta, body, n_tangent, resolver._dep, resolver._kn),
                           (resolver._revolute_float, self._condition_limit, *self._rows, *self._tree, *self._springs,
                            *self._joint_forces))
        # ground contacts with compiled laws (as `CompiledExplicitRHS`): state rows refreshed every call
        from biobullet.contact.kernels import STATE_WIDTH, pack_ground
        self._contact_states = [contact.state for contact in contacts]
        for contact in contacts:   # the interval log's samples by the same compiled laws
            contact.use_compiled_observer(model)
        self._contacts = (*pack_ground(model, contacts), np.zeros((len(contacts), STATE_WIDTH)))
        # explicit joint functions before and after the loop stage (`_explicit_jets_py` tables; empty: loop alone)
        if functions is None:
            from biobullet.model.joint_jets import function_table
            functions = (function_table(()), function_table(()))
        self._pre, self._post = functions
        self._staged = bool(self._pre[0].shape[0] or self._post[0].shape[0])
        # functions before or after the loop: the staged entry (time and the tables as further arguments)
        self._functions = (*self._pre, *self._post) if self._staged else ()
        if kernels and self._staged:
            self._kernel = kernels[1]
        # third-party elements' kernels (`forces.compiled.pack_plugins`; the loop's kinematics serve them all)
        from biobullet.integrate.compiled_explicit import _NO_PLUGINS
        self._plugins = (plugins if plugins is not None else _NO_PLUGINS)[:3]

    @classmethod
    def for_system(cls, system) -> "CompiledReducedRHS | None":
        """The compiled path for this run, or None: formulation "reduced", fixed base, a coordinate map of one loop
        resolver (all `<loop>` elements of a model: two four-bar knees are one resolver with two loops) and any
        explicit joint functions of the types `model.joint_jets` evaluates, before the loop (e.g. computing its
        known joints) or after it (e.g. taking its dependent joints as inputs), only Spring, JointTorque,
        JointSpring, JointStop (a switched stop's restart events stay with the engine), Contact (laws with
        compiled twins) and third-party elements with a compiled kernel (`ForceElement.compiled_kernel`), numba
        available and enabled."""
        from biobullet.constraints.implicit import LoopResolver
        from biobullet.contact.element import Contact
        from biobullet.contact.kernels import has_twins
        from biobullet.forces.elements import JointSpring, JointStop, JointTorque, Spring

        model = system.model
        cmap = model.coordinate_map
        from biobullet.model.coordinates import ExplicitFunction
        from biobullet.model.joint_jets import function_table

        if (system.joint_space or system.formulation != "reduced" or system.floating or not jit.ENABLED
                or cmap.kind != "general" or model.n_tangent != cmap.n_joints or model.nq != len(cmap.independent)):
            return None
        loops = [k for k, r in enumerate(cmap.resolvers) if type(r) is LoopResolver]
        if len(loops) != 1 or any(type(r) not in (LoopResolver, ExplicitFunction) for r in cmap.resolvers):
            return None
        stage = loops[0]   # the generic map's order: functions before the loop, the loop, functions after it
        functions = tuple(function_table((r.output, r.inputs, r.function) for r in part)
                          for part in (cmap.resolvers[:stage], cmap.resolvers[stage + 1:]))
        if None in functions:   # a third-party joint function: the generic path
            return None
        contacts = [e for e in system.elements if type(e) is Contact]   # built-in laws only
        if any(not has_twins(e) or e.state is None for e in contacts):
            return None
        # third-party elements: each with its compiled kernel (`ForceElement.compiled_kernel`), else generic
        from biobullet.integrate.compiled_explicit import plugin_elements
        _, plugins = plugin_elements(system, (Spring, JointTorque, JointSpring, JointStop, Contact))
        if plugins is None:
            return None
        resolver = cmap.resolvers[stage]
        lean = resolver._lean
        if lean is None:
            return None
        springs = [e for e in system.elements if type(e) is Spring]
        torques = [e for e in system.elements if type(e) is JointTorque]
        path = cls(system, resolver, lean, springs, torques, [e for e in system.elements if type(e) is JointSpring],
                   [e for e in system.elements if type(e) is JointStop], contacts, functions, plugins)
        return path if path._kernel is not None else None

    def tree_states(self, t: np.ndarray, q: np.ndarray, v: np.ndarray, fallback,
                    first_guess: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(θ, θ̇) (n, n_joints) at n samples in one compiled call (Newton warm-started sample to sample); a
        sample the kernel hands over goes to `fallback(k)` → (θ, θ̇) (the generic path, which also refreshes the
        resolver's cache) and the batch resumes after it. `first_guess` (θ of all joints at the first sample, e.g.
        the integrated loop-dependent joints of `error_control="joints"`) lets the batch start at the first
        sample; without it the first sample takes the generic path, which fixes the assembly branch."""
        global _STATES
        if _STATES is None:   # `_LEAN` is bound: this path exists only once the fused kernel compiled
            _STATES = jit.compiled(_loop_states_py, bind={"_LEAN": _LEAN}) or False
        r = self.resolver
        _, independent, n_joints, _ = self._static
        meta, body, n_tangent = self._lean_args
        n = len(t)
        theta, rate = np.zeros((n, n_joints)), np.zeros((n, n_joints))
        if self._pre[0].shape[0]:
            # the functions before the loop, vectorised over samples (they may compute the loop's known joints):
            # the loop passes below then take their outputs as given joints, as the independent ones
            from biobullet.integrate.compiled_explicit import explicit_states_batch
            t = np.asarray(t, dtype=float)
            theta[:, independent], rate[:, independent] = q, v
            if not explicit_states_batch(*self._pre, t, theta, rate):
                for k in range(n):   # an expression not finite somewhere: per sample (which reports it)
                    theta[k], rate[k] = fallback(k)
                return theta, rate
            independent = np.concatenate([independent, self._pre[0][:, 1]]).astype(np.int64)
            q, v = theta[:, independent], rate[:, independent]
        start = 0
        positions = _positions_kernel()
        if positions is not None and n > 1 and self._rows[-1] == len(r._dep):
            # the first sample by the generic path (continuation from wherever the resolver's cache is: the
            # assembly branch is the generic path's), then plain Newton on positions (no G, γ, curvature: output
            # only) warm-started sample to sample, handing back at a large step between samples
            dep = np.asarray(r._dep, dtype=np.int64)
            first = 0
            if first_guess is None or not np.all(np.isfinite(first_guess)):
                theta[0], rate[0] = fallback(0)
                first_guess, first = theta[0], 1
            th, rt, done = positions(np.ascontiguousarray(q[first:]), np.ascontiguousarray(v[first:]), independent,
                                     n_joints, dep, np.asarray(r._kn, dtype=np.int64),
                                     np.array(first_guess[dep], dtype=float), meta, body, n_tangent, *self._rows)
            theta[first:first + done], rate[first:first + done] = th[:done], rt[:done]
            start = first + done
        while start < n:
            if not _STATES or r._warm is None:
                theta[start], rate[start] = fallback(start)
                start += 1
                continue
            known0, dep0, sensitivity = r._warm
            curvature = r._warm_curvature
            u0, h0 = curvature if curvature is not None else (_EMPTY, _EMPTY)
            anchor = r._anchor[0][0] if r._anchor is not None else _EMPTY
            loose = r.accept_residual
            th, rt, done, known0, dep0, sensitivity, condition, u0, h0 = _STATES(
                np.ascontiguousarray(q[start:]), np.ascontiguousarray(v[start:]), independent, n_joints, meta, body,
                n_tangent, r._dep, r._kn, known0, dep0, sensitivity, u0, h0, anchor, r.residual_tolerance,
                -1.0 if loose is None else loose, r._warm_condition, r._revolute_float, self._condition_limit,
                *self._rows)
            theta[start:start + done], rate[start:start + done] = th[:done], rt[:done]
            if done:   # the resolver's cache moves as after the last evaluated sample
                r._warm = (known0, dep0, sensitivity)
                r._warm_condition = condition
                r._warm_curvature = (u0, h0) if u0.shape[0] else None
                r._memo = None
            start += done
            if start < n:
                theta[start], rate[start] = fallback(start)
                start += 1
        if self._post[0].shape[0]:   # the functions after the loop, vectorised over samples (as the generic order)
            from biobullet.integrate.compiled_explicit import explicit_states_batch
            if not explicit_states_batch(*self._post, np.asarray(t, dtype=float), theta, rate):
                for k in range(n):   # an expression not finite somewhere: per sample (which reports it)
                    theta[k], rate[k] = fallback(k)
        return theta, rate

    def _contact_arrays(self) -> tuple:
        if self._contact_states:
            from biobullet.contact.kernels import discrete_rows
            discrete_rows(self._contact_states, self._contacts[4])
        return self._contacts

    def _time_forces(self, t: float) -> np.ndarray:
        if self._constant:
            return self._tau_time
        tau = np.zeros_like(self._tau_time)
        for torque, k in self._torques:
            tau[k] += torque.torque(t)
        return tau

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray | None:
        r = self.resolver
        warm = r._warm
        if warm is None:
            return None
        if not (y.flags.c_contiguous and y.dtype == np.float64):
            y = np.ascontiguousarray(y, dtype=float)
        out = self._evaluate(t, y)
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
        out = self._evaluate(t, y)
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
        status, condition, sensitivity, h, u, known_new, dep_new, out = self._kernel(
            y, *head, self._time_forces(t), *middle, known0, dep0, sensitivity, u0, h0, anchor,
            r.residual_tolerance, -1.0 if loose is None else loose, r._warm_condition, *tail,
            *self._contact_arrays(), float(t), *(self._functions if self._staged else ()), *self._plugins)
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
        args = ((*head, self._tau_time, *middle), (*tail, *self._contacts), as_c(anchor, dtype=float),
                float(r.residual_tolerance), -1.0 if loose is None else float(loose), self._plugins)
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
