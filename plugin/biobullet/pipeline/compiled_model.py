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
- `mass_floor_root` (n_tangent,): per tree direction √(`spatial.dense.MASS_FLOOR_RATIO` × the bound of its M[k, k]
  from the bodies it moves, `spatial.dense.direction_mass_bounds`): the solve's test that each coordinate moves mass
  (`spatial.dense.massless_coordinate_py`);
- the joint-function table of `model.joint_jets.function_table` (`jets_table`, `jets_inputs`, `jets_coef`:
  kinds, parameters, expression tapes, plug-in kernel addresses);
- `loops` (`LoopTable`): the map's loop resolvers in its order, interleaved with runs of the joint-function table
  (`stages`), their dependent and known joints, the loop rows of `constraints.loop_kernels` and the tree the loop
  Newton evaluates (a free base held at the identity); empty for a map without loops;
- `state_stage`: COMPILED_STATE when the coordinate map is explicit joint functions the jets kernel evaluates and
  loops the loop stage solves, CALLBACK_STATE when a resolver needs Python (loop types without compiled rows,
  loops under a multi-DOF joint other than a root free base, third-party joint functions without compiled jets):
  the joint state then enters the pipeline through `Model.joint_state_view` (the documented callback stage);
- `solver`: how M v̇ = Q − h is solved — DENSE (Cholesky of M, identity map on a chain-like tree), SPARSE
  (Featherstone's Lᵀ D L over `tangent_parent`, identity map on a branched tree), PROJECTED (Cholesky of Gᵀ M G).

A NamedTuple: immutable, and numba passes it to the kernels as one structured argument.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from biobullet.algorithms import compiled_kernels
from biobullet.constraints.loop_kernels import LoopRows, pack_loop_rows
from biobullet.constraints.loops import joint_layout_tree
from biobullet.constraints.newton_kernel import loop_set_blocks
from biobullet.model.tree import multi_dof_blocks
from biobullet.spatial.dense import direction_mass_bounds, mass_floor_root

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
    mass_floor_root: np.ndarray
    jets_table: np.ndarray
    jets_inputs: np.ndarray
    jets_coef: np.ndarray
    loops: "LoopTable"


class LoopTable(NamedTuple):
    """The loop resolvers of a coordinate map, packed for the loop stage (`constraints.newton_kernel`). Resolver k
    owns dep[dep_start[k]:dep_start[k+1]], known[known_start[k]:…] (tangent indices: joint j at base_v + j),
    sensitivity entries sensitivity_start[k] … (+ n_dep · n_known, row-major) of the warm start, and loop set k of
    `rows` (`constraints.loop_kernels.LoopRows`). `stages` rows (0, a, b): joint-function table rows a … b−1;
    (1, k, 0): loop resolver k."""

    stages: np.ndarray
    dep_start: np.ndarray
    dep: np.ndarray
    known_start: np.ndarray
    known: np.ndarray
    sensitivity_start: np.ndarray
    revolute: np.ndarray        # per dependent joint: 1.0 where its angle may be wrapped by 2π
    tolerance: np.ndarray       # per resolver: residual tolerance (m)
    condition_limit: float      # cond₁(Φ_dep) above which the stage declines (the callback stage reports it)
    view_start: int             # x[view_start:] is the loop kernels' joint layout (base_q − base_v)
    meta: np.ndarray            # the packed tree the loop rows are evaluated on (a free base held at the identity)
    body: np.ndarray
    # per dependent joint (at dep_start[k] …): each set's Φ_dep in block lower triangular order — its rows, its
    # dependent joints (local indices) and the end of each position's diagonal block (`newton_kernel.loop_set_blocks`)
    block_rows: np.ndarray
    block_dep: np.ndarray
    block_end: np.ndarray
    rows: LoopRows


def empty_loop_table(n_bodies: int, n_tangent: int) -> LoopTable:
    """The LoopTable of a map without loops (one array type for every model: the kernels compile once)."""
    ints, floats = np.zeros(0, dtype=np.int64), np.zeros(0)
    return LoopTable(np.zeros((0, 3), dtype=np.int64), np.zeros(1, dtype=np.int64), ints,
                     np.zeros(1, dtype=np.int64), ints, np.zeros(1, dtype=np.int64), floats, floats, 0.0, 0,
                     np.zeros((0, 5), dtype=np.int64), np.zeros((0, 1)), ints, ints, ints,
                     pack_loop_rows(np.zeros((n_bodies, n_tangent)), ()))


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


def _loop_resolvers(model) -> list | None:
    """The map's loop resolvers when the loop stage can solve them (every loop type with compiled rows, a fixed
    base or a root free base over 1-DOF joints), else None."""
    from biobullet.constraints.implicit import LoopResolver
    from biobullet.model.coordinates import ExplicitFunction

    cmap = model.coordinate_map
    if cmap.kind != "general" or any(type(r) not in (LoopResolver, ExplicitFunction) for r in cmap.resolvers):
        return None
    resolvers = [r for r in cmap.resolvers if type(r) is LoopResolver]
    if not resolvers or any(r.kernel_rows is None for r in resolvers) or not model.bodies:
        return None
    if joint_layout_tree(model) is None:
        return None
    if model.n_tangent != cmap.n_joints + model.base_nv or model.nq != len(cmap.independent) + model.base_nq:
        return None
    return resolvers


def pack_loop_table(model, ancestry: np.ndarray) -> tuple[LoopTable, tuple] | None:
    """(LoopTable, the joint-function table of the map's explicit functions in map order) of a map of loop
    resolvers and explicit joint functions the loop stage evaluates, or None (the callback stage serves)."""
    from biobullet.constraints.implicit import CONDITION_LIMIT, LoopResolver
    from biobullet.model.joint_jets import function_table

    resolvers = _loop_resolvers(model)
    if resolvers is None:
        return None
    cmap = model.coordinate_map
    table = function_table((r.output, r.inputs, r.function) for r in cmap.resolvers if type(r) is not LoopResolver)
    if table is None:
        return None
    stages, row = [], 0
    for r in cmap.resolvers:
        if type(r) is LoopResolver:
            stages.append([1, resolvers.index(r), 0])
        elif stages and stages[-1][0] == 0:
            stages[-1][2] = row = row + 1
        else:
            stages.append([0, row, row + 1])
            row += 1
    base_v = model.base_nv

    def starts(sizes) -> np.ndarray:
        return np.cumsum([0, *sizes]).astype(np.int64)

    def joined(parts, dtype=float) -> np.ndarray:
        return np.ascontiguousarray(np.concatenate(parts).astype(dtype))

    meta, body = joint_layout_tree(model)
    rows = pack_loop_rows(ancestry, (r.kernel_rows.kernel_set for r in resolvers))
    dep = [np.asarray(r.outputs, dtype=np.int64) + base_v for r in resolvers]
    blocks = [loop_set_blocks(rows, k, d) for k, d in enumerate(dep)]
    loops = LoopTable(
        np.array(stages, dtype=np.int64).reshape(-1, 3), starts(len(r.outputs) for r in resolvers),
        joined(dep, np.int64),
        starts(len(r.known) for r in resolvers),
        joined([np.asarray(r.known, dtype=np.int64) + base_v for r in resolvers], np.int64),
        starts(len(r.outputs) * len(r.known) for r in resolvers),
        joined([np.asarray(r.revolute, dtype=float) for r in resolvers]),
        np.array([r.residual_tolerance for r in resolvers], dtype=float), float(CONDITION_LIMIT),
        model.base_nq - base_v, np.ascontiguousarray(meta), np.ascontiguousarray(body),
        *(joined([b[i] for b in blocks], np.int64) for i in range(3)), rows)
    return loops, table


def compile_model(model) -> CompiledModel:
    """The model's compiled arrays (module docstring). Joint kinds outside `TREE_JOINTS` are rejected by the
    tree builder already."""
    from biobullet.algorithms.vectorized import tree_arrays
    from biobullet.model.joint_jets import explicit_table

    ancestry = np.ascontiguousarray(tree_arrays(model).ancestry)
    table = explicit_table(model.coordinate_map)
    loops = empty_loop_table(len(model.bodies), model.n_tangent)
    if table is None:
        packed = pack_loop_table(model, ancestry)
        if packed is not None:
            loops, table = packed
    state_stage = COMPILED_STATE if table is not None else CALLBACK_STATE
    if table is None:
        table = (np.zeros((0, 6), dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))
    parents = tangent_parents(model)
    # identity: v is ẋ itself, in tree order (a `<coordinates>` order that permutes the joints is a PROJECTED map)
    identity = (state_stage == COMPILED_STATE and table[0].shape[0] == 0 and loops.stages.shape[0] == 0
                and model.nv == model.n_tangent and model.coordinate_map.identity)
    meta, body = model.tree_pack
    arrays = CompiledModel(
        model.nq, model.nv, model.base_nq, model.base_nv, model.n_config, model.n_tangent, state_stage,
        _identity_solver(parents) if identity else PROJECTED, multi_dof_blocks(model.bodies),
        np.array(model.coordinate_map.independent, dtype=np.int64), meta, body,
        np.array(model.gravity, dtype=float), ancestry, parents,
        mass_floor_root(direction_mass_bounds(model.bodies, ancestry)),
        np.ascontiguousarray(table[0]), np.ascontiguousarray(table[1]), np.ascontiguousarray(table[2], dtype=float),
        loops)
    return arrays   # not flagged read-only: numba would compile every callee again for read-only array types
