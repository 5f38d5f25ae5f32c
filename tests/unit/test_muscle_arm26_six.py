"""arm26 with all six muscles in the dynamics — BIClong over its ellipsoid, TRIlong over three wraps (cylinder,
ellipsoid), BRA over the cylinder "TRI" — the properties that are ours whatever OpenSim's Manager does
(docs/muscles.md, "arm26 with all six muscles against OpenSim"):

- the stage's generalized force is −Σ T ∂l/∂q with ∂l/∂q by central differences of `muscles.lengths`
  (h = 1e-6 rad; the wraps' iterations converge far below the 1e-6 m tolerance on the gradient);
- the energy balance (kinetic + gravity + tendon energy − fiber work) closes while the arm moves;
- the run crosses BRA's wrap switching sides (a jump of the moment arm) without stalling.
"""
from __future__ import annotations

import numpy as np
import pytest

import biobullet
from biobullet.muscles.dynamics import MuscleRun, evaluate_stage
from muscle_models import ARM26, load_quietly

pytestmark = pytest.mark.skipif(not ARM26.is_file(), reason="the bundled OpenSim models are missing")


@pytest.fixture(scope="module")
def arm26():
    return load_quietly(str(ARM26))


def test_all_six_muscles_are_in_the_dynamics(arm26):
    assert biobullet.muscles.names(arm26) == ("TRIlong", "TRIlat", "TRImed", "BIClong", "BICshort", "BRA")


@pytest.mark.parametrize("q", [(0.3, 1.1), (-0.4, 0.2), (0.9, 2.0)])
def test_stage_force_is_minus_tension_times_the_length_derivative(arm26, q):
    q = np.array(q)
    run = MuscleRun(arm26, 0.5, 0.5)
    x, xd = arm26.joint_state(q, np.zeros(2))[:2]
    tau = np.zeros(arm26.n_tangent)
    evaluate_stage(arm26, run.rows, x, xd, run.initial_state(q), tau)
    tension = run.rows.outputs[:, 2]
    assert np.all(tension > 1.0)
    h = 1e-6
    gradient = np.column_stack([(biobullet.muscles.lengths(arm26, q + h * e) - biobullet.muscles.lengths(arm26, q - h * e))
                                / (2 * h) for e in np.eye(2)])
    assert np.abs(tau + gradient.T @ tension).max() <= 1e-6 * tension.sum()


def test_energy_balance_closes_with_all_six_muscles(arm26):
    """From rest at the default pose, every muscle at u = 0.5 from activation 0.05, 30 ms at rtol 1e-10: the
    balance drifts by ≤ 1e-6 of the work the fibers do."""
    run = biobullet.simulate(arm26, 0.03, initial=(np.zeros(2), np.zeros(2)), excitations=0.5, rtol=1e-10,
                             atol=1e-12, t_eval=np.linspace(0.0, 0.03, 7), progress=False)
    balance = run.energy_balance()
    work = np.abs(run.energy["work_applied"]).max()
    assert work > 1e-3 and np.abs(run.v[-1]).max() > 0.1   # the fibers work, the arm moves
    assert np.abs(balance - balance[0]).max() <= 1e-6 * work


def test_six_muscles_cross_bra_switching_sides_of_its_cylinder(arm26):
    """Every muscle at u = 0.5 from rest (a₀ = 0.05): the triceps hyperextend the elbow, and at t ≈ 0.0884 s
    (elbow −0.03408 rad) BRA's path over the cylinder "TRI" switches sides — its elbow moment arm jumps from
    +0.0153 m to −0.0198 m (OpenSim's lengths have the same kink: tests/validation/test_muscle_dynamics_opensim.py).
    The integrator crosses that jump with a few hundred evaluations (1430 for the whole 0.1 s observed); before the
    apex of the cylinder wrap was evaluated without cancellation, round-off in the moment arm near the switch held
    DOP853's steps at 1e-9 s there and the run did not get past 0.08838 s."""
    run = biobullet.simulate(arm26, 0.1, initial=(np.zeros(2), np.zeros(2)), excitations=0.5, rtol=1e-8,
                             atol=1e-10, t_eval=[0.0, 0.1], progress=False)
    elbow = arm26.coordinate_names.index("r_elbow_flex")
    assert run.meta["status"] == "finished" and run.q[-1, elbow] < -0.05   # past the switch, hyperextending
    assert run.meta["nfev"] <= 3000
