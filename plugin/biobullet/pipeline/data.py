"""The data workspace of a compiled model: every buffer the pipeline writes, and what a run caches.

`Data(compiled)` (or `model.data()`) owns
- `arrays` (`DataArrays`, a NamedTuple the kernels take as one structured argument): the joint state x, ẋ, G, γ;
  the applied joint forces τ and their generalized projection Q = Gᵀ τ; v̇; the solve's right-hand side and
  Cholesky factor; (input power, dissipated power) of the force stage;
- `entries`: the compiled kernels' direct entries for these argument types (`core.jit.direct_entry`: a call then
  skips numba's argument matching, ≈ 2 µs for the structured arguments).
One Data per concurrent user (a Model's convenience methods use `model.workspace`; a run or a bridge makes its
own): the kernels write into it.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from biobullet.pipeline.compiled_model import CompiledModel


class DataArrays(NamedTuple):
    """The pipeline's buffers (module docstring); sizes from the compiled model."""

    x: np.ndarray            # (n_config,) tree configuration
    xd: np.ndarray           # (n_tangent,) tree velocity
    gradient: np.ndarray     # (n_tangent, nv) G: ẋ = G v
    gamma: np.ndarray        # (n_tangent,) γ: ẍ = G v̇ + γ
    tau: np.ndarray          # (n_tangent,) applied joint-space forces
    generalized: np.ndarray  # (nv,) Q = Gᵀ τ
    accel: np.ndarray        # (nv,) v̇
    rhs: np.ndarray          # (nv,) Q − h_r
    low: np.ndarray          # (nv, nv) Cholesky factor
    power: np.ndarray        # (2,) input and dissipated power of the force stage


class Data:
    """The workspace of one compiled model (module docstring)."""

    def __init__(self, compiled: CompiledModel) -> None:
        nv, n_tangent = compiled.nv, compiled.n_tangent
        self.compiled = compiled
        self.arrays = DataArrays(np.zeros(compiled.n_config), np.zeros(n_tangent), np.zeros((n_tangent, nv)),
                                 np.zeros(n_tangent), np.zeros(n_tangent), np.zeros(nv), np.zeros(nv),
                                 np.zeros(nv), np.zeros((nv, nv)), np.zeros(2))
        self.zero_velocity = np.zeros(nv)   # v of the mass-matrix call; Q of a call without forces
        self.entries: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"Data(nq={self.compiled.nq}, nv={self.compiled.nv})"
