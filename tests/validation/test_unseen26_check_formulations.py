"""The check formulations (`reduced_recursive`, `matrix_calculus`, `reduced_pinocchio`, `link_segment`) on robots
the other tests have not seen, against Pinocchio built straight from the same URDF file (`pin.buildModelFromUrdf`,
joints matched by name: no biobullet code between the file and the oracle).

Tolerances scale with the conditioning of the answer: an M or h summed by a recursion is off by a few ε of its
largest entry; v̇ = M⁻¹(Q − h), and link_segment's M = (C A⁻¹ B)⁻¹, may lose cond(M) more (Higham, ch. 7), so those
are checked to 10·cond(M)·ε relative to the largest entry.
"""
from __future__ import annotations

import numpy as np
import pytest

import biobullet

pin = pytest.importorskip("pinocchio")

# the 1e4 kg links are meant (the unit heuristic warns about them)
pytestmark = pytest.mark.filterwarnings("ignore:.*looks like the wrong unit")

EPS = np.finfo(float).eps


def _inertial(rng, mass: float) -> str:
    rotation, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    # principal moments in [1, 2] (triangle inequality), turned by a random rotation: every entry non-zero
    inertia = rotation @ np.diag(rng.uniform(1.0, 2.0, 3)) @ rotation.T * 0.01 * mass
    xyz, rpy = rng.uniform(-0.1, 0.1, 3), rng.uniform(-1.0, 1.0, 3)
    return (f'<inertial><origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>'
            f'<mass value="{mass}"/><inertia ixx="{inertia[0, 0]}" iyy="{inertia[1, 1]}" izz="{inertia[2, 2]}" '
            f'ixy="{inertia[0, 1]}" ixz="{inertia[0, 2]}" iyz="{inertia[1, 2]}"/></inertial>')


def chain_urdf(masses, seed: int = 7) -> str:
    """A revolute chain: every joint origin rotated, every axis oblique to its frame, every inertia off-diagonal
    in a rotated inertial frame; link k + 1 has mass masses[k] (kg)."""
    rng = np.random.default_rng(seed)
    links = [f'<link name="l0">{_inertial(rng, 1.0)}</link>']
    joints = []
    for k, mass in enumerate(masses, start=1):
        links.append(f'<link name="l{k}">{_inertial(rng, mass)}</link>')
        xyz, rpy = rng.uniform(-0.3, 0.3, 3), rng.uniform(-1.5, 1.5, 3)
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        joints.append(f'<joint name="j{k}" type="revolute"><parent link="l{k - 1}"/><child link="l{k}"/>'
                      f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>'
                      f'<axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>'
                      '<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>')
    return '<?xml version="1.0"?>\n<robot name="chain">\n' + "\n".join(links + joints) + "\n</robot>\n"


class Oracle:
    """Pinocchio's CRBA and RNEA of the URDF file (a free-flyer root for a floating base: the same q layout —
    position, quaternion x y z w — and body-frame twist), the joints in the model's order (matched by name)."""

    def __init__(self, model, path) -> None:
        self.pin_model = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if model.floating_base
                          else pin.buildModelFromUrdf(str(path)))
        self.data = self.pin_model.createData()
        base_q, base_v = (7, 6) if model.floating_base else (0, 0)
        assert self.pin_model.nv == model.nv and self.pin_model.nq == model.nq   # revolute joints only
        joints = [self.pin_model.joints[self.pin_model.getJointId(name)] for name in model.joint_names]
        self.q_order = np.r_[np.arange(base_q), [j.idx_q for j in joints]].astype(int)
        self.v_order = np.r_[np.arange(base_v), [j.idx_v for j in joints]].astype(int)

    def mass_and_bias(self, q, v):
        """(M, h) at q with its quaternion scaled to unit length (the model's contract)."""
        qp, vp = np.empty(len(q)), np.empty(len(v))
        qp[self.q_order], vp[self.v_order] = q, v
        qp = pin.normalize(self.pin_model, qp)
        mass = pin.crba(self.pin_model, self.data, qp)
        mass = np.triu(mass) + np.triu(mass, 1).T
        bias = pin.rnea(self.pin_model, self.data, qp, vp, np.zeros_like(vp))
        return mass[np.ix_(self.v_order, self.v_order)], bias[self.v_order]


def _relative(ours, oracle) -> float:
    return float(np.max(np.abs(ours - oracle)) / np.max(np.abs(oracle)))


