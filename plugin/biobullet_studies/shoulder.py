"""Shoulder-rhythm study (paper 000, Table 1): does Holzbaur's elevation-only rhythm change the joint torques?

Two models differ only in their clavicle/scapula joint functions: `shoulder_rhythm.urdf` (de Groot & Brand 2001,
driven by plane of elevation AND elevation; the reference) and `shoulder_simplified.urdf` (Holzbaur 2005,
elevation only). Both follow the same motion (see `shoulder_dynamics`: a cosine sweep of the plane of elevation
−20° → 120° → −20° over 4 s, elevation held at 50° (case 1) or 90° (case 2), axial rotation −30°, elbow 0°).
Computed torque (perfect tracking) Q(t) = M(q)q̈ + h(q, q̇), reduced formulation, cross-checked against the
matrix-calculus formulation and PyBullet's own inverse dynamics through the bridge; power balance
∫Q·q̇ dt = Δ(T + V); optional replay on the PyBullet bridge (feed-forward + light PD, see `shoulder_bridge`) and a
3D video.

NRMSE = RMSE(Q_holzbaur − Q_degroot) / (max − min of Q_degroot); r = Pearson correlation of the two series.

summary.json keys:
- `motion`: the prescribed motion (degrees, seconds, law) and `samples` (time grid size).
- `nrmse_definition`: the normalisation, as text.
- `table`: {case: {coordinate: {nrmse, r, rmse (N·m), reference_range, other_range, reference_mean, other_mean}}}
  for coordinates plane_of_elevation and elevation — the Table-1-like result.
- `paper_table`: paper 000's Table 1 under both readings of its right-to-left layout (see report.md).
- `torque_range`: {case: {model: {coordinate: [min, max] N·m}}}.
- `cross_check`: {case: {model: {matrix_calculus, bridge}}}: max|ΔQ| / max|Q| (bridge null if skipped).
- `power_balance`: {case: {model: {relative_error, max_abs_error_J, max_delta_energy_J}}}.
- `bridge`: {case: {model: tracking errors (deg), max_joint_function_residual (rad), pd_share, pd_gains}},
  `open_loop` (case 1, de Groot, no PD: max tracking error, deg), or {"skipped": reason}.
- `video`: file name or null. `figures`: file names. `ok`: every check within its tolerance (`tolerances`).
"""
from __future__ import annotations

import os

import numpy as np

from biobullet_studies.common import bundled_model, say, simulated_time, write_atomic, write_json
from biobullet_studies.shoulder_dynamics import (CASES_DEG, COMPARED, MODELS, PERIOD, Motion, bridge_inverse_dynamics,
                                comparison_table, inverse_dynamics, power_balance, relative_difference)

#: paper 000, Table 1, read as printed (left to right) and with the column groups swapped (see report)
PAPER_TABLE = {
    "reading_A": {"plane_of_elevation": {"nrmse": [0.9985, 0.9991], "r": [0.5488, 0.1328]},
                  "elevation": {"nrmse": [0.4712, 0.6246], "r": [0.3357, 0.2184]}},
    "reading_B": {"plane_of_elevation": {"nrmse": [0.5488, 0.1328], "r": [0.9985, 0.9991]},
                  "elevation": {"nrmse": [0.3357, 0.2184], "r": [0.4712, 0.6246]}},
}
NRMSE_DEFINITION = "RMSE(Q_holzbaur − Q_degroot) / (max − min of Q_degroot)"
#: panel titles of the video (short: a panel is 448 px wide)
VIDEO_LABELS = {"de_groot": "de Groot: plane + elevation", "holzbaur": "Holzbaur: elevation only"}
TOLERANCES = {"cross_check": 1e-9, "power_balance": 1e-6, "joint_function_residual": 1e-9}
CROSS_CHECK_STRIDE = 10  # matrix-calculus / bridge cross-check on every 10th sample (both are O(ms) per sample)


