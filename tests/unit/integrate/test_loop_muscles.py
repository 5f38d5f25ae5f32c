"""Muscles on a loop model run on the pipeline: the four-bar knee (urdf/fourbar_knee.urdf, a planar loop) with a
knee extensor from the thigh to the shank, on the compiled loop right-hand side (`CompiledReducedRHS`: the loop
stage's Newton, then the muscle stage), checked against the energy balance (kinetic + gravity + tendon energy −
fiber work constant: an independent check of the muscle's τ = −Rᵀ T through the loop's G and γ)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet

ROOT = Path(__file__).resolve().parents[3]
MUSCLE = ('<muscle name="extensor" model="degroote2016" tendon="compliant" max_isometric_force="150" '
          'optimal_fiber_length="0.1" tendon_slack_length="0.29">'
          '<point link="thigh" xyz="0.03 0 0.3"/><point link="shank" xyz="0.03 0 -0.05"/></muscle>')


@pytest.fixture(scope="module")
def knee(tmp_path_factory):
    path = tmp_path_factory.mktemp("knee") / "fourbar_knee_muscle.urdf"
    path.write_text((ROOT / "urdf" / "fourbar_knee.urdf").read_text().replace("</biobullet>", MUSCLE + "</biobullet>"))
    return biobullet.load_model(path)


@pytest.mark.parametrize("excitation", ["constant", "ramp"])
def test_loop_model_with_a_muscle_runs_compiled_and_balances_energy(knee, excitation):
    """From 0.6 rad of flexion the knee swings under gravity while the extensor activates (constant, or a ramp
    refreshed in Python before each call); one compiled call per right-hand side, the balance drifts by the
    integrator's error only (rtol 1e-10: ≤ 1e-7 of the largest energy term)."""
    u = 0.6 if excitation == "constant" else (lambda t: min(1.0, 3.0 * t))
    run = biobullet.simulate(knee, 0.4, initial={"knee_A": 0.6}, rtol=1e-10, atol=1e-12, excitations={"extensor": u},
                             progress=False, t_eval=np.linspace(0.0, 0.4, 41))
    report = run.meta["right_hand_side"]
    assert report["path"] == "compiled loop map" and report["callback_calls"] <= 1, report
    assert "compiled_stepper_steps" not in report
    energy = run.energy
    balance = (energy["kinetic"] + energy["potential_gravity"] + energy["potential_elastic"]
               - energy["work_applied"] + energy["dissipated"])
    scale = max(np.abs(energy["work_applied"]).max(), np.ptp(energy["kinetic"]))
    assert np.abs(energy["work_applied"]).max() > 1e-3 and np.ptp(run.q[:, 0]) > 0.1   # the fiber works, the knee moves
    assert np.abs(balance - balance[0]).max() <= 1e-7 * scale
