"""The kernels of tree kinematics and of the point, planar, revolute and weld loop rows: the one implementation,
run compiled by numba (`tree_kinematics_run`, `loop_rows_run`; their Python form where numba is switched off) by
`loops.tree_kinematics`, `loops.VectorLoops.evaluate`, the built-in `loop_types.LoopType.rows`, the pipeline's
loop stage, the bridge and the link-segment formulation's body velocities.

The rows kernels take the loops as one structured argument, `LoopRows` (one or several loop sets: the loop
resolvers of a compiled model's LoopTable, or one `VectorLoops`) or any record with its fields (the loop Newton
passes its loop record, `newton_kernel.loop_record`), the set's index k, the tree kinematics as the
tuple the kinematics kernel returns (rot, pos, sub, vel, acc) and, for the in-place kernel, its outputs and work
arrays as one tuple (phi, jac, bias, work, jl).

numba's on-disk cache is keyed on this file: after editing `compiled_kernels._place_body_py` (called here), touch
this file; kernels of other files call these (constraints.newton_kernel, integrate.compiled_rhs): touch those after
editing this one.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class LoopRows(NamedTuple):
    """Point (kind 0), planar (kind 1) and perpendicular-pair loops (kind k ≥ 2: the point rows, then k rows
    u_i·a_i = 0 — revolute k = 2, weld k = 3) of one or more loop sets, packed once (`pack_loop_rows`). Set k holds
    loops loop_start[k] … loop_start[k+1]−1 and rows 0 … n_rows[k]−1 (row_start: the first row of each loop within
    its set); its points sit at 2·loop_start[k] …: the loops' A points, then their B points (body −1: ground,
    offset in world axes). basis[l] (3 × 6): planar — the plane basis in link_a's body frame (columns 0, 1); a
    pair loop — u_i in link_b's body frame (column i) and a_i in link_a's (column 3 + i). ancestry (n_b,
    n_tangent): 1.0 where direction c moves body b."""

    ancestry: np.ndarray
    loop_start: np.ndarray
    point_body: np.ndarray
    offset: np.ndarray
    basis: np.ndarray
    kinds: np.ndarray
    row_start: np.ndarray
    n_rows: np.ndarray


#: LoopRows' field names (records that serve as rows — `newton_kernel.LoopFields` — carry them)
LOOP_ROWS_FIELDS = LoopRows._fields


def pack_loop_rows(ancestry: np.ndarray, sets) -> LoopRows:
    """LoopRows of loop sets given as (point_body (2L,), offset (2L, 3), basis (L, 3, 6), kinds (L,), row
    counts (L,)) tuples, in order (`loops.VectorLoops.kernel_set`)."""
    def joined(parts, dtype, width=()):
        return np.ascontiguousarray(np.concatenate(parts).astype(dtype) if parts else np.zeros((0, *width), dtype))

    sets = list(sets)
    counts = [np.asarray(s[4], dtype=np.int64) for s in sets]
    return LoopRows(np.ascontiguousarray(ancestry, dtype=float),
                    np.cumsum([0] + [len(s[3]) for s in sets]).astype(np.int64),
                    joined([s[0] for s in sets], np.int64), joined([s[1] for s in sets], float, (3,)),
                    joined([s[2] for s in sets], float, (3, 6)), joined([s[3] for s in sets], np.int64),
                    joined([np.cumsum(np.concatenate([[0], c[:-1]])) for c in counts], np.int64),
                    np.array([int(c.sum()) for c in counts], dtype=np.int64))

def _tree_kinematics_kernel_py(meta, body, x, xd, n_tangent, with_rates):
    """(rot, pos, sub, vel, acc) of every body at x (and ẋ, with_rates) in new arrays: `_tree_kinematics_into_py`."""
    nb = meta.shape[0]
    rot = np.empty((nb, 3, 3))
    pos = np.empty((nb, 3))
    sub = np.zeros((6, n_tangent))
    vel = np.zeros((nb, 6))
    acc = np.zeros((nb, 6))
    _kinematics_into(meta, body, x, xd, with_rates, rot, pos, sub, vel, acc, np.empty((3, 3)), np.empty((3, 3)))
    return rot, pos, sub, vel, acc


def _tree_kinematics_into_py(meta, body, x, xd, with_rates, rot, pos, sub, vel, acc, loc, jr):
    """The bodies' world rotations, positions and motion subspace (rot, pos, sub: each body writes its own columns,
    the others are left as they are — zero in a buffer that only ever holds this tree's) and, with_rates, their
    spatial velocities and bias accelerations (vel, acc: `_body_rates_py`) into the caller's arrays; loc, jr
    (3 × 3) work. The loop Newton's rate pass writes into its record's arrays (no allocation per call)."""
    nb = meta.shape[0]
    for i in range(nb):
        _place_body(meta, body, x, i, loc, jr, rot, pos, sub)
    if with_rates:
        _body_rates(meta, xd, sub, vel, acc)
    return nb


def _body_rates_py(meta, xd, sub, vel, acc):
    """The bodies' spatial velocities and bias accelerations (vel, acc) at the tree velocity xd from their motion
    subspace `sub` (placed already: `_tree_kinematics_into_py`, or the loop Newton's residual at this joint layout)."""
    for i in range(meta.shape[0]):
        parent, vi = meta[i, 0], meta[i, 3]
        # c = v × S ẋ with the joint's whole S ẋ (every column of a multi-DOF joint): the bias Ṡ ẋ of a
        # world-axes subspace, whether its columns are fixed in the parent or the child (S ẋ × S ẋ = 0);
        # a root free joint's own v × v is zero, a nested one's is v_parent × S ẋ
        nv = meta[i, 4]
        j0 = j1 = j2 = j3 = j4 = j5 = 0.0
        for k in range(nv):
            j0 += sub[0, vi + k] * xd[vi + k]
            j1 += sub[1, vi + k] * xd[vi + k]
            j2 += sub[2, vi + k] * xd[vi + k]
            j3 += sub[3, vi + k] * xd[vi + k]
            j4 += sub[4, vi + k] * xd[vi + k]
            j5 += sub[5, vi + k] * xd[vi + k]
        if parent >= 0:
            vel[i, 0], vel[i, 1], vel[i, 2] = vel[parent, 0] + j0, vel[parent, 1] + j1, vel[parent, 2] + j2
            vel[i, 3], vel[i, 4], vel[i, 5] = vel[parent, 3] + j3, vel[parent, 4] + j4, vel[parent, 5] + j5
        else:
            vel[i, 0], vel[i, 1], vel[i, 2], vel[i, 3], vel[i, 4], vel[i, 5] = j0, j1, j2, j3, j4, j5
        v0, v1, v2, v3, v4, v5 = vel[i, 0], vel[i, 1], vel[i, 2], vel[i, 3], vel[i, 4], vel[i, 5]
        c0 = v4 * j2 - v5 * j1 + v1 * j5 - v2 * j4
        c1 = v5 * j0 - v3 * j2 + v2 * j3 - v0 * j5
        c2 = v3 * j1 - v4 * j0 + v0 * j4 - v1 * j3
        c3 = v4 * j5 - v5 * j4
        c4 = v5 * j3 - v3 * j5
        c5 = v3 * j4 - v4 * j3
        if parent >= 0:
            acc[i, 0], acc[i, 1], acc[i, 2] = acc[parent, 0] + c0, acc[parent, 1] + c1, acc[parent, 2] + c2
            acc[i, 3], acc[i, 4], acc[i, 5] = acc[parent, 3] + c3, acc[parent, 4] + c4, acc[parent, 5] + c5
        else:
            acc[i, 0], acc[i, 1], acc[i, 2], acc[i, 3], acc[i, 4], acc[i, 5] = c0, c1, c2, c3, c4, c5


def _loop_rows_kernel_py(rows, k, kin, with_jac, with_bias):
    """(Φ, Φ_x, b) of loop set k of `rows` (LoopRows) at the tree kinematics kin = (rot, pos, sub, vel, acc)
    (vel, acc read with_bias only); Φ_x and b empty unless asked. A thin allocating wrapper of
    `_loop_rows_into_py`, the one implementation."""
    n_t = kin[2].shape[1]
    n_rows = rows.n_rows[k]
    phi = np.zeros(n_rows)
    jac = np.zeros((n_rows, n_t)) if with_jac else np.zeros((0, n_t))
    bias = np.zeros(n_rows) if with_bias else np.zeros(0)
    _rows_into(rows, k, kin, with_jac, with_bias, (phi, jac, bias, np.zeros((6, 2, 3)), np.zeros((2, 3, n_t))))
    return phi, jac, bias


def _loop_rows_into_py(rows, k, kin, with_jac, with_bias, out):
    """`_loop_rows_kernel_py` into the caller's arrays out = (phi, jac, bias, work, jl) (every row of phi, and of
    jac / bias when asked, is written), with its work arrays given: `work` (6, 2, 3) = the two points' positions,
    velocities, accelerations, angular velocities and accelerations and two vectors (a basis vector; a pair loop:
    u_i and a_i), `jl` (2, 3, n_tangent) the points' Jacobians. Loops that evaluate the rows many times per
    call (the trajectory output's Newton pass) allocate these once."""
    rot, pos, sub, vel, acc = kin
    phi, jac, bias, work, jl = out
    ancestry, point_body, offset, basis, kinds = rows.ancestry, rows.point_body, rows.offset, rows.basis, rows.kinds
    loop_start, row_start = rows.loop_start, rows.row_start
    n_t = sub.shape[1]
    l0, l1 = loop_start[k], loop_start[k + 1]
    n_l = l1 - l0
    # (the points' work rows indexed in place, not as views: a view takes and drops a reference, ≈ 3 ns, where
    # `rows` is a record whose fields are read one by one, `constraints.newton_kernel.loop_record`)
    w = work[3]
    al = work[4]
    e = work[5, 0]
    for l in range(l0, l1):
        for side in range(2):
            point = 2 * l0 + (l - l0) + side * n_l
            b = point_body[point]
            o0, o1, o2 = offset[point, 0], offset[point, 1], offset[point, 2]
            if b < 0:
                work[0, side, 0], work[0, side, 1], work[0, side, 2] = o0, o1, o2
                for a in range(3):
                    work[1, side, a] = 0.0
                    work[2, side, a] = 0.0
                    w[side, a] = 0.0
                    al[side, a] = 0.0
                    for c in range(n_t):
                        jl[side, a, c] = 0.0
                continue
            for a in range(3):
                work[0, side, a] = rot[b, a, 0] * o0 + rot[b, a, 1] * o1 + rot[b, a, 2] * o2 + pos[b, a]
            x0, x1, x2 = work[0, side, 0], work[0, side, 1], work[0, side, 2]
            if with_jac:
                for c in range(n_t):
                    # (ancestry 1.0 or 0.0: the joints that do not move the body give exact zeros, not computed)
                    if ancestry[b, c] != 0.0:
                        jl[side, 0, c] = sub[0, c] + sub[4, c] * x2 - sub[5, c] * x1
                        jl[side, 1, c] = sub[1, c] + sub[5, c] * x0 - sub[3, c] * x2
                        jl[side, 2, c] = sub[2, c] + sub[3, c] * x1 - sub[4, c] * x0
                    else:
                        jl[side, 0, c] = jl[side, 1, c] = jl[side, 2, c] = 0.0
            if with_bias:
                om0, om1, om2 = vel[b, 3], vel[b, 4], vel[b, 5]
                a0, a1, a2 = acc[b, 3], acc[b, 4], acc[b, 5]
                w[side, 0], w[side, 1], w[side, 2] = om0, om1, om2
                al[side, 0], al[side, 1], al[side, 2] = a0, a1, a2
                u0 = vel[b, 0] + om1 * x2 - om2 * x1
                u1 = vel[b, 1] + om2 * x0 - om0 * x2
                u2 = vel[b, 2] + om0 * x1 - om1 * x0
                work[1, side, 0], work[1, side, 1], work[1, side, 2] = u0, u1, u2
                work[2, side, 0] = acc[b, 0] + a1 * x2 - a2 * x1 + om1 * u2 - om2 * u1
                work[2, side, 1] = acc[b, 1] + a2 * x0 - a0 * x2 + om2 * u0 - om0 * u2
                work[2, side, 2] = acc[b, 2] + a0 * x1 - a1 * x0 + om0 * u1 - om1 * u0
        d0, d1, d2 = work[0, 0, 0] - work[0, 1, 0], work[0, 0, 1] - work[0, 1, 1], work[0, 0, 2] - work[0, 1, 2]
        r = row_start[l]
        if kinds[l] != 1:   # the point rows: point loops, and the first three rows of a pair loop
            phi[r], phi[r + 1], phi[r + 2] = d0, d1, d2
            if with_jac:
                for a in range(3):
                    for c in range(n_t):
                        jac[r + a, c] = jl[0, a, c] - jl[1, a, c]
            if with_bias:
                for a in range(3):
                    bias[r + a] = work[2, 0, a] - work[2, 1, a]
            if kinds[l] == 0:
                continue
        ba = point_body[2 * l0 + (l - l0)]
        if kinds[l] >= 2:   # revolute, weld: their pair rows after the point rows (a separate kernel: the point
            # and planar loops' code stays as small as before)
            _pair_rows(rows, l, r + 3, ba, point_body[2 * l0 + (l - l0) + n_l], kin, with_jac, with_bias, out)
            continue
        for kk in range(2):
            for a in range(3):
                if ba < 0:
                    e[a] = basis[l, a, kk]
                else:
                    e[a] = rot[ba, a, 0] * basis[l, 0, kk] + rot[ba, a, 1] * basis[l, 1, kk] + rot[ba, a, 2] * basis[l, 2, kk]
            phi[r + kk] = e[0] * d0 + e[1] * d1 + e[2] * d2
            if with_jac:  # d(e·d)/dt = e·ḋ + ω_a·(e × d)
                ed0 = e[1] * d2 - e[2] * d1
                ed1 = e[2] * d0 - e[0] * d2
                ed2 = e[0] * d1 - e[1] * d0
                for c in range(n_t):
                    value = 0.0
                    for a in range(3):
                        value += e[a] * (jl[0, a, c] - jl[1, a, c])
                    if ba >= 0:
                        value += (ed0 * sub[3, c] + ed1 * sub[4, c] + ed2 * sub[5, c]) * ancestry[ba, c]
                    jac[r + kk, c] = value
            if with_bias:
                we0, we1, we2, ae0, ae1, ae2 = _spin(w, al, 0, e)
                value = 0.0
                value += (e[0] * (work[2, 0, 0] - work[2, 1, 0]) + e[1] * (work[2, 0, 1] - work[2, 1, 1])
                          + e[2] * (work[2, 0, 2] - work[2, 1, 2]))
                value += 2.0 * (we0 * (work[1, 0, 0] - work[1, 1, 0]) + we1 * (work[1, 0, 1] - work[1, 1, 1])
                                + we2 * (work[1, 0, 2] - work[1, 1, 2]))
                value += ae0 * d0 + ae1 * d1 + ae2 * d2
                bias[r + kk] = value


def _spin_py(w, al, side, v):
    """(ω × v, α × v + ω × (ω × v)) of a vector v fixed in the body of `side` (its ω = w[side], α = al[side]): the
    first and second time derivatives of v, as six floats."""
    o0, o1, o2 = w[side, 0], w[side, 1], w[side, 2]
    d0 = o1 * v[2] - o2 * v[1]
    d1 = o2 * v[0] - o0 * v[2]
    d2 = o0 * v[1] - o1 * v[0]
    return (d0, d1, d2, al[side, 1] * v[2] - al[side, 2] * v[1] + o1 * d2 - o2 * d1,
            al[side, 2] * v[0] - al[side, 0] * v[2] + o2 * d0 - o0 * d2,
            al[side, 0] * v[1] - al[side, 1] * v[0] + o0 * d1 - o1 * d0)


def _pair_rows_py(rows, l, r, ba, bb, kin, with_jac, with_bias, out):
    """The k = kinds[l] rows r … r + k − 1 of pair loop l (revolute: k = 2, u_1, u_2 ⟂ its axis and a_1 = a_2 the
    axis; weld: k = 3, B's axes x, y, z and A's y, z, x — Simbody's orientation rows): u_i·a_i = 0 with
    a_i = R_a basis[l, :, 3 + i] (in link_a's body frame, body ba) and u_i = R_b basis[l, :, i] (in link_b's body
    frame, body bb); a ground side (body −1) has them in world axes. Jacobian (u × a)·(J_ω,b − J_ω,a); bias
    (α_b × u + ω_b × (ω_b × u))·a + 2 (ω_b × u)·(ω_a × a) + u·(α_a × a + ω_a × (ω_a × a)). out as
    `_loop_rows_into_py`'s: its work rows 3, 4 hold the two sides' ω and α (with_bias), row 5 two 3-vectors of work
    (u, a)."""
    rot, sub = kin[0], kin[2]
    phi, jac, bias, work = out[0], out[1], out[2], out[3]
    ancestry, basis = rows.ancestry, rows.basis
    w, al, u, ax = work[3], work[4], work[5, 0], work[5, 1]
    n_t = sub.shape[1]
    for kk in range(rows.kinds[l]):
        for a in range(3):
            if ba < 0:
                ax[a] = basis[l, a, 3 + kk]
            else:
                ax[a] = (rot[ba, a, 0] * basis[l, 0, 3 + kk] + rot[ba, a, 1] * basis[l, 1, 3 + kk]
                         + rot[ba, a, 2] * basis[l, 2, 3 + kk])
            if bb < 0:
                u[a] = basis[l, a, kk]
            else:
                u[a] = (rot[bb, a, 0] * basis[l, 0, kk] + rot[bb, a, 1] * basis[l, 1, kk]
                        + rot[bb, a, 2] * basis[l, 2, kk])
        row = r + kk
        phi[row] = u[0] * ax[0] + u[1] * ax[1] + u[2] * ax[2]
        if with_jac:  # d(u·a)/dt = (u × a)·(ω_b − ω_a), ω of a body: S_ang ẋ on its ancestors' columns
            ua0 = u[1] * ax[2] - u[2] * ax[1]
            ua1 = u[2] * ax[0] - u[0] * ax[2]
            ua2 = u[0] * ax[1] - u[1] * ax[0]
            for c in range(n_t):
                m = (ancestry[bb, c] if bb >= 0 else 0.0) - (ancestry[ba, c] if ba >= 0 else 0.0)
                jac[row, c] = (ua0 * sub[3, c] + ua1 * sub[4, c] + ua2 * sub[5, c]) * m
        if with_bias:
            wa0, wa1, wa2, aa0, aa1, aa2 = _spin(w, al, 0, ax)
            wu0, wu1, wu2, au0, au1, au2 = _spin(w, al, 1, u)
            bias[row] = (au0 * ax[0] + au1 * ax[1] + au2 * ax[2]
                         + 2.0 * (wu0 * wa0 + wu1 * wa1 + wu2 * wa2) + u[0] * aa0 + u[1] * aa1 + u[2] * aa2)


# the callees of the Python forms (the compiled kernels have their compiled twins bound instead)
_rows_into = _loop_rows_into_py
_kinematics_into = _tree_kinematics_into_py
_body_rates = _body_rates_py
_pair_rows = _pair_rows_py
_spin = _spin_py
from biobullet.algorithms.compiled_kernels import place_body as _place_body  # noqa: E402
from biobullet.core import jit  # noqa: E402  (the switch of the compiled paths)


def _kinematics_bindings() -> dict:
    return {"_kinematics_into": tree_kinematics_into_kernel()}


def tree_kinematics_into_kernel():
    """The compiled `_tree_kinematics_into_py` (a call: its callers link it, not inline it)."""
    from biobullet.algorithms.compiled_kernels import place_body_kernel
    return jit.compiled(_tree_kinematics_into_py, bind={"_place_body": place_body_kernel(),
                                                        "_body_rates": body_rates_kernel()})


def body_rates_kernel():
    """The compiled `_body_rates_py` (inlined into its callers: the kinematics kernel, the loop Newton's rate pass)."""
    return jit.compiled(_body_rates_py, inline=True)


def loop_kernels():
    """(tree kinematics, loop rows) compiled kernels."""
    return tree_kinematics_kernel(), jit.compiled(_loop_rows_kernel_py, bind=_rows_bindings)


def tree_kinematics_kernel():
    """The compiled `_tree_kinematics_kernel_py` (rot, pos, sub, vel, acc of every body)."""
    return jit.compiled(_tree_kinematics_kernel_py, bind=_kinematics_bindings)


def _rows_bindings() -> dict:
    return {"_rows_into": rows_into_kernel()}


#: the tree kinematics kernel: compiled on its first call
tree_kinematics_run = jit.lazy(_tree_kinematics_kernel_py, bind=_kinematics_bindings)
#: the allocating loop rows kernel (`_loop_rows_kernel_py`): compiled on its first call, or its Python form
loop_rows_run = jit.lazy(_loop_rows_kernel_py, bind=_rows_bindings)


def _rows_into_bindings() -> dict:
    spin = jit.compiled(_spin_py, inline=True)
    pairs = jit.compiled(_pair_rows_py, bind={"_spin": spin})   # not inlined: point and planar loops keep their
    if pairs is None:                                           # small code
        raise RuntimeError("the pair rows kernel did not compile")
    return {"_pair_rows": pairs, "_spin": spin}


def rows_into_kernel():
    """The compiled `_loop_rows_into_py` (inline; the pair rows a compiled call)."""
    return jit.compiled(_loop_rows_into_py, bind=_rows_into_bindings, inline=True)
