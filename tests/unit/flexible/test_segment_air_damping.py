"""The air damping of segmented flexible links (`flexible.segments._air_damping_force_py`, a force kernel on the
tree kinematics; the same kernel serves the element and the pipeline's force stage) against −Σ c Jᵀ J ẋ written
here with the frame Jacobians (`algorithms.kinematics.frame_jacobian`, equal to Pinocchio's in
tests/validation/test_joint_types.py) at random states of the elastic 3-link robot (floating base, 4 segments per
link): τ and the dissipated power to round-off. Also checks τ = −∂D/∂ẋ with D = ½ Σ c |v|² (so ẋᵀτ = −power)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from biobullet.algorithms.kinematics import frame_jacobian
from biobullet.flexible.segments import load_segmented_model
from biobullet.forces import force_elements

ROOT = Path(__file__).resolve().parents[3]


def _terms(model, damper, x):
    """(c, world linear point Jacobian) of each lumped drag point of a damper, by frame Jacobians."""
    lay = damper.layout
    for name, (a, b) in zip(lay.body_names(), lay.bodies):
        jac = frame_jacobian(model, x, name, np.array([0.5 * (b - a), 0.0, 0.0]))[:3]
        yield lay.air_damping * (b - a), jac


def test_compiled_air_damping_equals_frame_jacobian_path():
    model, _ = load_segmented_model(ROOT / "urdf" / "elastic_robot_3link.urdf", segments=4)
    dampers = [e for e in force_elements(model) if e.tag == "segment_air_damping"]
    assert dampers
    rng = np.random.default_rng(3)
    for _ in range(4):
        q = rng.normal(size=model.nq)
        v = rng.normal(size=model.nv)
        x, xd, _, _ = model.joint_state(q, v, 0.0)
        for damper in dampers:
            fast_tau, fast_power = damper._evaluate(model, x, xd)
            slow_tau = np.zeros(model.n_tangent)
            slow_power = 0.0
            for c, jac in _terms(model, damper, x):
                slow_tau -= c * (jac.T @ (jac @ xd))
                slow_power += c * float(np.dot(jac @ xd, jac @ xd))
            scale = max(np.abs(slow_tau).max(), 1e-12)
            np.testing.assert_allclose(fast_tau, slow_tau, rtol=0, atol=1e-12 * scale)
            assert fast_power == pytest.approx(slow_power, rel=1e-12)
            assert float(xd @ fast_tau) == pytest.approx(-fast_power, rel=1e-12)   # ẋᵀτ = −Σ c |v|²


def test_pipeline_force_stage_with_air_damping_equals_frame_jacobian_path():
    """The bridge's force stage (`bridge.force_stage.ForceStage`: the pipeline's compiled force stage with the bending
    joint springs, the links' stops and the air damping's force kernel, called by address) against the elements'
    Python forms: each damper's −Σ c Jᵀ J ẋ on independent kinematics (frame Jacobians), the joint elements'
    `generalized_force`."""
    from biobullet.bridge.force_stage import ForceStage

    model, _ = load_segmented_model(ROOT / "urdf" / "elastic_robot_3link.urdf", segments=4)
    elements = force_elements(model)
    assert {e.tag for e in elements} >= {"segment_air_damping", "joint_spring"}
    stage = ForceStage(model)
    assert stage._entry is not None and not stage._joint_only   # the compiled stage with its plug-in rows
    rng = np.random.default_rng(5)
    for _ in range(3):
        x, xd, _, _ = model.joint_state(rng.normal(size=model.nq), rng.normal(size=model.nv), 0.0)
        expected = np.zeros(model.n_tangent)
        for element in elements:
            if element.tag == "segment_air_damping":
                for c, jac in _terms(model, element, x):
                    expected -= c * (jac.T @ (jac @ xd))
            else:
                expected += element.generalized_force(model, x, xd, 0.0)
        got = stage.torque(x, xd, 0.0)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * max(np.abs(expected).max(), 1.0))
