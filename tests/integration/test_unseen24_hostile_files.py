"""Hostile model files (an independent probe): files written by strangers must neither run code nor exhaust the
machine, and bad input is one clear error naming the file, element and attribute, with exit code 2 from the CLI.
Each test is a defect the probe found, failing on the code before its fix; numbers are checked against Pinocchio
(which reads the same file) or a direct sum, not against the code under test. Files are written here, in tmp dirs.
"""
from __future__ import annotations

import math
import os
import re
import resource
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import biobullet
from biobullet.core.errors import ModelError
from hostile_cli import CHAIN, chain, one_error

ARM26 = Path(biobullet.__file__).resolve().parent / "data" / "opensim" / "arm26.osim"
#: address space of a CLI run in these tests (bytes): `biobullet info` on a small model needs < 1 GiB
CLI_MEMORY = 3 * 2**30


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CLI_MEMORY, CLI_MEMORY))


def _cli_in_bounds(*argv: str, timeout: float = 300.0) -> tuple[int, list[str]]:
    """`biobullet ARGV` in a subprocess with CLI_MEMORY of address space: (exit code, non-empty stderr lines)."""
    plugin = str(Path(biobullet.__file__).resolve().parents[1])   # the biobullet under test
    env = dict(os.environ, PYTHONPATH=plugin + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "biobullet", *argv], capture_output=True, text=True, env=env,
                          timeout=timeout, preexec_fn=_limited)
    return done.returncode, [line for line in done.stderr.splitlines() if line.strip()]


# ------------------------------------------------------------------------------------ DTD attribute defaults
def test_attribute_list_defaults_are_refused_in_bounded_memory(tmp_path) -> None:
    """A DTD's `<!ATTLIST>` default is copied into every element that lacks the attribute: 340 kB of file (60,000
    empty elements, one 100 kB default) expanded to 6 GB — past the entity check, which only refused `<!ENTITY>`.
    The file is refused before parsing: exit 2, one line naming the file and the declaration."""
    path = tmp_path / "defaults.urdf"
    path.write_text('<?xml version="1.0"?>\n<!DOCTYPE robot [<!ATTLIST a z CDATA "' + "x" * 100_000 + '">]>\n'
                    '<robot name="r"><link name="base"/>' + "<a/>" * 60_000 + "</robot>", encoding="utf-8")
    code, lines = _cli_in_bounds("info", str(path))
    assert code == 2 and not any(line.startswith("Traceback") for line in lines), lines
    assert str(path) in lines[-1] and "<!ATTLIST>" in lines[-1], lines


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_an_attribute_default_pinocchio_never_sees_is_refused(tmp_path, encoding) -> None:
    """`<!ATTLIST origin rpy ...>` turned every origin without `rpy` by 90° in our reading, while Pinocchio (and
    PyBullet: their parsers skip the DTD) keep them unrotated: the mass matrix differed from Pinocchio's by 0.01
    kg m² with no word. Refused, naming the file and the declaration."""
    text = ('<?xml version="1.0" encoding="%s"?>\n<!DOCTYPE robot [<!ATTLIST origin rpy CDATA "0 0 1.5707963267948966">]>\n'
            % encoding + CHAIN.format(extension="", com="0 0 -0.25").replace(
                "<axis", '<limit effort="1" velocity="1" lower="-3" upper="3"/><axis'))
    path = tmp_path / "rotated.urdf"
    path.write_bytes(text.encode(encoding))
    if encoding == "utf-8":   # what the file means to Pinocchio: no rotation
        reference = pin.buildModelFromUrdf(str(path))
        assert all(np.array_equal(reference.jointPlacements[j].rotation, np.eye(3)) for j in (1, 2))
    with pytest.raises(ModelError) as caught:
        biobullet.load_model(str(path))
    assert caught.value.file == str(path) and "<!ATTLIST>" in str(caught.value)
    assert str(path) in one_error("info", str(path))


