"""Built-in force elements: `<spring>`, `<joint_spring>`, `<joint_torque>`, `<joint_stop>`.

Signs: a joint element adds its torque (N·m, or force N for a prismatic joint) to τ at the joint's velocity
index; a point-to-point spring acts through the world-aligned point Jacobians, τ = (J_b − J_a)ᵀ F_b.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from biobullet.algorithms.crba import mass_matrix_diagonal
from biobullet.core import jit
from biobullet.core.errors import ModelError, SolverError, SourceRef, did_you_mean
from biobullet.forces.compiled import joint_forces_kernel, pack_joint_forces, spring
from biobullet.core.attributes import check_known_attributes, number, to_float, vector3
from biobullet.core.attributes import name as link_name
from biobullet.forces.base import ForceElement, ForceKernel, joint_element_name, joint_indices, register_force

ZERO_LENGTH = 1e-12  # m: below this a spring's direction is undefined
_JOINT_SLOTS = "forces.elements.joint_slots"      # Model.derived: {element: (index in x, index in ẋ)}
_SPRING_ANCHORS = "forces.elements.anchors"       # Model.derived: {spring: ((body, point in body frame) of b, a)}
_JOINT_ROWS = "forces.elements.joint_rows"        # Model.derived: {element: its rows of the joint-force kernel}


def _per_element(model, key: str, element, build: Callable):
    """What this module derives from `model` for one element, kept in `model.derived` (it lives with the model)."""
    table = model.derive(key, dict)
    value = table.get(element)
    if value is None:
        value = table[element] = build()
    return value


def _source(source: SourceRef | None, tag: str, name: str) -> SourceRef:
    return source or SourceRef("<python>", f'<{tag} name="{name}">')


class _JointElement(ForceElement):
    """Common part of the single-joint elements."""

    uses_placements = False

    def __init__(self, name: str, joint: str, source: SourceRef | None) -> None:
        super().__init__(name, _source(source, self.tag, name))
        self.joint = joint

    def joint_slots(self, model) -> tuple[int, int]:
        """(index in x, index in ẋ) of the element's joint, looked up once per model (a hot call's cost)."""
        return _per_element(model, _JOINT_SLOTS, self, lambda: joint_indices(model, self.joint, self.source))

    def _unit(self, model, value: float) -> np.ndarray:
        tau = np.zeros(model.n_tangent)
        tau[self.joint_slots(model)[1]] = value
        return tau

    def _kernel_rows(self, model) -> tuple:
        """This element's rows of the joint-force kernel (`forces.compiled.pack_joint_forces`)."""
        raise NotImplementedError

    def potential_energy(self, model, x):
        return float(self._energy(np.asarray(x, dtype=float)[None, :], model)[0])

    def potential_energy_batch(self, model, positions):
        if type(self).potential_energy is not _JointElement.potential_energy:   # a subclass with its own V
            return super().potential_energy_batch(model, positions)
        return self._energy(np.asarray(positions, dtype=float), model)

    def _energy(self, positions: np.ndarray, model) -> np.ndarray:
        """V (J) at every row of `positions` (tree configurations): the element's law of V, written once."""
        return np.zeros(len(positions))

    def _by_kernel(self, model, x, xd) -> tuple[np.ndarray, float]:
        """(τ, dissipated power W) by the joint-force kernel of the compiled right-hand sides
        (`forces.compiled.joint_forces_kernel`): the element's law is written there, once."""
        rows = _per_element(model, _JOINT_ROWS, self, lambda: self._kernel_rows(model))
        tau = np.zeros(model.n_tangent)
        power = joint_forces_kernel()(np.ascontiguousarray(x, dtype=float), np.ascontiguousarray(xd, dtype=float),
                                      *rows, tau)
        return tau, float(power)