def run(out_dir: str, samples: int = 801, bridge: bool = True, video: bool = True, open_loop: bool = True,
        bridge_dt: float = 1.0e-3) -> dict:
    """Run the study into `out_dir`; returns the summary (also written to summary.json)."""
    from biobullet.loader import load_model
    from biobullet_studies.shoulder_bridge import bridge_available, render_video, track_on_bridge
    from biobullet_studies.shoulder_plots import save_all

    os.makedirs(out_dir, exist_ok=True)
    t = np.linspace(0.0, PERIOD, int(samples))
    models = {key: load_model(bundled_model(file)) for key, file in MODELS.items()}
    have_bridge, why = bridge_available()
    if not have_bridge:
        say(f"[shoulder] PyBullet steps skipped: {why}")
    results, cross, balances, table, ranges, rhythm = {}, {}, {}, {}, {}, {}
    for case, elevation in CASES_DEG.items():
        motion = Motion(elevation)
        results[case], cross[case], balances[case], ranges[case], rhythm[case] = {}, {}, {}, {}, {}
        for key, model in models.items():
            say(f"[shoulder] {case} (elevation {elevation:g}°), {key}: inverse dynamics on {t.size} samples …")
            result = inverse_dynamics(model, motion, t)
            results[case][key] = result
            cross[case][key] = _cross_check(model, motion, result, have_bridge)
            balances[case][key] = power_balance(result)
            ranges[case][key] = {n: [float(result.column(n).min()), float(result.column(n).max())]
                                 for n in result.names}
            k = model.joint_names.index("ac_z")
            rhythm[case][key] = np.degrees([model.joint_positions(q)[k] for q in result.q])
        table[case] = comparison_table(results[case]["de_groot"], results[case]["holzbaur"])

    runs, bridge_summary, video_file = {}, {"skipped": why} if not have_bridge else {}, None
    replayed = []   # simulated seconds of each forward run (the PyBullet replays; the rest is inverse dynamics)
    if bridge and have_bridge:
        for case, elevation in CASES_DEG.items():
            runs[case], bridge_summary[case] = {}, {}
            for key, model in models.items():
                say(f"[shoulder] {case}, {key}: replaying the torques on the PyBullet bridge (dt = {bridge_dt:g} s) …")
                run_ = track_on_bridge(model, Motion(elevation), results[case][key], dt=bridge_dt,
                                       label=f"{case}/{key}")
                runs[case][key] = run_
                replayed.append(run_["final_time"])
                bridge_summary[case][key] = {k: v for k, v in run_.items() if k not in ("t", "q", "q_ref", "names")}
        if open_loop:
            say("[shoulder] case1, de_groot: open-loop replay (no PD) to show why the PD is there …")
            free = track_on_bridge(models["de_groot"], Motion(CASES_DEG["case1"]), results["case1"]["de_groot"],
                                   dt=bridge_dt, pd=False, label="open loop")
            replayed.append(free["final_time"])
            bridge_summary["open_loop"] = {"case": "case1", "model": "de_groot",
                                           "max_tracking_error_deg": free["max_tracking_error_deg"]}
        if video:
            say("[shoulder] rendering the 3D video (case 2, shoulder girdle: de Groot blue, Holzbaur red, overlay) …")
            video_file = render_video({VIDEO_LABELS[k]: (models[k], runs["case2"][k]) for k in models},
                                      os.path.join(out_dir, "shoulder_case2.mp4"))
            video_file = os.path.basename(video_file) if video_file else None
    elif not bridge:
        bridge_summary = {"skipped": "disabled (bridge=False)"}

    say("[shoulder] plotting …")
    figures = save_all(out_dir, results, rhythm, balances, runs)
    summary = _summary(t, table, ranges, cross, balances, bridge_summary, video_file, figures)
    summary.update(simulated_time(sum(replayed)) if replayed else simulated_time(
        None, "inverse dynamics only: the PyBullet replays (the study's forward runs) were skipped"))
    write_json(os.path.join(out_dir, "summary.json"), summary)
    write_atomic(os.path.join(out_dir, "report.md"), report(summary))
    say(f"[shoulder] wrote {out_dir}/summary.json, report.md, {', '.join(figures)}"
        + (f", {video_file}" if video_file else ""))
    return summary


