"""The bridge's force elements per step: the pipeline's force stage on a workspace the bridge owns.

`ForceStage(model)` is the one place a bridge asks for the joint-space τ (n_tangent, tree order, N·m or N) of the
model's force elements (`forces.force_elements`: the file's elements, URDF `<limit>` stops, elements added from
Python) at the tree state (x, ẋ) read from PyBullet. When every element has a compiled form — joint torques,
joint spring-dampers and stops, point-to-point springs, third-party elements with a `compiled_kernel` (the
segments' air damping among them) — τ is one call of the pipeline's force stage (`pipeline.stages.forces_stage_py`,
`pipeline.kernels.forces_kernel`) on the bridge's own `Data` and `ForceRows`, both passed as records by address
(`_forces_at_py`); otherwise, and for a state the
compiled stage declines (a zero-length spring), the Python hook `forces.applied_forces` serves, which also raises
the element's own clear error. The choice is made again whenever elements are added or cleared
(`forces.collection.added_generation`).

`<contact>` elements are not force elements here: the bridge's contacts (`bridge.contact.BridgeContacts`) read
every body of the scene.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from biobullet.core import jit
from biobullet.forces.collection import added_generation, applied_forces, force_elements


def _joint_stage_py(x, xd, springs, spring_params, stops, stop_params, tau, tau_time):
    """tau ← tau_time (the constant joint torques) + the joint springs' and stops' τ (one call of the joint-force
    kernel); returns how many entries of tau are non-zero (0: nothing acts — a stop not reached — and the bridge
    sends its prepared zero lists)."""
    for i in range(tau.shape[0]):
        tau[i] = tau_time[i]
    _JOINT_FORCES(x, xd, springs, spring_params, stops, stop_params, tau)
    count = 0
    for i in range(tau.shape[0]):
        if tau[i] != 0.0:
            count += 1
    return count


def joint_stage_kernel():
    """The compiled `_joint_stage_py` with the joint-force kernel bound."""
    from biobullet.forces.compiled import joint_forces_kernel
    return jit.compiled(_joint_stage_py, bind=lambda: {"_JOINT_FORCES": joint_forces_kernel()})


class JointStageRows(NamedTuple):
    """`_joint_stage_py`'s rows and τ buffers, one record passed by address (`_joint_stage_at_py`)."""
    springs: np.ndarray
    spring_params: np.ndarray
    stops: np.ndarray
    stop_params: np.ndarray
    tau: np.ndarray
    tau_time: np.ndarray


def _joint_stage_at_py(address, x, xd):
    """`_joint_stage_py` with its `JointStageRows` read from the record at address (three arguments converted per
    call instead of eight)."""
    r = _JOINT_ROWS(address)
    return _JOINT_STAGE(x, xd, r.springs, r.spring_params, r.stops, r.stop_params, r.tau, r.tau_time)


def _record_kernel(function, pairs: dict, callees: dict):
    """`function` compiled with a reader bound for each of `pairs` ({name: (NamedTuple, NamedTuple)}, each pair read
    from one `core.jit_pair` record by address) and `callees`, one variant per layout of the records; returns (the
    kernel, {name: (the packed record, its address)}): the caller keeps the packed records and the tuples alive."""
    import hashlib
    from biobullet.core.jit_pair import pack_record, record_reader, record_type
    layout = hashlib.sha256("".join(str(record_type(*pair)) for pair in pairs.values()).encode()).hexdigest()[:16]
    kernel = jit.compiled(function, variant=f"record_{layout}", nogil=False,
                          bind=lambda: {**{name: record_reader(*pair) for name, pair in pairs.items()}, **callees})
    return kernel, {name: pack_record(*pair, borrowed=True) for name, pair in pairs.items()}


def _forces_at_py(address, rows_address, x, xd, t):
    """The pipeline's force stage (`stages.forces_stage_py`) on the workspace record at `address` (the compiled
    model's and the bridge's Data arrays' fields, `core.jit_pair.pack_record`) and the `ForceRows` record at
    `rows_address`: x and ẋ copied into the workspace, then the stage (its status; τ in the workspace's tau).
    Two addresses instead of the three NamedTuples' ≈ 50 arrays converted at every call from Python (≈ 2–4 µs)."""
    workspace = _WORKSPACE(address)
    for i in range(x.shape[0]):
        workspace.x[i] = x[i]
    for i in range(xd.shape[0]):
        workspace.xd[i] = xd[i]
    return _FORCES(workspace, workspace, _ROWS(rows_address), t)


