"""Force elements and flexible links, found by the seventeenth unseen-input probe (hunt14).

The `<flexible>` expansion (`flexible.segments.expand_urdf`) left points inside a `<muscle>` on segment 0 (a rigid
extension of the beam's root: the muscle did not see the beam bend), crashed with an AttributeError on a child
joint without `<origin>` (URDF's zero origin), hung a child joint beyond the beam's length on a rigid extension of
the last segment although the module promises a check, and reported a second `<flexible>` of one link as a
duplicate `<link name="beam__seg1">` of the generated temp file. Each expected value here is hand geometry of the
division rule (sections at (k − ½) h, h = L/N; module docstring), not a number of the code under test.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from biobullet.core.errors import ModelError
from biobullet.flexible.segments import load_segmented_model

BEAM = ('theory="euler_bernoulli" length="1" youngs_modulus="2e11" shear_modulus="7.7e10" shear_coefficient="0.8333" '
        'area="3.75e-4" second_moment="4.8828125e-9" density="2666.6666666666667"')  # ρAL = 1 kg
INERTIAL = '<inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>'


def _urdf(*, child_origin: str = '<origin xyz="1 0 0"/>', extension: str = "",
          flexible: str = f'<flexible link="beam" {BEAM}/>') -> str:
    """A clamped beam (base → beam fixed, along x) carrying a link `tip` at its end."""
    links = "".join(f'<link name="{name}">{INERTIAL}</link>' for name in ("base", "beam", "tip"))
    return (f'<robot name="cantilever">{links}'
            '<joint name="clamp" type="fixed"><parent link="base"/><child link="beam"/></joint>'
            f'<joint name="end" type="fixed"><parent link="beam"/><child link="tip"/>{child_origin}</joint>'
            f'<biobullet version="1"><gravity xyz="0 -9.81 0"/>{flexible}{extension}</biobullet></robot>')


def _load(tmp_path, text: str, segments: int = 3):
    path = tmp_path / "cantilever.urdf"
    path.write_text(text)
    return load_segmented_model(path, tmp_path / "expanded.urdf", segments=segments)


MUSCLE = ('<muscle name="m" max_isometric_force="100" optimal_fiber_length="0.1" tendon_slack_length="0.2">'
          '<point link="base" xyz="0 0.5 0"/><point link="beam" xyz="0.8 0 0.02"/></muscle>')


@pytest.mark.parametrize("phi", [0.0, 0.4, -0.7])
def test_a_muscle_point_on_a_flexible_link_rides_its_segment(tmp_path, phi) -> None:
    """N = 3, h = 1/3: sections at 1/6, 1/2, 5/6, so x = 0.8 lies on body 2, 0.3 beyond the section at 0.5. Bending
    only that section by φ puts the point at (0.5 + 0.3 cos φ, 0.3 sin φ, 0.02). Before: the point stayed on segment
    0 at (0.8, 0, 0.02) whatever φ (at φ = 0.4 the length was 0.9431 instead of 0.8659)."""
    from biobullet.muscles.api import lengths

    model, _ = _load(tmp_path, _urdf(extension=MUSCLE))
    q = model.neutral_configuration()
    q[list(model.coordinate_names).index("beam__bend2")] = phi
    point = np.array([0.5 + 0.3 * math.cos(phi), 0.3 * math.sin(phi), 0.02])
    expected = np.linalg.norm(point - np.array([0.0, 0.5, 0.0]))
    assert lengths(model, q)[0] == pytest.approx(expected, rel=1e-13, abs=0.0)   # round-off of a few products


def test_a_muscle_moving_point_on_a_flexible_link_is_refused(tmp_path) -> None:
    """A moving point's position follows a coordinate along the beam, across the segments: no one body holds it."""
    moving = ('<muscle name="m" max_isometric_force="100" optimal_fiber_length="0.1" tendon_slack_length="0.2">'
              '<point link="base" xyz="0 0.5 0"/><moving_point link="beam" coordinate="hinge">'
              '<x type="polynomial" coefficients="0.1 0.5"/></moving_point></muscle>')
    text = _urdf(extension=moving).replace(
        '<joint name="clamp" type="fixed"><parent link="base"/><child link="beam"/></joint>',
        '<joint name="clamp" type="continuous"><parent link="base"/><child link="beam"/><axis xyz="0 1 0"/></joint>'
    ).replace("coordinate=\"hinge\"", "coordinate=\"clamp\"")
    with pytest.raises(ModelError) as caught:
        _load(tmp_path, text)
    message = str(caught.value)
    assert "cantilever.urdf" in message and '<moving_point link="beam">' in message and "attribute 'link'" in message


