"""Muscle forces in the dynamics: the muscle stage of the compiled pipeline, the muscle states and excitations of a
run, and the tendons' stored energy.

**States.** Per muscle its activation a; per muscle with a compliant tendon also its fiber length l_M (m) — OpenSim's
state choice for Thelen2003 and Millard2012Equilibrium (DeGroote's OpenSim state is the normalized tendon force;
the fiber length is the same ODE in other coordinates). A rigid tendon has no fiber state. The run's state vector is
(q, v, …, activations, fiber lengths, input work, dissipated energy).

**The stage** (`_muscle_stage_py`, called from the pipeline's force stage `pipeline.stages.applied_forces_py`
with the bodies' kinematics, one compiled call for every muscle): the path frames' placements from the bodies',
the paths' lengths l and exact gradients (`path.path_gradients_py`), the tree-space gradient g = ∂l/∂x (the frames'
[F; M] through the motion subspaces, plus ∂l/∂c at the joints that move points; a wrapped path's ∂l/∂x_k directly,
one forward pass along each tangent direction k that does not move it rigidly — or, in the bridge's frame-twist
mode, along each moving frame's unit twists, which gives its [F; M] per frame as for a straight path), the
lengthening speed l̇ = g·ẋ,
then per muscle its tendon force T (`_muscle_force_py`), τ −= T g (the generalized force Rᵀ T in tree
coordinates: the pipeline's Q = Gᵀ τ maps it to q), ȧ (`hill.activation_rate_py`) and l̇_M — the per-muscle part
`_muscle_rate_py`, which `evaluate_rates` also runs alone at given lengths and speeds (the bridge's muscle
sub-steps: paths once per step).

- compliant tendon: with the constant-height pennation cos α(l_M), the tendon l_T = l − l_M cos α carries
  T = F₀ f_T(l_T / l_s); the fiber velocity is the one at which the fiber, at activation a and length l_M, develops
  T / cos α (`hill.fiber_velocity_py`: each model's inverse force–velocity, as OpenSim integrates it); at the
  shortest fiber a shortening velocity is held at zero (OpenSim's clamped Thelen and Millard fiber state; OpenSim
  continues DeGroote's formulas past it into an inverted fiber: docs/muscles.md, "The shortest DeGroote fiber");
- rigid tendon: l_M cos α = l − l_s, l̇_M = l̇ cos α, T = F₀ (a f_L f_V(ṽ) + f_PE + β ṽ) cos α (Thelen2003 has no
  forward force–velocity curve: a rigid-tendon Thelen muscle is refused at load, as OpenSim does).

**Energy.** The fibers deliver the power P = −T ẋ (ẋ: the speed of the fiber's projection on the tendon,
ẋ = l̇_M / cos α); the tendon stores E_T(l_T) = F₀ l_s ∫₁^{l_T/l_s} f_T(s) ds. Since l̇ = l̇_T + ẋ, the power the
muscle delivers to the skeleton is −T l̇ = P − Ė_T: the engine integrates P as input work and reports E_T in the
elastic energy, so kinetic + potential + E_T − ∫P dt stays constant (`tendon_energies`).

Units: SI (m, N, s, J, W); activations and excitations in [0, 1].
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import NamedTuple

import numpy as np

from biobullet.core import jit
from biobullet.core.errors import ModelError, did_you_mean
from biobullet.muscles.hill import (A_MIN, COMPLIANT, DAMPING, DEGROOTE, DEGROOTE_TENDON, F_MAX, L_OPT, L_SLACK,
                                    MILLARD, PENNATION, THELEN, THELEN_TOE_FORCE, THELEN_TOE_SHAPE, V_MAX,
                                    MuscleTable, activation_rate_py, active_force_length_py, equilibrium_bindings,
                                    fiber_velocity_py, force_velocity_py, passive_force_length_py, pennation_py,
                                    shortest_fiber_py, tendon_force_length_py, equilibrium_states,
                                    fiber_velocity_bindings)
from biobullet.constraints.loops import tree_kinematics
from biobullet.muscles.path import (PathArrays, PathDirections, PathGradient, frame_directions, frame_wrenches_py,
                                    gradient_buffers, no_directions, path_gradients_kernel, path_gradients_py,
                                    wrap_address)

KERNEL_ERROR_MODEL = "numpy"   # one error model wherever reached (the stage's, by address: core.jit._error_model)

#: the per-muscle outputs of the stage (`MuscleRows.outputs` columns; `Trajectory.muscles` keys)
MUSCLE_OUTPUTS = ("length", "lengthening_speed", "tendon_force", "fiber_length", "fiber_velocity", "tendon_length",
                  "cos_pennation", "fiber_power")
(LENGTH, SPEED, TENDON_FORCE, FIBER_LENGTH, FIBER_VELOCITY, TENDON_LENGTH, COS_PENNATION,
 FIBER_POWER) = range(len(MUSCLE_OUTPUTS))
#: OpenSim 4.6's default_activation of each model: a run's initial activation where neither the run nor the file
#: (`default_activation`) gives one
DEFAULT_ACTIVATION = {"thelen2003": 0.05, "millard2012": 0.05, "degroote2016": 0.5}


class MuscleRows(NamedTuple):
    """A run's muscles packed for the stage (one structured kernel argument): the model's paths and Hill table, the
    path frames' bodies and offsets, the path coordinates' joint slots, the excitations u (refreshed by the caller),
    the state (activations, then the compliant muscles' fiber lengths) and its rates, the per-muscle outputs
    (`MUSCLE_OUTPUTS`) and the stage's work buffers."""

    paths: PathArrays
    table: MuscleTable
    frame_body: np.ndarray         # int64 (n_frames,): body carrying path frame f, −1 for the world
    frame_rotation: np.ndarray     # (n_frames, 3, 3): frame → body
    frame_translation: np.ndarray  # (n_frames, 3): frame origin in the body (m)
    coordinate_slots: np.ndarray   # int64 (n_coordinates, 2): the path coordinate's (x index, ẋ index)
    fiber_state: np.ndarray        # int64 (n_muscles,): index of the fiber length in `state`, −1 (rigid tendon)
    excitation: np.ndarray         # (n_muscles,)
    state: np.ndarray              # (n_states,)
    rate: np.ndarray               # (n_states,)
    outputs: np.ndarray            # (n_muscles, len(MUSCLE_OUTPUTS))
    rotations: np.ndarray          # work: frames' world rotations
    origins: np.ndarray            # work: frames' world origins
    coordinates: np.ndarray        # work: path coordinate values
    path: PathGradient             # work: the path kernel's outputs (lengths, ∂l/∂(frame motion), …)
    directions: PathDirections     # the wrapped paths' directions: the frames' twists per tangent direction
    #                                (work, filled per call) or, with frame_twists, `path.frame_directions` (fixed)
    frame_twists: np.ndarray       # bool (1,): wrapped paths differentiated along each moving frame's unit twists
    gradient: np.ndarray           # work: ∂l/∂x of one muscle (n_tangent,)
    stage_address: np.ndarray      # int64 (1,): the compiled stage's address in this process


# ------------------------------------------------------------------------------------------------ kernels
def _muscle_force_py(model, curves, muscle, length, speed, activation, fiber_length, out):
    """Tendon force T (N) of one muscle at musculotendon length `length` (m), lengthening speed `speed` (m/s),
    activation and (compliant tendon) fiber length (m); `out` (MUSCLE_OUTPUTS) gets the muscle's outputs, among
    them the fiber velocity l̇_M (m/s: the fiber state's rate) and the fibers' power −T ẋ (W)."""
    if model != DEGROOTE:
        activation = min(max(activation, muscle[A_MIN]), 1.0)
    optimal, slack, top = muscle[L_OPT], muscle[L_SLACK], muscle[F_MAX]
    if muscle[COMPLIANT] != 0.0:
        cos_alpha, fiber = pennation_py(model, curves, muscle, fiber_length)
        tendon = length - fiber * cos_alpha
        tendon_force = tendon_force_length_py(model, curves, tendon / slack)
        normalized = fiber / optimal
        velocity = fiber_velocity_py(model, curves, muscle, activation,
                                      active_force_length_py(model, curves, normalized),
                                      passive_force_length_py(model, curves, normalized), normalized,
                                      tendon_force / cos_alpha)
        fiber_speed = velocity * muscle[V_MAX] * optimal
        if fiber_length <= shortest_fiber_py(model, curves, muscle) and fiber_speed < 0.0:
            fiber_speed = 0.0   # OpenSim's clamped fiber state (DeGroote: docs/muscles.md, the shortest fiber)
        tension = tendon_force * top
        along_speed = fiber_speed / cos_alpha
    else:
        # a path shorter than the tendon slack length (l < l_s): the rigid tendon is slack and the fiber held at its
        # shortest, at rest — OpenSim 4.6's Millard (T = 0). Before, the fiber was taken sqrt(h² + (l − l_s)²) long,
        # stretched as the path shortened, and pulled (146 N where OpenSim's Millard gives 0; a conditional point
        # leaving a rigid DeGroote path 0.18 m below its slack length pulled 14.7 kN). OpenSim's DeGroote flips the
        # fiber there (cos α < 0) and pushes: docs/muscles.md
        along = max(length - slack, 0.0)
        height = optimal * math.sin(muscle[PENNATION])
        cos_alpha, fiber = pennation_py(model, curves, muscle, math.sqrt(height * height + along * along))
        tendon = length - fiber * cos_alpha
        fiber_speed = speed * cos_alpha if along > 0.0 else 0.0
        normalized = fiber / optimal
        velocity = fiber_speed / (muscle[V_MAX] * optimal)
        fiber_force = (activation * active_force_length_py(model, curves, normalized)
                       * force_velocity_py(model, curves, velocity)
                       + passive_force_length_py(model, curves, normalized) + muscle[DAMPING] * velocity)
        if model == MILLARD and fiber_force < 0.0:
            # OpenSim 4.6's rigid-tendon Millard fiber only pulls: its damping force saturates where a fast
            # shortening would make the fiber push (calcMuscleDynamicsInfo)
            fiber_force = 0.0
        tension = fiber_force * cos_alpha * top
        along_speed = speed
    out[LENGTH] = length
    out[SPEED] = speed
    out[TENDON_FORCE] = tension
    out[FIBER_LENGTH] = fiber
    out[FIBER_VELOCITY] = fiber_speed
    out[TENDON_LENGTH] = tendon
    out[COS_PENNATION] = cos_alpha
    out[FIBER_POWER] = -tension * along_speed
    return tension


def _muscle_stage_py(rows, rot, pos, sub, ancestry, x, xd, tau):
    """Every muscle's generalized force subtracted from τ (tree coordinates, τ −= T ∂l/∂x), its state rates into
    rows.rate and outputs into rows.outputs, at the tree state (x, ẋ) with the bodies' world rotations `rot`,
    origins `pos` and motion subspaces `sub` (`constraints.loop_kernels`' tree kinematics; `ancestry[b, k]` 1
    where tangent direction k moves body b). Returns the fibers' total power (W), NaN when a result is not
    finite."""
    n_frames = rows.frame_body.shape[0]
    for f in range(n_frames):
        b = rows.frame_body[f]
        for i in range(3):
            if b < 0:
                rows.origins[f, i] = rows.frame_translation[f, i]
                for j in range(3):
                    rows.rotations[f, i, j] = rows.frame_rotation[f, i, j]
                continue
            rows.origins[f, i] = (rot[b, i, 0] * rows.frame_translation[f, 0] + rot[b, i, 1] * rows.frame_translation[f, 1]
                                  + rot[b, i, 2] * rows.frame_translation[f, 2] + pos[b, i])
            for j in range(3):
                rows.rotations[f, i, j] = (rot[b, i, 0] * rows.frame_rotation[f, 0, j]
                                           + rot[b, i, 1] * rows.frame_rotation[f, 1, j]
                                           + rot[b, i, 2] * rows.frame_rotation[f, 2, j])
    for c in range(rows.coordinate_slots.shape[0]):
        rows.coordinates[c] = x[rows.coordinate_slots[c, 0]]
    frame_twists = rows.frame_twists[0]
    twists = rows.directions.twists   # wrapped paths are differentiated along each tangent direction k
    for k in range(0 if frame_twists else twists.shape[0]):
        for f in range(n_frames):
            b = rows.frame_body[f]
            for i in range(6):
                twists[k, f, i] = ancestry[b, k] * sub[i, k] if b >= 0 else 0.0
    path = rows.path
    path_gradients_py(rows.paths, rows.rotations, rows.origins, rows.coordinates, rows.directions, path)
    if frame_twists:   # every path's gradient as per-frame wrenches: τ through the motion subspaces below
        frame_wrenches_py(rows.paths, rows.origins, path)
    n_tangent = tau.shape[0]
    gradient = rows.gradient
    total_power = 0.0
    for m in range(rows.excitation.shape[0]):
        for k in range(n_tangent):
            gradient[k] = 0.0
        for f in range(n_frames):   # [F; M] about the frame origin o → about the world origin: M + o × F
            b = rows.frame_body[f]
            if b < 0:
                continue
            f0, f1, f2 = path.dl_dframes[m, f, 0], path.dl_dframes[m, f, 1], path.dl_dframes[m, f, 2]
            if f0 == 0.0 and f1 == 0.0 and f2 == 0.0 and path.dl_dframes[m, f, 3] == 0.0 \
                    and path.dl_dframes[m, f, 4] == 0.0 and path.dl_dframes[m, f, 5] == 0.0:
                continue
            o0, o1, o2 = rows.origins[f, 0], rows.origins[f, 1], rows.origins[f, 2]
            m0 = path.dl_dframes[m, f, 3] + o1 * f2 - o2 * f1
            m1 = path.dl_dframes[m, f, 4] + o2 * f0 - o0 * f2
            m2 = path.dl_dframes[m, f, 5] + o0 * f1 - o1 * f0
            for k in range(n_tangent):
                a = ancestry[b, k]
                if a != 0.0:
                    gradient[k] += a * (f0 * sub[0, k] + f1 * sub[1, k] + f2 * sub[2, k]
                                        + m0 * sub[3, k] + m1 * sub[4, k] + m2 * sub[5, k])
        for c in range(rows.coordinate_slots.shape[0]):
            gradient[rows.coordinate_slots[c, 1]] += path.dl_dcoordinates[m, c]
        for k in range(0 if frame_twists else twists.shape[0]):
            gradient[k] += path.dl_ddirections[m, k]
        speed = 0.0
        for k in range(n_tangent):
            speed += gradient[k] * xd[k]
        tension = _muscle_rate_py(rows, m, path.lengths[m], speed)
        if not np.isfinite(tension):
            return math.nan
        for k in range(n_tangent):
            tau[k] -= tension * gradient[k]
        total_power += rows.outputs[m, FIBER_POWER]
    return total_power


def _muscle_rate_py(rows, m, length, speed):
    """Muscle m's tendon force T (N; NaN when T or the fiber velocity is not finite) at musculotendon length
    `length` (m), lengthening speed `speed` (m/s) and the state rows.state; its outputs into rows.outputs[m], its
    states' rates into rows.rate."""
    table = rows.table
    curves = table.curves[table.curve_offset[m]:table.curve_offset[m + 1]]
    state = rows.fiber_state[m]
    fiber_length = rows.state[state] if state >= 0 else 0.0
    output = rows.outputs[m]
    tension = _muscle_force_py(table.model[m], curves, table.muscle[m], length, speed, rows.state[m], fiber_length,
                               output)
    if not (np.isfinite(tension) and np.isfinite(output[FIBER_VELOCITY])):
        return math.nan
    rows.rate[m] = activation_rate_py(table.model[m], table.muscle[m], rows.state[m], rows.excitation[m])
    if state >= 0:
        rows.rate[state] = output[FIBER_VELOCITY]
    return tension


def _muscle_rates_py(rows, lengths, speeds):
    """Every muscle's outputs and state rates (`_muscle_rate_py`) at given musculotendon lengths and lengthening
    speeds (m, m/s; one per muscle) and the state rows.state, without the paths: 0, or 1 when a result is not
    finite."""
    for m in range(lengths.shape[0]):
        if not np.isfinite(_muscle_rate_py(rows, m, lengths[m], speeds[m])):
            return 1
    return 0


def _rate_bindings() -> dict:
    """`_muscle_rate_py`'s callees, compiled once each (the curves are large: not inlined)."""
    curves = equilibrium_bindings()
    force = jit.compiled(_muscle_force_py, bind={
        **curves, "fiber_velocity_py": jit.compiled(fiber_velocity_py, bind=fiber_velocity_bindings)})
    return {"_muscle_force_py": force,
            "activation_rate_py": jit.compiled(activation_rate_py)}


def _stage_bindings(paths: PathArrays) -> dict:
    """The stage's callees (for paths like `paths`) compiled once each (the path kernel is large: not inlined)."""
    return {"path_gradients_py": path_gradients_kernel(paths), "frame_wrenches_py": frame_wrenches_py,
            "_muscle_rate_py": _rate_kernel()}


def _rate_kernel():
    """`_muscle_rate_py` compiled with its callees (numpy's error model: the stage reached by address cannot
    raise), or itself without numba."""
    return jit.compiled(_muscle_rate_py, bind=_rate_bindings)


# The stage is compiled once, as a C callable reached by its address (`rows.stage_address`), not linked into the
# kernels that call it: numba re-optimizes a linked callee's whole code inside every caller (≈ 30 s of CPU per
# right-hand side, stepper or bridge kernel for arm26's wrapped paths), an address call costs one indirect call.
def _stage_arrays() -> tuple:
    """Example arrays of the stage's tree arguments (rot, pos, sub, ancestry, x, ẋ, τ), for its signature."""
    return (np.empty((0, 3, 3)), np.empty((0, 3)), np.empty((6, 0)), np.empty((0, 0)), np.empty(0), np.empty(0),
            np.empty(0))


def stage_signature(rows_type):
    """The stage's numba signature for rows of `rows_type` (a MuscleRows, or its numba type): the tree arrays of
    any layout, read-only but τ."""
    return jit.kernel_signature("float64", rows_type, *_stage_arrays(), readonly=(1, 2, 3, 4, 5, 6))


def _stage_entry_py(rows, rot, pos, sub, ancestry, x, xd, tau):
    """(status: 0, or 1 when a result is not finite or the stage has no address yet; the fibers' power, W): the
    stage through its address (`stage_address`)."""
    if rows.stage_address[0] == 0:
        return 1, math.nan
    power = _STAGE(rows.stage_address[0])(rows, rot, pos, sub, ancestry, x, xd, tau)
    return (0 if np.isfinite(power) else 1), power


def stage_entry_kernel(rows_type):
    """The compiled `_stage_entry_py` for rows of `rows_type` (a MuscleRows or its numba type)."""
    return jit.compiled(_stage_entry_py, bind={"_STAGE": jit.address_caller(stage_signature(rows_type))})


def stage_address(rows) -> int:
    """rows.stage_address: the address of the compiled stage, set on first use while this thread compiles (the
    stage compiled, or loaded from numba's cache, once per process; its wrapped paths' kernel too, `wrap_address`);
    0 inside `core.jit.uncompiled()` — a run's cold start, whose uncompiled kernels call the stage's uncompiled form
    (`muscle_forces`), compiles none of it. Before its first compiled call a run sets it
    (`integrate.compiled_rhs`); a compiled call without it gives status 1 (the callback stage)."""
    if rows.stage_address[0] == 0 and jit.compiling():
        wrap_address(rows.paths)
        rows.stage_address[0] = jit.function_address(_muscle_stage_py, stage_signature(rows),
                                                     bind=lambda: _stage_bindings(rows.paths))
    return int(rows.stage_address[0])


# ------------------------------------------------------------------------------------------------ pipeline entries
# The pipeline's stages call these four with `ForceRows.muscles`, an integer: 0 for a run without muscles, else the
# address of a record holding the run's MuscleRows (`MuscleRecord`, packed by `pipeline.force_rows.muscle_record`;
# the run keeps the record alive). So every right-hand side has one numba type with and without muscles, and a call
# from Python converts one integer, not the rows' ≈ 57 arrays (an empty MuscleRows of the same type cost +4.3 µs a
# call on arm7). Compiled, `_MUSCLE_RECORD` reads the record at the address (`core.jit_pair.record_reader`); in
# Python the "address" is the record itself. `entry_bindings` gives both names.
class MuscleRecord(NamedTuple):
    """The record `ForceRows.muscles` addresses: a run's MuscleRows."""

    rows: MuscleRows


class NoFields(NamedTuple):
    """The empty second tuple of a `MuscleRecord`'s record (`core.jit_pair.new_pair` flattens two)."""


def muscle_state_size(muscles) -> int:
    """The number of muscle states at `muscles` (0 without muscles)."""
    return 0 if muscles == 0 else _STATE_SIZE_AT(muscles)


def load_muscle_state(muscles, y, first) -> None:
    """rows.state = y[first:first + size] (the muscle block of a run's state vector)."""
    if muscles != 0:
        _LOAD_STATE_AT(muscles, y, first)


def store_muscle_rates(muscles, out, first) -> None:
    """out[first:first + size] = rows.rate."""
    if muscles != 0:
        _STORE_RATES_AT(muscles, out, first)


def muscle_forces(muscles, rot, pos, sub, ancestry, x, xd, tau):
    """The muscle stage (`_muscle_stage_py`): (status, fibers' power); (0, 0.0) without muscles."""
    if muscles == 0:
        return 0, 0.0
    return _FORCES_AT(muscles, rot, pos, sub, ancestry, x, xd, tau)


# The entries above are inlined into the pipeline's kernels; what they do with muscles is in these four, called (not
# inlined): reading the record takes and releases a reference on each of the rows' ≈ 57 arrays, code that, inlined
# four times, made the right-hand side of a run without muscles ≈ 2 % slower per call.
def _state_size_at_py(address) -> int:
    return _MUSCLE_RECORD(address).rows.state.shape[0]


def _load_state_at_py(address, y, first) -> None:
    state = _MUSCLE_RECORD(address).rows.state
    for i in range(state.shape[0]):
        state[i] = y[first + i]


def _store_rates_at_py(address, out, first) -> None:
    rate = _MUSCLE_RECORD(address).rows.rate
    for i in range(rate.shape[0]):
        out[first + i] = rate[i]


def _forces_at_py(address, rot, pos, sub, ancestry, x, xd, tau):
    return _STAGE_ENTRY(_MUSCLE_RECORD(address).rows, rot, pos, sub, ancestry, x, xd, tau)


def _stage_by_python(rows, rot, pos, sub, ancestry, x, xd, tau):
    """The stage's uncompiled form (a cold start, or numba off: no address compiled): (status, power)."""
    power = jit.compiled(_muscle_stage_py, bind=lambda: _stage_bindings(rows.paths))(
        rows, rot, pos, sub, ancestry, x, xd, tau)
    return (0 if np.isfinite(power) else 1), power


def _empty_rows() -> MuscleRows:
    """MuscleRows of no muscle, of a run's rows' numba type (every MuscleRows has one): the record reader's type."""
    from biobullet.muscles.description import MuscleSetDescription
    from biobullet.muscles.hill import muscle_table
    from biobullet.muscles.path import compile_paths
    paths = compile_paths(MuscleSetDescription("", (), (), (), np.zeros((0, 2))))
    return MuscleRows(paths.arrays, muscle_table(()), np.zeros(0, dtype=np.int64), np.zeros((0, 3, 3)),
                      np.zeros((0, 3)), np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0),
                      np.zeros(0), np.zeros(0), np.zeros((0, len(MUSCLE_OUTPUTS))), np.zeros((0, 3, 3)),
                      np.zeros((0, 3)), np.zeros(0), gradient_buffers(paths), no_directions(0, 0),
                      np.zeros(1, dtype=np.bool_), np.zeros(0), np.zeros(1, dtype=np.int64))


