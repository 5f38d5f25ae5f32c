"""Sweep configuration: load (JSON or TOML), validate completely, expand into points with stable ids.

Format (JSON; TOML with the same keys)::

    {
      "function": "demo.damped_oscillator",          # registered name or "biobullet.<module>:<function>"
      "fixed": {"mass": 2.0},                          # parameter path -> number
      "sweep": [                                       # swept parameters (one axis each)
        {"path": "stiffness", "values": [1, 4, 9]},
        {"path": "damping", "start": 0.01, "stop": 1.0, "num": 5, "log": true}
      ],
      "combine": "product",                            # or "zip" (all axes the same length)
      "out": "out/oscillator",                         # relative to (and confined to) the config file's folder
      "retries": 2                                     # dask retries per point (optional)
    }

Every mistake raises :class:`~biobullet.core.errors.ModelError` naming the config file and the key path
(``sweep[1].num``) before any work starts.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from biobullet.core.errors import ModelError, shown
from biobullet.sweep.registry import ResolvedFunction, ResolveError, resolve
from biobullet.sweep.schema import Param

TOP_KEYS = ("function", "fixed", "sweep", "combine", "out", "retries", "name", "description")
AXIS_KEYS = ("path", "values", "start", "stop", "num", "log")
MAX_POINTS = 1_000_000
#: largest sweep config file read (bytes)
MAX_CONFIG_BYTES = 1_000_000
#: a sweep name: one plain path component (it names the default output folder)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass(frozen=True)
class Axis:
    """One swept parameter and its values (already validated and normalized)."""

    path: str
    values: tuple[float | int, ...]
    log: bool = False


@dataclass(frozen=True)
class Point:
    """One point of a sweep: every parameter of the point function, and a stable id (hash of them)."""

    id: str
    params: Mapping[str, float | int]
    index: int


@dataclass(frozen=True)
class SweepConfig:
    """A validated sweep: the point function, fixed parameters, axes and how they combine."""

    source: str
    function: ResolvedFunction
    fixed: Mapping[str, float | int]
    axes: tuple[Axis, ...]
    combine: str
    out: Path | None
    retries: int
    name: str

    @property
    def swept_paths(self) -> list[str]:
        return [axis.path for axis in self.axes]

    def points(self) -> list[Point]:
        """Every point in order (product: last axis fastest; zip: element-wise)."""
        spec = self.function.spec.params
        base = {path: param.normalize(param.default) for path, param in spec.items() if param.default is not None}
        base.update(self.fixed)
        combos = (itertools.product(*(a.values for a in self.axes)) if self.combine == "product"
                  else zip(*(a.values for a in self.axes)))
        points = []
        for index, combo in enumerate(combos if self.axes else [()]):
            params = dict(base)
            params.update(zip(self.swept_paths, combo))
            points.append(Point(id=point_id(self.function.target, params), params=params, index=index))
        return points


def point_id(target: str, params: Mapping[str, Any]) -> str:
    """Stable id of a point: a hash of the point function and every parameter value (sorted, canonical JSON)."""
    canonical = json.dumps({"function": target, "params": dict(sorted(params.items()))},
                           sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------------------------ loading
def load_config(config: str | Path | Mapping[str, Any]) -> SweepConfig:
    """Read and validate a sweep config (path to .json/.toml, or an already-parsed mapping)."""
    if isinstance(config, Mapping):
        return _validate(dict(config), source="<config>", base_dir=Path.cwd())
    path = Path(config)
    source = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ModelError(f"sweep config is {size} bytes; the limit is {MAX_CONFIG_BYTES}", file=source)
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ModelError(f"cannot read sweep config: {exc.strerror or exc}", file=source) from None
    except UnicodeDecodeError as exc:
        raise ModelError(f"sweep config is not UTF-8 text (byte {exc.start})", file=source,
                         expected="a UTF-8 JSON or TOML file") from None
    if path.suffix.lower() == ".toml":
        import tomllib
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ModelError(f"invalid TOML: {exc}", file=source) from None
        except (RecursionError, ValueError, MemoryError):
            raise ModelError("TOML nested too deeply or with out-of-range numbers", file=source) from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ModelError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
                             file=source) from None
        except (RecursionError, ValueError, MemoryError):  # 100,000 nested brackets; a 5000-digit integer
            raise ModelError("JSON nested too deeply or with out-of-range numbers", file=source,
                             expected="a flat sweep config") from None
    if not isinstance(data, dict):
        raise ModelError("the top level must be an object (a table)", file=source, element="<top level>",
                         expected='{"function": ..., "sweep": [...]}')
    return _validate(data, source=source, base_dir=path.resolve().parent)


def _validate(data: dict[str, Any], *, source: str, base_dir: Path) -> SweepConfig:
    def fail(key: str, message: str, expected: str | None = None) -> ModelError:
        return ModelError(message, file=source, element=key, expected=expected)

    for key in data:
        if key not in TOP_KEYS:
            raise fail(str(key), "unknown key", "one of " + ", ".join(TOP_KEYS))
    if "function" not in data:
        raise fail("function", "missing", "the name of a point function, e.g. 'demo.damped_oscillator'")
    reference = data["function"]
    if not isinstance(reference, str) or not reference:
        raise fail("function", f"not a name: {reference!r}", "a string")
    try:
        function = resolve(reference)
    except ResolveError as exc:
        raise fail("function", str(exc), exc.expected) from None
    schema = function.spec.params
    allowed = "one of " + ", ".join(sorted(schema)) + f" (parameters of {reference})"

    fixed_raw = data.get("fixed", {})
    if not isinstance(fixed_raw, dict):
        raise fail("fixed", f"not an object: {fixed_raw!r}", "an object mapping parameter path -> number")
    fixed: dict[str, float | int] = {}
    for path, value in fixed_raw.items():
        key = f"fixed.{path}"
        if path not in schema:
            raise fail(key, f"unknown parameter path {path!r}", allowed)
        fixed[path] = _checked(schema[path], value, key, fail)

    axes_raw = data.get("sweep", [])
    if isinstance(axes_raw, dict):  # a single axis written as an object
        axes_raw = [axes_raw]
    if not isinstance(axes_raw, list):
        raise fail("sweep", f"not a list: {axes_raw!r}", "a list of {path, values | start/stop/num}")
    axes = []
    seen: set[str] = set()
    for i, axis_raw in enumerate(axes_raw):
        axis = _axis(axis_raw, f"sweep[{i}]", schema, allowed, fail)
        if axis.path in seen:
            raise fail(f"sweep[{i}].path", f"{axis.path!r} is swept twice", "each path in one axis only")
        if axis.path in fixed:
            raise fail(f"sweep[{i}].path", f"{axis.path!r} is both fixed and swept", "either fixed or swept")
        seen.add(axis.path)
        axes.append(axis)

    missing = [p for p, param in schema.items() if param.required and p not in fixed and p not in seen]
    if missing:
        raise fail("fixed", f"required parameter(s) not given: {', '.join(missing)}",
                   "every required parameter either fixed or swept")

    combine = data.get("combine", "product")
    if combine not in ("product", "zip"):
        raise fail("combine", f"unknown combination {combine!r}", "'product' or 'zip'")
    if combine == "zip" and len({len(a.values) for a in axes}) > 1:
        lengths = ", ".join(f"{a.path}: {len(a.values)}" for a in axes)
        raise fail("sweep", f"zip needs axes of equal length ({lengths})", "the same number of values per axis")
    total = math.prod(len(a.values) for a in axes) if combine == "product" else len(axes[0].values) if axes else 1
    if total > MAX_POINTS:
        raise fail("sweep", f"{total} points is too many", f"at most {MAX_POINTS}")

    out = data.get("out")
    if out is not None:
        out = confined(base_dir, out, "out", fail)
    retries = data.get("retries", 2)
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
        raise fail("retries", f"invalid value {retries!r}", "an integer in [0, 10]")
    default_name = Path(source).stem if source != "<config>" else "sweep"
    name = data.get("name", default_name if _NAME.fullmatch(default_name) else "sweep")
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise fail("name", f"not a plain name: {shown(name)}",
                   "letters, digits, '.', '_' or '-' (it names the output folder; no paths)")
    return SweepConfig(source=source, function=function, fixed=fixed, axes=tuple(axes), combine=combine,
                       out=out, retries=retries, name=name)


def confined(root: Path, value: Any, key: str, fail) -> Path:
    """`root / value` for a relative path `value` that stays inside `root`: absolute paths, '..' components,
    control characters and symbolic links leading out of `root` are refused (a config from a stranger must not
    write anywhere else)."""
    expected = "a relative folder path inside " + str(root)[:200] + " (no '..', not absolute)"
    if not isinstance(value, str) or not value.strip():
        raise fail(key, f"not a folder path: {shown(value)}", expected)
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value) or len(value) > 1000:
        raise fail(key, f"not a usable folder path: {shown(value)}", expected)
    relative = Path(value)
    if relative.is_absolute() or relative.drive or ".." in relative.parts or value.startswith("~"):
        raise fail(key, f"{shown(value)} leaves the output folder", expected)
    target = root / relative
    try:
        inside = target.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        inside = False
    if not inside:
        raise fail(key, f"{shown(value)} leads outside {shown(str(root), 200)} (symbolic link?)", expected)
    return target


def _checked(param: Param, value: Any, key: str, fail) -> float | int:
    problem = param.check(value)
    if problem:
        raise fail(key, problem, param.expected())
    return param.normalize(value)


def _axis(raw: Any, key: str, schema: Mapping[str, Param], allowed: str, fail) -> Axis:
    if not isinstance(raw, dict):
        raise fail(key, f"not an object: {raw!r}", '{"path": ..., "values": [...]} or {"path", "start", "stop", "num"}')
    for k in raw:
        if k not in AXIS_KEYS:
            raise fail(f"{key}.{k}", "unknown key", "one of " + ", ".join(AXIS_KEYS))
    path = raw.get("path")
    if not isinstance(path, str):
        raise fail(f"{key}.path", "missing or not a string", allowed)
    if path not in schema:
        raise fail(f"{key}.path", f"unknown parameter path {path!r}", allowed)
    param = schema[path]
    log = raw.get("log", False)
    if not isinstance(log, bool):
        raise fail(f"{key}.log", f"not a boolean: {log!r}", "true or false")
    has_values = "values" in raw
    has_range = any(k in raw for k in ("start", "stop", "num"))
    if has_values == has_range:
        raise fail(key, "give either 'values' or 'start'/'stop'/'num'", "exactly one of the two forms")
    if has_values:
        values = raw["values"]
        if not isinstance(values, list):
            raise fail(f"{key}.values", f"not a list: {values!r}", "a non-empty list of numbers")
        if not values:
            raise fail(f"{key}.values", "empty range (no values)", "a non-empty list of numbers")
        if len(values) > MAX_POINTS:
            raise fail(f"{key}.values", f"{len(values)} values is too many", f"at most {MAX_POINTS}")
        out = [_checked(param, v, f"{key}.values[{j}]", fail) for j, v in enumerate(values)]
    else:
        for k in ("start", "stop", "num"):
            if k not in raw:
                raise fail(f"{key}.{k}", "missing", "start, stop and num together")
        num = raw["num"]
        if isinstance(num, bool) or not isinstance(num, int):
            raise fail(f"{key}.num", f"not an integer: {num!r}", "an integer ≥ 1")
        if num < 1:
            raise fail(f"{key}.num", f"empty range (num = {num})", "an integer ≥ 1")
        if num > MAX_POINTS:
            raise fail(f"{key}.num", f"{shown(num, 40)} points is too many", f"at most {MAX_POINTS}")
        start = _checked(param, raw["start"], f"{key}.start", fail)
        stop = _checked(param, raw["stop"], f"{key}.stop", fail)
        if log and (start <= 0 or stop <= 0):
            raise fail(f"{key}.start" if start <= 0 else f"{key}.stop", "a log range needs positive ends",
                       "start > 0 and stop > 0")
        if num > 1 and start == stop:
            raise fail(key, f"empty range (start = stop = {start!r} with num = {num})", "start ≠ stop")
        out = _range(float(start), float(stop), num, log)
        if param.kind == "int":
            rounded = [round(v) for v in out]
            if any(abs(r - v) > 1e-9 * max(1.0, abs(v)) for r, v in zip(rounded, out)):
                raise fail(key, "range of an integer parameter does not give integers", "integral steps")
            out = rounded
        out = [param.normalize(v) for v in out]
    if len(set(out)) != len(out):
        raise fail(key, "repeated values", "distinct values")
    return Axis(path=path, values=tuple(out), log=log)


def _range(start: float, stop: float, num: int, log: bool) -> list[float]:
    """``num`` values from start to stop inclusive, evenly (or log-evenly) spaced; ends exact."""
    if num == 1:
        return [start]
    if log:
        a, b = math.log(start), math.log(stop)
        values = [math.exp(a + (b - a) * i / (num - 1)) for i in range(num)]
    else:
        values = [start + (stop - start) * i / (num - 1) for i in range(num)]
    values = [float(f"{v:.15g}") for v in values]  # 0.1, not 0.10000000000000002: readable, stable ids
    values[0], values[-1] = start, stop
    return values
