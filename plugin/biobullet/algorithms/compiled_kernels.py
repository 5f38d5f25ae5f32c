"""Numba kernels of the world-frame tree algorithms (the hot path of "reduced"; `vectorized.mass_matrix_and_bias`).

Same algebra, same frame conventions (world frame at the world origin, [linear; angular] spatial vectors), written
as loops over bodies and compiled once (`cache=True`: compiled code is kept in __pycache__ between processes):
    placements  R_i = R_p R_loc,  p_i = R_p p_loc + p_p
    subspaces   revolute [p × a; a], prismatic [a; 0], free Ad(placement), spherical/planar Ad(placement) S_body
    CRBA        IC_b = Σ_subtree I_i,  M[l, j] = S_lᵀ IC_{b(j)} S_j for l moving body b(j)
    RNEA        v_i = v_p + S_i ẋ_i, a_i = a_p + v_i × S_i ẋ_i + S_i ẍ_i (a_root = −g),
                f_i = I_i a_i + v_i ×* I_i v_i, τ_k = S_kᵀ Σ_subtree f.
The dynamics (`_tree_dynamics_py`) take each subtree below a root, or below a root's chain of prismatic joints,
about its own joint frame (`_anchor_body_py`) instead of the world origin: M and h are the same about any point,
but about the origin they lost |p|² ε of themselves at a distance |p| (1e-6 at 100 km); the placements and point
kernels, which callers read as world positions, stay at the world origin.
With BIOBULLET_NUMBA=0 (debugging) the same functions run by Python (`core.jit`); tests check them against Pinocchio and the body-frame recursions (crba.py, rnea.py).
"""
from __future__ import annotations

import numpy as np

from biobullet.core import jit


def place_body_kernel(*, inline: bool = False):
    """The compiled `_place_body_py`. Called, not inlined, by the tree kernels: numba's IR
    inlining would type and lower its body again in each of the tree, kinematics and energy kernels (≈ 3 s of
    compile each on the 2-core machine), for a call per body that costs nothing next to the body's arithmetic."""
    return jit.compiled(_place_body_py, inline=inline)


# the packed per-body records (`model.tree.pack_tree`; kept once per model as `Model.tree_pack`)
from biobullet.model.tree import (COM, FREE, INERTIA, MASS, PLANAR, PRISMATIC, REVOLUTE, SPHERICAL,  # noqa: E402
                                  pack_tree)


def pack(model) -> tuple[np.ndarray, np.ndarray]:
    """(meta int64 (n_b, 5): parent, kind, q_index, v_index, nv;  body float64 (n_b, 64)) for the kernels: a new
    copy (`model.tree_pack` is the model's own, shared one)."""
    return pack_tree(model.bodies)


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
        # R_loc = R_origin R(quat), p_loc = p_origin (+ R_origin p for a free joint); the floating base's origin
        # is the identity, a URDF floating joint's (even one under a fixed root) is its <origin>
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
    # every array argument read once more at the one exit: numba takes a reference on each argument at entry and
    # drops it after the argument's last read, here in many branches, where its reference-count pruning cannot pair
    # them (16 atomic operations a body: arm7's forward call 205 → 92, gdb); all dropped in the exit block, they
    # are paired and removed. (The value is not used.)
    return meta.size + body.size + x.size + loc.size + jr.size + rot.size + pos.size + sub.size


# a global of the tree kernels: the Python twin until `_tree_kernel_bindings` binds the compiled one at compile time
_place_body = _place_body_py


def _is_anchor_py(meta, i):
    """True where body i starts a frame of its own in `_tree_dynamics_py`: a root, or a child of a chain of
    prismatic joints from a root (a planar base's virtual x, y sliders). Above it nothing rotates, so motion
    vectors carry no angular part and are the same about every point: the body's subtree may be taken about its
    own joint frame instead of the world origin."""
    b = meta[i, 0]
    while b >= 0:
        if meta[b, 1] != PRISMATIC:
            return False
        b = meta[b, 0]
    return True


