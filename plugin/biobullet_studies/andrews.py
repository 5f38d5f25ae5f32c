"""Andrews' squeezing mechanism (paper 000's validation benchmark; Hairer & Wanner II §VII.7, IVP test set
"andrews"): 7 bodies, 1 DOF (β), 3 planar loops closing point E, a spring D→C and a motor torque on β.

The same file (urdf/andrews_squeezer.urdf) is run 0 … 0.03 s three ways: `reduced` (loops solved implicitly,
ODE in β — paper 000's approach), `multipliers` with Baumgarte stabilisation, and `multipliers` with Baumgarte
plus position/velocity projection after every step. Every figure comes from the library; the published
numbers are the IVP test set's (embedded below) and, in a source checkout, the hand-written classic
7-coordinate solver `tests/andrews_classic.py` is run too.

summary.json keys:
  `t0`: per formulation {dtheta_dbeta, generalized_mass, beta_dd, theta_dd} and `published` (same keys);
        `t0_relative_error`: per formulation, per key;
  `runs`: per run (reduced, multipliers_baumgarte, multipliers_projection) {rtol, atol, nfev, wall_time_s,
        beta_end, state_end (7 angles, classic order), max_rel_error_vs_published, max_rel_error_vs_classic
        (null without the classic solver), energy_drift_J (max |E(t) − E(0)|, paper's energy),
        energy_balance_drift_J (library's T + V − W balance), max_constraint_residual_m, max_omega_plus_phi_rad};
  `convergence`: per formulation a list of {rtol, atol, nfev, wall_time_s, beta_end, max_rel_error_vs_published,
        max_rel_error_vs_classic};
  `energy_initial_J` (paper: 1.43579639916), `spring_length_initial_m`, `spring_force_initial_N`,
  `classic_available`, `figures` (file names).
"""
from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

from biobullet_studies.common import bundled_model, save_figure, say, write_atomic, write_json

T_END = 0.03
COORDINATES = ("beta", "theta", "gamma", "phi", "delta", "omega", "epsilon")   # classic order
MOTOR_TORQUE, SPRING_STIFFNESS, SPRING_REST = 0.033, 4530.0, 0.07785          # mom, c0, l0 (Hairer & Wanner)
POINT_C = np.array([0.014, 0.072, 0.0])
POINT_D = ("body3", np.array([0.02, -0.018, 0.0]))

#: IVP test set (Mazzia & Magherini), problem "andrews": reference at t = 0.03 (PSIDE, rtol = atol = 1e-14),
#: classic order; and the consistent t = 0 accelerations.
PUBLISHED_Q = np.array([0.1581077119629904e+2, -0.1575637105984298e+2, 0.4082224013073101e-1,
                        -0.5347301163226948e+0, 0.5244099658805304e+0, 0.5347301163226948e+0,
                        0.1048080741042263e+1])
PUBLISHED_V = np.array([0.1139920302151208e+4, -0.1424379294994111e+4, 0.1103291221937134e+2,
                        0.1929337464421385e+2, 0.5735699284790808e+0, -0.1929337464421385e+2,
                        0.3231791658026955e+0])
PUBLISHED_T0 = {"dtheta_dbeta": -0.75, "generalized_mass": 2.3202763313e-06,
                "beta_dd": 14222.4439199541138705911625887, "theta_dd": -10666.8329399655854029433719415}
PUBLISHED_ENERGY = 1.43579639916

#: mechanism drawing: per link, polylines of points in the link frame (urdf comments; Hairer & Wanner data)
BODY_LINES = {
    "body1": [[(0, 0), (0.007, 0)]],                                          # O-F
    "body2": [[(0, 0), (-0.028, 0)]],                                         # F-E
    "body3": [[(0, 0), (0, -0.035), (0.02, -0.018), (0, 0)]],                 # B-E-D triangle
    "body5": [[(0, 0), (0.04, 0)]],                                           # A-G
    "body4": [[(0, 0), (0, -0.02)]],                                          # G-E
    "body7": [[(0, 0), (0, -0.04)]],                                          # A-H
    "body6": [[(0, 0), (0.02, 0)]],                                           # H-E
}
RUNS = {"reduced": {"formulation": "reduced"},
        "multipliers_baumgarte": {"formulation": "multipliers"},
        "multipliers_projection": {"formulation": "multipliers", "projection": True}}


