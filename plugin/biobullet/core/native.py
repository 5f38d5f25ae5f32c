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


@contextlib.contextmanager
def native_output(what: str) -> Iterator[None]:
    """Capture the C-level stdout/stderr written while the block runs; log it (DEBUG) as coming from `what`."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        saved = [os.dup(1), os.dup(2)]
    except OSError:   # no usable descriptors (embedded interpreters): run as is
        yield
        return
    with tempfile.TemporaryFile(mode="w+b") as sink:
        try:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            yield
        finally:
            _flush_c_streams()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            sink.seek(0)
            text = sink.read(1 << 16).decode("utf-8", "replace").strip()
            if text:
                logger.debug("%s printed: %s", what, text)


def import_pybullet():
    """The pybullet module, imported (the first time) with its build banner captured by `native_output`."""
    module = sys.modules.get("pybullet")
    if module is None:
        with native_output("import pybullet"):
            import pybullet as module
    return module


__all__ = ["native_output", "import_pybullet", "logger"]
