"""Instruction tape of an `expression` joint function: its SymPy value, gradient and Hessian (after sympy.cse) as
data — a register program over a fixed op set — that the compiled joint jets (`model.joint_jets`) interpret.

No source code is generated or compiled: the tape is integers and floats. Registers 0 … m−1 hold the variables
(the inputs z_0 … z_{n−1}, then t; m = n + 1), the next `len(constants)` registers the constants, and instruction k
writes register m + n_const + k from earlier registers only. One instruction is three integers (op, a, b): a and b
are register indices, except POWI's b, the integer exponent. The outputs are registers: the value, the gradient
(m entries: ∂f/∂z_i, then ∂f/∂t) and the Hessian's upper triangle, row by row (i ≤ j).

    words = [n_instructions, output registers (1 + m + m(m+1)/2), (op, a, b) × n_instructions]

Ops: ADD, SUB, MUL, DIV, NEG, POWI (integer power), POW (real power: base > 0, or 0), SQRT, SIN,
COS, TAN, ASIN, ACOS, ATAN, ATAN2, SINH, COSH, TANH, EXP, LOG — every function the parser admits
(`expression_parser.FUNCTIONS`) and what SymPy's differentiation of them produces. Outside a function's domain an
op gives NaN (never an exception, also in the pure-Python twin), and the caller reports a non-finite result.
The interpreter is `tape_jets_py` (below), the one implementation of the expression type's jets: compiled alone
for `ExpressionFunction.evaluate` and inlined into the joint jets kernel, which binds `INTERPRETER_CONSTANTS` (the
op codes and the limits) as constants: their values key its disk cache, so a renumbering here never meets a stale
compiled interpreter.

The tape is the expression type's only evaluation. Its length is bounded (`MAX_INSTRUCTIONS`, from the parser's
`MAX_NODES`); a longer tape, a node outside the op set, or a constant that is not a finite real number in the value or
its derivatives (0**A: log 0; (−2)**A: log of a negative number; A**1e300: an overflowing Hessian coefficient)
raises `UnsupportedExpression`, which `ExpressionFunction` reports as a ModelError on the `expression` attribute.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from biobullet.core import jit
from biobullet.functions.expression_parser import MAX_NODES

ADD, SUB, MUL, DIV, NEG, POWI, POW, SQRT = 0, 1, 2, 3, 4, 5, 6, 7
SIN, COS, TAN, ASIN, ACOS, ATAN, ATAN2, SINH, COSH, TANH, EXP, LOG = 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19
#: value, gradient and Hessian of a text of at most MAX_NODES syntax nodes: after CSE the three together are a few
#: times the value's size for the expressions we met (≈ 3× for the pendulum's); 20× leaves room and still bounds
#: the per-call work of a hostile file to microseconds
MAX_INSTRUCTIONS = 20 * MAX_NODES
#: |n| of an integer power evaluated by repeated squaring (larger exponents take the real power)
MAX_INTEGER_EXPONENT = 1 << 20
#: arguments above which exp / sinh, cosh overflow a double (the Python twin would raise OverflowError there)
EXP_LIMIT = 709.782712893384
HYPERBOLIC_LIMIT = 710.4758600739439
#: the interpreter's constants by name, for a kernel that inlines it to bind (`core.jit.compiled`'s `bind`)
INTERPRETER_CONSTANTS = {name: globals()[name] for name in (
    "ADD", "SUB", "MUL", "DIV", "NEG", "POWI", "POW", "SQRT", "SIN", "COS", "TAN", "ASIN", "ACOS", "ATAN", "ATAN2",
    "SINH", "COSH", "TANH", "EXP", "LOG", "EXP_LIMIT", "HYPERBOLIC_LIMIT")}


#: why a constant of the derivatives is not a finite real number, for the refusal message
NOT_REAL = (", not a finite real number (0 or a negative number raised to a variable power has no real derivative; "
            "a huge exponent overflows)")


class UnsupportedExpression(ValueError):
    """The value or a derivative cannot be taped: the message says why (the function refuses the expression)."""


def output_count(m: int) -> int:
    """Output registers of a tape over m variables: value, gradient (m), Hessian upper triangle."""
    return 1 + m + m * (m + 1) // 2


def compile_tape(replacements: Sequence[tuple[Any, Any]], reduced: Sequence[Any],
                 variables: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(words int64, constants float) of the tape evaluating the value, gradient (m) and Hessian (m × m, row-major)
    of a function of `variables` (m SymPy symbols, time last), given as sympy.cse's output for that list of
    1 + m + m² expressions. Raises `UnsupportedExpression` (a node outside the op set, a constant that is not a
    finite real number, or over `MAX_INSTRUCTIONS`)."""
    import sympy

    m = len(variables)
    if len(reduced) != 1 + m + m * m:
        raise ValueError(f"expected value, gradient and Hessian of {m} variables, got {len(reduced)} expressions")
    reduced = [*reduced[:1 + m], *(reduced[1 + m + i * m + j] for i in range(m) for j in range(i, m))]
    registers: dict[Any, int] = {v: k for k, v in enumerate(variables)}
    constants: list[float] = []
    constant_index: dict[float, int] = {}
    program: list[tuple[int, int, int]] = []

    def constant(number: float) -> int:
        if not math.isfinite(number):
            raise UnsupportedExpression(f"its derivatives contain the constant {number}{NOT_REAL}")
        if number not in constant_index:
            constant_index[number] = len(constants)
            constants.append(number)
        return -1 - constant_index[number]   # provisional (negative) until the constant count is known

    def emit(op: int, a: int, b: int = 0) -> int:
        if len(program) >= MAX_INSTRUCTIONS:
            raise UnsupportedExpression(f"its value, gradient and Hessian take more than {MAX_INSTRUCTIONS} "
                                        "instructions")
        program.append((op, a, b))
        return 1_000_000_000 + len(program) - 1   # provisional instruction register

    unary = {sympy.sin: SIN, sympy.cos: COS, sympy.tan: TAN, sympy.asin: ASIN, sympy.acos: ACOS,
             sympy.atan: ATAN, sympy.sinh: SINH, sympy.cosh: COSH, sympy.tanh: TANH, sympy.exp: EXP,
             sympy.log: LOG}

    def power(base: Any, exponent: Any) -> int:
        if exponent.is_Number:   # integer-valued exponents (also written 2.0) take POWI: negative bases are fine
            e = float(exponent)
            if e.is_integer() and abs(e) <= MAX_INTEGER_EXPONENT:
                if e < 0:
                    return emit(DIV, constant(1.0), emit(POWI, walk(base), int(-e)))
                return emit(POWI, walk(base), int(e))
            if abs(e) == 0.5:
                root = emit(SQRT, walk(base))
                return root if e > 0 else emit(DIV, constant(1.0), root)
        return emit(POW, walk(base), walk(exponent))

    def negated(term: Any) -> Any | None:
        """−term when term is a product with a negative numeric coefficient, else None."""
        coefficient, rest = term.as_coeff_Mul()
        if coefficient.is_Number and coefficient.is_extended_negative is True:   # zoo, nan: not negative
            return -coefficient * rest
        return None

    def walk(node: Any) -> int:
        found = registers.get(node)
        if found is not None:
            return found
        if not node.free_symbols:
            try:
                number = float(node)
            except (TypeError, ValueError, OverflowError):
                raise UnsupportedExpression(f"its derivatives contain {node}{NOT_REAL}") from None
            return constant(number)
        if node.is_Add:
            positive = [a for a in node.args if negated(a) is None]
            negative = [negated(a) for a in node.args if negated(a) is not None]
            if positive:
                out = walk(positive[0])
                for a in positive[1:]:
                    out = emit(ADD, out, walk(a))
                for a in negative:
                    out = emit(SUB, out, walk(a))
            else:
                out = walk(negative[0])
                for a in negative[1:]:
                    out = emit(ADD, out, walk(a))
                out = emit(NEG, out)
        elif node.is_Mul:
            coefficient, rest = node.as_coeff_Mul()
            factors = sympy.Mul.make_args(rest)
            inverse = [f.is_Pow and f.exp.is_Number and f.exp.is_extended_negative is True for f in factors]
            numerator = [f for f, inv in zip(factors, inverse) if not inv]
            denominator = [sympy.Pow(f.base, -f.exp) for f, inv in zip(factors, inverse) if inv]
            out = walk(numerator[0]) if numerator else None
            for f in numerator[1:]:
                out = emit(MUL, out, walk(f))
            if coefficient != 1 and coefficient != -1:
                out = constant(float(coefficient)) if out is None else emit(MUL, constant(float(coefficient)), out)
            if out is None:
                out = constant(1.0)
            for f in denominator:
                out = emit(DIV, out, walk(f))
            if coefficient == -1:
                out = emit(NEG, out)
        elif node.is_Pow:
            out = power(node.base, node.exp)
        elif node.func in unary and len(node.args) == 1:
            out = emit(unary[node.func], walk(node.args[0]))
        elif node.func is sympy.atan2 and len(node.args) == 2:
            out = emit(ATAN2, walk(node.args[0]), walk(node.args[1]))
        else:
            raise UnsupportedExpression(f"its derivatives contain {node.func.__name__}, which the evaluator does not "
                                        "support")
        registers[node] = out
        return out

    try:
        for symbol, expression in replacements:
            registers[symbol] = walk(expression)
        outputs = [walk(expression) for expression in reduced]
    except RecursionError:
        raise UnsupportedExpression("its derivatives are nested too deeply") from None
    except UnsupportedExpression:
        raise
    except (TypeError, ValueError, ArithmeticError) as exc:   # SymPy on an exotic node
        raise UnsupportedExpression(f"its derivatives cannot be evaluated ({type(exc).__name__}: {exc})") from None
    # final register numbers: variables, constants, then instruction k at m + n_const + k
    n_const = len(constants)

    def final(register: int) -> int:
        if register < 0:
            return m + (-1 - register)
        if register >= 1_000_000_000:
            return m + n_const + register - 1_000_000_000
        return register

    words = [len(program), *(final(r) for r in outputs)]
    for op, a, b in program:
        words.extend((op, final(a), b if op == POWI else final(b)))
    return np.array(words, dtype=np.int64), np.array(constants, dtype=float)


