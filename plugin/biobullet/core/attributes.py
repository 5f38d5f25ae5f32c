"""Reading XML attributes into validated numbers, with errors that name file, element and attribute."""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from biobullet.core.errors import ModelError, SourceRef


def source_of(file: str, element: ET.Element, key: str = "name") -> SourceRef:
    """A SourceRef like `<joint name="elbow">` (or `<inertial>` when the element has no identifying attribute)."""
    for attr in (key, "name", "joint", "link"):
        if attr in element.attrib:
            return SourceRef(file, f'<{element.tag} {attr}="{element.attrib[attr]}">')
    return SourceRef(file, f"<{element.tag}>")


def required(source: SourceRef, element: ET.Element, attribute: str) -> str:
    value = element.attrib.get(attribute)
    if value is None or not value.strip():
        raise source.error(attribute, "missing required attribute")
    return value.strip()


def parse_float(source: SourceRef, attribute: str, text: str, *, positive: bool = False,
                non_negative: bool = False) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise source.error(attribute, f"not a number: {text!r}", "a finite decimal number") from None
    if not math.isfinite(value):
        raise source.error(attribute, f"not finite: {text!r}", "a finite decimal number")
    if positive and value <= 0:
        raise source.error(attribute, f"must be positive, got {value:g}", "a value > 0")
    if non_negative and value < 0:
        raise source.error(attribute, f"must not be negative, got {value:g}", "a value ≥ 0")
    return value


def parse_floats(source: SourceRef, attribute: str, text: str, count: int | None = None) -> tuple[float, ...]:
    """Space-separated numbers; a bad component is reported with its position and the whole text."""
    parts = text.split()
    expected = f"{count} space-separated finite numbers" if count is not None else "space-separated finite numbers"
    if count is not None and len(parts) != count:
        raise source.error(attribute, f"has {len(parts)} numbers: {text!r}", expected)
    values = []
    for position, part in enumerate(parts, start=1):
        try:
            value = float(part)
        except ValueError:
            raise source.error(attribute, f"component {position} is not a number: {text!r}", expected) from None
        if not math.isfinite(value):
            raise source.error(attribute, f"component {position} is not finite: {text!r}", expected)
        values.append(value)
    return tuple(values)


def optional_float(source: SourceRef, element: ET.Element, attribute: str, default: float | None = None,
                   **checks: bool) -> float | None:
    text = element.attrib.get(attribute)
    if text is None:
        return default
    return parse_float(source, attribute, text, **checks)


def optional_vec3(source: SourceRef, element: ET.Element | None, attribute: str,
                  default: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> tuple[float, float, float]:
    if element is None or attribute not in element.attrib:
        return default
    x, y, z = parse_floats(source, attribute, element.attrib[attribute], 3)
    return (x, y, z)


def check_known_attributes(source: SourceRef, element: ET.Element, allowed: set[str] | tuple[str, ...]) -> None:
    for key in element.attrib:
        if key not in allowed:
            raise ModelError("unknown attribute", file=source.file, element=source.element, attribute=key,
                             expected="one of " + ", ".join(sorted(allowed)))
