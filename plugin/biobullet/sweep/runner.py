"""Run a sweep on dask.distributed: local cluster or a remote scheduler, resumable, failure tolerant.

The driver (this process) is the only writer: as each future completes it writes ``out/points/<id>.json``
atomically. On start, points with a valid ``ok`` record are skipped, so a killed sweep resumes where it
stopped; failed points are recorded with their error and computed again on the next run.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping

from biobullet.core.atomic import folder_lock, output_folder
from biobullet.core.errors import BiobulletError, ModelError
from biobullet.sweep.config import Point, SweepConfig, load_config
from biobullet.sweep.store import (point_path, points_dir, read_point, write_json_atomic,
                                   write_summaries)


class SweepError(BiobulletError):
    """A sweep could not run (e.g. the scheduler cannot be reached); finished points are kept on disk."""


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM through `terminate_as_interrupt`) stopped the sweep: a KeyboardInterrupt carrying the
    `SweepResult` of what was kept (its records, the summaries written) for the one line the command prints."""

    def __init__(self, result: "SweepResult") -> None:
        super().__init__()
        self.result = result


@dataclass
class SweepResult:
    """Outcome of :func:`run_sweep`: one record per point (in sweep order) plus bookkeeping."""

    out: Path
    config: SweepConfig
    records: list[dict[str, Any]]
    computed: int = 0          # points evaluated by this run
    skipped: int = 0           # points found finished on disk and not recomputed
    interrupted: bool = False
    compute_seconds: float = 0.0
    wall_seconds: float = 0.0
    n_workers: int = 0
    summary_csv: Path | None = None
    summary_json: Path | None = None
    plots: list[Path] = field(default_factory=list)

    @property
    def ok(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["status"] == "ok"]

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["status"] == "failed"]

    @property
    def complete(self) -> bool:
        return len(self.ok) == len(self.config.points())


def default_out(config: SweepConfig) -> Path:
    """``out`` of the config (relative to its file), else ``out/<config name>`` in the working directory."""
    return config.out if config.out is not None else Path("out") / config.name


#: Dask settings of the local clusters that sweeps start (a cluster given with --scheduler keeps its own): the
#: background work that only feeds the dashboard, which these clusters do not have — the statistical profiler
#: (a 10 ms stack sample of the running point), the event-loop tick monitor (20 ms), the system monitor (500 ms) —
#: is switched off or slowed down, and the nanny polls memory every second instead of every 100 ms. An idle
#: 2-worker cluster kept 0.10–0.14 of this 2-core machine's cores busy with the defaults and 0.03 with these
#: (tests/benchmarks/test_sweep_scaling.py::test_local_cluster_background_load): CPU the points need.
LOCAL_CLUSTER_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
}


@contextlib.contextmanager
def open_client(scheduler: str | None, workers: int | None, n_pending: int) -> Iterator[Any]:
    """A ``distributed.Client``: connected to ``scheduler``, or to a fresh loopback-only LocalCluster."""
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            client = Client(scheduler, timeout="15s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise SweepError(f"cannot connect to the Dask scheduler at {scheduler!r}: {exc}") from None
        try:
            yield client
        finally:
            client.close()
        return
    import dask

    n_workers = max(1, min(workers or os.cpu_count() or 1, n_pending))
    # the config is read by the nannies when they start their workers; the scheduler's loopback HTTP server (health
    # and metrics routes only, no dashboard) takes another port when 8787 is busy — not worth a warning here
    cluster = None
    with dask.config.set(LOCAL_CLUSTER_CONFIG), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Port \d+ is already in use", category=UserWarning)
        interrupted: list[int] = []
        try:
            with _interrupt_after_start() as interrupted:   # (a Ctrl-C: KeyboardInterrupt after the start)
                cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                       dashboard_address=None, host="127.0.0.1", silence_logs=logging.ERROR,
                                       preload=["biobullet.sweep.worker"])  # workers ignore Ctrl-C (the driver's)
        except (RuntimeError, OSError, TimeoutError) as exc:
            if interrupted:   # the workers Ctrl-C reached while they started: the interrupt, not a failure
                raise KeyboardInterrupt from None
            reason = str(exc).rstrip(".")
            raise SweepError(f"the local Dask cluster could not start its {n_workers} worker process(es): {reason}. "
                             "Called from a script? Worker processes import the main module again, so put the "
                             "call under `if __name__ == \"__main__\":`") from None
        except KeyboardInterrupt:
            if cluster is not None:   # (else distributed's exit hook closed it with a traceback)
                logging.getLogger("distributed").setLevel(logging.ERROR)
                with contextlib.suppress(Exception):
                    cluster.close()
            raise
    client = Client(cluster)
    try:
        yield client
    finally:
        with contextlib.suppress(Exception):
            client.close()
        with contextlib.suppress(Exception):
            cluster.close()


@contextlib.contextmanager
def _interrupt_after_start() -> Iterator[list[int]]:
    """While the local cluster starts its worker processes: SIGINT blocked in this thread, so that the threads the
    cluster starts now, and the worker processes they spawn, inherit the block until the workers' preload ignores
    SIGINT (as the standard library starts its resource tracker: started first here, since its start unblocks the
    calling thread) — a terminal's Ctrl-C reaches the whole process group, and each worker it caught inside its
    imports printed a KeyboardInterrupt traceback, the driver "Nanny failed to start" and distributed's exit hook a
    traceback of the half-built cluster. The driver's Ctrl-C is not dropped: recorded (the list yielded) by the
    handler meanwhile (another thread of the driver may take it) or pending until the block ends, and raised as
    KeyboardInterrupt once the start has finished or failed. Elsewhere than the main thread (no Ctrl-C reaches it):
    nothing changes; without POSIX signal masks only the recording."""
    import signal
    import threading

    caught: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    masks = hasattr(signal, "pthread_sigmask")
    if masks:
        from multiprocessing import resource_tracker
        resource_tracker.ensure_running()
    handler = signal.signal(signal.SIGINT, lambda number, frame: caught.append(number))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if masks else None
    try:
        yield caught
    finally:
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)   # (a pending Ctrl-C is delivered here: recorded)
        signal.signal(signal.SIGINT, handler)
    if caught:
        raise KeyboardInterrupt


