"""The tree kinematics kernel's bias accelerations (the `acc` the loop rows' γ is built from) against central
differences of its own body velocities along the motion: with ẍ = 0, d/dt v_i(x(t), ẋ) = Σ Ṡ ẋ, for every joint
kind — revolute, spherical (a 3-column S whose every column enters v × S ẋ), a floating base. A first-column-only
bias (the kernel's old form) is off by O(1) on the spherical arm."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.constraints.loop_kernels import tree_kinematics_run

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests"))
from spherical_arms import ARM, PENDULUM  # noqa: E402


def _velocities(model, x, xd):
    meta, body = model.tree_pack
    return tree_kinematics_run(meta, body, x, xd, model.n_tangent, True)


@pytest.mark.parametrize("source", ["ball_arm", "spherical_pendulum", "humanoid.urdf"])
def test_bias_acceleration_is_the_rate_of_body_velocities(source, tmp_path):
    if source.endswith(".urdf"):
        model = biobullet.load_model(ROOT / "urdf" / source)
    else:
        path = tmp_path / f"{source}.urdf"
        path.write_text(ARM if source == "ball_arm" else PENDULUM)
        model = biobullet.load_model(path)
    rng = np.random.default_rng(7)
    x0 = model.integrate_configuration(model.neutral_configuration(), rng.normal(size=model.nv), 1.0)
    for _ in range(3):
        xd = rng.normal(size=model.nv)
        *_, acc = _velocities(model, x0, xd)
        h = 1e-6
        after = _velocities(model, model.integrate_configuration(x0, xd, h), xd)[3]
        before = _velocities(model, model.integrate_configuration(x0, xd, -h), xd)[3]
        rate = (after - before) / (2 * h)
        # central differences: truncation O(h²·|v|³) ≈ 1e-11 and round-off ≈ 1e-16/h ≈ 1e-10 at these speeds
        np.testing.assert_allclose(acc, rate, rtol=0, atol=1e-8 * max(1.0, np.abs(rate).max()))
        x0 = model.integrate_configuration(x0, rng.normal(size=model.nv), 0.3)