def _anchor_body_py(meta, body, i, rot, pos, sub):
    """Make body i (`_is_anchor_py`) the reference point of its subtree: pos[i] = 0 (so its descendants are placed
    relative to it, never through its world position) and its subspace columns about that point (`_place_body_py`
    wrote them about the world origin): a revolute joint's axis and a free joint's rotations pass through the
    frame's origin (linear part 0), a prismatic joint's columns have no angular part (unchanged), and a spherical or
    planar joint's are [R l; R a] from the body-frame subspace [l; a] — never by subtracting p × R a, which would
    keep the |p| ε rounding. The world position, of order |p|, would round every descendant's position to |p| ε
    and every inertia about the origin (m |c|²) to |p|² ε: M lost 1e-10 of itself at 1 km, 1e-6 at 100 km.
    (The body-frame subspace block is read for spherical and planar joints only: the bridge passes records
    without it for trees of revolute and prismatic joints.)"""
    kind, vi = meta[i, 1], meta[i, 3]
    pos[i, 0], pos[i, 1], pos[i, 2] = 0.0, 0.0, 0.0
    if kind == REVOLUTE:
        sub[0, vi], sub[1, vi], sub[2, vi] = 0.0, 0.0, 0.0
    elif kind == FREE:
        for c in range(3, 6):
            sub[0, vi + c], sub[1, vi + c], sub[2, vi + c] = 0.0, 0.0, 0.0
    elif kind == SPHERICAL or kind == PLANAR:
        for c in range(meta[i, 4]):
            l0, l1, l2 = body[i, 28 + c], body[i, 34 + c], body[i, 40 + c]
            for a in range(3):
                sub[a, vi + c] = rot[i, a, 0] * l0 + rot[i, a, 1] * l1 + rot[i, a, 2] * l2


# globals of the tree dynamics kernel, bound like `_place_body` (`_tree_dynamics_bindings`)
_is_anchor = _is_anchor_py
_anchor_body = _anchor_body_py


def _tree_dynamics_py(meta, body, x, xd, xdd, gravity, n_tangent, need_mass, need_bias, has_xdd):
    """`_tree_dynamics_into_py` in new arrays."""
    nb = meta.shape[0]
    work = (np.empty((nb, 3, 3)), np.empty((nb, 3)), np.zeros((6, n_tangent)), np.empty((2, nb, 10)),
            np.empty((2, 3, 3)), np.zeros((n_tangent, n_tangent)), np.zeros(n_tangent),
            np.empty((3, nb if need_bias else 0, 6)),   # (as `tree_work`, the bias pass's motion only if asked)
            np.zeros(x.shape[0] + 1))
    _tree_into(meta, body, x, xd, xdd, gravity, need_mass, need_bias, has_xdd, work)
    return work[5], work[6]


def tree_work(nb: int, n_tangent: int, n_config: int) -> tuple:
    """The work and result arrays of `_tree_dynamics_into_py` for a tree of nb bodies, n_tangent directions and
    n_config coordinates: rot, pos, sub (zero: each body writes its own columns), the inertias, 3 × 3 scratch, M,
    h, the bias pass's motion, and the x the placements and inertias were computed at (n_config values, then 1.0
    when they are current: 0.0 here, none yet)."""
    return (np.empty((nb, 3, 3)), np.empty((nb, 3)), np.zeros((6, n_tangent)), np.empty((2, nb, 10)),
            np.empty((2, 3, 3)), np.zeros((n_tangent, n_tangent)), np.zeros(n_tangent), np.empty((3, nb, 6)),
            np.zeros(n_config + 1))


