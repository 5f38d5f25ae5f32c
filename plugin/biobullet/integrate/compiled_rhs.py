"""One compiled call for the whole right-hand side of a reduced closed-loop model (the integrators' hot path).

For a fixed-base model whose coordinate map is a single loop resolver (θ_dep implicit in the independent
coordinates), whose force elements are point-to-point springs, joint torques and ground contacts with built-in laws
(`contact.kernels._ground_forces_py`, the contact state given), integrated with the "reduced"
formulation, everything `System._rhs` does per call runs in one numba function:

    loop Newton from the cached solution, G, θ̇, γ      (`LoopResolver._resolve_lean`'s kernel, unchanged)
    τ = Σ springs and ground contacts (from the same kinematics) + joint torques τ(t)
    M(θ), RNEA(θ, θ̇, γ)                                 (`compiled_kernels.tree_dynamics`)
    M_r = Gᵀ M G, h_r = Gᵀ RNEA, M_r v̇ = Gᵀ τ − h_r     (Cholesky)
    ẏ = (v, v̇, θ̇_dep, G_dep v̇ + γ_dep, input power, dissipated power)

The Python glue between those kernels (jets, caches, checks, the per-element loop) cost twice the kernels
themselves; this is the same algebra with the same kernels, checked against the generic path in
tests/unit/test_compiled_rhs.py. A call returns None — and the generic path then decides, continues, backtracks
or raises its own clear error — whenever the resolver's hot path would hand over (large input change, Newton not
contracting at once, ill-conditioned loop), a spring has zero length, M_r is not positive definite or anything
is not finite. Any other model, or numba missing/disabled (BIOBULLET_NUMBA=0), keeps the generic path.

`CompiledReducedRHS.tree_states` computes the loop-dependent joints of a whole trajectory's samples in compiled
passes (plain Newton on positions and one velocity solve per sample, warm-started from the previous sample;
trajectory output only). Models with explicit joint functions instead of a loop: `compiled_explicit.py`.

numba's on-disk cache of this kernel is keyed on this file only: after editing the kernels it calls
(constraints.newton_kernel, constraints.loop_kernels, algorithms.compiled_kernels, forces.compiled), touch this file.
"""
from __future__ import annotations

import numpy as np

from biobullet.algorithms import compiled_kernels as _compiled
from biobullet.core import jit

_EMPTY = np.zeros(0)

# the compiled callees, bound before `_fused_rhs_py` is compiled (numba resolves globals at compile time)
_LEAN = _TREE = _SPRING_FORCES = _PROJECTED_SOLVE = None
_GROUND_FORCES = None   # contact.kernels._ground_forces_py (ground contacts)
_FUSED = None


def _fused_rhs_py(y, nq, independent, n_joints, shadow_rows, tau_time,
                  meta, body, n_tangent, dep, known, known0, dep0, sensitivity, u0, h0, anchor, tolerance, loose,
                  warm_condition, revolute, condition_limit, l_ancestry, point_body, offset, basis, kinds,
                  row_start, n_rows,
                  tree_meta, tree_body, gravity, ancestry, spring_bodies, spring_points, spring_params, zero_length,
                  contact_index, contact_geometry, contact_normal_p, contact_friction_p, contact_state):
    """(status, condition, sensitivity, h, u, θ_known, θ_dep, ẏ): status 0 on success, else the generic path
    must evaluate this state (nothing of the resolver's cache is changed by a failed call)."""
    size = y.shape[0]
    nd = dep.shape[0]
    nk = known.shape[0]
    fail = (1, np.inf, np.zeros((nd, nk)), np.zeros(nd), np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0))
    for i in range(size):
        if not np.isfinite(y[i]):
            return fail
    theta = np.zeros(n_joints)
    rate = np.zeros(n_joints)
    gradient = np.zeros((n_joints, nq))
    gamma = np.zeros(n_joints)
    for j in range(nq):
        theta[independent[j]] = y[j]
        rate[independent[j]] = y[nq + j]
        gradient[independent[j], j] = 1.0
    status, condition, sens, h, u, known_new, dep_new, rot, pos, sub, vel, acc = _LEAN(
        meta, body, n_tangent, theta, rate, gradient, gamma, dep, known, known0, dep0, sensitivity, u0, h0,
        anchor, tolerance, loose, warm_condition, revolute, condition_limit, l_ancestry, point_body, offset, basis,
        kinds, row_start, n_rows)
    if status != 0:
        return fail
    # applied forces: joint torques τ(t) (given) and the springs, from the kinematics of the loop solve
    tau = tau_time.copy()
    power_in = 0.0
    for k in range(n_tangent):
        power_in += tau_time[k] * rate[k]
    spring_status, dissipated = _SPRING_FORCES(rot, pos, sub, ancestry, rate, spring_bodies, spring_points,
                                               spring_params, zero_length, tau)
    if spring_status != 0:
        return fail
    # ground contacts: the state rows are given (the engine's events set them), laws from contact.kernels
    if contact_index.shape[0]:
        dissipated += _GROUND_FORCES(rot, pos, sub, ancestry, contact_index, contact_geometry, contact_normal_p,
                                     contact_friction_p, contact_state, rate, tau)
    mass, bias = _TREE(tree_meta, tree_body, theta, rate, gamma, gravity, n_tangent, True, True, True)
    # M_r v̇ = Gᵀ τ − h_r by Cholesky (M_r is symmetric positive definite for a physical model)
    accel = np.empty(nq)
    if not _PROJECTED_SOLVE(mass, bias, gradient, tau, accel):
        return fail
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
            return fail
    return 0, condition, sens, h, u, known_new, dep_new, out


