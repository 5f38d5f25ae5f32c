"""Restitution table (README) and figures."""
from __future__ import annotations

import pytest

from biobullet.contact.impact1d import (hunt_crossley_family_restitution, kelvin_voigt_damping_ratio,
                                        kelvin_voigt_restitution)
from biobullet.contact.normal import Flores, HuGuo, HuntCrossley
from biobullet.contact.report import (format_restitution_table, plot_friction_curves, plot_hysteresis,
                                      restitution_table)

CR = (0.3, 0.5, 0.8, 0.95)


def test_restitution_table_against_closed_forms():
    table = restitution_table(CR, laws=("hunt_crossley", "flores", "hu_guo", "kelvin_voigt"), m=2.0, v=0.5,
                              K=3e6)
    for name, cls in (("hunt_crossley", HuntCrossley), ("flores", Flores), ("hu_guo", HuGuo)):
        for cr, e in zip(CR, table[name]):
            assert e == pytest.approx(hunt_crossley_family_restitution(cls.damping_factor(cr)), abs=1e-9)
    for cr, e in zip(CR, table["kelvin_voigt"]):
        # textbook damping, clipped force: less dissipation than requested
        assert e == pytest.approx(kelvin_voigt_restitution(kelvin_voigt_damping_ratio(cr)), abs=1e-6)
        assert e > cr
    text = format_restitution_table(table, CR)
    assert text.splitlines()[0] == "| law | cr = 0.3 | cr = 0.5 | cr = 0.8 | cr = 0.95 |"
    assert len(text.splitlines()) == 6


def test_plots_write_png(tmp_path):
    for path in (plot_hysteresis(tmp_path / "hysteresis.png", laws=("hertz", "hu_guo", "kelvin_voigt")),
                 plot_friction_curves(tmp_path / "sub" / "friction.png")):
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
