"""Engine defects left by the last round: the state at contact events, events on multistep methods, and the
multipliers formulation on a model with massless links.

Oracles: SciPy's DOP853 at rtol 1e-13 on the smooth pieces of a 1-DOF model (piecewise, terminal events at the
switches), a closed form of the energy, and the `reduced` formulation (an independent formulation of the same
model, integrated at rtol 1e-12).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from biobullet import load_model, simulate
from biobullet.loader import load_text
from biobullet.model.bundled import bundled_model
from test_unseen30_event_steps import URDF as STOP_URDF, _energy as stop_energy   # (the stop pendulum)


# ------------------------------------------------------------------------------- contact events
G, MASS, HEIGHT = 9.81, 1.0, 0.3   # m/s², kg, m (the ball's drop height: v_max = √(2 g h) = 2.43 m/s)
LAWS = {
    "kelvin_voigt": {"stiffness": 1e5, "damping": 40.0},
    "hertz": {"stiffness": 1e6, "exponent": 1.5},
    "hunt_crossley": {"stiffness": 1e6, "restitution": 0.8},
    "flores": {"stiffness": 1e6, "restitution": 0.8},
    "hu_guo": {"stiffness": 1e6, "restitution": 0.8},
    "opensim_hunt_crossley": {"stiffness": 1e6, "dissipation": 0.1},
    "kelvin_voigt_smooth": {"stiffness": 1e5, "damping": 40.0, "smoothing": 1e4},
}
#: bound on the state at each event, re-integrated from its step's start by SciPy (below): in rtol·v_max (velocity)
#: and rtol·m g h (dissipated energy). A smooth step's own error: measured ≤ 0.32 (DOP853), ≤ 1.6 (RK45, whose
#: error control is on its 4th-order solution), ≤ 0.08 (Radau)
EVENT_BOUND = {"DOP853": 0.5, "RK45": 2.0, "Radau": 0.2}


def _ball_file(law: str) -> str:
    """A 1-kg point on the vertical prismatic joint `z` above a contact ground at z = 0."""
    fields = {"name": "C", "link": "ball", "xyz": "0 0 0", "radius": "0", "normal_law": law,
              **{key: repr(value) for key, value in LAWS[law].items()}}
    contact = "<contact " + " ".join(f'{k}="{v}"' for k, v in fields.items()) + "/>"
    return (f'<robot name="ball"><link name="base"/><link name="ball"><inertial><mass value="{MASS!r}"/>'
            '<inertia ixx="1e-3" ixy="0" ixz="0" iyy="1e-3" iyz="0" izz="1e-3"/></inertial></link>'
            '<joint name="z" type="prismatic"><parent link="base"/><child link="ball"/><axis xyz="0 0 1"/>'
            '<limit lower="-100" upper="100" effort="1" velocity="1"/></joint>'
            f'<biobullet version="1"><gravity xyz="0 0 {-G!r}"/>{contact}</biobullet></robot>')


def _law_force(law: str, delta: float, rate: float, impact: float) -> float:
    """F_N [N] of the papers' formulas (δ > 0 inside, δ̇ > 0 approaching, δ̇⁻ the approach speed at onset)."""
    p = LAWS[law]
    if law == "kelvin_voigt_smooth":   # acts for every δ
        force = (0.5 + math.atan(p["smoothing"] * delta) / math.pi) * (p["stiffness"] * delta + p["damping"] * rate)
    elif delta <= 0.0:
        return 0.0
    elif law == "kelvin_voigt":
        force = p["stiffness"] * delta + p["damping"] * rate
    elif law == "hertz":
        force = p["stiffness"] * delta ** p["exponent"]
    elif law == "opensim_hunt_crossley":
        force = p["stiffness"] * delta ** 1.5 * (1.0 + 1.5 * p["dissipation"] * rate)
    else:
        e = p["restitution"]
        factor = {"hunt_crossley": 1.5 * (1.0 - e), "flores": 1.6 * (1.0 - e) / e, "hu_guo": 1.5 * (1.0 - e) / e}[law]
        force = p["stiffness"] * delta ** 1.5 * (1.0 + factor * rate / max(impact, 1e-3))
    return max(force, 0.0)


