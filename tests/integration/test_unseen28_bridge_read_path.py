"""The one-call read path of a floating base or spherical joints held by joint functions (`Bridge._apply_read_rows`)
probed with the habits of a user's own PyBullet loop (hunt22), beyond test_bridge_read_rows.py,
test_unseen12_bridge_guarantees.py and test_unseen15_bridge_habits.py:

* a time step set by `setTimeStep` before every `apply()` (a schedule of time steps): the client's dt read at the
  next disturbed step is the coming step's, not the one just read, so the bridge's clock counted the step before each
  change at the wrong length — 50 ms behind PyBullet after 200 steps alternating 0.5 / 1 ms, silently; a coupling of
  time was then held at the wrong time. Now the length of the step just read is measured from its joints
  (`OutsideWatch.step_length`: semi-implicit Euler moves them by h ẋ and their rates by h ẍ; a rate reset is no
  step of another length).
* `joint_reactions` under a client gravity that is not the file's (`gravity="client"`, a setGravity mid-run) took the
  file's: 150 % of the largest reading off PyBullet's own force-torque sensors; now the client's.

Every check is against what the bridge does not compute: PyBullet's own sum of the time steps it was given, the
coupling's own expression evaluated on PyBullet's joint states at that time, and PyBullet's joint sensors."""
from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pybullet = pytest.importorskip("pybullet")

from biobullet import load_model  # noqa: E402
from biobullet.bridge import Bridge  # noqa: E402
from biobullet.bridge.outside import PROMISE  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from spherical_arms import COUPLED  # noqa: E402  (tests/spherical_arms.py)

#: the pronation follows the elbow and the clock: a wrong clock shows as 0.2·8 rad/s × its error in the coupling
TIMED = COUPLED.replace('type="polynomial" inputs="elbow" coefficients="0.1 0.5 -0.3"',
                        'type="expression" inputs="elbow" expression="0.1 + 0.5*elbow + 0.2*sin(8*t)"')


def coupling(elbow: float, t: float) -> float:
    """The file's expression, written out (rad)."""
    return 0.1 + 0.5 * elbow + 0.2 * math.sin(8.0 * t)


@pytest.mark.parametrize("floating", [False, True])
def test_a_time_step_set_before_every_apply_is_counted_at_the_length_each_step_ran(tmp_path, floating):
    """setTimeStep(0.5 ms / 1 ms, alternating) before every apply() on the coupled spherical arm, fixed and
    floating (both on the read path). After every apply(), the state PyBullet holds is at PyBullet's own time T (the
    sum of the fixedTimeStep values it stepped with): the bridge's clock at the start of the step it just computed,
    `time − dt`, equals T to 1e-12 s (the sum's round-off is ≈ 1e-17 s a step), and the time-varying coupling holds
    at T within the promise (read from PyBullet's joint states, the expression written out here) — the step that ran
    at a length the bridge had not yet read is projected at that apply(). Before: the clock was 50 ms behind after
    200 steps and the coupling 3.2e-2 rad off at T."""
    path = tmp_path / "timed.urdf"
    path.write_text(TIMED)
    model = load_model(path, floating_base=floating)
    worst_clock = worst_coupling = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (the steps run before the change is read are named: CouplingWarning)
        with Bridge(model, dt=1e-3) as bridge:
            p, c, b = bridge.pybullet, bridge.client, bridge.body
            index = {p.getJointInfo(b, j, physicsClientId=c)[1].decode(): j
                     for j in range(p.getNumJoints(b, physicsClientId=c))}
            elbow, pronation = index["elbow"], index["pronation"]
            total = 0.0   # PyBullet's time: the sum of the steps it made
            for k in range(200):
                dt = 5e-4 if k % 2 == 0 else 1e-3
                p.setTimeStep(dt, physicsClientId=c)
                bridge.apply()
                worst_clock = max(worst_clock, abs(bridge.time - bridge.dt - total))
                q_elbow = p.getJointState(b, elbow, physicsClientId=c)[0]
                q_pronation = p.getJointState(b, pronation, physicsClientId=c)[0]
                worst_coupling = max(worst_coupling, abs(q_pronation - coupling(q_elbow, total)))
                p.stepSimulation(physicsClientId=c)
                total += dt
    print("floating" if floating else "fixed", "clock", worst_clock, "coupling", worst_coupling)
    assert worst_clock <= 1e-12
    assert worst_coupling <= PROMISE


