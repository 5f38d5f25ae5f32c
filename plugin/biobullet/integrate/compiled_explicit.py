"""One compiled call for the whole right-hand side of a reduced model whose coordinate map is explicit joint
functions (identity, affine, polynomial, linear, cubic spline, Fourier drivers, expressions), fixed or floating
base, spherical, planar and inner free (URDF floating) joints, with point-to-point springs, joint spring-dampers,
joint stops, joint torques and ground contacts with built-in laws: `CompiledExplicitRHS` (the loop-map twin is
`compiled_rhs.CompiledReducedRHS`). Per call:

    θ, G, θ̇, γ by the chain rule through the table of joint functions   (`_explicit_jets_py`)
    τ = joint torques τ(t) + joint spring-dampers and stops + springs   (`forces.compiled`)
        + ground contacts, their discrete state given                    (`contact.kernels._ground_forces_py`)
        + third-party elements' kernels, called by address               (`forces.compiled._plugin_forces_py`)
    M(θ), RNEA(θ, θ̇, γ)                                                (`compiled_kernels.tree_dynamics`)
    identity map: M v̇ = τ − RNEA by the tree-sparse Lᵀ D L (branched trees) or Cholesky;
    otherwise M_r = Gᵀ M G, h_r = Gᵀ RNEA, Cholesky
    ẏ = (q̇ — multi-DOF blocks: R v_lin and ½ z ⊗ (ω, 0), planar R(φ) v —, v̇, input power, dissipated power)

A call returns None — the generic path then evaluates the state — for a non-finite state or result (an
expression outside its domain included: the generic path raises its EvaluationError), a zero-length spring or a
mass matrix that is not positive definite. `explicit_states_batch` evaluates the same table over all
samples of a trajectory (post-processing). Tested equal to the generic path in
tests/unit/integrate/test_compiled_explicit.py.

numba's on-disk cache of these kernels is keyed on this file only: after editing the kernels they call
(algorithms.compiled_kernels, constraints.loop_kernels, forces.compiled), touch this file; after editing
`_reduced_state_py` / `_position_rate_py` here (also inlined into compiled_rhs's loop kernels), touch compiled_rhs.py.
"""
from __future__ import annotations

import numpy as np

from biobullet.algorithms import compiled_kernels as _compiled
from biobullet.core import jit

# the compiled callees, bound before the kernels that call them are compiled (numba resolves globals then)
_TREE = _SPRING_FORCES = _PROJECTED_SOLVE = _CHOLESKY_FACTOR = _CHOLESKY_SOLVE = None

# Joint functions evaluated inside the kernel (the table of model/joint_jets.py: polynomial, linear, cubic spline,
# Fourier driver, expression tape). Third-party types stay on the generic path: `CompiledExplicitRHS.for_system`
# returns None for a model that has one.
from biobullet.functions.expression_tape import evaluate_tape  # noqa: E402
from biobullet.model.joint_jets import (EXPRESSION, FOURIER, LINEAR, PLUGIN, POLYNOMIAL, SPLINE,  # noqa: E402,F401
                                        _explicit_jets_py, explicit_table, jets_kernel)


def _ltdl_solve_py(mass, parent, rhs, out):
    """Solve M out = rhs for a tree's mass matrix by the sparse factorisation M = Lᵀ D L (Featherstone, RBDA
    §6.5): `parent[k]` is the tangent direction before k on its path to the root (−1 at the root), and M[k, i] = 0
    unless one of k, i is an ancestor of the other, so the work is O(n d²) (d the depth) instead of O(n³) — a
    branched tree costs far less than a chain of the same size. False (nothing usable in `out`) when a pivot is
    not positive (M not positive definite)."""
    n = mass.shape[0]
    h = mass.copy()
    for k in range(n - 1, -1, -1):
        if not h[k, k] > 0.0:
            return False
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
    return True


def tangent_parents(model) -> np.ndarray:
    """`parent` of `_ltdl_solve_py` for the model's tangent directions (a multi-DOF joint's directions form a
    chain, its first one hangs on the parent body's last direction)."""
    parents = np.full(model.n_tangent, -1, dtype=np.int64)
    bodies = model.bodies
    for body in bodies:
        for d in range(body.nv):
            k = body.v_index + d
            if d > 0:
                parents[k] = k - 1
            elif body.parent >= 0:
                p = bodies[body.parent]
                parents[k] = p.v_index + p.nv - 1
    return parents


