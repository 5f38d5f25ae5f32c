"""The bridge's own joint motors: PyBullet's POSITION/VELOCITY_CONTROL semantics, acting inside the constrained solve.

A PyBullet motor is a velocity constraint that PyBullet solves inside `stepSimulation`, after the bridge computed its
constraint torques, so it pulls a coupled joint off its joint function (bridge/outside.py reads that back). A motor
of the bridge (`Bridge.set_motor`) is one more row of the bridge's constrained solve, with PyBullet's law: the row
asks the joint's velocity at the step's end to be

    v_{n+1} = v + kp (q* − q)/dt + kd (v* − v)      (kp = position_gain, kd = velocity_gain, PyBullet's meaning)

i.e. ẍ_j = (kp (q* − q)/dt + kd (v* − v))/dt, with the motor's torque (the row's multiplier) limited to ±max_force:
a motor whose multiplier exceeds its limit is replaced by the limit torque and the rows are solved again (at most one
pass per motor: an active-set solve of the box-limited rows). The joint functions and loops are rows of the same
solve, so they hold whatever the motors do; a motor on a dependent joint drives it through its inputs.
"""
from __future__ import annotations

import math

import numpy as np

from biobullet.core.arguments import number_argument
from biobullet.core.errors import ModelError, SolverError

#: PyBullet's default gains of setJointMotorControl2 (positionGain, velocityGain)
DEFAULT_POSITION_GAIN, DEFAULT_VELOCITY_GAIN = 0.1, 1.0


def motor_settings(bridge, name: str, position, velocity, position_gain, velocity_gain, max_force) -> dict:
    """The checked settings of one motor on joint or coordinate `name` (ModelError naming the argument)."""
    model = bridge.model
    names = list(model.joint_names)
    if name not in names:
        raise ModelError(f"Bridge.set_motor: {name!r} is not a 1-DOF joint of the model", file=model.file,
                         argument="name", expected="one of " + ", ".join(names))
    index = model.base_nv + names.index(name)
    settings = {"index": index, "q_index": model.base_nq + names.index(name)}
    settings["position"] = None if position is None else number_argument(
        position, "position", entry=name, expected="a finite target (rad or m)")
    settings["velocity"] = number_argument(velocity, "velocity", entry=name,
                                           expected="a finite target rate (rad/s or m/s)")
    kp = (DEFAULT_POSITION_GAIN if position is not None else 0.0) if position_gain is None else position_gain
    settings["kp"] = number_argument(kp, "position_gain", entry=name, at_least=0.0, at_most=1.0,
                                     expected="0 ≤ position_gain ≤ 1 (PyBullet's meaning: the share of the position "
                                              "error removed per step)")
    kd = DEFAULT_VELOCITY_GAIN if velocity_gain is None else velocity_gain
    settings["kd"] = number_argument(kd, "velocity_gain", entry=name, at_least=0.0, at_most=1.0,
                                     expected="0 ≤ velocity_gain ≤ 1 (the share of the rate error removed per step)")
    force = float("inf") if max_force is None else max_force
    if not (isinstance(force, (int, float, np.floating, np.integer)) and not isinstance(force, bool)
            and force >= 0 and not math.isnan(force)):
        raise ModelError(f"argument 'max_force' is {max_force!r}", argument="max_force",
                         expected="a number ≥ 0 (N·m or N; inf: unlimited)")
    settings["max_force"] = float(force)
    return settings


def motor_torque(bridge, x: np.ndarray, xd: np.ndarray, torque: np.ndarray, t: float) -> tuple:
    """(τ + Φ_xᵀλ + Σ motor torques, ẍ, λ of the bridge's rows, {joint: motor torque, N·m or N}, M, Φ_x) for this
    step: the bridge's rows and its motors' rows in one solve (`constraints.solve.constrained_acceleration`, M and h
    as the bridge's general path). The bridge keeps ẍ and λ and refines the rows' end point (`Bridge._motor_stage`)."""
    from biobullet.bridge.bridge import constraint_terms
    from biobullet.constraints.solve import constrained_acceleration
    model, dt, corrector = bridge.model, bridge.dt, bridge.corrector
    n, m = model.n_tangent, bridge.constraints.n
    mass, bias = bridge.tree_mass_and_bias(x, xd, source="solve")
    if m:
        phi, jac, phi_t, bias_c = constraint_terms(bridge.constraints, x, xd, t)
        target_c = -corrector.kb * bias_c - corrector.kd * (jac @ xd + phi_t) - corrector.kp * phi
    else:
        jac, target_c = np.zeros((0, n)), np.zeros(0)
    names = list(bridge.motors)
    total = np.array(torque, dtype=float)
    free = list(range(len(names)))
    applied = dict.fromkeys(names, 0.0)
    while True:
        rows = np.zeros((len(free), n))
        target = np.zeros(len(free))
        for r, k in enumerate(free):
            s = bridge.motors[names[k]]
            i, q = s["index"], x[s["q_index"]]
            rows[r, i] = 1.0
            error = (0.0 if s["position"] is None else s["kp"] * (s["position"] - q) / dt) \
                + s["kd"] * (s["velocity"] - xd[i])
            target[r] = error / dt
        all_rows = np.vstack([jac, rows])
        try:
            xdd, lam = constrained_acceleration(mass, bias, total, all_rows, np.concatenate([target_c, target]))
        except SolverError:
            raise ModelError(f"Bridge motors on {', '.join(names[k] for k in free)} over-determine the model with "
                             "its joint functions and loops (a motor on a dependent joint and on all of its inputs)",
                             file=model.file, argument="set_motor",
                             expected="motors on independent joints, or on a dependent joint with a free input")
        over = [(r, k) for r, k in enumerate(free)
                if abs(lam[m + r]) > bridge.motors[names[k]]["max_force"]]
        if not over:
            break
        for r, k in over:   # the limit torque replaces the row
            limit = math.copysign(bridge.motors[names[k]]["max_force"], lam[m + r])
            total[bridge.motors[names[k]]["index"]] += limit
            applied[names[k]] = limit
        free = [k for k in free if k not in {k for _, k in over}]
    for r, k in enumerate(free):
        applied[names[k]] = float(lam[m + r])
    return total + all_rows.T @ lam, xdd, lam[:m], applied, mass, jac


__all__ = ["motor_settings", "motor_torque"]
