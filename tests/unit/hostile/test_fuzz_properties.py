"""Property-based fuzzing (Hypothesis) of everything a stranger controls: model files, expressions, sweep configs
and command-line arguments.

The property, everywhere: either success with finite numbers, or exactly one clean error — exit code 2 with one
line `biobullet: error: ...` on stderr (CLI), a BiobulletError (API) — never an internal error, a traceback, a
NaN, or unbounded work. Examples are bounded and derandomized (the same inputs on every run, seed fixed), so
this suite is deterministic and short; `tools/fuzz_campaign.py` runs the long randomized campaign.
"""
from __future__ import annotations

import json
import math
import os
import re
import tempfile

import numpy as np
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from biobullet.core.errors import BiobulletError, EvaluationError, ModelError, SourceRef
from hostile_cli import run_cli

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

BASE = """<robot name="fz">
  <link name="base"/>
  <link name="l1"><inertial><origin xyz="{com}"/><mass value="{mass}"/>
    <inertia ixx="{ixx}" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l2"><inertial><mass value="0.5"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="{origin}"/>
    <axis xyz="{axis}"/><limit lower="{lower}" upper="1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 -0.5"/>
    <axis xyz="0 1 0"/></joint>
  <biobullet>
    <joint_function joint="j2" type="expression" inputs="j1" expression="{expression}" parameters="{parameters}"/>
    <joint_spring joint="j1" stiffness="{stiffness}" damping="{damping}"/>
    <spring link_a="base" link_b="l2" xyz_b="{xyz_b}" stiffness="1" rest_length="{rest}"/>
    <joint_torque joint="j1" type="{torque_type}" period="{period}" a0="{a0}"/>
    <initial joint="j1" position="{position}"/>
  </biobullet>
</robot>
"""
DEFAULTS = dict(com="0 0 -0.25", mass="1", ixx="0.01", origin="0 0 0", axis="0 1 0", lower="-1",
                expression="0.5*sin(j1)", parameters="", stiffness="2", damping="0.1", xyz_b="0 0 0",
                rest="0.1", torque_type="fourier", period="1", a0="0.2", position="0.1")

HOSTILE = st.one_of(
    st.sampled_from(["", " ", "nan", "inf", "-inf", "1e308", "-1e308", "1e-320", "0", "-1", "1e200", "abc",
                     "1 2", "9" * 400, "1e99999", "0 0 0", "1e300 0 0", "a&#10;Traceback&#13;", "x" * 5000,
                     "1/t", "log(j1)", "acos(j1 + 2)", "exp(1000*j1)", "1/(t-0.01)", "exp(" * 20 + "j1" + ")" * 20,
                     "k=nan", "k=1 k=2", "t=1"]),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters='"<&'), max_size=30),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-10 ** 40, max_value=10 ** 40).map(str),
)


def assert_clean(code: int, lines: list[str]) -> None:
    """Exit 0, or exit 2 whose last line is the one error line (argparse adds its usage lines above)."""
    assert code in (0, 2), (code, lines)
    assert not any(line.startswith("Traceback") or "internal error" in line for line in lines), lines
    if code == 2:
        errors = [line for line in lines if "error:" in line]
        assert len(errors) == 1 and lines[-1] == errors[0], lines


def assert_finite_or_refused(call) -> None:
    try:
        value = np.asarray(call(), dtype=float)
    except BiobulletError:
        return
    assert np.all(np.isfinite(value)), value


@SETTINGS
@seed(16)
@given(key=st.sampled_from(sorted(DEFAULTS)), value=HOSTILE)
def test_model_file_fuzz_gives_one_line_or_finite_dynamics(key: str, value: str) -> None:
    text = BASE.format(**{**DEFAULTS, key: value})
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fz.urdf")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(text)
        code, lines = run_cli("info", path)
        assert_clean(code, lines)
        if code == 2:
            assert "\n" not in lines[0] and len(lines[0]) < 2600  # escaped, truncated
            return
        from biobullet import load_model
        model = load_model(path)
        q, v = model.initial_state()
        for t in (0.0, 0.01, 0.37):
            assert_finite_or_refused(lambda: model.mass_matrix(q, t))
            assert_finite_or_refused(lambda: model.bias_forces(q, v, t))
            assert_finite_or_refused(lambda: model.forward_dynamics(q, v, t=t))