@functools.cache
def entry_bindings(compiling: bool) -> dict:
    """The names the four entries call (bound into every pipeline composition, `pipeline.kernels`): their
    muscle parts, which read the record (`_MUSCLE_RECORD`) — compiled (`compiling`), calling the stage through
    its address (`_stage_entry_py`); else their uncompiled forms."""
    from biobullet.core.jit_pair import record_reader
    if compiling:
        example = _empty_rows()
        reads = {"_MUSCLE_RECORD": record_reader(MuscleRecord(example), NoFields()),
                 "_STAGE_ENTRY": stage_entry_kernel(example)}
    else:
        reads = {"_MUSCLE_RECORD": record_reader(None, None), "_STAGE_ENTRY": _stage_by_python}
    return {name: jit.compiled(function, bind=reads) for name, function in (
        ("_STATE_SIZE_AT", _state_size_at_py), ("_LOAD_STATE_AT", _load_state_at_py),
        ("_STORE_RATES_AT", _store_rates_at_py), ("_FORCES_AT", _forces_at_py))}


# ------------------------------------------------------------------------------------------------ packing
def pack_muscles(model, frame_twists: bool = False) -> MuscleRows:
    """The MuscleRows of `model`'s muscles (a rigid-tendon Thelen2003 muscle is refused at load). Wrapped paths are
    differentiated along the tree's tangent directions (one pass per direction that moves a path: the least for
    τ alone), or with `frame_twists` along each moving frame's unit twists (`path.frame_directions`), which gives
    every path's per-frame wrenches (`path.dl_dframes`, the bridge's forces along the paths) and τ from them."""
    from biobullet.muscles.api import muscle_set
    compiled = muscle_set(model)
    table = compiled.table
    paths = compiled.paths
    frames = [model.frame(name) for name in paths.frames]
    n_muscles = len(paths.names)
    compliant = np.flatnonzero(table.muscle[:, COMPLIANT] != 0.0)
    fiber_state = np.full(n_muscles, -1, dtype=np.int64)
    fiber_state[compliant] = n_muscles + np.arange(compliant.size)
    n_states = n_muscles + compliant.size
    wrapped = bool(paths.arrays.wrap_surface.shape[0])
    if frame_twists:
        directions = frame_directions(len(frames), len(paths.coordinates), wrapped,
                                      np.array([f.body >= 0 for f in frames], dtype=bool))
    else:
        directions = no_directions(len(frames), len(paths.coordinates), model.n_tangent if wrapped else 0)
        for c, slot in enumerate(compiled.joint_slots[:, 1] if wrapped else ()):
            directions.rates[slot, c] = 1.0
    rows = MuscleRows(
        paths.arrays, table, np.array([f.body for f in frames], dtype=np.int64).reshape(-1),
        np.array([f.rotation for f in frames], dtype=float).reshape(-1, 3, 3),
        np.array([f.translation for f in frames], dtype=float).reshape(-1, 3),
        np.ascontiguousarray(compiled.joint_slots, dtype=np.int64), fiber_state, np.zeros(n_muscles),
        np.zeros(n_states), np.zeros(n_states), np.zeros((n_muscles, len(MUSCLE_OUTPUTS))),
        np.zeros((len(frames), 3, 3)), np.zeros((len(frames), 3)), np.zeros(len(paths.coordinates)),
        gradient_buffers(paths, directions.twists.shape[0]), directions, np.array([frame_twists], dtype=np.bool_),
        np.zeros(model.n_tangent), np.zeros(1, dtype=np.int64))   # (its stage address: `stage_address`)
    return rows


