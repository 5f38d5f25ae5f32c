"""What a newcomer meets on the command line (hunt10): signals, full disks, unwritable and odd output paths,
tolerances that accept any error, help that names the defaults, two sweeps on one folder.

Each test failed on the code before the fix; the reproductions are in the test names and comments."""
from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import in_process
from biobullet import cli
from biobullet.core import atomic
from engine_models import chain_urdf

REPO = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(REPO / "plugin"))
#: a 1 m pendulum, joint j1 (gravity along +x: it hangs at j1 = 0)
PENDULUM = chain_urdf([(1.0, 1.0, 0.5, 0.1)], name="pendulum")
#: a folder where no file can be created, even by root (sysfs)
UNWRITABLE = Path("/sys/biobullet-no-such-folder")


@pytest.fixture()
def pendulum(tmp_path: Path) -> Path:
    path = tmp_path / "pendulum.urdf"
    path.write_text(PENDULUM)
    return path


def _not_reached(*args, **kwargs):
    raise AssertionError("the command started its work before checking its output path")


def _hidden_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# ------------------------------------------------------------------------------------------------ signals
def test_sigterm_during_simulate_keeps_the_partial_run_and_exits_143(pendulum: Path, tmp_path: Path) -> None:
    """`kill PID` (a batch system's time limit) during `simulate` killed the process silently (exit -15), with no
    partial trajectory; Ctrl-C kept it. Now both stop the same way."""
    out = tmp_path / "run.csv"
    # the run is under way once the CLI reaches its integration loop (the progress bar appears after 2 s)
    result, stderr = _terminate_after(["simulate", str(pendulum), "--t-end", "15000", "--set", "j1=1",
                                       "--out", str(out)], "simulate pendulum", tmp_path)
    assert result.returncode == 128 + signal.SIGTERM, stderr
    assert "Traceback" not in stderr and "terminated; partial trajectory written to" in stderr, stderr
    partial = Path(f"{out}.partial.csv")
    rows = partial.read_text().splitlines()
    assert rows[0] == "t,j1,j1_dot" and rows[1] == "0,1,0" and len(rows) >= 3
    assert not out.exists() and _hidden_files(tmp_path) == []


def _wait_for(process: subprocess.Popen, marker: str, timeout: float = 900) -> str:
    """Read the child's stderr until `marker` appears (a progress line: the work is under way); the text read.
    The timeout only bounds a broken run (the test then fails); it is no threshold of the check: 900 s, as a cold
    `bench --quick` on a loaded 2-core machine took over 120 s to reach its marker (testtime2's run at load 8)."""
    import select
    text, deadline = "", time.monotonic() + timeout
    while marker not in text:
        assert time.monotonic() < deadline and process.poll() is None, text
        ready, _, _ = select.select([process.stderr], [], [], 0.2)
        if ready:
            text += os.read(process.stderr.fileno(), 65536).decode(errors="replace")
    return text


