"""The loop stage's Newton solve (`_loop_newton_py`): one loop resolver's dependent joints, G, θ̇ and γ in one
compiled call, warm-started from the loop warm starts (`LoopWarm`), and the Newton constants the generic resolver
(`constraints.implicit.LoopResolver`) shares.

The Newton solve itself is `_newton_solve_py`, written once: the loop stage calls it compiled (a call, not inlined: inlined, its IR was
typed and optimised again in every pipeline variant that reached it, ≈ 20 s of CPU each), so do the trajectory
output's pass and the generic resolver (`LoopResolver.solve`), or as its Python form with the resolver's
own residual for loop types without compiled rows; what stays Python there is policy around the one call
(prediction, continuation in substeps, a workspace's first solve and its anchor, error messages). Every caller
passes one loop record (`loop_record`: the loop table's constants, the warm starts and the work arrays as the
flat fields of one `core.jit_pair` record, built once per workspace or resolver), so a solve allocates nothing and
a call between kernels passes one pointer, not tuples of ≈ 50 arrays. The loop stage declines (status 1, θ_dep
restored, the warm start unchanged) wherever the generic resolver would continue or raise (a large input change
needing continuation, no convergence, an ill-conditioned loop), and the caller hands that state to the callback
stage.

Warm starts have one owner: a `LoopWarm` record. A Data holds one for its loop stage, and the generic resolvers
read and write the entries of the workspace they are bound to (`LoopResolver.use_warm`), so the compiled stage and
the callback stage continue each other's branch without copying.
"""
from __future__ import annotations

from collections import namedtuple
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np

from biobullet.constraints.loop_kernels import LOOP_ROWS_FIELDS
from biobullet.core import jit

NEWTON_MAX_ITERATIONS = 50
STEP_TOLERANCE = 1e-13   # rad (or m): a Newton step this small has converged to round-off
CONTINUATION_STEP = 0.1  # rad (or m): input change above which the first Newton step is checked (continuation)
KANTOROVICH = 0.25       # cond₁(Φ_dep)·‖first Newton step‖₁ above which a large input change uses continuation
#: longest Newton step (rad or m, ∞-norm): a step beyond it is shortened (damping; converging steps are far below)
NEWTON_STEP_LIMIT = 0.5
#: Newton stops when a dependent coordinate moves farther than this from the prediction (rad or m): a solution
#: that far away is another branch (or none), not the continuation of this one
NEWTON_REACH = float(np.pi)
#: cond₁(Φ_dep) of the cached solution above which a prediction farther than NEWTON_REACH from it is not trusted:
#: beside a toggle the sensitivity −Φ_dep⁻¹ Φ_kn is huge and its linear prediction lands hundreds of rad away (two
#: loops sharing a link: r2_j −165 rad), from where Newton diverges or converges wound by 2π·k. The bundled and test
#: loops stay at cond ≤ 40 away from their toggles, where the prediction is unchanged.
PREDICTION_CONDITION = 1e3
#: rad or m: the rate pass takes the bodies' placements of the last residual where no joint has moved farther since
#: (the solve's last correction, ≈ cond₁ · round-off of Φ; a few ulp of the joint): placements that far apart are
#: round-off of each other, so the pass computes only the bodies' velocities from them (`_loop_newton_py`). 1e-15
#: was below the prosthesis's corrections (up to 3.2e-15 rad along a walk: 9 of 99 states took the placements,
#: the rest placed its bodies again); 1e-14 is ≈ 45 ulp of a joint at 1 rad, still round-off of the placements
PLACED_ROUND_OFF = 1e-14
#: `_newton_solve_py` statuses: solved, or why it stopped
CONVERGED, GUARD, SINGULAR, ITERATION_LIMIT, ZERO_STEP, NO_DESCENT, LEFT_REACH = 0, 1, 2, 3, 4, 5, 6


class LoopWarm(NamedTuple):
    """Loop warm starts (module docstring), views of one buffer `values` (a snapshot is one copy): per resolver k,
    its known and dependent slices (`known0`, `u0`, `anchor`; `dep0`, `h0`) at known_start[k], dep_start[k], its
    sensitivity −Φ_dep⁻¹ Φ_known (row-major) at sensitivity_start[k], and one entry of `condition` (cond₁ Φ_dep),
    `loose` (residual accepted while an integration runs, −1: converge to round-off), `valid`, `curved`,
    `anchored` (1.0 / 0.0). The anchor is this record's own first solution (a run's initial state, a workspace's
    first call: `LoopResolver.solve`), not the model's: `anchor` its known joints, from which continuation starts
    where it is nearer than the warm start (the loop stage declines there, `_loop_newton_py`, and the generic
    resolver continues from it); `anchor_dep`, `anchor_sensitivity`, `anchor_condition` the rest of it, which only
    the generic resolver reads (after `_WARM_FIELDS`: not in the loop record)."""

    values: np.ndarray
    known0: np.ndarray
    dep0: np.ndarray
    sensitivity: np.ndarray
    u0: np.ndarray
    h0: np.ndarray
    anchor: np.ndarray
    condition: np.ndarray
    loose: np.ndarray
    valid: np.ndarray
    curved: np.ndarray
    anchored: np.ndarray
    known_start: np.ndarray
    dep_start: np.ndarray
    sensitivity_start: np.ndarray
    anchor_dep: np.ndarray
    anchor_sensitivity: np.ndarray
    anchor_condition: np.ndarray


