"""The loop Newton's Φ_dep in block lower triangular order (`newton_kernel.solve_blocks`, `loop_set_blocks`,
`_block_solve_into_py`): loops that decouple are eliminated block by block instead of as one dense matrix, with
results equal to LAPACK's solve and to Pinocchio's kinematics (Andrews' squeezer: three planar loops, three 2 × 2
blocks)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.constraints import newton_kernel
from biobullet.core import jit

ROOT = Path(__file__).resolve().parents[3]


def _kernels() -> list:
    return [newton_kernel._block_solve_into_py, jit.compiled(newton_kernel._block_solve_into_py, inline=True)]


def test_solve_blocks_orders_any_structure_block_lower_triangular():
    """Every structure with a perfect matching is permuted to block lower triangular form (nothing read above a
    diagonal block), with diagonal blocks no larger than the structure's strongly coupled sets: a triangular
    structure gives 1 × 1 blocks, whatever the rows' and columns' given order."""
    rng = np.random.default_rng(11)
    for _ in range(500):
        n = int(rng.integers(1, 9))
        pattern = (rng.random((n, n)) < 0.3) | np.eye(n, dtype=bool)
        pattern = pattern[rng.permutation(n)][:, rng.permutation(n)]
        rows, cols, ends = newton_kernel.solve_blocks(pattern)
        assert sorted(rows) == list(range(n)) and sorted(cols) == list(range(n))
        ordered = pattern[np.ix_(rows, cols)]
        p = 0
        while p < n:
            assert np.all(ends[p:ends[p]] == ends[p]) and ends[p] > p
            assert not ordered[p:ends[p], ends[p]:].any()
            p = ends[p]
    lower = np.tril(np.ones((5, 5), dtype=bool))
    shuffle = np.array([3, 0, 4, 1, 2])
    rows, cols, ends = newton_kernel.solve_blocks(lower[shuffle][:, shuffle[::-1]])
    assert list(ends) == [1, 2, 3, 4, 5]


def test_a_loop_set_too_large_to_search_is_one_dense_block():
    # a chain of dependences (row i reads column i − 1) as deep as a file's 2,000 joints allow: the structure search
    # recursed once per row and raised RecursionError (a traceback at load) — now one dense block in the given order,
    # the elimination it replaces (test_block_solve_matches_lapack checks one dense block against LAPACK)
    n = 1500
    pattern = np.eye(n, dtype=bool) | np.eye(n, k=-1, dtype=bool)
    rows, cols, ends = newton_kernel.solve_blocks(pattern)
    assert np.array_equal(rows, np.arange(n)) and np.array_equal(cols, np.arange(n)) and np.all(ends == n)


@pytest.mark.parametrize("n", [1, 2, 5, 7])
def test_block_solve_matches_lapack(n):
    """`_block_solve_into_py` (and its compiled twin) in the order `solve_blocks` gives solves a x = b as numpy's
    LAPACK solve does (to 1e-12): random block structures, a zero first pivot in a block (row pivoting inside
    it), several right-hand sides, and a dense matrix as one block; a singular diagonal block is reported."""
    rng = np.random.default_rng(n)
    for trial in range(40):
        pattern = (rng.random((n, n)) < 0.3) | np.eye(n, dtype=bool)
        if trial == 0:
            pattern[:] = True
        pattern = pattern[rng.permutation(n)][:, rng.permutation(n)]
        matrix = np.where(pattern, rng.normal(size=(n, n)), 0.0)
        rows, cols, ends = newton_kernel.solve_blocks(pattern)
        ordered = matrix[np.ix_(rows, cols)]
        if ends[0] > 1:
            ordered[0, 0] = 0.0   # the block's first pivot from another row
        if abs(np.linalg.det(ordered)) < 1e-3:
            continue
        b = rng.normal(size=(n, 3))
        expected = np.linalg.solve(ordered, b)
        for kernel in _kernels():
            work, x = ordered.copy(), b.copy()
            assert kernel(work, x, ends)
            np.testing.assert_allclose(x, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    singular = np.array([[1.0, 0.0, 0.0], [5.0, 1.0, 2.0], [7.0, 2.0, 4.0]])   # blocks 1 and 2 × 2, the second singular
    for kernel in _kernels():
        assert not kernel(singular.copy(), np.ones((3, 1)), np.array([1, 3, 3]))


def _point_jacobians(model, pm, pd, index, x, link: str, xyz) -> np.ndarray:
    """Pinocchio's linear Jacobian (3 × n_tangent, our column order) of the point `xyz` (link frame) at x."""
    import pinocchio as pin
    pin.forwardKinematics(pm, pd, index.config_to_pinocchio(x))
    pin.computeJointJacobians(pm, pd)
    pin.updateFramePlacements(pm, pd)
    frame = pm.getFrameId(link)
    jacobian = index.jacobian_from_pinocchio(
        pin.getFrameJacobian(pm, pd, frame, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED))
    r = pd.oMf[frame].rotation @ np.asarray(xyz)
    skew = np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])
    return jacobian[:3] - skew @ jacobian[3:]