def value_first(words: list[int], m: int, n_const: int) -> list[int]:
    """A tape (module docstring) with the instructions the value needs moved first (in their order, then the others
    in theirs: both stay topologically ordered) and their count after the instruction count: [n_instructions,
    n_value, outputs, (op, a, b) …], so that the value alone is the prefix (`tape_jets_py` with a one-entry jet)."""
    n_ins, n_out = words[0], output_count(m)
    outputs, program = words[1:1 + n_out], words[1 + n_out:]
    first = m + n_const
    needed, stack = set(), [outputs[0]]
    while stack:
        register = stack.pop()
        k = register - first
        if k < 0 or k in needed:
            continue
        needed.add(k)
        op, a, b = program[3 * k:3 * k + 3]
        stack.append(a)
        if op in (ADD, SUB, MUL, DIV, POW, ATAN2):   # b a register (POWI's b is an exponent; unary ops' b is 0)
            stack.append(b)
    order = sorted(needed) + [k for k in range(n_ins) if k not in needed]
    new = {first + k: first + i for i, k in enumerate(order)}

    def moved(register: int) -> int:
        return new.get(register, register)

    out = [n_ins, len(needed), *(moved(r) for r in outputs)]
    for k in order:
        op, a, b = program[3 * k:3 * k + 3]
        out.extend((op, moved(a), moved(b) if op in (ADD, SUB, MUL, DIV, POW, ATAN2) else b))
    return out