@pytest.mark.parametrize("habit", ["gravity='client'", "setGravity mid-run"])
def test_joint_reactions_take_the_gravity_pybullet_steps_with(habit):
    """`joint_reactions` against PyBullet's own joint force-torque sensors (as test_bridge_reactions.py: arm7 at a
    random pose, random generalized forces, dt = 0.01 ms, where the two differ by O(dt²) ≈ 1.5e-8 relative) when the
    client's gravity is −3 m/s², not the file's −9.81: kept by `Bridge(..., gravity="client")`, or set by the user's
    setGravity after three steps (a model without rows: the watch sees no jump, so the bridge's own gravity is not
    re-read). The reactions took the file's gravity (ẍ and the Newton–Euler pass): 150 % of the largest reading off;
    now the client's (`reactions.gravity_shift`), within the same 1e-6 as under the file's gravity."""
    from biobullet.bridge.reactions import enable_force_torque_sensors, joint_reactions, pybullet_sensor_reactions
    from biobullet.model.bundled import bundled_model
    model = load_model(bundled_model("arm7.urdf"), joint_limits=False)
    client = pybullet.connect(pybullet.DIRECT)
    try:
        pybullet.setGravity(0.0, 0.0, -3.0 if habit == "gravity='client'" else -9.81, physicsClientId=client)
        bridge = Bridge(model, client, dt=1e-5, gravity="client")
        rng = np.random.default_rng(1)
        q = rng.uniform(-1.0, 1.0, model.nq)   # (a fixed base: every coordinate a joint's)
        bridge.reset(q, np.zeros(model.nv))
        if habit != "gravity='client'":
            for _ in range(3):
                bridge.step()
            pybullet.setGravity(0.0, 0.0, -3.0, physicsClientId=client)
        enable_force_torque_sensors(bridge)
        _, x, _ = bridge.state()
        bridge.apply(generalized=5.0 * rng.normal(size=model.nv))
        ours = joint_reactions(bridge)
        pybullet.stepSimulation(physicsClientId=client)
        theirs = pybullet_sensor_reactions(bridge, x)
        bridge.close()
    finally:
        pybullet.disconnect(client)
    scale = max(max(np.abs(r.force).max(), np.abs(r.moment).max()) for r in theirs.values())
    force = max(np.abs(ours[k].force - theirs[k].force).max() for k in theirs) / scale
    moment = max(np.abs(ours[k].moment - theirs[k].moment).max() for k in theirs) / scale
    print(habit, "force", force, "moment", moment)
    assert force <= 1e-6 and moment <= 1e-6, (force, moment)


def test_a_rate_reset_is_no_step_of_another_length(tmp_path):
    """The step length the clock follows (`OutsideWatch.step_length`) must not be read into a reset: every 1-DOF
    joint's rate doubled by resetJointState(targetVelocity=) before apply() (the coupling's rate relation, linear in
    the rates, still holds) moves the positions by exactly half a step of the new rates — a step of dt/2 to the
    positions alone. The rates did not move by (dt/2) ẍ, so it is a reset: the clock stays PyBullet's sum of steps
    (to 1e-12 s) and the coupling holds after every apply() (read from PyBullet, the expression written out)."""
    path = tmp_path / "timed.urdf"
    path.write_text(TIMED)
    model = load_model(path, floating_base=True)
    worst_clock = worst_coupling = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Bridge(model, dt=1e-3) as bridge:
            p, c, b = bridge.pybullet, bridge.client, bridge.body
            index = {p.getJointInfo(b, j, physicsClientId=c)[1].decode(): j
                     for j in range(p.getNumJoints(b, physicsClientId=c))}
            total = 0.0
            for k in range(100):
                if k == 50:
                    for name in ("elbow", "pronation"):
                        position, rate = p.getJointState(b, index[name], physicsClientId=c)[:2]
                        p.resetJointState(b, index[name], position, 2.0 * rate, physicsClientId=c)
                bridge.apply()
                worst_clock = max(worst_clock, abs(bridge.time - bridge.dt - total))
                q_elbow = p.getJointState(b, index["elbow"], physicsClientId=c)[0]
                q_pronation = p.getJointState(b, index["pronation"], physicsClientId=c)[0]
                worst_coupling = max(worst_coupling, abs(q_pronation - coupling(q_elbow, total)))
                p.stepSimulation(physicsClientId=c)
                total += 1e-3
    print("clock", worst_clock, "coupling", worst_coupling)
    assert worst_clock <= 1e-12
    assert worst_coupling <= PROMISE