def test_a_child_joint_without_origin_sits_at_the_beam_root(tmp_path) -> None:
    """URDF's absent <origin> is the identity: the child sits at x = 0, on body 0 (the one keeping the link's name),
    and no bending moves it. Before: AttributeError ('NoneType' object has no attribute 'set')."""
    model, _ = _load(tmp_path, _urdf(child_origin=""))
    frame, root = model.frame("tip"), model.frame("beam")
    assert frame.body == root.body
    np.testing.assert_array_equal(frame.translation, root.translation)


@pytest.mark.parametrize("text, message", [
    (_urdf(child_origin='<origin xyz="2 0 0"/>'),
     "cantilever.urdf: <flexible link=\"beam\">: attribute 'link': child joint 'end' at xyz = 2 0 0 is not on the "
     "beam axis (x from 0 to L = 1)"),
    (_urdf(extension=f'<flexible link="beam" {BEAM}/>'),
     "cantilever.urdf: <flexible link=\"beam\">: attribute 'link': link 'beam' has 2 <flexible> elements"),
    (_urdf(flexible=f'<flexible {BEAM}/>'),
     "cantilever.urdf: <flexible>: attribute 'link': missing required attribute"),
])
def test_bad_flexible_links_name_the_source_file_and_element(tmp_path, text, message) -> None:
    """Before: the child beyond L was silently hung on a rigid extension of the last segment; the second <flexible>
    was blamed on the generated temp file's <link name="beam__seg1">; the missing link read "unknown link None"."""
    with pytest.raises(ModelError) as caught:
        _load(tmp_path, text)
    assert message in str(caught.value)


def test_simulate_refuses_a_model_whose_flexible_link_it_would_ignore(tmp_path) -> None:
    """`biobullet simulate` (CLI) refused a <flexible> link on the reference engine; the Python `simulate` ran the
    rigid model and ignored the link without a word (a hinged beam swung as one rigid body)."""
    from biobullet import load_model, simulate

    text = _urdf(flexible=f'<flexible link="beam" boundary="cf" modes="1" {BEAM}/>').replace(
        '<joint name="clamp" type="fixed"><parent link="base"/><child link="beam"/></joint>',
        '<joint name="clamp" type="continuous"><parent link="base"/><child link="beam"/><axis xyz="0 0 1"/></joint>')
    path = tmp_path / "hinged.urdf"
    path.write_text(text)
    with pytest.raises(ModelError) as caught:
        simulate(load_model(path), 0.01, progress=False)
    assert 'hinged.urdf: <flexible link="beam">: the reference engine' in str(caught.value)


def _body(name: str) -> str:
    return (f'<link name="{name}"><inertial><origin xyz="0.5 0 0"/><mass value="1"/>'
            '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>')


#: a Grashof crank–rocker (ground 2, crank 1, coupler 2.2, rocker 1.5: 1 + 2.2 ≤ 2 + 1.5, so no toggle position)
#: whose crank is a flexible beam; the neutral pose closes the loop: coupler end (1 + 2.2 cos 0.6166, 2.2 sin 0.6166)
#: = rocker end (2 + 1.5 cos 1.0122, 1.5 sin 1.0122) to 1e-4 m (the loop solve closes it exactly)
FOUR_BAR = (f'<robot name="four_bar">{_body("base")}{_body("beam")}{_body("rod")}{_body("coupler")}'
            '<joint name="h1" type="continuous"><parent link="base"/><child link="beam"/><axis xyz="0 0 1"/></joint>'
            '<joint name="h2" type="continuous"><parent link="base"/><child link="rod"/>'
            '<origin xyz="2 0 0" rpy="0 0 1.0122"/><axis xyz="0 0 1"/></joint>'
            '<joint name="h3" type="continuous"><parent link="beam"/><child link="coupler"/>'
            '<origin xyz="1 0 0" rpy="0 0 0.6166"/><axis xyz="0 0 1"/></joint>'
            '<biobullet version="1"><gravity xyz="0 -9.81 0"/><coordinates names="h1"/>'
            f'<flexible link="beam" {BEAM.replace("2e11", "2e9")}/>'
            '<loop name="close" type="planar" link_a="coupler" xyz_a="2.2 0 0" link_b="rod" xyz_b="1.5 0 0" '
            'normal="0 0 1"/></biobullet></robot>')


def test_a_flexible_link_in_a_loop_keeps_its_bending_joints_independent(tmp_path) -> None:
    """With <coordinates names="h1"/> the expansion's bending joints fell among the loop's dependent joints: "loop
    'close' gives 2 equations for 3 dependent joints (h2, h3, beam__bend1)". They are elastic coordinates, so they
    join <coordinates>; the undamped mechanism then conserves T + V (falling through ≈ 14 J of kinetic energy) to
    the integrator's error: |ΔE| < 1e-8 J at rtol 1e-10 (measured 1e-10 … 3e-13 J for N = 1 … 4)."""
    from biobullet import simulate

    path = tmp_path / "four_bar.urdf"
    path.write_text(FOUR_BAR)
    model, _ = load_segmented_model(path, tmp_path / "expanded.urdf", segments=2)
    assert model.coordinate_names == ("h1", "beam__bend1", "beam__bend2")
    trajectory = simulate(model, 0.5, rtol=1e-10, atol=1e-12, progress=False)
    assert np.ptp(trajectory.energy["kinetic"]) > 1.0   # it moved
    assert np.ptp(trajectory.energy_balance()) < 1e-8


