"""Planar anthropomorph with extensible links (paper 004): model, corrected recursion, phases."""
