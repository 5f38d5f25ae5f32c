"""The stages of the forward pipeline, each one numba kernel (`_NAME_py`, its uncompiled form the same function),
taking the compiled model and the data workspace as structured arguments:

    joint state     q, v → x, ẋ, G, γ: multi-DOF blocks normalised, independent joints set, then the
                    joint-function table's jets (`model.joint_jets._explicit_jets_py`) and the loop resolvers'
                    Newton solves (`constraints.newton_kernel._loop_newton_py` on the loop record
                    data.loop: warm starts, work arrays) in the map's order                        `joint_state_stage_py`
                    (a model whose map needs Python — loop types without compiled rows, joint functions without
                    compiled jets — fills data.x … data.gamma from `Model.joint_state_view` before the call: the
                    callback stage)
    forces          τ = joint torques + joint spring-dampers, stops + springs + ground contacts + plug-in elements'
                    kernels (`forces.compiled`, `contact.kernels`) + muscles (`muscles.dynamics`: Rᵀ F of every
                    path, the muscle states' rates)                                   `forces_stage_py`
    M, h            CRBA and RNEA(x, ẋ, γ) (`algorithms.compiled_kernels._tree_dynamics_into_py`, into
                    data.tree_work)
    solve           M_r v̇ = Q − h_r: dense Cholesky, tree-sparse Lᵀ D L, or Cholesky of Gᵀ M G, each declining a
                    coordinate that moves no mass or a pivot within round-off of its diagonal entry  `solve_stage_py`

and their two compositions: `forward_py` (M, h or v̇ of given generalized forces: the public calls and
`pipeline.forward`) and `rhs_py` (the engine's ẏ with the force stage, q̇ and the rows of error_control="joints":
one kernel for every model kind the pipeline runs).

The names a stage calls but does not define (`_TREE`, `_SOLVE`, …) and its feature flag (`_LOOPS`: the loop
stage) are bound when it compiles (`pipeline.kernels`, `core.jit.compiled`): a flag bound False prunes its
branches before numba types them. numba's
on-disk cache of a kernel is keyed on its own file and on the source of the kernels bound into it.
"""
from __future__ import annotations

import numpy as np

from biobullet.muscles.dynamics import load_muscle_state, muscle_forces, muscle_state_size, store_muscle_rates
from biobullet.pipeline.compiled_model import CALLBACK_STATE, FREE, PROJECTED, SPARSE, SPHERICAL

MASS, BIAS, ACCELERATION = 0, 1, 2   # what `forward_py` computes
# A constant flag passed to another kernel is written bool(True) / int(0): numba types a bare constant as a literal,
# and a literal argument compiles the callee again for it (one more specialisation of the tree kernel per caller).


def state_into_py(q, v, base_q, base_v, blocks, independent, x, xd, gradient, gamma):
    """x, ẋ, G, γ of the tree from generalized (q, v), in place: the multi-DOF blocks (`blocks`: floating base,
    free, spherical and planar joints, base_q coordinates and base_v velocities leading q and v) copied with every
    unit quaternion and planar (cos, sin) pair normalised (as `Model.normalize_configuration`), the independent
    joints set (G has identity rows there), the other joints zero for the joint-function stage to fill. False when
    q or v is not finite (or a quaternion or pair is zero)."""
    x[:] = 0.0
    xd[:] = 0.0
    gradient[:, :] = 0.0
    gamma[:] = 0.0
    for i in range(q.shape[0]):
        if not np.isfinite(q[i]):
            return False
    for i in range(v.shape[0]):
        if not np.isfinite(v[i]):
            return False
    for k in range(base_q):
        x[k] = q[k]
    for b in range(blocks.shape[0]):
        kind, k = blocks[b, 0], blocks[b, 1]
        start, size = (k + 3, 4) if kind == FREE else (k, 4) if kind == SPHERICAL else (k + 2, 2)
        norm = 0.0
        for i in range(start, start + size):
            norm += x[i] * x[i]
        norm = np.sqrt(norm)
        if not (norm > 0.0 and norm < np.inf):   # zero, or the squares overflow (entries ~1e155): declined
            return False
        for i in range(start, start + size):
            x[i] /= norm
    for k in range(base_v):
        xd[k] = v[k]
        gradient[k, k] = 1.0
    for j in range(independent.shape[0]):
        x[base_q + independent[j]] = q[base_q + j]
        xd[base_v + independent[j]] = v[base_v + j]
        gradient[base_v + independent[j], base_v + j] = 1.0
    return True


