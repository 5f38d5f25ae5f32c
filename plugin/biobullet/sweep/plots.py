"""Plots of a sweep's scalar results against its swept parameter(s) (matplotlib, Agg backend)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from biobullet.core.atomic import output_folder, save_figure
from biobullet.sweep.config import SweepConfig
from biobullet.sweep.store import scalar_results

MAX_CURVES = 10


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def plot_results(out: Path, config: SweepConfig, records: Sequence[Mapping[str, Any]]) -> list[Path]:
    """One PNG per numeric scalar result: result vs the first swept parameter, one curve per combination of
    the other swept parameters (at most MAX_CURVES). Returns the files written."""
    ok = [r for r in records if r["status"] == "ok"]
    if not config.axes or not ok:
        return []
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure  # no pyplot: no global backend state touched

    x_axis, others = config.axes[0], [a.path for a in config.axes[1:]]
    keys: list[str] = []
    for record in ok:
        for key, value in scalar_results(record).items():
            if _numeric(value) and key not in keys:
                keys.append(key)
    plot_dir = output_folder(out, "plots")   # a real folder: a link planted there is refused
    written = []
    for key in keys:
        groups: dict[tuple, list[tuple[float, float]]] = {}
        for record in ok:
            value = scalar_results(record).get(key)
            if _numeric(value):
                group = tuple(record["params"][p] for p in others)
                groups.setdefault(group, []).append((record["params"][x_axis.path], value))
        fig = Figure(figsize=(6.4, 4.2))
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        for group, pairs in sorted(groups.items())[:MAX_CURVES]:
            pairs.sort()
            label = ", ".join(f"{p}={v:g}" for p, v in zip(others, group)) or None
            ax.plot([p[0] for p in pairs], [p[1] for p in pairs], "o-", ms=3, label=label)
        if x_axis.log:
            ax.set_xscale("log")
        ax.set_xlabel(x_axis.path)
        ax.set_ylabel(key)
        title = f"{config.name}: {key} vs {x_axis.path}"
        if len(groups) > MAX_CURVES:
            title += f" (first {MAX_CURVES} of {len(groups)} curves)"
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
        if others:
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = plot_dir / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', key)}.png"
        save_figure(fig, path, within=out, dpi=100)
        written.append(path)
    return written
