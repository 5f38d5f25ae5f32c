"""Base class of joint-function plugins: θ_joint = f(x, t).

x are the values of the function's *input* joint coordinates (by name, in `inputs` order) and t is time.
A plugin returns the value together with its exact first and second derivatives with respect to the
extended argument z = (x_1, …, x_n, t): gradient shape (n+1,), Hessian shape (n+1, n+1), t last.
The model layer composes these jets (chain rule) into θ = f(q, t), G = ∂θ/∂q and γ so that
θ̇ = G q̇ + f_t and θ̈ = G q̈ + γ hold exactly.
Units: SI, angles in radians.

Compiled jets (optional, for third-party types): `JointFunction.compiled_jets()` may return a `JetsKernel` — a
numba-compilable module-level function `status = jets(z, params, jet)` of signature `JETS_KERNEL_SIGNATURE` with
z = (x_1, …, x_n, t) (m = n + 1), its float parameters `params`, and `jet` (length 1 + m + m(m+1)/2) to fill with
f, ∂f/∂z (m) and the upper triangle of ∂²f/∂z² row by row (∂²f/∂z_i∂z_k, i ≤ k); status 0, anything else (or a
non-finite jet) hands the state to the callback stage, which calls `evaluate`. The compiled right-hand sides and
the bridge's compiled rows then evaluate the function inside numba (called by address, `model.joint_jets`). It
must not raise and must give the same numbers as `evaluate` (tests: compare both at many points).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from biobullet.core.attributes import check_count, check_known_attributes
from biobullet.core.errors import ModelError, SourceRef
from biobullet.core.frozen import FrozenParameters


#: C signature of a compiled jets kernel (module docstring): status = jets(z, params, jet)
JETS_KERNEL_SIGNATURE = "int64(float64[::1], float64[::1], float64[::1])"


@dataclass(frozen=True)
class JetsKernel:
    """A joint function's compiled jets (module docstring): `function` of signature `JETS_KERNEL_SIGNATURE`
    (module level, so numba can cache it), its float parameters, and the compiled kernels it calls by global name
    (`bind`, as `core.jit.compiled`'s)."""

    function: Callable
    params: np.ndarray = field(default_factory=lambda: np.zeros(0))
    bind: Mapping[str, Callable] | Callable[[], Mapping[str, Callable]] | None = None


def evaluate_jets(kernel: JetsKernel, x: np.ndarray, t: float) -> tuple[float, np.ndarray, np.ndarray]:
    """`JointFunction.evaluate` of a type whose compiled jets are its one implementation: the kernel's Python form
    (no `bind`) at z = (x, t), unpacked into the value, the gradient (m) and the symmetric Hessian (m × m)."""
    m = len(x) + 1
    z = np.append(np.asarray(x, dtype=float), float(t))
    jet = np.empty(1 + m + m * (m + 1) // 2)
    kernel.function(z, kernel.params, jet)
    return unpack_jet(jet, m)


def unpack_jet(jet: np.ndarray, m: int) -> tuple[float, np.ndarray, np.ndarray]:
    """(value, gradient (m), symmetric Hessian (m × m)) of a jet laid out as f, ∂f/∂z (m), then the Hessian's upper
    triangle row by row (`JETS_KERNEL_SIGNATURE`'s layout)."""
    hessian = np.empty((m, m))
    hessian[np.triu_indices(m)] = jet[1 + m:]
    hessian.T[np.triu_indices(m)] = jet[1 + m:]
    return float(jet[0]), jet[1:1 + m].copy(), hessian


def one_input_jets(value: float, first: float, second: float) -> tuple[float, np.ndarray, np.ndarray]:
    """`JointFunction.evaluate`'s (value, gradient, Hessian) over z = (x, t) of a function of one input and not of
    time, from its value and its first and second derivatives in x."""
    hessian = np.zeros((2, 2))
    hessian[0, 0] = second
    return value, np.array([first, 0.0]), hessian


#: attributes every <joint_function> element may carry, whatever its type
COMMON_ATTRIBUTES: tuple[str, ...] = ("joint", "type", "inputs")


class JointFunction(FrozenParameters, ABC):
    """One explicit joint function. Subclasses are immutable after construction (assigning a parameter raises
    `core.frozen.FrozenParameterError`)."""

    type_name: ClassVar[str] = ""
    #: attribute names this type understands besides the common ones ('joint', 'type', 'inputs')
    attributes: ClassVar[tuple[str, ...]] = ()

    def __init__(self, inputs: Sequence[str]) -> None:
        self.inputs: tuple[str, ...] = tuple(inputs)

    @classmethod
    @abstractmethod
    def from_attributes(cls, attributes: Mapping[str, str], inputs: tuple[str, ...],
                        source: SourceRef) -> "JointFunction":
        """Build from the XML attributes; raise `source.error(attribute, message, expected)` on bad input."""

    @classmethod
    def check_attributes(cls, attributes: Mapping[str, str], inputs: tuple[str, ...], source: SourceRef,
                         **input_count: int) -> None:
        """`source.error` for an attribute this type does not read or, given `exactly=` / `at_least=`, a wrong
        number of inputs."""
        check_known_attributes(source, attributes, (*COMMON_ATTRIBUTES, *cls.attributes))
        if input_count:
            check_count(source, "inputs", inputs, **input_count)

    @abstractmethod
    def evaluate(self, x: np.ndarray, t: float) -> tuple[float, np.ndarray, np.ndarray]:
        """Value, gradient (n+1,) and Hessian (n+1, n+1) with respect to (x, t)."""

    @property
    def uses_time(self) -> bool:
        """True if the value depends on t (drivers); lets the model skip time terms otherwise."""
        return False

    @property
    def kinked(self) -> bool:
        """True if the first derivative jumps inside the input's range (a piecewise-linear table): the joint's
        rate G v then jumps at each knot while the run keeps v, so a kinetic energy jump goes unrecorded there."""
        return False

    def compiled_jets(self) -> JetsKernel | None:
        """This function's compiled jets for the compiled paths (module docstring), or None: models using it then
        evaluate it through `evaluate` (callback stage). Built-in types are compiled by the kernels themselves."""
        return None

    def value(self, x: np.ndarray, t: float = 0.0) -> float:
        return self.evaluate(np.asarray(x, dtype=float), t)[0]

    def _where(self) -> tuple[str | None, str]:
        return None, f'<joint_function type="{self.type_name}" inputs="{" ".join(self.inputs)}">'

    def __repr__(self) -> str:
        return f"{type(self).__name__}(inputs={self.inputs})"


def interpolation_table(inputs: Sequence[str], x: Sequence[float], y: Sequence[float], *, min_points: int,
                        max_points: int | None = None, expected: str) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of a one-input interpolating function as float arrays; ModelError naming the attribute for other
    than one input, a number of points outside [min_points, max_points] or unequal lengths (`expected` says what
    is valid), a non-finite value, or x not strictly increasing."""
    xs = np.array(x, dtype=float).reshape(-1)
    ys = np.array(y, dtype=float).reshape(-1)
    if len(inputs) != 1:
        raise ModelError(f"got {len(inputs)} inputs", attribute="inputs", expected="exactly one input")
    if not min_points <= len(xs) <= (max_points or len(xs)) or len(xs) != len(ys):
        raise ModelError(f"{len(xs)} x values and {len(ys)} y values", attribute="y", expected=expected)
    if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(ys))):
        raise ModelError("non-finite table value", attribute="x", expected="finite numbers")
    with np.errstate(over="ignore"):   # (1e308 - (-1e308) is inf: still increasing)
        steps = np.diff(xs)
    if np.any(steps <= 0.0):
        i = int(np.argmax(steps <= 0.0))
        raise ModelError(f"not strictly increasing at position {i + 1} ({xs[i]:g} then {xs[i + 1]:g})",
                         attribute="x", expected="strictly increasing x0 < x1 < ...")
    return xs, ys