# ------------------------------------------------------------------------------------------------ spring
@register_force("spring")
class Spring(ForceElement):
    """Point-to-point spring-damper: tension f = k (L − l0) + c L̇ along the line from point a to point b.

    Points are given in their link frames (m). With rest_length 0 the elastic force is the vector −k d
    (smooth through L = 0); with rest_length > 0 a zero length (< 1e-12 m) has no direction → SolverError.
    """

    uses_placements = False   # its fast path uses the shared tree kinematics

    def __init__(self, name: str, link_a: str, xyz_a, link_b: str, xyz_b, stiffness: float,
                 rest_length: float = 0.0, damping: float = 0.0, source: SourceRef | None = None) -> None:
        super().__init__(name, _source(source, "spring", name))
        self.link_a, self.link_b = link_a, link_b
        # (from Python a NaN point gave NaN forces and a 2-vector a bare ValueError)
        self.xyz_a, self.xyz_b = (np.array(vector3(self.source, {key: value}, key))
                                  for key, value in (("xyz_a", xyz_a), ("xyz_b", xyz_b)))
        self.stiffness = to_float(self.source, "stiffness", stiffness, non_negative=True)
        self.rest_length = to_float(self.source, "rest_length", rest_length, non_negative=True)
        self.damping = to_float(self.source, "damping", damping, non_negative=True)

    @classmethod
    def from_description(cls, model, element) -> "Spring":
        s, a = element.source, element.attributes
        check_known_attributes(s, a, {"name", "link_a", "xyz_a", "link_b", "xyz_b", "stiffness", "rest_length",
                                "damping"})
        link_a, link_b = (link_name(s, a, key, model.link_names, kind="link") for key in ("link_a", "link_b"))
        name = a.get("name") or f"spring_{link_a}_{link_b}"
        return cls(name, link_a, vector3(s, a, "xyz_a"), link_b, vector3(s, a, "xyz_b"),
                   number(s, a, "stiffness", non_negative=True), number(s, a, "rest_length", 0.0, non_negative=True),
                   number(s, a, "damping", 0.0, non_negative=True), source=s)

    def _anchors(self, model) -> tuple:
        """(body, point in the body frame) of b and a."""
        anchors = []
        for key, link, xyz in (("link_b", self.link_b, self.xyz_b), ("link_a", self.link_a, self.xyz_a)):
            if link not in model.link_names:   # (from Python: the model's error named neither spring nor attribute)
                raise self.source.error(key, f"unknown link {link!r}{did_you_mean(link, model.link_names)}",
                                        "the name of a <link> of the model")
            frame = model.frame(link)
            anchors.append((int(frame.body), np.ascontiguousarray(frame.rotation @ xyz + frame.translation,
                                                                  dtype=float)))
        return tuple(anchors)

    def _evaluate(self, model, x, xd) -> tuple[int, np.ndarray, float, float]:
        """(status, τ, dissipated power c L̇² [W], L [m]) by the spring kernel of the compiled right-hand sides
        (`forces.compiled.spring`, where the law is written once) from the shared tree kinematics (cached per x:
        the loop rows of the same right-hand side reuse them); status 1: zero length with rest_length > 0."""
        from biobullet.constraints.loops import tree_kinematics
        kin = tree_kinematics(model, x)
        (body_b, local_b), (body_a, local_a) = _per_element(model, _SPRING_ANCHORS, self, lambda: self._anchors(model))
        xd = np.zeros(model.n_tangent) if xd is None else np.ascontiguousarray(xd, dtype=float)
        # writable copies: the kernel's one specialisation takes the arrays the compiled paths pass
        return spring(np.array(kin.rotations), np.array(kin.positions), np.array(kin.subspace), kin.arrays.ancestry,
                      xd, body_b, local_b, body_a, local_a,
                      np.array([self.stiffness, self.rest_length, self.damping]), ZERO_LENGTH)

    def length(self, model, x) -> float:
        """Current length L (m)."""
        return float(self._evaluate(model, x, None)[3])

    def generalized_force(self, model, x, xd, t, placements=None):
        status, tau, _, _ = self._evaluate(model, x, xd)
        if status:
            raise SolverError(f"{self.source.file}: {self.source.element}: zero length at t = {t:g} s; "
                              "the spring direction is undefined (rest_length > 0)")
        return tau

    def potential_energy(self, model, x):
        return 0.5 * self.stiffness * (self.length(model, x) - self.rest_length) ** 2

    def dissipated_power(self, model, x, xd):
        if self.damping == 0.0:
            return 0.0
        status, _, power, _ = self._evaluate(model, x, xd)
        return 0.0 if status else float(power)


