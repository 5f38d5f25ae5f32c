"""Sweep scaling: the same CPU-bound sweep on 1 worker vs 2 workers, one run.

test_k_sweep_two_workers_vs_one (the issue's benchmark): 6 k values of the prosthesis k sweep at c/k = 0.05 with
8 cycles (the point function's minimum; ~40 % of a 20-cycle point), or the whole sweep file with
BIOBULLET_BENCH_SWEEP_FULL=1; 1- and 2-worker runs alternate BIOBULLET_BENCH_SWEEP_REPEATS times (default 3) and
the best compute time of each is compared. Reports compute time, wall time including cluster start, speed-up
(best-of and per pair), concurrency, per-point mean time and the load; writes
out/benchmarks/sweep_scaling_k.json (sweep_scaling_k_full.json for the whole sweep).
No wall-clock assertion: it asserts that 1 and 2 workers give identical results (except the "wall_time" result).

test_two_workers_vs_one (toy): 8 points of ~1 s numpy work.

Run: PYTHONPATH=plugin python -m pytest tests/benchmarks/test_sweep_scaling.py -s -rx
(-s prints the timing line; under load (load average > 1) a miss is an xfail whose reason, shown by -rx,
carries the measured speed-up and the load.)
The speed-up is measured on the compute phase (first submit to last result; cluster start-up excluded, it is
reported separately). Target ≥ 1.8× on a machine with at least 2 free cores.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path

import pytest

from biobullet.sweep import run_sweep
from biobullet.sweep.demo import busy

N_POINTS = 8
TARGET_SECONDS = 1.0
TARGET_SPEEDUP = 1.8


def _iterations_for(seconds: float) -> int:
    """Calibrate demo.busy so one point takes about ``seconds`` on this machine."""
    busy({"iterations": 3, "size": 200_000, "seed": 0})
    t0 = time.perf_counter()
    busy({"iterations": 40, "size": 200_000, "seed": 0})
    per_iteration = (time.perf_counter() - t0) / 40
    return max(1, round(seconds / per_iteration))


def test_two_workers_vs_one(tmp_path: Path) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs at least 2 cores")
    config = {"function": "demo.busy", "fixed": {"iterations": _iterations_for(TARGET_SECONDS), "size": 200_000},
              "sweep": {"path": "seed", "start": 1, "stop": N_POINTS, "num": N_POINTS}}
    load_before = os.getloadavg()[0]
    timings = {}
    for workers in (1, 2):
        t0 = time.perf_counter()
        result = run_sweep(config, workers=workers, out=tmp_path / f"w{workers}", progress=False, plots=False)
        wall = time.perf_counter() - t0
        assert result.complete and result.computed == N_POINTS and result.n_workers == workers
        assert len({r["pid"] for r in result.records}) == workers, "every worker took points"
        busy_seconds = sum(r["seconds"] for r in result.records)
        timings[workers] = (result.compute_seconds, wall, busy_seconds / result.compute_seconds)
    one, two = timings[1][0], timings[2][0]
    speedup = one / two
    wall_speedup = timings[1][1] / timings[2][1]
    load_after = os.getloadavg()[0]
    figure = (f"speed-up {speedup:.2f}× (compute 1 worker {one:.2f} s, 2 workers {two:.2f} s; target ≥ "
              f"{TARGET_SPEEDUP}×) at load average {load_before:.1f} before / {load_after:.1f} after "
              f"on {os.cpu_count()} cores")
    print(f"\nsweep scaling ({N_POINTS} points × ~{TARGET_SECONDS:g} s, {os.cpu_count()} cores): "
          f"compute 1 worker {one:.2f} s, 2 workers {two:.2f} s → speed-up {speedup:.2f}× "
          f"(target ≥ {TARGET_SPEEDUP}×); wall incl. cluster start {timings[1][1]:.1f} s vs {timings[2][1]:.1f} s "
          f"→ {wall_speedup:.2f}×; concurrency (Σ point time / compute time) {timings[1][2]:.2f} vs "
          f"{timings[2][2]:.2f}; load average before {load_before:.1f}, after {os.getloadavg()[0]:.1f}")
    same = [r["result"] for r in run_sweep(config, workers=1, out=tmp_path / "w1", progress=False, plots=False).records]
    assert same == [r["result"] for r in run_sweep(config, workers=1, out=tmp_path / "w2", progress=False, plots=False).records]
    # The figure is always reported: in the xfail reason (pytest -rx shows it without -s) and in the failure.
    if speedup < TARGET_SPEEDUP and max(load_before, load_after) > 1.0:
        pytest.xfail(f"other processes compete for the cores (load > 1): {figure}")
    assert speedup >= TARGET_SPEEDUP, figure


# ------------------------------------------------------------------------------------------------------------
# The benchmark the issue names: the prosthesis k sweep (sweeps/prosthesis_k.json) on 1 vs 2 workers.
# ------------------------------------------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[2]
K_SWEEP = ROOT / "sweeps" / "prosthesis_k.json"
#: BIOBULLET_BENCH_SWEEP_FULL=1 runs the whole sweep file (11 k values × 20 cycles, ~3 min per 1+2-worker pair);
#: the default is 6 of its 11 k values (every other one: 10, 12, …, 20 kN/m) at 8 cycles (the point function's
#: minimum, ~40 % of a full point), same c/k and hip hiking (~50 s per pair).
FULL = os.environ.get("BIOBULLET_BENCH_SWEEP_FULL", "") == "1"
K_SUBSET = {"start": 10000.0, "stop": 20000.0, "num": 6}
K_CYCLES = 8
#: 1-worker and 2-worker runs alternate (1,2), (2,1), (1,2), … so that slow drifts of the machine hit both alike.
REPEATS = int(os.environ.get("BIOBULLET_BENCH_SWEEP_REPEATS", "3"))


def _cpu_busy_seconds() -> float:
    """Busy CPU time of the whole machine (all processes, all cores) from /proc/stat, in seconds."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _loadavg() -> dict:
    one, five, fifteen, running, _ = Path("/proc/loadavg").read_text().split()
    return {"1min": float(one), "5min": float(five), "15min": float(fifteen), "running/total": running}