def loop_warm(known_start: np.ndarray, dep_start: np.ndarray, sensitivity_start: np.ndarray) -> LoopWarm:
    """Empty warm starts for resolvers with these slices (a LoopTable's, or one resolver's own)."""
    n_known, n_dep = int(known_start[-1]), int(dep_start[-1])
    n_resolvers = dep_start.shape[0] - 1
    n_sensitivity = int(sensitivity_start[-1])
    sizes = (n_known, n_dep, n_sensitivity, n_known, n_dep, n_known, *(n_resolvers,) * 5,
             n_dep, n_sensitivity, n_resolvers)   # (the anchor's rest last: the record's views keep their offsets)
    values = np.zeros(sum(sizes))
    views, start = [], 0
    for size in sizes:
        views.append(values[start:start + size])
        start += size
    warm = LoopWarm(values, *views[:11], *(np.array(a, dtype=np.int64) for a in
                                           (known_start, dep_start, sensitivity_start)), *views[11:])
    warm.loose[:] = -1.0
    return warm


class NewtonWork(NamedTuple):
    """The Newton solve's work arrays for loop sets of at most n_rows rows (= dependent joints) and n_known known
    joints over a joint layout of `width` (`newton_work`)."""

    rot: np.ndarray          # (n_bodies, 3, 3) the residual's tree kinematics
    pos: np.ndarray          # (n_bodies, 3)
    sub: np.ndarray          # (6, width): starts at zero, each body writes only its own columns
    vel: np.ndarray          # (n_bodies, 6) the rate pass's body velocities and bias accelerations
    acc: np.ndarray          # (n_bodies, 6)
    loc: np.ndarray          # (3, 3)
    jr: np.ndarray           # (3, 3)
    no_motion: np.ndarray    # (1, 6)
    phi: np.ndarray          # (n_rows,) Φ
    jac: np.ndarray          # (n_rows, width) Φ_θ
    bias: np.ndarray         # (n_rows,) the rows' bias b (`_loop_newton_py`'s rate pass)
    rows_work: np.ndarray    # (6, 2, 3) the rows kernel's work (`loop_kernels._loop_rows_into_py`)
    jl: np.ndarray           # (2, 3, width) the points' Jacobians
    matrix: np.ndarray       # (n_rows, n_rows) the Newton matrix (`_newton_solve_py`)
    factor: np.ndarray       # (n_rows, n_rows) Φ_dep⁻¹
    solved: np.ndarray       # (n_rows, n_rows) Φ_dep⁻¹ in the blocks' order (`_newton_solve_py`)
    step: np.ndarray         # (n_rows, 1) the step
    point: np.ndarray        # (n_rows,) the point a step starts from
    keys: np.ndarray         # (n_sets, width) the kept fixed points' joint layouts (`_keep_fixed_point_py`)
    inverses: np.ndarray     # (n_sets, n_rows, n_rows) their Φ_dep⁻¹
    jacobians: np.ndarray    # (n_sets, n_rows, n_known) their Φ_kn
    fixed: np.ndarray        # (n_sets, 2) (kept, cond₁)
    scratch: np.ndarray      # (6 n_rows + 3 n_known,) `_loop_newton_py`'s small vectors
    jk: np.ndarray           # (n_rows · n_known,) `_loop_newton_py`'s Φ_kn
    placed: np.ndarray       # (width,) the joint layout rot, pos, sub were placed at (NaN: not yet)


def newton_work(n_bodies: int, n_rows: int, width: int, n_sets: int = 0, n_known: int = 0) -> NewtonWork:
    """The Newton solve's work arrays (`NewtonWork`), allocated once by each caller (a Data, a resolver): no solve
    allocates."""
    return NewtonWork(np.empty((n_bodies, 3, 3)), np.empty((n_bodies, 3)), np.zeros((6, width)),
                      np.zeros((n_bodies, 6)), np.zeros((n_bodies, 6)), np.empty((3, 3)),
                      np.empty((3, 3)), np.zeros((1, 6)), np.zeros(n_rows), np.zeros((n_rows, width)),
                      np.zeros(n_rows), np.zeros((6, 2, 3)), np.zeros((2, 3, width)), np.zeros((n_rows, n_rows)),
                      np.zeros((n_rows, n_rows)), np.zeros((n_rows, n_rows)), np.zeros((n_rows, 1)), np.zeros(n_rows),
                      np.zeros((n_sets, width)),
                      np.zeros((n_sets, n_rows, n_rows)), np.zeros((n_sets, n_rows, n_known)), np.zeros((n_sets, 2)),
                      np.zeros(6 * n_rows + 3 * n_known), np.zeros(n_rows * n_known), np.full(width, np.nan))


#: the loop table's fields (`pipeline.compiled_model.LoopTable`) but its rows, in its order
LOOP_TABLE_FIELDS = ("stages", "dep_start", "dep", "known_start", "known", "sensitivity_start", "revolute",
                     "tolerance", "condition_limit", "view_start", "meta", "body", "block_rows", "block_dep",
                     "block_end")
#: the loop stage's constants, flat: a loop table's fields but its rows, then its rows' (`loop_kernels.LoopRows`:
#: the rows kernels read the loop record as their rows)
LoopFields = namedtuple("LoopFields", LOOP_TABLE_FIELDS + LOOP_ROWS_FIELDS)
#: the LoopWarm fields the loop record holds (the slices' starts are the LoopFields')
_WARM_FIELDS = LoopWarm._fields[:12]
#: what the loop stage writes, flat: a LoopWarm's buffers (`_WARM_FIELDS`), then a NewtonWork's arrays
LoopBuffers = namedtuple("LoopBuffers", _WARM_FIELDS + NewtonWork._fields)


def loop_parts(table: tuple, warm: LoopWarm, work: NewtonWork) -> tuple[LoopFields, LoopBuffers]:
    """The two halves of a loop record (`loop_record`): a loop table's constants (`table`: a LoopTable, or a
    resolver's own table of one loop set in its order — the LoopRows last), then the warm starts' buffers and the
    Newton work arrays."""
    return (LoopFields(*table[:-1], *table[-1]),
            LoopBuffers(*(getattr(warm, name) for name in _WARM_FIELDS), *work))


