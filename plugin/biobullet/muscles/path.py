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

import math
from collections import namedtuple
from dataclasses import dataclass

import numpy as np

from biobullet.core import jit
from biobullet.core.errors import ModelError
from biobullet.muscles.description import MuscleSetDescription
from biobullet.muscles.location import _location_value_py, polynomial

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
])


@dataclass(frozen=True)
class MusclePaths:
    """Compiled paths of a muscle set: names, frame and coordinate orders, and the kernel arrays."""

    names: tuple[str, ...]
    frames: tuple[str, ...]
    coordinates: tuple[str, ...]
    arrays: PathArrays
    point_names: tuple[str, ...]


@dataclass(frozen=True)
class PathGradient:
    """Lengths (m, n_muscles), point world positions (n_points, 3), active flags, ∂l/∂p (n_points, 3; zero for
    inactive points) and ∂l/∂c (n_muscles, n_coordinates; through moving points only)."""

    lengths: np.ndarray
    points: np.ndarray
    active: np.ndarray
    dl_dpoints: np.ndarray
    dl_dcoordinates: np.ndarray


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
    for muscle in muscle_set.muscles:
        for wrap in muscle.wraps:
            surface = surfaces.get(wrap.surface)
            if surface is None or surface.active:
                raise ModelError(f"muscle {muscle.name!r} wraps over {wrap.surface!r}; wrapping surfaces are not "
                                 "evaluated yet", file=muscle_set.file, element=f'<{muscle.name}>',
                                 expected="a path without active wrapping surfaces")
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
        function_offset=offsets, function_params=np.ascontiguousarray(params, dtype=float))
    return MusclePaths(names=muscle_set.names, frames=frames, coordinates=tuple(muscle_set.coordinates),
                       arrays=arrays, point_names=tuple(point_names))


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


def _path_gradients_py(arrays, rotations, positions, coordinates, points, active, dl_dpoints, dl_dcoordinates,
                       lengths):
    """Fill lengths (n_muscles), points (world, m), active, ∂l/∂p and ∂l/∂c (module docstring)."""
    local = np.empty(3)
    local_derivative = np.empty((3, 3))
    for m in range(arrays.point_start.shape[0] - 1):
        for c in range(dl_dcoordinates.shape[1]):
            dl_dcoordinates[m, c] = 0.0
        previous = -1
        total = 0.0
        for p in range(arrays.point_start[m], arrays.point_start[m + 1]):
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
            if previous >= 0:
                d0 = points[p, 0] - points[previous, 0]
                d1 = points[p, 1] - points[previous, 1]
                d2 = points[p, 2] - points[previous, 2]
                segment = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
                total += segment
                if segment > 0.0:   # coincident points: the zero subgradient
                    dl_dpoints[p, 0] += d0 / segment
                    dl_dpoints[p, 1] += d1 / segment
                    dl_dpoints[p, 2] += d2 / segment
                    dl_dpoints[previous, 0] -= d0 / segment
                    dl_dpoints[previous, 1] -= d1 / segment
                    dl_dpoints[previous, 2] -= d2 / segment
            previous = p
        lengths[m] = total
        for p in range(arrays.point_start[m], arrays.point_start[m + 1]):
            if not active[p] or arrays.point_kind[p] != MOVING:
                continue
            _point_local_py(arrays, p, coordinates, local, local_derivative)
            frame = arrays.point_frame[p]
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


_path_gradients = jit.lazy(_path_gradients_py, bind={"_point_active_py": _point_active_py,
                                                      "_point_local_py": _point_local_py,
                                                      "_location_value_py": _location_value_py})


def path_gradients(paths: MusclePaths, body_rotations: np.ndarray, body_positions: np.ndarray,
                   coordinates: np.ndarray) -> PathGradient:
    """Lengths and their exact gradients (module docstring); rotations (n_frames, 3, 3), positions (n_frames, 3)
    in `paths.frames` order, coordinates in `paths.coordinates` order."""
    rotations, positions, values = _checked_state(paths, body_rotations, body_positions, coordinates)
    n_points = paths.arrays.point_kind.shape[0]
    n_muscles = len(paths.names)
    result = PathGradient(lengths=np.zeros(n_muscles), points=np.zeros((n_points, 3)),
                          active=np.zeros(n_points, dtype=np.bool_), dl_dpoints=np.zeros((n_points, 3)),
                          dl_dcoordinates=np.zeros((n_muscles, len(paths.coordinates))))
    _path_gradients(paths.arrays, rotations, positions, values, result.points, result.active, result.dl_dpoints,
                    result.dl_dcoordinates, result.lengths)
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
    positions = np.asarray(body_positions, dtype=float).reshape(-1, 3)
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
    arms = -gradient.dl_dcoordinates @ coupling
    starts = paths.arrays.point_start
    for m in range(len(paths.names)):
        for p in range(starts[m], starts[m + 1]):
            frame = paths.arrays.point_frame[p]
            if frame == GROUND or not gradient.active[p]:
                continue
            g = gradient.dl_dpoints[p]
            arm = gradient.points[p] - positions[frame]   # v_p = v_o + ω × r, and g·(ω × r) = (r × g)·ω
            arms[m] -= g @ jacobians[frame, :3] + np.cross(arm, g) @ jacobians[frame, 3:]
    return arms


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


__all__ = ["PathArrays", "MusclePaths", "PathGradient", "compile_paths", "path_gradients", "path_lengths",
           "moment_arms"]
