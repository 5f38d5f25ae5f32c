"""Spatial math: rotations and quaternions, spatial (6-D) algebra, Kronecker helpers, small dense solvers."""