# ------------------------------------------------------------------------------------------------ joint spring
@register_force("joint_spring")
class JointSpring(_JointElement):
    """Torsional (or linear, prismatic joint) spring-damper: τ = −k (θ − θ0) − c θ̇."""

    def __init__(self, name: str, joint: str, stiffness: float, rest: float = 0.0, damping: float = 0.0,
                 source: SourceRef | None = None) -> None:
        super().__init__(name, joint, source)
        self.stiffness = to_float(self.source, "stiffness", stiffness, non_negative=True)
        self.rest = to_float(self.source, "rest", rest)
        self.damping = to_float(self.source, "damping", damping, non_negative=True)

    @classmethod
    def from_description(cls, model, element) -> "JointSpring":
        s, a = element.source, element.attributes
        check_known_attributes(s, a, {"name", "joint", "stiffness", "rest", "damping"})
        return cls(joint_element_name(model, element, cls.tag), a["joint"],
                   number(s, a, "stiffness", non_negative=True), number(s, a, "rest", 0.0),
                   number(s, a, "damping", 0.0, non_negative=True), source=s)

    def _kernel_rows(self, model) -> tuple:
        return pack_joint_forces(model, [self], [])

    def generalized_force(self, model, x, xd, t, placements=None):
        return self._by_kernel(model, x, xd)[0]

    def _energy(self, positions: np.ndarray, model) -> np.ndarray:
        return 0.5 * self.stiffness * (positions[:, self.joint_slots(model)[0]] - self.rest) ** 2

    def dissipated_power(self, model, x, xd):
        return self._by_kernel(model, x, xd)[1]


# ------------------------------------------------------------------------------------------------ joint torque
@register_force("joint_torque")
class JointTorque(_JointElement):
    """Actuator torque τ(t) on one joint: a constant `value`, or a time function of the joint-function plugins
    (`type="fourier" period=.. a0=.. a=.. b=..`, any type without inputs), or a Python callable f(t)."""

    def __init__(self, name: str, joint: str, value: float | None = None,
                 function: Callable[[float], float] | None = None, source: SourceRef | None = None) -> None:
        super().__init__(name, joint, source)
        if (value is None) == (function is None):
            raise self.source.error("value", "give either a constant value or a time function", "exactly one")
        self.value = None if value is None else to_float(self.source, "value", value)
        self.function = function

    @classmethod
    def from_description(cls, model, element) -> "JointTorque":
        from biobullet.functions.registry import time_function

        s, a = element.source, dict(element.attributes)
        name = joint_element_name(model, element, cls.tag)
        a.pop("name", None)   # the rest are the time function's
        if a.get("type") is None:
            check_known_attributes(s, a, {"joint", "value"})
            return cls(name, a["joint"], number(s, a, "value"), source=s)
        if "value" in a:
            raise s.error("value", "a constant value and a time function (type) are both given",
                          "either value=.. or type=..")
        return cls(name, a["joint"], function=time_function(s, a, "a joint torque"), source=s)

    def torque(self, t: float) -> float:
        """τ(t) (N·m or N)."""
        if self.value is not None:
            return self.value
        if hasattr(self.function, "evaluate"):
            value = float(self.function.evaluate(np.zeros(0), t)[0])
        else:
            value = float(self.function(t))
        if not math.isfinite(value):   # (the run failed with "the state is not finite", naming no element)
            error = SolverError(f"{self.source.file}: {self.source.element}: the torque is {value} at t = {t:g} s")
            error.t = t   # the failing evaluation's time (the engine reports it, not its last accepted step)
            raise error
        return value

    def generalized_force(self, model, x, xd, t, placements=None):
        return self._unit(model, self.torque(t))

    def input_power(self, model, x, xd, t):
        return self.torque(t) * xd[self.joint_slots(model)[1]]


