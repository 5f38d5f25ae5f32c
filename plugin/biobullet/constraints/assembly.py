"""Assembly: a consistent configuration (Φ(x, t) = 0) and consistent velocities from a guess.

The coordinates named in `fixed` (default: the model's independent coordinates) are held; the others move by
minimum-norm Gauss–Newton steps (least squares, so redundant or surplus rows are tolerated as long as the
loops can close). Failure to close is a SolverError that reports the residual.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from biobullet.core.errors import ModelError, SolverError
from biobullet.constraints.equations import constraint_set

ASSEMBLY_TOLERANCE = 1e-12     # |Φ|∞ in m (or rad), relative to the model's length scale


def _free_columns(model, fixed: Iterable[str] | None) -> np.ndarray:
    """Tangent columns allowed to move."""
    names = list(model.coordinate_names if fixed is None else fixed)
    held = set()
    base_v = model.base_nv
    for name in names:
        if name in model.joint_names:
            held.add(base_v + model.joint_names.index(name))
        elif name.startswith("base_") and model.floating_base:
            held.update(range(6))  # the base pose is held as a whole
        else:
            raise ModelError(f"cannot hold {name!r} during assembly: not a joint", file=model.file,
                             expected="joint names (or base_* for the floating base)")
    return np.array([k for k in range(model.n_tangent) if k not in held], dtype=int)


def _length_scale(model) -> float:
    return max([np.linalg.norm(b.translation) for b in model.bodies] + [1e-3])


def assemble(model, guess_x, fixed: Iterable[str] | None = None, t: float = 0.0, *,
             max_iterations: int = 100) -> tuple[np.ndarray, float]:
    """(x, |Φ|∞): the configuration closest to `guess_x` (Gauss–Newton path) with all constraints satisfied."""
    x = np.array(guess_x, dtype=float)
    if x.shape != (model.n_config,):
        raise ModelError(f"guess has {x.size} entries", file=model.file, expected=f"{model.n_config} (tree x)")
    cset = constraint_set(model)
    if cset.n == 0:
        return x, 0.0
    free = _free_columns(model, fixed)
    tolerance = ASSEMBLY_TOLERANCE * _length_scale(model)
    phi, jac, _, _ = cset.all_terms(x, None, t)
    norm = float(np.max(np.abs(phi)))
    for _ in range(max_iterations):
        if norm <= tolerance:
            return x, norm
        step = np.zeros(model.n_tangent)
        step[free] = -np.linalg.lstsq(jac[:, free], phi, rcond=1e-12)[0]
        scale = 1.0
        while True:  # backtracking: accept the first step that reduces the residual
            trial = model.integrate_configuration(x, step * scale, 1.0)
            phi_t, jac_t, _, _ = cset.all_terms(trial, None, t)
            norm_t = float(np.max(np.abs(phi_t)))
            if norm_t < norm or scale < 1e-4:
                break
            scale *= 0.5
        if not norm_t < norm:
            break  # stalled: a least-squares minimum with a non-zero residual
        x, phi, jac, norm = trial, phi_t, jac_t, norm_t
    if norm <= tolerance:
        return x, norm
    worst = cset.names[int(np.argmax(np.abs(phi)))]
    raise SolverError(f"{model.file}: the loops cannot be closed from this guess with "
                      f"{', '.join(fixed) if fixed is not None else ', '.join(model.coordinate_names)} held: "
                      f"residual |Φ|∞ = {norm:.3g} (worst row {worst}) at t = {t:.17g}, x = {x.tolist()}")


def assemble_velocities(model, x, guess_xd, fixed: Iterable[str] | None = None, t: float = 0.0) -> np.ndarray:
    """ẋ with Φ_x ẋ + Φ_t = 0, the rates of `fixed` coordinates held, the others changed by a minimal-norm
    correction (projection of the guess onto the constraint manifold's tangent space)."""
    x, xd = np.asarray(x, dtype=float), np.array(guess_xd, dtype=float)
    cset = constraint_set(model)
    if cset.n == 0:
        return xd
    free = _free_columns(model, fixed)
    _, jac, phi_t, _ = cset.all_terms(x, None, t)
    violation = jac @ xd + phi_t
    correction, _, rank, _ = np.linalg.lstsq(jac[:, free], -violation, rcond=1e-12)
    xd[free] += correction
    remaining = jac @ xd + phi_t
    if np.max(np.abs(remaining), initial=0.0) > 1e-9 * max(1.0, np.max(np.abs(violation))):
        raise SolverError(f"{model.file}: velocities cannot satisfy the constraints with the held rates "
                          f"(|Φ̇|∞ = {np.max(np.abs(remaining)):.3g}) at t = {t:.17g}, x = {x.tolist()}")
    return xd
