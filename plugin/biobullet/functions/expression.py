"""Expression joint function: θ = f(x, t) written as text, derivatives exact via SymPy.

XML: ``<joint_function joint="J" type="expression" inputs="A B"
expression="k*sin(A) + B**2 - c*t" parameters="k=1.5 c=0.2"/>``

Names usable in the text: the inputs (joint names must be Python identifiers and not reserved), ``t``
(time, s), the parameters (named constants), ``pi`` and ``e``. Functions: see
`expression_parser.FUNCTIONS`. The text is parsed by a whitelisted AST walk (never eval/sympify).
Gradient and Hessian over (x..., t) are differentiated symbolically once, at construction, and kept after
common-subexpression elimination as an instruction tape (`expression_tape`, data only) whose interpreter
(`expression_tape.tape_jets_py`) is the type's one implementation: `evaluate` runs it (compiled), and the
compiled joint jets (`model.joint_jets`) inline it, so expression models take the engine's and the bridge's
compiled paths. An expression the tape refuses (over its length bound, or a derivative with a constant that is not
a finite real number, such as 0**A or (-2)**A) is refused at load with a ModelError on the `expression` attribute.
Outside the domain of a function (log of a negative number, a pole such as 1/(t - 0.1) at t = 0.1) or on
overflow, `evaluate` raises an EvaluationError naming the expression, its inputs and the time — never NaN.
"""
from __future__ import annotations

import unicodedata
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from biobullet.core.attributes import to_float
from biobullet.core.errors import EvaluationError, SourceRef, clean_message, shown
from biobullet.core.attributes import check_count
from biobullet.functions.base import JointFunction, unpack_jet
from biobullet.functions.expression_parser import RESERVED, is_identifier, names_read, parse_expression
from biobullet.functions.expression_tape import (UnsupportedExpression, compile_tape, output_count, tape_jets,
                                                 value_first)
from biobullet.functions.registry import register

_PYTHON_SOURCE = SourceRef("<python>", "ExpressionFunction(...)")


def parse_parameters(text: str | None, inputs: Sequence[str], source: SourceRef) -> dict[str, float]:
    """Parse ``"k=1.5 c=0.2"`` (spaces around '=' allowed) into finite named constants."""
    expected = "space-separated name=value pairs, e.g. 'k=1.5 c=0.2'"
    if text is None or not text.strip():
        return {}
    tokens = "=".join(part.strip() for part in text.split("=")).split()
    parameters: dict[str, float] = {}
    for token in tokens:
        name, sep, value_text = token.partition("=")
        if not sep or not name or not value_text:
            raise source.error("parameters", f"'{token}' is not a name=value pair", expected)
        if not is_identifier(name) or name in RESERVED or name in inputs:
            raise source.error("parameters", f"'{name}' cannot be a parameter name (not an identifier in NFKC "
                               f"form, reserved, or an input name)", expected)
        if name in parameters:
            raise source.error("parameters", f"parameter '{name}' is defined twice", expected)
        parameters[name] = to_float(source, "parameters", value_text, expected=expected)
    return parameters


#: most SymPy nodes in the gradient, and in the gradient and Hessian together, of one expression. The parser's bounds
#: (characters, syntax nodes) do not bound its derivatives: a product of n factors has n² nodes in its gradient and n³
#: in its Hessian, so a 480-character product of 40 sines took minutes to load (the derivatives of the bundled and
#: OpenSim expressions have at most a few thousand nodes). With these bounds an expression is refused within seconds.
MAX_GRADIENT_NODES = 10_000
MAX_DERIVATIVE_NODES = 150_000


class _DerivativeBudget:
    """Counts the nodes of the derivatives as they are formed; one clear error on the `expression` attribute once the
    count passes a bound, before the next (larger) derivative is formed."""

    def __init__(self, source: SourceRef) -> None:
        self.source, self.used = source, 0

    def take(self, derivative: Any, limit: int) -> Any:
        import sympy
        self.used += sum(1 for _ in sympy.preorder_traversal(derivative))
        if self.used > limit:
            raise self.source.error("expression", f"its derivatives grow too large ({self.used:,} terms and factors, "
                                    f"the limit is {limit:,}): the gradient and Hessian are formed symbolically",
                                    "a shorter expression (long products differentiate into many terms), or one "
                                    "split over several joint functions (each is differentiated on its own)")
        return derivative


