"""Paper 002 study: the 3-link elastic robot dropped on the ground (recursive Gibbs–Appell, Hu–Guo contact,
Ambrosio friction), one mode per link, 1.5 s.

`run(out_dir, modes="ss-ss-ss")` writes into out_dir: joints_x.png, joints_y.png (X1/X2 positions and
velocities of O1..O4), modal_amplitudes.png, contact_forces.png (normal and friction per point),
energy.png (components and error %), deformed_0.7s.png (magnified), impacts.json / impacts.md,
timeseries.csv (t; X1, X2, dX1/dt, dX2/dt of O1..O4; modal amplitudes; F_N, F_T per point; T, V_g, V_e, W_D, W_FN,
W_FT, energy error %), trajectory.npz, drop.mp4 (matplotlib animation of the deformed chain, deflection magnified,
contact forces as arrows, one frame per 10 ms of simulated time at 25 fps, written with imageio) and summary.json.
Every file is written atomically (temporary file + rename). Keys of summary.json: modes, data, t_end,
first_contact_time, first_impact_velocity, n_contact_onsets, n_impacts, n_sub_impacts_first,
energy_error_mean_percent, energy_error_max_percent, symmetry_residual, symmetry_correction (largest state change
of the mirror projection, None if not used), wall_time_s, n_rhs, max_normal_force, max_abs_modal_amplitude,
video, paper (the published numbers to compare with).
`python -m biobullet_studies.elastic_robot OUT_DIR [MODES ...]` runs several mode sets and writes a table.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from biobullet_studies.paper002 import paper002_chain
from biobullet.core import atomic
from biobullet.core.atomic import atomic_write

MODE_SETS = ("ss-ss-ss", "cc-cc-cc", "sc-cc-cs", "cs-ss-sc")
PAPER = {"n_impacts_ss-ss-ss": 22, "first_impact_sub_impacts_ss-ss-ss": 3,
         "energy_error_mean_percent": {"ss-ss-ss": 0.18, "cs-ss-sc": 0.13, "sc-cc-cs": 0.06, "cc-cc-cc": 0.04},
         "energy_error_max_percent": 0.75, "first_contact_time": 0.428353, "first_impact_velocity": 4.2021}


def symmetry_residual(result: Any) -> float:
    """max over samples of the mirror residuals (x about the symmetry line x = 0, O1↔O4, O2↔O3; δ1 = δ3;
    forces) — 0 for an exactly symmetric motion. Units mixed (m, m/s, N scaled by 1/max F_N)."""
    p, v = result.points, result.point_velocities
    fn, ft = result.normal_force, result.friction_force
    scale = max(float(np.abs(fn).max()), 1.0)
    d = result.chain.modal_amplitudes(result.z)
    res = [np.abs(p[:, 0, 0] + p[:, 3, 0]), np.abs(p[:, 1, 0] + p[:, 2, 0]), np.abs(p[:, 0, 1] - p[:, 3, 1]),
           np.abs(p[:, 1, 1] - p[:, 2, 1]), np.abs(v[:, 0, 0] + v[:, 3, 0]), np.abs(v[:, 0, 1] - v[:, 3, 1]),
           np.abs(v[:, 1, 1] - v[:, 2, 1]), np.abs(d[0] - d[2]).max(axis=-1) if d[0].size else np.zeros(1),
           np.abs(fn[:, 0] - fn[:, 3]) / scale, np.abs(fn[:, 1] - fn[:, 2]) / scale,
           np.abs(ft[:, 0] + ft[:, 3]) / scale, np.abs(ft[:, 1] + ft[:, 2]) / scale]
    return float(max(np.max(r) for r in res))


def energy_error_stats(result: Any, dt: float = 1e-4) -> tuple[float, float]:
    """(mean, max) of |energy error %| over a uniform time grid (mean is time-weighted)."""
    grid = np.arange(result.t[0], result.t[-1], dt)
    err = np.interp(grid, result.t, result.energy_error_percent)
    return float(np.mean(np.abs(err))), float(np.max(np.abs(result.energy_error_percent)))


def _plots(result: Any, out: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = result.t
    names = ["O1", "O2", "O3", "O4"]
    for axis, label in ((0, "x"), (1, "y")):
        fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
        for k, nm in enumerate(names):
            ax[0].plot(t, result.points[:, k, axis], label=nm, lw=1)
            ax[1].plot(t, result.point_velocities[:, k, axis], label=nm, lw=1)
        ax[0].set_ylabel(f"X{axis + 1} [m]"), ax[1].set_ylabel(f"dX{axis + 1}/dt [m/s]")
        ax[1].set_xlabel("t [s]"), ax[0].legend(ncol=4), ax[0].set_title(title)
        fig.tight_layout(), atomic.save_figure(fig, out / f"joints_{label}.png", dpi=120), plt.close(fig)
    fig, ax = plt.subplots(figsize=(8, 4))
    for j, nm in enumerate(result.chain.coordinate_names):
        if nm.startswith("d"):
            ax.plot(t, result.z[:, j] * 1e3, label=nm, lw=1)
    ax.set_xlabel("t [s]"), ax.set_ylabel("modal amplitude [mm]"), ax.legend(), ax.set_title(title)
    fig.tight_layout(), atomic.save_figure(fig, out / "modal_amplitudes.png", dpi=120), plt.close(fig)
    fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for k, nm in enumerate(names):
        ax[0].plot(t, result.normal_force[:, k], label=nm, lw=1)
        ax[1].plot(t, result.friction_force[:, k], label=nm, lw=1)
    ax[0].set_ylabel("F_N [N]"), ax[1].set_ylabel("F_T [N]"), ax[1].set_xlabel("t [s]"), ax[0].legend(ncol=4)
    ax[0].set_title(title)
    fig.tight_layout(), atomic.save_figure(fig, out / "contact_forces.png", dpi=120), plt.close(fig)
    fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for arr, lab in ((result.kinetic, "T"), (result.gravity, "V_g"), (result.elastic, "V_e"),
                     (-result.work_damping, "−W_D"), (-result.work_normal, "−W_FN"),
                     (-result.work_friction, "−W_FT"), (result.energy_balance(), "sum (eq. 31)")):
        ax[0].plot(t, arr, label=lab, lw=1)
    ax[0].set_ylabel("energy [J]"), ax[0].legend(ncol=4, fontsize=8), ax[0].set_title(title)
    ax[1].plot(t, result.energy_error_percent, lw=1)
    ax[1].set_ylabel("energy error [%]"), ax[1].set_xlabel("t [s]")
    fig.tight_layout(), atomic.save_figure(fig, out / "energy.png", dpi=120), plt.close(fig)
    i = int(np.argmin(np.abs(t - 0.7)))
    z = result.z[i]
    dmax = max(float(np.abs(result.modal_amplitudes[i]).max()), 1e-12)
    scale = 0.1 / dmax
    fig, ax = plt.subplots(figsize=(8, 4))
    for pts0, pts in zip(result.chain.link_points(z, scale=0.0), result.chain.link_points(z, scale=scale)):
        ax.plot(pts0[:, 0], pts0[:, 1], "k:", lw=0.8)
        ax.plot(pts[:, 0], pts[:, 1], lw=2)
    ax.axhline(0.0, color="grey", lw=0.8), ax.set_aspect("equal")
    ax.set_title(f"{title}: deformed shape at t = {t[i]:.3f} s, deflection × {scale:.3g}")
    fig.tight_layout(), atomic.save_figure(fig, out / "deformed_0.7s.png", dpi=120), plt.close(fig)




def timeseries_table(result: Any) -> tuple[list[str], np.ndarray]:
    """(header, columns) of timeseries.csv (SI units: s, m, m/s, N, J, %)."""
    names, cols = ["t"], [result.t]
    for k in range(result.points.shape[1]):
        p = f"O{k + 1}"
        names += [f"{p}_X1", f"{p}_X2", f"{p}_X1_dot", f"{p}_X2_dot"]
        cols += [result.points[:, k, 0], result.points[:, k, 1], result.point_velocities[:, k, 0],
                 result.point_velocities[:, k, 1]]
    for j, nm in enumerate(result.chain.coordinate_names):
        if nm.startswith("d"):
            names.append(nm)
            cols.append(result.z[:, j])
    for k in range(result.points.shape[1]):
        names += [f"O{k + 1}_F_N", f"O{k + 1}_F_T"]
        cols += [result.normal_force[:, k], result.friction_force[:, k]]
    names += ["T", "V_g", "V_e", "W_D", "W_FN", "W_FT", "energy_error_percent"]
    cols += [result.kinetic, result.gravity, result.elastic, result.work_damping, result.work_normal,
             result.work_friction, result.energy_error_percent]
    return names, np.column_stack(cols)


def write_video(result: Any, path: Path, title: str, *, frame_dt: float = 0.01, fps: float = 25.0,
                magnify: float | None = None) -> Path:
    """MP4 of the deformed chain (deflection × magnify, default so that max|δ| shows as 0.1 m), one frame per
    frame_dt of simulated time, with the contact forces as arrows; written atomically via render.write_video."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from biobullet import render
    chain = result.chain
    amp = float(np.abs(result.modal_amplitudes).max()) if result.modal_amplitudes.size else 0.0
    scale = (0.1 / amp if amp > 0.0 else 1.0) if magnify is None else magnify
    times = np.arange(result.t[0], result.t[-1] + 1e-12, frame_dt)
    idx = np.clip(np.searchsorted(result.t, times), 0, result.t.size - 1)
    fmax = max(float(result.normal_force.max()), 1.0)
    from biobullet_studies.common import motion_limits
    shapes = {i: chain.link_points(result.z[i], scale=scale) for i in idx}
    every = np.vstack([np.vstack(pts)[:, :2] for pts in shapes.values()]
                      + [result.points[i][:, :2] for i in idx] + [np.zeros((1, 2))])   # + the ground line
    (x_low, x_high), (y_low, y_high) = motion_limits(every)   # framed on the whole drop, not fixed numbers
    fig, ax = plt.subplots(figsize=(12.8, 7.2), dpi=100)   # 1280×720
    frames = []
    for i in idx:
        ax.clear()
        for pts in shapes[i]:
            ax.plot(pts[:, 0], pts[:, 1], lw=2.5)
        p = result.points[i]
        ax.plot(p[:, 0], p[:, 1], "ko", ms=4)
        for k in range(p.shape[0]):
            if result.normal_force[i, k] > 0.0:
                ax.arrow(p[k, 0], 0.0, 0.3 * result.friction_force[i, k] / fmax, 0.3 * result.normal_force[i, k] / fmax,
                         width=0.01, color="r")
        ax.axhline(0.0, color="grey", lw=1)
        ax.set_xlim(x_low, x_high), ax.set_ylim(y_low, y_high), ax.set_aspect("equal")
        ax.set_title(f"{title}   t = {result.t[i]:.3f} s   deflection × {scale:.3g}", fontsize=16)
        ax.set_xlabel("x (m)"), ax.set_ylabel("y (m)")
        fig.canvas.draw()
        frames.append(np.asarray(fig.canvas.buffer_rgba())[..., :3].copy())
    plt.close(fig)
    render.write_video(frames, path, fps=fps)
    return path


