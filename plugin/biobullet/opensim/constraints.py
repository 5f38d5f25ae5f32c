"""OpenSim PointConstraint and WeldConstraint → `<loop>` elements, and the choice of the coordinates they make
dependent.

PointConstraint (location_body_1 on body_1 = location_body_2 on body_2) → `<loop type="point">`;
WeldConstraint (frame1 = frame2, both PhysicalFrames) → `<loop type="weld">` with the frames' orientations as
`rpy_a` / `rpy_b`. Points and frames are moved from the OpenSim body frames to the URDF link frames.

OpenSim keeps every coordinate and enforces the constraints with multipliers; biobullet's `reduced` formulation
needs as many dependent coordinates as loop equations. `dependent_coordinates` picks them at the default pose: the
columns of the loops' Jacobian over the independent coordinates (Φ_x G), taken greedily from the **last**
coordinate of the CoordinateSet backwards, each kept if it raises the rank. If a PointConstraint's three rows
have rank 2 there (a planar mechanism: the row along the joints' common axis vanishes identically), the loop
becomes `<loop type="planar">` in the plane ⟂ that direction, attached to body_1's link — the same motion, without
the redundant row. Any other rank deficiency is an error naming the constraint.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable
from xml.sax.saxutils import quoteattr

import numpy as np

from biobullet.core.errors import ModelError, SourceRef
from biobullet.opensim.document import Document, PropertyReader, find_frame, resolve_path, vector_text
from biobullet.spatial.rotations import matrix_to_rpy

LOOP_CONSTRAINTS = ("PointConstraint", "WeldConstraint")
#: singular values below RANK_TOLERANCE × the largest count as zero when choosing dependent coordinates
RANK_TOLERANCE = 1e-9


@dataclass(frozen=True)
class LoopSpec:
    """One `<loop>` to write: points (and, for a weld, frame orientations) in the link frames."""

    name: str
    type: str
    link_a: str
    xyz_a: np.ndarray
    rotation_a: np.ndarray
    link_b: str
    xyz_b: np.ndarray
    rotation_b: np.ndarray
    source: SourceRef
    normal: np.ndarray | None = None   # planar: the dropped direction, in link_a

    def element(self) -> str:
        extra = ""
        if self.type == "weld":
            extra = (f' rpy_a="{vector_text(matrix_to_rpy(self.rotation_a))}" '
                     f'rpy_b="{vector_text(matrix_to_rpy(self.rotation_b))}"')
        elif self.type == "planar":
            extra = f' normal="{vector_text(self.normal)}"'
        return (f"    <loop name={quoteattr(self.name)} type=\"{self.type}\" link_a={quoteattr(self.link_a)} "
                f'xyz_a="{vector_text(self.xyz_a)}" link_b={quoteattr(self.link_b)} xyz_b="{vector_text(self.xyz_b)}"{extra}/>')


#: placement of an OpenSim frame or body path in the URDF: (link, rotation, translation) of the frame in the link,
#: or None if the body is not imported
FramePlacement = Callable[[str], "tuple[str, np.ndarray, np.ndarray] | None"]


def constraint_loops(document: Document, place: FramePlacement) -> tuple[list[LoopSpec], set[str], list[str]]:
    """(loops, paths of the constraints mapped or switched off, reports) of the document's Point and Weld
    constraints."""
    reader = PropertyReader(document.file)
    known = set(document.bodies) | set(document.frames) | {document.ground}
    loops: list[LoopSpec] = []
    mapped: set[str] = set()
    reports: list[str] = []
    for constraint in document.constraints:
        if constraint.type not in LOOP_CONSTRAINTS:
            continue
        mapped.add(constraint.path)
        e = constraint.element
        if not reader.flag(e, "isEnforced", True) or reader.flag(e, "isDisabled"):
            continue   # not enforced in OpenSim: nothing to impose
        ends = []
        sockets = ("socket_body_1", "socket_body_2") if constraint.type == "PointConstraint" else \
            ("socket_frame1", "socket_frame2")
        for socket in sockets:
            path = find_frame(resolve_path(constraint.path, reader.property_text(e, socket)), known,
                              constraint.source, socket)
            placed = place(path)
            if placed is None:
                reports.append(f"{constraint.type} {constraint.name}: its body {path!r} is not imported; "
                               "not imported")
                break
            ends.append(placed)
        if len(ends) != 2:
            continue
        (link_a, rotation_a, origin_a), (link_b, rotation_b, origin_b) = ends
        if link_a == link_b:
            reports.append(f"{constraint.type} {constraint.name}: both ends on link {link_a!r}; not imported")
            continue
        if constraint.type == "PointConstraint":
            xyz_a = rotation_a @ np.asarray(reader.numbers(e, "location_body_1", 3, (0.0, 0.0, 0.0))) + origin_a
            xyz_b = rotation_b @ np.asarray(reader.numbers(e, "location_body_2", 3, (0.0, 0.0, 0.0))) + origin_b
            loops.append(LoopSpec(constraint.name, "point", link_a, xyz_a, np.eye(3), link_b, xyz_b, np.eye(3),
                                  constraint.source))
        else:
            loops.append(LoopSpec(constraint.name, "weld", link_a, origin_a, rotation_a, link_b, origin_b,
                                  rotation_b, constraint.source))
    return loops, mapped, reports


def dependent_coordinates(model, loops: list[LoopSpec], independent: tuple[str, ...]
                          ) -> tuple[tuple[str, ...], list[LoopSpec]]:
    """(dependent coordinates, loops with redundant point loops made planar) for `model`, the translated tree
    without the loops, at its default pose (see the module docstring)."""
    from biobullet.algorithms.kinematics import frame_placement

    q, v = model.initial_state()
    x, _, gradient, _ = model.joint_state(q, v)
    final: list[LoopSpec] = []
    blocks: list[np.ndarray] = []
    for spec in loops:
        jacobian = _jacobian(model, spec, x, gradient)
        rank = _rank(jacobian)
        if spec.type == "point" and rank == 2:
            left = np.linalg.svd(jacobian)[0][:, 2]   # the world direction along which Φ cannot change
            normal = frame_placement(model, x, spec.link_a)[0].T @ left
            spec = replace(spec, type="planar", normal=normal / np.linalg.norm(normal))
            jacobian = _jacobian(model, spec, x, gradient)
            rank = _rank(jacobian)
        if rank < jacobian.shape[0]:
            raise spec.source.error(None, f"its {jacobian.shape[0]} equations have rank {rank} at the default pose "
                                    "(redundant with the joints)", "a constraint that removes as many degrees of "
                                    "freedom as it has equations")
        final.append(spec)
        blocks.append(jacobian)
    stacked = np.vstack(blocks)
    columns = [model.coordinate_names.index(name) for name in independent]
    # a coordinate that drives a joint function on a loop's path must be known before the loop is solved
    needed = _function_inputs_on_loops(model, [_loop(spec) for spec in final])
    chosen = _greedy_columns(stacked, columns, [k for k in range(len(independent)) if independent[k] not in needed])
    if len(chosen) < stacked.shape[0] and len(_greedy_columns(stacked, columns, range(len(independent)))) == \
            stacked.shape[0]:
        names = ", ".join(sorted(name for name in needed if name in independent))
        raise ModelError(f"the constraints {', '.join(s.name for s in final)} need one of {names} as a dependent "
                         "coordinate, but these drive joint functions (CoordinateCouplerConstraint or TransformAxis) "
                         "of joints on the constrained chain: not supported", file=model.file,
                         element=final[0].source.element, expected="constraints closed by coordinates that drive "
                         "no function of the constrained chain's joints")
    if len(chosen) < stacked.shape[0]:
        raise ModelError(f"the constraints {', '.join(s.name for s in final)} give {stacked.shape[0]} equations of "
                         f"rank {len(chosen)} over the coordinates at the default pose (redundant)",
                         file=model.file, element=final[0].source.element,
                         expected="constraints that remove as many degrees of freedom as they have equations")
    return tuple(independent[k] for k in sorted(chosen)), final


def _loop(spec: LoopSpec):
    """The `constraints.loops.Loop` of a spec."""
    from biobullet.constraints.loop_types import PlanarLoop, PointLoop, WeldLoop, plane_basis
    from biobullet.constraints.loops import Loop

    if spec.type == "weld":
        law = WeldLoop(spec.rotation_a, spec.rotation_b)
    elif spec.type == "planar":
        law = PlanarLoop(plane_basis(spec.normal))
    else:
        law = PointLoop()
    return Loop(spec.name, spec.type, spec.link_a, spec.xyz_a, spec.link_b, spec.xyz_b, law, spec.source)


def _greedy_columns(stacked: np.ndarray, columns: list[int], candidates) -> list[int]:
    """Candidates (indices into `columns`) taken from the last backwards, each kept if it raises the rank of
    `stacked`'s chosen columns, until there are as many as rows."""
    chosen: list[int] = []
    for k in reversed(list(candidates)):
        if len(chosen) == stacked.shape[0]:
            break
        if _rank(stacked[:, [columns[j] for j in [*chosen, k]]]) == len(chosen) + 1:
            chosen.append(k)
    return chosen


def _jacobian(model, spec: LoopSpec, x: np.ndarray, gradient: np.ndarray) -> np.ndarray:
    """Φ_x G of one loop: its rows over the model's generalized coordinates."""
    from biobullet.constraints.loops import loop_terms

    return loop_terms(model, (_loop(spec),), x)[1] @ gradient


def _function_inputs_on_loops(model, loops) -> set[str]:
    """The joints that the joint functions of joints on the loops' paths read, directly or through other
    functions (couplers, function-driven axes): the loop resolver needs them known, so none may be dependent."""
    from biobullet.constraints.loops import loop_supports

    inputs = {f.joint: tuple(f.function.inputs) for f in model.description.joint_functions}
    pending = [model.joint_names[k] for loop in loops for k in loop_supports(model, loop)]
    needed: set[str] = set()
    while pending:
        for name in inputs.get(pending.pop(), ()):
            if name not in needed:
                needed.add(name)
                pending.append(name)
    return needed


def _rank(matrix: np.ndarray) -> int:
    singular = np.linalg.svd(matrix, compute_uv=False)
    if not singular.size or singular[0] == 0.0:
        return 0
    return int(np.sum(singular > RANK_TOLERANCE * singular[0]))