_LTDL = None
_EXPLICIT = _JETS = _KINEMATICS = _JOINT_FORCES = None
_STATE = _POSITION_RATE = None   # the compiled `_reduced_state_py`, `_position_rate_py` (inlined)


FREE, SPHERICAL, PLANAR = _compiled.FREE, _compiled.SPHERICAL, _compiled.PLANAR


def multi_dof_blocks(model) -> np.ndarray:
    """The packed table (m, 3) int64 of the model's multi-DOF blocks that lead q and v — the floating base and
    every free (URDF floating), spherical and planar joint, in q order: (kind of `compiled_kernels`: FREE,
    SPHERICAL or PLANAR, index in q, index in v). Each block has one more coordinate than velocities (a unit
    quaternion, or a planar joint's (cos φ, sin φ) pair), so base_nq = base_nv + m."""
    kinds = {"free": FREE, "spherical": SPHERICAL, "planar": PLANAR}
    rows = [(kinds[b.joint_type], b.q_index, b.v_index)
            for b in sorted((b for b in model.bodies if b.multi_dof), key=lambda b: b.q_index)]
    return np.array(rows, dtype=np.int64).reshape(len(rows), 3)


def _reduced_state_py(y, nq, nv, base_q, base_v, blocks, independent, n_config, n_tangent):
    """(finite, x, ẋ, G, γ) of the tree from a reduced state y = (q, v, …): the multi-DOF blocks (`blocks`, as
    `multi_dof_blocks`: the floating base, free, spherical and planar joints, base_q coordinates and base_v
    velocities leading q and v) copied with every unit quaternion and planar (cos, sin) pair normalised (as
    `Model.normalize_configuration`), and the independent joints set (G has identity rows there: the block
    directions and one per independent joint), the other joints zero for the coordinate map's stages to fill;
    finite False when y is not (or a quaternion or pair is zero). Shared by the explicit-function and the
    loop-map kernels (compiled inline)."""
    x = np.zeros(n_config)
    xd = np.zeros(n_tangent)
    gradient = np.zeros((n_tangent, nv))
    gamma = np.zeros(n_tangent)
    for i in range(y.shape[0]):
        if not np.isfinite(y[i]):
            return False, x, xd, gradient, gamma
    for k in range(base_q):
        x[k] = y[k]
    for b in range(blocks.shape[0]):
        kind, k = blocks[b, 0], blocks[b, 1]
        start, size = (k + 3, 4) if kind == FREE else (k, 4) if kind == SPHERICAL else (k + 2, 2)
        norm = 0.0
        for i in range(start, start + size):
            norm += x[i] * x[i]
        norm = np.sqrt(norm)
        if not norm > 0.0:
            return False, x, xd, gradient, gamma
        for i in range(start, start + size):
            x[i] /= norm
    for k in range(base_v):
        xd[k] = y[nq + k]
        gradient[k, k] = 1.0
    for j in range(independent.shape[0]):
        x[base_q + independent[j]] = y[base_q + j]
        xd[base_v + independent[j]] = y[nq + base_v + j]
        gradient[base_v + independent[j], base_v + j] = 1.0
    return True, x, xd, gradient, gamma


