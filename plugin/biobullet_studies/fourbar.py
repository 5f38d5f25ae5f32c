"""Polycentric four-bar prosthetic knee (paper 003): the J-curve of the instantaneous centre of rotation (ICR)
of the shank relative to the thigh over 0 … 110° flexion, computed by the library from the loop model
(urdf/fourbar_knee.urdf, independent coordinate knee_A, knee_B and knee_D implicit).

How the ICR is obtained (no four-bar formula involved): at each flexion the loop is closed by the implicit
solve, the implicit gradient G = ∂θ/∂q gives the joint rates per unit q̇, and the shank's spatial velocity
(v_o of its frame origin, ω) follows from its frame Jacobian, J G. The ICR is the point of the shank whose
velocity vanishes, p = o + ω × v_o / |ω|² (planar motion, ω ⟂ v_o). The flexion φ = knee_A + knee_D is
reached by Newton on knee_A with dφ/dknee_A = 1 + G[knee_D], continued from the previous angle. The analytic
oracle (tests/fourbar_geometry.py: intersection of lines AD and BC) is used only by the tests.

summary.json keys: `flexion_deg` (grid), `icr_x_m`, `icr_z_m` (thigh frame: x anterior, z proximal),
`knee_A_rad`, `knee_B_rad`, `knee_D_rad`, `icr_height_range_m` [min, max] of z, `icr_x_range_m`,
`max_velocity_residual_m_s` (|v| of the computed ICR point, should be round-off), `figures`.
"""
from __future__ import annotations

import os

import numpy as np

from biobullet_studies.common import bundled_model, save_figure, say, simulated_time, write_atomic, write_json

#: link-frame points (urdf/fourbar_knee.urdf): thigh pivots A, B; shank pivots D (shank origin), C
POINTS = {"A": ("posterior_link", (0.0, 0.0, 0.0)), "D": ("shank", (0.0, 0.0, 0.0)),
          "B": ("anterior_link", (0.0, 0.0, 0.0)), "C": ("shank", (0.034, 0.0, 0.009)),
          "ankle": ("shank", (0.017, 0.0, -0.12))}
SHANK = "shank"
FLEXION_JOINTS = ("knee_A", "knee_D")


