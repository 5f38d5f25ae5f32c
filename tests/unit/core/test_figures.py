"""Figure layout checked by rendering (core.figures): overlapping texts and legends on data are found, the central
save (core.atomic.save_figure) moves legends off the data, and every figure of the library's and the studies' plot
functions leaves nothing overlapping.

Independent reference for the checker itself: the rendered pixels. Text boxes are compared with the ink the Agg
canvas actually put down, and a legend found "on the data" must hide line pixels that a legend-less render shows.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from biobullet.core.atomic import save_figure
from biobullet.core.figures import LayoutWarning, layout_problems, settle_layout


def _figure(size=(6.0, 4.0)):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    figure = Figure(figsize=size, dpi=100)
    FigureCanvasAgg(figure)
    return figure


def _pixels(figure) -> np.ndarray:
    figure.canvas.draw()
    return np.asarray(figure.canvas.buffer_rgba())[:, :, :3].astype(int)


def test_overlapping_texts_are_found_and_their_boxes_match_the_ink():
    figure = _figure()
    axes = figure.add_subplot()
    axes.set_axis_off()
    first = axes.text(0.3, 0.5, "first label", fontsize=14, transform=axes.transAxes)
    axes.text(0.35, 0.5, "second label", fontsize=14, transform=axes.transAxes)
    assert any("'first label' overlaps" in p for p in layout_problems(figure))
    # the checker's box of a text holds its ink: dark pixels of a render with only that text lie inside it
    alone = _figure()
    axes = alone.add_subplot()
    axes.set_axis_off()
    text = axes.text(0.3, 0.5, "first label", fontsize=14, transform=axes.transAxes)
    ink = np.argwhere(_pixels(alone).min(axis=2) < 128)
    box = text.get_window_extent(alone.canvas.get_renderer())
    height = alone.canvas.get_width_height()[1]
    rows, cols = height - ink[:, 0], ink[:, 1]
    assert box.x0 - 1 <= cols.min() and cols.max() <= box.x1 + 1
    assert box.y0 - 1 <= rows.min() and rows.max() <= box.y1 + 1
    assert first.get_text() == "first label"
    # apart: clean
    figure = _figure()
    axes = figure.add_subplot()
    axes.set_axis_off()
    axes.text(0.05, 0.2, "first label", transform=axes.transAxes)
    axes.text(0.6, 0.8, "second label", transform=axes.transAxes)
    assert layout_problems(figure) == []


def test_crowded_tick_labels_are_found():
    figure = _figure((3.0, 2.5))
    axes = figure.add_subplot()
    axes.plot([0, 1], [0, 1])
    axes.set_xticks(np.linspace(0, 1, 11), [f"label {k}" for k in range(11)])
    assert any("'label 1' overlaps" in p or "'label 0' overlaps" in p for p in layout_problems(figure))


def test_tick_labels_outside_a_log_axis_view_are_not_drawn_texts():
    # a log axis whose bottom is 3e-17: its 1e-18 tick exists but is not drawn. A slack in data units (1e-9 of the
    # range, 1e-16 here) once counted it as drawn and reported it over the figure legend below the axes.
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(1, 2, figsize=(12, 4.4), layout="constrained")
    t = np.linspace(0, 4, 201)
    axes[0].plot(t, np.sin(t), label="a curve")
    axes[1].semilogy(t, 1e-16 + 1e-7 * np.abs(np.sin(7 * t)), label="a residual")
    axes[1].set_ylim(3e-17, 1e-6)
    figure.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center")
    try:
        assert layout_problems(figure) == []
    finally:
        plt.close(figure)


def test_a_legend_on_a_curve_is_found_and_moved_off_by_the_central_save(tmp_path):
    t = np.linspace(0, 1, 200)

    def draw(with_legend: bool):
        figure = _figure()
        axes = figure.add_subplot()
        axes.plot(t, 0.5 + 0.4 * np.sin(2 * np.pi * t), "k", label="a curve through the middle")
        axes.plot(t, 0.5 + 0.3 * np.cos(2 * np.pi * t), "r", label="another curve")
        axes.set_ylim(0, 1)
        if with_legend:
            axes.legend(loc="center")
        return figure

    figure = draw(True)
    problems = layout_problems(figure)
    assert any(p.startswith("legend") and "covers" in p for p in problems), problems
    # the pixels agree: inside the legend box, the legend-less render has curve ink the legend render hides
    box = figure.axes[0].get_legend().get_window_extent(figure.canvas.get_renderer())
    height = figure.canvas.get_width_height()[1]
    rows = slice(int(height - box.y1) + 2, int(height - box.y0) - 2)
    cols = slice(int(box.x0) + 2, int(box.x1) - 2)
    bare = _pixels(draw(False))[rows, cols]
    curve_ink = (np.abs(bare[:, :, 0] - bare[:, :, 2]) > 100) | (bare.max(axis=2) < 60)
    assert curve_ink.sum() > 20
    # the central save lays it out: afterwards no problem, and a LayoutWarning is not raised
    with warnings.catch_warnings():
        warnings.simplefilter("error", LayoutWarning)
        save_figure(figure, tmp_path / "moved.png")
    assert layout_problems(figure) == []


def test_what_cannot_be_fixed_is_warned_about():
    figure = _figure()
    axes = figure.add_subplot()
    axes.set_axis_off()
    axes.text(0.3, 0.5, "stuck", transform=axes.transAxes)
    axes.text(0.3, 0.5, "together", transform=axes.transAxes)
    with pytest.warns(LayoutWarning, match="'stuck' overlaps"):
        problems = settle_layout(figure)
    assert problems


def _clean(paths) -> None:
    """Every written figure is checked through the save: a LayoutWarning fails the test."""
    for path in paths:
        assert path.stat().st_size > 1000, path


@pytest.fixture
def strict_layout():
    with warnings.catch_warnings():
        warnings.simplefilter("error", LayoutWarning)
        yield


def test_library_plots_lay_out_cleanly(tmp_path, strict_layout):
    from biobullet.analysis.plots import plot_spectrum_map
    from biobullet.analysis.spectrum import amplitude_spectrum
    t = np.arange(0, 20 * 64 + 1) / 64.0
    ks = np.linspace(1.40e4, 1.65e4, 4)
    spectra = []
    for i in range(len(ks)):
        y = 30 + 25 * np.cos(2 * math.pi * t) + (3 - i) * np.cos(math.pi * t)
        freq, amp = amplitude_spectrum(t, y, 1.0, 12)
        spectra.append(amp)
    _clean([plot_spectrum_map(ks, freq, np.array(spectra), tmp_path / "map.png")])


def _shoulder_inputs():
    """Synthetic but realistic-shaped results of the shoulder study (two cases, two rhythms, four coordinates)."""
    from biobullet_studies.shoulder_dynamics import CASES_DEG, InverseDynamics
    t = np.linspace(0, 4, 201)
    names = ("plane_of_elevation", "elevation", "axial_rotation", "elbow_flexion")
    rng = np.random.default_rng(0)

    def result(shift):
        q = np.column_stack([np.radians(50 - 70 * np.cos(np.pi * t / 2))] + [np.full_like(t, 0.5)] * 3)
        torque = np.column_stack([np.sin(np.pi * t / 2) + shift, 3 + 0.1 * np.cos(np.pi * t / 2) + shift,
                                  0.2 * t, 0 * t])
        return InverseDynamics(t, names, q, q, q, torque, t * 0, t * 0)

    models = ("de_groot", "holzbaur")
    results = {c: {"de_groot": result(0.0), "holzbaur": result(0.05)} for c in CASES_DEG}
    rhythm = {c: {m: 10 + 5 * np.sin(t) + 0.3 * k for k, m in enumerate(models)} for c in CASES_DEG}
    balances = {c: {m: {"delta_energy": t, "work": t + 1e-9 * (1 + t)} for m in models} for c in CASES_DEG}
    runs = {c: {m: {"t": t, "q": 1e-3 * rng.normal(size=(len(t), 4)), "q_ref": np.zeros((len(t), 4)),
                    "names": names} for m in models} for c in CASES_DEG}
    return results, rhythm, balances, runs


def test_shoulder_study_figures_lay_out_cleanly(tmp_path, strict_layout):
    from biobullet_studies.shoulder_plots import save_all
    written = save_all(str(tmp_path), *_shoulder_inputs())
    assert written == ["motion.png", "torques.png", "power_balance.png", "bridge_tracking.png"]
    _clean([tmp_path / name for name in written])


def test_foundation_rhythm_figure_lays_out_cleanly(tmp_path, strict_layout):
    from biobullet_studies.foundation import plot_rhythms
    plot_rhythms(str(tmp_path))
    _clean([tmp_path / "shoulder_rhythm.png"])


def test_a_figure_constrained_layout_cannot_handle_keeps_its_own_layout(tmp_path):
    """A colorbar made before the save (its gridspec built for tight layout) makes constrained layout fail on
    draw (ZeroDivisionError in matplotlib's layout grid, as the four-bar study's figure did): the save keeps the
    figure's own layout and still writes it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, (left, right) = plt.subplots(1, 2, figsize=(8, 4), gridspec_kw={"width_ratios": [1.5, 1]})
    marks = right.scatter([0, 1], [0, 1], c=[0, 1])
    figure.colorbar(marks, ax=right, label="value")
    left.set_aspect("equal")
    right.set_aspect("equal")
    path = save_figure(figure, tmp_path / "kept.png")
    plt.close(figure)
    assert path.stat().st_size > 1000
