"""Hostile input, seventh campaign: what a stranger's names and trajectory files do to the outputs built from them.

Names go into `info`'s tables, CSV headers (a cell starting with `=` is a spreadsheet formula, CWE-1236) and the
browser viewer, whose markdown viser renders with raw HTML unsanitised; trajectory files (.csv, .npz) are read
with bounded memory and checked before a replay draws them. Each case: one clear error or a literal display."""
from __future__ import annotations

import string
import sys
import types
import zipfile

import numpy as np
import pytest

from biobullet.core.errors import ModelError
from biobullet.integrate import trajectory as trajectory_module
from biobullet.integrate.trajectory import Trajectory
from biobullet.loader import load_model
from biobullet.render.scene import load_trajectory, trajectory_states

INERTIAL = ('<inertial><origin xyz="0 0 -0.5"/><mass value="1"/>'
            '<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>')


def two_links(robot: str = "pend", child: str = "arm", joint: str = "j") -> str:
    return (f'<?xml version="1.0"?><robot name="{robot}">'
            f'<link name="base">{INERTIAL}<visual><geometry><box size="0.1 0.1 0.1"/></geometry></visual></link>'
            f'<link name="{child}">{INERTIAL}<visual><origin xyz="0 0 -0.5"/><geometry><box size="0.1 0.1 1"/>'
            f'</geometry></visual></link><joint name="{joint}" type="revolute"><parent link="base"/>'
            f'<child link="{child}"/><axis xyz="1 0 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/>'
            '</joint></robot>')


@pytest.fixture
def pendulum(tmp_path):
    path = tmp_path / "pend.urdf"
    path.write_text(two_links())
    return load_model(path)


@pytest.mark.parametrize("where", ["robot", "child", "joint"])
@pytest.mark.parametrize("name, problem", [("a&#10;b", "U+000A"), ("a&#9;b", "U+0009"), ("&#x202E;gnp.exe", "U+202E"),
                                           ("x&#x85;y", "U+0085"), ("=HYPERLINK(1)", "'='"), (" +1", "'+'"),
                                           ("-x", "'-'"), ("@SUM(A1)", "'@'")])
def test_names_that_break_tables_or_run_as_formulas_are_refused(tmp_path, where, name, problem):
    path = tmp_path / "m.urdf"
    path.write_text(two_links(**{where: name}))
    with pytest.raises(ModelError) as caught:
        load_model(path)
    message = str(caught.value)
    assert "attribute 'name'" in message and problem in message and "m.urdf" in message
    assert "\n" not in message and "\u202e" not in message


def test_markup_in_names_is_kept_and_shown_literally_by_the_viewer(tmp_path, monkeypatch):
    """viser renders markdown with raw HTML: the model's name must reach it escaped; a link named "base/x" must not
    become a child node of the link "base" (viser nests scene paths), which moved it twice."""
    robot = "&lt;img src=x onerror=alert(1)&gt;[a](javascript:alert(2))*b*&amp;lt;"
    path = tmp_path / "m.urdf"
    path.write_text(two_links(robot=robot, child="base/x"))
    model = load_model(path)
    assert model.name == "<img src=x onerror=alert(1)>[a](javascript:alert(2))*b*&lt;"
    recorded = types.SimpleNamespace(markdown=[], nodes=[])

    class Handle:   # any viser handle: attributes can be set and read
        def __getattr__(self, name):
            return Handle()

        def __call__(self, *args, **kwargs):
            return Handle()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class Api(Handle):
        def add_markdown(self, text, *args, **kwargs):
            recorded.markdown.append(text)
            return Handle()

        def add_slider(self, *args, initial_value=0.0, **kwargs):
            slider = Handle()
            slider.value = initial_value
            return slider

        def add_frame(self, node, *args, **kwargs):
            recorded.nodes.append(node)
            return Handle()

        def add_mesh_simple(self, node, *args, **kwargs):
            recorded.nodes.append(node)
            return Handle()

    class Server(Handle):
        def __init__(self, *args, **kwargs):
            self.scene, self.gui = Api(), Api()

        def get_port(self):
            return 0

    fake = types.ModuleType("viser")
    fake.ViserServer = Server
    fake.transforms = types.SimpleNamespace(SO3=Handle())
    monkeypatch.setitem(sys.modules, "viser", fake)
    monkeypatch.setitem(sys.modules, "viser.transforms", fake.transforms)
    from biobullet.render.viewer import Viewer
    Viewer(model)
    title = next(text for text in recorded.markdown if "grid cell" in text)
    shown = title.split("**")[1]
    # every ASCII punctuation character is backslash-escaped: CommonMark shows it literally (no tag, link, entity)
    for k, character in enumerate(shown):
        if character in string.punctuation and (k == 0 or shown[k - 1] != "\\"):
            assert shown[k - 1:k + 1] == "\\\\" or character == "\\", shown
    assert shown.replace("\\", "") == model.name.replace("\\", "")
    frames = [node for node in recorded.nodes if node.startswith("/world/model/") and "visual" not in node]
    assert len(frames) == 2 and not any("base" in node for node in recorded.nodes)


