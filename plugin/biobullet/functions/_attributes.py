"""Shared attribute validation for the built-in joint functions.

Every helper raises `source.error(attribute, message, expected)` (a ModelError naming file, element and
attribute) on bad input, so a plugin never lets a bare ValueError/IndexError escape.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from biobullet.core.errors import SourceRef

#: attributes every <joint_function> element may carry, whatever its type
COMMON_ATTRIBUTES: tuple[str, ...] = ("joint", "type", "inputs")


def check_known(attributes: Mapping[str, str], accepted: Sequence[str], source: SourceRef) -> None:
    """Reject attributes the type does not understand (typos would otherwise be silently ignored)."""
    allowed = tuple(COMMON_ATTRIBUTES) + tuple(accepted)
    for name in attributes:
        if name not in allowed:
            raise source.error(name, f"unknown attribute '{name}'",
                               "one of: " + ", ".join(allowed))


def check_input_count(inputs: Sequence[str], source: SourceRef, *, exactly: int | None = None,
                      at_least: int | None = None) -> None:
    """Validate the number of input coordinates and that none is repeated."""
    n = len(inputs)
    if exactly is not None and n != exactly:
        raise source.error("inputs", f"got {n} input(s) ({' '.join(inputs) or 'none'})",
                           f"exactly {exactly} input joint name(s)")
    if at_least is not None and n < at_least:
        raise source.error("inputs", f"got {n} input(s)", f"at least {at_least} input joint name(s)")
    seen: set[str] = set()
    for name in inputs:
        if name in seen:
            raise source.error("inputs", f"input '{name}' is listed twice", "distinct joint names")
        seen.add(name)


def _to_float(token: str, name: str, source: SourceRef) -> float:
    try:
        value = float(token)
    except ValueError:
        raise source.error(name, f"'{token}' is not a number", "finite real numbers") from None
    if not math.isfinite(value):
        raise source.error(name, f"'{token}' is not finite", "finite real numbers")
    return value


def parse_floats(attributes: Mapping[str, str], name: str, source: SourceRef, *,
                 count: int | None = None, min_count: int = 1, required: bool = True) -> np.ndarray | None:
    """Parse a whitespace-separated list of finite numbers; None if optional and absent."""
    text = attributes.get(name)
    if text is None:
        if required:
            raise source.error(name, "missing attribute", _count_text(count, min_count))
        return None
    tokens = str(text).split()
    values = np.array([_to_float(tok, name, source) for tok in tokens], dtype=float)
    if count is not None and len(values) != count:
        raise source.error(name, f"got {len(values)} number(s)", _count_text(count, min_count))
    if len(values) < min_count:
        raise source.error(name, f"got {len(values)} number(s)", _count_text(count, min_count))
    return values


def parse_float(attributes: Mapping[str, str], name: str, source: SourceRef, *,
                default: float | None = None) -> float:
    """Parse one finite number; `default` if absent (a missing attribute is an error if default is None)."""
    text = attributes.get(name)
    if text is None:
        if default is None:
            raise source.error(name, "missing attribute", "one finite number")
        return float(default)
    tokens = str(text).split()
    if len(tokens) != 1:
        raise source.error(name, f"got {len(tokens)} value(s)", "one finite number")
    return _to_float(tokens[0], name, source)


def _count_text(count: int | None, min_count: int) -> str:
    if count is not None:
        return f"{count} space-separated finite number(s)"
    return f"at least {min_count} space-separated finite number(s)"
