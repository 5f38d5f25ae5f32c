"""Musculotendon path geometry: length l of a path of points (fixed, conditional, moving) given the world
placements of the bodies that carry them, and its exact gradient, from which R = −∂l/∂q follows by the chain rule.

`compile_paths(muscle_set)` turns a `MuscleSetDescription` into flat arrays (`PathArrays`, a namedtuple passed
whole to the numba kernels); then, with `body_rotations` (n_frames, 3, 3: frame → world) and `body_positions`
(n_frames, 3: frame origin in world, m) of the frames named in `paths.frames` (OpenSim body names; points on
`ground` need none) and the coordinate values (`paths.coordinates` order, rad or m):

- `path_lengths(...)` → l (m), one per muscle: the sum of the straight segments between the active points
  (OpenSim's `GeometryPath::calcLengthAfterPathComputation`);
- `path_gradients(...)` → `PathGradient`: l, the points' world positions, which are active, ∂l/∂p_i (world, one
  3-vector per point: the unit vectors of the two segments at the point) and ∂l/∂c (the explicit dependence on
  the coordinates through moving points, with OpenSim's clamping of c to the coordinate's range);
- `moment_arms(...)` → R = −dl/dq from the frames' Jacobians: dl/dq = Σ_i ∂l/∂p_i · J_i + ∂l/∂c · ∂c/∂q, with
  J_i = J_v − [p_i − o]× J_ω the point Jacobian of point i's frame. Sign: OpenSim's — a positive moment arm
  means the muscle's tension drives the coordinate positively (shortening when the coordinate grows).

Conditional points switch on and off, so l is piecewise smooth in q; between switches it is smooth and the
gradient is exact (no finite differences). Wrapping surfaces are parsed (`description.WrapSurface`) but not yet
evaluated: `compile_paths` refuses a path with an active wrap (ModelError) rather than return a wrong length.
"""
from __future__ import annotations

import cmath
import math
from collections import namedtuple
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from biobullet.core import jit
from biobullet.core.errors import ModelError
from biobullet.muscles.description import MuscleSetDescription
from biobullet.muscles.location import _location_value_py, polynomial
from biobullet.muscles.wrapping import (COMPLEX_STEP, EVALUATED, MANDATORY_WRAP, SURFACE_CODES, WRAPPED,
                                        _cylinder_wrap_py, _sphere_wrap_py, wrap_bindings)

FIXED, CONDITIONAL, MOVING = 0, 1, 2
GROUND = -1
#: OpenSim's slack on a conditional point's range (ConditionalPathPoint::isActive)
CONDITIONAL_SLACK = 1e-5

PathArrays = namedtuple("PathArrays", [
    "point_start",        # int64 (n_muscles + 1): muscle m's points are point_start[m] .. point_start[m+1]-1
    "point_frame",        # int64 (n_points): index into the frames, GROUND (-1) for the world
    "point_kind",         # int64 (n_points): FIXED, CONDITIONAL, MOVING
    "point_rotation",     # float64 (n_points, 3, 3): point frame → body frame (offset frames)
    "point_translation",  # float64 (n_points, 3): point frame origin in the body frame (m)
    "point_location",     # float64 (n_points, 3): fixed/conditional location in the point frame (m)
    "point_coordinate",   # int64 (n_points, 3): conditional: [c, -1, -1]; moving: per axis (-1: none)
    "point_range",        # float64 (n_points, 3, 2): conditional: range in [0]; moving: clamp range per axis
    "point_function",     # int64 (n_points, 3): moving: location function per axis
    "function_kind",      # int64 (n_functions,)
    "function_offset",    # int64 (n_functions + 1,): parameters of function k in function_params[offset[k]:offset[k+1]]
    "function_params",    # float64
    "wrap_start",         # int64 (n_muscles + 1): muscle m's wraps are wrap_start[m] .. wrap_start[m+1]-1
    "wrap_surface",       # int64 (n_wraps,): index into the surfaces
    "wrap_range",         # int64 (n_wraps, 2): first and last path point considered (0-based, in the muscle)
    "surface_kind",       # int64 (n_surfaces,): wrapping.SURFACE_CODES
    "surface_frame",      # int64 (n_surfaces,): frame index, GROUND for the world
    "surface_rotation",   # float64 (n_surfaces, 3, 3): surface frame → body frame
    "surface_translation",  # float64 (n_surfaces, 3): surface origin in the body frame (m)
    "surface_dimensions",   # float64 (n_surfaces, 3): cylinder (radius, length, 0), …
    "surface_quadrant",   # int64 (n_surfaces, 2): (axis, sign); sign 0 = every side
])


