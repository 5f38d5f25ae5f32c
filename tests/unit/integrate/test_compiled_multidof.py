"""The compiled explicit-map right-hand side (integrate/compiled_rhs.py `CompiledReducedRHS`) on models with
multi-DOF joints — PyBullet `spherical`, URDF `planar` and inner `floating` joints, with or without a floating
base — checked against physics (`rhs_oracles`).

At random states (random unit quaternions — and quaternions / planar (cos, sin) pairs scaled off unit length, which
the right-hand side normalises —, random joint angles and rates) ẏ satisfies d'Alembert's principle with
Pinocchio's inverse dynamics (Pinocchio's own spherical, planar and free-flyer joints) and the joint forces written
out, and q̇ is the configuration's rate (Pinocchio's `difference` along the flow). A passive spherical arm conserves
its energy over a run (q̇ = ½ z ⊗ (ω, 0) and the dynamics: a wrong q̇ or a wrong frame for ω breaks it at once), and
the batched tree states are the normalised configurations.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.pipeline.compiled_model import SPARSE
from biobullet.integrate.engine import System
from biobullet.validate.corpus import pybullet_data_root
from rhs_oracles import PinocchioTree, assert_dalembert, normalized


_INERTIA = '<inertia ixx="{a}" ixy="{d}" ixz="{e}" iyy="{b}" iyz="{f}" izz="{c}"/>'


def _link(name: str, mass: float, com: str = "0.02 -0.01 -0.12", scale: float = 1.0) -> str:
    inertia = _INERTIA.format(a=0.03 * scale, b=0.025 * scale, c=0.012 * scale, d=0.001 * scale,
                              e=-0.002 * scale, f=0.0015 * scale)
    return (f'<link name="{name}"><inertial><origin xyz="{com}"/><mass value="{mass}"/>{inertia}</inertial>'
            f'</link>')


def _joint(name: str, kind: str, parent: str, child: str, xyz: str, rpy: str = "0 0 0",
           axis: str = "0 1 0") -> str:
    limit = '<limit lower="-2" upper="2" effort="100" velocity="10"/>' if kind == "revolute" else ""
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{limit}</joint>')


def _write(tmp_path: Path, name: str, links: list[str], joints: list[str], extra: str = "") -> Path:
    text = (f'<robot name="{name}">' + "".join(links) + "".join(joints)
            + f'<biobullet version="1"><gravity xyz="0 0 -9.81"/>{extra}</biobullet></robot>')
    path = tmp_path / f"{name}.urdf"
    path.write_text(text)
    return path


def spherical_arm(tmp_path: Path, forces: bool = True) -> Path:
    """A fixed-base arm: spherical shoulder, revolute elbow, spherical wrist (a multi-DOF joint below a 1-DOF one:
    its velocities lead v, so the tree-sparse solve is out and the dense one serves). With `forces`: a joint
    spring-damper and a constant torque at the elbow; without, a passive arm (energy conserved)."""
    links = [_link("base", 3.0, "0 0 0"), _link("upper", 2.0), _link("fore", 1.2), _link("hand", 0.5, scale=0.3)]
    joints = [_joint("shoulder", "spherical", "base", "upper", "0 0 0.5", "0.2 0 0"),
              _joint("elbow", "revolute", "upper", "fore", "0 0 -0.3", "0 0.1 0", "0.3 1 0"),
              _joint("wrist", "spherical", "fore", "hand", "0.01 0 -0.25", "0 0 0.4")]
    extra = ('<joint_spring joint="elbow" stiffness="4" rest="0.3" damping="0.2"/>'
             '<joint_torque joint="elbow" value="0.4"/>') if forces else ""
    return _write(tmp_path, f"spherical_arm_{forces}", links, joints, extra)


def planar_model(tmp_path: Path) -> Path:
    """A body on a planar joint (plane normal tilted off y: gravity has a component in the plane and one along
    its normal), carrying a revolute pendulum and, below it, a spherical one."""
    links = [_link("base", 3.0, "0 0 0"), _link("sled", 2.5, "0.05 0.02 0"), _link("pend", 1.0),
             _link("bob", 0.6, scale=0.4)]
    joints = [_joint("slide", "planar", "base", "sled", "0 0 0.2", "0.1 0 0", "0.1 1 0.2"),
              _joint("swing", "revolute", "sled", "pend", "0.1 0 0", "0 0 0.3", "0 1 0"),
              _joint("ball", "spherical", "pend", "bob", "0 0 -0.3")]
    return _write(tmp_path, "planar_model", links, joints,
                  '<joint_spring joint="swing" stiffness="2" rest="0" damping="0.1"/>')


def floating_model(tmp_path: Path) -> Path:
    """A floating torso with two spherical shoulders, a revolute elbow, and an object on an inner URDF `floating`
    joint (a free joint inside the tree) hanging off one hand by nothing but gravity and its own dynamics."""
    links = [_link("torso", 8.0, "0 0 0.1", scale=4.0), _link("arm_l", 1.5), _link("arm_r", 1.5),
             _link("fore_r", 0.9), _link("object", 0.4, "0.01 0 0", scale=0.2)]
    joints = [_joint("shoulder_l", "spherical", "torso", "arm_l", "0 0.2 0.3", "0.3 0 0"),
              _joint("shoulder_r", "spherical", "torso", "arm_r", "0 -0.2 0.3", "-0.3 0 0"),
              _joint("elbow_r", "revolute", "arm_r", "fore_r", "0 0 -0.3", "0 0 0", "0 1 0"),
              _joint("carry", "floating", "fore_r", "object", "0 0 -0.25", "0.2 0.1 0")]
    return _write(tmp_path, "floating_model", links, joints,
                  '<base type="floating"/><joint_torque joint="elbow_r" value="-0.3"/>')


def star_model(tmp_path: Path) -> Path:
    """A floating torso with six spherical limbs, two revolute joints on each (every multi-DOF joint hangs on the
    torso, so every tangent direction follows its parent's and the branched tree takes the tree-sparse solve)."""
    links, joints = [_link("torso", 10.0, "0 0 0", scale=5.0)], []
    for k in range(6):
        angle = k * np.pi / 3
        links += [_link(f"limb{k}", 1.0), _link(f"mid{k}", 0.7), _link(f"tip{k}", 0.4, scale=0.5)]
        joints += [_joint(f"ball{k}", "spherical", "torso", f"limb{k}",
                          f"{0.3 * np.cos(angle):.4f} {0.3 * np.sin(angle):.4f} 0", f"0 0 {angle:.4f}"),
                   _joint(f"knee{k}", "revolute", f"limb{k}", f"mid{k}", "0 0 -0.3", "0 0 0", "0 1 0"),
                   _joint(f"ankle{k}", "revolute", f"mid{k}", f"tip{k}", "0 0 -0.25", "0 0 0", "1 0 0")]
    return _write(tmp_path, "star_model", links, joints, '<base type="floating"/>')


def pybullet_humanoid() -> Path | None:
    """pybullet_data's humanoid/humanoid.urdf (8 spherical + 4 revolute joints, nv 28), or None."""
    root = pybullet_data_root()
    path = Path(root) / "humanoid" / "humanoid.urdf" if root else None
    return path if path is not None and path.is_file() else None


def _models(tmp_path: Path) -> dict:
    models = {"spherical arm": biobullet.load_model(spherical_arm(tmp_path)),
              "planar joint, revolute, spherical": biobullet.load_model(planar_model(tmp_path)),
              "floating base, spherical, inner floating": biobullet.load_model(floating_model(tmp_path)),
              "floating torso, six spherical limbs (tree-sparse solve)": biobullet.load_model(star_model(tmp_path))}
    humanoid = pybullet_humanoid()
    if humanoid is not None:
        models["pybullet_data humanoid"] = biobullet.load_model(humanoid)
        ball = humanoid.parents[1] / "spherical_joint_limit.urdf"   # one spherical joint (its limit not modelled)
        if ball.is_file():
            models["pybullet_data spherical_joint_limit"] = biobullet.load_model(ball, inertia="repair")
    return models


def random_state(system: System, rng: np.random.Generator, unit: bool) -> np.ndarray:
    """A state vector with random unit quaternions (scaled by a random factor in [0.5, 2] unless `unit`), random
    planar angles as (cos, sin) (scaled likewise), random positions, joint angles and velocities."""
    model = system.model
    y = system.initial_vector(None, 0.0)
    n_pos, n_vel = system.n_pos, system.n_vel
    y[:n_pos] = rng.normal(scale=0.7, size=n_pos)
    y[n_pos:n_pos + n_vel] = rng.normal(scale=1.5, size=n_vel)
    for body in model.bodies:
        if not body.multi_dof:
            continue
        k = body.q_index
        scale = 1.0 if unit else rng.uniform(0.5, 2.0)
        if body.joint_type in ("free", "spherical"):
            k += 3 if body.joint_type == "free" else 0
            z = rng.normal(size=4)
            y[k:k + 4] = scale * z / np.linalg.norm(z)
        else:   # planar: (x, y, cos φ, sin φ)
            phi = rng.uniform(-np.pi, np.pi)
            y[k + 2:k + 4] = scale * np.array([np.cos(phi), np.sin(phi)])
    return y


def test_models_have_the_multi_dof_joints_they_claim(tmp_path):
    kinds = {label: sorted({b.joint_type for b in m.bodies}) for label, m in _models(tmp_path).items()}
    assert kinds["spherical arm"] == ["revolute", "spherical"]
    assert kinds["planar joint, revolute, spherical"] == ["planar", "revolute", "spherical"]
    assert kinds["floating base, spherical, inner floating"] == ["free", "revolute", "spherical"]
    floating = _models(tmp_path)["floating base, spherical, inner floating"]
    assert floating.floating_base and sum(b.joint_type == "free" for b in floating.bodies) == 2
    if "pybullet_data humanoid" in kinds:
        humanoid = _models(tmp_path)["pybullet_data humanoid"]
        assert (humanoid.nv, sum(b.joint_type == "spherical" for b in humanoid.bodies)) == (28, 8)


def _law(system):
    """The joint forces written out from the files: spherical arm — elbow spring-damper τ = −4 (θ − 0.3) − 0.2 θ̇
    and torque 0.4 N m; planar model — swing spring-damper −2 θ − 0.1 θ̇; floating model — elbow_r torque −0.3 N m;
    URDF limit stops (every model) act only beyond their limits, which the sampled states stay inside (asserted)."""
    from biobullet.forces.base import joint_indices
    model = system.model
    terms = {"spherical_arm_True": [("elbow", 4.0, 0.3, 0.2, 0.4)], "planar_model": [("swing", 2.0, 0.0, 0.1, 0.0)],
             "floating_model": [("elbow_r", 0.0, 0.0, 0.0, -0.3)]}.get(model.description.name, [])
    slots = [joint_indices(model, name, None) + (k, rest, c, torque) for name, k, rest, c, torque in terms]
    stops = [e for e in system.elements if type(e).__name__ == "JointStop"]
    assert len(system.elements) == len(stops) + sum((t[1] != 0.0) + (t[4] != 0.0) for t in terms), system.elements
    limits = [(joint_indices(model, e.joint, None)[0], e.lower, e.upper) for e in stops]

    def force(x, xd, t):
        for i, lower, upper in limits:
            assert (lower is None or x[i] > lower) and (upper is None or x[i] < upper), "a stop would act"
        tau = np.zeros(len(xd))
        for i, k, stiffness, rest, damping, torque in slots:
            tau[k] += -stiffness * (x[i] - rest) - damping * xd[k] + torque
        return tau
    return force, limits


def _inside(y: np.ndarray, limits) -> np.ndarray:
    """The stopped joints' positions clipped 10 mrad inside their limits (no joint functions: q indices = x's)."""
    for i, lower, upper in limits:
        y[i] = np.clip(y[i], -np.inf if lower is None else lower + 1e-2, np.inf if upper is None else upper - 1e-2)
    return y


def test_rhs_satisfies_dalembert_with_pinocchio(tmp_path):
    if pybullet_humanoid() is None:
        pytest.skip("pybullet_data is not installed: its humanoid is one of the models checked")
    rng = np.random.default_rng(11)
    for label, model in _models(tmp_path).items():
        if label == "pybullet_data spherical_joint_limit":
            continue   # loaded with inertia="repair": Pinocchio reads the file's unrepaired inertia
        system = System(model, None)
        assert system.right_hand_side()["path"] == "compiled explicit map", label
        if "tree-sparse" in label:   # every direction after its parent: M = Lᵀ D L over the tree
            assert model.compiled.solver == SPARSE
        else:   # a multi-DOF joint below a 1-DOF one: dense solve
            assert model.compiled.solver != SPARSE, label
        force, limits = _law(system)
        tree = PinocchioTree(model)
        for sample in range(4):
            y = _inside(random_state(system, rng, unit=sample % 2 == 0), limits)
            t = float(rng.uniform(0.0, 1.0))
            ydot = system.rhs(t, y)
            unit = normalized(system, y)
            if sample % 2:   # off-unit quaternions and pairs: the accelerations are those of the normalised state
                reference = system.rhs(t, unit)
                rows = slice(system.n_pos, system.n_pos + system.n_vel)
                np.testing.assert_allclose(ydot[rows], reference[rows], rtol=0,
                                           atol=1e-13 * max(1.0, np.abs(reference[rows]).max()))
                ydot = reference
            assert_dalembert(system, tree, t, unit, ydot, force)


def test_zero_quaternion_hands_over_to_the_generic_path(tmp_path):
    fast = System(biobullet.load_model(spherical_arm(tmp_path)), "reduced")
    y = fast.initial_vector(None, 0.0)
    y[0:4] = 0.0   # the shoulder's quaternion
    assert fast._compiled(0.0, y) is None


def test_passive_spherical_arm_conserves_energy(tmp_path):
    """A passive spherical arm started off rest swings for 1 s: T + V constant to far below the energy scale
    (≈ 12 J) times 100 rtol (measured: 7.8e-10 J)."""
    model = biobullet.load_model(spherical_arm(tmp_path, forces=False))
    q0, v0 = model.initial_state()
    q0[0:4] = np.array([0.3, -0.2, 0.1, 0.9]) / np.linalg.norm([0.3, -0.2, 0.1, 0.9])
    q0[4:8] = np.array([-0.1, 0.4, 0.2, 0.8]) / np.linalg.norm([-0.1, 0.4, 0.2, 0.8])
    q0[8] = 0.7
    v0[:] = [1.0, -0.5, 2.0, 0.3, -1.2, 0.8, 1.5]
    run = biobullet.simulate(model, 1.0, rtol=1e-10, atol=1e-12, initial=(q0, v0), progress=False)
    assert run.meta["right_hand_side"]["path"] == "compiled explicit map"
    energy = run.total_energy()
    swing = np.ptp(run.energy["kinetic"])
    assert swing > 1.0   # energy really moves between kinetic and potential
    assert np.ptp(energy) < 1e-8 * max(1.0, float(np.abs(energy).max())), np.ptp(energy)   # measured 6.6e-11


def test_batched_tree_states_normalise_every_row(tmp_path):
    """`System.observed_states` (all samples at once) on states with off-unit quaternions and planar pairs: each
    row is the state with every quaternion and (cos, sin) pair divided by its norm, the rest unchanged, and ẋ = v
    (no joint functions) — exactly, up to the division's round-off."""
    rng = np.random.default_rng(3)
    for path in (spherical_arm(tmp_path), planar_model(tmp_path), floating_model(tmp_path)):
        system = System(biobullet.load_model(path), "reduced", {})
        ys = np.array([random_state(system, rng, unit=False) for _ in range(6)])
        x, xd = system.observed_states(np.linspace(0.0, 0.5, 6), ys)
        expected = ys[:, :system.n_pos].copy()
        for body in system.model.bodies:
            if body.multi_dof:
                start = body.q_index + (3 if body.joint_type == "free" else 2 if body.joint_type == "planar" else 0)
                end = start + (2 if body.joint_type == "planar" else 4)
                expected[:, start:end] /= np.linalg.norm(expected[:, start:end], axis=1)[:, None]
        assert np.abs(x - expected).max() < 1e-14, path.name
        assert np.array_equal(xd, ys[:, system.n_pos:system.n_pos + system.n_vel]), path.name


@pytest.mark.parametrize("build", [spherical_arm, planar_model, floating_model])
def test_a_zero_quaternion_or_planar_pair_is_named_by_the_public_calls(tmp_path, build):
    """Every quaternion (free base, inner free joint, spherical joint) and planar (cos, sin) pair of q set to zero
    in turn: each public call raises one ModelError naming argument q and that block's coordinates, and what a
    valid block looks like (a planar pair is not asked to be a quaternion), never a NaN result."""
    model = biobullet.load_model(build(tmp_path))
    names, v = model.coordinate_names, np.zeros(model.nv)
    blocks = [names[k - 3:k + 1] for k, n in enumerate(names) if n.endswith("_qw")]
    blocks += [names[k - 1:k + 1] for k, n in enumerate(names) if n.endswith("_sin")]
    assert blocks
    for block in blocks:
        q = model.neutral_configuration()
        q[[names.index(n) for n in block]] = 0.0
        expected = "(cos, sin) pair" if block[-1].endswith("_sin") else "quaternion x y z w"
        for call in (lambda: model.mass_matrix(q), lambda: model.bias_forces(q, v),
                     lambda: model.forward_dynamics(q, v)):
            with pytest.raises(biobullet.ModelError, match=r"argument 'q'.*\(" + ", ".join(block) + r"\) is zero"
                               + ".*" + re.escape(expected)):
                call()