@pytest.mark.parametrize("method", ["DOP853", "RK45", "Radau"])
@pytest.mark.parametrize("law", list(LAWS))
def test_contact_event_states_come_from_the_smooth_side(tmp_path, law, method):
    # a ball dropped on each contact law bounces; at every event (touch in, touch out, the release where a
    # clipped law's force reaches zero) the recorded state — the state the run restarts from — is compared
    # with SciPy's DOP853 at rtol 1e-13 from the start of the step that ends there, on that phase's smooth
    # law. The touch on the way out and the release are kinks of the force (the law acts up to δ = 0 or to the
    # clipping and stops by the state alone): the state was cut from the interpolant of the step taken across
    # them, up to 19 rtol·v_max off (hertz, RK45), 12 (flores, DOP853), and the dissipated energy up to 18
    # rtol·m g h. kelvin_voigt_smooth's force rises over 1e-4 m at δ = 0 (smooth, but steep on a step's scale):
    # the interpolant's dissipated energy was 10 rtol·m g h off (RK45). Now re-integrated from the step's start
    # (`Event.kink`), within a smooth step's error. (The onset needs none: an inactive contact has no force on
    # the crossing step, a free fall its interpolant holds exactly.)
    rtol = 1e-9
    model = load_text(_ball_file(law), tmp_path, f"{law}.urdf")
    run = simulate(model, 1.0, method=method, rtol=rtol, atol=1e-3 * rtol, initial={"z": HEIGHT}, progress=False,
                   t_eval="steps")
    dissipated = run.energy["dissipated"]
    active, impact, checked = False, 0.0, 0
    worst_rate = worst_energy = 0.0
    for name, t, state in run.events:
        k = int(np.searchsorted(run.t, t)) - 1   # the sample before the event: the start of its step
        on = active or law == "kelvin_voigt_smooth"

        def rhs(_, y, on=on, impact=impact):
            force = _law_force(law, -y[0], -y[1], impact) if on else 0.0
            elastic = _law_force(law, -y[0], 0.0, 1.0) if on else 0.0
            return [y[1], -G + force / MASS, (force - elastic) * -y[1]]
        piece = solve_ivp(rhs, (run.t[k], t), [run.q[k, 0], run.v[k, 0], dissipated[k]], method="DOP853",
                          rtol=1e-13, atol=1e-16)
        worst_rate = max(worst_rate, abs(piece.y[1, -1] - state[1]))
        worst_energy = max(worst_energy, abs(piece.y[2, -1] - dissipated[k + 1]))
        checked += 1
        if name == "C:touch":   # (the phase after it, as the contact's discrete state)
            active, impact = (True, -state[1]) if not active else (False, 0.0)
    assert checked >= 4
    assert worst_rate <= EVENT_BOUND[method] * rtol * math.sqrt(2.0 * G * HEIGHT), worst_rate
    assert worst_energy <= EVENT_BOUND[method] * rtol * MASS * G * HEIGHT, worst_energy


# ------------------------------------------------------------------------------- multistep methods at events
@pytest.mark.parametrize("method", ["BDF", "LSODA"])
def test_multistep_event_state_comes_from_the_smooth_side(tmp_path, method):
    # test_unseen30's pendulum on an undamped switched stop (T + V_gravity + V_stop conserved, a closed form of the
    # 1-DOF model): the one-step methods re-integrate the state at a stop event from the step's start, BDF and
    # LSODA kept the crossing step's interpolant across the kink — the energy of the step ending at an event
    # jumped by 11 rtol·E (BDF) and 8 (LSODA). Now re-integrated by Radau (a one-step method as fit for stiffness):
    # measured below 0.05 rtol·E. (The runs' own drift between events is far larger — BDF ≈ 2400 rtol·E over
    # 2 s at rtol 1e-9, LSODA 60–270 — and is not what this checks.)
    rtol = 1e-9
    model = load_text(STOP_URDF, tmp_path, "pendstop.urdf")
    run = simulate(model, 0.5, method=method, rtol=rtol, atol=1e-12, t_eval="steps", progress=False)
    energy = stop_energy(run.positions[:, 0], run.velocities[:, 0])
    times = np.array([e[1] for e in run.events])
    assert len(times) == 16
    at = np.searchsorted(run.t, times)
    np.testing.assert_array_equal(run.t[at], times)
    jumps = np.abs(energy[at] - energy[at - 1])
    assert jumps.max() <= rtol * np.abs(energy).max(), f"{method}: energy jump at an event {jumps.max():.3g} J"


