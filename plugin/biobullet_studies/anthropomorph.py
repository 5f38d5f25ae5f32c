"""Paper 004 study (`biobullet run anthropomorph`): the planar anthropomorph with extensible links.

(a) torque-free flight of the six-link reference model from the issue's initial state: COM parabola, angular
    momentum about the COM, energy; and the same with a time-varying I(t) (energy changes by ∫ −½ Σ İ φ̇² dt);
(b) static double-support stance (feet at the origin, body vertical): reactions, spring compressions, hip height;
(c) vertical jump: crouched stance (feet pinned) → push-off by joint moments → lift-off (event) → flight →
    landing on compliant feet (Flores law + regularized friction, touchdown event) → stance; energy budget with
    residual; the same jump landing through the plastic impact map onto the pinned double support, for comparison;
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
from biobullet.core.atomic import save_figure, write_json, write_text
from biobullet.contact.friction import Regularized
from biobullet.contact.normal import Flores
from biobullet.extensible import recursion as rec
from biobullet.extensible.chain_model import (
    ChainModel,
    InertiaLaw,
    Link,
    reference_flight_state,
    six_link_reference,
    three_link_reference,
)
from biobullet.extensible.phases import FREE, PINNED, CompliantGround, Trajectory, simulate, static_stance
from biobullet_studies.common import simulated_time

FLIGHT_T = 0.4
T_PUSH, PUSH_TIME = 0.1, 0.25   # s: hold the crouched equilibrium, then extend the legs (smooth step)
JUMP_T_END = 0.75          # s: ~0.1 s of landing stance (the simple PD landing hops again a little later)
JUMP_DAMPING = 200.0       # N·s/m axial link damping in the jump (the paper has none; allowed by the issue)


_T0 = [time.perf_counter()]


def _log(message: str) -> None:
    print(f"[anthropomorph {time.perf_counter() - _T0[0]:6.1f} s] {message}", file=sys.stderr, flush=True)


# ---- (a) flight -------------------------------------------------------------------------------------------------
def flight_study(model: ChainModel, q0: np.ndarray, v0: np.ndarray, t_end: float = FLIGHT_T, *,
                 rtol: float = 1e-12, atol: float = 1e-12, dt_sample: float = 0.005) -> tuple[Trajectory, dict]:
    tr = simulate(model, q0, v0, t_end, with_ground=False, method="DOP853", rtol=rtol, atol=atol,
                  dt_sample=dt_sample)
    e = tr.energy_table()
    L = rec.angular_momentum_about_com(model, tr.q, tr.v, tr.t)
    G, Gd = rec.center_of_mass(model, tr.q, tr.v)
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
    foot = rec.foot_position(model, q, 0)
    q[:2] = -foot
    return q


class JumpController:
    """Joint-space PD on the relative joint angles θ = Bφ toward a posture schedule, plus ankle PD on the
    absolute foot-link angle (only while a foot is on the ground). Schedule: hold `crouch` until t_push, smooth
    step to `extended` over `push_time`; once both feet are free, `flight` posture; after touchdown, `landing`."""

    def __init__(self, model: ChainModel, crouch, extended, flight, landing, *, t_push: float, push_time: float,
                 kp: float = 3000.0, kd: float = 150.0, kp_ankle: float = 3000.0, kd_ankle: float = 150.0,
                 kp_land: float = 1200.0, kd_land: float = 150.0, k_com: float = 3000.0, d_com: float = 600.0):
        self.model = model
        B = model.joint_matrix
        self.theta = {k: B @ p for k, p in (("crouch", crouch), ("extended", extended), ("flight", flight),
                                             ("landing", landing))}
        self.foot_angle = {k: p[list(model.feet)] for k, p in (("crouch", crouch), ("extended", extended),
                                                                ("flight", flight), ("landing", landing))}
        self.t_push, self.push_time = t_push, push_time
        self.kp, self.kd, self.kp_a, self.kd_a = kp, kd, kp_ankle, kd_ankle
        self.k_com, self.d_com = k_com, d_com             # N, N·s: COM-over-feet feedback through the ankles
        # after lift-off: soft, damped knees (absorb the landing), stiff hips and trunk (keep the posture)
        knee = np.array([jt.parent != model.chain_order(2)[0] and model.chain[jt.child] < 2 for jt in model.joints])
        self.kp_land_j = np.where(knee, kp_land, kp)
        self.kd_land_j = np.where(knee, kd_land, kd)   # softer, more damped joints from lift-off on (landing)
        self.airborne = False

    def _target(self, t: float, states) -> tuple[np.ndarray, np.ndarray]:
        if all(s == FREE for s in states):
            self.airborne = True
        if self.airborne:
            key = "landing" if any(s != FREE for s in states) else "flight"
            return self.theta[key], self.foot_angle[key]
        s = min(max((t - self.t_push) / self.push_time, 0.0), 1.0)
        w = s * s * s * (10.0 - 15.0 * s + 6.0 * s * s)     # C² smooth step
        return ((1 - w) * self.theta["crouch"] + w * self.theta["extended"],
                (1 - w) * self.foot_angle["crouch"] + w * self.foot_angle["extended"])

    def __call__(self, t, q, v, states):
        n = self.model.n_links
        B = self.model.joint_matrix
        theta_t, foot_t = self._target(t, states)
        kp, kd = (self.kp_land_j, self.kd_land_j) if self.airborne else (self.kp, self.kd)
        tau = kp * (theta_t - B @ q[2:2 + n]) - kd * (B @ v[2:2 + n])
        feet = list(self.model.feet)
        ankle = self.kp_a * (foot_t - q[2:2 + n][feet]) - self.kd_a * v[2:2 + n][feet]
        # balance: a clockwise ground moment on the foot link moves the COM forward, so push it back over the feet
        G, Gd = rec.center_of_mass(self.model, q, v)
        ankle = ankle + 0.5 * (self.k_com * G[0] + self.d_com * Gd[0])
        return tau, ankle


def balanced_lean(model: ChainModel, thigh: float, shank: float) -> float:
    """Trunk lean [rad] that puts the whole-body COM above the feet (x_G = 0) for the given leg posture."""
    from scipy.optimize import brentq
    def gx(lean):
        return float(rec.center_of_mass(model, crouch_state(model, posture(model, thigh, shank, lean)))[0])
    return float(brentq(gx, -0.8, 1.2, xtol=1e-12))


def jump_study(model: ChainModel, *, touchdown: str, t_end: float = JUMP_T_END, rtol: float = 1e-9,
               dt_sample: float = 2e-3, method: str = "LSODA", kp_land: float = 1500.0,
               kd_land: float = 400.0) -> tuple[Trajectory, dict]:
    lean = balanced_lean(model, 0.6, 0.6)
    # one trunk lean for every posture: straightening the trunk during the push would throw the COM backwards
    crouch = posture(model, 0.6, 0.6, lean)
    extended = posture(model, 0.05, 0.05, lean)
    landing = posture(model, 0.45, 0.45, lean)
    # flight: legs bent to the landing posture before touchdown; after touchdown a deeper crouch absorbs the landing
    ctrl = JumpController(model, crouch, extended, landing, crouch, t_push=T_PUSH, push_time=PUSH_TIME,
                          kp_land=kp_land, kd_land=kd_land, kp_ankle=300.0, kd_ankle=60.0)
    # start from the exact equilibrium of the pinned stance under the holding moments (no initial transient)
    def holding(q):
        tau, ankle = ctrl(0.0, q, np.zeros(model.dof), (PINNED, PINNED))
        return rec.joint_moment_force(model, tau, ankle)
    q0 = static_stance(model, crouch_state(model, crouch), generalized_force=holding).q
    ground = CompliantGround(Flores(stiffness=1.0e6, restitution=0.3), Regularized(mu=0.8, v0=0.05))
    tr = simulate(model, q0, np.zeros(model.dof), t_end, feet=(PINNED, PINNED), touchdown=touchdown, ground=ground,
                  controller=ctrl, breakpoints=(T_PUSH, T_PUSH + PUSH_TIME), method=method, rtol=rtol, atol=rtol,
                  dt_sample=dt_sample)
    e = tr.energy_table()
    G = rec.center_of_mass(model, tr.q)
    airborne = np.array([p == "flight" for p in tr.phase])
    fn = tr.reactions[:, :, 1]
    out = {"touchdown_mode": touchdown, "events": tr.events, "nfev": tr.nfev,
           "min_normal_force": float(fn[~airborne].min()) if np.any(~airborne) else 0.0,
           "max_normal_force_per_foot": float(fn.max()),
           "com_height_start": float(G[0, 1]),
           "com_apex": float(G[airborne, 1].max()) if np.any(airborne) else None,
           "hip_height_end": float(tr.q[-1, 1]),
           "flight_time": float(np.sum(np.diff(tr.t)[airborne[:-1]])) if np.any(airborne) else 0.0,
           "energy": {k: float(vv[-1]) for k, vv in e.items()},
           "energy_budget_residual_max": float(np.max(np.abs(e["residual"]))),
           "energy_scale": float(np.max(np.abs(e["mechanical"] - e["mechanical"][0]))),
           "constraint_drift_max": float(_constraint_drift(model, tr))}
    return tr, out


def _constraint_drift(model: ChainModel, tr: Trajectory) -> float:
    drift = 0.0
    anchor = {}
    for k in range(len(tr.t)):
        for i in range(2):
            if tr.foot_states[k][i] == PINNED:
                r = rec.foot_position(model, tr.q[k], i)
                a = anchor.setdefault((i, _segment_key(tr, k, i)), r.copy())
                drift = max(drift, float(np.max(np.abs(r - a))))
    return drift


def _segment_key(tr: Trajectory, k: int, i: int) -> int:
    # index of the first sample of the current pinned stretch of foot i
    while k > 0 and tr.foot_states[k - 1][i] == PINNED:
        k -= 1
    return k


# ---- plots and video ---------------------------------------------------------------------------------------------
def _stick(ax, model: ChainModel, q: np.ndarray, color="k", alpha=1.0):
    prox, dist = rec.link_endpoints(model, q)
    colors = {0: "tab:blue", 1: "tab:orange", 2: "tab:green"}
    for k in range(model.n_links):
        ax.plot([prox[k, 0], dist[k, 0]], [prox[k, 1], dist[k, 1]], "-o", color=colors[int(model.chain[k])],
                alpha=alpha, lw=3, ms=3)
    G = rec.center_of_mass(model, q)
    ax.plot(G[0], G[1], "k+", ms=8, alpha=alpha)


def _plots(out: Path, model6, flight_tr, flight_tv, stance6, jumps: dict, three) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    files = []
    # (a) flight
    fig, axs = plt.subplots(1, 3, figsize=(15, 4.2))
    G = rec.center_of_mass(model6, flight_tr.q)
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
    L = rec.angular_momentum_about_com(model6, flight_tr.q, flight_tr.v, flight_tr.t)
    Ltv = rec.angular_momentum_about_com(flight_tv.model, flight_tv.q, flight_tv.v, flight_tv.t)
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
    fig, axs = plt.subplots(2, 2, figsize=(13, 8))
    for mode, (tr, _) in jumps.items():
        axs[0, 0].plot(tr.t, tr.q[:, 1], label=f"hip y ({mode})")
        axs[0, 1].plot(tr.t, tr.reactions[:, 0, 1], label=f"foot 1 R_y ({mode})")
    tr, res = jumps["compliant"]
    for ev in tr.events:
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


def _video(out: Path, model: ChainModel, tr: Trajectory, fps: int = 30, slow: float = 2.0) -> str:
    """Stick-figure MP4 of the jump, `slow`× slow motion (red arrows: normal reactions, 2e-4 m/N)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from biobullet.render.video import write_video
    frames = []
    times = np.arange(tr.t[0], tr.t[-1], 1.0 / (fps * slow))
    fig, ax = plt.subplots(figsize=(4.8, 4.8), dpi=80)
    for tt in times:
        k = int(np.searchsorted(tr.t, tt))
        k = min(k, len(tr.t) - 1)
        ax.clear()
        ax.axhline(0.0, color="sienna", lw=2)
        _stick(ax, model, tr.q[k])
        for i in range(2):
            if tr.reactions[k, i, 1] > 0:
                a = rec.foot_position(model, tr.q[k], i)
                ax.arrow(a[0], a[1], 0, 2e-4 * tr.reactions[k, i, 1], width=0.005, color="red")
        ax.set_xlim(-0.8, 0.8)
        ax.set_ylim(-0.1, 1.5 + 0.1)
        ax.set_aspect("equal")
        ax.set_title(f"t = {tr.t[k]:.3f} s  {tr.phase[k]}  ({slow:g}× slow motion)", fontsize=8)
        fig.canvas.draw()
        frames.append(np.asarray(fig.canvas.buffer_rgba())[:, :, :3].copy())
    plt.close(fig)
    write_video(frames, out / "jump.mp4", fps=fps)
    return "jump.mp4"