def _terminate_after(command: list[str], marker: str, cwd: Path) -> tuple[subprocess.CompletedProcess, str]:
    """Run `biobullet COMMAND…`, send SIGTERM once `marker` is on its stderr; the result and all of stderr."""
    process = subprocess.Popen([sys.executable, "-m", "biobullet", *command], cwd=cwd, env=ENV,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        before = _wait_for(process, marker)
        process.send_signal(signal.SIGTERM)   # a process this test started
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    return subprocess.CompletedProcess(command, process.returncode, stdout, before + stderr), before + stderr


def test_sigterm_during_bench_keeps_the_rows_measured_so_far(tmp_path: Path, monkeypatch) -> None:
    """`biobullet bench` (about a minute) interrupted kept nothing: bench.json was written only at the end.
    (In this process: SIGTERM once the second model's line is on stderr; `simulate`'s SIGTERM above is the real
    process's, `kill` from outside.)"""
    import json

    import biobullet.dynamics.formulation as formulation
    from biobullet.bench import PINOCCHIO
    # the first model measures the formulations the default run compiles anyway: link_segment and
    # reduced_recursive compiled their kernels only here (≈ 14 s of compile CPU), for rows this test only checks are kept
    measured = ("reduced", "reduced_pinocchio")
    names = formulation.formulation_names
    monkeypatch.setattr(formulation, "formulation_names",
                        lambda kind: [name for name in names(kind) if name in measured])
    result = in_process.cli("bench", "--quick", "--out", "b", cwd=tmp_path,
                            signal_at=("formulations on humanoid", signal.SIGTERM))
    stderr = result.stderr
    assert result.returncode == 143, stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == "biobullet: terminated; the rows measured so far are in b/bench.json"
    kept = json.loads((tmp_path / "b" / "bench.json").read_text())
    assert kept["interrupted"] is True and "arm7.urdf" in kept["formulations"]
    rows = kept["formulations"]["arm7.urdf"]["rows"]
    assert set(rows) == {PINOCCHIO, *measured} and all(row["us_per_call"] > 0 for row in rows.values())
    assert _hidden_files(tmp_path / "b") == []


def test_sigterm_during_validate_random_reports_the_models_checked_so_far(tmp_path: Path) -> None:
    """`biobullet validate --random N --json` interrupted printed nothing: every finished verdict was lost.
    (In this process, as the bench test above.)"""
    import json
    result = in_process.cli("validate", "--random", "1000", "--samples", "1", "--json", cwd=tmp_path,
                            signal_at=("validate: model 2/1000", signal.SIGTERM))
    stderr = result.stderr
    assert result.returncode == 143, stderr
    assert "Traceback" not in stderr
    report = json.loads(result.stdout)
    assert report["interrupted"] is True and report["ok"] is False   # an unfinished run is not a pass
    assert 2 <= len(report["models"]) < 1000
    assert all(model["ok"] and model["checks"] for model in report["models"])   # random trees agree with Pinocchio
    assert stderr.strip().splitlines()[-1] == (f"biobullet: terminated; the {len(report['models'])} models "
                                               "validated before it are reported on standard output")


def test_sigterm_during_run_keeps_the_finished_parts_and_says_where(tmp_path: Path, monkeypatch, capsys) -> None:
    """`biobullet run STUDY` interrupted said only "interrupted": not that (nor where) finished parts were kept."""
    import biobullet.studies

    def study(name: str, out_dir: str, **options) -> dict:
        atomic.write_text(Path(out_dir) / "part1.csv", "t,x\n0,1\n")   # a part the study finished
        os.kill(os.getpid(), signal.SIGTERM)   # the batch system's time limit, during the second part
        raise AssertionError("SIGTERM did not stop the study")

    monkeypatch.setattr(biobullet.studies, "run_scenario", study)
    out = tmp_path / "study"
    assert cli.main(["run", "fourbar", "--out", str(out)]) == 143
    assert capsys.readouterr().err.strip() == (f"biobullet: terminated; the files the study finished are kept in "
                                               f"{out}")
    assert (out / "part1.csv").read_text() == "t,x\n0,1\n"


def test_pybullet_simulate_shows_progress_without_a_terminal(pendulum: Path, tmp_path: Path) -> None:
    """`simulate --engine pybullet` showed a progress bar only when stderr was a terminal (the reference engine
    shows it once a run takes > 2 s, also into a log file); SIGTERM then keeps the partial run."""
    out = tmp_path / "run.csv"
    # (in this process: its stderr is no terminal either; the SIGTERM is sent once the progress line is written)
    result = in_process.cli("simulate", str(pendulum), "--engine", "pybullet", "--t-end", "5000", "--set", "j1=1",
                            "--out", str(out), cwd=tmp_path, signal_at=("pybullet pendulum", signal.SIGTERM))
    stderr = result.stderr
    assert result.returncode == 143, stderr
    assert "Traceback" not in stderr
    rows = Path(f"{out}.partial.csv").read_text().splitlines()
    assert rows[0] == "t,j1,j1_dot" and rows[1].startswith("0,1,") and len(rows) > 1000   # > 2 s of steps


# ------------------------------------------------------------------------------------------------ full disk
def test_a_full_disk_while_writing_is_one_output_error_and_leaves_nothing(tmp_path: Path) -> None:
    """ENOSPC while an output was written was an internal error (exit 1, 'please report this as a bug')."""
    target = tmp_path / "result.csv"
    target.write_text("earlier\n")

    def write(tmp: str) -> None:
        Path(tmp).write_text("partial")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(atomic.OutputError, match="result.csv.*No space left on device"):
        atomic.atomic_write(target, write)
    assert target.read_text() == "earlier\n" and _hidden_files(tmp_path) == []


def test_simulate_onto_a_full_disk_exits_2_naming_the_file(pendulum: Path, tmp_path: Path, monkeypatch,
                                                             capsys) -> None:
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)   # the disk fills while the CSV is written
    out = tmp_path / "run.csv"
    code = cli.main(["simulate", str(pendulum), "--t-end", "0.01", "--out", str(out)])
    error = capsys.readouterr().err
    assert code == cli.EXIT_ERROR, error
    assert "run.csv" in error and "No space left on device" in error and "internal error" not in error
    assert not out.exists() and _hidden_files(tmp_path) == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_results_to_a_full_standard_output_exit_2_with_one_line(pendulum: Path) -> None:
    """`biobullet info MODEL --json > file` on a full disk was an internal error (exit 1)."""
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "biobullet", "info", str(pendulum), "--json"], stdout=full,
                                stderr=subprocess.PIPE, text=True, env=ENV, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == ("biobullet: error: cannot write the results to standard output: No space left "
                                     "on device")