def _model(tmp_path, text: str, name: str):
    path = tmp_path / f"{name}.urdf"
    path.write_text(text)
    return biobullet.load_model(path, joint_limits=False), path


#: neighbours 1e10 apart in mass (a 1 mg marker on a 10 t link): physical, and M stays well conditioned (cond ≈ 1e5)
TINY_BESIDE_HUGE = (1e-6, 1e4, 1e-4, 1e3, 1e-5, 1.0)


@pytest.mark.parametrize("formulation", ["link_segment", "reduced_recursive", "matrix_calculus", "reduced"])
def test_masses_far_apart_match_pinocchio_to_the_conditioning(tmp_path, formulation):
    """link_segment's Schur solve eliminates the segments' inertia blocks first, without pivoting: 1e-6 kg beside
    1e4 kg left its first solve 1e-5 off and its one refinement step 1e-10 — M, h and v̇ 1e-9 from Pinocchio on
    main, 50× cond(M)·ε. Refining until the correction is negligible gives ≈ 2e-15."""
    model, path = _model(tmp_path, chain_urdf(TINY_BESIDE_HUGE), "tiny_beside_huge")
    oracle = Oracle(model, path)
    rng = np.random.default_rng(0)
    for k in range(6):
        q = rng.uniform(-2.0, 2.0, model.nq)
        v = rng.normal(size=model.nv) * (1.0 if k % 2 else 30.0)   # large velocities too
        tau = rng.normal(size=model.nv)
        mass_ref, bias_ref = oracle.mass_and_bias(q, v)
        condition = np.linalg.cond(mass_ref)
        tolerance = 10.0 * condition * EPS
        accel_ref = np.linalg.solve(mass_ref, tau - bias_ref)
        assert _relative(model.mass_matrix(q, formulation=formulation), mass_ref) <= tolerance
        assert _relative(model.bias_forces(q, v, formulation=formulation), bias_ref) <= tolerance
        assert _relative(model.forward_dynamics(q, v, tau, formulation=formulation), accel_ref) <= tolerance


@pytest.mark.parametrize("formulation", ["reduced_pinocchio", "reduced_recursive", "matrix_calculus", "link_segment",
                                         "reduced"])
def test_a_quaternion_not_of_unit_length_is_scaled_by_every_formulation(tmp_path, formulation):
    """The model scales a non-zero quaternion to unit length (`Model.check_rotations`); reduced_pinocchio handed
    it to Pinocchio as given: with the floating base's quaternion of norm 2, M and h 5× off (no error). Every
    formulation must give Pinocchio's numbers at the scaled quaternion (ε-level sums: 1e-13 relative)."""
    model, path = _model(tmp_path, chain_urdf((1.0, 2.0, 0.5, 1.5)), "floating_chain")
    model = biobullet.load_model(path, floating_base=True, joint_limits=False)
    oracle = Oracle(model, path)
    rng = np.random.default_rng(1)
    for norm in (2.0, 0.25, 1.0 + 1e-9):
        q = rng.uniform(-2.0, 2.0, model.nq)
        quaternion = rng.normal(size=4)
        q[3:7] = norm * quaternion / np.linalg.norm(quaternion)
        v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        mass_ref, bias_ref = oracle.mass_and_bias(q, v)
        accel_ref = np.linalg.solve(mass_ref, tau - bias_ref)
        tolerance = 10.0 * np.linalg.cond(mass_ref) * EPS
        assert _relative(model.mass_matrix(q, formulation=formulation), mass_ref) <= 1e-13
        assert _relative(model.bias_forces(q, v, formulation=formulation), bias_ref) <= 1e-13
        assert _relative(model.forward_dynamics(q, v, tau, formulation=formulation), accel_ref) <= tolerance


BALL_POINT_MASS = '''<?xml version="1.0"?>
<robot name="ball_point_mass">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="bob"><inertial><origin xyz="0.1 -0.2 -0.5"/><mass value="2"/>
    <inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="ball" type="{kind}"><parent link="base"/><child link="bob"/><origin xyz="0 0 1" rpy="0.2 0.1 -0.3"/>{axis}</joint>
</robot>
'''