class _NoProgress:
    """Stand-in for a disabled tqdm bar (progress off: tqdm is not imported at all)."""

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix(self, *args: Any, **kwargs: Any) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, initial: int, name: str, enabled: bool):
    if not enabled:
        return _NoProgress()
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, desc=name, unit="pt", disable=not enabled, file=sys.stderr,
                dynamic_ncols=True)


def _record(config: SweepConfig, point: Point, outcome: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": point.id, "index": point.index, "function": config.function.name,
            "target": config.function.target, "params": dict(point.params), **outcome,
            "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def _clean_temporaries(out: Path) -> None:
    """Remove temporary files a killed driver may have left (never a finished point file)."""
    for tmp in points_dir(out).glob(".*.tmp"):
        with contextlib.suppress(OSError):
            tmp.unlink()


def run_sweep(config: SweepConfig | str | Path | Mapping[str, Any], *, scheduler: str | None = None,
              workers: int | None = None, out: str | Path | None = None, progress: bool = True,
              plots: bool = True) -> SweepResult:
    """Run every point of ``config`` not already finished in ``out``; write points, summaries and plots.

    The config is validated completely (ModelError) before anything starts. ``scheduler`` is the address of a
    running Dask scheduler (default: a local cluster of ``workers`` single-threaded processes, default one per
    core). KeyboardInterrupt cancels pending points, closes the cluster and is re-raised; finished points stay.
    """
    started = time.perf_counter()
    cfg = config if isinstance(config, SweepConfig) else load_config(config)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ModelError(f"invalid number of workers {workers!r}", attribute="workers", expected="an integer ≥ 1")
    out_dir = Path(out) if out is not None else default_out(cfg)
    points = cfg.points()
    output_folder(out_dir, points_dir(out_dir).name)   # OutputError for a file, a link below it, a long name
    with folder_lock(out_dir, "sweep"):   # one sweep at a time writes into a folder
        _clean_temporaries(out_dir)

        records: dict[str, dict[str, Any]] = {}
        pending: list[Point] = []
        for point in points:
            record = read_point(out_dir, point)
            if record is not None and record["status"] == "ok":
                records[point.id] = record
            else:
                pending.append(point)
        result = SweepResult(out=out_dir, config=cfg, records=[], skipped=len(records))

        if pending:
            bar = _progress(len(points), len(records), cfg.name, progress)
            try:
                _compute(cfg, pending, out_dir, records, result, bar, scheduler, workers)
            except KeyboardInterrupt:
                result.interrupted = True
            finally:
                bar.close()

        result.records = [records[p.id] for p in points if p.id in records]
        n_failed = len(result.failed)
        extra = {"n_points": len(points), "n_ok": len(result.ok), "n_failed": n_failed,
                 "n_missing": len(points) - len(result.records), "computed_this_run": result.computed,
                 "skipped_this_run": result.skipped, "interrupted": result.interrupted}
        result.summary_csv, result.summary_json = write_summaries(out_dir, cfg, result.records, extra)
        if result.interrupted:
            raise SweepInterrupted(result)
        existing = sorted(output_folder(out_dir, "plots").glob("*.png")) if plots else []
        if plots and result.computed == 0 and existing:
            result.plots = existing
        elif plots:
            from biobullet.sweep.plots import plot_results
            result.plots = plot_results(out_dir, cfg, result.records)
        result.wall_seconds = time.perf_counter() - started
        return result


def _compute(cfg: SweepConfig, pending: list[Point], out_dir: Path, records: dict[str, dict[str, Any]],
             result: SweepResult, bar: Any, scheduler: str | None, workers: int | None) -> None:
    """Submit the pending points and write each one's record as its future completes."""
    from distributed import as_completed

    from biobullet.sweep.worker import evaluate_point

    with open_client(scheduler, workers, len(pending)) as client:
        result.n_workers = len(client.scheduler_info().get("workers", {}))
        t0 = time.perf_counter()
        futures = {client.submit(evaluate_point, cfg.function.target, p.id, dict(p.params),
                                 key=f"biobullet-point-{p.id}", retries=cfg.retries, pure=False): p
                   for p in pending}
        try:
            for future in as_completed(list(futures)):
                point = futures.pop(future)
                if future.status == "finished":
                    outcome = future.result()
                elif future.status == "error":  # the task itself failed after its retries (e.g. lost workers)
                    exc = future.exception()
                    outcome = {"status": "failed", "result": None, "error": f"{type(exc).__name__}: {exc}"}
                else:  # cancelled: not finished, computed again next run
                    continue
                record = _record(cfg, point, outcome)
                write_json_atomic(point_path(out_dir, point.id), record, out_dir)
                records[point.id] = record
                result.computed += 1
                future.release()
                bar.update(1)
                n_failed = sum(r["status"] == "failed" for r in records.values())
                if n_failed:
                    bar.set_postfix(failed=n_failed, refresh=False)
            result.compute_seconds = time.perf_counter() - t0
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                # the cluster is about to be torn down mid-message: distributed logs each closed comm with a
                # traceback (INFO), expected here and burying the one "resume" line; quiet from now on
                logging.getLogger("distributed").setLevel(logging.ERROR)
            client.cancel(list(futures))
            raise
