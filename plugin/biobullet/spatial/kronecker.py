"""Kronecker-product matrix calculus of paper 000, written literally (reference for the fast recursion).

Paper conventions: a matrix A (m×n) differentiated by a vector q (r) gives dA/dq = Σ_ik E_ik ⊗ ∂A_ik/∂q, an
(m·r)×n matrix whose (i, k) block is the column ∂A_ik/∂q. Body placements are used transposed (row-vector
convention): B_i = (⁰A⁴_i)ᵀ = L_i B_p(i), L_i = (ᵖA⁴_i)ᵀ. With Â_i the joint twist in 4×4 form,
    D_i  = (Â_iᵀ B_i) ⊗ g_i + (L_i ⊗ I_r) D_p                                             (13)
    D'_i = P[((Â_iᵀ ⊗ I_r) D_i) ⊗ g_i] + (Â_iᵀ B_i) ⊗ vec(H_i) + P[((Â_iᵀ L_i) ⊗ g_i) ⊗ I_r] D_p
           + (L_i ⊗ I_r²) D'_p,                 P = I_4 ⊗ U_(r,r).
These dense Kronecker products cost O(r³) memory traffic, so `matrix_calculus` evaluates the same recursion in
index form (arrays D[k] = ∂T/∂q_k); the helpers here convert between the layouts and let tests confirm that
both are the same numbers.
"""
from __future__ import annotations

import numpy as np


def commutation_matrix(m: int, n: int) -> np.ndarray:
    """U_(m,n) = Σ_ij E_ij ⊗ E_ijᵀ (E_ij: m×n unit matrices): the permutation with vec(Aᵀ) = U vec(A), A m×n."""
    u = np.zeros((m * n, m * n))
    for i in range(m):
        for j in range(n):
            u[i * n + j, j * m + i] = 1.0  # column-major vec: A[i, j] sits at j*m + i, Aᵀ[j, i] at i*n + j
    return u


def to_kronecker_layout(first: np.ndarray) -> np.ndarray:
    """Index-form ∂T/∂q (r, 4, 4) of the column-convention placement T → the paper's D = dB/dq (4r × 4), B = Tᵀ."""
    r = first.shape[0]
    return np.transpose(first, (2, 0, 1)).reshape(4 * r, 4)


def to_kronecker_layout_second(second: np.ndarray) -> np.ndarray:
    """Index-form ∂²T/∂q_k∂q_l (r, r, 4, 4) → the paper's D' = dD/dq (4r² × 4)."""
    r = second.shape[0]
    return np.transpose(second, (3, 0, 1, 2)).reshape(4 * r * r, 4)


def kronecker_recursion(local: np.ndarray, twist: np.ndarray, gradient: np.ndarray, hessian: np.ndarray,
                        parent_b: np.ndarray, parent_d: np.ndarray, parent_dd: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One step of (13) and its second-order companion, literally with np.kron (fixed base, holonomic q).

    `local` = ᵖA⁴_i (4×4, column convention), `twist` = Â_i (4×4) with d(ᵖA⁴_i)/dθ = ᵖA⁴_i Â_i,
    `gradient` g_i (r), `hessian` H_i (r×r); parent B (4×4), D (4r×4), D' (4r²×4). Returns (B_i, D_i, D'_i).
    """
    r = gradient.size
    g = gradient.reshape(r, 1)
    ell = local.T
    b = ell @ parent_b
    c = twist.T @ b
    d = np.kron(c, g) + np.kron(ell, np.eye(r)) @ parent_d
    p = np.kron(np.eye(4), commutation_matrix(r, r))
    dd = (p @ np.kron(np.kron(twist.T, np.eye(r)) @ d, g)
          + np.kron(c, hessian.reshape(r * r, 1, order="F"))
          + p @ np.kron(np.kron(twist.T @ ell, g), np.eye(r)) @ parent_d
          + np.kron(ell, np.eye(r * r)) @ parent_dd)
    return b, d, dd
