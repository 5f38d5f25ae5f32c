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
