"""Time per step on the shoulder model, in one run: bare PyBullet, the minimal user loop, and `Bridge.step()`.

(a) bare       setJointMotorControlArray(TORQUE_CONTROL, τ = 0) + stepSimulation (free fall);
(b) minimal    what a user writes for computed-torque control without biobullet: getJointStates,
               calculateMassMatrix, calculateInverseDynamics (ẍ = 0), setJointMotorControlArray(τ = h),
               stepSimulation — the PyBullet calls the bridge cannot avoid;
(c) bridge     `Bridge.step()`: (b) plus the joint-function rows Φ, Φ_x, bias, one LU of the KKT matrix, two
               solves (velocity projection, constraint forces), the projection write-back
               (resetJointStatesMultiDof) and a second calculateInverseDynamics at the projected velocity.

Each variant runs on its own DIRECT connection (same URDF, prepared by a Bridge: motors and damping off),
restarted from the model's initial state in every round; rounds are interleaved and the best round is kept,
so a loaded machine slows all three alike. Reported as ratios (target from the bridge issue: bridge ≤ 1.25×
minimal). The breakdown times each extra part of the bridge step alone (same state) to show where the
difference goes. Prints a table and writes out/benchmarks/bridge_speed.json. No wall-clock thresholds.
"""
from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pybullet")

import biobullet  # noqa: E402
from biobullet.bridge import Bridge  # noqa: E402
from biobullet.bridge.bridge import _factor_kkt, _kkt_matrix, _solve_kkt, _terms  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHOULDER = ROOT / "urdf" / "shoulder_rhythm.urdf"
STEPS = 400      # per round (0.4 s of motion at dt = 1 ms)
ROUNDS = 7


def _bare(bridge: Bridge, steps: int) -> float:
    p, body, c = bridge._p, bridge.body, bridge.client
    joints = bridge.map.joint_indices.tolist()
    zeros = [0.0] * len(joints)
    start = time.perf_counter()
    for _ in range(steps):
        p.setJointMotorControlArray(body, joints, p.TORQUE_CONTROL, forces=zeros, physicsClientId=c)
        p.stepSimulation(physicsClientId=c)
    return (time.perf_counter() - start) / steps


def _minimal(bridge: Bridge, steps: int) -> float:
    p, body, c = bridge._p, bridge.body, bridge.client
    joints = bridge.map.joint_indices.tolist()
    zeros = [0.0] * len(joints)
    start = time.perf_counter()
    for _ in range(steps):
        states = p.getJointStates(body, joints, physicsClientId=c)
        q, v = [s[0] for s in states], [s[1] for s in states]
        mass = np.asarray(p.calculateMassMatrix(body, q, physicsClientId=c))
        bias = np.asarray(p.calculateInverseDynamics(body, q, v, zeros, physicsClientId=c))
        tau = bias + mass @ np.zeros(len(q))   # computed torque with q̈_des = 0: gravity/Coriolis compensation
        p.setJointMotorControlArray(body, joints, p.TORQUE_CONTROL, forces=tau.tolist(), physicsClientId=c)
        p.stepSimulation(physicsClientId=c)
    return (time.perf_counter() - start) / steps