def loop_namespace(parts: tuple[LoopFields, LoopBuffers]) -> SimpleNamespace:
    """The fields of `loop_parts` as a namespace: the loop record the kernels' Python forms read (numba off, a run's
    uncompiled start, the solve over a plug-in loop type's residual), built without numba."""
    return SimpleNamespace(**parts[0]._asdict(), **parts[1]._asdict())


def loop_record(parts: tuple[LoopFields, LoopBuffers]):
    """The loop record of `loop_parts`: their fields as one flat `core.jit_pair` record — what the loop Newton
    (`_loop_newton_py`), the solve and its residual take as one argument and read field by field (tuples of ≈ 50
    arrays passed from kernel to kernel took and released a reference on every array at every call level: ≈ 700
    reference-count calls per four-bar call). The record borrows the arrays (`core.jit_pair.borrow_pair`): the
    caller keeps `parts` alive as long as the record. Where kernels run uncompiled (numba off, or inside
    `core.jit.uncompiled()`) a namespace of the same arrays, which their Python forms read."""
    from biobullet.core.jit_pair import pack_record
    return pack_record(*parts, borrowed=True)[0]


def _block_solve_into_py(a, x, ends):
    """Solve a x = b (b: n × m, in x on entry) in place for a block lower triangular a (`ends[p]`: the end of the
    diagonal block holding row and column p, `solve_blocks`; one block of n: a dense a) by block forward
    substitution, each diagonal block by Gaussian elimination with partial pivoting within it: a is overwritten by
    its elimination, x by the solution; returns ok (False if a diagonal block — so a — is singular, x then
    undefined). The entries above the diagonal blocks are not read: they must be zero. With one block this is the
    dense elimination, operation for operation."""
    n = a.shape[0]
    m = x.shape[1]
    r0 = 0
    while r0 < n:
        r1 = ends[r0]
        for i in range(r0, r1):   # the blocks solved before: x[i] −= a[i, j] x[j]
            for j in range(r0):
                f = a[i, j]
                if f != 0.0:
                    for c in range(m):
                        x[i, c] -= f * x[j, c]
        for k in range(r0, r1):
            p = k
            big = abs(a[k, k])
            for i in range(k + 1, r1):
                if abs(a[i, k]) > big:
                    big, p = abs(a[i, k]), i
            if big == 0.0:
                return False
            if p != k:
                for j in range(r0, r1):   # (the blocks before are read no more)
                    a[k, j], a[p, j] = a[p, j], a[k, j]
                for j in range(m):
                    x[k, j], x[p, j] = x[p, j], x[k, j]
            for i in range(k + 1, r1):
                f = a[i, k] / a[k, k]
                if f != 0.0:
                    for j in range(k + 1, r1):
                        a[i, j] -= f * a[k, j]
                    for j in range(m):
                        x[i, j] -= f * x[k, j]
        for k in range(r1 - 1, r0 - 1, -1):
            for j in range(m):
                s = x[k, j]
                for i in range(k + 1, r1):
                    s -= a[k, i] * x[i, j]
                x[k, j] = s / a[k, k]
        r0 = r1
    return True