# ------------------------------------------------------------------------------------------------ joint stop
#: the largest exponent e of a stop's k p^e: the penalty laws of compliant contact — Hertz 3/2, line contacts 1,
#: fitted foot–ground and stop laws up to 3 (Gerritsen et al. 1995, F = a δ³(1 + b δ̇); the contact laws'
#: `contact.normal.EXPONENT_RANGE`). Beyond it p^e vanishes at the depths a stop works at (e = 100: 1e-200 at
#: p = 0.01 rad, the stop silently gone) or overflows past p = 1 (e = 1e6).
STOP_EXPONENT_MAX = 3.0
#: the largest stiffness k (N·m/rad^e or N/m^e) and damping c (N·m·s/rad or N·s/m) of a stop: the contact laws'
#: bound (`contact.normal.MAX_STIFFNESS`, 10⁴ above a steel contact's), far above a URDF `<limit>`'s stop
#: (M_jj ω² / (2 p_ref) ≈ 2e5 M_jj); with e ≤ STOP_EXPONENT_MAX, k p^e and the energy k p^(e+1) stay finite for any
#: penetration a run reaches. At 1e308 k p^e overflowed past p = 1 and c ṗ at ṗ > 1.8 (reported as the run's state).
STOP_STIFFNESS_MAX = 1.0e18


@register_force("joint_stop")
class JointStop(_JointElement):
    """Unilateral joint limit(s) as a penalty on the penetration p (p = lower − θ or θ − upper, > 0 inside).

    type="smooth" (default): f = k p^e + c s(p) ṗ for p > 0, e = exponent > 1 (default 2), s the C¹
    smoothstep from 0 at p = 0 to 1 at p = smoothing (default 1e-3, joint units): force C¹ in the state.
    type="switched": f = k p^e + c ṗ only while p > 0 (e ≥ 1, default 1); events at θ = lower/upper make the
    engine restart there. The damping part may pull during rebound (Kelvin–Voigt). V = k p^(e+1)/(e+1).
    With c > 0 the force jumps by c ṗ at p = 0 (a discontinuity, not a kink): the engine's state at the event,
    re-integrated from the step's start, still has a stage beyond the surface, so it keeps an error of about one
    step's (DOP853 1.3 rtol·ω_max, RK45 3–6, Radau 1.0, measured; undamped: none). A smooth stop (type="smooth",
    c s(p) ṗ) has no jump.
    """

    switched = False

    def __init__(self, name: str, joint: str, lower: float | None, upper: float | None, stiffness: float,
                 damping: float = 0.0, type: str = "smooth", exponent: float | None = None,
                 smoothing: float | None = None, source: SourceRef | None = None) -> None:
        super().__init__(name, joint, source)
        err = self.source.error
        if type not in ("smooth", "switched"):
            raise err("type", f"unknown stop type {type!r}{did_you_mean(type, ('smooth', 'switched'))}",
                      "smooth or switched")
        if lower is None and upper is None:
            raise err("lower", "neither lower nor upper limit given", "at least one of lower, upper")
        lower, upper = (None if value is None else to_float(self.source, key, value)
                        for key, value in (("lower", lower), ("upper", upper)))
        if lower is not None and upper is not None and not lower < upper:
            raise err("upper", f"upper {upper:g} is not above lower {lower:g}", "lower < upper")
        stiffness, damping = (to_float(self.source, key, value, non_negative=True, at_most=STOP_STIFFNESS_MAX,
                                       expected=f"a non-negative {key} ≤ {STOP_STIFFNESS_MAX:g} (joint units)")
                              for key, value in (("stiffness", stiffness), ("damping", damping)))
        exponent = (2.0 if type == "smooth" else 1.0) if exponent is None else float(exponent)
        high = STOP_EXPONENT_MAX
        if type == "smooth" and not (math.isfinite(exponent) and exponent > 1.0):
            raise err("exponent", f"{exponent:g} gives a force that is not C¹", f"an exponent in (1, {high:g}] for "
                      "type smooth")
        if type == "switched" and not (math.isfinite(exponent) and exponent >= 1.0):
            raise err("exponent", f"must be ≥ 1, got {exponent:g}", f"an exponent in [1, {high:g}]")
        if exponent > high:
            raise err("exponent", f"{exponent:g} makes k p^e vanish inside the stop (p^e at p = 0.01 rad: "
                      f"{0.01 ** exponent:.3g}) or overflow beyond p = 1", f"an exponent in "
                      f"{'(1' if type == 'smooth' else '[1'}, {high:g}] (2: the default smooth stop; up to 3: "
                      "a fitted power law)")
        if type == "switched" and smoothing is not None:
            raise err("smoothing", "smoothing applies to type smooth only", "no smoothing with type switched")
        smoothing = 1e-3 if smoothing is None else to_float(self.source, "smoothing", smoothing, positive=True)
        self.lower, self.upper, self.type = lower, upper, type
        self.stiffness, self.damping = stiffness, damping
        self.exponent, self.smoothing = exponent, smoothing
        self.switched = type == "switched"

    @classmethod
    def from_description(cls, model, element) -> "JointStop":
        s, a = element.source, element.attributes
        check_known_attributes(s, a, {"name", "joint", "lower", "upper", "stiffness", "damping", "type", "exponent",
                                "smoothing"})
        name = joint_element_name(model, element, cls.tag)
        optional = {key: number(s, a, key) if key in a else None
                    for key in ("lower", "upper", "exponent", "smoothing")}
        return cls(name, a["joint"], optional["lower"], optional["upper"],
                   number(s, a, "stiffness", non_negative=True), number(s, a, "damping", 0.0, non_negative=True),
                   a.get("type", "smooth"), optional["exponent"], optional["smoothing"], source=s)

    def _kernel_rows(self, model) -> tuple:
        return pack_joint_forces(model, [], [self])

    def generalized_force(self, model, x, xd, t, placements=None):
        return self._by_kernel(model, x, xd)[0]

    def _energy(self, positions: np.ndarray, model) -> np.ndarray:
        """V = k p^(e+1) / (e+1) per limit the joint is beyond."""
        theta, e = positions[:, self.joint_slots(model)[0]], self.exponent
        energy = np.zeros(len(positions))
        for limit, side in ((self.lower, -1.0), (self.upper, 1.0)):
            if limit is not None:
                pen = np.maximum(side * (theta - limit), 0.0)
                energy += self.stiffness * pen ** (e + 1.0) / (e + 1.0)
        return energy

    def dissipated_power(self, model, x, xd):
        return self._by_kernel(model, x, xd)[1]

    def events(self, model) -> list:
        """Switched stops: θ − lower and upper − θ (restart events). Smooth stops: none."""
        if not self.switched:
            return []
        from biobullet.core.events import Event

        i = self.joint_slots(model)[0]
        out = []
        if self.lower is not None:
            lower = self.lower
            out.append(Event(f"{self.name}.lower", lambda t, x, xd: x[i] - lower, restart=True, kink=True))
        if self.upper is not None:
            upper = self.upper
            out.append(Event(f"{self.name}.upper", lambda t, x, xd: upper - x[i], restart=True, kink=True))
        return out


