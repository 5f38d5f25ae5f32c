"""Formulation "reduced_pinocchio": the projection of `reduced` on Pinocchio's C++ CRBA/RNEA (the fast backend).

    M_r = Gᵀ M(θ) G,    h_r = Gᵀ RNEA(θ, θ̇, γ)
with the tree quantities from Pinocchio, built once per Model from the same URDF file (cached weakly: a
Model is immutable). Validation never checks this formulation (it IS Pinocchio).
"""
from __future__ import annotations


import numpy as np

from biobullet.algorithms import compiled_kernels as kernels
from biobullet.dynamics.formulation import register_formulation
from biobullet.dynamics.reduced import ProjectedFormulation

_BACKEND = "reduced_pinocchio.backend"   # key of the model's `_Backend` in `Model.derived`


class _Backend:
    """Pinocchio model, data and precomputed index maps for one Model.

    Pinocchio's CRBA fills the upper triangle only: one `take` with a precomputed (nv, nv) index array both
    mirrors it and reorders it into our tangent order. Configurations and tangent vectors go straight through
    when the joint orders agree and no joint is continuous (Pinocchio's (cos, sin)); otherwise through
    precomputed gathers.
    """

    def __init__(self, model) -> None:
        import pinocchio as pin
        from biobullet.conventions import PinocchioMap
        from biobullet.conventions import (build_pinocchio_model, pinocchio_model_from_description,
                                           pinocchio_parser_departure)
        self.pin = pin
        self.pin_model = build_pinocchio_model(model)
        if pinocchio_parser_departure(model, model.file):
            # Pinocchio's parser reads other inertias than the model has (inertia="repair", an <inertia> missing
            # attributes): M and h were those of the file's tensors, 20 % off on a repaired spherical arm
            self.pin_model = pinocchio_model_from_description(model.description, model.floating_base)
            self.pin_model.gravity.linear = np.array(model.gravity, dtype=float)
        self.data = self.pin_model.createData()
        self.map = PinocchioMap(model, self.pin_model)
        index = self.map.tangent_index
        nv = self.pin_model.nv
        self.identity_order = bool(np.array_equal(index, np.arange(index.size)))
        self.continuous = bool(self.map.cont_src.size)
        rows, cols = index[:, None], index[None, :]
        self.symmetric_take = np.minimum(rows, cols) * nv + np.maximum(rows, cols)  # ours [a, b] → upper of Pin
        self.tangent_take = np.argsort(index)  # Pinocchio v index → ours: out_pin = ours[tangent_take]
        self.config_take = None
        if not self.continuous:  # every Pinocchio q entry is one of ours
            config = np.empty(self.pin_model.nq, dtype=np.intp)
            config[self.map.plain_dst] = self.map.plain_src
            self.config_take = config
        self.zeros = np.zeros(nv)
        # the model scales a non-zero quaternion or planar (cos, sin) pair to unit length, Pinocchio reads it as given
        # (a floating base's quaternion of norm 2 gave M 5× off): Pinocchio's `normalize` of its configuration,
        # where the tree has such blocks (≈ 0.3 µs)
        self.normalize = pin.normalize if model.compiled.blocks.shape[0] else None
        self.upper = np.triu_indices(nv, 1)
        self.crba, self.nle = pin.crba, pin.nonLinearEffects
        cmap = model.coordinate_map
        # hot-path kinds: "direct" (identity map, no continuous joint: arrays straight through, permuted if the
        # joint orders differ), "affine" (linear joint functions, fixed base, no continuous joint: the model's
        # x = A q + b, ẋ = A q̇ permuted into Pinocchio's order, A's rows in that order for the projection), else
        # "general"
        self.kind = "general"
        if not self.continuous and cmap.kind == "identity":
            self.kind = "direct"
        elif not self.continuous and cmap.kind == "affine" and not model.base_nq:
            self.kind = "affine"
            order = np.argsort(index)  # Pinocchio index → ours (fixed base, no continuous: q index = v index)
            self.affine_matrix = np.ascontiguousarray(cmap.affine_matrix[order])

    def config(self, x: np.ndarray) -> np.ndarray:
        if self.continuous:
            q = self.map.config_to_pinocchio(x)
        else:
            q = x if self.identity_order else x.take(self.config_take)
        return q if self.normalize is None else self.normalize(self.pin_model, q)

    def tangent(self, xd: np.ndarray) -> np.ndarray:
        return xd if self.identity_order else xd.take(self.tangent_take)

    def mass(self, x: np.ndarray) -> np.ndarray:
        return self.pin.crba(self.pin_model, self.data, self.config(x)).take(self.symmetric_take)

    def inverse_dynamics(self, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray | None) -> np.ndarray:
        q, v = self.config(x), self.tangent(xd)
        if xdd is None:
            tau = self.pin.nonLinearEffects(self.pin_model, self.data, q, v)
        else:
            tau = self.pin.rnea(self.pin_model, self.data, q, v, self.tangent(xdd))
        return tau if self.identity_order else tau.take(self.map.tangent_index)

    def mass_and_bias(self, x, xd, xdd) -> tuple[np.ndarray, np.ndarray]:
        pin, pm, data = self.pin, self.pin_model, self.data
        q, v = self.config(x), self.tangent(xd)
        mass = pin.crba(pm, data, q).take(self.symmetric_take)
        if xdd is None:
            tau = pin.nonLinearEffects(pm, data, q, v)
        else:
            tau = pin.rnea(pm, data, q, v, self.tangent(xdd))
        return mass, (tau if self.identity_order else tau.take(self.map.tangent_index))