def dense_blocks(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The block order of `solve_blocks` for a matrix of n rows eliminated as one dense block, in its own order."""
    return np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64), np.full(n, n, dtype=np.int64)


#: the largest Φ_dep whose block structure is searched (`solve_blocks`); a larger loop set (a file may hold 2,000
#: joints) is eliminated as one dense block, as before the block order — its structure search would recurse deeper
#: than Python's stack allows
BLOCK_SEARCH_LIMIT = 256


def solve_blocks(pattern: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row order, column order, block ends) that make a square matrix of this structure (`pattern` (n, n) bool:
    where an entry may be non-zero) block lower triangular with the finest diagonal blocks (Dulmage–Mendelsohn:
    a matching of rows to columns, then the strongly connected components of the rows' dependence, each block
    after the blocks it reads): `_block_solve_into_py` of a[p, q] = Φ[rows[p], cols[q]] with `ends[p]` the end
    of p's block. One dense block in the given order where there is no finer one or no structural matching (a
    singular structure)."""
    n = pattern.shape[0]
    if n > BLOCK_SEARCH_LIMIT:   # (the matching and Tarjan's search recurse up to n deep: Python's stack)
        return dense_blocks(n)
    match = np.full(n, -1, dtype=np.int64)   # column c → its row

    def augment(r: int, seen: np.ndarray) -> bool:
        for c in np.flatnonzero(pattern[r]):
            if not seen[c]:
                seen[c] = True
                if match[c] < 0 or augment(int(match[c]), seen):
                    match[c] = r
                    return True
        return False

    if not all(augment(r, np.zeros(n, dtype=bool)) for r in range(n)):
        return dense_blocks(n)
    column_of = np.empty(n, dtype=np.int64)
    column_of[match] = np.arange(n)
    # row r reads the column matched to row s: s's block first (Tarjan emits a component after those it reaches)
    reads = [[int(match[c]) for c in np.flatnonzero(pattern[r]) if match[c] != r] for r in range(n)]
    index, low, on_stack, stack, blocks = {}, {}, set(), [], []

    def connect(r: int) -> None:
        index[r] = low[r] = len(index)
        stack.append(r)
        on_stack.add(r)
        for s in reads[r]:
            if s not in index:
                connect(s)
                low[r] = min(low[r], low[s])
            elif s in on_stack:
                low[r] = min(low[r], index[s])
        if low[r] == index[r]:
            block = []
            while True:
                s = stack.pop()
                on_stack.discard(s)
                block.append(s)
                if s == r:
                    break
            blocks.append(sorted(block))

    for r in range(n):
        if r not in index:
            connect(r)
    if len(blocks) == 1:   # no structure: the given order (the dense elimination as before, bit for bit)
        return dense_blocks(n)
    # (rows and columns in their given order within a block: the block's elimination pivots as it would alone)
    rows = np.array([r for block in blocks for r in block], dtype=np.int64)
    cols = np.array([c for block in blocks for c in sorted(column_of[block])], dtype=np.int64)
    ends = np.array([end for block, end in zip(blocks, np.cumsum([len(b) for b in blocks])) for _ in block],
                    dtype=np.int64)
    return rows, cols, ends


def loop_set_blocks(rows, k: int, dep: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`solve_blocks` of loop set k's Φ_dep (`rows`: a LoopRows; `dep`: the set's dependent joints, joint-layout
    indices): a row reads the joints that move either of its loop's two bodies (`ancestry`; the rows kernel
    multiplies every other column by a zero of the ancestry, so those entries are exact zeros). Andrews'
    squeezer's three planar loops: three 2 × 2 blocks instead of one 6 × 6 elimination. One dense block where the
    rows are not as many as the dependent joints."""
    nd = dep.shape[0]
    l0, l1 = int(rows.loop_start[k]), int(rows.loop_start[k + 1])
    n_rows, n_l = int(rows.n_rows[k]), l1 - l0
    if n_rows != nd:
        return dense_blocks(nd)
    pattern = np.zeros((nd, nd), dtype=bool)
    for l in range(l0, l1):
        first = int(rows.row_start[l])
        last = int(rows.row_start[l + 1]) if l + 1 < l1 else n_rows
        for point in (2 * l0 + (l - l0), 2 * l0 + (l - l0) + n_l):
            b = int(rows.point_body[point])
            if b >= 0:
                pattern[first:last] |= rows.ancestry[b, dep] != 0.0
    return solve_blocks(pattern)


def _dependent_part_into_py(inverse, jk, known_values, extra, tmp, out):
    """−Φ_dep⁻¹ (Φ_kn v_kn + extra) into `out` (nd; `tmp`: nd of work): the dependent joints' share of a
    derivative (G column, θ̇, γ) from the known joints' (`inverse` = Φ_dep⁻¹, `jk` = Φ_kn)."""
    nd, nk = jk.shape
    for i in range(nd):
        s = extra[i]
        for j in range(nk):
            s += jk[i, j] * known_values[j]
        tmp[i] = s
    for i in range(nd):
        s = 0.0
        for k in range(nd):
            s += inverse[i, k] * tmp[k]
        out[i] = -s


def _loop_residual_into_py(loop, k, theta):
    """(Φ, Φ_θ) of loop set k at the joint layout theta (positions only: tree kinematics, then rows) into the loop
    record's work arrays (`loop_record`; the rows kernel reads the record as its rows); Φ, Φ_θ are views of them,
    valid until the next call."""
    meta, body, rot, pos, sub, no_motion = loop.meta, loop.body, loop.rot, loop.pos, loop.sub, loop.no_motion
    loc, jr = loop.loc, loop.jr
    n = loop.n_rows[k]
    phi, jac = loop.phi[:n], loop.jac[:n]
    for b in range(meta.shape[0]):
        _PLACE_BODY(meta, body, theta, b, loc, jr, rot, pos, sub)
    placed = loop.placed
    for j in range(theta.shape[0]):
        placed[j] = theta[j]
    _ROWS_INTO(loop, k, (rot, pos, sub, no_motion, no_motion), bool(True), bool(False),
               (phi, jac, loop.bias, loop.rows_work, loop.jl))
    return phi, jac


def _norm_py(x):
    """|x|₂ of a vector without a temporary array."""
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i] * x[i]
    return np.sqrt(total)


