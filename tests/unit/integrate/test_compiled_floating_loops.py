"""The compiled loop right-hand side (integrate/compiled_rhs.py `CompiledReducedRHS`, staged entry) on the maps it
newly covers — a four-bar knee on a free-floating base, and a coordinate map built by hand with two loop
resolvers and an explicit joint function between them (fixed and floating base) — checked against physics
(`rhs_oracles`): runs are served by the compiled map, and at states of the run ẏ satisfies d'Alembert's principle
with Pinocchio's inverse dynamics (free base included) and the springs written out, with every loop closed; a
passive floating-base loop conserves energy; the trajectory output keeps the loops closed."""
from __future__ import annotations

import biobullet
import numpy as np
import pytest
from biobullet.integrate import compiled_rhs
from biobullet.integrate.engine import System
from multiloop_models import floating_knee, two_resolvers
from rhs_oracles import PinocchioTree, assert_dalembert, assert_trajectory_closed, loop_closure, spring_force, states_of


MODELS = {"floating knee": (lambda d: biobullet.load_model(floating_knee(d)), {"hip": 0.3, "knee_A": 0.4}),
          "two resolvers": (two_resolvers, {"hip_1": 0.3, "knee_A_1": 0.4, "hip_2": -0.2}),
          "two resolvers, floating": (lambda d: two_resolvers(d, floating=True),
                                      {"hip_1": 0.3, "knee_A_1": 0.4, "hip_2": -0.2})}


def _loop_resolvers(model) -> list:
    return [r for r in model.coordinate_map.resolvers if type(r).__name__ == "LoopResolver"]


def _law(model, tree, floating_knee_model: bool):
    """The springs written out (multiloop_models): floating knee — thigh → shank (k 300 N/m, L₀ 0.12 m,
    c 2 N s/m) and the hip's joint spring (5 N m/rad, rest 0.2, 0.1 N m s); two resolvers — thigh_1 → shank_1
    (the same spring) and hip_2's joint spring (5, 0.2, 0.1)."""
    from biobullet.forces.base import joint_indices
    suffix = "" if floating_knee_model else "_1"
    i, k = joint_indices(model, "hip" if floating_knee_model else "hip_2", None)

    def force(x, xd, t):
        tau = spring_force(tree, x, xd, ("thigh" + suffix, [-0.01, 0.0, -0.05]), ("shank" + suffix, [0.03, 0.0, -0.1]),
                           300.0, 0.12, 2.0)
        tau[k] += -5.0 * (x[i] - 0.2) - 0.1 * xd[k]
        return tau
    return force


@pytest.mark.parametrize("name", list(MODELS))
def test_runs_are_compiled_and_their_states_satisfy_the_dynamics(tmp_path, name):
    build, initial = MODELS[name]
    model = build(tmp_path)
    kw = {"rtol": 1e-9, "atol": 1e-12, "initial": initial, "progress": False, "t_eval": np.linspace(0, 0.3, 7)}
    run = biobullet.simulate(model, 0.3, **kw)
    served = run.meta["right_hand_side"]   # the compiled stepper's segments, or the compiled right-hand side
    assert served["path"] == "compiled loop map" and served["callback_calls"] <= 5, served
    assert run.meta["status"] == "finished"
    tree = PinocchioTree(model)
    assert max(loop_closure(tree, x) for x in run.positions) <= 1e-10
    system = System(model, None)
    law = _law(model, tree, name == "floating knee")
    for t, y in states_of(system, run, (2, 4, 6)):
        assert_dalembert(system, tree, t, y, system.rhs(t, y), law)


def test_passive_floating_loop_conserves_energy(tmp_path):
    """No damping, no actuation: T + V_gravity + V_elastic of the floating four-bar (base flying and tumbling,
    knee swinging) is constant; the compiled run keeps it to the integration tolerance — an independent check of
    the compiled free-base and loop algebra (a wrong term of the base's q̇, of the loop's G or γ drifts it)."""
    model = biobullet.load_model(floating_knee(tmp_path, damping=0.0))
    system = System(model, "reduced", {"shadow": True})
    assert type(system._compiled) is compiled_rhs.CompiledReducedRHS
    q0, v0 = model.initial_state({"hip": 0.3, "knee_A": 0.4})
    v0[:6] = [0.3, -0.2, 1.0, 2.0, -1.5, 3.0]   # a spinning, flying base
    trajectory = biobullet.simulate(model, 1.0, rtol=1e-10, atol=1e-12, initial=(q0, v0), progress=False)
    assert trajectory.meta["status"] == "finished"
    energy = trajectory.total_energy()
    swing = np.ptp(trajectory.energy["kinetic"])
    assert swing > 1.0   # energy moves between T and V (J): the check has something to conserve
    # rtol 1e-10 over 1 s: the drift is the integration error (measured 6e-10 J of E = 1.09 J, both paths)
    assert np.max(np.abs(energy - energy[0])) < 1e-8 * max(1.0, abs(energy[0])), np.ptp(energy)


def test_trajectory_output_keeps_the_loops_closed(tmp_path):
    """The 1,001-sample trajectory of the hand-built two-resolver map on a floating base (loop 1, the function,
    loop 2 stage by stage over all samples): both loops closed at every sample, in position and velocity."""
    model = two_resolvers(tmp_path, floating=True)
    trajectory = biobullet.simulate(model, 1.0, rtol=1e-8, atol=1e-11, initial=MODELS["two resolvers"][1],
                                    progress=False)
    assert len(trajectory.t) == 1001
    assert_trajectory_closed(PinocchioTree(model), trajectory)