def _tree_dynamics_into_py(meta, body, x, xd, xdd, gravity, need_mass, need_bias, has_xdd, work):
    """(M, h) = CRBA and RNEA(x, ẋ, ẍ if has_xdd else 0) in world-aligned axes (module docstring), each subtree
    of an anchor (`_is_anchor_py`: a root, or the child of a root's prismatic chain) about the anchor's joint frame,
    so the result keeps its digits wherever the robot stands (a carrier of that chain is the only body of its
    own frame; its prismatic rows read only the linear parts, which are the same about every point). Each spatial
    inertia about its reference point O [[m 1, −m[c]×], [m[c]×, I_O]] is kept as its 10 numbers m, m c,
    I_O = Ic − m[c]×[c]× (xx yy zz xy xz yz), so I s = [m s_l − m c × s_a; m c × s_l + I_O s_a] and the
    composite inertias are sums of those numbers (1.4× faster per call than 6 × 6 matrices on the 14-joint
    shoulder). Into the arrays of `work` (`tree_work`: a caller that evaluates one tree again and again — the
    pipeline's Data — allocates them once; an allocation costs ≈ 0.035 µs, eight of them a third of a small tree's
    call); M and h are two of them (work[5], work[6]), not returned: a kernel that returns arrays must count
    references on them, and this one is called by runtime-free kernels and by the right-hand side alike (one compiled
    form, `tree_dynamics_into_kernel`). The bodies' placements and inertias are computed only where x is not
    the last call's, entry by entry (`placed_at`: M then h at one state — a control loop's τ = M a + h, the public
    calls' pair — places the bodies once; a run's states never repeat, the test costs n_config comparisons)."""
    nb = meta.shape[0]
    rot, pos, sub, inertias, scratch, mass, tau, motion, placed_at = work
    inertia = inertias[0]   # m, m c (3), I_O (6) of each body, then the composite ones
    loc = scratch[0]
    jr = scratch[1]
    n_config = x.shape[0]
    current = placed_at[n_config] != 0.0
    if current:
        for k in range(n_config):
            if x[k] != placed_at[k]:   # (NaN: never equal, placed again)
                current = False
                break
    if not current:
        placed_at[n_config] = 0.0
        for i in range(nb):
            _place_body(meta, body, x, i, loc, jr, rot, pos, sub)
            if _is_anchor(meta, i):
                _anchor_body(meta, body, i, rot, pos, sub)
            p0, p1, p2 = pos[i, 0], pos[i, 1], pos[i, 2]
            m = body[i, 15]
            cb0, cb1, cb2 = body[i, 16], body[i, 17], body[i, 18]
            c0 = rot[i, 0, 0] * cb0 + rot[i, 0, 1] * cb1 + rot[i, 0, 2] * cb2 + p0
            c1 = rot[i, 1, 0] * cb0 + rot[i, 1, 1] * cb1 + rot[i, 1, 2] * cb2 + p1
            c2 = rot[i, 2, 0] * cb0 + rot[i, 2, 1] * cb1 + rot[i, 2, 2] * cb2 + p2
            # Ic = R I Rᵀ: W = I Rᵀ first (9 × 3 products), then R W (upper triangle)
            for a in range(3):
                for b in range(3):
                    loc[a, b] = (body[i, 19 + 3 * a] * rot[i, b, 0] + body[i, 20 + 3 * a] * rot[i, b, 1]
                                 + body[i, 21 + 3 * a] * rot[i, b, 2])
            # I_O = R W + m (|c|² 1 − c cᵀ) (upper triangle)
            cc = c0 * c0 + c1 * c1 + c2 * c2
            inertia[i, 0] = m
            inertia[i, 1], inertia[i, 2], inertia[i, 3] = m * c0, m * c1, m * c2
            for a, b, k in ((0, 0, 4), (1, 1, 5), (2, 2, 6), (0, 1, 7), (0, 2, 8), (1, 2, 9)):
                inertia[i, k] = rot[i, a, 0] * loc[0, b] + rot[i, a, 1] * loc[1, b] + rot[i, a, 2] * loc[2, b]
            inertia[i, 4] += m * (cc - c0 * c0)
            inertia[i, 5] += m * (cc - c1 * c1)
            inertia[i, 6] += m * (cc - c2 * c2)
            inertia[i, 7] -= m * c0 * c1
            inertia[i, 8] -= m * c0 * c2
            inertia[i, 9] -= m * c1 * c2
        for k in range(n_config):
            placed_at[k] = x[k]
        placed_at[n_config] = 1.0

    mass[:, :] = 0.0
    if need_mass:
        composite = inertias[1]
        for i in range(nb):   # element-wise: an array assignment would compile numba's shape-error text (≈ 4 s)
            for a in range(10):
                composite[i, a] = inertia[i, a]
        for i in range(nb - 1, -1, -1):
            parent = meta[i, 0]
            if parent >= 0:
                for a in range(10):
                    composite[parent, a] += composite[i, a]
        for i in range(nb):
            vi, nv = meta[i, 3], meta[i, 4]
            m, h0, h1, h2 = composite[i, 0], composite[i, 1], composite[i, 2], composite[i, 3]
            ixx, iyy, izz, ixy, ixz, iyz = (composite[i, 4], composite[i, 5], composite[i, 6], composite[i, 7],
                                            composite[i, 8], composite[i, 9])
            for j in range(vi, vi + nv):
                s0, s1, s2, w0, w1, w2 = sub[0, j], sub[1, j], sub[2, j], sub[3, j], sub[4, j], sub[5, j]
                # f = [m v − h × ω; h × v + I_O ω]
                f0 = m * s0 - (h1 * w2 - h2 * w1)
                f1 = m * s1 - (h2 * w0 - h0 * w2)
                f2 = m * s2 - (h0 * w1 - h1 * w0)
                f3 = h1 * s2 - h2 * s1 + ixx * w0 + ixy * w1 + ixz * w2
                f4 = h2 * s0 - h0 * s2 + ixy * w0 + iyy * w1 + iyz * w2
                f5 = h0 * s1 - h1 * s0 + ixz * w0 + iyz * w1 + izz * w2
                b, start = i, j
                while b >= 0:
                    for l in range(start, meta[b, 3] + meta[b, 4]):
                        acc = (sub[0, l] * f0 + sub[1, l] * f1 + sub[2, l] * f2 + sub[3, l] * f3 + sub[4, l] * f4
                               + sub[5, l] * f5)
                        mass[l, j] = acc
                        mass[j, l] = acc
                    b = meta[b, 0]
                    if b >= 0:
                        start = meta[b, 3]

    tau[:] = 0.0
    if need_bias:
        vel = motion[0]
        acc_b = motion[1]
        forces = motion[2]
        for i in range(nb):
            parent, vi, nv = meta[i, 0], meta[i, 3], meta[i, 4]
            j0 = j1 = j2 = j3 = j4 = j5 = 0.0
            t0 = t1 = t2 = t3 = t4 = t5 = 0.0
            for k in range(vi, vi + nv):
                q = xd[k]
                j0 += sub[0, k] * q
                j1 += sub[1, k] * q
                j2 += sub[2, k] * q
                j3 += sub[3, k] * q
                j4 += sub[4, k] * q
                j5 += sub[5, k] * q
                if has_xdd:
                    u = xdd[k]
                    t0 += sub[0, k] * u
                    t1 += sub[1, k] * u
                    t2 += sub[2, k] * u
                    t3 += sub[3, k] * u
                    t4 += sub[4, k] * u
                    t5 += sub[5, k] * u
            if parent >= 0:
                l0, l1, l2 = vel[parent, 0] + j0, vel[parent, 1] + j1, vel[parent, 2] + j2
                a0, a1, a2 = vel[parent, 3] + j3, vel[parent, 4] + j4, vel[parent, 5] + j5
                # a = a_p + S ẍ + v × S ẋ
                b0 = acc_b[parent, 0] + t0 + a1 * j2 - a2 * j1 + l1 * j5 - l2 * j4
                b1 = acc_b[parent, 1] + t1 + a2 * j0 - a0 * j2 + l2 * j3 - l0 * j5
                b2 = acc_b[parent, 2] + t2 + a0 * j1 - a1 * j0 + l0 * j4 - l1 * j3
                b3 = acc_b[parent, 3] + t3 + a1 * j5 - a2 * j4
                b4 = acc_b[parent, 4] + t4 + a2 * j3 - a0 * j5
                b5 = acc_b[parent, 5] + t5 + a0 * j4 - a1 * j3
            else:
                l0, l1, l2, a0, a1, a2 = j0, j1, j2, j3, j4, j5
                b0, b1, b2 = t0 - gravity[0], t1 - gravity[1], t2 - gravity[2]
                b3, b4, b5 = t3, t4, t5
            vel[i, 0], vel[i, 1], vel[i, 2], vel[i, 3], vel[i, 4], vel[i, 5] = l0, l1, l2, a0, a1, a2
            acc_b[i, 0], acc_b[i, 1], acc_b[i, 2], acc_b[i, 3], acc_b[i, 4], acc_b[i, 5] = b0, b1, b2, b3, b4, b5
            m, h0, h1, h2 = inertia[i, 0], inertia[i, 1], inertia[i, 2], inertia[i, 3]
            ixx, iyy, izz, ixy, ixz, iyz = (inertia[i, 4], inertia[i, 5], inertia[i, 6], inertia[i, 7],
                                            inertia[i, 8], inertia[i, 9])
            # I v and I a
            v0 = m * l0 - (h1 * a2 - h2 * a1)
            v1 = m * l1 - (h2 * a0 - h0 * a2)
            v2 = m * l2 - (h0 * a1 - h1 * a0)
            v3 = h1 * l2 - h2 * l1 + ixx * a0 + ixy * a1 + ixz * a2
            v4 = h2 * l0 - h0 * l2 + ixy * a0 + iyy * a1 + iyz * a2
            v5 = h0 * l1 - h1 * l0 + ixz * a0 + iyz * a1 + izz * a2
            forces[i, 0] = m * b0 - (h1 * b5 - h2 * b4) + a1 * v2 - a2 * v1
            forces[i, 1] = m * b1 - (h2 * b3 - h0 * b5) + a2 * v0 - a0 * v2
            forces[i, 2] = m * b2 - (h0 * b4 - h1 * b3) + a0 * v1 - a1 * v0
            forces[i, 3] = h1 * b2 - h2 * b1 + ixx * b3 + ixy * b4 + ixz * b5 + a1 * v5 - a2 * v4 + l1 * v2 - l2 * v1
            forces[i, 4] = h2 * b0 - h0 * b2 + ixy * b3 + iyy * b4 + iyz * b5 + a2 * v3 - a0 * v5 + l2 * v0 - l0 * v2
            forces[i, 5] = h0 * b1 - h1 * b0 + ixz * b3 + iyz * b4 + izz * b5 + a0 * v4 - a1 * v3 + l0 * v1 - l1 * v0
        for i in range(nb - 1, -1, -1):
            parent, vi, nv = meta[i, 0], meta[i, 3], meta[i, 4]
            for k in range(vi, vi + nv):
                tau[k] = (sub[0, k] * forces[i, 0] + sub[1, k] * forces[i, 1] + sub[2, k] * forces[i, 2]
                          + sub[3, k] * forces[i, 3] + sub[4, k] * forces[i, 4] + sub[5, k] * forces[i, 5])
            if parent >= 0:
                for a in range(6):
                    forces[parent, a] += forces[i, a]