def _newton_solve_py(loop, k, theta, guess, loose, guard_condition):
    """The loop Newton solve, written once (the pipeline's loop stage and the generic resolver both run it):
    θ_dep = `guess` into theta, then damped Newton on Φ(θ) = 0 (`_RESIDUAL(loop, k, theta)`; a step is at most
    NEWTON_STEP_LIMIT long, then halved until |Φ| decreases) and, converged, the factor Φ_dep⁻¹, its 1-norm
    condition, one last correction with it and the 2π wrapping of revolute dependents onto the prediction's branch.
    `loop`: a loop record (`loop_record`), of which loop set k is solved (its dependent joints dep, joint-layout
    indices; revolute, 1.0 per wrapped dependent; its tolerance), in the record's work arrays. Φ_dep is eliminated
    in the set's block lower triangular order (`block_rows`, `block_dep`, `block_end`: `loop_set_blocks`), block
    by block (`_block_solve_into_py`: loops that decouple cost their small blocks, not one dense elimination). `loose` ≥ 0:
    residual accepted at once (an integration's tolerance), else −1. `guard_condition`
    ≥ 0: the Kantorovich test of a large input change — status GUARD when cond₁ · ‖first step‖₁ exceeds
    KANTOROVICH (or the first step is singular). Returns (status, iterations, |Φ|, Φ_θ, Φ_dep⁻¹, cond₁):
    status CONVERGED (θ_dep solved; cond₁ = ∞ and Φ_dep⁻¹ NaN where the factor is singular), or GUARD, SINGULAR,
    ITERATION_LIMIT, ZERO_STEP, NO_DESCENT, LEFT_REACH (θ_dep where it stopped; the caller decides)."""
    d0, d1 = loop.dep_start[k], loop.dep_start[k + 1]
    dep, revolute, tolerance = loop.dep[d0:d1], loop.revolute[d0:d1], loop.tolerance[k]
    # Φ_dep in its block lower triangular order (`loop_set_blocks`): row block_rows[p], joint dep[block_dep[q]]
    order_rows, order_dep, ends = loop.block_rows[d0:d1], loop.block_dep[d0:d1], loop.block_end[d0:d1]
    nd = d1 - d0
    for i in range(nd):
        theta[dep[i]] = guess[i]
    phi, jac = _RESIDUAL(loop, k, theta)
    norm = _norm(phi)
    # already at round-off (e.g. the same inputs again, or an exact prediction): no step needed
    step_norm = 0.0 if norm <= 1e-3 * tolerance else np.inf
    guard = guard_condition >= 0.0
    # the record's Newton matrix, factor, step and base point, cut to this loop set (views: no reshape call)
    a, inverse, rhs, base = loop.matrix[:nd, :nd], loop.factor[:nd, :nd], loop.step[:nd], loop.point[:nd]
    solved = loop.solved[:nd, :nd]
    status, iterations = ITERATION_LIMIT, 0
    for iterations in range(1, NEWTON_MAX_ITERATIONS + 1):
        if norm <= tolerance and step_norm <= 1e-7:
            break   # quadratic convergence: the error left is ~ step², below round-off
        if loose >= 0.0 and norm <= loose:
            break   # integration tolerance: the last correction below takes the error to O(|Φ|²)
        for p in range(nd):
            r = order_rows[p]
            for q in range(nd):
                a[p, q] = jac[r, dep[order_dep[q]]]
            rhs[p, 0] = phi[r]
        ok = _block_solve_into(a, rhs, ends)   # rhs becomes the step (of joint dep[order_dep[p]] at p)
        total, step_max = 0.0, 0.0
        for i in range(nd):
            total += abs(rhs[i, 0])
            step_max = max(step_max, abs(rhs[i, 0]))
        if not ok or not np.isfinite(total):
            status = GUARD if guard else SINGULAR
            break
        if guard and not guard_condition * total <= KANTOROVICH:
            status = GUARD
            break
        guard = False
        if step_max == 0.0:   # |Φ| above tolerance but a zero step: a joint 1e6 m out makes Φ round off
            status = ZERO_STEP
            break
        scale = min(1.0, NEWTON_STEP_LIMIT / step_max)
        for i in range(nd):
            base[i] = theta[dep[i]]
        while True:   # backtracking keeps Newton from jumping branches far from the solution
            for p in range(nd):
                i = order_dep[p]
                theta[dep[i]] = base[i] - scale * rhs[p, 0]
            phi_new, jac_new = _RESIDUAL(loop, k, theta)
            norm_new = _norm(phi_new)
            if norm_new < norm or scale < 1e-3 or norm_new <= tolerance:
                break
            scale *= 0.5
        if not (norm_new < norm or norm_new <= tolerance):
            for i in range(nd):   # no descent along the Newton direction: stop where |Φ| was smallest
                theta[dep[i]] = base[i]
            # Φ, Φ_θ of this point again (a residual into buffers, `_loop_residual_into_py`, overwrote them)
            phi, jac = _RESIDUAL(loop, k, theta)
            status = NO_DESCENT
            break
        reach = 0.0
        for i in range(nd):
            reach = max(reach, abs(theta[dep[i]] - guess[i]))
        if reach > NEWTON_REACH:
            status = LEFT_REACH
            break
        phi, jac, norm = phi_new, jac_new, norm_new
        step_norm = scale * step_max
        if step_norm <= STEP_TOLERANCE:
            break
    condition = np.inf
    if not (norm <= tolerance or (loose >= 0.0 and norm <= loose)):
        inverse[:, :] = np.nan
        return status, iterations, norm, jac, inverse, condition
    col_a = 0.0
    for q in range(nd):
        sa = 0.0
        j = dep[order_dep[q]]
        for p in range(nd):
            a[p, q] = jac[order_rows[p], j]
            sa += abs(a[p, q])
        col_a = max(col_a, sa)
    solved[:, :] = 0.0
    for i in range(nd):
        solved[i, i] = 1.0
    if _block_solve_into(a, solved, ends):
        # a⁻¹ of a[p, q] = Φ_dep[rows[p], dep[q]]: Φ_dep⁻¹[dep[q], rows[p]] = a⁻¹[q, p]
        for q in range(nd):
            for p in range(nd):
                inverse[order_dep[q], order_rows[p]] = solved[q, p]
        col_i = 0.0
        for j in range(nd):
            si = 0.0
            for i in range(nd):
                si += abs(inverse[i, j])
            col_i = max(col_i, si)
        if np.isfinite(col_a * col_i):
            condition = col_a * col_i
    if not condition < np.inf:
        inverse[:, :] = np.nan   # singular: no factor
    if condition < np.inf:
        # the last correction with this factor (no new evaluation): the residual is already at round-off, the
        # correction takes the error from O(|Φ|) to O(|Φ|²)
        for i in range(nd):
            s = 0.0
            for j in range(nd):
                s += inverse[i, j] * phi[j]
            theta[dep[i]] -= s
    for i in range(nd):   # angle wrapping: stay on the 2π-branch of the prediction (continuous joints)
        if revolute[i] != 0.0:
            theta[dep[i]] -= 2 * np.pi * np.round((theta[dep[i]] - guess[i]) / (2 * np.pi))
    return CONVERGED, iterations, norm, jac, inverse, condition


