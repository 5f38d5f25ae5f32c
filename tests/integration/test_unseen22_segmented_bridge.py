"""The bridge on pre-segmented flexible models and on URDF text with lines longer than PyBullet reads whole.

PyBullet's URDF reader takes a file in fgets() pieces of 8191 bytes and puts a newline after each piece, so a
longer line is cut mid-token: `expand_flexible` appended every generated spring on one line, and
`Bridge(load_segmented_model(...))` of the bundled 3-link elastic robot (8 segments with shear) failed with
"Cannot load URDF file"; a cut inside a number is worse, PyBullet reads `2.5` cut after `2.` as mass 2.0.

Independent checks: the reference engine on the same segmented model (first-order convergence of the bridge in dt,
as tests/validation/test_flexible_bridge.py), the masses written in the file, the joints of the generated file.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pybullet")

ROOT = Path(__file__).resolve().parents[2]
#: a link name this long makes the generated springs' line (two names a spring) longer than 8191 bytes for 12
#: segments without shear — on the old code; a realistic name and more segments need a far smaller dt
NAME = "beam_" + "x" * 300
T_END = 0.1
SAMPLE = 0.01
#: the soft cantilever of tests/validation/test_flexible_bridge.py (ω₁ ≈ 11 rad/s), 12 segments
SECTION = {"theory": "timoshenko", "boundary": "cf", "length": "1.0", "youngs_modulus": "2e9",
           "shear_modulus": "7.6923076923076923e8", "shear_coefficient": "0.8333333333333334", "area": "3.75e-4",
           "second_moment": "4.8828125e-9", "density": "2666.6666666666667", "kelvin_voigt": "2e5",
           "air_damping": "0.05", "segments": "12"}
CANTILEVER = (
    f'<?xml version="1.0"?>\n<robot name="soft_cantilever">\n  <link name="wall"/>\n'
    f'  <link name="{NAME}"><inertial><origin xyz="0.5 0 0"/><mass value="1"/>'
    '<inertia ixx="1e-4" ixy="0" ixz="0" iyy="0.08" iyz="0" izz="0.08"/></inertial></link>\n'
    f'  <joint name="clamp" type="fixed"><parent link="wall"/><child link="{NAME}"/></joint>\n'
    '  <biobullet version="1">\n    <gravity xyz="0 -9.81 0"/>\n'
    f'    <flexible link="{NAME}" ' + " ".join(f'{key}="{value}"' for key, value in SECTION.items()) + "/>\n"
    "  </biobullet>\n</robot>\n")


@pytest.fixture(scope="module")
def cantilever(tmp_path_factory) -> Path:
    """The cantilever's model file (one for the module: the segmented file and the kernels are reused)."""
    return write(tmp_path_factory.mktemp("segmented_bridge") / "soft.urdf", CANTILEVER)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def tips_on_bridge(path: Path, dt: float) -> np.ndarray:
    """Tip (x, y, z) every SAMPLE s of `Bridge(load_segmented_model(path))` stepped at dt."""
    from biobullet.bridge import Bridge
    from biobullet.bridge.flexible import centre_line
    from biobullet.flexible.segments import load_segmented_model
    model, layouts = load_segmented_model(path, shear=False)
    with Bridge(model, dt=dt) as bridge:
        def tip() -> np.ndarray:
            return centre_line(bridge.model, bridge.state()[1], layouts[NAME])[-1]
        tips = [tip()]
        for _ in range(int(round(T_END / SAMPLE))):
            for _ in range(int(round(SAMPLE / dt))):
                bridge.step()
            tips.append(tip())
    return np.array(tips)


def test_segmented_model_on_bridge_converges_to_reference_engine(cantilever) -> None:
    """Observed: max |Δtip| = 2.35e-4 m at dt = 4e-4 s, 1.18e-4 m at 2e-4 s (ratio 2.00) over a 0.07 m swing;
    asserted < 2e-4 m at 2e-4 s and ratio 2 ± 0.2 (first order). Old code: ModelError 'Cannot load URDF file'."""
    import biobullet
    from biobullet.bridge.flexible import centre_line
    from biobullet.flexible.segments import load_segmented_model
    model, layouts = load_segmented_model(cantilever, shear=False)
    grid = np.arange(0.0, T_END + 0.5 * SAMPLE, SAMPLE)
    traj = biobullet.simulate(model, T_END, rtol=1e-10, atol=1e-12, t_eval=grid, progress=False)
    zero = np.zeros(model.nv)
    reference = np.array([centre_line(model, model.joint_state(q, zero)[0], layouts[NAME])[-1] for q in traj.q])
    assert reference[:, 1].min() < -0.05   # the beam really swings down
    # (a bridge sampled at other times than the reference would not broadcast: (11, 3) arrays both)
    errors = [float(np.abs(tips_on_bridge(cantilever, dt)[:, :2] - reference[:, :2]).max()) for dt in (4e-4, 2e-4)]
    assert errors[1] < 2e-4, errors
    assert 1.8 < errors[0] / errors[1] < 2.2, errors


