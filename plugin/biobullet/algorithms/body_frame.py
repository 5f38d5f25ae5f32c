"""The body-frame tree of the classic recursions (crba.py, rnea.py): the "reduced_recursive" check's own tables.

Featherstone's body-frame CRBA and RNEA are numba kernels (`core.jit`) over the `BodyFrameTree` built here from
`model.bodies` — not over the pipeline's packed tree (`model.tree.pack_tree`) nor its world-frame kernel
(`algorithms/compiled_kernels.py`), which these recursions check. The kernels compile on the check's first use
only (`jit.lazy`; each call through its direct entry, `BodyFrame.call`), so a run that never asks for the check never compiles them.
Spatial vectors are [linear; angular] (Pinocchio's order); a child-to-parent placement (R, p) gives the motion
transform parent → child X = [Rᵀ, −Rᵀ[p]×; 0, Rᵀ].
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from biobullet.core import jit
from biobullet.model.tree import FREE, PLANAR, PRISMATIC, REVOLUTE, SPHERICAL

_KINDS = {"revolute": REVOLUTE, "prismatic": PRISMATIC, "free": FREE, "spherical": SPHERICAL, "planar": PLANAR}
_DERIVED_KEY = "algorithms.body_frame"   # `Model.derived` key of the model's BodyFrameTree


class BodyFrameTree(NamedTuple):
    """The bodies as arrays, parents before children (n bodies): read only by the kernels."""

    parent: np.ndarray        # int64 (n,): −1 for the world
    kind: np.ndarray          # int64 (n,): model.tree's REVOLUTE, PRISMATIC, FREE, SPHERICAL, PLANAR
    q_index: np.ndarray       # int64 (n,): first coordinate in x
    v_index: np.ndarray       # int64 (n,): first coordinate in ẋ
    nv: np.ndarray            # int64 (n,)
    rotation: np.ndarray      # (n, 3, 3): joint frame in the parent body's frame at zero motion
    translation: np.ndarray   # (n, 3) m
    axis: np.ndarray          # (n, 3): unit joint axis (planar: the plane's normal)
    inertia: np.ndarray       # (n, 6, 6): spatial inertia about the body origin (kg, kg m, kg m²)
    subspace: np.ndarray      # (n, 6, 6): motion subspace, its first nv columns used
    base_acceleration: np.ndarray   # (6,): −g, the fictitious base acceleration that carries gravity (m/s²)
    n_tangent: int


class BodyFrame:
    """A model's BodyFrameTree and the direct entries of the kernels called on it (`core.jit.direct_entry`:
    numba's type matching of the tree's twelve fields cost ≈ 2.5 µs a call, more than a 7-body RNEA)."""

    def __init__(self, tree: BodyFrameTree) -> None:
        self.tree = tree
        self._entries: dict = {}

    def call(self, kernel, *vectors: np.ndarray):
        """`kernel(tree, *vectors)` for a `jit.lazy` kernel and C-contiguous float64 vectors of the sizes the kernel
        reads (checked by the caller: the entry converts, it does not check)."""
        entry = self._entries.get(kernel)
        if entry is None:
            target = kernel.resolve()
            if not jit.compiling():   # (BIOBULLET_NUMBA=0, or inside `uncompiled()`: nothing kept)
                return target(self.tree, *vectors)
            entry = self._entries[kernel] = jit.direct_entry(target, self.tree, *vectors)
        return entry(self.tree, *vectors)


def body_frame(model) -> BodyFrame:
    """The model's BodyFrame, built once (kept in `model.derived`)."""
    return model.derive(_DERIVED_KEY, lambda: BodyFrame(_build(model)))


def checked_vector(model, name: str, values, size: int) -> np.ndarray:
    """`values` as a C-contiguous, writable float64 vector of `size` entries, the kernels reading exactly that
    many (`Model.checked`'s ModelError naming `name` otherwise). The formulation's own vectors (the joint state)
    take the fast path: what the kernels' memory needs is checked, not finiteness (NaN in gives NaN out)."""
    if (type(values) is np.ndarray and values.dtype == np.float64 and values.shape == (size,)
            and values.flags.c_contiguous and values.flags.writeable):
        return values
    values = np.ascontiguousarray(model.checked(name, values, size))
    return values if values.flags.writeable else values.copy()


def _build(model) -> BodyFrameTree:
    bodies = model.bodies
    n = len(bodies)
    subspace = np.zeros((n, 6, 6))
    for i, body in enumerate(bodies):
        subspace[i, :, :body.nv] = body.motion_subspace
    ints = lambda values: np.ascontiguousarray(values, dtype=np.int64).reshape(n)   # noqa: E731
    floats = lambda values, shape: np.ascontiguousarray(values, dtype=float).reshape(shape)   # noqa: E731
    return BodyFrameTree(
        parent=ints([b.parent for b in bodies]), kind=ints([_KINDS[b.joint_type] for b in bodies]),
        q_index=ints([b.q_index for b in bodies]), v_index=ints([b.v_index for b in bodies]),
        nv=ints([b.nv for b in bodies]), rotation=floats([b.rotation for b in bodies], (n, 3, 3)),
        translation=floats([b.translation for b in bodies], (n, 3)), axis=floats([b.axis for b in bodies], (n, 3)),
        inertia=floats([b.spatial_inertia for b in bodies], (n, 6, 6)), subspace=subspace,
        base_acceleration=np.concatenate([-np.asarray(model.gravity, dtype=float), np.zeros(3)]),
        n_tangent=int(model.n_tangent))


