"""The pipeline's Python entries, Pinocchio-style free functions of (model, data, state) with in-place outputs:

    forward(model, data, q, v, tau, t)      v̇ into data.acceleration (returned)
    mass_matrix(model, data, q, t, out)     M_r(q, t) (nv × nv) into `out` (a new array by default)
    bias_forces(model, data, q, v, t, out)  h_r(q, v, t) (nv) into `out`

q, v, tau: generalized positions, velocities and forces Q (nv; None: zero); M v̇ + h = Q. `data` must be a
workspace of this model (`model.data()`): another model's is refused (ModelError naming 'data'). Where the compiled
entry declines a call — an argument that is not a finite float vector of its size, a function's jets not finite,
M_r not positive definite — the Model's method of the same name says why (one ModelError naming the argument, or
a SolverError) or answers through the formulation "reduced" (`dynamics/reduced.py`); these entries never return
None. A model whose coordinate map needs Python (loops, joint functions
without compiled jets) enters through its joint state (`Model.joint_state_view`, the callback stage); the tree
dynamics and the solve are the same kernels.
"""
from __future__ import annotations

import numpy as np

from biobullet.core.errors import ModelError
from biobullet.pipeline.data import Data


def _checked_data(model, data) -> Data:
    """`data` if it is a workspace of `model`'s compiled model; else one ModelError naming 'data' (another model's
    workspace has other sizes and offsets: the kernels would read past its buffers or answer for the wrong tree)."""
    if not isinstance(data, Data) or data.compiled is not getattr(model, "compiled", None):
        raise ModelError(f"{type(data).__name__} is not a data workspace of this model",
                         file=getattr(model, "file", None), argument="data", expected="model.data()")
    return data


def forward(model, data: Data, q, v, tau=None, t: float = 0.0) -> np.ndarray:
    """v̇ of generalized forces `tau` (nv, default zero) into data.acceleration, returned."""
    result = _checked_data(model, data).forward(model, q, v, tau, t)
    if result is None:   # declined: the Model's method reports the argument or answers through "reduced"
        result = data.acceleration
        result[:] = type(model).forward_dynamics(model, q, v, tau, t)
    return result


def mass_matrix(model, data: Data, q, t: float = 0.0, out: np.ndarray | None = None) -> np.ndarray:
    """M_r(q, t) into `out` (nv × nv; a new array by default), returned."""
    result = _checked_data(model, data).mass_matrix(model, q, t, out)
    return type(model).mass_matrix(model, q, t, out=out) if result is None else result


def bias_forces(model, data: Data, q, v, t: float = 0.0, out: np.ndarray | None = None) -> np.ndarray:
    """h_r(q, v, t) into `out` (nv; a new array by default), returned."""
    result = _checked_data(model, data).bias_forces(model, q, v, t, out)
    return type(model).bias_forces(model, q, v, t, out=out) if result is None else result