# ------------------------------------------------------------------------------------------------ output paths
@pytest.mark.skipif(not Path("/sys").is_dir(), reason="needs sysfs (Linux)")
def test_an_unwritable_output_is_refused_before_the_run(pendulum: Path, monkeypatch, capsys) -> None:
    """`simulate --out /unwritable/run.csv` integrated the whole run, then failed to write it (work lost)."""
    import biobullet.integrate
    monkeypatch.setattr(biobullet.integrate, "cli_simulate", _not_reached)
    code = cli.main(["simulate", str(pendulum), "--t-end", "100", "--out", str(UNWRITABLE / "run.csv")])
    error = capsys.readouterr().err
    assert code == cli.EXIT_ERROR and "cannot write" in error and "run.csv" in error, error


@pytest.mark.skipif(not Path("/sys").is_dir(), reason="needs sysfs (Linux)")
def test_an_unwritable_output_folder_is_refused_before_the_benchmark(monkeypatch, capsys) -> None:
    import biobullet.bench
    monkeypatch.setattr(biobullet.bench, "run_bench", _not_reached)
    code = cli.main(["bench", "--quick", "--out", str(UNWRITABLE)])
    error = capsys.readouterr().err
    assert code == cli.EXIT_ERROR and "cannot write" in error and str(UNWRITABLE) in error, error


@pytest.mark.parametrize("command", [["simulate", "{model}", "--t-end", "1", "--out", "-"],
                                     ["run", "fourbar", "--out", "-"],
                                     ["simulate", "{model}", "--t-end", "1", "--out", ""]])
def test_dash_or_empty_output_is_a_usage_error_not_a_file_named_dash(command, pendulum: Path, tmp_path: Path,
                                                                     monkeypatch, capsys) -> None:
    """`--out -` wrote a file (or, for `run`, a folder) named '-' into the working directory; `--out ''` was
    reported as "will not replace '.'"."""
    import biobullet.integrate
    import biobullet.studies
    monkeypatch.setattr(biobullet.integrate, "cli_simulate", _not_reached)
    monkeypatch.setattr(biobullet.studies, "run_scenario", _not_reached)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        cli.main([part.format(model=pendulum) for part in command])
    error = capsys.readouterr().err
    assert stop.value.code == 2 and "--out" in error, error
    assert not (tmp_path / "-").exists()


