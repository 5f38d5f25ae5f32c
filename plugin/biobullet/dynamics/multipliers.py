"""Multipliers formulation (Lagrange equations of the first kind, paper 003) over the FULL tree coordinates x.

    M(x) ẍ + h(x, ẋ) = τ + Φ_xᵀ λ
    Φ_x ẍ = −bias(x, ẋ, t) − 2α Φ̇ − β² Φ          (index-1 form with Baumgarte stabilization)
with Φ the stacked joint-function and loop rows of `constraints.equations` and Φ̇ = Φ_x ẋ + Φ_t. λ are
constraint forces in the rows' units (N for point/planar loop rows, N·m per unit direction cosine for
revolute axis rows, N·m or N for joint-function rows): Φ_xᵀ λ is the joint-space reaction.
Default Baumgarte gains α = β = 10 s⁻¹ (critically damped drift decay with a 0.1 s time constant); at a
consistent state (Φ = Φ̇ = 0) they have no effect. Use (0, 0) for the pure index-1 DAE.

Conditioning. The tree's M over all joints may be near-singular where the constrained system is not: massless
links (a joint function's "unrot" joints on shoulder_rhythm: cond(M) ≈ 6e9) move almost no inertia but are held by
their rows. The range-space solve goes through M⁻¹ and keeps only ≈ cond(M)·ε of ẍ (3e-7 rad/s² on shoulder_rhythm):
noise at that level spoiled the implicit methods' finite-difference Jacobian (steps of 1.5e-8), and Radau crawled in
steps of 3e-8 s until its work budget ran out. Where M's Cholesky pivots say so (`SCHUR_PIVOT_RATIO`, tested on the
range-space solve's own factor of M), the accelerations solve the whole KKT matrix instead (LU), which is as well
conditioned as the constrained system. (The projections stay on the range-space solve: their
correction is small at the states they see, and so is its noise.) A tree direction that moves no mass at all (its
diagonal entry below `spatial.dense.MASS_FLOOR_RATIO` of its bound, as the reduced solve tests it) is solved by the
KKT matrix where the rows hold it, and refused, naming the joint, where none does (`_kkt_solve`). M singular along a
COMBINATION of directions that each move mass (a floating base on a massless root link with a slider along the
base's x: base x minus the slider moves no mass) is decided where M's own factorisation fails: the KKT matrix is
solved where M is positive definite on the null space of Φ_x (the slider's prescribed row holds that motion) and
refused, naming the joints, where it is not (`constraints.solve.unheld_direction`, `refuse_unheld`); the projections follow the same
rule (`_projection_factor`).
"""
from __future__ import annotations

import numpy as np

from biobullet.constraints.equations import constraint_set
from biobullet.constraints.solve import (Corrector, TreeDirections, check_rank, constrained_acceleration,
                                         factor_solve, refuse_unheld, state_text, try_mass_factor)
from biobullet.constraints.loops import loop_terms, point_state, tree_kinematics
from biobullet.core.errors import ModelError, SolverError
from biobullet.dynamics.formulation import JOINT, Formulation, register_formulation
from biobullet.algorithms.vectorized import mass_matrix_and_bias
from biobullet.spatial.dense import massless_coordinate

DEFAULT_BAUMGARTE = (10.0, 10.0)
#: the least ratio (smallest Cholesky pivot)² / (largest diagonal entry) of M for the range-space solve through M⁻¹;
#: below it (cond(M) above ~10⁶: more than ~10⁻¹⁰ of ẍ lost) the whole KKT matrix is solved (`_kkt_solve`)
SCHUR_PIVOT_RATIO = 1e-6


def tree_direction_names(model) -> tuple[str, ...]:
    """The name of each tree direction of ẋ (n_tangent): the floating base's and multi-DOF joints' velocity
    names, then every 1-DOF joint."""
    return model.velocity_names[:model.base_nv] + tuple(model.joint_names)


_TREE = "multipliers.tree"   # key of `_tree`'s result in `Model.derived`


def _tree(model) -> TreeDirections:
    """The tree directions' names and mass floors, for deciding and naming a singular M: built once per model
    (`Model.derive`; it was built at every evaluation, ≈ 2 µs)."""
    return model.derive(_TREE, lambda: TreeDirections(tree_direction_names(model), model.compiled.mass_floor_root,
                                                      f"{model.file}: formulation 'multipliers': "))


