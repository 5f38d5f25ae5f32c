"""Four-bar knee: the library's ICR (zero-velocity point of the shank from the implicit gradient G of the loop
model, biobullet_studies.fourbar) against the analytic oracle tests/fourbar_geometry.py (intersection of
lines AD and BC, and paper 003's explicit formula).

Tolerance 1e-9 m (the issue's number): both sides are closed-form up to a Newton solve converged to
round-off (|Φ| ≤ 1e-12 · length scale), so the measured agreement is ~1e-15 m.
"""
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet_studies import fourbar

ROOT = Path(__file__).resolve().parents[2]
import fourbar_geometry as fg  # tests/fourbar_geometry.py

FLEXION = np.radians(np.arange(0.0, 111.0, 5.0))


@pytest.fixture(scope="module")
def curve():
    model = biobullet.load_model(ROOT / "urdf" / "fourbar_knee.urdf")
    return model, fourbar.j_curve(model, FLEXION)


def test_icr_matches_analytic_j_curve(curve):
    _, c = curve
    reference = fg.j_curve(FLEXION)                       # (x, z)
    np.testing.assert_allclose(c["icr"][:, [0, 2]], reference, rtol=0, atol=1e-9)
    np.testing.assert_allclose(c["icr"][:, 1], 0.0, atol=1e-12)   # stays in the sagittal plane
    # paper 003's explicit ICR formula gives the same point
    paper = np.array([fg.icr_paper003(fg.solve(p)) for p in FLEXION])
    np.testing.assert_allclose(c["icr"][:, [0, 2]], paper, rtol=0, atol=1e-9)


def test_icr_point_has_zero_velocity_and_configuration_matches(curve):
    model, c = curve
    assert np.max(c["residual"]) < 1e-12                   # |v| at the ICR per unit q̇ (m/s), round-off
    for phi, x, angles in zip(FLEXION, c["x"], c["angles"]):
        ref = fg.solve(phi)
        np.testing.assert_allclose(angles, [ref["knee_A"], ref["knee_B"], ref["knee_D"]], rtol=0, atol=1e-10)
        points = fourbar.point_positions(model, x)
        for name in ("A", "B", "C", "D"):
            np.testing.assert_allclose(points[name][[0, 2]], ref[name], rtol=0, atol=1e-12)


def test_j_curve_shape(curve):
    """The ICR starts high above the knee at full extension and drops towards the joint with flexion."""
    _, c = curve
    z = c["icr"][:, 2]
    assert z[0] > 0.1 and z[0] == pytest.approx(fg.icr(0.0)[1], abs=1e-12)
    assert z.min() < 0.03 and np.argmax(z) == 0


def test_scenario_writes_summary(tmp_path):
    summary = fourbar.run(str(tmp_path), step_deg=10.0)
    assert (tmp_path / "summary.json").is_file() and (tmp_path / "fourbar_icr.png").is_file()
    reference = fg.j_curve(np.radians(summary["flexion_deg"]))
    np.testing.assert_allclose(summary["icr_x_m"], reference[:, 0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(summary["icr_z_m"], reference[:, 1], rtol=0, atol=1e-9)
