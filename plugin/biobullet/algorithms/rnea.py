"""Recursive Newton–Euler inverse dynamics on the tree (Featherstone, body-frame spatial vectors).

rnea(x, ẋ, ẍ) = M(x) ẍ + h(x, ẋ), with h the Coriolis, centrifugal and gravity terms: the numba kernel `_rnea_py`
on the model's `body_frame.BodyFrameTree` (the "reduced_recursive" check's recursions, independent of the
pipeline's world-frame kernel):
    v_i = X_i v_p + S_i ẋ_i,  a_i = X_i a_p + S_i ẍ_i + v_i × S_i ẋ_i  (a_root = X −g),
    f_i = I_i a_i + v_i ×* I_i v_i,  τ_i = S_iᵀ Σ_subtree X f.
"""
from __future__ import annotations

import numpy as np

from biobullet.algorithms.body_frame import body_frame, checked_vector, motion_transforms_py
from biobullet.core import jit


def _rnea_py(tree, x, xd, xdd):
    """τ (n_tangent) of the BodyFrameTree `tree` at C-contiguous x, ẋ, ẍ."""
    n = tree.parent.shape[0]
    transforms = np.empty((n, 6, 6))
    _motion_transforms(tree, x, transforms)
    velocity = np.empty((n, 6))
    acceleration = np.empty((n, 6))
    force = np.empty((n, 6))
    joint = np.empty(6)
    momentum = np.empty(6)
    for i in range(n):
        xf, s, k, nv, parent = transforms[i], tree.subspace[i], tree.v_index[i], tree.nv[i], tree.parent[i]
        v, a = velocity[i], acceleration[i]
        for r in range(6):
            vj, aj = 0.0, 0.0
            for c in range(nv):
                vj += s[r, c] * xd[k + c]
                aj += s[r, c] * xdd[k + c]
            joint[r] = vj
            carried_v, carried_a = 0.0, 0.0
            for m in range(6):
                if parent >= 0:
                    carried_v += xf[r, m] * velocity[parent, m]
                    carried_a += xf[r, m] * acceleration[parent, m]
                else:
                    carried_a += xf[r, m] * tree.base_acceleration[m]
            v[r] = carried_v + vj
            a[r] = carried_a + aj
        if parent >= 0:   # a += v × v_joint: [ω × j_lin + v_lin × j_ang; ω × j_ang]
            lx, ly, lz, wx, wy, wz = v[0], v[1], v[2], v[3], v[4], v[5]
            jx, jy, jz, kx, ky, kz = joint[0], joint[1], joint[2], joint[3], joint[4], joint[5]
            a[0] += (wy * jz - wz * jy) + (ly * kz - lz * ky)
            a[1] += (wz * jx - wx * jz) + (lz * kx - lx * kz)
            a[2] += (wx * jy - wy * jx) + (lx * ky - ly * kx)
            a[3] += wy * kz - wz * ky
            a[4] += wz * kx - wx * kz
            a[5] += wx * ky - wy * kx
        inertia, f = tree.inertia[i], force[i]
        for r in range(6):
            fa, hv = 0.0, 0.0
            for m in range(6):
                fa += inertia[r, m] * a[m]
                hv += inertia[r, m] * v[m]
            f[r] = fa
            momentum[r] = hv
        # f += v ×* (I v): [ω × h_lin; ω × h_ang + v_lin × h_lin]
        lx, ly, lz, wx, wy, wz = v[0], v[1], v[2], v[3], v[4], v[5]
        fx, fy, fz, nx, ny, nz = momentum[0], momentum[1], momentum[2], momentum[3], momentum[4], momentum[5]
        f[0] += wy * fz - wz * fy
        f[1] += wz * fx - wx * fz
        f[2] += wx * fy - wy * fx
        f[3] += (wy * nz - wz * ny) + (ly * fz - lz * fy)
        f[4] += (wz * nx - wx * nz) + (lz * fx - lx * fz)
        f[5] += (wx * ny - wy * nx) + (lx * fy - ly * fx)
    tau = np.zeros(tree.n_tangent)
    for i in range(n - 1, -1, -1):   # project onto the joint, then carry into the parent: f_p += X_iᵀ f_i
        s, k, f, parent = tree.subspace[i], tree.v_index[i], force[i], tree.parent[i]
        for c in range(tree.nv[i]):
            total = 0.0
            for m in range(6):
                total += s[m, c] * f[m]
            tau[k + c] = total
        if parent >= 0:
            xf = transforms[i]
            for r in range(6):
                total = 0.0
                for m in range(6):
                    total += xf[m, r] * f[m]
                force[parent, r] += total
    return tau


_rnea = jit.lazy(_rnea_py, bind=lambda: {"_motion_transforms": jit.compiled(motion_transforms_py)})


def rnea(model, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray) -> np.ndarray:
    """Generalized forces τ = M(x) ẍ + h(x, ẋ) (n_tangent; N or N m)."""
    n = model.n_tangent
    return body_frame(model).call(_rnea, checked_vector(model, "x", x, model.n_config),
                                  checked_vector(model, "xd", xd, n), checked_vector(model, "xdd", xdd, n))
