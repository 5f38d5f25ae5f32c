"""The .osim importer without OpenSim: reports, strict mode, hostile files, `biobullet convert`, and that the
converted URDF is what `load_model(.osim)` loads (PyBullet and Pinocchio read its tree unchanged)."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import biobullet
from biobullet.contact.element import contact_elements
import biobullet.muscles
from biobullet.cli import main
from biobullet.core.errors import ModelError
from biobullet.opensim import osim_urdf

DATA = os.path.join(os.path.dirname(biobullet.__file__), "data", "opensim")
ARM26 = os.path.join(DATA, "arm26.osim")
LEG = os.path.join(DATA, "leg6dof9musc.osim")

MINIMAL = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="ball_on_pin">
    <gravity>0 -9.80665 0</gravity>
    <Ground name="ground"/>
    <BodySet name="bodyset"><objects>
      <Body name="ball"><mass>{mass}</mass><mass_center>0 -0.5 0</mass_center><inertia>0.01 0.01 0.01 0 0 0</inertia></Body>
    </objects></BodySet>
    <JointSet name="jointset"><objects>
      <PinJoint name="pin">
        <socket_parent_frame>/ground</socket_parent_frame>
        <socket_child_frame>/bodyset/ball</socket_child_frame>
        <coordinates><Coordinate name="angle"><default_value>0.3</default_value><range>-2 2</range></Coordinate></coordinates>
      </PinJoint>
    </objects></JointSet>
    {extra}
  </Model>
</OpenSimDocument>
"""

CONTACT = """
    <ContactGeometrySet name="contactgeometryset"><objects>
      <ContactHalfSpace name="floor"><socket_frame>/ground</socket_frame><location>0 0 0</location>
        <orientation>0 0 -1.5707963267949</orientation></ContactHalfSpace>
      <ContactSphere name="tip"><socket_frame>/bodyset/ball</socket_frame><location>0 -0.5 0</location>
        <radius>0.05</radius></ContactSphere>
      <ContactSphere name="knob"><socket_frame>/ground</socket_frame><location>0.3 -0.4 0</location>
        <radius>0.02</radius></ContactSphere>
      <ContactSphere name="spare"><socket_frame>/ground</socket_frame><radius>0.02</radius></ContactSphere>
    </objects></ContactGeometrySet>
    <ForceSet name="forceset"><objects>
      <HuntCrossleyForce name="floor_contact">
        <HuntCrossleyForce::ContactParametersSet name="contact_parameters"><objects>
          <HuntCrossleyForce::ContactParameters><geometry>floor tip knob</geometry><stiffness>1e6</stiffness>
          </HuntCrossleyForce::ContactParameters>
        </objects></HuntCrossleyForce::ContactParametersSet>
      </HuntCrossleyForce>
    </objects></ForceSet>"""


TWIN = """<PinJoint name="twin"><socket_parent_frame>/ground</socket_parent_frame>
        <socket_child_frame>/bodyset/ball</socket_child_frame>
        <coordinates><Coordinate name="other"><range>-1 1</range></Coordinate></coordinates></PinJoint>"""


def _write(tmp_path, text: str, name: str = "model.osim") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_coordinates_initial_state_and_reports_of_a_shared_model():
    with pytest.warns(UserWarning) as records:
        model = biobullet.load_model(LEG)
    messages = [str(r.message) for r in records]
    # the 9 Thelen muscles are imported (<muscle> elements), not reported; the patella coupling is a joint
    # function, not a coordinate
    assert not any("Thelen2003Muscle" in m or "path actuator" in m for m in messages)
    assert len(biobullet.muscles.names(model)) == 9
    assert model.coordinate_names == ("pelvis_tilt", "pelvis_tx", "pelvis_ty", "hip_flexion_r", "knee_angle_r",
                                      "ankle_angle_r")
    q0, v0 = model.initial_state()
    assert q0[model.coordinate_names.index("knee_angle_r")] == pytest.approx(-0.6469763)
    assert np.all(v0 == 0.0)


