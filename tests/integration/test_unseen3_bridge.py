"""Found by the third unseen-input probe: `Bridge(model)` on its own connection refused the bundled anthropomorph
models (1e5 N/m leg springs on 10 kg links: PyBullet's explicit limit ≈ 0.9 ms < the default 1 ms step) with an
error whose remedy, `bridge.set_time_step`, needs the bridge it had just refused to make. The own connection's
default step now stays inside every always-acting spring's limit (¼ of it, as for flexible links)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import biobullet

URDF = Path(__file__).resolve().parents[2] / "urdf"


def test_own_connection_bridge_runs_the_three_link_anthropomorph() -> None:
    """Default steps for 0.04 s: the linear couplings com_i = c_i·l_i (parsed from the file with xml.etree) hold to
    1e-6 in PyBullet's own joint states, and every joint coordinate stays within 0.5 mm / 0.5 mrad of the reference
    engine's run from the same initial state (first-order bridge; a step beyond the explicit limit diverges)."""
    path = URDF / "anthropomorph_three_link.urdf"
    root = ET.parse(path).getroot()
    couplings = {f.get("joint"): (f.get("inputs"), float(f.get("coefficients")))
                 for f in root.iter("joint_function")}
    model = biobullet.load_model(path)
    bridge = biobullet.Bridge(model)
    try:
        assert bridge.dt <= 1e-3
        pb = bridge.pybullet
        index = {pb.getJointInfo(bridge.body, j, physicsClientId=bridge.client)[1].decode(): j
                 for j in range(pb.getNumJoints(bridge.body, physicsClientId=bridge.client))}

        def position(name: str) -> float:
            return pb.getJointState(bridge.body, index[name], physicsClientId=bridge.client)[0]

        steps = int(round(0.04 / bridge.dt))
        for _ in range(steps):
            bridge.step()
        for joint, (source, coefficient) in couplings.items():
            assert abs(position(joint) - coefficient * position(source)) <= 1e-6, joint
        t = bridge.state()[0]
        assert t == pytest.approx(steps * bridge.dt)
        reference = biobullet.simulate(model, t, rtol=1e-9, atol=1e-9)
        expected = dict(zip(reference.joint_names, reference.positions[-1]))
        got = np.array([position(name) for name in reference.joint_names])
        error = np.abs(got - np.array([expected[n] for n in reference.joint_names])).max()
        assert error <= 5e-4   # measured 4.5e-5 at dt ≈ 0.23 ms
    finally:
        bridge.close()


def _loop_residual(bridge, root) -> float:
    """max over the file's planar <loop>s of the in-plane gap between their two points, from PyBullet's own link
    frames (getLinkState's URDF frame, worldLinkFramePosition/Orientation) and the file's xyz/normal parsed here."""
    pb, client, body = bridge.pybullet, bridge.client, bridge.body
    index = {pb.getJointInfo(body, j, physicsClientId=client)[12].decode(): j
             for j in range(pb.getNumJoints(body, physicsClientId=client))}

    def world(link: str, xyz: str) -> np.ndarray:
        state = pb.getLinkState(body, index[link], computeForwardKinematics=1, physicsClientId=client)
        rotation = np.array(pb.getMatrixFromQuaternion(state[5])).reshape(3, 3)
        return np.array(state[4]) + rotation @ np.array(xyz.split(), dtype=float)

    worst = 0.0
    for loop in root.iter("loop"):
        gap = world(loop.get("link_a"), loop.get("xyz_a")) - world(loop.get("link_b"), loop.get("xyz_b"))
        normal = np.array(loop.get("normal").split(), dtype=float)
        worst = max(worst, float(np.abs(gap - normal * (normal @ gap)).max()))
    return worst


@pytest.mark.parametrize("name, drift, breaks", [("andrews_squeezer", "baumgarte", True),
                                                 ("andrews_squeezer", "predictor", False),
                                                 ("fourbar_knee", "predictor", False)])
def test_a_loop_that_misses_the_promise_on_clean_steps_is_named_once(name, drift, breaks) -> None:
    """DESIGN.md's bridge promise: every loop holds to ≤ 1e-6 or the bridge says once why. Andrews' squeezer at the
    default 1 ms (its 0.03 s motion is fast) left loop gaps beyond 1e-6 m in PyBullet's own link frames within 20
    steps with the loops' Taylor target alone, with nothing outside the solve; the default step-end Newton
    correction now holds them (tests/integration/test_bridge_loop_end_point.py), and so does the knee four-bar:
    both stay silent. With drift="baumgarte" (no step-end correction) the squeezer still misses: one
    CouplingWarning names one of its loops (there was none before the watch measured loops)."""
    import warnings

    from biobullet.bridge.outside import CouplingWarning
    path = URDF / f"{name}.urdf"
    root = ET.parse(path).getroot()
    loops = {loop.get("name") for loop in root.iter("loop")}
    model = biobullet.load_model(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bridge = biobullet.Bridge(model, drift=drift)
        worst = 0.0
        try:
            for _ in range(20):
                bridge.step()
                worst = max(worst, _loop_residual(bridge, root))
        finally:
            bridge.close()
    named = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
    if breaks:
        assert worst > 1e-6
        assert len(named) == 1 and any(f"'{loop}." in named[0] for loop in loops), named
    else:
        assert worst <= 1e-6 and not named, (worst, named)
