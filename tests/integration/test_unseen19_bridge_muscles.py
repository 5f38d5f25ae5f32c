"""Muscle models on the PyBullet bridge as a user drives them in their own loop (hunt16): a reset mid-run, the
initial activations given where they cannot act, a bad excitation among good ones.

Oracles: `muscles.equilibrium_tendon_forces` (the Hill model's static equilibrium, computed apart from the bridge's
stage) and a fresh bridge started at the same pose (what a reset promises: a new run), the engine's own refusal
of activations without excitations.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import biobullet
from biobullet.core.errors import ModelError
from muscle_models import ARM26

pytest.importorskip("pybullet")

EXCITATIONS = dict(BRA=0.6, BICshort=0.5, TRIlat=0.1)
A0 = 0.05   # every initial activation
DT = 5e-4


@pytest.fixture(scope="module")
def arm26():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # markers are reported, not imported
        return biobullet.load_model(str(ARM26))


def _tendon_forces(bridge) -> np.ndarray:
    """The bridge's recorded tendon forces at its last sample (N)."""
    return bridge.trajectory().muscles["tendon_force"][-1]


def test_reset_mid_run_restarts_the_muscles(arm26):
    """`bridge.reset()` 0.1 s into a run kept the muscles' activations and fiber lengths of that moment: the
    tendon forces at the reset pose were the old run's (BRA 10576 N against 63 N at equilibrium, the triceps 0
    against 21–41 N) and the arm was 0.46 rad off a fresh bridge 0.1 s later. Now the muscles restart: at the
    reset sample the tendon forces are the static equilibrium at q0 with the initial activations (1e-9 relative:
    the bridge's first sample, docs/muscles.md), and the next 0.1 s repeat a fresh bridge's step for step (same
    PyBullet, same arithmetic: 1e-12)."""
    from biobullet.bridge.bridge import Bridge
    n = 200
    q0 = np.zeros(arm26.nq)
    equilibrium = biobullet.muscles.equilibrium_tendon_forces(arm26, q0, A0)
    with Bridge(arm26, dt=DT, record=True) as fresh:
        fresh.set_excitations(A0, **EXCITATIONS)
        for _ in range(n):
            fresh.step()
        expected = fresh.state()[1:], fresh.muscles.state.copy()
    with Bridge(arm26, dt=DT, record=True) as bridge:
        muscles = bridge.set_excitations(A0, **EXCITATIONS)
        for _ in range(n):
            bridge.step()
        moved = np.abs(bridge.state()[1]).max()
        bridge.reset()
        forces = _tendon_forces(bridge)
        np.testing.assert_allclose(muscles.state[:6], A0, rtol=0, atol=0)
        np.testing.assert_allclose(forces, equilibrium, rtol=1e-9, atol=0)
        for _ in range(n):
            bridge.step()
        (x, xd), state = bridge.state()[1:], muscles.state
    assert moved > 0.1   # the run had left q0 (rad)
    np.testing.assert_allclose(x, expected[0][0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(xd, expected[0][1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(state, expected[1], rtol=0, atol=1e-12)


def test_activations_after_the_muscles_entered_are_named(arm26):
    """A later `set_excitations(activations, ...)` ignored its activations (the state kept 0.05 where 0.9 was
    asked): now one error names the argument. The excitations of that call are not half-set either."""
    from biobullet.bridge.bridge import Bridge
    with Bridge(arm26, dt=DT) as bridge:
        muscles = bridge.set_excitations(A0, **EXCITATIONS)
        before = muscles.state.copy()
        with pytest.raises(ModelError, match="activations") as error:
            bridge.set_excitations(0.9, BRA=0.2)
        assert error.value.argument == "activations"
        np.testing.assert_array_equal(muscles.state, before)
        excitation = muscles.run.rows.excitation.copy()
        with pytest.raises(ModelError, match="excitation of 'TRIlong' = 1.5"):
            bridge.set_excitations(BRA=0.9, TRIlong=1.5)
        np.testing.assert_array_equal(muscles.run.rows.excitation, excitation)   # BRA not set to 0.9
        # a loop restating the first call's initial activations each step changes no state and is not refused
        bridge.set_excitations(A0, BRA=0.7)
        np.testing.assert_array_equal(muscles.state, before)
        assert muscles.run.rows.excitation[muscles.names.index("BRA")] == 0.7


def test_a_bad_first_excitation_leaves_the_muscles_out(arm26):
    """The first `set_excitations` with a bad excitation made the muscles (at the default activations) before
    refusing it, so the corrected call's activations were then ignored: 0.05 kept where 0.3 was asked. Now the
    corrected call starts them, its tendon forces the static equilibrium at 0.3 (1e-9 relative)."""
    from biobullet.bridge.bridge import Bridge
    with Bridge(arm26, dt=DT, record=True) as bridge:
        with pytest.raises(ModelError, match="excitation of 'BRA' = nan"):
            bridge.set_excitations(0.3, BRA=float("nan"))
        assert bridge.muscles is None
        muscles = bridge.set_excitations(0.3, BRA=0.5)
        np.testing.assert_array_equal(muscles.state[:6], 0.3)
        np.testing.assert_allclose(_tendon_forces(bridge),
                                   biobullet.muscles.equilibrium_tendon_forces(arm26, np.zeros(arm26.nq), 0.3),
                                   rtol=1e-9, atol=0)


def test_simulate_bridge_refuses_activations_without_excitations(arm26):
    """`simulate_bridge(activations=0.3)` without excitations ran the skeleton alone and dropped the activations;
    the reference engine refuses the same call: now the bridge does too, with the engine's words."""
    from biobullet.bridge.simulation import simulate_bridge
    with pytest.raises(ModelError) as engine:
        biobullet.simulate(arm26, 0.01, activations=0.3, progress=False)
    with pytest.raises(ModelError) as bridge:
        simulate_bridge(arm26, 0.01, DT, activations=0.3, progress=False)
    assert str(bridge.value) == str(engine.value) and bridge.value.argument == "activations"


@pytest.mark.parametrize("activations, words", [(2.0, "activation of 'every muscle' = 2.0"),
                                                ({"BRAX": 0.3}, "unknown muscle 'BRAX'"),
                                                ({"BRA": float("nan")}, "activation of 'BRA' = nan")])
def test_bad_activations_name_the_activations(arm26, activations, words):
    """A bad initial activation (out of [0, 1], NaN, an unknown muscle) was refused as argument 'excitations',
    "excitation of ..." — on the bridge and in the reference engine alike: now both name the activations."""
    from biobullet.bridge.bridge import Bridge
    with pytest.raises(ModelError, match=words) as engine:
        biobullet.simulate(arm26, 0.01, excitations=0.5, activations=activations, progress=False)
    with Bridge(arm26, dt=DT) as bridge:
        with pytest.raises(ModelError, match=words) as ours:
            bridge.set_excitations(activations, BRA=0.5)
        assert bridge.muscles is None
    assert engine.value.argument == ours.value.argument == "activations"


@pytest.mark.parametrize("excitations", [{"BRA": lambda t: 0.5}, lambda t, q, v: {"BRA": 0.5}])
def test_simulate_bridge_names_excitations_that_vary(arm26, excitations):
    """`simulate_bridge` steps constant excitations; a function of t or a controller (which the reference engine
    takes) was refused as "excitation of 'BRA': <function …> is not a number": now the error says what the bridge
    takes and how to vary them (set_excitations in one's own loop)."""
    from biobullet.bridge.simulation import simulate_bridge
    with pytest.raises(ModelError, match="constant excitations, not functions or a controller") as error:
        simulate_bridge(arm26, 0.01, DT, excitations=excitations, progress=False)
    assert error.value.argument == "excitations" and "set_excitations" in str(error.value)


def test_outputs_before_the_first_step_are_the_muscles_at_that_state(arm26):
    """`bridge.muscles.outputs()` and `.tensions` right after `set_excitations` were zeros (every path 0 m long,
    every tendon 0 N) until a step ran, and after a reset they were the old run's last step. Now they are the
    stage at the state the muscles entered or restarted: lengths `muscles.lengths` (1e-12 m: the same path kernel
    on another call path) and tendon forces the static equilibrium (1e-9 relative, as the first sample)."""
    from biobullet.bridge.bridge import Bridge
    q = np.array([-0.3, 0.9])
    with Bridge(arm26, dt=DT, initial=(q, np.zeros(2))) as bridge:
        muscles = bridge.set_excitations(A0, **EXCITATIONS)
        for pose in (q, np.zeros(2)):
            outputs = muscles.outputs()
            np.testing.assert_allclose(outputs["length"], biobullet.muscles.lengths(arm26, pose), rtol=0, atol=1e-12)
            equilibrium = biobullet.muscles.equilibrium_tendon_forces(arm26, pose, A0)
            np.testing.assert_allclose(outputs["tendon_force"], equilibrium, rtol=1e-9, atol=0)
            np.testing.assert_allclose(muscles.tensions, equilibrium, rtol=1e-9, atol=0)
            for _ in range(100):
                bridge.step()
            bridge.reset(np.zeros(2))
