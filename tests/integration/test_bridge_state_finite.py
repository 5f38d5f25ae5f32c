"""Bridge.state() never hands out NaN: a diverged PyBullet state is one clear DivergenceError naming the step."""
from __future__ import annotations

import math

import pybullet as p
import pytest

import biobullet
from biobullet.bridge.lifecycle import DivergenceError
from biobullet.model.bundled import bundled_model


def test_non_finite_pybullet_state_is_a_divergence_error() -> None:
    model = biobullet.load_model(bundled_model("arm7.urdf"))
    with biobullet.Bridge(model) as bridge:
        t, x, xd = bridge.state()
        assert all(math.isfinite(v) for v in (*x, *xd))
        joint = next(j for j in range(p.getNumJoints(bridge.body, physicsClientId=bridge.client))
                     if p.getJointInfo(bridge.body, j, physicsClientId=bridge.client)[2] != p.JOINT_FIXED)
        p.resetJointState(bridge.body, joint, 0.0, float("nan"), physicsClientId=bridge.client)
        with pytest.raises(DivergenceError, match="dt"):
            bridge.state()
