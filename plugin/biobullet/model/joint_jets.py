"""Compiled jets of explicit joint functions: θ, G, θ̇, γ of the dependent joints (`_explicit_jets_py`) and,
from the same kernel, the constraint rows θ_d − f(z, t) with Φ_x, Φ_t and the velocity bias (`_function_rows_py`).

One implementation shared by the reference engine's compiled right-hand side (`integrate.compiled_rhs`) and the
constraint rows of `constraints.equations` (the multiplier formulation and the PyBullet bridge). The kernel packs
the built-in types into one table and dispatches each row to its type's own jets kernel, which lives with the type
in `functions` and is what the type's `evaluate` runs: `polynomial_jets_py`, `linear_jets_py`, `spline_jets_py`,
`fourier_jets_py` and the expression tape's interpreter `expression_tape.tape_jets_py` (data, no generated code);
this module adds the chain rule through the input joints. Third-party types without compiled jets stay on the
callback stage: `function_table` returns None for a set that has one. A non-finite expression result (outside a function's domain, a pole, overflow) makes
the kernels return their failure status; the callback stage then raises its EvaluationError.
"""
from __future__ import annotations

import numpy as np

from typing import NamedTuple

from biobullet.core import jit
from biobullet.functions.expression_tape import INTERPRETER_CONSTANTS, tape_jets_py, value_first
from biobullet.functions.fourier import fourier_jets_py
from biobullet.functions.linear import linear_jets_py
from biobullet.functions.polynomial import polynomial_jets_py
from biobullet.functions.spline import spline_jets_py

# Joint functions evaluated inside the kernel (table column 0): polynomial, linear, cubic spline, Fourier driver,
# expression (tape). Third-party types stay on the callback stage: `function_table` returns None for them.
POLYNOMIAL, LINEAR, SPLINE, FOURIER, EXPRESSION = 0, 1, 2, 3, 4
# A third-party type with compiled jets (`JointFunction.compiled_jets`): called by its address (in `inputs` after
# the input joints), its parameters are the row's coefficients.
PLUGIN = 5

#: each built-in type's jets kernel (functions/), by the name `_explicit_jets_py` calls it; bound (inlined) into
#: every compiled variant, and the callees of its Python form
_TYPE_KERNELS = {"_POLYNOMIAL": polynomial_jets_py, "_LINEAR": linear_jets_py, "_SPLINE": spline_jets_py,
                 "_FOURIER": fourier_jets_py}
_POLYNOMIAL, _LINEAR, _SPLINE, _FOURIER = polynomial_jets_py, linear_jets_py, spline_jets_py, fourier_jets_py
# the Python form evaluates every kind; `jets_kernel` binds the compiled tape interpreter and plug-in caller
_TAPE = tape_jets_py


def jets_kernel():
    """The compiled `_explicit_jets_py` (every kind of row: one kernel for every table). Every compiled caller
    takes it from here."""
    return jit.compiled(_explicit_jets_py, bind=_jets_bindings)


def _jets_bindings() -> dict:
    """The callees of `_explicit_jets_py` with every kind of row: the types' kernels, the tape interpreter (with
    its op codes and limits as constants: they key the disk cache) and the plug-in caller."""
    from biobullet.functions.base import JETS_KERNEL_SIGNATURE
    return {**_TYPE_KERNELS, **INTERPRETER_CONSTANTS, "_TAPE": tape_jets_py,
            "_CALL_JETS": jit.address_caller(JETS_KERNEL_SIGNATURE)}


