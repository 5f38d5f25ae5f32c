"""`biobullet run` adds the real-time factor (simulated / wall seconds) to a study's summary and summary.json."""
from __future__ import annotations

import json

from biobullet.studies import _with_real_time_factor


def test_real_time_factor_is_simulated_over_wall_seconds(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"simulated_seconds": 3.0, "other": 1}))
    summary = _with_real_time_factor({"simulated_seconds": 3.0, "other": 1}, 1.5, str(tmp_path))
    assert summary["real_time_factor"] == 2.0 and summary["wall_seconds"] == 1.5
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written == {"simulated_seconds": 3.0, "other": 1, "wall_seconds": 1.5, "real_time_factor": 2.0}


def test_no_factor_without_simulated_seconds(tmp_path):
    summary = _with_real_time_factor({"figures": []}, 2.0, str(tmp_path))   # no summary.json: nothing written
    assert "real_time_factor" not in summary and summary["wall_seconds"] == 2.0
    assert not (tmp_path / "summary.json").exists()