def test_names_with_double_colons_parse_and_unmapped_components_warn_once_each(tmp_path):
    path = _write(tmp_path, MINIMAL.format(mass=2.0, extra=CONTACT))
    with pytest.warns(UserWarning) as records:
        model = biobullet.load_model(path)
    messages = [str(r.message) for r in records]
    # tip × floor is imported; the sphere–sphere pair and the geometry no force uses are reported
    assert [c.name for c in contact_elements(model)] == ["floor_contact.tip"]
    assert any("HuntCrossleyForce floor_contact: the pair ContactSphere tip – ContactSphere knob" in m
               for m in messages)
    assert any("ContactSphere spare: not imported" in m for m in messages)
    assert not any("ContactHalfSpace floor" in m for m in messages)
    assert model.coordinate_names == ("angle",)
    # a pendulum: M = I_zz + m l² about the pin (an independent number, not the code under test)
    assert model.mass_matrix(np.array([0.3]))[0, 0] == pytest.approx(0.01 + 2.0 * 0.5 ** 2, rel=1e-14)
    with pytest.raises(ModelError, match="strict.*HuntCrossleyForce floor_contact"):
        biobullet.load_model(path, strict=True)


def test_massless_model_loads_and_dynamics_says_why_it_cannot_run(tmp_path):
    path = _write(tmp_path, MINIMAL.format(mass=0.0, extra="").replace("0.01 0.01 0.01 0 0 0", "0 0 0 0 0 0"))
    model = biobullet.load_model(path)
    assert model.joint_positions(np.array([0.7]))[0] == pytest.approx(0.7)
    with pytest.raises(biobullet.BiobulletError, match="mass"):
        model.forward_dynamics(np.array([0.1]), np.array([0.0]))


@pytest.mark.parametrize("text, match", [
    ('<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY a "aaaa">]>\n<OpenSimDocument Version="40000"/>', "ENTITY"),
    ("<OpenSimDocument Version=\"30000\"><Model/></OpenSimDocument>", "OpenSim 3"),
    ("<robot name='x'/>", "OpenSimDocument"),
    ("<OpenSimDocument Version=\"40000\"><Model><", "not well-formed"),
    (MINIMAL.format(mass=-1.0, extra=""), "negative mass"),
    (MINIMAL.format(mass=1.0, extra="").replace("<range>-2 2</range>", "<range>2 -2</range>"), "range"),
    (MINIMAL.format(mass=1.0, extra="").replace("/bodyset/ball</socket_child", "/bodyset/nothing</socket_child"),
     "unknown frame"),
    (MINIMAL.format(mass=1.0, extra="").replace("PinJoint", "ConstantCurvatureJoint"), "ConstantCurvatureJoint is not supported"),
    (MINIMAL.format(mass=1.0, extra="").replace("</PinJoint>", "</PinJoint>" + TWIN), "child of two joints"),
    (MINIMAL.format(mass=1.0, extra="").replace("</PinJoint>", "</PinJoint>" + TWIN.replace(
        "<Coordinate name=\"other\">", "<Coordinate name=\"angle\">")), "duplicate coordinate"),
    (MINIMAL.format(mass=1.0, extra="").replace("<default_value>0.3</default_value>", "<default_value>nan</default_value>"),
     "non-finite"),
])
def test_bad_files_give_one_error_naming_the_file(tmp_path, text, match):
    path = _write(tmp_path, text)
    with pytest.raises(ModelError, match=match) as error:
        biobullet.load_model(path)
    assert path in str(error.value)