def _impacts_markdown(impacts: list[dict[str, Any]]) -> str:
    lines = ["| # | t [s] | point | impact velocity [m/s] | slip velocity [m/s] | sub-impacts |",
             "|---|---|---|---|---|---|"]
    for i, imp in enumerate(impacts, 1):
        lines.append(f"| {i} | {imp['time']:.9f} | {imp['point']} | {imp['impact_velocity']:.6f} | "
                     f"{imp['slip_velocity']:.6f} | {len(imp['sub_impacts'])} |")
    return "\n".join(lines) + "\n"


#: (segments, dt) of the bridge comparison; dt None = `stable_time_step` (¼ of PyBullet's limit 2/ω_max),
#: "half" = half of it (first-order check)
BRIDGE_CASES = ((4, None), (4, "half"), (8, None))
#: the comparison horizons (s): just after the O1/O4 impact (3 sub-impacts end at 0.4376 s), and 0.6 s
#: (covers the O2/O3 impact at 0.5216 s)
BRIDGE_HORIZONS = (0.44, 0.6)


def bridge_comparison(reference: Any, out: Path | None = None, *, cases=BRIDGE_CASES, t_end: float = 0.6,
                      reference_engine: bool = True, plots: bool = True) -> dict[str, Any]:
    """The drop with finite-segment links on the PyBullet bridge (`bridge.flexible.bridge_drop`) and, per N,
    on the reference engine (`engine_drop`: separates segmentation from stepping error), against the
    Gibbs–Appell `reference` (a DropResult covering t_end). Writes bridge_comparison.{md,json,png} into out
    (if given); returns {"rows": [...], "markdown": str}. Row keys: engine, segments, dt, first_contact_time,
    contact_time_error, peak_force / impulse (per point, first impact: 0.04 s from the first contact),
    deviation (max |Δp| of the joint points up to each of BRIDGE_HORIZONS, m), mirror_residual (m), wall_time_s."""
    from biobullet_studies.elastic_drop_bridge import (ELASTIC_ROBOT, bridge_drop, engine_drop, first_impact,
                                                      mirror_residual, trajectory_deviation)
    rows, runs = [], []

    def row(name: str, res: Any, n: Any, dt: float | None) -> dict[str, Any]:
        imp = first_impact(res)
        return {"engine": name, "segments": n, "dt": dt, "first_contact_time": imp["first_contact_time"],
                "contact_time_error": imp["first_contact_time"] - PAPER["first_contact_time"],
                "peak_force": imp["peak_force"], "impulse": imp["impulse"],
                "deviation": {str(h): trajectory_deviation(res, reference, h) if res is not reference else 0.0
                              for h in BRIDGE_HORIZONS if h <= t_end + 1e-12},
                "mirror_residual": mirror_residual(res), "wall_time_s": getattr(res, "wall_time", None)}
    rows.append(row("Gibbs–Appell (1 mode/link)", reference, "modes", None))
    done_engine = set()
    for n, dt in cases:
        if reference_engine and n not in done_engine:
            res = engine_drop(t_end=t_end, segments=n)
            rows.append(row("reference engine", res, n, None))
            runs.append(("engine", n, None, res))
            done_engine.add(n)
        if dt == "half":
            from biobullet.bridge.flexible import stable_time_step
            from biobullet.flexible.segments import load_segmented_model
            from biobullet.model.bundled import resolve_model_path
            model, _ = load_segmented_model(resolve_model_path(ELASTIC_ROBOT), segments=n, shear=False,
                                            air_damping=False)
            dt = 0.5 * stable_time_step(model)
        res = bridge_drop(t_end=t_end, segments=n, dt=dt)
        rows.append(row("PyBullet bridge", res, n, res.dt))
        runs.append(("bridge", n, res.dt, res))
    head = ("| engine | N | dt [s] | t_c [s] | t_c − 0.428353 [s] | peak F_N O1 [N] | impulse O1 [N s] | "
            + " | ".join(f"max Δp t≤{h} [m]" for h in BRIDGE_HORIZONS if h <= t_end + 1e-12)
            + " | mirror [m] | wall [s] |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        dev = " | ".join(f"{v:.2e}" for v in r["deviation"].values())
        lines.append(f"| {r['engine']} | {r['segments']} | {'' if r['dt'] is None else format(r['dt'], '.3g')} | "
                     f"{r['first_contact_time']:.6f} | {r['contact_time_error']:+.1e} | "
                     f"{r['peak_force']['O1']:.0f} | {r['impulse']['O1']:.3f} | {dev} | "
                     f"{r['mirror_residual']:.1e} | "
                     f"{'' if r['wall_time_s'] is None else format(r['wall_time_s'], '.1f')} |")
    markdown = "\n".join(lines) + "\n"
    if out is not None:
        atomic.write_text(out / "bridge_comparison.md", "# Elastic robot drop: segmented links vs Gibbs–Appell\n\n"
                    + markdown)
        atomic.write_text(out / "bridge_comparison.json", json.dumps(rows, indent=1, default=float))
        if plots:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            sel = reference.t <= t_end
            fig, ax = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
            ax[0].plot(reference.t[sel], reference.points[sel, 0, 1], "k", lw=1.5, label="Gibbs–Appell O1")
            ax[1].plot(reference.t[sel], reference.points[sel, 1, 1], "k", lw=1.5, label="Gibbs–Appell O2")
            ax[2].plot(reference.t[sel], reference.normal_force[sel, 0], "k", lw=1.5, label="Gibbs–Appell O1")
            for kind, n, dt, res in runs:
                lab = f"{kind} N={n}" + (f" dt={dt:.2g}" if dt else "")
                ax[0].plot(res.t, res.points[:, 0, 1], lw=1, label=lab)
                ax[1].plot(res.t, res.points[:, 1, 1], lw=1, label=lab)
                ax[2].plot(res.t, res.normal_force[:, 0], lw=1, label=lab)
            ax[0].set_ylabel("y(O1) [m]"), ax[1].set_ylabel("y(O2) [m]"), ax[2].set_ylabel("F_N(O1) [N]")
            ax[2].set_xlabel("t [s]"), ax[0].legend(fontsize=7, ncol=2)
            ax[2].set_xlim(PAPER["first_contact_time"] - 0.01, t_end)  # impacts; the free fall is a parabola
            ax[0].set_title("elastic robot drop: finite segments (engine / PyBullet) vs Gibbs–Appell")
            fig.tight_layout(), atomic.save_figure(fig, out / "bridge_comparison.png", dpi=120), plt.close(fig)
    return {"rows": rows, "markdown": markdown}


def run(out_dir: str | Path, modes: str = "ss-ss-ss", progress: bool = True, t_end: float = 1.5,
        data: str = "unrounded", plots: bool = True, video: bool = True, end_rotation: str = "theta",
        bridge: bool = False, bridge_cases=BRIDGE_CASES, bridge_t_end: float = 0.6,
        **solver: Any) -> dict[str, Any]:
    """Run the drop for one mode set ('ss-ss-ss', ...), write plots and summary.json, return the summary.
    bridge=True adds `bridge_comparison` (finite-segment links on PyBullet and on the reference engine, up to
    bridge_t_end ≤ t_end) and its table under summary["bridge"]."""
    from biobullet_studies.gibbs_appell_drop import simulate_drop
    chain = paper002_chain(modes, data=data, end_rotation=end_rotation)   # a bad mode set: refused before mkdir
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    callback = None
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=t_end, desc=f"elastic robot {modes}", unit="s", bar_format="{l_bar}{bar}| {n:.3f}/{total} s")
        callback = lambda t: bar.update(t - bar.n)  # noqa: E731
    result = simulate_drop(chain, t_end=t_end, progress=callback, **solver)
    if bar is not None:
        bar.close()
    mean_err, max_err = energy_error_stats(result)
    impacts = result.impacts
    first = result.contacts[0] if result.contacts else None
    summary = {"modes": modes, "data": data, "t_end": t_end, "simulated_seconds": t_end,
               "first_contact_time": first["time"] if first else None,
               "first_impact_velocity": float(first["impact_velocity"]) if first else None,
               "n_contact_onsets": len(result.contacts), "n_impacts": len(impacts),
               "n_sub_impacts_first": len(impacts[0]["sub_impacts"]) if impacts else 0,
               "energy_error_mean_percent": mean_err, "energy_error_max_percent": max_err,
               "symmetry_residual": symmetry_residual(result), "symmetry_correction": result.symmetry_correction,
               "end_rotation": end_rotation, "video": "drop.mp4" if video else None,
               "wall_time_s": result.wall_time,
               "n_rhs": result.n_rhs, "max_normal_force": float(result.normal_force.max()),
               "max_abs_modal_amplitude": float(np.abs(result.modal_amplitudes).max()), "paper": PAPER}
    jsonable = json.loads(json.dumps(impacts, default=float))
    atomic.write_text(out / "impacts.json", json.dumps(jsonable, indent=1))
    atomic.write_text(out / "impacts.md", f"# Impacts, {modes}\n\n" + _impacts_markdown(impacts))
    header, table = timeseries_table(result)
    atomic_write(out / "timeseries.csv", lambda tmp: np.savetxt(tmp, table, delimiter=",", header=",".join(header),
                                                           comments="", fmt="%.12g"))
    arrays = dict(t=result.t, z=result.z, zd=result.zd, points=result.points,
                  point_velocities=result.point_velocities, normal_force=result.normal_force,
                  friction_force=result.friction_force, energy_error_percent=result.energy_error_percent,
                  coordinate_names=np.array(chain.coordinate_names))

    def _npz(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)
    atomic_write(out / "trajectory.npz", _npz)
    if plots:
        _plots(result, out, f"paper 002, {modes}")
    if video:
        write_video(result, out / "drop.mp4", f"paper 002, {modes}")
    if bridge:
        if modes != "ss-ss-ss" or bridge_t_end > t_end:
            raise ValueError("bridge=True compares the model file's ss-ss-ss robot; needs bridge_t_end <= t_end")
        summary["bridge"] = bridge_comparison(result, out, cases=bridge_cases, t_end=bridge_t_end,
                                              plots=plots)["rows"]
    atomic.write_text(out / "summary.json", json.dumps(summary, indent=1, default=float))
    return summary


def main(argv: list[str] | None = None) -> int:
    """Run several mode sets into OUT_DIR/<modes>/ and write OUT_DIR/table.md."""
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0] if args else "out/elastic_robot")
    sets = args[1:] or list(MODE_SETS)
    rows = ["| modes | contact onsets | impacts | sub-impacts of 1st | energy err mean % | max % | paper mean % "
            "| symmetry residual | wall s |", "|---|---|---|---|---|---|---|---|---|"]
    for m in sets:
        s = run(out / m, m)
        rows.append(f"| {m} | {s['n_contact_onsets']} | {s['n_impacts']} | {s['n_sub_impacts_first']} | "
                    f"{s['energy_error_mean_percent']:.2e} | {s['energy_error_max_percent']:.2e} | "
                    f"{PAPER['energy_error_mean_percent'].get(m, float('nan'))} | {s['symmetry_residual']:.1e} | "
                    f"{s['wall_time_s']:.1f} |")
    atomic.write_text(out / "table.md", "\n".join(rows) + "\n")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