def motion_transforms_py(tree, x, transforms):
    """transforms[i] = X_i, the 6×6 motion transform from body i's parent frame to its own at configuration x
    (revolute: R₀ Rot(a, x); prismatic: p₀ + R₀ a x; spherical, free: R₀ R(quaternion), free p₀ + R₀ x[0:3];
    planar: R₀ Rot(n, φ) from (cos φ, sin φ), p₀ + R₀ (plane columns of S) (x, y))."""
    turn = np.empty((3, 3))
    rotation = np.empty((3, 3))
    offset = np.zeros(3)
    for i in range(tree.parent.shape[0]):
        kind, k = tree.kind[i], tree.q_index[i]
        for a in range(3):
            offset[a] = 0.0
        if kind == REVOLUTE or kind == PLANAR:
            if kind == REVOLUTE:
                s, c = np.sin(x[k]), np.cos(x[k])
            else:
                norm = np.hypot(x[k + 2], x[k + 3])
                s, c = x[k + 3] / norm, x[k + 2] / norm
                for a in range(3):
                    offset[a] = tree.subspace[i, a, 0] * x[k] + tree.subspace[i, a, 1] * x[k + 1]
            # Rodrigues: I + s [a]× + (1 − c) [a]×², with [a]×² = a aᵀ − (a·a) I
            ax, ay, az = tree.axis[i, 0], tree.axis[i, 1], tree.axis[i, 2]
            d, aa = 1.0 - c, ax * ax + ay * ay + az * az
            turn[0, 0], turn[0, 1], turn[0, 2] = 1.0 + d * (ax * ax - aa), -s * az + d * ax * ay, s * ay + d * ax * az
            turn[1, 0], turn[1, 1], turn[1, 2] = s * az + d * ay * ax, 1.0 + d * (ay * ay - aa), -s * ax + d * ay * az
            turn[2, 0], turn[2, 1], turn[2, 2] = -s * ay + d * az * ax, s * ax + d * az * ay, 1.0 + d * (az * az - aa)
        elif kind == PRISMATIC:
            for a in range(3):
                turn[a, 0], turn[a, 1], turn[a, 2] = 0.0, 0.0, 0.0
                turn[a, a] = 1.0
                offset[a] = tree.axis[i, a] * x[k]
        else:   # spherical, free: the unit quaternion (x, y, z, w)
            j = k + 3 if kind == FREE else k
            if kind == FREE:
                for a in range(3):
                    offset[a] = x[k + a]
            qx, qy, qz, qw = x[j], x[j + 1], x[j + 2], x[j + 3]
            norm = np.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
            qx, qy, qz, qw = qx / norm, qy / norm, qz / norm, qw / norm
            turn[0, 0], turn[0, 1], turn[0, 2] = 1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)
            turn[1, 0], turn[1, 1], turn[1, 2] = 2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)
            turn[2, 0], turn[2, 1], turn[2, 2] = 2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)
        # placement R = R₀ turn, p = p₀ + R₀ offset
        for a in range(3):
            for b in range(3):
                rotation[a, b] = (tree.rotation[i, a, 0] * turn[0, b] + tree.rotation[i, a, 1] * turn[1, b]
                                  + tree.rotation[i, a, 2] * turn[2, b])
        px = tree.translation[i, 0] + tree.rotation[i, 0, 0] * offset[0] + tree.rotation[i, 0, 1] * offset[1] \
            + tree.rotation[i, 0, 2] * offset[2]
        py = tree.translation[i, 1] + tree.rotation[i, 1, 0] * offset[0] + tree.rotation[i, 1, 1] * offset[1] \
            + tree.rotation[i, 1, 2] * offset[2]
        pz = tree.translation[i, 2] + tree.rotation[i, 2, 0] * offset[0] + tree.rotation[i, 2, 1] * offset[1] \
            + tree.rotation[i, 2, 2] * offset[2]
        xf = transforms[i]
        for a in range(6):
            for b in range(6):
                xf[a, b] = 0.0
        for a in range(3):
            ra0, ra1, ra2 = rotation[0, a], rotation[1, a], rotation[2, a]   # row a of Rᵀ
            for b in range(3):
                xf[a, b] = rotation[b, a]
                xf[a + 3, b + 3] = rotation[b, a]
            # row a of −Rᵀ [p]×, with [p]× = [[0, −pz, py], [pz, 0, −px], [−py, px, 0]]
            xf[a, 3] = -(ra1 * pz - ra2 * py)
            xf[a, 4] = -(-ra0 * pz + ra2 * px)
            xf[a, 5] = -(ra0 * py - ra1 * px)
