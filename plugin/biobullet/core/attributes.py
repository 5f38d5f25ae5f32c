"""THE parser of XML attributes (and of attribute-like mappings): validated numbers, vectors, names, choices.

Every element family (URDF links/joints, the `<biobullet>` block, joint functions, force elements, loops,
contact laws, flexible links, third-party plugins) reads its attributes through these helpers, so that every
bad value gives the same kind of message: a ModelError naming file, element and attribute, quoting the value
(control characters escaped, long values truncated — `errors.shown`) and saying what was expected.

Argument order, everywhere: ``(source, attributes, key, default, *, checks)``

* `source` — a SourceRef (or None for programmatic construction: the error then names only the attribute);
* `attributes` — a mapping of raw values (``element.attrib``, an ElementDescription's ``attributes``, or a dict
  of Python values);
* `key` — the attribute name; `default` — the value when absent (`REQUIRED`: absent is an error; None: absent
  gives None). An attribute that is present but blank (``iyy="  "``) is always an error, never the default.

Units are the caller's (SI throughout biobullet). Numbers are IEEE doubles and must be finite; integer
attributes are decimal integers of at most `MAX_INTEGER_DIGITS` digits.
"""
from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from biobullet.core.errors import ModelError, SourceRef, bare, did_you_mean, shown

#: sentinel default: the attribute must be present
REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()
#: longest accepted text of one number (a 400-digit literal is a typo or an attack, never a parameter)
MAX_NUMBER_LENGTH = 64
MAX_INTEGER_DIGITS = 18


def error(source: SourceRef | None, attribute: str | None, message: str, expected: str | None = None) -> ModelError:
    """A ModelError naming `attribute` (through `source` when one is given)."""
    if source is not None:
        return source.error(attribute, message, expected)
    return ModelError(message, attribute=attribute, expected=expected)


def source_of(file: str, element: ET.Element, key: str = "name") -> SourceRef:
    """A SourceRef like `<joint name="elbow">` (or `<inertial>` when the element has no identifying attribute)."""
    for attr in (key, "name", "joint", "link"):
        if attr in element.attrib:
            return SourceRef(file, f'<{element.tag} {attr}="{bare(element.attrib[attr], 60)}">')
    return SourceRef(file, f"<{element.tag}>")


def _attributes_of(attributes: Mapping[str, Any] | ET.Element | None) -> Mapping[str, Any]:
    if attributes is None:
        return {}
    if isinstance(attributes, ET.Element):
        return attributes.attrib
    return attributes


def _absent(raw: Any) -> bool:
    return raw is None or (isinstance(raw, str) and not raw.strip())


def _default_or_error(source: SourceRef | None, key: str, raw: Any, default: Any, expected: str) -> Any:
    """The value for an absent attribute: `default`, or an error when it is REQUIRED. An attribute that is
    present but blank (``iyy="  "``, ``xyz=""``) is an error too, never read as the default: a blank value is a
    slip (a deleted number, a template not filled in) that would otherwise silently become 0 or 1 0 0."""
    if default is REQUIRED:
        raise error(source, key, "missing required attribute", expected)
    if raw is not None:
        raise error(source, key, f"empty value {shown(raw)}", expected)
    return default


# ------------------------------------------------------------------------------------------------ scalars
#: a number as C's strtod reads it whole (PyBullet, Pinocchio, OpenSim): Python's float() also takes "1_000"
#: and non-ASCII digits ("１"), which those read as 1 and 0 — the same file would be two different models
PLAIN_NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*\Z", re.ASCII)


