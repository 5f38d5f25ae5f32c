"""Plot helpers run headless (Agg canvas) and write non-empty PNG files."""
from __future__ import annotations

import math

import numpy as np

from biobullet.analysis.plots import plot_spectrum_map
from biobullet.analysis.spectrum import amplitude_spectrum

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_plots_write_png_files(tmp_path) -> None:
    t = np.arange(0, 20 * 64 + 1) / 64.0
    ks = np.linspace(1.40e4, 1.65e4, 4)
    spectra = []
    for i, _ in enumerate(ks):  # synthetic responses: subharmonic 1/2 fading with the parameter
        y = 30 + 25 * np.cos(2 * math.pi * t) + (3 - i) * np.cos(math.pi * t)
        freq, amp = amplitude_spectrum(t, y, 1.0, 12)
        spectra.append(amp)
    path = plot_spectrum_map(ks, freq, np.array(spectra), tmp_path / "map.png")
    assert path.read_bytes()[:8] == PNG_MAGIC
