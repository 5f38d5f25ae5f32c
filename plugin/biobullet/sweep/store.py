"""On-disk results of a sweep: one JSON file per point (written atomically), summary CSV/JSON."""
from __future__ import annotations

import csv
import io
import json
import os
import stat
from pathlib import Path
from typing import Any, Iterable, Mapping

from biobullet.core import atomic
from biobullet.sweep.config import Point, SweepConfig


def points_dir(out: Path) -> Path:
    return out / "points"


def point_path(out: Path, point_id: str) -> Path:
    return points_dir(out) / f"{point_id}.json"


def write_json_atomic(path: Path, data: Any, out: Path) -> None:
    """Strict JSON (no NaN/inf), written atomically and flushed to disk inside output folder `out` (see
    `biobullet.core.atomic`: no folder below `out` may be a link)."""
    atomic.write_json(path, data, indent=1, allow_nan=False, within=out)


def write_text_atomic(path: Path, text: str, out: Path) -> None:
    atomic.write_text(path, text, newline="", within=out)


def read_point(out: Path, point: Point) -> dict[str, Any] | None:
    """The stored record of ``point`` if a valid one exists (valid JSON, same id and parameters), else None."""
    path = point_path(out, point.id)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):   # a link or special file is never a stored point
            return None
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("id") != point.id or record.get("status") not in ("ok", "failed"):
        return None
    if record.get("params") != dict(point.params):
        return None
    return record


def is_scalar(value: Any) -> bool:
    """None, bool, int or float (what goes into summary.csv besides strings)."""
    return value is None or isinstance(value, (bool, int, float))


def scalar_results(record: Mapping[str, Any]) -> dict[str, Any]:
    result = record.get("result") or {}
    return {k: v for k, v in result.items() if is_scalar(v) or isinstance(v, str)}


def write_summaries(out: Path, config: SweepConfig, records: Iterable[Mapping[str, Any]],
                    extra: Mapping[str, Any]) -> tuple[Path, Path]:
    """Write ``summary.csv`` (one row per point: parameters + scalar results, a result named like a parameter as
    ``result:NAME``) and ``summary.json``."""
    records = list(records)
    swept = config.swept_paths
    params = swept + sorted({p for r in records for p in r["params"]} - set(swept))
    result_keys: list[str] = []
    for record in records:
        for key in scalar_results(record):
            if key not in result_keys:
                result_keys.append(key)
    # a result named like a parameter (or id, status, error) gets its own column "result:NAME": sharing one
    # name, the result overwrote the parameter's value in both columns
    column = {k: f"result:{k}" if k in params or k in ("id", "status", "error") else k for k in result_keys}
    rows = []
    for record in records:
        scalars = scalar_results(record)
        row = {"id": record["id"], "status": record["status"]}
        row.update({p: record["params"].get(p) for p in params})
        row.update({column[k]: scalars.get(k) for k in result_keys})
        row["error"] = record.get("error") or ""
        rows.append(row)
    csv_path = out / "summary.csv"
    lines = io.StringIO()
    writer = csv.DictWriter(lines, fieldnames=["id", "status", *params, *column.values(), "error"])
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _csv_cell(v) for k, v in row.items()})
    write_text_atomic(csv_path, lines.getvalue(), out)
    json_path = out / "summary.json"
    summary = {
        "name": config.name, "config": config.source, "function": config.function.name,
        "target": config.function.target, "combine": config.combine, "swept": swept,
        "fixed": dict(config.fixed), **extra,
        "points": [{"id": r["id"], "status": r["status"], "params": r["params"],
                    "result": scalar_results(r), "error": r.get("error")} for r in records],
    }
    write_json_atomic(json_path, summary, out)
    return csv_path, json_path


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)   # every digit; 'nan', 'inf', '-inf' as float() reads them
    return value