def _keep_fixed_point_py(loop, k, theta, small, inverse, jk, condition):
    """Loop set k's entry of the loop record's fixed points (`NewtonWork.keys` … `fixed`) after a converged
    solve: set where the solve's last residual was at most 1e-3 of the tolerance — the solve stopped there without
    a step, and its last correction moved θ_dep by at most cond₁ · 1e-3 of the tolerance — to the joint layout
    after that correction (the key), with the factor Φ_dep⁻¹, Φ_kn and cond₁ of that residual's point; cleared otherwise. A call at the
    key takes them instead of solving: a solve there would stop at once too and use Φ_θ of a point that far
    apart, so G, θ̇ and γ agree with a solve's to round-off."""
    fixed = loop.fixed
    fixed[k, 0] = 1.0 if small else 0.0
    if small:
        keys, inverses, jacobians = loop.keys, loop.inverses, loop.jacobians
        nd, nk = jk.shape
        for j in range(theta.shape[0]):
            keys[k, j] = theta[j]
        for i in range(nd):
            for m in range(nd):
                inverses[k, i, m] = inverse[i, m]
            for j in range(nk):
                jacobians[k, i, j] = jk[i, j]
        fixed[k, 1] = condition


def _loop_newton_py(loop, k, theta, rate, gradient, gamma, rates):
    """Loop resolver k of the loop record `loop` (`loop_record`: a LoopTable's constants, the warm starts, the work
    arrays): θ_dep, G_dep, θ̇_dep, γ_dep into theta, gradient, rate, gamma (the loop kernels' joint layout: joint j
    at base_v + j; the known joints set) by the Newton solve (`_newton_solve_py`, in the record's work arrays)
    from the second-order prediction of warm start k, Kantorovich-guarded at input changes above
    CONTINUATION_STEP. The record's fields are read once each, into local names (a field read takes and drops a
    reference, ≈ 3 ns a pair). 0, and the
    warm start moved to the new solution; or 1 (θ_dep restored, the warm start unchanged) where the generic
    resolver must decide (continuation, the declared initial solution, an error naming the loop). `rates` False
    (the mass-matrix call, whose rates are zero): θ_dep and G only — no θ̇_dep, no rate pass, γ_dep left as it
    is, and the warm start's curvature the secant one along this call's input change (`secant_curvature_py`)."""
    if loop.valid[k] == 0.0:
        return 1
    dep_start, known_start = loop.dep_start, loop.known_start
    d0, d1 = dep_start[k], dep_start[k + 1]
    k0, k1 = known_start[k], known_start[k + 1]
    s0 = loop.sensitivity_start[k]
    dep, known = loop.dep[d0:d1], loop.known[k0:k1]
    nd, nk, nq = d1 - d0, k1 - k0, gradient.shape[1]
    tolerance, loose, warm_condition = loop.tolerance[k], loop.loose[k], loop.condition[k]
    known0, dep0, sensitivity, u0, h0 = loop.known0, loop.dep0, loop.sensitivity, loop.u0, loop.h0
    # every small vector of this call in the record's scratch (each allocation ≈ 0.05 µs: ≈ 15 of them were a
    # third of the four-bar's loop stage)
    scratch = loop.scratch
    saved, guess, tmp, part, h, no_extra = (scratch[:nd], scratch[nd:2 * nd], scratch[2 * nd:3 * nd],
                                            scratch[3 * nd:4 * nd], scratch[4 * nd:5 * nd], scratch[5 * nd:6 * nd])
    delta, values, no_known = (scratch[6 * nd:6 * nd + nk], scratch[6 * nd + nk:6 * nd + 2 * nk],
                               scratch[6 * nd + 2 * nk:6 * nd + 3 * nk])
    for i in range(nd):
        saved[i] = theta[dep[i]]
    # input change: above CONTINUATION_STEP the Kantorovich test of `solve` guards the first step, and where the
    # record's anchor (its own first solution) is nearer, the generic resolver continues from there
    jump, anchor_jump = 0.0, 0.0
    for j in range(nk):
        delta[j] = theta[known[j]] - known0[k0 + j]
        jump = max(jump, abs(delta[j]))
    guard = jump > CONTINUATION_STEP
    if guard and loop.anchored[k] != 0.0:
        anchor = loop.anchor
        for j in range(nk):
            anchor_jump = max(anchor_jump, abs(theta[known[j]] - anchor[k0 + j]))
        if anchor_jump < jump:
            return 1
    # prediction: first order from the cached solution, second order along the cached known rate u0
    for i in range(nd):
        s = dep0[d0 + i]
        for j in range(nk):
            s += sensitivity[s0 + i * nk + j] * delta[j]
        guess[i] = s
    if loop.curved[k] != 0.0 and nk > 0:
        uu, ud = 0.0, 0.0
        for j in range(nk):
            uu += u0[k0 + j] * u0[k0 + j]
            ud += u0[k0 + j] * delta[j]
        along = ud / uu
        for i in range(nd):
            guess[i] += 0.5 * along * along * h0[d0 + i]
    # beside a toggle (PREDICTION_CONDITION) a prediction out of reach is the generic resolver's, which shortens it
    if warm_condition > PREDICTION_CONDITION:
        for i in range(nd):
            if abs(guess[i] - dep0[d0 + i]) > NEWTON_REACH:
                return 1
    # a kept solution of the last solve (`_keep_fixed_point_py`): the joint layout with θ_dep = guess is its key,
    # bit for bit (the same inputs again: the guess is the last solution), so its factor is taken instead of a
    # solve that would stop at once there. Only in the public calls' variant (`_FIXED_POINTS` bound True): a run's
    # states never repeat
    jk = loop.jk[:nd * nk].reshape((nd, nk))
    hit = False
    if _FIXED_POINTS:
        keys, fixed = loop.keys, loop.fixed
        # (a new state — the known joints moved since the warm start, which a kept solution updates — is not
        # compared: a kept solution that the generic resolver's warm start left behind is not taken then, a solve is)
        hit = jump == 0.0 and k < fixed.shape[0] and fixed[k, 0] != 0.0
        if hit:
            for i in range(nd):
                theta[dep[i]] = guess[i]
            for j in range(theta.shape[0]):
                if theta[j] != keys[k, j]:
                    hit = False
                    break
    if hit:
        inverse, condition = loop.inverses[k, :nd, :nd], loop.fixed[k, 1]
        jacobians = loop.jacobians
        for i in range(nd):
            for j in range(nk):
                jk[i, j] = jacobians[k, i, j]
    else:
        status, _, norm, jac, inverse, condition = _NEWTON_SOLVE(loop, k, theta, guess, loose,
                                                                 warm_condition if guard else -1.0)
        if status != CONVERGED or not condition < loop.condition_limit:
            for i in range(nd):
                theta[dep[i]] = saved[i]
            return 1
        for i in range(nd):
            for j in range(nk):
                jk[i, j] = jac[i, known[j]]
        if _FIXED_POINTS and k < loop.fixed.shape[0]:
            _keep_fixed_point(loop, k, theta, norm <= 1e-3 * tolerance, inverse, jk, condition)
    # G, θ̇ (−Φ_dep⁻¹ (Φ_kn x_kn), the order of `resolve`), then γ from one kinematics pass with rates
    no_extra[:] = 0.0
    no_known[:] = 0.0
    for c in range(nq):
        for j in range(nk):
            values[j] = gradient[known[j], c]
        _dependent_part_into(inverse, jk, values, no_extra, tmp, part)
        for i in range(nd):
            gradient[dep[i], c] = part[i]
    if rates:
        for j in range(nk):
            values[j] = rate[known[j]]
        _dependent_part_into(inverse, jk, values, no_extra, tmp, part)
        for i in range(nd):
            rate[dep[i]] = part[i]
        # the rows' bias b into the work arrays (Φ_θ not asked: `jac` above is not overwritten), from the tree
        # kinematics with rates into the record's arrays: the bodies' velocities on the last residual's placements
        # where θ is that residual's to round-off (PLACED_ROUND_OFF: the solve's last correction, or the same state
        # again), else placements too (bool(): not a literal, so the kinematics kernel keeps one specialisation)
        n_rows = loop.n_rows[k]
        bias = loop.bias[:n_rows]
        rot, pos, sub, vel, acc, placed = loop.rot, loop.pos, loop.sub, loop.vel, loop.acc, loop.placed
        near = True
        for j in range(theta.shape[0]):
            if not abs(theta[j] - placed[j]) <= PLACED_ROUND_OFF:   # (NaN: never placed)
                near = False
                break
        if near:
            _BODY_RATES(loop.meta, rate, sub, vel, acc)
        else:
            _KIN_INTO(loop.meta, loop.body, theta, rate, bool(True), rot, pos, sub, vel, acc, loop.loc, loop.jr)
            for j in range(theta.shape[0]):
                placed[j] = theta[j]
        _ROWS_INTO(loop, k, (rot, pos, sub, vel, acc), bool(False), bool(True),
                   (loop.phi[:n_rows], loop.jac[:n_rows], bias, loop.rows_work, loop.jl))
        # −Φ_dep⁻¹ b: the curvature of the new solution
        _dependent_part_into(inverse, jk, no_known, bias, tmp, h)
        for j in range(nk):
            values[j] = gamma[known[j]]
        _dependent_part_into(inverse, jk, values, bias, tmp, part)
        for i in range(nd):
            gamma[dep[i]] = part[i]
    # the new warm start: (θ_known, θ_dep, sensitivity −Φ_dep⁻¹ Φ_kn, condition), the curvature along a direction
    # u of the known joints where it is not zero: with rates, along the known rate (h above); without (the mass
    # matrix), along this call's input change δ by the secant of the last solution (`secant_curvature_py`): the
    # next call's prediction then stays second order, so a walk of mass-matrix calls takes one Newton step, not two
    for i in range(nd):
        for j in range(nk):
            s = 0.0
            for m in range(nd):
                s += inverse[i, m] * jk[m, j]
            sensitivity[s0 + i * nk + j] = -s
    # (a mass-matrix call at the warm start's own known joints, e.g. after h at one state, leaves its curvature:
    # still that of this solution)
    same = not rates and jump == 0.0
    if not rates and not same:
        _secant_curvature(sensitivity[s0:s0 + nd * nk], dep0[d0:d1], theta, dep, delta, h)
    uu = 0.0
    for j in range(nk):
        known0[k0 + j] = theta[known[j]]
        direction = rate[known[j]] if rates else delta[j]
        uu += direction * direction
        if not same:
            u0[k0 + j] = direction
    finite = uu < np.inf   # (NaN fails too)
    for i in range(nd):
        dep0[d0 + i] = theta[dep[i]]
        finite = finite and abs(h[i]) < np.inf
        if not same:
            h0[d0 + i] = h[i]
    loop.condition[k] = condition
    # a non-finite curvature (an overflowing rate) would poison every later prediction: not kept
    if not same:
        loop.curved[k] = 1.0 if uu > 1e-24 and finite else 0.0
    return 0


