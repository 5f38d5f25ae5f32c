"""`integrate.stepper.run_loop` as the hybrid integrator (mode switch with a state map, events per mode,
breakpoints), checked against closed-form solutions: a ball bouncing with restitution e (impact times
t_1 = √(2h/g), t_(k+1) = t_k + 2 eᵏ v_1 / g) and a force switched on at a breakpoint (piecewise parabola)."""
from __future__ import annotations

import numpy as np
import pytest

from biobullet.integrate.stepper import LoopEvent, run_loop

G, H, E = 9.81, 1.0, 0.8   # 5 impacts by t = 2.7 s, long before the Zeno time t₁ + 2v₁e/(g(1 − e)) ≈ 4.1 s


def test_bouncing_ball_impact_times_and_velocities():
    fired: list[tuple[float, tuple[str, ...]]] = []

    def switch(t, y, names):   # the impact map v⁺ = −e v⁻ (a state map at the event)
        fired.append((t, names))
        return np.array([y[0], -E * y[1]])   # y[0] ≤ 0 at round-off: the event is located on the far side

    events = lambda: [LoopEvent("floor", lambda t, y: y[0], -1.0, restart=True)]  # noqa: E731
    samples = np.linspace(0.0, 2.7, 27001)
    # max_step: a parabola is exact for DOP853, whose steps would otherwise span a whole flight (no sign change)
    result = run_loop(lambda t, y: np.array([y[1], -G]), 0.0, np.array([H, 0.0]), 2.7, method="DOP853", rtol=1e-12,
                      atol=1e-12, max_step=0.05, t_eval=samples, events=events, switch=switch)
    v1 = np.sqrt(2 * G * H)
    expected = np.sqrt(2 * H / G) + np.concatenate([[0.0], np.cumsum(2 * v1 * E ** np.arange(1, 5) / G)])
    times = np.array([t for t, _ in fired])
    assert [names for _, names in fired] == [("floor",)] * 5
    np.testing.assert_allclose(times, expected, rtol=0, atol=1e-10)
    # the apex after the 4th impact: (e⁴ v₁)² / 2g, from the 0.1 ms samples (sampling error ≤ g·dt²/8 ≈ 1e-8 m)
    t = np.array(result.t)
    y = result.state_array(2)
    last = (t > times[3] + 1e-9) & (t < times[4] - 1e-9)
    assert y[last, 0].max() == pytest.approx((E ** 4 * v1) ** 2 / (2 * G), rel=1e-6)
    assert len(t) == len(samples)
    assert result.restarts == len(fired)


def test_breakpoint_is_stepped_to_exactly_and_switches_the_mode():
    force = [0.0]
    seen = []

    def switch(t, y, names):
        seen.append((t, names))
        force[0] = 2.0        # from t = 0.3 on: ẍ = 2 (unit mass)
        return None           # the state is kept

    result = run_loop(lambda t, y: np.array([y[1], force[0]]), 0.0, np.array([0.0, 1.0]), 1.0, method="DOP853",
                      rtol=1e-12, atol=1e-12, max_step=np.inf, t_eval=np.array([0.3, 1.0]), events=[],
                      switch=switch, breakpoints=[0.3])
    assert seen == [(0.3, ("breakpoint",))]
    x_end = 1.0 + 0.5 * 2.0 * 0.7 ** 2    # x(0.3) = 0.3, then 0.3 + 0.7 + ½·2·0.7²
    states = result.state_array(2)
    np.testing.assert_allclose(states[-1], [x_end, 1.0 + 2.0 * 0.7], rtol=0, atol=1e-12)
    np.testing.assert_allclose(states[0], [0.3, 1.0], rtol=0, atol=1e-14)


def test_an_event_after_the_stiff_switch_restarts_the_implicit_method():
    """y₁' = −λ y₁ (λ = 10⁷ s⁻¹: DOP853's steps are held at its stability bound, the watch switches to Radau) and a
    clock y₂' = 1 whose restart event at y₂ = 4 ms comes after the switch: the run restarts there (no mode switch
    given) and ends at t_end with y₂ = t_end and y₁ = e^(−λ t) ≈ 0 (the method's own name did not replace the
    caller's mode switch)."""
    switched = []
    events = [LoopEvent("clock", lambda t, y: y[1] - 4e-3, 1.0, restart=True)]
    result = run_loop(lambda t, y: np.array([-1e7 * y[0], 1.0]), 0.0, np.array([1.0, 0.0]), 5e-3, method="DOP853",
                      rtol=1e-6, atol=1e-9, max_step=np.inf, t_eval=None, events=events,
                      on_stiff=lambda t, h: switched.append(t) or "Radau")
    assert len(switched) == 1 and switched[0] < 4e-3
    assert result.status == "finished" and result.restarts >= 2   # the switch and the event
    assert [name for name, *_ in result.events] == ["clock"]
    assert result.events[0][1] == pytest.approx(4e-3, abs=1e-12)
    assert result.last_t == 5e-3 and result.last_y[1] == pytest.approx(5e-3, rel=1e-9)
    assert abs(result.last_y[0]) < 1e-9
