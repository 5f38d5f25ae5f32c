"""Flight, single and double support of the extensible anthropomorph, and the transitions between them.

Each foot is in one of three states:
  ``free``       no ground force (flight for that leg);
  ``pinned``     holonomic constraint r_A(q) = anchor (`FootConstraint`), multiplier = foot reaction R_A [N],
                 solved with the dynamics as a KKT system; constraint drift damped by Baumgarte stabilisation
                 g̈ + 2α ġ + β² g = 0 (α, β owned by the constraint object);
  ``compliant``  a compliant ground contact at the foot point: normal force from a library normal law
                 (`biobullet.contact.normal`, penetration δ = ground − y_A) and friction from a library friction
                 law (`biobullet.contact.friction`, slip = ẋ_A).
Transitions are events located by SciPy `solve_ivp` (terminal events; integration restarts after each):
  touchdown  y_A − ground crosses 0 downwards on a free foot → ``compliant`` (touchdown="compliant") or an impact
             map onto the constrained phase (touchdown="impact": perfectly plastic impact
             q̇⁺ = q̇⁻ − M⁻¹Jᵀ(J M⁻¹ Jᵀ)⁻¹ J q̇⁻ over the pinned feet, then ``pinned``);
  lift-off   the normal (vertical) reaction of a pinned foot crosses 0 downwards → ``free``;
  release    a compliant foot rises `release_gap` above the ground → ``free`` (the law's force is already 0 for
             δ ≤ 0; the gap is a hysteresis against touchdown/release chatter of a grazing foot). The same gap
             arms a foot that has just lifted off: its touchdown counts once it has risen `release_gap` (or,
             never having risen, once it sinks `release_gap` below the ground) — a foot lifts off level with the
             ground at zero vertical speed, and round-off alone would otherwise decide whether it touches down
             again at once. While δ > 0 the foot stays compliant
             even where a restitution law's force is clipped to zero (the clip is continuous, no event needed).
The reference engine's event machinery (`biobullet.integrate`) is built around the URDF `Model`; these phases use
`solve_ivp` events directly, with the same conventions (terminal + restart).

Energy bookkeeping: the state is augmented with the work integrals W_moments = ∫ τ·θ̇ (+ ankle moments),
W_ground = ∫ Σ R_A·ṙ_A, W_damper = −∫ Σ c l̇², W_inertia = −∫ ½ Σ İ φ̇², so that
  ΔE_mech = W_moments + W_ground + W_damper + W_inertia − (impact losses),  E_mech = T + V_gravity + V_springs,
and contact dissipation = −(W_ground + V_contact(t)) for the compliant feet (V_contact = law potential).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import root

from biobullet.contact.base import FrictionLaw, NormalLaw
from biobullet.contact.element import law_potential
from biobullet.contact.friction import Regularized
from biobullet.contact.normal import Flores
from biobullet.core.errors import ModelError, SolverError
from biobullet.extensible import recursion as rec
from biobullet.extensible.chain_model import ChainModel

FREE, PINNED, COMPLIANT = "free", "pinned", "compliant"
FOOT_STATES = (FREE, PINNED, COMPLIANT)


@dataclass(frozen=True)
class FootConstraint:
    """Holonomic foot constraint r_A(q) − anchor = 0 with Baumgarte gains (g̈ + 2α ġ + β² g = 0) [1/s]."""

    foot: int
    anchor: tuple[float, float]
    alpha: float = 20.0
    beta: float = 20.0

    def residual(self, model: ChainModel, q: np.ndarray) -> np.ndarray:
        return rec.foot_position(model, q, self.foot) - np.asarray(self.anchor)

    def acceleration_rhs(self, model: ChainModel, q: np.ndarray, v: np.ndarray, J: np.ndarray) -> np.ndarray:
        """Right-hand side γ of J q̈ = γ = −J̇q̇ − 2α J q̇ − β² g."""
        return (-rec.foot_velocity_product(model, q, v, self.foot) - 2.0 * self.alpha * (J @ v)
                - self.beta ** 2 * self.residual(model, q))


@dataclass(frozen=True)
class CompliantGround:
    """Compliant ground y = height under both feet: a library normal law and an optional friction law."""

    normal_law: NormalLaw = field(default_factory=lambda: Flores(stiffness=1.0e6, restitution=0.3))
    friction_law: FrictionLaw | None = field(default_factory=lambda: Regularized(mu=0.8, v0=0.05))
    height: float = 0.0
    foot_lever: float = 0.1   # m: ankle moments on a compliant foot are limited to ± foot_lever · F_N
    release_gap: float = 1e-4  # m: a compliant foot becomes free only this far above the ground (force is 0 there)

    def force(self, model: ChainModel, q: np.ndarray, v: np.ndarray, foot: int,
              impact_velocity: float | None) -> np.ndarray:
        """Ground force on the foot (F_x, F_y) [N]."""
        r = rec.foot_position(model, q, foot)
        rd = rec.foot_jacobian(model, q, foot) @ v
        delta, delta_dot = self.height - r[1], -rd[1]
        vi = impact_velocity if self.normal_law.needs_impact_velocity else None
        fn = float(self.normal_law.force(delta, delta_dot, vi))
        ft = 0.0 if self.friction_law is None else float(self.friction_law.force(float(rd[0]), fn))
        return np.array([ft, fn])

    def potential(self, model: ChainModel, q: np.ndarray, foot: int) -> float:
        return law_potential(self.normal_law, self.height - float(rec.foot_position(model, q, foot)[1]))


Controller = Callable[[float, np.ndarray, np.ndarray, tuple[str, str]], tuple[np.ndarray | None, np.ndarray | None]]


def constrained_accelerations(model: ChainModel, q: np.ndarray, v: np.ndarray, t: float, Q: np.ndarray,
                              constraints: Sequence[FootConstraint]) -> tuple[np.ndarray, np.ndarray]:
    """Solve the KKT system [M −Jᵀ; J 0][q̈; R] = [Q − h; γ] (LU of the whole matrix). Returns q̈ and the reactions R, shape (len(constraints), 2) [N] (force of the ground on the foot)."""
    M, h = rec.dynamics_terms(model, q, v, t)
    if not constraints:
        return np.linalg.solve(M, Q - h), np.zeros((0, 2))
    J = np.vstack([rec.foot_jacobian(model, q, c.foot) for c in constraints])
    gamma = np.concatenate([c.acceleration_rhs(model, q, v, J[2 * i:2 * i + 2]) for i, c in enumerate(constraints)])
    # the full KKT matrix, not the Schur complement: M itself is singular when all links are parallel (e.g. the
    # vertical stance: stretching every link about its fixed COM has no inertia), the constrained system is not
    N, k = M.shape[0], J.shape[0]
    A = np.zeros((N + k, N + k))
    A[:N, :N] = M
    A[:N, N:] = -J.T
    A[N:, :N] = J
    sol = np.linalg.solve(A, np.concatenate([Q - h, gamma]))
    return sol[:N], sol[N:].reshape(-1, 2)


def impact_map(model: ChainModel, q: np.ndarray, v: np.ndarray, t: float, feet: Sequence[int]) -> tuple[np.ndarray,
                                                                                                         np.ndarray]:
    """Perfectly plastic impact onto the feet `feet`: q̇⁺ = q̇⁻ + M⁻¹JᵀΛ with J q̇⁺ = 0. Returns (q̇⁺, Λ (k, 2) [N·s])."""
    M = rec.mass_matrix(model, q, t)
    J = np.vstack([rec.foot_jacobian(model, q, foot) for foot in feet])
    MinvJt = np.linalg.solve(M, J.T)
    lam = np.linalg.solve(J @ MinvJt, -J @ v)
    return v + MinvJt @ lam, lam.reshape(-1, 2)


@dataclass
class Trajectory:
    """Samples of a phase-switching run. q, v: (T, 2n+2); phase: label per sample; reactions: (T, 2, 2) ground
    force on each foot [N] (0 when free); work: dict of (T,) work integrals [J]; events: list of dicts
    (t, kind, foot, details); energy components via `energy_table()`."""

    model: ChainModel
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    phase: list[str]
    foot_states: list[tuple[str, str]]
    reactions: np.ndarray
    tau: np.ndarray
    work: dict[str, np.ndarray]
    contact_potential: np.ndarray
    events: list[dict]
    impact_losses: np.ndarray      # cumulative kinetic energy lost in impact maps up to each sample [J]
    nfev: int = 0

    def energy_table(self) -> dict[str, np.ndarray]:
        """kinetic, gravity, spring, contact_potential, mechanical (T + V_g + V_s), work terms, contact dissipation,
        residual = ΔE_mech + ΔV_contact − (W_moments + W_ground + W_damper + W_inertia) + impact losses... see doc."""
        e = rec.energy(self.model, self.q, self.v, self.t)
        mech = e.total
        w = self.work
        dissipation = -(w["ground"] + self.contact_potential - self.contact_potential[0])
        residual = (mech - mech[0]) - (w["moments"] + w["ground"] + w["damper"] + w["inertia"]) + self.impact_losses
        return {"kinetic": e.kinetic, "gravity": e.gravity, "spring": e.spring, "mechanical": mech,
                "contact_potential": self.contact_potential, "work_moments": w["moments"], "work_ground": w["ground"],
                "work_damper": w["damper"], "work_inertia": w["inertia"], "contact_dissipation": dissipation,
                "impact_losses": self.impact_losses, "residual": residual}


def _label(states: tuple[str, str]) -> str:
    k = sum(s != FREE for s in states)
    kind = {0: "flight", 1: "single", 2: "double"}[k]
    if k == 0:
        return kind
    how = sorted({s for s in states if s != FREE})
    return f"{kind}({'+'.join(how)})"


def simulate(model: ChainModel, q0: np.ndarray, v0: np.ndarray, t_end: float, *,
             feet: Sequence[str] = (FREE, FREE), anchors: Sequence[Sequence[float]] | None = None,
             touchdown: str = "compliant", ground: CompliantGround | None = None,
             controller: Controller | None = None, breakpoints: Sequence[float] = (),
             with_ground: bool = True, alpha: float = 20.0, beta: float = 20.0, method: str = "DOP853", rtol: float = 1e-9,
             atol: float = 1e-9, max_step: float = np.inf, dt_sample: float = 1e-3, t0: float = 0.0,
             progress: Callable[[str], None] | None = None, max_segments: int = 2000) -> Trajectory:
    """Integrate from (q0, v0) over [t0, t_end] with phase switching (module docstring).

    feet: initial state of each foot (free/pinned/compliant); anchors: pinned feet's ground points (default: the
    current foot positions); touchdown: "compliant" or "impact"; controller(t, q, v, foot_states) → (τ (n−1) or None,
    ankle (2) or None); ankle moments act on pinned feet, and on compliant feet limited to ± ground.foot_lever·F_N. breakpoints: times where the controller switches
    (integration restarts there). with_ground=False: no ground at all (free flight through y < 0, no touchdown).
    Samples every dt_sample plus every event.
    """
    if touchdown not in ("compliant", "impact"):
        raise ModelError(f"touchdown={touchdown!r}", argument="touchdown", expected="'compliant' or 'impact'")
    for s in feet:
        if s not in FOOT_STATES:
            raise ModelError(f"foot state {s!r}", argument="feet", expected=" / ".join(FOOT_STATES))
    ground = ground or CompliantGround()
    n, N = model.n_links, model.dof
    q0, v0 = np.asarray(q0, dtype=float).copy(), np.asarray(v0, dtype=float).copy()
    states = list(feet)
    anchor = [None, None]
    for i in range(2):
        if states[i] == PINNED:
            anchor[i] = tuple(np.asarray(anchors[i], dtype=float)) if anchors is not None and anchors[i] is not None \
                else tuple(rec.foot_position(model, q0, i))
    impact_vel = [None, None]
    for i in range(2):
        if states[i] == COMPLIANT:
            impact_vel[i] = max(-(rec.foot_jacobian(model, q0, i) @ v0)[1], 1e-3)

    zeroN = np.zeros(N)
    damping = model.damping
    time_varying = model.time_varying_inertia

    def constraints() -> list[FootConstraint]:
        return [FootConstraint(i, anchor[i], alpha, beta) for i in range(2) if states[i] == PINNED]

    def forces(t: float, q: np.ndarray, v: np.ndarray, cons: list[FootConstraint]):
        """q̈, ground force per foot (2, 2), τ, generalized moment force."""
        tau, ankle = (None, None) if controller is None else controller(t, q, v, tuple(states))
        R = np.zeros((2, 2))
        Qc = zeroN
        for i in range(2):
            if states[i] == COMPLIANT:
                R[i] = ground.force(model, q, v, i, impact_vel[i])
                Qc = Qc + rec.foot_jacobian(model, q, i).T @ R[i]
        if ankle is not None:
            ankle = np.asarray(ankle, dtype=float).copy()
            for i in range(2):
                if states[i] == FREE:
                    ankle[i] = 0.0
                elif states[i] == COMPLIANT:   # a point foot of half-length `foot_lever` carries |M| ≤ lever·F_N
                    lim = ground.foot_lever * max(R[i, 1], 0.0)
                    ankle[i] = min(max(ankle[i], -lim), lim)
        Qm = rec.joint_moment_force(model, tau, ankle) if (tau is not None or ankle is not None) else zeroN
        Q = Qm + Qc
        a, Rc = constrained_accelerations(model, q, v, t, Q, cons)
        for c, r in zip(cons, Rc):
            R[c.foot] = r
        return a, R, tau, Qm

    def rhs_factory(cons):
        if not cons and controller is None and all(st == FREE for st in states):
            irate_zero = not model.time_varying_inertia
            damp_zero = not np.any(model.damping)

            def flight_rhs(t, X):   # hot path of torque-free flight: one kernel call and one solve
                q, v = X[:N], X[N:2 * N]
                M, h = rec.dynamics_terms(model, q, v, t)
                out = np.empty(2 * N + 4)
                out[:N] = v
                out[N:2 * N] = np.linalg.solve(M, -h)
                out[2 * N:2 * N + 2] = 0.0
                ld, phid = v[2 + n:], v[2:2 + n]
                out[2 * N + 2] = 0.0 if damp_zero else -float(model.damping @ (ld * ld))
                out[2 * N + 3] = 0.0 if irate_zero else -0.5 * float(model.inertia_rate(t) @ (phid * phid))
                return out
            return flight_rhs

        def rhs(t, X):
            q, v = X[:N], X[N:2 * N]
            a, R, _, Qm = forces(t, q, v, cons)
            p_ground = 0.0
            for i in range(2):
                if states[i] != FREE:   # power of the ground force on the moving foot point
                    p_ground += float(R[i] @ (rec.foot_jacobian(model, q, i) @ v))
            ld, phid = v[2 + n:], v[2:2 + n]
            w_i = -0.5 * float(model.inertia_rate(t) @ (phid * phid)) if time_varying else 0.0
            return np.concatenate([v, a, [Qm @ v, p_ground, -float(damping @ (ld * ld)), w_i]])
        return rhs

    def events_factory(cons):
        evs, meta = [], []
        for i in range(2):
            if states[i] == FREE:
                if not with_ground:
                    continue
                if armed[i]:
                    def touch(t, X, i=i):
                        return float(rec.foot_position(model, X[:N], i)[1]) - ground.height
                    touch.terminal, touch.direction = True, -1.0
                    evs.append(touch)
                    meta.append(("touchdown", i))
                else:   # just lifted off: armed once clear of the ground, or touched down once clearly below it
                    def clear(t, X, i=i):
                        return float(rec.foot_position(model, X[:N], i)[1]) - ground.height - ground.release_gap
                    clear.terminal, clear.direction = True, 1.0
                    def sink(t, X, i=i):
                        return float(rec.foot_position(model, X[:N], i)[1]) - ground.height + ground.release_gap
                    sink.terminal, sink.direction = True, -1.0
                    evs.extend((clear, sink))
                    meta.extend((("clear", i), ("touchdown", i)))
            elif states[i] == PINNED:
                def lift(t, X, i=i):
                    return float(forces(t, X[:N], X[N:2 * N], cons)[1][i, 1])
                lift.terminal, lift.direction = True, -1.0
                evs.append(lift)
                meta.append(("liftoff", i))
            else:
                def leave(t, X, i=i):   # hysteresis: released only release_gap above the ground (no Zeno chatter)
                    return float(rec.foot_position(model, X[:N], i)[1]) - ground.height - ground.release_gap
                leave.terminal, leave.direction = True, 1.0
                evs.append(leave)
                meta.append(("release", i))
        return evs, meta

    # sample grid
    stops = sorted({float(b) for b in breakpoints if t0 < b < t_end} | {float(t_end)})
    T_s, Q_s, V_s, W_s, ph_s, fs_s, R_s, tau_s, cp_s, il_s = [], [], [], [], [], [], [], [], [], []
    events: list[dict] = []
    t = float(t0)
    X = np.concatenate([q0, v0, np.zeros(4)])
    impact_loss = 0.0
    nfev = 0

    def record(tt, XX):
        q, v = XX[:N], XX[N:2 * N]
        _, R, tau, _ = forces(tt, q, v, constraints())
        T_s.append(tt)
        Q_s.append(q)
        V_s.append(v)
        W_s.append(XX[2 * N:])
        ph_s.append(_label(tuple(states)))
        fs_s.append(tuple(states))
        R_s.append(R)
        tau_s.append(np.zeros(n - 1) if tau is None else np.asarray(tau, dtype=float))
        cp_s.append(sum(ground.potential(model, q, i) for i in range(2) if states[i] == COMPLIANT))
        il_s.append(impact_loss)

    armed = [True, True]   # a free foot's touchdown counts (False right after its lift-off: see the docstring)

    def settle_pinned(tt, XX) -> None:
        """Release pinned feet whose vertical reaction is already ≤ 0 (e.g. right after an impact map)."""
        for _ in range(2):
            cons = constraints()
            if not cons:
                return
            _, R, _, _ = forces(tt, XX[:N], XX[N:2 * N], cons)
            neg = [c.foot for c in cons if R[c.foot, 1] <= 0.0]
            if not neg:
                return
            for i in neg:
                states[i] = FREE
                anchor[i] = None
                armed[i] = False
                events.append({"t": tt, "kind": "liftoff", "foot": i, "reaction_y": float(R[i, 1])})

    settle_pinned(t, X)
    record(t, X)
    segments = 0
    while t < t_end - 1e-12:
        stop = next(s for s in stops if s > t + 1e-12)
        cons = constraints()
        evs, meta = events_factory(cons)
        grid = np.arange(np.ceil((t + 1e-12) / dt_sample) * dt_sample, stop, dt_sample)
        grid = grid[grid > t + 1e-12]
        try:
            sol = solve_ivp(rhs_factory(cons), (t, stop), X, method=method, rtol=rtol, atol=atol,
                            events=evs or None, max_step=max_step, dense_output=True)
        except np.linalg.LinAlgError:
            raise SolverError(f"singular dynamics after t = {t:.6g} s in phase {_label(tuple(states))}: the mass "
                              "matrix is singular when all links are parallel (docs/anthropomorph.md)") from None
        except ValueError:
            # SciPy's event root bracketing can fail on LSODA's interpolant when an event function starts at ~0
            # right after a switch; that segment is redone with DOP853 (its own dense output)
            sol = solve_ivp(rhs_factory(cons), (t, stop), X, method="DOP853", rtol=rtol, atol=atol,
                            events=evs or None, max_step=max_step, dense_output=True)
        nfev += sol.nfev
        if sol.status == -1:
            raise SolverError(f"integration failed at t = {sol.t[-1]:.6g} s in phase {_label(tuple(states))}: "
                              f"{sol.message}")
        t_new = float(sol.t[-1])
        for tt in grid[grid < t_new]:
            record(float(tt), sol.sol(tt))
        X = sol.y[:, -1].copy()
        t = t_new
        segments += 1
        if segments > max_segments:
            raise SolverError(f"more than {max_segments} phase segments by t = {t:.6g} s (phase "
                              f"{_label(tuple(states))}): chattering between phases")
        if progress is not None and segments % 5 == 0:
            progress(f"t = {t:.3f} s, {_label(tuple(states))}")
        if sol.status == 1:
            fired = [meta[k] for k, te in enumerate(sol.t_events) if len(te)]
            q, v = X[:N], X[N:2 * N]
            # a symmetric body touches down with both feet at the same instant: the second crossing lies at the
            # same time (to round-off) and would be lost after the restart, so touch down every free foot that is
            # on or below the ground and moving down
            if with_ground and any(kind == "touchdown" for kind, _ in fired):
                for j in range(2):
                    if states[j] == FREE and armed[j] and ("touchdown", j) not in fired:
                        r = rec.foot_position(model, q, j)
                        vy = float((rec.foot_jacobian(model, q, j) @ v)[1])
                        if r[1] <= ground.height + 1e-9 and vy < 0.0:
                            fired.append(("touchdown", j))
            touched = [i for kind, i in fired if kind == "touchdown"]
            if touched and touchdown == "impact":
                for i in touched:
                    states[i] = PINNED
                    r = rec.foot_position(model, q, i)
                    anchor[i] = (float(r[0]), ground.height)
                pin = [j for j in range(2) if states[j] == PINNED]
                vys = {i: float((rec.foot_jacobian(model, q, i) @ v)[1]) for i in touched}
                e_before = float(rec.energy(model, q, v, t).kinetic)
                v_plus, lam = impact_map(model, q, v, t, pin)
                X[N:2 * N] = v_plus
                loss = e_before - float(rec.energy(model, q, v_plus, t).kinetic)
                impact_loss += loss
                events.append({"t": t, "kind": "touchdown", "feet": touched, "mode": "impact",
                               "foot_velocity_y": vys, "impulse": dict(zip(pin, lam.tolist())),
                               "kinetic_energy_lost": loss})
            for kind, i in fired:
                if kind == "touchdown" and touchdown == "compliant":
                    vy = float((rec.foot_jacobian(model, q, i) @ v)[1])
                    states[i] = COMPLIANT
                    impact_vel[i] = max(-vy, 1e-3)
                    events.append({"t": t, "kind": "touchdown", "feet": [i], "mode": "compliant",
                                   "foot_velocity_y": vy})
                elif kind == "liftoff" and states[i] == PINNED:
                    states[i] = FREE
                    anchor[i] = None
                    armed[i] = False
                    events.append({"t": t, "kind": "liftoff", "foot": i})
                elif kind == "clear" and states[i] == FREE:
                    armed[i] = True
                elif kind == "release" and states[i] == COMPLIANT:
                    states[i] = FREE
                    events.append({"t": t, "kind": "release", "foot": i})
            # a symmetric stance lifts both feet at once: release the other pinned foot too if it is unloaded
            settle_pinned(t, X)
            record(t, X)
        elif t >= stop - 1e-12 and (not T_s or T_s[-1] < t - 1e-12):
            record(t, X)
    W = np.array(W_s)
    return Trajectory(model, np.array(T_s), np.array(Q_s), np.array(V_s), ph_s, fs_s, np.array(R_s), np.array(tau_s),
                      {"moments": W[:, 0], "ground": W[:, 1], "damper": W[:, 2], "inertia": W[:, 3]},
                      np.array(cp_s), events, np.array(il_s), nfev)


def stance_configuration(model: ChainModel, *, hip_height: float | None = None) -> np.ndarray:
    """The issue's double-support stance guess: feet at the origin, every link vertical (φ = π/2), rest lengths."""
    n = model.n_links
    L0 = model.rest_lengths
    leg1 = L0[model.chain == 0].sum()
    leg2 = L0[model.chain == 1].sum()
    if hip_height is None and abs(leg1 - leg2) > 1e-12:
        raise ModelError("legs of different rest length cannot both stand vertically at the origin",
                         argument="model")
    return np.concatenate([[0.0, leg1 if hip_height is None else hip_height], np.full(n, np.pi / 2), L0])


