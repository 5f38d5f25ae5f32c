"""biobullet.core.atomic: a file appears whole or not at all; a failed write leaves the earlier file and no debris."""
from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from biobullet.core import atomic


def _debris(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_text_json_and_bytes_arrive_whole(tmp_path):
    atomic.write_text(tmp_path / "sub" / "a.md", "héllo\n")
    assert (tmp_path / "sub" / "a.md").read_text(encoding="utf-8") == "héllo\n"
    atomic.write_json(tmp_path / "b.json", {"x": np.arange(3), "y": np.float64(0.5)})
    assert json.loads((tmp_path / "b.json").read_text()) == {"x": [0, 1, 2], "y": 0.5}
    atomic.write_bytes(tmp_path / "c.bin", b"\x00\x01")
    assert (tmp_path / "c.bin").read_bytes() == b"\x00\x01"
    assert _debris(tmp_path) == [] and _debris(tmp_path / "sub") == []


def test_a_failing_writer_keeps_the_earlier_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "result.json"
    atomic.write_json(target, {"ok": 1})

    def half_then_fail(tmp):
        with open(tmp, "w") as handle:
            handle.write('{"half": ')
        raise RuntimeError("killed mid-write")
    with pytest.raises(RuntimeError, match="killed"):
        atomic.atomic_write(target, half_then_fail)
    assert json.loads(target.read_text()) == {"ok": 1}
    assert _debris(tmp_path) == []
    with pytest.raises(ValueError):   # strict JSON refuses NaN before anything replaces the file
        atomic.write_json(target, {"bad": math.nan}, allow_nan=False)
    assert json.loads(target.read_text()) == {"ok": 1} and _debris(tmp_path) == []


def test_figures_keep_the_format_of_their_suffix(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    atomic.save_figure(fig, tmp_path / "plot.png", dpi=50)
    atomic.save_figure(fig, tmp_path / "plot.svg")
    plt.close(fig)
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (tmp_path / "plot.svg").read_text()[:500]
    assert _debris(tmp_path) == []


def test_temporary_files_are_hidden_and_never_match_the_targets_glob(tmp_path):
    """A killed process may leave its temporary file: globs for finished files must not see it (sweep resume and
    summaries read `points/*.json`), and the sweep's cleaner finds it by `.*.tmp`."""
    seen = {}

    def write(tmp):
        seen["json"] = sorted(p.name for p in tmp_path.glob("*.json"))
        seen["cleaner"] = sorted(p.name for p in tmp_path.glob(".*.tmp"))
        with open(tmp, "w") as handle:
            handle.write("{}")
    atomic.atomic_write(tmp_path / "point.json", write)
    assert seen["json"] == [] and len(seen["cleaner"]) == 1 and seen["cleaner"][0].startswith(".point.json.")
    names = []
    atomic.atomic_write(tmp_path / "movie.mp4", lambda tmp: names.append(os.path.basename(tmp)) or
                        open(tmp, "wb").close(), keep_suffix=True)
    assert names[0].startswith(".movie.mp4.") and names[0].endswith(".tmp.mp4")