def ltdl_solve_py(mass, parent, rhs, out, pivot_ratio):
    """Solve M out = rhs for a tree's mass matrix by the sparse factorisation M = Lᵀ D L (Featherstone, RBDA
    §6.5): `parent[k]` is the tangent direction before k on its path to the root (−1 at the root), and M[k, i] = 0
    unless one of k, i is an ancestor of the other, so the work is O(n d²) (d the depth) instead of O(n³).
    −1 when solved, else the direction k whose pivot D[k] is not above pivot_ratio · M[k, k] (M singular to
    round-off or not positive definite; nothing usable in `out`)."""
    n = mass.shape[0]
    h = mass.copy()
    for k in range(n - 1, -1, -1):
        if not h[k, k] > pivot_ratio * mass[k, k]:
            return k
        i = parent[k]
        while i >= 0:
            a = h[k, i] / h[k, k]
            j = i
            while j >= 0:
                h[i, j] -= a * h[k, j]
                j = parent[j]
            h[k, i] = a
            i = parent[i]
    for k in range(n):
        out[k] = rhs[k]
    for k in range(n - 1, -1, -1):   # Lᵀ z = rhs
        j = parent[k]
        while j >= 0:
            out[j] -= h[k, j] * out[k]
            j = parent[j]
    for k in range(n):               # D
        out[k] /= h[k, k]
    for k in range(n):               # L x = z
        j = parent[k]
        while j >= 0:
            out[k] -= h[k, j] * out[j]
            j = parent[j]
    return -1


def joint_state_stage_py(model, data, q, v, t, rates):
    """x, ẋ, G, γ into data from (q, v) at time t: the state prologue (`state_into_py`), then the joint-function
    table and the loop resolvers in the coordinate map's order (`positions_and_rates_py`). `rates` False (the mass
    matrix: v zero): the loop resolvers skip θ̇ and γ, which M does not read. 0, or 1 when the state or a
    function's jets are not finite or a loop solve declines (the callback stage then decides).

    The public calls' variant (`_KEEP` bound True: `pipeline.kernels.forward_kernel` with loops) keeps the state
    it computed: data.positions holds (q, t, 1.0) after a call that set x and G at q, t. The mass matrix at that q
    and t — every entry equal, a copy compared, so an array changed in place is a new state — reads them as they
    are (M after h or v̇ at one state: no joint-state stage). Every other call, and every variant without `_KEEP`
    (a run's right-hand side, which writes the same arrays), clears the key first. (h and v̇ at the kept state run
    the stage: their loop Newton takes its kept solution, `_keep_fixed_point_py`; a rates-only pass saved ≈ 0.06 µs
    there and cost ≈ 0.1–0.2 µs at every new state, docs/speed.md.)"""
    positions = data.positions
    n = q.shape[0]
    if _KEEP and not rates and positions[n + 1] != 0.0 and positions[n] == t:
        same = True
        for i in range(n):
            if q[i] != positions[i]:
                same = False
                break
        if same:
            return 0
    positions[n + 1] = 0.0
    status = _POSITIONS(model, data, q, v, t, rates)
    if _KEEP and status == 0:
        for i in range(n):
            positions[i] = q[i]
        positions[n] = t
        positions[n + 1] = 1.0
    return status


