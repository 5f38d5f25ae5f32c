"""The `biobullet` command line: each command once end to end as `python -m biobullet` in a subprocess (`run_process`),
the other checks of what a command prints and returns through `main(argv)` in this process (`run_cli`,
tests/in_process.py: the same exit code, stdout and stderr without a new interpreter loading every kernel again)."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import in_process

REPO = Path(__file__).resolve().parents[2]
SUBCOMMANDS = ("info", "validate", "simulate", "run", "sweep", "bench", "view", "convert")
HEAVY_MODULES = ("numpy", "scipy", "pinocchio", "pybullet", "sympy", "matplotlib")

INERTIAL = ('<inertial><origin xyz="0 0 0.25"/><mass value="{m}"/>'
            '<inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.01"/></inertial>')
SMALL_MODEL = f"""<robot name="small_arm">
  <link name="base">{INERTIAL.format(m=3)}</link>
  <link name="upper">{INERTIAL.format(m=2)}</link>
  <link name="fore">{INERTIAL.format(m=1.5)}</link>
  <link name="hand">{INERTIAL.format(m=0.5)}</link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <axis xyz="0 0 1"/><limit lower="-1.5" upper="1.5" effort="10" velocity="3"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="fore"/>
    <origin xyz="0 0 0.5"/><axis xyz="0 1 0"/><limit lower="0" upper="2.5" effort="10" velocity="3"/></joint>
  <joint name="wrist" type="fixed"><parent link="fore"/><child link="hand"/><origin xyz="0 0 0.4"/></joint>
  <biobullet version="1">
    <gravity xyz="0 0 -9.81"/>
    <joint_function joint="elbow" type="linear" inputs="shoulder" coefficients="0.5" offset="0.2"/>
    <joint_spring joint="shoulder" stiffness="10" rest="0" damping="0.1"/>
    <initial joint="shoulder" position="0.3" velocity="0"/>
  </biobullet>
