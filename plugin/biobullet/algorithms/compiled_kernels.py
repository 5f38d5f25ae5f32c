"""Numba kernel of the batched world-frame tree algorithms of `vectorized.py` (the hot path of "reduced").

Same algebra, same frame conventions (world frame at the world origin, [linear; angular] spatial vectors), written
as loops over bodies and compiled once (`cache=True`: compiled code is kept in __pycache__ between processes):
    placements  R_i = R_p R_loc,  p_i = R_p p_loc + p_p
    subspaces   revolute [p × a; a], prismatic [a; 0], free Ad(placement), spherical/planar Ad(placement) S_body
    CRBA        IC_b = Σ_subtree I_i,  M[l, j] = S_lᵀ IC_{b(j)} S_j for l moving body b(j)
    RNEA        v_i = v_p + S_i ẋ_i, a_i = a_p + v_i × S_i ẋ_i + S_i ẍ_i (a_root = −g),
                f_i = I_i a_i + v_i ×* I_i v_i, τ_k = S_kᵀ Σ_subtree f.
Optional: without numba (or with BIOBULLET_NUMBA=0, or `biobullet.core.jit.ENABLED = False`) vectorized.py uses its
pure-numpy path; tests check both against each other and against Pinocchio.
"""
from __future__ import annotations

import numpy as np

from biobullet.core import jit

_place_body = None   # the compiled `_place_body_py`: a global of the tree kernels, bound when they compile


def place_body_kernel():
    """The compiled `_place_body_py` (inlined into the kernels that call it), or None without numba."""
    return jit.compiled(_place_body_py, inline=True)


REVOLUTE, PRISMATIC, FREE, SPHERICAL, PLANAR = 0, 1, 2, 3, 4
# per-body float record: axis 3, origin rotation 9, origin translation 3, mass 1, com 3, inertia about com 9,
# body-frame motion subspace 6×6 (row-major, first nv columns used; multi-DOF joints read it)
_AXIS, _ROT, _TRANS, _MASS, _COM, _INERTIA, _SUBSPACE, _WIDTH = 0, 3, 12, 15, 16, 19, 28, 64


def pack(model) -> tuple[np.ndarray, np.ndarray]:
    """(meta int64 (n_b, 5): parent, kind, q_index, v_index, nv;  body float64 (n_b, 28)) for the kernel."""
    bodies = model.bodies
    kinds = {"revolute": REVOLUTE, "prismatic": PRISMATIC, "free": FREE, "spherical": SPHERICAL, "planar": PLANAR}
    meta = np.array([[b.parent, kinds[b.joint_type], b.q_index, b.v_index, b.nv] for b in bodies],
                    dtype=np.int64).reshape(len(bodies), 5)
    body = np.zeros((len(bodies), _WIDTH))
    for i, b in enumerate(bodies):
        if b.parent >= i:
            raise ValueError("bodies must be in topological order (parents first)")
        body[i, _AXIS:_AXIS + 3] = np.asarray(b.axis, dtype=float).reshape(3)
        body[i, _ROT:_ROT + 9] = np.asarray(b.rotation, dtype=float).reshape(9)
        body[i, _TRANS:_TRANS + 3] = np.asarray(b.translation, dtype=float).reshape(3)
        body[i, _MASS] = b.mass
        body[i, _COM:_COM + 3] = np.asarray(b.com, dtype=float).reshape(3)
        body[i, _INERTIA:_INERTIA + 9] = np.asarray(b.inertia_com, dtype=float).reshape(9)
        subspace = np.zeros((6, 6))
        subspace[:, :b.nv] = b.motion_subspace
        body[i, _SUBSPACE:_SUBSPACE + 36] = subspace.reshape(36)
    return meta, body


