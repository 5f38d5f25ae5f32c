"""The spectrum-vs-parameter map of the gait study (paper 003 Fig. 11 style). Matplotlib is imported inside the
function and drawn with the Agg canvas on a bare Figure (no pyplot, no global backend change); it writes `path`
(format from the suffix) and returns it.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from biobullet.core.atomic import save_figure


def plot_spectrum_map(parameters: Sequence[float], frequency: np.ndarray, amplitudes: np.ndarray,
                      path: str | Path, *, parameter_label: str = "damper stiffness k (N/m)",
                      max_frequency: float = 3.0, floor: float | None = None,
                      title: str = "knee-angle spectrum") -> Path:
    """Spectrum-vs-parameter map (paper 003 Fig. 11): x = parameter, y = f·T, colour = amplitude (log).

    frequency: (n_f,) in units of 1/T (from `amplitude_spectrum`, same window for every parameter);
    amplitudes: (n_p, n_f). floor: lower end of the colour scale (default 1e-4 × max amplitude).
    Dashed lines mark the subharmonics 1/3 and 1/2.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure

    p = np.asarray(parameters, dtype=float)
    f = np.asarray(frequency, dtype=float)
    a = np.asarray(amplitudes, dtype=float)
    if a.shape != (len(p), len(f)):
        raise ValueError(f"amplitudes shape {a.shape}, expected ({len(p)}, {len(f)})")
    keep = (f > 0.0) & (f <= max_frequency + 1e-12)
    rows = np.flatnonzero(~np.all(np.isfinite(a[:, keep]), axis=1))
    if rows.size:   # matplotlib's LogNorm said only "Invalid vmin or vmax"
        raise ValueError(f"amplitudes are not finite at parameter {p[rows[0]]:g} (row {rows[0]}; "
                         f"{rows.size} row(s) in all)")
    top = float(np.max(a[:, keep])) if np.any(keep) else 1.0
    low = floor if floor is not None else 1e-4 * top
    fig = Figure(figsize=(7.0, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    mesh = ax.pcolormesh(p, f[keep], np.clip(a[:, keep].T, low, None), shading="nearest",
                         norm=LogNorm(vmin=low, vmax=max(top, low * 10)), cmap="viridis")
    for sub in (1.0 / 3.0, 0.5):
        ax.axhline(sub, color="w", lw=0.6, ls="--", alpha=0.7)
    fig.colorbar(mesh, ax=ax, label="amplitude")
    ax.set(xlabel=parameter_label, ylabel="frequency / (1/T)", title=title)
    return save_figure(fig, path, dpi=120)