def _fused_kernel(lean_kernel):
    """The compiled `_fused_rhs_py` (loaded from numba's on-disk cache after the first compile), or None."""
    global _FUSED
    if _FUSED is None:
        from biobullet.forces.compiled import spring_forces_kernel
        tree = _compiled.tree_dynamics_kernel()
        springs = spring_forces_kernel()
        solve = _compiled.projected_solve_kernel()
        from biobullet.contact.kernels import ground_forces_kernel
        ground = ground_forces_kernel()
        if None in (tree, springs, solve, ground):
            _FUSED = False
        else:   # bound through core.jit, which also keys the disk cache on these callees
            _FUSED = jit.compiled(_fused_rhs_py, bind={
                "_LEAN": lean_kernel, "_TREE": tree, "_SPRING_FORCES": springs, "_PROJECTED_SOLVE": solve,
                "_GROUND_FORCES": ground}) or False
    return _FUSED or None


_POSITIONS = _LOOP_KINEMATICS = _LOOP_ROWS = None
_NEWTON_ITERATIONS = 12
#: largest change of an independent coordinate between samples, and largest Newton step, of the output pass
MAX_SAMPLE_STEP = 0.05


def _solve_small_py(a, b):
    """x of a x = b (n × n, Gaussian elimination with partial pivoting) and a success flag."""
    n = b.shape[0]
    m = a.copy()
    x = b.copy()
    for c in range(n):
        p = c
        for r in range(c + 1, n):
            if abs(m[r, c]) > abs(m[p, c]):
                p = r
        if not abs(m[p, c]) > 0.0:
            return x, False
        if p != c:
            for k in range(n):
                m[c, k], m[p, k] = m[p, k], m[c, k]
            x[c], x[p] = x[p], x[c]
        for r in range(c + 1, n):
            f = m[r, c] / m[c, c]
            for k in range(c, n):
                m[r, k] -= f * m[c, k]
            x[r] -= f * x[c]
    for c in range(n - 1, -1, -1):
        s = x[c]
        for k in range(c + 1, n):
            s -= m[c, k] * x[k]
        x[c] = s / m[c, c]
    return x, True