def _cross_check(model, motion: Motion, result, have_bridge: bool) -> dict:
    """Relative differences of the reduced torques vs matrix calculus and PyBullet (bridge) on a sub-grid."""
    picks = slice(None, None, CROSS_CHECK_STRIDE)
    other = inverse_dynamics(model, motion, result.t[picks], formulation="matrix_calculus")
    out = {"matrix_calculus": relative_difference(other.torque, result.torque[picks]), "bridge": None}
    if have_bridge:
        from biobullet.bridge import Bridge
        with Bridge(model) as bridge:
            pybullet = bridge_inverse_dynamics(bridge, other)
        out["bridge"] = relative_difference(pybullet, result.torque[picks])
    return out


def _summary(t, table, ranges, cross, balances, bridge_summary, video_file, figures) -> dict:
    power = {case: {key: {"relative_error": b["relative_error"], "max_abs_error_J": b["max_abs_error"],
                          "max_delta_energy_J": b["max_delta_energy"]} for key, b in models.items()}
             for case, models in balances.items()}
    checks = [v for c in cross.values() for m in c.values() for v in m.values() if v is not None]
    ok = all(v <= TOLERANCES["cross_check"] for v in checks)
    ok &= all(p["relative_error"] <= TOLERANCES["power_balance"] for c in power.values() for p in c.values())
    for case in CASES_DEG:
        for entry in bridge_summary.get(case, {}).values():
            ok &= entry["max_joint_function_residual"] <= TOLERANCES["joint_function_residual"]
    motion = Motion(0.0)
    return {
        "motion": {"law": "plane = c − a·cos(2πt/T)", "plane_start_deg": motion.plane_start_deg,
                   "plane_peak_deg": motion.plane_peak_deg, "period_s": motion.period,
                   "elevation_deg": dict(CASES_DEG), "axial_rotation_deg": motion.axial_rotation_deg,
                   "elbow_flexion_deg": motion.elbow_flexion_deg, "samples": int(t.size)},
        "nrmse_definition": NRMSE_DEFINITION, "table": table, "paper_table": PAPER_TABLE,
        "torque_range": ranges, "cross_check": cross,
        "power_balance": power, "bridge": bridge_summary, "video": video_file, "figures": figures,
        "tolerances": TOLERANCES, "ok": bool(ok),
    }


