"""Shoulder study on PyBullet: the computed torques replayed on the bridge, and the 3D video (optional steps).

Tracking control (documented choice): Q = Q_ff(t) + K_p (q_ref − q) + K_d (q̇_ref − q̇) on the independent
coordinates. Q_ff is the study's computed torque (reduced formulation), interpolated in time by a cubic spline
through the analysis grid (5 ms samples of a smooth signal: interpolation error ~1e-8 of the torque). The PD
part is deliberately light: per coordinate K_p = M_ii(q0) ω², K_d = 2ζ M_ii(q0) ω with ω = 2π·2 Hz and ζ = 1,
i.e. a critically damped 2 Hz loop (the motion itself is 0.25 Hz). It only removes the drift that PyBullet's
first-order (semi-implicit Euler) stepping and the open-loop instability of an unsupported arm would otherwise
accumulate; the PD share of the torque (`pd_share` = RMS(PD) / RMS(Q_ff)) shows the feed-forward does the work.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from biobullet_studies.common import say
from biobullet_studies.shoulder_dynamics import InverseDynamics, Motion

PD_FREQUENCY = 2.0    # Hz
PD_DAMPING_RATIO = 1.0
BRIDGE_DT = 1.0e-3    # s


def bridge_available() -> tuple[bool, str]:
    """(True, "") if `biobullet.bridge.Bridge` imports, else (False, why)."""
    try:
        from biobullet.bridge import Bridge  # noqa: F401
    except (ImportError, AttributeError) as exc:
        return False, f"biobullet.bridge is not available ({exc})"
    return True, ""


def pd_gains(model, q0, frequency: float = PD_FREQUENCY, damping_ratio: float = PD_DAMPING_RATIO):
    """(K_p, K_d) per independent coordinate (N·m/rad, N·m·s/rad) from the diagonal of M(q0)."""
    inertia = np.diag(model.mass_matrix(q0))
    omega = 2.0 * np.pi * frequency
    return inertia * omega ** 2, 2.0 * damping_ratio * inertia * omega


def track_on_bridge(model, motion: Motion, reference: InverseDynamics, *, dt: float = BRIDGE_DT,
                    pd: bool = True, label: str = "") -> dict:
    """Replay `reference.torque` on the PyBullet bridge over one period (+ light PD); return errors and series.

    Returned keys: t, q, q_ref (N × nv, rad), max_tracking_error_deg / rms_tracking_error_deg (per coordinate),
    max_joint_function_residual (rad, max |Φ| of the joint-function rows over the run), pd_share (per coordinate),
    final_time (s), steps.
    """
    from scipy.interpolate import CubicSpline
    from biobullet.bridge import Bridge

    names = tuple(model.coordinate_names)
    feedforward = CubicSpline(reference.t, reference.torque, axis=0)
    n_steps = int(round(motion.period / dt))
    q0, v0, _ = motion(0.0, names)
    kp, kd = pd_gains(model, q0[0]) if pd else (np.zeros(model.nv), np.zeros(model.nv))
    times, qs, refs, pd_torque, ff_torque = [], [], [], [], []
    residual = 0.0
    with Bridge(model, dt=dt, initial=(q0[0], v0[0])) as bridge:
        for k in range(n_steps + 1):
            t, q, v = bridge.generalized_state()
            q_ref, v_ref, _ = motion(t, names)
            q_ref, v_ref = q_ref[0], v_ref[0]
            residual = max(residual, max(abs(r) for r in bridge.constraint_residuals().values()))
            times.append(t)
            qs.append(q)
            refs.append(q_ref)
            if k == n_steps:
                break
            correction = kp * (q_ref - q) + kd * (v_ref - v)
            ff = feedforward(t)
            pd_torque.append(correction)
            ff_torque.append(ff)
            bridge.step(generalized=ff + correction)
            if label and k % 1000 == 999:
                say(f"[shoulder] bridge {label}: t = {bridge.time:.1f} / {motion.period:g} s")
    q, q_ref = np.array(qs), np.array(refs)
    error = np.degrees(q - q_ref)
    pd_rms = np.sqrt(np.mean(np.array(pd_torque) ** 2, axis=0))
    ff_rms = np.sqrt(np.mean(np.array(ff_torque) ** 2, axis=0))
    return {"t": np.array(times), "q": q, "q_ref": q_ref, "names": names,
            "max_tracking_error_deg": dict(zip(names, np.abs(error).max(axis=0).tolist())),
            "rms_tracking_error_deg": dict(zip(names, np.sqrt(np.mean(error ** 2, axis=0)).tolist())),
            "max_joint_function_residual": float(residual),
            "pd_share": dict(zip(names, (pd_rms / np.where(ff_rms > 0, ff_rms, 1.0)).tolist())),
            "pd_gains": {"kp": dict(zip(names, kp.tolist())), "kd": dict(zip(names, kd.tolist()))},
            "dt": dt, "steps": n_steps, "final_time": float(times[-1])}


#: candidate views: 25° and 35° above the horizontal, every 30° around the vertical; `render.choose_direction`
#: takes the one in which both models' whole motion fills the panel best (for case 2: from behind-right-above, where
#: the scapula's rotation is visible), and `render.fit_camera` one camera for both panels
VIEW_ELEVATIONS_DEG = (25.0, 35.0)


def video_camera(models_and_trajectories, size: tuple[int, int] = (640, 720)):
    """One camera for every panel: the view (of VIEW_ELEVATIONS_DEG, every 30°) in which the whole motion of all
    models fills a panel of `size` best, fitted to it."""
    from biobullet.render import choose_direction, fit_camera, motion_points
    points = np.vstack([motion_points(model, trajectory) for model, trajectory in models_and_trajectories])
    gravity = models_and_trajectories[0][0].gravity
    direction = choose_direction(points, gravity, aspect=size[0] / size[1], elevations=VIEW_ELEVATIONS_DEG)
    return fit_camera(points, gravity, aspect=size[0] / size[1], direction=direction)


def render_video(runs: dict, path: str, *, fps: float = 30, size: tuple[int, int] = (640, 720)) -> str | None:
    """3D video, one titled panel per model side by side (1280×720 for two), of the bridge runs in `runs`
    ({label: (model, run)}): same camera, same instants, so the panels stay in sync and at the same scale.

    Uses `biobullet.render` (PyBullet TinyRenderer); returns the video path, or None (with a message on stderr)
    when the render module is not available.
    """
    try:
        from biobullet.render import render_frames, side_by_side, write_video
    except (ImportError, AttributeError) as exc:
        say(f"[shoulder] video skipped: biobullet.render is not available ({exc})")
        return None
    trajectories = {label: SimpleNamespace(t=run["t"], positions=np.array([model.joint_positions(q) for q in run["q"]]))
                    for label, (model, run) in runs.items()}
    camera = video_camera([(model, trajectories[label]) for label, (model, _) in runs.items()], size)
    panels = [render_frames(model, trajectories[label], width=size[0], height=size[1], fps=fps, camera=camera,
                            title=label) for label, (model, _) in runs.items()]
    return write_video(side_by_side(panels), path, fps=fps)
