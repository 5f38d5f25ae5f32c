"""Figure layout checked by rendering: no two texts overlap, no legend covers plotted data.

`layout_problems(figure)` draws the figure and reports, in display pixels, every pair of overlapping texts (tick
labels, axis labels, titles, offset texts, annotations; a legend counts as one box) and every legend that covers
points of a plotted line or scatter. `settle_layout(figure)` is what `core.atomic.save_figure` runs before saving:
constrained layout (when the figure has no layout engine, or only what a one-shot `tight_layout()` leaves), each legend that covers data moved to a free corner of
its axes or, failing that, outside to the right, and a `LayoutWarning` naming what still collides.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

#: boxes must overlap by more than this in both directions (display pixels) to count as a collision
OVERLAP_PX = 1.0
#: legend positions tried, in order, when a legend sits on data
INSIDE_LOCATIONS = ("upper right", "upper left", "lower left", "lower right", "center right", "center left",
                    "upper center", "lower center")


class LayoutWarning(UserWarning):
    """A saved figure still has overlapping texts or a legend on its data."""


def _renderer(figure) -> Any:
    if figure.canvas is None or not hasattr(figure.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        FigureCanvasAgg(figure)
    figure.canvas.draw()
    return figure.canvas.get_renderer()


def _is_3d(axes) -> bool:
    return getattr(axes, "name", "") == "3d"


def _tick_labels(axes) -> tuple[list, set[int]]:
    """(labels drawn: ticks inside the view interval, visible, non-empty; ids of every tick label object)."""
    drawn, every = [], set()
    axis_list = [axes.xaxis, axes.yaxis] + ([axes.zaxis] if hasattr(axes, "zaxis") else [])
    for axis in axis_list:
        # compared in the axis' own scale (decades on a log axis): a slack in data units would take in every
        # tick below a small log bottom; a tick the scale cannot place (≤ 0 on a log axis) maps to nan: not drawn
        to_scale = axis.get_transform().transform
        low, high = sorted(to_scale(np.asarray(axis.get_view_interval(), dtype=float)))
        slack = 1e-9 * max(high - low, 1e-300)
        for ticks in (axis.get_major_ticks(), axis.get_minor_ticks()):
            for tick in ticks:
                labels = (tick.label1, tick.label2)
                every.update(id(label) for label in labels)
                loc = to_scale(np.array([tick.get_loc()], dtype=float))[0]
                if _is_3d(axes) or not tick.get_visible() or not low - slack <= loc <= high + slack:
                    continue
                drawn += [label for label in labels if label.get_visible() and label.get_text().strip()]
    return drawn, every


def _text_boxes(figure, renderer) -> list[tuple[str, Any]]:
    """(description, display bbox) of every drawn text and every legend (one box each)."""
    from matplotlib.text import Text
    drawn, tick_ids, legend_ids = [], set(), set()
    legends = [a.get_legend() for a in figure.axes if a.get_legend() is not None] + list(figure.legends)
    for legend in legends:
        legend_ids.update(id(t) for t in legend.findobj(Text))
    for axes in figure.axes:
        labels, every = _tick_labels(axes)
        drawn += labels
        tick_ids |= every
    for text in figure.findobj(Text):
        if id(text) in tick_ids or id(text) in legend_ids or not text.get_visible() or not text.get_text().strip():
            continue
        axes = text.axes
        if axes is not None and _is_3d(axes) and text is not axes.title:
            continue   # 3D axis labels/ticks move with the view; only the title is checked
        drawn.append(text)
    boxes = [(f"text {t.get_text()!r}", t.get_window_extent(renderer)) for t in drawn]
    boxes += [("legend", legend.get_window_extent(renderer)) for legend in legends if legend.get_visible()]
    return [(name, box) for name, box in boxes if box.width > 0 and box.height > 0]


def _overlap(a, b) -> bool:
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return width > OVERLAP_PX and height > OVERLAP_PX


def data_points(axes, step_px: float = 2.0) -> np.ndarray:
    """Display coordinates (n×2 px) of the plotted data of `axes` inside its box: line vertices with the segments
    between them sampled every `step_px` (for lines drawn with a line style), and scatter offsets."""
    from matplotlib.collections import PathCollection
    chunks = []
    for line in axes.get_lines():
        if not line.get_visible():
            continue
        xy = line.get_transform().transform(np.asarray(line.get_xydata(), float))
        if line.get_linestyle() not in ("None", "", " ", "none") and len(xy) > 1:
            a, b = xy[:-1], xy[1:]
            finite = np.all(np.isfinite(a), axis=1) & np.all(np.isfinite(b), axis=1)
            a, b = a[finite], b[finite]
            counts = np.clip(np.ceil(np.linalg.norm(b - a, axis=1) / step_px).astype(int), 1, 2000)
            fractions = np.concatenate([np.arange(c) / c for c in counts]) if len(counts) else np.zeros(0)
            starts = np.repeat(np.arange(len(a)), counts)
            xy = np.vstack([xy, a[starts] + fractions[:, None] * (b - a)[starts]])
        chunks.append(xy)
    for collection in axes.collections:
        if isinstance(collection, PathCollection) and collection.get_visible() and len(collection.get_offsets()):
            chunks.append(collection.get_offset_transform().transform(np.asarray(collection.get_offsets(), float)))
    if not chunks:
        return np.zeros((0, 2))
    xy = np.vstack(chunks)
    xy = xy[np.all(np.isfinite(xy), axis=1)]
    box = axes.bbox
    inside = (xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1) & (xy[:, 1] >= box.y0) & (xy[:, 1] <= box.y1)
    return xy[inside]


def _covered(legend_box, figure) -> int:
    """How many data points of any 2D axes of `figure` lie inside `legend_box` (shrunk by OVERLAP_PX)."""
    count = 0
    for axes in figure.axes:
        if _is_3d(axes):
            continue
        xy = data_points(axes)
        count += int(np.count_nonzero((xy[:, 0] > legend_box.x0 + OVERLAP_PX) & (xy[:, 0] < legend_box.x1 - OVERLAP_PX)
                                      & (xy[:, 1] > legend_box.y0 + OVERLAP_PX)
                                      & (xy[:, 1] < legend_box.y1 - OVERLAP_PX)))
    return count


def layout_problems(figure) -> list[str]:
    """Every collision of the drawn `figure`: overlapping text pairs, legends on data. Empty = clean."""
    renderer = _renderer(figure)
    boxes = _text_boxes(figure, renderer)
    problems = []
    for i, (name_a, box_a) in enumerate(boxes):
        for name_b, box_b in boxes[i + 1:]:
            if _overlap(box_a, box_b):
                problems.append(f"{name_a} overlaps {name_b}")
    legends = [a.get_legend() for a in figure.axes if a.get_legend() is not None] + list(figure.legends)
    for legend in legends:
        if legend.get_visible():
            covered = _covered(legend.get_window_extent(renderer), figure)
            if covered:
                labels = ", ".join(t.get_text() for t in legend.get_texts()[:3])
                problems.append(f"legend ({labels}, …) covers {covered} data points")
    return problems


def _move_legends_off_data(figure) -> None:
    renderer = _renderer(figure)
    for axes in figure.axes:
        legend = axes.get_legend()
        if legend is None or _is_3d(axes) or not _covered(legend.get_window_extent(renderer), figure):
            continue
        for location in INSIDE_LOCATIONS:
            legend.set_loc(location)
            renderer = _renderer(figure)
            if not _covered(legend.get_window_extent(renderer), figure):
                break
        else:   # no free corner: beside the axes, right
            legend.set_bbox_to_anchor((1.02, 1.0), transform=axes.transAxes)
            legend.set_loc("upper left")
            renderer = _renderer(figure)


def settle_layout(figure) -> list[str]:
    """Lay `figure` out so nothing overlaps (see module doc); returns the problems left (also warned about)."""
    from matplotlib.layout_engine import PlaceHolderLayoutEngine
    # none, or the placeholder a one-shot `tight_layout()` leaves: constrained layout, redone at every draw
    before = figure.get_layout_engine()
    if before is None or isinstance(before, PlaceHolderLayoutEngine):
        try:
            figure.set_layout_engine("constrained")
            _renderer(figure)
        except (RuntimeError, ValueError, ArithmeticError):
            # incompatible with what the figure holds (e.g. a colorbar made for tight layout): keep its own layout
            figure.set_layout_engine(before if before is not None else "none")
    _move_legends_off_data(figure)
    problems = layout_problems(figure)
    if problems:
        warnings.warn(LayoutWarning("figure layout: " + "; ".join(problems[:6])
                                    + (f" (+{len(problems) - 6} more)" if len(problems) > 6 else "")),
                      stacklevel=3)
    return problems


__all__ = ["LayoutWarning", "layout_problems", "settle_layout", "data_points", "OVERLAP_PX"]
