"""Force elements of the prosthesis study (paper 003), additive to the built-ins:

`<joint_spring_reference joint="J" stiffness="k" damping="c" type="fourier" period=.. a0=.. a=.. b=../>`
    torsion spring-damper whose rest angle follows a time function θ0(t) (paper 003 eq. 12, the ankle spring
    tracking the measured ankle angle): τ = −k (θ − θ0(t)) − c θ̇. Any joint-function type without inputs
    (fourier, expression in t, …) gives θ0; `rest="θ0"` (constant) is accepted instead of a type.
    Energy bookkeeping: V(x) cannot depend on t, so the elastic part is booked as actuator input power
    P_in = −k (θ − θ0(t)) θ̇ (the moving rest angle injects/extracts energy) and c θ̇² as dissipation.

`<joint_contact_stop joint="J" lower=".." upper=".." lever="d" stiffness="K" damping="C" smoothing="C3"/>`
    unilateral contact of two links meeting at an offset d from their joint (paper 003 eqs. 8–9, the knee
    hyperextension stop between AB and BC, d = 1 cm): penetration δ = d (lower − θ) (or d (θ − upper)),
    F = [½ + atan(C3 δ)/π](K δ + C δ̇), clipped at 0 (no pull), torque T = d F pushing the joint out.
    Elastic potential V = d-scaled integral of the law at δ̇ = 0 (closed form); dissipation (F − F(δ, 0)) δ̇.
"""
from __future__ import annotations

import math

import numpy as np

from biobullet.core.errors import SourceRef
from biobullet.core.attributes import check_known_attributes, number
from biobullet.forces.base import ForceElement, joint_indices, register_force


def _time_function(s: SourceRef, attributes: dict, key_type: str = "type"):
    from biobullet.functions import registry

    type_name = attributes.get(key_type)
    function_class = registry.get(type_name)
    if function_class is None:
        raise s.error("type", f"unknown function type {type_name!r}", "one of " + ", ".join(registry.names()))
    if attributes.get("inputs", "").strip():
        raise s.error("inputs", "the reference angle is a function of time only", "no inputs")
    function = function_class.from_attributes(attributes, (), s)
    if function.inputs:
        raise s.error("type", f"function type {type_name!r} needs inputs", "a time function (e.g. fourier)")
    return function


@register_force("joint_spring_reference")
class JointSpringReference(ForceElement):
    """τ = −k (θ − θ0(t)) − c θ̇ on one joint; θ0(t) a time function (or constant `rest`)."""

    def __init__(self, name: str, joint: str, stiffness: float, damping: float = 0.0, function=None,
                 rest: float = 0.0, source: SourceRef | None = None) -> None:
        super().__init__(name, source or SourceRef("<python>", f'<joint_spring_reference name="{name}">'))
        for key, value in (("stiffness", stiffness), ("damping", damping)):
            if not (math.isfinite(value) and value >= 0):
                raise self.source.error(key, f"must be a finite number ≥ 0, got {value!r}", "a value ≥ 0")
        self.joint, self.stiffness, self.damping = joint, float(stiffness), float(damping)
        self.function, self.rest = function, float(rest)

    @classmethod
    def from_description(cls, model, element) -> "JointSpringReference":
        s, a = element.source, dict(element.attributes)
        joint_indices(model, a.get("joint", ""), s)
        name = a.pop("name", None) or f"joint_spring_reference_{a['joint']}"
        joint = a.pop("joint")
        stiffness = number(s, a, "stiffness", non_negative=True)
        damping = number(s, a, "damping", 0.0, non_negative=True)
        a.pop("stiffness", None)
        a.pop("damping", None)
        if "type" not in a:
            check_known_attributes(s, a, {"rest"})
            return cls(name, joint, stiffness, damping, rest=number(s, a, "rest", 0.0), source=s)
        if "rest" in a:
            raise s.error("rest", "a constant rest angle and a time function (type) are both given",
                          "either rest=.. or type=..")
        return cls(name, joint, stiffness, damping, function=_time_function(s, a), source=s)

    def reference(self, t: float) -> tuple[float, float]:
        """(θ0(t), θ̇0(t))."""
        if self.function is None:
            return self.rest, 0.0
        value, gradient, _ = self.function.evaluate(np.zeros(0), t)
        return float(value), float(np.asarray(gradient).reshape(-1)[-1])

    def _torque(self, model, x, xd, t):
        i, k = joint_indices(model, self.joint, self.source)
        theta0 = self.reference(t)[0]
        return -self.stiffness * (x[i] - theta0), -self.damping * xd[k], k

    def generalized_force(self, model, x, xd, t, placements=None):
        elastic, viscous, k = self._torque(model, x, xd, t)
        tau = np.zeros(model.n_tangent)
        tau[k] = elastic + viscous
        return tau

    def input_power(self, model, x, xd, t):
        elastic, _, k = self._torque(model, x, xd, t)
        return elastic * xd[k]

    def dissipated_power(self, model, x, xd):
        k = joint_indices(model, self.joint, self.source)[1]
        return self.damping * xd[k] ** 2