# ------------------------------------------------------------------------------------------------ expressions
LEAVES = st.one_of(st.sampled_from(["A", "t", "pi", "e", "0", "1", "2.5", "1e308", "1e-300", "9" * 31]),
                   st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).map(lambda x: f"({x!r})"))


def _extend(children):
    return st.one_of(
        st.tuples(children, st.sampled_from(["+", "-", "*", "/", "**"]), children).map(lambda a: f"({a[0]}{a[1]}{a[2]})"),
        st.tuples(st.sampled_from(["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp",
                                   "log", "sqrt"]), children).map(lambda a: f"{a[0]}({a[1]})"),
        children.map(lambda a: f"-{a}"))


EXPRESSIONS = st.recursive(LEAVES, _extend, max_leaves=12)


@SETTINGS
@seed(16)
@given(text=EXPRESSIONS, x=st.floats(min_value=-3, max_value=3), t=st.sampled_from([0.0, 0.1, 1.0, 2.5]))
def test_expression_fuzz_is_finite_or_one_clear_error(text: str, x: float, t: float) -> None:
    from biobullet.functions.expression import ExpressionFunction
    source = SourceRef("fz.urdf", '<joint_function joint="J">')
    try:
        function = ExpressionFunction(("A",), text, source=source)
    except ModelError as exc:
        assert exc.attribute == "expression" and "\n" not in str(exc)
        return
    try:
        value, gradient, hessian = function.evaluate(np.array([x]), t)
    except EvaluationError as exc:  # outside the domain / a pole / overflow: named, never NaN
        assert "fz.urdf" in str(exc) and f"t = {t:.9g}" in str(exc)
        return
    assert math.isfinite(value) and np.all(np.isfinite(gradient)) and np.all(np.isfinite(hessian))


# ------------------------------------------------------------------------------------------------ sweep configs
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-10 ** 400, max_value=10 ** 400),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20),
              st.sampled_from(["/tmp/escape", "../escape", "a/../../b", "ok_name", "a\nb", "demo.damped_oscillator",
                               "damping", "stiffness"])),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.sampled_from(["function", "fixed", "sweep", "combine", "out",
                                                                "retries", "name", "path", "values", "start",
                                                                "stop", "num", "log", "x"]), children, max_size=5)),
    max_leaves=15)


@SETTINGS
@seed(16)
@given(config=st.dictionaries(st.sampled_from(["function", "fixed", "sweep", "combine", "out", "retries", "name"]),
                              JSON_VALUES, max_size=6))
def test_sweep_config_fuzz_loads_or_one_clear_error(config) -> None:
    from biobullet.sweep.config import load_config
    config.setdefault("function", "demo.damped_oscillator")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fz.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(config, handle)
        try:
            loaded = load_config(path)
        except ModelError as exc:
            assert "\n" not in str(exc)
            return
        if loaded.out is not None:  # never outside the config's folder
            assert os.path.realpath(loaded.out).startswith(os.path.realpath(tmp) + os.sep) or \
                os.path.realpath(loaded.out) == os.path.realpath(tmp)
        assert "/" not in loaded.name and ".." not in loaded.name


# ------------------------------------------------------------------------------------------------ CLI arguments
TOKENS = st.sampled_from(["--dt", "1e-12", "-1", "nan", "0", "x", "--t-end", "--out", "/dev/null", ".", "--seed",
                          "--samples", "--tol", "--modes", "--json", "--random", "--set", "j=1", "=", "--method",
                          "nope", "--formulation", "--engine", "pybullet", "--quick", "99999999999999999999"])


