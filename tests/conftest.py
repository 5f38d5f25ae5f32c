"""How the default run is laid out on pytest-xdist's workers (`make test`: `-n auto --dist loadfile`); no check
lives here.

A worker takes whole files, one after another, from one queue. The suite's time is mostly numba compiles and
oracle runs concentrated in a few files, so the order of that queue decides how long the last worker runs alone:
the files measured as the longest go first (longest-processing-time-first), every other file after them in
collection order, and the short ones fill the end. `make test` passes `--no-loadscope-reorder` so that xdist keeps
this order instead of sorting files by their number of tests."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Test files by measured wall time in the default run (cold numba cache, two workers), longest first. Only the
#: order matters; a file missing here runs after these.
LONGEST_FIRST = (
    "tests/validation/test_muscles_opensim.py",
    "tests/unit/hostile/test_work_bounds.py",
    "tests/unit/render/test_render.py",
    "tests/unit/integrate/test_compiled_contacts.py",
    "tests/integration/test_demos.py",
    "tests/unit/test_newcomer.py",
    "tests/unit/hostile/test_hostile_inputs.py",
    "tests/integration/test_bridge_own_dynamics.py",
    "tests/unit/hostile/test_second_campaign.py",
    "tests/integration/test_viewer.py",
    "tests/unit/test_muscle_outputs.py",
    "tests/integration/test_doc_snippets.py",
    "tests/unit/opensim/test_opensim_oracle.py",
    "tests/integration/test_cli.py",
    "tests/integration/test_malformed_models.py",
    "tests/validation/test_robot_corpus.py",
    "tests/unit/test_muscles.py",
    "tests/integration/test_bridge_own_loop.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}

    def place(item: pytest.Item) -> int:
        try:
            name = item.path.resolve().relative_to(ROOT).as_posix()
        except ValueError:
            return len(rank)
        return rank.get(name, len(rank))

    items.sort(key=place)   # stable: each file's tests keep their order and stay together
