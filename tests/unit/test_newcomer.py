"""A newcomer's first hour (issue 28): bundled models by name, argument errors, unit warnings, messages that
suggest the fix, labelled reaction and contact records, Trajectory.plot, Jupyter views, --quiet/--verbose, the
picture writers' argument order, and PyBullet's banner kept off the terminal."""
from __future__ import annotations

import math
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import biobullet
import in_process
from biobullet.core.errors import ModelError, did_you_mean
from biobullet.model.bundled import bundled_model, bundled_names
from biobullet.model.plausibility import UnitWarning

ARM = """<robot name="{name}">
  <link name="base"/>
  <link name="upper"><inertial><origin xyz="0.15 0 0"/><mass value="2"/>
    <inertia ixx="0.01" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="fore"><inertial><origin xyz="0.12 0 0"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="shoulder" type="continuous"><parent link="base"/><child link="upper"/><axis xyz="0 1 0"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="fore"/><origin xyz="0.3 0 0"/>
    <axis xyz="0 1 0"/><limit lower="0" upper="2.6" effort="10" velocity="10"/></joint>
  <biobullet version="1">{block}</biobullet>
</robot>
"""


def arm(tmp_path, block="", name="arm"):
    path = tmp_path / "arm.urdf"
    path.write_text(ARM.format(block=block, name=name))
    return path


# ------------------------------------------------------------------------------------------------ names
def test_bare_names_load_the_bundled_models_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)   # no urdf/ folder here
    assert "shoulder_rhythm" in bundled_names() and len(bundled_names()) >= 8
    assert {"arm26", "gait2392_millard2012muscle"} <= set(bundled_names())   # the bundled OpenSim files too
    model = biobullet.load_model("shoulder_rhythm")
    assert model.file == bundled_model("shoulder_rhythm.urdf")
    assert model.coordinate_names == ("plane_of_elevation", "elevation", "axial_rotation", "elbow_flexion")
    with pytest.raises(ModelError, match=r"no file and no bundled model named 'shoulder_rythm' "
                                         r"\(did you mean 'shoulder_rhythm'\?\).*andrews_squeezer, .*arm26, arm7"):
        biobullet.load_model("shoulder_rythm")
    with pytest.raises(ModelError, match="no such file"):   # a path (suffix) is never looked up as a name
        biobullet.load_model("shoulder_rhythm.urdf")


def test_a_local_file_of_that_name_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "arm7").write_text(ARM.format(block="", name="mine"))
    assert biobullet.load_model("arm7").name == "mine"


@pytest.mark.parametrize("arguments,match", [
    ((3,), r"argument 'path': must be a model file path .* not int"),
    ((None,), r"argument 'path': .* not NoneType"),
    (("arm7", "yes"), r"argument 'floating_base': is not None, True or False"),
])
def test_wrong_argument_types_name_the_argument(arguments, match):
    with pytest.raises(ModelError, match=match):
        biobullet.load_model(*arguments)
    with pytest.raises(ModelError, match="argument 'joint_limits'"):
        biobullet.load_model("arm7", joint_limits="no")
    with pytest.raises(ModelError, match="argument 'inertia'"):
        biobullet.load_model("arm7", inertia=1)


