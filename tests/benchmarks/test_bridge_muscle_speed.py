"""Time per step of `Bridge.step()` with muscles against the minimal user loop, in one run (thread CPU time, rounds
interleaved, the best round kept). Models: the floating leg of tests/unit/test_muscle_bridge.py (3 muscles, one
cylinder wrap) and arm26 (6 muscles: cylinders, an ellipsoid, a three-wrap path).

(a) minimal   getJointStates, calculateMassMatrix, calculateInverseDynamics, setJointMotorControlArray,
              stepSimulation — the PyBullet calls a user's own computed-torque loop makes (fixed base only: PyBullet's
              calls do not take a floating base);
(b) bridge    `Bridge.step()` with every muscle excited: the muscle stage (paths, exact gradients, Hill forces), the
              muscle state's sub-steps (the Hill part alone), the constraint stage, the joint torques and one
              external force and torque per loaded body.

The breakdown times the muscle stage (`evaluate_stage`) and the sending of the wrenches (`BridgeMuscles.send`: one
forward kinematics call, then two calls per loaded body) alone at the same state. Prints a table, writes
out/benchmarks/bridge_muscle_speed.json; no thresholds (speed on a shared machine is a ratio, not a pass mark)."""
from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("pybullet")

import biobullet  # noqa: E402
from biobullet.bridge.bridge import Bridge  # noqa: E402
from biobullet.muscles.dynamics import evaluate_stage  # noqa: E402
from muscle_models import ARM26, LEG_URDF, leg_pose, load_quietly  # noqa: E402
from records import keep_result  # noqa: E402

STEPS, ROUNDS = 40, 15


def _best_round(step, steps: int = STEPS) -> float:
    start = time.thread_time()
    for _ in range(steps):
        step()
    return (time.thread_time() - start) / steps


def _minimal_loop(bridge):
    p, c, b = bridge.pybullet, bridge.client, bridge.body
    joints = list(range(p.getNumJoints(b, physicsClientId=c)))
    movable = [j for j in joints if p.getJointInfo(b, j, physicsClientId=c)[3] > -1]

    def step():
        states = p.getJointStates(b, movable, physicsClientId=c)
        x = [s[0] for s in states]
        v = [s[1] for s in states]
        p.calculateMassMatrix(b, x, physicsClientId=c)
        tau = p.calculateInverseDynamics(b, x, v, [0.0] * len(x), physicsClientId=c)
        p.setJointMotorControlArray(b, movable, p.TORQUE_CONTROL, forces=tau, physicsClientId=c)
        p.stepSimulation(physicsClientId=c)
    return step


@pytest.mark.parametrize("name", ["leg", "arm26"])
def test_bridge_step_with_muscles_against_the_minimal_loop(name, tmp_path, capsys):
    if name == "leg":
        path = tmp_path / "leg.urdf"
        path.write_text(LEG_URDF)
        model = biobullet.load_model(str(path), floating_base=True)
        initial = (leg_pose()[0], np.zeros(model.nv))
    else:
        model = load_quietly(str(ARM26))
        initial = (np.zeros(2), np.zeros(2))
    rows = {"bridge": [], "minimal": [], "stage": [], "send": []}
    with Bridge(model, dt=5e-4, initial=initial) as bridge, Bridge(model, dt=5e-4, initial=initial) as plain:
        muscles = bridge.set_excitations(0.3, **dict.fromkeys(biobullet.muscles.names(model), 0.3))
        minimal = None if model.floating_base else _minimal_loop(plain)
        for _ in range(ROUNDS):   # interleaved: a loaded machine slows every variant alike
            bridge.reset(*initial)
            rows["bridge"].append(_best_round(bridge.step))
            if minimal is not None:
                plain.reset(*initial)
                rows["minimal"].append(_best_round(minimal))
            _, x, xd = bridge.state()
            tau = np.zeros(model.n_tangent)
            rows["stage"].append(_best_round(lambda: evaluate_stage(model, muscles.run.rows, x, xd, muscles.state,
                                                                    tau)))
            rows["send"].append(_best_round(muscles.send))
    best = {key: min(values) for key, values in rows.items() if values}
    with capsys.disabled():
        print(f"\n{name}: {len(muscles.names)} muscles, {len(muscles.bodies)} loaded bodies (thread CPU, best of "
              f"{ROUNDS} rounds of {STEPS} steps)")
        for key, value in best.items():
            ratio = f"  ({value / best['minimal']:.2f}× minimal)" if "minimal" in best else ""
            print(f"  {key:8s} {value * 1e6:10.1f} µs{ratio}")
    keep_result("bridge_muscle_speed.json", name, {key: value * 1e6 for key, value in best.items()})
