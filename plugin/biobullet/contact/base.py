"""Base classes of the compliant-contact laws and the shared attribute parsing.

Conventions (SI units throughout):
  * normal laws: penetration δ [m] is positive inside the contact, δ ≤ 0 means separated; the penetration
    rate δ̇ [m/s] is positive while approaching (compressing); the normal force F_N [N] is positive when it
    pushes the bodies apart. Laws never pull (F_N is clipped at zero) unless built with ``adhesion=True``.
  * friction laws: the tangential force opposes the slip velocity v_t [m/s] and is isotropic,
    F_T = −μ_eff(|v_t|) · max(F_N, 0) · v_t/|v_t| with μ_eff ≥ 0, so F_T·v_t ≤ 0 (never adds energy).

Construction from XML attributes (strings) goes through ``from_attributes(attributes, source)``; every bad value
raises a :class:`~biobullet.core.errors.ModelError` naming the attribute (via ``source.error`` when a SourceRef is
given). Programmatic construction (keyword arguments) is validated the same way.

Evaluation: each law is written once, as a scalar numba kernel in `contact.kernels`. A built-in law class holds its
parameters and names its kernel (`kernel_kind`, `kernel_parameters`); its `force` / `coefficient` run that kernel
(element-wise by Python; the compiled paths run it compiled). A plug-in law brings its formula as the documented
callback (`NormalLaw._unclipped`, `FrictionLaw.coefficient`). A plug-in law gets the same compiled paths
(the engine's compiled right-hand sides, the bridge's contact step, the interval log) by returning a `LawTwin` from
`compiled_twin()`: a numba-compilable pure function and at most `contact.kernels.N_PARAMS` (6) float parameters —

    normal law   force = twin(p, delta, delta_dot, impact_velocity)  → F_N [N] exactly as `force` for scalars:
                 zero where the law does not act (δ ≤ 0 unless `acts_outside_contact`), clipped at zero unless
                 adhesion (the twin does both); impact_velocity is δ̇⁻ [m/s] when `needs_impact_velocity`
                 (signature `NORMAL_TWIN_SIGNATURE`)
    friction law mu = twin(p, speed) → μ_eff(s) ≥ 0 at slip speed s ≥ 0 [m/s], as `coefficient` for a scalar
                 (signature `FRICTION_TWIN_SIGNATURE`)

p is the law's float64 parameter row (C-contiguous, N_PARAMS long, the law's numbers first). The twin must not
raise; a NaN result hands the state to the callback stage (the compiled right-hand sides check finiteness). Without a
twin (the default) a contact with the law keeps the Python path.
"""
from __future__ import annotations

import inspect
from abc import ABC
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from biobullet.core.attributes import REQUIRED, boolean, choice, number
from biobullet.core.errors import SourceRef
from biobullet.core.frozen import FrozenParameters

def _result(value: np.ndarray, scalar: bool) -> float | np.ndarray:
    return float(value) if scalar else value


#: numba signatures of a plug-in law's compiled twin (module docstring)
NORMAL_TWIN_SIGNATURE = "float64(float64[::1], float64, float64, float64)"
FRICTION_TWIN_SIGNATURE = "float64(float64[::1], float64)"


@dataclass(frozen=True)
class LawTwin:
    """A plug-in law's compiled twin: `function` (a module-level `_NAME_py` of the law kind's signature), its
    parameters `params` (at most contact.kernels.N_PARAMS floats) and the compiled kernels it calls (`bind`, as
    `core.jit.compiled`'s)."""

    function: Callable
    params: tuple[float, ...] | np.ndarray = ()
    bind: Mapping[str, Callable] | Callable[[], Mapping[str, Callable]] | None = None


