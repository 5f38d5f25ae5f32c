"""Joints that move no mass, and tiny models that do, against Pinocchio built straight from the same URDF file.

A hinge whose axis passes through a point mass (or through a body whose inertia is symmetric about the axis and
zero along it) has M[j, j] = 0: what the recursions return is round-off (≈ 1e-17 … 1e-19, either sign), and the
relative pivot test (pivot against its own diagonal entry) passed a positive one: v̇ finite and meaningless, no
error. The solves now test each coordinate's own diagonal entry — its inertia about its own motion, before any
elimination — against `spatial.dense.MASS_FLOOR_RATIO` (1e-12) × the bound of that entry from the bodies it moves
(through G for a projected model): a SolverError "coordinate '…' moves no mass". The bound is the subtree's own, so
a 1 mm, 1 g finger, a model in millimetres and grams or a light sensor on a heavy arm is solved as before: there v̇
equals Pinocchio's ABA to 10·cond(M)·ε of its largest entry (Higham, ch. 7: a solve with M loses cond(M)). Pivots
after elimination keep the relative test only (a near-singular posture of joints that each move mass, as the
anthropomorph's straight flight in tests/validation/test_anthropomorph_jump.py, is solved).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet

pin = pytest.importorskip("pinocchio")

# the gram- and millimetre-scale models are meant (the unit heuristic warns about them)
pytestmark = pytest.mark.filterwarnings("ignore:.*looks like the wrong unit")

EPS = np.finfo(float).eps
FORMULATIONS = ("reduced", "reduced_recursive")
LIMIT = '<limit lower="-3" upper="3" effort="1" velocity="1"/>'


def _inertial(mass: float, xyz, inertia=(0.0, 0.0, 0.0)) -> str:
    return (f'<inertial><origin xyz="{xyz[0]:.17g} {xyz[1]:.17g} {xyz[2]:.17g}"/><mass value="{mass}"/>'
            f'<inertia ixx="{inertia[0]}" iyy="{inertia[1]}" izz="{inertia[2]}" ixy="0" ixz="0" iyz="0"/>'
            '</inertial>')


def _vector(values) -> str:
    return " ".join(f"{c:.17g}" for c in values)


def _write(tmp_path, name: str, body: str):
    path = tmp_path / f"{name}.urdf"
    path.write_text(f'<?xml version="1.0"?>\n<robot name="{name}">\n{body}\n</robot>\n', encoding="utf-8")
    return path


def _on_axis_hinge(tmp_path, seed: int, rod: bool):
    """One hinge, its axis oblique (random), through a 0.7 kg point mass at a random distance along the axis, or
    (rod) through the centre of a body whose inertia is 0.01 kg·m² about the two directions across the axis and 0
    along it (the hinge's own frame: axis = x)."""
    rng = np.random.default_rng(seed)
    axis = np.array([1.0, 0.0, 0.0]) if rod else rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    inertial = _inertial(0.7, rng.uniform(-0.5, 0.5) * axis, (0.0, 0.01, 0.01) if rod else (0.0, 0.0, 0.0))
    return _write(tmp_path, "on_axis", f'''<link name="base"/><link name="b">{inertial}</link>
<joint name="hinge" type="revolute"><parent link="base"/><child link="b"/><origin xyz="0.3 -0.2 0.5"
  rpy="{_vector(rng.uniform(-1, 1, 3))}"/><axis xyz="{_vector(axis)}"/>{LIMIT}</joint>''')


@pytest.mark.parametrize("rod", [False, True], ids=["point_mass", "axial_rod"])
@pytest.mark.parametrize("seed", range(4))
def test_hinge_moving_no_mass_is_named(tmp_path, seed, rod):
    """Pinocchio's M of the hinge is 0 to round-off (the joint moves no mass); both formulations refuse it, naming
    the joint, at every state (on main: v̇ ≈ 36, 15 … where the round-off diagonal came out positive)."""
    path = _on_axis_hinge(tmp_path, seed, rod)
    model = biobullet.load_model(path, joint_limits=False)
    pin_model = pin.buildModelFromUrdf(str(path))
    rng = np.random.default_rng(100 + seed)
    for _ in range(3):
        q, v = rng.uniform(-2.0, 2.0, 1), rng.uniform(-1.0, 1.0, 1)
        # the independent oracle: no inertia about the axis (0.7 kg at up to 1.2 m: ordinary entries ≈ 1)
        assert abs(pin.crba(pin_model, pin_model.createData(), q)[0, 0]) < 1e-15
        for formulation in FORMULATIONS:
            with pytest.raises(biobullet.SolverError, match=r"'hinge' moves no mass"):
                model.forward_dynamics(q, v, formulation=formulation)


def test_ball_joint_with_point_mass_at_its_centre_is_named(tmp_path):
    """A spherical joint whose child is a point mass at the joint's centre turns it about no axis with any inertia:
    M's 3 × 3 block is round-off; the first of its directions is named (before: `reduced` returned v̇ at some
    states). Pinocchio's URDF parser has no spherical joint: the oracle is the point mass itself (zero inertia
    about any line through it, so the block's exact value is 0)."""
    path = _write(tmp_path, "ball", f'''<link name="base"/>
<link name="a">{_inertial(1.0, (0.2, 0.0, 0.0), (0.01, 0.02, 0.02))}</link>
<link name="b">{_inertial(0.4, (0.0, 0.0, 0.0))}</link>
<joint name="j1" type="revolute"><parent link="base"/><child link="a"/><origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>
  {LIMIT}</joint>
<joint name="ball" type="spherical"><parent link="a"/><child link="b"/><origin xyz="0.4 0.1 0" rpy="0.2 0.3 0.1"/>
</joint>''')
    model = biobullet.load_model(path, joint_limits=False)
    rng = np.random.default_rng(0)
    for _ in range(4):
        q, v = rng.normal(size=model.nq), rng.normal(size=model.nv)
        assert np.max(np.abs(model.mass_matrix(q)[:3, :3])) < 1e-15
        for formulation in FORMULATIONS:
            with pytest.raises(biobullet.SolverError, match=r"'ball_w[xyz]' moves no mass"):
                model.forward_dynamics(q, v, formulation=formulation)


def test_prismatic_joint_moving_a_massless_link_is_named(tmp_path):
    """A prismatic joint whose child link has no inertial (mass 0): M[j, j] = 0 exactly, named."""
    path = _write(tmp_path, "slider", f'''<link name="base"/>
<link name="a">{_inertial(1.0, (0.2, 0.0, 0.0), (0.01, 0.02, 0.02))}</link><link name="b"/>
<joint name="j1" type="revolute"><parent link="base"/><child link="a"/><origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>
  {LIMIT}</joint>
<joint name="slide" type="prismatic"><parent link="a"/><child link="b"/><origin xyz="0.4 0 0"/><axis xyz="1 0 0"/>
  {LIMIT}</joint>''')
    model = biobullet.load_model(path, joint_limits=False)
    for formulation in FORMULATIONS:
        with pytest.raises(biobullet.SolverError, match=r"'slide' moves no mass"):
            model.forward_dynamics(np.array([0.3, 0.1]), np.array([0.2, -0.1]), formulation=formulation)


def test_chain_whose_last_two_links_are_massless_is_named(tmp_path):
    """A four-link chain whose last two links have no inertial: their two hinges move nothing (Pinocchio's rows of
    M are 0 there); the first of them is named (on main: refused as "no inertia left once the coordinates before
    it are accounted for", which blames a combination)."""
    text = _chain(0.5, 2.0)
    for k in (3, 4):   # the links l3, l4 lose their inertial
        start = text.index(f'<link name="l{k}">')
        text = text[:start] + f'<link name="l{k}"/>' + text[text.index("</link>", start) + len("</link>"):]
    path = _write(tmp_path, "massless_tip", text)
    model = biobullet.load_model(path, joint_limits=False)
    pin_model = pin.buildModelFromUrdf(str(path))
    rng = np.random.default_rng(6)
    for _ in range(3):
        q, v = rng.uniform(-2.0, 2.0, 4), rng.uniform(-1.0, 1.0, 4)
        mass = pin.crba(pin_model, pin_model.createData(), q)
        assert np.max(np.abs(mass[2:, :])) == 0.0 and np.min(np.diag(mass)[:2]) > 0.01
        for formulation in FORMULATIONS:
            with pytest.raises(biobullet.SolverError, match=r"'j3' moves no mass"):
                model.forward_dynamics(q, v, formulation=formulation)

def _chain(length: float, mass: float, n: int = 4, seed: int = 3) -> str:
    """A revolute chain of n links, `length` (m) between joints and `mass` (kg) per link, oblique axes and joint
    frames, each inertia (0.05 … 0.1) · mass · length² in a rotated frame."""
    rng = np.random.default_rng(seed)
    # l0 has mass too: a floating base without any would turn with j1 about j1's axis (M singular, rightly refused)
    root = mass * length ** 2 * 0.1
    parts = [f'<link name="l0">{_inertial(mass, (0.0, 0.0, 0.0), (root, root, root))}</link>']
    for k in range(1, n + 1):
        rotation, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        inertia = rotation @ np.diag(rng.uniform(0.05, 0.1, 3)) @ rotation.T * mass * length ** 2
        com = rng.uniform(-0.5, 0.5, 3) * length
        parts.append(f'<link name="l{k}"><inertial><origin xyz="{_vector(com)}"/><mass value="{mass}"/>'
                     f'<inertia ixx="{inertia[0, 0]:.17g}" iyy="{inertia[1, 1]:.17g}" izz="{inertia[2, 2]:.17g}" '
                     f'ixy="{inertia[0, 1]:.17g}" ixz="{inertia[0, 2]:.17g}" iyz="{inertia[1, 2]:.17g}"/>'
                     '</inertial></link>')
        axis = rng.normal(size=3)
        parts.append(f'<joint name="j{k}" type="revolute"><parent link="l{k - 1}"/><child link="l{k}"/>'
                     f'<origin xyz="{_vector(rng.uniform(0.5, 1.0, 3) * length)}" '
                     f'rpy="{_vector(rng.uniform(-1.5, 1.5, 3))}"/><axis xyz="{_vector(axis / np.linalg.norm(axis))}"/>'
                     f'{LIMIT}</joint>')
    return "\n".join(parts)


def _aba_check(model, path, floating: bool, rng, length: float = 1.0) -> None:
    pin_model = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating
                 else pin.buildModelFromUrdf(str(path)))
    data = pin_model.createData()
    base_q, base_v = (7, 6) if floating else (0, 0)
    joints = [pin_model.joints[pin_model.getJointId(name)] for name in model.joint_names]
    q_order = np.r_[np.arange(base_q), [j.idx_q for j in joints]].astype(int)
    v_order = np.r_[np.arange(base_v), [j.idx_v for j in joints]].astype(int)
    for _ in range(3):
        q = rng.uniform(-2.0, 2.0, model.nq)
        if floating:   # the base within the model's own size of the origin (a 1 mm finger 2 m away is ill
            q[:3] *= length   # conditioned in double precision whatever the test: tests/validation/test_far_from_origin.py)
            q[3:7] /= np.linalg.norm(q[3:7])
        v, tau = rng.uniform(-1.0, 1.0, model.nv), rng.uniform(-1.0, 1.0, model.nv)
        qp, vp, tp = np.empty(model.nq), np.empty(model.nv), np.empty(model.nv)
        qp[q_order], vp[v_order], tp[v_order] = q, v, tau
        tp = tp * np.max(np.abs(pin.crba(pin_model, data, qp)))   # forces of the model's own magnitude
        tau = tp[v_order]
        expected = pin.aba(pin_model, data, qp, vp, tp)[v_order]
        mass = pin.crba(pin_model, data, qp)
        mass = np.triu(mass) + np.triu(mass, 1).T
        tolerance = 10.0 * np.linalg.cond(mass) * EPS
        for formulation in FORMULATIONS:
            got = model.forward_dynamics(q, v, tau, formulation=formulation)
            assert np.max(np.abs(got - expected)) <= tolerance * np.max(np.abs(expected)), formulation


