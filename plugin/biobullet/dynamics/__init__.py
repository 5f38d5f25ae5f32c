"""Equations of motion: spatial recursions on the tree and the formulations built on them."""