def evaluate_stage(model, rows: MuscleRows, x: np.ndarray, xd: np.ndarray, state: np.ndarray,
                   tau: np.ndarray) -> float:
    """Run the stage at tree state (x, ẋ) and muscle state `state` (copied into rows.state): τ −= the muscles'
    forces, rows.rate and rows.outputs filled; returns the fibers' power (W). ModelError when a result is not
    finite (a fiber at zero activation and the tendon loaded, a path through a wrap's centre, …)."""
    rows.state[:] = state
    kinematics = tree_kinematics(model, x)
    try:
        # writable copies of the (read-only) kinematics: the entry kernel the pipeline compiled for writable
        # arrays serves, instead of a second one for read-only arrays
        status, power = _stage_from_python(rows, np.array(kinematics.rotations), np.array(kinematics.positions),
                                      np.array(kinematics.subspace), kinematics.arrays.ancestry,
                                      np.ascontiguousarray(x, dtype=float), np.ascontiguousarray(xd, dtype=float), tau)
    except ZeroDivisionError:   # without numba: Python's float division raises it (a fiber far out of range)
        status, power = 1, math.nan
    if status != 0:
        raise _not_finite(model, rows)
    return power


def _not_finite(model, rows: MuscleRows) -> ModelError:
    """The error of a stage that found a result not finite, naming the muscle: the stage stops at the first muscle
    whose tendon force or fiber velocity is not finite (`_muscle_rate_py`), so the muscles before it have finite
    outputs and its own are the non-finite ones."""
    from biobullet.muscles.api import muscle_set
    outputs = rows.outputs
    bad = ~(np.isfinite(outputs[:, TENDON_FORCE]) & np.isfinite(outputs[:, FIBER_VELOCITY]))
    if not bad.any():   # (the path itself: not reached by the muscle's rate)
        return ModelError("a muscle force or fiber velocity is not finite", file=model.file, element="<muscle>")
    m = int(np.argmax(bad))
    name = muscle_set(model).paths.names[m]
    return ModelError(f"its force or fiber velocity is not finite at a musculotendon length of "
                      f"{outputs[m, LENGTH]:.6g} m (check its path points and optimal_fiber_length, "
                      "tendon_slack_length)", file=model.file, element=f'<muscle name="{name}">')


