"""Paper 000's claim made visible on a muscle: the shoulder rhythm changes R(q), the moment arms through which a
muscle drives the thoracohumeral coordinates, and so the torque the same muscle produces.

The two shoulder models of the `shoulder` study differ only in their clavicle/scapula joint functions:
`shoulder_rhythm.urdf` (de Groot & Brand 2001: scapula and clavicle follow plane of elevation AND elevation) and
`shoulder_simplified.urdf` (Holzbaur et al. 2005: elevation only). Each gets the same middle deltoid, a
`<muscle>` from the scapula (lateral acromion) to the humerus (deltoid tuberosity), wrapping laterally over the
humeral head (a 25-mm sphere at the glenohumeral centre, quadrant +z = lateral). The attachment points are
anatomical landmarks placed in these models' frames after the middle deltoid of Holzbaur et al. (2005) — origin
on the lateral border of the acromion, insertion on the deltoid tuberosity about 10 cm distal to the humeral head
centre — not that model's digitised coordinates; the Hill parameters are illustrative (DeGrooteFregly2016, rigid
tendon, F₀ = 1000 N, l₀ = 0.11 m, the tendon slack length putting the fiber at l₀ at 90° elevation in the
scapular plane under de Groot's rhythm).

Over elevation 0–150° in three planes of elevation (0° abduction, 30° scapular plane, 90° forward flexion; axial
rotation and elbow 0): R = −dl/dq from `biobullet.muscles.moment_arms` (exact through the rhythm's joint
functions), the torque τ = R · F_T at full activation (`equilibrium_tendon_forces`, zero fiber velocity), and, as
the independent check, R against central differences of the muscle's length (`muscles.lengths`, h = 1e-6 rad).

summary.json keys: `muscle` (the element, with its parameters), `grid` (planes and elevations, degrees),
`moment_arms_mm` / `torques_Nm` {rhythm: {plane: {coordinate: [values over elevation]}}}, `difference`
{plane: {coordinate: {max_abs_mm, at_elevation_deg}}} (Holzbaur − de Groot), `torque_difference` {plane:
{max_abs_Nm, at_elevation_deg}}, `finite_difference_check` {max_abs_m, tolerance_m}, `figures`, `ok`.
"""
from __future__ import annotations

import os

import numpy as np

from biobullet_studies.common import bundled_model, save_figure, say, simulated_time, write_atomic, write_json

MODELS = {"de_groot": "shoulder_rhythm.urdf", "holzbaur": "shoulder_simplified.urdf"}
LABELS = {"de_groot": "de Groot (plane + elevation)", "holzbaur": "Holzbaur (elevation only)"}
PLANES_DEG = (0.0, 30.0, 90.0)
COORDINATES = ("plane_of_elevation", "elevation", "axial_rotation")
REFERENCE_POSE_DEG = (30.0, 90.0)   # plane, elevation where the fiber is at its optimal length (de Groot)
MAX_ISOMETRIC_FORCE = 1000.0   # N
OPTIMAL_FIBER_LENGTH = 0.11    # m
FD_STEP = 1e-6                 # rad
FD_TOLERANCE = 1e-7            # m: truncation ≈ h² l‴ ≈ 1e-13, round-off ≈ 1e-16 / h ≈ 1e-10
DELTOID = """<muscle name="DELT2" model="degroote2016" tendon="rigid" max_isometric_force="{force}"
        optimal_fiber_length="{optimal}" tendon_slack_length="{slack}" pennation_angle="0">
  <point link="scapula" xyz="-0.010 0.000 0.025"/>
  <point link="humerus" xyz="0.005 -0.100 0.015"/>
  <wrap name="humeral_head" type="sphere" link="humerus" xyz="0 0 0" radius="0.025" quadrant="+z"/>
</muscle>
"""


def deltoid_model(rhythm: str, out_dir: str, slack: float):
    """The bundled shoulder model of `rhythm` with the middle deltoid added (written to out_dir, loaded)."""
    from biobullet.loader import load_model
    with open(bundled_model(MODELS[rhythm]), encoding="utf-8") as source:
        text = source.read()
    element = DELTOID.format(force=MAX_ISOMETRIC_FORCE, optimal=OPTIMAL_FIBER_LENGTH, slack=f"{slack:.9f}")
    path = os.path.join(out_dir, f"shoulder_{rhythm}_deltoid.urdf")
    write_atomic(path, text.replace("</biobullet>", element + "</biobullet>"))
    return load_model(path)


def pose(model, plane_deg: float, elevation_deg: float) -> np.ndarray:
    q = np.zeros(model.nq)
    q[model.coordinate_names.index("plane_of_elevation")] = np.radians(plane_deg)
    q[model.coordinate_names.index("elevation")] = np.radians(elevation_deg)
    return q


def length_derivative(model, q: np.ndarray, step: float = FD_STEP) -> np.ndarray:
    """−dl/dq of the deltoid by central differences of its length (the independent check of R)."""
    import biobullet.muscles as muscles
    out = np.zeros(model.nq)
    for j in range(model.nq):
        plus, minus = q.copy(), q.copy()
        plus[j] += step
        minus[j] -= step
        out[j] = -(muscles.lengths(model, plus)[0] - muscles.lengths(model, minus)[0]) / (2.0 * step)
    return out