@pytest.mark.parametrize("block,match", [
    ('<initial joint="elbw" position="0.1"/>', r"unknown joint 'elbw' \(did you mean 'elbow'\?\)"),
    ('<joint_stop joint="elbow" upper="1" stifness="3"/>', r"unknown attribute \(did you mean 'stiffness'\?\)"),
    ('<spring link_a="uper" xyz_a="0 0 0" link_b="fore" xyz_b="0 0 0" stiffness="1"/>',
     r"unknown link 'uper' \(did you mean 'upper'\?\)"),
    ('<joint_function joint="elbow" type="polynomal" inputs="shoulder" coefficients="0 1"/>',
     r"unknown joint-function type 'polynomal' \(did you mean 'polynomial'\?\)"),
    ('<loop name="L" type="planr" link_a="upper" link_b="fore" normal="0 1 0"/>',
     r"unknown loop type 'planr' \(did you mean 'planar'\?\)"),
    ('<contact link="fore" normal_law="hertzz" stiffness="1e5"/>', r"\(did you mean 'hertz'\?\)"),
    ('<joint_spirng joint="elbow" stiffness="1"/>', r"unknown element <joint_spirng> \(did you mean 'joint_spring'\?\)"),
])
def test_mistyped_names_get_the_nearest_suggested(tmp_path, block, match):
    with pytest.raises(ModelError, match=match):
        biobullet.load_model(arm(tmp_path, block))


def test_no_suggestion_for_a_name_that_is_nothing_alike():
    assert did_you_mean("zzzz", ["elbow", "shoulder"]) == ""
    assert did_you_mean("DOP85", ["DOP853", "RK45"]) == " (did you mean 'DOP853'?)"


def test_unknown_formulation_and_column_suggest(tmp_path):
    model = biobullet.load_model(arm(tmp_path))
    q, _ = model.initial_state()
    with pytest.raises(ModelError, match=r"did you mean 'reduced'\?"):
        model.mass_matrix(q, formulation="reducd")
    with pytest.raises(ModelError, match=r"cannot set 'elbw_dot'.*\(did you mean 'elbow_dot'\?\)"):
        model.initial_state({"elbw_dot": 1.0})


# ------------------------------------------------------------------------------------------------ units
@pytest.mark.parametrize("block,match", [
    ('<initial joint="elbow" position="90"/>', r'<initial joint="elbow">: position 90 rad is beyond the joint\'s '
                                               r'<limit> \[0, 2.6\] rad \(degrees\? 90° = 1.571 rad\)'),
    ('<initial joint="shoulder" position="45"/>', r'<initial joint="shoulder">: position 45 rad is more than a '
                                                  r'full turn'),
    ('<initial joint="elbow" position="-0.2"/>', r"beyond the joint's <limit> \[0, 2.6\]"),
    ('<joint_function joint="elbow" type="spline" inputs="shoulder" x="0 30 60 90" y="0 0.5 1 1.5"/>',
     r'<joint_function joint="elbow">: spline knots x span 90 rad on the angle input \'shoulder\''),
    ('<gravity xyz="0 0 -9810"/>', r"<gravity>: \|g\| = 9810 m/s² looks like the wrong unit"),
    ('<gravity xyz="0 0 -0.00981"/>', r"<gravity>: \|g\| = 0.00981 m/s² looks like the wrong unit"),
    ('<gravity xyz="0 -1e308 0"/>', r"<gravity>: \|g\| = 1e\+308 m/s² looks like"),   # (its norm: no overflow)
    ("mass=2000", r'<link name="upper">: mass 2000 kg looks like the wrong unit \(grams\?'),
    ("origin=300", r'<joint name="elbow"> <origin>: xyz 300 m from the parent frame looks like the wrong unit '
                   r'\(millimetres\?'),
])
def test_values_in_the_wrong_unit_warn_once_naming_the_element(tmp_path, block, match):
    path = arm(tmp_path, "" if "=" in block and "<" not in block else block)
    if block == "mass=2000":   # the upper arm written in grams
        path.write_text(path.read_text().replace('<mass value="2"/>', '<mass value="2000"/>'))
    if block == "origin=300":  # the elbow 300 mm out, written in mm
        path.write_text(path.read_text().replace('<origin xyz="0.3 0 0"/>', '<origin xyz="300 0 0"/>'))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        biobullet.load_model(path)
    units = [w for w in caught if issubclass(w.category, UnitWarning)]
    assert len(units) == 1, [str(w.message) for w in caught]
    assert str(units[0].message).startswith(str(tmp_path / "arm.urdf"))
    assert re.search(match, str(units[0].message)), str(units[0].message)