def _stage_from_python(rows, rot, pos, sub, ancestry, x, xd, tau):
    """The stage called from Python: compiled through its address (`stage_address`), else its uncompiled form."""
    if not jit.compiling():
        return _stage_by_python(rows, rot, pos, sub, ancestry, x, xd, tau)
    stage_address(rows)
    return _python_stage_entry()(rows, rot, pos, sub, ancestry, x, xd, tau)


@functools.cache   # (every MuscleRows has one numba type: one entry kernel per process)
def _python_stage_entry():
    return stage_entry_kernel(_empty_rows())


_muscle_rates = jit.lazy(_muscle_rates_py, bind=lambda: {"_muscle_rate_py": _rate_kernel()})


def evaluate_rates(model, rows: MuscleRows, lengths: np.ndarray, speeds: np.ndarray, state: np.ndarray) -> None:
    """The stage's muscle part without the paths: at musculotendon lengths and lengthening speeds (m, m/s; one per
    muscle, e.g. the stage's `outputs` carried along a step) and muscle state `state` (copied into rows.state),
    rows.rate and rows.outputs filled. ModelError as `evaluate_stage`."""
    rows.state[:] = state
    try:
        status = _muscle_rates(rows, np.ascontiguousarray(lengths, dtype=float),
                               np.ascontiguousarray(speeds, dtype=float))
    except ZeroDivisionError:   # without numba: Python's float division raises it (a fiber far out of range)
        status = 1
    if status != 0:
        raise _not_finite(model, rows)