class ContactLaw(FrozenParameters, ABC):
    """What normal and friction laws share: a registry name, XML attributes, parameters. Immutable after
    construction (assigning a parameter raises `core.frozen.FrozenParameterError`)."""

    #: registry key (the XML ``normal_law`` / ``friction_law`` attribute value)
    law_name: ClassVar[str] = ""
    #: XML attributes this law reads (besides its ``normal_law`` / ``friction_law``)
    attributes: ClassVar[tuple[str, ...]] = ()

    #: attributes read as one of a few words (name → the words); every other attribute is a number, `adhesion` a bool
    choices: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    #: the kernel that evaluates a built-in law (`contact.kernels` kind code); None: the law brings its own formula
    kernel_kind: ClassVar[int | None] = None

    @classmethod
    def from_attributes(cls, attributes: Mapping[str, Any], source: SourceRef | None = None) -> "ContactLaw":
        """Build from XML attributes: each of `attributes` read as a number (`adhesion` a bool, `choices` a word),
        an absent one taking the constructor's default; a ModelError names a bad attribute."""
        signature = inspect.signature(cls.__init__).parameters
        values: dict[str, Any] = {}
        for name in cls.attributes:
            default = signature[name].default if name in signature else REQUIRED
            default = REQUIRED if default is inspect.Parameter.empty else default
            if name == "adhesion":
                values[name] = boolean(source, attributes, name)
            elif name in cls.choices:
                values[name] = choice(source, attributes, name, cls.choices[name], default)
            else:
                values[name] = number(source, attributes, name, default)
        return cls(**values, source=source)

    def kernel_parameters(self) -> tuple[float, ...]:
        """The float parameter row of the law's kernel (`contact.kernels` lists each kind's row)."""
        return ()

    @property
    def parameters(self) -> dict[str, float | bool | str]:
        """Parameter values by attribute name (SI units): the `attributes`, unless a law says otherwise."""
        return {name: getattr(self, name) for name in self.attributes}

    def compiled_twin(self) -> LawTwin | None:
        """The law's compiled twin (module docstring), or None: contacts with this law keep the Python path. The
        built-in laws' twins live in `contact.kernels` (keyed on the exact class); this hook is for plug-ins."""
        return None

    def _where(self) -> tuple[str | None, str]:
        kind = "normal" if isinstance(self, NormalLaw) else "friction"
        return None, f'{kind} law "{self.law_name}" ({type(self).__name__})'

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.parameters.items())
        return f"{type(self).__name__}({args})"


class NormalLaw(ContactLaw):
    """A compliant normal-contact law F_N(δ, δ̇[, δ̇⁻])."""

    #: True if the force depends on the approach velocity δ̇⁻ stored at contact onset
    needs_impact_velocity: ClassVar[bool] = False
    #: True if the law may give a non-zero force at δ ≤ 0 (smoothed switches)
    acts_outside_contact: ClassVar[bool] = False
    #: the force acts this fraction of δ below the ground plane (1: at the sphere's deepest point;
    #: `contact.kernels._point_lift_py`)
    point_depth: float = 1.0

    def __init__(self, *, adhesion: bool = False) -> None:
        self.adhesion = bool(adhesion)

    def _unclipped(self, delta: np.ndarray, delta_dot: np.ndarray,
                   impact_velocity: np.ndarray | None) -> np.ndarray:
        """A plug-in law's expression without clipping, evaluated where the law acts (δ > 0 unless smoothed), on
        numpy arrays (the built-in laws are their kernels instead)."""
        raise NotImplementedError(f"normal law '{self.law_name}' defines neither a kernel_kind nor _unclipped")

    def release_function(self, delta: float, delta_dot: float,
                         impact_velocity: float | None = None) -> float | None:
        """Smooth function, > 0 while the unclipped force pushes inside the contact (δ > 0).

        A downward zero crossing marks where the clipped force drops to zero before δ returns to 0 (the
        bodies then separate freely). None if the law cannot pull while δ > 0.
        """
        return None

    def force(self, delta: Any, delta_dot: Any, impact_velocity: Any = None) -> float | np.ndarray:
        """Normal force F_N [N] (≥ 0 unless adhesion), vectorised over broadcastable arrays.

        delta: penetration δ [m] (> 0 in contact); delta_dot: δ̇ [m/s] (> 0 approaching);
        impact_velocity: δ̇⁻ [m/s] at onset, required iff `needs_impact_velocity`.
        """
        scalar = np.ndim(delta) == 0 and np.ndim(delta_dot) == 0 and np.ndim(impact_velocity) == 0
        d = np.asarray(delta, dtype=float)
        dd = np.asarray(delta_dot, dtype=float)
        vi = None
        if self.needs_impact_velocity:
            if impact_velocity is None:
                raise ValueError(f"normal law '{self.law_name}' needs the impact velocity δ̇⁻ stored at onset")
            vi = np.asarray(impact_velocity, dtype=float)
        d, dd = np.broadcast_arrays(d, dd)
        from biobullet.contact.kernels import builtin_row, normal_forces
        row = builtin_row(self)
        if row is not None:
            return _result(normal_forces(row, d, dd, 0.0 if vi is None else vi), scalar)
        if self.acts_outside_contact:
            f = self._unclipped(d, dd, vi)
        else:
            inside = d > 0.0
            f = np.where(inside, self._unclipped(np.where(inside, d, 0.0), dd, vi), 0.0)
        if not self.adhesion:
            f = np.maximum(f, 0.0)
        return _result(np.asarray(f, dtype=float), scalar)