def _without_wall_time(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "wall_time"}


def _k_config() -> dict:
    base = json.loads(K_SWEEP.read_text())
    if FULL:
        return {"name": "prosthesis_k_scaling", "function": base["function"], "fixed": base["fixed"],
                "sweep": base["sweep"], "combine": base.get("combine", "product")}
    return {"name": "prosthesis_k_scaling", "function": base["function"],
            "fixed": {**base["fixed"], "cycles": K_CYCLES},
            "sweep": [{"path": "damper.stiffness", **K_SUBSET}], "combine": "product"}


def _one_run(config: dict, workers: int, out: Path) -> tuple[dict, list]:
    load_start = _loadavg()
    cpu0, t0 = _cpu_busy_seconds(), time.perf_counter()
    result = run_sweep(config, workers=workers, out=out, progress=False, plots=False)
    wall, cpu = time.perf_counter() - t0, _cpu_busy_seconds() - cpu0
    n_points = len(result.config.points())
    assert result.complete and result.computed == n_points and result.skipped == 0, result.failed
    assert result.n_workers == workers
    assert len({r["pid"] for r in result.records}) == workers, "every worker took points"
    seconds = [r["seconds"] for r in result.records]
    busy = sum(seconds)
    run = {
        "workers": workers, "compute_s": result.compute_seconds, "wall_incl_cluster_start_s": wall,
        "cluster_start_and_teardown_s": wall - result.compute_seconds,
        "sum_point_s": busy, "concurrency": busy / result.compute_seconds,
        "point_mean_s": busy / n_points, "point_min_s": min(seconds), "point_max_s": max(seconds),
        "point_s": {f"{r['params']['damper.stiffness']:g}": r["seconds"] for r in result.records},
        # all processes on the machine: cores kept busy on average during this run (ours + everyone else's)
        "machine_busy_cores": cpu / wall, "other_cpu_s_estimate": max(0.0, cpu - busy),
        "load_at_start": load_start, "load_at_end": _loadavg(),
    }
    return run, [(r["id"], _without_wall_time(r["result"])) for r in result.records]