def _place_body_py(meta, body, x, i, loc, jr, rot, pos, sub):
    """World placement of body i (its parent placed already) into rot[i], pos[i], and its motion-subspace columns
    into sub: R_i = R_p R_loc, p_i = R_p p_loc + p_p; revolute [p × a; a], prismatic [a; 0], free base
    [R, [p]× R; 0, R]. loc, jr: 3×3 scratch. The first pass shared by `_tree_dynamics` and the kinematics kernel
    of constraints.loop_kernels (bound as their global `_place_body` before they compile)."""
    parent, kind, qi, vi = meta[i, 0], meta[i, 1], meta[i, 2], meta[i, 3]
    ax0, ax1, ax2 = body[i, 0], body[i, 1], body[i, 2]
    pl0, pl1, pl2 = body[i, 12], body[i, 13], body[i, 14]
    if kind == FREE or kind == SPHERICAL:
        k = qi + 3 if kind == FREE else qi
        qx, qy, qz, qw = x[k], x[k + 1], x[k + 2], x[k + 3]
        norm = np.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
        qx, qy, qz, qw = qx / norm, qy / norm, qz / norm, qw / norm
        jr[0, 0] = 1 - 2 * (qy * qy + qz * qz)
        jr[0, 1] = 2 * (qx * qy - qz * qw)
        jr[0, 2] = 2 * (qx * qz + qy * qw)
        jr[1, 0] = 2 * (qx * qy + qz * qw)
        jr[1, 1] = 1 - 2 * (qx * qx + qz * qz)
        jr[1, 2] = 2 * (qy * qz - qx * qw)
        jr[2, 0] = 2 * (qx * qz - qy * qw)
        jr[2, 1] = 2 * (qy * qz + qx * qw)
        jr[2, 2] = 1 - 2 * (qx * qx + qy * qy)
        if kind == FREE and parent < 0:   # floating base: the origin is the identity
            for a in range(3):
                for b in range(3):
                    loc[a, b] = jr[a, b]
            pl0, pl1, pl2 = x[qi], x[qi + 1], x[qi + 2]
        else:   # R_loc = R_origin R(quat), p_loc = p_origin (+ R_origin p for a free joint)
            for a in range(3):
                for b in range(3):
                    loc[a, b] = (body[i, 3 + 3 * a] * jr[0, b] + body[i, 4 + 3 * a] * jr[1, b]
                                 + body[i, 5 + 3 * a] * jr[2, b])
            if kind == FREE:
                d0, d1, d2 = x[qi], x[qi + 1], x[qi + 2]
                pl0 += body[i, 3] * d0 + body[i, 4] * d1 + body[i, 5] * d2
                pl1 += body[i, 6] * d0 + body[i, 7] * d1 + body[i, 8] * d2
                pl2 += body[i, 9] * d0 + body[i, 10] * d1 + body[i, 11] * d2
    elif kind == REVOLUTE or kind == PLANAR:
        if kind == REVOLUTE:
            s, c1 = np.sin(x[qi]), 1.0 - np.cos(x[qi])
        else:   # planar: turn by φ about the normal, (cos φ, sin φ) = x[qi + 2], x[qi + 3] normalised
            norm = np.sqrt(x[qi + 2] * x[qi + 2] + x[qi + 3] * x[qi + 3])
            s, c1 = x[qi + 3] / norm, 1.0 - x[qi + 2] / norm
            # in-plane offset x e₁ + y e₂ (e₁, e₂ = the first two subspace columns' linear parts)
            d0 = body[i, 28] * x[qi] + body[i, 29] * x[qi + 1]
            d1 = body[i, 34] * x[qi] + body[i, 35] * x[qi + 1]
            d2 = body[i, 40] * x[qi] + body[i, 41] * x[qi + 1]
            pl0 += body[i, 3] * d0 + body[i, 4] * d1 + body[i, 5] * d2
            pl1 += body[i, 6] * d0 + body[i, 7] * d1 + body[i, 8] * d2
            pl2 += body[i, 9] * d0 + body[i, 10] * d1 + body[i, 11] * d2
        # Rodrigues: I + s K + (1 − c) K², K = [a]×
        jr[0, 0] = 1.0 - c1 * (ax1 * ax1 + ax2 * ax2)
        jr[1, 1] = 1.0 - c1 * (ax0 * ax0 + ax2 * ax2)
        jr[2, 2] = 1.0 - c1 * (ax0 * ax0 + ax1 * ax1)
        jr[0, 1] = -s * ax2 + c1 * ax0 * ax1
        jr[1, 0] = s * ax2 + c1 * ax0 * ax1
        jr[0, 2] = s * ax1 + c1 * ax0 * ax2
        jr[2, 0] = -s * ax1 + c1 * ax0 * ax2
        jr[1, 2] = -s * ax0 + c1 * ax1 * ax2
        jr[2, 1] = s * ax0 + c1 * ax1 * ax2
        for a in range(3):
            for b in range(3):
                loc[a, b] = (body[i, 3 + 3 * a] * jr[0, b] + body[i, 4 + 3 * a] * jr[1, b]
                             + body[i, 5 + 3 * a] * jr[2, b])
    else:  # prismatic
        d = x[qi]
        for a in range(3):
            for b in range(3):
                loc[a, b] = body[i, 3 + 3 * a + b]
        pl0 += (loc[0, 0] * ax0 + loc[0, 1] * ax1 + loc[0, 2] * ax2) * d
        pl1 += (loc[1, 0] * ax0 + loc[1, 1] * ax1 + loc[1, 2] * ax2) * d
        pl2 += (loc[2, 0] * ax0 + loc[2, 1] * ax1 + loc[2, 2] * ax2) * d
    if parent < 0:
        for a in range(3):
            for b in range(3):
                rot[i, a, b] = loc[a, b]
        pos[i, 0], pos[i, 1], pos[i, 2] = pl0, pl1, pl2
    else:
        for a in range(3):
            for b in range(3):
                rot[i, a, b] = (rot[parent, a, 0] * loc[0, b] + rot[parent, a, 1] * loc[1, b]
                                + rot[parent, a, 2] * loc[2, b])
            pos[i, a] = (rot[parent, a, 0] * pl0 + rot[parent, a, 1] * pl1 + rot[parent, a, 2] * pl2
                         + pos[parent, a])
    r = rot[i]
    p0, p1, p2 = pos[i, 0], pos[i, 1], pos[i, 2]
    # motion subspace columns
    if kind == FREE:
        for a in range(3):
            for b in range(3):
                sub[a, vi + b] = r[a, b]
                sub[3 + a, vi + 3 + b] = r[a, b]
        for b in range(3):  # [p]× R
            sub[0, vi + 3 + b] = -p2 * r[1, b] + p1 * r[2, b]
            sub[1, vi + 3 + b] = p2 * r[0, b] - p0 * r[2, b]
            sub[2, vi + 3 + b] = -p1 * r[0, b] + p0 * r[1, b]
    elif kind == SPHERICAL or kind == PLANAR:   # body-frame S = [l; a] → world [R l + p × R a; R a]
        for c in range(meta[i, 4]):
            l0, l1, l2 = body[i, 28 + c], body[i, 34 + c], body[i, 40 + c]
            a0, a1, a2 = body[i, 46 + c], body[i, 52 + c], body[i, 58 + c]
            w0 = r[0, 0] * a0 + r[0, 1] * a1 + r[0, 2] * a2
            w1 = r[1, 0] * a0 + r[1, 1] * a1 + r[1, 2] * a2
            w2 = r[2, 0] * a0 + r[2, 1] * a1 + r[2, 2] * a2
            sub[0, vi + c] = r[0, 0] * l0 + r[0, 1] * l1 + r[0, 2] * l2 + p1 * w2 - p2 * w1
            sub[1, vi + c] = r[1, 0] * l0 + r[1, 1] * l1 + r[1, 2] * l2 + p2 * w0 - p0 * w2
            sub[2, vi + c] = r[2, 0] * l0 + r[2, 1] * l1 + r[2, 2] * l2 + p0 * w1 - p1 * w0
            sub[3, vi + c], sub[4, vi + c], sub[5, vi + c] = w0, w1, w2
    else:
        w0 = r[0, 0] * ax0 + r[0, 1] * ax1 + r[0, 2] * ax2
        w1 = r[1, 0] * ax0 + r[1, 1] * ax1 + r[1, 2] * ax2
        w2 = r[2, 0] * ax0 + r[2, 1] * ax1 + r[2, 2] * ax2
        if kind == REVOLUTE:
            sub[0, vi] = p1 * w2 - p2 * w1
            sub[1, vi] = p2 * w0 - p0 * w2
            sub[2, vi] = p0 * w1 - p1 * w0
            sub[3, vi], sub[4, vi], sub[5, vi] = w0, w1, w2
        else:
            sub[0, vi], sub[1, vi], sub[2, vi] = w0, w1, w2


