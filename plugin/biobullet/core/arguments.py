"""Command-line argument types shared by `biobullet` and `biobullet sweep` (standard library only)."""
from __future__ import annotations

import argparse
import math
from typing import Callable, TypeVar

T = TypeVar("T", int, float)


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


def seed(text: str) -> int:
    """A random seed: a non-negative integer below 2**32 (NumPy's limit)."""
    return _checked(text, int, "an integer", lambda value: 0 <= value < 2 ** 32, "in 0 … 4294967295")