def test_k_sweep_two_workers_vs_one(tmp_path: Path) -> None:
    """Speed-up of 2 local workers over 1 on the k sweep: best compute time of REPEATS alternating runs each.

    Best-of-N (as timeit does) because on a shared 2-core VM other tenants only ever add time: single pairs
    measured here scatter from 1.6× to 2.3×. Every run, the pair ratios and their median are kept in the JSON.
    """
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs at least 2 cores")
    config = _k_config()
    load_before = _loadavg()
    runs: list[dict] = []
    results: dict[int, list] = {}
    for rep in range(REPEATS):
        for workers in ((1, 2) if rep % 2 == 0 else (2, 1)):
            run, res = _one_run(config, workers, tmp_path / f"k_w{workers}_r{rep}")
            run["repeat"] = rep
            runs.append(run)
            assert results.setdefault(workers, res) == res, "a repeated run gave different results"
            print(f"  repeat {rep + 1}/{REPEATS}, {workers} worker(s): compute {run['compute_s']:.2f} s, "
                  f"mean point {run['point_mean_s']:.2f} s, concurrency {run['concurrency']:.2f}", flush=True)
    load_after = _loadavg()
    n_points = len(results[1])

    def best(workers: int) -> dict:
        return min((r for r in runs if r["workers"] == workers), key=lambda r: r["compute_s"])

    one, two = best(1), best(2)
    speedup = one["compute_s"] / two["compute_s"]
    pairs = [next(r for r in runs if r["repeat"] == k and r["workers"] == 1)["compute_s"]
             / next(r for r in runs if r["repeat"] == k and r["workers"] == 2)["compute_s"] for k in range(REPEATS)]
    wall_speedup = one["wall_incl_cluster_start_s"] / two["wall_incl_cluster_start_s"]
    # best possible compute speed-up for these point times on 2 workers (the longest point bounds the makespan)
    ideal = one["sum_point_s"] / max(one["sum_point_s"] / 2, one["point_max_s"])
    payload = {
        "benchmark": "Dask sweep scaling on the prosthesis k sweep: 1 vs 2 local workers, one run",
        "sweep": str(K_SWEEP.relative_to(ROOT)), "function": config["function"], "fixed": config["fixed"],
        "k_values": [float(v) for v in one["point_s"]],
        "note": ("the whole sweep file" if FULL else
                 f"subset of prosthesis_k.json ({n_points} of 11 k values), cycles reduced 20 → {K_CYCLES}")
                + "; fresh output directories (nothing resumed); LocalCluster of single-threaded worker processes; "
                  f"best compute time of {REPEATS} alternating runs per worker count",
        "target_speedup": TARGET_SPEEDUP, "speedup_compute_best_of": speedup,
        "speedup_per_pair": pairs, "speedup_median_pair": statistics.median(pairs),
        "speedup_wall_incl_cluster_start": wall_speedup,
        "ideal_speedup_for_these_points": ideal, "per_point_slowdown_2_vs_1": two["point_mean_s"] / one["point_mean_s"],
        "best_runs": [one, two], "all_runs": runs, "cores": os.cpu_count(), "load_before": load_before,
        "load_after": load_after, "results_identical_1_vs_2_workers": results[1] == results[2],
        "python": platform.python_version(), "machine": platform.machine(),
    }
    out = ROOT / "out" / "benchmarks"
    out.mkdir(parents=True, exist_ok=True)
    path = out / ("sweep_scaling_k_full.json" if FULL else "sweep_scaling_k.json")
    tmp = out / f".{path.name}.tmp"
    tmp.write_text(json.dumps(payload, indent=2) + "\n")
    os.replace(tmp, path)

    cycles = config["fixed"]["cycles"]
    print(f"\nk-sweep scaling ({n_points} k values, c/k {config['fixed']['damper.ratio']}, {cycles} cycles, "
          f"{os.cpu_count()} cores; best of {REPEATS} alternating runs)")
    print(f"{'workers':>7} {'compute s':>10} {'wall s':>8} {'start s':>8} {'Σpoint s':>9} {'conc.':>6} "
          f"{'mean pt s':>10} {'busy cores':>10} {'other cpu s':>11} {'load start→end':>15}")
    for r in (one, two):
        print(f"{r['workers']:>7} {r['compute_s']:>10.2f} {r['wall_incl_cluster_start_s']:>8.2f} "
              f"{r['cluster_start_and_teardown_s']:>8.2f} {r['sum_point_s']:>9.2f} {r['concurrency']:>6.2f} "
              f"{r['point_mean_s']:>10.2f} {r['machine_busy_cores']:>10.2f} {r['other_cpu_s_estimate']:>11.1f} "
              f"{r['load_at_start']['1min']:>7.2f}→{r['load_at_end']['1min']:<6.2f}")
    print(f"speed-up compute {speedup:.2f}× best-of-{REPEATS} (target ≥ {TARGET_SPEEDUP}×, ideal for these points "
          f"{ideal:.2f}×); per pair {', '.join(f'{p:.2f}×' for p in pairs)}; wall incl. cluster start "
          f"{wall_speedup:.2f}×; per-point slowdown 2 vs 1 worker {payload['per_point_slowdown_2_vs_1']:.2f}; "
          f"load average before {load_before['1min']:.2f}, after {load_after['1min']:.2f} → {path}")
    # consistency, not wall clock: the same points give the same results whatever the number of workers
    assert results[1] == results[2]


