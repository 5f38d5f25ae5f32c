"""The four-bar knee oracle (tests/fourbar_geometry.py): closed-form positions and ICR checked from first
principles -- link lengths, the two rocker lines, paper 003's explicit ICR formula, and the shank's velocity
field obtained by finite differences of the coupler motion (it must vanish at the ICR)."""

import numpy as np
import pytest




import fourbar_geometry as fg  # tests/fourbar_geometry.py
FLEXIONS = np.radians(np.arange(0.0, 110.0 + 1e-9, 5.0))


def _cross(u, v):
    return u[0] * v[1] - u[1] * v[0]


@pytest.mark.parametrize("phi", FLEXIONS)
def test_closed_form_solution_keeps_every_link_rigid(phi):
    c = fg.solve(phi)
    # lengths of ~0.03-0.09 m reproduced to double rounding
    assert np.linalg.norm(c["D"] - c["A"]) == pytest.approx(fg.L_AD, abs=1e-15)
    assert np.linalg.norm(c["C"] - c["B"]) == pytest.approx(fg.L_BC, abs=1e-15)
    assert np.linalg.norm(c["C"] - c["D"]) == pytest.approx(fg.L_DC, abs=1e-15)
    # the coupler DC is turned by exactly phi (shank rotation = flexion), the rockers by knee_A / knee_B
    np.testing.assert_allclose(c["C"] - c["D"], fg.rot(phi) @ (fg.C0 - fg.D0), atol=1e-16)
    np.testing.assert_allclose(c["D"] - c["A"], fg.rot(c["knee_A"]) @ (fg.D0 - fg.A0), atol=1e-16)
    np.testing.assert_allclose(c["C"] - c["B"], fg.rot(c["knee_B"]) @ (fg.C0 - fg.B0), atol=1e-16)
    assert c["knee_A"] + c["knee_D"] == pytest.approx(phi, abs=1e-15)


def test_full_extension_is_the_zero_configuration():
    c = fg.solve(0.0)
    assert max(abs(c["knee_A"]), abs(c["knee_B"]), abs(c["knee_D"])) < 1e-15
    np.testing.assert_allclose(c["C"], fg.C0, atol=1e-16)


@pytest.mark.parametrize("phi", FLEXIONS)
def test_icr_is_the_intersection_of_the_rocker_lines(phi):
    c = fg.solve(phi)
    p = fg.icr(phi)
    # P lies on line AD and on line BC: normalised cross products vanish (ICR distances <= ~0.2 m)
    for a, b in (("A", "D"), ("B", "C")):
        d = c[b] - c[a]
        assert abs(_cross(d, p - c[a])) / np.linalg.norm(d) < 1e-15
    np.testing.assert_allclose(fg.icr_paper003(c), p, rtol=0, atol=1e-14)


@pytest.mark.parametrize("phi", FLEXIONS[:-1] + np.radians(2.5))
def test_shank_velocity_field_vanishes_at_the_icr(phi):
    """Finite differences of the coupler pose give v(X) = w x (X - P): P (from the line intersection) must be
    the point of zero velocity, and the field must be a rigid rotation about it."""
    h = 1e-6
    c = fg.solve(phi)
    p = fg.icr(phi)
    inv = fg.rot(phi).T

    def vel(x):
        local = inv @ (x - c["D"])
        return (fg.shank_point(phi + h, local) - fg.shank_point(phi - h, local)) / (2 * h)

    # per unit flexion rate: d/dphi rot(phi) = rot(phi) [[0, 1], [-1, 0]]  ->  v(X) = (Xz - Pz, -(Xx - Px))
    for x in (c["D"], c["C"], p + np.array([0.01, -0.02])):
        expected = np.array([x[1] - p[1], -(x[0] - p[0])])
        # central-difference error ~ |X - P| * h^2 * (rocker curvature) + rounding 1e-16 / h ~ 1e-10 m/rad
        np.testing.assert_allclose(vel(x), expected, rtol=0, atol=1e-8)
    assert np.linalg.norm(vel(p)) < 1e-8          # vs |v_C| ~ 0.05-0.2 m/rad


def test_j_curve_of_this_design():
    curve = fg.j_curve(FLEXIONS)
    knee_a = np.array([fg.solve(p)["knee_A"] for p in FLEXIONS])
    assert np.all(np.diff(knee_a) > 0)            # knee_A is a valid independent coordinate over 0-110 deg
    x0, z0 = curve[0]
    assert z0 > 0.10                              # proximal: > 10 cm above the knee reference point
    assert x0 < fg.A0[0]                          # posterior: behind even the posterior thigh pivot
    k = int(np.argmin(curve[:, 1]))
    assert 0 < k < len(FLEXIONS) - 1              # descends, bottoms out, and hooks back up: a J
    assert curve[k, 1] < 0.25 * z0
    assert np.all(np.diff(curve[:k + 1, 1]) < 0) and np.all(np.diff(curve[k:, 1]) > 0)
    assert curve[-1, 0] < x0                      # at 110 deg the ICR has moved further posterior
