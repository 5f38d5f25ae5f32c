"""The anthropomorph's phase-switching run (paper 004): flight, single and double support and their transitions,
on the reference engine's hybrid integrator (`biobullet.integrate.stepper.run_loop`: events, a mode switch at
every event, breakpoints).

The foot states and their dynamics are the library's (`biobullet.extensible.phases`). Transitions are events
(restart events; the integration restarts after each):
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

Energy bookkeeping: the state is augmented with the work integrals W_moments = ∫ τ·θ̇ (+ ankle moments),
W_ground = ∫ Σ R_A·ṙ_A, W_damper = −∫ Σ c l̇², W_inertia = −∫ ½ Σ İ φ̇², so that
  ΔE_mech = W_moments + W_ground + W_damper + W_inertia − (impact losses),  E_mech = T + V_gravity + V_springs,
and contact dissipation = −(W_ground + V_contact(t)) for the compliant feet (V_contact = law potential).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from biobullet.core.errors import ModelError, SolverError
from biobullet.extensible import kinematics as kin
from biobullet.extensible.chain_model import ChainModel
from biobullet.extensible.phases import (
    COMPLIANT,
    FOOT_STATES,
    FREE,
    PINNED,
    CompliantGround,
    Controller,
    FootConstraint,
    constrained_accelerations,
    impact_map,
)
from biobullet.integrate.stepper import LoopEvent, StepFailure, run_loop
from biobullet.integrate.trajectory import Trajectory


@dataclass
class PhaseTrajectory(Trajectory):
    """A `Trajectory` of a phase-switching run (positions = q, velocities = v, (T, 2n+2), named by
    `ChainModel.coordinate_names`; `model` the ChainModel; `events` the located transitions (name, t, state))
    with, per sample: phase label, foot states, reactions (T, 2, 2) ground force on each foot [N] (0 when free),
    tau (T, n−1) joint moments [N·m]; work: dict of (T,) work integrals [J]; transitions: list of dicts (t, kind,
    foot, details); impact_losses: cumulative kinetic energy lost in impact maps up to each sample [J]; energy
    components via `energy_table()`."""

    phase: list[str] = field(default_factory=list)
    foot_states: list[tuple[str, str]] = field(default_factory=list)
    reactions: np.ndarray | None = None
    tau: np.ndarray | None = None
    work: dict[str, np.ndarray] = field(default_factory=dict)
    contact_potential: np.ndarray | None = None
    transitions: list[dict] = field(default_factory=list)
    impact_losses: np.ndarray | None = None
    nfev: int = 0

    def energy_table(self) -> dict[str, np.ndarray]:
        """kinetic, gravity, spring, contact_potential, mechanical (T + V_g + V_s), work terms, contact dissipation,
        residual = ΔE_mech − (W_moments + W_ground + W_damper + W_inertia) + impact losses (module docstring)."""
        e = kin.energy(self.model, self.q, self.v, self.t)
        mech = e.total
        w = self.work
        dissipation = -(w["ground"] + self.contact_potential - self.contact_potential[0])
        residual = (mech - mech[0]) - (w["moments"] + w["ground"] + w["damper"] + w["inertia"]) + self.impact_losses
        return {"kinetic": e.kinetic, "gravity": e.gravity, "spring": e.spring, "mechanical": mech,
                "contact_potential": self.contact_potential, "work_moments": w["moments"], "work_ground": w["ground"],
                "work_damper": w["damper"], "work_inertia": w["inertia"], "contact_dissipation": dissipation,
                "impact_losses": self.impact_losses, "residual": residual}


def phase_label(states: tuple[str, str]) -> str:
    """flight, single(...) or double(...) with the support kinds of the feet on the ground."""
    k = sum(s != FREE for s in states)
    kind = {0: "flight", 1: "single", 2: "double"}[k]
    if k == 0:
        return kind
    how = sorted({s for s in states if s != FREE})
    return f"{kind}({'+'.join(how)})"


def simulate_phases(model: ChainModel, t_end: float, *, initial: tuple[np.ndarray, np.ndarray],
                    feet: Sequence[str] = (FREE, FREE), anchors: Sequence[Sequence[float]] | None = None,
                    touchdown: str = "compliant", ground: CompliantGround | None = None,
                    controller: Controller | None = None, breakpoints: Sequence[float] = (),
                    with_ground: bool = True, alpha: float = 20.0, beta: float = 20.0, method: str = "DOP853",
                    rtol: float = 1e-9, atol: float = 1e-9, max_step: float = np.inf, dt_sample: float = 1e-3,
                    t0: float = 0.0, progress: Callable[[str], None] | None = None,
                    max_segments: int = 2000) -> PhaseTrajectory:
    """Integrate from initial = (q0, v0) over [t0, t_end] with phase switching (module docstring).

    feet: initial state of each foot (free/pinned/compliant); anchors: pinned feet's ground points (default: the
    current foot positions); touchdown: "compliant" or "impact"; controller(t, q, v, foot_states) → (τ (n−1) or None,
    ankle (2) or None); ankle moments act on pinned feet, and on compliant feet limited to ± ground.foot_lever·F_N.
    breakpoints: times where the controller switches (integration restarts there). with_ground=False: no ground at
    all (free flight through y < 0, no touchdown). Samples every dt_sample plus every transition.
    """
    if touchdown not in ("compliant", "impact"):
        raise ModelError(f"touchdown={touchdown!r}", argument="touchdown", expected="'compliant' or 'impact'")
    for s in feet:
        if s not in FOOT_STATES:
            raise ModelError(f"foot state {s!r}", argument="feet", expected=" / ".join(FOOT_STATES))
    ground = ground or CompliantGround()
    n, N = model.n_links, model.dof
    q0, v0 = (np.asarray(a, dtype=float).copy() for a in initial)
    states = list(feet)
    anchor: list[tuple[float, float] | None] = [None, None]
    for i in range(2):
        if states[i] == PINNED:
            anchor[i] = tuple(np.asarray(anchors[i], dtype=float)) if anchors is not None and anchors[i] is not None \
                else tuple(kin.foot_position(model, q0, i))
    impact_vel: list[float | None] = [None, None]
    for i in range(2):
        if states[i] == COMPLIANT:
            impact_vel[i] = max(-(kin.foot_jacobian(model, q0, i) @ v0)[1], 1e-3)
    armed = [True, True]   # a free foot's touchdown counts (False right after its lift-off: see the docstring)

    zeroN = np.zeros(N)
    damping = model.damping
    damped = bool(np.any(damping))
    time_varying = model.time_varying_inertia

    def constraints() -> list[FootConstraint]:
        return [FootConstraint(i, anchor[i], alpha, beta) for i in range(2) if states[i] == PINNED]

    def forces(t: float, q: np.ndarray, v: np.ndarray, cons: list[FootConstraint]):
        """q̈, ground force per foot (2, 2), τ, generalized moment force, foot Jacobians (None for a free foot)."""
        tau, ankle = (None, None) if controller is None else controller(t, q, v, tuple(states))
        R = np.zeros((2, 2))
        Qc = zeroN
        # each held foot's Jacobian once per state: the right-hand side reuses it for the ground's power
        J = [None if states[i] == FREE else kin.foot_jacobian(model, q, i) for i in range(2)]
        for i in range(2):
            if states[i] == COMPLIANT:
                R[i] = ground.force(model, q, v, i, impact_vel[i])
                Qc = Qc + J[i].T @ R[i]
        if ankle is not None:
            ankle = np.asarray(ankle, dtype=float).copy()
            for i in range(2):
                if states[i] == FREE:
                    ankle[i] = 0.0
                elif states[i] == COMPLIANT:   # a point foot of half-length `foot_lever` carries |M| ≤ lever·F_N
                    lim = ground.foot_lever * max(R[i, 1], 0.0)
                    ankle[i] = min(max(ankle[i], -lim), lim)
        Qm = kin.joint_moment_force(model, tau, ankle) if (tau is not None or ankle is not None) else zeroN
        a, Rc = constrained_accelerations(model, q, v, t, Qm if Qc is zeroN else Qm + Qc, cons)
        for c, r in zip(cons, Rc):
            R[c.foot] = r
        return a, R, tau, Qm, J

    def rhs_of_mode(cons):
        def rhs(t, X):   # [q̇, q̈, and the work rates of the moments, the ground, the dampers, İ]
            q, v = X[:N], X[N:2 * N]
            a, R, _, Qm, J = forces(t, q, v, cons)
            out = np.empty(2 * N + 4)
            out[:N], out[N:2 * N] = v, a
            out[2 * N] = 0.0 if Qm is zeroN else float(Qm @ v)   # skipping zero products keeps flight cheap
            p_ground = 0.0
            for i in range(2):
                if states[i] != FREE:   # power of the ground force on the moving foot point
                    p_ground += float(R[i] @ (J[i] @ v))
            out[2 * N + 1] = p_ground
            ld, phid = v[2 + n:], v[2:2 + n]
            out[2 * N + 2] = -float(damping @ (ld * ld)) if damped else 0.0
            out[2 * N + 3] = -0.5 * float(model.inertia_rate(t) @ (phid * phid)) if time_varying else 0.0
            return out
        return rhs

    def foot_height(i: int, offset: float) -> Callable[[float, np.ndarray], float]:
        return lambda t, X: float(kin.foot_position(model, X[:N], i)[1]) - ground.height - offset

    def events_of_mode() -> list[LoopEvent]:
        """The current mode's transitions, named `kind:foot`."""
        cons, evs = mode["cons"], []
        for i in range(2):
            if states[i] == FREE:
                if not with_ground:
                    continue
                if armed[i]:
                    evs.append(LoopEvent(f"touchdown:{i}", foot_height(i, 0.0), -1.0, restart=True))
                else:   # just lifted off: armed once clear of the ground, or touched down once clearly below it
                    evs.append(LoopEvent(f"clear:{i}", foot_height(i, ground.release_gap), 1.0, restart=True))
                    evs.append(LoopEvent(f"touchdown:{i}", foot_height(i, -ground.release_gap), -1.0, restart=True))
            elif states[i] == PINNED:
                def reaction_y(t: float, X: np.ndarray, i: int = i) -> float:
                    return float(forces(t, X[:N], X[N:2 * N], cons)[1][i, 1])
                evs.append(LoopEvent(f"liftoff:{i}", reaction_y, -1.0, restart=True))
            else:   # hysteresis: released only release_gap above the ground (no Zeno chatter)
                evs.append(LoopEvent(f"release:{i}", foot_height(i, ground.release_gap), 1.0, restart=True))
        return evs

    mode: dict = {}

    def enter_mode() -> None:
        mode["cons"] = constraints()
        mode["rhs"] = rhs_of_mode(mode["cons"])

    T_s, Q_s, V_s, W_s, ph_s, fs_s, R_s, tau_s, cp_s, il_s = [], [], [], [], [], [], [], [], [], []
    transitions: list[dict] = []
    impact_loss = [0.0]

    def record(tt: float, XX: np.ndarray) -> None:
        q, v = XX[:N], XX[N:2 * N]
        _, R, tau, _, _ = forces(tt, q, v, constraints())
        T_s.append(tt)
        Q_s.append(q)
        V_s.append(v)
        W_s.append(XX[2 * N:])
        ph_s.append(phase_label(tuple(states)))
        fs_s.append(tuple(states))
        R_s.append(R)
        tau_s.append(np.zeros(n - 1) if tau is None else np.asarray(tau, dtype=float))
        cp_s.append(sum(ground.potential(model, q, i) for i in range(2) if states[i] == COMPLIANT))
        il_s.append(impact_loss[0])

    def settle_pinned(tt: float, XX: np.ndarray) -> None:
        """Release pinned feet whose vertical reaction is already ≤ 0 (e.g. right after an impact map)."""
        for _ in range(2):
            cons = constraints()
            if not cons:
                return
            _, R, _, _, _ = forces(tt, XX[:N], XX[N:2 * N], cons)
            neg = [c.foot for c in cons if R[c.foot, 1] <= 0.0]
            if not neg:
                return
            for i in neg:
                states[i] = FREE
                anchor[i] = None
                armed[i] = False
                transitions.append({"t": tt, "kind": "liftoff", "foot": i, "reaction_y": float(R[i, 1])})

    grid = np.arange(np.ceil((t0 + 1e-12) / dt_sample) * dt_sample, t_end, dt_sample)
    grid = grid[grid > t0 + 1e-12]
    next_sample = [0]

    def observe(t_old: float, t_stop: float, sol) -> None:   # the samples inside an accepted step, in its mode
        k = next_sample[0]
        while k < len(grid) and grid[k] < t_stop:
            if grid[k] > T_s[-1] + 1e-12:
                record(float(grid[k]), sol(grid[k]))
            k += 1
        next_sample[0] = k

    segments = [0]

    def switch(t: float, X: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
        segments[0] += 1
        if segments[0] > max_segments:
            raise SolverError(f"more than {max_segments} phase segments by t = {t:.6g} s (phase "
                              f"{phase_label(tuple(states))}): chattering between phases")
        if progress is not None and segments[0] % 5 == 0:
            progress(f"t = {t:.3f} s, {phase_label(tuple(states))}")
        if names == ("breakpoint",):
            enter_mode()
            if T_s[-1] < t - 1e-12:
                record(t, X)
            return X
        fired = [(kind, int(i)) for kind, i in (name.split(":") for name in names)]
        q, v = X[:N], X[N:2 * N]
        # a symmetric body touches down with both feet at the same instant: the second crossing lies at the
        # same time (to round-off) and would be lost after the restart, so touch down every free foot that is
        # on or below the ground and moving down
        if with_ground and any(kind == "touchdown" for kind, _ in fired):
            for j in range(2):
                if states[j] == FREE and armed[j] and ("touchdown", j) not in fired:
                    r = kin.foot_position(model, q, j)
                    vy = float((kin.foot_jacobian(model, q, j) @ v)[1])
                    if r[1] <= ground.height + 1e-9 and vy < 0.0:
                        fired.append(("touchdown", j))
        touched = [i for kind, i in fired if kind == "touchdown"]
        if touched and touchdown == "impact":
            for i in touched:
                states[i] = PINNED
                r = kin.foot_position(model, q, i)
                anchor[i] = (float(r[0]), ground.height)
            pin = [j for j in range(2) if states[j] == PINNED]
            vys = {i: float((kin.foot_jacobian(model, q, i) @ v)[1]) for i in touched}
            e_before = float(kin.energy(model, q, v, t).kinetic)
            v_plus, lam = impact_map(model, q, v, t, pin)
            X[N:2 * N] = v_plus
            loss = e_before - float(kin.energy(model, q, v_plus, t).kinetic)
            impact_loss[0] += loss
            transitions.append({"t": t, "kind": "touchdown", "feet": touched, "mode": "impact",
                                "foot_velocity_y": vys, "impulse": dict(zip(pin, lam.tolist())),
                                "kinetic_energy_lost": loss})
        for kind, i in fired:
            if kind == "touchdown" and touchdown == "compliant":
                vy = float((kin.foot_jacobian(model, q, i) @ v)[1])
                states[i] = COMPLIANT
                impact_vel[i] = max(-vy, 1e-3)
                transitions.append({"t": t, "kind": "touchdown", "feet": [i], "mode": "compliant",
                                    "foot_velocity_y": vy})
            elif kind == "liftoff" and states[i] == PINNED:
                states[i] = FREE
                anchor[i] = None
                armed[i] = False
                transitions.append({"t": t, "kind": "liftoff", "foot": i})
            elif kind == "clear" and states[i] == FREE:
                armed[i] = True
            elif kind == "release" and states[i] == COMPLIANT:
                states[i] = FREE
                transitions.append({"t": t, "kind": "release", "foot": i})
        # a symmetric stance lifts both feet at once: release the other pinned foot too if it is unloaded
        settle_pinned(t, X)
        enter_mode()
        record(t, X)
        return X

    X0 = np.concatenate([q0, v0, np.zeros(4)])
    settle_pinned(t0, X0)
    enter_mode()
    record(t0, X0)
    try:
        result = run_loop(lambda t, X: mode["rhs"](t, X), t0, X0, t_end, method=method, rtol=rtol, atol=atol,
                          max_step=max_step, t_eval=None, events=events_of_mode, observe=observe, switch=switch,
                          breakpoints=[float(b) for b in breakpoints])
    except np.linalg.LinAlgError:
        raise SolverError(f"singular dynamics after t = {T_s[-1]:.6g} s in phase {phase_label(tuple(states))}: the "
                          "mass matrix is singular when all links are parallel (docs/anthropomorph.md)") from None
    except StepFailure as failure:
        raise SolverError(f"integration failed at t = {failure.t:.6g} s in phase {phase_label(tuple(states))}: "
                          f"{failure}") from None
    if T_s[-1] < t_end - 1e-12:
        record(float(result.last_t), result.last_y)
    W, Q, V = np.array(W_s), np.array(Q_s), np.array(V_s)
    names = tuple(model.coordinate_names)
    trajectory = PhaseTrajectory(
        t=np.array(T_s), position_names=names, velocity_names=tuple(f"{c}_dot" for c in names),
        positions=Q, velocities=V, q=Q, v=V, coordinate_names=names,
        events=[(name, t, state[:2 * N]) for name, t, state in result.events], model=model,
        meta={"method": method, "rtol": rtol, "atol": atol, "steps": result.steps, "restarts": result.restarts},
        phase=ph_s, foot_states=fs_s, reactions=np.array(R_s), tau=np.array(tau_s),
        work={"moments": W[:, 0], "ground": W[:, 1], "damper": W[:, 2], "inertia": W[:, 3]},
        contact_potential=np.array(cp_s), transitions=transitions, impact_losses=np.array(il_s), nfev=result.nfev)
    table = trajectory.energy_table()   # in the Trajectory's energy record: energy_balance() is constant
    trajectory.energy = {"kinetic": table["kinetic"], "potential_gravity": table["gravity"],
                         "potential_elastic": table["spring"] + table["contact_potential"],
                         "work_applied": table["work_moments"] + table["work_inertia"],
                         "dissipated": table["contact_dissipation"] - table["work_damper"] + table["impact_losses"]}
    return trajectory


__all__ = ["PhaseTrajectory", "phase_label", "simulate_phases"]
