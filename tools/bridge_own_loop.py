"""The bridge in a PyBullet user's own loop: what each everyday PyBullet habit does to a joint function, measured.

Scene (as tests/integration/test_bridge_own_loop.py): KUKA iiwa from pybullet_data, joint 3 = 0.5 sin(joint 2) +
0.2 joint 4² written into a copy of its URDF, a gentle PD on four coordinates through `bridge.apply(generalized=)`,
the user's `stepSimulation()`. For each habit, 1 s at 240 Hz and at 1 kHz: the largest residual
|q3 − f(q2, q4)| read from PyBullet after a step, after the bridge's next apply() (its projection), whether a
CouplingWarning was issued, and the change of the mechanical energy (kinetic ½ẋᵀMẋ from calculateMassMatrix +
potential Σ m g z of the link COMs; ≈ 100 J in this scene) that the projections made, summed over the run (resets
excluded: they set the energy themselves).

    PYTHONPATH=plugin python tools/bridge_own_loop.py [--out out/bridge_own_loop.md]

Prints a markdown table (docs/bridge.md's) and writes it atomically to --out.
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))   # tests/bridge_user_loop.py


def energy(p, body, client) -> float:
    states = p.getJointStates(body, range(7), physicsClientId=client)
    q, v = [s[0] for s in states], np.array([s[1] for s in states])
    mass = np.asarray(p.calculateMassMatrix(body, q, physicsClientId=client))
    potential = sum(p.getDynamicsInfo(body, k, physicsClientId=client)[0] * 9.81
                    * p.getLinkState(body, k, computeForwardKinematics=1, physicsClientId=client)[0][2]
                    for k in range(7))
    return 0.5 * float(v @ mass @ v) + potential


def run(habit: str, dt: float, urdf: Path) -> tuple[float, float, bool, float]:
    import pybullet as p
    from biobullet.bridge import Bridge
    from biobullet.bridge.outside import CouplingWarning
    from bridge_user_loop import pybullet_residual
    client = p.connect(p.DIRECT)
    p.setGravity(0, 0, -9.81, physicsClientId=client)
    p.setTimeStep(dt, physicsClientId=client)
    if habit == "sub-steps (numSubSteps=4)":
        p.setPhysicsEngineParameter(numSubSteps=4, physicsClientId=client)
    bridge = Bridge(urdf, client=client)
    body = bridge.body
    q0 = bridge.model.initial_state()[0]
    gains = np.array([1.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    if habit == "PyBullet POSITION_CONTROL on inputs j2, j4":
        p.setJointMotorControlArray(body, [1, 3], p.POSITION_CONTROL, targetPositions=[0.8, -0.2], forces=[100, 100],
                                    physicsClientId=client)
    elif habit == "PyBullet VELOCITY_CONTROL on input j2":
        p.setJointMotorControl2(body, 1, p.VELOCITY_CONTROL, targetVelocity=0.5, force=100, physicsClientId=client)
    elif habit == "PyBullet POSITION_CONTROL on dependent j3":
        p.setJointMotorControl2(body, 2, p.POSITION_CONTROL, targetPosition=0.0, force=50, physicsClientId=client)
    elif habit == "changeDynamics jointDamping 0.5":
        for k in range(4):
            p.changeDynamics(body, k, jointDamping=0.5, physicsClientId=client)
    elif habit == "rigid contact: box in the arm's way":
        shape = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.2, 0.2, 0.2], physicsClientId=client)
        p.createMultiBody(0.0, shape, basePosition=[0.45, 0.0, 0.55], physicsClientId=client)
        gains[:] = 0.0
    elif habit == "createConstraint: tip pinned":
        tip = p.getLinkState(body, 6, physicsClientId=client)[0]
        p.createConstraint(body, 6, -1, -1, p.JOINT_POINT2POINT, [0, 0, 0], [0, 0, 0],
                           [tip[0], tip[1], tip[2] + 0.05], physicsClientId=client)
    elif habit == "bridge.set_motor(j2, position) + brake on j3":
        bridge.set_motor("lbr_iiwa_joint_2", position=0.9, max_force=80.0)
        bridge.set_motor("lbr_iiwa_joint_3", velocity=0.0, velocity_gain=0.2, max_force=5.0)
    elif habit == "free fall (no PD)":
        gains[:] = 0.0
    after_step = after_apply = energy_change = 0.0
    steps = int(round(1.0 / dt))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(steps):
            if habit == "applyExternalForce every step (link frame)":
                p.applyExternalForce(body, 6, [0.0, 15.0, 5.0], [0.0, 0.0, 0.0], p.LINK_FRAME, physicsClientId=client)
            if habit == "resetJointState input j2 every 60 steps" and k and k % 60 == 0:
                p.resetJointState(body, 1, 0.4 + 0.1 * math.sin(k), physicsClientId=client)
            if habit == "resetJointState dependent j3 every 60 steps" and k and k % 60 == 0:
                p.resetJointState(body, 2, 0.9, physicsClientId=client)
            if habit == "setTimeStep(dt/2) + setGravity halfway" and k == steps // 2:
                p.setTimeStep(dt / 2, physicsClientId=client)
                p.setGravity(0, 0, -5.0, physicsClientId=client)
            before = bridge.watch.projections
            e0 = energy(p, body, client)
            _, q, v = bridge.generalized_state()
            bridge.apply(generalized=gains * (20.0 * (q0 - q) - 2.0 * v))
            if bridge.watch.projections > before and not habit.startswith("resetJointState"):
                energy_change += energy(p, body, client) - e0
            after_apply = max(after_apply, pybullet_residual(p, body, client))
            if habit == "TORQUE_CONTROL by the user after apply()":
                p.setJointMotorControlArray(body, [1, 3], p.TORQUE_CONTROL, forces=[6.0, -4.0], physicsClientId=client)
            p.stepSimulation(physicsClientId=client)
            after_step = max(after_step, pybullet_residual(p, body, client))
        said = any(issubclass(w.category, CouplingWarning) for w in caught)
    bridge.close()
    p.disconnect(client)
    return after_step, after_apply, said, energy_change


HABITS = ["nothing else (PD through apply)", "free fall (no PD)", "PyBullet POSITION_CONTROL on inputs j2, j4",
          "PyBullet VELOCITY_CONTROL on input j2", "PyBullet POSITION_CONTROL on dependent j3",
          "TORQUE_CONTROL by the user after apply()", "applyExternalForce every step (link frame)",
          "changeDynamics jointDamping 0.5", "rigid contact: box in the arm's way", "createConstraint: tip pinned",
          "setTimeStep(dt/2) + setGravity halfway", "sub-steps (numSubSteps=4)",
          "resetJointState input j2 every 60 steps", "resetJointState dependent j3 every 60 steps",
          "bridge.set_motor(j2, position) + brake on j3"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    from bridge_user_loop import write_coupled_kuka
    folder = Path(tempfile.mkdtemp())
    urdf = write_coupled_kuka(folder)
    lines = ["| habit | 240 Hz: after step / after apply (rad) | 1 kHz: after step / after apply (rad) | said | "
             "ΔE of the projections, 1 s at 1 kHz (J) |", "|---|---|---|---|---|"]
    for habit in HABITS:
        cells, said_any, energy_1k = [], False, 0.0
        for dt in (1 / 240, 1e-3):
            after_step, after_apply, said, d_energy = run(habit, dt, urdf)
            cells.append(f"{after_step:.1e} / {after_apply:.1e}")
            said_any |= said
            energy_1k = d_energy
            print(habit, dt, after_step, after_apply, said, d_energy, file=sys.stderr)
        lines.append(f"| {habit} | {cells[0]} | {cells[1]} | {'warned' if said_any else '—'} | {energy_1k:+.1e} |")
    table = "\n".join(lines)
    print(table)
    if args.out is not None:
        from biobullet.core.atomic import write_text
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_text(args.out, table + "\n")


if __name__ == "__main__":
    main()