def secant_curvature_py(sensitivity, last, theta, dep, delta, out):
    """The dependent joints' curvature along the known joints' change `delta` (nk) from the last solution
    `last` (nd, at θ_known − δ) to the new one (θ_dep = theta[dep], its sensitivity S = −Φ_dep⁻¹ Φ_kn row-major in
    `sensitivity`): θ_dep,last = θ_dep − S δ + ½ θ''[δ, δ] + O(|δ|³), so out = 2 (θ_dep,last − θ_dep + S δ)
    (rad or m; the second-order term of the next prediction along δ, as −Φ_dep⁻¹ b is along a known rate)."""
    nd, nk = dep.shape[0], delta.shape[0]
    for i in range(nd):
        s = last[i] - theta[dep[i]]
        for j in range(nk):
            s += sensitivity[i * nk + j] * delta[j]
        out[i] = 2.0 * s


# the callees of the Python forms (the compiled kernels have their compiled twins bound instead)
_block_solve_into, _dependent_part_into, _norm = _block_solve_into_py, _dependent_part_into_py, _norm_py
_keep_fixed_point, _FIXED_POINTS = _keep_fixed_point_py, False
_secant_curvature = secant_curvature_py


def _solve_bindings() -> dict:
    """The compiled callees of `_newton_solve_py` (its residual into the work arrays inlined over the loop
    kernels) and of `_loop_newton_py`'s rate pass."""
    from biobullet.algorithms.compiled_kernels import place_body_kernel
    from biobullet.constraints.loop_kernels import body_rates_kernel, rows_into_kernel, tree_kinematics_into_kernel
    # the residual a compiled call: inlined, the solve's three residual calls each compiled the loop rows again
    # (`_newton_solve_py` 15 s → 4 s of compile CPU)
    # (compiled without numba's runtime: it allocates nothing and returns views of the record's borrowed arrays,
    # and its ≈ 15 field reads, two slices and the rows kernel's tuples then count no references — 74 calls of
    # NRT_incref / NRT_decref per residual, two residuals per solve at a new state)
    residual = jit.compiled(_loop_residual_into_py, bind={"_PLACE_BODY": place_body_kernel(),
                                                          "_ROWS_INTO": rows_into_kernel()}, nrt=False)
    # (PLACED_ROUND_OFF bound, not read as a module global: its value then keys the callers' caches)
    return {"_KIN_INTO": tree_kinematics_into_kernel(), "_BODY_RATES": body_rates_kernel(),
            "PLACED_ROUND_OFF": PLACED_ROUND_OFF,
            "_ROWS_INTO": rows_into_kernel(), "_block_solve_into": jit.compiled(_block_solve_into_py, inline=True),
            "_norm": _norm_py, "_RESIDUAL": residual}


