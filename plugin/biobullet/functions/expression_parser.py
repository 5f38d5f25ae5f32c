"""Safe parser for `expression` joint functions: text → SymPy expression, via a whitelisted AST walk.

The text is never given to eval/exec/sympify. `ast.parse(text, mode="eval")` only builds a syntax tree;
we then accept exactly: numeric literals (int/float), names (inputs, ``t``, parameters, ``pi``, ``e``),
unary +/−, binary + − * / **, and calls ``f(arg, ...)`` of the functions in `FUNCTIONS` (positional
arguments only). Everything else is rejected with a ModelError naming the attribute ``expression``.

Sub-expressions without symbols are folded with Python floats (bounded work: no huge integers or
arbitrary-precision towers such as ``9**9**9**9``), so only symbol-dependent parts reach SymPy.
"""
from __future__ import annotations

import ast
import keyword
import math
import operator
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from biobullet.core.errors import SourceRef

MAX_LENGTH = 2000  #: characters in the expression text
MAX_NODES = 1000   #: AST nodes (bounds symbolic work)
MAX_DEPTH = 200    #: nesting depth of the syntax tree (bounds recursion in the walk, SymPy and the tape)
MAX_NESTING = 16   #: function calls and powers nested inside each other (bounds SymPy's differentiation work)
MAX_DIGITS = 30    #: digits of an integer literal (larger ones are typos or attacks: 10**308 overflows a float)

#: whitelisted functions → number of arguments
FUNCTIONS: dict[str, int] = {
    "sin": 1, "cos": 1, "tan": 1, "asin": 1, "acos": 1, "atan": 1, "atan2": 2,
    "sinh": 1, "cosh": 1, "tanh": 1, "exp": 1, "log": 1, "sqrt": 1,
}
TIME_NAME = "t"
CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}
#: common functions deliberately not offered, with the reason given to the user
REJECTED_FUNCTIONS: dict[str, str] = {
    name: "is not differentiable everywhere; joint functions need smooth first and second derivatives"
    for name in ("abs", "min", "max", "sign", "floor", "ceil", "round", "heaviside", "mod")
}
RESERVED: frozenset[str] = frozenset(FUNCTIONS) | frozenset(CONSTANTS) | {TIME_NAME}

_FLOAT_FUNCTIONS = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "atan2": math.atan2, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh,
    "exp": math.exp, "log": math.log, "sqrt": math.sqrt,
}
_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_BINARY_NAMES = {ast.Mod: "%", ast.FloorDiv: "//", ast.MatMult: "@", ast.BitXor: "^ (use ** for powers)",
                 ast.BitAnd: "&", ast.BitOr: "|", ast.LShift: "<<", ast.RShift: ">>"}
_NODE_NAMES = {ast.Attribute: "attribute access", ast.Subscript: "subscripts", ast.Lambda: "lambda",
               ast.Compare: "comparisons", ast.BoolOp: "and/or", ast.IfExp: "if-expressions",
               ast.Tuple: "tuples", ast.List: "lists", ast.Dict: "dicts", ast.Set: "sets",
               ast.ListComp: "comprehensions", ast.GeneratorExp: "generators", ast.DictComp: "comprehensions",
               ast.SetComp: "comprehensions", ast.Starred: "starred arguments", ast.JoinedStr: "strings",
               ast.NamedExpr: "assignments", ast.Await: "await", ast.Yield: "yield", ast.Slice: "slices"}

Number = int | float


def is_identifier(name: str) -> bool:
    """A name an expression can refer to: a Python identifier, no keyword, and in Unicode's NFKC form — Python
    reads identifiers in that form, so in an expression 'ｊ1' (fullwidth j) is the name 'j1'."""
    return name.isidentifier() and not keyword.iskeyword(name) and unicodedata.normalize("NFKC", name) == name


def names_read(text: str) -> set[str]:
    """The names an expression that `parse_expression` accepted reads (inputs, t, parameters, constants, functions)."""
    return {node.id for node in ast.walk(ast.parse(" ".join(text.split()), mode="eval")) if isinstance(node, ast.Name)}