# ---------------------------------------------------------------------------------------- OpenSim's Version
@pytest.mark.parametrize("version", ["9" * 5000, "40000\u00b2", "\u0664\u0660\u0660\u0660\u0660"])
def test_an_osim_version_that_is_no_decimal_number_is_one_error(tmp_path, version) -> None:
    """`Version="999…9"` (5,000 digits) was an internal error (Python's int-string limit) and `Version="40000²"`
    one too (isdigit() takes a superscript that int() refuses); Arabic-Indic digits passed as OpenSim 4. Each is
    now one error naming `<OpenSimDocument>` and `Version`, from `load_model` and from `biobullet info` and
    `convert`."""
    text = re.sub(r'Version="\d+"', f'Version="{version}"', ARM26.read_text(encoding="utf-8"), count=1)
    path = tmp_path / "arm.osim"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ModelError) as caught:
        biobullet.load_model(str(path))
    assert (caught.value.file, caught.value.element, caught.value.attribute) == (str(path), "<OpenSimDocument>",
                                                                                 "Version")
    for command in ("info", "convert"):
        line = one_error(command, str(path), *(["--out", str(tmp_path / "arm.urdf")] if command == "convert" else []))
        assert str(path) in line and "Version" in line


# ----------------------------------------------------------------- table sizes of the joint-function types
def _series(count: int) -> str:
    return " ".join("0.01" for _ in range(count))


@pytest.mark.parametrize("block, attribute, limit", [
    ('<joint_torque joint="j1" type="fourier" period="1" a="{values}" b="{values}"/>', "a", 100),
    ('<joint_function joint="j2" type="fourier" period="1" a="{values}"/>', "a", 100),
    ('<joint_function joint="j2" type="polynomial" inputs="j1" coefficients="{values}"/>', "coefficients", 100),
    ('<joint_function joint="j2" type="spline" inputs="j1" x="{x}" y="{values}"/>', "x", 10_000),
])
def test_a_table_past_its_limit_is_refused_naming_the_attribute(tmp_path, block, attribute, limit) -> None:
    """A 12 kB `fourier` torque of 3,000 harmonics took a 0.02 s run 23 s (each right-hand side evaluates the
    series in Python: ≈ 1.5 µs a harmonic), 300,000 harmonics did not finish a 0.2 s run in 15 minutes; a
    300,000-point spline cost 25 ms an evaluation, a polynomial of 300,000 coefficients 4 s for 98. Now one
    error naming the element and attribute (the limits are in the README's model-file section)."""
    count = limit + 1
    path = chain(tmp_path, block.format(values=_series(count), x=" ".join(str(k) for k in range(count))))
    with pytest.raises(ModelError) as caught:
        biobullet.load_model(path)
    assert (caught.value.file, caught.value.attribute) == (path, attribute)
    assert caught.value.element.startswith(block[:block.index(" ")])
    assert path in one_error("info", path)


def test_a_fourier_series_at_its_limit_loads_and_equals_the_direct_sum(tmp_path) -> None:
    """The limit refuses nothing below it: 100 harmonics load, and the driven joint follows
    a0 + Σ a_k cos(2πkt/T) + b_k sin(2πkt/T) summed here by numpy."""
    rng = np.random.default_rng(24)
    a, b, period = rng.normal(0, 0.01, 100), rng.normal(0, 0.01, 100), 1.7
    path = chain(tmp_path, f'<joint_function joint="j2" type="fourier" period="{period!r}" a0="0.1" '
                 f'a="{" ".join(repr(float(v)) for v in a)}" b="{" ".join(repr(float(v)) for v in b)}"/>')
    model = biobullet.load_model(path)
    for t in (0.0, 0.37, 1.9):
        k = np.arange(1, 101)
        expected = 0.1 + np.sum(a * np.cos(2 * math.pi * k * t / period) + b * np.sin(2 * math.pi * k * t / period))
        x = model.joint_state(np.array([0.2]), np.zeros(1), t)[0]
        assert x[1] == pytest.approx(expected, abs=1e-13)


