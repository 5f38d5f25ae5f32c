"""Reduced formulations (paper 000): project the tree dynamics through θ = f(q, t).

    M_r = Gᵀ M(θ) G,    h_r = Gᵀ (M(θ) γ + h(θ, θ̇)) = Gᵀ RNEA(θ, θ̇, γ)
so dependent joints disappear from the equations. "reduced" is the pipeline itself (`biobullet.pipeline`: the
compiled model's joint-state stage, loops and joint functions included, the world-frame tree kernel, the solve);
`ProjectedFormulation` is the same projection over another tree backend, the check formulations' base:
"reduced_recursive" on the classic body-frame CRBA/RNEA recursions (crba.py, rnea.py: numba kernels on their own
body-frame tree, independent of the pipeline's world-frame kernel), "reduced_pinocchio" on Pinocchio's.
"""
from __future__ import annotations

import numpy as np

from biobullet.algorithms.crba import crba
from biobullet.algorithms.rnea import rnea
from biobullet.core.errors import SolverError
from biobullet.dynamics.formulation import Formulation, register_formulation
from biobullet.pipeline.compiled_model import SPARSE
from biobullet.spatial.dense import (coordinate_floor, declined_pivot, massless_coordinate, massless_text,
                                     singular_mass_text)


@register_formulation
class ReducedFormulation(Formulation):
    """The pipeline (`pipeline.data.Data` on the model's own workspace): where it declines a call, the coordinate
    map's own error (an expression outside its domain, a loop that does not close) or one SolverError saying why."""

    name = "reduced"
    is_pipeline = True
    description = "the pipeline: projection through joint functions and loops on the compiled world-frame tree kernel"

    def mass_matrix(self, model, q, t):
        result = model.workspace.mass_matrix(model, q, t)
        return result if result is not None else _declined(model, q, None, t, "mass matrix")

    def bias_forces(self, model, q, v, t):
        result = model.workspace.bias_forces(model, q, v, t)
        return result if result is not None else _declined(model, q, v, t, "bias forces")

    def mass_and_bias(self, model, q, v, t) -> tuple[np.ndarray, np.ndarray]:
        return self.mass_matrix(model, q, t), self.bias_forces(model, q, v, t)

    def forward_dynamics(self, model, q, v, tau, t):
        result = model.workspace.forward(model, q, v, tau, t)
        return result.copy() if result is not None else _declined(model, q, v, t, "forward dynamics", tau)


def _declined(model, q, v, t: float, what: str, tau=None):
    """The pipeline declined a call at (q, v, t): the coordinate map's own clear error if it has one, else one
    SolverError naming the model file and what the kernels found — the coordinate whose pivot the solve refused
    (a coordinate that moves no mass, `spatial.dense.massless_coordinate`, else `spatial.dense.declined_pivot`, in
    the solve's elimination order: the tree-sparse Lᵀ D L eliminates the last direction first), or, where M is
    regular, the input whose size overflowed the result (`_overflow_text`), found here on the error path only."""
    q = model.checked("q", q, model.nq)
    model.check_rotations(q)
    # (v=None is the mass matrix's own call; a caller's v=None is an argument error, not a singular matrix)
    gradient = model.joint_state(q, np.zeros(model.nv) if what == "mass matrix"
                                 else model.checked("v", v, model.nv), t)[2]
    index = None
    mass = model.workspace.mass_matrix(model, q, t) if what != "mass matrix" else None
    if mass is not None:
        # the solve's first test: a coordinate whose own diagonal entry is round-off (it moves no mass)
        massless = (massless_coordinate(mass, model.compiled.mass_floor_root, gradient)
                    if what == "forward dynamics" else None)
        if massless is not None:
            raise SolverError(f"{model.file}: the {what} cannot be evaluated at t = {float(t):.9g} s: "
                              + massless_text(model.velocity_names, massless, mass[massless, massless],
                                              coordinate_floor(model.compiled.mass_floor_root, gradient, massless)))
        if model.workspace.compiled.solver == SPARSE:
            index = declined_pivot(mass[::-1, ::-1])
            index = None if index is None else model.nv - 1 - index
        else:
            index = declined_pivot(mass)
    if index is not None and what == "forward dynamics":
        reason = singular_mass_text(model.velocity_names, index)
    elif mass is not None and index is None:   # M is regular here: the velocities or the forces overflowed
        reason = _overflow_text(model, q, v, t, what, tau, mass)
    else:
        reason = (singular_mass_text(model.velocity_names, None) + ", or a result is not finite (the model's "
                  "magnitudes overflow double precision, or the state is out of range)")
    raise SolverError(f"{model.file}: the {what} cannot be evaluated at t = {float(t):.9g} s: {reason}")