def test_an_output_onto_the_model_file_is_refused_and_the_model_kept(pendulum: Path, monkeypatch, capsys) -> None:
    """`simulate arm.urdf --t-end 1 --out arm.urdf` wrote the trajectory CSV over the model file (exit 0, the model
    gone), and so did `biobullet.simulate(model, 1, out=model.file)`; `convert arm26.osim --out arm26.osim`
    replaced the OpenSim model with the URDF."""
    import biobullet
    import biobullet.integrate
    monkeypatch.chdir(pendulum.parent)
    model = biobullet.load_model(pendulum.name)
    with pytest.raises(atomic.OutputError, match="is the input file"):
        biobullet.simulate(model, 0.01, out=f"./{pendulum.name}", progress=False)
    monkeypatch.setattr(biobullet.integrate, "cli_simulate", _not_reached)
    assert cli.main(["simulate", pendulum.name, "--t-end", "0.01", "--out", f"./{pendulum.name}"]) == 2
    assert "is the input file" in capsys.readouterr().err
    assert pendulum.read_text() == PENDULUM
    osim = pendulum.parent / "model.osim"
    osim.write_text("<OpenSimDocument/>")
    assert cli.main(["convert", str(osim), "--out", str(osim)]) == 2
    assert "is the input file" in capsys.readouterr().err
    assert osim.read_text() == "<OpenSimDocument/>"


