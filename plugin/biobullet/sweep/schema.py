"""Parameter schemas of sweep point functions: which paths a point function accepts, their types and ranges."""
from __future__ import annotations

import math

from biobullet.core.errors import shown
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

KINDS = ("float", "int")


@dataclass(frozen=True)
class Param:
    """One parameter a point function accepts (addressed by its dotted path, e.g. ``damper.stiffness``).

    ``kind`` is ``"float"`` or ``"int"``; ``minimum``/``maximum`` are inclusive bounds (None: unbounded);
    ``default`` None means the parameter is required (fixed or swept in every config), unless ``optional``:
    then it is simply absent from the point's parameters when a config does not give it.
    """

    kind: str = "float"
    minimum: float | None = None
    maximum: float | None = None
    default: float | None = None
    doc: str = ""
    unit: str = ""
    optional: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Param kind must be one of {KINDS}, got {self.kind!r}")
        if self.default is not None and self.check(self.default):
            raise ValueError(f"invalid default {self.default!r}: {self.check(self.default)}")

    @property
    def required(self) -> bool:
        return self.default is None and not self.optional

    def expected(self) -> str:
        """Human-readable description of the accepted values (used in error messages)."""
        noun = "a finite number" if self.kind == "float" else "an integer"
        if self.minimum is not None and self.maximum is not None:
            return f"{noun} in [{self.minimum:g}, {self.maximum:g}]"
        if self.minimum is not None:
            return f"{noun} ≥ {self.minimum:g}"
        if self.maximum is not None:
            return f"{noun} ≤ {self.maximum:g}"
        return noun

    def check(self, value: Any) -> str | None:
        """None if ``value`` is acceptable, else a short description of what is wrong."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"not a number: {shown(value)}"
        if isinstance(value, int) and abs(value) > 2 ** 53:  # 400-digit integers: not a float, not a parameter
            return f"integer with {len(str(abs(value)))} digits is too large"
        if not math.isfinite(value):
            return f"not finite: {value!r}"
        if self.kind == "int" and float(value) != int(value):
            return f"not an integer: {value!r}"
        if self.minimum is not None and value < self.minimum:
            return f"{value!r} is below the minimum {self.minimum:g}"
        if self.maximum is not None and value > self.maximum:
            return f"{value!r} is above the maximum {self.maximum:g}"
        return None

    def normalize(self, value: float) -> float | int:
        """The canonical Python value (int for ``int`` params, float otherwise): keeps point ids stable."""
        return int(value) if self.kind == "int" else float(value)


@dataclass(frozen=True)
class PointSpec:
    """What a point function declares: its parameters (by path) and the results it returns."""

    name: str
    params: Mapping[str, Param]
    results: tuple[str, ...] = ()
    doc: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


def point_function(*, params: Mapping[str, Param], results: tuple[str, ...] = (), name: str = "",
                   doc: str = "") -> Callable[[Callable], Callable]:
    """Mark ``fn(params: dict[str, float]) -> dict[str, Any]`` as a sweep point function with its schema.

    Only functions carrying this mark can be named by a sweep config.
    """
    def mark(fn: Callable) -> Callable:
        spec = PointSpec(name=name or f"{fn.__module__}:{fn.__qualname__}", params=dict(params),
                         results=tuple(results), doc=doc or (fn.__doc__ or "").strip().split("\n")[0])
        fn.sweep_spec = spec  # type: ignore[attr-defined]
        return fn
    return mark
