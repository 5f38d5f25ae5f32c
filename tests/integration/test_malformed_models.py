"""Malformed model files through `biobullet info FILE`: exit code 2, one exact line, no traceback.

Every case runs the CLI's `main` in-process with its standard streams captured and every warning recorded
(a warning would be an extra stderr line: the check fails on one); a sample of cases also runs as
`python -m biobullet info FILE` in a subprocess, the entry point a user types (45 interpreter starts cost ≈ 30 s
of CPU).

Each case is a model file written to tmp_path; `{file}` in the expected message stands for its path and
`{tmp}` for tmp_path. `make_malformed_table.py` turns CASES into docs/malformed_models.md.
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import in_process

REPO = Path(__file__).resolve().parents[2]
INERTIAL = '<inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial>'


def urdf(*, l1: str | None = None, j2: str | None = None, links: str = "", joints: str = "",
         block: str = "") -> str:
    """A valid 3-link chain base -j1- l1 -j2- l2 with replaceable pieces."""
    l1 = l1 if l1 is not None else f'<link name="l1">{INERTIAL}</link>'
    j2 = j2 if j2 is not None else ('<joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>'
                                    '<origin xyz="0 0 0.5"/><axis xyz="0 1 0"/></joint>')
    return (f'<robot name="m">\n  <link name="base">{INERTIAL}</link>\n  {l1}\n  <link name="l2">{INERTIAL}</link>\n'
            f'  {links}\n  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>'
            f'<axis xyz="0 0 1"/></joint>\n  {j2}\n  {joints}\n  {block}\n</robot>\n')


def joint_j2(*, parent: str = "l1", kind: str = "revolute", origin: str = "0 0 0.5", axis: str = "0 1 0",
             extra: str = "") -> str:
    return (f'<joint name="j2" type="{kind}"><parent link="{parent}"/><child link="l2"/>'
            f'<origin xyz="{origin}"/><axis xyz="{axis}"/>{extra}</joint>')


def link_l1(*, mass: str = "1", inertia: str = 'ixx="0.1" iyy="0.1" izz="0.1"') -> str:
    return f'<link name="l1"><inertial><mass value="{mass}"/><inertia {inertia}/></inertial></link>'


def biobullet(body: str, version: str = "1") -> str:
    return f'<biobullet version="{version}">{body}</biobullet>'


LINEAR_J2 = '<joint_function joint="j2" type="linear" inputs="j1" coefficients="2"/>'
ELEMENTS = ("<gravity>, <base>, <initial>, <coordinates>, <joint_function>, <muscle>, <loop>, <spring>, <joint_spring>, "
            "<joint_torque>, <joint_stop>, <coordinate_limit>, <contact>, <flexible>, <segment_joint>, <joint_contact_stop>, <joint_spring_reference>")


@dataclass(frozen=True)
class Case:
    id: str
    title: str
    text: str | None     # file content; None: the file does not exist
    expected: str        # the exact stderr line after 'biobullet: error: '
    args: tuple[str, ...] = ()   # extra options of `biobullet info`


CASES = [
    Case("unknown_parent_link", "joint with an unknown parent link", urdf(j2=joint_j2(parent="nope")),
         """{file}: <joint name="j2"> <parent>: attribute 'link': unknown link 'nope' """
         """(expected the name of a <link> in this file)"""),
    Case("link_without_name", "<link> without a name",
         urdf(l1=f'<link name="l1">{INERTIAL}</link>', links=f"<link>{INERTIAL}</link>"),
         "{file}: <link> (link number 4 in the file): attribute 'name': missing required attribute "
         "(expected a unique link name)"),
    Case("mass_not_a_number", "non-numeric mass", urdf(l1=link_l1(mass="heavy")),
         """{file}: <link name="l1"> <inertial> <mass>: attribute 'value': not a number: 'heavy' """
         """(expected a finite decimal number)"""),
    Case("nan_in_origin", "NaN in a joint origin", urdf(j2=joint_j2(origin="0 nan 0.5")),
         """{file}: <joint name="j2"> <origin>: attribute 'xyz': component 2 is not finite: '0 nan 0.5' """
         """(expected 3 space-separated finite numbers)"""),
    Case("negative_mass", "negative mass", urdf(l1=link_l1(mass="-2")),
         """{file}: <link name="l1"> <inertial> <mass>: attribute 'value': negative mass -2 kg (expected mass ≥ 0)"""),
    Case("inertia_not_positive_definite", "indefinite inertia tensor (`--inertia strict`)",
         urdf(l1=link_l1(inertia='ixx="0.1" iyy="0.1" izz="0.1" ixy="0.2"')),
         """{file}: <link name="l1"> <inertial> <inertia>: attribute 'ixy': inertia tensor is indefinite """
         """(principal moments -0.1, 0.1, 0.3) (expected a positive semi-definite tensor)""",
         args=("--inertia", "strict")),
    Case("inertia_triangle_inequality", "inertia violating the triangle inequality (`--inertia strict`)",
         urdf(l1=link_l1(inertia='ixx="0.1" iyy="0.1" izz="0.5"')),
         """{file}: <link name="l1"> <inertial> <inertia>: attribute 'izz': principal moments 0.1, 0.1, 0.5 """
         """violate the triangle inequality (0.1 + 0.1 < 0.5) (expected I1 + I2 ≥ I3 for a physical body)""",
         args=("--inertia", "strict")),
    Case("unsupported_joint_type", "unsupported joint type", urdf(j2=joint_j2(kind="ball")),
         """{file}: <joint name="j2">: attribute 'type': unsupported joint type 'ball' """
         """(expected one of revolute, continuous, prismatic, spherical, planar, floating, fixed)"""),
    Case("xacro_file", "a xacro file instead of URDF",
         '<?xml version="1.0"?>\n<robot name="m" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
         '  <xacro:property name="l" value="0.5"/>\n</robot>\n',
         """{file}: this is a xacro file (a macro template), not a URDF: expand it first with """
         """`xacro FILE > FILE.urdf` (expected a plain URDF file)"""),
    Case("zero_axis", "zero joint axis", urdf(j2=joint_j2(axis="0 0 0")),
         """{file}: <joint name="j2"> <axis>: attribute 'xyz': zero axis '0 0 0' (expected a non-zero direction)"""),
    Case("link_child_of_two_joints", "a link that is the child of two joints",
         urdf(joints='<joint name="j3" type="revolute"><parent link="base"/><child link="l2"/></joint>'),
         """{file}: <joint name="j3"> <child>: attribute 'link': link 'l2' is the child of two joints """
         """('j2' and 'j3'); URDF describes a tree — close loops with <biobullet><loop>"""),
    Case("two_roots", "two root links", urdf(links=f'<link name="orphan">{INERTIAL}</link>'),
         "{file}: <robot>: several root links: base, orphan (expected exactly one link that is no joint's child)"),
    Case("unknown_extension_element", "unknown element in <biobullet>", urdf(block=biobullet('<tendon name="m"/>')),
         "{file}: <biobullet> <tendon>: unknown element <tendon> (expected one of " + ELEMENTS + ")"),
    Case("muscle_point_unknown_link", "muscle path point on an unknown link", urdf(block=biobullet(
        '<muscle name="m"><point link="base" xyz="0 0 0"/><point link="l9" xyz="0 0 0"/></muscle>')),
         "{file}: <muscle name=\"m\"> <point>: attribute 'link': unknown link 'l9' (expected one of 'base', 'l1', "
         "'l2')"),
    Case("unknown_function_attribute", "unknown attribute in <joint_function>",
         urdf(block=biobullet('<joint_function joint="j2" type="linear" inputs="j1" coefficients="2" gain="3"/>')),
         """{file}: <joint_function joint="j2">: attribute 'gain': unknown attribute """
         """(expected one of coefficients, inputs, joint, offset, type)"""),
    Case("function_on_unknown_joint", "joint function on an unknown joint",
         urdf(block=biobullet('<joint_function joint="j9" type="linear" inputs="j1" coefficients="2"/>')),
         """{file}: <joint_function joint="j9">: attribute 'joint': unknown joint 'j9' (expected one of j1, j2)"""),
    Case("unknown_input", "joint function with an unknown input name",
         urdf(block=biobullet('<joint_function joint="j2" type="linear" inputs="elbow" coefficients="2"/>')),
         """{file}: <joint_function joint="j2">: attribute 'inputs': unknown joint 'elbow' (expected one of j1, j2)"""),
    Case("unknown_function_type", "unknown joint-function type",
         urdf(block=biobullet('<joint_function joint="j2" type="magic" inputs="j1"/>')),
         """{file}: <joint_function joint="j2">: attribute 'type': unknown joint-function type 'magic' """
         """(expected one of expression, fourier, linear, natural_spline, polynomial, spline)"""),
    Case("dependent_twice", "a joint made dependent twice (function and <mimic>)",
         urdf(j2=joint_j2(extra='<mimic joint="j1" multiplier="2"/>'), block=biobullet(LINEAR_J2)),
         """{file}: <joint name="j2"> <mimic>: attribute 'joint': joint 'j2' is made dependent twice """
         """(also by <joint_function joint="j2">) (expected at most one function (or <mimic>) per joint)"""),
    Case("cyclic_function_inputs", "cyclic joint-function inputs (j1 ← j2, j2 ← j1)",
         urdf(block=biobullet('<joint_function joint="j1" type="linear" inputs="j2" coefficients="0.5"/>'
                              + LINEAR_J2)),
         """{file}: <joint_function joint="j1">: attribute 'inputs': cyclic joint-function inputs: j1 → j2 → j1 """
         """(expected inputs that do not depend back on this joint)"""),
    Case("expression_code_injection", "expression that tries to run code",
         urdf(block=biobullet('<joint_function joint="j2" type="expression" inputs="j1" '
                              """expression="__import__('os').system('touch {tmp}/pwned')"/>""")),
         """{file}: <joint_function joint="j2">: attribute 'expression': only calls of the whitelisted functions """
         """by plain name are allowed (expected an arithmetic expression in names inputs (j1), t, pi, e; """
         """operators + - * / **; functions sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh, exp, log, """
         """sqrt)"""),
    Case("malformed_xml", "malformed XML", '<robot name="m">\n  <link name="base">\n</robot>\n',
         "{file}: not well-formed XML (mismatched tag: line 3, column 2)"),
    Case("missing_file", "missing file", None, "{file}: no such file"),
    Case("coordinates_lists_dependent", "<coordinates> listing a dependent joint",
         urdf(block=biobullet('<coordinates names="j1 j2"/>' + LINEAR_J2)),
         """{file}: <coordinates>: attribute 'names': joint 'j2' is listed as independent but is made dependent """
         """by <joint_function joint="j2">"""),
    Case("bad_base_type", "unknown base type", urdf(block=biobullet('<base type="wobbly"/>')),
         """{file}: <base>: attribute 'type': unknown base type 'wobbly' (expected fixed or floating)"""),
    Case("unsupported_version", 'unsupported <biobullet version="2">',
         urdf(block=biobullet('<gravity xyz="0 0 -9.81"/>', version="2")),
         """{file}: <biobullet>: attribute 'version': unsupported version '2' (expected "1")"""),
    # --- hostile input (issue #16): bounded reading, every element checked at load, escaped and truncated values
    Case("unknown_encoding", "an unknown encoding declaration", '<?xml version="1.0" encoding="klingon"?>\n' + urdf(),
         "{file}: unsupported encoding 'klingon' in the XML declaration (expected encoding UTF-8 (or UTF-16, "
         "ISO-8859-1, US-ASCII))"),
    Case("entities", "XML entity declarations (billion laughs)",
         '<!DOCTYPE robot [<!ENTITY a "aaaaaaaaaa">]>\n' + urdf(),
         "{file}: the file declares XML entities (<!ENTITY>); model files may not (expected plain XML without a DTD)"),
    Case("spring_negative_stiffness", "<spring> with a negative stiffness (checked at load, not only by simulate)",
         urdf(block=biobullet('<spring link_a="base" link_b="l2" stiffness="-1"/>')),
         "{file}: <spring>: attribute 'stiffness': must not be negative, got -1 (expected a non-negative finite "
         "number (≥ 0))"),
    Case("torque_bad_period", "<joint_torque> with a zero period",
         urdf(block=biobullet('<joint_torque joint="j1" type="fourier" period="0"/>')),
         """{file}: <joint_torque joint="j1">: attribute 'period': period 0 is not positive (expected T > 0 (s))"""),
    Case("stop_without_limits", "<joint_stop> without limits",
         urdf(block=biobullet('<joint_stop joint="j1" stiffness="100"/>')),
         """{file}: <joint_stop joint="j1">: attribute 'lower': neither lower nor upper limit given (expected at """
         """least one of lower, upper)"""),
    Case("contact_missing_law", "<contact> without a normal law",
         urdf(block=biobullet('<contact link="l2" stiffness="1e5"/>')),
         """{file}: <contact link="l2">: attribute 'normal_law': missing required attribute (expected one of: """
         """flores, hertz, hu_guo, hunt_crossley, kelvin_voigt, kelvin_voigt_smooth, opensim_hunt_crossley)"""),
    Case("flexible_bad_modulus", "<flexible> with a negative Young's modulus (was never checked)",
         urdf(block=biobullet('<flexible link="l1" boundary="ss" youngs_modulus="-7e10" shear_modulus="2.7e10" '
                              'shear_coefficient="0.85" area="1e-4" second_moment="1e-9" density="2700" '
                              'length="0.5"/>')),
         """{file}: <flexible link="l1">: attribute 'youngs_modulus': must be positive, got -7e+10 (expected a """
         """positive finite number (> 0))"""),
    Case("flexible_unknown_boundary", "<flexible> with an unknown boundary",
         urdf(block=biobullet('<flexible link="l1" boundary="glued"/>')),
         """{file}: <flexible link="l1">: attribute 'boundary': unknown boundary 'glued' (expected one of: ss, cc, """
         """sc, cs, cf)"""),
    Case("expression_too_deep", "an expression nested 40 calls deep",
         urdf(block=biobullet('<joint_function joint="j2" type="expression" inputs="j1" expression="'
                              + "exp(" * 40 + "j1" + ")" * 40 + '"/>')),
         """{file}: <joint_function joint="j2">: attribute 'expression': function calls and powers are nested 40 """
         """deep, the limit is 16 (expected an arithmetic expression in names inputs (j1), t, pi, e; operators """
         """+ - * / **; functions sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh, exp, log, sqrt)"""),
    Case("expression_huge_literal", "an expression with a 400-digit integer",
         urdf(block=biobullet('<joint_function joint="j2" type="expression" inputs="j1" expression="j1*'
                              + "9" * 400 + '"/>')),
         """{file}: <joint_function joint="j2">: attribute 'expression': integer literal with 400 digits; the """
         """limit is 30 (write large numbers in floating point, e.g. 1e40) (expected an arithmetic expression in """
         """names inputs (j1), t, pi, e; operators + - * / **; functions sin, cos, tan, asin, acos, atan, atan2, """
         """sinh, cosh, tanh, exp, log, sqrt)"""),
    Case("huge_number_text", "a 400-digit mass", urdf(l1=link_l1(mass="9" * 400)),
         """{file}: <link name="l1"> <inertial> <mass>: attribute 'value': number text is 400 characters long: """
         """'999999999999999999999999… (376 more characters)' (expected a finite decimal number)"""),
    Case("control_characters", "a value with &#10;/&#13; (a forged second line)",
         urdf(block=biobullet('<joint_spring joint="j1" stiffness="1&#10;biobullet: forged line&#13;"/>')),
         """{file}: <joint_spring joint="j1">: attribute 'stiffness': not a number: '1\\nbiobullet: forged """
         """line\\r' (expected a non-negative finite number (≥ 0))"""),
    Case("long_value", "a 100,000-character value (echoed truncated)",
         urdf(block=biobullet('<joint_spring joint="j1" stiffness="' + "7" * 100_000 + '"/>')),
         """{file}: <joint_spring joint="j1">: attribute 'stiffness': number text is 100000 characters long: """
         """'777777777777777777777777… (99976 more characters)' (expected a non-negative finite number (≥ 0))"""),
    # second campaign (issue #27): blank values, misplaced blocks, deep nesting, visual geometry
    Case("blank_inertia", "blank inertia component", urdf(l1=link_l1(inertia='ixx="0.1" iyy="  " izz="0.1"')),
         """{file}: <link name="l1"> <inertial> <inertia>: attribute 'iyy': empty value '  ' """
         """(expected a finite number)"""),
    Case("blank_axis", "blank joint axis", urdf(j2=joint_j2(axis="")),
         """{file}: <joint name="j2"> <axis>: attribute 'xyz': empty value '' (expected 3 space-separated finite """
         """numbers)"""),
    Case("nested_block", "<biobullet> block inside a <link>",
         urdf(l1=f'<link name="l1">{INERTIAL}{biobullet(LINEAR_J2)}</link>'),
         """{file}: <link name="l1"> <biobullet>: a <biobullet> block nested inside <link name="l1"> is not read """
         """there (expected the <biobullet> block directly under <robot>)"""),
    Case("deep_nesting", "XML nested 100,000 deep",
         urdf(l1=f'<link name="l1">{INERTIAL}' + "<x>" * 100_000 + "</x>" * 100_000 + "</link>"),
         """{file}: <link name="l1">: XML elements nested more than 64 deep (expected elements nested at most 64 """
         """deep)"""),
    Case("visual_nan_origin", "NaN in a visual origin",
         urdf(l1=f'<link name="l1">{INERTIAL}<visual><origin xyz="nan 0 0"/><geometry><box size="1 1 1"/>'
                 '</geometry></visual></link>'),
         """{file}: <link name="l1"> <visual> number 1 <origin>: attribute 'xyz': component 1 is not finite: """
         """'nan 0 0' (expected 3 space-separated finite numbers)"""),
    Case("collision_negative_radius", "negative collision radius",
         urdf(l1=f'<link name="l1">{INERTIAL}<collision><geometry><sphere radius="-0.1"/></geometry>'
                 '</collision></link>'),
         """{file}: <link name="l1"> <collision> number 1 <geometry> <sphere>: attribute 'radius': component 1: """
         """must not be negative, got -0.1 (expected a non-negative finite number (≥ 0))"""),
]

