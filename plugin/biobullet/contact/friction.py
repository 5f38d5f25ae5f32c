"""Built-in friction laws: F_T = −μ_eff(s) · max(F_N, 0) · v̂_t, s = |v_t| [m/s] (see `base`).

  none         μ_eff = 0
  coulomb      μ_eff = μ for s > 0, and 0 at s = 0 exactly (switched; zero slip ⇒ zero force, no stiction —
               use a regularised law or a stick constraint for sticking; in the engine a contact held at rest
               against a tangential load chatters and stops the run with an error, `element.Contact._watch_chatter`)
  regularized  μ_eff = μ (2/π) atan(s/v0)   or   μ tanh(s/v0)   (``regularization="atan"|"tanh"``, default atan,
               the form of paper 003 with v0 = 1/C2)
  ambrosio     μ_eff = 0 for s ≤ v0, μ (s − v0)/(v1 − v0) for v0 < s < v1, μ for s ≥ v1  (paper 002 eq. 24)
  stribeck     μ_eff = [μ_k + (μ_s − μ_k) exp(−(s/v_s)²)] r(s/v0) + σ s, r = (2/π)atan or tanh
               (μ_k = ``mu``, μ_s = ``mu_static`` ≥ μ_k, v_s = ``stribeck_velocity``, σ = ``viscous`` [s/m]:
               a viscous term proportional to F_N, so nothing acts without contact)
  opensim      μ_eff = min(s/v_t, 1) [μ_d + 2 (μ_s − μ_d)/(1 + (s/v_t)²)] + μ_v s   (Simbody's / OpenSim's
               HuntCrossleyForce: μ_s = ``mu_static``, μ_d = ``mu_dynamic`` ≤ 2 μ_s, μ_v = ``mu_viscous`` [s/m],
               v_t = ``transition_velocity`` [m/s])

μ_eff ≥ 0 for every law, hence F_T·v_t = −μ_eff F_N s ≤ 0: friction never adds energy. Each class holds and checks
its parameters; μ_eff is its kernel in `contact.kernels` (`kernel_kind`, the row `kernel_parameters`).
"""
from __future__ import annotations

from typing import ClassVar

from biobullet.core.errors import SourceRef
from biobullet.contact.base import FrictionLaw
from biobullet.contact.kernels import (FRICTION_AMBROSIO, FRICTION_COULOMB, FRICTION_NONE, FRICTION_OPENSIM,
                                       FRICTION_REGULARIZED, FRICTION_STRIBECK)
from biobullet.core.attributes import error, to_float
from biobullet.contact.normal import MAX_DISSIPATION
from biobullet.contact.registry import register_friction_law

REGULARIZATIONS: tuple[str, ...] = ("atan", "tanh")
#: the largest friction coefficient μ (μ_s, μ_d) accepted: measured dry coefficients stay below ≈ 5 (rubber on clean
#: glass ≈ 2–4; the project's files ≤ 4.7), 1e3 leaves room for a regularised law standing in for sticking; above
#: it μ F_N is no friction any surface has, and at 1e300 it overflowed (reported as the contact's force)
MAX_FRICTION_COEFFICIENT = 1.0e3


def _coefficient(source: SourceRef | None, key: str, raw: float) -> float:
    """A friction coefficient μ in [0, MAX_FRICTION_COEFFICIENT]."""
    return to_float(source, key, raw, non_negative=True, at_most=MAX_FRICTION_COEFFICIENT,
                    expected=f"a non-negative friction coefficient ≤ {MAX_FRICTION_COEFFICIENT:g}")


def _viscous(source: SourceRef | None, key: str, raw: float) -> float:
    """A viscous friction coefficient [s/m] in [0, MAX_DISSIPATION] (μ_v s is 1 at 1 µm/s for the largest)."""
    return to_float(source, key, raw, non_negative=True, at_most=MAX_DISSIPATION,
                    expected=f"a non-negative viscous coefficient ≤ {MAX_DISSIPATION:g} (s/m)")


def _check_kind(kind: str, source: SourceRef | None) -> str:
    if kind not in REGULARIZATIONS:
        raise error(source, "regularization", f"unknown value '{kind}'", "one of: atan, tanh")
    return kind


@register_friction_law
class NoFriction(FrictionLaw):
    """Frictionless contact."""

    law_name: ClassVar[str] = "none"
    kernel_kind: ClassVar[int] = FRICTION_NONE

    def __init__(self, *, source: SourceRef | None = None) -> None:
        pass



@register_friction_law
class Coulomb(FrictionLaw):
    """Switched Coulomb friction μ F_N for any non-zero slip; exactly zero at zero slip."""

    law_name: ClassVar[str] = "coulomb"
    attributes: ClassVar[tuple[str, ...]] = ("mu",)
    discontinuous: ClassVar[bool] = True
    kernel_kind: ClassVar[int] = FRICTION_COULOMB

    def __init__(self, *, mu: float, source: SourceRef | None = None) -> None:
        self.mu = _coefficient(source, "mu", mu)

    def kernel_parameters(self) -> tuple[float, ...]:
        return (self.mu,)


