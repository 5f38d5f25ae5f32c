"""`Bridge.tree_mass_and_bias(x, ẋ, source=...)`: the one place the bridge takes M and h (`Bridge._mass_and_bias`),
each source against something independent of the kernel it runs.

(1) Every source equals Pinocchio's CRBA and RNEA of the file to 1e-12 relative (round-off of PyBullet's
    principal-axes inertia: measured ≈ 1e-15). After a `changeDynamics` that doubles one link's mass (followed by
    `engine_parameters`), PyBullet's own step from a random state under zero torque, ẍ = (ẋ₁ − ẋ₀)/dt, equals
    M⁻¹(−h) of "pybullet", "stored" and "solve" to 1e-9 relative, while "model" keeps the file's (Pinocchio's) and
    misses the step by ≥ 1 %. Before: "pybullet" returned PyBullet's calculateMassMatrix / calculateInverseDynamics,
    which keep the body as they first saw it — 8.7 rad/s² off the step on arm7 (a 56 rad/s² scale).
(2) The same defect on a bridge with dynamics="pybullet": after a changeDynamics that triples two links' masses
    the four-bar knee's loop, held by M and h that ignored it, stayed 4e-5 m open step after step with a
    CouplingWarning naming a force outside the solve; now the step after the change closes it to ≤ 1e-9 m (the
    bridge's promise after a clean step; measured 7e-12) and the change is named once.
(3) On a floating base "solve" is what the general path takes: the kernel, equal to PyBullet's calls through the
    tangent maps. `inverse_dynamics` equals Pinocchio's M(q) q̈ + h(q, v). A wrong source or state size is one
    ModelError naming the argument.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.bridge import Bridge
from biobullet.bridge.outside import CouplingWarning
from biobullet.core.errors import ModelError
from biobullet.validate.oracles import PinocchioOracle

ROOT = Path(__file__).resolve().parents[2]


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1.0))


def test_sources_follow_pybullets_inertia_or_the_files():
    model = biobullet.load_model(ROOT / "urdf" / "arm7.urdf")
    oracle = PinocchioOracle(model)
    rng = np.random.default_rng(4)
    with Bridge(model, dt=1e-3) as bridge:
        assert bridge.own_dynamics
        x, xd = rng.uniform(-1.0, 1.0, model.n_config), rng.uniform(-1.0, 1.0, model.n_tangent)
        pin_mass, pin_bias = oracle.tree_mass_matrix(x), oracle.tree_inverse_dynamics(x, xd, np.zeros(len(xd)))
        for source in ("pybullet", "stored", "model", "solve"):   # the file's inertia everywhere so far
            mass, bias = bridge.tree_mass_and_bias(x, xd, source=source)
            assert _relative(mass, pin_mass) <= 1e-12 and _relative(bias, pin_bias) <= 1e-12, source
        q, v, qdd = x[bridge.independent_x], xd[bridge.independent_v], rng.normal(size=model.nv)   # (q = x here)
        expected = oracle.mass_matrix(q) @ qdd + oracle.bias_forces(q, v)
        assert _relative(bridge.inverse_dynamics(q, v, qdd), expected) <= 1e-12
        p, c = bridge.pybullet, bridge.client
        link = bridge.map.link_index[model.bodies[2].link]
        p.changeDynamics(bridge.body, link, mass=2.0 * p.getDynamicsInfo(bridge.body, link, physicsClientId=c)[0],
                         physicsClientId=c)
        assert "changed" in bridge.engine_parameters()
        bridge.reset_tree(x, xd)
        p.stepSimulation(physicsClientId=c)   # no torque: ẋ₁ = ẋ₀ + dt M⁻¹(−h) (semi-implicit Euler)
        stepped = (bridge.state()[2] - xd) / bridge.dt
        for source in ("pybullet", "stored", "solve"):
            mass, bias = bridge.tree_mass_and_bias(x, xd, source=source)
            assert _relative(np.linalg.solve(mass, -bias), stepped) <= 1e-9, source
        mass, bias = bridge.tree_mass_and_bias(x, xd, source="model")
        assert _relative(mass, pin_mass) <= 1e-12 and _relative(bias, pin_bias) <= 1e-12
        assert _relative(np.linalg.solve(mass, -bias), stepped) >= 1e-2
        with pytest.raises(ModelError, match="argument 'source'"):
            bridge.tree_mass_and_bias(x, xd, source="file")
        with pytest.raises(ModelError, match="'xd'"):
            bridge.tree_mass_and_bias(x, xd[:-1])


def test_a_pybullet_dynamics_bridge_follows_a_changed_mass():
    model = biobullet.load_model(ROOT / "urdf" / "fourbar_knee.urdf")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Bridge(model, dt=1e-3, dynamics="pybullet") as bridge:
            for _ in range(20):
                bridge.step()
            p, c = bridge.pybullet, bridge.client
            for body in model.bodies[1:3]:
                link = bridge.map.link_index[body.link]
                p.changeDynamics(bridge.body, link, physicsClientId=c,
                                 mass=3.0 * p.getDynamicsInfo(bridge.body, link, physicsClientId=c)[0])
            bridge.step()   # (computed before the change: the watch names it and puts the loop back)
            worst = 0.0
            for _ in range(200):
                bridge.step()
                worst = max(worst, max(abs(r) for r in bridge.constraint_residuals().values()))
    assert worst <= 1e-9
    named = [str(w.message) for w in caught if issubclass(w.category, CouplingWarning)]
    assert len(named) == 1 and "mass or inertia" in named[0]


def test_floating_base_solve_source_is_the_kernel_equal_to_pybullets_calls():
    model = biobullet.load_model(ROOT / "urdf" / "pitching_arm.urdf", floating_base=True)
    rng = np.random.default_rng(9)
    with Bridge(model, dt=1e-3) as bridge:
        assert bridge.own_dynamics
        x, xd = rng.uniform(-1.0, 1.0, model.n_config), rng.uniform(-1.0, 1.0, model.n_tangent)
        x[3:7] /= np.linalg.norm(x[3:7])
        solve = bridge.tree_mass_and_bias(x, xd, source="solve")
        stored = bridge.tree_mass_and_bias(x, xd, source="stored")
        theirs = bridge.tree_mass_and_bias(x, xd)
        assert all(np.array_equal(a, b) for a, b in zip(solve, stored))
        assert _relative(solve[0], theirs[0]) <= 1e-9 and _relative(solve[1], theirs[1]) <= 1e-9
