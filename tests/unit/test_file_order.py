"""The default run's file order (`tests/file_order.py`): longest first by the table, every test kept."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import file_order

ROOT = Path(__file__).resolve().parents[2]


def _items(*nodeids: str) -> list:
    return [SimpleNamespace(nodeid=nodeid) for nodeid in nodeids]


def test_files_run_longest_first_and_keep_their_own_order(tmp_path, monkeypatch):
    table = tmp_path / "file_seconds.json"
    table.write_text(json.dumps({"tests/a.py": 1.0, "tests/b.py": 30.0}))
    monkeypatch.setattr(file_order, "FILE_SECONDS", table)
    items = _items("tests/a.py::x", "tests/c.py::p[1]", "tests/b.py::y", "tests/a.py::z", "tests/b.py::w",
                   "tests/c.py::p[2]", "tests/d.py::q")
    ordered = [item.nodeid for item in file_order.longest_first(items)]
    # b (30 s) before a (1 s); c and d are not in the table: counted DEFAULT_TEST_SECONDS a test (0.3 and 0.15 s)
    assert ordered == ["tests/b.py::y", "tests/b.py::w", "tests/a.py::x", "tests/a.py::z", "tests/c.py::p[1]",
                       "tests/c.py::p[2]", "tests/d.py::q"]
    assert sorted(ordered) == sorted(item.nodeid for item in items)   # nothing dropped, nothing doubled


def test_the_table_names_only_test_files_that_exist():
    table = json.loads(file_order.FILE_SECONDS.read_text())
    missing = [path for path in table if not (ROOT / path).is_file()]
    assert not missing, f"tests/data/file_seconds.json names files that are gone (rerun tests/file_order.py): {missing}"
    assert all(seconds >= 0 for seconds in table.values())


def test_the_durations_table_is_summed_per_file(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("==== slowest durations ====\n"
                   "12.50s call     tests/unit/test_x.py::test_a[p q]\n"
                   "0.50s setup    tests/unit/test_x.py::test_a[p q]\n"
                   "3.00s call     tests/unit/test_y.py::test_b\n"
                   "(2 durations < 0.005s hidden.)\n")
    assert file_order.file_seconds(str(log)) == {"tests/unit/test_x.py": 13.0, "tests/unit/test_y.py": 3.0}
