"""Reference-engine mechanics: CSV/NPZ round trips, atomic output, sampling modes, argument errors,
integrator failure (SolverError with the partial trajectory on disk), user events, the CLI entry point."""
from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np
import pytest

from biobullet import ModelError, SolverError
from biobullet.forces import JointTorque, add_force_element
from biobullet.integrate import Event, Trajectory, cli_simulate, simulate

import engine_models as models  # tests/engine_models.py

ARM = [(1.0, 1.0, 0.5, 1e-2), (0.8, 0.5, 0.4, 2e-2)]
DAMPED = '<joint_spring joint="j1" stiffness="5" damping="0.3"/><initial joint="j1" position="0.4"/>'


@pytest.fixture
def arm(tmp_path):
    return models.load_chain(tmp_path, ARM, extension=DAMPED)


def test_csv_header_and_round_trip(arm, tmp_path):
    trajectory = simulate(arm, 0.2, t_eval=np.linspace(0, 0.2, 11), progress=False)
    path = trajectory.to_csv(tmp_path / "out" / "arm.csv")
    with open(path) as handle:
        assert next(csv.reader(handle)) == ["t", "j1", "j2", "j1_dot", "j2_dot"]
    back = Trajectory.from_csv(path, model=arm)
    np.testing.assert_array_equal(back.t, trajectory.t)  # 17 significant digits: exact
    np.testing.assert_array_equal(back.positions, trajectory.positions)
    np.testing.assert_array_equal(back.velocities, trajectory.velocities)
    np.testing.assert_array_equal(back.q, trajectory.q)
    assert back.joint_names == ("j1", "j2") and back.velocity_names == ("j1_dot", "j2_dot")
    assert [p.name for p in path.parent.iterdir()] == ["arm.csv"]  # no temporary file left behind


def test_npz_round_trip_is_exact(arm, tmp_path):
    trajectory = simulate(arm, 0.2, t_eval=np.linspace(0, 0.2, 5), progress=False,
                          events=[Event("j1_zero", lambda t, x, xd: x[0] - 0.39)])
    assert trajectory.events and trajectory.events[0][0] == "j1_zero"
    back = Trajectory.from_npz(trajectory.to_npz(tmp_path / "arm.npz"))
    for key in ("t", "positions", "velocities", "q", "v"):
        np.testing.assert_array_equal(getattr(back, key), getattr(trajectory, key))
    for key, value in trajectory.energy.items():
        np.testing.assert_array_equal(back.energy[key], value)
    assert back.meta == trajectory.meta and back.events[0][1] == trajectory.events[0][1]
    np.testing.assert_array_equal(back.events[0][2], trajectory.events[0][2])


def test_sampling_modes_and_accelerations(arm):
    default = simulate(arm, 0.1, progress=False)
    assert len(default.t) == 1001 and default.t[-1] == 0.1
    steps = simulate(arm, 0.1, t_eval="steps", progress=False)
    assert len(steps.t) == steps.meta["steps"] + 1
    acc = steps.accelerations()
    # ẍ from the equations of motion = derivative of the sampled velocity (central differences on a fine run)
    fine = simulate(arm, 0.1, t_eval=np.array([0.05 - 1e-4, 0.05, 0.05 + 1e-4]), progress=False)
    fd = (fine.velocities[2] - fine.velocities[0]) / 2e-4
    np.testing.assert_allclose(fine.accelerations()[1], fd, rtol=0, atol=1e-5)
    assert acc.shape == (len(steps.t), 2)


def test_argument_errors(arm):
    with pytest.raises(ModelError, match="unknown integration method"):
        simulate(arm, 1.0, method="Euler")
    with pytest.raises(ModelError, match="unknown formulation"):
        simulate(arm, 1.0, formulation="nope")
    with pytest.raises(ModelError, match="t_end"):
        simulate(arm, -1.0)
    with pytest.raises(ModelError, match="cannot set 'j3'"):
        simulate(arm, 1.0, initial={"j3": 1.0})
    with pytest.raises(ModelError, match="t_eval"):
        simulate(arm, 1.0, t_eval=[0.5, 0.2])


def test_integrator_failure_keeps_partial_trajectory(arm, tmp_path):
    """A torque that overflows at t = 0.05 s: SolverError naming t and state, partial CSV on disk."""
    add_force_element(arm, JointTorque("bomb", "j2", function=lambda t: 1e308 * 1e10 if t > 0.05 else 0.0))
    out = tmp_path / "run.csv"
    with pytest.raises(SolverError) as info:
        simulate(arm, 1.0, out=out, progress=False, t_eval=np.linspace(0, 1, 101))
    error = info.value
    # t is the failing evaluation (a stage of the step that reaches past 0.05 s); the partial trajectory
    # ends at the last accepted step, before it
    assert 0.05 < error.t and "integration failed at t = " in str(error) and "state [q, v]" in str(error)
    partial = Path(str(out) + ".partial.csv")
    assert partial.exists() and not out.exists() and error.partial_path == str(partial)
    back = Trajectory.from_csv(partial)
    assert back.t[-1] <= 0.05 < error.t and len(back.t) >= 2
    np.testing.assert_array_equal(back.positions, error.trajectory.positions)


def test_terminal_event_stops_the_run(arm):
    stop = Event("j1_down", lambda t, x, xd: x[0] - 0.1, direction=-1, terminal=True)
    trajectory = simulate(arm, 5.0, events=[stop], progress=False)
    name, t_event, state = trajectory.events[0]
    assert name == "j1_down" and trajectory.t[-1] == t_event and abs(state[0] - 0.1) < 1e-12
    assert trajectory.meta["status"] == "terminated"


def test_cli_simulate(arm, tmp_path):
    out = tmp_path / "cli.csv"
    args = argparse.Namespace(model=arm.file, t_end=0.05, formulation=None, method="Radau", rtol=1e-8,
                              atol=1e-10, dt=0.01, overrides=[("j2", 0.3), ("j2_dot", -1.0)], out=str(out),
                              floating_base=None, progress=False)
    assert cli_simulate(args) == 0
    back = Trajectory.from_csv(out)
    np.testing.assert_allclose(back.t, np.linspace(0, 0.05, 6), atol=1e-15)
    assert back.positions[0, 1] == 0.3 and back.velocities[0, 1] == -1.0 and back.positions[0, 0] == 0.4
