"""Registry of sweep point functions, resolved lazily and safely.

A config names a point function either by registered name (``"demo.damped_oscillator"``) or by a
``"module:callable"`` path inside the ``biobullet`` package. Nothing outside the registry and the
``biobullet.*`` namespace is ever imported because a config said so (configs come from strangers), and the
callable must carry a :func:`~biobullet.sweep.schema.point_function` mark.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from biobullet.sweep.schema import PointSpec

ENTRY_POINT_GROUP = "biobullet.sweep_functions"

#: name -> "module:callable" built into the library (the studies' point functions arrive through the entry-point
#: group; code may add more with :func:`register_point_function`).
_BUILTIN: dict[str, str] = {
    "demo.damped_oscillator": "biobullet.sweep.demo:damped_oscillator",
    "demo.sleep": "biobullet.sweep.demo:sleep",
    "demo.busy": "biobullet.sweep.demo:busy",
}
_REGISTERED: dict[str, str] = {}

_MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_ATTR_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class ResolveError(Exception):
    """A point-function reference cannot be resolved; ``expected`` says what would have been accepted."""

    def __init__(self, message: str, expected: str) -> None:
        super().__init__(message)
        self.expected = expected


@dataclass(frozen=True)
class ResolvedFunction:
    """A resolved point function: its config name, import target and declared schema."""

    name: str
    target: str
    spec: PointSpec


def register_point_function(name: str, target: str) -> None:
    """Register ``name`` -> ``"module:callable"`` (code-side, trusted; e.g. the prosthesis study)."""
    if ":" not in target:
        raise ValueError(f"target must be 'module:callable', got {target!r}")
    _REGISTERED[name] = target


def _entry_points() -> dict[str, str]:
    from importlib.metadata import entry_points
    try:
        return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    except Exception:  # noqa: BLE001  (broken metadata of some other package must not break sweeps)
        return {}


def registered_names() -> list[str]:
    """Every name a config may use in ``"function"``."""
    return sorted({**_entry_points(), **_BUILTIN, **_REGISTERED})


def load_target(target: str) -> Callable:
    """Import ``"module:callable"`` (only called for targets already vetted by :func:`resolve`)."""
    module_name, _, attr = target.partition(":")
    obj = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj  # type: ignore[return-value]


def _inside_biobullet(module_name: str) -> bool:
    """True if ``module_name`` is ``biobullet`` or a module whose file lies inside the biobullet package."""
    if module_name != "biobullet" and not module_name.startswith("biobullet."):
        return False
    package_dir = Path(__file__).resolve().parents[1]
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        return False
    if spec is None or spec.origin is None:
        return False
    try:
        Path(spec.origin).resolve().relative_to(package_dir)
    except ValueError:
        return False
    return True


def resolve(reference: str) -> ResolvedFunction:
    """Resolve a config's ``"function"`` value to a point function, raising :class:`ResolveError`."""
    names = registered_names()
    table = {**_entry_points(), **_BUILTIN, **_REGISTERED}
    hint = "a registered point function (" + ", ".join(names) + ") or 'biobullet.<module>:<function>'"
    if reference in table:
        target = table[reference]
    elif ":" in reference:
        module_name, _, attr = reference.partition(":")
        if not _MODULE_RE.match(module_name) or not _ATTR_RE.match(attr):
            raise ResolveError(f"malformed function path {reference!r}", hint)
        if not _inside_biobullet(module_name):
            raise ResolveError(f"refusing to import {module_name!r}: only registered point functions and "
                               f"modules of the biobullet package may be named in a config", hint)
        target = reference
    else:
        raise ResolveError(f"unknown point function {reference!r}", hint)
    try:
        fn = load_target(target)
    except (ImportError, AttributeError) as exc:
        raise ResolveError(f"cannot load point function {reference!r} ({target}): {exc}", hint) from None
    spec = getattr(fn, "sweep_spec", None)
    if not callable(fn) or not isinstance(spec, PointSpec):
        raise ResolveError(f"{reference!r} is not a sweep point function (not marked with @point_function)",
                           hint)
    return ResolvedFunction(name=reference, target=target, spec=spec)