class FrictionLaw(ContactLaw):
    """An isotropic friction law F_T = −μ_eff(|v_t|) · max(F_N, 0) · v̂_t; its twin gives μ_eff(p, s)."""

    #: True if μ_eff jumps at zero slip (switched Coulomb): contact elements then locate slip reversals
    discontinuous: ClassVar[bool] = False

    def coefficient(self, speed: Any) -> np.ndarray:
        """Effective friction coefficient μ_eff(s) ≥ 0 at slip speed s = |v_t| ≥ 0 [m/s] (a built-in law's kernel
        element-wise; a plug-in law overrides this with its formula)."""
        from biobullet.contact.kernels import builtin_row, friction_coefficients
        row = builtin_row(self)
        if row is None:
            raise NotImplementedError(f"friction law '{self.law_name}' defines neither a kernel_kind nor coefficient")
        return friction_coefficients(row, np.asarray(speed, dtype=float))

    def magnitude(self, speed: Any, normal_force: Any) -> float | np.ndarray:
        """|F_T| [N] at slip speed s ≥ 0 [m/s] and normal force F_N [N] (negative F_N counts as 0)."""
        scalar = np.ndim(speed) == 0 and np.ndim(normal_force) == 0
        s = np.abs(np.asarray(speed, dtype=float))
        fn = np.maximum(np.asarray(normal_force, dtype=float), 0.0)
        return _result(np.asarray(self.coefficient(s) * fn, dtype=float), scalar)

    def force(self, slip_velocity: Any, normal_force: Any) -> float | np.ndarray:
        """Tangential force [N] opposing the slip.

        slip_velocity: a scalar (signed 1-D slip, returns a scalar) or an array whose LAST axis holds the
        tangential vector components (2 or 3), with any leading batch axes; normal_force broadcasts over the
        batch axes. Zero slip gives zero force.
        """
        v = np.asarray(slip_velocity, dtype=float)
        if v.ndim == 0:
            return float(-np.sign(v) * self.magnitude(abs(float(v)), normal_force))
        speed = np.linalg.norm(v, axis=-1)
        mag = np.asarray(self.magnitude(speed, normal_force), dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            unit = np.where(speed[..., None] > 0.0, v / np.where(speed > 0, speed, 1.0)[..., None], 0.0)
        return -mag[..., None] * unit

    def force_1d(self, slip: Any, normal_force: Any) -> np.ndarray:
        """Element-wise signed friction force for an array of scalar slips (1-D problems)."""
        s = np.asarray(slip, dtype=float)
        return -np.sign(s) * np.asarray(self.magnitude(np.abs(s), normal_force), dtype=float)
