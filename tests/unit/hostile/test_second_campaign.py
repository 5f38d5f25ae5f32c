"""Hostile input, second campaign (issue #27): one test per class an independent fuzzer found. Each class is
checked for its whole family (every numeric attribute, every folder below a sweep's `out`, every failure of a run),
not only the reproducer."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.core.atomic import OutputError, output_folder, write_text
from biobullet.core.errors import ModelError
from hostile_cli import CHAIN, chain, one_error, run_cli

REPO = Path(__file__).resolve().parents[3]
INERTIA = '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>'


def _write(tmp_path: Path, text: str, name: str = "m.urdf") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _refused(path: str) -> ModelError:
    with pytest.raises(ModelError) as info:
        biobullet.load_model(path)
    assert "\n" not in str(info.value)
    return info.value


# ------------------------------------------------------------------------------------------------ blank attributes
BLANK_CASES = [  # (old text of the chain, blank replacement, attribute named)
    ('iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>\n  <link name="l2">',
     'iyy="  " izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>\n  <link name="l2">', "iyy"),
    ('<origin xyz="0 0 -0.25"/>', '<origin xyz="0 0 -0.25" rpy=""/>', "rpy"),
    ('<child link="l1"/><axis xyz="0 1 0"/>', '<child link="l1"/><axis xyz=""/>', "xyz"),
    ('<origin xyz="0 0 -0.5"/>', '<origin xyz=" "/>', "xyz"),
    ('<child link="l1"/><axis xyz="0 1 0"/>', '<child link="l1"/><axis xyz="0 1 0"/><limit lower="" upper="1"/>',
     "lower"),
    ('<child link="l1"/><axis xyz="0 1 0"/>', '<child link="l1"/><axis xyz="0 1 0"/><limit lower="-1" upper="\t"/>',
     "upper"),
    ('<biobullet>', '<biobullet><gravity xyz=""/>', "xyz"),
    ('<biobullet>', '<biobullet><joint_torque joint="j1" type="fourier" period="1" a0="0.1" a="1" b=""/>', "b"),
    ('<biobullet>', '<biobullet><joint_spring joint="j1" stiffness="2" damping=" "/>', "damping"),
    ('<biobullet>', '<biobullet><spring link_a="base" link_b="l2" stiffness="1" rest_length=""/>', "rest_length"),
    ('<biobullet>', '<biobullet><initial joint="j1" position="0.1" velocity=""/>', "velocity"),
    ('<biobullet>', '<biobullet><contact link="l2" normal_law="kelvin_voigt_smooth" stiffness="1e5" damping="" '
                    'smoothing="1e6"/>', "damping"),
]


@pytest.mark.parametrize("old, new, attribute", BLANK_CASES)
def test_blank_numeric_attributes_are_errors_not_defaults(tmp_path, old, new, attribute):
    text = CHAIN.format(extension="", com="0 0 -0.25")
    assert old in text
    error = _refused(_write(tmp_path, text.replace(old, new, 1)))
    # (a blank required attribute is "missing", like <mass value=" ">; a blank optional one is never its default)
    assert error.attribute == attribute and ("empty value" in str(error) or "missing" in str(error)), str(error)


def test_blank_mimic_multiplier_gives_one_cli_error_line(tmp_path):
    text = CHAIN.format(extension="", com="0 0 -0.25").replace(
        '<origin xyz="0 0 -0.5"/>', '<origin xyz="0 0 -0.5"/><mimic joint="j1" multiplier=" "/>')
    line = one_error("info", _write(tmp_path, text))
    assert "<mimic>" in line and "'multiplier'" in line and "empty value" in line


# ------------------------------------------------------------------------------------------------ nesting
@pytest.mark.parametrize("where, named", [
    ('<link name="base"/>', '<link name="base">'),
    ('<child link="l1"/>', '<joint name="j1">'),
    ('<mass value="0.5"/>', '<link name="l2"> <inertial>'),
])
def test_a_biobullet_block_nested_anywhere_else_is_refused(tmp_path, where, named):
    block = '<biobullet><joint_function joint="j2" type="linear" inputs="j1" slope="1"/></biobullet>'
    text = CHAIN.format(extension="", com="0 0 -0.25")
    opened = where.replace("/>", ">") + block + f"</{where[1:].split()[0]}>"
    error = _refused(_write(tmp_path, text.replace(where, opened, 1)))
    assert "nested inside" in str(error) and named in str(error) and error.element.endswith("<biobullet>")


def test_xml_nesting_depth_is_bounded_at_parse_time(tmp_path):
    from biobullet.model.urdf import MAX_DEPTH
    deep = "<x>" * 150_000 + "</x>" * 150_000
    text = CHAIN.format(extension="", com="0 0 -0.25").replace('<link name="base"/>',
                                                              f'<link name="base">{deep}</link>')
    error = _refused(_write(tmp_path, text))
    assert f"nested more than {MAX_DEPTH} deep" in str(error) and '<link name="base">' in str(error)
    # the bound is exact (the deepest bundled or pybullet_data file nests 7 deep, far inside it): <robot> is
    # level 1, <link> level 2
    for levels, refused in ((MAX_DEPTH - 2, False), (MAX_DEPTH - 1, True)):
        nested = "<x>" * levels + "</x>" * levels
        path = _write(tmp_path, text.replace("<x>" * 150_000 + "</x>" * 150_000, nested), f"{levels}.urdf")
        if refused:
            _refused(path)
        else:
            assert biobullet.load_model(path).nv == 2


# ------------------------------------------------------------------------------------------------ visuals
VISUAL_CASES = [  # (visual or collision, attribute named)
    ('<visual><origin xyz="nan 0 0"/><geometry><box size="1 1 1"/></geometry></visual>', "xyz"),
    ('<visual><origin rpy="0 0 Infinity"/><geometry><box size="1 1 1"/></geometry></visual>', "rpy"),
    ('<visual><geometry><box size="abc"/></geometry></visual>', "size"),
    ('<visual><geometry><box size="1 1"/></geometry></visual>', "size"),
    ('<visual><geometry><box/></geometry></visual>', "size"),
    ('<visual><geometry><sphere radius="-0.1"/></geometry></visual>', "radius"),
    ('<visual><geometry><cylinder radius="0.1"/></geometry></visual>', "length"),
    ('<visual><geometry><mesh/></geometry></visual>', "filename"),
    ('<visual><geometry><mesh filename="a.stl" scale="1 x 1"/></geometry></visual>', "scale"),
    ('<visual><geometry><box size="1 1 1"/></geometry><material name="m"><color rgba="1 0 0 2"/></material>'
     '</visual>', "rgba"),
    ('<visual><geometry/></visual>', None),
    ('<visual><geometry><torus radius="1"/></geometry></visual>', None),
    ('<collision><origin xyz="0 1e999 0"/><geometry><box size="1 1 1"/></geometry></collision>', "xyz"),
    ('<collision><geometry><capsule radius="0.1" length="-1"/></geometry></collision>', "length"),
]


@pytest.mark.parametrize("shape, attribute", VISUAL_CASES)
def test_visual_and_collision_elements_are_checked_at_load(tmp_path, shape, attribute):
    from biobullet.render.scene import read_visuals
    text = CHAIN.format(extension="", com="0 0 -0.25").replace(
        '<mass value="0.5"/>\n    ' + INERTIA + '</inertial></link>',
        '<mass value="0.5"/>\n    ' + INERTIA + '</inertial>' + shape + '</link>')
    path = _write(tmp_path, text)
    error = _refused(path)
    assert error.attribute == attribute and '<link name="l2">' in str(error), str(error)
    if shape.startswith("<visual>") and attribute not in ("filename", "scale"):
        with pytest.raises(ModelError):   # what `info` refuses is what the viewer would fail on
            read_visuals(path)
    assert run_cli("info", path)[0] == 2


def test_good_visuals_of_every_kind_load(tmp_path):
    shapes = ('<visual><origin xyz="0 0 0.1" rpy="0 1 0"/><geometry><box size="0.1 0.2 0"/></geometry>'
              '<material name="m"><color rgba="1 0 0 1"/></material></visual>'
              '<visual><geometry><material name="misplaced"/><sphere radius="0.1"/></geometry></visual>'
              '<collision><geometry><plane normal="0 0 1"/></geometry></collision>'
              '<collision><geometry><mesh filename="x.stl" scale="1 1 1 1"/></geometry></collision>')
    text = CHAIN.format(extension="", com="0 0 -0.25").replace('<link name="base"/>',
                                                              f'<link name="base">{shapes}</link>')
    assert biobullet.load_model(_write(tmp_path, text)).nv == 2


# ------------------------------------------------------------------------------------------------ sweep outputs
def _sweep_with_stored_points(tmp_path: Path) -> tuple[Path, Path]:
    """A config whose every point is already stored (a rerun computes nothing: no cluster is started)."""
    from biobullet.sweep.config import load_config
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"function": "demo.damped_oscillator", "fixed": {"stiffness": 1.0},
                                  "sweep": [{"path": "damping", "values": [0.1, 0.2]}], "out": "out"}))
    out = tmp_path / "out"
    for point in load_config(config).points():
        write_text(out / "points" / f"{point.id}.json", json.dumps(
            {"id": point.id, "status": "ok", "params": dict(point.params), "result": {"x": 1.0}}))
    return config, out


@pytest.mark.parametrize("planted", ["points", "plots"])
def test_sweep_writes_never_follow_a_link_planted_below_out(tmp_path, planted):
    from biobullet.sweep.runner import run_sweep
    config, out = _sweep_with_stored_points(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = out / planted
    if target.exists():
        for item in target.iterdir():
            (elsewhere / item.name).write_bytes(item.read_bytes())
        for item in target.iterdir():
            item.unlink()
        target.rmdir()
    target.symlink_to(elsewhere)
    before = sorted(p.name for p in elsewhere.iterdir())
    with pytest.raises(OutputError, match="symbolic link"):
        run_sweep(config, progress=False)
    assert sorted(p.name for p in elsewhere.iterdir()) == before   # nothing written (or removed) through the link


def test_every_folder_below_an_output_folder_must_be_real(tmp_path):
    (tmp_path / "out" / "a").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out" / "a" / "b").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OutputError, match="symbolic link"):
        write_text(tmp_path / "out" / "a" / "b" / "c" / "f.txt", "x", within=tmp_path / "out")
    assert not any((tmp_path / "elsewhere").iterdir())
    (tmp_path / "out" / "file").write_text("keep")
    with pytest.raises(OutputError, match="a regular file"):
        output_folder(tmp_path / "out", "file", "inner")
    assert output_folder(tmp_path / "out", "new", "inner").is_dir()   # created when absent


@pytest.mark.parametrize("out", ["file", "x" * 300])
def test_sweep_out_that_is_a_file_or_too_long_a_name_is_one_error(tmp_path, out):
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"function": "demo.damped_oscillator", "fixed": {"stiffness": 1.0},
                                  "sweep": [{"path": "damping", "values": [0.1]}]}))
    (tmp_path / "file").write_text("keep")
    line = one_error("sweep", str(config), "--out", str(tmp_path / out), "--no-progress")
    assert "output folder" in line
    assert (tmp_path / "file").read_text() == "keep"


# ------------------------------------------------------------------------------------------------ failed runs
def test_every_failure_of_a_run_keeps_the_partial_trajectory(tmp_path):
    """An exception of any kind (here a TypeError from a user's event function, and Ctrl-C) still writes the
    samples before it; the exception itself reaches the caller unchanged."""
    model = biobullet.load_model(chain(tmp_path))

    for exception in (TypeError("user bug"), KeyboardInterrupt()):
        def event(t, x, xd, exception=exception):
            if t > 0.05:
                raise exception
            return 1.0
        out = tmp_path / f"{type(exception).__name__}.csv"
        with pytest.raises(type(exception)):
            biobullet.simulate(model, 0.2, events=[event], out=out, progress=False, t_eval=np.linspace(0, 0.2, 21))
        times = np.loadtxt(str(out) + ".partial.csv", delimiter=",", skiprows=1, usecols=0, ndmin=1)
        assert times[0] == 0.0 and len(times) >= 2 and times[-1] <= 0.05


@pytest.mark.slow
def test_a_run_stopped_at_a_toggle_keeps_its_partial_trajectory(tmp_path):
    """A crank–rocker four-bar driven by its rocker into the toggle: the run stops with 'singular loop
    configuration' (or a loop closure that no longer converges; where the integrator's step shrinks below the
    spacing of the time first — which comes first depends on the last bits of M and h —, its message names the loop
    near its singular configuration); the samples before it are written although the resolver's cache is at the
    singular point."""
    from closed_chains import crank_rocker_into_toggle
    path = _write(tmp_path, crank_rocker_into_toggle())
    model = biobullet.load_model(path)
    out = tmp_path / "run.csv"
    with pytest.raises(biobullet.SolverError, match="singular loop configuration|did not converge") as info:
        biobullet.simulate(model, 0.05, out=out, progress=False)
    partial = np.loadtxt(str(out) + ".partial.csv", delimiter=",", skiprows=1, ndmin=2)
    assert info.value.partial_path == str(out) + ".partial.csv" and len(partial) > 10
    assert partial[0, 0] == 0.0 and partial[-1, 0] <= info.value.t
    assert str(info.value).count(str(path)) == 1   # the file is named once, not again inside the loop's cause


# ------------------------------------------------------------------------------------------------ stiffness
def test_the_stiffness_watch_speaks_once_for_a_stiff_problem_only():
    """y' = −λ y with λ = 10⁷ s⁻¹: DOP853's stability bound holds its step near 3.3/λ (3e-7 s) whatever the
    tolerance, so the watch speaks once; λ = 10 steps freely (silent), and so does Radau on the stiff one."""
    from biobullet.integrate.stepper import STIFF_MEAN_STEP, LoopResult, run_loop
    calls = []

    def run(rate: float, method: str, t_end: float) -> LoopResult:
        result = LoopResult()
        run_loop(lambda t, y: -rate * y, 0.0, np.array([1.0]), t_end, method=method, rtol=1e-6, atol=1e-9,
                 max_step=np.inf, t_eval=None, events=[], result=result,
                 on_stiff=lambda t, h: calls.append((method, rate, t, h)))
        return result

    stiff = run(1e7, "DOP853", 5e-3)
    assert len(calls) == 1 and calls[0][3] < STIFF_MEAN_STEP and stiff.status == "finished"
    calls.clear()
    run(10.0, "DOP853", 20.0)
    radau = run(1e7, "Radau", 5e-3)
    assert calls == [] and radau.steps < stiff.steps / 20


def test_the_stiff_warning_names_the_stiffest_element(tmp_path):
    from biobullet.integrate.engine import stiffest_element
    text = (REPO / "urdf" / "prosthesis_fourbar.urdf").read_text()
    stiffened = text.replace('name="toe" link="foot" xyz="0.19 0 -0.07098" normal_law="kelvin_voigt_smooth" '
                             'stiffness="1e5" damping="20"',
                             'name="toe" link="foot" xyz="0.19 0 -0.07098" normal_law="kelvin_voigt_smooth" '
                             'stiffness="1e9" damping="1e5"')
    assert stiffened != text
    model = biobullet.load_model(_write(tmp_path, stiffened))
    assert stiffest_element(model) == ', probably <contact name="toe"> (stiffness 1e+09, damping 100000)'


# ------------------------------------------------------------------------------------------------ bridge state
def test_a_non_finite_base_rotation_is_nan_for_the_divergence_check():
    from biobullet.conventions import matrix_to_quaternion
    assert np.all(np.isnan(matrix_to_quaternion(np.full((3, 3), np.nan))))
    assert np.all(np.isnan(matrix_to_quaternion(np.array([[np.inf, 0, 0], [0, 1, 0], [0, 0, 1]]))))
    np.testing.assert_allclose(matrix_to_quaternion(np.eye(3)), [0, 0, 0, 1])


def test_a_floating_base_thrown_at_a_huge_rate_on_pybullet_stops_with_one_error(tmp_path):
    pytest.importorskip("pybullet")
    line = one_error("simulate", str(REPO / "urdf" / "fourbar_knee.urdf"), "--floating-base", "--engine",
                     "pybullet", "--t-end", "0.01", "--out", str(tmp_path / "run.csv"), "--set", "knee_A_dot=1e300")
    assert "diverged" in line and "not finite" in line


def test_a_floating_base_on_a_root_named_world_is_refused_by_the_bridge(tmp_path):
    """PyBullet fixes a root link named "world" whatever useFixedBase says: the prosthesis with --floating-base was
    an internal error (an 8 × 8 PyBullet mass matrix for 14 velocities)."""
    pytest.importorskip("pybullet")
    line = one_error("simulate", str(REPO / "urdf" / "prosthesis_fourbar.urdf"), "--floating-base", "--engine",
                     "pybullet", "--t-end", "0.01", "--out", str(tmp_path / "run.csv"))
    assert "root link named 'world'" in line and '<link name="world">' in line


# ------------------------------------------------------------------------------------------------ validate
def test_validate_says_what_the_oracles_said_and_that_nothing_was_compared(tmp_path, capfd):
    pytest.importorskip("pinocchio")
    pytest.importorskip("pybullet")
    from biobullet.cli import EXIT_NOT_COMPARED, main
    # a revolute joint without <limit>: urdfdom and PyBullet refuse the file (biobullet reads it as unlimited)
    path = _write(tmp_path, CHAIN.format(extension="", com="0 0 -0.25"))
    capfd.readouterr()
    code = main(["validate", path, "--samples", "1"])
    out, err = capfd.readouterr()
    assert code == EXIT_NOT_COMPARED == 3
    assert "NOTHING COMPARED" in out and "DISAGREEMENT" not in out
    notes = [line for line in out.splitlines() if line.startswith("note: oracle")]
    assert len(notes) == 2 and all("does not specify limits" in note for note in notes), out
    for spill in ("Error:", "b3Error", "b3Warning", "urdfdom", "build time"):
        assert spill not in err, err   # the C++ libraries' own output was captured, not spilled


def test_native_oracle_messages_are_read_one_line_each():
    from biobullet.validate.oracles import native_errors
    text = ("Error:   Joint [j] is of type REVOLUTE but it does not specify limits\n"
            "         at line 607 in /project/urdfdom/urdf_parser/src/joint.cpp\n"
            "b3Warning[a.cpp,126]:\nNo inertial data for link, using mass=1b3Error[a.cpp,121]:\n"
            "Joint is of type REVOLUTE but it does not specify limitsb3Error[a.cpp,121]:\njoint xml is bad")
    assert native_errors(text) == ["Joint [j] is of type REVOLUTE but it does not specify limits",
                                   "Joint is of type REVOLUTE but it does not specify limits", "joint xml is bad"]


# ------------------------------------------------------------------------------------------------ HTML replay
def test_json_for_a_page_escapes_every_html_context_and_round_trips():
    from biobullet.render.html import json_for_script
    data = {"names": ["<!--<script>", "</script><script>alert(1)</script>", "]]>", "a&amp;b", "\u2028\u2029"]}
    text = json_for_script(data)
    assert not set(text) & set("<>&\u2028\u2029") and json.loads(text) == data


# ------------------------------------------------------------------------------------------------ element counts
def test_thousands_of_unnamed_contacts_get_distinct_names(tmp_path):
    from biobullet.contact.element import contact_elements
    contact = '<contact link="l2" normal_law="kelvin_voigt_smooth" stiffness="1e5" damping="20" smoothing="1e6"/>'
    model = biobullet.load_model(chain(tmp_path, contact * 2000))
    names = [contact.name for contact in contact_elements(model)]
    assert len(set(names)) == len(names) == 2000   # (in linear time: a set, not a scan of the names so far)
    from biobullet.model.extension import MAX_ELEMENTS
    assert MAX_ELEMENTS == 2000   # one more is refused before any is built
    error = _refused(chain(tmp_path, contact * 2001, name="more.urdf"))
    assert "more than 2000 loops, force elements, contacts" in str(error)


def test_plugin_element_tags_are_read_once_per_file(tmp_path, monkeypatch):
    """Every `<biobullet>` child that is a plug-in element used to read the installed packages' entry points
    again (20 ms each: 8,000 of them took minutes); the file's block reads them once."""
    from biobullet.model import extension
    calls = []
    original = extension.entry_point_names
    monkeypatch.setattr(extension, "entry_point_names", lambda group: calls.append(group) or original(group))
    stops = "".join(f'<joint_contact_stop name="s{k}" joint="j1" lower="0" lever="0.01" stiffness="1e3" damping="1" '
                    'smoothing="1e6"/>' for k in range(200))
    model = biobullet.load_model(chain(tmp_path, stops))
    assert len(model.description.elements_of("joint_contact_stop")) == 200 and len(calls) == 1