def _refuse_massless(model, mass: np.ndarray, jac: np.ndarray, x, xd, t: float) -> bool:
    """Whether a tree direction moves no mass (its diagonal entry not above its floor,
    `spatial.dense.MASS_FLOOR_RATIO`: one compare per entry); SolverError naming the joint where no constraint row
    holds it, or the motion where the KKT matrix is singular otherwise — a combination beside the held link, such as
    base x minus a slider along it (`constraints.solve.refuse_unheld`: cheap per evaluation where the rows hold
    everything)."""
    if massless_coordinate(mass, model.compiled.mass_floor_root, None) is None:
        return False
    refuse_unheld(mass, jac, _tree(model), x, xd, t)
    return True


def _kkt_solve(model, mass: np.ndarray, bias: np.ndarray, tau, jac: np.ndarray, target: np.ndarray, names, x, xd,
               t: float) -> tuple[np.ndarray, np.ndarray]:
    """`constrained_acceleration`: the range-space solve where M's Cholesky pivots allow it (`SCHUR_PIVOT_RATIO`,
    tested on the Schur kernel's own factor of M: M is factorised once), else the KKT matrix; on the KKT path
    dependent rows are refused first, as the range-space path refuses them (the KKT matrix would be singular).

    A tree direction that moves no mass makes M singular: where the rows hold it (a massless link inside a loop, a
    massless joint a joint function drives) the KKT matrix is solved whole, once M is positive definite on the null
    space of Φ_x (`constraints.solve.unheld_direction`: a combination such as base x minus a slider beside the held
    link may be unheld); where they do not, no
    acceleration of it is defined: SolverError naming the joint (`_refuse_massless`). Where M is singular along a
    combination of directions that each move mass (a massless floating root and a slider along the base's x), the
    Schur kernel declines and `constrained_acceleration` solves the KKT matrix where M is positive definite on the
    null space of Φ_x, else names the directions (`tree`)."""
    if _refuse_massless(model, mass, jac, x, xd, t):
        check_rank(jac, names, x, t, xd)
        return constrained_acceleration(mass, bias, tau, jac, target, names=names, x=x, xd=xd, t=t, method="kkt")
    return constrained_acceleration(mass, bias, tau, jac, target, names=names, x=x, xd=xd, t=t,
                                    mass_ratio=SCHUR_PIVOT_RATIO, tree=_tree(model))


def _projection_factor(model, mass: np.ndarray, jac: np.ndarray, x, xd, t: float) -> np.ndarray | None:
    """M's Cholesky factor for the projections' solves in the M metric; None where M is singular but the KKT
    matrix is regular (the projections then solve it whole); SolverError naming the joints where it is not — the
    rule of the accelerations (`_kkt_solve`)."""
    factor = try_mass_factor(mass)
    if factor is None:
        refuse_unheld(mass, jac, _tree(model), x, xd, t)
    return factor