def _position_rate_py(y, nq, base_q, base_v, blocks, x, xd, out):
    """q̇ into out[:nq] from a reduced state y = (q, v, …), as `Model.configuration_rate`: per multi-DOF block
    (`blocks`, as `multi_dof_blocks`) with the normalised coordinates x and the velocities ẋ — free joint (and
    floating base) (R(z) v_lin, ½ z ⊗ (ω, 0)), spherical ½ z ⊗ (ω, 0) — z the unit quaternion (x, y, z, w),
    scalar last, (v_lin, ω) in the child (body) frame —, planar (c vx − s vy, s vx + c vy, −s φ̇, c φ̇) for its
    (x, y, cos φ, sin φ); then the 1-DOF coordinates' v. Shared by the explicit-function and the loop-map
    kernels (compiled inline)."""
    for b in range(blocks.shape[0]):
        kind, k, j = blocks[b, 0], blocks[b, 1], blocks[b, 2]
        if kind == PLANAR:
            c, s, v0, v1 = x[k + 2], x[k + 3], xd[j], xd[j + 1]
            out[k] = c * v0 - s * v1
            out[k + 1] = s * v0 + c * v1
            out[k + 2] = -s * xd[j + 2]
            out[k + 3] = c * xd[j + 2]
            continue
        if kind == FREE:
            qx, qy, qz, qw = x[k + 3], x[k + 4], x[k + 5], x[k + 6]
            r00, r01, r02 = 1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)
            r10, r11, r12 = 2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)
            r20, r21, r22 = 2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)
            v0, v1, v2 = xd[j], xd[j + 1], xd[j + 2]
            out[k] = r00 * v0 + r01 * v1 + r02 * v2
            out[k + 1] = r10 * v0 + r11 * v1 + r12 * v2
            out[k + 2] = r20 * v0 + r21 * v1 + r22 * v2
            k += 3
            j += 3
        qx, qy, qz, qw = x[k], x[k + 1], x[k + 2], x[k + 3]
        w0, w1, w2 = xd[j], xd[j + 1], xd[j + 2]
        out[k] = 0.5 * (qw * w0 + qy * w2 - qz * w1)
        out[k + 1] = 0.5 * (qw * w1 + qz * w0 - qx * w2)
        out[k + 2] = 0.5 * (qw * w2 + qx * w1 - qy * w0)
        out[k + 3] = -0.5 * (qx * w0 + qy * w1 + qz * w2)
    for k in range(base_q, nq):
        out[k] = y[nq + base_v + k - base_q]


_GROUND_FORCES = None   # contact.kernels._ground_forces_py (ground contacts)
_PLUGIN_FORCES = None   # forces.compiled._plugin_forces_py (third-party elements' kernels, by address)


def _explicit_rhs_py(y, t, nq, nv, base_q, base_v, blocks, independent, n_config, n_tangent, table, inputs, coef,
                     tau_time, tree_meta, tree_body, gravity, ancestry, spring_bodies, spring_points, spring_params,
                     zero_length, joint_springs, joint_spring_params, tangent_parent, joint_stops,
                     joint_stop_params, contact_index, contact_geometry, contact_normal_p, contact_friction_p,
                     contact_state, plugin_addresses, plugin_fparams, plugin_iparams, plugin_kinematics):
    """(status, ẏ) of a reduced model whose coordinate map is explicit joint functions: status 0 on success,
    1 where the generic path must evaluate the state (non-finite state or result, zero-length spring, M_r not
    positive definite). Multi-DOF blocks (`blocks`: floating base, free, spherical and planar joints): their
    quaternions and (cos, sin) pairs are normalised first, q̇ as `_position_rate_py`."""
    size = y.shape[0]
    fail = (1, np.zeros(0))
    finite, x, xd, gradient, gamma = _STATE(y, nq, nv, base_q, base_v, blocks, independent, n_config, n_tangent)
    if not finite:
        return fail
    if _JETS(table, inputs, coef, t, base_q, base_v, x, xd, gradient, gamma) != 0:
        return fail
    # applied forces: joint torques τ(t) (given), joint spring-dampers and stops, point-to-point springs
    tau = tau_time.copy()
    power_in = 0.0
    for k in range(n_tangent):
        power_in += tau_time[k] * xd[k]
    dissipated = _JOINT_FORCES(x, xd, joint_springs, joint_spring_params, joint_stops, joint_stop_params, tau)
    if spring_bodies.shape[0]:
        rot, pos, sub, _, _ = _KINEMATICS(tree_meta, tree_body, x, xd, n_tangent, False)
        spring_status, spring_dissipated = _SPRING_FORCES(rot, pos, sub, ancestry, xd, spring_bodies,
                                                          spring_points, spring_params, zero_length, tau)
        if spring_status != 0:
            return fail
        dissipated += spring_dissipated
    # ground contacts (`contact.kernels._ground_forces_py`): the discrete state rows are given (the engine's
    # events set them in Python), the laws are the contact kernels' twins
    if contact_index.shape[0]:
        rot, pos, sub, _, _ = _KINEMATICS(tree_meta, tree_body, x, xd, n_tangent, False)
        dissipated += _GROUND_FORCES(rot, pos, sub, ancestry, contact_index, contact_geometry, contact_normal_p,
                                     contact_friction_p, contact_state, xd, tau)
    # plug-in force elements (`ForceElement.compiled_kernel`), called through their addresses; a kernel's
    # non-zero status hands the state to the generic path
    if plugin_addresses.shape[0]:
        if plugin_kinematics:
            rot, pos, sub, _, _ = _KINEMATICS(tree_meta, tree_body, x, xd, n_tangent, False)
        else:
            rot, pos, sub = np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros((6, 0))
        power = np.zeros(2)
        if _PLUGIN_FORCES(t, x, xd, rot, pos, sub, ancestry, plugin_addresses, plugin_fparams, plugin_iparams, tau,
                          power) != 0:
            return fail
        power_in += power[0]
        dissipated += power[1]
    mass, bias = _TREE(tree_meta, tree_body, x, xd, gamma, gravity, n_tangent, True, True, True)
    rhs = np.empty(nv)
    accel = np.empty(nv)
    if table.shape[0] == 0 and nv == n_tangent:
        # identity map (G = I): M itself, no O(n³) projection; the tree-sparse factorisation for branched trees
        # (tangent_parent[0] = −2 marks a chain-like tree, where dense Cholesky's contiguous loops are faster)
        for c in range(nv):
            rhs[c] = tau[c] - bias[c]
        if nv and tangent_parent[0] == -2:
            low = np.zeros((nv, nv))
            if not _CHOLESKY_FACTOR(mass, low, 0.0):
                return fail
            _CHOLESKY_SOLVE(low, rhs, accel)
        elif not _LTDL(mass, tangent_parent, rhs, accel):
            return fail
    elif not _PROJECTED_SOLVE(mass, bias, gradient, tau, accel):
        return fail
    out = np.empty(size)
    _POSITION_RATE(y, nq, base_q, base_v, blocks, x, xd, out)
    for k in range(nv):
        out[nq + k] = accel[k]
    out[size - 2] = power_in
    out[size - 1] = dissipated
    for i in range(size):
        if not np.isfinite(out[i]):
            return fail
    return 0, out


