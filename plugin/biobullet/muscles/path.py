"""Musculotendon path geometry: length l of a path of points (fixed, conditional, moving) given the world
placements of the bodies that carry them, and its exact gradient, from which R = −∂l/∂q follows by the chain rule.

`compile_paths(muscle_set)` turns a `MuscleSetDescription` into flat arrays (`PathArrays`, a namedtuple passed
whole to the numba kernels); then, with `body_rotations` (n_frames, 3, 3: frame → world) and `body_positions`
(n_frames, 3: frame origin in world, m) of the frames named in `paths.frames` (OpenSim body names; points on
`ground` need none) and the coordinate values (`paths.coordinates` order, rad or m):

- `path_lengths(...)` → l (m), one per muscle: the sum of the straight segments between the active points
  (OpenSim's `GeometryPath::calcLengthAfterPathComputation`);
- `path_gradients(...)` → `PathGradient`: l, the points' world positions, which are active, and the gradient:
  for a straight path ∂l/∂p_i (world, one 3-vector per point: the unit vectors of the two segments at the point),
  ∂l/∂c (the explicit dependence on the coordinates through moving points, with OpenSim's clamping of c to the
  coordinate's range) and ∂l/∂(frame motion); for a wrapped path dl/ds along given directions of motion s
  (`PathDirections`: each frame's twist and the coordinates' rates per unit s), or, without directions, its
  ∂l/∂(frame motion) and ∂l/∂c from one direction per frame twist and coordinate;
- `moment_arms(...)` → R = −dl/dq from the frames' Jacobians: dl/dq = Σ_i ∂l/∂p_i · J_i + ∂l/∂c · ∂c/∂q, with
  J_i = J_v − [p_i − o]× J_ω the point Jacobian of point i's frame (a wrapped path: one direction per q). Sign:
  OpenSim's — a positive moment arm means the muscle's tension drives the coordinate positively (shortening
  when the coordinate grows).

Conditional points switch on and off, so l is piecewise smooth in q; between switches it is smooth and the
gradient is exact (no finite differences). Wraps over cylinders, spheres, ellipsoids and tori (any number per
path, OpenSim's applyWrapObjects, `wrapping`) are differentiated in forward mode: one pass of the whole wrapped
path per direction carries the tangent of every point and surface placement through the wraps' algebra (as the
imaginary part of complex numbers, `wrapping`), so dl/dq_j along q_j's motion is −R[:, j], exact to round-off;
directions that move a path rigidly (every frame it touches alike) are skipped, their derivative is zero. The
muscle stage differentiates along its tangent directions: one pass per joint a wrapped muscle spans.
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
from biobullet.muscles.location import location_value_py, polynomial
from biobullet.muscles.wrapping import (COMPLEX_STEP, CYLINDER, ELLIPSOID, INSIDE_RADIUS, MANDATORY_WRAP, NO_WRAP,
                                        SPHERE, SURFACE_CODES, SURFACE_KERNELS, TORUS, WRAP_METHODS, WRAPPED,
                                        surface_signatures, wrap_bindings)

KERNEL_ERROR_MODEL = "numpy"   # one error model wherever reached (the stage's, by address: core.jit._error_model)

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
    "wrap_method",        # int64 (n_wraps,): wrapping.WRAP_METHODS (the ellipsoid's c1 technique)
    "surface_kind",       # int64 (n_surfaces,): wrapping.SURFACE_CODES
    "surface_frame",      # int64 (n_surfaces,): frame index, GROUND for the world
    "surface_rotation",   # float64 (n_surfaces, 3, 3): surface frame → body frame
    "surface_translation",  # float64 (n_surfaces, 3): surface origin in the body frame (m)
    "surface_dimensions",   # float64 (n_surfaces, 3): cylinder (radius, length, 0), …
    "surface_quadrant",   # int64 (n_surfaces, 2): (axis, sign); sign 0 = every side
    "surface_active",     # bool (n_surfaces,): OpenSim's `active` (an inactive surface is skipped, still counted)
    "opensim_wrap_cache",  # bool (1,): reproduce OpenSim 4.6's stale wrap-point ground locations (compile_paths)
    "wrap_address",       # int64 (1 + 4,): in this process, the compiled `_wrapped_muscle_py`'s address, then each
    #                       surface code's wrap kernel's (`wrap_address`; 0: not compiled)
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
    wraps' world tangent points (n_wraps, 2, 3) and whether each wraps; dl/ds of the wrapped paths along the
    kernel's `PathDirections` (n_muscles, n_directions; zero rows for straight paths, whose gradient is in the
    fields above — the kernel leaves those of a wrapped path zero). A NamedTuple: the muscle stage keeps one as
    its kernel's work buffers."""

    lengths: np.ndarray
    points: np.ndarray
    active: np.ndarray
    dl_dpoints: np.ndarray
    dl_dcoordinates: np.ndarray
    dl_dframes: np.ndarray
    dl_ddirections: np.ndarray
    wrap_points: np.ndarray
    wrap_active: np.ndarray


class PathDirections(NamedTuple):
    """Directions s of motion along which the wrapped paths' lengths are differentiated: `twists` (n_directions,
    n_frames, 6), frame f's [v; ω] per unit s (v: velocity of the point at the world origin; world axes), and
    `rates` (n_directions, n_coordinates), ∂c/∂s of the coordinates that move points."""

    twists: np.ndarray
    rates: np.ndarray


