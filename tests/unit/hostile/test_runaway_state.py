"""A runaway state is named as such, not as stiffness (issue 27): `--set knee_A_dot=1e100` on the four-bar knee held
the explicit method's steps at ≈ 1e-102 s, was switched to Radau as "stiff" and ended after 120,000 evaluations
with "the problem is too stiff" — while no element is stiff: the state moves at 1e100 rad/s, and every method's
steps shrink to follow it."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.integrate.engine import RUNAWAY_SPEED, IntegrationError
from hostile_cli import one_error

URDF = Path(__file__).resolve().parents[3] / "plugin" / "biobullet" / "data" / "urdf"


def test_a_runaway_initial_rate_stops_at_the_stiffness_check_naming_the_speed(tmp_path):
    out = tmp_path / "run.csv"
    error = one_error("simulate", str(URDF / "fourbar_knee.urdf"), "--t-end", "0.01", "--set", "knee_A_dot=1e100",
                      "--out", str(out))
    assert re.search(r"the state runs away: knee_A moves at [0-9.]+e\+(99|100) \(rad/s or m/s\)", error), error
    assert "stiff" not in error and "--set" in error
    partial = np.loadtxt(str(out) + ".partial.csv", delimiter=",", skiprows=1, ndmin=2)
    assert np.all(np.isfinite(partial))


def test_an_implicit_run_out_of_budget_on_a_runaway_state_says_so():
    """The budget branch (Radau chosen by the caller: no switch, no stiffness watch)."""
    model = biobullet.load_model(str(URDF / "fourbar_knee.urdf"))
    with pytest.raises(IntegrationError) as caught:
        biobullet.simulate(model, 0.01, method="Radau", initial={"knee_A_dot": 1e100}, max_evaluations=2000,
                           progress=False)
    message = str(caught.value)
    assert "work budget exhausted" in message and "the state runs away: knee_A moves at" in message, message
    assert "too stiff" not in message


def test_an_ordinary_fast_state_is_no_runaway():
    """A rate just below RUNAWAY_SPEED on the same knee runs for a step without the runaway message (the bound is
    no false alarm for fast but physical motion: 1e5 rad/s is 16,000 turns a second)."""
    model = biobullet.load_model(str(URDF / "fourbar_knee.urdf"))
    run = biobullet.simulate(model, 1e-7, initial={"knee_A_dot": RUNAWAY_SPEED / 10}, progress=False)
    assert run.meta["status"] == "finished" and abs(run.v[0, 0]) == pytest.approx(RUNAWAY_SPEED / 10)
