"""Atomic file output: every file biobullet writes appears whole or not at all.

The content goes to a temporary file in the target's folder (same file system), is flushed to disk, and is then
renamed onto the target with `os.replace` — so a killed or failing run never leaves a half-written result, and an
earlier complete file stays until the new one is complete. Temporary files are hidden and end in ".tmp" (figures
are saved with an explicit format; videos keep their suffix for ffmpeg).

What may be replaced: only a regular file (or nothing). A target that is a directory, a device node, a FIFO or a
socket is refused with an OutputError (renaming onto it would destroy it: run as root, `--out /dev/null` would
replace the device with a regular file), and so is a target that is a symbolic link — links are refused, not
written through, so that a link planted in an output folder cannot redirect a write elsewhere (symbolic links
among the parent folders are followed as usual, except below an output folder named with `within=`: there every
folder must be a real folder, `output_folder`). A new file gets the permissions of `open()` under the user's
umask (0666 & ~umask); a replaced file keeps its permissions.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

from biobullet.core.errors import BiobulletError, shown


class OutputError(BiobulletError, OSError):
    """An output path that must not be written (a directory, device, FIFO, socket or symbolic link)."""


_UMASK_LOCK = threading.Lock()

#: errors of writing a file that are the output's fault, not the program's (a full disk, a quota, a file too
#: large, a read-only or failing file system, no permission): reported as an OutputError naming the file
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO, errno.EACCES,
                          errno.EPERM})


def _umask() -> int:
    with _UMASK_LOCK:  # os.umask can only be read by setting it
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def check_target(path: str | os.PathLike[str]) -> Path:
    """Raise OutputError unless `path` is absent or a regular file (symbolic links refused)."""
    path = Path(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise OutputError(f"cannot write {shown(str(path), 200)}: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        raise OutputError(f"will not write {shown(str(path), 200)}: it is a symbolic link (outputs never follow "
                          "or replace links; give the real path)")
    if not stat.S_ISREG(info.st_mode):
        kind = ("a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode) else
                "a socket" if stat.S_ISSOCK(info.st_mode) else "a device" if
                (stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)) else "not a regular file")
        raise OutputError(f"will not replace {shown(str(path), 200)}: it is {kind}; outputs only replace "
                          "regular files")
    return path


def check_writable(path: str | os.PathLike[str], *, folder: bool = False,
                   inputs: tuple[str | os.PathLike[str] | None, ...] = ()) -> Path:
    """`check_target`, and a file can be created in `path`'s folder (or, where the folder does not exist yet, in
    its nearest existing ancestor): tried by creating and removing a hidden temporary file. For commands that
    compute before they write, so that an unwritable target is refused before the work, not after it. With
    `folder`, `path` is an output folder (absent, or a directory) that the files are written into. `inputs`: files
    the work reads (a model file): `path` must be none of them (`simulate(model, out=model.file)` wrote the
    trajectory over the model)."""
    if not folder and os.fspath(path).endswith((os.sep, "/")):   # Path() would drop the slash: a file "run"
        raise OutputError(f"{shown(os.fspath(path), 200)} names a folder (it ends in '/'); give a file name in it")
    path = Path(path)
    if folder:
        if os.path.lexists(path) and not path.is_dir():
            raise OutputError(f"output folder {shown(str(path), 200)} exists and is not a folder; give a folder")
        where = path.absolute()
    else:
        where = check_target(path).parent.absolute()
        for given in filter(None, inputs):
            try:
                same = os.path.samefile(path, given)
            except OSError:   # either is absent (or unreadable): not the same file
                same = False
            if same:
                raise OutputError(f"{shown(str(path), 200)} is the input file {shown(str(given), 200)}: writing it "
                                  "would replace it; give another file name")
    try:
        while not os.path.isdir(where) and where != where.parent:   # (isdir: False for a name too long, too)
            where = where.parent
        if len(os.fsencode(path.name)) > 255:   # longer than any file system's name (NAME_MAX)
            raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG))
        fd, probe = tempfile.mkstemp(prefix=".biobullet-probe.", suffix=".tmp", dir=where)
    except OSError as exc:
        raise OutputError(f"cannot write {'into the output folder ' if folder else ''}{shown(str(path), 200)}: "
                          f"{exc.strerror or exc} (in {shown(str(where), 200)})") from None
    os.close(fd)
    os.unlink(probe)
    return path


def _kind(mode: int) -> str:
    return ("a symbolic link" if stat.S_ISLNK(mode) else "a directory" if stat.S_ISDIR(mode) else
            "a regular file" if stat.S_ISREG(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
            "a socket" if stat.S_ISSOCK(mode) else "a device" if (stat.S_ISCHR(mode) or stat.S_ISBLK(mode))
            else "not a regular file")


def output_folder(root: str | os.PathLike[str], *parts: str) -> Path:
    """The folder `root/parts...`, created as needed, where `root` must be a directory (or absent: created) and
    every folder below it a real directory — not a symbolic link, a file or a special file — so that nothing
    planted inside an output tree (`OUT/points -> /elsewhere`) redirects a write. Raises OutputError naming the
    offending path (also for a name too long for the file system, or a root that is a file)."""
    root = Path(root)
    try:
        if not root.is_dir():
            if os.path.lexists(root):
                raise OutputError(f"output folder {shown(str(root), 200)} exists and is "
                                  f"{_kind(os.stat(root).st_mode) if root.exists() else 'a dangling link'}; "
                                  "give a folder")
            root.mkdir(parents=True)
        folder = root
        for part in parts:
            folder = folder / part
            try:
                os.mkdir(folder)
            except FileExistsError:
                pass
            mode = os.lstat(folder).st_mode
            if not stat.S_ISDIR(mode):
                raise OutputError(f"will not write into {shown(str(folder), 200)}: it is {_kind(mode)} (folders "
                                  "inside an output folder must be real folders, never links)")
    except OutputError:
        raise
    except OSError as exc:
        raise OutputError(f"cannot create the output folder {shown(str(root), 200)}: "
                          f"{exc.strerror or exc}") from None
    return folder


def atomic_write(path: str | os.PathLike[str], write: Callable[[str], Any], *, keep_suffix: bool = False,
                 within: str | os.PathLike[str] | None = None) -> Path:
    """Call `write(temporary_path)`, flush the file to disk, then rename it onto `path` (folders created).
    On any exception the temporary file is removed and `path` is left as it was.

    The temporary file is hidden and ends in ".tmp" (`.NAME.XXXX.tmp`), so a glob for finished files
    (`*.json`, `*.png`) never sees one that a killed process left behind, and cleaners can find them; with
    `keep_suffix` it ends in the target's suffix instead (`.NAME.XXXX.tmp.mp4`), for writers that pick the format
    from the file name (ffmpeg).

    `within`: an output folder that `path` lies in; every folder between it and `path` must then be a real
    folder (`output_folder`), checked again just before the rename."""
    path = check_target(path)
    inner = _inner_folders(path, within)
    try:
        if inner is not None:
            output_folder(within, *inner)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        suffix = ".tmp" + path.suffix if keep_suffix and path.suffix else ".tmp"
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=suffix, dir=path.parent)
    except FileExistsError:
        raise OutputError(f"cannot create the folder of {shown(str(path), 200)}: a parent is a file") from None
    except OutputError:
        raise
    except OSError as exc:  # a name too long, a parent that is a file, a read-only or full file system
        raise OutputError(f"cannot write {shown(str(path), 200)}: {exc.strerror or exc}") from None
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        if inner is not None:  # again: a folder may have been replaced by a link while we wrote
            output_folder(within, *inner)
        check_target(path)  # again: the target may have become a special file while we wrote
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, OutputError) and exc.errno in WRITE_ERRNOS:
            raise OutputError(f"cannot write {shown(str(path), 200)}: {exc.strerror or exc} (nothing written; an "
                              "earlier file of that name is kept)") from None
        raise
    return path


def _inner_folders(path: Path, within: str | os.PathLike[str] | None) -> tuple[str, ...] | None:
    """The folder names from `within` down to `path`'s folder (None without `within`)."""
    if within is None:
        return None
    try:
        return path.parent.relative_to(Path(within)).parts
    except ValueError:
        raise OutputError(f"{shown(str(path), 200)} is not inside the output folder "
                          f"{shown(str(within), 200)}") from None