def load_classic():
    """The hand-written classic solver `tests/andrews_classic.py` of a source checkout, or None."""
    path = Path(__file__).resolve().parents[3] / "tests" / "andrews_classic.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("andrews_classic", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("andrews_classic", module)
    spec.loader.exec_module(module)
    return module


def classic_order(model) -> list[int]:
    return [model.joint_names.index(name) for name in COORDINATES]


def spring_length(model, x) -> float:
    from biobullet.algorithms.kinematics import frame_placement
    rotation, origin = frame_placement(model, x, POINT_D[0])
    return float(np.linalg.norm(rotation @ POINT_D[1] + origin - POINT_C))


def paper_energy(model, x, xd, beta0: float) -> float:
    """½ Mβ'² + ½ c0 (l − l0)² − mom (β − β0) (J); ½ Mβ'² = ½ ẋᵀ M_tree ẋ on the loop manifold."""
    from biobullet.integrate.engine import kinetic_energy
    beta = x[model.joint_names.index("beta")]
    return (kinetic_energy(model, x, xd) + 0.5 * SPRING_STIFFNESS * (spring_length(model, x) - SPRING_REST) ** 2
            - MOTOR_TORQUE * (beta - beta0))


def initial_numbers(model) -> dict[str, dict[str, float]]:
    """dΘ/dβ, generalized mass, β'' and Θ'' at t = 0 from the library (reduced and multipliers)."""
    from biobullet.dynamics.multipliers import constrained_accelerations
    from biobullet.forces import applied_forces
    q, v = model.initial_state()
    x, xd, gradient, gamma = model.joint_state(q, v)
    ib, it = model.joint_names.index("beta"), model.joint_names.index("theta")
    tau = applied_forces(model, x, xd, 0.0)
    mass = model.mass_matrix(q, formulation="reduced")
    qdd = model.forward_dynamics(q, v, gradient.T @ tau, formulation="reduced")
    xdd_reduced = gradient @ qdd + gamma
    xdd_mult, _ = constrained_accelerations(model, x, xd, tau)
    # multipliers: the sensitivity is the null-space direction of Φ_x with β' = 1, the generalized mass its
    # M-norm (no reduced coordinates involved)
    from biobullet.constraints.equations import constraint_set
    from biobullet.integrate.engine import kinetic_energy
    jac = constraint_set(model).jacobian(x)
    others = [k for k in range(model.n_tangent) if k != ib]
    tangent = np.zeros(model.n_tangent)
    tangent[ib] = 1.0
    tangent[others] = np.linalg.solve(jac[:, others], -jac[:, ib])
    return {
        "reduced": {"dtheta_dbeta": float(gradient[it, 0]), "generalized_mass": float(mass[0, 0]),
                    "beta_dd": float(xdd_reduced[ib]), "theta_dd": float(xdd_reduced[it])},
        "multipliers": {"dtheta_dbeta": float(tangent[it]), "generalized_mass": 2.0 * kinetic_energy(model, x, tangent),
                        "beta_dd": float(xdd_mult[ib]), "theta_dd": float(xdd_mult[it])},
    }


def _relative(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / np.abs(b)))


def simulate_run(model, options: dict, rtol: float, atol: float, t_eval) -> tuple[object, float]:
    from biobullet.integrate import simulate
    started = time.perf_counter()
    trajectory = simulate(model, T_END, rtol=rtol, atol=atol, t_eval=t_eval, progress=False, **options)
    return trajectory, time.perf_counter() - started


def run_diagnostics(model, trajectory) -> dict[str, np.ndarray]:
    """Per sample: paper energy, library energy balance, max |Φ|, Ω + Φ."""
    from biobullet.constraints.equations import constraint_set
    cset = constraint_set(model)
    beta0 = trajectory.positions[0, model.joint_names.index("beta")]
    energy = np.array([paper_energy(model, x, xd, beta0) for x, xd in zip(trajectory.positions, trajectory.velocities)])
    residual = np.array([np.max(np.abs(cset.residual(x))) for x in trajectory.positions])
    omega_phi = trajectory.column("omega") + trajectory.column("phi")
    return {"energy": energy, "balance": trajectory.energy_balance(), "residual": residual, "omega_phi": omega_phi}


