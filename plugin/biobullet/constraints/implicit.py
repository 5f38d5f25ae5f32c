"""Implicit coordinates: joints made dependent by loop closures, for the `reduced` formulations.

Φ(θ_dep; θ_known) = 0 is solved by Newton for the dependent joint angles; derivatives by implicit
differentiation (Φ_dep = ∂Φ/∂θ_dep, Φ_kn = ∂Φ/∂θ_known, b(θ, u) = Φ̇_θ u the velocity product):
    G_dep = −Φ_dep⁻¹ Φ_kn G_kn,   θ̇_dep = −Φ_dep⁻¹ Φ_kn θ̇_kn,   γ_dep = −Φ_dep⁻¹ (Φ_kn γ_kn + b(θ, θ̇))
and for the Hessians over q̃ = (q, t): H_dep[i, j] = −Φ_dep⁻¹ (Φ_kn H_kn[i, j] + Φ_θθ(∇θ_i, ∇θ_j)), the bilinear
form obtained from b by polarization. Loop equations are invariant under a rigid motion of the whole tree, so a
floating base is held at the identity here (the base never becomes dependent).
"""
from __future__ import annotations

import weakref

import numpy as np

from ..errors import SolverError
from .loops import Loop, loop_terms

#: condition number of Φ_dep above which the configuration is reported as singular (e.g. a four-bar toggle)
CONDITION_LIMIT = 1e8
NEWTON_MAX_ITERATIONS = 50
STEP_TOLERANCE = 1e-13   # rad (or m): a Newton step this small has converged to round-off
CONTINUATION_STEP = 0.1  # rad (or m): largest input change solved in one Newton solve from the cache