def _tree_dynamics_py(meta, body, x, xd, xdd, gravity, n_tangent, need_mass, need_bias, has_xdd):
    nb = meta.shape[0]
    rot = np.empty((nb, 3, 3))
    pos = np.empty((nb, 3))
    sub = np.zeros((6, n_tangent))
    inertia = np.zeros((nb, 6, 6))
    loc = np.empty((3, 3))
    jr = np.empty((3, 3))
    for i in range(nb):
        _place_body(meta, body, x, i, loc, jr, rot, pos, sub)
        r = rot[i]
        p0, p1, p2 = pos[i, 0], pos[i, 1], pos[i, 2]
        # spatial inertia about the world origin: [[m 1, −m[c]×], [m[c]×, Ic − m[c]×[c]×]]
        m = body[i, 15]
        cb0, cb1, cb2 = body[i, 16], body[i, 17], body[i, 18]
        c0 = r[0, 0] * cb0 + r[0, 1] * cb1 + r[0, 2] * cb2 + p0
        c1 = r[1, 0] * cb0 + r[1, 1] * cb1 + r[1, 2] * cb2 + p1
        c2 = r[2, 0] * cb0 + r[2, 1] * cb1 + r[2, 2] * cb2 + p2
        for a in range(3):  # Ic = R I Rᵀ
            for b in range(3):
                acc = 0.0
                for k in range(3):
                    for l in range(3):
                        acc += r[a, k] * body[i, 19 + 3 * k + l] * r[b, l]
                inertia[i, 3 + a, 3 + b] = acc
        inertia[i, 0, 0] = inertia[i, 1, 1] = inertia[i, 2, 2] = m
        # m[c]× (lower-left) and its transpose negated (upper-right)
        inertia[i, 3, 1], inertia[i, 3, 2] = -m * c2, m * c1
        inertia[i, 4, 0], inertia[i, 4, 2] = m * c2, -m * c0
        inertia[i, 5, 0], inertia[i, 5, 1] = -m * c1, m * c0
        inertia[i, 1, 3], inertia[i, 2, 3] = -m * c2, m * c1
        inertia[i, 0, 4], inertia[i, 2, 4] = m * c2, -m * c0
        inertia[i, 0, 5], inertia[i, 1, 5] = -m * c1, m * c0
        # − m [c]×[c]× = m (|c|² 1 − c cᵀ)
        cc = c0 * c0 + c1 * c1 + c2 * c2
        inertia[i, 3, 3] += m * (cc - c0 * c0)
        inertia[i, 4, 4] += m * (cc - c1 * c1)
        inertia[i, 5, 5] += m * (cc - c2 * c2)
        inertia[i, 3, 4] -= m * c0 * c1
        inertia[i, 4, 3] -= m * c0 * c1
        inertia[i, 3, 5] -= m * c0 * c2
        inertia[i, 5, 3] -= m * c0 * c2
        inertia[i, 4, 5] -= m * c1 * c2
        inertia[i, 5, 4] -= m * c1 * c2

    mass = np.zeros((n_tangent, n_tangent))
    if need_mass:
        composite = inertia.copy()
        for i in range(nb - 1, -1, -1):
            parent = meta[i, 0]
            if parent >= 0:
                for a in range(6):
                    for b in range(6):
                        composite[parent, a, b] += composite[i, a, b]
        force = np.empty(6)
        for i in range(nb):
            vi, nv = meta[i, 3], meta[i, 4]
            for j in range(vi, vi + nv):
                for a in range(6):
                    acc = 0.0
                    for b in range(6):
                        acc += composite[i, a, b] * sub[b, j]
                    force[a] = acc
                # directions l that move body i: its own l ≥ j, then every ancestor's
                b, start = i, j
                while b >= 0:
                    for l in range(start, meta[b, 3] + meta[b, 4]):
                        acc = 0.0
                        for a in range(6):
                            acc += sub[a, l] * force[a]
                        mass[l, j] = acc
                        mass[j, l] = acc
                    b = meta[b, 0]
                    if b >= 0:
                        start = meta[b, 3]

    tau = np.zeros(n_tangent)
    if need_bias:
        vel = np.zeros((nb, 6))
        acc_b = np.zeros((nb, 6))
        forces = np.zeros((nb, 6))
        jv = np.empty(6)
        iv = np.empty(6)
        for i in range(nb):
            parent, kind, vi, nv = meta[i, 0], meta[i, 1], meta[i, 3], meta[i, 4]
            for a in range(6):
                s = 0.0
                t = 0.0
                for k in range(vi, vi + nv):
                    s += sub[a, k] * xd[k]
                    if has_xdd:
                        t += sub[a, k] * xdd[k]
                jv[a] = s
                if parent >= 0:
                    vel[i, a] = vel[parent, a] + s
                    acc_b[i, a] = acc_b[parent, a] + t
                else:
                    vel[i, a] = s
                    acc_b[i, a] = t - (gravity[a] if a < 3 else 0.0)
            if parent >= 0:  # c = v × S θ̇ (zero at a root body: v × v)
                l0, l1, l2, a0, a1, a2 = vel[i, 0], vel[i, 1], vel[i, 2], vel[i, 3], vel[i, 4], vel[i, 5]
                acc_b[i, 0] += a1 * jv[2] - a2 * jv[1] + l1 * jv[5] - l2 * jv[4]
                acc_b[i, 1] += a2 * jv[0] - a0 * jv[2] + l2 * jv[3] - l0 * jv[5]
                acc_b[i, 2] += a0 * jv[1] - a1 * jv[0] + l0 * jv[4] - l1 * jv[3]
                acc_b[i, 3] += a1 * jv[5] - a2 * jv[4]
                acc_b[i, 4] += a2 * jv[3] - a0 * jv[5]
                acc_b[i, 5] += a0 * jv[4] - a1 * jv[3]
            # f = I a + v ×* (I v)
            for a in range(6):
                s = 0.0
                t = 0.0
                for b in range(6):
                    s += inertia[i, a, b] * vel[i, b]
                    t += inertia[i, a, b] * acc_b[i, b]
                iv[a] = s
                forces[i, a] = t
            l0, l1, l2, a0, a1, a2 = vel[i, 0], vel[i, 1], vel[i, 2], vel[i, 3], vel[i, 4], vel[i, 5]
            forces[i, 0] += a1 * iv[2] - a2 * iv[1]
            forces[i, 1] += a2 * iv[0] - a0 * iv[2]
            forces[i, 2] += a0 * iv[1] - a1 * iv[0]
            forces[i, 3] += a1 * iv[5] - a2 * iv[4] + l1 * iv[2] - l2 * iv[1]
            forces[i, 4] += a2 * iv[3] - a0 * iv[5] + l2 * iv[0] - l0 * iv[2]
            forces[i, 5] += a0 * iv[4] - a1 * iv[3] + l0 * iv[1] - l1 * iv[0]
        for i in range(nb - 1, -1, -1):
            parent, vi, nv = meta[i, 0], meta[i, 3], meta[i, 4]
            for k in range(vi, vi + nv):
                s = 0.0
                for a in range(6):
                    s += sub[a, k] * forces[i, a]
                tau[k] = s
            if parent >= 0:
                for a in range(6):
                    forces[parent, a] += forces[i, a]
    return mass, tau





