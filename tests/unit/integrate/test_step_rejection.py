"""`stepper.run_loop(..., rejects=...)`: a right-hand side that cannot be evaluated at a trial stage rejects the step
(SciPy tries a shorter one) instead of failing the run; when no step can be taken the failure itself is raised.
Oracles: the closed-form solutions y = e^(−t) and q = −t²/2."""
from __future__ import annotations

import numpy as np
import pytest

from biobullet.integrate.stepper import LoopResult, run_loop


class Unevaluable(Exception):
    def __init__(self, t: float, y: np.ndarray) -> None:
        super().__init__(f"cannot evaluate at t = {t:g}")
        self.t, self.y = t, y


@pytest.mark.parametrize("method", ["DOP853", "RK45", "Radau"])
def test_stages_beyond_the_horizon_reject_the_step(method):
    # y' = −y, evaluable only up to 0.05 s past the last accepted time: every longer step has a stage there
    accepted = [0.0]

    def rhs(t, y):
        if t > accepted[0] + 0.05:
            raise Unevaluable(t, y)
        return -y

    t_eval = np.linspace(0.0, 2.0, 21)
    out = run_loop(rhs, 0.0, np.array([1.0]), 2.0, method=method, rtol=1e-10, atol=1e-12, max_step=np.inf,
                   t_eval=t_eval, events=[], on_step=lambda t: accepted.__setitem__(0, t), rejects=(Unevaluable,))
    assert out.status == "finished" and out.steps >= 2.0 / 0.05
    np.testing.assert_allclose(np.ravel(out.state_array(1)), np.exp(-t_eval), rtol=0.0, atol=1e-8)


def test_a_failure_no_step_gets_past_is_raised():
    # free fall q = −t²/2 into a region (q < −1) where the right-hand side cannot be evaluated: the run stops there
    # with that failure (its time and state), not a NaN state or a step-size message
    def rhs(t, y):
        if y[0] < -1.0:
            raise Unevaluable(t, y)
        return np.array([y[1], -1.0])

    result = LoopResult()
    with pytest.raises(Unevaluable) as failure:
        run_loop(rhs, 0.0, np.array([0.0, 0.0]), 3.0, method="DOP853", rtol=1e-9, atol=1e-12, max_step=np.inf,
                 t_eval=None, events=[], result=result, rejects=(Unevaluable,))
    assert failure.value.y[0] < -1.0
    assert result.last_t == pytest.approx(np.sqrt(2.0), abs=1e-6)   # accepted up to the edge q = −1
    assert np.all(np.isfinite(result.last_y)) and result.last_y[0] >= -1.0
