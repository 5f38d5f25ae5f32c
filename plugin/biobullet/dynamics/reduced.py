"""Reduced formulation (paper 000): project the tree dynamics through θ = f(q, t).

    M_r = Gᵀ M(θ) G,    h_r = Gᵀ (M(θ) γ + h(θ, θ̇)) = Gᵀ RNEA(θ, θ̇, γ)
so dependent joints disappear from the equations. The tree quantities come from our own spatial recursions.
"""
from __future__ import annotations

import numpy as np

from .crba import crba
from .formulation import Formulation, register_formulation
from .rnea import rnea


@register_formulation
class ReducedFormulation(Formulation):
    name = "reduced"
    description = "projection through joint functions on biobullet's spatial recursions (CRBA/RNEA)"

    def tree_mass_matrix(self, model, x: np.ndarray) -> np.ndarray:
        return crba(model, x)

    def tree_inverse_dynamics(self, model, x, xd, xdd) -> np.ndarray:
        return rnea(model, x, xd, xdd)

    def mass_matrix(self, model, q, t):
        x, gradient = model.coordinate_gradient(q, t)
        mass = self.tree_mass_matrix(model, x)
        if model.coordinate_map.identity:
            return mass
        return gradient.T @ mass @ gradient

    def bias_forces(self, model, q, v, t):
        x, xd, gradient, gamma = model.joint_state(q, v, t)
        h = self.tree_inverse_dynamics(model, x, xd, gamma)
        if model.coordinate_map.identity:
            return h
        return gradient.T @ h
