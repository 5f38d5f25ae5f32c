"""What a muscle is, as parsed from a file (`.osim` ForceSet or the `<biobullet>` block's `<muscle>`): immutable
descriptions named by frame (OpenSim body) and coordinate names, before compilation into kernel arrays (`path`).

Units: SI — lengths in m, forces in N, angles in rad, times in s, velocities in optimal fiber lengths per second
(OpenSim's `max_contraction_velocity`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from biobullet.muscles.location import LocationFunction

#: Hill models (the `<muscle model=...>` names) and their OpenSim classes
MODELS: dict[str, str] = {"degroote2016": "DeGrooteFregly2016Muscle", "millard2012": "Millard2012EquilibriumMuscle",
                          "thelen2003": "Thelen2003Muscle"}
DEFAULT_MODEL = "degroote2016"
WRAP_TYPES = ("cylinder", "sphere", "ellipsoid", "torus")
#: OpenSim's quadrant names ("all" = both sides; "x" is OpenSim's spelling of "+x")
QUADRANTS = ("all", "+x", "-x", "+y", "-y", "+z", "-z")
#: Millard2012's curve objects; their properties are named "Curve.property" among a muscle's extra parameters
MILLARD_CURVE_PROPERTIES: dict[str, tuple[str, ...]] = {
    "ActiveForceLengthCurve": ("min_norm_active_fiber_length", "transition_norm_fiber_length",
                               "max_norm_active_fiber_length", "shallow_ascending_slope", "minimum_value"),
    "ForceVelocityCurve": ("concentric_slope_at_vmax", "concentric_slope_near_vmax", "isometric_slope",
                           "eccentric_slope_at_vmax", "eccentric_slope_near_vmax",
                           "max_eccentric_velocity_force_multiplier", "concentric_curviness", "eccentric_curviness"),
    "FiberForceLengthCurve": ("strain_at_zero_force", "strain_at_one_norm_force", "stiffness_at_low_force",
                              "stiffness_at_one_norm_force", "curviness"),
    "TendonForceLengthCurve": ("strain_at_one_norm_force", "stiffness_at_one_norm_force", "norm_force_at_toe_end",
                               "curviness"),
}
#: each model's extra parameters (`MuscleParameters.extra`, the `<parameter name=...>` of a `<muscle>`): exactly the
#: OpenSim property names the code reads (`MuscleParameters.value` refuses any other name, so the two cannot drift)
EXTRA_PARAMETERS: dict[str, frozenset[str]] = {
    "degroote2016": frozenset({"default_activation", "activation_dynamics_smoothing", "active_force_width_scale",
                               "passive_fiber_strain_at_one_norm_force", "tendon_strain_at_one_norm_force",
                               "ignore_passive_fiber_force"}),
    "thelen2003": frozenset({"default_activation", "maximum_pennation_angle", "FmaxTendonStrain", "FmaxMuscleStrain",
                             "KshapeActive", "KshapePassive", "Af", "Flen", "fv_linear_extrap_threshold"}),
    "millard2012": frozenset({"default_activation", "maximum_pennation_angle",
                              *(f"{curve}.{name}" for curve, names in MILLARD_CURVE_PROPERTIES.items()
                                for name in names)}),
}
#: extra parameters that OpenSim writes as true/false (read as 1/0)
FLAG_PARAMETERS = frozenset({"ignore_passive_fiber_force"})
_READ_NAMES = frozenset().union(*EXTRA_PARAMETERS.values())


@dataclass(frozen=True)
class PathPoint:
    """One point of a path, in the frame of body `frame` (`ground` for the world).

    fixed: at `location`; conditional: at `location`, on the path only while coordinate `coordinate` is in
    `range` (OpenSim: ± 1e-5 beyond either end still counts); moving: at `rotation` · (f_x(c_x), f_y(c_y),
    f_z(c_z)) + `translation` with each c clamped to `range` when given, else to its coordinate's range (OpenSim's
    MovingPathPoint; an axis without a coordinate is f(0)).
    """

    name: str
    frame: str
    kind: str = "fixed"
    location: np.ndarray = field(default_factory=lambda: np.zeros(3))
    coordinate: str | None = None
    range: tuple[float, float] | None = None
    functions: tuple[LocationFunction | None, ...] = (None, None, None)
    coordinates: tuple[str | None, ...] = (None, None, None)
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))


@dataclass(frozen=True)
class WrapSurface:
    """A wrapping surface fixed in body `frame` at `rotation`, `translation` (OpenSim's xyz_body_rotation and
    translation). `dimensions`: cylinder (radius, length), sphere (radius,), ellipsoid (3 radii), torus (inner
    radius, outer radius). `quadrant`: the side of the surface a path may wrap over (QUADRANTS)."""

    name: str
    type: str
    frame: str
    dimensions: tuple[float, ...]
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    quadrant: str = "all"
    active: bool = True


@dataclass(frozen=True)
class PathWrap:
    """A path's use of surface `surface`: OpenSim's PathWrap (method; `range` = 1-based first and last path points
    considered, -1 for the path's ends)."""

    surface: str
    method: str = "hybrid"
    range: tuple[int, int] = (-1, -1)


@dataclass(frozen=True)
class MuscleParameters:
    """A Hill model's parameters (OpenSim's names in brackets).

    max_isometric_force F₀ (N), optimal_fiber_length l₀ (m), tendon_slack_length l_s (m), pennation_angle α₀ at
    optimal fiber length (rad; constant-height pennation), max_contraction_velocity v_max (l₀/s), tendon 'rigid'
    or 'compliant', activation/deactivation time constants (s), minimum_activation, fiber_damping (normalized),
    and `extra`: the model's own parameters by OpenSim name (EXTRA_PARAMETERS).
    """

    max_isometric_force: float
    optimal_fiber_length: float
    tendon_slack_length: float
    pennation_angle: float = 0.0
    max_contraction_velocity: float = 10.0
    tendon: str = "rigid"
    activation_time_constant: float = 0.015
    deactivation_time_constant: float = 0.060
    minimum_activation: float = 0.0
    fiber_damping: float = 0.0
    extra: tuple[tuple[str, float], ...] = ()

    def value(self, name: str, default: float) -> float:
        """The model-specific parameter `name` (`default` when the file left it out); `name` must be one of
        EXTRA_PARAMETERS (a KeyError otherwise: a name the code reads must be one a file may give)."""
        if name not in _READ_NAMES:
            raise KeyError(f"{name!r} is not in EXTRA_PARAMETERS")
        return dict(self.extra).get(name, default)


@dataclass(frozen=True)
class MuscleDescription:
    """One musculotendon unit: its Hill `model` (MODELS), parameters, path points (in path order) and wraps."""

    name: str
    model: str
    parameters: MuscleParameters
    points: tuple[PathPoint, ...]
    wraps: tuple[PathWrap, ...] = ()


@dataclass(frozen=True)
class MuscleSetDescription:
    """A file's muscles with the frames, coordinates (and their ranges, which clamp moving points) and wrapping
    surfaces they refer to by name."""

    file: str
    muscles: tuple[MuscleDescription, ...]
    frames: tuple[str, ...]
    coordinates: tuple[str, ...]
    coordinate_ranges: np.ndarray
    surfaces: tuple[WrapSurface, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(muscle.name for muscle in self.muscles)


__all__ = ["MODELS", "DEFAULT_MODEL", "WRAP_TYPES", "QUADRANTS", "MILLARD_CURVE_PROPERTIES", "EXTRA_PARAMETERS",
           "FLAG_PARAMETERS", "PathPoint", "WrapSurface",
           "PathWrap", "MuscleParameters", "MuscleDescription", "MuscleSetDescription"]