# ------------------------------------------------------------------------------------------------ coordinate limit
@register_force("coordinate_limit")
class CoordinateLimit(_JointElement):
    """OpenSim's CoordinateLimitForce on one joint (SI units: rad or m): beyond `upper` the stiffness ramps from 0
    to `upper_stiffness` over `transition` with Simbody's quintic step S_up, τ_up = −k_up S_up(θ) (θ − upper); the
    same below `lower` (S_low = 1 at lower − transition, 0 at lower); damping τ_d = −c (S_up + S_low) θ̇. The
    stiffness part is conservative: V = ∫ −τ dθ, evaluated by the closed form of the quintic's moments. Compiled
    right-hand sides: `_coordinate_limit_py` (`compiled_kernel`), the law written once: the element calls it too."""

    def __init__(self, name: str, joint: str, upper: float, upper_stiffness: float, lower: float,
                 lower_stiffness: float, damping: float, transition: float, source: SourceRef | None = None) -> None:
        super().__init__(name, joint, source)
        err = self.source.error
        upper, lower = to_float(self.source, "upper", upper), to_float(self.source, "lower", lower)
        if not lower < upper:
            raise err("upper", f"upper {upper:g} is not above lower {lower:g}", "lower < upper")
        upper_stiffness, lower_stiffness, damping = (
            to_float(self.source, key, value, non_negative=True) for key, value in
            (("upper_stiffness", upper_stiffness), ("lower_stiffness", lower_stiffness), ("damping", damping)))
        transition = to_float(self.source, "transition", transition, positive=True)
        self.upper, self.upper_stiffness, self.lower, self.lower_stiffness = upper, upper_stiffness, lower, lower_stiffness
        self.damping, self.transition = damping, transition

    @classmethod
    def from_description(cls, model, element) -> "CoordinateLimit":
        s, a = element.source, element.attributes
        keys = ("upper", "upper_stiffness", "lower", "lower_stiffness", "damping", "transition")
        check_known_attributes(s, a, {"name", "joint", *keys})
        values = {key: number(s, a, key) for key in keys}
        return cls(joint_element_name(model, element, cls.tag), a["joint"], source=s, **values)

    def _by_kernel(self, model, x, xd) -> tuple[np.ndarray, float]:
        """(τ, dissipated power W) by `_coordinate_limit_py` (compiled on first use)."""
        kernel = _per_element(model, _JOINT_ROWS, self, lambda: self.compiled_kernel(model))
        tau, power = np.zeros(model.n_tangent), np.zeros(2)
        coordinate_limit(0.0, np.ascontiguousarray(x, dtype=float), np.ascontiguousarray(xd, dtype=float),
                         *_NO_KINEMATICS, kernel.fparams, kernel.iparams, tau, power)
        return tau, float(power[1])

    def generalized_force(self, model, x, xd, t, placements=None):
        return self._by_kernel(model, x, xd)[0]

    def _energy(self, positions: np.ndarray, model) -> np.ndarray:
        theta = positions[:, self.joint_slots(model)[0]]
        return (self.upper_stiffness * _ramp_energy(theta - self.upper, self.transition)
                + self.lower_stiffness * _ramp_energy(self.lower - theta, self.transition))

    def dissipated_power(self, model, x, xd):
        return self._by_kernel(model, x, xd)[1]

    def compiled_kernel(self, model) -> ForceKernel:
        return ForceKernel(_coordinate_limit_py, np.array([self.upper, self.upper_stiffness, self.lower,
                                                           self.lower_stiffness, self.damping, self.transition]),
                           np.array(self.joint_slots(model), dtype=np.int64))


