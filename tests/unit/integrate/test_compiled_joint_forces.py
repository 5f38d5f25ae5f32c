"""Joint stops (smooth and switched) and joint spring-dampers on the compiled right-hand sides
(`forces.compiled._joint_forces_py`, used by `CompiledReducedRHS` and the loop model's `CompiledReducedRHS`).

References: the stops' documented law written out in the test (`_law`: per limit the joint is beyond, penetration
p, τ = ±(k pᵉ + c s(p) ṗ), s the C¹ smoothstep 3u² − 2u³ of u = p / smoothing, 1 for a switched stop) with
d'Alembert's principle and Pinocchio's inverse dynamics (`rhs_oracles`) at states in the penetrating, the smoothing
and the free regions of each stop — and ẏ's dissipated power equal to the law's —, and the energy balance
T + V − W + D of whole runs (V from the elements' own `potential_energy`, D integrated from the kernel's dissipated
power), which closes only if the compiled law is the gradient of the stop's potential plus its damping. Switched
stops keep their restart events, located where the joint reaches its limit.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.forces.base import joint_indices
from biobullet.integrate.engine import System
from rhs_oracles import PinocchioTree, assert_dalembert, states_of

ROOT = Path(__file__).resolve().parents[3]


#: a smooth two-sided stop with a large smoothing band (the gate's C¹ ramp is exercised), a switched one-sided
#: stop with exponent 1.5 and a joint spring-damper
STOPS = ('<joint_stop joint="{a}" lower="-0.15" upper="0.25" stiffness="80" damping="0.6" exponent="2.5" '
         'smoothing="0.05"/>'
         '<joint_stop joint="{b}" upper="0.1" stiffness="120" damping="0.9" type="switched" exponent="1.5"/>'
         '<joint_spring joint="{c}" stiffness="0.8" rest="0.2" damping="0.03"/>')


def _chain(tmp_path: Path, damping: bool = True) -> Path:
    """A 3-link fixed-base chain (identity map) with `STOPS` on j1, j2, j3."""
    stops = STOPS.format(a="j1", b="j2", c="j3")
    if not damping:
        stops = stops.replace('damping="0.6"', 'damping="0"').replace('damping="0.9"', 'damping="0"')
    links, joints = [], []
    for k in range(1, 4):
        links.append(f'<link name="l{k}"><inertial><origin xyz="0.02 0 -0.12"/><mass value="{1.0 + 0.2 * k}"/>'
                     '<inertia ixx="0.01" ixy="0" ixz="0.001" iyy="0.012" iyz="0" izz="0.004"/></inertial></link>')
        parent = "base" if k == 1 else f"l{k - 1}"
        joints.append(f'<joint name="j{k}" type="continuous"><parent link="{parent}"/><child link="l{k}"/>'
                      f'<origin xyz="0 0 {-0.25 if k > 1 else 0}" rpy="0.05 0 0"/><axis xyz="0 1 0"/></joint>')
    text = ('<robot name="stop_chain"><link name="base"><inertial><origin xyz="0 0 0"/><mass value="2"/>'
            '<inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>'
            + "".join(links) + "".join(joints)
            + f'<biobullet version="1"><gravity xyz="0 0 -9.81"/><initial joint="j1" position="0.6"/>'
              f'<initial joint="j2" position="-0.4"/>{stops}</biobullet></robot>')
    path = tmp_path / f"stop_chain_{damping}.urdf"
    path.write_text(text)
    return path


def _fourbar(tmp_path: Path) -> Path:
    """The four-bar knee (one loop) with `STOPS` on knee_A (independent), knee_D and knee_B (loop-dependent)."""
    text = (ROOT / "urdf" / "fourbar_knee.urdf").read_text()
    # limits within the swing from knee_A = 0.5 (knee_A −0.43 … 0.5, knee_D −0.25 … 0.27 without stops)
    stops = STOPS.format(a="knee_A", b="knee_D", c="knee_B").replace(
        'lower="-0.15" upper="0.25"', 'lower="-0.3" upper="0.45"').replace('upper="0.1"', 'lower="-0.12"')
    text = text.replace('<coordinates names="knee_A"/>', '<coordinates names="knee_A"/>' + stops)
    path = tmp_path / "fourbar_stops.urdf"
    path.write_text(text)
    return path


def _law(model, a: str, b: str, c: str, lower_a: float, upper_a: float, b_side: tuple):
    """`STOPS` written out: (τ, dissipated power, engaged) of (x, ẋ). Stop a: smooth, [lower_a, upper_a], k 80,
    c 0.6, e 2.5, smoothing 0.05; stop b: switched, one limit b_side = ("upper" | "lower", value), k 120, c 0.9,
    e 1.5; spring-damper at c: τ = −0.8 (θ − 0.2) − 0.03 θ̇."""
    slot_a, slot_b, slot_c = (joint_indices(model, name, None) for name in (a, b, c))

    def stop(theta, rate, side, limit, k, damping, exponent, smoothing):
        pen, pen_rate, sign = (limit - theta, -rate, 1.0) if side == "lower" else (theta - limit, rate, -1.0)
        if pen <= 0.0:
            return 0.0, 0.0
        u = 1.0 if smoothing is None else min(pen / smoothing, 1.0)
        gate = u * u * (3.0 - 2.0 * u)
        return sign * (k * pen ** exponent + damping * gate * pen_rate), damping * gate * pen_rate ** 2

    def law(x, xd, t):
        tau, dissipated, engaged = np.zeros(len(xd)), 0.0, False
        (ia, ka), (ib, kb), (ic, kc) = slot_a, slot_b, slot_c
        for side, limit in (("lower", lower_a), ("upper", upper_a)):
            f, d = stop(x[ia], xd[ka], side, limit, 80.0, 0.6, 2.5, 0.05)
            tau[ka] += f
            dissipated += d
            engaged |= f != 0.0
        f, d = stop(x[ib], xd[kb], *b_side, 120.0, 0.9, 1.5, None)
        tau[kb] += f
        tau[kc] += -0.8 * (x[ic] - 0.2) - 0.03 * xd[kc]
        return tau, dissipated + d + 0.03 * xd[kc] ** 2, engaged or f != 0.0
    return law


def _check(system, tree, law, t, y) -> bool:
    """d'Alembert with the law's τ and ẏ's dissipated power = the law's (1e-12 relative); whether a stop acted."""
    ydot = system.rhs(t, y)
    assert_dalembert(system, tree, t, y, ydot, lambda x, xd, s: law(x, xd, s)[0])
    _, dissipated, engaged = law(*system.tree_state(t, y), t)
    assert abs(ydot[-1] - dissipated) <= 1e-12 * max(1.0, abs(dissipated))
    return engaged


def test_explicit_rhs_with_stops_obeys_the_law(tmp_path):
    model = biobullet.load_model(_chain(tmp_path))
    system = System(model, "reduced")
    assert type(system._compiled).__name__ == "CompiledReducedRHS"
    tree = PinocchioTree(model)
    law = _law(model, "j1", "j2", "j3", -0.15, 0.25, ("upper", 0.1))
    rng = np.random.default_rng(11)
    engaged = 0
    for _ in range(12):
        y = system.initial_vector(None, 0.0)
        y[:6] = rng.uniform(-0.4, 0.45, size=6) * np.array([1, 1, 1, 5, 5, 5])
        assert system._compiled(0.0, y) is not None
        engaged += _check(system, tree, law, 0.0, y)
    assert engaged >= 6   # the stops were engaged in many of the states


def test_loop_rhs_with_stops_obeys_the_law(tmp_path):
    model = biobullet.load_model(_fourbar(tmp_path))
    system = System(model, "reduced")
    assert type(system._compiled).__name__ == "CompiledReducedRHS"
    trajectory = biobullet.simulate(model, 0.4, initial={"knee_A": 0.5}, t_eval=np.linspace(0, 0.4, 25),
                                    progress=False)
    tree = PinocchioTree(model)
    law = _law(model, "knee_A", "knee_D", "knee_B", -0.3, 0.45, ("lower", -0.12))
    engaged = sum(_check(system, tree, law, t, y) for t, y in states_of(system, trajectory, range(0, 25, 2)))
    assert engaged >= 3


@pytest.mark.parametrize("which", ["chain", "fourbar"])
def test_runs_locate_the_switched_stop_and_close_the_energy_balance(tmp_path, which):
    """Whole runs through the stops (the switched one restarts the integrator at its events, each where its joint
    reaches the limit: 1e-9 rad) close the energy balance."""
    model = biobullet.load_model(_chain(tmp_path) if which == "chain" else _fourbar(tmp_path))
    initial = {"knee_A": 0.5} if which == "fourbar" else None
    run = biobullet.simulate(model, 0.6, rtol=1e-10, atol=1e-12, initial=initial, progress=False,
                             t_eval=np.linspace(0.0, 0.6, 61))
    assert run.events, "the switched stop's events are located"
    joint, limit = ("j2", 0.1) if which == "chain" else ("knee_D", -0.12)
    system = System(model, "reduced", {"shadow": which == "fourbar"})
    i = joint_indices(model, joint, None)[0]
    for _, t, y in run.events:
        assert abs(system.tree_state(t, y)[0][i] - limit) <= 1e-9
    balance = run.energy_balance()
    assert run.energy["dissipated"][-1] > 1e-4   # the stops' dampers did work
    assert np.ptp(balance) < 1e-7 * max(1.0, float(np.abs(run.energy["kinetic"]).max()))
