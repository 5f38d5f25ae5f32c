"""A muscle run's outputs: trajectory files with the muscles' records (CSV `<muscle>:<record>` columns, NPZ),
`biobullet simulate --excitation`, the bridge's trajectory with muscle samples, pictures coloured by the run's own
activations, and the bridge's sub-steps of stiff muscle states (`bridge.stability.muscle_substeps`).

Oracles: exact float round trips; the library's static equilibrium (`muscles.equilibrium_tendon_forces`, itself
checked against OpenSim's `equilibrateMuscles`) for the first sample's tendon forces; the behaviour of explicit
Euler itself (a perturbation decays below the estimated limit and grows well beyond it); the colour map applied
to the recorded activations.
"""
from __future__ import annotations

import json
from pathlib import Path
import re

import numpy as np
import pytest

import biobullet
from biobullet.core.errors import ModelError
from biobullet.integrate.trajectory import Trajectory
from muscle_models import ARM26, load_quietly

pytestmark = pytest.mark.skipif(not ARM26.is_file(), reason="the bundled OpenSim models are missing")
REPO = Path(__file__).resolve().parents[2]
TUG = str(ARM26.parent / "Tug_of_War_Millard.osim")
T_EVAL = np.linspace(0.0, 0.02, 5)


@pytest.fixture(scope="module")
def tug():
    return load_quietly(TUG)


@pytest.fixture(scope="module")
def tug_run(tug):
    return biobullet.simulate(tug, 0.02, excitations={"RightMuscle": 0.8, "LeftMuscle": 0.5}, activations=0.1,
                              t_eval=T_EVAL, progress=False)


def test_csv_and_npz_carry_the_muscle_records_exactly(tug_run, tmp_path):
    assert tug_run.muscle_names == ("RightMuscle", "LeftMuscle")
    header = open(tug_run.to_csv(tmp_path / "run.csv")).readline().strip().split(",")
    assert header[:3] == ["t", "block_tz", "block_tz_dot"]
    assert "RightMuscle:activation" in header and "LeftMuscle:tendon_force" in header
    assert len(header) == 3 + 2 * len(tug_run.muscles)
    for back in (Trajectory.from_csv(tmp_path / "run.csv"), Trajectory.from_npz(tug_run.to_npz(tmp_path / "r.npz"))):
        assert back.muscle_names == tug_run.muscle_names and set(back.muscles) == set(tug_run.muscles)
        for key, values in tug_run.muscles.items():
            assert np.array_equal(back.muscles[key], values), key
        assert back.velocity_names == ("block_tz_dot",) and np.array_equal(back.positions, tug_run.positions)
    np.testing.assert_array_equal(tug_run.column("LeftMuscle:activation"), tug_run.muscles["activation"][:, 1])
    with pytest.raises(KeyError, match="RightMuscle:activation"):
        tug_run.column("RightMuscle:activaton")