@dataclass(frozen=True)
class MusclePaths:
    """Compiled paths of a muscle set: names, frame and coordinate orders, and the kernel arrays."""

    names: tuple[str, ...]
    frames: tuple[str, ...]
    coordinates: tuple[str, ...]
    arrays: PathArrays
    point_names: tuple[str, ...]


class PathGradient(NamedTuple):
    """Lengths (m, n_muscles); point world positions (n_points, 3), active flags; ∂l/∂p (n_points, 3; zero for
    inactive points); ∂l/∂c (n_muscles, n_coordinates; through moving points only); ∂l/∂(frame motion)
    (n_muscles, n_frames, 6): [F; M] with dl = Σ_f F·v_f + M·ω_f for frame origin velocities v_f and angular
    velocities ω_f (world axes) — the wrench a unit tension exerts on each frame, with the opposite sign; the
    wraps' world tangent points (n_wraps, 2, 3) and whether each wraps. A NamedTuple: the muscle stage keeps one
    as its kernel's work buffers."""

    lengths: np.ndarray
    points: np.ndarray
    active: np.ndarray
    dl_dpoints: np.ndarray
    dl_dcoordinates: np.ndarray
    dl_dframes: np.ndarray
    wrap_points: np.ndarray
    wrap_active: np.ndarray


def unevaluated_wraps(muscle, surfaces) -> str | None:
    """Why `muscle`'s wraps cannot be evaluated (a phrase), or None: only a single active cylinder or sphere per
    path is; `surfaces` maps surface names to WrapSurfaces."""
    active = [w for w in muscle.wraps if w.surface in surfaces and surfaces[w.surface].active]
    if active and (len(muscle.wraps) > 1 or surfaces[active[0].surface].type not in EVALUATED):
        kinds_used = ", ".join(surfaces[w.surface].type for w in muscle.wraps if w.surface in surfaces)
        return (f"wraps over {len(muscle.wraps)} surface(s) ({kinds_used}); only a single cylinder or sphere per "
                "path is evaluated so far")
    return None