# ------------------------------------------------------------------------------------------------ excitations
class Excitations:
    """A run's excitations u(t) per muscle, from `spec`:

    - a number (every muscle), or a mapping muscle name → number or function of time t (s) (others 0);
    - a callable `f(t, q, v)` returning such a mapping or an array of one value per muscle (a controller).

    Values must lie in [0, 1] (ModelError naming the muscle)."""

    def __init__(self, names: tuple[str, ...], spec) -> None:
        self.names = names
        self.constant = np.zeros(len(names))
        self.functions: list[tuple[int, Callable]] = []
        self.controller: Callable | None = None
        if callable(spec) and not isinstance(spec, Mapping):
            self.controller = spec
        elif isinstance(spec, Mapping):
            for name, value in spec.items():
                m = self.index(name)
                if callable(value):
                    self.functions.append((m, value))
                else:
                    self.constant[m] = self.checked_value(name, value)
        else:
            self.constant[:] = self.checked_value("every muscle", spec)
        self.varying = bool(self.functions) or self.controller is not None

    def index(self, name: str, argument: str = "excitations") -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise ModelError(f"unknown muscle {name!r}{did_you_mean(str(name), self.names)}", argument=argument,
                             expected="one of " + ", ".join(self.names)) from None

    @staticmethod
    def checked_value(name: str, value, argument: str = "excitations") -> float:
        """`value` as a float in [0, 1]; ModelError naming the muscle and the argument (excitations or
        activations) otherwise."""
        what = argument.removesuffix("s")
        try:
            u = float(value)
        except (TypeError, ValueError):
            raise ModelError(f"{what} of {name!r}: {value!r} is not a number", argument=argument,
                             expected="a number in [0, 1]") from None
        if not 0.0 <= u <= 1.0:
            raise ModelError(f"{what} of {name!r} = {u!r}", argument=argument, expected="a number in [0, 1]")
        return u

    def into(self, out: np.ndarray, t: float, q=None, v=None) -> None:
        """u(t) (and of the controller, u(t, q, v)) into `out`."""
        out[:] = self.constant
        for m, function in self.functions:
            out[m] = self.checked_value(self.names[m], function(t))
        if self.controller is not None:
            values = self.controller(t, q, v)
            if isinstance(values, Mapping):
                for name, value in values.items():
                    out[self.index(name)] = self.checked_value(name, value)
            else:
                array = np.asarray(values, dtype=float).reshape(-1)
                if array.shape != (len(self.names),):
                    raise ModelError(f"the excitation callback returned {array.size} values", argument="excitations",
                                     expected=f"a mapping by muscle name or {len(self.names)} values")
                for m, value in enumerate(array):
                    out[m] = self.checked_value(self.names[m], value)


