"""The compiled model: a Model finalized into immutable named arrays, the one input every pipeline stage reads.

`compile_model(model)` packs, once per Model (`Model.compiled` keeps it):
- sizes nq, nv (generalized), base_q, base_v (the multi-DOF block leading q and v), n_config, n_tangent (tree);
- `blocks` (m, 3) int64: the multi-DOF blocks — floating base, free, spherical and planar joints — as (kind of
  `algorithms.compiled_kernels`: FREE, SPHERICAL, PLANAR; index in q; index in v);
- `independent`: the joint slot of each independent coordinate;
- bodies: `tree_meta` (parent, joint kind, q index, v index, nv) and `tree_body` (axis, placement, mass, centre
  of mass, inertia, motion subspace) of `Model.tree_pack`, `gravity`, `ancestry` (n_b, n_tangent) float
  (1 where velocity column j moves body b), `tangent_parent` (the tangent direction before each one on its path
  to the root, −1 at the root: the tree-sparse factorisation);
- the joint-function table of `model.joint_jets.function_table` (`jets_table`, `jets_inputs`, `jets_coef`:
  kinds, parameters, expression tapes, plug-in kernel addresses);
- `state_stage`: COMPILED_STATE when the coordinate map is explicit joint functions the jets kernel evaluates,
  CALLBACK_STATE when a resolver needs Python (loops, third-party joint functions without compiled jets): the
  joint state then enters the pipeline through `Model.joint_state_view` (the documented callback stage);
- `solver`: how M v̇ = Q − h is solved — DENSE (Cholesky of M, identity map on a chain-like tree), SPARSE
  (Featherstone's Lᵀ D L over `tangent_parent`, identity map on a branched tree), PROJECTED (Cholesky of Gᵀ M G).

A NamedTuple: immutable, and numba passes it to the kernels as one structured argument.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from biobullet.algorithms import compiled_kernels

COMPILED_STATE, CALLBACK_STATE = 0, 1
DENSE, SPARSE, PROJECTED = 0, 1, 2
FREE, SPHERICAL, PLANAR = compiled_kernels.FREE, compiled_kernels.SPHERICAL, compiled_kernels.PLANAR
TREE_JOINTS = ("revolute", "prismatic", "free", "spherical", "planar")


class CompiledModel(NamedTuple):
    """Immutable named arrays of one Model (module docstring)."""

    nq: int
    nv: int
    base_q: int
    base_v: int
    n_config: int
    n_tangent: int
    state_stage: int
    solver: int
    blocks: np.ndarray
    independent: np.ndarray
    tree_meta: np.ndarray
    tree_body: np.ndarray
    gravity: np.ndarray
    ancestry: np.ndarray
    tangent_parent: np.ndarray
    jets_table: np.ndarray
    jets_inputs: np.ndarray
    jets_coef: np.ndarray


def multi_dof_blocks(model) -> np.ndarray:
    """(m, 3) int64 of the model's multi-DOF blocks that lead q and v — the floating base and every free (URDF
    floating), spherical and planar joint, in q order: (FREE, SPHERICAL or PLANAR, index in q, index in v). Each
    block has one more coordinate than velocities (a unit quaternion, or a planar joint's (cos φ, sin φ) pair), so
    base_nq = base_nv + m."""
    kinds = {"free": FREE, "spherical": SPHERICAL, "planar": PLANAR}
    rows = [(kinds[b.joint_type], b.q_index, b.v_index)
            for b in sorted((b for b in model.bodies if b.multi_dof), key=lambda b: b.q_index)]
    return np.array(rows, dtype=np.int64).reshape(len(rows), 3)


def tangent_parents(model) -> np.ndarray:
    """For each tangent direction the one before it on its path to the root (−1 at the root): a multi-DOF joint's
    directions form a chain, its first one hangs on the parent body's last direction."""
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


def _identity_solver(parents: np.ndarray) -> int:
    """SPARSE where the tree-sparse factorisation pays: its work is Σ depth², the dense one's n³/3 (up to a
    constant; measured in tests/benchmarks/test_rhs_scaling.py), and it needs every direction after its parent's
    (RBDA §6.5's λ(k) < k), which multi-DOF joints below a 1-DOF joint break (their velocities lead v)."""
    n = parents.shape[0]
    depth = np.zeros(n)
    for k, p in enumerate(parents):
        depth[k] = 1.0 + (depth[p] if p >= 0 else 0.0)
    ordered = bool(np.all(parents < np.arange(n)))
    return SPARSE if n and ordered and float(np.sum(depth ** 2)) <= n ** 3 / 12.0 else DENSE


def compile_model(model) -> CompiledModel:
    """The model's compiled arrays (module docstring). Joint kinds outside `TREE_JOINTS` are rejected by the
    tree builder already."""
    from biobullet.algorithms.vectorized import tree_arrays
    from biobullet.model.joint_jets import explicit_table

    table = explicit_table(model.coordinate_map)
    state_stage = COMPILED_STATE if table is not None else CALLBACK_STATE
    if table is None:
        table = (np.zeros((0, 6), dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))
    parents = tangent_parents(model)
    identity = state_stage == COMPILED_STATE and table[0].shape[0] == 0 and model.nv == model.n_tangent
    meta, body = model.tree_pack
    arrays = CompiledModel(
        model.nq, model.nv, model.base_nq, model.base_nv, model.n_config, model.n_tangent, state_stage,
        _identity_solver(parents) if identity else PROJECTED, multi_dof_blocks(model),
        np.array(model.coordinate_map.independent, dtype=np.int64), meta, body,
        np.array(model.gravity, dtype=float), np.ascontiguousarray(tree_arrays(model).ancestry), parents,
        np.ascontiguousarray(table[0]), np.ascontiguousarray(table[1]), np.ascontiguousarray(table[2], dtype=float))
    return arrays   # not flagged read-only: numba would compile every callee again for read-only array types
