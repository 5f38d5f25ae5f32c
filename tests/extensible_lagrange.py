"""Independent Lagrange derivation (SymPy) of the extensible anthropomorph, for the tests.

Built only from the geometry of the paper's eqs. (1)/(10): hip (x, y); a leg link's proximal joint is the hip or
the distal end of its proximal neighbour, the link points along −e_i, its COM lies (1 − n_i) l_i from the proximal
joint; the trunk points along +e_i with the COM at n_i l_i. T = ½ Σ m |ṙ_C|² + ½ Σ I_i(t) φ̇_i²,
V = g Σ m y_C + ½ Σ k (l − L0)²; dissipation c l̇ (Rayleigh). Lagrange: M = ∂²T/∂q̇², and
h = (∂p/∂q) q̇ + ∂p/∂t − ∂T/∂q + ∂V/∂q + c l̇ with p = ∂T/∂q̇ (∂p/∂t = İ φ̇ in the φ rows).
Nothing here uses the library's K, μ or closed forms. One derivation per chain shape (k1, k2, k3), lambdified
(with common-subexpression elimination) and cached.
"""
from __future__ import annotations

import functools

import numpy as np
import sympy as sp


@functools.cache
def derive(k1: int, k2: int, k3: int):
    """Return f(q, v, params) -> (M, h) for chain sizes (leg 1, leg 2, trunk), paper numbering.

    params: dict of arrays m, n, L0, k, c, I, Idot (length n_links) and g."""
    n = k1 + k2 + k3
    x, y = sp.symbols("x y")
    phi = sp.symbols(f"phi1:{n + 1}")
    l = sp.symbols(f"l1:{n + 1}")
    xd, yd = sp.symbols("xd yd")
    phid = sp.symbols(f"phid1:{n + 1}")
    ld = sp.symbols(f"ld1:{n + 1}")
    m = sp.symbols(f"m1:{n + 1}")
    nn = sp.symbols(f"n1:{n + 1}")
    I = sp.symbols(f"I1:{n + 1}")
    Id = sp.symbols(f"Id1:{n + 1}")
    k = sp.symbols(f"k1:{n + 1}")
    L0 = sp.symbols(f"L01:{n + 1}")
    c = sp.symbols(f"c1:{n + 1}")
    g = sp.Symbol("g")
    q = [x, y, *phi, *l]
    qd = [xd, yd, *phid, *ld]
    # chains from the hip outwards, in paper indices (0-based)
    leg1 = list(range(k1 - 1, -1, -1))
    leg2 = list(range(k1, k1 + k2))
    trunk = list(range(k1 + k2, n))
    com = {}
    for chain, sign in ((leg1, -1), (leg2, -1), (trunk, 1)):
        jx, jy = x, y                         # proximal joint of the current link
        for i in chain:
            frac = (1 - nn[i]) if sign < 0 else nn[i]
            com[i] = (jx + sign * frac * l[i] * sp.cos(phi[i]), jy + sign * frac * l[i] * sp.sin(phi[i]))
            jx, jy = jx + sign * l[i] * sp.cos(phi[i]), jy + sign * l[i] * sp.sin(phi[i])
    # velocities by the chain rule on the position expressions
    T = 0
    V = 0
    for i in range(n):
        vx = sum(sp.diff(com[i][0], qi) * qdi for qi, qdi in zip(q, qd))
        vy = sum(sp.diff(com[i][1], qi) * qdi for qi, qdi in zip(q, qd))
        T += sp.Rational(1, 2) * m[i] * (vx ** 2 + vy ** 2) + sp.Rational(1, 2) * I[i] * phid[i] ** 2
        V += g * m[i] * com[i][1] + sp.Rational(1, 2) * k[i] * (l[i] - L0[i]) ** 2
    p = sp.Matrix([sp.diff(T, a) for a in qd])
    M = p.jacobian(qd)
    dpdt = sp.Matrix([0, 0, *[Id[i] * phid[i] for i in range(n)], *[0] * n])   # ∂p/∂t through I(t)
    h = (p.jacobian(q) * sp.Matrix(qd) + dpdt - sp.Matrix([sp.diff(T, a) for a in q])
         + sp.Matrix([sp.diff(V, a) for a in q]) + sp.Matrix([0, 0, *[0] * n, *[c[i] * ld[i] for i in range(n)]]))
    args = [q, qd, m, nn, I, Id, k, L0, c, g]
    fM = sp.lambdify(args, M, modules="numpy", cse=True)
    fh = sp.lambdify(args, h, modules="numpy", cse=True)

    def evaluate(qv, vv, P):
        a = [list(qv), list(vv), list(P["m"]), list(P["n"]), list(P["I"]), list(P["Idot"]), list(P["k"]),
             list(P["L0"]), list(P["c"]), P["g"]]
        return np.array(fM(*a), dtype=float), np.array(fh(*a), dtype=float).reshape(-1)
    return evaluate
