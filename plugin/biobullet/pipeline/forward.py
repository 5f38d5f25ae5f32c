"""The pipeline's Python entries, Pinocchio-style free functions of (model, data, state) with in-place outputs:

    forward(model, data, q, v, tau, t)      v̇ into data.acceleration (returned), or None
    mass_matrix(model, data, q, t, out)     M_r(q, t) (nv × nv) into `out` (a new array by default), or None
    bias_forces(model, data, q, v, t, out)  h_r(q, v, t) (nv) into `out`, or None

q, v, tau: generalized positions, velocities and forces Q (nv; None: zero); M v̇ + h = Q. None means the pipeline
declined this call — an argument that is not a finite float vector of its size, a function's
jets not finite, M_r not positive definite — and the caller says why (`Model.mass_matrix` and the others, through
the formulation "reduced": `dynamics/reduced.py`). A model whose coordinate map needs Python (loops, joint functions
without compiled jets) enters through its joint state (`Model.joint_state_view`, the callback stage); the tree
dynamics and the solve are the same kernels.
"""
from __future__ import annotations

import numpy as np

from biobullet.pipeline.data import Data


def forward(model, data: Data, q, v, tau=None, t: float = 0.0) -> np.ndarray | None:
    """v̇ of generalized forces `tau` (nv, default zero) into data.acceleration, returned; None: declined."""
    return data.forward(model, q, v, tau, t)


def forward_dynamics(model, data: Data, q, v, tau=None, t: float = 0.0) -> np.ndarray | None:
    """`forward` into a new array (what `Model.forward_dynamics` returns)."""
    result = data.forward(model, q, v, tau, t)
    return None if result is None else result.copy()


def mass_matrix(model, data: Data, q, t: float = 0.0, out: np.ndarray | None = None) -> np.ndarray | None:
    """M_r(q, t) into `out` (nv × nv; a new array by default), returned; None: declined."""
    return data.mass_matrix(model, q, t, out)


def bias_forces(model, data: Data, q, v, t: float = 0.0, out: np.ndarray | None = None) -> np.ndarray | None:
    """h_r(q, v, t) into `out` (nv; a new array by default), returned; None: declined."""
    return data.bias_forces(model, q, v, t, out)
