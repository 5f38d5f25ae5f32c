"""Figures of the shoulder-rhythm study (matplotlib, Agg backend, saved atomically)."""
from __future__ import annotations

import os

import numpy as np

from biobullet_studies.common import save_figure
from biobullet_studies.shoulder_dynamics import CASES_DEG, COMPARED, InverseDynamics

LABELS = {"de_groot": "de Groot & Brand 2001 (original)", "holzbaur": "Holzbaur 2005 (elevation only)"}
STYLES = {"de_groot": "-", "holzbaur": "--"}


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_motion(results: dict[str, dict[str, InverseDynamics]], rhythm: dict, path: str) -> None:
    """Plane of elevation q(t), q̇(t) and the scapula's upward rotation (ac_z) driven by each rhythm."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    first = next(iter(results.values()))["de_groot"]
    k = first.names.index("plane_of_elevation")
    axes[0].plot(first.t, np.degrees(first.q[:, k]), "k")
    axes[0].set_ylabel("plane of elevation (deg)")
    axes[1].plot(first.t, np.degrees(first.v[:, k]), "k")
    axes[1].set_ylabel("plane-of-elevation rate (deg/s)")
    for (case, series), color in zip(rhythm.items(), ("C0", "C1")):
        for model, angle in series.items():
            axes[2].plot(first.t, angle, STYLES[model], color=color,
                         label=f"{case} (elev. {CASES_DEG[case]:.0f}°), {model}")
    axes[2].set_ylabel("scapula upward rotation ac_z (deg)")
    axes[2].legend(fontsize=7)
    for axis in axes:
        axis.set_xlabel("time (s)")
        axis.grid(alpha=0.3)
    figure.suptitle("Prescribed motion: cosine sweep of the plane of elevation, −20° → 120° → −20° in 4 s")
    save_figure(figure, path)
    plt.close(figure)


def plot_torques(results: dict[str, dict[str, InverseDynamics]], path: str) -> None:
    """Computed torques on plane of elevation and elevation, both rhythms (rows: coordinate, columns: case)."""
    plt = _pyplot()
    figure, axes = plt.subplots(len(COMPARED), len(results), figsize=(6 * len(results), 3.4 * len(COMPARED)),
                                sharex=True, squeeze=False)
    for column, (case, models) in enumerate(results.items()):
        for row, name in enumerate(COMPARED):
            axis = axes[row, column]
            for model, result in models.items():
                axis.plot(result.t, result.column(name), STYLES[model], label=LABELS[model])
            axis.set_title(f"{case}: elevation {CASES_DEG[case]:.0f}° — torque on {name.replace('_', ' ')}",
                           fontsize=10)
            axis.set_ylabel("N·m")
            axis.grid(alpha=0.3)
    for axis in axes[-1]:
        axis.set_xlabel("time (s)")
    axes[0, 0].legend(fontsize=8)
    figure.suptitle("Computed torque Q = M(q)q̈ + h(q, q̇) (perfect tracking), reduced formulation")
    save_figure(figure, path)
    plt.close(figure)


def plot_power(balances: dict[str, dict[str, dict]], results, path: str) -> None:
    """W(t) = ∫Q·q̇ dt against ΔE(t) = Δ(T + V), and their difference."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(12, 3.8))
    for (case, models), color in zip(balances.items(), ("C0", "C1")):
        for model, balance in models.items():
            t = results[case][model].t
            axes[0].plot(t, balance["delta_energy"], STYLES[model], color=color, label=f"ΔE {case} {model}")
            axes[0].plot(t[::40], balance["work"][::40], "o", color=color, ms=3, mfc="none")
            axes[1].semilogy(t[1:], np.abs(balance["work"] - balance["delta_energy"])[1:] + 1e-18, STYLES[model],
                             color=color, label=f"{case} {model}")
    axes[0].set_ylabel("J  (lines ΔE, circles ∫Q·q̇ dt)")
    axes[1].set_ylabel("|∫Q·q̇ dt − ΔE| (J)")
    for axis in axes:
        axis.set_xlabel("time (s)")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    figure.suptitle("Power balance: work of the computed torques equals the change of kinetic + potential energy")
    save_figure(figure, path)
    plt.close(figure)


def plot_tracking(runs: dict[str, dict[str, dict]], path: str) -> None:
    """Bridge tracking error q − q_ref (deg) per coordinate over the run."""
    plt = _pyplot()
    cases = list(runs)
    figure, axes = plt.subplots(1, len(cases), figsize=(6 * len(cases), 3.6), squeeze=False)
    for axis, case in zip(axes[0], cases):
        for model, run in runs[case].items():
            error = np.degrees(run["q"] - run["q_ref"])
            for k, name in enumerate(run["names"]):
                axis.plot(run["t"], error[:, k], STYLES[model], color=f"C{k}",
                          label=f"{name} ({model})")
        axis.set_title(f"{case}: PyBullet bridge, feed-forward + light PD", fontsize=10)
        axis.set_xlabel("time (s)")
        axis.set_ylabel("tracking error (deg)")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=6, ncol=2)
    save_figure(figure, path)
    plt.close(figure)


def save_all(out_dir: str, results, rhythm, balances, runs) -> list[str]:
    """Write every figure that has data; return the file names."""
    written = []
    for name, call in (("motion.png", lambda p: plot_motion(results, rhythm, p)),
                       ("torques.png", lambda p: plot_torques(results, p)),
                       ("power_balance.png", lambda p: plot_power(balances, results, p))):
        call(os.path.join(out_dir, name))
        written.append(name)
    if runs:
        plot_tracking(runs, os.path.join(out_dir, "bridge_tracking.png"))
        written.append("bridge_tracking.png")
    return written
