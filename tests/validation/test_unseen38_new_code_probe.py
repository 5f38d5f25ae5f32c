"""An independent probe of the code that landed in the eighteenth session (d06f34f..5bea216) on inputs its authors
did not try: the massless-joint floor, the event kinks, the bridge under user state changes, unit axes and argument
checks. Each defect found is a test here that failed on main, against an independent oracle (a closed form, SciPy at
rtol 1e-12 on the 1-DOF equations written out, Pinocchio, PyBullet).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from biobullet import simulate
from biobullet.loader import load_text


# ------------------------------------------------------------------ several contacts leaving in the same step
G, MASS, HEIGHT = 9.81, 1.0, 0.3          # m/s², kg, m (the drop: v_max = √(2 g h) = 2.43 m/s)
HC_STIFFNESS, HC_RESTITUTION = 1e6, 0.8   # N/m^1.5, 1 (Hunt–Crossley, per contact)


def _two_contact_ball(law: str) -> str:
    """A 1-kg body on the vertical prismatic joint `z` with two equal point contacts 0.1 m apart: they touch and
    leave the ground together (the same δ, δ̇ bit for bit), as one contact of twice the stiffness would."""
    contacts = "".join(f'<contact name="C{i}" link="ball" xyz="{0.1 * i!r} 0 0" radius="0" {law}/>' for i in range(2))
    return (f'<robot name="ball"><link name="base"/><link name="ball"><inertial><mass value="{MASS!r}"/>'
            '<inertia ixx="1e-3" ixy="0" ixz="0" iyy="1e-3" iyz="0" izz="1e-3"/></inertial></link>'
            '<joint name="z" type="prismatic"><parent link="base"/><child link="ball"/><axis xyz="0 0 1"/>'
            '<limit lower="-100" upper="100" effort="1" velocity="1"/></joint>'
            f'<biobullet version="1"><gravity xyz="0 0 {-G!r}"/>{contacts}</biobullet></robot>')


def _hunt_crossley_bounces(t_end: float, contacts: int = 2) -> list[tuple[float, float]]:
    """(t, ż) at every touch (in and out) of the ball on `contacts` Hunt–Crossley contacts, each
    F = k δ^1.5 (1 + 1.5 (1 − e) δ̇ / δ̇⁻) (δ̇⁻ the approach speed at its onset): SciPy's DOP853 at rtol 1e-12 on the
    pieces of the 1-DOF equation, switched at z = 0."""
    factor = 1.5 * (1.0 - HC_RESTITUTION)
    t, y, out = 0.0, np.array([HEIGHT, 0.0]), []
    inside, impact = False, 0.0
    while t < t_end:
        def rhs(_, s, inside=inside, impact=impact):
            delta, rate = -s[0], -s[1]
            force = contacts * HC_STIFFNESS * max(delta, 0.0) ** 1.5 * (1.0 + factor * rate / impact) if inside else 0.0
            return [s[1], -G + max(force, 0.0) / MASS]

        def ground(_, s):
            return s[0]
        ground.terminal, ground.direction = True, (1.0 if inside else -1.0)
        piece = solve_ivp(rhs, (t, t_end), y, method="DOP853", rtol=1e-12, atol=1e-15, events=ground)
        if piece.status != 1:
            break
        t, y = float(piece.t_events[0][0]), piece.y_events[0][0].copy()
        y[0] = 0.0
        out.append((t, float(y[1])))
        inside, impact = not inside, -float(y[1])
    return out


@pytest.mark.parametrize("method", ["DOP853", "RK45"])
def test_two_contacts_leaving_together_keep_their_events(tmp_path, method):
    # the way out of a contact is a kink: the run re-integrates its crossing step from the step's start
    # (_SmoothSide) and restarts at the re-located time. The second contact, located on the crossing step's
    # interpolant, had its root 1e-12 … 7e-12 s after that time — beyond the "simultaneous" tolerance (64 ε t) —
    # although its surface was crossed at the restart state: its event and its action were lost, the contact stayed
    # active out of contact, and its next onset kept the first impact's velocity (Hunt–Crossley's damping
    # δ̇/δ̇⁻ wrong from the second bounce on). On main, DOP853 and RK45 lost 2 and 6 of 14 touches of C1 and ended
    # 3.0e-3 m and 1.6e-3 m off at t = 2 s (ż 0.15 and 0.60 m/s off); RK23, Radau, BDF, LSODA happened to keep them.
    # Now every event is where SciPy's piecewise solution of the same equation puts it (measured on every method the
    # engine accepts; the two that lost events are run here).
    rtol = 1e-9
    model = load_text(_two_contact_ball(
        f'normal_law="hunt_crossley" stiffness="{HC_STIFFNESS!r}" restitution="{HC_RESTITUTION!r}"'), tmp_path, "b.urdf")
    run = simulate(model, 2.0, method=method, rtol=rtol, atol=1e-3 * rtol, initial={"z": HEIGHT}, progress=False,
                   t_eval="steps")
    oracle = _hunt_crossley_bounces(2.0)
    for name in ("C0:touch", "C1:touch"):
        touches = [(t, state[1]) for event, t, state in run.events if event == name]
        assert len(touches) == len(oracle) == 14, (name, len(touches))
        times, rates = np.array(touches).T
        o_times, o_rates = np.array(oracle).T
        # global errors after 7 bounces at rtol 1e-9, each method's own drift: measured ≤ 5e-8 s and 22 rtol·v_max,
        # BDF 1.5e-7 s and 71 rtol·v_max (on main: a touch missing, and 0.15 … 0.60 m/s off)
        assert np.max(np.abs(times - o_times)) < 5e-7, np.max(np.abs(times - o_times))
        assert np.max(np.abs(rates - o_rates)) < 200 * rtol * math.sqrt(2 * G * HEIGHT), np.max(np.abs(rates - o_rates))
        # the interval log: one episode per bounce, each with the approach speed its law's damping divides by
        episodes = run.meta["discrete"][name.split(":")[0]]["intervals"]
        impacts = np.array([episode["impact_velocity"] for episode in episodes])
        assert len(impacts) == 7
        np.testing.assert_allclose(impacts, -o_rates[0::2], rtol=0.0, atol=200 * rtol * math.sqrt(2 * G * HEIGHT))


# ------------------------------------------------------------------ NumPy scalars as arguments
@pytest.mark.parametrize("value", [np.True_, np.array("0.01"), np.complex128(0.01 + 5j)],
                         ids=["numpy_bool", "text_array", "numpy_complex"])
def test_numpy_values_that_are_no_real_numbers_are_refused(value):
    # `core.arguments.number_argument` / `time_argument` refused Python's text, bool and complex, but `float()`
    # reads np.True_ as 1.0, a 0-d text array as the number it spells, and np.complex128 as its real part (a
    # ComplexWarning only): simulate(model, np.True_) ran 1 s, simulate(model, np.array("0.01")) ran 0.01 s, and
    # the imaginary 5j vanished. Now each is refused naming the argument, as their Python twins are.
    import biobullet
    from biobullet.bridge import Bridge
    from biobullet.model.bundled import bundled_model
    model = biobullet.load_model(bundled_model("coupled_chain.urdf"))
    calls = {"t_end": lambda: simulate(model, value, progress=False),
             "rtol": lambda: simulate(model, 1e-3, rtol=value, progress=False),
             "shoulder": lambda: simulate(model, 1e-3, initial={"shoulder": value}, progress=False),
             "t": lambda: model.forward_dynamics(np.zeros(model.nq), np.zeros(model.nv), t=value),
             "dt": lambda: Bridge(model, dt=value)}
    for argument, call in calls.items():
        with pytest.raises(biobullet.ModelError, match=f"argument '{argument}'"):
            call()


def test_numpy_flags_and_numbers_are_taken():
    # NumPy's own bool is a flag (load_model(joint_limits=np.False_) was refused: "is not True or False"), and its
    # integer and float scalars and 0-d float arrays are numbers (accepted before and after)
    import biobullet
    from biobullet.model.bundled import bundled_model
    from biobullet.forces.collection import force_elements
    path = bundled_model("arm7.urdf")
    assert len(force_elements(biobullet.load_model(path, joint_limits=np.False_))) == \
        len(force_elements(biobullet.load_model(path, joint_limits=False)))
    assert len(force_elements(biobullet.load_model(path, joint_limits=np.True_))) == \
        len(force_elements(biobullet.load_model(path, joint_limits=True))) > 0
    model = biobullet.load_model(path)
    q, v = np.full(model.nq, 0.2), np.zeros(model.nv)
    expected = model.forward_dynamics(q, v, t=0.5)
    for t in (np.float32(0.5), np.float64(0.5), np.array(0.5)):
        np.testing.assert_array_equal(model.forward_dynamics(q, v, t=t), expected)
    run = simulate(model, np.float32(0.01), rtol=np.float64(1e-6), progress=False)
    assert run.t[-1] == pytest.approx(0.01, rel=1e-7)
