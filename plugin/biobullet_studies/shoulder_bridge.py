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


#: what the study is about: the video is framed on these links' whole motion, and they carry each rhythm's colour
GIRDLE = ("clavicle", "scapula")
#: the rhythms' colours (matplotlib C0 and C3, as in the figures): first run, second run
GIRDLE_COLORS = ((0.12, 0.47, 0.71), (0.84, 0.15, 0.16))
#: seen from behind, right and above (model frame: x forward, y up, z right), where the scapula lies on the back
#: of the thorax and is not hidden by the humeral head
VIEW_DIRECTION = (-1.0, 0.75, 0.55)
#: the girdle's motion fills the middle of the panel; the margin shows the thorax and the humeral head around it
GIRDLE_MARGIN = 1.6


def video_camera(models_and_trajectories, size: tuple[int, int] = (448, 600)):
    """One camera for every panel, fitted to the shoulder girdle's (GIRDLE) whole motion in all runs."""
    from biobullet.render import fit_camera, motion_points
    points = np.vstack([motion_points(model, trajectory, links=GIRDLE)
                        for model, trajectory in models_and_trajectories])
    model = models_and_trajectories[0][0]
    return fit_camera(points, model.gravity, aspect=size[0] / size[1], margin=GIRDLE_MARGIN,
                      direction=VIEW_DIRECTION)


def video_frames(runs: dict, *, fps: float = 30, size: tuple[int, int] = (448, 600), shadows: bool = True,
                 hide_model: bool = False) -> list[np.ndarray]:
    """Frames of the video: one panel per run ({label: (model, run)}, run = {"t", "q"}), its clavicle and scapula in
    the run's colour (GIRDLE_COLORS), and a last panel with every run overlaid in one scene — where the rhythms
    differ, both colours show. Same camera (close-up on the girdle), same instants, side by side."""
    from biobullet.render import render_frames, side_by_side
    items = list(runs.items())
    trajectories = [SimpleNamespace(t=run["t"], positions=np.array([model.joint_positions(q) for q in run["q"]]))
                    for _, (model, run) in items]
    colors = [dict.fromkeys(GIRDLE, color) for color, _ in zip(GIRDLE_COLORS, items)]
    camera = video_camera([(model, trajectory) for (_, (model, _)), trajectory in zip(items, trajectories)], size)
    common = dict(width=size[0], height=size[1], fps=fps, camera=camera, shadows=shadows, hide_model=hide_model)
    panels = [render_frames(model, trajectory, title=label, link_colors=color, **common)
              for (label, (model, _)), trajectory, color in zip(items, trajectories, colors)]
    if len(items) > 1:
        companions = [(model, trajectory, color)
                      for (_, (model, _)), trajectory, color in zip(items[1:], trajectories[1:], colors[1:])]
        panels.append(render_frames(items[0][1][0], trajectories[0], title="overlay (colours as left)",
                                    link_colors=colors[0], companions=companions, **common))
    return side_by_side(panels)


def render_video(runs: dict, path: str, *, fps: float = 30, size: tuple[int, int] = (448, 600)) -> str | None:
    """3D video of the bridge runs in `runs` ({label: (model, run)}, see `video_frames`): a close-up of the shoulder
    girdle, one panel per rhythm and an overlay (1352×600 for two rhythms). Returns the video path, or None (with a
    message on stderr) when the render module is not available."""
    try:
        from biobullet.render import write_video
    except (ImportError, AttributeError) as exc:
        say(f"[shoulder] video skipped: biobullet.render is not available ({exc})")
        return None
    return write_video(video_frames(runs, fps=fps, size=size), path, fps=fps)
