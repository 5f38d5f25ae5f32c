"""What runs on a Dask worker for one point: call the point function, never raise for its errors."""
from __future__ import annotations

import logging
import math
import os
import socket
import time
import traceback
from typing import Any, Mapping

#: If set, every point evaluation appends "<point id> <pid>" to this file (an audit trail of computed points).
TRACE_ENV = "BIOBULLET_SWEEP_TRACE"


def _plain(value: Any, where: str) -> Any:
    """Convert a result value to plain JSON data (numpy scalars/arrays included). JSON has no NaN or infinity:
    those become the strings "nan", "inf", "-inf" (`float()` and CSV readers read them back), not null, which
    would read as a missing result."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)   # 'nan', 'inf', '-inf'
    if isinstance(value, Mapping):
        return {str(k): _plain(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise TypeError(f"result {where} is not JSON data: {type(value).__name__}")


def evaluate_point(target: str, point_id: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Evaluate one point; a point function that raises gives ``status="failed"`` with the error message."""
    from biobullet.sweep.registry import load_target

    trace = os.environ.get(TRACE_ENV)
    if trace:
        with open(trace, "a", encoding="utf-8") as handle:
            handle.write(f"{point_id} {os.getpid()}\n")
    started = time.perf_counter()
    record: dict[str, Any] = {"host": socket.gethostname(), "pid": os.getpid()}
    try:
        fn = load_target(target)
        result = fn(dict(params))
        if not isinstance(result, Mapping):
            raise TypeError(f"point function returned {type(result).__name__}, expected a dict of results")
        record.update(status="ok", result=_plain(result, "result"), error=None)
    except Exception as exc:  # noqa: BLE001  (recorded in the point's file; the sweep goes on)
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" (at {frames[-1].filename.rsplit(os.sep, 1)[-1]}:{frames[-1].lineno})" if frames else ""
        record.update(status="failed", result=None, error=f"{type(exc).__name__}: {exc}{where}")
    record["seconds"] = time.perf_counter() - started
    return record


class ClosingHeartbeatFilter(logging.Filter):
    """Drops distributed's "Failed to communicate with scheduler during heartbeat." of a worker that is closing.

    A worker sets its status to closing, stops its periodic callbacks and closes its connections; a heartbeat
    already waiting for the scheduler's answer then fails on the closed connection and distributed logs that at
    ERROR with a traceback (`Worker.heartbeat`). It happens whenever a heartbeat (every 0.5 s) is in flight while the
    driver closes the cluster — at the end of every sweep and on Ctrl-C or SIGTERM —, more often the longer the
    closing takes: seen after a sweep's summary line at load ≈ 13; after a Ctrl-C the CLI promises one "resume"
    line (tests/integration/test_sweep_run.py asserts no traceback there). A running worker's failed heartbeat is
    still reported."""

    def __init__(self, worker: Any) -> None:
        super().__init__()
        self.worker = worker

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.msg == "Failed to communicate with scheduler during heartbeat."
                    and getattr(self.worker.status, "name", "") in ("closing", "closed"))


def dask_setup(worker: Any) -> None:
    """Worker preload of local clusters: ignore SIGINT, so Ctrl-C reaches only the driver (which cancels the
    sweep and closes the cluster) and workers do not print KeyboardInterrupt tracebacks; no heartbeat traceback
    while the worker closes (`ClosingHeartbeatFilter`)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.getLogger("distributed.worker").addFilter(ClosingHeartbeatFilter(worker))