def test_generated_file_has_no_line_pybullet_cuts(cantilever) -> None:
    from biobullet.flexible.segments import expand_flexible
    out, _ = expand_flexible(cantilever, cantilever.with_name("soft_segmented.urdf"), shear=False)
    assert max(len(line) for line in out.read_bytes().split(b"\n")) <= 8191


def test_bundled_elastic_robot_segmented_loads_on_bridge() -> None:
    """The probe's case: 8 segments with shear on each of the 3 links. PyBullet's body has every joint of the
    generated file (counted in the file)."""
    from biobullet.bridge import Bridge
    from biobullet.flexible.segments import load_segmented_model
    model, _ = load_segmented_model(ROOT / "urdf" / "elastic_robot_3link.urdf")
    joints = len(ET.parse(model.file).getroot().findall("joint"))
    with Bridge(model) as bridge:
        assert bridge.pybullet.getNumJoints(bridge.body, physicsClientId=bridge.client) == joints


def test_long_line_of_users_file_keeps_its_numbers(tmp_path) -> None:
    """A one-line URDF whose 8191-byte cut falls inside `2.5`: pybullet.loadURDF of the file reads mass 2.0 (shown
    below); the bridge's body has the file's 2.5. Old code: ModelError 'different inertia ... body_id'."""
    import pybullet as p
    import biobullet
    from biobullet.bridge import Bridge
    head = '<?xml version="1.0"?>\n<robot name="pendulum">'
    body = ('<link name="base"/><link name="arm"><inertial><origin xyz="0 0 -0.5"/><mass value="2.5"/>'
            '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.01"/></inertial></link>'
            '<joint name="hinge" type="continuous"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>'
            '</joint></robot>\n')
    pad = 8191 - (len(head) - head.rfind("\n") - 1) - (body.index('2.5"') + 2)
    f = tmp_path / "pendulum.urdf"
    f.write_text(head + " " * pad + body)
    client = p.connect(p.DIRECT)
    try:
        raw = p.loadURDF(str(f), useFixedBase=True, flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=client)
        assert p.getDynamicsInfo(raw, 0, physicsClientId=client)[0] == pytest.approx(2.0)   # PyBullet's cut
    finally:
        p.disconnect(client)
    with Bridge(biobullet.load_model(f)) as bridge:
        assert bridge.pybullet.getDynamicsInfo(bridge.body, 0, physicsClientId=bridge.client)[0] == 2.5


def hinge_file(path: Path, after_xyz: str = "") -> Path:
    """A pendulum whose joint <origin xyz="0 0 0.25"> sits on a line that PyBullet cuts between `0.` and `25`
    (a long extra attribute before xyz; `after_xyz`: more attribute text after it, on the same tag)."""
    head = ('<?xml version="1.0"?>\n<robot name="r">\n<link name="base"/>\n<link name="arm"><inertial>'
            '<mass value="2.5"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.01"/></inertial>'
            '</link>\n')
    start = '<joint name="hinge" type="continuous"><parent link="base"/><child link="arm"/><origin note="'
    before = '" xyz="0 0 0.'
    line = start + "n" * (8191 - len(start) - len(before)) + before + f'25"{after_xyz}/><axis xyz="0 1 0"/>' \
        '</joint></robot>\n'
    assert line[8189:8193] == "0.25"   # PyBullet's piece ends after "0."
    return write(path, head + line)


def test_long_line_keeps_the_joint_origin(tmp_path) -> None:
    """The file's origin z = 0.25 m on the bridge's body; the old code gave PyBullet the cut line and the hinge
    sat silently at z = 0."""
    import biobullet
    from biobullet.bridge import Bridge
    with Bridge(biobullet.load_model(hinge_file(tmp_path / "hinge.urdf"))) as bridge:
        origin = bridge.pybullet.getJointInfo(bridge.body, 0, physicsClientId=bridge.client)[14]
    assert origin == pytest.approx((0.0, 0.0, 0.25), abs=1e-12)


def test_tag_longer_than_pybullet_line_is_one_clear_error(tmp_path) -> None:
    """One tag (the <origin>, with 8.2 kB of attributes) cannot be put on lines PyBullet reads whole: the bridge
    refuses it naming the file (the old code loaded it with the hinge at z = 0)."""
    import biobullet
    from biobullet.bridge import Bridge
    from biobullet.core.errors import ModelError
    f = hinge_file(tmp_path / "hinge.urdf", after_xyz=' other="' + "m" * 200 + '"')
    with pytest.raises(ModelError, match=r"hinge\.urdf.*8191 bytes"):
        Bridge(biobullet.load_model(f))
