"""`Bridge.step()` per model kind, in one run: ratios to a bare PyBullet step and to the minimal hand-written loop on
the same model (`biobullet.bench.bridge_speed` with `KIND_RUNNERS`: ROUNDS interleaved rounds of one block of STEPS
steps per loop, thread CPU time). The bridge / minimal ratio is the median over the rounds of the ratio of the round's
two adjacent blocks (the bridge's and the minimal loop's, their order alternating between rounds), printed with its
interquartile range and min–max; the per-step times are the loops' medians over the rounds. (A best-of-rounds ratio
scattered by ±0.1 between idle runs: one lucky block of either loop moved it whole.) Kinds: a fixed-base arm with a nonlinear joint function (KUKA iiwa from pybullet_data, q3 = 0.5 sin q2 +
0.2 q4²), linear joint functions (shoulder rhythm), nonlinear couplings of the 3-link pendulum (a `polynomial` and an
`expression` — both on the compiled per-step path, the expression as an instruction tape), closed loops (four-bar
knee; Andrews' squeezer, dt = 1e-5 s), contact (ball drop with Hu–Guo, dt = 1e-4 s), flexible links (elastic 3-link
robot, 4 segments, stable dt; air damping off and on), floating bases (urdf/humanoid.urdf: 19 1-DOF joints), spherical
joints (shoulder–elbow–wrist arm; the arm with pronation = f(elbow), fixed and floating base) and pybullet_data's
humanoid (floating base, 8 spherical joints).

The minimal loop (`bench.minimal_kind`) is the least a user writes in PyBullet alone for the same job: read the state
in the fewest calls, send the torques, step (`bench.HandLoop`) — with M and h from calculateMassMatrix /
calculateInverseDynamics (computed torque) when the bridge's step solves with M and h (joint functions, loops),
where PyBullet takes the body (its inverse dynamics refuses spherical joints on a fixed base: that loop has M only);
and for a model without rows whose file has `<contact>`s or joint springs (the contact ball, the flexible robot), the
forces the bridge computes every step, written as a PyBullet user writes them (`bench.ForcesLoop`: the springs in
numpy, each contact point from getLinkStates, the Hu–Guo and Ambrosio laws in plain floats, applyExternalForce).
Every loop computes the URDF `<limit>`s' joint stops the bridge holds, their smooth law in plain floats
(`HandLoop.stops`; the body's PyBullet limits are switched off, as on the bridge's): before, no loop did, and a
knee passed its limit (`test_minimal_loop_holds_the_urdf_limits`). All three loops are timed for every kind. Prints the table (copied into the README) and writes
out/benchmarks/bridge_model_kinds.json.
No wall-clock thresholds.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pybullet")

import pybullet_data  # noqa: E402

import biobullet  # noqa: E402
from biobullet.bench import KIND_RUNNERS, bridge_speed  # noqa: E402
from biobullet.contact.testbed import drop_urdf  # noqa: E402
from biobullet.loader import load_text  # noqa: E402
from bridge_user_loop import write_coupled_kuka  # noqa: E402
from nonlinear_pendulum import pendulum_text, write_pendulum  # noqa: E402
from spherical_arms import ARM, COUPLED  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
#: interleaved rounds per kind and steps per block (one block ≈ 0.5–3 ms of CPU)
ROUNDS, STEPS = 60, 50


def test_bridge_step_cost_per_model_kind(tmp_path, capsys):
    from biobullet.bridge.bridge import expand_flexible_links, stable_step
    elastic = biobullet.load_model(ROOT / "urdf" / "elastic_robot_3link.urdf")
    flexible, _ = expand_flexible_links(elastic, None, None, air_damping=False)
    damped, _ = expand_flexible_links(elastic, None, None, air_damping=True)
    polynomial = tmp_path / "polynomial_pendulum.urdf"   # j3 = 0.1 + 0.5 j1 − 0.3 j1² + 0.2 j1³
    polynomial.write_text(pendulum_text().replace(
        'type="expression" inputs="j1 j2" expression="0.5*sin(j1) + 0.3*j2**2"',
        'type="polynomial" inputs="j1" coefficients="0.1 0.5 -0.3 0.2"'))
    (tmp_path / "ball_arm.urdf").write_text(ARM)
    (tmp_path / "coupled_arm.urdf").write_text(COUPLED)
    cases = {
        "arm + joint function (KUKA iiwa, q3 = f(q2, q4))": (biobullet.load_model(write_coupled_kuka(tmp_path)),
                                                            1e-3),
        "linear (shoulder_rhythm)": (biobullet.load_model(ROOT / "urdf" / "shoulder_rhythm.urdf"), 1e-3),
        "nonlinear (polynomial pendulum)": (biobullet.load_model(polynomial), 1e-3),
        "nonlinear (expression pendulum)": (biobullet.load_model(write_pendulum(tmp_path)), 1e-3),
        "loop (fourbar_knee)": (biobullet.load_model(ROOT / "urdf" / "fourbar_knee.urdf"), 1e-3),
        "loop (andrews_squeezer)": (biobullet.load_model(ROOT / "urdf" / "andrews_squeezer.urdf"), 1e-5),
        "contact (hu_guo ball drop)": (load_text(drop_urdf({"normal_law": "hu_guo", "stiffness": "1e5",
                                                            "restitution": "0.8"}), tmp_path), 1e-4),
        "flexible (elastic robot, 4 segments)": (flexible, stable_step(flexible)),
        "flexible (elastic robot, 4 segments, air damping)": (damped, stable_step(damped)),
        "floating base (humanoid.urdf, 19 joints)": (biobullet.load_model(ROOT / "urdf" / "humanoid.urdf",
                                                                          floating_base=True), 1e-3),
        "spherical (shoulder–elbow–wrist arm)": (biobullet.load_model(tmp_path / "ball_arm.urdf"), 1e-3),
        "spherical + joint function (coupled arm)": (biobullet.load_model(tmp_path / "coupled_arm.urdf"), 1e-3),
        "floating + spherical + joint function (coupled arm)": (
            biobullet.load_model(tmp_path / "coupled_arm.urdf", floating_base=True), 1e-3),
        "humanoid (pybullet_data, floating, 8 spherical)": (
            biobullet.load_model(Path(pybullet_data.getDataPath()) / "humanoid" / "humanoid.urdf",
                                 floating_base=True), 1e-3),
    }
    rows = {}
    for name, (model, dt) in cases.items():
        measured = bridge_speed(model, rounds=ROUNDS, steps=STEPS, dt=dt, runners=KIND_RUNNERS)
        median, paired = measured["median"]["cpu"], measured["paired"]["cpu"]
        rows[name] = {"dt": dt, **{k: v * 1e6 for k, v in median.items()},
                      "minimal_is": measured["minimal_kind"].replace("_", " ").replace("read send", "read + send")
                                    .replace("forces", "read + forces + send"),
                      "bridge/minimal": paired, "bridge/bare": median["bridge"] / median["bare"],
                      "max_residual": measured["max_residual"]}
    lines = ["| model kind | dt (s) | bare (µs) | read + send (µs) | computed torque (µs) | read + forces + send (µs) "
             "| bridge (µs) | minimal loop (µs) | bridge / minimal, median (IQR; min–max) | bridge / bare |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        ratio = r["bridge/minimal"]
        lines.append(f"| {name} | {r['dt']:.3g} | {r['bare']:.1f} | {r['read_send']:.1f} | "
                     f"{r['computed_torque']:.1f} | {r['forces']:.1f} | {r['bridge']:.1f} | "
                     f"{r['minimal_is']} {r['minimal']:.1f} | **{ratio['median']:.2f}** ({ratio['q1']:.2f}–"
                     f"{ratio['q3']:.2f}; {ratio['min']:.2f}–{ratio['max']:.2f}) | {r['bridge/bare']:.2f} |")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    out = ROOT / "out" / "benchmarks"
    out.mkdir(parents=True, exist_ok=True)
    from biobullet.core.atomic import write_text
    write_text(out / "bridge_model_kinds.json", json.dumps(rows, indent=2))
    assert all(r["bridge"] > 0 and r["bridge/minimal"]["rounds"] == ROUNDS for r in rows.values())


def test_minimal_loop_holds_the_urdf_limits():
    """The minimal loop does the job the bridge does: pybullet_data's humanoid's right knee (URDF `<limit>` −3.14 to
    0 rad) started at its upper limit at +2 rad/s stays within it over 0.1 s in every hand-written loop, as under
    `Bridge.step()` (its smooth stop penetrates ≈ 1 mrad; limit stops are scaled to penetrate 0.01 rad under a static
    load, `forces.elements.LIMIT_REFERENCE_PENETRATION`) — the read + send loop, which sends the stops' τ alone as the
    bridge does, along the bridge's own knee angle to 1e-12 rad. Before, no loop computed the stops (the body's
    PyBullet limits are switched off): the knee went 0.2 rad through its limit (free rotation at 2 rad/s)."""
    import time
    from biobullet.bench import ForcesLoop, HandLoop
    from biobullet.bridge import Bridge
    from biobullet.forces.elements import LIMIT_REFERENCE_PENETRATION
    model = biobullet.load_model(Path(pybullet_data.getDataPath()) / "humanoid" / "humanoid.urdf", floating_base=True)
    q0, v0 = model.initial_state()
    v0 = v0.copy()
    v0[list(model.velocity_names).index("right_knee")] = 2.0
    upper = next(j.upper for j in model.description.joints if j.name == "right_knee")
    assert upper == 0.0   # (the file's limit)
    knees = {}
    for name, make in (("bridge", None), ("read_send", lambda b: HandLoop(b, False)),
                       ("computed_torque", lambda b: HandLoop(b, True)), ("forces", ForcesLoop)):
        with Bridge(model, dt=1e-3) as bridge:
            bridge.reset(q0, v0)
            if make is None:
                for _ in range(100):
                    bridge.step()
            else:
                make(bridge).steps(100, time.perf_counter)
            knees[name] = bridge.pybullet.getJointState(bridge.body, bridge.joint_index["right_knee"],
                                                        physicsClientId=bridge.client)[0]
    assert all(knee <= upper + LIMIT_REFERENCE_PENETRATION for knee in knees.values()), knees
    assert knees["bridge"] > upper   # (the stop acted: the knee is beyond its limit, within the stop)
    assert abs(knees["read_send"] - knees["bridge"]) <= 1e-12, knees
