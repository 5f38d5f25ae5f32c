"""Small dense solvers of the equations of motion."""
from __future__ import annotations

import numpy as np

from biobullet.core.errors import SolverError


def solve_spd(mass: np.ndarray, rhs: np.ndarray, file: str | None = None) -> np.ndarray:
    """M⁻¹ rhs for a symmetric positive definite M (Cholesky); SolverError naming `file` when M is singular."""
    try:
        factor = np.linalg.cholesky(mass)
    except np.linalg.LinAlgError:
        prefix = f"{file}: " if file else ""
        raise SolverError(f"{prefix}the mass matrix is singular or not positive definite "
                          "(a joint moves no mass, or a joint function makes coordinates redundant)") from None
    y = np.linalg.solve(factor, rhs)
    return np.linalg.solve(factor.T, y)