def _project_upper_py(mass, h, g):
    """(Gᵀ M G, Gᵀ h) reading only the upper triangle of M (Pinocchio's CRBA fills no more)."""
    n, k = g.shape
    w = np.zeros((n, k))
    for a in range(n):
        for b in range(n):
            m = mass[a, b] if a <= b else mass[b, a]
            if m != 0.0:
                for c in range(k):
                    w[a, c] += m * g[b, c]
    reduced = np.empty((k, k))
    bias = np.zeros(k)
    for c in range(k):
        for d in range(c, k):
            s = 0.0
            for a in range(n):
                s += g[a, c] * w[a, d]
            reduced[c, d] = s
            reduced[d, c] = s
        s = 0.0
        for a in range(n):
            s += g[a, c] * h[a]
        bias[c] = s
    return reduced, bias


def _cholesky_factor_py(a, low, pivot_check):
    """Lower Cholesky factor of the symmetric `a` (lower triangle read) into `low` (zeros above the diagonal
    expected); False as soon as a pivot is not > pivot_check · a[j, j] (0: not positive; NaN fails too)."""
    n = a.shape[0]
    for j in range(n):
        s = a[j, j]
        for k in range(j):
            s -= low[j, k] * low[j, k]
        if not s > pivot_check * a[j, j]:
            return False
        d = np.sqrt(s)
        low[j, j] = d
        for i in range(j + 1, n):
            s = a[i, j]
            for k in range(j):
                s -= low[i, k] * low[j, k]
            low[i, j] = s / d
    return True