</robot>
"""


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """`biobullet ARGS` through `main(argv)` in this process (BIOBULLET_DEBUG unset, as `run_process` runs it)."""
    return in_process.cli(*args, env={"BIOBULLET_DEBUG": None})


def run_process(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m biobullet ARGS`, a process of its own (the end-to-end run of a command)."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"))
    env.pop("BIOBULLET_DEBUG", None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "biobullet", *args], env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def small_model(tmp_path: Path) -> Path:
    path = tmp_path / "small_arm.urdf"
    path.write_text(SMALL_MODEL, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------ info
def test_info_text_lists_bodies_joints_coordinates_and_elements(small_model: Path) -> None:
    result = run_process("info", str(small_model))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "model        small_arm" in lines
    assert "base         fixed" in lines
    assert "total mass   7 kg (moving 4 kg)" in lines
    assert "  q: shoulder" in lines and "  v: shoulder" in lines
    # aligned table rows: the fixed 'wrist' merged the hand into the forearm body (1.5 + 0.5 kg)
    body_rows = [line.split() for line in lines if line.startswith("  upper ") or line.startswith("  fore ")]
    assert body_rows == [["upper", "shoulder", "revolute", "world", "2", "-"],
                         ["fore", "elbow", "revolute", "upper", "2", "hand"]]
    elbow = next(line.split() for line in lines if line.startswith("  elbow "))
    assert elbow == ["elbow", "revolute", "upper", "fore", "0", "1", "0", "0", "2.5", "dependent", "linear",
                     "shoulder"]
    header = next(line for line in lines if line.startswith("  name "))
    assert header.index("role") == next(line for line in lines if line.startswith("  elbow ")).index("dependent")
    assert '  <joint_spring> joint="shoulder" stiffness="10" rest="0" damping="0.1"' in lines
    assert "welded to the world: base" in result.stdout


def test_info_json_is_machine_readable(small_model: Path) -> None:
    result = run_cli("info", str(small_model), "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["name"] == "small_arm" and info["base_type"] == "fixed"
    assert info["gravity"] == [0.0, 0.0, -9.81]
    assert info["total_mass"] == pytest.approx(7.0, abs=1e-12)
    assert info["moving_mass"] == pytest.approx(4.0, abs=1e-12)
    assert [b["link"] for b in info["bodies"]] == ["upper", "fore"]
    assert info["bodies"][1]["links"] == ["fore", "hand"]
    joints = {j["name"]: j for j in info["joints"]}
    assert joints["shoulder"]["role"] == "independent"
    assert (joints["elbow"]["role"], joints["elbow"]["function"], joints["elbow"]["inputs"]) == \
        ("dependent", "linear", ["shoulder"])
    assert joints["elbow"]["axis"] == [0.0, 1.0, 0.0]
    assert (joints["elbow"]["lower"], joints["elbow"]["upper"]) == (0.0, 2.5)
    assert joints["wrist"]["role"] == "fixed"
    assert info["coordinates"] == {"q": ["shoulder"], "v": ["shoulder"]}
    assert info["forces"] == [{"element": "joint_spring", "joint": "shoulder", "stiffness": "10", "rest": "0",
                               "damping": "0.1"}]
    assert info["loops"] == [] and info["contacts"] == [] and info["flexible"] == []


def test_info_floating_base_flag_adds_base_coordinates(small_model: Path) -> None:
    info = json.loads(run_cli("info", str(small_model), "--floating-base", "--json").stdout)
    assert info["base_type"] == "floating"
    assert info["coordinates"]["q"][:7] == ["base_x", "base_y", "base_z", "base_qx", "base_qy", "base_qz", "base_qw"]
    assert info["coordinates"]["v"][:6] == ["base_vx", "base_vy", "base_vz", "base_wx", "base_wy", "base_wz"]
    assert info["moving_mass"] == pytest.approx(7.0, abs=1e-12)


def test_info_loops_and_forces_of_a_bundled_model() -> None:
    info = json.loads(run_cli("info", str(REPO / "urdf" / "andrews_squeezer.urdf"), "--json").stdout)
    assert len(info["loops"]) == 3 and all(loop["type"] == "planar" for loop in info["loops"])
    assert {f["element"] for f in info["forces"]} == {"spring", "joint_torque"}
    roles = {j["name"]: j["function"] for j in info["joints"] if j["role"] == "dependent"}
    assert set(roles.values()) == {"implicit (loop closure)"}
    assert info["coordinates"]["q"] == ["beta"]


# ------------------------------------------------------------------------------------------------ validate
def test_validate_json_stdout_is_only_json(small_model: Path) -> None:
    result = run_process("validate", str(small_model), "--samples", "2", "--json")
    report = json.loads(result.stdout)          # nothing else on stdout (PyBullet's banner goes to stderr)
    assert result.returncode == (0 if report["ok"] else 2)
    assert report["ok"] is True and report["model"] == "small_arm"
    assert report["checks"]
    for check in report["checks"]:
        assert {"quantity", "formulation", "oracle", "max_abs_error", "max_rel_error"} <= set(check)
    assert {c["quantity"] for c in report["checks"]} >= {"mass_matrix", "bias_forces", "forward_dynamics"}
    assert "validate: sample 2/2" in result.stderr


def test_validate_table_and_disagreement_exit_code(small_model: Path) -> None:
    result = run_cli("validate", str(small_model), "--samples", "2")
    assert result.returncode == 0, result.stderr
    assert "mass_matrix" in result.stdout and result.stdout.rstrip().endswith("all checks agree")
    strict = run_cli("validate", str(small_model), "--samples", "2", "--tol", "1e-300")
    assert strict.returncode == 2
    assert strict.stdout.rstrip().endswith("DISAGREEMENT: some checks exceed the tolerance")


def test_validate_random_trees_json() -> None:
    result = run_cli("validate", "--random", "2", "--samples", "2", "--json")
    payload = json.loads(result.stdout)
    assert len(payload["models"]) == 2 and payload["ok"] is all(m["ok"] for m in payload["models"])
    assert result.returncode == (0 if payload["ok"] else 2)
    assert "validate: model 2/2" in result.stderr


# ------------------------------------------------------------------------------------------------ help
@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_subcommand_help_has_description_and_example(command: str) -> None:
    result = run_process(command, "--help")   # (a start-up that imports nothing heavy: each command end to end)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.startswith(f"usage: biobullet {command}")
    description = text.split("\n\n")[1]
    assert len(description.strip()) > 20
    examples = text.split("examples:\n", 1)[1]
    assert f"  biobullet {command}" in examples


def test_simulate_help_lists_the_design_flags() -> None:
    text = run_cli("simulate", "--help").stdout
    for flag in ("--t-end", "--engine", "--rtol", "--atol", "--dt", "--set", "--out", "--method", "--formulation"):
        assert flag in text
    assert "{reference,pybullet}" in text


def test_start_up_imports_nothing_heavy() -> None:
    code = ("import sys\nimport biobullet.cli as cli\n"
            "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "for command in " + repr(SUBCOMMANDS) + ":\n"
            "    try:\n        cli.main([command, '--help'])\n    except SystemExit:\n        pass\n"
            f"print(','.join(m for m in {HEAVY_MODULES!r} if m in sys.modules), file=sys.stderr)\n")
    env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "", f"heavy modules imported at start-up: {result.stderr.strip()}"


# ------------------------------------------------------------------------------------------------ exit codes
def test_bad_arguments_give_usage_error() -> None:
    result = run_cli("info")
    assert result.returncode == 2
    assert result.stderr.startswith("usage: biobullet info")
    assert "the following arguments are required: MODEL" in result.stderr
    assert run_cli("frobnicate").returncode == 2
    assert run_cli("info", "x.urdf", "--fixed-base", "--floating-base").returncode == 2
    bad_set = run_cli("simulate", "m.urdf", "--t-end", "1", "--out", "o.csv", "--set", "elbow")
    assert bad_set.returncode == 2 and "expected NAME=VALUE, got 'elbow'" in bad_set.stderr
    assert run_cli("simulate", "m.urdf", "--t-end", "-1", "--out", "o.csv").returncode == 2


def test_validate_needs_model_or_random(small_model: Path) -> None:
    result = run_cli("validate")
    assert result.returncode == 2
    assert result.stderr.startswith("usage: biobullet validate")
    assert "MODEL is required unless --random N is given" in result.stderr
    both = run_cli("validate", str(small_model), "--random", "2")
    assert both.returncode == 2 and "give either MODEL or --random N, not both" in both.stderr
    assert run_cli("validate", "--random", "0").returncode == 2


def test_missing_model_is_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "absent.urdf"
    result = run_cli("info", str(path))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"biobullet: error: {path}: no such file\n"


def test_version_flag() -> None:
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.startswith("biobullet ")


def _has(module: str, attribute: str) -> bool:
    try:
        return hasattr(__import__(f"biobullet.{module}", fromlist=[attribute]), attribute)
    except ImportError:
        return False


def test_run_unknown_scenario_is_one_line_error() -> None:
    result = run_process("run", "no-such-study")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("biobullet: error: argument 'SCENARIO': unknown scenario 'no-such-study'")


# ------------------------------------------------------------------------------------------------ error paths (in process)
def _patched_main(monkeypatch, exc: BaseException, argv: list[str]) -> int:
    import biobullet.cli as cli

    def boom(args):
        raise exc

    monkeypatch.setattr(cli, "cmd_info", boom)
    return cli.main(argv)


def test_keyboard_interrupt_exits_130(monkeypatch, capsys) -> None:
    assert _patched_main(monkeypatch, KeyboardInterrupt(), ["info", "x.urdf"]) == 130
    assert capsys.readouterr().err == "\nbiobullet: interrupted\n"


def test_solver_error_is_one_line(monkeypatch, capsys) -> None:
    from biobullet.core.errors import SolverError
    assert _patched_main(monkeypatch, SolverError("assembly failed at t = 0.1 s"), ["info", "x.urdf"]) == 2
    assert capsys.readouterr().err == "biobullet: error: assembly failed at t = 0.1 s\n"


def test_unexpected_exception_asks_for_a_report(monkeypatch, capsys) -> None:
    monkeypatch.delenv("BIOBULLET_DEBUG", raising=False)
    assert _patched_main(monkeypatch, ZeroDivisionError("division by zero"), ["info", "x.urdf"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("biobullet: internal error: ZeroDivisionError: division by zero")
    assert "please report" in err and "Traceback" not in err and err.count("\n") == 1


def test_unexpected_exception_traceback_with_debug(monkeypatch, capsys) -> None:
    monkeypatch.setenv("BIOBULLET_DEBUG", "1")
    assert _patched_main(monkeypatch, ZeroDivisionError("division by zero"), ["info", "x.urdf"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "please report" in err


@pytest.mark.skipif(not _has("integrate", "simulate"), reason="simulate not implemented yet")
def test_simulate_writes_csv_with_design_header(small_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "traj.csv"
    result = run_process("simulate", str(small_model), "--t-end", "0.05", "--dt", "0.01", "--set", "shoulder=0.2",
                     "shoulder_dot=-1", "--out", str(out))
    assert result.returncode == 0, result.stderr
    header, *rows = out.read_text().splitlines()
    assert header == "t,shoulder,elbow,shoulder_dot,elbow_dot"
    assert len(rows) == 6
    t0, shoulder, elbow, shoulder_dot, elbow_dot = (float(v) for v in rows[0].split(","))
    assert (t0, shoulder, shoulder_dot) == (0.0, 0.2, -1.0)
    assert elbow == pytest.approx(0.5 * 0.2 + 0.2, abs=1e-15) and elbow_dot == pytest.approx(-0.5, abs=1e-15)


# ------------------------------------------------------------------------------------------------ bench
def test_bench_quick_reports_ratios_and_writes_its_json(tmp_path: Path) -> None:
    """`biobullet bench --quick --json`: the compiled formulations against Pinocchio on the three bundled models and the
    bridge against bare PyBullet, as JSON on stdout and in OUT/bench.json; no timing is asserted, only that the
    figures are there and the timed bridge kept its joint functions."""
    out = tmp_path / "bench"
    result = run_process("bench", "--quick", "--json", "--out", str(out))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert json.loads((out / "bench.json").read_text()) == summary
    assert set(summary["formulations"]) == {"arm7.urdf", "humanoid.urdf", "shoulder_rhythm.urdf"}
    for entry in summary["formulations"].values():
        rows = entry["rows"]
        assert rows["pinocchio (crba + rnea, full tree)"]["ratio_to_pinocchio"] == 1.0
        # --quick: Pinocchio and the compiled formulations (link_segment on arm7, the one link-segment model of the
        # three; reduced_recursive's kernels); the pure-Python one (bench.SLOW) takes the full run
        assert {"reduced", "reduced_pinocchio", "reduced_recursive"} <= set(rows)
        assert "matrix_calculus" not in rows
        assert all(row["us_per_call"] > 0 and math.isfinite(row["ratio_to_pinocchio"]) for row in rows.values())
    bridge = summary["bridge"]
    assert bridge["joint_functions"] == 10 and bridge["fast_path"]
    for clock in ("wall", "cpu"):
        assert set(bridge["us_per_step"][clock]) == {"bare", "minimal", "bridge"}
        assert bridge["ratio_bridge_to_bare"][clock] > 0
    assert bridge["max_joint_function_residual"] <= 1e-6
    assert "bench: results in" in result.stderr


def test_main_called_from_python_leaves_the_warning_format_and_the_logger_as_it_found_them(small_model: Path,
                                                                                             capsys) -> None:
    # `main` sets a one-line warning format and the library logger's level for its run; called from a script or a
    # test (not as the `biobullet` process) it used to leave them set, so later warnings of that process lost their
    # file and line ("biobullet: warning: ..." for any library's warning)
    import logging
    import warnings
    import biobullet.cli as cli
    before = (warnings.formatwarning, logging.getLogger("biobullet").level)
    assert cli.main(["--quiet", "info", str(small_model)]) == 0
    assert cli.main(["info", str(small_model)]) == 0
    capsys.readouterr()
    assert (warnings.formatwarning, logging.getLogger("biobullet").level) == before