def to_float(source: SourceRef | None, key: str, raw: Any, *, positive: bool = False, non_negative: bool = False,
             at_least: float | None = None, at_most: float | None = None, above: float | None = None,
             below: float | None = None, expected: str | None = None) -> float:
    """One finite number from a raw value (text or number), with optional range checks."""
    expected = expected or _range_text(positive, non_negative, at_least, at_most, above, below)
    if isinstance(raw, bool):
        raise error(source, key, f"{raw!r} is not a number", expected)
    if isinstance(raw, str):
        text = raw.strip()
        if len(text) > MAX_NUMBER_LENGTH:
            raise error(source, key, f"number text is {len(text)} characters long: {shown(text, 24)}", expected)
    try:
        value = float(raw)
    except (TypeError, ValueError, OverflowError):
        raise error(source, key, f"not a number: {shown(raw)}", expected) from None
    if not math.isfinite(value):
        raise error(source, key, f"not finite: {shown(raw)}", expected)
    if isinstance(raw, str) and not PLAIN_NUMBER.match(raw):
        raise error(source, key, f"not a plain decimal number: {shown(raw)}", expected)
    if positive and not value > 0:
        raise error(source, key, f"must be positive, got {value:g}", expected)
    if non_negative and not value >= 0:
        raise error(source, key, f"must not be negative, got {value:g}", expected)
    if at_least is not None and value < at_least:
        raise error(source, key, f"must be at least {at_least:g}, got {value:g}", expected)
    if at_most is not None and value > at_most:
        raise error(source, key, f"must be at most {at_most:g}, got {value:g}", expected)
    if above is not None and not value > above:
        raise error(source, key, f"must be above {above:g}, got {value:g}", expected)
    if below is not None and not value < below:
        raise error(source, key, f"must be below {below:g}, got {value:g}", expected)
    return value


def _range_text(positive: bool, non_negative: bool, at_least: float | None, at_most: float | None,
                above: float | None, below: float | None) -> str:
    low = ("(0" if positive else "[0" if non_negative else f"[{at_least:g}" if at_least is not None
           else f"({above:g}" if above is not None else None)
    high = f"{at_most:g}]" if at_most is not None else f"{below:g})" if below is not None else None
    if low and high:
        return f"a finite number in {low}, {high}"
    if positive:
        return "a positive finite number (> 0)"
    if non_negative:
        return "a non-negative finite number (≥ 0)"
    if low:
        return "a finite number " + {"(": "> ", "[": "≥ "}[low[0]] + low[1:]
    if high:
        return "a finite number " + {"]": "≤ ", ")": "< "}[high[-1]] + high[:-1]
    return "a finite decimal number"


def number(source: SourceRef | None, attributes: Mapping[str, Any] | ET.Element | None, key: str,
           default: Any = REQUIRED, **checks: Any) -> Any:
    """A finite number from attribute `key` (`default` when absent; see `to_float` for the checks)."""
    raw = _attributes_of(attributes).get(key)
    if _absent(raw):
        value = _default_or_error(source, key, raw, default, checks.get("expected") or "a finite number")
        return None if value is None else float(value)
    return to_float(source, key, raw, **checks)


def integer(source: SourceRef | None, attributes: Mapping[str, Any] | ET.Element | None, key: str,
            default: Any = REQUIRED, *, at_least: int | None = None, at_most: int | None = None) -> Any:
    """A decimal integer (no sign tricks, no exponent, at most MAX_INTEGER_DIGITS digits) within the range."""
    bounds = [f"≥ {at_least}" if at_least is not None else "", f"≤ {at_most}" if at_most is not None else ""]
    expected = "an integer" + (" " + " and ".join(b for b in bounds if b) if any(bounds) else "")
    raw = _attributes_of(attributes).get(key)
    if _absent(raw):
        return _default_or_error(source, key, raw, default, expected)
    if isinstance(raw, bool):
        raise error(source, key, f"{raw!r} is not an integer", expected)
    if isinstance(raw, (int, np.integer)):
        value = int(raw)
    else:
        text = str(raw).strip()
        digits = text[1:] if text[:1] in "+-" else text
        if not digits.isdigit() or not digits.isascii() or len(digits) > MAX_INTEGER_DIGITS:
            raise error(source, key, f"not an integer: {shown(raw)}", expected)
        value = int(text)
    if (at_least is not None and value < at_least) or (at_most is not None and value > at_most):
        raise error(source, key, f"got {value}", expected)
    return value