def _cholesky_solve_py(low, rhs, out):
    """out = (L Lᵀ)⁻¹ rhs for the lower-triangular Cholesky factor L: forward, then back substitution (out may
    be rhs). Called from other compiled kernels (bound as their global before they compile)."""
    n = rhs.shape[0]
    for i in range(n):
        s = rhs[i]
        for k in range(i):
            s -= low[i, k] * out[k]
        out[i] = s / low[i, i]
    for i in range(n - 1, -1, -1):
        s = out[i]
        for k in range(i + 1, n):
            s -= low[k, i] * out[k]
        out[i] = s / low[i, i]




def _tree_kernel_bindings() -> dict:
    kernel = place_body_kernel()
    return {} if kernel is None else {"_place_body": kernel}


def _placements_py(meta, body, x, n_tangent):
    """(rot (n_b, 3, 3), pos (n_b, 3)): world placement of every body frame (`_place_body`'s first pass alone)."""
    nb = meta.shape[0]
    rot = np.empty((nb, 3, 3))
    pos = np.empty((nb, 3))
    sub = np.zeros((6, n_tangent))
    loc = np.empty((3, 3))
    jr = np.empty((3, 3))
    for i in range(nb):
        _place_body(meta, body, x, i, loc, jr, rot, pos, sub)
    return rot, pos


