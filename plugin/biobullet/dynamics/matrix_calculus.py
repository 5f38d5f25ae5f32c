"""Placeholder replaced by the matrix-calculus formulation (paper 000)."""