def state_kernels() -> tuple:
    """(the compiled `_reduced_state_py`, the compiled `_position_rate_py`), inlined into their callers (None each
    without numba)."""
    return jit.compiled(_reduced_state_py, inline=True), jit.compiled(_position_rate_py, inline=True)


def _explicit_kernel():
    """The compiled `_explicit_rhs_py`, or None (numba missing or disabled)."""
    global _EXPLICIT
    if _EXPLICIT is None:
        from biobullet.constraints.loop_kernels import _kernels as loop_kernels
        from biobullet.forces.compiled import joint_forces_kernel, spring_forces_kernel
        kinematics = loop_kernels()
        callees = (_compiled.tree_dynamics_kernel(), spring_forces_kernel(), _compiled.projected_solve_kernel(),
                   jit.compiled(_compiled._cholesky_factor_py), jit.compiled(_compiled._cholesky_solve_py),
                   jets_kernel(), kinematics[0] if kinematics else None,
                   jit.compiled(_ltdl_solve_py), joint_forces_kernel())
        from biobullet.contact.kernels import ground_forces_kernel
        from biobullet.forces.compiled import plugin_forces_kernel
        callees += (ground_forces_kernel(), plugin_forces_kernel(), *state_kernels())
        if None in callees:
            _EXPLICIT = False
        else:   # bound through core.jit, which also keys the disk cache on these callees
            names = ("_TREE", "_SPRING_FORCES", "_PROJECTED_SOLVE", "_CHOLESKY_FACTOR", "_CHOLESKY_SOLVE", "_JETS",
                     "_KINEMATICS", "_LTDL", "_JOINT_FORCES", "_GROUND_FORCES", "_PLUGIN_FORCES", "_STATE",
                     "_POSITION_RATE")
            _EXPLICIT = jit.compiled(_explicit_rhs_py, bind=dict(zip(names, callees))) or False
    return _EXPLICIT or None


_NO_PLUGINS = (np.zeros(0, dtype=np.int64), np.zeros((0, 1)), np.zeros((0, 1), dtype=np.int64), False)


