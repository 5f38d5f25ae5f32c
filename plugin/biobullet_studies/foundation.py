"""Foundation study: every bundled model validated against Pinocchio and PyBullet, and the two shoulder
rhythms (de Groot & Brand 2001 regression vs Holzbaur 2005 elevation-only) plotted from the model files.

summary.json keys: `validation` (per model: ok, worst relative error per quantity), `rhythm` (per model and
driven joint: angle range in degrees over the plotted grid), `all_ok`.
"""
from __future__ import annotations

import os

import numpy as np

from biobullet_studies.common import (bundled_model, bundled_models, save_figure, say, simulated_time, write_atomic,
                                      write_json)

RHYTHM_JOINTS = ("sc_y", "sc_z", "ac_x", "ac_y", "ac_z")
PLANES_DEG = (0.0, 45.0, 90.0)


def rhythm_curves(path: str, elevation_deg: np.ndarray, plane_deg: float) -> dict[str, np.ndarray]:
    """Driven clavicle/scapula angles (deg) along an elevation sweep at a fixed plane of elevation."""
    from biobullet.loader import load_model

    model = load_model(path)
    q0, _ = model.initial_state()
    names = list(model.coordinate_names)
    curves = {joint: np.empty_like(elevation_deg) for joint in RHYTHM_JOINTS}
    for k, elevation in enumerate(np.radians(elevation_deg)):
        q = q0.copy()
        q[names.index("plane_of_elevation")] = np.radians(plane_deg)
        q[names.index("elevation")] = elevation
        theta = model.joint_positions(q)
        for joint in RHYTHM_JOINTS:
            curves[joint][k] = np.degrees(theta[model.joint_names.index(joint)])
    return curves


def plot_rhythms(out_dir: str) -> dict:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    elevation = np.linspace(0.0, 150.0, 76)
    files = {"de Groot & Brand 2001": "shoulder_rhythm.urdf", "Holzbaur 2005": "shoulder_simplified.urdf"}
    figure, axes = plt.subplots(1, len(RHYTHM_JOINTS), figsize=(4 * len(RHYTHM_JOINTS), 4.2), sharex=True,
                             layout="constrained")
    summary: dict[str, dict[str, list[float]]] = {}
    for (label, file), style in zip(files.items(), ("-", "--")):
        summary[file] = {}
        # Holzbaur's rhythm ignores the plane of elevation: one black curve stands for every plane
        planes = PLANES_DEG if style == "-" else PLANES_DEG[:1]
        for plane, color in zip(planes, ("C0", "C1", "C2") if style == "-" else ("k",)):
            curves = rhythm_curves(bundled_model(file), elevation, plane)
            text = f"{label}, plane {plane:.0f}°" if style == "-" else f"{label} (any plane)"
            # Holzbaur dashed with hollow markers: visible where it lies on a de Groot curve
            look = dict(linewidth=2.0) if style == "-" else dict(linewidth=1.3, marker="o", markersize=4,
                                                                   markerfacecolor="none", markevery=0.1)
            for axis, joint in zip(axes, RHYTHM_JOINTS):
                axis.plot(elevation, curves[joint], style, color=color, **look,
                          label=text if joint == RHYTHM_JOINTS[0] else None)
                lo, hi = summary[file].get(joint, [np.inf, -np.inf])
                summary[file][joint] = [min(lo, float(curves[joint].min())), max(hi, float(curves[joint].max()))]
    for axis, joint in zip(axes, RHYTHM_JOINTS):
        axis.set_title(joint)
        axis.set_xlabel("elevation (deg)")
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("joint angle (deg)")
    figure.legend(loc="outside lower center", ncol=4, fontsize=9)
    figure.suptitle("Shoulder rhythm: clavicle (sc_*) and scapula (ac_*) angles driven by the humerus")
    save_figure(figure, os.path.join(out_dir, "shoulder_rhythm.png"))
    plt.close(figure)
    return summary


def run(out_dir: str, samples: int = 5, seed: int = 0, tol: float = 1e-9) -> dict:
    from biobullet.validate import validate_model
    from biobullet.loader import load_model

    os.makedirs(out_dir, exist_ok=True)
    validation, tables = {}, []
    for path in bundled_models():
        name = os.path.basename(path)
        say(f"[foundation] validating {name} ({samples} random states) …")
        report = validate_model(load_model(path), samples=samples, seed=seed, tol=tol)
        worst: dict[str, float] = {}
        for check in report.checks:
            worst[check.quantity] = max(worst.get(check.quantity, 0.0), float(check.max_rel_error))
        validation[name] = {"ok": report.ok, "worst_relative_error": worst}
        tables.append(report.to_table())
        write_json(os.path.join(out_dir, "validation", f"{os.path.splitext(name)[0]}.json"), report.to_dict())
    write_atomic(os.path.join(out_dir, "validation.txt"), "\n\n".join(tables) + "\n")
    say("[foundation] plotting shoulder rhythms …")
    rhythm = plot_rhythms(out_dir)
    summary = {"validation": validation, "rhythm_range_deg": rhythm,
               "all_ok": all(v["ok"] for v in validation.values()),
               **simulated_time(None, "model validation at random states against Pinocchio and PyBullet: "
                                      "no time integration")}
    write_json(os.path.join(out_dir, "summary.json"), summary)
    say(f"[foundation] wrote {out_dir}/summary.json, validation.txt, shoulder_rhythm.png")
    return summary