def excitations_by_name(model, assignments) -> dict[str, float]:
    """Constant excitations from (name, value) pairs (the CLI's `--excitation NAME=VALUE`): the name `all` sets
    every muscle, named muscles override it, the others get 0. ModelError naming the muscle for an unknown name
    (with the nearest) or a value outside [0, 1]."""
    from biobullet.muscles.api import muscle_set
    names = muscle_set(model).paths.names
    if not names:
        raise ModelError("the model has no muscles", file=model.file, argument="--excitation",
                         expected="a model with <muscle> elements")
    pairs = list(assignments)
    out = dict.fromkeys(names, 0.0)
    for name, value in sorted(pairs, key=lambda pair: pair[0] != "all"):   # `all` first, names override it
        if name == "all":
            out = dict.fromkeys(names, Excitations.checked_value("all", value))
            continue
        if name not in out:
            raise ModelError(f"unknown muscle {name!r}{did_you_mean(name, names)}", file=model.file,
                             argument="--excitation", expected="a muscle name of the model, or all")
        out[name] = Excitations.checked_value(name, value)
    return out


class MuscleRun:
    """The muscles of one run: packed rows, excitations, and the state block's layout (activations, then the
    compliant muscles' fiber lengths)."""

    def __init__(self, model, excitations, activations=None, frame_twists: bool = False) -> None:
        self.model = model
        self.rows = pack_muscles(model, frame_twists)
        from biobullet.muscles.api import muscle_set
        self.names = muscle_set(model).paths.names
        self.excitations = Excitations(self.names, excitations)
        self.rows.excitation[:] = self.excitations.constant   # (functions and a controller: at each `refresh`)
        self.initial_activations = self.resolved_activations(activations)
        self.size = self.rows.state.shape[0]

    def resolved_activations(self, activations) -> np.ndarray:
        from biobullet.muscles.api import muscle_set
        values = np.array([m.parameters.value("default_activation", DEFAULT_ACTIVATION[m.model])
                           for m in muscle_set(self.model).muscle_set.muscles], dtype=float)
        if isinstance(activations, Mapping):   # (the errors named the excitations)
            for name, value in activations.items():
                values[self.excitations.index(name, "activations")] = Excitations.checked_value(name, value,
                                                                                                "activations")
        elif activations is not None:
            values[:] = Excitations.checked_value("every muscle", activations, "activations")
        # OpenSim's Millard2012EquilibriumMuscle::setActivation stores the activation clamped to [a_min, 1]
        table = self.rows.table
        millard = table.model == MILLARD
        values[millard] = np.clip(values[millard], table.muscle[millard, A_MIN], 1.0)
        return values

    def initial_state(self, q: np.ndarray, v: np.ndarray | None = None, t: float = 0.0) -> np.ndarray:
        """The muscle state at configuration q: the initial activations and, for compliant tendons, the fiber
        lengths of static equilibrium (zero fiber velocity: OpenSim's `equilibrateMuscles` at rest). The
        excitations are evaluated once at (t, q, v) here, so a bad function or controller is a ModelError before
        the run starts."""
        from biobullet.muscles.api import lengths, muscle_set
        rows = self.rows
        self.excitations.into(rows.excitation, t, q, np.zeros(len(q)) if v is None else v)
        states = equilibrium_states(muscle_set(self.model).table, lengths(self.model, q), self.initial_activations)
        state = np.zeros(self.size)
        state[:len(self.names)] = self.initial_activations
        compliant = rows.fiber_state >= 0
        state[rows.fiber_state[compliant]] = states[compliant, 1]
        return state

    def refresh(self, t: float, q=None, v=None) -> None:
        """The excitations at time t (state (q, v) for a controller) into the rows."""
        if self.excitations.varying:
            self.excitations.into(self.rows.excitation, t, q, v)

    def outputs(self, x: np.ndarray, xd: np.ndarray, state: np.ndarray) -> np.ndarray:
        """The stage's outputs (n_muscles, MUSCLE_OUTPUTS) at one sample."""
        evaluate_stage(self.model, self.rows, x, xd, state, np.zeros(self.model.n_tangent))
        return self.rows.outputs.copy()

    def samples(self, positions: np.ndarray, velocities: np.ndarray, states: np.ndarray) -> dict[str, np.ndarray]:
        """Per-sample muscle records (`Trajectory.muscles`: n_t × n_muscles by `MUSCLE_OUTPUTS` key, "activation",
        "tendon_energy" (J)) of tree states (n_t × n_config, n_t × n_tangent) and muscle states (n_t × size)."""
        n, n_muscles = len(positions), len(self.names)
        outputs = np.array([self.outputs(positions[k], velocities[k], states[k]) for k in range(n)]).reshape(
            n, n_muscles, len(MUSCLE_OUTPUTS))
        samples = {key: outputs[:, :, j] for j, key in enumerate(MUSCLE_OUTPUTS)}
        # the activation that acts (OpenSim's getActivation): Thelen and Millard clamp their state to [a_min, 1];
        # under an excitation below a_min the state itself sinks below it (in OpenSim too) and is not reported
        table = self.rows.table
        clamped = table.model != DEGROOTE
        samples["activation"] = np.clip(np.array(states[:, :n_muscles], dtype=float).reshape(n, n_muscles),
                                        np.where(clamped, table.muscle[:, A_MIN], -np.inf),
                                        np.where(clamped, 1.0, np.inf))
        samples["tendon_energy"] = np.array([tendon_energies(self.rows.table, outputs[k, :, TENDON_LENGTH])
                                             for k in range(n)]).reshape(n, n_muscles)
        return samples


