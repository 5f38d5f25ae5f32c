"""Small dense solvers of the equations of motion, and the round-off bound every mass-matrix factorisation keeps."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from biobullet.core.errors import SolverError

#: a mass matrix's factorisation declines a pivot (the inertia its direction has left once the directions before it
#: are eliminated) not above MASS_PIVOT_RATIO × its own diagonal entry: singular to round-off. A pivot's round-off is
#: ≈ n · 1.1e-16 of that entry (measured at exactly singular states: 2e-16 to 1.1e-15, either sign); the smallest
#: legitimate ratio measured is 5e-13 (the anthropomorph settling towards its near-parallel stance in the jump study,
#: t ≈ 3 s, cond(M) 1e14), then 8.8e-8 (shoulder_simplified at random states; docs/architecture.md, "solve"). 1e-14
#: sits between: 9× above the round-off seen, 50× below the smallest legitimate pivot.
MASS_PIVOT_RATIO = 1e-14

#: ... and not above MASS_FLOOR_RATIO × the bound its direction's diagonal can reach when it moves mass
#: (`direction_mass_bounds`, once per model): the relative test cannot catch a diagonal that is round-off itself (a
#: hinge whose axis passes through a point mass, a prismatic joint moving a massless link: M[j, j] ≈ 1e-17 of the
#: subtree's inertia, its pivot ≈ M[j, j]). The round-off of an entry summed from the subtree's inertias about its
#: root's anchor is ≈ n · 1.1e-16 of that bound; 1e-12 sits ≥ 100× above it for trees up to ≈ 80 directions, and a
#: direction that does move mass has M[j, j] far above it: the bound is the subtree's own (a 1 mm, 1 g finger, a
#: model in millimetres or grams scale with it), only a direction holding under 1e-12 of its subtree's inertia is
#: refused (a rod 1e6 times longer than thick turning about its own axis). The smallest pivot / floor measured on
#: the bundled models at random states is 2.6e6 (shoulder_simplified; the others 6e7 … 3e10).
MASS_FLOOR_RATIO = 1e-12


def direction_mass_bounds(bodies: Sequence, ancestry: np.ndarray) -> np.ndarray:
    """Per tangent direction k (n_tangent,) an upper bound of the tree's M[k, k] over configurations, in k's own
    units (kg for a translation, kg·m² for a rotation): Σ over the bodies b that k moves (ancestry[b, k] ≠ 0) of
    m_b |s_lin|² + (trace(I_c,b) + m_b L²) |s_ang|², s the direction's motion subspace column (body frame) and L the
    model's reach: Σ over bodies of |centre of mass| and over non-root bodies of |joint origin|, a bound of any
    centre of mass's distance from its root's anchor (about which the pipeline sums the inertias) and from any
    joint axis while no prismatic joint carries it away (an extended one moves the bodies farther: the bound is
    then lower than the true one, the floor lower too — never a refusal of a direction that moves mass). A rotation's M[k, k] = Σ a·I_c a + m d² ≤ trace(I_c) + m L² (a unit axis);
    a translation's = Σ m."""
    # (a root body's own placement is left out: the recursions sum each root's subtree about its anchor, so a model
    # mounted 100 km from the world origin keeps its own scale — tests/validation/test_far_from_origin.py)
    reach = sum(float(np.linalg.norm(b.translation)) * (b.parent >= 0) + float(np.linalg.norm(b.com)) for b in bodies)
    n_tangent = ancestry.shape[1] if ancestry.ndim == 2 else 0
    with np.errstate(over="ignore", invalid="ignore"):   # (a COM at 1e200 m: an infinite bound, no floor)
        moment = np.array([b.mass * np.float64(reach) ** 2 + float(np.trace(b.inertia_com)) for b in bodies])
    mass = np.array([b.mass for b in bodies])
    bounds = np.zeros(n_tangent)
    for b in bodies:
        s = np.asarray(b.motion_subspace, dtype=float)
        for d in range(b.nv):
            k = b.v_index + d
            moved = ancestry[:, k] != 0
            bounds[k] = (float(s[:3, d] @ s[:3, d]) * float(np.sum(mass[moved]))
                         + float(s[3:, d] @ s[3:, d]) * float(np.sum(moment[moved])))
    return bounds