@pytest.mark.parametrize(("length", "mass", "floating"), [
    (1e-3, 1e-3, False),    # a 1 mm, 1 g finger (SI): M entries ≈ 1e-9
    (1e-3, 1e-3, True),     # the same, floating
    (1e3, 1e3, False),      # a model in millimetres and grams: the same finger, entries ≈ 1e9
    (1e-2, 1e-6, False),    # 1 cm, 1 mg links: entries ≈ 1e-10
])
def test_tiny_and_odd_unit_models_are_solved(tmp_path, length, mass, floating):
    """Legitimately small (or large) models are not refused: the floor is relative to the model's own inertia.
    v̇ equals Pinocchio's ABA to 10·cond(M)·ε."""
    path = _write(tmp_path, "finger", _chain(length, mass))
    model = biobullet.load_model(path, floating_base=floating, joint_limits=False)
    _aba_check(model, path, floating, np.random.default_rng(5), length)


def test_light_sensor_on_a_heavy_arm_is_solved(tmp_path):
    """A 1e-6 kg body 1 mm from its own hinge at the end of a chain of 10 kg, 0.5 m links: its diagonal entry
    (≈ 1e-12 kg·m²) is 1e-13 of the arm's, but its own subtree's inertia is what bounds it: solved, v̇ equals
    Pinocchio's ABA to 10·cond(M)·ε (cond ≈ 1e13 here: checked against the largest entry)."""
    text = _chain(0.5, 10.0, n=3) + f'''
<link name="sensor">{_inertial(1e-6, (1e-3, 0.0, 0.0), (1e-14, 1e-14, 1e-14))}</link>
<joint name="sensor_hinge" type="revolute"><parent link="l3"/><child link="sensor"/><origin xyz="0.2 0 0"/>
  <axis xyz="0 0 1"/>{LIMIT}</joint>'''
    path = _write(tmp_path, "sensor", text)
    model = biobullet.load_model(path, joint_limits=False)
    _aba_check(model, path, False, np.random.default_rng(8))
    # validate's note names the joints the solve refuses, by the same test: not the sensor's hinge, whose own
    # inertia Pinocchio gives as ≈ 1e-12 kg·m² (on main: "joints moving no mass (every link they move is
    # massless): sensor_hinge", by a second rule against M's largest diagonal entry)
    from biobullet.validate import validate_model
    pin_model = pin.buildModelFromUrdf(str(path))
    q = np.full(4, 0.3)
    assert pin.crba(pin_model, pin_model.createData(), q)[3, 3] > 1e-12
    notes = " ".join(validate_model(model, samples=1, oracles=("pinocchio",)).notes)
    assert "sensor_hinge" not in notes


