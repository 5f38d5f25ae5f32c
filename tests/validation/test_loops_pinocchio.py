"""Closed chains vs Pinocchio's constraint dynamics (RigidConstraintModel CONTACT_3D + constraintDynamics).

Random spatial chains: two random revolute branches from a fixed root, closed by a `point` loop (3 + 3 joints,
3 DOF) or a `revolute` loop (4 + 4 joints, 3 DOF), the loop closed at zero angles by construction. States are
made consistent by `assemble` / `assemble_velocities`. Both our formulations (reduced: ẍ = G q̈ + γ;
multipliers: KKT) must give Pinocchio's accelerations, and the multipliers its contact forces.
"""
import numpy as np
import pytest

from biobullet.constraints.assembly import assemble, assemble_velocities
from biobullet.algorithms.kinematics import frame_placement
from biobullet.dynamics.multipliers import constrained_accelerations, joint_reactions
from loop_oracle import PinocchioLoopOracle
from closed_chains import closed_chain

pytest.importorskip("pinocchio")


@pytest.mark.parametrize("kind,seed", [("point", s) for s in range(3)] + [("revolute", s) for s in range(3)])
def test_constrained_dynamics_match_pinocchio(tmp_path, kind, seed):
    model = closed_chain(tmp_path, seed, kind)
    oracle = PinocchioLoopOracle(model)
    rng = np.random.default_rng(100 + seed)
    independent = list(model.coordinate_map.independent)
    for _ in range(2):
        x, residual = assemble(model, rng.uniform(-0.2, 0.2, model.n_config))
        assert residual <= 1e-12
        xd = assemble_velocities(model, x, rng.normal(size=model.n_tangent))
        tau = rng.normal(size=model.n_tangent)
        expected, forces = oracle.accelerations(x, xd, tau)
        scale = np.max(np.abs(expected))
        # multipliers over the full tree coordinates
        xdd, lam = constrained_accelerations(model, x, xd, tau, baumgarte=(0.0, 0.0))
        np.testing.assert_allclose(xdd, expected, rtol=0, atol=1e-8 * scale)
        # reduced: project through the implicit map at the same independent state
        q, v = x[independent], xd[independent]
        xr, xdr, gradient, gamma = model.joint_state(q, v)
        np.testing.assert_allclose(xr, x, rtol=0, atol=1e-11)
        qdd = np.linalg.solve(model.mass_matrix(q), gradient.T @ tau - model.bias_forces(q, v))
        np.testing.assert_allclose(gradient @ qdd + gamma, expected, rtol=0, atol=1e-8 * scale)
        # constraint forces: Pinocchio's λ (LOCAL, on link_a) rotated to world = ours (force on link_a at A)
        reaction = joint_reactions(model, x, lam)[1]["close"]
        f_scale = max(1.0, np.max(np.abs(lam)))
        if kind == "point":
            np.testing.assert_allclose(lam, forces[0], rtol=0, atol=1e-8 * f_scale)
        else:  # two redundant points on the hinge: only the resultant force and moment are unique
            loop = oracle.loops[0]
            offset = frame_placement(model, x, loop.link_a)[0] @ (oracle.revolute_length * loop.axis_a)
            np.testing.assert_allclose(reaction["force"], forces[0] + forces[1], rtol=0, atol=1e-7 * f_scale)
            np.testing.assert_allclose(reaction["moment"], np.cross(offset, forces[1]), rtol=0, atol=1e-7 * f_scale)
