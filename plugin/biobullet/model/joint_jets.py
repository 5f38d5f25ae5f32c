"""Compiled jets of explicit joint functions: θ, G, θ̇, γ of the dependent joints (`_explicit_jets_py`) and,
from the same kernel, the constraint rows θ_d − f(z, t) with Φ_x, Φ_t and the velocity bias (`_function_rows_py`).

One implementation shared by the reference engine's compiled right-hand side (`integrate.compiled_rhs`) and the
constraint rows of `constraints.equations` (the multiplier formulation and the PyBullet bridge). Types evaluated
here: polynomial, linear, cubic spline, Fourier driver. `expression` functions (and any third-party type) stay on
the generic path: `function_table` returns None for a set that has one.
"""
from __future__ import annotations

import numpy as np

from biobullet.core import jit

# Joint functions evaluated inside the kernel (table column 0): polynomial, linear, cubic spline, Fourier driver.
# `expression` functions (and any third-party type) stay on the generic path: `CompiledExplicitRHS.for_system`
# returns None for a model that has one.
POLYNOMIAL, LINEAR, SPLINE, FOURIER = 0, 1, 2, 3
_FREE_QUATERNION = 3   # x[3:7] = (qx, qy, qz, qw) of a floating base (Model convention)


def _explicit_jets_py(table, inputs, coef, t, base_q, base_v, x, xd, gradient, gamma):
    """Fill θ, G, θ̇, γ of the dependent joints in place, in table order (each function's inputs are set
    before it): θ = f(z, t), G = f_z G_z, θ̇ = f_z ż + f_t, γ = f_z γ_z + żᵀ f_zz ż (+ f_tt for drivers).
    table rows: (type, output joint, first input in `inputs`, input count, first coefficient, coefficient count)."""
    nv = gradient.shape[1]
    for r in range(table.shape[0]):
        kind, out, i0, n_in, c0, nc = table[r, 0], table[r, 1], table[r, 2], table[r, 3], table[r, 4], table[r, 5]
        xo, vo = base_q + out, base_v + out
        if kind == LINEAR:
            value = coef[c0 + n_in]   # the offset follows the coefficients
            rate = 0.0
            acc = 0.0
            for c in range(nv):
                gradient[vo, c] = 0.0
            for m in range(n_in):
                a = coef[c0 + m]
                j = inputs[i0 + m]
                value += a * x[base_q + j]
                rate += a * xd[base_v + j]
                acc += a * gamma[base_v + j]
                for c in range(nv):
                    gradient[vo, c] += a * gradient[base_v + j, c]
            x[xo], xd[vo], gamma[vo] = value, rate, acc
            continue
        if kind == FOURIER:   # θ(t): a0, then (ω_k, a_k, b_k) per harmonic
            value = coef[c0]
            rate = 0.0
            acc = 0.0
            for k in range(nc):
                w, a, b = coef[c0 + 1 + 3 * k], coef[c0 + 2 + 3 * k], coef[c0 + 3 + 3 * k]
                cs, sn = np.cos(w * t), np.sin(w * t)
                value += a * cs + b * sn
                rate += w * (b * cs - a * sn)
                acc -= w * w * (a * cs + b * sn)
            for c in range(nv):
                gradient[vo, c] = 0.0
            x[xo], xd[vo], gamma[vo] = value, rate, acc
            continue
        j = inputs[i0]
        z = x[base_q + j]
        if kind == POLYNOMIAL:   # Horner for f, f', f'' (ascending coefficients)
            f = 0.0
            d1 = 0.0
            d2 = 0.0
            for k in range(nc - 1, -1, -1):
                d2 = d2 * z + 2.0 * d1
                d1 = d1 * z + f
                f = f * z + coef[c0 + k]
        else:   # SPLINE: nc breaks, then (nc − 1) pieces (c3, c2, c1, c0) in s = z − break; end pieces continued
            piece = 0
            while piece < nc - 2 and z >= coef[c0 + piece + 1]:
                piece += 1
            s = z - coef[c0 + piece]
            base = c0 + nc + 4 * piece
            a3, a2, a1, a0 = coef[base], coef[base + 1], coef[base + 2], coef[base + 3]
            f = ((a3 * s + a2) * s + a1) * s + a0
            d1 = (3.0 * a3 * s + 2.0 * a2) * s + a1
            d2 = 6.0 * a3 * s + 2.0 * a2
        zd = xd[base_v + j]
        x[xo] = f
        xd[vo] = d1 * zd
        gamma[vo] = d1 * gamma[base_v + j] + d2 * zd * zd
        for c in range(nv):
            gradient[vo, c] = d1 * gradient[base_v + j, c]