def boolean(source: SourceRef | None, attributes: Mapping[str, Any] | ET.Element | None, key: str,
            default: bool = False) -> bool:
    """'true'/'false'/'1'/'0'/'yes'/'no' (case-insensitive) or a Python bool."""
    raw = _attributes_of(attributes).get(key)
    if raw is None:
        return default
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise error(source, key, f"not a boolean: {shown(raw)}", "true or false")


def choice(source: SourceRef | None, attributes: Mapping[str, Any] | ET.Element | None, key: str,
           choices: Iterable[str], default: Any = REQUIRED, *, what: str = "value") -> Any:
    """One of `choices` (an enumeration attribute)."""
    options = tuple(choices)
    expected = "one of: " + ", ".join(options)
    raw = _attributes_of(attributes).get(key)
    if _absent(raw):
        return _default_or_error(source, key, raw, default, expected)
    text = str(raw).strip()
    if text not in options:
        raise error(source, key, f"unknown {what} {shown(raw)}", expected)
    return text


def text(source: SourceRef | None, attributes: Mapping[str, Any] | ET.Element | None, key: str,
         default: Any = REQUIRED, *, expected: str = "a non-empty value") -> Any:
    """A non-empty string attribute, stripped."""
    raw = _attributes_of(attributes).get(key)
    if _absent(raw):
        return _default_or_error(source, key, raw, default, expected)
    return str(raw).strip()


def name(source: SourceRef | None, attributes: Mapping[str, Any] | ET.Element | None, key: str,
         known: Iterable[str] | None = None, default: Any = REQUIRED, *, kind: str = "name") -> Any:
    """A name (stripped, non-empty); with `known`, it must be one of them (e.g. the model's link names)."""
    value = text(source, attributes, key, default, expected=f"a {kind}")
    if value is default and default is not REQUIRED:
        return value
    if known is not None:
        options = list(known)
        if value not in options:
            listed = ", ".join(shown(o, 40) for o in options[:20]) + (" …" if len(options) > 20 else "")
            raise error(source, key, f"unknown {kind} {shown(value)}{did_you_mean(value, options)}", f"one of {listed}" if options else
                        f"a {kind} defined in this file")
    return value


def required(source: SourceRef, element: ET.Element | Mapping[str, Any], attribute: str) -> str:
    """A required non-empty attribute's text, stripped."""
    return text(source, element, attribute)


# ------------------------------------------------------------------------------------------------ vectors
def to_floats(source: SourceRef | None, key: str, raw: Any, count: int | None = None, *, min_count: int = 0,
              max_count: int | None = None, **checks: Any) -> tuple[float, ...]:
    """Space-separated finite numbers; a bad component is reported with its position."""
    if count is not None:
        expected = f"{count} space-separated finite number{'s' if count != 1 else ''}"
    else:
        expected = f"at least {min_count} space-separated finite number(s)" if min_count else \
            "space-separated finite numbers"
    if isinstance(raw, str):
        if not raw.isascii():   # (str.split also splits at no-break and other Unicode spaces; strtod does not)
            raise error(source, key, f"not plain ASCII numbers: {shown(raw)}", expected)
        parts: list[Any] = raw.split()
    elif isinstance(raw, Iterable):
        parts = list(raw)
    else:
        parts = [raw]
    if count is not None and len(parts) != count:
        raise error(source, key, f"has {len(parts)} numbers: {shown(raw)}", expected)
    if len(parts) < min_count or (max_count is not None and len(parts) > max_count):
        raise error(source, key, f"has {len(parts)} numbers: {shown(raw)}", expected +
                    (f" (at most {max_count})" if max_count is not None else ""))
    values = []
    for position, part in enumerate(parts, start=1):
        try:
            value = float(part) if not isinstance(part, bool) and len(str(part)) <= MAX_NUMBER_LENGTH else None
        except (TypeError, ValueError, OverflowError):
            value = None
        if value is None:
            raise error(source, key, f"component {position} is not a number: {shown(raw)}", expected)
        if not math.isfinite(value):
            raise error(source, key, f"component {position} is not finite: {shown(raw)}", expected)
        if isinstance(part, str) and not PLAIN_NUMBER.match(part):
            raise error(source, key, f"component {position} is not a plain decimal number: {shown(raw)}", expected)
        if checks:
            try:
                value = to_float(None, key, value, **checks)
            except ModelError as exc:
                raise error(source, key, f"component {position}: {exc.detail}", exc.expected) from None
        values.append(value)
    return tuple(values)