def _explicit_jets_py(table, inputs, coef, t, base_q, base_v, x, xd, gradient, gamma):
    """Fill θ, G, θ̇, γ of the dependent joints in place, in table order (each function's inputs are set
    before it): θ = f(z, t), G = f_z G_z, θ̇ = f_z ż + f_t, γ = f_z γ_z + żᵀ f_zz ż + 2 f_zt·ż + f_tt.
    A gradient of no columns asks for θ alone (an expression then runs its tape's value prefix only).
    table rows: (type, output joint, first input in `inputs`, input count, first coefficient, coefficient count);
    an EXPRESSION row's tape words follow its input joints in `inputs`, its constants are its coefficients.
    Returns 0, or 1 when an expression's value or derivatives are not finite (θ, G, … then partly written)."""
    nv = gradient.shape[1]
    for r in range(table.shape[0]):
        kind, out, i0, n_in, c0, nc = table[r, 0], table[r, 1], table[r, 2], table[r, 3], table[r, 4], table[r, 5]
        xo, vo = base_q + out, base_v + out
        if kind == EXPRESSION or kind == PLUGIN:
            m = n_in + 1
            # f, f_z (z = inputs, t), upper triangle of f_zz; f alone when no gradient is asked (nv = 0)
            jet = np.empty(1 + m + m * (m + 1) // 2 if nv > 0 or kind == PLUGIN else 1)
            if kind == PLUGIN:
                z = np.empty(m)
                for k in range(n_in):
                    z[k] = x[base_q + inputs[i0 + k]]
                z[n_in] = t
                if _CALL_JETS(inputs[i0 + n_in])(z, coef[c0:c0 + nc], jet) != 0:
                    return 1
            else:
                _TAPE(inputs, coef, i0, n_in, c0, nc, t, x, base_q, jet)
            for k in range(jet.shape[0]):
                if not np.isfinite(jet[k]):
                    return 1
            if nv == 0:   # the value alone (`_function_values_py`)
                x[xo] = jet[0]
                continue
            # θ = f; θ̇ = Σ f_i ż_i + f_t; G = Σ f_i G_i; γ = Σ f_i γ_i + Σ_ij f_ij ż_i ż_j + 2 Σ_i f_it ż_i + f_tt
            rate = jet[m]
            acc = 0.0
            for c in range(nv):
                gradient[vo, c] = 0.0
            for i in range(n_in):
                j = base_v + inputs[i0 + i]
                g = jet[1 + i]
                rate += g * xd[j]
                acc += g * gamma[j]
                for c in range(nv):
                    gradient[vo, c] += g * gradient[j, c]
            h = 1 + m
            for i in range(m):
                zi = xd[base_v + inputs[i0 + i]] if i < n_in else 1.0
                for k in range(i, m):
                    zk = xd[base_v + inputs[i0 + k]] if k < n_in else 1.0
                    acc += (1.0 if k == i else 2.0) * jet[h] * zi * zk
                    h += 1
            x[xo], xd[vo], gamma[vo] = jet[0], rate, acc
            continue
        if kind == LINEAR:   # θ = offset + a·z: G, θ̇, γ the same combination of the inputs' (chain rule)
            value = _LINEAR(coef, c0, n_in, x, base_q, inputs, i0)
            rate = 0.0
            acc = 0.0
            for c in range(nv):
                gradient[vo, c] = 0.0
            for m in range(n_in):
                a = coef[c0 + m]
                j = base_v + inputs[i0 + m]
                rate += a * xd[j]
                acc += a * gamma[j]
                for c in range(nv):
                    gradient[vo, c] += a * gradient[j, c]
            x[xo], xd[vo], gamma[vo] = value, rate, acc
            continue
        if kind == FOURIER:   # θ(t)
            x[xo], xd[vo], gamma[vo] = _FOURIER(coef, c0, nc, t)
            for c in range(nv):
                gradient[vo, c] = 0.0
            continue
        j = inputs[i0]
        z = x[base_q + j]
        if kind == POLYNOMIAL:
            f, d1, d2 = _POLYNOMIAL(coef, c0, nc, z)
        else:
            f, d1, d2 = _SPLINE(coef, c0, nc, z)
        zd = xd[base_v + j]
        x[xo] = f
        xd[vo] = d1 * zd
        gamma[vo] = d1 * gamma[base_v + j] + d2 * zd * zd
        for c in range(nv):
            gradient[vo, c] = d1 * gradient[base_v + j, c]
    return 0


def explicit_table(cmap) -> FunctionTable | None:
    """(table, inputs, coefficients) of a coordinate map made only of explicit polynomial, linear, spline,
    Fourier and expression joint functions (in evaluation order), or None when any resolver is of another kind."""
    from biobullet.model.coordinates import ExplicitFunction

    if any(type(resolver) is not ExplicitFunction for resolver in cmap.resolvers):
        return None
    return function_table((r.output, r.inputs, r.function) for r in cmap.resolvers)


class FunctionTable(NamedTuple):
    """Joint functions packed for the jets kernels (`function_table`): table rows (type, output joint, first input
    in `inputs`, input count, first coefficient, coefficient count), the input joints (an expression's tape words
    after its inputs) and the coefficients (int64 (r, 6), int64, float64)."""
    table: np.ndarray
    inputs: np.ndarray
    coef: np.ndarray


def function_table(entries) -> FunctionTable | None:
    """`FunctionTable` (table, inputs, coefficients) for `_explicit_jets_py` / `_function_rows_py` from (output joint, input
    joints, JointFunction) triples (joint slots in the tree's joint order), or None when a function is of a type
    the kernel does not evaluate (third-party plug-ins without compiled jets)."""
    from biobullet.functions.expression import ExpressionFunction
    from biobullet.functions.fourier import FourierFunction
    from biobullet.functions.linear import LinearFunction
    from biobullet.functions.polynomial import PolynomialFunction
    from biobullet.functions.spline import SplineFunction

    rows, inputs, coef = [], [], []
    for output, joint_inputs, f in entries:
        kind = type(f)
        joint_inputs = [int(j) for j in joint_inputs]
        start_in, start_c = len(inputs), len(coef)
        inputs.extend(joint_inputs)
        if kind is PolynomialFunction and len(joint_inputs) == 1:
            coef.extend(float(c) for c in f.coefficients)
            rows.append((POLYNOMIAL, output, start_in, 1, start_c, len(f.coefficients)))
        elif kind is LinearFunction:
            coef.extend(f.jet_parameters)   # the coefficients, then the offset
            rows.append((LINEAR, output, start_in, len(joint_inputs), start_c, len(f.coefficients)))
        elif kind is SplineFunction and len(joint_inputs) == 1:
            coef.extend(f.jet_parameters)
            rows.append((SPLINE, output, start_in, 1, start_c, f.n_breaks))
        elif kind is FourierFunction and not joint_inputs:
            coef.extend(f.jet_parameters)
            rows.append((FOURIER, output, start_in, 0, start_c, len(f.a)))
        elif kind is ExpressionFunction:
            words, constants = f.tape
            # the tape after the input joints
            inputs.extend(value_first([int(w) for w in words], len(joint_inputs) + 1, len(constants)))
            coef.extend(float(c) for c in constants)
            rows.append((EXPRESSION, output, start_in, len(joint_inputs), start_c, len(constants)))
        else:
            address, params = _plugin_jets(f)
            if address is None:
                return None
            inputs.append(address)   # after the input joints
            coef.extend(float(c) for c in params)
            rows.append((PLUGIN, output, start_in, len(joint_inputs), start_c, len(params)))
    return FunctionTable(np.array(rows, dtype=np.int64).reshape(-1, 6), np.array(inputs, dtype=np.int64),
                         np.array(coef, dtype=float))




def _function_rows_py(table, inputs, coef, t, base_q, base_v, x, xd, phi, jac, phi_t, bias):
    """The constraint rows Φ_r = θ_out − f(z, t) of the table's functions at the tree state (x, ẋ), each row
    from the ACTUAL state of its inputs (a function whose input is another function's output is its own row, as
    in `constraints.equations`): Φ (m), Φ_x (m × n_tangent, columns in ẋ), Φ_t = −f_t and the velocity bias
    b = −(żᵀ f_zz ż + 2 f_zt·ż + f_tt) (Φ̈ = Φ_x ẍ + b), written into phi, jac, phi_t, bias.
    Returns max |Φ̇| (Φ̇ = Φ_x ẋ + Φ_t), or −1 when a function's jets are not finite (the rows are then not
    usable: the caller takes the callback stage, which reports the expression's EvaluationError)."""
    n = xd.shape[0]
    scratch_x = x.copy()
    scratch_xd = xd.copy()
    gradient = np.zeros((n, n))
    for c in range(n):
        gradient[c, c] = 1.0
    gamma = np.zeros(n)
    worst = 0.0
    for r in range(table.shape[0]):
        if _JETS(table[r:r + 1], inputs, coef, t, base_q, base_v, scratch_x, scratch_xd, gradient, gamma) != 0:
            return -1.0
        xo, vo = base_q + table[r, 1], base_v + table[r, 1]
        phi[r] = x[xo] - scratch_x[xo]
        s = 0.0
        for c in range(n):
            g = gradient[vo, c]
            jac[r, c] = -g
            s += g * xd[c]
        jac[r, vo] += 1.0
        phi_t[r] = s - scratch_xd[vo]          # −f_t: θ̇_f = f_z ż + f_t
        bias[r] = -gamma[vo]
        rate = xd[vo] - scratch_xd[vo]          # Φ̇ = θ̇_out − f_z ż − f_t
        if abs(rate) > worst:
            worst = abs(rate)
        # restore the work arrays: the next row reads the actual state of its inputs (not f of an earlier row)
        scratch_x[xo] = x[xo]
        scratch_xd[vo] = xd[vo]
        for c in range(n):
            gradient[vo, c] = 0.0
        gradient[vo, vo] = 1.0
        gamma[vo] = 0.0
    return worst


def _function_values_py(functions, t, x, phi):
    """Φ_r = θ_out − f(z, t) alone (no derivatives: an expression runs its tape's value prefix) of a fixed-base
    tree configuration x, each row from the actual state of its inputs as in `_function_rows_py`, into phi;
    max |Φ|, or −1 when a value is not finite (the bridge's step-end check)."""
    table = functions.table
    scratch = x.copy()
    no_gradient = np.zeros((x.shape[0], 0))
    no_rate = np.zeros(x.shape[0])
    worst = 0.0
    for r in range(table.shape[0]):
        # int(0): a bare 0 is typed as a literal and compiles the jets kernel once more for it
        if _JETS(table[r:r + 1], functions.inputs, functions.coef, t, int(0), int(0), scratch, no_rate, no_gradient,
                 no_rate) != 0:
            return -1.0
        out = table[r, 1]
        phi[r] = x[out] - scratch[out]
        scratch[out] = x[out]   # the next row reads the actual state of its inputs
        if abs(phi[r]) > worst:
            worst = abs(phi[r])
    return worst


def function_values_kernel():
    """The compiled `_function_values_py` (with the jets kernel bound; its Python form with BIOBULLET_NUMBA=0)."""
    return jit.compiled(_function_values_py, bind=lambda: {"_JETS": jets_kernel()})


def function_rows_kernel():
    """The compiled `_function_rows_py` (with the jets kernel bound)."""
    return jit.compiled(_function_rows_py, bind=lambda: {"_JETS": jets_kernel()})


def function_rows(table, inputs, coef, t, base_q, base_v, x, xd, phi, jac, phi_t, bias) -> float:
    """`_function_rows_py` (compiled; its uncompiled form with BIOBULLET_NUMBA=0); −1 when a function's jets
    are not finite."""
    return function_rows_kernel()(table, inputs, coef, float(t), int(base_q), int(base_v), x, xd, phi, jac, phi_t,
                                  bias)


def _plugin_jets(function) -> tuple[int | None, np.ndarray]:
    """(address, parameters) of a third-party joint function's compiled jets (`JointFunction.compiled_jets`), or
    (None, …): no kernel, or the kernel does not compile (one RuntimeWarning naming it, `core.jit`)."""
    from biobullet.functions.base import JETS_KERNEL_SIGNATURE
    kernel = function.compiled_jets() if hasattr(function, "compiled_jets") else None
    if kernel is None:
        return None, np.zeros(0)
    address = jit.function_address(kernel.function, JETS_KERNEL_SIGNATURE, bind=kernel.bind,
                                   plugin=f"joint function type {type(function).__qualname__}")
    if address is None:
        return None, np.zeros(0)
    return address, np.ascontiguousarray(kernel.params, dtype=float).reshape(-1)
