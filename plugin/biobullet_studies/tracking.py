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

Both hand the library's compiled right-hand sides a kernel (`ForceElement.compiled_kernel`, signature in
`biobullet.forces.base`): `_joint_spring_reference_py` evaluates θ0(t) by the library's table of joint functions
(`model.joint_jets._explicit_jets_py`, the kernel of the compiled drivers), `_joint_contact_stop_py` the contact
law by the library's compiled law twins (`contact.kernels._normal_force_py`, built-in or plug-in laws). So the
bundled prosthesis model, with these elements, runs on the compiled path; tests/validation/test_prosthesis_compiled.py
checks the kernels against the laws written out in the test (a pendulum in closed form, d'Alembert with Pinocchio).
The elements' Python methods (`generalized_force`, the powers) are what the `ForceElement` protocol asks of every
element: the callback stage, the bridge's force hook and the energy bookkeeping call them.
"""
from __future__ import annotations

import math

import numpy as np

from biobullet.core.errors import SourceRef
from biobullet.core.attributes import check_known_attributes, number
from biobullet.forces.base import ForceElement, ForceKernel, joint_element_name, joint_indices, register_force

# compiled callees of the kernels below, bound as these globals when a kernel compiles (`ForceKernel.bind`)
_JETS = _NORMAL_FORCE = None
_REFERENCE_HEAD = 11   # iparams of `_joint_spring_reference_py` before the function's input words


def _joint_spring_reference_py(t, x, xd, rot, pos, sub, ancestry, fparams, iparams, tau, power):
    """Compiled twin of `JointSpringReference` (forces.base kernel signature): τ_k += −k (θ − θ0(t)) − c θ̇; input
    power −k (θ − θ0) θ̇, dissipated c θ̇². fparams = (k, c, rest, function coefficients…); iparams = (index in x,
    index in ẋ, has function, input-word count, coefficient count, the function's 6-entry table row, its input
    words…) — θ0(t) by `_explicit_jets_py` (one table row, no inputs); status 1 if θ0 is not finite."""
    i, k = iparams[0], iparams[1]
    theta0 = fparams[2]
    if iparams[2] != 0:
        table = np.empty((1, 6), dtype=np.int64)
        for c in range(6):
            table[0, c] = iparams[5 + c]
        inputs = iparams[_REFERENCE_HEAD:_REFERENCE_HEAD + iparams[3]].copy()
        coef = fparams[3:3 + iparams[4]].copy()
        value = np.zeros(1)
        rate = np.zeros(1)
        # int(0), not 0 (a literal): the jets kernel keeps one specialisation
        if _JETS(table, inputs, coef, t, int(0), int(0), value, rate, np.zeros((1, 1)), np.zeros(1)) != 0:
            return 1
        theta0 = value[0]
    elastic = -fparams[0] * (x[i] - theta0)
    tau[k] += elastic - fparams[1] * xd[k]
    power[0] += elastic * xd[k]
    power[1] += fparams[1] * xd[k] * xd[k]
    return 0


def _joint_contact_stop_py(t, x, xd, rot, pos, sub, ancestry, fparams, iparams, tau, power):
    """Compiled twin of `JointContactStop`: per limit, δ = d (lower − θ) or d (θ − upper), F = the law's clipped
    force (`contact.kernels._normal_force_py`), τ_k += ±d F, dissipated (F − F(δ, 0)) δ̇. fparams = (d, has lower,
    lower, has upper, upper, the law's packed parameters…); iparams = (index in x, index in ẋ, law kind)."""
    i, k, kind = iparams[0], iparams[1], iparams[2]
    d = fparams[0]
    theta, rate = x[i], xd[k]
    law = fparams[5:].copy()
    total = 0.0
    for side in range(2):
        if fparams[1 + 2 * side] == 0.0:
            continue
        if side == 0:
            sign, delta, delta_dot = 1.0, d * (fparams[2] - theta), -d * rate
        else:
            sign, delta, delta_dot = -1.0, d * (theta - fparams[4]), d * rate
        force = _NORMAL_FORCE(kind, law, delta, delta_dot, 0.0)
        total += sign * d * force
        power[1] += (force - _NORMAL_FORCE(kind, law, delta, 0.0, 0.0)) * delta_dot
    tau[k] += total
    return 0


def _reference_bindings() -> dict:
    from biobullet.model.joint_jets import jets_kernel
    return {"_JETS": jets_kernel()}


def _stop_bindings() -> dict:
    from biobullet.contact.kernels import normal_force_kernel
    return {"_NORMAL_FORCE": normal_force_kernel()}


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
        name = joint_element_name(model, element, cls.tag)
        a.pop("name", None)
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
        from biobullet.functions.registry import time_function
        return cls(name, joint, stiffness, damping, function=time_function(s, a, "the reference angle"), source=s)

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

    def compiled_kernel(self, model) -> ForceKernel | None:
        """`_joint_spring_reference_py` with this spring's numbers; None when θ0's function type is not one the
        library's joint-function table evaluates (the callback stage then serves)."""
        from biobullet.model.joint_jets import function_table
        i, k = joint_indices(model, self.joint, self.source)
        head = [i, k, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        coef: list[float] = []
        if self.function is not None:
            packed = function_table([(0, (), self.function)])
            if packed is None:
                return None
            table, inputs, coefficients = packed
            head[2:5] = 1, len(inputs), len(coefficients)
            head[5:11] = table[0].tolist()
            head += inputs.tolist()
            coef = coefficients.tolist()
        return ForceKernel(_joint_spring_reference_py, np.array([self.stiffness, self.damping, self.rest, *coef]),
                           np.array(head, dtype=np.int64), bind=_reference_bindings)


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
        if lower is not None and upper is not None and not lower < upper:   # both stops would push everywhere
            raise err("upper", f"upper {upper:g} is not above lower {lower:g}", "lower < upper")
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
        return cls(joint_element_name(model, element, cls.tag), a["joint"],
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

    def compiled_kernel(self, model) -> ForceKernel | None:
        """`_joint_contact_stop_py` with this stop's numbers and its law's compiled twin; None when the law has no
        twin or needs the impact velocity (which a stop does not store)."""
        from biobullet.contact.kernels import pack_normal
        packed = pack_normal(self.law)
        if packed is None or self.law.needs_impact_velocity:
            return None
        i, k = joint_indices(model, self.joint, self.source)
        kind, law = packed
        fparams = [self.lever, self.lower is not None, 0.0 if self.lower is None else self.lower,
                   self.upper is not None, 0.0 if self.upper is None else self.upper, *law]
        return ForceKernel(_joint_contact_stop_py, np.array(fparams, dtype=float),
                           np.array([i, k, kind], dtype=np.int64), bind=_stop_bindings)

    def dissipated_power(self, model, x, xd):
        i, k = joint_indices(model, self.joint, self.source)
        total = 0.0
        for _, delta, delta_dot in self._sides(x[i], xd[k]):
            total += (float(self.law.force(delta, delta_dot)) - float(self.law.force(delta, 0.0))) * delta_dot
        return total


__all__ = ["JointSpringReference", "JointContactStop"]