def placements_kernel():
    """The compiled `_placements_py`, or None (numba missing or disabled)."""
    return jit.compiled(_placements_py, bind=_tree_kernel_bindings)


def _tree_energies_py(meta, body, positions, velocities, gravity, kinetic, potential):
    """Kinetic energy ½ ẋᵀ M ẋ = Σ ½ m |v_c|² + ½ ωᵀ R I_c Rᵀ ω and gravity potential −Σ m g·c (J) of n tree
    states (positions (n, n_config), velocities (n, n_tangent)) into kinetic[k], potential[k]: one placement pass
    per sample (`_place_body`), body velocities v_i = v_p + S_i ẋ_i at the world origin ([linear; angular]),
    c = R com + p. `vectorized.kinetic_energy_batch` / `gravity_potential_batch` in one compiled call."""
    nb = meta.shape[0]
    n, n_tangent = velocities.shape
    rot = np.empty((nb, 3, 3))
    pos = np.empty((nb, 3))
    sub = np.zeros((6, n_tangent))
    vel = np.zeros((nb, 6))
    loc = np.empty((3, 3))
    jr = np.empty((3, 3))
    g0, g1, g2 = gravity[0], gravity[1], gravity[2]
    for k in range(n):
        x = positions[k]
        t_sum, v_sum = 0.0, 0.0
        for i in range(nb):
            _place_body(meta, body, x, i, loc, jr, rot, pos, sub)
            parent, vi, nv = meta[i, 0], meta[i, 3], meta[i, 4]
            for a in range(6):
                own = 0.0
                for c in range(nv):
                    own += sub[a, vi + c] * velocities[k, vi + c]
                vel[i, a] = (vel[parent, a] if parent >= 0 else 0.0) + own
            mass = body[i, _MASS]
            r = rot[i]
            c0 = r[0, 0] * body[i, _COM] + r[0, 1] * body[i, _COM + 1] + r[0, 2] * body[i, _COM + 2] + pos[i, 0]
            c1 = r[1, 0] * body[i, _COM] + r[1, 1] * body[i, _COM + 1] + r[1, 2] * body[i, _COM + 2] + pos[i, 1]
            c2 = r[2, 0] * body[i, _COM] + r[2, 1] * body[i, _COM + 1] + r[2, 2] * body[i, _COM + 2] + pos[i, 2]
            v_sum -= mass * (g0 * c0 + g1 * c1 + g2 * c2)
            w0, w1, w2 = vel[i, 3], vel[i, 4], vel[i, 5]
            u0 = vel[i, 0] + w1 * c2 - w2 * c1    # centre-of-mass velocity v_o + ω × c
            u1 = vel[i, 1] + w2 * c0 - w0 * c2
            u2 = vel[i, 2] + w0 * c1 - w1 * c0
            t_sum += 0.5 * mass * (u0 * u0 + u1 * u1 + u2 * u2)
            l0 = r[0, 0] * w0 + r[1, 0] * w1 + r[2, 0] * w2   # Rᵀ ω
            l1 = r[0, 1] * w0 + r[1, 1] * w1 + r[2, 1] * w2
            l2 = r[0, 2] * w0 + r[1, 2] * w1 + r[2, 2] * w2
            rotational = 0.0
            for a in range(3):
                la = l0 if a == 0 else (l1 if a == 1 else l2)
                rotational += la * (body[i, _INERTIA + 3 * a] * l0 + body[i, _INERTIA + 3 * a + 1] * l1
                                    + body[i, _INERTIA + 3 * a + 2] * l2)
            t_sum += 0.5 * rotational
        kinetic[k] = t_sum
        potential[k] = v_sum