@pytest.mark.parametrize("reverse", [False, True])
def test_andrews_squeezer_solves_three_blocks_with_pinocchios_sensitivity(reverse, tmp_path):
    """Andrews' squeezer's three planar loops share only θ (the link body2 that every loop closes on): its Φ_dep
    is block lower triangular, three 2 × 2 blocks, each loop after the one of body3 reading θ (the loops in the file's order, and reversed: that loop's
    rows, last in Φ, eliminated first). Checked against Pinocchio:
    the columns the block solve does not read are zero in the Jacobian of the loops' point differences that
    Pinocchio's kinematics give, and at five new states of a walk the mass-matrix call leaves the sensitivity
    −Φ_dep⁻¹ Φ_known of its solution (the warm start the next prediction uses, and G's dependent rows) equal to
    Pinocchio's (planar rows: the plane's components of the point difference; the sensitivity does not depend on
    the rows' basis) to 1e-11; at the same state again, the kept factor Φ_dep⁻¹ times the residual's Φ_dep is I to
    1e-13 and its cond₁ is LAPACK's to 1e-10."""
    from biobullet.conventions import PinocchioMap, build_pinocchio_model
    text = (ROOT / "urdf" / "andrews_squeezer.urdf").read_text()
    elements = re.findall(r"<loop [^>]*/>", text)
    assert len(elements) == 3
    if reverse:   # the loop that fixes θ last: its rows are eliminated first, out of the rows' order
        for k, element in enumerate(elements):
            text = text.replace(element, f"<!--loop {k}-->")
        for k, element in enumerate(reversed(elements)):
            text = text.replace(f"<!--loop {k}-->", element)
        (tmp_path / "squeezer.urdf").write_text(text)
    model = biobullet.load_model(tmp_path / "squeezer.urdf" if reverse else "andrews_squeezer")
    loops = [(m[0], np.array(m[1].split(), dtype=float), m[2], np.array(m[3].split(), dtype=float))
             for m in re.findall(r'<loop [^>]*link_a="(\w+)" xyz_a="([^"]+)" link_b="(\w+)" xyz_b="([^"]+)"', text)]
    table = model.compiled.loops
    dep, known = table.dep, table.known
    rows, cols, ends = table.block_rows, table.block_dep, table.block_end
    assert list(ends) == [2, 2, 4, 4, 6, 6]
    assert list(rows) == ([4, 5, 0, 1, 2, 3] if reverse else [0, 1, 2, 3, 4, 5])
    pm = build_pinocchio_model(model)
    pd = pm.createData()
    index = PinocchioMap(model, pm)
    rng = np.random.default_rng(23)
    q = model.initial_state()[0]
    warm, work = model.workspace.arrays.loop_warm, model.workspace.loop_work
    for _ in range(5):
        q = q + 1e-3 * rng.uniform(-1.0, 1.0, model.nq)
        model.mass_matrix(q)
        x = model.joint_state(q, np.zeros(model.nv))[0]
        difference = np.vstack([(_point_jacobians(model, pm, pd, index, x, a, xyz_a)
                                 - _point_jacobians(model, pm, pd, index, x, b, xyz_b))[:2]
                                for a, xyz_a, b, xyz_b in loops])
        ordered = difference[rows][:, dep[cols]]
        for p in range(6):
            assert np.all(ordered[p, ends[p]:] == 0.0)
        expected = -np.linalg.solve(difference[:, dep], difference[:, known])
        sensitivity = warm.sensitivity[:dep.shape[0] * known.shape[0]].reshape(dep.shape[0], known.shape[0])
        np.testing.assert_allclose(sensitivity, expected, rtol=0, atol=1e-11 * np.abs(expected).max())
        # h at the same state solves from that solution and stops at once: its factor is kept (`fixed`), at Φ_θ of
        # the residual it evaluated
        model.bias_forces(q, np.zeros(model.nv))
        jacobian = work.jac[:6, dep]
        assert work.fixed[0, 0] == 1.0
        np.testing.assert_allclose(work.inverses[0] @ jacobian, np.eye(6), rtol=0, atol=1e-13)
        assert warm.condition[0] == pytest.approx(np.linalg.cond(jacobian, 1), rel=1e-10)