def compile_paths(muscle_set: MuscleSetDescription) -> MusclePaths:
    """Flat kernel arrays of every muscle's path (module docstring)."""
    frames = tuple(f for f in muscle_set.frames if f != "ground")
    frame_index = {name: i for i, name in enumerate(frames)}
    frame_index["ground"] = GROUND
    coordinate_index = {name: i for i, name in enumerate(muscle_set.coordinates)}
    ranges = np.asarray(muscle_set.coordinate_ranges, dtype=float).reshape(-1, 2)
    surfaces = {surface.name: surface for surface in muscle_set.surfaces}
    starts, kinds, frame_of, rotations, translations, locations = [0], [], [], [], [], []
    point_coordinates, point_ranges, point_functions, point_names = [], [], [], []
    functions: list = []
    surface_index: dict[str, int] = {}
    surface_rows: list = []
    wrap_rows: list[tuple[int, int, int]] = []
    wrap_starts = [0]
    for muscle in muscle_set.muscles:
        for wrap in muscle.wraps:
            if wrap.surface not in surfaces:
                raise ModelError(f"muscle {muscle.name!r} wraps over unknown surface {wrap.surface!r}",
                                 file=muscle_set.file, expected="a wrap surface of the model")
        reason = unevaluated_wraps(muscle, surfaces)
        if reason is not None:
            raise ModelError(f"muscle {muscle.name!r} {reason}", file=muscle_set.file,
                             element=f'<muscle name="{muscle.name}">',
                             expected="at most one wrap, a cylinder or a sphere (ellipsoid, torus and multi-wrap "
                                      "paths are not implemented yet)")
        active_wraps = [w for w in muscle.wraps if surfaces[w.surface].active]
        for wrap in active_wraps:
            surface = surfaces[wrap.surface]
            if surface.name not in surface_index:
                if surface.frame not in frame_index:
                    raise ModelError(f"wrap surface {surface.name!r} is on unknown frame {surface.frame!r}",
                                     file=muscle_set.file, expected="a body of the model")
                surface_index[surface.name] = len(surface_rows)
                surface_rows.append(surface)
            n_points = len(muscle.points)
            first = wrap.range[0] - 1 if wrap.range[0] >= 1 else 0
            last = wrap.range[1] - 1 if wrap.range[1] >= 1 else n_points - 1
            wrap_rows.append((surface_index[surface.name], min(first, n_points - 1), min(last, n_points - 1)))
        wrap_starts.append(len(wrap_rows))
        if len(muscle.points) < 2:
            raise ModelError(f"muscle {muscle.name!r} has {len(muscle.points)} path point(s)", file=muscle_set.file,
                             expected="at least 2 path points")
        for point in muscle.points:
            if point.frame not in frame_index:
                raise ModelError(f"path point {point.name!r} is on unknown frame {point.frame!r}",
                                 file=muscle_set.file, expected="a body of the model")
            kinds.append({"fixed": FIXED, "conditional": CONDITIONAL, "moving": MOVING}[point.kind])
            frame_of.append(frame_index[point.frame])
            rotations.append(np.asarray(point.rotation, dtype=float))
            translations.append(np.asarray(point.translation, dtype=float))
            locations.append(np.asarray(point.location, dtype=float))
            indices, bounds, function_ids = [-1, -1, -1], np.zeros((3, 2)), [-1, -1, -1]
            if point.kind == "conditional":
                indices[0] = _coordinate(coordinate_index, point.coordinate, point.name, muscle_set.file)
                bounds[0] = point.range
            elif point.kind == "moving":
                for axis in range(3):
                    name = point.coordinates[axis]
                    if name is not None:
                        indices[axis] = _coordinate(coordinate_index, name, point.name, muscle_set.file)
                        bounds[axis] = point.range if point.range is not None else ranges[indices[axis]]
                    function_ids[axis] = len(functions)
                    functions.append(point.functions[axis] or polynomial([0.0]))
            point_coordinates.append(indices)
            point_ranges.append(bounds)
            point_functions.append(function_ids)
            point_names.append(f"{muscle.name}/{point.name}")
        starts.append(len(kinds))
    offsets = np.cumsum([0] + [f.params.size for f in functions]).astype(np.int64)
    params = np.concatenate([f.params for f in functions]) if functions else np.zeros(0)
    n = len(kinds)
    arrays = PathArrays(
        point_start=np.array(starts, dtype=np.int64), point_frame=np.array(frame_of, dtype=np.int64),
        point_kind=np.array(kinds, dtype=np.int64),
        point_rotation=np.ascontiguousarray(np.array(rotations, dtype=float).reshape(n, 3, 3)),
        point_translation=np.ascontiguousarray(np.array(translations, dtype=float).reshape(n, 3)),
        point_location=np.ascontiguousarray(np.array(locations, dtype=float).reshape(n, 3)),
        point_coordinate=np.array(point_coordinates, dtype=np.int64).reshape(n, 3),
        point_range=np.ascontiguousarray(np.array(point_ranges, dtype=float).reshape(n, 3, 2)),
        point_function=np.array(point_functions, dtype=np.int64).reshape(n, 3),
        function_kind=np.array([f.kind for f in functions], dtype=np.int64),
        function_offset=offsets, function_params=np.ascontiguousarray(params, dtype=float),
        wrap_start=np.array(wrap_starts, dtype=np.int64),
        wrap_surface=np.array([w[0] for w in wrap_rows], dtype=np.int64),
        wrap_range=np.array([w[1:] for w in wrap_rows], dtype=np.int64).reshape(-1, 2),
        surface_kind=np.array([SURFACE_CODES[r.type] for r in surface_rows], dtype=np.int64),
        surface_frame=np.array([frame_index[r.frame] for r in surface_rows], dtype=np.int64),
        surface_rotation=np.ascontiguousarray(np.array([r.rotation for r in surface_rows], dtype=float)
                                              .reshape(-1, 3, 3)),
        surface_translation=np.ascontiguousarray(np.array([r.translation for r in surface_rows], dtype=float)
                                                 .reshape(-1, 3)),
        surface_dimensions=np.array([list(r.dimensions) + [0.0] * (3 - len(r.dimensions)) for r in surface_rows],
                                    dtype=float).reshape(-1, 3),
        surface_quadrant=np.array([_quadrant(r.quadrant) for r in surface_rows], dtype=np.int64).reshape(-1, 2))
    return MusclePaths(names=muscle_set.names, frames=frames, coordinates=tuple(muscle_set.coordinates),
                       arrays=arrays, point_names=tuple(point_names))