# ------------------------------------------------------------------------------------------------ tendon energy
def _tendon_energy_py(model, curves, muscle, tendon_length):
    """E_T = F₀ l_s ∫₁^{l_T/l_s} f_T(s) ds (J) of a compliant tendon at length l_T (m): closed forms for DeGroote
    and Thelen; NaN for Millard's Bézier curve (`tendon_energies` integrates it by adaptive quadrature)."""
    scale = muscle[F_MAX] * muscle[L_SLACK]
    s = tendon_length / muscle[L_SLACK]
    if model == DEGROOTE:
        c1, c2, c3 = DEGROOTE_TENDON
        stiffness = math.log((1.0 + c3) / c1) / (1.0 + curves[2] - c2)
        return scale * (c1 / stiffness * (math.exp(stiffness * (s - c2)) - math.exp(stiffness * (1.0 - c2)))
                        - c3 * (s - 1.0))
    if model == THELEN:
        e0 = curves[0]
        e3 = math.exp(3.0)
        toe = 99.0 * e0 * e3 / (166.0 * e3 - 67.0)
        linear = 0.67 / (e0 - toe)
        strain = s - 1.0
        if strain <= 0.0:
            return 0.0
        amplitude = THELEN_TOE_FORCE / (math.exp(THELEN_TOE_SHAPE) - 1.0)
        reach = min(strain, toe)
        energy = amplitude * (toe / THELEN_TOE_SHAPE * (math.exp(THELEN_TOE_SHAPE * reach / toe) - 1.0) - reach)
        if strain > toe:
            energy += THELEN_TOE_FORCE * (strain - toe) + 0.5 * linear * (strain - toe) ** 2
        return scale * energy
    return math.nan


