"""Built-in compliant normal-contact laws (see `base` for the sign conventions).

  kelvin_voigt         F = K δ + D δ̇                                  (linear spring–dashpot)
  kelvin_voigt_smooth  F = [½ + atan(C δ)/π] (K δ + D δ̇)              (paper 003, penetration positive;
                                                                       C = smoothing [1/m], default 1e6)
  hertz                F = K δⁿ                                       (n = exponent, default 3/2)
  hunt_crossley        F = K δⁿ [1 + 3(1−cr)/2        · δ̇/δ̇⁻]          (Hunt & Crossley 1975)
  flores               F = K δⁿ [1 + 8(1−cr)/(5 cr)   · δ̇/δ̇⁻]          (Flores et al. 2011)
  hu_guo               F = K δⁿ [1 + 3(1−cr)/(2 cr)   · δ̇/δ̇⁻]          (Hu & Guo 2015)
  opensim_hunt_crossley F = K δⁿ (1 + (3/2) c δ̇)                      (Simbody / OpenSim HuntCrossleyForce;
                                                                       c = dissipation [s/m], n default 3/2)

The three restitution laws are eqs. (21)–(23) of paper 002 (hysteresis damping χ Δⁿ Δ̇ with
χ = c(cr) K/Δ̇⁻, m = n). δ̇⁻ > 0 is the approach velocity stored at contact onset; it is floored at
``min_impact_velocity`` (default 1e-3 m/s) so that a contact starting at rest stays finite (more damped).
Every law returns max(F, 0) unless ``adhesion=True``. Each class holds and checks its parameters; its force is
its kernel in `contact.kernels` (`kernel_kind`, the row `kernel_parameters`).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from biobullet.core.errors import SourceRef
from biobullet.contact.base import NormalLaw
from biobullet.contact.kernels import (NORMAL_HERTZ, NORMAL_KELVIN_VOIGT, NORMAL_KELVIN_VOIGT_SMOOTH, NORMAL_OPENSIM,
                                       NORMAL_RESTITUTION)
from biobullet.core.attributes import error, number, to_float
from biobullet.contact.registry import register_normal_law

DEFAULT_EXPONENT = 1.5
DEFAULT_SMOOTHING = 1.0e6  # 1/m, paper 003 (C1)
DEFAULT_MIN_IMPACT_VELOCITY = 1.0e-3  # m/s
#: the exponent n of F = K δⁿ accepted: Hertz's theory gives 3/2 for a point contact and ≈ 1 for a line contact
#: (Johnson, Contact Mechanics, 1985; Lankarani & Nikravesh 1990 use 3/2 for metals), fitted foot–ground contacts
#: up to 3 (Gerritsen et al. 1995: F = a δ³ (1 + b δ̇)). Outside it δⁿ vanishes or overflows at ordinary depths:
#: exponent 100 at δ = 1 mm is 1e-300 (the contact silently gone), exponent 1e6 overflows at δ > 1.001 m.
EXPONENT_RANGE = (1.0, 3.0)
#: the largest stiffness K (N/m^n) and damping D (N·s/m) accepted: a 1 m steel sphere's Hertz K is ≈ 1.5e11 N/m^1.5,
#: MSC Adams' IMPACT stiffness of steel (≈ 1e5 N/mm^e) is 1e14 N/m³ at e = 3; 1e18 is 10⁴ above, and K δⁿ with
#: its products (K δⁿ · c δ̇/δ̇⁻, the energy K δⁿ⁺¹) stays finite at any depth a run reaches. 1e300 overflowed.
MAX_STIFFNESS = 1.0e18
#: the largest OpenSim dissipation c (s/m) accepted: OpenSim's models use 0.5 … 5; at 1e6 the factor 1 + (3/2) c δ̇
#: is already 1.5 at δ̇ = 1 µm/s
MAX_DISSIPATION = 1.0e6
#: the coefficients of restitution cr accepted by the restitution laws: (0, 1] by definition, and below 0.01 the
#: laws say nothing new. Hu–Guo's and Flores' damping factor c(cr) ∝ (1 − cr)/cr grows without bound: a ball
#: dropped at 3 m/s onto K = 1e5 does not separate at cr = 0.1 already (it rests in its contact), while the run's
#: cost grows ∝ 1/cr (2.6e3 right-hand sides at 0.01, 5.8e4 at 1e-6, 1.5e5 at 1e-12) and c K overflows at 1e-300
#: (reported as another element's force). Hunt–Crossley's c = 3(1 − cr)/2 stays finite but its rebound never falls
#: below ≈ 0.46 (0.459 at cr = 0.01, 0.456 at 1e-12): the law is derived for cr near 1 (paper 002: most laws are
#: accurate for 0.7 ≤ cr ≤ 1).
RESTITUTION_RANGE = (0.01, 1.0)
#: the smallest floor δ̇⁻_min (m/s) of the approach velocity accepted: the floor acts on a contact that starts
#: slower than it (at rest: the bridge's first step, a ball placed on the ground), whose hysteresis damping is then
#: χ = c(cr) K / δ̇⁻_min. Such a contact creeps into its static depth at ≈ δ̇⁻_min / c, so at 1e-9 m/s a millimetre
#: takes ≥ 1e6 s / c (weeks; 1e-7 already barely moved a 1 kg ball in 0.2 s): a smaller floor changes nothing a run
#: can show and only stiffens it (χ δⁿ / m: at 1e-8 Hu–Guo's cr = 0.01 ball started at rest exhausted the implicit
#: Radau's budget), and at 1e-300 c K δ̇ / δ̇⁻_min overflowed (reported as the contact's force, not its attribute).
MIN_IMPACT_VELOCITY_LOWEST = 1.0e-9


def _stiffness(source: SourceRef | None, raw: Any) -> float:
    return to_float(source, "stiffness", raw, positive=True, at_most=MAX_STIFFNESS,
                    expected=f"a positive stiffness ≤ {MAX_STIFFNESS:g} (N/m^n)")


def _exponent(source: SourceRef | None, raw: Any) -> float:
    low, high = EXPONENT_RANGE
    return to_float(source, "exponent", raw, positive=True, at_least=low, at_most=high,
                    expected=f"an exponent in [{low:g}, {high:g}] (3/2: Hertz's point contact; 1: line contact; "
                             "up to 3: fitted soft contacts)")


@register_normal_law
class KelvinVoigt(NormalLaw):
    """Linear spring–dashpot F = K δ + D δ̇ for δ > 0. K [N/m] > 0, D [N·s/m] ≥ 0."""

    law_name: ClassVar[str] = "kelvin_voigt"
    attributes: ClassVar[tuple[str, ...]] = ("stiffness", "damping", "adhesion")
    kernel_kind: ClassVar[int] = NORMAL_KELVIN_VOIGT

    def __init__(self, *, stiffness: float, damping: float, adhesion: bool = False,
                 source: SourceRef | None = None) -> None:
        super().__init__(adhesion=adhesion)
        self.stiffness = _stiffness(source, stiffness)
        self.damping = to_float(source, "damping", damping, non_negative=True, at_most=MAX_STIFFNESS,
                                expected=f"a non-negative damping ≤ {MAX_STIFFNESS:g} (N·s/m)")

    @classmethod
    def from_attributes(cls, attributes: Mapping[str, Any], source: SourceRef | None = None) -> "KelvinVoigt":
        exponent = number(source, attributes, "exponent", None)
        if exponent is not None and exponent != 1.0:
            raise error(source, "exponent", f"'{cls.law_name}' is linear, got exponent {exponent:g}",
                              "exponent 1 or no exponent (use 'hertz' or a restitution law for δⁿ)")
        return super().from_attributes(attributes, source)

    def kernel_parameters(self) -> tuple[float, ...]:
        return self.adhesion, self.stiffness, self.damping

    def release_function(self, delta, delta_dot, impact_velocity=None):
        return self.stiffness * delta + self.damping * delta_dot


@register_normal_law
class KelvinVoigtSmooth(KelvinVoigt):
    """Paper 003 switch F = [½ + atan(C δ)/π](K δ + D δ̇), acting for all δ (smoothed onset).

    C = ``smoothing`` [1/m] sets the switch width ~1/C; the factor is ½ at δ = 0 and → 1 inside. The force is
    clipped at zero (no pull) unless adhesion, so the tail outside contact only acts while approaching.
    """

    law_name: ClassVar[str] = "kelvin_voigt_smooth"
    attributes: ClassVar[tuple[str, ...]] = ("stiffness", "damping", "smoothing", "adhesion")
    acts_outside_contact: ClassVar[bool] = True
    kernel_kind: ClassVar[int] = NORMAL_KELVIN_VOIGT_SMOOTH

    def __init__(self, *, stiffness: float, damping: float, smoothing: float = DEFAULT_SMOOTHING,
                 adhesion: bool = False, source: SourceRef | None = None) -> None:
        super().__init__(stiffness=stiffness, damping=damping, adhesion=adhesion, source=source)
        self.smoothing = to_float(source, "smoothing", smoothing, positive=True)

    def kernel_parameters(self) -> tuple[float, ...]:
        return *super().kernel_parameters(), self.smoothing


@register_normal_law
class Hertz(NormalLaw):
    """Purely elastic F = K δⁿ. 0 < K [N/m^n] ≤ MAX_STIFFNESS, n = exponent in EXPONENT_RANGE (3/2 for sphere
    contact)."""

    law_name: ClassVar[str] = "hertz"
    attributes: ClassVar[tuple[str, ...]] = ("stiffness", "exponent", "adhesion")
    kernel_kind: ClassVar[int] = NORMAL_HERTZ

    def __init__(self, *, stiffness: float, exponent: float = DEFAULT_EXPONENT, adhesion: bool = False,
                 source: SourceRef | None = None) -> None:
        super().__init__(adhesion=adhesion)
        self.stiffness = _stiffness(source, stiffness)
        self.exponent = _exponent(source, exponent)

    def kernel_parameters(self) -> tuple[float, ...]:
        return self.adhesion, self.stiffness, self.exponent


class RestitutionLaw(Hertz):
    """Hunt–Crossley-type F = K δⁿ [1 + c(cr) δ̇/δ̇⁻]; subclasses define the damping factor c(cr).

    ``restitution`` cr ∈ [0.01, 1] is required (`RESTITUTION_RANGE`); δ̇⁻ [m/s] is the stored approach velocity
    (floored at ``min_impact_velocity``). The hysteresis damping is χ = c(cr) K / δ̇⁻ [N·s/m^(n+1)].
    """

    attributes: ClassVar[tuple[str, ...]] = ("stiffness", "exponent", "restitution", "min_impact_velocity",
                                             "adhesion")
    needs_impact_velocity: ClassVar[bool] = True
    kernel_kind: ClassVar[int] = NORMAL_RESTITUTION

    def __init__(self, *, stiffness: float, restitution: float, exponent: float = DEFAULT_EXPONENT,
                 min_impact_velocity: float = DEFAULT_MIN_IMPACT_VELOCITY, adhesion: bool = False,
                 source: SourceRef | None = None) -> None:
        super().__init__(stiffness=stiffness, exponent=exponent, adhesion=adhesion, source=source)
        low, high = RESTITUTION_RANGE
        self.restitution = to_float(source, "restitution", restitution, at_least=low, at_most=high,
                                    expected=f"a coefficient of restitution in [{low:g}, {high:g}] (1: elastic)")
        lowest = MIN_IMPACT_VELOCITY_LOWEST
        self.min_impact_velocity = to_float(source, "min_impact_velocity", min_impact_velocity, at_least=lowest,
                                            expected=f"a positive floor of the approach velocity ≥ {lowest:g} m/s (its "
                                                     f"hysteresis damping c K / floor grows without bound below: a "
                                                     f"contact starting at rest creeps in at ≈ floor / c)")

    #: c(cr) = slope (1 − cr), divided by cr where `over_restitution`
    slope: ClassVar[float]
    over_restitution: ClassVar[bool]

    @classmethod
    def damping_factor(cls, cr: float) -> float:
        """Dimensionless c(cr) in χ = c K / δ̇⁻."""
        c = cls.slope * (1.0 - cr)
        return c / cr if cls.over_restitution else c

    @property
    def factor(self) -> float:
        return self.damping_factor(self.restitution)

    def kernel_parameters(self) -> tuple[float, ...]:
        return *super().kernel_parameters(), self.factor, self.min_impact_velocity

    def hysteresis_damping(self, impact_velocity: Any) -> float | np.ndarray:
        """χ = c(cr) K / max(δ̇⁻, floor) [N·s/m^(n+1)]."""
        return self.factor * self.stiffness / np.maximum(impact_velocity, self.min_impact_velocity)

    def release_function(self, delta, delta_dot, impact_velocity=None):
        vi = max(float(impact_velocity or 0.0), self.min_impact_velocity)
        return 1.0 + self.factor * delta_dot / vi


@register_normal_law
class HuntCrossley(RestitutionLaw):
    """Hunt & Crossley (1975): c = 3(1 − cr)/2 (derived for cr → 1; too little dissipation at low cr)."""

    law_name: ClassVar[str] = "hunt_crossley"
    slope, over_restitution = 1.5, False


@register_normal_law
class Flores(RestitutionLaw):
    """Flores et al. (2011): c = 8(1 − cr)/(5 cr)."""

    law_name: ClassVar[str] = "flores"
    slope, over_restitution = 1.6, True


@register_normal_law
class HuGuo(RestitutionLaw):
    """Hu & Guo (2015), paper 002 eq. (23): c = 3(1 − cr)/(2 cr)."""

    law_name: ClassVar[str] = "hu_guo"
    slope, over_restitution = 1.5, True


@register_normal_law
class OpenSimHuntCrossley(Hertz):
    """Simbody's (OpenSim's) Hunt–Crossley force F = K δⁿ (1 + (3/2) c δ̇): K [N/m^n] > 0, c = ``dissipation``
    [s/m] ≥ 0 given directly (no restitution, no stored δ̇⁻). For two OpenSim surfaces of stiffnesses k₁, k₂ and
    dissipations c₁, c₂ on a sphere of radius R, Simbody uses k'ᵢ = kᵢ^(2/3), K = (4/3) √R (k'₁k'₂/(k'₁+k'₂))^(3/2)
    and c = (c₁ k'₂ + c₂ k'₁)/(k'₁ + k'₂) (`opensim.contact` does this). Simbody applies the force, and takes the
    slip velocity, at the point ``point_depth`` δ below the plane, with point_depth = k'_sphere/(k'_sphere +
    k'_plane) ∈ [0, 1] (default 1: the sphere's deepest point, as the other laws)."""

    law_name: ClassVar[str] = "opensim_hunt_crossley"
    attributes: ClassVar[tuple[str, ...]] = ("stiffness", "dissipation", "exponent", "point_depth", "adhesion")
    kernel_kind: ClassVar[int] = NORMAL_OPENSIM

    def __init__(self, *, stiffness: float, dissipation: float, exponent: float = DEFAULT_EXPONENT,
                 point_depth: float = 1.0, adhesion: bool = False, source: SourceRef | None = None) -> None:
        super().__init__(stiffness=stiffness, exponent=exponent, adhesion=adhesion, source=source)
        self.dissipation = to_float(source, "dissipation", dissipation, non_negative=True, at_most=MAX_DISSIPATION,
                                    expected=f"a non-negative dissipation ≤ {MAX_DISSIPATION:g} (s/m)")
        self.point_depth = to_float(source, "point_depth", point_depth, non_negative=True, at_most=1.0)

    def kernel_parameters(self) -> tuple[float, ...]:
        return *super().kernel_parameters(), self.dissipation

    def release_function(self, delta, delta_dot, impact_velocity=None):
        return 1.0 + 1.5 * self.dissipation * delta_dot