def run_info(path: Path, args: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """`python -m biobullet info PATH ARGS` in a subprocess."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"))
    env.pop("BIOBULLET_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "biobullet", "info", str(path), *args], env=env,
                          capture_output=True, text=True, timeout=60)


def run_info_in_process(path: Path, args: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """`biobullet info PATH ARGS` through the CLI's `main` in this process (tests/in_process.py): its stdout and
    stderr captured, every warning shown on that stderr as the command line would show it."""
    return in_process.cli("info", str(path), *args, env={"BIOBULLET_DEBUG": None})


def write_case(case: Case, tmp_path: Path) -> Path:
    path = tmp_path / f"{case.id}.urdf"
    if case.text is not None:
        path.write_text(case.text.replace("{tmp}", str(tmp_path)), encoding="utf-8")
    return path


def check_one_clear_error(case: Case, tmp_path: Path, run) -> None:
    path = write_case(case, tmp_path)
    result = run(path, case.args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    expected = "biobullet: error: " + case.expected.format(file=path, tmp=tmp_path)
    assert result.stderr == expected + "\n"
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_malformed_model_is_one_clear_error(case: Case, tmp_path: Path) -> None:
    check_one_clear_error(case, tmp_path, run_info_in_process)


# the command a user types: a case of each kind of failure (a missing file, the URDF, the <biobullet> block)
ENTRY_POINT_CASES = [CASES[0], *[c for c in CASES if c.text is None][:1], *[c for c in CASES if "<biobullet" in (c.text or "")][:1]]


@pytest.mark.parametrize("case", ENTRY_POINT_CASES, ids=[case.id for case in ENTRY_POINT_CASES])
def test_malformed_model_is_one_clear_error_from_the_command_line(case: Case, tmp_path: Path) -> None:
    check_one_clear_error(case, tmp_path, run_info)