def write_csv(path, text: str) -> str:
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("text, message", [
    ("t," + "a" * 200_000 + "\n0,0\n", "unreadable header line"),
    ("t,j,j_dot\n0,0\n", "row.s length differs from the header"),
    ("t,j,j_dot\n0,0,0\n0,0\n", "bad sample row"),
    ("t,j,j_dot\n0,0,x\n", "bad sample row"),
    ("", "first column is not 't'"),
])
def test_bad_trajectory_csvs_are_one_error(tmp_path, text, message):
    with pytest.raises(ModelError, match=message):
        load_trajectory(write_csv(tmp_path / "run.csv", text))


def test_trajectory_csvs_are_bounded_before_parsing(tmp_path, monkeypatch):
    path = write_csv(tmp_path / "run.csv", "t,j,j_dot\n" + "0,0,0\n" * 100)
    monkeypatch.setattr(trajectory_module, "MAX_HEADER_CHARS", 5)
    with pytest.raises(ModelError, match="header line is over 5 characters"):
        Trajectory.from_csv(path)
    monkeypatch.setattr(trajectory_module, "MAX_HEADER_CHARS", 100)
    monkeypatch.setattr(trajectory_module, "MAX_FILE_BYTES", 500)
    with pytest.raises(ModelError, match="over 0 MiB"):
        Trajectory.from_csv(path)


def test_npz_trajectories_refuse_pickles_bombs_and_non_archives(tmp_path, monkeypatch):
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 not an archive")
    with pytest.raises(ModelError, match="not a .npz archive"):
        load_trajectory(tmp_path / "junk.npz")
    # a compressed archive of zeros: 8 MB once decompressed, a few kB on disk
    np.savez_compressed(tmp_path / "bomb.npz", t=np.zeros(1_000_000))
    assert (tmp_path / "bomb.npz").stat().st_size < 100_000
    monkeypatch.setattr(trajectory_module, "MAX_FILE_BYTES", 4_000_000)
    with pytest.raises(ModelError, match="over 3 MiB"):
        load_trajectory(tmp_path / "bomb.npz")
    np.savez(tmp_path / "pickled.npz", t=np.array([object()], dtype=object))
    with zipfile.ZipFile(tmp_path / "pickled.npz") as archive:
        assert archive.namelist() == ["t.npy"]
    with pytest.raises(ModelError, match="not a biobullet trajectory .npz"):
        load_trajectory(tmp_path / "pickled.npz")
    # an array header declaring 800 TB: NumPy allocates before it reads (MemoryError was an internal error)
    Trajectory(t=np.zeros(2), position_names=("j",), velocity_names=("j_dot",), positions=np.zeros((2, 1)),
               velocities=np.zeros((2, 1))).to_npz(tmp_path / "good.npz")
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000000,), }".ljust(117) + "\n"
    huge = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + bytes(32)
    with zipfile.ZipFile(tmp_path / "good.npz") as source, zipfile.ZipFile(tmp_path / "huge.npz", "w") as target:
        for member in source.namelist():
            target.writestr(member, huge if member == "t.npy" else source.read(member))
    assert load_trajectory(tmp_path / "good.npz").positions.shape == (2, 1)
    with pytest.raises(ModelError, match="declares more data than the file holds"):
        load_trajectory(tmp_path / "huge.npz")


@pytest.mark.parametrize("text, message", [
    ("t,j,j_dot\nnan,0,0\n1,0,0\n", "not finite and non-decreasing"),
    ("t,j,j_dot\n1,0,0\n0,1,0\n", "not finite and non-decreasing"),
    ("t,j,j_dot\n0,0,0\n1,inf,0\n", "column 'j' has a non-finite value"),
])
def test_a_replay_refuses_times_out_of_order_and_non_finite_positions(tmp_path, pendulum, text, message):
    trajectory = load_trajectory(write_csv(tmp_path / "run.csv", text))
    with pytest.raises(ModelError, match=message) as caught:
        trajectory_states(pendulum, trajectory, np.linspace(0.0, 1.0, 5))
    assert "run.csv" in str(caught.value)


