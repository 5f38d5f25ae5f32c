"""Paper 004 study (`biobullet run anthropomorph`): the planar anthropomorph with extensible links.

(a) torque-free flight of the six-link reference model from the issue's initial state: COM parabola, angular
    momentum about the COM, energy; and the same with a time-varying I(t) (energy changes by ∫ −½ Σ İ φ̇² dt);
(b) static double-support stance (feet at the origin, body vertical): reactions, spring compressions, hip height;
(c) vertical jump: crouched stance (feet pinned) → push-off by joint moments (momentum-based inverse dynamics:
    reaction line through the COM, L_G ≈ 0 at take-off) → lift-off (event) → flight → landing on compliant feet
    (Flores law + regularized friction, touchdown event) under a COM spring-damper and stance impedance → the
    double stance, held > 1 s and compared with the static stance; energy budget with residual; the same jump
    landing through the plastic impact map onto the pinned double support, for comparison;
(d) the three-link reference model (two legs and a trunk): flight and static stance.
Writes summary.json, report.md, PNG plots and jump.mp4 into out_dir.
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from biobullet.contact.friction import Regularized
from biobullet.contact.normal import Flores
from biobullet.core.atomic import save_figure, write_json, write_text
from biobullet.extensible import kinematics as kin
from biobullet.extensible.chain_model import (
    ChainModel,
    InertiaLaw,
    Link,
    reference_flight_state,
    six_link_reference,
    three_link_reference,
)
from biobullet_studies.anthropomorph_control import (
    SupportTasks,
    TaskWeights,
    support_inverse_dynamics,
    virtual_force_moments,
)
from biobullet.extensible.phases import FREE, PINNED, CompliantGround, static_stance
from biobullet_studies.anthropomorph_phases import PhaseTrajectory, simulate_phases
from biobullet_studies.common import simulated_time

FLIGHT_T = 0.4
T_PUSH, PUSH_TIME = 0.1, 0.25   # s: hold the crouched equilibrium, then extend the legs (smooth step)
JUMP_T_END = 3.1           # s: touchdown ≈ 0.49 s, settled ≈ 1.55 s later, then > 1 s of quiet stance
SETTLE_SPEED = 0.01        # m/s: "settled" = |COM velocity| below this for good (kinetic energy of the COM motion
                           # ½ m v² = 3 mJ, 1e-4 of the ~30 J at touchdown), both feet on the ground and loaded
FLIGHT_KNEE = 0.3          # rad: knee and hip flexion of the flight (touchdown) posture
JUMP_DAMPING = 200.0       # N·s/m axial link damping in the jump (the paper has none; allowed by the issue)


_T0 = [time.perf_counter()]


def _log(message: str) -> None:
    print(f"[anthropomorph {time.perf_counter() - _T0[0]:6.1f} s] {message}", file=sys.stderr, flush=True)


# ---- (a) flight -------------------------------------------------------------------------------------------------
def flight_study(model: ChainModel, q0: np.ndarray, v0: np.ndarray, t_end: float = FLIGHT_T, *,
                 rtol: float = 1e-12, atol: float = 1e-12, dt_sample: float = 0.005) -> tuple[PhaseTrajectory, dict]:
    tr = simulate_phases(model, t_end, initial=(q0, v0), with_ground=False, method="DOP853", rtol=rtol, atol=atol,
                  dt_sample=dt_sample)
    e = tr.energy_table()
    L = kin.angular_momentum_about_com(model, tr.q, tr.v, tr.t)
    G, Gd = kin.center_of_mass(model, tr.q, tr.v)
    tt = tr.t - tr.t[0]
    parabola = G[0] + np.outer(tt, Gd[0]) + np.outer(0.5 * tt * tt, [0.0, -model.gravity])
    budget = (e["mechanical"] - e["mechanical"][0]) - e["work_inertia"]
    out = {"t_end": float(tr.t[-1]), "q_end": tr.q[-1].tolist(), "energy_initial": float(e["mechanical"][0]),
           "energy_drift_max": float(np.max(np.abs(e["mechanical"] - e["mechanical"][0]))),
           "energy_change": float(e["mechanical"][-1] - e["mechanical"][0]),
           "inertia_work": float(e["work_inertia"][-1]),
           "energy_budget_residual_max": float(np.max(np.abs(budget))),
           "angular_momentum_initial": float(L[0]), "angular_momentum_drift_max": float(np.max(np.abs(L - L[0]))),
           "com_parabola_error_max": float(np.max(np.abs(G - parabola))), "nfev": tr.nfev}
    return tr, out


def time_varying_model(model: ChainModel, amplitude: float = 0.3, period: float = 0.2) -> ChainModel:
    """The same model with I_i(t) = I_i (1 + a sin(2πt/T)) (a Fourier law) on every link."""
    links = []
    for lk in model.links:
        i0 = lk.inertia.value(0.0)
        links.append(Link(lk.mass, lk.n, lk.rest_length, lk.stiffness, lk.damping,
                          InertiaLaw("fourier", (i0, 0.0), (amplitude * i0,), period), lk.name))
    k1, k2, _ = model.chain_sizes
    return ChainModel.build(links[:k1], links[k1:k1 + k2], links[k1 + k2:], gravity=model.gravity,
                            name=model.name + "_time_varying_I")


# ---- (c) jump ---------------------------------------------------------------------------------------------------
def posture(model: ChainModel, thigh: float, shank: float, lean: float) -> np.ndarray:
    """Absolute angles of a symmetric posture: thighs π/2 + thigh (knees forward), shanks π/2 − shank, every trunk
    link π/2 − lean [rad]."""
    phi = np.empty(model.n_links)
    for c in (0, 1):
        order = model.chain_order(c)     # hip outwards: thigh(s) first, the foot link last
        for pos, k in enumerate(order):
            phi[k] = math.pi / 2 + (thigh if pos < len(order) - 1 or len(order) == 1 else -shank)
    phi[model.chain == 2] = math.pi / 2 - lean
    return phi


def crouch_state(model: ChainModel, phi: np.ndarray, lengths: np.ndarray | None = None) -> np.ndarray:
    """q with both feet at the origin for the absolute angles phi (legs must close at the same hip)."""
    l = model.rest_lengths if lengths is None else lengths
    q = np.concatenate([[0.0, 0.0], phi, l])
    foot = kin.foot_position(model, q, 0)
    q[:2] = -foot
    return q


class JumpController:
    """Vertical-jump controller (docs/anthropomorph.md): inverse dynamics for the push-off, joint PD in flight,
    virtual COM spring-damper + stance impedance for the landing. Called as controller(t, q, v, foot_states) →
    (τ [N·m], ankle moments [N·m] or None) by `simulate_phases`.

    * push (t < t_push: hold the crouch; then a C² smooth step of the joint-angle targets from `crouch` to
      `extended` over `push_time`): `support_inverse_dynamics` with the posture PD (kp_push, kd_push) as a task,
      plus ẍ_G* = −k_x (x_G − x_A) − d_x ẋ_G (COM over the feet) and L̇_G* = −k_L L_G: the reaction line stays
      through the COM, so the body leaves the ground (nearly) purely vertically with L_G ≈ 0;
    * flight (both feet free): joint PD toward the `flight` posture, the hips servoing the thighs' absolute angles
      (internal moments cannot change L_G; with L_G ≈ 0 this places the feet under the COM);
    * landing (from the first touchdown while the COM descends, for good): `virtual_force_moments` with
      F = m (ẍ_G*, g + ÿ_G*), ÿ_G* = −ω_y² (y_G − y_ref(t)) − 2ω_y ẏ_G (critically damped: absorbs the landing
      energy without a rebound), ẍ_G* = −ω_x² (x_G − x_A) − 2ω_x ẋ_G clipped to ±0.8 · foot_lever · g / y_G (the
      ankle moment stays within a point foot's ± foot_lever · F_N), plus a joint impedance (kp_land, kd_land on hips
      and trunk, kp_land_knee, kd_land_knee on the knees) about a target that moves by a C² step from the touchdown
      posture and COM height to the `stance` posture and `y_ref`, starting `rise_delay` after touchdown and
      lasting `rise_time` [s].
    Gains: k_x, k_L [1/s², 1/s], ω [rad/s], joint gains [N·m/rad, N·m·s/rad] (the push-off ones in 1/s², 1/s:
    they are joint-acceleration tasks); postures are absolute link angles [rad]."""

    def __init__(self, model: ChainModel, crouch, extended, flight, stance, *, t_push: float, push_time: float,
                 y_ref: float, kp_push: float = 2000.0, kd_push: float = 90.0, k_x: float = 100.0,
                 d_x: float = 20.0, k_L: float = 20.0, kp_flight: float = 1500.0, kd_flight: float = 400.0,
                 kp_flight_stiff: float = 3000.0, kd_flight_stiff: float = 150.0, omega_y: float = 7.5,
                 omega_x_land: float = 3.0, kp_land: float = 600.0, kd_land: float = 80.0,
                 kp_land_knee: float = 60.0, kd_land_knee: float = 15.0, rise_delay: float = 0.2,
                 rise_time: float = 0.6, foot_lever: float = 0.1, ground_height: float = 0.0,
                 weights: TaskWeights | None = None):
        self.model = model
        B = model.joint_matrix
        self.theta = {k: B @ p for k, p in (("crouch", crouch), ("extended", extended), ("flight", flight),
                                             ("stance", stance))}
        self.t_push, self.push_time = t_push, push_time
        self.kp_push, self.kd_push, self.kp_land, self.kd_land = kp_push, kd_push, kp_land, kd_land
        self.k_x, self.d_x, self.k_L = k_x, d_x, k_L
        self.k_y, self.d_y, self.y_ref = omega_y ** 2, 2.0 * omega_y, y_ref
        # flight: soft, damped knees, stiff hips and trunk; landing: the COM law carries the body, soft knees
        knee = np.array([jt.parent != model.chain_order(2)[0] and model.chain[jt.child] < 2 for jt in model.joints])
        self.kp_land_j = np.where(knee, kp_land_knee, kp_land)
        self.kd_land_j = np.where(knee, kd_land_knee, kd_land)
        root = model.chain_order(2)[0]
        self.hip_rows = np.array([jt.parent == root and model.chain[jt.child] < 2 for jt in model.joints])
        self.phi_flight = np.asarray(flight, dtype=float)
        self.kp_f = np.where(knee, kp_flight, kp_flight_stiff)
        self.kd_f = np.where(knee, kd_flight, kd_flight_stiff)
        self.weights = weights or TaskWeights()
        self.airborne = False
        self.landed = False
        self.t_land, self.landing_start = math.inf, (None, None)
        self.rise_delay, self.rise_time = rise_delay, rise_time
        self.k_x_land, self.d_x_land = omega_x_land ** 2, 2.0 * omega_x_land
        self.foot_lever, self.ground_height = foot_lever, ground_height

    def phase(self, t: float, states, com_velocity_y: float) -> str:
        """push → flight (both feet free) → landing (first touchdown while the COM descends; never left again: a
        foot that bounces off stays under the landing law). Contacts while the COM still rises (the leg springs'
        recoil right after lift-off touches the ground for a fraction of a millisecond) belong to the flight."""
        if self.landed:
            return "landing"
        if all(s == FREE for s in states):
            self.airborne = True
            return "flight"
        if not self.airborne:
            return "push"
        if com_velocity_y < 0.0:
            self.landed = True
            self.t_land = float(t)
            self.landing_start = (None, None)     # filled by __call__ with the touchdown posture and COM height
            return "landing"
        return "flight"

    def joint_target(self, t: float, phase: str) -> np.ndarray:
        if phase == "push":
            s = min(max((t - self.t_push) / self.push_time, 0.0), 1.0)
            w = s * s * s * (10.0 - 15.0 * s + 6.0 * s * s)     # C² smooth step
            return (1 - w) * self.theta["crouch"] + w * self.theta["extended"]
        if phase == "flight":
            return self.theta["flight"]
        return (1 - self.rise(t)) * self.landing_start[0] + self.rise(t) * self.theta["stance"]

    def _absolute_hip_target(self, q: np.ndarray) -> np.ndarray:
        n = self.model.n_links
        phi = q[2:2 + n]
        out = np.zeros(len(self.model.joints))
        for r, jt in enumerate(self.model.joints):
            out[r] = self.phi_flight[jt.child] - phi[jt.parent]
        return out

    def rise(self, t: float) -> float:
        """0 → 1 smooth step (C²) from the touchdown posture and COM height to the stance, starting `rise_delay`
        after touchdown (the COM law first brakes the fall) and lasting `rise_time`."""
        s = min(max((t - self.t_land - self.rise_delay) / self.rise_time, 0.0), 1.0)
        return s * s * s * (10.0 - 15.0 * s + 6.0 * s * s)

    def __call__(self, t, q, v, states):
        n = self.model.n_links
        B = self.model.joint_matrix
        G, Gd = kin.center_of_mass(self.model, q, v)
        ph = self.phase(t, states, float(Gd[1]))
        theta, theta_d = B @ q[2:2 + n], B @ v[2:2 + n]
        if ph == "landing" and self.landing_start[0] is None:
            self.landing_start = (theta.copy(), float(G[1]))
        target = self.joint_target(t, ph)
        feet = [i for i in range(2) if states[i] != FREE]
        if ph == "flight" or not feet:
            # flight, or a landing foot bounced off: joint PD (internal moments cannot change L_G)
            if ph == "flight":
                # the hips servo the thighs' ABSOLUTE angles (relative target = φ_thigh* − φ_trunk): with L_G ≈ 0
                # the body's orientation hardly changes, so this places the feet under the COM for touchdown
                target = np.where(self.hip_rows, self._absolute_hip_target(q), target)
                return self.kp_f * (target - theta) - self.kd_f * theta_d, None
            return self.kp_land_j * (target - theta) - self.kd_land_j * theta_d, None
        x_feet = float(np.mean([kin.foot_position(self.model, q, i)[0] for i in feet]))
        ax = -self.k_x * (G[0] - x_feet) - self.d_x * Gd[0]
        if ph == "landing":
            # point-like feet: the moment of the horizontal force about the feet must come from the ankles,
            # |a| ≤ lever · F_N, so |ẍ_G| ≤ lever · g / height (the ZMP stays on the foot)
            cap = 0.8 * self.foot_lever * self.model.gravity / max(G[1] - self.ground_height, 0.1)
            ax = float(np.clip(-self.k_x_land * (G[0] - x_feet) - self.d_x_land * Gd[0], -cap, cap))
            # impedance about the stance posture + a virtual spring-damper on the COM (Jacobian transpose): passive
            # with respect to the compliant contact, which the rigid-contact inverse dynamics is not
            y_ref = (1 - self.rise(t)) * self.landing_start[1] + self.rise(t) * self.y_ref
            ay = -self.k_y * (G[1] - y_ref) - self.d_y * Gd[1]
            m = self.model.total_mass
            force = np.array([m * ax, m * (self.model.gravity + ay)])
            return virtual_force_moments(self.model, q, feet, force,
                                         self.kp_land_j * (target - theta) - self.kd_land_j * theta_d)
        L = float(kin.angular_momentum_about_com(self.model, q, v, t))
        tasks = SupportTasks(com_acc=(ax, None), momentum_rate=-self.k_L * L,
                             joint_acc=self.kp_push * (target - theta) - self.kd_push * theta_d)
        sol = support_inverse_dynamics(self.model, q, v, t, feet, tasks, self.weights)
        return sol.tau, sol.ankle


def balanced_lean(model: ChainModel, thigh: float, shank: float) -> float:
    """Trunk lean [rad] that puts the whole-body COM above the feet (x_G = 0) for the given leg posture."""
    from scipy.optimize import brentq
    def gx(lean):
        return float(kin.center_of_mass(model, crouch_state(model, posture(model, thigh, shank, lean)))[0])
    return float(brentq(gx, -0.8, 1.2, xtol=1e-12))


def jump_study(model: ChainModel, *, touchdown: str, t_end: float = JUMP_T_END, rtol: float = 1e-9,
               dt_sample: float = 2e-3, method: str = "LSODA", flight_knee: float = FLIGHT_KNEE,
               controller_options: dict | None = None) -> tuple[PhaseTrajectory, dict]:
    lean = balanced_lean(model, 0.6, 0.6)
    # one trunk lean for the push: straightening the trunk during the push would throw the COM backwards
    crouch = posture(model, 0.6, 0.6, lean)
    extended = posture(model, 0.05, 0.05, lean)
    # flight posture with its own balanced trunk lean: the feet come down under the COM (L_G ≈ 0 keeps the
    # body's orientation in flight, so the posture decides where the feet land)
    flight = posture(model, flight_knee, flight_knee, balanced_lean(model, flight_knee, flight_knee))
    ground = CompliantGround(Flores(stiffness=1.0e6, restitution=0.3), Regularized(mu=0.8, v0=0.05))
    stance = static_stance(model)
    y_ref = _stance_com_height(model, stance, ground if touchdown == "compliant" else None)
    ctrl = JumpController(model, crouch, extended, flight, stance.q[2:2 + model.n_links], t_push=T_PUSH,
                          push_time=PUSH_TIME, y_ref=y_ref, **(controller_options or {}))
    # start from the exact equilibrium of the pinned stance under the holding moments (no initial transient)
    def holding(q):
        tau, ankle = ctrl(0.0, q, np.zeros(model.dof), (PINNED, PINNED))
        return kin.joint_moment_force(model, tau, ankle)
    q0 = static_stance(model, crouch_state(model, crouch), generalized_force=holding).q
    tr = simulate_phases(model, t_end, initial=(q0, np.zeros(model.dof)), feet=(PINNED, PINNED), touchdown=touchdown,
                         ground=ground, controller=ctrl, breakpoints=(T_PUSH, T_PUSH + PUSH_TIME), method=method,
                         rtol=rtol, atol=rtol, dt_sample=dt_sample, progress=_log)
    e = tr.energy_table()
    G = kin.center_of_mass(model, tr.q)
    airborne = np.array([p == "flight" for p in tr.phase])
    fn = tr.reactions[:, :, 1]
    out = {"touchdown_mode": touchdown, "events": tr.transitions, "nfev": tr.nfev,
           "min_normal_force": float(fn[~airborne].min()) if np.any(~airborne) else 0.0,
           "max_normal_force_per_foot": float(fn.max()),
           "com_height_start": float(G[0, 1]),
           "com_apex": float(G[airborne, 1].max()) if np.any(airborne) else None,
           "hip_height_end": float(tr.q[-1, 1]),
           "flight_time": float(np.sum(np.diff(tr.t)[airborne[:-1]])) if np.any(airborne) else 0.0,
           "energy": {k: float(vv[-1]) for k, vv in e.items()},
           "energy_start": {k: float(vv[0]) for k, vv in e.items()},
           "energy_budget_residual_max": float(np.max(np.abs(e["residual"]))),
           "energy_scale": float(np.max(np.abs(e["mechanical"] - e["mechanical"][0]))),
           "constraint_drift_max": float(_constraint_drift(model, tr))}
    out.update(_landing_metrics(model, tr, ctrl, stance, ground if touchdown == "compliant" else None))
    # the pinned push-off puts no limit on the ankle moments: report how much a foot of half-length
    # ground.foot_lever would have to carry (|a| / (lever F_N) ≤ 1: the centre of pressure stays on that foot)
    replay = JumpController(model, crouch, extended, flight, stance.q[2:2 + model.n_links], t_push=T_PUSH,
                            push_time=PUSH_TIME, y_ref=y_ref, **(controller_options or {}))
    push = [k for k, p in enumerate(tr.phase) if p == "double(pinned)" and tr.t[k] < ctrl.t_land]
    ratio = [float(np.max(np.abs(replay(tr.t[k], tr.q[k], tr.v[k], (PINNED, PINNED))[1])
                          / (ground.foot_lever * np.maximum(tr.reactions[k, :, 1], 1e-9)))) for k in push]
    out["push_ankle_to_foot_capacity_max"] = max(ratio) if ratio else None
    return tr, out


def _landing_metrics(model: ChainModel, tr: PhaseTrajectory, ctrl: JumpController, stance,
                     ground: CompliantGround | None) -> dict:
    """Take-off state (L_G, COM velocity), settling after the landing, and the final stance vs the static one."""
    L = kin.angular_momentum_about_com(model, tr.q, tr.v, tr.t)
    G, Gd = kin.center_of_mass(model, tr.q, tr.v)
    flight = [k for k, p in enumerate(tr.phase) if p == "flight"]
    out: dict = {}
    if flight:
        k = flight[0]
        out.update({"takeoff_time": float(tr.t[k]), "takeoff_angular_momentum": float(L[k]),
                    "takeoff_com_velocity": Gd[k].tolist(),
                    "flight_angular_momentum_drift": float(np.ptp(L[[j for j in flight]]))})
    t_land = ctrl.t_land
    out["landing_time"] = float(t_land) if math.isfinite(t_land) else None
    if not math.isfinite(t_land):
        out.update({"settled": False, "settle_time_s": None})
        return out
    # from the instant the last foot touched down (at a touchdown instant its normal force is exactly 0)
    t_down = max(e["t"] for e in tr.transitions if e["kind"] == "touchdown" and e["t"] >= t_land)
    after = tr.t > t_down
    in_contact = np.array([all(s != FREE for s in fs) for fs in tr.foot_states])[after]
    speed = np.linalg.norm(Gd, axis=1)
    ok = (speed < SETTLE_SPEED) & np.all(tr.reactions[:, :, 1] > 0.0, axis=1)
    ok_after = ok[after]
    # first sample from which on every later sample is settled
    bad = np.nonzero(~ok_after)[0]
    k_settle = 0 if not len(bad) else bad[-1] + 1
    t_after = tr.t[after]
    settled = bool(np.all(in_contact) and k_settle < len(t_after) and t_after[-1] - t_land >= 1.0)
    q_end = tr.q[-1]
    # compliant feet sink by the static penetration δ under half the weight: compare with the static stance
    # lowered by δ (the pinned static stance has its feet exactly at y = 0)
    foot_y = np.array([kin.foot_position(model, q_end, i)[1] for i in range(2)])
    lean = q_end[2:2 + model.n_links] - math.pi / 2
    final = {"hip_height": float(q_end[1]), "spring_compressions": (q_end[2 + model.n_links:]
                                                                   - model.rest_lengths).tolist(),
             "foot_reactions": tr.reactions[-1].tolist(), "foot_heights": foot_y.tolist(),
             "com": G[-1].tolist(), "com_speed": float(speed[-1]), "angular_momentum": float(L[-1]),
             "max_link_angle_from_vertical": float(np.max(np.abs(lean)))}
    static = {"hip_height": stance.hip_height, "spring_compressions": stance.compressions.tolist(),
              "foot_reactions": stance.reactions.tolist()}
    final["vs_static_stance"] = {
        "static": static,
        "hip_height_minus_static_plus_penetration": float(q_end[1] - (stance.hip_height + float(np.mean(foot_y)))),
        "spring_compressions_max_difference": float(np.max(np.abs(q_end[2 + model.n_links:] - model.rest_lengths
                                                                    - stance.compressions))),
        "vertical_reactions_max_difference": float(np.max(np.abs(tr.reactions[-1, :, 1] - stance.reactions[:, 1]))),
        "horizontal_reactions_max": float(np.max(np.abs(tr.reactions[-1, :, 0])))}
    out.update({"settled": settled,
                "settle_time_s": float(t_after[k_settle] - t_land) if k_settle < len(t_after) else None,
                "settle_speed_bound": SETTLE_SPEED,
                "stance_duration_after_settling_s": float(t_after[-1] - t_after[k_settle])
                if k_settle < len(t_after) else 0.0,
                "feet_in_contact_after_landing": bool(np.all(in_contact)),
                "min_normal_force_after_landing": float(tr.reactions[after][:, :, 1].min()),
                "final_stance": final})
    return out


def _stance_com_height(model: ChainModel, stance, ground: CompliantGround | None) -> float:
    """COM height of the static double stance; on compliant ground lowered by the static penetration δ of each foot
    under half the weight (Flores/Hertz law at rest: F = K δ^1.5, so δ = (W / 2K)^(2/3))."""
    y = float(kin.center_of_mass(model, stance.q)[1])
    if ground is None:
        return y
    from scipy.optimize import brentq
    half = 0.5 * model.total_mass * model.gravity
    delta = brentq(lambda d: float(ground.normal_law.force(d, 0.0, 1.0)) - half, 0.0, 0.1, xtol=1e-15)
    return y - delta


def _constraint_drift(model: ChainModel, tr: PhaseTrajectory) -> float:
    drift = 0.0
    anchor = {}
    for k in range(len(tr.t)):
        for i in range(2):
            if tr.foot_states[k][i] == PINNED:
                r = kin.foot_position(model, tr.q[k], i)
                a = anchor.setdefault((i, _segment_key(tr, k, i)), r.copy())
                drift = max(drift, float(np.max(np.abs(r - a))))
    return drift


def _segment_key(tr: PhaseTrajectory, k: int, i: int) -> int:
    # index of the first sample of the current pinned stretch of foot i
    while k > 0 and tr.foot_states[k - 1][i] == PINNED:
        k -= 1
    return k


# ---- plots and video ---------------------------------------------------------------------------------------------
def _stick(ax, model: ChainModel, q: np.ndarray, color="k", alpha=1.0):
    prox, dist = kin.link_endpoints(model, q)
    colors = {0: "tab:blue", 1: "tab:orange", 2: "tab:green"}
    for k in range(model.n_links):
        ax.plot([prox[k, 0], dist[k, 0]], [prox[k, 1], dist[k, 1]], "-o", color=colors[int(model.chain[k])],
                alpha=alpha, lw=3, ms=3)
    G = kin.center_of_mass(model, q)
    ax.plot(G[0], G[1], "k+", ms=8, alpha=alpha)


def _plots(out: Path, model6, flight_tr, flight_tv, stance6, jumps: dict, three) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    files = []
    # (a) flight
    fig, axs = plt.subplots(1, 3, figsize=(15, 4.2))
    G = kin.center_of_mass(model6, flight_tr.q)
    for k in range(0, len(flight_tr.t), 10):
        _stick(axs[0], model6, flight_tr.q[k], alpha=0.35)
    axs[0].plot(G[:, 0], G[:, 1], "r-", label="COM")
    axs[0].set_aspect("equal")
    axs[0].set_title("(a) torque-free flight, t = 0…0.4 s")
    axs[0].legend()
    e = flight_tr.energy_table()
    for key in ("kinetic", "gravity", "spring"):
        axs[1].plot(flight_tr.t, e[key], label=key)
    axs[1].plot(flight_tr.t, e["mechanical"], "k", label="total")
    axs[1].set_xlabel("t [s]")
    axs[1].set_ylabel("J")
    axs[1].legend()
    axs[1].set_title(f"energy (drift {np.ptp(e['mechanical']):.1e} J)")
    L = kin.angular_momentum_about_com(model6, flight_tr.q, flight_tr.v, flight_tr.t)
    Ltv = kin.angular_momentum_about_com(flight_tv.model, flight_tv.q, flight_tv.v, flight_tv.t)
    axs[2].plot(flight_tr.t, L - L[0], label="constant I")
    axs[2].plot(flight_tv.t, Ltv - Ltv[0], label="I(t) = I(1 + 0.3 sin 2πt/0.2)")
    axs[2].set_title("angular momentum about the COM, L − L(0)")
    axs[2].set_xlabel("t [s]")
    axs[2].set_ylabel("kg·m²/s")
    axs[2].legend()
    fig.tight_layout()
    save_figure(fig, out / "flight.png", dpi=100)
    plt.close(fig)
    files.append("flight.png")
    # (b) stance
    fig, axs = plt.subplots(1, 2, figsize=(10, 4.2))
    _stick(axs[0], model6, stance6.q)
    axs[0].set_aspect("equal")
    axs[0].set_title(f"(b) static stance, hip {stance6.hip_height:.5f} m")
    axs[1].bar([model6.link_name(i) for i in range(model6.n_links)], 1e3 * stance6.compressions)
    axs[1].set_ylabel("Δl = l − L0 [mm]")
    axs[1].tick_params(axis="x", rotation=30)
    fig.tight_layout()
    save_figure(fig, out / "stance.png", dpi=100)
    plt.close(fig)
    files.append("stance.png")
    # (c) jump
    fig, axs = plt.subplots(2, 3, figsize=(18, 8))
    for mode, (trm, _) in jumps.items():
        Lm = kin.angular_momentum_about_com(trm.model, trm.q, trm.v, trm.t)
        _, Gdm = kin.center_of_mass(trm.model, trm.q, trm.v)
        axs[0, 2].semilogy(trm.t, np.linalg.norm(Gdm, axis=1) + 1e-9, label=f"|Ġ| ({mode})")
        axs[1, 2].plot(trm.t, Lm, label=f"L_G ({mode})")
    axs[0, 2].axhline(SETTLE_SPEED, color="k", ls="--", lw=0.8, label="settle bound")
    axs[0, 2].set_title("COM speed [m/s]")
    axs[0, 2].set_xlabel("t [s]")
    axs[0, 2].legend(fontsize=8)
    axs[1, 2].set_title(f"angular momentum about the COM (take-off "
                        f"{jumps['compliant'][1].get('takeoff_angular_momentum', float('nan')):.3f})")
    axs[1, 2].set_ylabel("kg·m²/s")
    axs[1, 2].set_xlabel("t [s]")
    axs[1, 2].legend(fontsize=8)
    for mode, (tr, _) in jumps.items():
        axs[0, 0].plot(tr.t, tr.q[:, 1], label=f"hip y ({mode})")
        axs[0, 1].plot(tr.t, tr.reactions[:, 0, 1], label=f"foot 1 R_y ({mode})")
    tr, res = jumps["compliant"]
    for ev in tr.transitions:
        for ax in axs[0]:
            ax.axvline(ev["t"], color="grey", lw=0.6, ls=":")
    axs[0, 0].set_ylabel("m")
    axs[0, 0].legend()
    axs[0, 0].set_title("(c) jump: hip height (events dotted)")
    axs[0, 1].set_ylabel("N")
    axs[0, 1].legend()
    axs[0, 1].set_title("normal reaction of foot 1")
    e = tr.energy_table()
    for key in ("kinetic", "gravity", "spring", "contact_potential"):
        axs[1, 0].plot(tr.t, e[key] - e[key][0], label=f"Δ {key}")
    for key in ("work_moments", "work_damper", "contact_dissipation"):
        axs[1, 0].plot(tr.t, e[key], ls="--", label=key)
    axs[1, 0].set_xlabel("t [s]")
    axs[1, 0].set_ylabel("J")
    axs[1, 0].legend(fontsize=8)
    axs[1, 0].set_title("energy budget (compliant landing)")
    for mode, (trm, _) in jumps.items():
        axs[1, 1].semilogy(trm.t, np.abs(trm.energy_table()["residual"]) + 1e-16, label=mode)
    axs[1, 1].set_title("|energy budget residual| [J]")
    axs[1, 1].set_xlabel("t [s]")
    axs[1, 1].legend()
    fig.tight_layout()
    save_figure(fig, out / "jump.png", dpi=100)
    plt.close(fig)
    files.append("jump.png")
    # (d) three-link
    model3, tr3, stance3 = three
    fig, axs = plt.subplots(1, 2, figsize=(10, 4.2))
    for k in range(0, len(tr3.t), 10):
        _stick(axs[0], model3, tr3.q[k], alpha=0.35)
    axs[0].set_aspect("equal")
    axs[0].set_title("(d) three-link flight")
    _stick(axs[1], model3, stance3.q)
    axs[1].set_aspect("equal")
    axs[1].set_title(f"three-link stance, hip {stance3.hip_height:.5f} m")
    fig.tight_layout()
    save_figure(fig, out / "three_link.png", dpi=100)
    plt.close(fig)
    files.append("three_link.png")
    return files


def _video(out: Path, model: ChainModel, tr: PhaseTrajectory, fps: int = 30, slow: float = 2.0) -> str:
    """Stick-figure MP4 of the jump, `slow`× slow motion (red arrows: normal reactions, 2e-4 m/N)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from biobullet.render.video import write_video
    from biobullet_studies.common import motion_limits, planar_frame
    frames = []
    times = np.arange(tr.t[0], tr.t[-1], 1.0 / (fps * slow))
    picks = [min(int(np.searchsorted(tr.t, tt)), len(tr.t) - 1) for tt in times]
    every = [np.vstack(kin.link_endpoints(model, tr.q[k])) for k in picks] + [np.zeros((1, 2))]   # + ground
    limits = motion_limits(np.vstack(every)[:, :2])   # framed on the whole jump
    (x_low, x_high), (y_low, y_high) = limits
    # the figure takes the motion's shape (a jump is tall and narrow), so the axes fill it
    fig, ax = plt.subplots(figsize=(float(np.clip(7.2 * (x_high - x_low) / (y_high - y_low) + 1.2, 4.8, 12.8)), 7.2),
                           dpi=100)
    for k in picks:
        ax.clear()
        ax.axhline(0.0, color="sienna", lw=2)
        _stick(ax, model, tr.q[k])
        for i in range(2):
            if tr.reactions[k, i, 1] > 0:
                a = kin.foot_position(model, tr.q[k], i)
                ax.arrow(a[0], a[1], 0, 2e-4 * tr.reactions[k, i, 1], width=0.005, color="red")
        title = f"t = {tr.t[k]:.3f} s  {tr.phase[k]}\n({slow:g}× slow motion)"
        frames.append(planar_frame(fig, ax, limits, title, 11))
    plt.close(fig)
    write_video(frames, out / "jump.mp4", fps=fps)
    return "jump.mp4"


