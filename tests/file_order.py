"""The order in which the default run hands test files to its xdist workers: the longest first.

`make test` runs `pytest -n auto --dist loadfile`: each file goes whole to one worker, and a worker that finishes a
file takes the next one in the queue. xdist's own queue puts the files with the most tests first: the two it started
together (test_hostile8_api, test_hostile7_outputs) both begin by simulating a tree model, and in every cold run
measured one worker sat 26–31 s (idle machine) waiting for the other's compile of that right-hand side (`core.jit`'s
compile lock), while files of a few long tests ran late. `tests/conftest.py` orders the collected files by
their seconds in a cold run (`FILE_SECONDS`: an empty numba cache, as on CI), longest first — the classic
longest-processing-time rule — and turns xdist's reordering off. A file missing from the table (a new file) is
placed by its number of tests times `DEFAULT_TEST_SECONDS`. Only the order changes: every test still runs, in its
file's own order.

Update the table after a run that moved the times: `pytest -n 2 --dist loadfile --durations=0 > LOG` on a fresh
clone, then `python tests/file_order.py LOG` (rewrites tests/data/file_seconds.json from the durations: setup, call
and teardown summed per file).
"""
from __future__ import annotations

import collections
import json
import re
import sys
from pathlib import Path

FILE_SECONDS = Path(__file__).parent / "data" / "file_seconds.json"
#: seconds a test of a file missing from the table is counted for (a typical cold-run test)
DEFAULT_TEST_SECONDS = 0.15


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def longest_first(items: list) -> list:
    """`items` (pytest items) regrouped by file, the files in decreasing cold-run seconds (ties by path, so every
    worker collects the same order); a file's own items keep their order."""
    known = json.loads(FILE_SECONDS.read_text()) if FILE_SECONDS.is_file() else {}
    by_file: dict[str, list] = collections.defaultdict(list)
    for item in items:
        by_file[_file_of(item.nodeid)].append(item)
    order = sorted(by_file, key=lambda path: (-known.get(path, DEFAULT_TEST_SECONDS * len(by_file[path])), path))
    return [item for path in order for item in by_file[path]]


def file_seconds(durations_log: str) -> dict[str, float]:
    """{test file: seconds} summed from the `--durations=0` table of a pytest log (setup, call and teardown)."""
    seconds: dict[str, float] = collections.defaultdict(float)
    for line in Path(durations_log).read_text().splitlines():
        match = re.match(r"\s*([\d.]+)s (?:setup|call|teardown)\s+(\S+)", line)
        if match:
            seconds[_file_of(match.group(2))] += float(match.group(1))
    return {path: round(total, 1) for path, total in sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0]))}


if __name__ == "__main__":
    table = file_seconds(sys.argv[1])
    FILE_SECONDS.write_text(json.dumps(table, indent=0) + "\n")
    print(f"{len(table)} files, {sum(table.values()):.0f} s → {FILE_SECONDS}")