@pytest.mark.parametrize("block", ['<initial joint="elbow" position="2.6"/>', '<gravity xyz="0 0 0"/>',
                                   '<gravity xyz="0 -1.62 0"/>', '<initial joint="shoulder" position="-6"/>'])
def test_plausible_values_do_not_warn(tmp_path, block):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnitWarning)
        biobullet.load_model(arm(tmp_path, block))


def test_unit_warning_is_public():
    assert biobullet.UnitWarning is UnitWarning and "UnitWarning" in biobullet.__all__


def test_no_bundled_model_warns_about_units():
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnitWarning)
        for name in bundled_names():
            biobullet.load_model(name)


# ------------------------------------------------------------------------------------------------ records
def test_joint_reactions_are_labelled_records():
    model = biobullet.load_model("arm7")
    q, v = model.initial_state()
    v = np.zeros(model.nv)
    holding = model.bias_forces(q, v)   # gravity compensation: the arm stays at rest
    reactions = biobullet.joint_reactions(model, q, v, holding)
    reaction = reactions[model.joint_names[0]]
    assert reaction.force.shape == (3,) and reaction.moment.shape == (3,)
    text = repr(reaction)
    assert " N, moment=" in text and " N·m" in text and "at the joint origin, world axes" in text
    # at rest, the first joint carries the weight of everything it moves (world z up): the sum of the masses
    moving = sum(b.mass for b in model.bodies)
    assert reaction.force[2] == pytest.approx(moving * 9.81, rel=1e-12)


def test_bridge_reaction_forces_say_their_units():
    for name, unit in (("shoulder_rhythm", "N·m"), ("andrews_squeezer", "N (in-plane axis)")):
        with biobullet.Bridge(biobullet.load_model(name), dt=1e-5) as bridge:
            bridge.step()
            forces = bridge.reaction_forces()
        assert all(isinstance(value, float) for value in forces.values())   # still a plain dict of floats
        first = next(iter(forces))
        assert forces.units[first] == unit and f"{forces[first]:.6g} {unit}" in repr(forces)


def test_contact_force_records_keep_dict_access_and_say_their_units():
    from biobullet.bridge.contact import ContactForce
    record = ContactForce(normal=12.5, friction=np.array([0.1, 0, 0]), point=np.zeros(3), penetration=1e-4,
                          body=None, link=None)
    assert record["normal"] == record.normal == 12.5
    text = repr(record)
    assert "normal=12.5 N (along the contact normal)" in text and "friction=" in text and "(world axes)" in text
    assert "against the file's ground" in text
    with pytest.raises(AttributeError):
        record.nothing


