"""`integrate.stepper._locate` when an event function is not quite deterministic at round-off (a loop model's g comes
through Newton from a moving warm start): if brentq's own evaluation of g at an end has flipped sign, the crossing
is at the end where |g| was at round-off — never an exception, never a point on the wrong side."""
from __future__ import annotations

import numpy as np

from biobullet.integrate.stepper import LoopEvent, _locate


class _Flaky:
    """g(t) = t − t_cross, except that the value at `at` comes back as −tiny, +tiny, −tiny, … on successive calls
    (`_locate`'s own look sees a bracket, brentq's first evaluations do not)."""

    def __init__(self, t_cross: float, at: float, tiny: float = 1e-17) -> None:
        self.t_cross, self.at, self.tiny, self.calls = t_cross, at, tiny, 0

    def __call__(self, t: float, y) -> float:
        if t == self.at:
            self.calls += 1
            return -self.tiny if self.calls % 2 else self.tiny
        return t - self.t_cross


def _sol(t):
    return np.zeros(1)


def test_crossing_at_the_start_of_the_step_is_taken_there():
    g = _Flaky(t_cross=0.0, at=0.0)   # crossing (upwards) at t_old itself; g(t_old) = −1e-17, then +1e-17
    event = LoopEvent("flaky", g, direction=1.0)
    root = _locate(event, _sol, 0.0, 1.0, g_new=1.0)
    assert 0.0 <= root <= 1e-12      # at the start (moved to g_new's side), not at the step's end


def test_crossing_at_the_end_of_the_step_is_taken_there():
    g = _Flaky(t_cross=1.0, at=1.0, tiny=-1e-17)   # g(t_old) = −1, g(t_new) = +1e-17, then −1e-17
    event = LoopEvent("flaky", g, direction=1.0)
    assert _locate(event, _sol, 0.0, 1.0, g_new=1e-17) == 1.0


def test_a_clean_crossing_is_located_to_round_off():
    event = LoopEvent("clean", lambda t, y: t - 0.3, direction=1.0)
    root = _locate(event, _sol, 0.0, 1.0, g_new=0.7)
    assert 0.3 <= root <= 0.3 + 1e-14