def _quadrant(name: str) -> tuple[int, int]:
    """OpenSim's quadrant as (axis, sign): "+y" → (1, 1), "all" → (0, 0)."""
    if name == "all":
        return 0, 0
    return "xyz".index(name[1]), 1 if name[0] == "+" else -1


def _coordinate(index: dict[str, int], name: str | None, point: str, file: str) -> int:
    if name not in index:
        raise ModelError(f"path point {point!r} depends on unknown coordinate {name!r}", file=file,
                         expected="a coordinate of the model")
    return index[name]


# ------------------------------------------------------------------------------------------------ kernels
def _point_active_py(arrays, point, coordinates):
    """OpenSim's isActive: a conditional point only while its coordinate is within its range (± 1e-5)."""
    if arrays.point_kind[point] != CONDITIONAL:
        return True
    value = coordinates[arrays.point_coordinate[point, 0]]
    return (arrays.point_range[point, 0, 0] - CONDITIONAL_SLACK <= value
            <= arrays.point_range[point, 0, 1] + CONDITIONAL_SLACK)


def _point_local_py(arrays, point, coordinates, local, local_derivative):
    """The point in its body's frame (`local`, m) and, for a moving point, ∂local/∂c_axis in column `axis` of
    `local_derivative` (zero where the coordinate is clamped at its range)."""
    for axis in range(3):
        for row in range(3):
            local_derivative[row, axis] = 0.0
    value = np.empty(3)
    if arrays.point_kind[point] == MOVING:
        for axis in range(3):
            c = arrays.point_coordinate[point, axis]
            x = 0.0
            inside = False
            if c >= 0:
                low = arrays.point_range[point, axis, 0]
                high = arrays.point_range[point, axis, 1]
                x = min(max(coordinates[c], low), high)
                inside = low < coordinates[c] < high
            k = arrays.point_function[point, axis]
            start = arrays.function_offset[k]
            f, slope = _location_value_py(arrays.function_kind[k],
                                          arrays.function_params[start:arrays.function_offset[k + 1]], x)
            value[axis] = f
            if inside:
                for row in range(3):
                    local_derivative[row, axis] = arrays.point_rotation[point, row, axis] * slope
    else:
        for axis in range(3):
            value[axis] = arrays.point_location[point, axis]
    for row in range(3):
        local[row] = arrays.point_translation[point, row]
        for axis in range(3):
            local[row] += arrays.point_rotation[point, row, axis] * value[axis]


def _surface_placement_py(arrays, surface, rotations, positions, rotation, origin):
    """World rotation and origin of a wrap surface (its body's placement composed with its offset)."""
    frame = arrays.surface_frame[surface]
    for row in range(3):
        for column in range(3):
            if frame == GROUND:
                rotation[row, column] = arrays.surface_rotation[surface, row, column]
            else:
                rotation[row, column] = (rotations[frame, row, 0] * arrays.surface_rotation[surface, 0, column]
                                         + rotations[frame, row, 1] * arrays.surface_rotation[surface, 1, column]
                                         + rotations[frame, row, 2] * arrays.surface_rotation[surface, 2, column])
        if frame == GROUND:
            origin[row] = arrays.surface_translation[surface, row]
        else:
            origin[row] = (positions[frame, row] + rotations[frame, row, 0] * arrays.surface_translation[surface, 0]
                           + rotations[frame, row, 1] * arrays.surface_translation[surface, 1]
                           + rotations[frame, row, 2] * arrays.surface_translation[surface, 2])