# ---- entry point -------------------------------------------------------------------------------------------------
def run(out_dir: str, **options: Any) -> dict:
    """Run (a)–(d); options: video (bool, default True), quick (bool: no video)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    quick = bool(options.get("quick", False))
    make_video = bool(options.get("video", not quick))
    started = time.perf_counter()
    _T0[0] = started
    model6 = six_link_reference()
    q0, v0 = reference_flight_state(model6)

    _log("(a) torque-free flight, 0.4 s, DOP853 rtol = atol = 1e-12")
    flight_tr, flight = flight_study(model6, q0, v0)
    model_tv = time_varying_model(model6)
    _log("(a) flight with time-varying I(t)")
    flight_tv, flight_var = flight_study(model_tv, q0, v0, 0.1, rtol=1e-10, atol=1e-10)

    _log("(b) static double-support stance")
    stance6 = static_stance(model6)
    a_check = _stance_acceleration(model6, stance6)

    jumps = {}
    jump_model = six_link_reference(damping=JUMP_DAMPING)
    for mode in ("compliant", "impact"):
        _log(f"(c) jump, landing: {mode}")
        jumps[mode] = jump_study(jump_model, touchdown=mode)

    _log("(d) three-link model")
    model3 = three_link_reference()
    q3 = np.concatenate([[0.0, 1.2], np.pi / 2 + np.array([0.2, -0.25, 0.1]), 1.01 * model3.rest_lengths])
    v3 = np.array([0.8, 2.0, 1.0, -1.5, 0.3, 0.0, 0.05, -0.05])
    tr3, flight3 = flight_study(model3, q3, v3, 0.4, rtol=1e-10, atol=1e-10)
    stance3 = static_stance(model3)

    files = _plots(out, model6, flight_tr, flight_tv, stance6, jumps, (model3, tr3, stance3))
    if make_video:
        _log("video of the compliant-landing jump")
        files.append(_video(out, jump_model, jumps["compliant"][0]))

    summary = {
        "scenario": "anthropomorph",
        "paper": "004 (Chigarev & Borisov): planar anthropomorph with extensible links",
        "conventions": "q = (x, y, phi1..phi6, l1..l6); phi absolute from horizontal, CCW; legs along -e, trunk "
                       "along +e; COM at (1-n) l (legs) / n l (trunk) from the proximal joint; gravity potential "
                       "from y = 0; SI units",
        "flight_q_at_0_4s": flight["q_end"],
        "flight": {k: v for k, v in flight.items() if k != "q_end"},
        "flight_time_varying_inertia": {k: v for k, v in flight_var.items() if k != "q_end"},
        "stance": {"hip_height": stance6.hip_height, "spring_compressions": stance6.compressions.tolist(),
                   "foot_reactions": stance6.reactions.tolist(),
                   "sum_reactions": stance6.reactions.sum(axis=0).tolist(),
                   "weight": model6.total_mass * model6.gravity, "equilibrium_residual": stance6.residual,
                   "max_acceleration_at_rest": a_check},
        "jump": {**{mode: res for mode, (_, res) in jumps.items()},
                 # the main jump (compliant landing), flattened for readers of the summary
                 **{key: jumps["compliant"][1].get(key) for key in (
                     "takeoff_angular_momentum", "takeoff_com_velocity", "landing_time", "settled", "settle_time_s",
                     "final_stance")}},
        "three_link": {"flight": {k: v for k, v in flight3.items() if k != "q_end"},
                       "stance": {"hip_height": stance3.hip_height,
                                  "spring_compressions": stance3.compressions.tolist(),
                                  "foot_reactions": stance3.reactions.tolist()}},
        "files": files,
        "runtime_s": time.perf_counter() - started,
        # the flights (constant and time-varying inertia, three-link) and both jumps
        **simulated_time(sum(float(tr.t[-1] - tr.t[0]) for tr in (flight_tr, flight_tv, tr3,
                                                                     *(j[0] for j in jumps.values())))),
    }
    write_json(out / "summary.json", summary)
    write_text(out / "report.md", _report(summary))
    _log(f"done in {summary['runtime_s']:.1f} s → {out}")
    return summary


def _stance_acceleration(model: ChainModel, stance) -> float:
    """Max |q̈| of the pinned double support at the static stance (should be round-off)."""
    from biobullet.extensible.phases import FootConstraint, constrained_accelerations
    cons = [FootConstraint(0, (0.0, 0.0)), FootConstraint(1, (0.0, 0.0))]
    a, _ = constrained_accelerations(model, stance.q, np.zeros(model.dof), 0.0, np.zeros(model.dof), cons)
    return float(np.max(np.abs(a)))


def _report(s: dict) -> str:
    f, fv, st, j3 = s["flight"], s["flight_time_varying_inertia"], s["stance"], s["three_link"]
    lines = ["# Paper 004 — planar anthropomorph with extensible links", "",
             "Model, conventions and equations: docs/anthropomorph.md.", "",
             "## (a) Torque-free flight (six links, issue reference state, DOP853 rtol = atol = 1e-12)", "",
             f"- E0 = {f['energy_initial']:.6f} J (issue: 849.197650 J); max |E − E0| = {f['energy_drift_max']:.2e} J",
             f"- L_G(0) = {f['angular_momentum_initial']:.6f} kg·m²/s (issue: −0.182080); "
             f"max |L_G − L_G(0)| = {f['angular_momentum_drift_max']:.2e}",
             f"- COM vs parabola: max deviation {f['com_parabola_error_max']:.2e} m",
             "- q(0.4 s) = " + ", ".join(f"{x:.10f}" for x in s["flight_q_at_0_4s"]),
             f"- time-varying I(t): ΔE = {fv['energy_change']:.6f} J, ∫ −½ΣİΦ̇² dt = {fv['inertia_work']:.6f} J, "
             f"budget residual {fv['energy_budget_residual_max']:.2e} J; L_G drift "
             f"{fv['angular_momentum_drift_max']:.2e}", "",
             "## (b) Static double-support stance (feet at the origin, body vertical)", "",
             f"- hip height {st['hip_height']:.6f} m; Σ R = ({st['sum_reactions'][0]:.3e}, {st['sum_reactions'][1]:.6f})"
             f" N vs weight {st['weight']:.6f} N",
             "- Δl [mm] = " + ", ".join(f"{1e3 * x:.4f}" for x in st["spring_compressions"]) + " (all compressed)",
             f"- max |q̈| of the pinned stance at this state: {st['max_acceleration_at_rest']:.2e}", "",
             "## (c) Vertical jump", "",
             "| landing | flight time [s] | COM apex [m] | min F_N in contact [N] | max F_N [N] | contact "
             "dissipation [J] | impact loss [J] | work of moments [J] | budget residual [J] |",
             "|---|---|---|---|---|---|---|---|---|"]
    for mode, r in ((m, s["jump"][m]) for m in ("compliant", "impact")):
        e = r["energy"]
        lines.append(f"| {mode} | {r['flight_time']:.4f} | {r['com_apex'] or float('nan'):.4f} | "
                     f"{r['min_normal_force']:.3e} | {r['max_normal_force_per_foot']:.1f} | "
                     f"{e['contact_dissipation']:.3f} | {e['impact_losses']:.3f} | {e['work_moments']:.3f} | "
                     f"{r['energy_budget_residual_max']:.2e} |")
    j = s["jump"]
    fs = j.get("final_stance") or {}
    vs = fs.get("vs_static_stance", {})
    lines += ["", f"- take-off: L_G = {j.get('takeoff_angular_momentum', float('nan')):.4f} kg·m²/s, COM velocity "
              f"({j['takeoff_com_velocity'][0]:.4f}, {j['takeoff_com_velocity'][1]:.4f}) m/s; landing at "
              f"t = {j['landing_time']:.4f} s; push-off ankle moments ≤ "
              f"{j['compliant']['push_ankle_to_foot_capacity_max']:.2f} × (0.1 m · F_N) (the pinned feet do not limit "
              "them; a foot of half-length 0.1 m could carry them)",
              f"- settled: {j['settled']} — |Ġ| < {j['compliant']['settle_speed_bound']} m/s for good "
              f"{j['settle_time_s']:.3f} s after touchdown, then {j['compliant']['stance_duration_after_settling_s']:.2f}"
              f" s of stance; min F_N after landing {j['compliant']['min_normal_force_after_landing']:.1f} N",
              f"- final stance: hip {fs['hip_height']:.6f} m (static {vs['static']['hip_height']:.6f} m; feet sunk "
              f"{-1e3 * float(np.mean(fs['foot_heights'])):.4f} mm into the compliant ground; hip − (static − "
              f"penetration) = {vs['hip_height_minus_static_plus_penetration']:.2e} m), "
              f"max |Δl − Δl_static| = {vs['spring_compressions_max_difference']:.2e} m, "
              f"max |R_y − R_y,static| = {vs['vertical_reactions_max_difference']:.3f} N, "
              f"|R_x| ≤ {vs['horizontal_reactions_max']:.3f} N, residual speed {fs['com_speed']:.1e} m/s",
              "",
              "Energy budget over the whole jump (compliant landing): ΔE_mech = W_moments + W_ground + W_damper − "
              "impact losses; W_ground = −(contact dissipation + ΔV_contact).", "",
              "| [J] | start | end | change |", "|---|---|---|---|"]
    ec, e0 = j["compliant"]["energy"], j["compliant"]["energy_start"]
    for key in ("kinetic", "gravity", "spring", "contact_potential", "mechanical", "work_moments", "work_ground",
                "work_damper", "contact_dissipation", "impact_losses", "residual"):
        lines.append(f"| {key} | {e0[key]:.6f} | {ec[key]:.6f} | {ec[key] - e0[key]:.6f} |")
    lines += ["", "Events (compliant landing): " + "; ".join(
        f"{ev['kind']} t = {ev['t']:.5f} s" for ev in s["jump"]["compliant"]["events"]), "",
        "## (d) Three-link model", "",
        f"- flight: energy drift {j3['flight']['energy_drift_max']:.2e} J, L_G drift "
        f"{j3['flight']['angular_momentum_drift_max']:.2e}, COM parabola error {j3['flight']['com_parabola_error_max']:.2e} m",
        f"- stance: hip {j3['stance']['hip_height']:.6f} m, Δl [mm] = "
        + ", ".join(f"{1e3 * x:.4f}" for x in j3["stance"]["spring_compressions"]), "",
        "Files: " + ", ".join(s["files"]), f"Runtime {s['runtime_s']:.1f} s.", ""]
    return "\n".join(lines)