def plot_angles(out_dir, runs) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(2, 7, figsize=(22, 6), sharex=True)
    for label, (trajectory, _) in runs.items():
        style = {"reduced": "-", "multipliers_baumgarte": "--", "multipliers_projection": ":"}[label]
        for k, name in enumerate(COORDINATES):
            axes[0, k].plot(trajectory.t * 1e3, trajectory.column(name), style, label=label)
            axes[1, k].plot(trajectory.t * 1e3, trajectory.column(name + "_dot"), style, label=label)
    for k, name in enumerate(COORDINATES):
        axes[0, k].set_title(name)
        axes[1, k].set_xlabel("t (ms)")
        for axis in axes[:, k]:
            axis.grid(alpha=0.3)
    axes[0, 0].set_ylabel("angle (rad)")
    axes[1, 0].set_ylabel("rate (rad/s)")
    axes[0, 0].legend(fontsize=7)
    figure.suptitle("Andrews' squeezer: the seven joint angles and rates (reduced vs multipliers)")
    name = "andrews_angles.png"
    save_figure(figure, os.path.join(out_dir, name))
    plt.close(figure)
    return name


def plot_energy_and_residuals(out_dir, diagnostics, times) -> tuple[str, str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axis = plt.subplots(figsize=(7, 4))
    for label, d in diagnostics.items():
        axis.plot(times[label] * 1e3, d["energy"] - d["energy"][0], label=f"{label}: paper energy")
        axis.plot(times[label] * 1e3, d["balance"] - d["balance"][0], ":", label=f"{label}: T+V−W (library)")
    axis.set_xlabel("t (ms)")
    axis.set_ylabel("E(t) − E(0) (J)")
    axis.set_title("Energy balance ½Mβ'² + ½c0(l−l0)² − mom(β−β0)")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7)
    energy_name = "andrews_energy.png"
    save_figure(figure, os.path.join(out_dir, energy_name))
    plt.close(figure)
    figure, axis = plt.subplots(figsize=(7, 4))
    for label, d in diagnostics.items():
        axis.semilogy(times[label] * 1e3, np.maximum(d["residual"], 1e-20), label=label)
    axis.set_xlabel("t (ms)")
    axis.set_ylabel("max |Φ| (m)")
    axis.set_title("Loop-closure residual (values < 1e-20 drawn at 1e-20)")
    axis.grid(alpha=0.3, which="both")
    axis.legend(fontsize=8)
    residual_name = "andrews_residuals.png"
    save_figure(figure, os.path.join(out_dir, residual_name))
    plt.close(figure)
    return energy_name, residual_name


def mechanism_lines(model, x) -> dict:
    """World polylines (x, y) of every body, the spring D→C and the loop point E."""
    from biobullet.algorithms.kinematics import body_placements, frame_placement
    placements = body_placements(model, x)
    lines = {}
    for link, polylines in BODY_LINES.items():
        rotation, origin = frame_placement(model, x, link, placements)
        lines[link] = [np.array([(rotation @ np.array([px, py, 0.0]) + origin)[:2] for px, py in line])
                       for line in polylines]
    rotation, origin = frame_placement(model, x, POINT_D[0], placements)
    lines["spring"] = np.array([(rotation @ POINT_D[1] + origin)[:2], POINT_C[:2]])
    rotation, origin = frame_placement(model, x, "body2", placements)
    lines["E"] = (rotation @ np.array([-0.028, 0.0, 0.0]) + origin)[:2]
    return lines


def plot_mechanism(out_dir, model, trajectory, instants=(0.0, 0.0075, 0.015, 0.0225, 0.03)) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(1, len(instants), figsize=(4 * len(instants), 4.4), sharex=True, sharey=True)
    ground = {"O": (0, 0), "A": (-0.06934, -0.00227), "B": (-0.03635, 0.03273), "C": tuple(POINT_C[:2])}
    for axis, instant in zip(axes, instants):
        k = int(np.argmin(np.abs(trajectory.t - instant)))
        lines = mechanism_lines(model, trajectory.positions[k])
        for index, link in enumerate(BODY_LINES):
            for line in lines[link]:
                axis.plot(line[:, 0], line[:, 1], "-o", color=f"C{index}", lw=2.5, ms=3,
                          label=link if instant == instants[0] else None)
        spring = lines["spring"]
        n = 40
        s = np.linspace(0, 1, n)
        base = spring[0] + np.outer(s, spring[1] - spring[0])
        normal = np.array([-(spring[1] - spring[0])[1], (spring[1] - spring[0])[0]])
        normal /= np.linalg.norm(normal)
        zig = 0.002 * np.sin(2 * np.pi * 8 * s) * ((s > 0.1) & (s < 0.9))
        coil = base + np.outer(zig, normal)
        axis.plot(coil[:, 0], coil[:, 1], color="k", lw=1, label="spring D→C" if instant == instants[0] else None)
        axis.plot(*lines["E"], "r*", ms=12, label="loop point E" if instant == instants[0] else None)
        for name, (gx, gy) in ground.items():
            axis.plot(gx, gy, "k^", ms=7)
            axis.annotate(name, (gx, gy), textcoords="offset points", xytext=(4, 4), fontsize=8)
        axis.set_title(f"t = {trajectory.t[k] * 1e3:.2f} ms, β = {trajectory.column('beta')[k]:.2f} rad")
        axis.set_aspect("equal")
        axis.grid(alpha=0.3)
        axis.set_xlabel("x (m)")
    axes[0].set_ylabel("y (m)")
    figure.legend(loc="lower center", ncol=10, fontsize=8, bbox_to_anchor=(0.5, -0.06))
    figure.suptitle("Andrews' squeezing mechanism (library kinematics, reduced run)")
    name = "andrews_mechanism.png"
    save_figure(figure, os.path.join(out_dir, name))
    plt.close(figure)
    return name


