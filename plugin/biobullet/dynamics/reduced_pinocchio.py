"""Formulation "reduced_pinocchio": the projection of `reduced` on Pinocchio's C++ CRBA/RNEA (the fast backend).

    M_r = Gᵀ M(θ) G,    h_r = Gᵀ RNEA(θ, θ̇, γ)
with the tree quantities from Pinocchio, built once per Model from the same URDF file (cached weakly: a
Model is immutable). Validation never checks this formulation (it IS Pinocchio).
"""
from __future__ import annotations

import weakref

import numpy as np

from .formulation import Formulation, register_formulation

_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class _Backend:
    """Pinocchio model, data and precomputed index maps for one Model."""

    def __init__(self, model) -> None:
        import pinocchio as pin
        from ..conventions import PinocchioMap
        from ..validate.oracles import build_pinocchio_model
        self.pin = pin
        self.pin_model = build_pinocchio_model(model)
        self.data = self.pin_model.createData()
        self.map = PinocchioMap(model, self.pin_model)
        index = self.map.tangent_index
        self.identity_order = bool(np.array_equal(index, np.arange(index.size)))
        self.grid = np.ix_(index, index)
        self.upper = np.triu_indices(self.pin_model.nv, 1)

    def mass(self, x: np.ndarray) -> np.ndarray:
        mass = self.pin.crba(self.pin_model, self.data, self.map.config_to_pinocchio(x))
        mass[self.upper[1], self.upper[0]] = mass[self.upper]  # crba fills the upper triangle only
        return np.array(mass) if self.identity_order else mass[self.grid]

    def inverse_dynamics(self, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray) -> np.ndarray:
        m = self.map
        if self.identity_order:
            tau = self.pin.rnea(self.pin_model, self.data, m.config_to_pinocchio(x), xd, xdd)
            return np.array(tau)
        tau = self.pin.rnea(self.pin_model, self.data, m.config_to_pinocchio(x), m.velocity_to_pinocchio(xd),
                            m.velocity_to_pinocchio(xdd))
        return tau[m.tangent_index]


def backend(model) -> _Backend:
    try:
        return _cache[model]
    except KeyError:
        b = _cache[model] = _Backend(model)
        return b


@register_formulation
class ReducedPinocchioFormulation(Formulation):
    name = "reduced_pinocchio"
    description = "projection through joint functions on Pinocchio's C++ CRBA/RNEA (fast backend)"

    def mass_matrix(self, model, q, t):
        x, gradient = model.coordinate_gradient(q, t)
        mass = backend(model).mass(x)
        if model.coordinate_map.identity:
            return mass
        return gradient.T @ mass @ gradient

    def bias_forces(self, model, q, v, t):
        x, xd, gradient, gamma = model.joint_state(q, v, t)
        h = backend(model).inverse_dynamics(x, xd, gamma)
        if model.coordinate_map.identity:
            return h
        return gradient.T @ h