@register_friction_law
class Regularized(FrictionLaw):
    """μ F_N r(s/v0) with r = (2/π)atan (default) or tanh; v0 [m/s] > 0 is the regularisation scale."""

    law_name: ClassVar[str] = "regularized"
    attributes: ClassVar[tuple[str, ...]] = ("mu", "v0", "regularization")
    choices = {"regularization": REGULARIZATIONS}
    kernel_kind: ClassVar[int] = FRICTION_REGULARIZED

    def __init__(self, *, mu: float, v0: float, regularization: str = "atan",
                 source: SourceRef | None = None) -> None:
        self.mu = _coefficient(source, "mu", mu)
        self.v0 = to_float(source, "v0", v0, positive=True)
        self.regularization = _check_kind(regularization, source)

    def kernel_parameters(self) -> tuple[float, ...]:
        return self.mu, self.v0, float(self.regularization == "tanh")


@register_friction_law
class Ambrosio(FrictionLaw):
    """Paper 002 eq. (24): zero for s ≤ v0, linear ramp to μ F_N at v1, μ F_N beyond (0 ≤ v0 < v1)."""

    law_name: ClassVar[str] = "ambrosio"
    attributes: ClassVar[tuple[str, ...]] = ("mu", "v0", "v1")
    kernel_kind: ClassVar[int] = FRICTION_AMBROSIO

    def __init__(self, *, mu: float, v0: float, v1: float, source: SourceRef | None = None) -> None:
        self.mu = _coefficient(source, "mu", mu)
        self.v0 = to_float(source, "v0", v0, non_negative=True)
        self.v1 = to_float(source, "v1", v1, positive=True)
        if not self.v1 > self.v0:
            raise error(source, "v1", f"v1 = {self.v1:g} is not above v0 = {self.v0:g}", "v1 > v0")

    def kernel_parameters(self) -> tuple[float, ...]:
        return self.mu, self.v0, self.v1


@register_friction_law
class Stribeck(FrictionLaw):
    """[μ_k + (μ_s − μ_k) exp(−(s/v_s)²)] r(s/v0) + σ s, regularised at v0 ≪ v_s (see module docstring)."""

    law_name: ClassVar[str] = "stribeck"
    attributes: ClassVar[tuple[str, ...]] = ("mu", "mu_static", "stribeck_velocity", "viscous", "v0",
                                             "regularization")
    choices = {"regularization": REGULARIZATIONS}
    kernel_kind: ClassVar[int] = FRICTION_STRIBECK

    def __init__(self, *, mu: float, mu_static: float, stribeck_velocity: float, v0: float,
                 viscous: float = 0.0, regularization: str = "atan", source: SourceRef | None = None) -> None:
        self.mu = _coefficient(source, "mu", mu)
        self.mu_static = _coefficient(source, "mu_static", mu_static)
        if self.mu_static < self.mu:
            raise error(source, "mu_static", f"mu_static = {self.mu_static:g} is below mu = {self.mu:g}",
                              "mu_static ≥ mu (kinetic)")
        self.stribeck_velocity = to_float(source, "stribeck_velocity", stribeck_velocity, positive=True)
        self.v0 = to_float(source, "v0", v0, positive=True)
        self.viscous = _viscous(source, "viscous", viscous)
        self.regularization = _check_kind(regularization, source)

    def kernel_parameters(self) -> tuple[float, ...]:
        return (self.mu, self.mu_static, self.stribeck_velocity, self.v0, self.viscous,
                float(self.regularization == "tanh"))


@register_friction_law
class OpenSimFriction(FrictionLaw):
    """Simbody's (OpenSim's) HuntCrossleyForce friction (see module docstring): static, dynamic and viscous
    coefficients and the transition velocity. μ_d ≤ 2 μ_s keeps μ_eff ≥ 0 (OpenSim does not check it)."""

    law_name: ClassVar[str] = "opensim"
    attributes: ClassVar[tuple[str, ...]] = ("mu_static", "mu_dynamic", "mu_viscous", "transition_velocity")
    kernel_kind: ClassVar[int] = FRICTION_OPENSIM

    def __init__(self, *, mu_static: float, mu_dynamic: float, mu_viscous: float = 0.0,
                 transition_velocity: float = 0.01, source: SourceRef | None = None) -> None:
        self.mu_static = _coefficient(source, "mu_static", mu_static)
        self.mu_dynamic = _coefficient(source, "mu_dynamic", mu_dynamic)
        if self.mu_dynamic > 2.0 * self.mu_static:
            raise error(source, "mu_dynamic", f"mu_dynamic = {self.mu_dynamic:g} exceeds twice mu_static = "
                        f"{self.mu_static:g} (the coefficient would turn negative at small slip)",
                        "mu_dynamic ≤ 2 mu_static")
        self.mu_viscous = _viscous(source, "mu_viscous", mu_viscous)
        self.transition_velocity = to_float(source, "transition_velocity", transition_velocity, positive=True)

    def kernel_parameters(self) -> tuple[float, ...]:
        return self.mu_static, self.mu_dynamic, self.mu_viscous, self.transition_velocity