def _loop_positions_py(q, v, independent, n_joints, dep, known, guess, meta, body, n_tangent, l_ancestry,
                       point_body, offset, basis, kinds, row_start, n_rows):
    """θ and θ̇ (n, n_joints) at n samples by plain Newton on the loop rows (positions), then
    θ̇_dep = −Φ_dep⁻¹ Φ_known θ̇_known — trajectory output only: no G, γ or curvature. Each sample starts from the
    previous one's solution (`guess` for the first) and iterates until the step is at round-off. Returns
    (θ, θ̇, done): from sample `done` on (no convergence, singular Φ_dep) the caller takes over."""
    n, nq = q.shape
    nd = dep.shape[0]
    theta_all = np.zeros((n, n_joints))
    rate_all = np.zeros((n, n_joints))
    current = guess.copy()
    empty = np.zeros(0)
    for s in range(n):
        if s > 0:
            jump = 0.0
            for j in range(nq):
                jump = max(jump, abs(q[s, j] - q[s - 1, j]))
            if jump > MAX_SAMPLE_STEP:   # far from the last solution: the branch-safe generic path decides
                return theta_all, rate_all, s
        theta = np.zeros(n_joints)
        rate = np.zeros(n_joints)
        for j in range(nq):
            theta[independent[j]] = q[s, j]
            rate[independent[j]] = v[s, j]
        for i in range(nd):
            theta[dep[i]] = current[i]
        converged = False
        for _ in range(_NEWTON_ITERATIONS):
            rot, pos, sub, vel, acc = _LOOP_KINEMATICS(meta, body, theta, empty, n_tangent, False)
            phi, jac, _ = _LOOP_ROWS(rot, pos, sub, vel, acc, l_ancestry, point_body, offset, basis, kinds,
                                     row_start, n_rows, True, False)
            a = np.empty((nd, nd))
            for r in range(nd):
                for c in range(nd):
                    a[r, c] = jac[r, dep[c]]
            step, ok = _SOLVE_SMALL(a, phi)
            if not ok:
                return theta_all, rate_all, s
            size = 0.0
            scale = 1.0
            for i in range(nd):
                if abs(step[i]) > MAX_SAMPLE_STEP:   # Newton far from home: hand over rather than risk a branch
                    return theta_all, rate_all, s
                theta[dep[i]] -= step[i]
                size = max(size, abs(step[i]))
                scale = max(scale, abs(theta[dep[i]]))
            if size <= 4e-16 * scale:
                converged = True
                break
        if not converged:
            return theta_all, rate_all, s
        # rates at the solution: Φ_dep θ̇_dep = −Φ_known θ̇_known
        rot, pos, sub, vel, acc = _LOOP_KINEMATICS(meta, body, theta, empty, n_tangent, False)
        _, jac, _ = _LOOP_ROWS(rot, pos, sub, vel, acc, l_ancestry, point_body, offset, basis, kinds, row_start,
                               n_rows, True, False)
        a = np.empty((nd, nd))
        b = np.zeros(nd)
        for r in range(nd):
            for c in range(nd):
                a[r, c] = jac[r, dep[c]]
            for c in range(known.shape[0]):
                b[r] -= jac[r, known[c]] * rate[known[c]]
        dep_rate, ok = _SOLVE_SMALL(a, b)
        if not ok:
            return theta_all, rate_all, s
        for i in range(nd):
            rate[dep[i]] = dep_rate[i]
            current[i] = theta[dep[i]]
        theta_all[s] = theta
        rate_all[s] = rate
    return theta_all, rate_all, n


_SOLVE_SMALL = None


