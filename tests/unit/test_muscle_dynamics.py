"""Muscle forces in the dynamics (`muscles.dynamics`, the pipeline's muscle stage; `simulate(excitations=)`,
`Bridge.set_excitations`). Checks without OpenSim: the energy balance with tendons closes (a conservation law), the
tendon energy is the integral of the tendon force (central differences), the stage's generalized force is Rᵀ T with
the public moment arms (validated against OpenSim elsewhere), the bridge converges to the reference engine at first
order in dt, bad excitations are one clear error, and the CLI's first run on an empty numba cache goes by the
kernels' uncompiled forms (nothing compiled) to the compiled run's trajectory. Model: the bundled arm26 with its
four evaluated muscles (Thelen2003, compliant tendons; BRA, TRIlat and TRImed over a cylinder wrap)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.core import jit
from biobullet.core.errors import ModelError
from biobullet.muscles import hill
from biobullet.muscles.api import moment_arms, muscle_set
from biobullet.muscles.dynamics import MuscleRun, evaluate_stage, excitations_by_name, tendon_energies
from muscle_models import ARM26, EVALUATED, arm26_with, load_quietly


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    return load_quietly(arm26_with(EVALUATED, tmp_path_factory.mktemp("arm")))


@pytest.mark.parametrize("path", ["compiled", "callback"])
def test_energy_balance_closes_with_tendon_energy_and_fiber_work(arm, path):
    """kinetic + gravity + tendon energy − fiber work is constant (the fibers' power −T ẋ integrated as input work):
    a ramp of excitation lifts the forearm; the balance drifts by the integrator's error only (rtol 1e-10:
    ≤ 1e-7 of the work done, ≈ 1e-10 observed). On the pipeline's compiled right-hand side and on the callback
    stage (the same stage called from Python, joint-space "multipliers" formulation)."""
    options = {} if path == "compiled" else {"formulation": "multipliers"}
    run = biobullet.simulate(arm, 0.3, initial=(np.zeros(2), np.zeros(2)), rtol=1e-10, atol=1e-12,
                             excitations={"BRA": lambda t: min(0.8, 4.0 * t), "BICshort": 0.3, "TRIlat": 0.3},
                             progress=False, t_eval=np.linspace(0.0, 0.3, 31), **options)
    assert run.meta["right_hand_side"]["path"] == ("compiled explicit map" if path == "compiled" else "callback stage")
    energy = run.energy
    balance = (energy["kinetic"] + energy["potential_gravity"] + energy["potential_elastic"]
               - energy["work_applied"] + energy["dissipated"])
    work = np.abs(energy["work_applied"]).max()
    assert work > 0.5 and np.abs(run.q[-1] - run.q[0]).max() > 0.3   # the arm moves, the fibers work
    assert np.abs(balance - balance[0]).max() <= 1e-7 * work
    assert run.muscles["tendon_energy"].max() > 1e-3                  # the tendons store energy
    assert run.muscles["activation"][-1, EVALUATED.index("BRA")] > 0.7


def test_a_cold_cli_run_with_muscles_compiles_nothing_and_matches_the_compiled_run(arm, tmp_path):
    """The CLI's first run of a muscle model on an empty numba cache: the muscle stage (paths over arm26's cylinder,
    Hill dynamics), the initial fiber equilibrium and the trajectory's muscle records go by the kernels' uncompiled
    forms with the rest of the run — nothing compiles (no compile line, nothing in numba's cache) — and the
    trajectory and muscle records are the compiled run's to the integrator's tolerance (the uncompiled forms are
    the same functions run by Python: round-off apart, the same steps)."""
    out, cache = tmp_path / "cold.csv", tmp_path / "numba"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache),
           "PYTHONPATH": os.pathsep.join([str(Path(biobullet.__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "biobullet", "simulate", arm.file, "--t-end", "0.01", "--excitation",
                           "all=0.3", "--excitation", "BRA=0.8", "--out", str(out)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert jit.COMPILE_NOTICE not in done.stderr and "calls by its uncompiled form: cold cache" in done.stderr
    assert not list(cache.rglob("*.nbi"))   # numba saved no kernel: none compiled
    header = out.read_text().splitlines()[0].split(",")
    cold = np.loadtxt(out, delimiter=",", skiprows=1)
    warm = biobullet.simulate(arm, 0.01, excitations=excitations_by_name(arm, [("all", 0.3), ("BRA", 0.8)]),
                              progress=False)
    assert warm.meta["right_hand_side"]["uncompiled_calls"] == 0
    n, m = arm.n_config, arm.n_tangent
    assert np.array_equal(cold[:, 0], warm.t)
    assert np.max(np.abs(cold[:, 1:1 + n] - warm.positions)) < 1e-9
    assert np.max(np.abs(cold[:, 1 + n:1 + n + m] - warm.velocities)) < 1e-7
    force = cold[:, [header.index(f"{name}:tendon_force") for name in warm.muscle_names]]
    assert np.max(np.abs(force - warm.muscles["tendon_force"])) < 1e-6 * np.max(np.abs(warm.muscles["tendon_force"]))


@pytest.mark.parametrize("model_name", ["thelen2003", "degroote2016"])
def test_tendon_energy_is_the_integral_of_the_tendon_force(model_name):
    """dE_T/dl_T = F₀ f_T(l_T / l_s) by central differences (h = 1e-7 m) across the toe and linear regions."""
    from biobullet.muscles.description import MuscleDescription, MuscleParameters, PathPoint
    parameters = MuscleParameters(max_isometric_force=500.0, optimal_fiber_length=0.1, tendon_slack_length=0.2,
                                  tendon="compliant")
    muscle = MuscleDescription(name="m", model=model_name, parameters=parameters,
                               points=(PathPoint("a", "ground"), PathPoint("b", "ground")))
    table = hill.muscle_table((muscle,))
    curves = table.curves
    h = 1e-7
    for strain in (0.002, 0.01, 0.02, 0.035, 0.045):
        length = 0.2 * (1.0 + strain)
        slope = (tendon_energies(table, [length + h])[0] - tendon_energies(table, [length - h])[0]) / (2 * h)
        force = 500.0 * hill.tendon_force_length(hill.MODEL_CODES[model_name], curves, 1.0 + strain)
        assert slope == pytest.approx(force, rel=1e-6, abs=1e-6)


def test_stage_force_is_moment_arms_transposed_times_tension(arm):
    """τ of the stage (fixed base, identity map: generalized) = Rᵀ T with R = `muscles.moment_arms` (the frame
    Jacobians' route, checked against OpenSim) and T the stage's tendon forces."""
    run = MuscleRun(arm, 0.4)
    q = np.array([0.3, 1.1])
    x, xd, _, _ = arm.joint_state(q, np.zeros(2))
    tau = np.zeros(arm.n_tangent)
    evaluate_stage(arm, run.rows, x, xd, run.initial_state(q) * 0.99, tau)
    tension = run.rows.outputs[:, 2]
    assert np.all(tension > 1.0)
    expected = moment_arms(arm, q).T @ tension
    assert np.allclose(tau, expected, rtol=1e-12, atol=1e-10)


def test_bad_excitations_are_one_clear_error(arm, tmp_path):
    with pytest.raises(ModelError, match="BRAA"):
        biobullet.simulate(arm, 0.01, excitations={"BRAA": 0.5}, progress=False)
    with pytest.raises(ModelError, match=r"\[0, 1\]"):
        biobullet.simulate(arm, 0.01, excitations={"BRA": 1.5}, progress=False)
    with pytest.raises(ModelError, match="4 values"):
        biobullet.simulate(arm, 0.01, excitations=lambda t, q, v: [0.1, 0.2], progress=False)
    with pytest.warns(UserWarning, match="muscles not imported.*BRA.*ignore_tendon_compliance.*rigid tendon"):
        rigid = biobullet.load_model(arm26_with(("BRA",), tmp_path, rigid=("BRA",)))   # refused at load
    assert biobullet.muscles.names(rigid) == ()
    assert muscle_set(arm).paths.names == EVALUATED


def test_bridge_converges_to_the_engine_at_first_order(arm):
    """`simulate_bridge(excitations=)` (Bridge.set_excitations; muscle states stepped by explicit Euler) against
    the reference engine at rtol 1e-11 over 0.3 s: errors halve with dt (observed orders ≈ 1.1). dt ≤ 2 ms (at
    4 ms the stiff fibers are sub-stepped: tests/unit/test_muscle_outputs.py)."""
    pytest.importorskip("pybullet")
    from biobullet.bridge.simulation import simulate_bridge
    start = (np.zeros(2), np.zeros(2))
    reference = biobullet.simulate(arm, 0.3, initial=start, excitations=0.5, rtol=1e-11, atol=1e-11,
                                   progress=False)
    errors = []
    for dt in (2e-3, 1e-3, 5e-4):
        run = simulate_bridge(arm, 0.3, dt, initial=start, excitations=0.5)
        errors.append(max(np.abs(run.q[-1] - reference.q[-1]).max(), np.abs(run.v[-1] - reference.v[-1]).max()))
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all((orders > 0.85) & (orders < 1.2)), (errors, orders)
    assert errors[-1] < 1e-3
    from biobullet.bridge.bridge import Bridge
    with Bridge(arm, dt=1e-3) as bridge:
        with pytest.raises(ModelError, match="BRAA"):
            bridge.set_excitations(BRAA=0.5)
        with pytest.raises(ModelError, match=r"\[0, 1\]"):
            bridge.set_excitations(BRA=2.0)
        muscles = bridge.set_excitations(BRA=0.7)
        bridge.step()
        assert muscles.state[EVALUATED.index("BRA")] > 0.05   # activation rises toward the excitation


def test_millard_inverse_force_velocity_inverts_the_curve():
    """Millard's fiber velocity (solved in the Bézier parameter) against the forward force–velocity curve (solved in
    x): a f_V(ṽ) + f_PE + β ṽ at a known ṽ gives back ṽ to round-off, with and without fiber damping, and past
    v_max (|ṽ| > 1, f_V on its end lines, as OpenSim's unbounded Newton solve) with damping; without damping the
    damped model's flat ends have no root there (NaN)."""
    from biobullet.muscles.osim import load_osim_muscles
    parameters = load_osim_muscles(ARM26.parent / "Tug_of_War_Millard.osim").muscles[0].parameters
    curves = hill.curve_parameters("millard2012", parameters)
    rng = np.random.default_rng(3)
    worst = 0.0
    for damping in (0.0, 0.1):
        vector = hill.muscle_vector("millard2012", parameters)
        vector[hill.DAMPING] = damping
        for velocity in np.concatenate([rng.uniform(-1.0, 1.0, 40), [-0.95, -0.9, 0.0, 0.9, 0.95]]):
            afl, passive = rng.uniform(0.05, 1.0), rng.uniform(0.0, 0.5)
            force = afl * hill.force_velocity(hill.MILLARD, curves, velocity) + passive + damping * velocity
            found = hill.fiber_velocity(hill.MILLARD, curves, vector, 1.0, afl, passive, 1.0, force)
            worst = max(worst, abs(found - velocity))
        for velocity in (-2.0, -1.3, 1.2, 2.5):
            force = 0.5 * hill.force_velocity(hill.MILLARD, curves, velocity) + 0.1 + damping * velocity
            found = hill.fiber_velocity(hill.MILLARD, curves, vector, 1.0, 0.5, 0.1, 1.0, force)
            if damping == 0.0:
                assert np.isnan(found)
            else:
                worst = max(worst, abs(found - velocity))
    assert worst <= 1e-12, worst