def _project_upper_py(mass, h, g):
    """`_project_upper_into_py` into new arrays."""
    n, k = g.shape
    return _project_into(mass, h, g, np.empty(k, dtype=np.int64), np.empty((n, k)), np.empty((k, k)),
                         np.empty(k))


def _project_upper_into_py(mass, h, g, nonzero, w, reduced, bias):
    """(Gᵀ M G, Gᵀ h) reading only the upper triangle of M (Pinocchio's CRBA fills no more). Each row of G is
    scanned for its non-zeros once: a joint-function map's G has one or a few per row (an independent joint's
    identity row, a mimic joint's multiplier), so the products cost O(nnz(M) + n k) instead of O(n² k) (Talos
    with its 12 mimic gripper joints: n = 50, k = 38). Every sum adds the same non-zero terms in the same order as
    the dense products: the result is the same to the last bit. Into the caller's arrays (nonzero (k,) int64:
    the columns of one row of G where it is not zero; w (n, k): M G; the results reduced (k, k), bias (k,)),
    returned: the public calls' Data holds them (an allocation costs ≈ 0.05 µs, a tenth of this product on a
    small loop model)."""
    n, k = g.shape

    def scan(row):   # (numba inlines an inner function) the count of row's non-zeros, their columns in `nonzero`
        count = 0
        for c in range(k):
            if g[row, c] != 0.0:
                nonzero[count] = c
                count += 1
        return count

    w[:, :] = 0.0                           # M G, row by row of G (each w[a, c] summed over b in order)
    for b in range(n):
        count = scan(b)
        for a in range(n):
            m = mass[a, b] if a <= b else mass[b, a]
            if m != 0.0:
                for i in range(count):
                    c = nonzero[i]
                    w[a, c] += m * g[b, c]
    reduced[:, :] = 0.0
    bias[:] = 0.0
    for a in range(n):
        for i in range(scan(a)):
            c = nonzero[i]
            ga = g[a, c]
            for d in range(c, k):
                reduced[c, d] += ga * w[a, d]
            bias[c] += ga * h[a]
    for c in range(k):
        for d in range(c + 1, k):
            reduced[d, c] = reduced[c, d]
    return reduced, bias