def write_text(path: str | os.PathLike[str], text: str, *, newline: str | None = None,
               within: str | os.PathLike[str] | None = None) -> Path:
    """Text file, UTF-8 (`newline=""`: line endings written as given, e.g. for CSV); `within` as in
    `atomic_write`."""
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8", newline=newline) as handle:
            handle.write(text)
    return atomic_write(path, write, within=within)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    return atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))


#: the lock file of an output folder: held (flock) by the command writing into it (a sweep, a study)
LOCK_NAME = ".biobullet.lock"


@contextlib.contextmanager
def folder_lock(out: str | os.PathLike[str], command: str) -> Iterator[None]:
    """Hold `out`'s lock while `command` ("sweep", "run") writes into it: a second command on the same folder is
    refused with one clear error (it would compute everything again, and its start-up clean-up of temporary files
    could delete a file the first one is writing). The lock goes with the process that holds it (also on
    SIGKILL); the file stays (removing it would let a third command lock a new file while the second holds the
    old one)."""
    try:
        import fcntl
    except ImportError:   # no flock on this platform: not locked
        yield
        return
    path = Path(out) / LOCK_NAME
    check_target(path)
    try:   # (not inherited by child processes: Python's descriptors close on exec, and Dask spawns its processes)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").split() or ["?"]
            raise OutputError(f"{out}: another {' '.join(holder[1:2]) or 'biobullet command'} is writing into this "
                              f"folder (process {holder[0]}); wait for it to finish (then run again to resume), or "
                              "give another --out") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {command}\n".encode(), 0)
        yield
    finally:
        os.close(fd)   # releases the lock