def positions_and_rates_py(model, data, q, v, t, rates):
    """`joint_state_stage_py` without its kept positions."""
    if not _STATE(q, v, model.base_q, model.base_v, model.blocks, model.independent, data.x, data.xd,
                  data.gradient, data.gamma):
        return 1
    loop = data.loop
    stages = loop.stages
    if stages.shape[0] == 0:
        if model.jets_table.shape[0] == 0:
            return 0
        return _JETS(model.jets_table, model.jets_inputs, model.jets_coef, t, model.base_q, model.base_v, data.x,
                     data.xd, data.gradient, data.gamma)
    if not _LOOPS:   # bound False: the loop stage is not compiled (a model with loops takes the callback stage)
        return 1
    view = data.x[loop.view_start:]   # the loop kernels' joint layout: index = tangent index
    for s in range(stages.shape[0]):
        kind, a, b = stages[s, 0], stages[s, 1], stages[s, 2]
        if kind == 0:
            if _JETS(model.jets_table[a:b], model.jets_inputs, model.jets_coef, t, model.base_q, model.base_v,
                     data.x, data.xd, data.gradient, data.gamma) != 0:
                return 1
        elif _NEWTON(loop, a, view, data.xd, data.gradient, data.gamma, rates) != 0:
            return 1
    return 0


def solve_stage_py(model, data, mass, bias, force, accel):
    """v̇ into `accel` from M_r v̇ = Q − h_r (Q = `force`, nv generalized forces), M and h of the tree: projected
    through data.gradient (Gᵀ M G, Gᵀ h) for a PROJECTED model, else M itself by the tree-sparse Lᵀ D L (SPARSE)
    or dense Cholesky. False when a coordinate's own diagonal entry is not above its floor (it moves no mass:
    `spatial.dense.massless_coordinate_py` on model.mass_floor_root) or a pivot is not above _PIVOT_RATIO
    (`spatial.dense.MASS_PIVOT_RATIO`) × its diagonal entry: M_r singular to round-off or not positive definite."""
    nv = model.nv
    projected = model.solver == PROJECTED
    if projected:
        mass, bias = _PROJECT(mass, bias, data.gradient, data.project_columns, data.project_work,
                              data.reduced_mass, data.reduced_bias)
    if _MASSLESS(mass, model.mass_floor_root, data.gradient, projected) >= 0:
        return False
    rhs = data.rhs
    for c in range(nv):
        rhs[c] = force[c] - bias[c]
    if model.solver == SPARSE:
        return _LTDL(mass, model.tangent_parent, rhs, accel, _PIVOT_RATIO) < 0
    low = data.low
    low[:, :] = 0.0
    if not _CHOLESKY_FACTOR(mass, low, _PIVOT_RATIO):
        return False
    _CHOLESKY_SOLVE(low, rhs, accel)
    return True