def tape_jets_py(inputs, coef, i0, n_in, c0, nc, t, x, base_q, jet):
    """The expression type's one implementation: a value-first tape (`value_first`) whose words follow its n_in
    input indices in `inputs` (from i0), its constants in coef[c0 : c0 + nc], interpreted at z = (x[base_q +
    inputs[i0 + k]] …, t) into `jet` (f, f_z, upper triangle of f_zz), or into a `jet` of one entry the value f
    alone (the tape's value prefix): registers z (n_in), t, the constants, then one per instruction (outside a
    function's domain: NaN, never an exception, also in Python). `ExpressionFunction.evaluate` runs it compiled
    (`tape_jets`), the compiled joint jets (`model.joint_jets`, kind EXPRESSION) inline it."""
    m = n_in + 1
    p0 = i0 + n_in
    n_ins = inputs[p0] if jet.shape[0] > 1 else inputs[p0 + 1]
    o0 = p0 + 2
    w0 = o0 + 1 + m + m * (m + 1) // 2
    reg = np.empty(m + nc + n_ins)
    for k in range(n_in):
        reg[k] = x[base_q + inputs[i0 + k]]
    reg[n_in] = t
    for k in range(nc):
        reg[m + k] = coef[c0 + k]
    dest = m + nc
    for k in range(n_ins):
        op, a, b = inputs[w0 + 3 * k], inputs[w0 + 3 * k + 1], inputs[w0 + 3 * k + 2]
        u = reg[a]
        # outside a function's domain: NaN (never an exception, also in the Python twin)
        if op == ADD:
            v = u + reg[b]
        elif op == SUB:
            v = u - reg[b]
        elif op == MUL:
            v = u * reg[b]
        elif op == DIV:
            w = reg[b]
            v = u / w if w != 0.0 else np.nan
        elif op == NEG:
            v = -u
        elif op == POWI:   # b = the exponent ≥ 0 (negative powers are 1 / POWI): repeated squaring
            v = 1.0
            e = b
            base = u
            while e > 0:
                if e & 1:
                    v *= base
                base *= base
                e >>= 1
        elif op == POW:    # real power of a base ≥ 0 (a negative base: not a real number)
            w = reg[b]
            if u > 0.0:
                v = u ** w if w * np.log(u) <= EXP_LIMIT else np.inf
            elif u == 0.0:
                v = 0.0 if w > 0.0 else (1.0 if w == 0.0 else np.inf)
            else:
                v = np.nan
        elif op == SQRT:
            v = np.sqrt(u) if u >= 0.0 else np.nan
        elif op == EXP:
            v = np.exp(u) if u <= EXP_LIMIT else np.inf
        elif op == LOG:
            v = np.log(u) if u > 0.0 else np.nan
        elif op == ATAN2:
            v = np.arctan2(u, reg[b])
        elif not np.isfinite(u):
            v = np.nan
        elif op == SIN:
            v = np.sin(u)
        elif op == COS:
            v = np.cos(u)
        elif op == TAN:
            v = np.tan(u)
        elif op == ASIN:
            v = np.arcsin(u) if abs(u) <= 1.0 else np.nan
        elif op == ACOS:
            v = np.arccos(u) if abs(u) <= 1.0 else np.nan
        elif op == ATAN:
            v = np.arctan(u)
        elif op == SINH:
            v = np.sinh(u) if abs(u) <= HYPERBOLIC_LIMIT else np.inf
        elif op == COSH:
            v = np.cosh(u) if abs(u) <= HYPERBOLIC_LIMIT else np.inf
        elif op == TANH:
            v = np.tanh(u)
        else:
            v = np.nan
        reg[dest + k] = v
    for k in range(jet.shape[0]):
        jet[k] = reg[inputs[o0 + k]]


#: `tape_jets_py` compiled on its first call (its Python form where numba is switched off)
tape_jets = jit.lazy(tape_jets_py)