def _bridge(bridge: Bridge, steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        bridge.step()
    return (time.perf_counter() - start) / steps


def _best(function, number: int = 300, repeat: int = 5) -> float:
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            function()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def _breakdown(bridge: Bridge) -> dict[str, float]:
    """Seconds per call of each part of apply() beyond the minimal loop, at the bridge's current state."""
    constraints, model = bridge.constraints, bridge.model
    t, x, xd = bridge.state()
    phi, jac, phi_t, bias_c = _terms(constraints, x, xd, t)
    mass, bias = bridge.tree_mass_and_bias(x, xd)
    kkt = _kkt_matrix(mass, jac)
    factor = _factor_kkt(kkt)
    rhs = np.concatenate([mass @ xd, -phi_t])
    forces = bridge._forces
    return {
        "constraint rows (Φ, Φ_x, Φ_t, bias)": _best(lambda: _terms(constraints, x, xd, t)),
        "bias rows again after projection": _best(lambda: constraints.velocity_bias(x, xd, t)),
        "KKT matrix + LU": _best(lambda: _factor_kkt(_kkt_matrix(mass, jac))),
        "2 KKT solves": _best(lambda: (_solve_kkt(kkt, rhs, model.file, factor),
                                       _solve_kkt(kkt, rhs, model.file, factor))),
        "projection write-back (resetJointStatesMultiDof)": _best(lambda: bridge._write_state(x, xd)),
        "2nd calculateInverseDynamics (projected ẋ)": _best(lambda: bridge._tree_bias(x, xd)),
        "force elements hook (applied_forces)": (_best(lambda: forces(model, x, xd, t))
                                                 if forces is not None else 0.0),
        "mass matrix reorder + state read (numpy)": _best(lambda: (bridge._read_state(),
                                                                   np.asarray(mass)[bridge._dof_mesh])),
    }


def test_bridge_speed(capsys):
    model = biobullet.load_model(SHOULDER)
    q0, v0 = model.initial_state()
    runners = {"bare": _bare, "minimal": _minimal, "bridge": _bridge}
    bridges = {name: Bridge(model, dt=1e-3) for name in runners}
    try:
        per_step = {name: [] for name in runners}
        for _ in range(ROUNDS):
            for name, run in runners.items():
                bridges[name].reset(q0, v0)
                per_step[name].append(run(bridges[name], STEPS))
        # the bridge kept its constraints while being timed (the speed is not bought with accuracy)
        worst = max(abs(r) for r in bridges["bridge"].constraint_residuals().values())
        parts = _breakdown(bridges["bridge"])
    finally:
        for bridge in bridges.values():
            bridge.close()
    best = {name: float(min(times)) for name, times in per_step.items()}
    median = {name: float(np.median(times)) for name, times in per_step.items()}
    ratio_minimal = best["bridge"] / best["minimal"]
    extra = best["bridge"] - best["minimal"]
    labels = {"bare": "(a) bare PyBullet step (τ = 0)",
              "minimal": "(b) minimal loop (state, M, h, τ, step)",
              "bridge": "(c) Bridge.step()"}
    with capsys.disabled():
        print(f"\nshoulder_rhythm (n = {model.n_tangent} joints, {bridges['bridge'].constraints.n} joint functions),"
              f" dt = 1 ms, best of {ROUNDS} interleaved rounds × {STEPS} steps")
        print(f"  {'':44}{'µs/step':>10}{'median':>10}{'× bare':>9}{'× minimal':>11}")
        for name in runners:
            print(f"  {labels[name]:<44}{best[name] * 1e6:10.1f}{median[name] * 1e6:10.1f}"
                  f"{best[name] / best['bare']:9.2f}{best[name] / best['minimal']:11.2f}")
        print(f"  bridge − minimal = {extra * 1e6:.1f} µs/step (target ratio ≤ 1.25: "
              f"{'met' if ratio_minimal <= 1.25 else 'NOT met'}); parts timed alone:")
        for label, seconds in parts.items():
            print(f"    {label:<52}{seconds * 1e6:8.1f} µs")
        print(f"    {'sum of parts':<52}{sum(parts.values()) * 1e6:8.1f} µs")
    out = ROOT / "out" / "benchmarks"
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "model": "shoulder_rhythm.urdf", "dt": 1e-3, "steps_per_round": STEPS, "rounds": ROUNDS,
        "us_per_step_best": {k: v * 1e6 for k, v in best.items()},
        "us_per_step_median": {k: v * 1e6 for k, v in median.items()},
        "ratio_bridge_to_bare": best["bridge"] / best["bare"],
        "ratio_bridge_to_minimal": ratio_minimal,
        "ratio_minimal_to_bare": best["minimal"] / best["bare"],
        "target_ratio_bridge_to_minimal": 1.25,
        "bridge_extra_us_breakdown": {k: v * 1e6 for k, v in parts.items()},
        "max_joint_function_residual_after_benchmark": worst,
        "python": platform.python_version(), "machine": platform.machine(),
    }
    tmp = out / ".bridge_speed.json.tmp"
    tmp.write_text(json.dumps(payload, indent=2) + "\n")
    os.replace(tmp, out / "bridge_speed.json")
    assert all(np.isfinite(v) and v > 0 for v in best.values())
    assert worst <= 1e-6
