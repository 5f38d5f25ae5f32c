"""Command-line argument types and signal handling shared by `biobullet` and `biobullet sweep`, and the checks of
the Python API's scalar arguments (standard library only at import: the CLI starts without NumPy; `number_argument`
reads through `core.attributes` when called)."""
from __future__ import annotations

import argparse
import contextlib
import math
import signal
import sys
from typing import Any, Callable, Iterator, TypeVar

from biobullet.core.errors import ModelError

T = TypeVar("T", int, float)

#: most output samples (reference engine) or PyBullet steps one run may ask for: each costs a state row and its
#: energies (10⁸ samples of a 7-joint arm: a run was killed for memory at its end)
MAX_SAMPLES = 10_000_000


def _checked(text: str, kind: Callable[[str], T], noun: str, valid: Callable[[T], bool], expected: str) -> T:
    """`kind(text)`, or argparse's error saying it is not `noun` or, when `valid` fails, what is `expected`."""
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {noun}: {text[:40]!r}") from None
    if not valid(value):
        raise argparse.ArgumentTypeError(f"must be {expected}, got {text[:40]!r}")
    return value


def positive_int(text: str) -> int:
    return _checked(text, int, "an integer", lambda value: value >= 1, "≥ 1")


def count(most: int) -> Callable[[str], int]:
    """An argument type: an integer in 1 … `most` (a count of work items: a typo such as 10**9 random states
    would run for days)."""
    def parse(text: str) -> int:
        return _checked(text, int, "an integer", lambda value: 1 <= value <= most, f"in 1 … {most:,}")
    return parse


def port(text: str) -> int:
    """A TCP port, 1 … 65535 (beyond it the server's bind() raised OverflowError in its event loop and hung)."""
    return _checked(text, int, "an integer", lambda value: 1 <= value <= 65535, "in 1 … 65535")


def positive_float(text: str) -> float:
    return _checked(text, float, "a number", lambda value: math.isfinite(value) and value > 0,
                    "a finite number > 0")


def relative_tolerance(text: str) -> float:
    """A relative tolerance: 0 < r < 1 (r ≥ 1 accepts any error: `--rtol 10` ran and gave numbers 0.5 % off)."""
    return _checked(text, float, "a number", lambda value: math.isfinite(value) and 0 < value < 1,
                    "a number in (0, 1), e.g. 1e-9")


def seed(text: str) -> int:
    """A random seed: a non-negative integer below 2**32 (NumPy's limit)."""
    return _checked(text, int, "an integer", lambda value: 0 <= value < 2 ** 32, "in 0 … 4294967295")


def output_path(text: str) -> str:
    """An output file or folder name: not empty, and not `-` (which would be a file or folder named "-" in the
    working directory, where a user expects standard output)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: give a file or folder name")
    if text == "-":
        raise argparse.ArgumentTypeError("-: results are written to files, not to standard output; give a file or "
                                         "folder name (./- for one named '-')")
    return text


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[list[int]]:
    """While inside, SIGTERM (`kill`, a batch system's time limit) raises KeyboardInterrupt as Ctrl-C does, so
    that a run stops the same way: partial results kept, temporary files removed, one line. Yields a list that
    holds the signal's number once one came (the exit code is then 128 + it: 143, as a shell reports a
    terminated process). Outside the main thread: nothing changes."""
    received: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: signals cannot be handled here
        yield received
        return
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, previous)


def _is_flag(value: Any) -> bool:
    """True or False, Python's or NumPy's (`np.True_`: a flag read from an array is one)."""
    numpy = sys.modules.get("numpy")   # (not imported: the value is no NumPy scalar)
    return isinstance(value, bool) or (numpy is not None and isinstance(value, numpy.bool_))


#: item types of a list that `first_flag` passes without a closer look
_PLAIN_NUMBERS = frozenset((float, int))


def first_flag(values: Any) -> int | None:
    """Flat index of the first bool (Python's or NumPy's) among a vector's values — 0 for a bool array or a lone
    flag —, None when there is none: NumPy reads [True, 0.5] as [1.0, 0.5], so a flag would be taken as the number
    1. Lists and tuples (nested too) are scanned: for the paths that convert a value, not a float64 array's."""
    if isinstance(values, (list, tuple)):
        if {type(item) for item in values} <= _PLAIN_NUMBERS:   # (the common list of floats: one pass, no call
            return None                                         # per item)
        for k, item in enumerate(_flat_items(values)):
            if _is_flag(item) or getattr(getattr(item, "dtype", None), "kind", None) == "b":
                return k
        return None
    return 0 if _is_flag(values) or getattr(getattr(values, "dtype", None), "kind", None) == "b" else None