def test_every_failure_of_a_bridge_run_keeps_the_steps_before_it(tmp_path, monkeypatch):
    pytest.importorskip("pybullet")
    from biobullet.bridge import Bridge
    from biobullet.bridge import simulate as bridge_simulate
    original, steps = Bridge.step, []

    def failing_step(self, *args, **kwargs):
        if len(steps) == 5:
            raise RuntimeError("a user's plug-in failed")
        steps.append(1)
        return original(self, *args, **kwargs)
    monkeypatch.setattr(Bridge, "step", failing_step)
    out = tmp_path / "run.csv"
    with pytest.warns(UserWarning, match="partial trajectory written"), pytest.raises(RuntimeError, match="plug-in"):
        bridge_simulate(biobullet.load_model(REPO / "urdf" / "arm7.urdf"), 0.1, dt=1e-3, out=out, progress=False)
    times = np.loadtxt(str(out) + ".partial.csv", delimiter=",", skiprows=1, usecols=0, ndmin=1)
    np.testing.assert_allclose(times, np.arange(6) * 1e-3, atol=1e-12)   # t = 0 and the five steps taken


def test_a_stored_point_is_never_read_through_a_link(tmp_path):
    from biobullet.sweep.config import load_config
    from biobullet.sweep.store import point_path, read_point
    config, out = _sweep_with_stored_points(tmp_path)
    point = load_config(config).points()[0]
    stored = point_path(out, point.id)
    assert read_point(out, point) is not None
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(stored.read_bytes())
    stored.unlink()
    stored.symlink_to(elsewhere)
    assert read_point(out, point) is None   # a valid record behind a link is not a stored point
    with pytest.raises(OutputError, match="symbolic link"):
        write_text(stored, "{}", within=out)
    assert json.loads(elsewhere.read_text())["id"] == point.id


def test_a_stiff_run_of_the_default_method_goes_on_with_radau_and_says_so(tmp_path):
    """An overdamped joint spring (c/I ≈ 10⁷ s⁻¹): DOP853 is held to ~1 µs steps by stability; the default run
    switches to Radau after the watch's window, says so once, and ends where a Radau run from the start ends."""
    model = biobullet.load_model(chain(tmp_path, '<joint_spring joint="j1" stiffness="1e3" damping="1e6"/>'))
    options = dict(initial={"j1": 0.5}, progress=False, t_eval=np.linspace(0, 0.01, 11))
    with pytest.warns(UserWarning, match=r"looks stiff for the explicit DOP853.*<joint_spring joint=\"j1\"> "
                                         r"\(stiffness 1000, damping 1e\+06\); going on with the implicit Radau"):
        run = biobullet.simulate(model, 0.01, **options)
    assert run.meta["method"].startswith("DOP853, then Radau from t = ")
    reference = biobullet.simulate(model, 0.01, method="Radau", **options)
    # both runs at the default rtol 1e-9 / atol 1e-12 (angles of order 0.5 rad): 1e-8 rad is 10× their error
    np.testing.assert_allclose(run.positions, reference.positions, rtol=0, atol=1e-8)
