"""The muscles of a loaded Model (issue 26's public API): `names`, `lengths`, `moment_arms`,
`equilibrium_tendon_forces`.

A model's muscles are its `<muscle>` elements (an `.osim` model's muscles become such elements on import). They
are parsed once per model (`muscle_set`, kept in `model.derived`): path frames are link names, path coordinates
joint names. At a configuration q the links' world placements and frame Jacobians come from the model's tree
(`algorithms.kinematics`) at x(q), and the joint values θ(q) and G = ∂θ/∂q (θ̇ = G q̇) from its coordinate map,
so joint functions, couplers and loops enter the lengths and R = −dl/dq exactly:

    dl/dq = Σ_f [F; M]_f · J_f G + ∂l/∂θ · G_θ          (J_f: 6 × n_tangent at link f's origin, world axes)
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from biobullet.algorithms.compiled_kernels import placements
from biobullet.core.errors import ModelError
from biobullet.muscles import hill
from biobullet.muscles.description import MuscleSetDescription
from biobullet.muscles.element import parse_muscles
from biobullet.muscles.path import (MusclePaths, PathDirections, compile_paths, no_directions, path_gradients,
                                   path_lengths)

#: key of a model's muscles in `Model.derived`
DERIVED_KEY = "muscles.model_muscles"


@dataclass(frozen=True)
class ModelMuscles:
    """A model's muscles, compiled (`paths` and `table` rows in `muscle_set`'s file order); `joint_slots[c]` is
    the (x index, ẋ index) of path coordinate c."""

    muscle_set: MuscleSetDescription
    paths: MusclePaths
    table: hill.MuscleTable
    joint_slots: np.ndarray
    frame_body: np.ndarray          # (n_frames,) the body carrying each path frame (−1: the world)
    frame_rotation: np.ndarray      # (n_frames, 3, 3) the frame in its body (world placement when body −1)
    frame_translation: np.ndarray   # (n_frames, 3)
    frame_ancestry: np.ndarray      # (n_frames, n_tangent) 1 where a tangent direction moves the frame


def muscle_set(model) -> ModelMuscles:
    """The compiled muscles of `model` (parsed on first use, then kept with the model); ModelError naming the
    file and element on a bad `<muscle>`."""
    cached = model.derived.get(DERIVED_KEY)
    if cached is None:
        cached = model.derived[DERIVED_KEY] = _compile(model)
    return cached


def _compile(model) -> ModelMuscles:
    description = model.description
    ranges = {}
    for joint in description.joints:
        if joint.movable:
            ranges[joint.name] = (-np.inf if joint.lower is None else joint.lower,
                                  np.inf if joint.upper is None else joint.upper)
    block = ET.fromstring("<biobullet>" + "".join(description.muscles) + "</biobullet>")
    full = parse_muscles(description.file, block, set(model.link_names), ranges)
    paths = compile_paths(full)
    body_of_joint = {body.joint: body for body in model.bodies}
    slots = np.array([(body_of_joint[c].q_index, body_of_joint[c].v_index) for c in paths.coordinates],
                     dtype=np.int64).reshape(-1, 2)
    frames = [model.frame(name) for name in paths.frames]
    ancestry = np.zeros((len(frames), model.n_tangent))
    for k, frame in enumerate(frames):
        index = frame.body
        while index >= 0:
            body = model.bodies[index]
            ancestry[k, body.v_index:body.v_index + body.nv] = 1.0
            index = body.parent
    return ModelMuscles(muscle_set=full, paths=paths, table=hill.muscle_table(full.muscles),
                        joint_slots=slots,
                        frame_body=np.array([f.body for f in frames], dtype=np.int64),
                        frame_rotation=np.array([f.rotation for f in frames], dtype=float).reshape(-1, 3, 3),
                        frame_translation=np.array([f.translation for f in frames], dtype=float).reshape(-1, 3),
                        frame_ancestry=ancestry)


def names(model) -> tuple[str, ...]:
    """The model's muscle names, in file order (the rows of `lengths`, `moment_arms`, ...)."""
    return muscle_set(model).muscle_set.names


def path_polylines(model, x) -> list[np.ndarray]:
    """World polylines (k × 3, m) of every muscle's path at tree configuration x (`names` order): its active
    points with each active wrap's two tangent points inserted in the segment they wrap (the arc between them
    drawn as a chord) — for drawing."""
    muscles = muscle_set(model)
    _, rotations, origins, values, _ = _placements(model, muscles, np.asarray(x, dtype=float))
    result = path_gradients(muscles.paths, rotations, origins, values,
                            no_directions(len(muscles.paths.frames), len(muscles.paths.coordinates)))
    arrays = muscles.paths.arrays
    out = [np.zeros((0, 3)) for _ in muscles.muscle_set.muscles]
    for m in range(len(out)):
        indices = [p for p in range(arrays.point_start[m], arrays.point_start[m + 1]) if result.active[p]]
        points = [result.points[p] for p in indices]
        inserts: dict[int, list[tuple[float, np.ndarray, np.ndarray]]] = {}
        for w in range(arrays.wrap_start[m], arrays.wrap_start[m + 1]):
            if not result.wrap_active[w]:
                continue
            first, second = result.wrap_points[w]
            middle = 0.5 * (first + second)
            best, where, along = np.inf, 0, 0.0
            for k in range(len(points) - 1):   # the segment the wrap belongs to: nearest to its tangent points
                a, b = points[k], points[k + 1]
                t = float(np.clip(np.dot(middle - a, b - a) / max(np.dot(b - a, b - a), 1e-300), 0.0, 1.0))
                distance = float(np.linalg.norm(a + t * (b - a) - middle))
                if distance < best:
                    best, where, along = distance, k, t
            inserts.setdefault(where, []).append((along, first, second))
        polyline = []
        for k, point in enumerate(points):
            polyline.append(point)
            for _, first, second in sorted(inserts.get(k, []), key=lambda item: item[0]):
                polyline += [first, second]
        out[m] = np.array(polyline).reshape(-1, 3)
    return out


