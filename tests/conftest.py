"""Test-run options shared by every test folder.

Compile report (opt-in, for attributing a cold run's time): with `BIOBULLET_COMPILE_REPORT=FOLDER` in the environment,
each pytest process (every xdist worker) appends one JSON line per numba compile to FOLDER/compiles-<pid>.jsonl —
the kernel (its qualified name, a variant's suffix included), the argument types, the process CPU seconds of the
compile with and without the kernels compiled inside it, and the test that triggered it — and the run ends with a
table of the costliest kernels summed over the processes (`tests/compile_report.py` prints it again from the files).
A wait for another process's compile of the same kernel (`core.jit`'s compile lock) is recorded apart, as wall
seconds. Loads from numba's on-disk cache are not compiles and are not recorded. Without the variable nothing is
installed.
"""
from __future__ import annotations

import os

from compile_report import REPORT_VARIABLE, install_recorder, summary_lines


def pytest_configure(config) -> None:
    if os.environ.get(REPORT_VARIABLE):
        install_recorder(os.environ[REPORT_VARIABLE])


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    folder = os.environ.get(REPORT_VARIABLE)
    if folder and not hasattr(config, "workerinput"):   # the controller (or a run without xdist) prints it
        for line in summary_lines(folder):
            terminalreporter.write_line(line)