_project_into = _project_upper_into_py
_tree_into = _tree_dynamics_into_py


def cholesky_factor_py(a, low, pivot_check):
    """Lower Cholesky factor of the symmetric `a` (lower triangle read) into `low` (zeros above the diagonal
    expected); False as soon as a pivot is not > pivot_check · a[j, j] (0: not positive; NaN fails too;
    `spatial.dense.MASS_PIVOT_RATIO`: not above round-off), low[j, j] then left 0 at the failing pivot j."""
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


def cholesky_solve_py(low, rhs, out):
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
    return {"_place_body": place_body_kernel()}


def _tree_dynamics_bindings() -> dict:
    return {**_tree_kernel_bindings(), "_is_anchor": jit.compiled(_is_anchor_py, inline=True),
            "_anchor_body": jit.compiled(_anchor_body_py, inline=True)}


def _placements_py(meta, body, x, rot, pos, sub):
    """World placement of every body frame into rot (n_b, 3, 3), pos (n_b, 3) and the world motion subspace (at
    the world origin, [linear; angular]) of every tangent direction into sub (6, n_tangent): `_place_body` alone."""
    loc = np.empty((3, 3))
    jr = np.empty((3, 3))
    for i in range(meta.shape[0]):
        _place_body(meta, body, x, i, loc, jr, rot, pos, sub)