def mass_floor(bounds: np.ndarray) -> np.ndarray:
    """The pivot floor of each direction (MASS_FLOOR_RATIO × its bound): a pivot not above it moves no mass; 0
    where the bound is not finite (magnitudes that overflow: the relative test and the finiteness checks decide)."""
    bounds = np.asarray(bounds, dtype=float)
    return np.where(np.isfinite(bounds), MASS_FLOOR_RATIO * bounds, 0.0)


def reduced_floor(floor: np.ndarray, gradient: np.ndarray | None) -> np.ndarray:
    """The floor of Gᵀ M G's pivots (nv,) from the tree's (n_tangent,) through G (ẋ = G v; None: identity):
    (Gᵀ M G)[c, c] = Σ_ab g_ac g_bc M_ab with |M_ab| ≤ √(M_aa M_bb), so (Σ_a |g_ac| √floor_a)² bounds it the same
    way (`pipeline.stages.solve_stage_py` forms the same in its kernel)."""
    if gradient is None:
        return np.asarray(floor, dtype=float)
    return (np.abs(gradient).T @ np.sqrt(floor)) ** 2


def declined_pivot(mass: np.ndarray, floor: np.ndarray | None = None) -> int | None:
    """The first direction j whose Cholesky pivot is not above MASS_PIVOT_RATIO · M[j, j] or floor[j] (M singular
    to round-off, a direction moving no mass, or not positive definite), None when every pivot is: for the error
    path (O(n⁴))."""
    for j in range(mass.shape[0]):
        try:
            pivot = np.linalg.cholesky(mass[:j + 1, :j + 1])[j, j] ** 2
        except np.linalg.LinAlgError:
            return j
        if not pivot > MASS_PIVOT_RATIO * mass[j, j] or (floor is not None and not pivot > floor[j]):
            return j
    return None


def singular_mass_text(names: Sequence[str], index: int | None) -> str:
    """Why a solve declined: the mass matrix singular to round-off at the direction `index` (names[index]), or
    not positive definite."""
    if index is None:
        return ("the mass matrix is singular or not positive definite (a joint moves no mass, or a joint function "
                "makes coordinates redundant)")
    return (f"the mass matrix is singular to round-off at this state: coordinate {names[index]!r} has no inertia "
            f"left once the coordinates before it are accounted for (its pivot is not above {MASS_PIVOT_RATIO:g} "
            f"of its diagonal entry or {MASS_FLOOR_RATIO:g} of the inertia its subtree can have: it moves no mass "
            "(a hinge whose axis passes through a point mass, a prismatic joint moving a massless link) or none the "
            "others do not already move, or a joint function makes coordinates redundant)")


def solve_spd(mass: np.ndarray, rhs: np.ndarray, file: str | None = None, names: Sequence[str] = (),
              floor: np.ndarray | None = None) -> np.ndarray:
    """M⁻¹ rhs for a symmetric positive definite M (Cholesky); SolverError naming `file` and the coordinate
    (`names`, one per row) where M is singular to round-off (`MASS_PIVOT_RATIO`), a pivot is not above its
    `floor` (`reduced_floor`: the coordinate moves no mass) or M is not positive definite."""
    try:
        factor = np.linalg.cholesky(mass)
    except np.linalg.LinAlgError:
        factor = None
    if factor is None or not np.all(np.diagonal(factor) ** 2 > MASS_PIVOT_RATIO * np.diagonal(mass)) or (
            floor is not None and not np.all(np.diagonal(factor) ** 2 > floor)):
        prefix = f"{file}: " if file else ""
        index = declined_pivot(mass, floor)
        raise SolverError(prefix + singular_mass_text(names, index if names else None)) from None
    y = np.linalg.solve(factor, rhs)
    return np.linalg.solve(factor.T, y)