def _coordinate_limit_py(t, x, xd, rot, pos, sub, ancestry, fparams, iparams, tau, power):
    """`CoordinateLimit` as a force kernel (forces.base.FORCE_KERNEL_SIGNATURE): fparams = [upper, k_up, lower,
    k_low, damping, transition], iparams = [index in x, index in ẋ]; dissipated power c (S_up + S_low) θ̇²."""
    theta, rate = x[iparams[0]], xd[iparams[1]]
    steps = np.zeros(2)
    for side in range(2):   # Simbody's quintic step 10u³ − 15u⁴ + 6u⁵ over the transition beyond each limit
        u = (theta - fparams[0]) / fparams[5] if side == 0 else (fparams[2] - theta) / fparams[5]
        if u >= 1.0:
            steps[side] = 1.0
        elif u > 0.0:
            steps[side] = u * u * u * (10.0 + u * (6.0 * u - 15.0))
    both = steps[0] + steps[1]
    tau[iparams[1]] += (-fparams[1] * steps[0] * (theta - fparams[0]) + fparams[3] * steps[1] * (fparams[2] - theta)
                        - fparams[4] * both * rate)
    power[1] += fparams[4] * both * rate * rate
    return 0


coordinate_limit = jit.lazy(_coordinate_limit_py)
#: the tree kinematics arguments `_coordinate_limit_py` does not read
_NO_KINEMATICS = (np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros((6, 0)), np.zeros((0, 0)))


def _ramp_energy(p: np.ndarray, w: float) -> np.ndarray:
    """∫₀^p S(s/w) s ds for the quintic step S (S = 1 beyond w): the energy per unit stiffness of a ramped stop
    at each penetration p (0 for p ≤ 0)."""
    p = np.maximum(p, 0.0)
    u = np.minimum(p / w, 1.0)
    # ∫₀^u (10v³ − 15v⁴ + 6v⁵) v dv · w² = w² (2u⁵ − 2.5u⁶ + 6u⁷/7), then the linear spring's ½ (p² − w²) beyond w
    return w * w * (2.0 * u ** 5 - 2.5 * u ** 6 + 6.0 * u ** 7 / 7.0) + 0.5 * np.maximum(p * p - w * w, 0.0)


__all__ = ["Spring", "JointSpring", "JointTorque", "JointStop", "CoordinateLimit", "limit_stops"]