@register
class ExpressionFunction(JointFunction):
    """θ = f(x, t) from a safe arithmetic expression; exact gradient and Hessian."""

    type_name: ClassVar[str] = "expression"
    attributes: ClassVar[tuple[str, ...]] = ("expression", "parameters")

    def __init__(self, inputs: Sequence[str], expression: str, parameters: Mapping[str, float] | None = None,
                 source: SourceRef | None = None) -> None:
        super().__init__(inputs)
        source = source or _PYTHON_SOURCE
        import sympy  # lazy: only expression functions pay for SymPy

        check_count(source, "inputs", self.inputs)
        for name in self.inputs:
            if not is_identifier(name) or name in RESERVED:
                read = unicodedata.normalize("NFKC", name)
                raise source.error("inputs", f"input '{name}' cannot be used in an expression (not a Python "
                                   f"identifier — in an expression Python reads {read!r} —, or one of the "
                                   f"reserved names {sorted(RESERVED)})",
                                   "joint names that are identifiers such as 'r_elbow'")
        self.expression_text = expression
        self.source = source
        self.parameters = dict(parameters or {})
        # Internal symbol names cannot collide with user names (those never start with '_z') nor with
        # the CSE temporaries ('_c0', ...).
        input_symbols = [sympy.Symbol(f"_z{i}") for i in range(len(self.inputs))]
        time_symbol = sympy.Symbol(f"_z{len(self.inputs)}")
        expr = parse_expression(expression, self.inputs, self.parameters, input_symbols, time_symbol, source)
        variables = [*input_symbols, time_symbol]
        budget = _DerivativeBudget(source)
        gradient = [budget.take(sympy.diff(expr, v), MAX_GRADIENT_NODES) for v in variables]
        m = len(variables)
        hessian = [[None] * m for _ in range(m)]
        for i in range(m):
            for j in range(i, m):
                hessian[i][j] = hessian[j][i] = budget.take(sympy.diff(gradient[i], variables[j]),
                                                            MAX_DERIVATIVE_NODES)
        outputs = [expr, *gradient, *(h for row in hessian for h in row)]
        non_smooth = (sympy.Abs, sympy.sign, sympy.Heaviside, sympy.DiracDelta)
        if any(o.has(*non_smooth) for o in outputs):
            raise source.error("expression", "derivatives are not smooth (Abs/sign appeared)",
                               "a twice continuously differentiable expression")
        self.symbolic: Any = expr  # in internal symbols _z0.._zn (t last)
        self._uses_time = time_symbol in expr.free_symbols
        self._size = m
        common = sympy.cse(outputs, symbols=sympy.numbered_symbols("_c"))
        # the value, gradient and Hessian as an instruction tape (data, no generated code): what `evaluate` and the
        # compiled joint jets (`model.joint_jets`, kind EXPRESSION) run
        try:
            self.tape = compile_tape(*common, variables)
        except UnsupportedExpression as exc:
            raise source.error("expression", f"cannot be evaluated: {exc}",
                               "an expression whose value, gradient and Hessian are finite real numbers (a "
                               "constant raised to a variable power needs a base > 0), or a long one split over "
                               "several joint functions") from None
        # the interpreter's inputs: the input positions 0 … n−1 in x, then the value-first tape
        words, constants = self.tape
        self._tape_inputs = np.array([*range(m - 1), *value_first([int(w) for w in words], m, len(constants))],
                                     dtype=np.int64)

    @classmethod
    def from_attributes(cls, attributes: Mapping[str, str], inputs: tuple[str, ...],
                        source: SourceRef) -> "ExpressionFunction":
        cls.check_attributes(attributes, inputs, source)
        if "expression" not in attributes:
            raise source.error("expression", "missing attribute", "an arithmetic expression, e.g. '0.5*sin(A)'")
        parameters = parse_parameters(attributes.get("parameters"), inputs, source)
        function = cls(inputs, attributes["expression"], parameters, source)
        # a parameter the text never reads is most often a misspelling of one it does (an unknown name in the
        # expression is refused above); a warning, not an error: the Python constructor takes a shared parameter set
        read = names_read(attributes["expression"])
        unused = [name for name in parameters if name not in read]
        if unused:
            warnings.warn(clean_message(f"{source.file}: {source.element}: attribute 'parameters': "
                                        f"{', '.join(shown(n) for n in unused)} never read by the expression "
                                        f"{shown(attributes['expression'])}"), stacklevel=2)
        return function

    @property
    def uses_time(self) -> bool:
        return self._uses_time

    def evaluate(self, x: np.ndarray, t: float) -> tuple[float, np.ndarray, np.ndarray]:
        m = self._size
        jet = np.empty(output_count(m))
        constants = self.tape[1]
        with np.errstate(all="ignore"):   # the tape gives NaN or inf outside a domain (also in its Python form)
            tape_jets(self._tape_inputs, constants, 0, m - 1, 0, len(constants), float(t),
                      np.ascontiguousarray(x, dtype=float), 0, jet)
        if not np.isfinite(jet).all():
            inputs = ", ".join(f"{n} = {float(v):.6g}" for n, v in zip(self.inputs, x))
            raise EvaluationError(f"{self.source.file}: {self.source.element}: expression "
                                  f"{self.expression_text[:80]!r} at t = {float(t):.9g} s"
                                  f"{' (' + inputs + ')' if inputs else ''}: not finite (outside the domain of a "
                                  "function, at a pole, or overflow)")
        return unpack_jet(jet, m)

    def __repr__(self) -> str:
        return f"ExpressionFunction(inputs={self.inputs}, expression={self.expression_text!r})"

