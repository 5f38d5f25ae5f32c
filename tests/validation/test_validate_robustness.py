"""validate never dies (issue 12): 0-DOF and 1-DOF models, singular mass matrices, massless floating roots, an
oracle that is wrong (PyBullet's fixed-base calculateInverseDynamics with a rotated root inertial frame)."""
from __future__ import annotations

import pytest

pytest.importorskip("pinocchio")
pytest.importorskip("pybullet")

from biobullet import load_model
from biobullet.validate.report import validate_model

INERTIAL = '<inertial>{origin}<mass value="{mass}"/><inertia ixx="0.1" iyy="0.2" izz="0.25" ixy="0" ixz="0" iyz="0"/></inertial>'
JOINT = ('<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/><origin xyz="{xyz}"/>'
         '<axis xyz="{axis}"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>')


def write(tmp_path, name, links, joints):
    path = tmp_path / f"{name}.urdf"
    path.write_text(f'<?xml version="1.0"?>\n<robot name="{name}">{"".join(links)}{"".join(joints)}</robot>\n')
    return path


def link(name, mass="1", origin=""):
    return f'<link name="{name}">' + (INERTIAL.format(mass=mass, origin=origin) if mass is not None else "") + "</link>"


def test_one_dof_model(tmp_path):
    path = write(tmp_path, "pendulum", [link("a"), link("b", origin='<origin xyz="0 0 -0.5"/>')],
                 [JOINT.format(name="j", parent="a", child="b", xyz="0 0 0", axis="0 1 0")])
    report = validate_model(load_model(path), samples=2)
    assert report.ok, report.to_table()
    assert {"jacobian", "link_velocity", "forward_dynamics"} <= {c.quantity for c in report.checks}


def test_zero_dof_model_fixed_and_floating(tmp_path):
    path = write(tmp_path, "block", [link("a"), link("b")],
                 ['<joint name="f" type="fixed"><parent link="a"/><child link="b"/><origin xyz="0 0 1"/></joint>'])
    fixed = validate_model(load_model(path), samples=2)
    assert fixed.ok and fixed.nothing_to_compare and "no degree of freedom" in fixed.notes[-1]
    floating = validate_model(load_model(path, floating_base=True), samples=2)
    assert floating.ok, floating.to_table()
    assert "mass_matrix" in {c.quantity for c in floating.checks}


def test_singular_mass_matrix_names_the_joint_that_moves_no_mass(tmp_path):
    path = write(tmp_path, "finger", [link("a"), link("b", origin='<origin xyz="0 0 -0.5"/>'), link("tip", None)],
                 [JOINT.format(name="j", parent="a", child="b", xyz="0 0 0", axis="0 1 0"),
                  JOINT.format(name="f", parent="b", child="tip", xyz="0 0 -1", axis="1 0 0")])
    report = validate_model(load_model(path), samples=2)
    assert report.ok, report.to_table()
    assert any("joints moving no mass (every link they move is massless): f;" in n for n in report.notes)
    assert "forward_dynamics" not in {c.quantity for c in report.checks}
    # the PyBullet oracle gave the link without <inertial> 1 kg and was corrected, as the bridge does
    assert any("1 kg for a link without <inertial>" in n and "tip" in n for n in report.notes)


def test_massless_floating_root_leaves_pybullet_out_with_its_reason(tmp_path):
    path = write(tmp_path, "kuka_like", [link("root", "0"), link("b", origin='<origin xyz="0 0 -0.5"/>')],
                 [JOINT.format(name="j", parent="root", child="b", xyz="0 0 0", axis="0 1 0")])
    report = validate_model(load_model(path, floating_base=True), samples=2)
    assert report.ok, report.to_table()
    assert any("PyBullet makes a body whose base link is massless static" in n for n in report.notes)
    assert {c.oracle for c in report.checks} == {"pinocchio"}


def test_pybullet_gravity_frame_error_is_reported_as_the_oracles(tmp_path):
    """Measured: PyBullet's gravity torques are off by several N·m when the root <inertial> has rpy; biobullet
    equals Pinocchio to round-off; with the oracle's correction PyBullet agrees too."""
    path = write(tmp_path, "rotated_root",
                 [link("base", origin='<origin xyz="0.1 0.2 0" rpy="0.4 0.3 0.2"/>'),
                  link("a", origin='<origin xyz="0 0 -0.2"/>'), link("b", origin='<origin xyz="0 0.1 -0.2"/>')],
                 [JOINT.format(name="j1", parent="base", child="a", xyz="0 0 0.1", axis="0 1 0"),
                  JOINT.format(name="j2", parent="a", child="b", xyz="0 0 -0.4", axis="1 0 0")])
    report = validate_model(load_model(path), samples=3)
    assert report.ok, report.to_table()
    note = next(n for n in report.notes if "calculateInverseDynamics applies gravity" in n)
    wrong_by = float(note.split("wrong by up to ")[1].split(" ")[0])
    assert wrong_by > 1.0
    worst = max(c.max_rel_error for c in report.checks if c.oracle == "pybullet" and c.quantity == "bias_forces")
    assert worst < 1e-12