# ------------------------------------------------------------------------------------------- force elements, Python API
BALL_ARM = ('<robot name="ball_arm">' + "".join(_body(name) for name in ("base", "a", "b")) +
            '<joint name="j1" type="continuous"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/></joint>'
            '<joint name="ball" type="spherical"><parent link="a"/><child link="b"/><origin xyz="1 0 0"/></joint>'
            '<biobullet version="1"><gravity xyz="0 0 -9.81"/></biobullet></robot>')


@pytest.fixture
def ball_arm(tmp_path):
    from biobullet import load_model

    path = tmp_path / "ball_arm.urdf"
    path.write_text(BALL_ARM)
    return load_model(path)


@pytest.mark.parametrize("make, message", [
    # before: NaN generalized forces, silently (and for inf too)
    (lambda f: f.Spring("s", "a", [float("nan"), 0, 0], "b", [0, 0, 0], 1.0),
     "<python>: <spring name=\"s\">: attribute 'xyz_a': component 1 is not finite"),
    (lambda f: f.Spring("s", "a", [0, 0, 0], "b", [0, 0, float("inf")], 1.0),
     "<python>: <spring name=\"s\">: attribute 'xyz_b': component 3 is not finite"),
    # before: ValueError: cannot reshape array of size 2 into shape (3,)
    (lambda f: f.Spring("s", "a", [0, 0], "b", [0, 0, 0], 1.0),
     "<python>: <spring name=\"s\">: attribute 'xyz_a': has 2 numbers"),
    # before: "ball_arm.urdf: unknown link 'B'", naming neither the spring nor its attribute
    (lambda f: f.Spring("s", "a", [0, 0, 0], "B", [0, 0, 0], 1.0),
     "<python>: <spring name=\"s\">: attribute 'link_b': unknown link 'B'"),
    # before: "unknown joint 'ball'", though the model has it
    (lambda f: f.JointSpring("k", "ball", 1.0),
     "<python>: <joint_spring name=\"k\">: attribute 'joint': joint 'ball' is spherical: it has several degrees"),
])
def test_python_force_elements_name_their_bad_input(ball_arm, make, message) -> None:
    import biobullet.forces as forces

    with pytest.raises(ModelError) as caught:
        forces.add_force_element(ball_arm, make(forces))
    assert message in str(caught.value)


def test_a_python_torque_that_turns_nan_names_itself(ball_arm) -> None:
    """A Python torque function that returns NaN from t = 0.2 s: the run stopped with "the state is not finite",
    naming no element; now the failure names the element and the time."""
    from biobullet import simulate
    from biobullet.core.errors import SolverError
    from biobullet.forces import JointTorque, add_force_element

    add_force_element(ball_arm, JointTorque("drive", "j1", function=lambda t: 1.0 if t < 0.2 else math.nan))
    with pytest.raises(SolverError) as caught:
        simulate(ball_arm, 0.5, progress=False)
    assert '<python>: <joint_torque name="drive">: the torque is nan at t = 0.2' in str(caught.value)


# ------------------------------------------------------------------------------------------- Gibbs–Appell chain file
ROBOT = Path(__file__).resolve().parents[2] / "urdf" / "elastic_robot_3link.urdf"
Q2 = '<child link="link2"/><origin xyz="1 0 0" rpy="0 0 0"/>'
Q1 = '<child link="link1"/><origin xyz="0 0 0" rpy="0 0 0"/>'