def forward_py(address, q, v, tau, t, want, out_vector, out_matrix):
    """(Compiled without numba's runtime, `pipeline.kernels.forward_kernel`: nothing in it or in its inlined stages
    may allocate an array.) The pipeline up to `want`: MASS → M_r(q, t) into out_matrix; BIAS → h_r(q, v, t) into
    out_vector; ACCELERATION → v̇ of generalized forces `tau` (nv) into out_vector. `address`: where the workspace is, the
    compiled model's and the data arrays' fields in one record (`core.jit_pair.pack_record`: one integer per call from
    Python, not ≈ 50 arrays), which the stages read as both their model and their data. A CALLBACK_STATE model's joint state is in data
    already. 0, or 1 when an argument's size is not its own, t, the state, a jet or the result is not finite or M_r
    is not positive definite (the caller then takes the callback stage, which reports why)."""
    if not t - t == 0.0:   # NaN or ±inf (the public calls' closures leave this test here: ≈ 0.03 µs a call)
        return 1
    model = data = _READ_RECORD(address)
    nv = model.nv
    if q.shape[0] != model.nq or v.shape[0] != nv or tau.shape[0] != nv:
        return 1
    if (out_matrix.shape[0] != nv or out_matrix.shape[1] != nv) if want == MASS else out_vector.shape[0] != nv:
        return 1
    if model.state_stage != CALLBACK_STATE and _JOINT_STATE(model, data, q, v, t, want != MASS) != 0:
        return 1
    work = data.tree_work   # (M and h into work[5], work[6]: the tree kernel returns no array, `_TREE`)
    _TREE(model.tree_meta, model.tree_body, data.x, data.xd, data.gamma, model.gravity, want != BIAS, want != MASS,
          bool(True), work)
    mass, bias = work[5], work[6]
    if want == ACCELERATION:
        if not _SOLVE(model, data, mass, bias, tau, out_vector):
            return 1
        for c in range(nv):
            if not np.isfinite(out_vector[c]):
                return 1
        return 0
    if want == BIAS and model.solver == PROJECTED:
        # Gᵀ h alone (the projection's Gᵀ M G would scan M's zeros: n² tests): the same non-zero terms of each
        # column of G in the same order as `_PROJECT`'s sum, so the same bits
        gradient = data.gradient
        for c in range(nv):
            s = 0.0
            for a in range(model.n_tangent):
                if gradient[a, c] != 0.0:
                    s += gradient[a, c] * bias[a]
            out_vector[c] = s
            if not np.isfinite(s):
                return 1
        return 0
    if model.solver == PROJECTED:
        mass, bias = _PROJECT(mass, bias, data.gradient, data.project_columns, data.project_work,
                              data.reduced_mass, data.reduced_bias)
    if want == MASS:
        for a in range(nv):
            for b in range(nv):
                out_matrix[a, b] = mass[a, b]
                if not np.isfinite(mass[a, b]):
                    return 1
        return 0
    for c in range(nv):
        out_vector[c] = bias[c]
        if not np.isfinite(bias[c]):
            return 1
    return 0


def forward_entry_py(address, q, v, tau, t, want, out_vector, out_matrix):
    """`forward_py` as the public calls' entry from Python (`pipeline.kernels.forward_entry_kernel`), compiled
    without numba's reference-counting runtime: its wrapper converts each of the five arrays without allocating a
    memory-info record for it (≈ 0.03 µs an array). `forward_py` is compiled without the runtime too
    (`pipeline.kernels.forward_kernel`): it counts no references at all, on these arrays or on the workspace
    record's. Nothing here allocates or returns an array."""
    return _FORWARD(address, q, v, tau, t, want, out_vector, out_matrix)


def applied_forces_py(model, data, forces, t, rot, pos, sub):
    """Applied joint-space forces τ into data.tau and (input power, dissipated power) into data.power at the joint
    state in data, the bodies' kinematics (rot, pos, sub: `constraints.loop_kernels`' tree kinematics at data.x;
    empty when no spring, contact or plug-in reads them) given: joint torques τ(t) (forces.tau_time, refreshed by
    the caller), joint spring-dampers and stops, point-to-point springs, ground contacts (their discrete state rows
    given) and the plug-in elements' kernels (called by address). 0, or 1 where the callback stage must evaluate (a
    zero-length spring, a plug-in kernel's non-zero status)."""
    x, xd, tau = data.x, data.xd, data.tau
    power_in = 0.0
    for k in range(model.n_tangent):
        tau[k] = forces.tau_time[k]
        power_in += forces.tau_time[k] * xd[k]
    dissipated = 0.0
    if forces.joint_springs.shape[0] or forces.joint_stops.shape[0]:
        dissipated = _JOINT_FORCES(x, xd, forces.joint_springs, forces.joint_spring_params, forces.joint_stops,
                                   forces.joint_stop_params, tau)
    if forces.spring_bodies.shape[0]:
        status, spring_dissipated = _SPRING_FORCES(rot, pos, sub, model.ancestry, xd, forces.spring_bodies,
                                                   forces.spring_points, forces.spring_params, forces.zero_length,
                                                   tau)
        if status != 0:
            return 1
        dissipated += spring_dissipated
    if forces.contact_index.shape[0]:
        dissipated += _GROUND_FORCES(rot, pos, sub, model.ancestry, forces.contact_index, forces.contact_geometry,
                                     forces.contact_normal_p, forces.contact_friction_p, forces.contact_state, xd,
                                     tau)
    if forces.plugin_addresses.shape[0]:
        power = data.power
        power[0] = power[1] = 0.0
        if _PLUGIN_FORCES(t, x, xd, rot, pos, sub, model.ancestry, forces.plugin_addresses, forces.plugin_fparams,
                          forces.plugin_iparams, tau, power) != 0:
            return 1
        power_in += power[0]
        dissipated += power[1]
    status, fiber_power = muscle_forces(forces.muscles, rot, pos, sub, model.ancestry, x, xd, tau)
    if status != 0:   # (every muscle in one call: paths, Hill forces, state rates)
        return 1
    power_in += fiber_power
    data.power[0] = power_in
    data.power[1] = dissipated
    return 0