def test_an_output_file_ending_in_a_slash_is_refused(pendulum: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    """`simulate MODEL --out results/` wrote a file named `results` (and printed "wrote results/")."""
    import biobullet.integrate
    monkeypatch.setattr(biobullet.integrate, "cli_simulate", _not_reached)
    folder = tmp_path / "results"
    assert cli.main(["simulate", str(pendulum), "--t-end", "0.01", "--out", f"{folder}/"]) == 2
    assert "names a folder" in capsys.readouterr().err and not folder.exists()


@pytest.mark.parametrize("command", ["simulate", "sweep"])
def test_an_output_name_too_long_for_the_file_system_is_one_error(command: str, pendulum: Path, tmp_path: Path,
                                                                   capsys) -> None:
    """The checks before the work name a 300-character output name as too long (not an internal error)."""
    config = tmp_path / "sweep.json"
    config.write_text('{"function": "demo.damped_oscillator", "fixed": {"mass": 1.0, "velocity": 1.0, '
                      '"damping": 0.1}, "sweep": [{"path": "stiffness", "values": [1.0]}]}')
    long_name = str(tmp_path / ("x" * 300))
    argv = (["simulate", str(pendulum), "--t-end", "0.01", "--out", long_name + ".csv"] if command == "simulate"
            else ["sweep", str(config), "--out", long_name])
    assert cli.main(argv) == 2
    assert "File name too long" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ arguments
@pytest.mark.parametrize("argv", [["simulate", "m.urdf", "--t-end", "1", "--out", "x.csv", "--rtol", "10"],
                                  ["simulate", "m.urdf", "--t-end", "1", "--out", "x.csv", "--rtol", "1"],
                                  ["validate", "m.urdf", "--tol", "2"]])
def test_a_relative_tolerance_of_one_or_more_is_refused(argv, capsys) -> None:
    """`simulate --rtol 10` ran and wrote a pendulum 0.5 % off (−0.9319 rad against −0.9365 at t = 1 s, --set
    j1=1); `validate --tol 2` would call a 100 % error agreement."""
    with pytest.raises(SystemExit) as stop:
        cli.build_parser().parse_args(argv)
    assert stop.value.code == 2 and "(0, 1)" in capsys.readouterr().err


@pytest.mark.parametrize("options", [["--engine", "pybullet", "--rtol", "1e-3"],
                                     ["--engine", "pybullet", "--method", "Radau"],
                                     ["--engine", "pybullet", "--formulation", "matrix_calculus"], ["--gui"]])
def test_an_option_the_chosen_engine_does_not_read_is_refused(options, pendulum: Path, monkeypatch, capsys) -> None:
    """`simulate --engine pybullet --rtol 1e-3 --method Radau` ran with neither (exit 0), `--gui` on the reference
    engine showed nothing: each was ignored without a word."""
    import biobullet.bridge
    import biobullet.integrate
    monkeypatch.setattr(biobullet.integrate, "cli_simulate", _not_reached)
    monkeypatch.setattr(biobullet.bridge, "simulate", _not_reached)
    with pytest.raises(SystemExit) as stop:
        cli.main(["simulate", str(pendulum), "--t-end", "0.01", "--out", str(pendulum.parent / "x.csv"), *options])
    assert stop.value.code == 2 and f"{options[-2] if options[0] != '--gui' else '--gui'}: only the" in \
        capsys.readouterr().err


def test_simulate_help_names_every_default_and_every_formulation(capsys) -> None:
    """--rtol, --atol, --dt and --method did not say their defaults; --formulation named none of its values."""
    from biobullet.dynamics.formulation import formulation_names
    from biobullet.integrate.engine import DEFAULT_ATOL, DEFAULT_METHOD, DEFAULT_RTOL
    with pytest.raises(SystemExit):
        cli.main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    short = lambda number: f"{number:g}".replace("e-0", "e-")  # noqa: E731  (1e-09 → 1e-9, as the help writes it)
    for default in (f"default {short(DEFAULT_RTOL)}", f"default {short(DEFAULT_ATOL)}", f"{DEFAULT_METHOD} (default",
                    "default 1 ms", "default: 1001 samples"):
        assert default in text, default
    for name in formulation_names():
        assert name in text, name


def test_sweep_help_says_where_results_go_by_default(capsys) -> None:
    """`biobullet sweep --help` said '--out DIR  output directory' (its own copy of the arguments); `python -m
    biobullet.sweep --help` named the default."""
    with pytest.raises(SystemExit):
        cli.main(["sweep", "--help"])
    assert "default: the config's 'out', else out/<config name>" in " ".join(capsys.readouterr().out.split())


def test_a_run_usage_error_is_the_usage_and_one_line(tmp_path: Path, capsys) -> None:
    """A usage error of `run` printed the table of every study (30 lines) between the usage and the error."""
    existing = tmp_path / "file.txt"
    existing.write_text("x")
    with pytest.raises(SystemExit) as stop:
        cli.main(["run", "fourbar", "--out", str(existing)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2
    assert lines[0].startswith("usage: biobullet run") and "exists and is not a directory" in lines[-1]
    assert len(lines) <= 3, lines
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    assert "studies:" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------------ concurrency
SWEEP_CONFIG = {"function": "demo.damped_oscillator", "fixed": {"mass": 1.0, "velocity": 1.0, "damping": 0.1},
                "sweep": [{"path": "stiffness", "values": [1.0, 4.0]}]}


def test_a_second_sweep_on_a_folder_in_use_is_refused(tmp_path: Path) -> None:
    """Two sweeps on one --out both computed every point, and the second one's start-up clean-up of temporary
    files could delete the file the first was writing (its os.replace then failed: an internal error)."""
    from biobullet.sweep.runner import run_sweep
    out = tmp_path / "out"
    out.mkdir()
    with atomic.folder_lock(out, "sweep"):   # the first sweep, still writing
        with pytest.raises(atomic.OutputError, match=f"{out}: another sweep is writing into this folder "
                                                     f"\\(process {os.getpid()}\\)"):
            run_sweep(SWEEP_CONFIG, out=out, progress=False, plots=False)
    assert sorted(p.name for p in out.iterdir()) == [atomic.LOCK_NAME, "points"]


@pytest.mark.parametrize("first", ["run", "sweep"])
def test_a_study_run_on_a_folder_in_use_is_refused(first: str, tmp_path: Path, monkeypatch, capsys) -> None:
    """Two `biobullet run STUDY --out D` at once (or a run on a sweep's folder) were not locked against each other:
    both wrote the same files."""
    import biobullet.studies
    monkeypatch.setattr(biobullet.studies, "run_scenario", _not_reached)
    out = tmp_path / "study"
    out.mkdir()
    with atomic.folder_lock(out, first):   # the first command, still writing
        assert cli.main(["run", "fourbar", "--out", str(out)]) == 2
    assert f"{out}: another {first} is writing into this folder (process {os.getpid()})" in capsys.readouterr().err


def test_python_m_sweep_refuses_a_dash_output_as_biobullet_sweep_does(tmp_path: Path, monkeypatch, capsys) -> None:
    """`python -m biobullet.sweep CFG --out -` ran the sweep into a folder named '-' (`biobullet sweep` refused)."""
    import json

    import biobullet.sweep.runner
    from biobullet.sweep.cli import main as sweep_main   # `python -m biobullet.sweep`
    monkeypatch.setattr(biobullet.sweep.runner, "run_sweep", _not_reached)
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "sweep.json"
    config.write_text(json.dumps(SWEEP_CONFIG))
    for entry in (sweep_main, lambda argv: cli.main(["sweep", *argv])):
        with pytest.raises(SystemExit) as stop:
            entry([str(config), "--out", "-"])
        assert stop.value.code == 2 and "argument --out: -: results are written to files" in capsys.readouterr().err
    assert not (tmp_path / "-").exists()


# ------------------------------------------------------------------------------------------------ long runs
def test_a_long_run_out_of_steps_is_not_called_stiff() -> None:
    """`simulate pendulum --t-end 1e6` stopped with "the problem looks stiff for the explicit DOP853 (step size
    0.102 s): use an implicit method" — a pendulum is not stiff, the run was long. A stiff one still says so."""
    import numpy as np

    from biobullet.integrate.stepper import StepFailure, run_loop
    options = dict(rtol=1e-9, atol=1e-12, max_step=np.inf, t_eval=None, events=[], max_steps=200)
    oscillator = lambda t, y: np.array([y[1], -y[0]])   # noqa: E731  (ω = 1 rad/s: steps of ≈ 0.4 s)
    with pytest.raises(StepFailure, match=r"a long run, not a stiff one: .* t_end needs about \d\.?\d*e\+04 steps") \
            as long_run:
        run_loop(oscillator, 0.0, np.array([1.0, 0.0]), 1e4, method="DOP853", **options)
    assert "stiff for the explicit" not in str(long_run.value)
    stiff = lambda t, y: -1e7 * y   # noqa: E731  (stability holds DOP853's steps near 4e-7 s)
    with pytest.raises(StepFailure, match="looks stiff for the explicit DOP853"):
        run_loop(stiff, 0.0, np.ones(1), 1.0, method="DOP853", **options)


def test_a_trajectory_that_is_a_folder_is_named_a_folder(pendulum: Path, tmp_path: Path, capsys) -> None:
    """`view MODEL --trajectory DIR --html x.html` said "DIR: no such trajectory file" of a folder that exists."""
    folder = tmp_path / "run.csv"
    folder.mkdir()
    assert cli.main(["view", str(pendulum), "--trajectory", str(folder), "--html", str(tmp_path / "x.html")]) == 2
    assert f"{folder}: not a file (a folder)" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ demos
@pytest.mark.parametrize("demo, argument", [("shoulder_rhythm.py", "--samples"), ("gym_reach.py", "--episodes"),
                                            ("contact_laws.py", "--t-end"), ("flexible_ringing.py", "--segments")])
def test_a_demo_refuses_a_count_or_time_below_one_step_in_its_usage(demo: str, argument: str, tmp_path: Path) -> None:
    """`python demos/shoulder_rhythm.py --samples 0` ended in a traceback (ValueError: zero-size array), and
    `demos/gym_reach.py --episodes -1` printed "max coupling residual over -1 episodes: 0 rad"."""
    result = in_process.script(REPO / "demos" / demo, argument, "0", "--out", "unused", cwd=tmp_path)
    assert result.returncode == 2 and f"argument {argument}: must be" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("engine, name", [("pybullet", "run.npz"), ("reference", "run.NPZ")])
def test_an_npz_output_is_an_npz_archive_on_either_engine(engine: str, name: str, pendulum: Path,
                                                          tmp_path: Path) -> None:
    """`simulate --engine pybullet --out run.npz` (and the reference engine's `--out run.NPZ`) wrote CSV text into
    the .npz file, which `view --trajectory run.npz` then refused as "not a .npz archive"."""
    import numpy as np

    from biobullet import Trajectory
    out = tmp_path / name
    assert cli.main(["simulate", str(pendulum), "--engine", engine, "--t-end", "0.05", "--set", "j1=0.3",
                     "--out", str(out)]) == 0
    trajectory = Trajectory.from_npz(out)
    assert trajectory.position_names == ("j1",) and trajectory.positions[0, 0] == 0.3
    assert np.all(np.diff(trajectory.positions[:, 0]) < 0)   # it falls from 0.3 rad towards 0


def test_a_trajectory_csv_is_utf8_whatever_the_locale(tmp_path: Path) -> None:
    """Under an ASCII locale (LC_ALL=POSIX without UTF-8 mode), `simulate` of a model whose joint is named 肘 ended
    in an internal error (UnicodeEncodeError) after the whole run: the CSV was written in the locale's encoding."""
    from biobullet import Trajectory
    model = tmp_path / "elbow.urdf"
    model.write_text(PENDULUM.replace('name="j1"', 'name="肘"'), encoding="utf-8")
    out = tmp_path / "elbow.csv"
    ascii_locale = dict(ENV, LC_ALL="POSIX", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
    result = subprocess.run([sys.executable, "-m", "biobullet", "simulate", str(model), "--t-end", "0.01",
                             "--out", str(out)], capture_output=True, env=ascii_locale, timeout=120)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    trajectory = Trajectory.from_csv(out)
    assert trajectory.position_names == ("肘",) and trajectory.velocity_names == ("肘_dot",)
    assert len(trajectory.t) == 1001 and trajectory.positions[0, 0] == 0.0


def test_interrupted_work_precision_and_scaling_keep_what_they_measured(tmp_path: Path, monkeypatch) -> None:
    """`bench --work-precision` (minutes) and `--scaling` interrupted kept nothing: their JSON was written only at
    the end. Now the models (sizes) measured so far are written, marked interrupted, and the KeyboardInterrupt
    says where (the CLI prints it and exits 130 / 143). The measurement itself is replaced here by a stub that
    is interrupted at its second call (a real one takes minutes)."""
    import json

    from biobullet.bench import scaling, work_precision
    calls = []

    def interrupted_second(*args, **kwargs):
        calls.append(args[0])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return {"first": True}

    monkeypatch.setattr(work_precision, "measure_case", interrupted_second)
    monkeypatch.setattr(work_precision, "plot", lambda *args: None)
    with pytest.raises(KeyboardInterrupt, match="the models measured so far are in .*work_precision.json"):
        work_precision.run_work_precision(out=tmp_path / "wp", log=lambda text: None)
    kept = json.loads((tmp_path / "wp" / "work_precision.json").read_text())
    assert kept["interrupted"] is True and list(kept["models"]) == [calls[0]]

    calls.clear()
    monkeypatch.setattr(scaling, "measure", lambda n, *args, **kwargs: interrupted_second(n) and
                        {"biobullet rhs": 2.0, "pinocchio aba": 1.0, "pinocchio crba+rnea+cholesky": 1.0,
                         "reduced mass_and_bias": 2.0, "pinocchio crba+rnea": 1.0})
    with pytest.raises(KeyboardInterrupt, match="the sizes measured so far are in .*scaling.json"):
        scaling.run_scaling(out=tmp_path / "sc", log=lambda text: None)
    kept = json.loads((tmp_path / "sc" / "scaling.json").read_text())
    assert kept["interrupted"] is True and [row["joints"] for row in kept["families"]["chain"]] == [calls[0]]
    assert _hidden_files(tmp_path / "wp") == [] and _hidden_files(tmp_path / "sc") == []