def _flat_items(values: list | tuple) -> Iterator[Any]:
    """The items of nested lists and tuples in NumPy's (row-major) order."""
    for item in values:
        if isinstance(item, (list, tuple)):
            yield from _flat_items(item)
        else:
            yield item


def _not_a_real_number(value: Any) -> bool:
    """Whether `value` is no real number however `float()` reads it: None, text, bytes, a flag (Python's or
    NumPy's: `float(np.True_)` is 1.0), a complex number, or a NumPy scalar or array whose dtype is none of the
    integer and float kinds — `float(np.array("0.01"))` reads text, `float(np.complex128(0.01 + 5j))` drops the
    imaginary part with a warning only."""
    if value is None or isinstance(value, (str, bytes, complex)) or _is_flag(value):
        return True
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, (numpy.ndarray, numpy.generic)) and value.dtype.kind not in "iuf"


def flag_argument(value: Any, name: str, *, optional: bool = False) -> bool | None:
    """`value` as a bool (Python's or NumPy's; None too when `optional`); ModelError naming the argument for
    anything else (text such as "no" is truthy: a flag given as text would silently mean True)."""
    if optional and value is None:
        return None
    if not _is_flag(value):
        raise ModelError(f"is not {'None, ' if optional else ''}True or False (got {value!r:.40})", argument=name,
                         expected="a bool")
    return bool(value)


def time_argument(t: Any, name: str = "t") -> float:
    """`t` as a finite float (a time in s); ModelError naming the argument for text, a bool, an array, None, NaN or
    ±inf (`float("1")` and `float(True)` would read text and a flag as a time)."""
    if _not_a_real_number(t):
        raise ModelError(f"is not one number (got {type(t).__name__})", argument=name, expected="a time in s")
    try:
        value = float(t)
    except (TypeError, ValueError):
        raise ModelError(f"is not one number (got {type(t).__name__})", argument=name,
                         expected="a time in s") from None
    if not math.isfinite(value):
        raise ModelError(f"is not finite ({value})", argument=name, expected="a finite time in s")
    return value


def number_argument(value: Any, name: str, *, entry: str | None = None, **checks: Any) -> float:
    """`value` as a finite float with `to_float`'s range `checks` (positive=, at_least=, below=, …); ModelError
    naming the argument — and `entry`, the joint or coordinate of a by-name value (`tau={"elbow": 0.3}`) — for
    what is no real number (`_not_a_real_number`: text, bytes, a flag, NumPy's too, a complex, None) and for a
    value outside the range (`float("0.01")` would read text as a number: a `simulate(model, "0.01")` ran, and
    `bridge.apply(tau={"elbow": "0.3"})` sent 0.3 N·m)."""
    where = "" if entry is None else f"{entry!r}: "
    if _not_a_real_number(value):
        raise ModelError(f"{where}not a number (got {type(value).__name__} {value!r:.40})", argument=name,
                         expected=checks.get("expected") or "a number")
    from biobullet.core.attributes import to_float   # (NumPy: not at the CLI's start-up)
    try:
        return to_float(None, name, value, **checks)
    except ModelError as exc:   # (to_float names an attribute of a file: here it is the caller's argument)
        raise ModelError(where + exc.detail, argument=name, expected=exc.expected) from None