def report(summary: dict) -> str:
    """The short report.md: motion, Table 1 next to the paper's, checks and an honest discussion."""
    m, table = summary["motion"], summary["table"]
    lines = [
        "# Shoulder-rhythm study (paper 000, Table 1)", "",
        f"Motion: plane of elevation {m['plane_start_deg']:g}° → {m['plane_peak_deg']:g}° → "
        f"{m['plane_start_deg']:g}° (cosine, C∞, starts and ends at rest) over {m['period_s']:g} s; elevation "
        f"{m['elevation_deg']['case1']:g}° (case 1) and {m['elevation_deg']['case2']:g}° (case 2); axial rotation "
        f"{m['axial_rotation_deg']:g}°; elbow {m['elbow_flexion_deg']:g}° (straight). {m['samples']} samples.",
        "Computed torque Q = M(q)q̈ + h(q, q̇), reduced formulation. Reference: de Groot & Brand rhythm; compared: "
        "Holzbaur (elevation only).", "",
        f"NRMSE = {summary['nrmse_definition']}; r = Pearson correlation.", "",
        "| torque on | NRMSE case 1 | NRMSE case 2 | r case 1 | r case 2 | paper (A) NRMSE / r | paper (B) NRMSE / r |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in COMPARED:
        a, b = (summary["paper_table"][k][name] for k in ("reading_A", "reading_B"))
        lines.append(f"| {name.replace('_', ' ')} | {table['case1'][name]['nrmse']:.4f} | "
                     f"{table['case2'][name]['nrmse']:.4f} | {table['case1'][name]['r']:.4f} | "
                     f"{table['case2'][name]['r']:.4f} | {a['nrmse'][0]:.4f}, {a['nrmse'][1]:.4f} / "
                     f"{a['r'][0]:.4f}, {a['r'][1]:.4f} | {b['nrmse'][0]:.4f}, {b['nrmse'][1]:.4f} / "
                     f"{b['r'][0]:.4f}, {b['r'][1]:.4f} |")
    lines += ["", "Torque ranges (N·m, min … max):", ""]
    for case, models in summary["torque_range"].items():
        for key, ranges in models.items():
            text = ", ".join(f"{n} {ranges[n][0]:+.3f} … {ranges[n][1]:+.3f}" for n in COMPARED)
            lines.append(f"- {case}, {key}: {text}")
    lines += ["", "## Checks", ""]
    for case, models in summary["cross_check"].items():
        for key, c in models.items():
            p = summary["power_balance"][case][key]
            bridge = "skipped" if c["bridge"] is None else f"{c['bridge']:.1e}"
            lines.append(f"- {case}, {key}: reduced vs matrix calculus {c['matrix_calculus']:.1e}, vs PyBullet "
                         f"(bridge) {bridge} (max|ΔQ|/max|Q|); power balance max|∫Q·q̇dt − ΔE| / max|ΔE| = "
                         f"{p['relative_error']:.1e} (max|ΔE| = {p['max_delta_energy_J']:.3f} J)")
    lines += ["", "## PyBullet replay", ""]
    bridge = summary["bridge"]
    if "skipped" in bridge:
        lines.append(f"Skipped: {bridge['skipped']}.")
    else:
        lines.append("Computed torques applied open-loop plus a light PD (critically damped 2 Hz, gains from "
                     "diag M(q0)); PyBullet dt = 1 ms, one period.")
        for case in CASES_DEG:
            for key, entry in bridge.get(case, {}).items():
                error = entry["max_tracking_error_deg"]
                lines.append(f"- {case}, {key}: max tracking error "
                             + ", ".join(f"{n} {v:.2e}°" for n, v in error.items())
                             + f"; max joint-function residual {entry['max_joint_function_residual']:.1e} rad; "
                             f"PD share of the plane-of-elevation torque {entry['pd_share']['plane_of_elevation']:.1e}")
        if "open_loop" in bridge:
            error = bridge["open_loop"]["max_tracking_error_deg"]
            lines.append("- without PD (case 1, de Groot): max error " + ", ".join(f"{n} {v:.1f}°"
                                                                                 for n, v in error.items())
                         + " — the unsupported arm is open-loop unstable, so pure feed-forward drifts away.")
        if summary["video"]:
            lines.append(f"- video: `{summary['video']}` (case 2, close-up of the shoulder girdle: clavicle and scapula blue "
                         "for de Groot, red for Holzbaur, and both overlaid in the right panel).")
    lines += ["", "## Discussion", "", *DISCUSSION, "", f"All checks within tolerance: **{summary['ok']}**.", ""]
    return "\n".join(lines)


DISCUSSION = [
    "- Paper 000's Table 1 is printed right-to-left; read as the digest does (reading A) the plane-of-elevation "
    "torque has NRMSE ≈ 0.999 and r ≈ 0.55/0.13; with the two column groups swapped (reading B) it has r ≈ "
    "0.9985/0.9991. Our correlations for the plane-of-elevation torque are ≈ 0.998–0.999 in both cases, which "
    "supports reading B for that row; the paper's normalisation of NRMSE is not stated, we use the range of the "
    "reference torque.",
    "- The values cannot match exactly: the paper's Fig. 3 trajectory (speed, range, timing) is missing and ours "
    "is a choice; the paper's model has no forearm and hand (ours has them, elbow straight) and its segment data "
    "are not given (ours: de Leva 1996 and Holzbaur 2005 data, see urdf/README.md); and paper 000 also mentions "
    "10° instead of 50° for case 1 (scrambled digits).",
    "- What carries over is the mechanism: the de Groot rhythm moves the clavicle and scapula with the plane of "
    "elevation, so their weight gives the plane-of-elevation torque a gravity part (a non-zero mean) that the "
    "elevation-only rhythm cannot have; the inertial parts are nearly the same. The difference is larger "
    "relative to the torque range in case 1, where the plane-of-elevation torque range is smaller.",
    "- The elevation torque is dominated by the (static) weight of the arm in both models; the rhythms change "
    "its mean (by the Cz/Sx slope differences and the Hy terms) more than its shape, so r stays near 1. Its "
    "NRMSE in case 2 is large only because that torque barely varies there (the range is a fraction of a N·m), "
    "which shows how much a range-normalised NRMSE depends on the trajectory. The paper's elevation-torque "
    "correlations (0.22–0.62 under either reading) are far lower than ours: with its unknown trajectory and "
    "segment data the two elevation torques must have differed in shape, which we cannot reproduce.",
]