def forces_stage_py(model, data, forces, t):
    """The force stage: the bodies' kinematics at data.x where an element reads them, then
    `applied_forces_py`."""
    if forces.spring_bodies.shape[0] or forces.contact_index.shape[0] or forces.plugin_kinematics \
            or muscle_state_size(forces.muscles):
        rot, pos, sub, _, _ = _KINEMATICS(model.tree_meta, model.tree_body, data.x, data.xd, model.n_tangent,
                                         bool(False))
    else:
        # empty (np.empty: the same allocation the tree kernels compile, not another one)
        rot, pos, sub = np.empty((0, 3, 3)), np.empty((0, 3)), np.empty((6, 0))
    return _APPLIED(model, data, forces, t, rot, pos, sub)


def generalized_forces_py(model, data):
    """Q = Gᵀ τ of the applied joint forces data.tau: data.tau itself for an identity map, else written into
    data.rhs (which the solve then turns into Q − h_r in place)."""
    if model.solver != PROJECTED:
        return data.tau
    generalized = data.rhs
    for c in range(model.nv):
        s = 0.0
        for a in range(model.n_tangent):
            s += data.gradient[a, c] * data.tau[a]
        generalized[c] = s
    return generalized


def rhs_py(model, data, forces, shadow_rows, y, t, out):
    """ẏ = (q̇, v̇, θ̇_dep, G_dep v̇ + γ_dep at `shadow_rows` of ẋ, muscle state rates, input power, dissipated
    power) into `out` for the state y = (q, v, θ_dep, θ̇_dep, muscle states, …) of a model whose joint state the
    pipeline computes: joint state → forces → M, h → solve (Q = Gᵀ τ) → q̇, then the rows of
    error_control="joints" (output-only components, `integrate.engine`; none for an explicit map). 0, or 1 where
    the callback stage must evaluate this state."""
    nq, nv = model.nq, model.nv
    if _JOINT_STATE(model, data, y[:nq], y[nq:nq + nv], t, bool(True)) != 0:
        return 1
    first = y.shape[0] - 2 - muscle_state_size(forces.muscles)   # the muscle block, before the two power entries
    load_muscle_state(forces.muscles, y, first)
    if _FORCES(model, data, forces, t) != 0:
        return 1
    store_muscle_rates(forces.muscles, out, first)
    work = data.tree_work   # (M and h into work[5], work[6])
    _TREE(model.tree_meta, model.tree_body, data.x, data.xd, data.gamma, model.gravity, bool(True), bool(True),
          bool(True), work)
    mass, bias = work[5], work[6]
    if not _SOLVE(model, data, mass, bias, _GENERALIZED(model, data), out[nq:nq + nv]):
        return 1
    _POSITION_RATE(y, nq, model.base_q, model.base_v, model.blocks, data.x, data.xd, out)
    n_pv, m = nq + nv, shadow_rows.shape[0]
    for i in range(m):
        row = shadow_rows[i]
        out[n_pv + i] = data.xd[row]
        s = data.gamma[row]
        for c in range(nv):
            s += data.gradient[row, c] * out[nq + c]
        out[n_pv + m + i] = s
    size = out.shape[0]
    out[size - 2] = data.power[0]
    out[size - 1] = data.power[1]
    for i in range(size):
        if not np.isfinite(out[i]):
            return 1
    return 0
