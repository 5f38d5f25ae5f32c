"""Matrix-calculus formulation (paper 000): M, N, G from the derivatives of the body placements.

Each body's world placement T_i (4×4 homogeneous, column convention: world point = T_i · body point) is
differentiated with respect to the generalized speeds u = [base twist (6)?, q̇ (independent joints), 1], the last
entry standing for time (q̃ = (q, t), q̃̇ = (q̇, 1), q̃̈ = (q̈, 0)). Then
    Ṫ_i = Σ_k D_i[k] u_k,        T̈_i = Σ_k D_i[k] u̇_k + Σ_kl D'_i[k, l] u_k u_l,
with the recursion (13) of the paper and its second-order companion (index form of the Kronecker products
D_i = (Â_iᵀ B_i) ⊗ g_i + (L_i ⊗ I_r) D_p, B_i = T_iᵀ), θ_i = f_i(q, t) entering through its gradient g_i and
Hessian H_i only:
    D_i[k]     = D_p[k] A_i + T_i Â_i g_ik
    D'_i[k, l] = D'_p[k, l] A_i + D_i[k] Â_i g_il + D_p[l] A_i Â_i g_ik + T_i Â_i H_ikl.
A_i is the joint's local placement in the parent and dA_i/dθ = A_i Â_i. A floating base is a free body with
placement T_0 whose speeds are the base-frame twist (quasi-velocities): D_0[k] = T_0 ξ̂_k, D'_0[k, l] = T_0 ξ̂_l ξ̂_k.
The equations follow from the principle of virtual power (Kane), valid for quasi-velocities and identical to
the paper's Lagrange form for holonomic coordinates; J_i is the pseudo-inertia ∫ r rᵀ dm (body frame):
    M[j, k] = Σ_i tr(D_i[j] J_i D_i[k]ᵀ),  N_j = Σ_i tr(D_i[j] J_i (Σ_kl D'_i[k, l] u_k u_l)ᵀ),
    G_j = Σ_i m_i [g; 0]ᵀ D_i[j] [c_i; 1],  h = N − G  (so that M v̇ + h = Q).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from biobullet.core import jit
from biobullet.spatial.rotations import skew
from biobullet.dynamics.formulation import Formulation, register_formulation


_TABLES = "matrix_calculus.tables"   # key of `_tables`' result in `Model.derived`


def pseudo_inertia(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """J = ∫ r rᵀ dm for homogeneous r = [x; 1] in the body frame: [[(tr I_O/2) I − I_O, m c], [m cᵀ, m]]."""
    com = np.asarray(com, dtype=float)
    inertia_origin = np.asarray(inertia_com, dtype=float) + mass * (com @ com * np.eye(3) - np.outer(com, com))
    out = np.zeros((4, 4))
    out[:3, :3] = 0.5 * np.trace(inertia_origin) * np.eye(3) - inertia_origin
    out[:3, 3] = out[3, :3] = mass * com
    out[3, 3] = mass
    return out


def twist_matrix(twist: np.ndarray) -> np.ndarray:
    """4×4 ξ̂ of a twist [linear v; angular ω]: [[S(ω), v], [0, 0]]."""
    out = np.zeros((4, 4))
    out[:3, :3] = skew(twist[3:])
    out[:3, 3] = twist[:3]
    return out


@register_formulation
class MatrixCalculusFormulation(Formulation):
    """Paper 000's M, N, G: the recursion of D_i contracted with u ⊗ u as it goes (O(nb·n)), compiled with the
    trace forms in one kernel (`_contracted_py`)."""

    name = "matrix_calculus"
    description = "paper 000: Kronecker recursion of D_i = dB_i/dq and D'_i, pseudo-inertias, trace forms"

    def mass_matrix(self, model, q, t):
        return compiled_mass_and_bias(model, q, np.zeros(model.nv), t)[0]   # (M does not depend on v)

    def bias_forces(self, model, q, v, t):
        return compiled_mass_and_bias(model, q, v, t)[1]

    def mass_and_bias(self, model, q, v, t):
        """M and h from one compiled pass of the contracted recursion (≈ 20 µs on arm7; the numpy pass it replaced
        ≈ 120 µs, mostly Python's per-body overhead)."""
        return compiled_mass_and_bias(model, q, v, t)


# ------------------------------------------------------------------------------ the contracted recursion, compiled
class _Tables(NamedTuple):
    """The configuration-independent data of a model as the kernel's arrays (nb bodies), built once."""

    parents: np.ndarray        # int64 (nb,)
    free: np.ndarray           # int64 (nb,): 1 for the floating base's free body
    revolute: np.ndarray       # int64 (nb,): 1 revolute, 0 prismatic (or free)
    slots: np.ndarray          # int64 (nb,): joint coordinate in θ (0 for the free base)
    rotations: np.ndarray      # (nb, 3, 3)
    translations: np.ndarray   # (nb, 3)
    axes: np.ndarray           # (nb, 3)
    axis_skews: np.ndarray     # (nb, 3, 3)
    axis_skews2: np.ndarray    # (nb, 3, 3)
    twists: np.ndarray         # (nb, 4, 4) Â_i
    pseudo_inertias: np.ndarray   # (nb, 4, 4) J_i
    mass_moments: np.ndarray   # (nb, 4) m_i [c_i; 1]
    base_twists: np.ndarray    # (6, 4, 4) ξ̂_k
    gravity: np.ndarray        # (4,) [g; 0]


def _tables(model) -> _Tables:
    return model.derive(_TABLES, lambda: _build_tables(model))


def _build_tables(model) -> _Tables:
    bodies = model.bodies
    multi = [b.joint for b in bodies if b.multi_dof and b.joint]
    if multi:
        from biobullet.core.errors import ModelError
        raise ModelError(f"formulation 'matrix_calculus' handles 1-DOF joints and a floating base only; joints "
                         f"{', '.join(multi)} have several degrees of freedom", file=model.file,
                         argument="formulation", expected="'reduced' or 'reduced_recursive' for this model")
    offset = 7 if model.floating_base else 0
    twists = [twist_matrix(np.concatenate([np.zeros(3), b.axis])) if b.joint_type == "revolute"
              else twist_matrix(np.concatenate([b.axis, np.zeros(3)])) if b.joint_type == "prismatic"
              else np.zeros((4, 4)) for b in bodies]
    skews = np.array([skew(b.axis) for b in bodies]).reshape(-1, 3, 3)
    ints = lambda values: np.ascontiguousarray(values, dtype=np.int64)   # noqa: E731
    floats = lambda values, *shape: np.ascontiguousarray(np.array(values, dtype=float).reshape(-1, *shape))  # noqa: E731
    return _Tables(
        parents=ints([b.parent for b in bodies]), free=ints([b.joint_type == "free" for b in bodies]),
        revolute=ints([b.joint_type == "revolute" for b in bodies]),
        slots=ints([max(b.q_index - offset, 0) for b in bodies]),
        rotations=floats([b.rotation for b in bodies], 3, 3), translations=floats([b.translation for b in bodies], 3),
        axes=floats([b.axis for b in bodies], 3), axis_skews=np.ascontiguousarray(skews),
        axis_skews2=np.ascontiguousarray(skews @ skews), twists=floats(twists, 4, 4),
        pseudo_inertias=floats([pseudo_inertia(b.mass, b.com, b.inertia_com) for b in bodies], 4, 4),
        mass_moments=floats([b.mass * np.append(b.com, 1.0) for b in bodies], 4),
        base_twists=floats([twist_matrix(e) for e in np.eye(6)], 4, 4),
        gravity=np.append(np.asarray(model.gravity, dtype=float), 0.0))


def _product4_py(a, b, scale, out):
    """out += scale · a b for 4×4 matrices."""
    for r in range(4):
        for c in range(4):
            total = 0.0
            for m in range(4):
                total += a[r, m] * b[m, c]
            out[r, c] += scale * total


def _contracted_py(tables, q, theta, gradient, rates, gammas, speeds):
    """(M, h) in one compiled pass: T_i, D_i[k] (k < n = nv + 1), Ṫ_i = Ṫ_p A + T_i Â θ̇ and the contraction
    Σ_kl D'_i[k, l] u_k u_l = a_p A + Ṫ_i Â θ̇ + (Ṫ_p A) Â θ̇ + T_i Â γ (T̈_i at v̇ = 0), then the trace forms
    M[j, k] = Σ_i tr(D_i[j] J_i D_i[k]ᵀ) and h = N − G of the module docstring. gradient: ∂θ/∂u (n_θ × n, zero base columns); rates θ̇ = g·u;
    gammas uᵀ H u."""
    nb, n = tables.parents.shape[0], speeds.shape[0]
    nv = n - 1
    placements = np.zeros((nb, 4, 4))
    first = np.zeros((nb, n, 4, 4))
    velocities = np.zeros((nb, 4, 4))
    second = np.zeros((nb, 4, 4))
    local = np.zeros((4, 4))
    turn = np.zeros((3, 3))
    twisted = np.zeros((4, 4))
    carried = np.zeros((4, 4))
    xi = np.zeros((4, 4))
    for i in range(nb):
        parent = tables.parents[i]
        if tables.free[i]:
            x, y, z, w = q[3], q[4], q[5], q[6]
            norm = np.sqrt(x * x + y * y + z * z + w * w)
            x, y, z, w = x / norm, y / norm, z / norm, w / norm
            t0 = placements[i]
            t0[0, 0], t0[0, 1], t0[0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)
            t0[1, 0], t0[1, 1], t0[1, 2] = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
            t0[2, 0], t0[2, 1], t0[2, 2] = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)
            t0[0, 3], t0[1, 3], t0[2, 3], t0[3, 3] = q[0], q[1], q[2], 1.0
            xi[:, :] = 0.0
            for k in range(6):   # D_0[k] = T_0 ξ̂_k;  ξ̂(u_base) = Σ_k u_k ξ̂_k
                _product4(t0, tables.base_twists[k], 1.0, first[i, k])
                for r in range(4):
                    for c in range(4):
                        xi[r, c] += speeds[k] * tables.base_twists[k, r, c]
            _product4(t0, xi, 1.0, velocities[i])
            _product4(velocities[i], xi, 1.0, second[i])
            continue
        slot = tables.slots[i]
        value = theta[slot]
        local[:, :] = 0.0
        local[3, 3] = 1.0
        if tables.revolute[i]:
            s, versine = np.sin(value), 1.0 - np.cos(value)
            for r in range(3):
                for c in range(3):
                    turn[r, c] = (1.0 if r == c else 0.0) + s * tables.axis_skews[i, r, c] \
                        + versine * tables.axis_skews2[i, r, c]
            for r in range(3):
                for c in range(3):
                    local[r, c] = tables.rotations[i, r, 0] * turn[0, c] + tables.rotations[i, r, 1] * turn[1, c] \
                        + tables.rotations[i, r, 2] * turn[2, c]
                local[r, 3] = tables.translations[i, r]
        else:
            for r in range(3):
                for c in range(3):
                    local[r, c] = tables.rotations[i, r, c]
                local[r, 3] = tables.translations[i, r] + value * (
                    tables.rotations[i, r, 0] * tables.axes[i, 0] + tables.rotations[i, r, 1] * tables.axes[i, 1]
                    + tables.rotations[i, r, 2] * tables.axes[i, 2])
        t_i = placements[i]
        if parent < 0:
            t_i[:, :] = local
        else:
            _product4(placements[parent], local, 1.0, t_i)
        twist = tables.twists[i]
        twisted[:, :] = 0.0
        _product4(t_i, twist, 1.0, twisted)   # T_i Â_i
        for k in range(n):   # D_i[k] = D_p[k] A_i + T_i Â_i g_k
            d = first[i, k]
            g = gradient[slot, k]
            for r in range(4):
                for c in range(4):
                    d[r, c] = g * twisted[r, c]
            if parent >= 0:
                _product4(first[parent, k], local, 1.0, d)
        rate = rates[slot]
        velocity, acc = velocities[i], second[i]
        for r in range(4):
            for c in range(4):
                velocity[r, c] = twisted[r, c] * rate
                acc[r, c] = twisted[r, c] * gammas[slot]
        if parent >= 0:   # Ṫ_p A;  a += (Ṫ_p A) Â θ̇ + a_p A
            carried[:, :] = 0.0
            _product4(velocities[parent], local, 1.0, carried)
            for r in range(4):
                for c in range(4):
                    velocity[r, c] += carried[r, c]
            _product4(carried, twist, rate, acc)
            _product4(second[parent], local, 1.0, acc)
        _product4(velocity, twist, rate, acc)   # + Ṫ_i Â θ̇
    # M[j, k] = Σ_i tr(D_i[j] J_i D_i[k]ᵀ);  h_j = Σ_i tr(D_i[j] J_i T̈_iᵀ) − Σ_i [g; 0]ᵀ D_i[j] m_i [c_i; 1]
    mass = np.zeros((nv, nv))
    bias = np.zeros(nv)
    weighted = np.zeros((nv, 4, 4))
    for i in range(nb):
        inertia, moment = tables.pseudo_inertias[i], tables.mass_moments[i]
        for j in range(nv):
            wj = weighted[j]
            wj[:, :] = 0.0
            _product4(first[i, j], inertia, 1.0, wj)
            total, gravity = 0.0, 0.0
            for r in range(3):
                for c in range(4):
                    total += wj[r, c] * second[i, r, c]
                    gravity += tables.gravity[r] * first[i, j, r, c] * moment[c]
            bias[j] += total - gravity
        for j in range(nv):
            for k in range(nv):
                total = 0.0
                for r in range(3):
                    for c in range(4):
                        total += weighted[j, r, c] * first[i, k, r, c]
                mass[j, k] += total
    for j in range(nv):
        for k in range(j + 1, nv):
            mean = 0.5 * (mass[j, k] + mass[k, j])
            mass[j, k] = mass[k, j] = mean
    return mass, bias