def _idle_cluster_cores(make_client, seconds: float) -> float:
    """Cores kept busy (whole machine) by an idle 2-worker cluster, after 3 s of settling."""
    with make_client() as _client:
        time.sleep(3.0)
        cpu0, t0 = _cpu_busy_seconds(), time.perf_counter()
        time.sleep(seconds)
        return (_cpu_busy_seconds() - cpu0) / (time.perf_counter() - t0)


def test_local_cluster_background_load() -> None:
    """CPU an idle 2-worker LocalCluster costs with Dask's defaults vs the sweep's LOCAL_CLUSTER_CONFIG
    (alternating, 2 rounds of 15 s each, plus the machine with no cluster). Reported, not asserted."""
    import contextlib
    import logging

    import dask
    from distributed import Client, LocalCluster

    from biobullet.sweep.runner import LOCAL_CLUSTER_CONFIG, open_client

    @contextlib.contextmanager
    def default_client():
        with dask.config.set({}), LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                               dashboard_address=None, host="127.0.0.1",
                                               silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
            yield client

    rounds = {"dask_defaults": [], "sweep_config": []}
    for _ in range(2):
        rounds["dask_defaults"].append(_idle_cluster_cores(default_client, 15.0))
        rounds["sweep_config"].append(_idle_cluster_cores(lambda: open_client(None, 2, 2), 15.0))
    cpu0, t0 = _cpu_busy_seconds(), time.perf_counter()
    time.sleep(10.0)
    baseline = (_cpu_busy_seconds() - cpu0) / (time.perf_counter() - t0)
    payload = {"benchmark": "cores kept busy by an idle 2-worker LocalCluster (whole machine, /proc/stat)",
               "config": LOCAL_CLUSTER_CONFIG, "rounds": rounds, "no_cluster": baseline,
               "cores": os.cpu_count()}
    out = ROOT / "out" / "benchmarks"
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".cluster_background_load.json.tmp"
    tmp.write_text(json.dumps(payload, indent=2) + "\n")
    os.replace(tmp, out / "cluster_background_load.json")
    print(f"\nidle 2-worker cluster: Dask defaults {', '.join(f'{c:.3f}' for c in rounds['dask_defaults'])} cores, "
          f"sweep config {', '.join(f'{c:.3f}' for c in rounds['sweep_config'])} cores; no cluster {baseline:.3f}")
    assert all(c >= 0 for c in rounds["dask_defaults"] + rounds["sweep_config"])