def _state(model, muscles: ModelMuscles, q):
    """`_placements` at the tree configuration of coordinates q."""
    return _placements(model, muscles, model.joint_configuration(q))


def _placements(model, muscles: ModelMuscles, x):
    """(x, link rotations, link origins, joint values of the path coordinates, world motion subspace S (6 ×
    n_tangent at the world origin, [linear; angular])) at tree configuration x: one compiled placement pass."""
    n_bodies = len(model.bodies)
    body_rotations, body_positions = np.empty((n_bodies, 3, 3)), np.empty((n_bodies, 3))
    subspace = np.zeros((6, model.n_tangent))
    if n_bodies:
        meta, packed = model.tree_pack
        placements(meta, packed, np.ascontiguousarray(x, dtype=float), body_rotations, body_positions, subspace)
    on_body = muscles.frame_body >= 0
    carrier = np.where(on_body, muscles.frame_body, 0)
    rotations = np.where(on_body[:, None, None], body_rotations[carrier] @ muscles.frame_rotation,
                         muscles.frame_rotation) if n_bodies else muscles.frame_rotation.copy()
    origins = np.where(on_body[:, None], np.einsum("fij,fj->fi", body_rotations[carrier], muscles.frame_translation)
                       + body_positions[carrier], muscles.frame_translation) if n_bodies \
        else muscles.frame_translation.copy()
    return x, rotations, origins, x[muscles.joint_slots[:, 0]], subspace


def lengths(model, q) -> np.ndarray:
    """Musculotendon path lengths l(q) (m), one per muscle (`names` order)."""
    muscles = muscle_set(model)
    _, rotations, origins, values, _ = _state(model, muscles, q)
    return path_lengths(muscles.paths, rotations, origins, values)


def moment_arms(model, q) -> np.ndarray:
    """R = −dl/dq (n_muscles × n_coordinates, `model.coordinate_names` order; m per rad for rotational
    coordinates, dimensionless for translational ones). OpenSim's sign: a positive moment arm means the muscle's
    tension drives the coordinate positively. Exact through joint functions, couplers and loops."""
    muscles = muscle_set(model)
    if model.nq != model.nv:
        raise ModelError("moment arms with respect to a floating base's quaternion coordinates are not defined",
                         file=model.file, argument="model", expected="a model with a fixed base (nq = nv)")
    _, rotations, origins, values, subspace = _state(model, muscles, q)
    _, _, gradient, _ = model.joint_state(q, np.zeros(model.nv))
    paths = muscles.paths
    motions = muscles.frame_ancestry[:, None, :] * subspace[None]   # (n_frames, 6, n_tangent)
    coordinate_rates = gradient[muscles.joint_slots[:, 1]]
    twists = np.ascontiguousarray(np.einsum("fat,tq->qfa", motions, gradient))   # each frame's twist per unit q̇_j
    # wrap-free paths: their exact gradient as [F; M] per frame; wrapped paths: one forward pass per coordinate
    result = path_gradients(paths, rotations, origins, values,
                            PathDirections(twists, np.ascontiguousarray(coordinate_rates.T)))
    # dl/dẋ_k = Σ_f A_fk (v_k·F_f + ω_k·(M_f + o_f × F_f)), (v_k, ω_k) = S[:, k] at the world origin
    wrenches = result.dl_dframes.copy()   # [F; M about the frame origin] → [F; M about the world origin]
    wrenches[:, :, 3:] += np.cross(origins[None], wrenches[:, :, :3])
    tangent = wrenches.reshape(len(wrenches), 6 * len(paths.frames)) @ motions.reshape(-1, subspace.shape[1])
    return -(tangent @ gradient + result.dl_dcoordinates @ coordinate_rates + result.dl_ddirections)


def equilibrium_tendon_forces(model, q, activation) -> np.ndarray:
    """Tendon forces (N) in static equilibrium (zero fiber velocity) at configuration q and `activation` (a
    scalar or one value per muscle), each muscle's tendon rigid or compliant as in its file."""
    muscles = muscle_set(model)
    n = len(muscles.muscle_set.muscles)
    a = np.asarray(activation)
    # text, None or complex numbers: the Model's argument check (not numpy's bare ValueError or TypeError)
    a = model.checked("activation", np.full(n, a) if a.ndim == 0 and a.dtype.kind in "biuf" else activation, n)
    if np.any(a < 0.0) or np.any(a > 1.0):
        raise ModelError("activation outside [0, 1]", file=model.file, argument="activation",
                         expected=f"a scalar or {n} values in [0, 1]")
    _, rotations, origins, values, _ = _state(model, muscles, q)
    return hill.equilibrium_tendon_forces(muscles.table, path_lengths(muscles.paths, rotations, origins, values),
                                          np.ascontiguousarray(a))


__all__ = ["ModelMuscles", "muscle_set", "names", "lengths", "moment_arms", "equilibrium_tendon_forces",
           "path_polylines"]