def plugin_elements(system, builtins) -> tuple[list, tuple | None]:
    """(the run's elements that are not of the `builtins` types, their packed kernels): the packed kernels are
    `forces.compiled.pack_plugins`'s tuple, `_NO_PLUGINS` without such elements, or None when one of them has no
    compiled kernel (the run then keeps the generic path)."""
    from biobullet.forces.compiled import pack_plugins
    others = [e for e in system.elements if type(e) not in builtins]
    if not others:
        return others, _NO_PLUGINS
    return others, pack_plugins(system.model, others)


def pack_springs(model, springs) -> tuple:
    """(bodies (n, 2), local points (n, 2, 3), (k, rest, c) (n, 3), zero length) of point-to-point springs,
    end b first, as `forces.compiled._spring_kernel_py` takes them."""
    from biobullet.forces.elements import ZERO_LENGTH
    bodies, points, params = [], [], []
    for spring in springs:
        ends = []
        for link, xyz in ((spring.link_b, spring.xyz_b), (spring.link_a, spring.xyz_a)):
            frame = model.frame(link)
            ends.append((int(frame.body), frame.rotation @ xyz + frame.translation))
        bodies.append([ends[0][0], ends[1][0]])
        points.append([ends[0][1], ends[1][1]])
        params.append([spring.stiffness, spring.rest_length, spring.damping])
    return (np.array(bodies, dtype=np.int64).reshape(-1, 2),
            np.ascontiguousarray(np.array(points, dtype=float).reshape(-1, 2, 3)),
            np.array(params, dtype=float).reshape(-1, 3), float(ZERO_LENGTH))