_contracted = jit.lazy(_contracted_py, bind=lambda: {"_product4": jit.compiled(_product4_py)})


def compiled_mass_and_bias(model, q: np.ndarray, v: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    """(M, h) of the contracted recursion, the joint functions' jets θ, g, uᵀ H u evaluated first (in Python, by
    the coordinate map's resolvers), the recursion and trace forms in one kernel (`_contracted_py`)."""
    tables = _tables(model)   # (first: a model with multi-DOF joints is refused before its jets are evaluated)
    q = np.ascontiguousarray(model.checked("q", q, model.nq))   # (the kernel reads the base's q[0:7] unchecked)
    base_q, base_v = (7, 6) if model.floating_base else (0, 0)
    speeds = np.append(model.checked("v", v, model.nv), 1.0)
    theta, grad, hess = model.coordinate_map.evaluate_hessians(q[base_q:], t, with_hessian=True)
    rows = max(theta.size, 1)   # (a floating base without joints: slot 0 must still be readable)
    gradient = np.zeros((rows, speeds.size))
    gradient[:theta.size, base_v:] = grad
    values, rates, gammas = np.zeros(rows), gradient @ speeds, np.zeros(rows)
    values[:theta.size] = theta
    gammas[:theta.size] = (hess @ speeds[base_v:]) @ speeds[base_v:]   # uᵀ H u (time terms included)
    return _contracted(tables, q, values, gradient, rates, gammas, speeds)
