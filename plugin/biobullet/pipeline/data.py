"""The data workspace of a compiled model: every buffer the pipeline writes, and what a run caches.

`Data(compiled)` (or `model.data()`) owns
- `arrays` (`DataArrays`, a NamedTuple the kernels take as one structured argument): the joint state x, ẋ, G, γ;
  the applied joint forces τ; the solve's right-hand side and Cholesky factor; (input power, dissipated power) of
  the force stage;
- `entries`: the compiled kernels' direct entries for these argument types (`core.jit.direct_entry`: a call then
  skips numba's argument matching, ≈ 2 µs for the structured arguments).
One Data per concurrent user (a Model's convenience methods use `model.workspace`; a run or a bridge makes its
own): the kernels write into it.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from biobullet.core import jit
from biobullet.pipeline.compiled_model import CALLBACK_STATE, CompiledModel
from biobullet.pipeline.stages import ACCELERATION, BIAS, MASS

_FLOAT = np.dtype(float)
_NO_MATRIX = np.zeros((0, 0))


def _vector(value, size: int) -> np.ndarray | None:
    """`value` as a C-contiguous float64 vector of `size` entries — the kernel entry's argument type —, or None (the generic path then reports what is wrong with it)."""
    if type(value) is np.ndarray and value.dtype is _FLOAT and value.shape == (size,) and value.flags.c_contiguous:
        return value   # (a read-only array passes too: the kernels only read q, v, τ)
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError):
        return None
    return array if array.shape == (size,) else None


class DataArrays(NamedTuple):
    """The pipeline's buffers (module docstring); sizes from the compiled model."""

    x: np.ndarray            # (n_config,) tree configuration
    xd: np.ndarray           # (n_tangent,) tree velocity
    gradient: np.ndarray     # (n_tangent, nv) G: ẋ = G v
    gamma: np.ndarray        # (n_tangent,) γ: ẍ = G v̇ + γ
    tau: np.ndarray          # (n_tangent,) applied joint-space forces
    rhs: np.ndarray          # (nv,) Q (= Gᵀ τ in the right-hand side), then Q − h_r
    low: np.ndarray          # (nv, nv) Cholesky factor
    power: np.ndarray        # (2,) input and dissipated power of the force stage


class Data:
    """The workspace of one compiled model (module docstring)."""

    def __init__(self, compiled: CompiledModel) -> None:
        nv, n_tangent = compiled.nv, compiled.n_tangent
        self.compiled = compiled
        self.arrays = DataArrays(np.zeros(compiled.n_config), np.zeros(n_tangent), np.zeros((n_tangent, nv)),
                                 np.zeros(n_tangent), np.zeros(n_tangent), np.zeros(nv), np.zeros((nv, nv)),
                                 np.zeros(2))
        self.acceleration = np.zeros(nv)   # `forward`'s v̇ when no output array is given
        self.zero_velocity = np.zeros(nv)   # v of the mass-matrix call; Q of a call without forces
        self.entries: dict[str, Any] = {}
        self._forward = None   # the forward kernel's direct entry for these argument types
        self._callback = compiled.state_stage == CALLBACK_STATE

    def _run(self, model, q, v, tau, t: float, want: int, out_vector, out_matrix) -> bool:
        """One call of the forward kernel (`stages._forward_py`); False: declined (the caller goes generic)."""
        if self._callback and not self._callback_state(model, q, v, t):
            return False
        entry = self._forward
        if entry is None:
            compiled = self.compiled
            from biobullet.pipeline.kernels import forward_kernel
            kernel = forward_kernel() if jit.ENABLED else None
            if kernel is None:
                return False
            entry = self._forward = self.entries["forward"] = jit.direct_entry(
                kernel, compiled, self.arrays, q, v, tau, t, want, out_vector, out_matrix)
        return entry(self.compiled, self.arrays, q, v, tau, t, want, out_vector, out_matrix) == 0

    def _callback_state(self, model, q, v, t: float) -> bool:
        """The callback stage: x, ẋ, G, γ from `model.joint_state_view` into the arrays (False: it raised, the
        generic path then reports the same error)."""
        try:
            x, xd, gradient, gamma = model.joint_state_view(q, v, t)
        except Exception:
            return False
        arrays = self.arrays
        arrays.x[:] = x
        arrays.xd[:] = xd
        arrays.gradient[:, :] = np.eye(model.n_tangent, model.nv) if gradient is None else gradient
        arrays.gamma[:] = 0.0 if gamma is None else gamma
        return True

    def forward(self, model, q, v, tau=None, t: float = 0.0, out: np.ndarray | None = None) -> np.ndarray | None:
        """v̇ of generalized forces `tau` (nv, default zero) into `out` (default: `acceleration`), returned; None:
        declined."""
        compiled = self.compiled
        q, v = _vector(q, compiled.nq), _vector(v, compiled.nv)
        tau = self.zero_velocity if tau is None else _vector(tau, compiled.nv)
        if q is None or v is None or tau is None:
            return None
        if out is None:
            out = self.acceleration
        return out if self._run(model, q, v, tau, float(t), ACCELERATION, out, _NO_MATRIX) else None

    def mass_matrix(self, model, q, t: float = 0.0, out: np.ndarray | None = None) -> np.ndarray | None:
        """M_r(q, t) into `out` (nv × nv; a new array by default), returned; None: declined."""
        compiled = self.compiled
        q = _vector(q, compiled.nq)
        if q is None:
            return None
        if out is None:
            out = np.empty((compiled.nv, compiled.nv))
        zero = self.zero_velocity
        return out if self._run(model, q, zero, zero, float(t), MASS, zero, out) else None

    def bias_forces(self, model, q, v, t: float = 0.0, out: np.ndarray | None = None) -> np.ndarray | None:
        """h_r(q, v, t) into `out` (nv; a new array by default), returned; None: declined."""
        compiled = self.compiled
        q, v = _vector(q, compiled.nq), _vector(v, compiled.nv)
        if q is None or v is None:
            return None
        if out is None:
            out = np.empty(compiled.nv)
        return out if self._run(model, q, v, self.zero_velocity, float(t), BIAS, out, _NO_MATRIX) else None

    def __repr__(self) -> str:
        return f"Data(nq={self.compiled.nq}, nv={self.compiled.nv})"