class CompiledExplicitRHS:
    """`__call__(t, y)` → ẏ for a "reduced" run of a model whose coordinate map is identity, affine or explicit
    polynomial / linear / spline / Fourier / expression joint functions (fixed or floating base; 1-DOF, spherical, planar and free joints), with joint
    torques, joint spring-dampers, joint stops (smooth or switched; the switched stops' restart events stay with the
    engine's event handling), point-to-point springs, ground contacts with built-in laws or plug-in laws with a
    compiled twin, and third-party elements with a compiled kernel (`ForceElement.compiled_kernel`): one compiled
    call; None where the generic path must evaluate. Built by :meth:`for_system` (None for other models: loops,
    plug-in functions, elements or contact laws without a compiled form, …)."""

    def __init__(self, system, table, springs, joint_springs, torques, joint_stops=(), contacts=(),
                 plugins=None) -> None:
        from biobullet.forces.compiled import pack_joint_forces
        from biobullet.algorithms.vectorized import tree_arrays

        model = system.model
        self._kernel = _explicit_kernel()
        self._table = table
        tree_meta, tree_body = _compiled.pack(model)
        self._tree = (tree_meta, tree_body, np.array(model.gravity, dtype=float),
                      np.ascontiguousarray(tree_arrays(model).ancestry))
        self._springs = pack_springs(model, springs)
        # (index, params) of the joint spring-dampers, then of the joint stops (`forces.compiled._joint_forces_py`)
        self._joint_springs = pack_joint_forces(model, joint_springs, joint_stops)
        self._torques = [(torque, torque._indices(model)[1]) for torque in torques]
        self._constant = all(torque.value is not None for torque in torques)
        self._tau_time = np.zeros(model.n_tangent)
        for torque, k in self._torques:
            if torque.value is not None:
                self._tau_time[k] += torque.value
        # the multi-DOF blocks (floating base, free, spherical, planar joints) lead q and v
        self._static = (model.nq, model.nv, model.base_nq, model.base_nv, multi_dof_blocks(model),
                        np.array(model.coordinate_map.independent, dtype=np.int64), model.n_config,
                        model.n_tangent)
        self._tangent_parent = tangent_parents(model)
        # ground contacts with compiled laws: packed constants, and state rows refreshed from the run's
        # ContactStates at every call (the engine's event actions change those in Python)
        from biobullet.contact.kernels import STATE_WIDTH, pack_ground
        self._contact_states = [contact.state for contact in contacts]
        for contact in contacts:   # the interval log's samples by the same compiled laws
            contact.use_compiled_observer(model)
        self._contacts = (*pack_ground(model, contacts), np.zeros((len(contacts), STATE_WIDTH)))
        # third-party elements' kernels (`forces.compiled.pack_plugins`; none: empty rows)
        self._plugins = plugins if plugins is not None else _NO_PLUGINS
        # Σ depth² is the sparse factorisation's work, n³/3 the dense one's (both up to a constant): the sparse
        # one pays off only on clearly branched trees (measured: tests/benchmarks/test_rhs_scaling.py)
        depth = np.zeros(model.n_tangent)
        for k, p in enumerate(self._tangent_parent):
            depth[k] = 1.0 + (depth[p] if p >= 0 else 0.0)
        # and it needs every direction after its parent's (RBDA §6.5's λ(k) < k): multi-DOF joints below a 1-DOF
        # joint break that (their velocities lead v), so such trees take the dense factorisation
        ordered = bool(np.all(self._tangent_parent < np.arange(model.n_tangent)))
        if model.n_tangent and (not ordered or float(np.sum(depth ** 2)) > model.n_tangent ** 3 / 12.0):
            self._tangent_parent = self._tangent_parent.copy()
            self._tangent_parent[0] = -2

    @classmethod
    def for_system(cls, system) -> "CompiledExplicitRHS | None":
        from biobullet.contact.element import Contact
        from biobullet.contact.kernels import has_twins
        from biobullet.forces.elements import JointSpring, JointStop, JointTorque, Spring

        model = system.model
        if system.joint_space or system.formulation != "reduced" or not jit.ENABLED or system.shadow is not None:
            return None
        # ground contacts: built-in laws only (a plug-in law keeps the generic path); run copies (a state)
        contacts = [e for e in system.elements if type(e) is Contact]
        if any(not has_twins(e) or e.state is None for e in contacts):
            return None
        # third-party elements: each with its compiled kernel (`ForceElement.compiled_kernel`), else generic
        _, plugins = plugin_elements(system, (Spring, JointTorque, JointSpring, JointStop, Contact))
        if plugins is None:
            return None
        # joint kinds of the compiled tree kernels: 1-DOF joints and the multi-DOF blocks (`multi_dof_blocks`)
        if any(b.joint_type not in ("revolute", "prismatic", "free", "spherical", "planar") for b in model.bodies):
            return None
        table = explicit_table(model.coordinate_map)
        if table is None:
            return None
        path = cls(system, table, [e for e in system.elements if type(e) is Spring],
                   [e for e in system.elements if type(e) is JointSpring],
                   [e for e in system.elements if type(e) is JointTorque],
                   [e for e in system.elements if type(e) is JointStop], contacts, plugins)
        return path if path._kernel is not None else None

    def _contact_arrays(self) -> tuple:
        if self._contact_states:
            from biobullet.contact.kernels import discrete_rows
            discrete_rows(self._contact_states, self._contacts[4])
        return self._contacts

    def _time_forces(self, t: float) -> np.ndarray:
        if self._constant:
            return self._tau_time
        tau = self._tau_time.copy()
        for torque, k in self._torques:
            if torque.value is None:
                tau[k] += torque.torque(t)
        return tau

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray | None:
        if not (y.flags.c_contiguous and y.dtype == np.float64):
            y = np.ascontiguousarray(y, dtype=float)
        nq, nv, base_q, base_v, blocks, independent, n_config, n_tangent = self._static
        table, inputs, coef = self._table
        tree_meta, tree_body, gravity, ancestry = self._tree
        bodies, points, params, zero_length = self._springs
        status, out = self._kernel(y, float(t), nq, nv, base_q, base_v, blocks, independent, n_config, n_tangent, table,
                                   inputs, coef, self._time_forces(t), tree_meta, tree_body, gravity, ancestry,
                                   bodies, points, params, zero_length, *self._joint_springs[:2],
                                   self._tangent_parent, *self._joint_springs[2:], *self._contact_arrays(),
                                   *self._plugins)
        return out if status == 0 else None


_SAMPLE_JETS = None   # the compiled `_explicit_jets_py`, bound into `_explicit_states_py`

#: below this many samples, `explicit_states_batch` loops over samples in one compiled call (a few samples of a
#: step — event functions, the contact interval log — where numpy's per-call overhead would dominate)
FEW_SAMPLES = 64


