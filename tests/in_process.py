"""The `biobullet` command line and Python scripts run inside the test process, as their own process would run them.

A `python -m biobullet ...` subprocess pays Python's start-up, numba's import and the loading of every compiled kernel
it calls from the on-disk cache again (or compiles it cold while the cache is still empty) — seconds for each run,
and most CLI tests check only what the command prints and returns. `cli(...)` calls `biobullet.cli.main(argv)` with
standard output and standard error captured, Python's default warning filters and warning display (pytest's warning
capture would otherwise hide what a user sees), the given working directory and environment variables, and the
process's global state the command changes (warning format, the library logger's level and handlers) put back; it
returns the `subprocess.CompletedProcess` a subprocess would (exit code from the return value or `SystemExit`).

`cli(..., signal_at=(marker, SIGNAL))` sends SIGNAL to this process once `marker` has been written to the captured
standard error (a progress line: the work is under way), as a test would `kill` a child that printed it; the
command's own handler (SIGTERM: `core.arguments.terminate_as_interrupt`) then runs in the main thread, as in its
own process.

Not a process boundary: what is written to the file descriptors themselves (PyBullet's C-level banner), a signal's
arrival from outside while C code runs or before a handler is installed (tests/integration/test_unseen10_cli.py keeps
`simulate`'s SIGTERM, test_unseen2_cli.py its Ctrl-C, in a real process), environment variables read at import and a crashed interpreter need a subprocess — tests of those keep one, and each
CLI command keeps at least one real end-to-end subprocess test (tests/integration/test_cli.py).
"""
from __future__ import annotations

import contextlib
import io
import logging
import os
import runpy
import subprocess
import sys
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Python's own display of a warning (after pytest's `catch_warnings(record=True)` replaced it): to stderr."""
    (file or sys.stderr).write(warnings.formatwarning(message, category, filename, lineno, line))


class _SignalingStream(io.StringIO):
    """Captured text that sends `signum` to this process once, when `marker` is first in it."""

    def __init__(self, marker: str, signum: int) -> None:
        super().__init__()
        self.marker, self.signum, self.sent = marker, signum, False

    def write(self, text: str) -> int:
        written = super().write(text)
        if not self.sent and self.marker in self.getvalue():
            self.sent = True
            os.kill(os.getpid(), self.signum)   # this process: its handler runs before the next Python line
        return written


@contextlib.contextmanager
def _as_a_process(cwd: str | Path | None, env: Mapping[str, str | None] | None,
                  signal_at: tuple[str, int] | None = None) -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """Captured (stdout, stderr), cwd and environment changes, Python's default warning filters; all put back.
    signal_at: (marker, signal number) sent to this process once stderr holds the marker."""
    out, err = io.StringIO(), (io.StringIO() if signal_at is None else _SignalingStream(*signal_at))
    # a child's stdout is a pipe, so its terminal width is COLUMNS or 80 (argparse wraps its help to it)
    env = {"COLUMNS": os.environ.get("COLUMNS", "80"), **(env or {})}
    saved_env = {name: os.environ.get(name) for name in env}
    saved_cwd = os.getcwd()
    logger = logging.getLogger("biobullet")
    saved_logger = (logger.level, list(logger.handlers))
    saved_format = warnings.formatwarning
    try:
        for name, value in env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if cwd is not None:
            os.chdir(cwd)
        with warnings.catch_warnings(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            warnings.resetwarnings()   # a fresh interpreter's filters (python -W default aside)
            warnings.simplefilter("default")
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
            warnings.showwarning = _show_warning
            yield out, err
    finally:
        os.chdir(saved_cwd)
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        warnings.formatwarning = saved_format
        logger.setLevel(saved_logger[0])
        logger.handlers[:] = saved_logger[1]


def _exit_code(exc: SystemExit, err: io.StringIO) -> int:
    """The exit status Python gives `raise SystemExit(code)`: None → 0, an int as is, anything else printed → 1."""
    if exc.code is None or isinstance(exc.code, int):
        return exc.code or 0
    print(exc.code, file=err)
    return 1


def cli(*argv: str, cwd: str | Path | None = None, env: Mapping[str, str | None] | None = None,
        signal_at: tuple[str, int] | None = None) -> subprocess.CompletedProcess:
    """`biobullet ARGV` in this process: its exit code, stdout and stderr as `subprocess.run(..., text=True)` gives
    them. `env` sets (or, with None, removes) environment variables for the call; `signal_at` = (marker, signal
    number): the signal is sent to this process once the command has written the marker to stderr."""
    from biobullet.cli import main
    with _as_a_process(cwd, env, signal_at) as (out, err):
        try:
            code = main(list(argv))
        except SystemExit as exc:   # argparse's usage errors and --help
            code = _exit_code(exc, err)
    return subprocess.CompletedProcess(["biobullet", *argv], code, out.getvalue(), err.getvalue())


def script(path: str | Path, *argv: str, cwd: str | Path | None = None,
           env: Mapping[str, str | None] | None = None) -> subprocess.CompletedProcess:
    """`python PATH ARGV` in this process: the file run as `__main__` in a fresh module namespace (runpy), with
    `sys.argv` and the script's folder first on `sys.path` as Python sets them; exit code, stdout and stderr."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    with _as_a_process(cwd, env) as (out, err):
        sys.argv = [str(path), *argv]
        sys.path.insert(0, str(Path(path).resolve().parent))
        try:
            runpy.run_path(str(path), run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc, err)
        finally:
            sys.argv = saved_argv
            sys.path[:] = saved_path
    return subprocess.CompletedProcess([sys.executable, str(path), *argv], code, out.getvalue(), err.getvalue())


def source(code: str, name: str, cwd: str | Path | None = None,
           env: Mapping[str, str | None] | None = None) -> subprocess.CompletedProcess:
    """`python -c CODE` in this process: `code` run as `__main__` in a fresh namespace (`name` labels its
    tracebacks); an exception it raises is printed as Python prints it and gives exit code 1."""
    import traceback
    with _as_a_process(cwd, env) as (out, err):
        try:
            exec(compile(code, name, "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
            code_ = 0
        except SystemExit as exc:
            code_ = _exit_code(exc, err)
        except Exception:   # noqa: BLE001  (as the interpreter would: the traceback on stderr, status 1)
            traceback.print_exc(file=err)
            code_ = 1
    return subprocess.CompletedProcess([sys.executable, "-c", code], code_, out.getvalue(), err.getvalue())