@pytest.mark.parametrize("kind, axis", [
    ("spherical", ""),   # the point mass turns freely about the line from the ball to it
    ("revolute", '<axis xyz="0.1 -0.2 -0.5"/><limit lower="-3" upper="3" effort="1" velocity="1"/>'),   # on the axis
])
def test_a_direction_that_moves_no_mass_is_refused_by_link_segment(tmp_path, kind, axis):
    """A point mass (zero inertia tensor) on a ball joint, or on its hinge's axis: M is singular (Pinocchio: its
    smallest eigenvalue ≤ 1e-15 of its largest). The other formulations refuse v̇ with a SolverError; link_segment
    solved its (singular) square system by LAPACK, which took a 1e-17 pivot, and returned v̇ ≈ 1e18 and an M of
    ≈ 1e-18 (Pinocchio's largest entry: 0.58) without an error."""
    path = tmp_path / f"{kind}_point_mass.urdf"
    path.write_text(BALL_POINT_MASS.format(kind=kind, axis=axis))
    model = biobullet.load_model(path, joint_limits=False)
    q = model.neutral_configuration()
    if kind == "spherical":
        q[:] = np.random.default_rng(0).normal(size=4)   # (scaled to unit length by the model)
    v = np.array([0.3, -0.2, 0.5])[:model.nv]
    # the oracle: Pinocchio's M of the same tree is singular to round-off here
    from biobullet.validate.oracles import PinocchioOracle   # (the URDF parser has no spherical joints)
    oracle = PinocchioOracle(model)
    eigenvalues = np.linalg.eigvalsh(oracle.mass_matrix(q))
    assert abs(eigenvalues[0]) <= 1e-15 * max(abs(eigenvalues[-1]), 1.0)
    for call in (lambda: model.forward_dynamics(q, v, formulation="link_segment"),
                 lambda: model.mass_matrix(q, formulation="link_segment"),
                 lambda: model.bias_forces(q, v, formulation="link_segment")):
        with pytest.raises(biobullet.SolverError, match="link-segment system is singular"):
            call()


# a ball joint whose child's tensor violates the triangle inequality (0.1 > 0.01 + 0.012, positive definite: the
# model and Pinocchio keep it), which PyBullet replaces by zero in a frame that does not diagonalise it (so
# changeDynamics cannot restore it): PyBullet's variant is a point mass on a ball
BALL_IMPOSSIBLE_TENSOR = '''<?xml version="1.0"?>
<robot name="ball_impossible_tensor">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="upper"><inertial><origin xyz="0.05 0 -0.3"/><mass value="2"/>
    <inertia ixx="0.05" iyy="0.04" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="bob"><inertial><origin xyz="0.1 -0.2 -0.5"/><mass value="1.5"/>
    <inertia ixx="0.1" iyy="0.01" izz="0.012" ixy="0.004" ixz="-0.003" iyz="0.002"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/><origin xyz="0 0 1"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="ball" type="spherical"><parent link="upper"/><child link="bob"/><origin xyz="0 0 -0.6" rpy="0.2 0.1 -0.3"/></joint>
</robot>
'''


@pytest.mark.filterwarnings("ignore:.*physically impossible inertia")
def test_validate_passes_a_right_model_whose_pybullet_variant_is_singular(tmp_path):
    """`validate` compares PyBullet with the model run on PyBullet's own inertias where PyBullet replaced a
    tensor (here by zero: a point mass on a ball joint, M singular). It judged singularity on the model only, so
    every formulation's forward dynamics on that variant raised a SolverError, reported as a disagreement
    (exit 2) for a model whose every formulation matches Pinocchio; now the variant's singular samples skip
    forward dynamics, with a note, and the Pinocchio checks (tolerance 1e-9) all run and pass."""
    from biobullet.validate.report import validate_model
    path = tmp_path / "ball_impossible_tensor.urdf"
    path.write_text(BALL_IMPOSSIBLE_TENSOR)
    model = biobullet.load_model(path, joint_limits=False)
    report = validate_model(model, samples=3)
    failed = [(c.quantity, c.formulation, c.oracle, c.error) for c in report.checks if not c.ok]
    assert not failed, failed
    compared = {(c.quantity, c.formulation) for c in report.checks if c.oracle == "pinocchio"}
    for name in ("reduced", "reduced_recursive", "link_segment"):
        for quantity in ("mass_matrix", "bias_forces", "forward_dynamics"):
            assert (quantity, name) in compared
    assert any("singular" in note for note in report.notes)