def test_an_ordinary_trajectory_still_replays_exactly(tmp_path, pendulum):
    path = write_csv(tmp_path / "run.csv", "t,j,j_dot\n0,0,0\n0.5,0.25,0\n0.5,0.25,0\n1,1,0\n")
    x = trajectory_states(pendulum, load_trajectory(path), np.array([0.0, 0.25, 0.75, 1.0]))
    np.testing.assert_allclose(x[:, 0], [0.0, 0.125, 0.625, 1.0], rtol=0, atol=1e-15)


def test_utf16_files_may_not_declare_entities_either(tmp_path):
    """The `<!ENTITY` refusal looked at the raw bytes, where UTF-16 puts a NUL after every character."""
    text = two_links(robot="&n;").replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>'
                                         '<!DOCTYPE robot [<!ENTITY n "pend">]>')
    for encoding in ("utf-16", "utf-16-be"):
        (tmp_path / "m.urdf").write_bytes(text.encode(encoding))
        with pytest.raises(ModelError, match="declares XML entities"):
            load_model(tmp_path / "m.urdf")


def with_mesh(tmp_path, content: bytes, name: str = "arm.stl") -> str:
    (tmp_path / name).write_bytes(content)
    path = tmp_path / "m.urdf"
    path.write_text(two_links().replace('<box size="0.1 0.1 1"/>', f'<mesh filename="{name}"/>'))
    return str(path)


TRIANGLE = (b"solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\nendloop\n"
            b"endfacet\nendsolid x\n")


def test_mesh_files_are_bounded_at_load(tmp_path, monkeypatch):
    """A 2 GB sparse .stl took 4.3 GB of memory and 31 s in the viewer (and came out empty); PyBullet reads it too."""
    from biobullet.model import meshes
    path = with_mesh(tmp_path, TRIANGLE)
    assert load_model(path).name == "pend"
    monkeypatch.setattr(meshes, "MAX_MESH_BYTES", len(TRIANGLE) - 1)
    with pytest.raises(ModelError, match="arm.stl' is 0 MiB") as caught:
        load_model(path)
    assert "<mesh>: attribute 'filename'" in str(caught.value)


@pytest.mark.parametrize("content, name", [(TRIANGLE[:60], "arm.stl"), (bytes(84), "arm.stl"),
                                           (b"v 0 0 0\nv 1 0 0\nv nan 1 0\nf 1 2 3\n", "arm.obj")],
                         ids=["truncated_stl", "zero_filled_stl", "obj_with_a_nan_vertex"])
