"""Closed chains vs Pinocchio's constraint dynamics (RigidConstraintModel CONTACT_3D + constraintDynamics).

Random spatial chains: two random revolute branches from a fixed root, closed by a `point` loop (3 + 3 joints,
3 DOF) or a `revolute` loop (4 + 4 joints, 3 DOF), the loop closed at zero angles by construction. States are
made consistent by `assemble` / `assemble_velocities`. Both our formulations (reduced: ẍ = G q̈ + γ;
multipliers: KKT) must give Pinocchio's accelerations, and the multipliers its contact forces.
"""
import itertools

import numpy as np
import pytest

import biobullet
from biobullet.constraints.assembly import assemble, assemble_velocities
from biobullet.constraints.loops import loop_terms, parse_loops
from biobullet.algorithms.kinematics import frame_placement
from biobullet.dynamics.multipliers import constrained_accelerations, joint_reactions
from biobullet.model.urdf import load_description
from biobullet.validate.loop_oracle import PinocchioLoopOracle
from biobullet.validate.random_models import random_inertia

pytest.importorskip("pinocchio")


def _v(values):
    return " ".join(f"{float(c):.17g}" for c in values)


def _loop_xml(kind, n_a, n_b, xyz_a, xyz_b, extra, independent=None):
    coords = "" if independent is None else f'<coordinates names="{" ".join(independent)}"/>'
    return (f'<biobullet version="1"><gravity xyz="0 0 -9.81"/><loop name="close" type="{kind}" link_a="a{n_a}" '
            f'xyz_a="{_v(xyz_a)}" link_b="b{n_b}" xyz_b="{_v(xyz_b)}"{extra}/>{coords}</biobullet>')


def closed_chain(tmp_path, seed, kind):
    """Write a random closed chain; independent joints = the best-conditioned choice at the zero pose."""
    n_a = n_b = 3 if kind == "point" else 4
    rng = np.random.default_rng(seed)
    lines, names = [f'<robot name="chain_{seed}">', '<link name="root"/>'], []
    for branch, n in (("a", n_a), ("b", n_b)):
        parent = "root"
        for k in range(1, n + 1):
            name = f"{branch}{k}"
            inertia, _ = random_inertia(rng)
            lines.append(f'<link name="{name}"><inertial><origin xyz="{_v(rng.uniform(-0.1, 0.1, 3))}"/>'
                         f'<mass value="{rng.uniform(0.5, 2):.17g}"/><inertia ixx="{inertia[0, 0]:.17g}" '
                         f'ixy="{inertia[0, 1]:.17g}" ixz="{inertia[0, 2]:.17g}" iyy="{inertia[1, 1]:.17g}" '
                         f'iyz="{inertia[1, 2]:.17g}" izz="{inertia[2, 2]:.17g}"/></inertial></link>')
            axis = rng.normal(size=3)
            origin = rng.uniform(-0.3, 0.3, 3) + (np.array([0.5, 0, 0]) if (branch, k) == ("b", 1) else 0)
            lines.append(f'<joint name="j{name}" type="continuous"><parent link="{parent}"/><child link="{name}"/>'
                         f'<origin xyz="{_v(origin)}" rpy="{_v(rng.uniform(-1, 1, 3))}"/>'
                         f'<axis xyz="{_v(axis / np.linalg.norm(axis))}"/></joint>')
            names.append(f"j{name}")
            parent = name
    tree_text = "\n".join(lines) + "\n</robot>"
    path = tmp_path / f"chain_{kind}_{seed}.urdf"
    path.write_text(tree_text)
    tree = biobullet.load_model(path)
    x0 = np.zeros(tree.n_config)
    ra, pa = frame_placement(tree, x0, f"a{n_a}")
    rb, pb = frame_placement(tree, x0, f"b{n_b}")
    xyz_b = rng.uniform(-0.1, 0.1, 3)
    xyz_a = ra.T @ (rb @ xyz_b + pb - pa)
    extra = ""
    if kind == "revolute":
        w = rng.normal(size=3)
        w /= np.linalg.norm(w)
        extra = f' axis_a="{_v(ra.T @ w)}" axis_b="{_v(rb.T @ w)}"'
    path.write_text(tree_text.replace("</robot>", _loop_xml(kind, n_a, n_b, xyz_a, xyz_b, extra) + "</robot>"))
    loops = parse_loops(load_description(path), tree.link_names)
    jac = loop_terms(tree, loops, x0)[1]
    n_eq = loops[0].n_equations
    best = max(itertools.combinations(range(len(names)), n_eq),
               key=lambda d: np.linalg.svd(jac[:, d], compute_uv=False)[-1])
    independent = [n for k, n in enumerate(names) if k not in best]
    path.write_text(tree_text.replace("</robot>", _loop_xml(kind, n_a, n_b, xyz_a, xyz_b, extra, independent)
                                      + "</robot>"))
    return biobullet.load_model(path)


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
