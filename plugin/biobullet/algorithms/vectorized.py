"""World-frame tree dynamics: `mass_matrix_and_bias` (the same M(x) and RNEA(x, ẋ, ẍ) as crba.py / rnea.py, by the
compiled tree kernel of `compiled_kernels`) and the tree's ancestry mask (`tree_arrays`: which tangent directions
move which body; the point Jacobians of loops, force elements and the loop stage).

Everything is expressed in the world frame at the world origin ([linear; angular] spatial vectors):
motion subspaces S_k (revolute [p×a; a], prismatic [a; 0], multi-DOF joints Ad(body placement) S_body), body Jacobians
J_i = S ∘ ancestry_i, M = Σ J_iᵀ I_i J_i, and for RNEA the fixed-frame recursion a_i = Σ_{k ≤ i} (S_k θ̈_k +
v_k × S_k θ̇_k) (Featherstone, RBDA §3.4: in a fixed frame Ṡ_k = v_k × S_k).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biobullet.algorithms import compiled_kernels as kernels

_TREE_ARRAYS = "vectorized.tree_arrays"   # key of the model's TreeArrays in `Model.derived`


@dataclass(frozen=True)
class TreeArrays:
    """Per-model constant arrays (built once per Model)."""

    ancestry: np.ndarray        # (n_b, n_tangent) float mask: tangent k moves body i


def tree_arrays(model) -> TreeArrays:
    return model.derive(_TREE_ARRAYS, lambda: _build(model))


def _build(model) -> TreeArrays:
    bodies = model.bodies
    ancestry = np.zeros((len(bodies), model.n_tangent))
    for i in range(len(bodies)):
        j = i
        while j >= 0:
            b = bodies[j]
            ancestry[i, b.v_index:b.v_index + b.nv] = 1.0
            j = b.parent
    return TreeArrays(ancestry=ancestry)


_NO_GRAVITY = np.zeros(3)
_EMPTY = np.zeros(0)


def mass_matrix_and_bias(model, x: np.ndarray, xd: np.ndarray | None = None, xdd: np.ndarray | None = None,
                         *, need_mass: bool = True, gravity: bool = True) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(M(x), RNEA(x, ẋ, ẍ)) — either may be skipped (need_mass=False, or xd None): the compiled tree kernel
    (`compiled_kernels.tree_dynamics`; run by Python with numba disabled)."""
    meta, body = model.tree_pack
    need_bias = xd is not None
    mass, tau = kernels.tree_dynamics(meta, body, _float_vector(x),
                                      _float_vector(xd) if need_bias else _EMPTY,
                                      _float_vector(xdd) if xdd is not None else _EMPTY,
                                      np.array(model.gravity) if gravity else _NO_GRAVITY, model.n_tangent,
                                      need_mass, need_bias, xdd is not None)
    return (mass if need_mass else None), (tau if need_bias else None)


def _float_vector(a) -> np.ndarray:
    """A C-contiguous, writable float64 vector (one compiled specialization of the kernel serves every call)."""
    if type(a) is np.ndarray and a.dtype == np.float64 and a.ndim == 1:
        flags = a.flags
        if flags.c_contiguous and flags.writeable:
            return a
    return np.array(a, dtype=float).reshape(-1)
