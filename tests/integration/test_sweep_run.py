"""Sweeps on a real dask.distributed cluster (2 workers): results, failures, lost workers, resume after a kill."""
from __future__ import annotations

import csv
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest

from biobullet.sweep import load_config, run_sweep
from biobullet.sweep.demo import HOLD_ENV, damped_oscillator
from biobullet.sweep.worker import TRACE_ENV

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """File to which every point evaluation appends '<id> <pid>' (workers inherit the variable)."""
    return tmp_path_factory.mktemp("trace") / "calls.log"


@pytest.fixture(scope="module")
def cluster(trace: Path) -> Iterator[object]:
    """One loopback LocalCluster with 2 single-threaded worker processes, shared by the tests of this module."""
    from distributed import LocalCluster

    previous = os.environ.get(TRACE_ENV)
    os.environ[TRACE_ENV] = str(trace)
    try:
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                          host="127.0.0.1", silence_logs=logging.ERROR) as local:
            yield local
    finally:
        if previous is None:
            os.environ.pop(TRACE_ENV, None)
        else:
            os.environ[TRACE_ENV] = previous


def calls(trace: Path) -> Counter:
    """How many times each point id was evaluated."""
    if not trace.exists():
        return Counter()
    return Counter(line.split()[0] for line in trace.read_text().splitlines() if line.strip())


def point_files(out: Path) -> dict[str, tuple[int, str]]:
    return {p.stem: (p.stat().st_mtime_ns, p.read_text()) for p in (out / "points").glob("*.json")}


def test_small_sweep_writes_every_point_and_a_summary_matching_direct_calls(cluster, tmp_path: Path) -> None:
    config = {"function": "demo.damped_oscillator", "fixed": {"mass": 2.0},
              "sweep": [{"path": "stiffness", "values": [1.0, 4.0, 9.0]},
                        {"path": "damping", "start": 0.01, "stop": 1.0, "num": 2, "log": True}]}
    result = run_sweep(config, scheduler=cluster.scheduler_address, out=tmp_path, progress=False)
    points = load_config(config).points()
    assert len(points) == 6 and result.computed == 6 and result.skipped == 0 and result.complete
    assert sorted(p.stem for p in (tmp_path / "points").glob("*.json")) == sorted(p.id for p in points)
    with open(tmp_path / "summary.csv", newline="") as handle:
        rows = {row["id"]: row for row in csv.DictReader(handle)}
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["n_points"] == summary["n_ok"] == 6 and summary["swept"] == ["stiffness", "damping"]
    for point in points:
        direct = damped_oscillator(point.params)
        row = rows[point.id]
        assert row["status"] == "ok"
        assert float(row["stiffness"]) == point.params["stiffness"] and float(row["mass"]) == 2.0
        for key in ("peak_amplitude", "period", "damping_ratio"):
            assert float(row[key]) == direct[key]  # deterministic: bit-identical to a direct call
        stored = json.loads((tmp_path / "points" / f"{point.id}.json").read_text())
        assert stored["params"] == dict(point.params) and stored["result"] == direct
    assert {p.name for p in result.plots} >= {"peak_amplitude.png", "period.png"}
    assert all(p.stat().st_size > 1000 for p in result.plots)
    # a second run reuses everything
    again = run_sweep(config, scheduler=cluster.scheduler_address, out=tmp_path, progress=False)
    assert again.computed == 0 and again.skipped == 6 and again.complete
    assert sorted(again.plots) == sorted(result.plots)


def test_damped_oscillator_matches_the_closed_form() -> None:
    import math

    for k, c, m in [(1.0, 0.01, 1.0), (4.0, 1.0, 2.0), (100.0, 3.0, 0.5)]:
        r = damped_oscillator({"mass": m, "stiffness": k, "damping": c, "velocity": 1.0, "cycles": 6.0})
        wn, zeta = math.sqrt(k / m), c / (2 * math.sqrt(k * m))
        assert r["period"] == pytest.approx(2 * math.pi / (wn * math.sqrt(1 - zeta**2)), rel=1e-7)
        peak = math.exp(-zeta / math.sqrt(1 - zeta**2) * math.acos(zeta)) / wn
        assert r["peak_amplitude"] == pytest.approx(peak, rel=1e-7)
    overdamped = damped_oscillator({"mass": 1.0, "stiffness": 1.0, "damping": 3.0, "velocity": 1.0, "cycles": 2})
    assert overdamped["period"] is None


def test_failing_point_is_recorded_and_does_not_abort_the_sweep(cluster, trace: Path, tmp_path: Path) -> None:
    config = {"function": "demo.sleep", "fixed": {"duration": 0.05, "fail_above": 2.5},
              "sweep": {"path": "value", "values": [1, 2, 3, 4]}}
    result = run_sweep(config, scheduler=cluster.scheduler_address, out=tmp_path, progress=False, plots=False)
    assert len(result.ok) == 2 and len(result.failed) == 2 and result.computed == 4
    for record in result.failed:
        assert "ValueError" in record["error"] and "requested failure" in record["error"]
    counts = calls(trace)
    assert all(counts[r["id"]] == 1 for r in result.failed), "a raising point function is not retried"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["n_failed"] == 2 and summary["n_ok"] == 2
    # failed points are computed again on the next run; finished ones are not
    rerun = run_sweep(config, scheduler=cluster.scheduler_address, out=tmp_path, progress=False, plots=False)
    assert rerun.computed == 2 and rerun.skipped == 2
    assert all(calls(trace)[r["id"]] == 1 for r in result.ok)