# ------------------------------------------------------------------------------------------ a huge axis
def test_an_axis_of_huge_components_keeps_its_direction_as_pinocchio_does(tmp_path) -> None:
    """`<axis xyz="0 1e308 1e308"/>` is the direction (0, 1, 1)/√2, but its sum of squares overflowed: the norm was
    inf, the axis (0, 0, 0), the joint silently had no motion (a zero row in M) and forward dynamics failed later
    with "singular to round-off". Now M equals Pinocchio's of the same chain written with axis "0 1 1"."""
    huge = chain(tmp_path, name="huge.urdf")
    text = Path(huge).read_text(encoding="utf-8").replace('<axis xyz="0 1 0"/>', '<axis xyz="0 1e308 1e308"/>', 1)
    Path(huge).write_text(text, encoding="utf-8")
    plain = tmp_path / "plain.urdf"
    plain.write_text(text.replace("1e308 1e308", "1 1").replace(
        "<axis", '<limit effort="1" velocity="1" lower="-3" upper="3"/><axis'), encoding="utf-8")
    reference = pin.buildModelFromUrdf(str(plain))
    model = biobullet.load_model(huge)
    for q in (np.array([0.3, -0.4]), np.array([-1.1, 0.8])):
        expected = pin.crba(reference, reference.createData(), q)
        expected = np.triu(expected) + np.triu(expected, 1).T
        assert np.allclose(model.mass_matrix(q), expected, rtol=1e-13, atol=1e-15)