def _wrapped_segment_py(arrays, surface, start, end, tangent_start, tangent_end):
    """(status, length) of the straight-wrapped-straight path from `start` to `end` (complex 3-vectors in the
    surface's frame) over `surface`: |start − r1| + arc + |r2 − end|; the tangent points go to tangent_*."""
    kind = arrays.surface_kind[surface]
    status = 0
    arc = 0.0 + 0.0j
    if kind == 0:   # cylinder
        status, arc = _cylinder_wrap_py(start, end, arrays.surface_dimensions[surface, 0],
                                        arrays.surface_dimensions[surface, 1], arrays.surface_quadrant[surface, 0],
                                        arrays.surface_quadrant[surface, 1], tangent_start, tangent_end)
    elif kind == 1:   # sphere
        status, arc = _sphere_wrap_py(start, end, arrays.surface_dimensions[surface, 0],
                                      arrays.surface_quadrant[surface, 0], arrays.surface_quadrant[surface, 1],
                                      tangent_start, tangent_end)
    if status != WRAPPED and status != MANDATORY_WRAP:
        return status, 0.0 + 0.0j
    first = cmath.sqrt((start[0] - tangent_start[0]) ** 2 + (start[1] - tangent_start[1]) ** 2
                       + (start[2] - tangent_start[2]) ** 2)
    last = cmath.sqrt((end[0] - tangent_end[0]) ** 2 + (end[1] - tangent_end[1]) ** 2
                      + (end[2] - tangent_end[2]) ** 2)
    return status, first + arc + last


def _path_gradients_py(arrays, rotations, positions, coordinates, points, active, dl_dpoints, dl_dcoordinates,
                       dl_dframes, wrap_points, wrap_active, lengths):
    """Fill lengths (n_muscles), points (world, m), active, ∂l/∂p, ∂l/∂c, ∂l/∂(frame motion) and the wraps'
    world tangent points (module docstring)."""
    local = np.empty(3)
    local_derivative = np.empty((3, 3))
    rotation = np.empty((3, 3))
    origin = np.empty(3)
    ends = np.empty((2, 3), np.complex128)
    tangents = np.empty((2, 3), np.complex128)
    best_tangents = np.empty((2, 3))
    for m in range(arrays.point_start.shape[0] - 1):
        first_point = arrays.point_start[m]
        last_point = arrays.point_start[m + 1]
        for c in range(dl_dcoordinates.shape[1]):
            dl_dcoordinates[m, c] = 0.0
        for f in range(dl_dframes.shape[1]):
            for k in range(6):
                dl_dframes[m, f, k] = 0.0
        for p in range(first_point, last_point):
            for row in range(3):
                dl_dpoints[p, row] = 0.0
            active[p] = _point_active_py(arrays, p, coordinates)
            if not active[p]:
                continue
            _point_local_py(arrays, p, coordinates, local, local_derivative)
            frame = arrays.point_frame[p]
            for row in range(3):
                if frame == GROUND:
                    points[p, row] = local[row]
                else:
                    points[p, row] = (positions[frame, row] + rotations[frame, row, 0] * local[0]
                                      + rotations[frame, row, 1] * local[1] + rotations[frame, row, 2] * local[2])
        # the wrap (OpenSim's applyWrapObjects for a single wrap): over the active points in its range, the
        # first segment that must wrap, else the one whose wrapping lengthens the path least
        wrapped_from = -1
        wrap = -1
        surface = -1
        for w in range(arrays.wrap_start[m], arrays.wrap_start[m + 1]):
            wrap = w
            wrap_active[w] = False
            surface = arrays.wrap_surface[w]
            _surface_placement_py(arrays, surface, rotations, positions, rotation, origin)
            low = first_point + arrays.wrap_range[w, 0]
            high = first_point + arrays.wrap_range[w, 1]
            while low <= high and not active[low]:
                low += 1
            while high >= low and not active[high]:
                high -= 1
            best_change = math.inf
            previous = -1
            for p in range(low, high + 1):
                if not active[p]:
                    continue
                if previous >= 0:
                    _to_surface_py(points, previous, p, rotation, origin, ends)
                    status, total = _wrapped_segment_py(arrays, surface, ends[0], ends[1], tangents[0], tangents[1])
                    if status == MANDATORY_WRAP or status == WRAPPED:
                        straight = math.sqrt((points[p, 0] - points[previous, 0]) ** 2
                                             + (points[p, 1] - points[previous, 1]) ** 2
                                             + (points[p, 2] - points[previous, 2]) ** 2)
                        change = total.real - straight
                        if status == MANDATORY_WRAP or change < best_change:
                            best_change = change
                            wrapped_from = previous
                            for k in range(2):
                                for row in range(3):
                                    best_tangents[k, row] = tangents[k, row].real
                        if status == MANDATORY_WRAP:
                            break
                previous = p
            if wrapped_from >= 0:
                wrap_active[w] = True
                for k in range(2):
                    for row in range(3):
                        wrap_points[w, k, row] = (origin[row] + rotation[row, 0] * best_tangents[k, 0]
                                                  + rotation[row, 1] * best_tangents[k, 1]
                                                  + rotation[row, 2] * best_tangents[k, 2])
        previous = -1
        total_length = 0.0
        for p in range(first_point, last_point):
            if not active[p]:
                continue
            if previous >= 0 and previous == wrapped_from:
                total_length += _wrap_gradient_py(arrays, surface, points, previous, p, rotation, origin, positions,
                                                  dl_dpoints, dl_dframes, m)
            elif previous >= 0:
                d0 = points[p, 0] - points[previous, 0]
                d1 = points[p, 1] - points[previous, 1]
                d2 = points[p, 2] - points[previous, 2]
                segment = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
                total_length += segment
                if segment > 0.0:   # coincident points: the zero subgradient
                    dl_dpoints[p, 0] += d0 / segment
                    dl_dpoints[p, 1] += d1 / segment
                    dl_dpoints[p, 2] += d2 / segment
                    dl_dpoints[previous, 0] -= d0 / segment
                    dl_dpoints[previous, 1] -= d1 / segment
                    dl_dpoints[previous, 2] -= d2 / segment
            previous = p
        lengths[m] = total_length
        for p in range(first_point, last_point):
            if not active[p]:
                continue
            frame = arrays.point_frame[p]
            if frame != GROUND:   # the point moves with its frame: force g, moment (p − o) × g
                _add_wrench_py(dl_dframes, m, frame, points[p, 0] - positions[frame, 0],
                               points[p, 1] - positions[frame, 1], points[p, 2] - positions[frame, 2],
                               dl_dpoints[p, 0], dl_dpoints[p, 1], dl_dpoints[p, 2])
            if arrays.point_kind[p] != MOVING:
                continue
            _point_local_py(arrays, p, coordinates, local, local_derivative)
            for axis in range(3):
                c = arrays.point_coordinate[p, axis]
                if c < 0:
                    continue
                total = 0.0
                for row in range(3):
                    world = local_derivative[row, axis]
                    if frame != GROUND:
                        world = (rotations[frame, row, 0] * local_derivative[0, axis]
                                 + rotations[frame, row, 1] * local_derivative[1, axis]
                                 + rotations[frame, row, 2] * local_derivative[2, axis])
                    total += dl_dpoints[p, row] * world
                dl_dcoordinates[m, c] += total