def test_lost_worker_does_not_lose_the_sweep(cluster, trace: Path, tmp_path: Path) -> None:
    from distributed import Client

    config = {"function": "demo.sleep", "fixed": {"duration": 1.0}, "sweep": {"path": "value", "values": [10, 20, 30, 40]}}
    ids = {p.id for p in load_config(config).points()}
    killed: list[str] = []

    def kill_a_busy_worker() -> None:
        with Client(cluster.scheduler_address, timeout="10s") as client:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                started = [i for i in calls(trace) if i in ids]
                busy = {w: keys for w, keys in client.processing().items() if keys}
                if started and busy:
                    worker, keys = next(iter(busy.items()))
                    pid = client.run(os.getpid, workers=[worker])[worker]
                    os.kill(pid, signal.SIGKILL)  # a worker process we started (through the cluster fixture)
                    killed.append(str(keys[0]))
                    return
                time.sleep(0.05)

    killer = threading.Thread(target=kill_a_busy_worker)
    killer.start()
    result = run_sweep(config, scheduler=cluster.scheduler_address, out=tmp_path, progress=False, plots=False)
    killer.join()
    assert killed, "a worker was killed mid-sweep"
    assert result.complete and len(result.ok) == 4 and not result.failed
    counts = calls(trace)
    assert max(counts[i] for i in ids) >= 2, "the lost point was computed again on another worker"