def _explicit_states_py(table, inputs, coef, t, theta, rate):
    """θ, θ̇ of the dependent joints at each sample by the kernel's own jets (`_explicit_jets_py`); G and γ are
    not wanted (a one-column zero gradient). False when an expression is not finite at some sample."""
    gradient = np.zeros((theta.shape[1], 1))
    gamma = np.zeros(theta.shape[1])
    for k in range(t.shape[0]):
        x = theta[k]
        xd = rate[k]
        if _SAMPLE_JETS(table, inputs, coef, t[k], 0, 0, x, xd, gradient, gamma) != 0:
            return False
    return True


def explicit_states_batch(table, inputs, coef, t: np.ndarray, theta: np.ndarray, rate: np.ndarray) -> bool:
    """θ and θ̇ of the dependent joints at n samples, in place (theta, rate: (n, n_joints), independent columns
    set; t: (n,)): the same table as the kernel, vectorised over samples (trajectory post-processing), or for
    fewer than `FEW_SAMPLES` samples (or a third-party function's compiled jets in the table) the compiled jets
    sample by sample. False when an expression is not finite at
    some sample (the caller's per-sample path then reports it)."""
    plugin = bool(np.any(table[:, 0] == PLUGIN))   # third-party compiled jets: only the kernel can call them
    if (len(t) < FEW_SAMPLES or plugin) and table.shape[0]:
        kernel = jit.compiled(_explicit_states_py, bind=lambda: {"_SAMPLE_JETS": jets_kernel()})
        if kernel is not None:
            return bool(kernel(np.ascontiguousarray(table), np.ascontiguousarray(inputs),
                               np.ascontiguousarray(coef, dtype=float), np.ascontiguousarray(t, dtype=float),
                               theta, rate))
    if plugin:
        return False
    for kind, out, i0, n_in, c0, nc in table.tolist():
        if kind == EXPRESSION:   # the tape over all samples at once: value and gradient registers
            m = n_in + 1
            cols = inputs[i0:i0 + n_in]
            jets = evaluate_tape(inputs[i0 + n_in:], coef[c0:c0 + nc], [*(theta[:, j] for j in cols), t])
            value = np.broadcast_to(jets[0], t.shape)
            speed = np.broadcast_to(jets[m], t.shape).copy()   # f_t
            for i, j in enumerate(cols):
                speed += jets[1 + i] * rate[:, j]
            if not all(np.all(np.isfinite(jet)) for jet in jets):   # as the per-sample `evaluate` checks
                return False
            theta[:, out] = value
            rate[:, out] = speed
        elif kind == LINEAR:
            a = coef[c0:c0 + n_in]
            cols = inputs[i0:i0 + n_in]
            theta[:, out] = theta[:, cols] @ a + coef[c0 + n_in]
            rate[:, out] = rate[:, cols] @ a
        elif kind == FOURIER:
            w, a, b = (coef[c0 + 1 + m:c0 + 1 + 3 * nc:3] for m in range(3))
            phase = np.outer(t, w)
            cs, sn = np.cos(phase), np.sin(phase)
            theta[:, out] = coef[c0] + cs @ a + sn @ b
            rate[:, out] = cs @ (w * b) - sn @ (w * a)
        else:
            z = theta[:, inputs[i0]]
            if kind == POLYNOMIAL:
                c = coef[c0:c0 + nc]
                value = np.polynomial.polynomial.polyval(z, c)
                slope = np.polynomial.polynomial.polyval(z, c[1:] * np.arange(1, nc)) if nc > 1 else 0.0 * z
            else:   # SPLINE
                breaks = coef[c0:c0 + nc]
                piece = np.clip(np.searchsorted(breaks, z, side="right") - 1, 0, nc - 2)
                s = z - breaks[piece]
                pieces = coef[c0 + nc:c0 + nc + 4 * (nc - 1)].reshape(nc - 1, 4)[piece]
                a3, a2, a1, a0 = pieces.T
                value = ((a3 * s + a2) * s + a1) * s + a0
                slope = (3.0 * a3 * s + 2.0 * a2) * s + a1
            theta[:, out] = value
            rate[:, out] = slope * rate[:, inputs[i0]]
    return True