def state_end(model, trajectory) -> np.ndarray:
    return trajectory.positions[-1, classic_order(model)]


def run(out_dir: str, rtol: float = 1e-11, atol: float = 1e-11, samples: int = 301,
        convergence_rtols=(1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12),
        convergence_formulations=("reduced", "multipliers")) -> dict:
    from biobullet.loader import load_model

    os.makedirs(out_dir, exist_ok=True)
    model = load_model(bundled_model("andrews_squeezer.urdf"))
    classic = load_classic()
    classic_end = None
    if classic is not None:
        say("[andrews] classic 7-coordinate solver (tests/andrews_classic.py), DOP853 rtol = atol = 1e-13 …")
        _, y = classic.solve_andrews(t_end=T_END, rtol=1e-13, atol=1e-13)
        classic_end = y[-1, :7]

    say("[andrews] t = 0 numbers …")
    t0 = initial_numbers(model)
    t0_error = {f: {k: abs(v - PUBLISHED_T0[k]) / abs(PUBLISHED_T0[k]) for k, v in values.items()}
                for f, values in t0.items()}
    q0, v0 = model.initial_state()
    x0 = model.joint_configuration(q0)
    l_initial = spring_length(model, x0)

    t_eval = np.linspace(0.0, T_END, samples)
    runs, diagnostics, summary_runs = {}, {}, {}
    for label, options in RUNS.items():
        say(f"[andrews] {label}: 0 … {T_END} s, rtol = {rtol:g}, atol = {atol:g} …")
        trajectory, wall = simulate_run(model, options, rtol, atol, t_eval)
        runs[label] = (trajectory, wall)
        d = diagnostics[label] = run_diagnostics(model, trajectory)
        end = state_end(model, trajectory)
        summary_runs[label] = {
            "formulation": options["formulation"], "projection": bool(options.get("projection")),
            "rtol": rtol, "atol": atol, "nfev": trajectory.meta["nfev"], "wall_time_s": wall,
            "beta_end": float(end[0]), "state_end": end.tolist(),
            "max_rel_error_vs_published": _relative(end, PUBLISHED_Q),
            "max_rel_error_vs_classic": None if classic_end is None else _relative(end, classic_end),
            "velocity_max_rel_error_vs_published": _relative(trajectory.velocities[-1, classic_order(model)],
                                                             PUBLISHED_V),
            "energy_drift_J": float(np.max(np.abs(d["energy"] - d["energy"][0]))),
            "energy_balance_drift_J": float(np.max(np.abs(d["balance"] - d["balance"][0]))),
            "max_constraint_residual_m": float(np.max(d["residual"])),
            "max_omega_plus_phi_rad": float(np.max(np.abs(d["omega_phi"]))),
        }

    convergence = {}
    for formulation in convergence_formulations:
        rows = convergence[formulation] = []
        for tolerance in convergence_rtols:
            say(f"[andrews] convergence: {formulation}, rtol = atol = {tolerance:g} …")
            trajectory, wall = simulate_run(model, {"formulation": formulation}, tolerance, tolerance, [T_END])
            end = state_end(model, trajectory)
            rows.append({"rtol": tolerance, "atol": tolerance, "nfev": trajectory.meta["nfev"], "wall_time_s": wall,
                         "beta_end": float(end[0]), "max_rel_error_vs_published": _relative(end, PUBLISHED_Q),
                         "max_rel_error_vs_classic": None if classic_end is None else _relative(end, classic_end)})

    say("[andrews] plots …")
    figures = [plot_angles(out_dir, runs)]
    figures += list(plot_energy_and_residuals(out_dir, diagnostics, {k: r[0].t for k, r in runs.items()}))
    figures.append(plot_mechanism(out_dir, model, runs["reduced"][0]))

    summary = {"t0": t0, "published": PUBLISHED_T0, "t0_relative_error": t0_error, "runs": summary_runs,
               "convergence": convergence, "energy_initial_J": float(diagnostics["reduced"]["energy"][0]),
               "energy_initial_published_J": PUBLISHED_ENERGY, "spring_length_initial_m": l_initial,
               "spring_force_initial_N": SPRING_STIFFNESS * abs(l_initial - SPRING_REST),
               "classic_available": classic is not None,
               "classic_state_end": None if classic_end is None else classic_end.tolist(),
               "published_state_end": PUBLISHED_Q.tolist(), "figures": figures,
               # every engine run covers 0 … T_END (the real-time factor of `biobullet run` divides by wall time)
               "simulated_seconds": T_END * (len(runs) + sum(len(rows) for rows in convergence.values()))}
    write_json(os.path.join(out_dir, "summary.json"), summary)
    write_atomic(os.path.join(out_dir, "report.md"), report_text(summary))
    say(f"[andrews] wrote {out_dir}/summary.json, report.md, " + ", ".join(figures))
    return summary


