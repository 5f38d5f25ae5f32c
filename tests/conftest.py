"""Test-run options shared by every test folder.

Compile report (opt-in, for attributing a cold run's time): with `BIOBULLET_COMPILE_REPORT=FOLDER` in the environment,
each pytest process (every xdist worker) appends one JSON line per numba compile to FOLDER/compiles-<pid>.jsonl —
the kernel (its qualified name, a variant's suffix included), the argument types, the process CPU seconds of the
compile with and without the kernels compiled inside it, and the test that triggered it — and the run ends with a
table of the costliest kernels summed over the processes (`tests/compile_report.py` prints it again from the files).
A wait for another process's compile of the same kernel (`core.jit`'s compile lock) is recorded apart, as wall
seconds. Loads from numba's on-disk cache are not compiles and are not recorded. Without the variable nothing is
installed.

Order of the files under `--dist loadfile` (`make test`): pytest-xdist hands the files out in one queue, by default
sorted by their number of tests, each worker taking the next file when it has nearly finished its own. On CI's empty
numba cache both workers began with files that need the same pipeline kernels: one compiled them (test_hostile8_api,
49 s of compile), the other waited for its compile lock (29 s of the second worker in the 476-s run, the run's largest
idle time). `pytest_collection_modifyitems` queues COMPILES_FIRST first and KERNEL_FREE — files that call no numba
kernel (checked: each run alone in a fresh process never called numba's Dispatcher.compile, which also loads from the
cache) — right after it, so the second worker works through them while the first compiles; the other files follow in
xdist's order. `pytest_configure` turns xdist's own reordering off so that the queue keeps this order. A file missing
from these lists (renamed, or new) only runs in xdist's order; no test's outcome depends on the order.
"""
from __future__ import annotations

import collections
import os

import pytest

from compile_report import REPORT_VARIABLE, install_recorder, summary_lines


#: the file queued first: it compiles the pipeline kernels most files need (module docstring)
COMPILES_FIRST = "tests/unit/hostile/test_hostile8_api.py"
#: files (paths from the rootdir) that call no numba kernel, queued right after COMPILES_FIRST; their durations in the
#: 476-s CI run: 26.1, 11.1, 8.4, 5.5, 5.1, 4.4, 2.1, 1.1, 0.5 s
KERNEL_FREE = (
    "tests/integration/test_sweep_run.py",
    "tests/unit/core/test_figures.py",
    "tests/unit/test_layering.py",
    "tests/integration/test_api_docs.py",
    "tests/unit/test_architecture.py",
    "tests/integration/test_packaging.py",
    "tests/unit/test_kernel_width.py",
    "tests/integration/test_sweep_config.py",
    "tests/unit/test_docs_references.py",
)


#: the flag the controller gives its workers (`workerinput`): the run is `--dist loadfile`, order the files
ORDER_FLAG = "biobullet_file_order"


def _loadfile(config) -> bool:
    """The controller of a `--dist loadfile` run (a worker's own option reads "no": it gets ORDER_FLAG)."""
    return getattr(config.option, "dist", "no") == "loadfile"


def pytest_configure(config) -> None:
    if os.environ.get(REPORT_VARIABLE):
        install_recorder(os.environ[REPORT_VARIABLE])
    if _loadfile(config):
        config.option.loadscopereorder = False   # the queue is the collection's order (pytest_collection_modifyitems)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """(pytest-xdist, in the controller) each worker learns whether to order the files."""
    node.workerinput[ORDER_FLAG] = _loadfile(node.config)


def pytest_collection_modifyitems(session, config, items) -> None:
    """Under `--dist loadfile` (a worker told so by ORDER_FLAG): COMPILES_FIRST, then KERNEL_FREE, then the other files
    by number of tests (most first, as xdist orders them); the tests of a file keep their order. The same order on
    every worker (xdist checks that the collections are equal)."""
    if not getattr(config, "workerinput", {}).get(ORDER_FLAG) or not items:
        return
    files: dict[str, list] = collections.defaultdict(list)
    for item in items:
        files[item.nodeid.split("::", 1)[0]].append(item)
    first = [name for name in (COMPILES_FIRST, *KERNEL_FREE) if name in files]
    rest = sorted((name for name in files if name not in first), key=lambda name: -len(files[name]))   # (stable)
    items[:] = [item for name in first + rest for item in files[name]]


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    folder = os.environ.get(REPORT_VARIABLE)
    if folder and not hasattr(config, "workerinput"):   # the controller (or a run without xdist) prints it
        for line in summary_lines(folder):
            terminalreporter.write_line(line)