def test_cli_excitations_all_then_by_name(tug, tug_run, tmp_path, capsys):
    from biobullet.cli import main
    out = tmp_path / "cli.csv"
    code = main(["--quiet", "simulate", TUG, "--t-end", "0.02", "--dt", "0.005", "--excitation", "RightMuscle=0.8",
                 "--excitation", "all=0.5", "--out", str(out)])
    assert code == 0
    back = Trajectory.from_csv(out)
    # all=0.5 then RightMuscle=0.8 (a name overrides `all` whatever the order): the run of the same excitations
    # given to `simulate` (initial activations: OpenSim's default 0.05 there, 0.1 in tug_run)
    same = biobullet.simulate(tug, 0.02, excitations={"RightMuscle": 0.8, "LeftMuscle": 0.5}, t_eval=T_EVAL,
                              progress=False)
    np.testing.assert_allclose(back.muscles["activation"], same.muscles["activation"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(back.positions, same.positions, rtol=0, atol=1e-12)


@pytest.mark.parametrize("argument, message", [
    ("RightMusle=0.5", "unknown muscle 'RightMusle'.*RightMuscle"),
    ("all=1.5", "excitation of 'all' = 1.5"),
    ("LeftMuscle=-0.1", "excitation of 'LeftMuscle' = -0.1"),
])
def test_cli_bad_excitations_exit_2_naming_the_muscle(argument, message, tmp_path, capsys):
    from biobullet.cli import main
    code = main(["simulate", TUG, "--t-end", "0.01", "--excitation", argument, "--out", str(tmp_path / "x.csv")])
    assert code == 2
    error = capsys.readouterr().err
    assert re.search(message, error) and "Traceback" not in error
    assert not (tmp_path / "x.csv").exists()


def test_cli_excitation_on_a_model_without_muscles_exits_2(tmp_path, capsys):
    from biobullet.cli import main
    code = main(["simulate", str(REPO / "urdf" / "andrews_squeezer.urdf"),
                 "--t-end", "0.01", "--excitation", "all=0.5",
                 "--out", str(tmp_path / "x.csv")])
    assert code == 2 and "has no muscles" in capsys.readouterr().err


def test_export_html_colours_paths_by_the_runs_activations(tug, tug_run, tmp_path):
    from biobullet.render.html import export_html
    from biobullet.render.scene import activation_colors
    page = open(export_html(tug, tug_run, tmp_path / "run.html", fps=200)).read()
    data = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>', page, re.S).group(1))
    assert np.allclose(data["times"], T_EVAL)   # 200 frames/s over 20 ms: the samples themselves
    for k in range(len(T_EVAL)):
        expected = np.round(255 * activation_colors(tug_run.muscles["activation"][k], 2)).astype(int).ravel()
        assert data["muscle_colors"][k] == expected.tolist()
    assert data["muscle_colors"][-1] != data["muscle_colors"][0]   # activations rose from 0.1 to ≈ 0.7


def test_bridge_trajectory_records_the_muscles_from_equilibrium(tug):
    from biobullet.bridge.simulation import simulate_bridge
    run = simulate_bridge(tug, 0.01, 1e-3, excitations={"RightMuscle": 0.8}, activations=0.1, progress=False)
    assert run.muscle_names == ("RightMuscle", "LeftMuscle") and run.muscles["activation"].shape == (len(run.t), 2)
    np.testing.assert_allclose(run.muscles["tendon_force"][0],
                               biobullet.muscles.equilibrium_tendon_forces(tug, run.q[0], 0.1), rtol=1e-9)
    np.testing.assert_array_equal(run.muscles["activation"][0], [0.1, 0.1])
    assert run.muscles["activation"][-1, 0] > 0.3 and run.muscles["activation"][-1, 1] < 0.1   # 0.8 up, 0 down


# ------------------------------------------------------------------------------------------------ bridge dt
@pytest.fixture(scope="module")
def arm26_active():
    """arm26 at rest, every muscle at activation 0.5 with excitation 0.5 (activations stay put), fibers in
    static equilibrium: the tendons loaded, the fiber states stiff."""
    from biobullet.muscles.dynamics import MuscleRun
    model = load_quietly(str(ARM26))
    from biobullet.muscles.dynamics import LENGTH, SPEED, evaluate_stage
    run = MuscleRun(model, 0.5, 0.5)
    x, xd = model.joint_state(np.zeros(model.nq), np.zeros(model.nv))[:2]
    state = run.initial_state(np.zeros(model.nq))
    evaluate_stage(model, run.rows, x, xd, state, np.zeros(model.n_tangent))   # the paths' lengths and speeds
    return run, x, xd, state, run.rows.outputs[:, LENGTH].copy(), run.rows.outputs[:, SPEED].copy()


def test_muscle_state_limits_bracket_explicit_eulers_stability(arm26_active):
    """Euler steps of the muscle states at a fixed skeleton: a fiber-length perturbation decays at 0.95 × the
    estimated limit and grows at 2.5 × (Thelen's force–velocity curve is steeper lengthening than shortening, by
    ≈ 2 on arm26: the estimate takes the steeper side, so it is safe and at most that factor conservative)."""
    from biobullet.bridge.stability import muscle_state_limits
    from biobullet.muscles.dynamics import evaluate_stage
    run, x, xd, state, lengths, speeds = arm26_active
    limits = muscle_state_limits(run, lengths, speeds, state)
    n = len(run.names)
    assert limits[n:].max() < limits[:n].min()   # the fibers, not the activations, are the stiff states
    tau = np.zeros(run.model.n_tangent)

    def growth(factor: float) -> float:
        s = state.copy()
        s[n:] *= 1.0 + 1e-6
        start = np.abs(s - state)[n:].max()
        try:
            for _ in range(30):
                evaluate_stage(run.model, run.rows, x, xd, s, tau)
                s = s + factor * limits[n:].min() * run.rows.rate
        except ModelError:   # a fiber driven out of its domain: the force is no longer finite
            return np.inf
        return np.abs(s - state)[n:].max() / start

    assert growth(0.95) < 1.0 and growth(2.5) > 1e3


def test_muscle_substeps_and_the_error_naming_the_stiffest_muscle(arm26_active):
    from biobullet.bridge.stability import MAX_MUSCLE_SUBSTEPS, muscle_state_limits, muscle_substeps
    from biobullet.core.errors import ModelError
    run, x, xd, state, lengths, speeds = arm26_active
    limits = muscle_state_limits(run, lengths, speeds, state)
    dt = 4e-3
    n = muscle_substeps(run, lengths, speeds, state, dt)
    assert dt / n <= limits.min() / 2 * (1 + 1e-9) and dt / (n - 1) > limits.min() / 2
    stiffest = run.names[int(np.flatnonzero(run.rows.fiber_state == np.argmin(limits))[0])]
    with pytest.raises(ModelError, match=f"fiber length of muscle '{stiffest}'.*stable up to"):
        muscle_substeps(run, lengths, speeds, state, limits.min() * MAX_MUSCLE_SUBSTEPS)


def test_bridge_at_4_ms_sub_steps_the_fibers_which_diverge_without(monkeypatch):
    """arm26, every muscle at u = 0.5 from rest, PyBullet dt = 4 ms: with the muscle sub-steps (2–4 per step
    here) the fibers stay near their optimal lengths; one plain Euler step per bridge step sends TRIlong's fiber
    off (to tens of metres, or a non-finite force) within 0.4 s."""
    import biobullet.bridge.muscles as bridge_muscles
    from biobullet.bridge.bridge import Bridge
    model = load_quietly(str(ARM26))
    optimal = np.array([m.parameters.optimal_fiber_length
                        for m in biobullet.muscles.api.muscle_set(model).muscle_set.muscles])

    def run():
        with Bridge(model, dt=4e-3, initial=(np.zeros(2), np.zeros(2))) as bridge:
            muscles = bridge.set_excitations(0.05, **dict.fromkeys(biobullet.muscles.names(model), 0.5))
            used = []
            for _ in range(100):
                bridge.step()
                used.append(muscles.substeps)
                if np.abs(muscles.state[6:] / optimal).max() > 3.0:
                    break
            return muscles.state[6:] / optimal, max(used)

    fibers, most = run()
    assert most > 1 and np.all((fibers > 0.4) & (fibers < 1.8)), fibers
    monkeypatch.setattr(bridge_muscles, "muscle_substeps", lambda *arguments: 1)
    try:
        fibers, _ = run()
        assert np.abs(fibers).max() > 3.0
    except ModelError:   # a non-finite muscle force stops the stage first
        pass
