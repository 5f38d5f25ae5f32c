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
from .loops import Loop, loop_terms, tree_kinematics

#: condition number of Φ_dep above which the configuration is reported as singular (e.g. a four-bar toggle)
CONDITION_LIMIT = 1e8
NEWTON_MAX_ITERATIONS = 50
STEP_TOLERANCE = 1e-13   # rad (or m): a Newton step this small has converged to round-off
CONTINUATION_STEP = 0.1  # rad (or m): largest input change solved in one Newton solve from the cache


def _cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross products along the last axis of (..., 3) arrays (np.cross is slow on small arrays)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack((a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0), axis=-1)


class _VectorLoops:
    """Point and planar loop rows of `loops.loop_terms`, vectorised over all loop points (the resolver's hot
    path: Newton calls it several times per right-hand side). Same equations, same row order; revolute loops
    are not handled here (the resolver then falls back to `loop_terms`).

    Ground-fixed points use a virtual extra body (identity placement, no motion)."""

    def __init__(self, model, loops: tuple[Loop, ...]) -> None:
        self.n_loops = len(loops)
        bodies, offsets, bases = [], [], []
        ground = len(model.bodies)
        for side in ("a", "b"):
            for loop in loops:
                frame = model.frame(getattr(loop, "link_" + side))
                xyz = getattr(loop, "xyz_" + side)
                bodies.append(frame.body if frame.body >= 0 else ground)
                offsets.append(frame.rotation @ xyz + frame.translation)   # in the body frame (world if ground)
                if side == "a":
                    bases.append(frame.rotation @ loop.basis)              # planar basis in link_a's body frame
        self.body = np.array(bodies, dtype=int)
        self.offset = np.array(offsets).reshape(-1, 3)
        self.basis = np.array(bases).reshape(-1, 3, 2)
        # rows: every loop's point rows (3 per loop, x y z) then planar rows (2 per loop), picked per type
        select, row_point, row_planar = [], 0, 3 * len(loops)
        for k, loop in enumerate(loops):
            select.extend(range(3 * k, 3 * k + 3) if loop.type == "point" else
                          range(row_planar + 2 * k, row_planar + 2 * k + 2))
        self.select = np.array(select, dtype=int)
        self.any_planar = any(loop.type == "planar" for loop in loops)

    @staticmethod
    def supports(loops: tuple[Loop, ...]) -> bool:
        return all(loop.type in ("point", "planar") for loop in loops)

    def evaluate(self, model, x: np.ndarray, xd: np.ndarray | None, kin=None):
        """(Φ, Φ_x, b, kin) like `loop_terms` (b None without ẋ); `kin` = tree kinematics at x to reuse."""
        if kin is None:
            kin = tree_kinematics(model, x)
        n_l, n_t = self.n_loops, model.n_tangent
        rot = np.concatenate([kin.rotations, np.eye(3)[None]])
        pos = np.concatenate([kin.positions, np.zeros((1, 3))])
        anc = np.concatenate([kin.arrays.ancestry, np.zeros((1, n_t))])[self.body]          # (2L, n)
        r = rot[self.body]
        p = np.einsum("kij,kj->ki", r, self.offset) + pos[self.body]                           # (2L, 3)
        s = kin.subspace
        jac_lin = np.stack([s[0] + s[4] * p[:, 2:3] - s[5] * p[:, 1:2],
                            s[1] + s[5] * p[:, 0:1] - s[3] * p[:, 2:3],
                            s[2] + s[3] * p[:, 1:2] - s[4] * p[:, 0:1]], axis=1) * anc[:, None, :]
        d = p[:n_l] - p[n_l:]
        d_jac = jac_lin[:n_l] - jac_lin[n_l:]                                                   # (L, 3, n)
        phi_rows = [d.reshape(-1)]
        jac_rows = [d_jac.reshape(-1, n_t)]
        e = None
        if self.any_planar:
            e = np.einsum("lij,ljk->lik", r[:n_l], self.basis)                                  # (L, 3, 2)
            jac_ang = s[3:][None] * anc[:n_l, None, :]                                          # (L, 3, n)
            e_cross_d = _cross3(e.transpose(0, 2, 1), d[:, None, :])                             # (L, 2, 3)
            phi_rows.append(np.einsum("lik,li->lk", e, d).reshape(-1))
            jac_rows.append((np.einsum("lik,lin->lkn", e, d_jac)
                             + np.einsum("lki,lin->lkn", e_cross_d, jac_ang)).reshape(-1, n_t))
        phi = np.concatenate(phi_rows)[self.select]
        jac = np.concatenate(jac_rows)[self.select]
        bias = None
        if xd is not None:
            t = kin.arrays
            vel = (t.ancestry * xd) @ s.T
            joint_v = (s[:, t.own_tangent] * xd[t.own_tangent]).T * t.one_dof_mask
            c = np.concatenate([_cross3(vel[:, 3:], joint_v[:, :3]) + _cross3(vel[:, :3], joint_v[:, 3:]),
                                _cross3(vel[:, 3:], joint_v[:, 3:])], axis=1)
            acc = t.body_ancestry @ c
            vel = np.concatenate([vel, np.zeros((1, 6))])[self.body]
            acc = np.concatenate([acc, np.zeros((1, 6))])[self.body]
            omega, alpha = vel[:, 3:], acc[:, 3:]
            p_vel = vel[:, :3] + _cross3(omega, p)
            p_acc = acc[:, :3] + _cross3(alpha, p) + _cross3(omega, p_vel)
            d_acc = p_acc[:n_l] - p_acc[n_l:]
            bias_rows = [d_acc.reshape(-1)]
            if self.any_planar:
                et = e.transpose(0, 2, 1)                                                        # (L, 2, 3)
                w_a, a_a = omega[:n_l, None, :], alpha[:n_l, None, :]
                we = _cross3(w_a, et)
                d_vel = (p_vel[:n_l] - p_vel[n_l:])[:, None, :]
                bias_rows.append((np.sum(et * d_acc[:, None, :], axis=2) + 2.0 * np.sum(we * d_vel, axis=2)
                                  + np.sum((_cross3(a_a, et) + _cross3(w_a, we)) * d[:, None, :], axis=2)
                                  ).reshape(-1))
            bias = np.concatenate(bias_rows)[self.select]
        return phi, jac, bias, kin


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
        self._vector = _VectorLoops(model, loops) if _VectorLoops.supports(loops) else None
        self._kin: tuple[bytes, object] | None = None   # tree kinematics of the last θ (reused for the rates)
        self._memo: tuple[tuple, tuple] | None = None   # last resolve(): exact inputs -> outputs

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
        if self._vector is not None:
            key = theta.tobytes()
            kin = self._kin[1] if self._kin is not None and self._kin[0] == key else None
            phi, jac, bias, kin = self._vector.evaluate(self.model, self._x(theta),
                                                        None if rate is None else self._xd(rate), kin)
            self._kin = (key, kin)
        else:
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
        # exact memo of the last call: integrators evaluate the same state twice per right-hand side
        key = (float(t), need_rates, jets.theta[known].tobytes(), jets.gradient[known].tobytes(),
               jets.rate[known].tobytes() if need_rates else b"", jets.gamma[known].tobytes() if need_rates else b"")
        if self._memo is not None and self._memo[0] == key:
            jets.theta[dep], jets.gradient[dep], rate, gamma = self._memo[1]
            if need_rates:
                jets.rate[dep], jets.gamma[dep] = rate, gamma
            return
        jac, inverse, _ = self.solve(jets.theta, t)
        jac_known = jac[:, known]
        jets.gradient[dep] = -inverse @ (jac_known @ jets.gradient[known])
        if need_rates:
            jets.rate[dep] = -inverse @ (jac_known @ jets.rate[known])
            _, _, bias = self.terms(jets.theta, jets.rate)
            jets.gamma[dep] = -inverse @ (jac_known @ jets.gamma[known] + bias)
        self._memo = (key, (jets.theta[dep].copy(), jets.gradient[dep].copy(), jets.rate[dep].copy(),
                            jets.gamma[dep].copy()))

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
