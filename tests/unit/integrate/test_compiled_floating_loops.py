"""The compiled loop right-hand side (integrate/compiled_rhs.py `CompiledReducedRHS`, staged entry) on the maps it
newly covers — a four-bar knee on a free-floating base, and a coordinate map built by hand with two loop
resolvers and an explicit joint function between them (fixed and floating base) — against the generic path
(`System._checked_rhs`: `CoordinateMap.evaluate` resolver by resolver, with the generic loop Newton of
constraints/implicit.py on a floating base, force elements, tree dynamics, projection as separate calls), and a
passive floating-base loop run against energy conservation (an independent check of both paths)."""
from __future__ import annotations

import biobullet
import numpy as np
import pytest
from biobullet.core import jit
from biobullet.integrate import compiled_rhs
from biobullet.integrate.engine import System
from multiloop_models import floating_knee, two_resolvers

compiled_only = pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: the compiled path is off")

MODELS = {"floating knee": (lambda d: biobullet.load_model(floating_knee(d)), {"hip": 0.3, "knee_A": 0.4}),
          "two resolvers": (two_resolvers, {"hip_1": 0.3, "knee_A_1": 0.4, "hip_2": -0.2}),
          "two resolvers, floating": (lambda d: two_resolvers(d, floating=True),
                                      {"hip_1": 0.3, "knee_A_1": 0.4, "hip_2": -0.2})}


def _loop_resolvers(model) -> list:
    return [r for r in model.coordinate_map.resolvers if type(r).__name__ == "LoopResolver"]


@compiled_only
@pytest.mark.parametrize("name", list(MODELS))
def test_whole_runs_agree_with_the_generic_path(tmp_path, name, monkeypatch):
    build, initial = MODELS[name]
    model = build(tmp_path)
    kw = {"rtol": 1e-9, "atol": 1e-12, "initial": initial, "progress": False, "t_eval": np.linspace(0, 0.3, 31)}
    fast = biobullet.simulate(model, 0.3, **kw)
    slow = biobullet.simulate(model, 0.3, compiled=False, **kw)
    served = fast.meta["right_hand_side"]   # the compiled stepper's segments, or the compiled right-hand side
    assert served["path"] == "compiled loop map" and served["generic_calls"] <= 5, served
    assert fast.meta["status"] == slow.meta["status"] == "finished"
    # the same equations to round-off, integrated at rtol 1e-9: the runs differ by the integrator's error growth
    np.testing.assert_allclose(fast.positions, slow.positions, rtol=0, atol=1e-7)
    np.testing.assert_allclose(fast.velocities, slow.velocities, rtol=0, atol=1e-6)


def test_passive_floating_loop_conserves_energy(tmp_path):
    """No damping, no actuation: T + V_gravity + V_elastic of the floating four-bar (base flying and tumbling,
    knee swinging) is constant; the compiled run keeps it to the integration tolerance — an independent check of
    the compiled free-base and loop algebra (a wrong term of the base's q̇, of the loop's G or γ drifts it); with
    numba disabled, of the generic path."""
    model = biobullet.load_model(floating_knee(tmp_path, damping=0.0))
    system = System(model, "reduced", {"shadow": True})
    assert (type(system._compiled) is compiled_rhs.CompiledReducedRHS) == jit.ENABLED
    q0, v0 = model.initial_state({"hip": 0.3, "knee_A": 0.4})
    v0[:6] = [0.3, -0.2, 1.0, 2.0, -1.5, 3.0]   # a spinning, flying base
    trajectory = biobullet.simulate(model, 1.0, rtol=1e-10, atol=1e-12, initial=(q0, v0), progress=False)
    assert trajectory.meta["status"] == "finished"
    energy = trajectory.total_energy()
    swing = np.ptp(trajectory.energy["kinetic"])
    assert swing > 1.0   # energy moves between T and V (J): the check has something to conserve
    # rtol 1e-10 over 1 s: the drift is the integration error (measured 6e-10 J of E = 1.09 J, both paths)
    assert np.max(np.abs(energy - energy[0])) < 1e-8 * max(1.0, abs(energy[0])), np.ptp(energy)


@compiled_only
def test_tree_states_equal_the_per_sample_path(tmp_path, monkeypatch):
    """The 1,001-sample trajectory of the hand-built two-resolver map on a floating base: loop 1, the function, loop
    2 stage by stage over all samples, equal to the per-sample generic path to round-off."""
    from trajectory_batch import assert_same_states, batch_and_per_sample
    model = two_resolvers(tmp_path, floating=True)
    trajectory = biobullet.simulate(model, 1.0, rtol=1e-8, atol=1e-11, initial=MODELS["two resolvers"][1],
                                    progress=False)
    assert len(trajectory.t) == 1001
    fast, slow, generic = batch_and_per_sample(model, trajectory, "joints", monkeypatch)
    assert len(generic) <= 1, f"{len(generic)} samples on the generic path"
    assert_same_states(fast, slow)