def with_newton_solve(kernel, inline: bool = False):
    """`kernel` compiled with the Newton solve (`_NEWTON_SOLVE`, over the loop kernels' rows) and
    `_dependent_part_into` bound: the loop stage (`_loop_newton_py`) and the trajectory output's pass
    (`integrate.compiled_rhs._loop_positions_py`) call the one solve — the generic resolver's compiled kernel
    (`newton_solve_kernel`), called, not inlined: inlined, its IR was typed and optimised again in every kernel
    that reached it (≈ 20 s of CPU per pipeline variant with loops). `inline`: `kernel`'s inlined twin, the one
    that keeps and takes the loop sets' fixed points (`_FIXED_POINTS`)."""
    # (one compiled solve, without numba's runtime, for every caller: ≈ 40 reference-count calls fewer per solve,
    # and the arrays it returns are views of the borrowed record's, with no reference to take)
    return jit.compiled(kernel, bind=lambda: {**_solve_bindings(), "_NEWTON_SOLVE": newton_solve_kernel(),
                                              "_dependent_part_into": _dependent_part_into_py,
                                              "_keep_fixed_point": _keep_fixed_point_py,
                                              "_secant_curvature": secant_curvature_py,
                                              "_FIXED_POINTS": inline}, inline=inline)


def newton_kernel(inline: bool = False):
    """The compiled `_loop_newton_py`: compiled once and called by the right-hand side with loops (joint-state
    stage) and by the trajectory output's `_loop_states_py` — inlined, it was compiled again in each of them.
    `inline`: the twin the public calls' forward kernel inlines (`pipeline.kernels.forward_kernel`: compiled on a
    model's first public call only, never by a run)."""
    return with_newton_solve(_loop_newton_py, inline)


def newton_solve_kernel():
    """The compiled `_newton_solve_py` (over the loop kernels' rows), without numba's runtime: its callers pass a
    borrowed loop record (`loop_record`) and the arrays it returns are the record's, with no reference taken. One
    form for the loop stage, the trajectory output's pass, the forward kernel's inlined loop stage and (through
    `newton_solve_entry_kernel`) the generic resolver: a second form with the runtime cost ≈ 4 s of compile CPU and
    gave the same numbers."""
    return jit.compiled(_newton_solve_py, bind=_solve_bindings, nrt=False)


def _newton_solve_entry_py(loop, k, theta, guess, loose, guard_condition):
    """`_NEWTON_SOLVE(...)` (`_newton_solve_py`) as it returns: the entry from Python, compiled with numba's runtime,
    which hands the arrays to Python (a runtime-free kernel cannot box the views it returns)."""
    return _NEWTON_SOLVE(loop, k, theta, guess, loose, guard_condition)


def newton_solve_entry_kernel():
    """The compiled Newton solve the generic resolver calls from Python (`_newton_solve_entry_py` over the one
    runtime-free `newton_solve_kernel`, called, not inlined)."""
    return jit.compiled(_newton_solve_entry_py, bind=lambda: {"_NEWTON_SOLVE": newton_solve_kernel()})


def newton_solve_twin(residual):
    """The Python form of `_newton_solve_py` over `residual(loop, k, theta) → (Φ, Φ_θ)` (`loop` a namespace of the
    loop record's fields and whatever the residual reads): the generic resolver's solve where the loop rows are
    not compiled (a plug-in loop type)."""
    return jit.twin(_newton_solve_py, {"_RESIDUAL": residual, "_block_solve_into": _block_solve_into_py,
                                       "_norm": _norm_py})