def test_joint_function_input_moving_no_mass_is_mapped(tmp_path):
    """A coordinate whose own hinge moves no mass (a point mass on its axis) but whose joint function drives a
    hinge that does: Gᵀ M G is regular (G maps the input to the coupled joint) and solved — v̇ equals Pinocchio's
    projected solve (Gᵀ M G) v̇ = Gᵀ(τ − h) to 10·cond·ε."""
    path = _write(tmp_path, "coupled", f'''<link name="base"/>
<link name="a">{_inertial(1.0, (0.2, 0.0, 0.0), (0.01, 0.02, 0.02))}</link>
<link name="b">{_inertial(0.5, (0.3, 0.0, 0.0))}</link>
<link name="c">{_inertial(0.8, (0.1, 0.2, 0.0), (0.01, 0.01, 0.02))}</link>
<joint name="j1" type="revolute"><parent link="base"/><child link="a"/><origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>
  {LIMIT}</joint>
<joint name="idle" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0.4 0 0"/><axis xyz="1 0 0"/>
  {LIMIT}</joint>
<joint name="driven" type="revolute"><parent link="b"/><child link="c"/><origin xyz="0.3 0 0.1"/>
  <axis xyz="0 0 1"/>{LIMIT}</joint>
<biobullet version="1">
  <coordinates names="j1 idle"/>
  <joint_function joint="driven" type="linear" inputs="idle" coefficients="2.0" offset="0.0"/>
</biobullet>''')
    model = biobullet.load_model(path, joint_limits=False)
    pin_model = pin.buildModelFromUrdf(str(path))
    data = pin_model.createData()
    order = [pin_model.joints[pin_model.getJointId(n)].idx_v for n in ("j1", "idle", "driven")]
    gradient = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    rng = np.random.default_rng(2)
    for _ in range(3):
        q, v, tau = rng.uniform(-2, 2, 2), rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2)
        x, xd = np.empty(3), np.empty(3)
        x[order], xd[order] = gradient @ q, gradient @ v
        mass = pin.crba(pin_model, data, x)
        mass = (np.triu(mass) + np.triu(mass, 1).T)[np.ix_(order, order)]
        bias = pin.rnea(pin_model, data, x, xd, np.zeros(3))[order]   # γ = 0: a linear function
        reduced = gradient.T @ mass @ gradient
        expected = np.linalg.solve(reduced, tau - gradient.T @ bias)
        tolerance = 10.0 * np.linalg.cond(reduced) * EPS * np.max(np.abs(expected))
        for formulation in FORMULATIONS:
            got = model.forward_dynamics(q, v, tau, formulation=formulation)
            assert np.max(np.abs(got - expected)) <= tolerance, formulation