def _add_wrench_py(dl_dframes, m, frame, rx, ry, rz, gx, gy, gz):
    """dl_dframes[m, frame] += [g; r × g]."""
    dl_dframes[m, frame, 0] += gx
    dl_dframes[m, frame, 1] += gy
    dl_dframes[m, frame, 2] += gz
    dl_dframes[m, frame, 3] += ry * gz - rz * gy
    dl_dframes[m, frame, 4] += rz * gx - rx * gz
    dl_dframes[m, frame, 5] += rx * gy - ry * gx


def _to_surface_py(points, a, b, rotation, origin, ends):
    """Points a and b in the surface frame (complex, zero imaginary parts)."""
    for k in range(2):
        p = a if k == 0 else b
        for row in range(3):
            ends[k, row] = ((points[p, 0] - origin[0]) * rotation[0, row] + (points[p, 1] - origin[1]) * rotation[1, row]
                            + (points[p, 2] - origin[2]) * rotation[2, row])


def _wrap_gradient_py(arrays, surface, points, a, b, rotation, origin, positions, dl_dpoints, dl_dframes, m):
    """Length of the wrapped segment a → b, its gradient by the complex step (exact to round-off) added to the
    two points, and the surface frame's share: its motion moves both ends the other way relative to it."""
    ends = np.empty((2, 3), np.complex128)
    tangents = np.empty((2, 3), np.complex128)
    _to_surface_py(points, a, b, rotation, origin, ends)
    status, length = _wrapped_segment_py(arrays, surface, ends[0], ends[1], tangents[0], tangents[1])
    local_gradient = np.zeros((2, 3))
    for k in range(2):
        for axis in range(3):
            saved = ends[k, axis]
            ends[k, axis] = saved.real + 1j * COMPLEX_STEP
            status_step, stepped = _wrapped_segment_py(arrays, surface, ends[0], ends[1], tangents[0], tangents[1])
            local_gradient[k, axis] = stepped.imag / COMPLEX_STEP
            ends[k, axis] = saved
    frame = arrays.surface_frame[surface]
    for k in range(2):
        p = a if k == 0 else b
        g0 = rotation[0, 0] * local_gradient[k, 0] + rotation[0, 1] * local_gradient[k, 1] \
            + rotation[0, 2] * local_gradient[k, 2]
        g1 = rotation[1, 0] * local_gradient[k, 0] + rotation[1, 1] * local_gradient[k, 1] \
            + rotation[1, 2] * local_gradient[k, 2]
        g2 = rotation[2, 0] * local_gradient[k, 0] + rotation[2, 1] * local_gradient[k, 1] \
            + rotation[2, 2] * local_gradient[k, 2]
        dl_dpoints[p, 0] += g0
        dl_dpoints[p, 1] += g1
        dl_dpoints[p, 2] += g2
        if frame != GROUND:
            _add_wrench_py(dl_dframes, m, frame, points[p, 0] - positions[frame, 0],
                           points[p, 1] - positions[frame, 1], points[p, 2] - positions[frame, 2], -g0, -g1, -g2)
    return length.real


