"""An imported OpenSim model on PyBullet (`Bridge`): the bridge converges to the reference engine at first order.

arm26 (two CustomJoints, the shoulder on a ground-welded base): semi-implicit Euler is first order, so halving dt
halves the gap to an accurate engine run (rtol 1e-11). leg6dof9musc is not used here: PyBullet replaces its toes'
inertia tensor (it violates the triangle inequality by a rounding margin) and cannot take it back
(docs/robots.md), so its bridge converges to a slightly different model.
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

pytest.importorskip("pybullet", reason="the bridge needs PyBullet")

import biobullet  # noqa: E402
from bridge_convergence import bridge_orders  # noqa: E402  (tests/bridge_convergence.py)

ARM26 = os.path.join(os.path.dirname(biobullet.__file__), "data", "opensim", "arm26.osim")


def test_arm26_bridge_converges_to_the_engine_at_first_order():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # markers are reported, not imported
        model = biobullet.load_model(ARM26)
    q0, _ = model.initial_state()
    v0 = np.random.default_rng(1).normal(size=model.nv)
    errors, orders = bridge_orders(model, q0, v0)
    assert np.all((orders > 0.85) & (orders < 1.15)), (errors, orders)