def _positions_kernel():
    global _POSITIONS
    if _POSITIONS is None:
        from biobullet.constraints.loop_kernels import _kernels as loop_kernels
        kernels = loop_kernels()
        solve = jit.compiled(_solve_small_py)
        if kernels is None or solve is None:
            _POSITIONS = False
        else:
            _POSITIONS = jit.compiled(_loop_positions_py, bind={
                "_LOOP_KINEMATICS": kernels[0], "_LOOP_ROWS": kernels[1], "_SOLVE_SMALL": solve}) or False
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

    def __init__(self, system, resolver, lean, springs, torques, contacts=()) -> None:
        from biobullet.algorithms.vectorized import tree_arrays
        from biobullet.constraints.implicit import CONDITION_LIMIT
        from biobullet.integrate.compiled_explicit import pack_springs

        model = system.model
        self.resolver = resolver
        self._condition_limit = CONDITION_LIMIT
        kernel, meta, body, n_tangent, rows_data = lean
        self._kernel = _fused_kernel(kernel)
        self._lean_args = (meta, body, n_tangent)
        self._rows = rows_data
        tree_meta, tree_body = _compiled.pack(model)
        self._tree = (tree_meta, tree_body, np.array(model.gravity, dtype=float), tree_arrays(model).ancestry)
        self._springs = pack_springs(model, springs)
        self._torques = [(torque, torque._indices(model)[1]) for torque in torques]
        self._constant = all(torque.value is not None for torque in torques)
        self._tau_time = np.zeros(model.n_tangent)
        for torque, k in self._torques:
            if torque.value is not None:
                self._tau_time[k] += torque.value
        self._static = (model.nq, np.array(model.coordinate_map.independent, dtype=np.int64),
                        model.coordinate_map.n_joints, np.asarray(system.shadow[1], dtype=np.int64)
                        if system.shadow is not None else np.zeros(0, dtype=np.int64))
        # ground contacts with compiled laws (as `CompiledExplicitRHS`): state rows refreshed every call
        from biobullet.contact.kernels import STATE_WIDTH, pack_ground
        self._contact_states = [contact.state for contact in contacts]
        for contact in contacts:   # the interval log's samples by the same compiled laws
            contact.use_compiled_observer(model)
        self._contacts = (*pack_ground(model, contacts), np.zeros((len(contacts), STATE_WIDTH)))

    @classmethod
    def for_system(cls, system) -> "CompiledReducedRHS | None":
        """The compiled path for this run, or None: formulation "reduced", fixed base, one loop resolver as the
        whole coordinate map, only Spring, JointTorque and Contact (built-in laws) elements, numba available and enabled."""
        from biobullet.constraints.implicit import LoopResolver
        from biobullet.contact.element import Contact
        from biobullet.contact.kernels import has_twins
        from biobullet.forces.elements import JointTorque, Spring

        model = system.model
        cmap = model.coordinate_map
        if (system.joint_space or system.formulation != "reduced" or system.floating or not jit.ENABLED
                or cmap.kind != "general" or len(cmap.resolvers) != 1
                or type(cmap.resolvers[0]) is not LoopResolver
                or model.n_tangent != cmap.n_joints or model.nq != len(cmap.independent)):
            return None
        contacts = [e for e in system.elements if type(e) is Contact]   # built-in laws only
        if any(not has_twins(e) or e.state is None for e in contacts):
            return None
        if any(type(e) not in (Spring, JointTorque, Contact) for e in system.elements):
            return None
        resolver = cmap.resolvers[0]
        lean = resolver._lean
        if lean is None:
            return None
        springs = [e for e in system.elements if type(e) is Spring]
        torques = [e for e in system.elements if type(e) is JointTorque]
        path = cls(system, resolver, lean, springs, torques, contacts)
        return path if path._kernel is not None else None

    def tree_states(self, t: np.ndarray, q: np.ndarray, v: np.ndarray, fallback) -> tuple[np.ndarray, np.ndarray]:
        """(θ, θ̇) (n, n_joints) at n samples in one compiled call (Newton warm-started sample to sample); a
        sample the kernel hands over goes to `fallback(k)` → (θ, θ̇) (the generic path, which also refreshes the
        resolver's cache) and the batch resumes after it."""
        global _STATES
        if _STATES is None:   # `_LEAN` is bound: this path exists only once the fused kernel compiled
            _STATES = jit.compiled(_loop_states_py, bind={"_LEAN": _LEAN}) or False
        r = self.resolver
        _, independent, n_joints, _ = self._static
        meta, body, n_tangent = self._lean_args
        n = len(t)
        theta, rate = np.zeros((n, n_joints)), np.zeros((n, n_joints))
        start = 0
        positions = _positions_kernel()
        if positions is not None and n > 1 and self._rows[-1] == len(r._dep):
            # the first sample by the generic path (continuation from wherever the resolver's cache is: the
            # assembly branch is the generic path's), then plain Newton on positions (no G, γ, curvature: output
            # only) warm-started sample to sample, handing back at a large step between samples
            dep = np.asarray(r._dep, dtype=np.int64)
            theta[0], rate[0] = fallback(0)
            th, rt, done = positions(np.ascontiguousarray(q[1:]), np.ascontiguousarray(v[1:]), independent, n_joints,
                                     dep, np.asarray(r._kn, dtype=np.int64), theta[0][dep].copy(), meta, body,
                                     n_tangent, *self._rows)
            theta[1:1 + done], rate[1:1 + done] = th[:done], rt[:done]
            start = 1 + done
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
        known0, dep0, sensitivity = warm
        curvature = r._warm_curvature
        u0, h0 = curvature if curvature is not None else (_EMPTY, _EMPTY)
        anchor = r._anchor[0][0] if r._anchor is not None else _EMPTY
        loose = r.accept_residual
        nq, independent, n_joints, shadow_rows = self._static
        meta, body, n_tangent = self._lean_args
        tree_meta, tree_body, gravity, ancestry = self._tree
        bodies, points, params, zero_length = self._springs
        status, condition, sensitivity, h, u, known_new, dep_new, out = self._kernel(
            y, nq, independent, n_joints, shadow_rows, self._time_forces(t),
            meta, body, n_tangent, r._dep, r._kn, known0, dep0, sensitivity, u0, h0, anchor, r.residual_tolerance,
            -1.0 if loose is None else loose, r._warm_condition, r._revolute_float, self._condition_limit, *self._rows,
            tree_meta, tree_body, gravity, ancestry, bodies, points, params, zero_length, *self._contact_arrays())
        if status != 0:
            return None
        # the resolver's cache moves exactly as `LoopResolver._resolve_lean` moves it
        r._warm = (known_new, dep_new, sensitivity)
        r._warm_condition = condition
        r._warm_curvature = (u, h) if u.shape[0] else None
        r._warm_fresh = True
        r._memo = None
        return out
