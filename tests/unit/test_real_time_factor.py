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


def test_a_study_that_is_not_a_simulation_says_why(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"simulated_seconds": None,
                                                       "simulated_seconds_reason": "no time integration"}))
    summary = _with_real_time_factor({"simulated_seconds": None, "simulated_seconds_reason": "no time integration"},
                                     2.0, str(tmp_path))
    assert "real_time_factor" not in summary
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written == {"simulated_seconds": None, "simulated_seconds_reason": "no time integration",
                       "wall_seconds": 2.0}


def test_every_registered_study_reports_its_simulated_time():
    """The summary contract of every study in the catalogue: `simulated_seconds` (via the studies' helper
    `simulated_time`, which refuses None without a reason, or as a literal key of the summary)."""
    import importlib
    import inspect

    from biobullet.studies import studies
    table = studies()
    assert len(table) >= 12
    for name, (module_name, _) in table.items():
        source = inspect.getsource(importlib.import_module(module_name))
        assert "simulated_time(" in source or '"simulated_seconds":' in source, name


def test_the_fourbar_study_records_no_factor_with_its_reason(tmp_path):
    """A real (coarse) run of a non-simulation study through `run_scenario`: summary and summary.json carry
    simulated_seconds = None and the reason, and no real-time factor."""
    from biobullet.studies import run_scenario
    summary = run_scenario("fourbar", str(tmp_path), step_deg=22.0)
    assert summary["simulated_seconds"] is None and "no time integration" in summary["simulated_seconds_reason"]
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written["simulated_seconds"] is None and written["simulated_seconds_reason"]
    assert "real_time_factor" not in written and written["wall_seconds"] > 0
