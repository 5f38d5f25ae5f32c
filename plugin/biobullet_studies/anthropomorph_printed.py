"""The general mass-matrix formulas (39)–(48) of paper 004 exactly as printed, for comparison only.

Read from the original text (original/004_*.txt). Paper indices are 1-based: leg 1 = 1…k (foot → hip), leg 2 =
k+1…k+p, trunk = k+p+1…n; matrix row/column j ↔ link j − 2. Literal readings:
  (40) a_{1,j} =  l (Σ_{γ=j−2}^{j−k} m_γ − m n) sin φ        (leg 1)   (43) a_{2,j} = −l (same sum) cos φ
  (41) a_{1,j} =  l (Σ_{γ=j−2}^{last of leg 2} m_γ − m n) sin φ (leg 2)  (44) a_{2,j} = −l (same) cos φ
  (42) a_{1,j} = −l (Σ_{γ=j−1}^{n} m_γ + m n) sin φ            (trunk)   (45) a_{2,j} =  l (same) cos φ
  (46) leg 1 block: δ_ij l_a + l_a l_b (m_b (1−n_b) δ̃ + Σ_{γ=a}^{k} m_γ) cos(φ_a − φ_b), δ̃ = (1 − n_b) if a = b
       else 0  (a = i − 2, b = j − 2)
  (47) leg 2 block: the same with Σ_{γ=a}^{last of leg 2}
  (48) trunk block: δ_ij l_a + l_a l_b (m_b n_b δ̃ + Σ_{γ=a+1}^{n} m_γ) cos(φ_a − φ_b), δ̃ = n_a if a = b else 1
An empty sum (lower limit above the upper, the paper's note after (42)) is 0. "δ_ij l" is printed where the
moment of inertia I belongs; `inertia_typo_fixed=True` reads it as δ_ij I_a, to separate that typo from the
wrong mass sums. (41), (42), (44), (45) agree with the corrected recursion; (40), (43), (46), (47), (48) do not.
"""
from __future__ import annotations

import numpy as np

from biobullet.extensible.chain_model import ChainModel


def _sum(m: np.ndarray, lo: int, hi: int) -> float:
    """Σ_{γ=lo}^{hi} m_γ with 1-based γ; 0 if lo > hi."""
    return float(m[lo - 1:hi].sum()) if lo <= hi else 0.0


def printed_mass_matrix_blocks(model: ChainModel, q: np.ndarray, t: float = 0.0, *,
                               inertia_typo_fixed: bool = False) -> dict[str, np.ndarray]:
    """The printed formulas, keyed '40'…'48': row vectors for (40)–(45) over the chain's links, square blocks for
    (46)–(48) over the chain's links (paper order)."""
    n = model.n_links
    k, p2, _ = model.chain_sizes
    last2 = k + p2
    m = model.masses
    nn = np.array([lk.n for lk in model.links])
    phi, l = q[2:2 + n], q[2 + n:]
    inertia = model.inertia(t)
    leg1, leg2, trunk = range(1, k + 1), range(k + 1, last2 + 1), range(last2 + 1, n + 1)
    out: dict[str, np.ndarray] = {}
    s40 = np.array([_sum(m, a, a + 2 - k) - m[a - 1] * nn[a - 1] for a in leg1])
    out["40"] = np.array([l[a - 1] * s40[i] * np.sin(phi[a - 1]) for i, a in enumerate(leg1)])
    out["43"] = np.array([-l[a - 1] * s40[i] * np.cos(phi[a - 1]) for i, a in enumerate(leg1)])
    s41 = np.array([_sum(m, a, last2) - m[a - 1] * nn[a - 1] for a in leg2])
    out["41"] = np.array([l[a - 1] * s41[i] * np.sin(phi[a - 1]) for i, a in enumerate(leg2)])
    out["44"] = np.array([-l[a - 1] * s41[i] * np.cos(phi[a - 1]) for i, a in enumerate(leg2)])
    s42 = np.array([_sum(m, a + 1, n) + m[a - 1] * nn[a - 1] for a in trunk])
    out["42"] = np.array([-l[a - 1] * s42[i] * np.sin(phi[a - 1]) for i, a in enumerate(trunk)])
    out["45"] = np.array([l[a - 1] * s42[i] * np.cos(phi[a - 1]) for i, a in enumerate(trunk)])

    def diag_term(a: int) -> float:
        return inertia[a - 1] if inertia_typo_fixed else l[a - 1]

    def block(indices, inner) -> np.ndarray:
        idx = list(indices)
        B = np.zeros((len(idx), len(idx)))
        for i, a in enumerate(idx):
            for j, b in enumerate(idx):
                B[i, j] = ((diag_term(a) if a == b else 0.0)
                           + l[a - 1] * l[b - 1] * inner(a, b) * np.cos(phi[a - 1] - phi[b - 1]))
        return B

    out["46"] = block(leg1, lambda a, b: m[b - 1] * (1 - nn[b - 1]) * ((1 - nn[b - 1]) if a == b else 0.0)
                      + _sum(m, a, k))
    out["47"] = block(leg2, lambda a, b: m[b - 1] * (1 - nn[b - 1]) * ((1 - nn[b - 1]) if a == b else 0.0)
                      + _sum(m, a, last2))
    out["48"] = block(trunk, lambda a, b: m[b - 1] * nn[b - 1] * (nn[a - 1] if a == b else 1.0) + _sum(m, a + 1, n))
    return out


def corrected_blocks(model: ChainModel, M: np.ndarray) -> dict[str, np.ndarray]:
    """The same entries taken from a mass matrix M of the corrected recursion (or any Lagrange derivation)."""
    n = model.n_links
    k, p2, _ = model.chain_sizes
    c1 = 2 + np.arange(k)
    c2 = 2 + np.arange(k, k + p2)
    c3 = 2 + np.arange(k + p2, n)
    return {"40": M[0, c1], "43": M[1, c1], "41": M[0, c2], "44": M[1, c2], "42": M[0, c3], "45": M[1, c3],
            "46": M[np.ix_(c1, c1)], "47": M[np.ix_(c2, c2)], "48": M[np.ix_(c3, c3)]}


def printed_differences(model: ChainModel, q: np.ndarray, M: np.ndarray, t: float = 0.0, *,
                        inertia_typo_fixed: bool = False) -> dict[str, dict[str, float]]:
    """Per formula: max |printed − correct| and that relative to max |correct| over the formula's entries."""
    printed = printed_mass_matrix_blocks(model, q, t, inertia_typo_fixed=inertia_typo_fixed)
    correct = corrected_blocks(model, M)
    out = {}
    for key in sorted(printed, key=int):
        d = float(np.max(np.abs(printed[key] - correct[key]))) if printed[key].size else 0.0
        scale = float(np.max(np.abs(correct[key]))) if correct[key].size else 1.0
        out[key] = {"max_abs": d, "max_rel": d / scale if scale > 0 else d}
    return out