def configuration_at_flexion(model, flexion: float, guess: float = 0.0, *, tol: float = 1e-14,
                             max_iterations: int = 30) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, x, G) with knee_A + knee_D = `flexion` (rad): Newton on the independent knee_A."""
    from biobullet.core.errors import SolverError
    ia, id_ = (model.joint_names.index(name) for name in FLEXION_JOINTS)
    q = np.array([guess], dtype=float)
    for _ in range(max_iterations):
        x, gradient = model.coordinate_gradient(q)
        error = x[ia] + x[id_] - flexion
        if abs(error) <= tol:
            return q, x, gradient
        q = q - error / (gradient[ia, 0] + gradient[id_, 0])
    raise SolverError(f"four-bar knee: flexion {flexion!r} rad not reached (residual {error:.3g} rad)")


def instantaneous_centre(model, x: np.ndarray, gradient: np.ndarray, link: str = SHANK
                         ) -> tuple[np.ndarray, float]:
    """(ICR of `link` relative to the fixed root, world = thigh frame, 3-vector; |v| there per unit q̇)."""
    from biobullet.algorithms.kinematics import frame_jacobian, frame_placement
    twist = frame_jacobian(model, x, link) @ gradient[:, 0]
    v_origin, omega = twist[:3], twist[3:]
    _, origin = frame_placement(model, x, link)
    point = origin + np.cross(omega, v_origin) / (omega @ omega)
    residual = float(np.linalg.norm(v_origin + np.cross(omega, point - origin)))
    return point, residual


def point_positions(model, x: np.ndarray) -> dict[str, np.ndarray]:
    from biobullet.algorithms.kinematics import frame_placement
    out = {}
    for name, (link, xyz) in POINTS.items():
        rotation, origin = frame_placement(model, x, link)
        out[name] = rotation @ np.asarray(xyz) + origin
    return out


def j_curve(model, flexion_rad: np.ndarray) -> dict[str, np.ndarray]:
    """ICR (n × 3), joint angles and velocity residuals along a flexion grid (continuation in knee_A)."""
    icr, angles, residuals, configurations = [], [], [], []
    guess = 0.0
    for phi in flexion_rad:
        q, x, gradient = configuration_at_flexion(model, float(phi), guess)
        guess = float(q[0])
        point, residual = instantaneous_centre(model, x, gradient)
        icr.append(point)
        residuals.append(residual)
        angles.append([x[model.joint_names.index(n)] for n in ("knee_A", "knee_B", "knee_D")])
        configurations.append(x)
    return {"icr": np.array(icr), "angles": np.array(angles), "residual": np.array(residuals),
            "x": np.array(configurations)}


def plot(out_dir: str, model, flexion_deg, curve, drawn=(0.0, 30.0, 60.0, 90.0, 110.0)) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, (left, right) = plt.subplots(1, 2, figsize=(13, 6.5))
    icr = curve["icr"]
    for axis in (left, right):
        axis.plot(icr[:, 0] * 1e3, icr[:, 2] * 1e3, "k-", lw=2, label="ICR J-curve (library)")
        axis.set_aspect("equal")
        axis.grid(alpha=0.3)
        axis.set_xlabel("x, anterior (mm)")
        axis.set_ylabel("z, proximal (mm)")
    marks = flexion_deg % 10 == 0
    sc = right.scatter(icr[marks, 0] * 1e3, icr[marks, 2] * 1e3, c=flexion_deg[marks], cmap="viridis", zorder=3)
    figure.colorbar(sc, ax=right, label="flexion (deg)")
    right.set_title("J-curve (every 10°)")
    for index, angle in enumerate(drawn):
        k = int(np.argmin(np.abs(flexion_deg - angle)))
        p = point_positions(model, curve["x"][k])
        color = f"C{index}"
        xz = {name: v[[0, 2]] * 1e3 for name, v in p.items()}
        left.plot(*np.array([xz["A"], xz["D"]]).T, "-o", color=color, lw=2)
        left.plot(*np.array([xz["B"], xz["C"]]).T, "-o", color=color, lw=2)
        left.plot(*np.array([xz["D"], xz["C"]]).T, "-", color=color, lw=3)
        left.plot(*np.array([(xz["D"] + xz["C"]) / 2, xz["ankle"]]).T, "-", color=color, lw=1, alpha=0.6,
                  label=f"{flexion_deg[k]:.0f}°")
        c = icr[k, [0, 2]] * 1e3
        for a, b in (("A", "D"), ("B", "C")):   # extended link lines through the ICR
            left.plot(*np.array([xz[a], c]).T, ":", color=color, lw=0.8)
        left.plot(*c, "*", color=color, ms=12)
    left.plot(*np.array([thigh_point(model, "A"), thigh_point(model, "B")]).T * 1e3, "k-", lw=4, label="thigh AB")
    left.set_title("Four-bar at several flexion angles (links AD, BC; shank DC; ★ ICR)")
    left.legend(fontsize=8, loc="lower left")
    figure.suptitle("Polycentric four-bar knee: instantaneous centre of rotation of the shank, 0–110° flexion")
    name = "fourbar_icr.png"
    save_figure(figure, os.path.join(out_dir, name))
    plt.close(figure)
    return name


def thigh_point(model, name: str) -> np.ndarray:
    """A thigh pivot (fixed in the world), (x, z)."""
    p = point_positions(model, np.zeros(model.n_config))[name]
    return p[[0, 2]]


def run(out_dir: str, step_deg: float = 1.0, max_flexion_deg: float = 110.0) -> dict:
    from biobullet.loader import load_model

    os.makedirs(out_dir, exist_ok=True)
    model = load_model(bundled_model("fourbar_knee.urdf"))
    flexion_deg = np.arange(0.0, max_flexion_deg + 0.5 * step_deg, step_deg)
    say(f"[fourbar] ICR at {len(flexion_deg)} flexion angles (0 … {max_flexion_deg:g}°) …")
    curve = j_curve(model, np.radians(flexion_deg))
    figure = plot(out_dir, model, flexion_deg, curve)
    icr = curve["icr"]
    summary = {"flexion_deg": flexion_deg.tolist(), "icr_x_m": icr[:, 0].tolist(), "icr_z_m": icr[:, 2].tolist(),
               "knee_A_rad": curve["angles"][:, 0].tolist(), "knee_B_rad": curve["angles"][:, 1].tolist(),
               "knee_D_rad": curve["angles"][:, 2].tolist(),
               "icr_height_range_m": [float(icr[:, 2].min()), float(icr[:, 2].max())],
               "icr_x_range_m": [float(icr[:, 0].min()), float(icr[:, 0].max())],
               "max_velocity_residual_m_s": float(curve["residual"].max()), "figures": [figure],
               **simulated_time(None, "kinematic ICR sweep over flexion angles: no time integration")}
    write_json(os.path.join(out_dir, "summary.json"), summary)
    rows = ["| flexion (deg) | ICR x (mm) | ICR z (mm) | knee_A (deg) | knee_B (deg) | knee_D (deg) |",
            "|---|---|---|---|---|---|"]
    for k in np.flatnonzero(flexion_deg % 10 == 0):
        a = np.degrees(curve["angles"][k])
        rows.append(f"| {flexion_deg[k]:.0f} | {icr[k, 0] * 1e3:.3f} | {icr[k, 2] * 1e3:.3f} | {a[0]:.3f} | "
                    f"{a[1]:.3f} | {a[2]:.3f} |")
    text = ["# Four-bar knee: ICR J-curve (library, from the loop model)", "",
            "ICR = zero-velocity point of the shank from its frame Jacobian and the implicit gradient G; thigh "
            "frame, x anterior, z proximal. Geometry is synthetic (paper 003's Table 1 is missing).", "",
            *rows, "", f"ICR height range {summary['icr_height_range_m'][0] * 1e3:.2f} … "
            f"{summary['icr_height_range_m'][1] * 1e3:.2f} mm; max |v| at the computed ICR "
            f"{summary['max_velocity_residual_m_s']:.1e} m/s per rad/s.", "", f"Figure: {figure}", ""]
    write_atomic(os.path.join(out_dir, "report.md"), "\n".join(text))
    say(f"[fourbar] wrote {out_dir}/summary.json, report.md, {figure}")
    return summary