def backend(model) -> _Backend:
    return model.derive(_BACKEND, lambda: _Backend(model))


@register_formulation
class ReducedPinocchioFormulation(ProjectedFormulation):
    name = "reduced_pinocchio"
    description = "projection through joint functions on Pinocchio's C++ CRBA/RNEA (fast backend)"

    def tree_mass_matrix(self, model, x):
        return backend(model).mass(x)

    def tree_inverse_dynamics(self, model, x, xd, xdd):
        return backend(model).inverse_dynamics(x, xd, xdd)

    def mass_and_bias(self, model, q, v, t) -> tuple[np.ndarray, np.ndarray]:
        """Both at once: one coordinate-map evaluation, CRBA + RNEA (NLE when γ = 0), one projection."""
        b = backend(model)
        kind = b.kind
        if kind == "direct":
            q, v = model.joint_state_view(q, v, t)[:2]   # checked q, v (the identity map)
            if b.identity_order:
                if b.normalize is not None:
                    q = b.normalize(b.pin_model, q)
                return b.crba(b.pin_model, b.data, q).take(b.symmetric_take), b.nle(b.pin_model, b.data, q, v)
            q, v = q.take(b.config_take), v.take(b.tangent_take)
            if b.normalize is not None:
                q = b.normalize(b.pin_model, q)
            return (b.crba(b.pin_model, b.data, q).take(b.symmetric_take),
                    b.nle(b.pin_model, b.data, q, v).take(b.map.tangent_index))
        if kind == "affine":
            a = b.affine_matrix
            x, xd = model.joint_state_view(q, v, t)[:2]   # A q + b, A v (ours)
            if not b.identity_order:   # into Pinocchio's order (q index = v index)
                x, xd = x.take(b.tangent_take), xd.take(b.tangent_take)
            if b.normalize is not None:
                x = b.normalize(b.pin_model, x)
            return kernels.project_upper(b.crba(b.pin_model, b.data, x), b.nle(b.pin_model, b.data, x, xd), a)
        x, xd, gradient, gamma = model.joint_state_view(q, v, t)
        mass, h = b.mass_and_bias(x, xd, gamma)
        if gradient is None:
            return mass, h
        return kernels.project_upper(mass, h, gradient)   # (Gᵀ M G, Gᵀ h), M's upper triangle read
