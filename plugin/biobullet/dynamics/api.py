"""The dynamics as free functions of (model, state), Pinocchio-style; `Model`'s methods are conveniences over them.

`build_model(description)` makes a `Model` with its loop resolver (constraints) and these functions bound, and
`model_from_file(path)` reads a model file into one — the assembly every library module uses. The public
`biobullet.load_model` (biobullet.loader) adds the check of every element of the file.

Vectors: q (nq), v (nv) generalized; `tau` generalized forces Q (nv); M(q, t) v̇ + h(q, v, t) = Q.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from biobullet.constraints.implicit import build_loop_resolver
from biobullet.dynamics.formulation import get_formulation
from biobullet.model.description import ModelDescription
from biobullet.model.model import Model
from biobullet.model.urdf import load_description
from biobullet.pipeline.compiled_model import compile_model
from biobullet.pipeline.data import Data


def mass_matrix(model: Model, q, t: float = 0.0, *, formulation: str | None = None) -> np.ndarray:
    """M(q, t), nv × nv (kg, kg·m, kg·m²): the pipeline (`biobullet.pipeline`, formulation "reduced") by default,
    else the named formulation."""
    return get_formulation(formulation).mass_matrix(model, _rotations_checked(model, q, formulation), t)


def bias_forces(model: Model, q, v, t: float = 0.0, *, formulation: str | None = None) -> np.ndarray:
    """h(q, v, t): Coriolis, centrifugal, gravity and joint-function γ terms, such that M v̇ + h = Q (the pipeline
    by default, as `mass_matrix`)."""
    return get_formulation(formulation).bias_forces(model, _rotations_checked(model, q, formulation),
                                                    _speeds_checked(model, v, formulation), t)


def forward_dynamics(model: Model, q, v, tau=None, t: float = 0.0, *, formulation: str | None = None
                     ) -> np.ndarray:
    """v̇ from M v̇ = Q − h; `tau` = Q (nv), default zero (the pipeline by default, as `mass_matrix`)."""
    if tau is not None:
        tau = model.checked("tau", tau, model.nv)
    return get_formulation(formulation).forward_dynamics(model, _rotations_checked(model, q, formulation),
                                                         _speeds_checked(model, v, formulation), tau, t)


def _rotations_checked(model: Model, q, formulation: str | None):
    """q, checked for a check formulation: its length (matrix_calculus raised a bare numpy ValueError) and
    `Model.check_rotations` (the pipeline declines such a q itself and reports it; the check formulations took a
    zero quaternion as NaN, or raised ZeroDivisionError from a compiled kernel)."""
    if formulation is not None:
        checked = model.checked("q", q, model.nq)
        if model.nq != model.nv:   # quaternions or planar pairs somewhere in the tree, not only at the base
            model.check_rotations(checked)
    return q


def _speeds_checked(model: Model, v, formulation: str | None):
    """v, its length checked for a check formulation (the pipeline checks it itself)."""
    if formulation is not None:
        model.checked("v", v, model.nv)
    return v


def make_data(model: Model) -> Data:
    """A new data workspace of the model's compiled arrays (`Model.data()`)."""
    return Data(model.compiled)


def build_model(description: ModelDescription) -> Model:
    """The `Model` of a parsed description, with loops resolved and this module's dynamics bound."""
    return Model(description, loop_resolver_factory=build_loop_resolver, dynamics=sys.modules[__name__])


def model_from_file(path: str | os.PathLike[str], floating_base: bool | None = None, *,
                    inertia: str = "warn", joint_limits: bool = True) -> Model:
    """Read a URDF with its `<biobullet>` block into a Model (no check of the force/contact/flexible elements:
    `biobullet.load_model` does that). `inertia`, `joint_limits`: see `biobullet.load_model`."""
    return build_model(load_description(path, floating_base, inertia, joint_limits))


__all__ = ["mass_matrix", "bias_forces", "forward_dynamics", "build_model", "model_from_file", "compile_model",
           "make_data"]
