"""The elastic 3-link robot's drop (paper 002) on the PyBullet bridge with finite-segment links, and the same
segmented model on the reference engine: the comparison runners of the elastic-robot study."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from biobullet.core.errors import ModelError
from biobullet.bridge.flexible import centre_line, ground_up, highest_frequency, stable_time_step
from biobullet.model.bundled import resolve_model_path

ELASTIC_ROBOT = "elastic_robot_3link"   # the paper-002 robot, bundled (urdf/elastic_robot_3link.urdf)


@dataclass
class BridgeDropResult:
    """The drop stepped by PyBullet, in `gibbs_appell_drop.DropResult`'s layout (SI units), one sample per step
    (every `dt_out`): t (T,), points / point_velocities (T, P, 2) = world (x, y) of the contact points O1..OP
    (P = 4 for the robot), normal_force (T, P) (+y, N), friction_force (T, P) (+x, N), all evaluated at the
    state the step starts from (the forces PyBullet then holds over the step). contacts / separations: onsets
    and separations (time, point, impact_velocity, slip_velocity) detected at step granularity; impacts: onsets
    grouped like `simulate_drop` (re-contacts within `sub_impact_gap` are sub-impacts); intervals: the contact
    log of `BridgeContacts` (impulse Σ F_N dt, peak F_N per interval)."""

    t: np.ndarray
    points: np.ndarray
    point_velocities: np.ndarray
    normal_force: np.ndarray
    friction_force: np.ndarray
    point_names: tuple[str, ...]
    contacts: list[dict]
    separations: list[dict]
    impacts: list[dict]
    intervals: list[dict]
    dt: float
    segments: int
    shear: bool
    omega_max: float
    wall_time: float = 0.0
    layouts: dict = field(default_factory=dict, repr=False)
    engine: str = "pybullet"  # or "reference" (`engine_drop`: dt = 0, omega_max for information)


def bridge_drop(path: str | os.PathLike[str] = ELASTIC_ROBOT, t_end: float = 0.6, *, segments: int = 4,
                shear: bool = False, dt: float | None = None, dt_out: float | None = None,
                air_damping: bool = False, sub_impact_gap: float = 0.02, client=None) -> BridgeDropResult:
    """Drop the model of `path` (default: the paper-002 elastic robot) on PyBullet with its `<flexible>` links
    expanded into `segments` rigid segments each and its `<contact>`s applied — all by `Bridge(model)` itself
    (analytic point–plane geometry for the file's ground), from the file's `<initial>` state to t_end (s).

    dt: PyBullet step (s); None = `stable_time_step` (¼ of the explicit limit 2/ω_max). dt_out: sampling
    interval (s, rounded to a multiple of dt; None = every step). Returns a `BridgeDropResult`.
    air_damping: False (default) leaves out `SegmentAirDamping`: in paper 002 γ acts on the elastic coordinates
    only (D = ∫ γ W W dη), whereas the segment element damps absolute velocities and would slow the free fall
    (contact ≈ 0.8 ms late); on the elastic motion γ/(2ρA) = 0.0125 1/s is negligible over a drop.
    The file must give the contacts' `ground_normal` when gravity is not −z (urdf/elastic_robot_3link.urdf does).
    """
    import time as _time
    from biobullet.bridge.bridge import Bridge
    from biobullet.loader import load_model
    from biobullet_studies.gibbs_appell_drop import group_impacts
    if not (np.isfinite(t_end) and t_end > 0.0):
        raise ModelError(f"'t_end' must be positive, got {t_end!r}", attribute="t_end", expected="t_end > 0 (s)")
    wall = _time.perf_counter()
    path = resolve_model_path(path)
    bridge = Bridge(load_model(path), client, dt=dt, segments=segments, shear=shear, air_damping=air_damping,
                    contact_geometry="analytic")
    layouts = bridge.layouts
    with bridge:
        w_max = highest_frequency(bridge.model)
        contacts = bridge.contacts
        contacts.far_jacobians = True   # the recording below reads the points' velocities in flight too
        names = tuple(c.name for c in contacts.contacts)
        n_steps = int(round(t_end / bridge.dt))
        every = 1 if dt_out is None else max(1, int(round(dt_out / bridge.dt)))
        ts, pts, vel, fns, fts = [], [], [], [], []
        onsets, separations = [], []
        was = [c.state.active for c in contacts.contacts]
        last_kin: list = []
        original = contacts.kinematics

        def kinematics():  # the step's kinematics, kept for recording (no second evaluation)
            last_kin[:] = original()
            return last_kin
        contacts.kinematics = kinematics
        xd = None
        p, c = bridge.pybullet, bridge.client
        for k in range(n_steps + 1):
            t = bridge.time
            bridge.apply()   # contact forces (syncs onset/separation), joint springs; the clock moves to t + dt
            _, _, xd = bridge.state()
            for j, (c_, kin) in enumerate(zip(contacts.contacts, last_kin)):
                if c_.state.active != was[j]:
                    v = kin.jacobian @ xd
                    rec = {"time": t, "point": names[j], "impact_velocity": float(kin.delta_dot),
                           "slip_velocity": float(v[0])}
                    (onsets if c_.state.active else separations).append(rec)
                    was[j] = c_.state.active
            if k % every == 0 or k == n_steps:
                ts.append(t)
                pt, v, fn, ft = [], [], [], []
                for c_, kin in zip(contacts.contacts, last_kin):
                    f_n, f_t, _ = c_.forces(kin)
                    pt.append(kin.point[:2])
                    v.append((kin.jacobian @ xd)[:2])
                    fn.append(f_n)
                    ft.append(float(f_t[0]))
                pts.append(pt), vel.append(v), fns.append(fn), fts.append(ft)
            if k < n_steps:
                p.stepSimulation(physicsClientId=c)
    intervals = contacts.intervals()
    return BridgeDropResult(np.array(ts), np.array(pts), np.array(vel), np.array(fns), np.array(fts), names,
                            onsets, separations, group_impacts(onsets, separations, sub_impact_gap), intervals,
                            bridge.dt, int(segments), bool(shear), w_max, _time.perf_counter() - wall, layouts)


def engine_drop(path: str | os.PathLike[str] = ELASTIC_ROBOT, t_end: float = 0.6, *, segments: int = 4,
                shear: bool = False, dt_out: float = 2e-5, air_damping: bool = False, rtol: float = 1e-9,
                atol: float = 1e-12, max_step: float = 2e-4, sub_impact_gap: float = 0.02) -> BridgeDropResult:
    """The same segmented drop on the REFERENCE engine (`biobullet.simulate`: adaptive DOP853, contact onsets
    and separations located as events) — separates the segmentation error from PyBullet's stepping error.
    Samples every dt_out (s); forces re-evaluated from the sampled state and the logged impact velocities."""
    import time as _time
    from biobullet.flexible.segments import load_segmented_model
    from biobullet.integrate import simulate
    from biobullet_studies.gibbs_appell_drop import group_impacts
    wall = _time.perf_counter()
    path = resolve_model_path(path)
    model, layouts = load_segmented_model(path, segments=segments, shear=shear, air_damping=air_damping)
    contacts = ground_up(model, path)
    grid = np.linspace(0.0, t_end, max(2, int(round(t_end / dt_out)) + 1))
    traj = simulate(model, t_end, t_eval=grid, rtol=rtol, atol=atol, max_step=max_step, progress=False)
    logs = traj.meta.get("discrete", {})
    names = tuple(c.name for c in contacts)
    intervals = [{**i, "contact": c.name} for c in contacts for i in logs.get(c.name, {}).get("intervals", [])]
    intervals.sort(key=lambda i: i["start"])
    onsets = [{"time": i["start"], "point": i["contact"], "impact_velocity": i["impact_velocity"],
               "slip_velocity": float("nan")} for i in intervals if not i.get("initial")]
    separations = [{"time": i["end"], "point": i["contact"]} for i in intervals if i["end"] is not None]
    pts = np.empty((grid.size, len(contacts), 2))
    vel, fn, ft = np.empty_like(pts), np.zeros((grid.size, len(contacts))), np.zeros((grid.size, len(contacts)))
    for n, (q, v, t) in enumerate(zip(traj.q, traj.v, traj.t)):
        x, xd, _, _ = model.joint_state(q, v, t)
        for j, c in enumerate(contacts):
            kin = c.kinematics(model, x, xd)
            pts[n, j], vel[n, j] = kin.point[:2], (kin.jacobian @ xd)[:2]
            live = [i for i in intervals if i["contact"] == c.name and i["start"] <= t
                    and (i["end"] is None or t < i["end"])]
            if live and kin.delta > 0.0:
                law = c.normal_law
                f = float(law.force(kin.delta, kin.delta_dot, live[-1]["impact_velocity"]
                                    if law.needs_impact_velocity else None))
                fn[n, j] = f
                if f > 0.0 and np.any(kin.slip):
                    ft[n, j] = float(np.asarray(c.friction_law.force(kin.slip, f))[0])
    return BridgeDropResult(np.asarray(traj.t), pts, vel, fn, ft, names, onsets, separations,
                            group_impacts(onsets, separations, sub_impact_gap), intervals, 0.0, int(segments),
                            bool(shear), highest_frequency(model), _time.perf_counter() - wall, layouts,
                            engine="reference")


def first_impact(result, window: float = 0.04) -> dict:
    """Numbers of the first impact of a drop result (`simulate_drop`'s DropResult or a BridgeDropResult):
    first_contact_time (s), and per point ("O1".. in result order) the peak F_N (N) and the impulse ∫F_N dt
    (N s, trapezoid over the samples; for the bridge the held step forces, Σ F_N dt) over
    [first contact, first contact + window]."""
    t, fn = np.asarray(result.t), np.asarray(result.normal_force)
    t0 = min(c["time"] for c in result.contacts)
    sel = (t >= t0 - 1e-12) & (t <= t0 + window)
    if getattr(result, "engine", None) == "pybullet":
        impulse = fn[sel].sum(axis=0) * result.dt
    else:
        impulse = np.trapezoid(fn[sel], t[sel], axis=0)
    names = getattr(result, "point_names", None) or tuple(f"O{k + 1}" for k in range(fn.shape[1]))
    return {"first_contact_time": float(t0),
            "peak_force": dict(zip(names, map(float, fn[sel].max(axis=0)))),
            "impulse": dict(zip(names, map(float, impulse)))}


def trajectory_deviation(result, reference, t_max: float) -> float:
    """max over t ≤ t_max and points of |p(t) − p_ref(t)| (m), the reference interpolated linearly to the
    result's sample times (the reference samples are ≤ 1e-4 s apart)."""
    t = np.asarray(result.t)
    sel = t <= t_max + 1e-12
    err = 0.0
    for k in range(result.points.shape[1]):
        for a in range(2):
            ref = np.interp(t[sel], reference.t, reference.points[:, k, a])
            err = max(err, float(np.max(np.abs(result.points[sel, k, a] - ref))))
    return err


def mirror_residual(result) -> float:
    """max |x(O1) + x(O4)|, |x(O2) + x(O3)|, |y(O1) − y(O4)|, |y(O2) − y(O3)| (m) over the samples (0 for a
    motion mirror symmetric about x = 0)."""
    p = result.points
    return float(max(np.abs(p[:, 0, 0] + p[:, 3, 0]).max(), np.abs(p[:, 1, 0] + p[:, 2, 0]).max(),
                     np.abs(p[:, 0, 1] - p[:, 3, 1]).max(), np.abs(p[:, 1, 1] - p[:, 2, 1]).max()))


__all__ = ["highest_frequency", "stable_time_step", "centre_line", "ELASTIC_ROBOT",
           "BridgeDropResult", "bridge_drop", "engine_drop", "ground_up", "first_impact", "trajectory_deviation",
           "mirror_residual"]