def floating_joint_urdf(seed: int = 21) -> str:
    """A tree with a URDF `floating` joint mid-chain and `continuous` joints on oblique axes (rotated frames,
    off-diagonal inertias)."""
    rng = np.random.default_rng(seed)
    links = [f'<link name="{name}">{_inertial(rng, mass)}</link>'
             for name, mass in (("root", 3.0), ("a", 1.0), ("b", 1.2), ("c", 0.8), ("d", 0.6))]
    joints = []
    for name, kind, parent, child in (("ja", "continuous", "root", "a"), ("fl", "floating", "a", "b"),
                                      ("jc", "continuous", "b", "c"), ("jd", "revolute", "root", "d")):
        xyz, rpy = rng.uniform(-0.3, 0.3, 3), rng.uniform(-1.5, 1.5, 3)
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        extra = (f'<axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>' if kind != "floating" else "") + (
            '<limit lower="-3" upper="3" effort="1" velocity="1"/>' if kind == "revolute" else "")
        joints.append(f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
                      f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>{extra}</joint>')
    return '<?xml version="1.0"?>\n<robot name="mid_floating">\n' + "\n".join(links + joints) + "\n</robot>\n"


def _urdf_pinocchio_mass_and_bias(model, path, q, v):
    """Pinocchio's CRBA and RNEA of the URDF file read by its own parser (continuous joints as (cos, sin), a URDF
    floating joint as a free flyer), mapped to the model's order joint by joint."""
    pm = pin.buildModelFromUrdf(str(path))
    data = pm.createData()
    x, xd, gradient, gamma = model.joint_state(q, v)
    qp, vp, order = np.zeros(pm.nq), np.zeros(pm.nv), np.zeros(model.n_tangent, dtype=int)
    for body in model.bodies:
        joint = pm.joints[pm.getJointId(body.joint)]
        order[body.v_index:body.v_index + body.nv] = np.arange(joint.idx_v, joint.idx_v + joint.nv)
        if joint.nq == 2 and body.nq == 1:   # continuous
            qp[joint.idx_q:joint.idx_q + 2] = np.cos(x[body.q_index]), np.sin(x[body.q_index])
        else:
            qp[joint.idx_q:joint.idx_q + joint.nq] = x[body.q_index:body.q_index + body.nq]
    vp[order] = xd
    mass = pin.crba(pm, data, qp)
    mass = (np.triu(mass) + np.triu(mass, 1).T)[np.ix_(order, order)]
    accel = np.zeros(pm.nv)
    accel[order] = gamma
    bias = pin.rnea(pm, data, qp, vp, accel)[order]
    return gradient.T @ mass @ gradient, gradient.T @ bias


def test_continuous_joints_beside_a_floating_joint_reach_pinocchio(tmp_path):
    """A model with a multi-DOF joint (here a URDF `floating` joint) has its Pinocchio model built joint by joint
    (`conventions.pinocchio_model_from_description`); a continuous joint there called Pinocchio's Python
    `JointModelRevoluteUnboundedUnaligned(axis)`, which takes no axis: reduced_pinocchio raised a Boost.Python
    ArgumentError and `biobullet validate` stopped with 'internal error'. Now the same numbers as Pinocchio's own
    URDF parser (ε-level sums: 1e-13), and validate's Pinocchio checks all run and pass."""
    from biobullet.validate.report import validate_model
    path = tmp_path / "mid_floating.urdf"
    path.write_text(floating_joint_urdf())
    model = biobullet.load_model(path, joint_limits=False)
    floating = next(body for body in model.bodies if body.joint == "fl")
    rng = np.random.default_rng(2)
    for _ in range(3):
        q = rng.uniform(-2.0, 2.0, model.nq)
        quaternion = q[floating.q_index + 3:floating.q_index + 7]
        quaternion /= np.linalg.norm(quaternion)
        v = rng.normal(size=model.nv) * 5.0
        mass_ref, bias_ref = _urdf_pinocchio_mass_and_bias(model, path, q, v)
        mass, bias = (model.mass_matrix(q, formulation="reduced_pinocchio"),
                      model.bias_forces(q, v, formulation="reduced_pinocchio"))
        assert _relative(mass, mass_ref) <= 1e-13
        assert _relative(bias, bias_ref) <= 1e-13
    report = validate_model(model, samples=2, oracles=("pinocchio",))
    assert report.ok and {c.formulation for c in report.checks} >= {"reduced", "reduced_recursive", "link_segment"}


def test_a_ball_of_three_hinges_at_gimbal_lock_is_one_solver_error():
    """pitching_arm's shoulder is a `<segment_joint>` ball of three perpendicular hinges: with the middle one at
    π/2 the first and third axes coincide, M is singular (Pinocchio: smallest eigenvalue ≤ 1e-15 of the largest),
    and the README promises a SolverError. link_segment's Gauss–Jordan on the axes' Gram matrix divided by its
    zero pivot inside the compiled kernel: a bare ZeroDivisionError from forward dynamics, M and h."""
    from biobullet.dynamics import link_segment
    from biobullet.validate.oracles import PinocchioOracle
    model = biobullet.load_model("pitching_arm")
    rng = np.random.default_rng(1)
    q = model.neutral_configuration()
    q[7:] = rng.uniform(-1.0, 1.0, 5)
    q[7 + model.joint_names.index("sh_horizontal")] = np.pi / 2
    v = rng.normal(size=model.nv)
    eigenvalues = np.linalg.eigvalsh(PinocchioOracle(model).mass_matrix(q))
    assert eigenvalues[0] <= 1e-15 * eigenvalues[-1]
    for call in (lambda: model.forward_dynamics(q, v, formulation="link_segment"),
                 lambda: model.mass_matrix(q, formulation="link_segment"),
                 lambda: model.bias_forces(q, v, formulation="link_segment"),
                 lambda: biobullet.joint_reactions(model, q, v),
                 lambda: link_segment.inverse_dynamics(model, q, v, np.zeros(model.nv))):
        with pytest.raises(biobullet.SolverError, match="link-segment system is singular"):
            call()


@pytest.mark.filterwarnings("ignore:.*inertia repaired")
@pytest.mark.parametrize("floating", [False, True])
def test_reduced_pinocchio_uses_the_models_repaired_inertias(tmp_path, floating):
    """Under inertia="repair" the model's tensors are not the file's; reduced_pinocchio built its Pinocchio model
    from the file and so computed the dynamics of the tensor the model had replaced (M 20 % off on a spherical arm,
    no error). Oracle: Pinocchio's own parse of the same chain written with the model's repaired tensor (the repair
    itself is not what is checked here); ε-level sums: 1e-13."""
    import re
    text = chain_urdf((1.0, 2.0, 0.5, 1.5, 0.8))
    impossible = '<inertia ixx="0.1" iyy="0.01" izz="0.012" ixy="0.004" ixz="-0.003" iyz="0.002"/>'
    text = re.sub(r'(<link name="l3">.*?)<inertia [^>]*/>', lambda m: m.group(1) + impossible, text)
    path = tmp_path / "impossible.urdf"
    path.write_text(text)
    model = biobullet.load_model(path, floating_base=floating, inertia="repair", joint_limits=False)
    inertial = next(link for link in model.description.links if link.name == "l3").inertial
    repaired = np.array(inertial.inertia)   # (the link frame's axes, about the COM)
    assert np.abs(np.linalg.eigvalsh(repaired) - np.linalg.eigvalsh(
        [[0.1, 0.004, -0.003], [0.004, 0.01, 0.002], [-0.003, 0.002, 0.012]])).max() > 1e-3
    names = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")
    values = (repaired[0, 0], repaired[1, 1], repaired[2, 2], repaired[0, 1], repaired[0, 2], repaired[1, 2])
    com = " ".join(repr(float(c)) for c in inertial.com)
    physical = tmp_path / "physical.urdf"
    physical.write_text(re.sub(
        r'<link name="l3"><inertial>.*?</inertial>',
        f'<link name="l3"><inertial><origin xyz="{com}" rpy="0 0 0"/><mass value="{inertial.mass!r}"/><inertia '
        + " ".join(f'{name}="{float(value)!r}"' for name, value in zip(names, values)) + "/></inertial>", text))
    oracle = Oracle(biobullet.load_model(physical, floating_base=floating, joint_limits=False), physical)
    rng = np.random.default_rng(4)
    for _ in range(3):
        q = rng.uniform(-2.0, 2.0, model.nq)
        v = rng.normal(size=model.nv)
        mass_ref, bias_ref = oracle.mass_and_bias(q, v)
        assert _relative(model.mass_matrix(q, formulation="reduced_pinocchio"), mass_ref) <= 1e-13
        assert _relative(model.bias_forces(q, v, formulation="reduced_pinocchio"), bias_ref) <= 1e-13