def _start_cli(config: Path, out: Path, trace: Path, hold: Path) -> subprocess.Popen:
    """The sweep CLI as a terminal's foreground job: Ctrl-C handled whatever this process inherited — pytest run in
    the background by a script (`pytest … &`, no job control) ignores SIGINT, and so did the CLI (SIG_IGN survives
    exec; Python then installs no KeyboardInterrupt handler): it ran to the end and exited 0, not 130."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"), **{TRACE_ENV: str(trace), HOLD_ENV: str(hold)})
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)   # (a handler: SIG_DFL after exec)
    try:
        return subprocess.Popen([sys.executable, "-m", "biobullet.sweep", str(config), "--out", str(out),
                                 "--workers", "2", "--no-progress"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
    finally:
        signal.signal(signal.SIGINT, previous)


def _wait_for_points(process: subprocess.Popen, out: Path, n: int, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while len(list((out / "points").glob("*.json"))) < n:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "points did not appear in time"
        time.sleep(0.05)


def _group_gone(pgid: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


#: points of the resume test (each run stops at a known point through demo.HOLD_ENV, whatever the load: before it, 24
#: points left room for late signals and a loaded machine still finished them all before the Ctrl-C — exit 0, not 130)
POINTS = 12


def _allow(hold: Path, n: int) -> None:
    """Let the points with value < n run (demo.sleep's HOLD_ENV file; replaced whole, never read half-written)."""
    partial = hold.with_suffix(".partial")
    partial.write_text(str(n), encoding="utf-8")
    os.replace(partial, hold)


def test_killed_sweep_resumes_without_recomputing_finished_points(cluster, trace: Path, tmp_path: Path) -> None:
    config_path = tmp_path / "resume.json"
    config_path.write_text(json.dumps({"function": "demo.sleep", "fixed": {"duration": 0.4},
                                       "sweep": {"path": "value", "start": 0, "stop": POINTS - 1, "num": POINTS}}))
    out = tmp_path / "out"
    ids = [p.id for p in load_config(config_path).points()]

    # 1) hard kill (SIGKILL to the whole process group: driver, scheduler, workers) after 3 points; points 3, 4, …
    #    wait for the hold file, so no run reaches the sweep's end before its signal however late that comes
    hold = tmp_path / "hold"
    _allow(hold, 3)
    first = _start_cli(config_path, out, trace, hold)
    try:
        _wait_for_points(first, out, 3)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate()
    after_kill = point_files(out)
    assert 3 <= len(after_kill) < POINTS

    # 2) graceful stops: Ctrl-C (SIGINT to the whole group, as a terminal does), then SIGTERM — each cancels,
    #    closes the cluster, exits 128 + the signal (130, 143: as a shell reports it) without a traceback and keeps
    #    every finished point
    before, counts_at_term = after_kill, calls(trace)
    assert all(counts_at_term[point_id] == 1 for point_id in after_kill)
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        counts_before = counts_at_term
        _allow(hold, len(before) + 2)
        run = _start_cli(config_path, out, trace, hold)
        try:
            _wait_for_points(run, out, len(before) + 2)
        finally:
            os.killpg(run.pid, stop_signal)  # a process group we started
            _allow(hold, POINTS)   # after the signal (a closing worker waits ≈ 4 s for a held point to return)
            _, stderr = run.communicate(timeout=60)
        assert run.returncode == 128 + stop_signal, stderr
        assert "resume" in stderr and "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
        assert _group_gone(run.pid), "the local cluster's processes exited with the driver"
        assert json.loads((out / "summary.json").read_text())["interrupted"] is True
        after_term, counts_at_term = point_files(out), calls(trace)
        for point_id, state in before.items():
            assert after_term[point_id] == state, "finished point rewritten"
            assert counts_at_term[point_id] == counts_before[point_id], "finished point recomputed"
        before = after_term
    assert len(after_term) < POINTS, "the stops interrupted the sweep before its end"

    # 3) resume to the end
    result = run_sweep(config_path, scheduler=cluster.scheduler_address, out=out, progress=False, plots=False)
    assert result.complete and len(result.records) == POINTS
    assert result.skipped == len(after_term) and result.computed == POINTS - len(after_term)
    final, counts = point_files(out), calls(trace)
    assert sorted(final) == sorted(ids)
    for point_id, state in after_term.items():  # (points in flight at a kill may have started twice before)
        assert final[point_id] == state and counts[point_id] == counts_at_term[point_id]
    assert sorted(json.loads((out / "summary.json").read_text())["points"], key=lambda p: p["params"]["value"])[5][
        "result"] == {"value": 5.0, "square": 25.0, "duration": 0.4}


def test_local_cluster_workers_run_without_the_dashboard_background_work() -> None:
    """The local cluster a sweep starts passes LOCAL_CLUSTER_CONFIG to its worker processes (profiler off, slow
    tick and monitors), and the user's own Dask configuration outside the sweep is left as it was."""
    import dask
    import distributed  # noqa: F401  (registers the "distributed" section of the Dask configuration)

    from biobullet.sweep.runner import LOCAL_CLUSTER_CONFIG, open_client

    keys = list(LOCAL_CLUSTER_CONFIG)
    before = {key: dask.config.get(key) for key in keys}
    with open_client(None, 2, 2) as client:
        seen = client.run(lambda: {key: dask.config.get(key) for key in keys})
    assert len(seen) == 2
    for worker_config in seen.values():
        assert worker_config == LOCAL_CLUSTER_CONFIG
    assert {key: dask.config.get(key) for key in keys} == before
    assert before["distributed.worker.profile.enabled"] is True   # the library default, unchanged in the driver


def test_a_script_without_a_main_guard_gets_one_clear_error(tmp_path: Path) -> None:
    """Spawned worker processes re-import the main module: a script calling run_sweep at top level makes the
    local cluster fail to start; the driver raises SweepError saying what to do."""
    script = tmp_path / "no_guard.py"
    script.write_text("from biobullet.sweep import run_sweep\n"
                      "run_sweep({'function': 'demo.busy', 'fixed': {'iterations': 1, 'size': 10},\n"
                      "           'sweep': {'path': 'seed', 'start': 1, 'stop': 2, 'num': 2}},\n"
                      f"          workers=2, out={str(tmp_path / 'out')!r}, progress=False, plots=False)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO / "plugin") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180, env=env,
                          cwd=tmp_path)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("biobullet.sweep.runner.SweepError: the local Dask cluster could not start"), last
    assert 'if __name__ == "__main__":' in last
    assert not (tmp_path / "out" / "points").exists() or not any((tmp_path / "out" / "points").iterdir())


def test_non_finite_results_are_kept_as_nan_and_inf_not_as_missing(tmp_path: Path) -> None:
    """A point whose result overflows (demo.sleep's square of 1e200 is inf in IEEE arithmetic) must read back as
    inf from summary.csv, summary.json and the point file; before, each wrote an empty cell or null — a "missing"
    result indistinguishable from a point function that returned None."""
    from biobullet.sweep.store import write_summaries
    from biobullet.sweep.worker import evaluate_point

    config = load_config({"function": "demo.sleep", "fixed": {"duration": 0.0},
                          "sweep": [{"path": "value", "values": [-1e200, 3.0]}]})
    records = []
    for point in config.points():
        outcome = evaluate_point(config.function.target, point.id, dict(point.params))
        records.append({"id": point.id, "params": dict(point.params), **outcome})
    csv_path, json_path = write_summaries(tmp_path, config, records, {})
    with open(csv_path, newline="") as handle:
        rows = {float(row["value"]): row for row in csv.DictReader(handle)}
    assert float(rows[-1e200]["square"]) == float("inf") and float(rows[3.0]["square"]) == 9.0
    summary = {p["params"]["value"]: p["result"] for p in json.loads(json_path.read_text())["points"]}
    assert float(summary[-1e200]["square"]) == float("inf") and summary[3.0]["square"] == 9.0
    assert float(summary[-1e200]["value"]) == -1e200   # finite results stay numbers