# ------------------------------------------------------------------------------------------------ URDF limits
#: penetration (rad or m) at which a URDF `<limit>` stop has the linear stiffness M_jj ω² (M_jj: the joint's
#: diagonal of the tree mass matrix at the neutral configuration) — a static load τ then penetrates by
#: √(2 p_ref τ / (M_jj ω²)) (≈ 1° for a forearm hanging on its elbow limit)
LIMIT_REFERENCE_PENETRATION = 0.01
#: natural frequency of a `<limit>` stop at that penetration (rad/s; 10 Hz): stiff next to the motion of a limb,
#: soft enough for an explicit integrator
LIMIT_FREQUENCY = 2.0 * math.pi * 10.0
#: damping ratio of a `<limit>` stop at the reference penetration
LIMIT_DAMPING_RATIO = 0.5


def _assembled_configuration(model) -> np.ndarray:
    """The tree configuration at the neutral q, or — when loops cannot close there — at the file's initial state;
    ModelError naming the file and its loops when they close at neither."""
    try:
        return model.joint_configuration(model.neutral_configuration())
    except SolverError as neutral:
        try:
            return model.joint_configuration(model.initial_state()[0])
        except SolverError as initial:
            loops = ", ".join(repr(e.attributes.get("name")) for e in model.description.elements_of("loop"))
            if not loops:   # nothing to close: a joint function undefined at both states (sqrt(a) at a = 0)
                cause = str(initial).removeprefix(f"{model.file}: ")
                raise ModelError(f"the URDF <limit> stops are scaled at the neutral configuration or the initial "
                                 f"state, and a joint function cannot be evaluated at either ({cause})",
                                 file=model.file, expected="an <initial> state inside the joint functions' domain"
                                 ) from None
            raise ModelError(f"the loops ({loops}) close neither at the neutral configuration nor at the initial "
                             f"state ({neutral})", file=model.file, element="<loop>",
                             expected="loops whose links can meet (check the points and the link lengths)") from None


def limit_stops(model) -> tuple[JointStop, ...]:
    """The URDF `<limit lower upper>` of every revolute and prismatic joint as a smooth `JointStop` named
    `limit_JOINT` (PyBullet enforces URDF limits; so does biobullet unless the model was loaded with
    joint_limits=False). Stiffness k = M_jj ω² / (2 p_ref) (exponent 2: linear stiffness 2 k p = M_jj ω² at
    p = p_ref), damping c = 2 ζ M_jj ω; see LIMIT_*. A joint that has its own `<joint_stop>` keeps only that."""
    description = model.description
    own = {element.attributes.get("joint") for element in description.elements_of("joint_stop")}
    limited = [joint for joint in description.joints
               if joint.type in ("revolute", "prismatic") and joint.name not in own and joint.name in model.joint_names
               and joint.lower is not None and joint.upper is not None and joint.lower < joint.upper]
    if not limited:
        return ()
    diagonal = mass_matrix_diagonal(model, _assembled_configuration(model))
    stops = []
    for joint in limited:
        source = SourceRef(joint.source.file, f"{joint.source.element} <limit>")
        k = joint_indices(model, joint.name, source)[1]
        inertia = max(float(diagonal[k]), 0.0)
        stiffness = inertia * LIMIT_FREQUENCY ** 2 / (2.0 * LIMIT_REFERENCE_PENETRATION)
        if not stiffness <= STOP_STIFFNESS_MAX:   # (JointStop would blame a 'stiffness' the file does not have)
            raise ModelError(f"the joint moves an inertia of {inertia:g} kg·m² or kg, too large for the stop that "
                             f"stands for its limit (stiffness M_jj ω²/(2 p_ref) = {stiffness:g} > "
                             f"{STOP_STIFFNESS_MAX:g})", file=source.file,
                             element=source.element, expected="link masses and inertias in kg and kg·m² (or "
                             "joint_limits=False / --no-joint-limits to ignore the URDF limits)")
        stops.append(JointStop(f"limit_{joint.name}", joint.name, joint.lower, joint.upper, stiffness,
                               2.0 * LIMIT_DAMPING_RATIO * inertia * LIMIT_FREQUENCY, source=source))
    return tuple(stops)