def parse_expression(text: str, inputs: Sequence[str], parameters: Mapping[str, float],
                     input_symbols: Sequence[Any], time_symbol: Any, source: SourceRef) -> Any:
    """Parse `text` into a SymPy expression in `input_symbols` (same order as `inputs`) and `time_symbol`.

    Raises `source.error("expression", ...)` for anything outside the whitelist.
    """
    import sympy

    def fail(message: str) -> Exception:
        return source.error("expression", message, "an arithmetic expression in " + _allowed_text())

    def _allowed_text() -> str:
        names = [f"inputs ({', '.join(inputs)})" if inputs else "no inputs", TIME_NAME]
        if parameters:
            names.append(f"parameters ({', '.join(parameters)})")
        return ("names " + ", ".join(names) + ", pi, e; operators + - * / **; functions "
                + ", ".join(FUNCTIONS))

    if not isinstance(text, str) or not text.strip():
        raise fail("empty expression")
    if len(text) > MAX_LENGTH:
        raise fail(f"expression is {len(text)} characters long, the limit is {MAX_LENGTH}")
    # XML attribute values may carry newlines/tabs; they are plain spaces here.
    clean = " ".join(text.split())
    # Python reads identifiers in NFKC form: '3*ｊ1' (fullwidth j) read the joint j1, not the input named 'ｊ1'
    if unicodedata.normalize("NFKC", clean) != clean:
        word = next((w for w in re.findall(r"\w+", clean) if unicodedata.normalize("NFKC", w) != w), None)
        what = (f"the name {word!r} reads as {unicodedata.normalize('NFKC', word)!r}" if word is not None
                else "a character reads as another")
        raise fail(f"the text is not in Unicode's NFKC form: {what} (Python's reading of names), so it would "
                   "silently refer to another name")
    try:
        tree = ast.parse(clean, mode="eval")
    except SyntaxError as exc:
        where = f" at column {exc.offset}" if exc.offset else ""
        raise fail(f"syntax error: {exc.msg}{where}") from None
    except (ValueError, RecursionError, MemoryError):
        raise fail("expression cannot be parsed (too deeply nested or invalid characters)") from None
    n_nodes = sum(1 for _ in ast.walk(tree))
    if n_nodes > MAX_NODES:
        raise fail(f"expression has {n_nodes} syntax nodes, the limit is {MAX_NODES}")
    depth, nesting = _depth(tree)
    if depth > MAX_DEPTH:
        raise fail(f"expression is nested {depth} levels deep, the limit is {MAX_DEPTH}")
    if nesting > MAX_NESTING:
        raise fail(f"function calls and powers are nested {nesting} deep, the limit is {MAX_NESTING}")

    names: dict[str, Any] = dict(zip(inputs, input_symbols))
    names[TIME_NAME] = time_symbol

    def fold(operation: str, func: Any, *args: Number) -> Number:
        # Constant folding in IEEE floats: bounded cost, and domain errors become clear messages.
        try:
            result = func(*args)
        except (ValueError, ZeroDivisionError, OverflowError) as exc:
            raise fail(f"constant sub-expression {operation} is undefined or overflows ({exc})") from None
        if isinstance(result, int):  # exact integer arithmetic: only bound the size
            if abs(result) > 10 ** 300:
                raise fail(f"constant sub-expression {operation} is too large")
            return result
        if isinstance(result, complex) or not math.isfinite(result):
            raise fail(f"constant sub-expression {operation} is not a finite real number")
        return result

    def walk(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise fail(f"literal {value!r} is not allowed; only real numbers")
            if isinstance(value, float) and not math.isfinite(value):
                raise fail(f"literal {node.value!r} is not finite")
            if isinstance(value, int) and abs(value) >= 10 ** MAX_DIGITS:
                raise fail(f"integer literal with {len(str(abs(value)))} digits; the limit is {MAX_DIGITS} "
                           "(write large numbers in floating point, e.g. 1e40)")
            return value
        if isinstance(node, ast.Name):
            return name_value(node.id)
        if isinstance(node, ast.UnaryOp):
            operand = walk(node.operand)
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return operand
            raise fail(f"unary operator '{type(node.op).__name__}' is not allowed")
        if isinstance(node, ast.BinOp):
            return binary(node)
        if isinstance(node, ast.Call):
            return call(node)
        kind = next((label for cls, label in _NODE_NAMES.items() if isinstance(node, cls)), None)
        raise fail(f"{kind or type(node).__name__} not allowed")

    def name_value(name: str) -> Any:
        if name in names:
            return names[name]
        if name in parameters:
            return parameters[name]
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name in FUNCTIONS:
            raise fail(f"function '{name}' must be called, e.g. {name}(A)")
        raise fail(f"unknown name '{name}'")

    def binary(node: ast.BinOp) -> Any:
        op = type(node.op)
        if op not in (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow):
            raise fail(f"operator {_BINARY_NAMES.get(op, op.__name__)} is not allowed")
        left, right = walk(node.left), walk(node.right)
        if isinstance(left, (int, float)) and isinstance(right, (int, float)):
            if op is ast.Pow:  # float pow: no 9**9**9 big integers; exact small integer results kept
                result = fold("a ** b", lambda a, b: float(a) ** float(b), left, right)
                if isinstance(left, int) and isinstance(right, int) and right >= 0 and abs(result) < 2 ** 53:
                    return int(result)
                return result
            return fold(f"a {_SYMBOLS[op]} b", _OPERATORS[op], left, right)
        a, b = _to_sympy(sympy, left), _to_sympy(sympy, right)
        return a ** b if op is ast.Pow else _OPERATORS[op](a, b)

    def call(node: ast.Call) -> Any:
        if not isinstance(node.func, ast.Name):
            raise fail("only calls of the whitelisted functions by plain name are allowed")
        name = node.func.id
        if name in REJECTED_FUNCTIONS:
            raise fail(f"function '{name}' {REJECTED_FUNCTIONS[name]}")
        if name not in FUNCTIONS:
            raise fail(f"unknown function '{name}'")
        if node.keywords:
            raise fail(f"keyword arguments are not allowed in {name}(...)")
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            raise fail(f"starred arguments are not allowed in {name}(...)")
        if len(node.args) != FUNCTIONS[name]:
            raise fail(f"{name} takes {FUNCTIONS[name]} argument(s), got {len(node.args)}")
        args = [walk(arg) for arg in node.args]
        if all(isinstance(a, (int, float)) for a in args):
            return fold(f"{name}(...)", _FLOAT_FUNCTIONS[name], *args)
        return getattr(sympy, name)(*[_to_sympy(sympy, a) for a in args])

    try:
        result = walk(tree)
    except RecursionError:
        raise fail("expression is too deeply nested") from None
    expr = _to_sympy(sympy, result)
    if expr.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo, sympy.I):
        raise fail("expression is undefined (division by zero?) or not real")
    return expr


def _depth(tree: ast.AST) -> tuple[int, int]:
    """(nesting depth of the syntax tree, nesting depth of calls and powers), walked with an explicit stack."""
    deepest, deepest_nesting, stack = 0, 0, [(tree, 1, 0)]
    while stack:
        node, level, nesting = stack.pop()
        if isinstance(node, ast.Call) or (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow)):
            nesting += 1
        deepest, deepest_nesting = max(deepest, level), max(deepest_nesting, nesting)
        stack.extend((child, level + 1, nesting) for child in ast.iter_child_nodes(node))
    return deepest, deepest_nesting


def _to_sympy(sympy: Any, value: Any) -> Any:
    if isinstance(value, bool):  # defensive: bools never get here (rejected as literals)
        raise TypeError(value)
    if isinstance(value, int):
        return sympy.Integer(value)
    if isinstance(value, float):
        return sympy.Float(value)
    return value