def _metric_step(factor, mass: np.ndarray, jac: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The step s of least M norm with Φ_x s = target: M⁻¹Φ_xᵀ(Φ_x M⁻¹Φ_xᵀ)⁻¹ target through the factor of M, or
    the whole KKT matrix where there is none (`_projection_factor`)."""
    if factor is None:
        return constrained_acceleration(mass, np.zeros(len(mass)), None, jac, target, method="kkt")[0]
    minv_jt = factor_solve(factor, jac.T)
    return minv_jt @ np.linalg.solve(jac @ minv_jt, target)


def constrained_accelerations(model, x, xd, tau=None, t: float = 0.0, *,
                              baumgarte: tuple[float, float] = DEFAULT_BAUMGARTE) -> tuple[np.ndarray, np.ndarray]:
    """(ẍ, λ) from the KKT system; `tau` = applied joint-space generalized forces (n_tangent), default zero."""
    x, xd = np.asarray(x, dtype=float), np.asarray(xd, dtype=float)
    cset = constraint_set(model)
    mass, h = mass_matrix_and_bias(model, x, xd)
    alpha, beta = baumgarte
    corrector = Corrector.baumgarte(alpha, beta)
    if cset.n == 0:
        return _kkt_solve(model, mass, h, tau, np.zeros((0, len(xd))), np.zeros(0), (), x, xd, t)
    if cset.functions:
        phi, jac, phi_t, bias = cset.all_terms(x, xd, t)
    else:   # loops only (no Φ_t): the loop rows directly, without the generic stacking
        phi, jac, bias = loop_terms(model, cset.loops, x, xd)
        phi_t = None
    phi_dot = jac @ xd if phi_t is None else jac @ xd + phi_t
    return _kkt_solve(model, mass, h, tau, jac, corrector.target(phi, phi_dot, bias), cset.names, x, xd, t)


def project_velocities(model, x, xd, t: float = 0.0) -> np.ndarray:
    """ẋ closest to `xd` in the M(x) metric with Φ_x ẋ + Φ_t = 0."""
    x, xd = np.asarray(x, dtype=float), np.asarray(xd, dtype=float)
    cset = constraint_set(model)
    if cset.n == 0:
        return xd.copy()
    _, jac, phi_t, _ = cset.all_terms(x, None, t)
    check_rank(jac, cset.names, x, t, xd)
    mass = mass_matrix_and_bias(model, x)[0]
    factor = _projection_factor(model, mass, jac, x, xd, t)
    return xd + _metric_step(factor, mass, jac, -(jac @ xd + phi_t))


def project_positions(model, x, t: float = 0.0, *, tolerance: float = 1e-12,
                      max_iterations: int = 30) -> np.ndarray:
    """x with Φ(x, t) = 0, by Gauss–Newton steps of minimal norm in the M(x) metric (M frozen at the input).

    `tolerance` is on |Φ|∞ relative to the model's length scale (rows in m or rad). SolverError if it fails.
    """
    x = np.array(x, dtype=float)
    cset = constraint_set(model)
    if cset.n == 0:
        return x
    mass = mass_matrix_and_bias(model, x)[0]
    factor = _projection_factor(model, mass, cset.jacobian(x), x, None, t)
    scale = max([np.linalg.norm(b.translation) for b in model.bodies] + [1.0])
    for _ in range(max_iterations):
        phi, jac, _, _ = cset.all_terms(x, None, t)
        if np.max(np.abs(phi)) <= tolerance * scale:
            return x
        try:
            step = _metric_step(factor, mass, jac, -phi)
        except (np.linalg.LinAlgError, SolverError):
            break
        x = model.integrate_configuration(x, step, 1.0)
    phi = cset.residual(x, t)
    if np.max(np.abs(phi)) <= tolerance * scale:
        return x
    raise SolverError(f"position projection failed: |Φ|∞ = {np.max(np.abs(phi)):.3g} at " + state_text(x, None, t))


def joint_reactions(model, x, lam) -> tuple[np.ndarray, dict[str, dict[str, np.ndarray]]]:
    """(Φ_xᵀ λ, per loop {"point": world point A, "force": N, "moment": N·m}), world axes.

    "force"/"moment" act on link_a at the loop point A (the opposite acts on link_b), from the loop type's
    `reaction` (built-ins: the moment is non-zero only for revolute loops; at non-closed planar states the
    basis-rotation term is neglected; plugin types without `reaction` report zeros).
    """
    x, lam = np.asarray(x, dtype=float), np.asarray(lam, dtype=float)
    cset = constraint_set(model)
    jac = cset.jacobian(x)
    kin = tree_kinematics(model, x)
    per_loop: dict[str, dict[str, np.ndarray]] = {}
    for loop in cset.loops:
        rows = lam[cset.row_slices[loop.name]]
        a = point_state(model, kin, loop.link_a, loop.xyz_a, jacobian=False)
        b = point_state(model, kin, loop.link_b, loop.xyz_b, jacobian=False)
        force, moment = loop.law.reaction(a, b, rows)
        per_loop[loop.name] = {"point": a.position, "force": force, "moment": moment}
    return jac.T @ lam, per_loop


@register_formulation
class MultiplierFormulation(Formulation):
    """Lagrange's equations of the first kind over the whole tree (a DAE of index 1 with Baumgarte gains)."""

    name = "multipliers"
    description = "Lagrange multipliers over the whole tree: KKT solve, Baumgarte stabilisation, projection (paper 003)"
    state_space = JOINT
    can_project = True
    has_multipliers = True

    def mass_matrix(self, model, q, t):
        raise ModelError("formulation 'multipliers' integrates the whole tree with constraint forces: it has no "
                         "reduced mass matrix", argument="formulation",
                         expected="a generalized formulation (reduced, matrix_calculus, …) for M and h")

    bias_forces = mass_and_bias = mass_matrix

    def forward_dynamics(self, model, q, v, tau, t):
        """v̇ of the independent coordinates: ẍ of the tree from the KKT solve, read at their slots (the
        generalized forces Q act on the independent joints, whose rows of G are the identity)."""
        x, xd, _, _ = model.joint_state(q, v, t)
        slots = model.velocity_slots
        torque = None
        if tau is not None:
            torque = np.zeros(model.n_tangent)
            torque[slots] = tau
        return constrained_accelerations(model, x, xd, torque, t)[0][slots]

    def joint_accelerations(self, model, x, xd, tau, t, **options):
        return constrained_accelerations(model, x, xd, tau, t, **options)

    def project_positions(self, model, x, t):
        return project_positions(model, x, t)

    def project_velocities(self, model, x, xd, t):
        return project_velocities(model, x, xd, t)