def run(out_dir: str, step_deg: float = 2.5) -> dict:
    """Run the study into `out_dir` (elevations every `step_deg` degrees from 0 to 150); returns the summary (also
    written to summary.json)."""
    import biobullet.muscles as muscles

    elevations = np.arange(0.0, 150.0 + 1e-9, float(step_deg))
    os.makedirs(out_dir, exist_ok=True)
    probe = deltoid_model("de_groot", out_dir, slack=0.05)
    reference_length = float(muscles.lengths(probe, pose(probe, *REFERENCE_POSE_DEG))[0])
    slack = reference_length - OPTIMAL_FIBER_LENGTH
    models = {rhythm: deltoid_model(rhythm, out_dir, slack) for rhythm in MODELS}
    arms: dict = {}
    torques: dict = {}
    worst_fd = 0.0
    for rhythm, model in models.items():
        say(f"[deltoid] {rhythm}: moment arms and torques over {elevations.size} elevations × "
            f"{len(PLANES_DEG)} planes …")
        columns = [model.coordinate_names.index(name) for name in COORDINATES]
        arms[rhythm], torques[rhythm] = {}, {}
        for plane in PLANES_DEG:
            rows, torque_rows = [], []
            for elevation in elevations:
                q = pose(model, plane, elevation)
                moment_arm = muscles.moment_arms(model, q)[0]
                force = float(muscles.equilibrium_tendon_forces(model, q, 1.0)[0])
                rows.append(moment_arm[columns])
                torque_rows.append(moment_arm[columns] * force)
                if elevation % 15.0 == 0.0:   # the independent check on a coarser grid (2 lengths per coordinate)
                    worst_fd = max(worst_fd, float(np.max(np.abs(moment_arm - length_derivative(model, q)))))
            rows, torque_rows = np.array(rows), np.array(torque_rows)
            arms[rhythm][f"{plane:g}"] = {name: (rows[:, k] * 1e3).tolist() for k, name in enumerate(COORDINATES)}
            torques[rhythm][f"{plane:g}"] = {name: torque_rows[:, k].tolist() for k, name in enumerate(COORDINATES)}
    difference, torque_difference = {}, {}
    for plane in PLANES_DEG:
        key = f"{plane:g}"
        difference[key] = {}
        for name in COORDINATES:
            delta = np.array(arms["holzbaur"][key][name]) - np.array(arms["de_groot"][key][name])
            k = int(np.argmax(np.abs(delta)))
            difference[key][name] = {"max_abs_mm": float(abs(delta[k])), "at_elevation_deg": float(elevations[k])}
        delta = np.array(torques["holzbaur"][key]["elevation"]) - np.array(torques["de_groot"][key]["elevation"])
        k = int(np.argmax(np.abs(delta)))
        torque_difference[key] = {"max_abs_Nm": float(abs(delta[k])), "at_elevation_deg": float(elevations[k])}
    figures = [_plot(elevations, arms, torques, out_dir)]
    summary = {
        "muscle": {"element": DELTOID.format(force=MAX_ISOMETRIC_FORCE, optimal=OPTIMAL_FIBER_LENGTH,
                                             slack=f"{slack:.9f}"),
                   "tendon_slack_length_m": slack, "reference_pose_deg": list(REFERENCE_POSE_DEG)},
        "grid": {"planes_deg": list(PLANES_DEG), "elevations_deg": elevations.tolist()},
        "moment_arms_mm": arms, "torques_Nm": torques, "difference": difference,
        "torque_difference": torque_difference,
        "finite_difference_check": {"max_abs_m": worst_fd, "tolerance_m": FD_TOLERANCE},
        "figures": figures, "ok": bool(worst_fd <= FD_TOLERANCE),
        **simulated_time(None, "a geometric study: moment arms and static torques over a grid of poses"),
    }
    write_json(os.path.join(out_dir, "summary.json"), summary)
    return summary


def _plot(elevations: np.ndarray, arms: dict, torques: dict, out_dir: str) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(3, len(PLANES_DEG), figsize=(4.2 * len(PLANES_DEG), 9.0), sharex=True)
    styles = {"de_groot": dict(color="tab:blue"), "holzbaur": dict(color="tab:orange", linestyle="--")}
    for column, plane in enumerate(PLANES_DEG):
        key = f"{plane:g}"
        for rhythm in MODELS:
            axes[0, column].plot(elevations, arms[rhythm][key]["elevation"], label=LABELS[rhythm],
                                 **styles[rhythm])
            axes[1, column].plot(elevations, arms[rhythm][key]["plane_of_elevation"], **styles[rhythm])
            axes[2, column].plot(elevations, torques[rhythm][key]["elevation"], **styles[rhythm])
        axes[0, column].set_title(f"plane of elevation {plane:g}°")
        axes[2, column].set_xlabel("thoracohumeral elevation (°)")
    axes[0, 0].set_ylabel("moment arm, elevation (mm)")
    axes[1, 0].set_ylabel("moment arm, plane of elevation (mm)")
    axes[2, 0].set_ylabel("elevation torque at a = 1 (N·m)")
    axes[0, 0].legend(fontsize=8)
    for axis in axes.flat:
        axis.grid(alpha=0.3)
    figure.suptitle("Middle deltoid: the shoulder rhythm changes R(q) and the torque (paper 000)")
    name = "deltoid_moment_arms.png"
    save_figure(figure, os.path.join(out_dir, name))
    plt.close(figure)
    return name