def explicit_table(cmap) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(table, inputs, coefficients) of a coordinate map made only of explicit polynomial, linear, spline and
    Fourier joint functions (in evaluation order), or None when any resolver is of another kind."""
    from biobullet.model.coordinates import ExplicitFunction

    if any(type(resolver) is not ExplicitFunction for resolver in cmap.resolvers):
        return None
    return function_table((r.output, r.inputs, r.function) for r in cmap.resolvers)


def function_table(entries) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(table, inputs, coefficients) for `_explicit_jets_py` / `_function_rows_py` from (output joint, input
    joints, JointFunction) triples (joint slots in the tree's joint order), or None when a function is of a type
    the kernel does not evaluate (expression, third-party plug-ins)."""
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
            coef.extend(float(c) for c in f.coefficients)
            coef.append(float(f.offset))
            rows.append((LINEAR, output, start_in, len(joint_inputs), start_c, len(f.coefficients)))
        elif kind is SplineFunction and len(joint_inputs) == 1:
            coef.extend(float(b) for b in f._breaks)
            for piece in f._coefficients:
                coef.extend(float(c) for c in piece)
            rows.append((SPLINE, output, start_in, 1, start_c, len(f._breaks)))
        elif kind is FourierFunction and not joint_inputs:
            coef.append(float(f.a0))
            for w, a, b in zip(f._omega_k, f.a, f.b):
                coef.extend((float(w), float(a), float(b)))
            rows.append((FOURIER, output, start_in, 0, start_c, len(f.a)))
        else:
            return None
    return (np.array(rows, dtype=np.int64).reshape(-1, 6), np.array(inputs, dtype=np.int64),
            np.array(coef, dtype=float))


_JETS = None   # the compiled `_explicit_jets_py`, bound as this global before `_function_rows_py` compiles


def _function_rows_py(table, inputs, coef, t, base_q, base_v, x, xd, phi, jac, phi_t, bias):
    """The constraint rows Φ_r = θ_out − f(z, t) of the table's functions at the tree state (x, ẋ), each row
    from the ACTUAL state of its inputs (a function whose input is another function's output is its own row, as
    in `constraints.equations`): Φ (m), Φ_x (m × n_tangent, columns in ẋ), Φ_t = −f_t and the velocity bias
    b = −(żᵀ f_zz ż + f_tt) (Φ̈ = Φ_x ẍ + b), written into phi, jac, phi_t, bias.
    Returns max |Φ̇| (Φ̇ = Φ_x ẋ + Φ_t)."""
    n = xd.shape[0]
    scratch_x = x.copy()
    scratch_xd = xd.copy()
    gradient = np.zeros((n, n))
    for c in range(n):
        gradient[c, c] = 1.0
    gamma = np.zeros(n)
    worst = 0.0
    for r in range(table.shape[0]):
        _JETS(table[r:r + 1], inputs, coef, t, base_q, base_v, scratch_x, scratch_xd, gradient, gamma)
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


def function_rows_kernel():
    """The compiled `_function_rows_py` (with the jets kernel bound), or None (numba missing or disabled)."""
    return jit.compiled(_function_rows_py, bind={"_JETS": _explicit_jets_py})


def function_rows(table, inputs, coef, t, base_q, base_v, x, xd, phi, jac, phi_t, bias) -> float:
    """`_function_rows_py`, compiled when numba is enabled, else its Python twin (same numbers)."""
    global _JETS
    kernel = function_rows_kernel()
    if kernel is not None:
        return kernel(table, inputs, coef, float(t), int(base_q), int(base_v), x, xd, phi, jac, phi_t, bias)
    _JETS = _explicit_jets_py
    return _function_rows_py(table, inputs, coef, float(t), int(base_q), int(base_v), x, xd, phi, jac, phi_t, bias)