@settings(SETTINGS, max_examples=30)
@seed(16)
@given(command=st.sampled_from(["info", "validate", "simulate", "run", "sweep", "bench"]),
       args=st.lists(TOKENS, max_size=5))
def test_cli_argument_fuzz_exits_0_or_2_with_one_error_line(command: str, args: list[str]) -> None:
    # a model that loads but whose every run would be long is not needed: bad arguments must fail before work,
    # so the model argument is a missing file for the commands that take one (the argument checks come first)
    positional = {"info": ["/nonexistent/m.urdf"], "validate": ["/nonexistent/m.urdf"],
                  "simulate": ["/nonexistent/m.urdf"], "run": ["no_such_study"], "sweep": ["/nonexistent/c.json"],
                  "bench": []}[command]
    if command == "bench" and not any(a in ("--out",) for a in args):
        args = [*args, "--out", "/dev/null"]  # refused before any timing
    code, lines = run_cli(command, *positional, *args)
    assert code == 2, (command, args, lines)
    assert_clean(code, lines)


# ------------------------------------------------------------------------------------------------ second campaign
def info_of(text: str) -> tuple[int, list[str]]:
    """`biobullet info` of a model text (exit code, stderr lines), checked to be clean (see assert_clean)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fz.urdf")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        code, lines = run_cli("info", path)
    assert_clean(code, lines)
    return code, lines


#: the attribute each key of DEFAULTS fills in BASE (numeric ones only)
NUMERIC_ATTRIBUTE = {"com": "xyz", "mass": "value", "ixx": "ixx", "origin": "xyz", "axis": "xyz", "lower": "lower",
                     "stiffness": "stiffness", "damping": "damping", "xyz_b": "xyz_b", "rest": "rest_length",
                     "period": "period", "a0": "a0", "position": "position"}


@SETTINGS
@seed(27)
@given(key=st.sampled_from(sorted(NUMERIC_ATTRIBUTE)), blank=st.text(alphabet=" \t\n\r", max_size=4))
def test_a_blank_numeric_attribute_is_one_error_naming_it(key: str, blank: str) -> None:
    code, lines = info_of(BASE.format(**{**DEFAULTS, key: blank}))
    assert code == 2 and f"attribute '{NUMERIC_ATTRIBUTE[key]}'" in lines[-1], lines


SHAPE_VALUES = st.one_of(HOSTILE, st.sampled_from(["0.1", "0.1 0.2 0.3", "1 1 1 1", "-0.1", "0"]))


@SETTINGS
@seed(27)
@given(kind=st.sampled_from(["visual", "collision"]), origin=SHAPE_VALUES, rpy=SHAPE_VALUES, size=SHAPE_VALUES,
       shape=st.sampled_from(["box", "sphere", "cylinder", "capsule", "mesh", "plane", "cone"]),
       rgba=st.one_of(st.none(), SHAPE_VALUES))
def test_what_info_accepts_the_viewer_can_draw(kind, origin, rpy, size, shape, rgba) -> None:
    """A `<visual>`/`<collision>` with hostile values: `info` refuses it with one line, or the viewer reads it."""
    from biobullet.render.scene import read_visuals
    attribute = {"box": "size", "sphere": "radius", "cylinder": "radius", "capsule": "length", "mesh": "scale",
                 "plane": "normal", "cone": "radius"}[shape]
    extra = {"cylinder": ' length="0.2"', "capsule": ' radius="0.1"', "mesh": ' filename="m.stl"'}.get(shape, "")
    color = "" if rgba is None else f'<material name="m"><color rgba="{rgba}"/></material>'
    element = (f'<{kind}><origin xyz="{origin}" rpy="{rpy}"/><geometry><{shape} {attribute}="{size}"{extra}/>'
               f"</geometry>{color}</{kind}>")
    text = BASE.format(**DEFAULTS).replace('<link name="base"/>', f'<link name="base">{element}</link>')
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fz.urdf")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(text)
        with open(os.path.join(tmp, "m.stl"), "w") as handle:   # a real mesh: only the values are under test
            handle.write("solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\n"
                         "endloop\nendfacet\nendsolid t\n")
        code, lines = run_cli("info", path)
        assert_clean(code, lines)
        if code == 0 and kind == "visual":
            visuals = read_visuals(path)
            assert all(np.all(np.isfinite(v.vertices)) for v in visuals)


@SETTINGS
@seed(27)
@given(layout=st.lists(st.tuples(st.sampled_from(["a", "b", "a/c", "b/d"]),
                                 st.sampled_from(["dir", "link_in", "link_out", "file"])), max_size=4),
       target=st.sampled_from(["a/f.json", "a/c/f.json", "b/d/e/f.json", "f.json", "b/f.json"]))
def test_writes_below_an_output_folder_stay_inside_it(layout, target) -> None:
    """Any arrangement of folders, links (inside or outside) and files below `out`: a write `within=out` lands on
    a path without links inside `out`, or is an OutputError; nothing appears outside."""
    from biobullet.core.atomic import OutputError, write_text
    with tempfile.TemporaryDirectory() as tmp:
        tmp = os.path.realpath(tmp)
        out, outside = os.path.join(tmp, "out"), os.path.join(tmp, "outside")
        os.makedirs(out)
        os.makedirs(outside)
        for relative, kind in layout:
            path = os.path.join(out, relative)
            parent = os.path.dirname(path)
            if os.path.lexists(path) or not os.path.isdir(parent) or os.path.realpath(parent) != parent:
                continue   # (the layout itself is built without following its links)
            if kind == "dir":
                os.mkdir(path)
            elif kind == "file":
                open(path, "w").close()
            else:
                os.symlink(outside if kind == "link_out" else out, path)
        try:
            written = write_text(os.path.join(out, target), "{}", within=out)
        except OutputError as exc:
            assert "\n" not in str(exc)
        else:
            assert os.path.realpath(written) == os.path.join(os.path.realpath(out), target)
        assert os.listdir(outside) == []


@SETTINGS
@seed(27)
@given(names=st.lists(st.text(max_size=12) | st.sampled_from(["<!--<script>", "</script>", "]]>", "&amp;",
                                                              "\u2028", "<\\/"]), max_size=6))
def test_replay_json_is_inert_in_html_and_reads_back_exactly(names) -> None:
    from biobullet.render.html import json_for_script
    text = json_for_script({"names": names})
    assert not set(text) & set("<>&\u2028\u2029")
    assert json.loads(text) == {"names": names}


@settings(SETTINGS, max_examples=20)
@seed(27)
@given(host=st.integers(min_value=0, max_value=40), depth=st.sampled_from([1, 3, 63, 64, 65, 1000]))
def test_a_misplaced_block_or_deep_nesting_is_one_error(host: int, depth: int) -> None:
    """The `<biobullet>` block moved into the host-th element of the file, then `depth` levels of nesting added
    inside the first link: the file loads only with the block directly under <robot> and nesting within the bound."""
    from biobullet.model.urdf import MAX_DEPTH
    text = BASE.format(**DEFAULTS)
    block = text[text.index("<biobullet>"):text.index("</biobullet>") + len("</biobullet>")]
    text = text.replace(block, "")
    opening = [m for m in re.finditer(r"<(\w+)\b[^<>]*[^/]>", text)][1:]   # (not <robot> itself)
    moved = host < len(opening)
    if moved:
        at = opening[host].end()
        text = text[:at] + block + text[at:]
    else:
        text = text.replace("</robot>", block + "</robot>")
    text = text.replace('<link name="base"/>', '<link name="base">' + "<x>" * depth + "</x>" * depth + "</link>")
    code, lines = info_of(text)
    too_deep = 2 + depth > MAX_DEPTH   # <robot> 1, <link> 2
    assert (code == 2) == (too_deep or moved), lines
    if too_deep:
        assert "nested more than" in lines[-1]
    elif moved:
        assert "<biobullet> block nested inside" in lines[-1]