def test_damped_switched_stop_runs_on_radau(tmp_path):
    # a damped switched stop's force jumps by c ṗ at the limit (JointStop's docstring: a discontinuity, which the
    # event's re-integration reduces but cannot remove). Restarted on the surface (1e-17 rad inside), Radau's
    # finite-difference Jacobian stepped back across it: a column of jump / 1.5e-8, Newton failed, and the run
    # stopped at the first stop with "Required step size is less than spacing between numbers" (t = 0.047 s).
    # Now the first Jacobian after such a restart keeps the side without the jump. Each event state against SciPy
    # from its step's start on that phase's law (stop force −k p − c ṗ inside, none outside): measured ≤ 1.03
    # rtol·ω_max — the damped stop's step-sized error (undamped: 0)
    from test_unseen30_event_steps import INERTIA, K, LOWER, UPPER, C as ARM, G as GRAVITY, M as BOB
    damping, rtol = 5.0, 1e-9
    model = load_text(STOP_URDF.replace('damping="0"', f'damping="{damping!r}"'), tmp_path, "damped.urdf")
    run = simulate(model, 0.5, method="Radau", rtol=rtol, atol=1e-12, t_eval="steps", progress=False)
    assert len(run.events) >= 10
    worst = 0.0
    for _, t, state in run.events:
        k = int(np.searchsorted(run.t, t)) - 1
        theta = run.positions[k, 0]
        limit = UPPER if theta > UPPER else LOWER if theta < LOWER else None

        def rhs(_, y, limit=limit):
            torque = -BOB * GRAVITY * ARM * math.sin(y[0])
            if limit is not None:
                torque -= K * (y[0] - limit) + damping * y[1]
            return [y[1], torque / INERTIA]
        piece = solve_ivp(rhs, (run.t[k], t), [theta, run.velocities[k, 0]], method="DOP853", rtol=1e-13,
                          atol=1e-16)
        worst = max(worst, abs(piece.y[1, -1] - state[1]))
    assert worst <= 2.0 * rtol * np.abs(run.velocities[:, 0]).max(), worst


# ------------------------------------------------------------------------------- multipliers on massless links
@pytest.fixture(scope="module")
def shoulder():
    return load_model(bundled_model("shoulder_rhythm.urdf"))


def test_multipliers_radau_on_massless_links_follows_the_reduced_run(shoulder):
    # shoulder_rhythm's "unrot" joints carry massless links: the tree's M over all joints has cond 6e9, and the
    # range-space solve through M⁻¹ left ≈ 1e-7 of noise in ẍ. Radau's finite-difference Jacobian (steps of
    # 1.5e-8) was then noise, its Newton failed, and at rtol 1e-9 it crawled in steps of 3e-8 s (`biobullet
    # simulate shoulder_rhythm --formulation multipliers --method Radau` ran for hours). The KKT matrix, solved
    # whole, is as well conditioned as the constrained system: 0.2 s in 229 steps and 1644 evaluations.
    # Oracle: the reduced formulation (the joint functions eliminated, no multipliers) at rtol 1e-12; the run asks
    # for rtol 1e-9 on angles of order 1 rad: measured 5e-12 rad apart
    t = np.linspace(0.0, 0.1, 11)
    reference = simulate(shoulder, 0.1, rtol=1e-12, atol=1e-14, t_eval=t, progress=False)
    for projection in (False, True):
        run = simulate(shoulder, 0.1, formulation="multipliers", method="Radau", rtol=1e-9, atol=1e-12, t_eval=t,
                       progress=False, projection=projection, max_evaluations=5000)
        assert run.meta["status"] == "finished"
        np.testing.assert_allclose(run.q, reference.q, rtol=0.0, atol=1e-9)
        np.testing.assert_allclose(run.v, reference.v, rtol=0.0, atol=1e-8)


def test_multipliers_accelerations_on_massless_links_match_the_reduced_formulation(shoulder):
    # the cause of the crawl above: ẍ through M⁻¹ (cond 6e9) was 1e-7 off at every state; the KKT solve agrees with
    # the reduced formulation (joint functions eliminated) to round-off of the constrained system
    rng = np.random.default_rng(7)
    for _ in range(5):
        q = rng.uniform(-1.0, 1.0, shoulder.nq)
        v = rng.uniform(-2.0, 2.0, shoulder.nv)
        tau = rng.uniform(-1.0, 1.0, shoulder.nv)
        expected = shoulder.forward_dynamics(q, v, tau)
        got = shoulder.forward_dynamics(q, v, tau, formulation="multipliers")
        assert np.abs(got - expected).max() <= 1e-10 * max(1.0, np.abs(expected).max())