def forces_at_kernel(compiled, arrays, rows):
    """(the compiled `_forces_at_py` for these records' layouts, {"_WORKSPACE": (the workspace record, its address),
    "_ROWS": (the rows' record, its address)}); the caller keeps the records and the tuples alive while it uses the
    addresses."""
    from biobullet.muscles.dynamics import NoFields
    from biobullet.pipeline.kernels import forces_kernel
    return _record_kernel(_forces_at_py, {"_WORKSPACE": (compiled, arrays), "_ROWS": (rows, NoFields())},
                          {"_FORCES": forces_kernel()})


class ForceStage:
    """τ of the model's force elements at (x, ẋ, t) for a bridge (module docstring)."""

    def __init__(self, model) -> None:
        self.model = model
        #: `forces.collection.added_generation()` when the element list was last read (`_refresh`)
        self.generation: int | None = None
        self._elements: tuple = ()
        self._entry = None          # the compiled force stage's direct entry, or None: the Python hook
        self._arguments: tuple = ()  # (compiled model, data arrays, force rows) of that entry
        #: compiled, not the joint-force kernel alone: (the entry of `_forces_at_py`, the workspace record's address,
        #: the rows record's address), else None; `_records` keeps the records alive
        self._at: tuple | None = None
        self._records: tuple = ()
        self._constant_tau = np.zeros(model.n_tangent)
        self._varying: list = []    # time-varying JointTorques and their tangent index
        self._joint_only = False    # the entry is the joint-force kernel alone (no springs, plug-ins)
        #: no element acts while every 1-DOF joint has |θ| below this (rad or m): the elements are stops alone
        #: (a URDF `<limit>` among them), each limit at least this far from 0 (0.0: no such bound)
        self.quiet_below = 0.0
        #: `torque` returns None, without a call of the stage, for every peak below this while `generation` is
        #: `added_generation()`: inf without elements, else `quiet_below` (the bridge tests it before the call)
        self.idle_below = np.inf
        self._refresh()   # compiled (or loaded) now, not inside the first step

    def _refresh(self) -> None:
        """Re-read the element list and decide the compiled stage or the hook."""
        self.generation = added_generation()
        self._elements = force_elements(self.model)
        self._at = None
        self._entry = self._compiled_stage(self._elements) if self._elements else None
        self.quiet_below = self._quiet_bound()
        self.idle_below = self.quiet_below if self._elements else np.inf

    def _quiet_bound(self) -> float:
        """`quiet_below` of the compiled joint-force kernel when its elements are stops alone: the smallest |limit|
        of a limit on the far side of 0 (a stop acts only beyond its limit, `forces.compiled._joint_forces_py`);
        0.0 otherwise."""
        if self._entry is None or not self._joint_only or self._varying:
            return 0.0
        springs, _, stops, stop_params, _, tau_time = self._arguments
        if springs.shape[0] or tau_time.any() or not stops.shape[0]:
            return 0.0
        bound = np.inf
        for has_lower, lower, has_upper, upper in stop_params[:, :4]:
            if has_lower:
                bound = min(bound, -lower)
            if has_upper:
                bound = min(bound, upper)
        return float(max(bound, 0.0))

    def _compiled_stage(self, elements):
        """The compiled force stage's direct entry for these elements, or None (an element without a compiled form)."""
        from biobullet.forces.base import joint_indices
        from biobullet.forces.compiled import pack_plugins
        from biobullet.forces.elements import JointSpring, JointStop, JointTorque, Spring
        from biobullet.pipeline.force_rows import NO_PLUGINS, pack_force_rows
        from biobullet.pipeline.kernels import forces_kernel
        model = self.model
        builtins = (Spring, JointSpring, JointStop, JointTorque)
        others = [e for e in elements if type(e) not in builtins]
        plugins = pack_plugins(model, others) if others else NO_PLUGINS
        if plugins is None:
            return None
        kernel = forces_kernel()
        rows = pack_force_rows(model, [e for e in elements if type(e) is Spring],
                               [e for e in elements if type(e) is JointSpring],
                               [e for e in elements if type(e) is JointStop], (), plugins)
        self._constant_tau[:] = 0.0
        self._varying = []
        for torque in (e for e in elements if type(e) is JointTorque):
            k = joint_indices(model, torque.joint, torque.source)[1]
            if torque.value is None:
                self._varying.append((torque, k))
            else:
                self._constant_tau[k] += torque.value
        rows.tau_time[:] = self._constant_tau
        if not (rows.spring_bodies.shape[0] or rows.plugin_addresses.shape[0]):
            # joint springs, stops and torques only: the joint-force kernel with the constant torques' copy and the
            # count of acting entries (`_joint_stage_py`), called with its arrays (the whole stage's structured
            # arguments cost ≈ 1.5 µs a call to pass, this kernel 0.4 µs in all)
            joint_kernel = joint_stage_kernel()
            tau = np.zeros(model.n_tangent)
            self._arguments = JointStageRows(rows.joint_springs, rows.joint_spring_params, rows.joint_stops,
                                             rows.joint_stop_params, tau, rows.tau_time)
            self._joint_only = True
            zero_x, zero_xd = np.zeros(model.n_config), np.zeros(model.n_tangent)
            if not jit.compiling():
                return jit.direct_entry(joint_kernel, zero_x, zero_xd, *self._arguments)
            # compiled: the rows as one record by address (`_joint_stage_at_py`)
            from biobullet.muscles.dynamics import NoFields
            at_kernel, packed = _record_kernel(_joint_stage_at_py, {"_JOINT_ROWS": (self._arguments, NoFields())},
                                               {"_JOINT_STAGE": joint_kernel})
            self._records = tuple(packed.values())
            self._at = (jit.direct_entry(at_kernel, packed["_JOINT_ROWS"][1], zero_x, zero_xd),
                        packed["_JOINT_ROWS"][1])
            return self._at[0]
        self._joint_only = False
        data = model.data()
        # the first call (`direct_entry`'s) at the neutral pose: a zero quaternion has no rotation
        neutral = np.array(model.neutral_configuration(), dtype=float)
        data.arrays.x[:model.base_nq] = neutral[:model.base_nq]
        self._arguments = (model.compiled, data.kernel_arrays(), rows)
        if not jit.compiling():
            return jit.direct_entry(kernel, *self._arguments, 0.0)
        # compiled: the records by address (`_forces_at_py`), kept alive with the tuples they borrow from
        at_kernel, packed = forces_at_kernel(*self._arguments)
        self._records = tuple(packed.values())
        address, rows_address = packed["_WORKSPACE"][1], packed["_ROWS"][1]
        x, xd = np.array(data.arrays.x), np.zeros(model.n_tangent)
        self._at = (jit.direct_entry(at_kernel, address, rows_address, x, xd, 0.0), address, rows_address)
        return self._at[0]

    @property
    def joint_only(self) -> bool:
        """True when the last `torque` came from the joint-force kernel alone (joint springs, stops and torques): its
        τ acts on the 1-DOF joints only, never on a floating base or a spherical joint."""
        return self._entry is not None and self._joint_only

    @property
    def elements(self) -> tuple:
        """The model's force elements now (the same tuple object until elements are added or cleared)."""
        if self.generation != added_generation():
            self._refresh()
        return self._elements

    def torque(self, x: np.ndarray, xd: np.ndarray, t: float, peak: float = np.inf) -> np.ndarray | None:
        """τ (n_tangent) of the force elements at the tree state (x, ẋ) and time t (s), or None without elements
        (and, for joint springs, stops and torques alone, when every entry is zero: no stop reached; for stops
        alone when peak — max |θ| over x's 1-DOF joints, known to the caller — is below `quiet_below`, without a
        call). The array may be the stage's buffer: read it (or add it to a new array) before the next call."""
        if self.generation != added_generation():
            self._refresh()
        if not self._elements or peak < self.quiet_below:
            return None
        entry = self._entry
        if entry is not None and self._varying:   # time-varying torques join the constant ones (tau_time)
            tau_time = self._arguments[5] if self._joint_only else self._arguments[2].tau_time
            tau_time[:] = self._constant_tau
            for element, k in self._varying:
                tau_time[k] += element.torque(t)
        if entry is not None and self._joint_only:
            at = self._at   # (the bridge's reads: C-contiguous float arrays, as the entry takes them)
            count = entry(at[1], x, xd) if at is not None else entry(x, xd, *self._arguments)
            return self._arguments[4] if count else None
        if entry is not None:
            compiled, arrays, rows = self._arguments
            at = self._at
            if at is not None:   # (the bridge's reads: C-contiguous float arrays, as the entry takes them)
                if entry(at[1], at[2], x, xd, float(t)) == 0:
                    return arrays.tau
            else:
                arrays.x[:] = x
                arrays.xd[:] = xd
                if entry(compiled, arrays, rows, float(t)) == 0:
                    return arrays.tau
        return np.asarray(applied_forces(self.model, x, xd, t, self._elements), dtype=float)


__all__ = ["ForceStage"]
