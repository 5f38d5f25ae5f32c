"""Atomic file output: every file biobullet writes appears whole or not at all.

The content goes to a temporary file in the target's folder (same file system), is flushed to disk, and is then
renamed onto the target with `os.replace` — so a killed or failing run never leaves a half-written result, and an
earlier complete file stays until the new one is complete. Temporary files are hidden and end in ".tmp" (figures
are saved with an explicit format; videos keep their suffix for ffmpeg).
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable


def atomic_write(path: str | os.PathLike[str], write: Callable[[str], Any], *, keep_suffix: bool = False) -> Path:
    """Call `write(temporary_path)`, flush the file to disk, then rename it onto `path` (folders created).
    On any exception the temporary file is removed and `path` is left as it was.

    The temporary file is hidden and ends in ".tmp" (`.NAME.XXXX.tmp`), so a glob for finished files
    (`*.json`, `*.png`) never sees one that a killed process left behind, and cleaners can find them; with
    `keep_suffix` it ends in the target's suffix instead (`.NAME.XXXX.tmp.mp4`), for writers that pick the format
    from the file name (ffmpeg)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = ".tmp" + path.suffix if keep_suffix and path.suffix else ".tmp"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def write_text(path: str | os.PathLike[str], text: str, *, newline: str | None = None) -> Path:
    """Text file, UTF-8 (`newline=""`: line endings written as given, e.g. for CSV)."""
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8", newline=newline) as handle:
            handle.write(text)
    return atomic_write(path, write)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    return atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):   # numpy arrays and scalars
        return value.tolist()
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")


def write_json(path: str | os.PathLike[str], data: Any, *, indent: int = 2, allow_nan: bool = True) -> Path:
    """JSON (numpy arrays and scalars as lists/numbers), with a final newline. `allow_nan=False` refuses NaN/inf
    (strict JSON) instead of writing the non-standard tokens."""
    return write_text(path, json.dumps(data, indent=indent, allow_nan=allow_nan, default=_plain,
                                       ensure_ascii=False) + "\n")


def save_figure(figure, path: str | os.PathLike[str], **savefig_kwargs: Any) -> Path:
    """A matplotlib figure, in the format of `path`'s suffix (dpi etc. passed to savefig)."""
    path = Path(path)
    fmt = path.suffix[1:] or None
    return atomic_write(path, lambda tmp: figure.savefig(tmp, format=fmt, **savefig_kwargs))


__all__ = ["atomic_write", "write_text", "write_bytes", "write_json", "save_figure"]