def test_a_mesh_without_triangles_is_an_error_not_an_empty_picture(tmp_path, content, name):
    pytest.importorskip("trimesh")
    from biobullet.render.scene import read_visuals
    path = with_mesh(tmp_path, content, name)
    with pytest.raises(ModelError, match="has no triangles"):
        read_visuals(path)
    (tmp_path / name).write_bytes(TRIANGLE if name.endswith(".stl") else b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    assert len(read_visuals(path)[1].faces) == 1


@pytest.mark.parametrize("old, new, message", [
    ('<mass value="1"/>', '<mass value="1_0"/>', "'value': not a plain decimal number: '1_0'"),
    ('<axis xyz="1 0 0"/>', '<axis xyz="\uff11 0 0"/>', "'xyz': not plain ASCII numbers"),
    ('<axis xyz="1 0 0"/>', '<axis xyz="1\u00a00 0"/>', "'xyz': not plain ASCII numbers"),
    ('<axis xyz="1 0 0"/>', '<axis xyz="1 0_0 0"/>', "component 2 is not a plain decimal number"),
], ids=["underscore", "fullwidth_digit", "no_break_space", "underscore_in_a_vector"])
def test_numbers_python_reads_but_pybullet_reads_otherwise_are_refused(tmp_path, old, new, message):
    """float() takes "1_0" (10) and "\uff11" (1); PyBullet's strtod reads 1 and 0: one file, two models."""
    path = tmp_path / "m.urdf"
    path.write_text(two_links().replace(old, new, 1), encoding="utf-8")
    with pytest.raises(ModelError, match=message):
        load_model(path)


def test_plain_numbers_of_every_form_still_load(tmp_path):
    path = tmp_path / "m.urdf"
    path.write_text(two_links().replace('<mass value="1"/>', '<mass value=" +1.E0 "/>', 1)
                    .replace('<axis xyz="1 0 0"/>', '<axis xyz=".1e1 -0. 0"/>'))
    model = load_model(path)
    pybullet = pytest.importorskip("pybullet")
    client = pybullet.connect(pybullet.DIRECT)
    try:   # PyBullet reads the same numbers
        body = pybullet.loadURDF(str(path), physicsClientId=client)
        mass = pybullet.getDynamicsInfo(body, -1, physicsClientId=client)[0]
        axis = pybullet.getJointInfo(body, 0, physicsClientId=client)[13]
    finally:
        pybullet.disconnect(client)
    assert model.description.links[0].inertial.mass == mass == 1.0
    np.testing.assert_array_equal(model.description.joints[0].axis, axis)


OSIM = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><Model name="ball_on_pin"><credits>{credits}</credits>
  <gravity>0 -9.80665 0</gravity><Ground name="ground"/>
  <BodySet name="bodyset"><objects><Body name="ball"><mass>{mass}</mass><mass_center>0 -0.5 0</mass_center>
    <inertia>0.01 0.01 0.01 0 0 0</inertia></Body></objects></BodySet>
  <JointSet name="jointset"><objects><PinJoint name="pin"><socket_parent_frame>/ground</socket_parent_frame>
    <socket_child_frame>/bodyset/ball</socket_child_frame>
    <coordinates><Coordinate name="angle"><default_value>0.3</default_value><range>-2 2</range></Coordinate>
    </coordinates></PinJoint></objects></JointSet></Model></OpenSimDocument>"""


@pytest.mark.parametrize("credits", ["a---b", "x---&gt;&lt;link name='injected'/&gt;&lt;!--", "--", "-"])
def test_opensim_credits_stay_inside_their_comment(tmp_path, credits):
    """The translation copies the credits into an XML comment: "---" left a "--" in it (the converted URDF was not
    well-formed, blamed on the .osim's line 3), and "--->" closed the comment before the rest of the text."""
    from biobullet.opensim import osim_urdf
    path = tmp_path / "m.osim"
    path.write_text(OSIM.format(credits=credits, mass=1))
    text = osim_urdf(path)
    comment = next(line for line in text.splitlines() if "credits of the OpenSim model" in line)
    assert comment.count("--") == 2 and comment.startswith("<!--") and comment.endswith("-->")
    assert "injected" not in load_model(path).link_names


def test_opensim_numbers_are_plain_decimals(tmp_path):
    path = tmp_path / "m.osim"
    path.write_text(OSIM.format(credits="", mass="1_0"))
    with pytest.raises(ModelError, match="<mass>.*not a list of numbers: '1_0'|not a list of numbers: '1_0'"):
        load_model(path)
    path.write_text(OSIM.format(credits="", mass="1"))
    assert load_model(path).total_mass == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("second, column", [("j_dot", "'j_dot'"), ("t", "'t'")])
def test_joint_names_that_collide_with_trajectory_columns_are_refused(tmp_path, second, column):
    """Joints `j` and `j_dot` wrote two `j_dot` columns (a position and a rate): `Trajectory.from_csv` split the
    file at the wrong one (velocities of three columns for two joints) and `view` said the file lacked `j_dot`."""
    link = ('<link name="arm2">' + INERTIAL + '</link><joint name="{}" type="revolute"><parent link="arm"/>'
            '<child link="arm2"/><axis xyz="1 0 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>')
    path = tmp_path / "m.urdf"
    path.write_text(two_links().replace("</robot>", link.format(second) + "</robot>"))
    with pytest.raises(ModelError, match=f"trajectory column {column} would be both") as caught:
        load_model(path)
    assert "attribute 'name'" in str(caught.value)
    path.write_text(two_links().replace("</robot>", link.format("j_rate") + "</robot>"))
    model = load_model(path)
    from biobullet.integrate.engine import simulate
    run = simulate(model, t_end=0.01)
    header = run.csv_header()
    assert len(set(header)) == len(header) == 5


def test_a_trajectory_csv_with_a_repeated_column_is_one_error(tmp_path):
    with pytest.raises(ModelError, match="the column 'j' appears twice"):
        load_trajectory(write_csv(tmp_path / "run.csv", "t,j,j,j_dot\n0,0,1,0\n"))


def test_names_are_bounded_in_length(tmp_path):
    path = tmp_path / "m.urdf"
    path.write_text(two_links(joint="j" * 1001))
    with pytest.raises(ModelError, match="the name is 1001 characters long") as caught:
        load_model(path)
    assert len(str(caught.value)) < 400
    path.write_text(two_links(joint="j" * 1000))
    assert load_model(path).joint_names == ("j" * 1000,)
