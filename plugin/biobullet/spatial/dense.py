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


def declined_pivot(mass: np.ndarray) -> int | None:
    """The first direction j whose Cholesky pivot is not above MASS_PIVOT_RATIO · M[j, j] (M singular to round-off
    or not positive definite), None when every pivot is: for the error path (O(n⁴))."""
    for j in range(mass.shape[0]):
        try:
            pivot = np.linalg.cholesky(mass[:j + 1, :j + 1])[j, j] ** 2
        except np.linalg.LinAlgError:
            return j
        if not pivot > MASS_PIVOT_RATIO * mass[j, j]:
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
            "of its diagonal entry: it moves no mass the others do not already move, or a joint function makes "
            "coordinates redundant)")


def solve_spd(mass: np.ndarray, rhs: np.ndarray, file: str | None = None, names: Sequence[str] = ()) -> np.ndarray:
    """M⁻¹ rhs for a symmetric positive definite M (Cholesky); SolverError naming `file` and the coordinate
    (`names`, one per row) where M is singular to round-off (`MASS_PIVOT_RATIO`) or not positive definite."""
    try:
        factor = np.linalg.cholesky(mass)
    except np.linalg.LinAlgError:
        factor = None
    if factor is None or not np.all(np.diagonal(factor) ** 2 > MASS_PIVOT_RATIO * np.diagonal(mass)):
        prefix = f"{file}: " if file else ""
        index = declined_pivot(mass)
        raise SolverError(prefix + singular_mass_text(names, index if names else None)) from None
    y = np.linalg.solve(factor, rhs)
    return np.linalg.solve(factor.T, y)
