"""The README's restitution table (each law tuned by `make_normal_law`, measured by the 1-DOF impact integrator)
against closed forms, and the figures."""
from __future__ import annotations

import pytest

from biobullet.contact.impact1d import kelvin_voigt_damping_ratio, simulate_impact
from biobullet.contact.normal import Flores, HuGuo, HuntCrossley
from biobullet.contact.report import make_normal_law, plot_friction_curves, plot_hysteresis
from impact_closed_forms import hunt_crossley_family_restitution, kelvin_voigt_restitution

CR = (0.3, 0.5, 0.8, 0.95)


def test_restitution_table_against_closed_forms():
    table = {name: [simulate_impact(make_normal_law(name, cr, mass=2.0, stiffness=3e6), mass=2.0, velocity=0.5,
                                    samples=2).restitution for cr in CR]
             for name in ("hunt_crossley", "flores", "hu_guo", "kelvin_voigt")}
    for name, cls in (("hunt_crossley", HuntCrossley), ("flores", Flores), ("hu_guo", HuGuo)):
        for cr, e in zip(CR, table[name]):
            assert e == pytest.approx(hunt_crossley_family_restitution(cls.damping_factor(cr)), abs=1e-9)
    for cr, e in zip(CR, table["kelvin_voigt"]):
        # textbook damping, clipped force: less dissipation than requested
        assert e == pytest.approx(kelvin_voigt_restitution(kelvin_voigt_damping_ratio(cr)), abs=1e-6)
        assert e > cr


def test_plots_write_png(tmp_path):
    for path in (plot_hysteresis(tmp_path / "hysteresis.png", laws=("hertz", "hu_guo", "kelvin_voigt")),
                 plot_friction_curves(tmp_path / "sub" / "friction.png")):
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