# ---- entry point -------------------------------------------------------------------------------------------------
def run(out_dir: str, **options: Any) -> dict:
    """Run (a)–(d); options: video (bool, default True), quick (bool: shorter jump, no video)."""
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
        "jump": {mode: res for mode, (_, res) in jumps.items()},
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
    for mode, r in s["jump"].items():
        e = r["energy"]
        lines.append(f"| {mode} | {r['flight_time']:.4f} | {r['com_apex'] or float('nan'):.4f} | "
                     f"{r['min_normal_force']:.3e} | {r['max_normal_force_per_foot']:.1f} | "
                     f"{e['contact_dissipation']:.3f} | {e['impact_losses']:.3f} | {e['work_moments']:.3f} | "
                     f"{r['energy_budget_residual_max']:.2e} |")
    lines += ["", "Events (compliant landing): " + "; ".join(
        f"{ev['kind']} t = {ev['t']:.5f} s" for ev in s["jump"]["compliant"]["events"]), "",
        "## (d) Three-link model", "",
        f"- flight: energy drift {j3['flight']['energy_drift_max']:.2e} J, L_G drift "
        f"{j3['flight']['angular_momentum_drift_max']:.2e}, COM parabola error {j3['flight']['com_parabola_error_max']:.2e} m",
        f"- stance: hip {j3['stance']['hip_height']:.6f} m, Δl [mm] = "
        + ", ".join(f"{1e3 * x:.4f}" for x in j3["stance"]["spring_compressions"]), "",
        "Files: " + ", ".join(s["files"]), f"Runtime {s['runtime_s']:.1f} s.", ""]
    return "\n".join(lines)