_tendon_energy = jit.lazy(_tendon_energy_py)


def tendon_energies(table: MuscleTable, tendon_lengths: np.ndarray) -> np.ndarray:
    """Stored tendon energy (J) per muscle at tendon lengths (m): 0 for a rigid tendon; Millard's Bézier tendon by
    adaptive quadrature of its curve (scipy)."""
    from biobullet.muscles.hill import tendon_force_length
    out = np.zeros(len(tendon_lengths))
    for m, length in enumerate(tendon_lengths):
        muscle = table.muscle[m]
        if muscle[COMPLIANT] == 0.0:
            continue
        curves = table.curves[table.curve_offset[m]:table.curve_offset[m + 1]]
        if table.model[m] == MILLARD:
            from scipy.integrate import quad
            value, _ = quad(lambda s: tendon_force_length(MILLARD, curves, s), 1.0, length / muscle[L_SLACK],
                            epsabs=0.0, epsrel=1e-13, limit=200)
            out[m] = muscle[F_MAX] * muscle[L_SLACK] * value
        else:
            out[m] = _tendon_energy(int(table.model[m]), curves, muscle, float(length))
    return out


__all__ = ["MUSCLE_OUTPUTS", "DEFAULT_ACTIVATION", "MuscleRows", "stage_signature", "stage_entry_kernel",
           "stage_address", "MuscleRecord", "NoFields", "entry_bindings",
           "muscle_state_size", "load_muscle_state", "store_muscle_rates", "muscle_forces",
           "pack_muscles", "evaluate_stage", "evaluate_rates", "Excitations", "MuscleRun", "tendon_energies"]
