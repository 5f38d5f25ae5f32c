"""Paper 002 study: the 3-link elastic robot dropped on the ground (recursive Gibbs–Appell, Hu–Guo contact,
Ambrosio friction), one mode per link, 1.5 s.

`run(out_dir, modes="ss-ss-ss")` writes into out_dir: joints_x.png, joints_y.png (X1/X2 positions and
velocities of O1..O4), modal_amplitudes.png, contact_forces.png (normal and friction per point),
energy.png (components and error %), deformed_0.7s.png (magnified), impacts.json / impacts.md,
trajectory.npz and summary.json. Keys of summary.json: modes, data, t_end, first_contact_time, first_impact_velocity,
n_contact_onsets, n_impacts, n_sub_impacts_first, energy_error_mean_percent, energy_error_max_percent,
symmetry_residual, wall_time_s, n_rhs, paper (the published numbers to compare with).
`python -m biobullet.scenarios.elastic_robot OUT_DIR [MODES ...]` runs several mode sets and writes a table.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

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
        fig.tight_layout(), fig.savefig(out / f"joints_{label}.png", dpi=120), plt.close(fig)
    fig, ax = plt.subplots(figsize=(8, 4))
    for j, nm in enumerate(result.chain.coordinate_names):
        if nm.startswith("d"):
            ax.plot(t, result.z[:, j] * 1e3, label=nm, lw=1)
    ax.set_xlabel("t [s]"), ax.set_ylabel("modal amplitude [mm]"), ax.legend(), ax.set_title(title)
    fig.tight_layout(), fig.savefig(out / "modal_amplitudes.png", dpi=120), plt.close(fig)
    fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for k, nm in enumerate(names):
        ax[0].plot(t, result.normal_force[:, k], label=nm, lw=1)
        ax[1].plot(t, result.friction_force[:, k], label=nm, lw=1)
    ax[0].set_ylabel("F_N [N]"), ax[1].set_ylabel("F_T [N]"), ax[1].set_xlabel("t [s]"), ax[0].legend(ncol=4)
    ax[0].set_title(title)
    fig.tight_layout(), fig.savefig(out / "contact_forces.png", dpi=120), plt.close(fig)
    fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for arr, lab in ((result.kinetic, "T"), (result.gravity, "V_g"), (result.elastic, "V_e"),
                     (-result.work_damping, "−W_D"), (-result.work_normal, "−W_FN"),
                     (-result.work_friction, "−W_FT"), (result.total_energy, "sum (eq. 31)")):
        ax[0].plot(t, arr, label=lab, lw=1)
    ax[0].set_ylabel("energy [J]"), ax[0].legend(ncol=4, fontsize=8), ax[0].set_title(title)
    ax[1].plot(t, result.energy_error_percent, lw=1)
    ax[1].set_ylabel("energy error [%]"), ax[1].set_xlabel("t [s]")
    fig.tight_layout(), fig.savefig(out / "energy.png", dpi=120), plt.close(fig)
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
    fig.tight_layout(), fig.savefig(out / "deformed_0.7s.png", dpi=120), plt.close(fig)


def _impacts_markdown(impacts: list[dict[str, Any]]) -> str:
    lines = ["| # | t [s] | point | impact velocity [m/s] | slip velocity [m/s] | sub-impacts |",
             "|---|---|---|---|---|---|"]
    for i, imp in enumerate(impacts, 1):
        lines.append(f"| {i} | {imp['time']:.9f} | {imp['point']} | {imp['impact_velocity']:.6f} | "
                     f"{imp['slip_velocity']:.6f} | {len(imp['sub_impacts'])} |")
    return "\n".join(lines) + "\n"


def run(out_dir: str | Path, modes: str = "ss-ss-ss", progress: bool = True, t_end: float = 1.5,
        data: str = "unrounded", plots: bool = True, **solver: Any) -> dict[str, Any]:
    """Run the drop for one mode set ('ss-ss-ss', ...), write plots and summary.json, return the summary."""
    from biobullet.dynamics.gibbs_appell import ElasticChain
    from biobullet.dynamics.gibbs_appell_drop import simulate_drop
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    chain = ElasticChain.from_paper002(modes, data=data)
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
    summary = {"modes": modes, "data": data, "t_end": t_end,
               "first_contact_time": first["time"] if first else None,
               "first_impact_velocity": float(first["impact_velocity"]) if first else None,
               "n_contact_onsets": len(result.contacts), "n_impacts": len(impacts),
               "n_sub_impacts_first": len(impacts[0]["sub_impacts"]) if impacts else 0,
               "energy_error_mean_percent": mean_err, "energy_error_max_percent": max_err,
               "symmetry_residual": symmetry_residual(result), "wall_time_s": result.wall_time,
               "n_rhs": result.n_rhs, "max_normal_force": float(result.normal_force.max()),
               "max_abs_modal_amplitude": float(np.abs(result.modal_amplitudes).max()), "paper": PAPER}
    jsonable = json.loads(json.dumps(impacts, default=float))
    (out / "impacts.json").write_text(json.dumps(jsonable, indent=1))
    (out / "impacts.md").write_text(f"# Impacts, {modes}\n\n" + _impacts_markdown(impacts))
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=float))
    np.savez_compressed(out / "trajectory.npz", t=result.t, z=result.z, zd=result.zd, points=result.points,
                        point_velocities=result.point_velocities, normal_force=result.normal_force,
                        friction_force=result.friction_force, energy_error_percent=result.energy_error_percent,
                        coordinate_names=np.array(chain.coordinate_names))
    if plots:
        _plots(result, out, f"paper 002, {modes}")
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
    (out / "table.md").write_text("\n".join(rows) + "\n")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
