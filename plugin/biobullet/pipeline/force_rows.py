"""The force-element and contact rows of a run, packed for the pipeline's force stage (`stages.forces_stage_py`).

`ForceRows` (a NamedTuple the kernels take as one structured argument): joint torques τ(t) (`tau_time`, the
caller refreshes time-varying ones), point-to-point springs (`forces.compiled`'s rows), joint spring-dampers and
stops (`forces.compiled.pack_joint_forces`), ground contacts with compiled laws (`contact.kernels.pack_ground`, the
discrete state rows refreshed by the caller from the run's ContactStates) and third-party elements' kernels
(`forces.compiled.pack_plugins`: addresses and parameters) and the run's muscles: the address of a record holding its
`muscles.dynamics.MuscleRows` (paths, Hill table, excitations and the muscle state, refreshed by the caller;
`muscle_record`), 0 for none, so that runs with and without muscles share one compiled right-hand side. Force elements belong to a run (a `System` may add
elements the file does not have, and contacts carry state), so they are packed per run, not in the compiled model.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from biobullet.muscles.dynamics import MuscleRecord, MuscleRows, NoFields

#: the plug-in part of ForceRows for a run without third-party elements
NO_PLUGINS = (np.zeros(0, dtype=np.int64), np.zeros((0, 1)), np.zeros((0, 1), dtype=np.int64), False)


class ForceRows(NamedTuple):
    """Packed force elements of one run (module docstring)."""

    tau_time: np.ndarray            # (n_tangent,) joint torques τ(t)
    spring_bodies: np.ndarray       # (n, 2) int64: bodies of end b, end a
    spring_points: np.ndarray       # (n, 2, 3): the ends in their body frames
    spring_params: np.ndarray       # (n, 3): stiffness, rest length, damping
    zero_length: float              # below this length a spring has no direction (callback stage)
    joint_springs: np.ndarray       # (n, 2) int64 configuration and tangent index
    joint_spring_params: np.ndarray
    joint_stops: np.ndarray
    joint_stop_params: np.ndarray
    contact_index: np.ndarray       # (n, 4) int64: body, normal law, friction law, flags
    contact_geometry: np.ndarray    # (n, 9)
    contact_normal_p: np.ndarray
    contact_friction_p: np.ndarray
    contact_state: np.ndarray       # (n, STATE_WIDTH): discrete state rows, refreshed per call
    plugin_addresses: np.ndarray    # (n,) int64 kernel addresses
    plugin_fparams: np.ndarray
    plugin_iparams: np.ndarray
    plugin_kinematics: bool         # some plug-in kernel reads body placements
    muscles: int                    # the address of the muscle stage's rows (`muscle_record`), 0 for none


def pack_springs(model, springs) -> tuple:
    """(bodies (n, 2), local points (n, 2, 3), (k, rest, c) (n, 3), zero length) of point-to-point springs,
    end b first, as `forces.compiled._spring_kernel_py` takes them."""
    from biobullet.forces.elements import ZERO_LENGTH
    bodies, points, params = [], [], []
    for spring in springs:
        ends = []
        for link, xyz in ((spring.link_b, spring.xyz_b), (spring.link_a, spring.xyz_a)):
            frame = model.frame(link)
            ends.append((int(frame.body), frame.rotation @ xyz + frame.translation))
        bodies.append([ends[0][0], ends[1][0]])
        points.append([ends[0][1], ends[1][1]])
        params.append([spring.stiffness, spring.rest_length, spring.damping])
    return (np.array(bodies, dtype=np.int64).reshape(-1, 2),
            np.ascontiguousarray(np.array(points, dtype=float).reshape(-1, 2, 3)),
            np.array(params, dtype=float).reshape(-1, 3), float(ZERO_LENGTH))


def pack_force_rows(model, springs=(), joint_springs=(), joint_stops=(), contacts=(), plugins=None,
                    muscles=0) -> ForceRows:
    """The ForceRows of a run's elements by kind (contacts: built-in laws or plug-in laws with compiled twins;
    `plugins`: `forces.compiled.pack_plugins`'s tuple, None for none; `muscles`: `muscle_record`'s address, 0 for
    none). Joint torques start at zero: the caller writes τ(t) into `tau_time`."""
    from biobullet.contact.kernels import STATE_WIDTH, pack_ground
    from biobullet.forces.compiled import pack_joint_forces

    return ForceRows(np.zeros(model.n_tangent), *pack_springs(model, springs),
                     *pack_joint_forces(model, joint_springs, joint_stops), *pack_ground(model, contacts),
                     np.zeros((len(contacts), STATE_WIDTH)), *(plugins if plugins is not None else NO_PLUGINS),
                     muscles)


def muscle_record(rows: MuscleRows) -> tuple:
    """(the record of a run's muscle rows, its address for `ForceRows.muscles`): compiled, a
    `core.jit_pair` record (`core.jit_pair.pack_record`) and its address as an integer; in Python (numba
    off, or a cold start's uncompiled calls) a namespace, itself. The caller keeps the record alive while the
    address is in use."""
    from biobullet.core.jit_pair import pack_record
    return pack_record(MuscleRecord(rows), NoFields())