# ------------------------------------------------------------------------------------- huge inertia tensors
def test_a_huge_inertia_is_checked_without_overflow(tmp_path) -> None:
    """Principal moments of 1e308 overflowed the triangle check's sum: a physical tensor loaded with a stray numpy
    "overflow encountered" warning naming no file, and an impossible one was reported "nan % from the nearest
    physical tensor". Now the physical one loads silently, and diag(1e308, 1, 1) is reported at its distance in
    closed form: the nearest point of the cone λ₁ ≤ λ₂ + λ₃ is the projection onto its face, |C − 2|/√3 from
    (C, 1, 1), 1/√3 = 57.74 % of C."""
    heavy = CHAIN.format(extension="", com="0 0 -0.25").replace('ixx="0.01" iyy="0.01" izz="0.01"', '{tensor}', 1)
    physical = tmp_path / "physical.urdf"
    physical.write_text(heavy.format(tensor='ixx="1e308" iyy="1e308" izz="1e308"'), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        biobullet.load_model(str(physical))
    impossible = tmp_path / "impossible.urdf"
    impossible.write_text(heavy.format(tensor='ixx="1e308" iyy="1" izz="1"'), encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        biobullet.load_model(str(impossible))
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and f"{100 / math.sqrt(3):.2f}% from the nearest" in messages[0], messages


# ----------------------------------------------------------------------------- an .osim file given as a path
def test_a_bridge_given_an_osim_path_says_how_to_load_it() -> None:
    """`load_model("arm26.osim")` imports OpenSim files, but `Bridge("arm26.osim")` (a path: URDF only, the
    importer sits above the bridge) said "root element is <OpenSimDocument> (expected <robot>)" — as if the file
    were broken. The error now says what the file is and how to load it."""
    from biobullet.bridge import Bridge
    with pytest.raises(ModelError) as caught:
        Bridge(str(ARM26))
    assert caught.value.file == str(ARM26) and "OpenSim model" in str(caught.value)
    assert "biobullet.load_model" in str(caught.value)
    Bridge(biobullet.load_model(str(ARM26))).close()   # the way it names works


# ------------------------------------------------------------------------------ a block under another name
@pytest.mark.parametrize("opening, closing", [
    ("<BioBullet>", "</BioBullet>"), ("<biobulet>", "</biobulet>"), ("<bio_bullet>", "</bio_bullet>"),
    ('<bb:biobullet xmlns:bb="urn:bb">', "</bb:biobullet>"), ("<bb:biobullet>", "</bb:biobullet>"),
    ('<biobullet xmlns="urn:other">', "</biobullet>"),
])
def test_a_block_under_another_name_or_namespace_is_refused_not_ignored(tmp_path, opening, closing) -> None:
    """Like PyBullet and Pinocchio we skip unknown elements, so a block spelt `<BioBullet>` or `<biobulet>`, or put
    in a namespace, was silently not read: its joint function gone, j2 moved on its own (nq 2, not the coupled
    model of nq 1 the author wrote). Now one error naming the element."""
    text = CHAIN.format(extension='<joint_function joint="j2" type="linear" inputs="j1" coefficients="2"/>',
                        com="0 0 -0.25")
    path = tmp_path / "misnamed.urdf"
    path.write_text(text.replace("<biobullet>", opening).replace("</biobullet>", closing), encoding="utf-8")
    with pytest.raises(ModelError) as caught:
        biobullet.load_model(str(path))
    assert caught.value.file == str(path) and "not read as the <biobullet> block" in str(caught.value)
    assert str(path) in one_error("info", str(path))


def test_urdf_extension_elements_near_no_block_name_still_load(tmp_path) -> None:
    """The check takes only names close to "biobullet": Gazebo's and ROS's extension elements load as before."""
    text = CHAIN.format(extension="", com="0 0 -0.25").replace(
        "</robot>", '<gazebo reference="l1"><material>Gazebo/Red</material></gazebo>'
                    '<transmission name="t"><type>x</type></transmission><bullet/></robot>')
    path = tmp_path / "ros.urdf"
    path.write_text(text, encoding="utf-8")
    assert biobullet.load_model(str(path)).nq == 2


def test_a_loop_normal_of_huge_components_is_its_direction() -> None:
    """A loop's `normal="0 0 1e308"` (or a revolute loop's axis) overflowed np.linalg.norm and was refused as a
    "zero vector"; it is the direction (0, 0, 1), and "0 1e308 1e308" is (0, 1, 1)/√2."""
    from biobullet.core.attributes import vector3
    from biobullet.core.errors import SourceRef
    source = SourceRef("f.urdf", '<loop name="L">')
    assert np.array_equal(vector3(source, {"normal": "0 0 1e308"}, "normal", unit=True), [0.0, 0.0, 1.0])
    assert np.allclose(vector3(source, {"normal": "0 1e308 1e308"}, "normal", unit=True),
                       [0.0, math.sqrt(0.5), math.sqrt(0.5)], rtol=0, atol=1.2e-16)   # one ulp
    with pytest.raises(ModelError, match="zero vector"):
        vector3(source, {"normal": "0 0 1e-320"}, "normal", unit=True)


# ------------------------------------------------------------------------- names Python reads as other names
THREE = """<robot name="c">
  <link name="base"/>
  <link name="l1"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l2"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l3"><inertial><mass value="0.5"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 1 0"/></joint>
  <joint name="\uff4a1" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 -0.5"/><axis xyz="0 1 0"/></joint>
  <joint name="j2" type="revolute"><parent link="l2"/><child link="l3"/><origin xyz="0 0 -0.5"/><axis xyz="0 1 0"/></joint>
  <biobullet><joint_function joint="j2" type="expression" inputs="{inputs}" expression="{expression}"/></biobullet>
</robot>"""


@pytest.mark.parametrize("inputs, expression, attribute", [
    ("j1 \uff4a1", "3*\uff4a1", "inputs"),      # the input named with a fullwidth j
    ("j1", "3*\uff4a1", "expression"),          # a fullwidth j in the text only
])
def test_an_expression_name_python_reads_as_another_is_refused(tmp_path, inputs, expression, attribute) -> None:
    """Python reads identifiers in Unicode's NFKC form: in `expression="3*ｊ1"` (fullwidth j) the name is 'j1'. With
    joints j1 and ｊ1 (distinct in XML and to PyBullet) and inputs "j1 ｊ1", j2 followed 3·j1 = 0.3 at q = (0.1,
    0.2) instead of the written 3·ｊ1 = 0.6, with no word. Now one error naming the attribute."""
    path = tmp_path / "fullwidth.urdf"
    path.write_text(THREE.format(inputs=inputs, expression=expression), encoding="utf-8")
    with pytest.raises(ModelError) as caught:
        biobullet.load_model(str(path))
    assert (caught.value.file, caught.value.attribute) == (str(path), attribute)
    assert "'j1'" in caught.value.detail


# ---------------------------------------------------------------------------- a second child of one element
LIMITED = CHAIN.format(extension="", com="0 0 -0.25").replace(
    "<axis", '<limit effort="1" velocity="1" lower="-3" upper="3"/><axis')


@pytest.mark.parametrize("old, new, element", [
    ('<mass value="0.5"/>', '<mass value="0.5"/><mass value="50"/>', '<link name="l2"> <inertial>'),
    ('<origin xyz="0 0 -0.5"/>', '<origin xyz="0 0 -0.5"/><origin xyz="0 0 -5"/>', '<joint name="j2">'),
    ('<parent link="l1"/>', '<parent link="l1"/><parent link="base"/>', '<joint name="j2">'),
    ('<link name="l2"><inertial>', '<link name="l2"><inertial><mass value="9"/><inertia ixx="1" iyy="1" izz="1" '
     'ixy="0" ixz="0" iyz="0"/></inertial><inertial>', '<link name="l2">'),
])
def test_a_second_child_that_every_reader_skips_is_refused(tmp_path, old, new, element) -> None:
    """A second `<mass>`, `<origin>`, `<parent>` or `<inertial>` was silently skipped — by us, and by Pinocchio,
    whose model of the file (checked here for the first case: l2's mass 0.5, not 50) reads the first. As for a
    second `<gravity>` in the block, one of the two would be ignored: one error naming the element."""
    path = tmp_path / "twice.urdf"
    path.write_text(LIMITED.replace(old, new, 1), encoding="utf-8")
    if "mass" in old:
        assert pin.buildModelFromUrdf(str(path)).inertias[2].mass == 0.5
    with pytest.raises(ModelError) as caught:
        biobullet.load_model(str(path))
    assert (caught.value.file, caught.value.element) == (str(path), element)
    assert "a second <" in caught.value.detail


def test_an_exact_repeat_of_a_child_still_loads_and_equals_pinocchio(tmp_path) -> None:
    """A repeat that says the same (pybullet_data's spirit40newer.urdf repeats an `<axis>`) loses nothing: it loads,
    and M equals Pinocchio's."""
    path = tmp_path / "repeat.urdf"
    path.write_text(LIMITED.replace('<axis xyz="0 1 0"/>', '<axis xyz="0 1 0"/> <axis xyz="0 1 0"/>'), encoding="utf-8")
    reference = pin.buildModelFromUrdf(str(path))
    q = np.array([0.4, -0.9])
    expected = pin.crba(reference, reference.createData(), q)
    assert np.allclose(biobullet.load_model(str(path)).mass_matrix(q), np.triu(expected) + np.triu(expected, 1).T,
                       rtol=1e-13, atol=1e-15)


# ----------------------------------------------------------------------------------- a misspelt attribute
@pytest.mark.parametrize("old, new, element, attribute", [
    ('<origin xyz="0 0 -0.5"/>', '<origin xzy="0 0 -0.5"/>', '<joint name="j2"> <origin>', "xzy"),
    ('ixy="0" ixz="0" iyz="0"/></inertial></link>\n  <link name="l2">',
     'Ixy="0.005" ixz="0" iyz="0"/></inertial></link>\n  <link name="l2">', '<link name="l1"> <inertial> <inertia>', "Ixy"),
    ('lower="-3"', 'lowr="-3"', '<joint name="j1"> <limit>', "lowr"),
    ('<axis xyz="0 1 0"/></joint>\n  <biobullet>', '<axis xyz="0 1 0"/><mimic joint="j1" multiplyer="2"/></joint>\n'
     '  <biobullet>', '<joint name="j2"> <mimic>', "multiplyer"),
])
def test_a_misspelt_attribute_is_refused_not_defaulted(tmp_path, old, new, element, attribute) -> None:
    """Unknown attributes are skipped by every URDF reader, so `<origin xzy="0 0 -0.5">`, `Ixy=`, `<limit lowr=>`,
    `<mimic multiplyer=>` silently took the default (Pinocchio too: j2's placement below is at the origin, not
    0.5 m down). An unknown attribute that is a misspelling of a known one is now an error naming it; extensions
    (urdfdom's `command_effort`, `gear_velocity`, prefixed ones) still load (the robot corpus test)."""
    path = tmp_path / "typo.urdf"
    path.write_text(LIMITED.replace(old, new, 1), encoding="utf-8")
    if attribute == "xzy":
        assert np.array_equal(pin.buildModelFromUrdf(str(path)).jointPlacements[2].translation, np.zeros(3))
    with pytest.raises(ModelError) as caught:
        biobullet.load_model(str(path))
    assert (caught.value.file, caught.value.element, caught.value.attribute) == (str(path), element, attribute)


# ------------------------------------------------------------------------------------------ many muscles
def test_more_muscles_than_the_limit_are_refused(tmp_path) -> None:
    """Muscles were not counted with the block's other elements: a 7 MB file of 40,000 two-point muscles loaded,
    and `simulate --excitation all=0.5 --t-end 0.01` ran 400 s before an internal MemoryError (3 GB address space:
    the muscles' records of 1,001 samples). Now at most 2,000 `<muscle>`s, one error naming the first one over."""
    muscle = ('<muscle name="m{}" max_isometric_force="100" optimal_fiber_length="0.1" tendon_slack_length="0.2">'
              '<point link="base" xyz="0 0 0.1"/><point link="l2" xyz="0 0.01 0"/></muscle>')
    path = chain(tmp_path, "".join(muscle.format(k) for k in range(2001)))
    with pytest.raises(ModelError) as caught:
        biobullet.load_model(path)
    assert (caught.value.file, caught.value.element) == (path, '<muscle name="m2000">')
    assert path in one_error("info", path)


# ------------------------------------------------------------------------- an OpenSim component in another file
def test_an_osim_component_read_from_another_file_is_refused(tmp_path) -> None:
    """OpenSim reads an object with a `file` attribute from that file: arm26 with `<ForceSet file="forces.xml"/>`
    has its six muscles in OpenSim (checked here), but imported with none and no word. The importer reads no
    other file (a stranger's model could name any): one error naming the element and the attribute."""
    from opensim_oracle import import_opensim
    text = ARM26.read_text(encoding="utf-8")
    start = text.index('<ForceSet name="forceset">')
    end = text.index("</ForceSet>", start) + len("</ForceSet>")
    (tmp_path / "forces.xml").write_text('<?xml version="1.0" encoding="UTF-8" ?>\n<OpenSimDocument Version="40000">'
                                         f"\n{text[start:end]}\n</OpenSimDocument>\n", encoding="utf-8")
    path = tmp_path / "split.osim"
    path.write_text(text[:start] + '<ForceSet name="forceset" file="forces.xml"/>' + text[end:], encoding="utf-8")
    osim = import_opensim()
    assert osim.Model(str(path)).getForceSet().getSize() == 6
    with pytest.raises(ModelError) as caught:
        biobullet.load_model(str(path))
    assert (caught.value.file, caught.value.element, caught.value.attribute) == (
        str(path), '<ForceSet name="forceset">', "file")
    assert str(path) in one_error("convert", str(path), "--out", str(tmp_path / "arm.urdf"))


# ---------------------------------------------------------------------------- a PyBullet run without an end
def test_a_pybullet_run_past_the_step_limit_is_refused_without_a_dt(tmp_path) -> None:
    """`simulate --engine pybullet --dt 1e-300` was refused (1e300 steps > 1e7), but without `--dt` the bridge's
    default step (≤ 1 ms, every step recorded) let `--t-end 1e9` run for days, filling memory. Now the same usage
    error, before loading anything (checked in a subprocess: the old code does not stop)."""
    path = tmp_path / "limited.urdf"
    path.write_text(LIMITED, encoding="utf-8")
    try:
        code, lines = _cli_in_bounds("simulate", str(path), "--engine", "pybullet", "--t-end", "1e9",
                                     "--out", str(tmp_path / "run.csv"), timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("simulate --engine pybullet --t-end 1e9 was still running after 120 s")
    assert code == 2 and "limit is 1e+07" in lines[-1] and not any(l.startswith("Traceback") for l in lines), lines


# ------------------------------------------------------------------------- spline tables at the ends of double range
@pytest.mark.parametrize("attributes", [
    'type="spline" x="0 1 2" y="0 1e308 -1e308"',                    # SciPy's ValueError: an internal error
    'type="spline" boundary="natural" x="-1e308 0 1e308" y="0 1 0"', # the same
    'type="spline" x="0 1e-300 2e-300" y="0 1 0"',                   # -inf pieces: loaded, failed in the run
    'type="spline" boundary="fmm" x="0 1 2" y="0 1e308 -1e308"',     # nan pieces
    'type="spline" extrapolation="linear" x="-1e308 1e308" y="0 1"', # a nan end piece
    'type="natural_spline" x="0 1e-300 2e-300 3e-300" y="0 1 0 1"',  # LinAlgError "Singular matrix": internal
    'type="natural_spline" x="0 1 2 3" y="0 1e308 -1e308 0"',        # nan pieces
])
def test_a_spline_table_beyond_double_range_is_one_error(tmp_path, attributes) -> None:
    """Steps of 2e308 between values or knots 1e-300 apart overflow the spline's pieces: SciPy raised ValueError
    (`biobullet info` exit 1, "internal error"), or the file loaded with numpy overflow warnings naming no file and
    inf/nan pieces. Now one error naming the element and attribute, without stray warnings."""
    path = chain(tmp_path, f'<joint_function joint="j2" inputs="j1" {attributes}/>')
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ModelError) as caught:
            biobullet.load_model(path)
    assert (caught.value.file, caught.value.element, caught.value.attribute) == (
        path, '<joint_function joint="j2">', "y")
    assert path in one_error("info", path)


@pytest.mark.parametrize("attributes, attribute", [
    ('period="1e-300" a="1 1"', "period"),                        # ω² = 1.6e601: θ̈ = inf at t = 0
    ('period="1e-320" a="1"', "period"),                          # 2π/T = inf: θ = nan
    ('period="1" a="1e308 1e308" b="1e308 1e308"', "a"),           # θ(0) = 2e308 = inf
])
def test_a_fourier_series_beyond_double_range_is_refused_at_load(tmp_path, attributes, attribute) -> None:
    """These series loaded, and `simulate` stopped at t = 0 with "joint function FourierFunction(...) is undefined
    or not finite" — naming neither the file nor the element. Their bounds |θ| ≤ |a0| + Σ(|a_k| + |b_k|) and
    |θ̈| ≤ Σ ω_k² (|a_k| + |b_k|) are checked at load: one error naming the element and attribute."""
    path = chain(tmp_path, f'<joint_function joint="j2" type="fourier" {attributes}/>')
    with pytest.raises(ModelError) as caught:
        biobullet.load_model(path)
    assert (caught.value.file, caught.value.element, caught.value.attribute) == (
        path, '<joint_function joint="j2">', attribute)


def test_a_joint_function_that_overflows_in_a_run_names_its_file_and_element(tmp_path) -> None:
    """θ₂ = 1e308·θ₁ at θ₁ = 2 is inf (2e308): the run stopped with "joint function PolynomialFunction(...) is
    undefined or not finite at t = 0 s (j1 = 2): value inf" — naming neither the file nor the element, where an
    `expression` function's error names both. Every joint function's failed evaluation now names them."""
    path = chain(tmp_path, '<joint_function joint="j2" type="polynomial" inputs="j1" coefficients="0 1e308"/>'
                           '<initial joint="j1" position="2"/>')
    line = one_error("simulate", path, "--t-end", "0.1", "--out", str(tmp_path / "run.csv"))
    assert f'{path}: <joint_function joint="j2">: joint function PolynomialFunction' in line
    assert "(j1 = 2): value inf" in line