def _wrap_kernels() -> dict:
    """The wrap kernels, compiled as separate functions (not inlined: the complex-step code is large)."""
    cylinder = jit.compiled(_cylinder_wrap_py, bind=wrap_bindings) or _cylinder_wrap_py
    sphere = jit.compiled(_sphere_wrap_py, bind=wrap_bindings) or _sphere_wrap_py
    segment = jit.compiled(_wrapped_segment_py, bind={"_cylinder_wrap_py": cylinder,
                                                      "_sphere_wrap_py": sphere}) or _wrapped_segment_py
    return {"_wrapped_segment_py": segment, "_cylinder_wrap_py": cylinder, "_sphere_wrap_py": sphere,
            "_wrap_gradient_py": jit.compiled(_wrap_gradient_py, bind={
                "_wrapped_segment_py": segment, "_add_wrench_py": _add_wrench_py,
                "_to_surface_py": _to_surface_py}) or _wrap_gradient_py}


_path_gradients = jit.lazy(_path_gradients_py, bind=lambda: {
    **_wrap_kernels(), "_point_active_py": _point_active_py, "_point_local_py": _point_local_py,
    "_location_value_py": _location_value_py, "_surface_placement_py": _surface_placement_py,
    "_add_wrench_py": _add_wrench_py, "_to_surface_py": _to_surface_py})


def gradient_buffers(paths: MusclePaths) -> PathGradient:
    """A zeroed PathGradient for `paths` (the kernel's output arrays)."""
    n_points = paths.arrays.point_kind.shape[0]
    n_muscles = len(paths.names)
    n_wraps = paths.arrays.wrap_surface.shape[0]
    return PathGradient(lengths=np.zeros(n_muscles), points=np.zeros((n_points, 3)),
                        active=np.zeros(n_points, dtype=np.bool_), dl_dpoints=np.zeros((n_points, 3)),
                        dl_dcoordinates=np.zeros((n_muscles, len(paths.coordinates))),
                        dl_dframes=np.zeros((n_muscles, len(paths.frames), 6)),
                        wrap_points=np.zeros((n_wraps, 2, 3)), wrap_active=np.zeros(n_wraps, dtype=np.bool_))


