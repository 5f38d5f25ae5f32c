"""The pipeline's Python entries, Pinocchio-style free functions of (model, data, state) with in-place outputs:

    forward(model, data, q, v, tau, t)      v̇ into data.arrays.accel (returned), or None
    mass_matrix(model, data, q, t, out)     M_r(q, t) (nv × nv) into `out` (a new array by default), or None
    bias_forces(model, data, q, v, t, out)  h_r(q, v, t) (nv) into `out`, or None

q, v, tau: generalized positions, velocities and forces Q (nv; None: zero); M v̇ + h = Q. None means the pipeline
declined this call — numba unavailable, an argument that is not a finite float vector of its size, a function's
jets not finite, M_r not positive definite — and the caller takes the generic path, which says why
(`Model.mass_matrix` and the others do that). A model whose coordinate map needs Python (loops, joint functions
without compiled jets) enters through its joint state (`Model.joint_state_view`, the callback stage); the tree
dynamics and the solve are the same kernels.
"""
from __future__ import annotations

import numpy as np

from biobullet.core import jit
from biobullet.pipeline.compiled_model import CALLBACK_STATE
from biobullet.pipeline.data import Data
from biobullet.pipeline.kernels import forward_kernel
from biobullet.pipeline.stages import ACCELERATION, BIAS, MASS

_FLOAT = np.dtype(float)
_NO_MATRIX = np.zeros((0, 0))


def _vector(value, size: int) -> np.ndarray | None:
    """`value` as a C-contiguous float64 vector of `size` entries, or None (the generic path then reports it)."""
    if type(value) is np.ndarray and value.dtype is _FLOAT and value.shape == (size,):
        flags = value.flags
        if flags.c_contiguous and flags.writeable:   # the kernel entry's argument type exactly
            return value
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError):
        return None
    return array if array.shape == (size,) else None


def _callback_state(model, data: Data, q, v, t: float) -> bool:
    """The callback stage: x, ẋ, G, γ from `model.joint_state_view` into the data arrays (False: it raised, the
    generic path then reports the same error)."""
    try:
        x, xd, gradient, gamma = model.joint_state_view(q, v, t)
    except Exception:
        return False
    arrays = data.arrays
    arrays.x[:] = x
    arrays.xd[:] = xd
    if gradient is None:
        arrays.gradient[:, :] = np.eye(model.n_tangent, model.nv)
    else:
        arrays.gradient[:, :] = gradient
    if gamma is None:
        arrays.gamma[:] = 0.0
    else:
        arrays.gamma[:] = gamma
    return True


def _run(model, data: Data, q, v, tau, t: float, want: int, out_vector, out_matrix) -> bool:
    compiled = data.compiled
    if compiled.state_stage == CALLBACK_STATE and not _callback_state(model, data, q, v, t):
        return False
    entry = data.entries.get("forward")
    args = (compiled, data.arrays, q, v, tau, t, want, out_vector, out_matrix)
    if entry is None:
        kernel = forward_kernel() if jit.ENABLED else None
        if kernel is None:
            return False
        entry = data.entries["forward"] = jit.direct_entry(kernel, *args)
    return entry(*args) == 0


def forward(model, data: Data, q, v, tau=None, t: float = 0.0) -> np.ndarray | None:
    """v̇ of generalized forces `tau` (nv, default zero) into data.arrays.accel, returned; None: declined."""
    compiled = data.compiled
    q, v = _vector(q, compiled.nq), _vector(v, compiled.nv)
    tau = data.zero_velocity if tau is None else _vector(tau, compiled.nv)
    if q is None or v is None or tau is None:
        return None
    out = data.arrays.accel
    return out if _run(model, data, q, v, tau, float(t), ACCELERATION, out, _NO_MATRIX) else None


def forward_dynamics(model, data: Data, q, v, tau=None, t: float = 0.0) -> np.ndarray | None:
    """`forward` into a new array (what `Model.forward_dynamics` returns)."""
    compiled = data.compiled
    q, v = _vector(q, compiled.nq), _vector(v, compiled.nv)
    tau = data.zero_velocity if tau is None else _vector(tau, compiled.nv)
    if q is None or v is None or tau is None:
        return None
    out = np.empty(compiled.nv)
    return out if _run(model, data, q, v, tau, float(t), ACCELERATION, out, _NO_MATRIX) else None


def mass_matrix(model, data: Data, q, t: float = 0.0, out: np.ndarray | None = None) -> np.ndarray | None:
    """M_r(q, t) into `out` (nv × nv; a new array by default), returned; None: declined."""
    compiled = data.compiled
    q = _vector(q, compiled.nq)
    if q is None:
        return None
    if out is None:
        out = np.empty((compiled.nv, compiled.nv))
    zero = data.zero_velocity
    return out if _run(model, data, q, zero, zero, float(t), MASS, zero, out) else None


def bias_forces(model, data: Data, q, v, t: float = 0.0, out: np.ndarray | None = None) -> np.ndarray | None:
    """h_r(q, v, t) into `out` (nv; a new array by default), returned; None: declined."""
    compiled = data.compiled
    q, v = _vector(q, compiled.nq), _vector(v, compiled.nv)
    if q is None or v is None:
        return None
    if out is None:
        out = np.empty(compiled.nv)
    return out if _run(model, data, q, v, data.zero_velocity, float(t), BIAS, out, _NO_MATRIX) else None