def tree_energies_kernel():
    """The compiled `_tree_energies_py` (with `_place_body` bound), or None (numba missing or disabled)."""
    return jit.compiled(_tree_energies_py, bind=_tree_kernel_bindings)


def tree_dynamics_kernel():
    """The compiled `_tree_dynamics_py` (with `_place_body` bound), or None (numba missing or disabled)."""
    return jit.compiled(_tree_dynamics_py, bind=_tree_kernel_bindings)


tree_dynamics = jit.lazy(_tree_dynamics_py, bind=_tree_kernel_bindings)


project_upper = jit.lazy(_project_upper_py)


_PROJECT_UPPER = _CHOLESKY_FACTOR = _CHOLESKY_SOLVE = None   # bound when `_projected_solve_py` compiles


def _projected_solve_py(mass, bias, gradient, tau, accel):
    """accel = (Gᵀ M G)⁻¹ (Gᵀ τ − Gᵀ h) by Cholesky (M symmetric); False when Gᵀ M G is not positive definite."""
    n, nv = gradient.shape
    reduced_mass, reduced_bias = _PROJECT_UPPER(mass, bias, gradient)
    rhs = np.empty(nv)
    for c in range(nv):
        s = 0.0
        for a in range(n):
            s += gradient[a, c] * tau[a]
        rhs[c] = s - reduced_bias[c]
    low = np.zeros((nv, nv))
    if not _CHOLESKY_FACTOR(reduced_mass, low, 0.0):
        return False
    _CHOLESKY_SOLVE(low, rhs, accel)
    return True


def projected_solve_kernel():
    """The compiled `_projected_solve_py` (projection and Cholesky kernels bound), or None without numba."""
    callees = {"_PROJECT_UPPER": jit.compiled(_project_upper_py), "_CHOLESKY_FACTOR": jit.compiled(_cholesky_factor_py),
               "_CHOLESKY_SOLVE": jit.compiled(_cholesky_solve_py)}
    if None in callees.values():
        return None
    return jit.compiled(_projected_solve_py, bind=callees)