def placements_kernel(*, inline: bool = False):
    """The compiled `_placements_py`."""
    return jit.compiled(_placements_py, bind=_tree_kernel_bindings, inline=inline)


def _point_velocity_py(sub, ancestry, b, point, xd, out):
    """World velocity [m/s] of the world point p fixed to body b (zero for the world, b < 0): out = J_p ẋ =
    Σ_j (S_lin,j + S_ang,j × p) ẋ_j over the tangent directions j that move b (ancestry[b, j] ≠ 0)."""
    v0 = v1 = v2 = 0.0
    if b >= 0:
        for j in range(sub.shape[1]):
            if ancestry[b, j] != 0 and xd[j] != 0.0:
                w0, w1, w2 = sub[3, j], sub[4, j], sub[5, j]
                v0 += (sub[0, j] + w1 * point[2] - w2 * point[1]) * xd[j]
                v1 += (sub[1, j] + w2 * point[0] - w0 * point[2]) * xd[j]
                v2 += (sub[2, j] + w0 * point[1] - w1 * point[0]) * xd[j]
    out[0], out[1], out[2] = v0, v1, v2


def _point_force_py(sub, ancestry, b, point, f0, f1, f2, tau):
    """τ += J_pᵀ F for a world force F = (f0, f1, f2) [N] at the world point p on body b (nothing for the world,
    b < 0, or a zero force)."""
    if b >= 0 and (f0 != 0.0 or f1 != 0.0 or f2 != 0.0):
        for j in range(sub.shape[1]):
            if ancestry[b, j] != 0:
                w0, w1, w2 = sub[3, j], sub[4, j], sub[5, j]
                tau[j] += ((sub[0, j] + w1 * point[2] - w2 * point[1]) * f0
                           + (sub[1, j] + w2 * point[0] - w0 * point[2]) * f1
                           + (sub[2, j] + w0 * point[1] - w1 * point[0]) * f2)


def point_kernels() -> dict:
    """{"_POINT_VELOCITY", "_POINT_FORCE"}: the point kernels compiled to be inlined into their callers' kernels
    (the names they call them by)."""
    return {"_POINT_VELOCITY": jit.compiled(_point_velocity_py, inline=True),
            "_POINT_FORCE": jit.compiled(_point_force_py, inline=True)}


# the compiled kernels, or their Python twins
placements = jit.lazy(_placements_py, bind=_tree_kernel_bindings)
place_body = jit.lazy(_place_body_py)
point_velocity = jit.lazy(_point_velocity_py)
point_force = jit.lazy(_point_force_py)


