"""Benchmark results kept in out/benchmarks/FILE.json, one entry per measured case, written atomically."""
from __future__ import annotations

import json
from pathlib import Path

from biobullet.core.atomic import write_json

OUT = Path(__file__).resolve().parents[2] / "out" / "benchmarks"


def keep_result(file_name: str, case: str, entry: dict) -> Path:
    """Store `entry` under `case` in out/benchmarks/`file_name`, keeping the other cases' entries; the path."""
    path = OUT / file_name
    path.parent.mkdir(parents=True, exist_ok=True)
    existing = json.loads(path.read_text()) if path.exists() else {}
    existing[case] = entry
    return write_json(path, existing)