@dataclass(frozen=True)
class StaticStance:
    """Static double-support equilibrium: q, foot reactions (2, 2) [N] and signed Δl = l − L0 [m]."""

    q: np.ndarray
    reactions: np.ndarray
    compressions: np.ndarray
    residual: float

    @property
    def hip_height(self) -> float:
        return float(self.q[1])


def static_stance(model: ChainModel, q_guess: np.ndarray | None = None,
                  anchors: Sequence[Sequence[float]] = ((0.0, 0.0), (0.0, 0.0)), tol: float = 1e-10,
                  generalized_force: Callable[[np.ndarray], np.ndarray] | None = None) -> StaticStance:
    """Solve ∂(V_g + V_s)/∂q = Q(q) + Σ J_Aᵀ R_A, r_A(q) = anchor_A (2n+2+4 equations) by a Newton-type root finder
    from `q_guess` (default `stance_configuration`); Q(q) = `generalized_force` (e.g. holding joint moments), 0
    by default."""
    n, N = model.n_links, model.dof
    q0 = stance_configuration(model) if q_guess is None else np.asarray(q_guess, dtype=float)
    zero = np.zeros(N)
    anchors = np.asarray(anchors, dtype=float)

    def residual(z):
        q, R = z[:N], z[N:].reshape(2, 2)
        h = rec.bias(model, q, zero)
        if generalized_force is not None:
            h = h - generalized_force(q)
        for i in range(2):
            h = h - rec.foot_jacobian(model, q, i).T @ R[i]
        g = np.concatenate([rec.foot_position(model, q, i) - anchors[i] for i in range(2)])
        return np.concatenate([h / model.total_mass, g])

    w = model.total_mass * model.gravity / 2.0
    sol = root(residual, np.concatenate([q0, [0.0, w, 0.0, w]]), method="hybr", options={"xtol": 1e-14})
    res = float(np.max(np.abs(residual(sol.x)))) * model.total_mass
    if not np.isfinite(res) or res > tol * model.total_mass * model.gravity * 100:
        raise SolverError(f"static stance did not converge (residual {res:.3g} N)")
    q = sol.x[:N]
    return StaticStance(q, sol.x[N:].reshape(2, 2), q[2 + n:] - model.rest_lengths, res)