@register_force("joint_contact_stop")
class JointContactStop(ForceElement):
    """Paper-003 unilateral stop: arctan-smoothed Kelvin–Voigt contact at lever d from the joint axis."""

    def __init__(self, name: str, joint: str, lower: float | None, upper: float | None, lever: float,
                 stiffness: float, damping: float = 0.0, smoothing: float = 1e6,
                 source: SourceRef | None = None) -> None:
        super().__init__(name, source or SourceRef("<python>", f'<joint_contact_stop name="{name}">'))
        err = self.source.error
        if lower is None and upper is None:
            raise err("lower", "neither lower nor upper limit given", "at least one of lower, upper")
        for key, value in (("lever", lever), ("stiffness", stiffness), ("smoothing", smoothing)):
            if not (math.isfinite(value) and value > 0):
                raise err(key, f"must be a finite number > 0, got {value!r}", "a value > 0")
        if not (math.isfinite(damping) and damping >= 0):
            raise err("damping", f"must be a finite number ≥ 0, got {damping!r}", "a value ≥ 0")
        from biobullet.contact.normal import KelvinVoigtSmooth
        self.joint, self.lower, self.upper, self.lever = joint, lower, upper, float(lever)
        self.law = KelvinVoigtSmooth(stiffness=stiffness, damping=damping, smoothing=smoothing)

    @classmethod
    def from_description(cls, model, element) -> "JointContactStop":
        s, a = element.source, element.attributes
        check_known_attributes(s, a, {"name", "joint", "lower", "upper", "lever", "stiffness", "damping", "smoothing"})
        joint_indices(model, a.get("joint", ""), s)
        return cls(a.get("name") or f"joint_contact_stop_{a['joint']}", a["joint"],
                   number(s, a, "lower") if "lower" in a else None,
                   number(s, a, "upper") if "upper" in a else None,
                   number(s, a, "lever", positive=True), number(s, a, "stiffness", positive=True),
                   number(s, a, "damping", 0.0, non_negative=True), number(s, a, "smoothing", 1e6, positive=True),
                   source=s)

    def _sides(self, theta: float, rate: float):
        """(sign of the joint torque, δ [m], δ̇ [m/s]) for each limit; the law itself acts for all δ."""
        d, out = self.lever, []
        if self.lower is not None:
            out.append((1.0, d * (self.lower - theta), -d * rate))
        if self.upper is not None:
            out.append((-1.0, d * (theta - self.upper), d * rate))
        return out

    def contact_force(self, theta: float, rate: float) -> float:
        """Σ F (N) of the stop's contact(s) at (θ, θ̇)."""
        return float(sum(self.law.force(delta, delta_dot) for _, delta, delta_dot in self._sides(theta, rate)))

    def generalized_force(self, model, x, xd, t, placements=None):
        i, k = joint_indices(model, self.joint, self.source)
        tau = np.zeros(model.n_tangent)
        tau[k] = sum(sign * self.lever * float(self.law.force(delta, delta_dot))
                     for sign, delta, delta_dot in self._sides(x[i], xd[k]))
        return tau

    def potential_energy(self, model, x):
        from biobullet.contact.element import law_potential
        i = joint_indices(model, self.joint, self.source)[0]
        return float(sum(law_potential(self.law, delta) for _, delta, _ in self._sides(x[i], 0.0)))

    def dissipated_power(self, model, x, xd):
        i, k = joint_indices(model, self.joint, self.source)
        total = 0.0
        for _, delta, delta_dot in self._sides(x[i], xd[k]):
            total += (float(self.law.force(delta, delta_dot)) - float(self.law.force(delta, 0.0))) * delta_dot
        return total


__all__ = ["JointSpringReference", "JointContactStop"]
