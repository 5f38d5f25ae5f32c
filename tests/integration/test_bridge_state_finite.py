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


@pytest.mark.parametrize("floating", [False, True])
def test_a_model_without_rows_reports_a_runaway_step(tmp_path, floating) -> None:
    """The plan of a model without rows (`Bridge._apply_plain`: the watch's runaway check alone) still stops a runaway:
    a joint rate beyond RUNAWAY_RATE set between two steps is one DivergenceError naming the joint and dt, a NaN
    rate one naming the non-finite state — on the spherical arm (a spherical joint's state conversion), fixed and
    floating."""
    from spherical_arms import ARM
    from biobullet.bridge.lifecycle import RUNAWAY_RATE
    (tmp_path / "arm.urdf").write_text(ARM)
    model = biobullet.load_model(tmp_path / "arm.urdf", floating_base=floating)
    for rate, message in ((2.0 * RUNAWAY_RATE, r"joint 'elbow' moves at .* dt = 0.001"), (float("nan"), "not finite")):
        with biobullet.Bridge(model, dt=1e-3) as bridge:
            assert bridge.constraints.n == 0
            for _ in range(3):
                bridge.step()
            elbow = bridge.joint_index["elbow"]
            p.resetJointState(bridge.body, elbow, 0.3, rate, physicsClientId=bridge.client)
            with pytest.raises(DivergenceError, match=message):
                bridge.step()