def compile_paths(muscle_set: MuscleSetDescription, opensim_wrap_cache: bool = True) -> MusclePaths:
    """Flat kernel arrays of every muscle's path (module docstring). `opensim_wrap_cache` (default): OpenSim 4.6's
    lengths on paths where several wraps are active at once, which read each wrap point's ground location as it
    was when first read during the path computation (docs/muscles.md); False: the algorithm as written, each
    wrap point where it is now."""
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
        for wrap in muscle.wraps:
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
            if wrap.method not in WRAP_METHODS:
                raise ModelError(f"muscle {muscle.name!r} wraps by unknown method {wrap.method!r}",
                                 file=muscle_set.file, expected=", ".join(WRAP_METHODS))
            wrap_rows.append((surface_index[surface.name], min(first, n_points - 1), min(last, n_points - 1),
                              WRAP_METHODS[wrap.method]))
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
        wrap_range=np.array([w[1:3] for w in wrap_rows], dtype=np.int64).reshape(-1, 2),
        wrap_method=np.array([w[3] for w in wrap_rows], dtype=np.int64),
        surface_kind=np.array([SURFACE_CODES[r.type] for r in surface_rows], dtype=np.int64),
        surface_frame=np.array([frame_index[r.frame] for r in surface_rows], dtype=np.int64),
        surface_rotation=np.ascontiguousarray(np.array([r.rotation for r in surface_rows], dtype=float)
                                              .reshape(-1, 3, 3)),
        surface_translation=np.ascontiguousarray(np.array([r.translation for r in surface_rows], dtype=float)
                                                 .reshape(-1, 3)),
        surface_dimensions=np.array([list(r.dimensions) + [0.0] * (3 - len(r.dimensions)) for r in surface_rows],
                                    dtype=float).reshape(-1, 3),
        surface_quadrant=np.array([_quadrant(r.quadrant) for r in surface_rows], dtype=np.int64).reshape(-1, 2),
        surface_active=np.array([r.active for r in surface_rows], dtype=np.bool_),
        opensim_wrap_cache=np.array([opensim_wrap_cache], dtype=np.bool_),
        wrap_address=np.zeros(1 + len(SURFACE_KERNELS), dtype=np.int64))
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
            f, slope = location_value_py(arrays.function_kind[k],
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


def _wrapped_segment_py(arrays, surface, method, single, start, end, tangent_start, tangent_end):
    """(status, arc length) of the segment `start`→`end` (complex 3-vectors in the surface's frame) over `surface`;
    the tangent points go to tangent_*. `single`: the path has one wrap (OpenSim's WrapResult::singleWrap). The
    surface's wrap kernel is called by its address (`wrap_address`)."""
    kind = arrays.surface_kind[surface]
    if kind == CYLINDER:
        return _CYLINDER_WRAP(arrays.wrap_address[1 + kind])(
            start, end, arrays.surface_dimensions[surface, 0], arrays.surface_dimensions[surface, 1],
            arrays.surface_quadrant[surface, 0], arrays.surface_quadrant[surface, 1], single, tangent_start,
            tangent_end)
    if kind == SPHERE:
        return _SPHERE_WRAP(arrays.wrap_address[1 + kind])(
            start, end, arrays.surface_dimensions[surface, 0], arrays.surface_quadrant[surface, 0],
            arrays.surface_quadrant[surface, 1], tangent_start, tangent_end)
    if kind == ELLIPSOID:
        return _ELLIPSOID_WRAP(arrays.wrap_address[1 + kind])(
            start, end, arrays.surface_dimensions[surface], arrays.surface_quadrant[surface, 0],
            arrays.surface_quadrant[surface, 1], method, tangent_start, tangent_end)
    if kind == TORUS:
        return _TORUS_WRAP(arrays.wrap_address[1 + kind])(
            start, end, arrays.surface_dimensions[surface, 0], arrays.surface_dimensions[surface, 1],
            arrays.surface_quadrant[surface, 0], arrays.surface_quadrant[surface, 1], single, tangent_start,
            tangent_end)
    return NO_WRAP, 0.0 + 0.0j


def _node_position_py(node, points, tangents, out):
    """A path node's world position: node ≥ 0 is a path point, −1 − (2k + e) end e of wrap k's surface arc."""
    if node >= 0:
        for i in range(3):
            out[i] = points[node, i]
    else:
        code = -1 - node
        for i in range(3):
            out[i] = tangents[code // 2, code % 2, i]


def _ground_position_py(node, points, tangents, stale, seen, held, out):
    """The node's world position as OpenSim 4.6's getLocationInGround returns it: with `stale`, a wrap point
    keeps the location it had when first read during this path computation (PathWrapPoint::setLocation does
    not invalidate Point's ground-location cache), `seen`/`held` recording it; else the current one."""
    if node >= 0 or not stale:
        _node_position_py(node, points, tangents, out)
        return
    code = -1 - node
    if not seen[code // 2, code % 2]:
        seen[code // 2, code % 2] = True
        for i in range(3):
            held[code // 2, code % 2, i] = tangents[code // 2, code % 2, i]
    for i in range(3):
        out[i] = held[code // 2, code % 2, i]


def _nodes_length_py(nodes, n_nodes, points, tangents, arcs, stale, seen, held):
    """OpenSim's calcPathLength: straight segments between the nodes (`_ground_position_py`), the arc between a
    wrap's two nodes."""
    a = np.empty(3, np.complex128)
    b = np.empty(3, np.complex128)
    total = 0.0 + 0.0j
    for k in range(n_nodes - 1):
        if nodes[k] < 0 and nodes[k + 1] == nodes[k] - 1 and (-1 - nodes[k]) % 2 == 0:
            total += arcs[(-1 - nodes[k]) // 2]
            continue
        _ground_position_py(nodes[k], points, tangents, stale, seen, held, a)
        _ground_position_py(nodes[k + 1], points, tangents, stale, seen, held, b)
        total += cmath.sqrt((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2 + (a[2] - b[2]) ** 2)
    return total


def _distance_py(a, b):
    """|a − b| of complex 3-vectors, real part (a length compared, not differentiated)."""
    return math.sqrt(((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2 + (a[2] - b[2]) ** 2).real)


def _remove_wrap_nodes_py(nodes, n_nodes, k):
    """Drop wrap k's two nodes from the path (if there); returns the new node count."""
    for j in range(n_nodes):
        if nodes[j] == -1 - 2 * k:
            for i in range(j, n_nodes - 2):
                nodes[i] = nodes[i + 2]
            return n_nodes - 2
    return n_nodes


def _muscle_length_py(arrays, m, points, active, rotations, origins, tangents, arcs, wrapped):
    """Length of muscle m's path with its wraps, as OpenSim 4.6's GeometryPath::applyWrapObjects and
    calcPathLength: each wrap in order takes the segment of its point range that must wrap (the first crossing
    the surface), else the one whose wrap lengthens the path least, and inserts its two tangent points; with
    several wraps the passes repeat (at most 8) until the length changes by < 0.5 mm, each wrap recomputed with
    the others' tangent points in the path; after a first pass where wrap 0 did not wrap and wrap 1 had an end
    inside its surface the two swap order. Complex throughout (the imaginary part carries the tangent,
    `wrapping`): `points` (world), the surfaces' world `rotations`/`origins` (one per wrap of the muscle);
    `tangents` (n, 2, 3), `arcs`, `wrapped` receive each wrap's world tangent points, arc length and whether it
    wraps."""
    first_point = arrays.point_start[m]
    n_wraps = arrays.wrap_start[m + 1] - arrays.wrap_start[m]
    nodes = np.empty(arrays.point_start[m + 1] - first_point + 2 * n_wraps, np.int64)
    n_nodes = np.int64(0)   # not a literal: one compiled callee for every call below
    for p in range(first_point, arrays.point_start[m + 1]):
        if active[p]:
            nodes[n_nodes] = p
            n_nodes += 1
    order = np.arange(n_wraps)
    results = np.zeros(n_wraps, np.int64)
    for k in range(n_wraps):
        wrapped[k] = False
        arcs[k] = 0.0
    ends = np.empty((2, 3), np.complex128)
    candidate = np.empty((2, 3), np.complex128)
    best = np.empty((2, 3), np.complex128)
    a = np.empty(3, np.complex128)
    b = np.empty(3, np.complex128)
    last_length = math.inf
    single = n_wraps == 1
    stale = arrays.opensim_wrap_cache[0]
    seen = np.zeros((n_wraps, 2), np.bool_)
    held = np.zeros((n_wraps, 2, 3), np.complex128)
    world = np.empty(3, np.complex128)
    for kk in range(1 if n_wraps < 2 else 8):
        for i in range(n_wraps):
            k = order[i]
            w = arrays.wrap_start[m] + k
            surface = arrays.wrap_surface[w]
            results[i] = NO_WRAP
            if wrapped[k]:
                n_nodes = _remove_wrap_nodes_py(nodes, n_nodes, k)
                wrapped[k] = False
            if not arrays.surface_active[surface]:
                continue
            low = first_point + arrays.wrap_range[w, 0]
            high = first_point + arrays.wrap_range[w, 1]
            while low <= high and not active[low]:
                low += 1
            while high >= low and not active[high]:
                high -= 1
            if low > high:   # OpenSim stops applying wraps altogether here
                return _nodes_length_py(nodes, n_nodes, points, tangents, arcs, stale, seen, held)
            start = -1
            end = -1
            for j in range(n_nodes):
                if nodes[j] == low:
                    start = j
                if nodes[j] == high:
                    end = j
            best_end = -1
            best_arc = 0.0 + 0.0j
            smallest_change = math.inf
            for j in range(start, end):
                if nodes[j] < 0 and nodes[j + 1] < 0:
                    other1 = arrays.wrap_surface[arrays.wrap_start[m] + (-1 - nodes[j]) // 2]
                    other2 = arrays.wrap_surface[arrays.wrap_start[m] + (-1 - nodes[j + 1]) // 2]
                    if other1 == other2:   # the arc over another wrap of the same surface
                        continue
                _node_position_py(nodes[j], points, tangents, a)
                _node_position_py(nodes[j + 1], points, tangents, b)
                for row in range(3):
                    ends[0, row] = ((a[0] - origins[k, 0]) * rotations[k, 0, row]
                                    + (a[1] - origins[k, 1]) * rotations[k, 1, row]
                                    + (a[2] - origins[k, 2]) * rotations[k, 2, row])
                    ends[1, row] = ((b[0] - origins[k, 0]) * rotations[k, 0, row]
                                    + (b[1] - origins[k, 1]) * rotations[k, 1, row]
                                    + (b[2] - origins[k, 2]) * rotations[k, 2, row])
                status, arc = _wrapped_segment_py(arrays, surface, arrays.wrap_method[w], single, ends[0], ends[1],
                                                  candidate[0], candidate[1])
                results[i] = status
                if status != MANDATORY_WRAP and status != WRAPPED:
                    continue
                change = 0.0
                if status == WRAPPED:   # OpenSim's calcPathLengthChange, the ends as getLocationInGround gives them
                    _ground_position_py(nodes[j], points, tangents, stale, seen, held, a)
                    _ground_position_py(nodes[j + 1], points, tangents, stale, seen, held, b)
                    change = -_distance_py(a, b)
                    for e in range(2):
                        for row in range(3):
                            world[row] = (origins[k, row] + rotations[k, row, 0] * candidate[e, 0]
                                          + rotations[k, row, 1] * candidate[e, 1]
                                          + rotations[k, row, 2] * candidate[e, 2])
                        change += _distance_py(a if e == 0 else b, world)
                    change += arc.real
                if status == MANDATORY_WRAP or change < smallest_change:
                    smallest_change = change
                    best_end = j + 1
                    best_arc = arc
                    for e in range(2):
                        for row in range(3):
                            best[e, row] = candidate[e, row]
                if status == MANDATORY_WRAP:
                    break
            if best_end >= 0:
                for e in range(2):
                    for row in range(3):
                        tangents[k, e, row] = (origins[k, row] + rotations[k, row, 0] * best[e, 0]
                                               + rotations[k, row, 1] * best[e, 1] + rotations[k, row, 2] * best[e, 2])
                arcs[k] = best_arc
                wrapped[k] = True
                for j in range(n_nodes - 1, best_end - 1, -1):
                    nodes[j + 2] = nodes[j]
                nodes[best_end] = -1 - 2 * k
                nodes[best_end + 1] = -2 - 2 * k
                n_nodes += 2
        length = _nodes_length_py(nodes, n_nodes, points, tangents, arcs, stale, seen, held)
        if abs(length.real - last_length) < 0.0005:
            break
        last_length = length.real
        if kk == 0 and n_wraps > 1 and results[0] == NO_WRAP and results[1] == INSIDE_RADIUS:
            order[0] = 1
            order[1] = 0
            if wrapped[0]:
                n_nodes = _remove_wrap_nodes_py(nodes, n_nodes, np.int64(0))
                wrapped[0] = False
    return _nodes_length_py(nodes, n_nodes, points, tangents, arcs, stale, seen, held)


def _same_motion_py(twists, s, frame, other):
    """Whether direction s moves `frame` and `other` alike (the world, GROUND, does not move)."""
    for i in range(6):
        a = twists[s, frame, i] if frame != GROUND else 0.0
        b = twists[s, other, i] if other != GROUND else 0.0
        if a != b:
            return False
    return True


def _rigid_direction_py(arrays, m, active, directions, s):
    """Whether direction s moves every frame of muscle m's path (its active points' and active surfaces' frames)
    as one rigid body and no moving point's coordinate: then its length cannot change (dl/ds = 0 exactly)."""
    reference = GROUND
    found = False
    for p in range(arrays.point_start[m], arrays.point_start[m + 1]):
        if not active[p]:
            continue
        if arrays.point_kind[p] == MOVING:
            for axis in range(3):
                c = arrays.point_coordinate[p, axis]
                if c >= 0 and directions.rates[s, c] != 0.0:
                    return False
        if not found:
            reference = arrays.point_frame[p]
            found = True
        elif not _same_motion_py(directions.twists, s, reference, arrays.point_frame[p]):
            return False
    for w in range(arrays.wrap_start[m], arrays.wrap_start[m + 1]):
        surface = arrays.wrap_surface[w]
        if arrays.surface_active[surface] and not _same_motion_py(directions.twists, s, reference,
                                                                   arrays.surface_frame[surface]):
            return False
    return True


def _wrapped_muscle_py(arrays, m, rotations, positions, coordinates, points, active, directions, derivatives,
                       wrap_points, wrap_active):
    """Length of muscle m over its wraps (`_muscle_length_py`) and its derivatives dl/ds along the directions s
    of `directions` (into derivatives[s]), in forward mode: each pass carries the tangent of every point and
    surface placement along one direction through the wraps' algebra as the imaginary part of complex numbers
    (`wrapping`: branches on real parts; exact to round-off, no truncation error). Frame f moves with the twist
    directions.twists[s, f] = [v; ω] (velocity of the point at the world origin, angular velocity): a point p
    on it at v + ω × p (plus R_f ∂p_local/∂c ċ for a moving point, ċ = directions.rates[s]), its surfaces'
    origins alike and their axes at ω × axis. Directions that move the whole path rigidly are skipped (zero).
    One pass per remaining direction; the first gives the length and tangent points (one real pass when none
    remains)."""
    first_point = arrays.point_start[m]
    first_wrap = arrays.wrap_start[m]
    n_wraps = arrays.wrap_start[m + 1] - first_wrap
    stepped = np.zeros((points.shape[0], 3), np.complex128)
    base_rotations = np.empty((n_wraps, 3, 3))
    base_origins = np.empty((n_wraps, 3))
    surface_rotations = np.empty((n_wraps, 3, 3), np.complex128)
    surface_origins = np.empty((n_wraps, 3), np.complex128)
    for k in range(n_wraps):
        _surface_placement_py(arrays, arrays.wrap_surface[first_wrap + k], rotations, positions, base_rotations[k],
                              base_origins[k])
    tangents = np.zeros((n_wraps, 2, 3), np.complex128)
    arcs = np.zeros(n_wraps, np.complex128)
    wrapped = np.zeros(n_wraps, np.bool_)
    local = np.empty(3)
    local_derivative = np.empty((3, 3))
    rate = np.empty(3)
    twist = np.empty(6)
    n_directions = directions.twists.shape[0]
    length = math.nan
    evaluated = False
    for s in range(n_directions + 1):
        moving = s < n_directions
        if moving:
            derivatives[s] = 0.0
            if _rigid_direction_py(arrays, m, active, directions, s):
                continue
        elif evaluated:
            break
        for p in range(first_point, arrays.point_start[m + 1]):
            if not active[p]:
                continue
            frame = arrays.point_frame[p]
            for i in range(3):
                rate[i] = 0.0
            if moving and frame != GROUND:
                v = directions.twists[s, frame]
                rate[0] = v[0] + v[4] * points[p, 2] - v[5] * points[p, 1]
                rate[1] = v[1] + v[5] * points[p, 0] - v[3] * points[p, 2]
                rate[2] = v[2] + v[3] * points[p, 1] - v[4] * points[p, 0]
            if moving and arrays.point_kind[p] == MOVING:
                _point_local_py(arrays, p, coordinates, local, local_derivative)
                for axis in range(3):
                    c = arrays.point_coordinate[p, axis]
                    if c < 0:
                        continue
                    for row in range(3):
                        rate[row] += (_world_derivative_py(rotations, frame, local_derivative, axis, row)
                                      * directions.rates[s, c])
            for i in range(3):
                stepped[p, i] = points[p, i] + 1j * COMPLEX_STEP * rate[i]
        for k in range(n_wraps):
            frame = arrays.surface_frame[arrays.wrap_surface[first_wrap + k]]
            for i in range(6):
                twist[i] = directions.twists[s, frame, i] if moving and frame != GROUND else 0.0
            for i in range(3):   # origin at v + ω × o; R → R + h [ω]× R
                j1 = (i + 1) % 3
                j2 = (i + 2) % 3
                surface_origins[k, i] = base_origins[k, i] + 1j * COMPLEX_STEP * (
                    twist[i] + twist[3 + j1] * base_origins[k, j2] - twist[3 + j2] * base_origins[k, j1])
                for column in range(3):
                    surface_rotations[k, i, column] = base_rotations[k, i, column] + 1j * COMPLEX_STEP * (
                        twist[3 + j1] * base_rotations[k, j2, column] - twist[3 + j2] * base_rotations[k, j1, column])
        value = _muscle_length_py(arrays, m, stepped, active, surface_rotations, surface_origins, tangents, arcs,
                                  wrapped)
        if moving:
            derivatives[s] = value.imag / COMPLEX_STEP
        if not evaluated:
            evaluated = True
            length = value.real
            for k in range(n_wraps):
                wrap_active[first_wrap + k] = wrapped[k]
                for e in range(2):
                    for i in range(3):
                        wrap_points[first_wrap + k, e, i] = tangents[k, e, i].real if wrapped[k] else 0.0
    return length


def path_gradients_py(arrays, rotations, positions, coordinates, directions, out):
    """Fill the PathGradient `out`: lengths (n_muscles), points (world, m), active, the wraps' world tangent
    points; for straight paths ∂l/∂p, ∂l/∂c and ∂l/∂(frame motion), for wrapped paths dl/ds along `directions`
    (a PathDirections; module docstring)."""
    lengths, points, active, dl_dpoints = out.lengths, out.points, out.active, out.dl_dpoints
    dl_dcoordinates, dl_dframes, wrap_points, wrap_active = (out.dl_dcoordinates, out.dl_dframes, out.wrap_points,
                                                             out.wrap_active)
    local = np.empty(3)
    local_derivative = np.empty((3, 3))
    for m in range(arrays.point_start.shape[0] - 1):
        first_point = arrays.point_start[m]
        last_point = arrays.point_start[m + 1]
        for c in range(dl_dcoordinates.shape[1]):
            dl_dcoordinates[m, c] = 0.0
        for f in range(dl_dframes.shape[1]):
            for k in range(6):
                dl_dframes[m, f, k] = 0.0
        for s in range(out.dl_ddirections.shape[1]):
            out.dl_ddirections[m, s] = 0.0
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
        if arrays.wrap_start[m + 1] > arrays.wrap_start[m]:
            lengths[m] = _wrapped_muscle_py(arrays, m, rotations, positions, coordinates, points, active, directions,
                                            out.dl_ddirections[m], wrap_points, wrap_active)
        else:
            lengths[m] = _straight_path_py(arrays, m, points, active, dl_dpoints)
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
                    total += dl_dpoints[p, row] * _world_derivative_py(rotations, frame, local_derivative, axis, row)
                dl_dcoordinates[m, c] += total


def _world_derivative_py(rotations, frame, local_derivative, axis, row):
    """Component `row` of R_frame ∂p_local/∂c_axis: a moving point's world velocity per unit coordinate rate."""
    if frame == GROUND:
        return local_derivative[row, axis]
    return (rotations[frame, row, 0] * local_derivative[0, axis] + rotations[frame, row, 1] * local_derivative[1, axis]
            + rotations[frame, row, 2] * local_derivative[2, axis])


def _straight_path_py(arrays, m, points, active, dl_dpoints):
    """Length of muscle m's straight path through its active points; ∂l/∂p (the unit vectors of the two
    segments at each point) added to dl_dpoints."""
    previous = -1
    total_length = 0.0
    for p in range(arrays.point_start[m], arrays.point_start[m + 1]):
        if not active[p]:
            continue
        if previous >= 0:
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
    return total_length


def _add_wrench_py(dl_dframes, m, frame, rx, ry, rz, gx, gy, gz):
    """dl_dframes[m, frame] += [g; r × g]."""
    dl_dframes[m, frame, 0] += gx
    dl_dframes[m, frame, 1] += gy
    dl_dframes[m, frame, 2] += gz
    dl_dframes[m, frame, 3] += ry * gz - rz * gy
    dl_dframes[m, frame, 4] += rz * gx - rx * gz
    dl_dframes[m, frame, 5] += rx * gy - ry * gx


#: the names `_wrapped_segment_py` calls the surface codes' wrap kernels by (`wrapping.SURFACE_KERNELS` order)
_SURFACE_CALLERS = ("_CYLINDER_WRAP", "_SPHERE_WRAP", "_ELLIPSOID_WRAP", "_TORUS_WRAP")


def _uncompiled_caller(kernel):
    """Uncompiled (numba off, or a run's cold start), in place of an address caller: the wrap kernel's uncompiled
    form whatever the address (none is compiled there)."""
    form = jit.compiled(kernel, bind=wrap_bindings)

    def caller(address):
        return form
    caller.py_func = caller   # (bound as it is, `core.jit`)
    return caller


def _wrap_kernels() -> dict:
    """`_wrapped_muscle_py`'s path kernels: the muscle's length (`_muscle_length_py`, with the segment dispatch
    inlined) and the surface codes' address callers — the wrap kernels are C callables of their own
    (`wrap_address`), not linked: numba re-optimizes a linked callee's whole code inside every caller, and a model
    compiles only the kinds of surface it has."""
    if jit.compiling():
        surfaces = {name: jit.address_caller(signature)
                    for name, signature in zip(_SURFACE_CALLERS, surface_signatures())}
    else:
        surfaces = {name: _uncompiled_caller(kernel) for name, kernel in zip(_SURFACE_CALLERS, SURFACE_KERNELS)}
    helpers = {"_node_position_py": jit.compiled(_node_position_py),
               "_remove_wrap_nodes_py": jit.compiled(_remove_wrap_nodes_py),
               "_distance_py": jit.compiled(_distance_py)}
    helpers["_ground_position_py"] = jit.compiled(_ground_position_py, bind=helpers)
    helpers["_nodes_length_py"] = jit.compiled(_nodes_length_py, bind=helpers)
    length = jit.compiled(_muscle_length_py, bind={**surfaces, **helpers, "_wrapped_segment_py": _wrapped_segment_py})
    return {**helpers, "_muscle_length_py": length}


# The wrapped paths' kernel (`_wrapped_muscle_py`: the wraps' geometry and its tangents, most of the muscle code)
# is compiled once, as a C callable reached by its address (`PathArrays.wrap_address`), and only for a model with
# wraps: linked into its callers, numba would re-optimize all of it inside each of them.
def wrapped_signature(arrays: PathArrays):
    """The numba signature of `_wrapped_muscle_py` for `arrays`."""
    return jit.kernel_signature("float64", arrays, 0, np.empty((0, 3, 3)), np.empty((0, 3)), np.empty(0),
                                np.empty((0, 3)), np.empty(0, np.bool_), no_directions(0, 0), np.empty(0),
                                np.empty((0, 2, 3)), np.empty(0, np.bool_), readonly=(2, 3, 4, 5, 6))


def _addressed_wrapped_muscle_py(arrays, m, rotations, positions, coordinates, points, active, directions,
                                 derivatives, wrap_points, wrap_active):
    """`_wrapped_muscle_py` through its address (NaN when `arrays` has none)."""
    if arrays.wrap_address[0] == 0:
        return math.nan
    return _WRAPPED(arrays.wrap_address[0])(arrays, m, rotations, positions, coordinates, points, active, directions,
                                            derivatives, wrap_points, wrap_active)


def _wrapped_bindings() -> dict:
    """`_wrapped_muscle_py`'s callees (for `core.jit.compiled`'s bind)."""
    return {**_wrap_kernels(), "_surface_placement_py": _surface_placement_py,
            "_rigid_direction_py": _rigid_direction_py, "_same_motion_py": _same_motion_py,
            "_point_local_py": _point_local_py, "location_value_py": location_value_py,
            "_world_derivative_py": _world_derivative_py}


def wrap_address(arrays: PathArrays) -> int:
    """arrays.wrap_address[0], set on first use for paths with wraps while this thread compiles (compiling
    `_wrapped_muscle_py` and the wrap kernels of the paths' kinds of surface, or loading them out of numba's cache,
    once per process); 0 without wraps, and 0 inside `core.jit.uncompiled()` (a run's cold start: the uncompiled
    `path_gradients_kernel` calls the wrapped kernel's uncompiled form itself, so nothing compiles there)."""
    if arrays.wrap_address[0] == 0 and arrays.wrap_surface.shape[0] and jit.compiling():
        signatures = surface_signatures()
        for kind in sorted(set(arrays.surface_kind.tolist())):   # the kinds of surface the paths have
            arrays.wrap_address[1 + kind] = jit.function_address(SURFACE_KERNELS[kind], signatures[kind],
                                                                 bind=wrap_bindings)
        arrays.wrap_address[0] = jit.function_address(_wrapped_muscle_py, wrapped_signature(arrays),
                                                      bind=_wrapped_bindings)
    return int(arrays.wrap_address[0])


def path_gradients_kernel(arrays: PathArrays):
    """The compiled `path_gradients_py` (its wrapped paths called by address: `wrap_address`) for path arrays like
    `arrays`. numpy's error model, as the muscle stage that calls it: a division by zero gives a non-finite length,
    which the callers check. Uncompiled (numba off, or inside `core.jit.uncompiled()`): its uncompiled form calling
    the wrapped paths' uncompiled kernel directly (no address)."""
    if jit.compiling():
        wrapped = jit.compiled(_addressed_wrapped_muscle_py,
                               bind={"_WRAPPED": jit.address_caller(wrapped_signature(arrays))})
    else:
        wrapped = jit.compiled(_wrapped_muscle_py, bind=_wrapped_bindings)
    return jit.compiled(path_gradients_py, bind={
        "_wrapped_muscle_py": wrapped, "_straight_path_py": _straight_path_py, "_point_active_py": _point_active_py,
        "_point_local_py": _point_local_py, "location_value_py": location_value_py, "_add_wrench_py": _add_wrench_py,
        "_world_derivative_py": _world_derivative_py})


def no_directions(n_frames: int, n_coordinates: int, n_directions: int = 0) -> PathDirections:
    """Zeroed PathDirections (n_directions of them) for paths of n_frames frames and n_coordinates coordinates."""
    return PathDirections(twists=np.zeros((n_directions, n_frames, 6)),
                          rates=np.zeros((n_directions, n_coordinates)))


def frame_directions(n_frames: int, n_coordinates: int, wrapped: bool = True,
                     moving: np.ndarray | None = None) -> PathDirections:
    """The directions whose dl/ds give a wrapped path's ∂l/∂(frame motion) and ∂l/∂c (`frame_wrenches_py`): each
    frame's six unit twists — a unit velocity of the point at the world origin along x, y, z, then a unit spin
    about x, y, z — then a unit rate of each coordinate (6 n_frames + n_coordinates directions; none when not
    `wrapped`). Frames where `moving` (bool per frame) is False get zero twists: every path is rigid along them
    (skipped, derivative zero)."""
    if not wrapped:
        return no_directions(n_frames, n_coordinates)
    unit = no_directions(n_frames, n_coordinates, 6 * n_frames + n_coordinates)
    for f in range(n_frames):
        if moving is None or moving[f]:
            unit.twists[6 * f:6 * f + 6, f] = np.eye(6)
    unit.rates[6 * n_frames:] = np.eye(n_coordinates)
    return unit


def frame_wrenches_py(arrays, positions, out):
    """A wrapped path's ∂l/∂(frame motion) and ∂l/∂c, as a straight path's: its dl/ds along `frame_directions`
    (out.dl_ddirections) into out.dl_dframes and out.dl_dcoordinates (straight paths untouched). The spins were
    about the world origin: M about frame f's origin o_f (`positions`, m) is that moment minus o_f × F."""
    n_frames = out.dl_dframes.shape[1]
    for m in range(arrays.point_start.shape[0] - 1):
        if arrays.wrap_start[m + 1] == arrays.wrap_start[m]:
            continue
        d = out.dl_ddirections[m]
        for f in range(n_frames):
            k = 6 * f
            f0, f1, f2 = d[k], d[k + 1], d[k + 2]
            o0, o1, o2 = positions[f, 0], positions[f, 1], positions[f, 2]
            out.dl_dframes[m, f, 0] = f0
            out.dl_dframes[m, f, 1] = f1
            out.dl_dframes[m, f, 2] = f2
            out.dl_dframes[m, f, 3] = d[k + 3] - (o1 * f2 - o2 * f1)
            out.dl_dframes[m, f, 4] = d[k + 4] - (o2 * f0 - o0 * f2)
            out.dl_dframes[m, f, 5] = d[k + 5] - (o0 * f1 - o1 * f0)
        for c in range(out.dl_dcoordinates.shape[1]):
            out.dl_dcoordinates[m, c] = d[6 * n_frames + c]


_frame_wrenches = jit.lazy(frame_wrenches_py)


def gradient_buffers(paths: MusclePaths, n_directions: int = 0) -> PathGradient:
    """A zeroed PathGradient for `paths` (the kernel's output arrays), for `n_directions` directions."""
    n_points = paths.arrays.point_kind.shape[0]
    n_muscles = len(paths.names)
    n_wraps = paths.arrays.wrap_surface.shape[0]
    return PathGradient(lengths=np.zeros(n_muscles), points=np.zeros((n_points, 3)),
                        active=np.zeros(n_points, dtype=np.bool_), dl_dpoints=np.zeros((n_points, 3)),
                        dl_dcoordinates=np.zeros((n_muscles, len(paths.coordinates))),
                        dl_dframes=np.zeros((n_muscles, len(paths.frames), 6)),
                        dl_ddirections=np.zeros((n_muscles, n_directions)),
                        wrap_points=np.zeros((n_wraps, 2, 3)), wrap_active=np.zeros(n_wraps, dtype=np.bool_))


def _run_kernel(paths: MusclePaths, rotations, positions, values, directions: PathDirections):
    result = gradient_buffers(paths, directions.twists.shape[0])
    wrap_address(paths.arrays)
    path_gradients_kernel(paths.arrays)(paths.arrays, rotations, positions, values, directions, result)
    return result


def path_gradients(paths: MusclePaths, body_rotations: np.ndarray, body_positions: np.ndarray,
                   coordinates: np.ndarray, directions: PathDirections | None = None) -> PathGradient:
    """Lengths and their exact gradients (module docstring); rotations (n_frames, 3, 3), positions (n_frames, 3)
    in `paths.frames` order, coordinates in `paths.coordinates` order. Without `directions`: ∂l/∂(frame motion)
    and ∂l/∂c of every path (a wrapped path's from one forward pass per frame twist and coordinate,
    `frame_directions`; its ∂l/∂p stays zero). With `directions`: dl/ds of the wrapped paths along them in
    `dl_ddirections` (one pass each; their other gradient fields zero)."""
    state = _checked_state(paths, body_rotations, body_positions, coordinates)
    if directions is not None:
        twists = np.ascontiguousarray(np.asarray(directions.twists, dtype=float))
        rates = np.ascontiguousarray(np.asarray(directions.rates, dtype=float))
        expected = (len(paths.frames), 6)
        if twists.ndim != 3 or twists.shape[1:] != expected or rates.shape != (len(twists), len(paths.coordinates)):
            raise ModelError(f"twists {twists.shape}, rates {rates.shape}", argument="directions",
                             expected=f"twists (n, {expected[0]}, 6), rates (n, {len(paths.coordinates)})")
        return _run_kernel(paths, *state, PathDirections(twists, rates))
    unit = frame_directions(len(paths.frames), len(paths.coordinates),
                            bool(np.any(paths.arrays.wrap_start[1:] > paths.arrays.wrap_start[:-1])))
    result = _run_kernel(paths, *state, unit)
    _frame_wrenches(paths.arrays, state[1], result)
    return result


def path_lengths(paths: MusclePaths, body_rotations: np.ndarray, body_positions: np.ndarray,
                 coordinates: np.ndarray) -> np.ndarray:
    """Musculotendon path lengths l (m), one per muscle in `paths.names` order."""
    return path_gradients(paths, body_rotations, body_positions, coordinates,
                          no_directions(len(paths.frames), len(paths.coordinates))).lengths


def moment_arms(paths: MusclePaths, body_rotations: np.ndarray, body_positions: np.ndarray,
                coordinates: np.ndarray, frame_jacobians: np.ndarray,
                coordinate_jacobian: np.ndarray | None = None) -> np.ndarray:
    """R = −dl/dq (n_muscles × n_q; m for a rotational q, dimensionless for a translational one), OpenSim's sign.

    `frame_jacobians` (n_frames, 6, n_q): for each frame of `paths.frames`, [linear velocity of its origin;
    angular velocity] in world axes per unit q̇ (`biobullet.algorithms.kinematics.frame_jacobian` at the origin).
    `coordinate_jacobian` (n_coordinates, n_q): ∂c/∂q of the coordinates that move points (default: identity,
    i.e. q are these coordinates). Wrapped paths: one forward pass per q."""
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
    origins = np.asarray(body_positions, dtype=float)
    twists = np.empty((n_q, len(paths.frames), 6))   # each frame's twist per unit q̇_j, v at the world origin
    twists[:, :, 3:] = jacobians[:, 3:].transpose(2, 0, 1)
    twists[:, :, :3] = jacobians[:, :3].transpose(2, 0, 1) - np.cross(twists[:, :, 3:], origins[None])
    gradient = path_gradients(paths, body_rotations, body_positions, coordinates,
                              PathDirections(twists, np.ascontiguousarray(coupling.T)))
    # dl/dq = Σ_f [F; M]_f · J_f + ∂l/∂c ∂c/∂q (straight paths) + dl/ds (wrapped paths)
    return -(np.einsum("mfk,fkq->mq", gradient.dl_dframes, jacobians) + gradient.dl_dcoordinates @ coupling
             + gradient.dl_ddirections)


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


__all__ = ["PathArrays", "MusclePaths", "PathGradient", "PathDirections", "gradient_buffers", "no_directions",
           "compile_paths", "path_gradients", "path_lengths", "moment_arms", "path_gradients_kernel", "wrap_address",
           "frame_directions", "frame_wrenches_py",
           "wrapped_signature"]