def _tree_energies_py(meta, body, positions, velocities, gravity, kinetic, potential):
    """Kinetic energy ½ ẋᵀ M ẋ = Σ ½ m |v_c|² + ½ ωᵀ R I_c Rᵀ ω and gravity potential −Σ m g·c (J) of n tree
    states (positions (n, n_config), velocities (n, n_tangent)) into kinetic[k], potential[k]: one placement pass
    per sample (`_place_body`), body velocities v_i = v_p + S_i ẋ_i ([linear; angular]) about the anchors of
    `_tree_dynamics_py` (so ½ m |v_c|² keeps its digits far from the origin: 2e-11 of itself at 100 km about the
    world origin), c = R com + p, the potential of c + the anchor's world position `anchor`. One compiled call for
    all samples of a trajectory."""
    nb = meta.shape[0]
    n, n_tangent = velocities.shape
    rot = np.empty((nb, 3, 3))
    pos = np.empty((nb, 3))
    anchor = np.zeros((nb, 3))   # the world position of each body's anchor
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
            for a in range(3):   # pos[i] is relative to the parent's anchor (a root's: to the world origin)
                anchor[i, a] = anchor[parent, a] if parent >= 0 else 0.0
            if _is_anchor(meta, i):
                for a in range(3):
                    anchor[i, a] += pos[i, a]
                _anchor_body(meta, body, i, rot, pos, sub)
            for a in range(6):
                own = 0.0
                for c in range(nv):
                    own += sub[a, vi + c] * velocities[k, vi + c]
                vel[i, a] = (vel[parent, a] if parent >= 0 else 0.0) + own
            mass = body[i, MASS]
            r = rot[i]
            c0 = r[0, 0] * body[i, COM] + r[0, 1] * body[i, COM + 1] + r[0, 2] * body[i, COM + 2] + pos[i, 0]
            c1 = r[1, 0] * body[i, COM] + r[1, 1] * body[i, COM + 1] + r[1, 2] * body[i, COM + 2] + pos[i, 1]
            c2 = r[2, 0] * body[i, COM] + r[2, 1] * body[i, COM + 1] + r[2, 2] * body[i, COM + 2] + pos[i, 2]
            v_sum -= mass * (g0 * (c0 + anchor[i, 0]) + g1 * (c1 + anchor[i, 1]) + g2 * (c2 + anchor[i, 2]))
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
                rotational += la * (body[i, INERTIA + 3 * a] * l0 + body[i, INERTIA + 3 * a + 1] * l1
                                    + body[i, INERTIA + 3 * a + 2] * l2)
            t_sum += 0.5 * rotational
        kinetic[k] = t_sum
        potential[k] = v_sum


#: `_tree_energies_py`, compiled on its first call, or run by Python (numba disabled: debugging)
tree_energies = jit.lazy(_tree_energies_py, bind=_tree_dynamics_bindings)


def tree_dynamics_kernel():
    """The compiled `_tree_dynamics_py` (calling the one compiled `_tree_dynamics_into_py`)."""
    return jit.compiled(_tree_dynamics_py, bind=_tree_dynamics_wrapper_bindings)


def tree_dynamics_into_kernel():
    """The compiled `_tree_dynamics_into_py` (the pipeline's, into its Data's `tree_work`), without numba's runtime:
    it allocates nothing and returns nothing, so one compiled form serves the public calls' forward kernel (itself
    runtime-free, its work arrays borrowed) and the right-hand side (whose arrays the caller holds) — two forms,
    with and without the runtime, cost ≈ 2.8 s of compile CPU each and gave the same numbers."""
    return jit.compiled(_tree_dynamics_into_py, bind=_tree_dynamics_bindings, nrt=False)


def _tree_dynamics_wrapper_bindings() -> dict:
    # (called, not inlined: inlined, the tree kernel was compiled a second time inside this wrapper, ≈ 3 s of CPU;
    # it returns no array, so a caller with numba's runtime may call its runtime-free form)
    return {"_tree_into": tree_dynamics_into_kernel()}


tree_dynamics = jit.lazy(_tree_dynamics_py, bind=_tree_dynamics_wrapper_bindings)


project_upper = jit.lazy(_project_upper_py, bind=lambda: {"_project_into": project_upper_into_kernel()})


def project_upper_into_kernel():
    """The compiled `_project_upper_into_py`."""
    return jit.compiled(_project_upper_into_py)


#: the Cholesky kernels for callers run by Python (numba disabled: debugging), compiled on first use otherwise
cholesky_factor = jit.lazy(cholesky_factor_py)
cholesky_solve = jit.lazy(cholesky_solve_py)


def cholesky_kernels() -> tuple:
    """(the compiled `cholesky_factor_py`, the compiled `cholesky_solve_py`)."""
    return jit.compiled(cholesky_factor_py), jit.compiled(cholesky_solve_py)