@pytest.mark.parametrize("old, new, message", [
    (Q2, Q2.replace('rpy="0 0 0"', 'rpy="0 0 0.5"'),
     "<joint name=\"q2\"> <origin>: attribute 'rpy': an elastic chain's joints carry no rotation"),
    (Q2, Q2.replace('xyz="1 0 0"', 'xyz="0.8 0.6 0"'),
     "<joint name=\"q2\"> <origin>: attribute 'xyz': 0.8 0.6 0 is not on the parent link's x axis"),
    (Q1, Q1.replace('xyz="0 0 0"', 'xyz="0 0.5 0"'),
     "<joint name=\"q1\"> <origin>: attribute 'xyz': the chain starts at the world origin"),
    # a 2 kg tool on a fixed joint at the tip: the chain left it (and its weight) out
    ('<link name="ground"/>', '<link name="ground"/><link name="tool"><inertial><mass value="2"/><inertia ixx="1" '
     'ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link><joint name="grip" type="fixed"><parent '
     'link="link3"/><child link="tool"/><origin xyz="1 0 0"/></joint>',
     "<link name=\"tool\">: attribute 'inertial': link 'tool' has a mass of 2 kg outside the chain's links"),
])
def test_the_elastic_chain_refuses_joint_origins_it_would_ignore(tmp_path, old, new, message) -> None:
    """`ElasticChain.from_model_file` places its links by their lengths alone: a 0.5 rad rotation in a joint's
    origin, a child joint at (0.8, 0.6) (taken as a straight link of length 1) and the first joint 0.5 m above the
    base all gave the very chain of the unmodified file. Each is now refused, naming the joint."""
    from biobullet.flexible.gibbs_appell import ElasticChain

    text = ROBOT.read_text()
    assert text.count(old) == 1
    path = tmp_path / "robot.urdf"
    path.write_text(text.replace(old, new))
    with pytest.raises(ModelError) as caught:
        ElasticChain.from_model_file(path)
    assert "robot.urdf: " + message in str(caught.value)


def test_too_many_segments_in_all_name_the_flexible_link_and_its_segments(tmp_path) -> None:
    """Six Timoshenko links of 200 segments (the per-link cap) add 6 × 200 × 2 = 2400 joints: over the 2000 a model
    may have. Before: the load of the generated temp file refused "<robot>: 2406 joints", naming neither the source
    file nor a segment count; now the fifth link (5 × 400 = 2000 added, + 6 of the file's own > 2000) is named."""
    links = "".join(f'<link name="l{k}">{INERTIAL}</link>' for k in range(7))
    joints = "".join(f'<joint name="j{k}" type="continuous"><parent link="l{k - 1}"/><child link="l{k}"/>'
                     f'<origin xyz="{1 if k > 1 else 0} 0 0"/><axis xyz="0 0 1"/></joint>' for k in range(1, 7))
    timoshenko = BEAM.replace("euler_bernoulli", "timoshenko")
    flexible = "".join(f'<flexible link="l{k}" {timoshenko}/>' for k in range(1, 7))
    text = f'<robot name="many">{links}{joints}<biobullet version="1">{flexible}</biobullet></robot>'
    with pytest.raises(ModelError) as caught:
        _load(tmp_path, text, segments=200)
    assert "cantilever.urdf: <flexible link=\"l5\">: attribute 'segments': the segments add 2000 joints" \
        in str(caught.value)


def test_a_link_mass_the_beam_replaces_is_announced(tmp_path) -> None:
    """The beam's ρ·A·L = 2666.67 · 3.75e-4 · 1 = 1 kg replaces the link's own <inertial> mass. A 5 kg link (a
    motor on the beam, say) lost 4 kg without a word; now a warning names it. The moving mass is the hand sum of
    the beam beyond its clamped first half-segment (x from h/2 = 1/6 to 1: 5/6 kg) and the welded tip (1 kg)."""
    text = _urdf().replace('<link name="beam"><inertial><mass value="1"/>', '<link name="beam"><inertial><mass value="5"/>')
    with pytest.warns(UserWarning, match=r'<flexible link="beam">: the link\'s <inertial> mass 5 kg is replaced by the '
                                         r"beam's density·area·length = 1 kg"):
        model, _ = _load(tmp_path, text)
    assert model.total_mass == pytest.approx(5 / 6 + 1.0, rel=1e-14)


def test_the_bridge_checks_the_files_segment_count(tmp_path) -> None:
    """`Bridge(model)` read a <flexible>'s `segments` with int(): "2.5" raised a bare ValueError (invalid literal for
    int()); the expansion's own check now names the file, the element and the attribute. A valid count is kept."""
    import biobullet

    hinged = _urdf().replace(
        '<joint name="clamp" type="fixed"><parent link="base"/><child link="beam"/></joint>',
        '<joint name="clamp" type="continuous"><parent link="base"/><child link="beam"/><axis xyz="0 0 1"/></joint>')
    path = tmp_path / "hinged.urdf"
    path.write_text(hinged.replace('<flexible link="beam" ', '<flexible link="beam" boundary="cf" segments="2.5" '))
    with pytest.raises(ModelError) as caught:
        biobullet.Bridge(biobullet.load_model(path))
    assert "hinged.urdf: <flexible link=\"beam\">: attribute 'segments': not an integer: '2.5'" in str(caught.value)
    path.write_text(hinged.replace('<flexible link="beam" ', '<flexible link="beam" boundary="cf" segments="3" '))
    with biobullet.Bridge(biobullet.load_model(path)) as bridge:
        assert bridge.layouts["beam"].segments == 3
