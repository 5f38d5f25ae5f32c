"""Reduced formulation (paper 000): project the tree dynamics through θ = f(q, t).

    M_r = Gᵀ M(θ) G,    h_r = Gᵀ (M(θ) γ + h(θ, θ̇)) = Gᵀ RNEA(θ, θ̇, γ)
so dependent joints disappear from the equations. Two interchangeable tree backends, both ours:
"reduced" uses the world-frame algorithms (vectorized.py on the compiled tree kernel) and
"reduced_recursive" the classic body-frame CRBA/RNEA recursions (crba.py, rnea.py).
"""
from __future__ import annotations

import numpy as np

from biobullet.algorithms.crba import crba
from biobullet.dynamics.formulation import Formulation, register_formulation
from biobullet.algorithms.rnea import rnea
from biobullet.algorithms import compiled_kernels as kernels
from biobullet.algorithms.vectorized import mass_matrix_and_bias


def project(mass: np.ndarray, h: np.ndarray, gradient: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Gᵀ M G, Gᵀ h) for a symmetric M (upper triangle read), one compiled call."""
    return kernels.project_upper(mass, h, gradient)


@register_formulation
class ReducedFormulation(Formulation):
    name = "reduced"
    description = "projection through joint functions on biobullet's world-frame CRBA/RNEA (compiled kernel)"

    def tree_mass_matrix(self, model, x: np.ndarray) -> np.ndarray:
        return mass_matrix_and_bias(model, x)[0]

    def tree_inverse_dynamics(self, model, x, xd, xdd) -> np.ndarray:
        return mass_matrix_and_bias(model, x, xd, xdd, need_mass=False)[1]

    def mass_matrix(self, model, q, t):
        x, gradient = model.coordinate_gradient(q, t)
        mass = self.tree_mass_matrix(model, x)
        if model.coordinate_map.identity:
            return mass
        return gradient.T @ mass @ gradient

    def bias_forces(self, model, q, v, t):
        x, xd, gradient, gamma = model.joint_state_view(q, v, t)
        h = self.tree_inverse_dynamics(model, x, xd, np.zeros(model.n_tangent) if gamma is None else gamma)
        if gradient is None:
            return h
        return gradient.T @ h

    def mass_and_bias(self, model, q, v, t) -> tuple[np.ndarray, np.ndarray]:
        """Both at once, sharing the kinematics (what integrators call). G None: identity; γ None: zero."""
        x, xd, gradient, gamma = model.joint_state_view(q, v, t)
        mass, h = mass_matrix_and_bias(model, x, xd, gamma)
        if gradient is None:
            return mass, h
        return project(mass, h, gradient)


@register_formulation
class ReducedRecursiveFormulation(ReducedFormulation):
    name = "reduced_recursive"
    description = "projection through joint functions on biobullet's body-frame recursions (CRBA, RNEA)"

    def tree_mass_matrix(self, model, x):
        return crba(model, x)

    def tree_inverse_dynamics(self, model, x, xd, xdd):
        return rnea(model, x, xd, xdd)

    def mass_and_bias(self, model, q, v, t):
        x, xd, gradient, gamma = model.joint_state(q, v, t)
        mass, h = crba(model, x), rnea(model, x, xd, gamma)
        if model.coordinate_map.identity:
            return mass, h
        return gradient.T @ mass @ gradient, gradient.T @ h