def report_text(s: dict) -> str:
    lines = ["# Andrews' squeezing mechanism (0 … 0.03 s)", "",
             "7 bodies, 1 DOF, 3 planar loops; data and reference: Hairer & Wanner II §VII.7, IVP test set.", "",
             "## t = 0 (library vs published)", "",
             "| quantity | published | reduced | rel. err | multipliers | rel. err |", "|---|---|---|---|---|---|"]
    for key, published in s["published"].items():
        lines.append(f"| {key} | {published:.15g} | {s['t0']['reduced'][key]:.15g} | "
                     f"{s['t0_relative_error']['reduced'][key]:.1e} | {s['t0']['multipliers'][key]:.15g} | "
                     f"{s['t0_relative_error']['multipliers'][key]:.1e} |")
    lines += ["", f"Spring length l(0) = {s['spring_length_initial_m']:.10f} m (published 0.0526725161), force "
                  f"{s['spring_force_initial_N']:.3f} N (published 114.054); energy E(0) = "
                  f"{s['energy_initial_J']:.11f} J (published {s['energy_initial_published_J']}).", "",
              "## Runs (state at 0.03 s)", "",
              "| run | rtol | nfev | wall (s) | β(0.03) | rel. err vs published | rel. err vs classic | "
              "energy drift (J) | max abs(Φ) (m) | max abs(Ω+Φ) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for label, r in s["runs"].items():
        classic = "n/a" if r["max_rel_error_vs_classic"] is None else f"{r['max_rel_error_vs_classic']:.1e}"
        lines.append(f"| {label} | {r['rtol']:g} | {r['nfev']} | {r['wall_time_s']:.1f} | {r['beta_end']:.13f} | "
                     f"{r['max_rel_error_vs_published']:.1e} | {classic} | {r['energy_drift_J']:.1e} | "
                     f"{r['max_constraint_residual_m']:.1e} | {r['max_omega_plus_phi_rad']:.1e} |")
    lines += ["", "## Convergence of the state at 0.03 s (rtol = atol)", ""]
    for formulation, rows in s["convergence"].items():
        lines += [f"### {formulation}", "", "| rtol | nfev | wall (s) | β(0.03) | rel. err vs published | "
                  "rel. err vs classic |", "|---|---|---|---|---|---|"]
        for r in rows:
            classic = "n/a" if r["max_rel_error_vs_classic"] is None else f"{r['max_rel_error_vs_classic']:.1e}"
            lines.append(f"| {r['rtol']:g} | {r['nfev']} | {r['wall_time_s']:.1f} | {r['beta_end']:.13f} | "
                         f"{r['max_rel_error_vs_published']:.1e} | {classic} |")
        lines.append("")
    lines += ["Figures: " + ", ".join(s["figures"]), ""]
    return "\n".join(lines)