def _overflow_text(model, q, v, t: float, what: str, tau, mass: np.ndarray) -> str:
    """Why a call whose M is regular declined, naming the quantity that is not finite: the bias forces h(q, v)
    (at the fastest coordinate), for v̇ = M⁻¹ (Q − h) the generalized forces Q, Q − h or the accelerations
    themselves (each at its first non-finite coordinate); or, where all of them are finite when evaluated again
    here, that the pipeline's own evaluation disagreed (the text then names no quantity it did not find). `mass`:
    M_r at (q, t), regular."""
    names = model.velocity_names
    speeds = np.abs(model.checked("v", v, model.nv))
    fastest = f"largest speed |v| = {float(speeds.max(initial=0.0)):.3g}"
    bias = model.workspace.bias_forces(model, q, v, t)
    if bias is None:
        k = int(np.argmax(speeds))
        return (f"the velocity terms h(q, v) are not finite (the mass matrix is regular here): they overflow at "
                f"|v| = {speeds[k]:.3g} on {names[k]!r} (the state ran away: check the forces that drive it and "
                "the initial state)")
    if what == "forward dynamics":
        forces = model.checked("tau", tau, model.nv) if tau is not None else np.zeros(model.nv)
        with np.errstate(over="ignore", invalid="ignore"):   # (what overflows is named below, not warned about)
            rhs = forces - bias
            accel = np.linalg.solve(mass, rhs) if np.isfinite(rhs).all() else None
        for quantity, values in (("the generalized force Q", forces), ("Q − h", rhs), ("the acceleration", accel)):
            bad = np.flatnonzero(~np.isfinite(values)) if values is not None else ()
            if len(bad):
                k = int(bad[0])
                magnitude = np.where(np.isfinite(forces), np.abs(forces), np.inf)
                kq, kh = int(np.argmax(magnitude)), int(np.argmax(np.abs(bias)))
                return (f"{quantity} on {names[k]!r} is not finite (the mass matrix is regular here): it overflows "
                        f"double precision — the largest generalized force |Q| = {magnitude[kq]:.3g} on "
                        f"{names[kq]!r}, the largest bias force |h| = {abs(bias[kh]):.3g} on {names[kh]!r} "
                        f"({fastest})")
    found = "h, Q and M⁻¹ (Q − h) are" if what == "forward dynamics" else "h is"
    return (f"the pipeline declined, but evaluated again here M is regular and {found} finite ({fastest}): its "
            "joint-state stage disagreed with a fresh evaluation at this state (a stale warm start or kept state; "
            "please report the model and the state)")


class ProjectedFormulation(Formulation):
    """Gᵀ M G and Gᵀ RNEA(x, ẋ, γ) over the coordinate map, on the tree backend of a subclass
    (`tree_mass_matrix`, `tree_inverse_dynamics`): the check formulations' projection."""

    def tree_mass_matrix(self, model, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def tree_inverse_dynamics(self, model, x, xd, xdd) -> np.ndarray:
        raise NotImplementedError

    def mass_matrix(self, model, q, t):
        x, gradient = model.coordinate_gradient(q, t)
        mass = self.tree_mass_matrix(model, x)
        if model.coordinate_map.identity:
            return mass
        return gradient.T @ mass @ gradient

    def bias_forces(self, model, q, v, t):
        x, xd, gradient, gamma = model.joint_state_view(q, v, t)
        h = self.tree_inverse_dynamics(model, x, xd, np.zeros(model.n_tangent) if gamma is None else gamma)
        if gradient is None:
            return h
        return gradient.T @ h


@register_formulation
class ReducedRecursiveFormulation(ProjectedFormulation):
    name = "reduced_recursive"
    description = "projection through joint functions on biobullet's body-frame recursions (CRBA, RNEA)"

    def tree_mass_matrix(self, model, x):
        return crba(model, x)

    def tree_inverse_dynamics(self, model, x, xd, xdd):
        return rnea(model, x, xd, xdd)

    def mass_and_bias(self, model, q, v, t):
        return self.mass_bias_gradient(model, q, v, t)[:2]

    def mass_bias_gradient(self, model, q, v, t):
        x, xd, gradient, gamma = model.joint_state(q, v, t)
        mass, h = crba(model, x), rnea(model, x, xd, gamma)
        if model.coordinate_map.identity:
            return mass, h, None
        return gradient.T @ mass @ gradient, gradient.T @ h, gradient