def test_loop_model_coordinate_moving_no_mass_is_named(tmp_path):
    """The bundled four-bar knee (one loop, the projected Gᵀ M G) with one more coordinate: a hinge on the shank
    whose axis passes through a 0.3 kg point mass. Its column of G is the unit vector of that hinge alone (it
    closes no loop), so Gᵀ M G's entry is the hinge's own M[j, j], round-off: named (before: finite v̇ at some
    states). The oracle for "moves no mass": Pinocchio's CRBA of the open tree, 0 there to round-off."""
    source = (Path(__file__).parents[2] / "urdf" / "fourbar_knee.urdf").read_text(encoding="utf-8")
    extra = f'''<link name="probe">{_inertial(0.3, (0.05, 0.0, 0.0))}</link>
  <joint name="spin" type="revolute"><parent link="shank"/><child link="probe"/><origin xyz="0.01 0 -0.3"
    rpy="0.2 0.1 0.3"/><axis xyz="1 0 0"/>{LIMIT}</joint>
  <biobullet version="1">'''
    text = source.replace('<biobullet version="1">', extra).replace('<coordinates names="knee_A"/>',
                                                                      '<coordinates names="knee_A spin"/>')
    path = tmp_path / "fourbar_probe.urdf"
    path.write_text(text, encoding="utf-8")
    model = biobullet.load_model(path, joint_limits=False)
    pin_model = pin.buildModelFromUrdf(str(path))
    spin = pin_model.joints[pin_model.getJointId("spin")].idx_v
    rng = np.random.default_rng(4)
    for _ in range(4):
        q, v = np.array([rng.uniform(-0.8, 0.0), rng.uniform(-2, 2)]), rng.uniform(-1, 1, 2)
        x = pin.neutral(pin_model) + rng.uniform(-1, 1, pin_model.nq)
        assert abs(pin.crba(pin_model, pin_model.createData(), x)[spin, spin]) < 1e-15
        for formulation in FORMULATIONS:
            with pytest.raises(biobullet.SolverError, match=r"'spin' moves no mass"):
                model.forward_dynamics(q, v, formulation=formulation)


@pytest.mark.parametrize("name", sorted(p.stem for p in (Path(__file__).parents[2] / "urdf").glob("*.urdf")))
def test_bundled_models_are_not_refused(name):
    """No coordinate of a bundled model is taken for one that moves no mass: the public v̇ at random states is
    finite (the smallest diagonal entry measured is 8e7 × its floor, arm7's wrist 4.7e8)."""
    model = biobullet.load_model(name)
    rng = np.random.default_rng(11)
    q0 = np.asarray(model.initial_state()[0], dtype=float)
    for _ in range(3):
        q = q0 + rng.uniform(-0.3, 0.3, model.nq)
        assert np.all(np.isfinite(model.forward_dynamics(q, rng.uniform(-1.0, 1.0, model.nv))))