def path_gradients(paths: MusclePaths, body_rotations: np.ndarray, body_positions: np.ndarray,
                   coordinates: np.ndarray) -> PathGradient:
    """Lengths and their exact gradients (module docstring); rotations (n_frames, 3, 3), positions (n_frames, 3)
    in `paths.frames` order, coordinates in `paths.coordinates` order."""
    rotations, positions, values = _checked_state(paths, body_rotations, body_positions, coordinates)
    result = gradient_buffers(paths)
    _path_gradients(paths.arrays, rotations, positions, values, result.points, result.active, result.dl_dpoints,
                    result.dl_dcoordinates, result.dl_dframes, result.wrap_points, result.wrap_active,
                    result.lengths)
    return result


def path_lengths(paths: MusclePaths, body_rotations: np.ndarray, body_positions: np.ndarray,
                 coordinates: np.ndarray) -> np.ndarray:
    """Musculotendon path lengths l (m), one per muscle in `paths.names` order."""
    return path_gradients(paths, body_rotations, body_positions, coordinates).lengths


def moment_arms(paths: MusclePaths, body_rotations: np.ndarray, body_positions: np.ndarray,
                coordinates: np.ndarray, frame_jacobians: np.ndarray,
                coordinate_jacobian: np.ndarray | None = None) -> np.ndarray:
    """R = −dl/dq (n_muscles × n_q; m for a rotational q, dimensionless for a translational one), OpenSim's sign.

    `frame_jacobians` (n_frames, 6, n_q): for each frame of `paths.frames`, [linear velocity of its origin;
    angular velocity] in world axes per unit q̇ (`biobullet.algorithms.kinematics.frame_jacobian` at the origin).
    `coordinate_jacobian` (n_coordinates, n_q): ∂c/∂q of the coordinates that move points (default: identity,
    i.e. q are these coordinates)."""
    gradient = path_gradients(paths, body_rotations, body_positions, coordinates)
    jacobians = np.asarray(frame_jacobians, dtype=float)
    if jacobians.ndim != 3 or jacobians.shape[:2] != (len(paths.frames), 6):
        raise ModelError(f"shape {jacobians.shape}", argument="frame_jacobians",
                         expected=f"({len(paths.frames)}, 6, n_q)")
    n_q = jacobians.shape[2]
    if coordinate_jacobian is None:
        coordinate_jacobian = np.eye(len(paths.coordinates), n_q)
    coupling = np.asarray(coordinate_jacobian, dtype=float)
    if coupling.shape != (len(paths.coordinates), n_q):
        raise ModelError(f"shape {coupling.shape}", argument="coordinate_jacobian",
                         expected=f"({len(paths.coordinates)}, {n_q})")
    # dl/dq = Σ_f [F; M]_f · J_f + ∂l/∂c ∂c/∂q
    return -(np.einsum("mfk,fkq->mq", gradient.dl_dframes, jacobians) + gradient.dl_dcoordinates @ coupling)


def _checked_state(paths: MusclePaths, body_rotations, body_positions, coordinates):
    n_frames = len(paths.frames)
    rotations = np.ascontiguousarray(np.asarray(body_rotations, dtype=float))
    positions = np.ascontiguousarray(np.asarray(body_positions, dtype=float))
    values = np.ascontiguousarray(np.asarray(coordinates, dtype=float).reshape(-1))
    if rotations.shape != (n_frames, 3, 3):
        raise ModelError(f"shape {rotations.shape}", argument="body_rotations", expected=f"({n_frames}, 3, 3)")
    if positions.shape != (n_frames, 3):
        raise ModelError(f"shape {positions.shape}", argument="body_positions", expected=f"({n_frames}, 3)")
    if values.shape != (len(paths.coordinates),):
        raise ModelError(f"{values.size} values", argument="coordinates",
                         expected=f"{len(paths.coordinates)} coordinate values")
    for name, array in (("body_rotations", rotations), ("body_positions", positions), ("coordinates", values)):
        if not np.all(np.isfinite(array)):
            raise ModelError("non-finite value", argument=name, expected="finite numbers")
    return rotations, positions, values


__all__ = ["PathArrays", "MusclePaths", "PathGradient", "gradient_buffers", "compile_paths", "unevaluated_wraps", "path_gradients",
           "path_lengths", "moment_arms"]


def path_gradients_kernel():
    """The compiled `_path_gradients_py` with its wrap kernels bound (the muscle stage calls it), or the function
    itself without numba."""
    return _path_gradients.resolve()
__all__ += ["path_gradients_kernel"]
