"""Figures of the shoulder-rhythm study (matplotlib, Agg backend, saved atomically)."""
from __future__ import annotations

import os

import numpy as np

from biobullet_studies.common import save_figure
from biobullet_studies.shoulder_dynamics import CASES_DEG, COMPARED, InverseDynamics

LABELS = {"de_groot": "de Groot & Brand 2001 (original)", "holzbaur": "Holzbaur 2005 (elevation only)"}
#: one look per rhythm, everywhere: colour AND line style AND (for the compared rhythm) hollow markers, so a curve
#: lying on top of the other stays visible
STYLES = {"de_groot": {"color": "C0", "linestyle": "-", "linewidth": 2.2},
          "holzbaur": {"color": "C3", "linestyle": "--", "linewidth": 1.4, "marker": "o", "markersize": 4,
                       "markerfacecolor": "none", "markevery": 0.08}}
CASE_STYLES = {"case1": {"alpha": 0.55}, "case2": {"alpha": 1.0}}


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_motion(results: dict[str, dict[str, InverseDynamics]], rhythm: dict, path: str) -> None:
    """Plane of elevation q(t), q̇(t) and the scapula's upward rotation (ac_z) driven by each rhythm."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, 3, figsize=(14, 4.2), layout="constrained")
    first = next(iter(results.values()))["de_groot"]
    k = first.names.index("plane_of_elevation")
    axes[0].plot(first.t, np.degrees(first.q[:, k]), "k")
    axes[0].set_ylabel("plane of elevation (deg)")
    axes[1].plot(first.t, np.degrees(first.v[:, k]), "k")
    axes[1].set_ylabel("plane-of-elevation rate (deg/s)")
    for case, series in rhythm.items():
        for model, angle in series.items():
            axes[2].plot(first.t, angle, **STYLES[model], **CASE_STYLES.get(case, {}),
                         label=f"{case} (elevation {CASES_DEG[case]:.0f}°), {LABELS[model]}")
    axes[2].set_ylabel("scapula upward rotation ac_z (deg)")
    _finish(plt, figure, axes, axes[2], path,
            "Prescribed motion: cosine sweep of the plane of elevation, −20° → 120° → −20° in 4 s")


def _finish(plt, figure, axes, legend_axis, path: str, title: str | None = None, fontsize: int = 9) -> None:
    """A grid on every axis, time on the bottom row's, the title, the legend of `legend_axis` below; saved, closed."""
    rows = np.atleast_2d(axes)
    for axis in rows.ravel():
        axis.grid(alpha=0.3)
    for axis in rows[-1]:
        axis.set_xlabel("time (s)")
    if title:
        figure.suptitle(title)
    figure.legend(*legend_axis.get_legend_handles_labels(), loc="outside lower center", ncol=2, fontsize=fontsize)
    save_figure(figure, path)
    plt.close(figure)


def plot_torques(results: dict[str, dict[str, InverseDynamics]], path: str) -> None:
    """Computed torques on plane of elevation and elevation, both rhythms (rows: coordinate, columns: case)."""
    plt = _pyplot()
    figure, axes = plt.subplots(len(COMPARED), len(results), figsize=(6 * len(results), 3.4 * len(COMPARED)),
                                sharex=True, squeeze=False, layout="constrained")
    for column, (case, models) in enumerate(results.items()):
        for row, name in enumerate(COMPARED):
            axis = axes[row, column]
            for model, result in models.items():
                axis.plot(result.t, result.column(name), **STYLES[model], label=LABELS[model])
            axis.set_title(f"{case}: elevation {CASES_DEG[case]:.0f}° — torque on {name.replace('_', ' ')}",
                           fontsize=10)
            axis.set_ylabel("N·m")
    _finish(plt, figure, axes, axes[0, 0], path,
            "Computed torque Q = M(q)q̈ + h(q, q̇) (perfect tracking), reduced formulation")


def plot_power(balances: dict[str, dict[str, dict]], results, path: str) -> None:
    """W(t) = ∫Q·q̇ dt against ΔE(t) = Δ(T + V), and their difference."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(12, 4.4), layout="constrained")
    for case, models in balances.items():
        for model, balance in models.items():
            t = results[case][model].t
            look = {**STYLES[model], **CASE_STYLES.get(case, {})}
            axes[0].plot(t, balance["delta_energy"], **{k: v for k, v in look.items() if not k.startswith("marker")},
                         label=f"{case} (elevation {CASES_DEG[case]:.0f}°), {LABELS[model]}")
            axes[0].plot(t[::40], balance["work"][::40], "x", color=look["color"], ms=4, alpha=look.get("alpha"))
            axes[1].semilogy(t[1:], np.abs(balance["work"] - balance["delta_energy"])[1:] + 1e-18, **look)
    axes[0].set_ylabel("energy (J): lines ΔE, crosses ∫Q·q̇ dt")
    axes[1].set_ylabel("|∫Q·q̇ dt − ΔE| (J)")
    _finish(plt, figure, axes, axes[0], path,
            "Power balance: work of the computed torques equals the change of kinetic + potential energy")


def plot_tracking(runs: dict[str, dict[str, dict]], path: str) -> None:
    """Bridge tracking error q − q_ref (deg): one row per coordinate, one column per case, both rhythms in each."""
    plt = _pyplot()
    cases = list(runs)
    names = next(iter(runs[cases[0]].values()))["names"]
    figure, axes = plt.subplots(len(names), len(cases), figsize=(6.5 * len(cases), 1.9 * len(names) + 1.2),
                                sharex=True, squeeze=False, layout="constrained")
    for column, case in enumerate(cases):
        for model, run in runs[case].items():
            error = np.degrees(run["q"] - run["q_ref"])
            for row, name in enumerate(run["names"]):
                axes[row, column].plot(run["t"], error[:, row], **STYLES[model], label=LABELS[model])
        axes[0, column].set_title(f"{case} (elevation {CASES_DEG[case]:.0f}°): PyBullet bridge, feed-forward + "
                                  "light PD", fontsize=10)
    for row, name in enumerate(names):
        axes[row, 0].set_ylabel(f"{name.replace('_', ' ')}\nerror (deg)")
    _finish(plt, figure, axes, axes[0, 0], path, fontsize=10)


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
