"""Formulations of the equations of motion, behind one base class and a registry.

Two shapes share the base (the engine asks a formulation what it is, never tests its name):
- generalized (ODE): the state is (q, v) and M(q, t) v̇ + h(q, v, t) = Q — "reduced" (projection through
  θ = f(q, t) on our batched spatial algorithms), "reduced_recursive" (the same on our body-frame CRBA/RNEA),
  "reduced_pinocchio" (the same projection on Pinocchio's C++ CRBA/RNEA: the fast backend), "matrix_calculus"
  (paper 000's Kronecker recursion), "link_segment" (paper 001's per-segment Newton–Euler system with joint
  reactions; its `forward_dynamics` is a direct solve);
- joint (DAE): the state is the whole tree's (x, ẋ) and M(x) ẍ + h = τ + Φ_xᵀ λ with constraint rows Φ = 0 —
  "multipliers" (paper 003; Baumgarte gains owned by the constraint set, optional projection).
Third-party formulations subclass `Formulation` and register with `register_formulation` (or the entry-point group
`biobullet.formulations`).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from biobullet.core.errors import ModelError, SolverError, did_you_mean
from biobullet.core.plugins import PluginRegistry
from biobullet.spatial.dense import coordinate_floor, massless_coordinate, massless_text, solve_spd

DEFAULT_FORMULATION = "reduced"
GENERALIZED, JOINT = "generalized", "joint"


class Formulation(ABC):
    """One formulation: pure functions of (model, state); instances hold no state of a run."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: what the reference engine integrates: GENERALIZED → (q, v); JOINT → (x, ẋ) of the whole tree
    state_space: ClassVar[str] = GENERALIZED
    #: joint-space formulations: positions and velocities can be projected onto the constraints
    can_project: ClassVar[bool] = False
    #: the solve also gives constraint forces λ (recorded in Trajectory.multipliers)
    has_multipliers: ClassVar[bool] = False
    #: the pipeline itself ("reduced"): the engine's compiled right-hand side serves it; other formulations are
    #: checks, evaluated on the callback stage's joint state
    is_pipeline: ClassVar[bool] = False

    @abstractmethod
    def mass_matrix(self, model, q: np.ndarray, t: float) -> np.ndarray: ...

    @abstractmethod
    def bias_forces(self, model, q: np.ndarray, v: np.ndarray, t: float) -> np.ndarray: ...

    def mass_and_bias(self, model, q: np.ndarray, v: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(M, h) together; formulations override this to share work between the two."""
        return self.mass_matrix(model, q, t), self.bias_forces(model, q, v, t)

    def mass_bias_gradient(self, model, q: np.ndarray, v: np.ndarray,
                           t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(M, h, G): `mass_and_bias` and the coordinate map's G at this state (None for the identity map), which
        `forward_dynamics` tests each coordinate's diagonal entry through; a formulation that forms G anyway
        overrides this to hand its own."""
        mass, bias = self.mass_and_bias(model, q, v, t)
        return mass, bias, None if model.coordinate_map.identity else model.joint_state_view(q, v, t)[2]

    def forward_dynamics(self, model, q: np.ndarray, v: np.ndarray, tau: np.ndarray | None,
                         t: float) -> np.ndarray:
        """v̇ from M v̇ = Q − h; `tau` = generalized forces Q (nv) or None; a SolverError naming the coordinate that
        moves no mass (`spatial.dense.massless_coordinate`) or where M is singular to round-off."""
        mass, bias, gradient = self.mass_bias_gradient(model, q, v, t)
        rhs = -bias if tau is None else tau - bias
        # the pipeline's test of each coordinate's own diagonal entry (it moves no mass), through G at this state
        massless = massless_coordinate(mass, model.compiled.mass_floor_root, gradient)
        if massless is not None:
            floor = coordinate_floor(model.compiled.mass_floor_root, gradient, massless)
            raise SolverError((f"{model.file}: " if model.file else "")
                              + massless_text(model.velocity_names, massless, mass[massless, massless], floor))
        return solve_spd(mass, rhs, model.file, model.velocity_names)

    # joint-space (DAE) formulations implement these
    def joint_accelerations(self, model, x: np.ndarray, xd: np.ndarray, tau: np.ndarray | None, t: float,
                            **options) -> tuple[np.ndarray, np.ndarray]:
        """(ẍ, λ) of the whole tree under applied joint forces `tau` (n_tangent)."""
        raise ModelError(f"formulation {self.name!r} integrates generalized coordinates, not the joint state",
                         argument="formulation")

    def project_positions(self, model, x: np.ndarray, t: float) -> np.ndarray:
        raise ModelError(f"formulation {self.name!r} has no position projection", argument="formulation")

    def project_velocities(self, model, x: np.ndarray, xd: np.ndarray, t: float) -> np.ndarray:
        raise ModelError(f"formulation {self.name!r} has no velocity projection", argument="formulation")


def _load_builtin() -> None:
    from biobullet.dynamics import link_segment, matrix_calculus, multipliers, reduced  # noqa: F401  (register)
    try:
        from biobullet.dynamics import reduced_pinocchio  # noqa: F401
    except ImportError:  # pinocchio missing: the fast backend is simply unavailable
        pass


FORMULATIONS: PluginRegistry[type[Formulation]] = PluginRegistry(
    "formulation", Formulation, "biobullet.formulations", _load_builtin)
_instances: dict[str, Formulation] = {}


def register_formulation(cls: type[Formulation]) -> type[Formulation]:
    FORMULATIONS.add(cls.name, cls)
    return cls


def formulation_names(state_space: str | None = None) -> list[str]:
    """Registered formulation names (only those of one state space when given)."""
    names = FORMULATIONS.names()
    if state_space is None:
        return names
    return [name for name in names if FORMULATIONS.get(name).state_space == state_space]


def get_formulation(name: str | None) -> Formulation:
    name = name or DEFAULT_FORMULATION
    instance = _instances.get(name)
    if instance is None:
        cls = FORMULATIONS.get(name)
        if cls is None:
            raise ModelError(f"unknown formulation {name!r}{did_you_mean(name, FORMULATIONS.names())}", argument="formulation",
                             expected="one of " + ", ".join(FORMULATIONS.names()))
        instance = _instances[name] = cls()
    return instance
