"""Expression joint functions: values vs hand-written numpy, derivatives vs an independently built SymPy
expression and finite differences, and the parser whitelist against malicious/invalid text."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import sympy

from biobullet.core.errors import ModelError, SourceRef
from biobullet.functions import check_derivatives, get
from biobullet.functions.expression import ExpressionFunction

SRC = SourceRef("test.urdf", '<joint_function joint="J">')


def build(expression: str, inputs: tuple[str, ...] = ("A", "B"), **extra: str) -> ExpressionFunction:
    attributes = {"joint": "J", "type": "expression", "inputs": " ".join(inputs), "expression": expression,
                  **extra}
    return get("expression").from_attributes(attributes, inputs, SRC)


CASES = [  # (text, parameters, numpy reference of (A, B, t), depends on t)
    ("0.5*sin(A) + B**2 - 0.1*t", None, lambda A, B, t: 0.5 * np.sin(A) + B ** 2 - 0.1 * t, True),
    ("k*cos(A)*exp(-c*t) + atan2(B, 2)", "k=1.5 c=0.2",
     lambda A, B, t: 1.5 * np.cos(A) * np.exp(-0.2 * t) + np.arctan2(B, 2), True),
    ("sqrt(1 + A**2) / (2 + tanh(B)) - log(3 + sinh(A*B))/pi + e**(-t)", None,
     lambda A, B, t: np.sqrt(1 + A ** 2) / (2 + np.tanh(B)) - np.log(3 + np.sinh(A * B)) / np.pi + np.exp(-t), True),
    ("asin(A/4) + acos(B/4) + atan(A - B) + tan(0.3*A) + cosh(B) - -+A", None,
     lambda A, B, t: np.arcsin(A / 4) + np.arccos(B / 4) + np.arctan(A - B) + np.tan(0.3 * A) + np.cosh(B) + A, False),
    ("2**3 * A + 1/4 + B", None, lambda A, B, t: 8 * A + 0.25 + B, False),
]


@pytest.mark.parametrize("text,parameters,reference,uses_time", CASES)
def test_expression_value_and_derivatives(text: str, parameters, reference, uses_time: bool) -> None:
    f = build(text, **({"parameters": parameters} if parameters else {}))
    rng = np.random.default_rng(7)
    for _ in range(6):
        a, b, t = rng.uniform(-1.0, 1.0, 3)
        value, gradient, hessian = f.evaluate(np.array([a, b]), t)
        # same elementary functions, different evaluation order: agreement to rounding (~1e-14)
        assert value == pytest.approx(reference(a, b, t), rel=1e-12, abs=1e-13)
        assert gradient.shape == (3,) and hessian.shape == (3, 3)
        result = check_derivatives(f, [a, b], t)
        assert result.ok, str(result)
    assert f.uses_time == uses_time


def test_expression_derivatives_match_independent_sympy() -> None:
    # Reference built directly with SymPy objects (not through the parser), differentiated by SymPy.
    A, B, t = sympy.symbols("A B t")
    reference = 1.5 * sympy.sin(A) * B ** 3 + sympy.exp(-0.2 * t) * sympy.cos(A * t)
    z = (A, B, t)
    f = build("k*sin(A)*B**3 + exp(-c*t)*cos(A*t)", parameters="k=1.5 c=0.2")
    point = {A: 0.4, B: -0.8, t: 1.3}
    value, gradient, hessian = f.evaluate(np.array([0.4, -0.8]), 1.3)
    assert value == pytest.approx(float(reference.subs(point)), rel=1e-13)
    np.testing.assert_allclose(gradient, [float(reference.diff(v).subs(point)) for v in z], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(hessian, [[float(reference.diff(u, v).subs(point)) for v in z] for u in z],
                               rtol=1e-12, atol=1e-14)


def test_expression_time_only_and_unused_inputs() -> None:
    f = build("0.3*sin(2*pi*t)", inputs=())
    assert f.uses_time
    value, gradient, hessian = f.evaluate(np.zeros(0), 0.125)
    assert value == pytest.approx(0.3 * np.sin(2 * np.pi * 0.125), rel=1e-14)
    assert gradient[0] == pytest.approx(0.3 * 2 * np.pi * np.cos(2 * np.pi * 0.125), rel=1e-13)
    g = build("A**2", inputs=("A", "B"))  # B unused: its derivatives are exactly zero
    _, gradient, hessian = g.evaluate(np.array([1.5, 9.0]), 0.0)
    np.testing.assert_array_equal(gradient, [3.0, 0.0, 0.0])
    np.testing.assert_array_equal(hessian, [[2.0, 0, 0], [0, 0, 0], [0, 0, 0]])
    assert not g.uses_time


def test_expression_builder_does_not_import_sympy_at_package_import() -> None:
    import subprocess
    import sys

    code = ("import sys, biobullet.functions as f; f.names(); "
            "print('sympy' in sys.modules, 'scipy' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3] / "plugin")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["False", "False"]


MARKER = Path("/tmp/x")
REJECTED = [
    "__import__('os').system('touch /tmp/x')",
    "().__class__",
    "().__class__.__bases__[0].__subclasses__()",
    "lambda: 1",
    "A.real",
    "open('f')",
    '"s"',
    "A[0]",
    "sin(x=1)",
    "f(x=1)",
    "unknown_name + A",
    "abs(A)",
    "max(A, B)",
    "A if B else 1",
    "A < B",
    "A and B",
    "A % 2",
    "A ^ 2",
    "A // 2",
    "[A, B]",
    "(A, B)",
    "sin(*[A])",
    "sin(A, B)",
    "atan2(A)",
    "sin",
    "True + A",
    "1j * A",
    "A +",
    "",
    "A = 1",
    "(x := 1)",
    "f'{A}'",
    "A" + " + A" * 1200,  # too long (> 2000 chars)
    "+".join(["A"] * 400),  # under the length limit but too many syntax nodes
    "(" * 300 + "A" + ")" * 300,  # nesting beyond the parser's limit
    "1/0 + A",
    "log(0) + A",
    "sqrt(-1) + A",
    "9**9**9**9 + A",
    "exp(1000) * A",
    "A/0",
    "1e999 * A",
]


@pytest.mark.parametrize("text", REJECTED)
def test_expression_whitelist_rejects(text: str) -> None:
    existed = MARKER.exists()
    with pytest.raises(ModelError) as info:
        build(text)
    assert info.value.attribute == "expression"
    assert "attribute 'expression'" in str(info.value) and "test.urdf" in str(info.value)
    if not existed:
        assert not MARKER.exists()  # no side effect: nothing was executed


def test_expression_rejection_messages_are_specific() -> None:
    with pytest.raises(ModelError, match=r"unknown name 'foo'.*inputs \(A, B\).*t.*pi, e"):
        build("foo * A")
    with pytest.raises(ModelError, match="'abs' is not differentiable"):
        build("abs(A)")
    with pytest.raises(ModelError, match="use \\*\\* for powers"):
        build("A ^ 2")
    with pytest.raises(ModelError, match="2000"):
        build("A" + " + A" * 1200)


@pytest.mark.parametrize("parameters", ["k", "k=", "k=abc", "k=nan", "k=inf", "t=1", "A=1", "sin=2",
                                        "k=1 k=2", "1k=3"])
def test_expression_bad_parameters(parameters: str) -> None:
    with pytest.raises(ModelError) as info:
        build("A", parameters=parameters)
    assert info.value.attribute == "parameters"


@pytest.mark.parametrize("inputs", [("t", "B"), ("pi",), ("sin",), ("r-elbow",), ("A", "A"), ("lambda",)])
def test_expression_unusable_input_names(inputs: tuple[str, ...]) -> None:
    with pytest.raises(ModelError) as info:
        build("1.0", inputs=inputs)
    assert info.value.attribute == "inputs"


def test_expression_missing_and_unknown_attributes() -> None:
    with pytest.raises(ModelError) as info:
        get("expression").from_attributes({"joint": "J", "type": "expression"}, ("A",), SRC)
    assert info.value.attribute == "expression"
    with pytest.raises(ModelError, match="attribute 'expresion': unknown attribute") as info:
        get("expression").from_attributes({"joint": "J", "type": "expression", "expresion": "A"}, ("A",), SRC)
    assert info.value.attribute == "expresion" and "expression, parameters" in str(info.value)