def floats(source: SourceRef | None, attributes: Mapping[str, Any] | ET.Element | None, key: str,
           default: Any = REQUIRED, *, count: int | None = None, min_count: int = 1, max_count: int | None = None,
           **checks: Any) -> Any:
    """A float array from a space-separated attribute (`default` when absent)."""
    raw = _attributes_of(attributes).get(key)
    if _absent(raw):
        return _default_or_error(source, key, raw, default,
                                 f"{count} space-separated finite number(s)" if count is not None else
                                 f"at least {min_count} space-separated finite number(s)")
    return np.array(to_floats(source, key, raw, count, min_count=min_count, max_count=max_count, **checks))


def vector3(source: SourceRef | None, attributes: Mapping[str, Any] | ET.Element | None, key: str,
            default: Any = (0.0, 0.0, 0.0), *, unit: bool = False) -> np.ndarray:
    """A 3-vector (read-only float array); absent → `default` (REQUIRED: an error). `unit`: normalised, the zero
    vector refused."""
    raw = _attributes_of(attributes).get(key)
    if _absent(raw):
        raw = _default_or_error(source, key, raw, default, "3 space-separated finite numbers")
    vec = np.array(to_floats(source, key, raw, 3), dtype=float)
    if unit:
        norm = math.hypot(*vec)   # (scaled: np.linalg.norm of '0 0 1e308' overflowed, refused as a zero vector)
        if not norm > 1e-12 or not math.isfinite(norm):
            raise error(source, key, f"zero vector {shown(raw)}", "a non-zero direction")
        vec = vec / norm
    vec.setflags(write=False)
    return vec


# ------------------------------------------------------------------------- URDF-style (tuples out)
def optional_vec3(source: SourceRef, element: ET.Element | Mapping[str, Any] | None, attribute: str,
                  default: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> tuple[float, float, float]:
    x, y, z = (float(v) for v in vector3(source, element, attribute, default))
    return (x, y, z)


# ------------------------------------------------------------------------------------------------ checks
def check_known_attributes(source: SourceRef | None, attributes: Mapping[str, Any] | ET.Element | None,
                           allowed: Iterable[str]) -> None:
    """Reject attributes the element does not understand (a typo would otherwise be silently ignored)."""
    listed = sorted(allowed) if isinstance(allowed, (set, frozenset)) else list(dict.fromkeys(allowed))
    accepted = set(listed)
    for key in _attributes_of(attributes):
        if key not in accepted:
            raise error(source, key, f"unknown attribute{did_you_mean(key, listed)}", "one of " + ", ".join(listed))


def check_count(source: SourceRef | None, key: str, items: list[str] | tuple[str, ...], *,
                exactly: int | None = None, at_least: int | None = None, what: str = "input joint name(s)") -> None:
    """The number of names in a list attribute (and that none is repeated)."""
    n = len(items)
    if exactly is not None and n != exactly:
        listed = " ".join(items[:10]) or "none"
        raise error(source, key, f"got {n} ({shown(listed)})", f"exactly {exactly} {what}")
    if at_least is not None and n < at_least:
        raise error(source, key, f"got {n}", f"at least {at_least} {what}")
    seen: set[str] = set()
    for item in items:
        if item in seen:
            raise error(source, key, f"{shown(item)} is listed twice", f"distinct {what}")
        seen.add(item)


__all__ = ["REQUIRED", "error", "source_of", "to_float", "number", "integer", "boolean", "choice", "text", "name",
           "required", "to_floats", "floats", "vector3", "optional_vec3", "check_known_attributes", "check_count"]
