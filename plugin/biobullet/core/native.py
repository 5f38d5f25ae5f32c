"""Keep third-party C/C++ chatter off the user's terminal without hiding it.

PyBullet prints its build banner ("pybullet build time: ...") with printf when it is imported, and PyBullet's
URDF loader and Pinocchio's urdfdom write warnings to the C streams. `native_output(what)` captures file
descriptors 1 and 2 around such a call into a temporary file and hands the text to the `biobullet` logger at
DEBUG level (`biobullet --verbose` shows it), so a real error message is never lost: a Python exception still
propagates, and its C-level text is logged. `import_pybullet()` imports pybullet that way, once.
"""
from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import sys
import tempfile
from typing import Iterator

logger = logging.getLogger("biobullet")


def _flush_c_streams() -> None:
    """fflush(NULL): printf output still buffered in the C library goes to the descriptor it was written for."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):   # no C library handle (unusual platforms): nothing buffered we can reach
        pass


#: the lists of the captures open now, outermost first: an inner capture's lines reach the outer ones too
_open: list[list[str]] = []

#: how much captured C-level output is kept (bytes): enough for any loader's messages, bounded for hostile files
NATIVE_OUTPUT_LIMIT = 65536


@contextlib.contextmanager
def native_output(what: str) -> Iterator[list[str]]:
    """Capture what C/C++ code writes to file descriptors 1 and 2 while the block runs, while Python's own
    `sys.stdout` and `sys.stderr` (warnings, progress) still reach the terminal; log it (DEBUG) as coming from
    `what`. Yields a list that receives, on exit, the captured text's non-empty lines (for a caller that reports
    them as the library's own words, e.g. an oracle's refusal)."""
    printed: list[str] = []
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.flush()
    try:
        saved = {fd: os.dup(fd) for fd in (1, 2)}
    except OSError:   # no usable descriptors (embedded interpreters): run as is
        yield printed
        return
    python_streams = (sys.stdout, sys.stderr)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        try:
            sys.stdout = open(os.dup(saved[1]), "w", encoding="utf-8", errors="replace", closefd=True)
            sys.stderr = open(os.dup(saved[2]), "w", encoding="utf-8", errors="replace", closefd=True)
            for fd in (1, 2):
                os.dup2(sink.fileno(), fd)
            _open.append(printed)
            yield printed
        finally:
            if _open and _open[-1] is printed:
                _open.pop()
            _flush_c_streams()
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
            sys.stdout, sys.stderr = python_streams
            sink.seek(0)
            text = sink.read(NATIVE_OUTPUT_LIMIT).decode("utf-8", "replace").strip()
            if text:
                logger.debug("%s printed: %s", what, text)
                lines = [line for line in text.splitlines() if line.strip()]
                for capture in (*_open, printed):
                    capture.extend(lines)


def import_pybullet():
    """The pybullet module, imported (the first time) with its build banner captured by `native_output`."""
    module = sys.modules.get("pybullet")
    if module is None:
        with native_output("import pybullet"):
            import pybullet as module
    return module


__all__ = ["native_output", "import_pybullet", "logger", "NATIVE_OUTPUT_LIMIT"]
