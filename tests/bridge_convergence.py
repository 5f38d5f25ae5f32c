"""The bridge's first-order convergence to the reference engine, shared by the bridge tests."""
from __future__ import annotations

import numpy as np
import pytest


def bridge_orders(model, q0, v0, t_end: float = 0.3, steps=(4e-3, 2e-3, 1e-3)) -> tuple[list[float], np.ndarray]:
    """(errors, observed orders): the bridge's largest state error at t_end against an accurate engine run (rtol
    1e-11) for each step in `steps`, and log2 of the ratio of successive errors (1 for semi-implicit Euler)."""
    from biobullet.bridge.simulation import simulate_bridge
    from biobullet.integrate.engine import simulate

    reference = simulate(model, t_end, initial=(q0, v0), rtol=1e-11, atol=1e-11, progress=False)
    errors = []
    for dt in steps:
        trajectory = simulate_bridge(model, t_end, dt, initial=(q0, v0))
        assert trajectory.t[-1] == pytest.approx(t_end)
        errors.append(max(np.abs(trajectory.q[-1] - reference.q[-1]).max(),
                          np.abs(trajectory.v[-1] - reference.v[-1]).max()))
    return errors, np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