class LoopResolver:
    """Resolver (model.coordinates protocol) for the joints that loop closures make dependent.

    `outputs`: dependent joint indices; `known`: the other joints the loop equations depend on, which earlier
    resolvers must have filled. The resolver keeps a warm-start cache (last solution and its sensitivity) so
    that Newton continues along the branch it is on; this is a cache for speed and branch continuity, not model
    state — any consistent starting guess gives the same solution on the same branch.
    """

    def __init__(self, model, loops: tuple[Loop, ...], dependent: tuple[int, ...], known: tuple[int, ...],
                 initial_guess: np.ndarray, revolute: np.ndarray) -> None:
        self._model = weakref.ref(model)  # the model owns this resolver: no reference cycle
        self.loops = loops
        self.outputs = tuple(dependent)
        self.known = tuple(known)
        self.n_equations = sum(loop.n_equations for loop in loops)
        offset_v = 6 if model.floating_base else 0
        self._cols_dep = [offset_v + j for j in self.outputs]
        self._cols_known = [offset_v + j for j in self.known]
        self._offset_q = 7 if model.floating_base else 0
        self._initial = np.array(initial_guess, dtype=float)   # θ_dep guess when there is no warm start
        self._revolute = np.asarray(revolute, dtype=bool)      # dependents whose angle may be wrapped by 2π
        self._warm: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # (θ_known, θ_dep, dθ_dep/dθ_known)
        scale = max([np.linalg.norm(b.translation) for b in model.bodies]
                    + [np.linalg.norm(l.xyz_a) + np.linalg.norm(l.xyz_b) for l in loops] + [1e-3])
        self.residual_tolerance = 1e-12 * scale

    # ------------------------------------------------------------------ helpers
    @property
    def model(self):
        return self._model()

    def _x(self, theta: np.ndarray) -> np.ndarray:
        if self._offset_q:
            return np.concatenate([[0, 0, 0, 0, 0, 0, 1.0], theta])
        return np.array(theta, dtype=float)

    def _xd(self, rate: np.ndarray) -> np.ndarray:
        return np.concatenate([np.zeros(6), rate]) if self._offset_q else rate

    def terms(self, theta: np.ndarray, rate: np.ndarray | None = None):
        """(Φ, Φ_θ over all joints, b) at joint angles θ (base at identity)."""
        phi, jac, bias = loop_terms(self.model, self.loops, self._x(theta),
                                    None if rate is None else self._xd(rate))
        return phi, jac[:, (6 if self._offset_q else 0):], bias

    def _state_text(self, theta: np.ndarray, t: float) -> str:
        names = self.model.joint_names
        return f"t = {t:.17g}, " + ", ".join(f"{names[k]} = {theta[k]:.17g}" for k in range(len(theta)))

    # ------------------------------------------------------------------ Newton
    def _guess(self, theta_known: np.ndarray) -> np.ndarray:
        if self._warm is None:
            return self._initial.copy()
        known0, dep0, sensitivity = self._warm
        return dep0 + sensitivity @ (theta_known - known0)

    def solve(self, theta: np.ndarray, t: float, *, check_singular: bool = True
              ) -> tuple[np.ndarray, np.ndarray, float]:
        """Fill θ_dep in `theta` (in place) so that Φ = 0; returns (Φ_θ, Φ_dep⁻¹, cond₁(Φ_dep)) there.

        Far from the cached solution (a known joint moved by more than CONTINUATION_STEP) the inputs are
        moved there in substeps, each solved from the linear prediction of the previous: continuation along
        the branch instead of one Newton solve from a poor guess.
        """
        known = list(self.known)
        target = theta[known].copy()
        if self._warm is not None:
            start = self._warm[0]
            jump = np.max(np.abs(target - start), initial=0.0)
            if jump > CONTINUATION_STEP:
                for s in np.linspace(0.0, 1.0, int(np.ceil(jump / CONTINUATION_STEP)) + 1)[1:-1]:
                    theta[known] = start + s * (target - start)
                    self._finish(theta, t, *self._newton(theta, t), check_singular=False)
                theta[known] = target
        return self._finish(theta, t, *self._newton(theta, t), check_singular=check_singular)

    def _newton(self, theta: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
        dep = list(self.outputs)
        guess = self._guess(theta[list(self.known)])
        theta[dep] = guess
        phi, jac, _ = self.terms(theta)
        norm = np.linalg.norm(phi)
        # already at round-off (e.g. the same inputs again): no step needed
        step_norm = 0.0 if norm <= 1e-3 * self.residual_tolerance else np.inf
        for _ in range(NEWTON_MAX_ITERATIONS):
            if norm <= self.residual_tolerance and step_norm <= 1e-7:
                break  # quadratic convergence: the error left is ~ step², below round-off
            try:
                step = np.linalg.solve(jac[:, dep], phi)
            except np.linalg.LinAlgError:
                raise SolverError(f"loop closure: singular constraint Jacobian (|Φ| = {norm:.3g} m) at "
                                  + self._state_text(theta, t)) from None
            scale, base = 1.0, theta[dep].copy()
            while True:  # backtracking keeps Newton from jumping branches far from the solution
                theta[dep] = base - scale * step
                phi_new, jac_new, _ = self.terms(theta)
                norm_new = np.linalg.norm(phi_new)
                if norm_new < norm or scale < 1e-3 or norm_new <= self.residual_tolerance:
                    break
                scale *= 0.5
            phi, jac, norm = phi_new, jac_new, norm_new
            step_norm = scale * np.max(np.abs(step))
            if step_norm <= STEP_TOLERANCE:
                break
        if not norm <= self.residual_tolerance:
            condition = np.linalg.cond(jac[:, dep])
            raise SolverError(f"loop closure did not converge: |Φ| = {norm:.3g} m after {NEWTON_MAX_ITERATIONS} "
                              f"Newton steps (the loops {', '.join(l.name for l in self.loops)} may not close for "
                              f"these inputs; cond(∂Φ/∂θ_dep) = {condition:.3g}) at " + self._state_text(theta, t))
        return jac, guess

    def _finish(self, theta: np.ndarray, t: float, jac: np.ndarray, guess: np.ndarray, *,
                check_singular: bool) -> tuple[np.ndarray, np.ndarray, float]:
        dep, known = list(self.outputs), list(self.known)
        # angle wrapping: stay on the 2π-branch of the prediction (continuity of continuous joints)
        wraps = np.round((theta[dep] - guess) / (2 * np.pi)) * self._revolute
        theta[dep] -= 2 * np.pi * wraps
        jac_dep = jac[:, dep]
        try:
            inverse = np.linalg.inv(jac_dep)
            condition = float(np.linalg.norm(jac_dep, 1) * np.linalg.norm(inverse, 1))
        except np.linalg.LinAlgError:
            inverse, condition = np.full_like(jac_dep, np.nan), np.inf
        if not np.isfinite(condition):
            condition = np.inf
        if check_singular and not condition < CONDITION_LIMIT:
            raise SolverError(f"singular loop configuration: cond₁(∂Φ/∂θ_dep) = {condition:.3g} > "
                              f"{CONDITION_LIMIT:g} (toggle/locked position of {', '.join(l.name for l in self.loops)})"
                              " at " + self._state_text(theta, t))
        if np.isfinite(condition):
            self._warm = (theta[known].copy(), theta[dep].copy(), -inverse @ jac[:, known])
        return jac, inverse, condition

    # ------------------------------------------------------------------ Resolver protocol
    def resolve(self, jets, t: float, need_rates: bool) -> None:
        dep, known = list(self.outputs), list(self.known)
        jac, inverse, _ = self.solve(jets.theta, t)
        jac_known = jac[:, known]
        jets.gradient[dep] = -inverse @ (jac_known @ jets.gradient[known])
        if need_rates:
            jets.rate[dep] = -inverse @ (jac_known @ jets.rate[known])
            _, _, bias = self.terms(jets.theta, jets.rate)
            jets.gamma[dep] = -inverse @ (jac_known @ jets.gamma[known] + bias)

    def resolve_hessians(self, theta: np.ndarray, gradient: np.ndarray, hessian: np.ndarray | None,
                         t: float) -> None:
        dep, known = list(self.outputs), list(self.known)
        jac, inverse, _ = self.solve(theta, t)
        jac_known = jac[:, known]
        gradient[dep] = -inverse @ (jac_known @ gradient[known])
        if hessian is None:
            return
        size = gradient.shape[1]
        # Φ_θθ(g_i, g_j) = (b(g_i + g_j) − b(g_i) − b(g_j)) / 2, b(u) = Φ_θθ(u, u)
        directions = gradient.T  # (n_ext, n_joints)
        single = [self.terms(theta, directions[i])[2] for i in range(size)]
        curvature = np.zeros((self.n_equations, size, size))
        for i in range(size):
            curvature[:, i, i] = single[i]
            for j in range(i + 1, size):
                both = self.terms(theta, directions[i] + directions[j])[2]
                curvature[:, i, j] = curvature[:, j, i] = 0.5 * (both - single[i] - single[j])
        rhs = np.tensordot(jac_known, hessian[known], axes=1) + curvature
        hessian[dep] = -(inverse @ rhs.reshape(self.n_equations, -1)).reshape(len(dep), size, size)


def loop_condition(model, q, t: float = 0.0) -> float:
    """1-norm condition number of ∂Φ/∂θ_dep at generalized positions q (∞ if Newton fails there); the
    reduced formulations raise SolverError when it exceeds CONDITION_LIMIT."""
    resolvers = [r for r in model.coordinate_map.resolvers if isinstance(r, LoopResolver)]
    if not resolvers:
        raise SolverError(f"{model.file}: the model has no implicit (loop-dependent) coordinates")
    q = np.asarray(q, dtype=float)
    base = 7 if model.floating_base else 0
    cmap = model.coordinate_map
    theta = np.zeros(cmap.n_joints)
    theta[list(cmap.independent)] = q[base:]
    worst = 0.0
    from ..model.coordinates import CoordinateJets
    jets = CoordinateJets(theta, np.zeros((cmap.n_joints, cmap.nq)), np.zeros(cmap.n_joints),
                          np.zeros(cmap.n_joints))
    for resolver in cmap.resolvers:
        if isinstance(resolver, LoopResolver):
            try:
                _, _, condition = resolver.solve(jets.theta, t, check_singular=False)
            except SolverError:
                return float("inf")
            worst = max(worst, condition)
        else:
            resolver.resolve(jets, t, False)
    return worst