# ------------------------------------------------------------------------------------------------ display
def test_trajectory_plot_returns_the_figure_and_writes_atomically(tmp_path):
    model = biobullet.load_model(arm(tmp_path, '<initial joint="elbow" position="1"/>'))
    trajectory = biobullet.simulate(model, 0.05)
    figure = trajectory.plot(path=tmp_path / "run.png")
    assert [line.get_label() for line in figure.axes[0].lines] == ["shoulder", "elbow"]
    assert figure.axes[-1].get_xlabel() == "t (s)" and figure.axes[1].get_ylabel() == "energy (J)"
    assert (tmp_path / "run.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []   # no temporary file left
    with pytest.raises(KeyError, match=r"'elbw' is not a column \(did you mean 'elbow'\?\)"):
        trajectory.plot(["elbw"])
    html = trajectory._repr_html_()
    assert "<table>" in html and "shoulder, elbow" in html and "energy balance drift" in html


def test_model_html_view_escapes_the_file_text(tmp_path):
    model = biobullet.load_model(arm(tmp_path, name="a&lt;b"))
    html = model._repr_html_()
    assert "a&lt;b" in html and "<b>biobullet Model" in html and "joint stops" in html
    assert "ignored" in biobullet.load_model(arm(tmp_path), joint_limits=False)._repr_html_()


# ------------------------------------------------------------------------------------------------ CLI
def test_run_help_lists_the_studies(capsys):
    from biobullet.cli import main
    from biobullet.studies import studies
    with pytest.raises(SystemExit) as done:
        main(["run", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "studies:" in out and all(f"  {name} " in out for name in studies())


def test_validate_table_columns_align():
    from biobullet.validate.report import Check, ValidationReport
    report = ValidationReport("m", [Check("mass_matrix", "reduced_recursive", "pinocchio", 1e-15, 1e-16, True, 1e-9),
                                    Check("spatial_inertia", "model", "pybullet", 1e-10, 1e-10, True, 1e-6)], 3)
    lines = report.to_table().splitlines()[1:]
    header, rows = lines[0], [line for line in lines[2:] if not line.startswith("note: ")]   # (footnotes: not rows)
    words = [(m.group(), m.start(), m.end()) for m in re.finditer(r"\S+", header)]
    starts = {w: start for w, start, _ in words}
    ends = [end for w, _, end in words if w in ("abs", "rel", "tol")]
    for row in rows:
        cells = [(m.start(), m.end()) for m in re.finditer(r"\S+", row)]
        assert [start for start, _ in cells[1:3]] == [starts["formulation"], starts["oracle"]]   # left-aligned names
        assert [end for _, end in cells[3:6]] == ends                                           # right-aligned numbers


def test_quiet_keeps_errors_and_drops_warnings(tmp_path):
    path = arm(tmp_path, '<gravity xyz="0 0 -9810"/>')

    cli = in_process.cli   # as its own process: Python's warning filters and display, not pytest's capture
    loud, quiet, failed = cli("info", str(path)), cli("--quiet", "info", str(path)), cli("-q", "info", "nothere")
    assert loud.returncode == quiet.returncode == 0 and loud.stdout == quiet.stdout
    assert "biobullet: warning: " in loud.stderr and "looks like the wrong unit" in loud.stderr
    assert quiet.stderr == ""
    assert failed.returncode == 2
    assert "error: argument 'path': no file and no bundled model named 'nothere'" in failed.stderr


def test_pybullet_banner_is_captured_and_logged_not_printed():
    code = ("import logging, sys\nlogging.basicConfig(stream=sys.stderr, level=logging.DEBUG, format='%(message)s')\n"
            "from biobullet.core.native import import_pybullet\np = import_pybullet()\nprint('ok', p.DIRECT)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok 2\n"   # the banner went elsewhere: stdout holds only our line
    assert "import pybullet printed: pybullet build time:" in done.stderr   # logged (DEBUG), not lost


def test_picture_writers_take_pixels_first(tmp_path):
    from biobullet.render.video import write_png, write_video
    image = np.zeros((8, 8, 3), np.uint8)
    assert write_png(image, tmp_path / "a.png") == str(tmp_path / "a.png")
    with pytest.raises(TypeError, match=r"write_png\(image, path\): the image comes first"):
        write_png(tmp_path / "b.png", image)
    with pytest.raises(TypeError, match=r"write_video\(frames, path, fps\): the frames come first"):
        write_video(str(tmp_path / "c.gif"), [image])
    assert write_video([image, image], tmp_path / "d.gif", 10).endswith("d.gif")


def test_contact_intervals_as_documented():
    from biobullet.contact import contact_intervals
    from biobullet.contact.element import contact_intervals as where_it_lives
    assert contact_intervals is where_it_lives


def test_bench_quick_leaves_out_the_slow_python_formulations():
    from biobullet.bench import PINOCCHIO, SLOW, formulation_speed
    times = formulation_speed(biobullet.load_model("arm7"), rounds=1, number=1, slow=False)
    assert PINOCCHIO in times and "reduced" in times
    assert not set(times) & set(SLOW)
    assert all(math.isfinite(s) and s > 0 for s in times.values())