def test_convert_writes_what_load_model_loads(tmp_path, capsys):
    out = tmp_path / "arm26.urdf"
    assert main(["convert", ARM26, "--out", str(out)]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = osim_urdf(ARM26)
        from_osim = biobullet.load_model(ARM26)
    assert out.read_text() == text
    from_urdf = biobullet.load_model(str(out))
    q = np.array([0.4, 1.1])
    assert np.array_equal(from_urdf.mass_matrix(q), from_osim.mass_matrix(q))
    assert from_urdf.coordinate_names == from_osim.coordinate_names
    assert "Holzbaur" in text     # the model's credit travels with it
    # the tree part loads unchanged in Pinocchio (2 revolute joints after the welded base)
    pinocchio = pytest.importorskip("pinocchio")
    assert pinocchio.buildModelFromUrdf(str(out)).nq == 2


def test_convert_exit_codes(tmp_path, capsys):
    assert main(["convert", ARM26, "--out", str(tmp_path / "a.urdf"), "--strict"]) == 2
    assert "strict" in capsys.readouterr().err
    assert not (tmp_path / "a.urdf").exists()
    assert main(["convert", str(tmp_path / "missing.osim"), "--out", str(tmp_path / "b.urdf")]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_code:
        main(["convert", "model.urdf", "--out", str(tmp_path / "c.urdf")])
    assert exit_code.value.code == 2
    with pytest.raises(SystemExit):
        main(["convert", "--help"])
    assert "biobullet convert" in capsys.readouterr().out


def test_coordinate_limit_energy_is_the_integral_of_its_elastic_torque():
    """−dV/dθ (central differences, step 1e-6: error ≈ 1e-10) equals the torque with θ̇ = 0, across both transition
    zones and beyond them; the damping only dissipates."""
    from biobullet.forces.elements import CoordinateLimit

    path = os.path.join(os.path.dirname(__file__), "interleaved_custom_joint.osim")
    model = biobullet.load_model(path)
    limit = CoordinateLimit("stop", "c1", upper=0.3, upper_stiffness=40.0, lower=-0.2, lower_stiffness=25.0,
                            damping=0.7, transition=0.15)
    index = model.joint_names.index("c1")
    x = model.joint_configuration(np.zeros(2))
    for theta in np.linspace(-0.6, 0.7, 27):
        x[index] = theta
        step = np.zeros_like(x)
        step[index] = 1e-6
        slope = (limit.potential_energy(model, x + step) - limit.potential_energy(model, x - step)) / 2e-6
        torque = limit.generalized_force(model, x, np.zeros(model.n_tangent), 0.0)[index]
        assert torque == pytest.approx(-slope, abs=1e-8)
        rate = np.zeros(model.n_tangent)
        rate[index] = 1.3
        assert limit.dissipated_power(model, x, rate) >= 0.0


def test_skeleton_visuals_reach_the_scene():
    """The viewer, HTML replay and videos read an .osim model's visuals from its translated URDF: rods to the
    child joints and balls at the mass centres of the two arm bodies (arm26: humerus → elbow, forearm → COM)."""
    from biobullet.render.scene import Scene

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = biobullet.load_model(ARM26)
    scene = Scene.from_model(model)
    kinds = {(visual.link, visual.kind) for visual in scene.visuals}
    assert {("r_humerus", "cylinder"), ("r_humerus", "sphere"), ("r_ulna_radius_hand", "sphere")} <= kinds


def test_mutated_files_load_or_give_one_clear_error(tmp_path):
    """30 random mutations of arm26 and the joint zoo (numbers replaced by nan, inf, 1e400, wrong counts or text;
    names and socket paths replaced by unknown or ambiguous ones; elements deleted): each file loads or raises a
    BiobulletError — never another exception (a traceback)."""
    import random
    import re

    sources = [open(ARM26).read(), open(os.path.join(os.path.dirname(__file__), "joint_zoo.osim")).read()]
    numbers = re.compile(r"(?<=>)[-0-9.eE ]+(?=<)")
    names = re.compile(r"(?<=>)[A-Za-z_/][A-Za-z_0-9/. ]*(?=<)")
    rng = random.Random(24)
    path = tmp_path / "mutated.osim"
    for _ in range(30):
        text = rng.choice(sources)
        for _ in range(rng.randint(1, 3)):
            kind = rng.random()
            if kind < 0.7:
                match = rng.choice(list((numbers if kind < 0.4 else names).finditer(text)))
                new = rng.choice(["", "nan", "inf", "1e400", "-1", "0 0", "1 2 3 4 5 6 7", "abc"] if kind < 0.4 else
                                 ["", "nothing", "/bodyset/nothing", "..", "/", "ground", "knee_angle_r", "../.."])
                text = text[:match.start()] + new + text[match.end():]
            else:
                lines = text.split("\n")
                index = rng.randrange(len(lines))
                if "</" in lines[index] and lines[index].strip().startswith("<"):
                    del lines[index]
                text = "\n".join(lines)
        path.write_text(text)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = biobullet.load_model(str(path))
            model.mass_matrix(model.initial_state()[0])
        except biobullet.BiobulletError:
            pass


def test_redundant_and_switched_off_constraints(tmp_path):
    """Two identical WeldConstraints remove 6 DOF, not 12: one error naming the constraints. A PointConstraint
    with isEnforced false is left out without a report (OpenSim does not enforce it either)."""
    here = os.path.dirname(__file__)
    with open(os.path.join(here, "welded_block.osim"), encoding="utf-8") as handle:
        text = handle.read()
    start, end = text.index("<WeldConstraint"), text.index("</WeldConstraint>") + len("</WeldConstraint>")
    twice = text[:end] + text[start:end].replace('name="hand_holds_block"', 'name="again"') + text[end:]
    with pytest.raises(ModelError, match="hand_holds_block, again give 12 equations of rank 6"):
        biobullet.load_model(_write(tmp_path, twice, "twice.osim"))
    with open(os.path.join(here, "fourbar_point_constraint.osim"), encoding="utf-8") as handle:
        text = handle.read()
    off = text.replace('<PointConstraint name="closure">', '<PointConstraint name="closure"><isEnforced>false'
                       '</isEnforced>')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = biobullet.load_model(_write(tmp_path, off, "off.osim"))
    assert model.coordinate_names == ("crank_angle", "coupler_angle", "rocker_angle")
MUSCLES = """
    <ForceSet name="forceset"><objects>
      <Thelen2003Muscle name="good"><max_isometric_force>100</max_isometric_force>
        <optimal_fiber_length>0.1</optimal_fiber_length><tendon_slack_length>0.2</tendon_slack_length>
        <GeometryPath><PathPointSet><objects>
          <PathPoint name="a"><socket_parent_frame>/ground</socket_parent_frame><location>0.1 0 0</location></PathPoint>
          <PathPoint name="b"><socket_parent_frame>/bodyset/ball</socket_parent_frame><location>0 -0.3 0</location></PathPoint>
        </objects></PathPointSet></GeometryPath></Thelen2003Muscle>
      <Thelen2003Muscle name="two_coordinates"><max_isometric_force>100</max_isometric_force>
        <optimal_fiber_length>0.1</optimal_fiber_length><tendon_slack_length>0.2</tendon_slack_length>
        <GeometryPath><PathPointSet><objects>
          <PathPoint name="a"><socket_parent_frame>/ground</socket_parent_frame><location>0.1 0 0</location></PathPoint>
          <MovingPathPoint name="m"><socket_parent_frame>/bodyset/ball</socket_parent_frame>
            <socket_x_coordinate>/jointset/pin/angle</socket_x_coordinate>
            <socket_y_coordinate>/jointset/twin/other</socket_y_coordinate>
            <x_location><Constant><value>0.01</value></Constant></x_location>
            <y_location><Constant><value>-0.2</value></Constant></y_location></MovingPathPoint>
        </objects></PathPointSet></GeometryPath></Thelen2003Muscle>
    </objects></ForceSet>"""


def test_muscles_become_muscle_elements_and_an_unrepresentable_one_is_reported(tmp_path):
    """A muscle whose moving point follows two coordinates has no <moving_point> form: it is reported by name,
    the other muscle and the skeleton load; strict mode refuses the model."""
    text = MINIMAL.format(mass=1.0, extra=MUSCLES).replace("</PinJoint>", "</PinJoint>" + TWIN.replace(
        "<socket_child_frame>/bodyset/ball</socket_child_frame>", "<socket_child_frame>/bodyset/ball2</socket_child_frame>")
    ).replace("</Body>", "</Body><Body name=\"ball2\"><mass>1</mass><inertia>0.01 0.01 0.01 0 0 0</inertia></Body>")
    path = _write(tmp_path, text)
    with pytest.warns(UserWarning, match="muscle two_coordinates: not imported .*one coordinate for its three axes"):
        model = biobullet.load_model(path)
    assert biobullet.muscles.names(model) == ("good",)
    # the good muscle: from (0.1, 0, 0) on the ground to (0, -0.3, 0) on the ball, pinned about z at the origin
    q = 0.4
    end = np.array([0.3 * np.sin(q), -0.3 * np.cos(q), 0.0])
    assert biobullet.muscles.lengths(model, np.array([q, 0.0]))[0] == pytest.approx(
        np.linalg.norm(end - [0.1, 0, 0]), abs=1e-15)
    with pytest.raises(ModelError, match="strict.*two_coordinates"):
        biobullet.load_model(path, strict=True)