def json_default(value: Any) -> Any:
    """`json.dumps(default=)` for numpy arrays and scalars (as lists and numbers); anything else is refused."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")


def write_json(path: str | os.PathLike[str], data: Any, *, indent: int = 2, allow_nan: bool = True,
               within: str | os.PathLike[str] | None = None) -> Path:
    """JSON (numpy arrays and scalars as lists/numbers), with a final newline. `allow_nan=False` refuses NaN/inf
    (strict JSON) instead of writing the non-standard tokens; `within` as in `atomic_write`."""
    return write_text(path, json.dumps(data, indent=indent, allow_nan=allow_nan, default=json_default,
                                       ensure_ascii=False) + "\n", within=within)


def figure_format(figure, path: str | os.PathLike[str]) -> str | None:
    """The savefig format of `path` (its suffix; None = matplotlib's default, png); an OutputError naming the file
    and the formats when matplotlib cannot write that suffix (it was matplotlib's ValueError)."""
    fmt = Path(path).suffix[1:].lower() or None
    supported = figure.canvas.get_supported_filetypes()
    if fmt is not None and fmt not in supported:
        raise OutputError(f"cannot write a figure to {shown(str(path), 200)}: matplotlib has no format {fmt!r} "
                          f"(use {', '.join(sorted(supported))})")
    return fmt


def save_figure(figure, path: str | os.PathLike[str], *, within: str | os.PathLike[str] | None = None,
                **savefig_kwargs: Any) -> Path:
    """A matplotlib figure, in the format of `path`'s suffix (dpi etc. passed to savefig), laid out first by
    `core.figures.settle_layout` (nothing overlaps, legends off the data; a LayoutWarning says what still does);
    `within` as in `atomic_write`."""
    from biobullet.core.figures import settle_layout
    fmt = figure_format(figure, path)
    settle_layout(figure)
    path = Path(path)
    return atomic_write(path, lambda tmp: figure.savefig(tmp, format=fmt, **savefig_kwargs), within=within)


__all__ = ["OutputError", "check_target", "check_writable", "output_folder", "atomic_write", "write_text", "write_bytes",
           "write_json", "json_default", "figure_format", "save_figure", "folder_lock"]
