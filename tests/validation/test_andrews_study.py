"""Andrews' squeezer end to end through `biobullet.simulate` (paper 000's validation benchmark).

One `reduced` run (rtol = atol = 1e-11) and one `multipliers` run (Baumgarte, rtol = atol = 1e-9) over
0 … 0.03 s, checked against:
  * energy: E = ½Mβ'² + ½c0(l − l0)² − mom(β − β0) is conserved (no damping, constant torque); drift ≤ 1e-9 J
    (the issue's number; measured ~1e-10 J at this tolerance, E ≈ 1.44 J);
  * loop residual max|Φ| along the run: reduced ≤ 1e-12 m (loops solved to round-off at every sample,
    measured ~1e-17 m), multipliers ≤ 1e-8 m (drift held by Baumgarte, measured ≲ 1e-10 m);
  * β(0.03) vs the hand-written classic 7-coordinate solver (tests/andrews_classic.py, DOP853 at 1e-12)
    ≤ 1e-8 relative, and the IVP test set's published state ≤ 1e-8 relative;
  * Ω = −Φ throughout (the symmetric branch of the mechanism; |Ω + Φ| ≤ 1e-9 rad).
"""
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.constraints.equations import constraint_set
from biobullet.constraints.implicit import LoopResolver
from biobullet.constraints.loops import loop_terms
from biobullet_studies import andrews

ROOT = Path(__file__).resolve().parents[2]
import andrews_classic as ac  # tests/andrews_classic.py

T_EVAL = np.linspace(0.0, 0.03, 61)


@pytest.fixture(scope="module")
def model():
    return biobullet.load_model(ROOT / "urdf" / "andrews_squeezer.urdf")


@pytest.fixture(scope="module")
def classic_end():
    _, y = ac.solve_andrews(t_end=0.03, rtol=1e-12, atol=1e-12)
    return y[-1, :7]


@pytest.fixture(scope="module")
def reduced(model):
    return biobullet.simulate(model, 0.03, formulation="reduced", rtol=1e-11, atol=1e-11, t_eval=T_EVAL,
                              progress=False)


@pytest.fixture(scope="module")
def multipliers(model):
    return biobullet.simulate(model, 0.03, formulation="multipliers", rtol=1e-9, atol=1e-9, t_eval=T_EVAL,
                              progress=False)


def _classic(model, trajectory, row=-1):
    return trajectory.positions[row, andrews.classic_order(model)]


def test_energy_is_conserved_reduced(model, reduced):
    d = andrews.run_diagnostics(model, reduced)
    assert d["energy"][0] == pytest.approx(1.43579639916, rel=1e-11)     # published E (11 digits)
    assert np.max(np.abs(d["energy"] - d["energy"][0])) <= 1e-9
    # the library's own balance T + V_elastic − W (W integrated with the state) agrees
    assert np.max(np.abs(d["balance"] - d["balance"][0])) <= 1e-9


def test_constraint_residuals(model, reduced, multipliers):
    cset = constraint_set(model)
    residual_reduced = max(np.max(np.abs(cset.residual(x))) for x in reduced.positions)
    residual_multipliers = max(np.max(np.abs(cset.residual(x))) for x in multipliers.positions)
    assert residual_reduced <= 1e-12
    assert residual_multipliers <= 1e-8


def test_state_at_end_matches_classic_and_published(model, reduced, multipliers, classic_end):
    for trajectory in (reduced, multipliers):
        end = _classic(model, trajectory)
        assert abs(end[0] - classic_end[0]) <= 1e-8 * abs(classic_end[0])
        assert np.max(np.abs(end - classic_end) / np.abs(classic_end)) <= 1e-8
        assert np.max(np.abs(end - ac.REFERENCE_Q) / np.abs(ac.REFERENCE_Q)) <= 1e-8
    # the classic solver itself reproduces the published reference (it is the yardstick)
    assert np.max(np.abs(classic_end - ac.REFERENCE_Q) / np.abs(ac.REFERENCE_Q)) <= 1e-9


def test_omega_is_minus_phi(reduced, multipliers):
    for trajectory in (reduced, multipliers):
        assert np.max(np.abs(trajectory.column("omega") + trajectory.column("phi"))) <= 1e-9
        assert np.max(np.abs(trajectory.column("omega_dot") + trajectory.column("phi_dot"))) <= 1e-6 * np.max(
            np.abs(trajectory.column("phi_dot")))


def test_t0_numbers_both_formulations(model):
    numbers = andrews.initial_numbers(model)
    for values in numbers.values():
        assert values["dtheta_dbeta"] == pytest.approx(-0.75, rel=1e-13)
        assert values["generalized_mass"] == pytest.approx(2.3202763313e-06, rel=1e-10)   # 11 digits published
        assert values["beta_dd"] == pytest.approx(andrews.PUBLISHED_T0["beta_dd"], rel=1e-12)
        assert values["theta_dd"] == pytest.approx(andrews.PUBLISHED_T0["theta_dd"], rel=1e-12)


def test_vectorised_loop_rows_equal_generic(model):
    """The resolver's vectorised point/planar rows (constraints.implicit) = constraints.loops.loop_terms."""
    resolver = next(r for r in model.coordinate_map.resolvers if isinstance(r, LoopResolver))
    rng = np.random.default_rng(4)
    for _ in range(5):
        theta, rate = rng.normal(size=model.n_config), rng.normal(size=model.n_tangent)
        fast = resolver.terms(theta, rate)
        generic = loop_terms(model, resolver.loops, theta, rate)
        for a, b in zip(fast, generic):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-15)
