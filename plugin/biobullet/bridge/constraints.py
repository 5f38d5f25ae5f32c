"""The constraint rows the bridge enforces with forces: joint functions and, unless PyBullet closes them natively,
`<loop>`s — the rows of `constraints.equations` over the tree coordinates (Φ(x, t), Φ_x, Φ_t, bias).
"""
from __future__ import annotations


def bridge_constraints(model, *, native_loops: bool):
    """`constraint_set(model, functions=True, loops=not native_loops)` (cached per model)."""
    from biobullet.constraints.equations import constraint_set
    has_loops = bool(model.description.elements_of("loop"))
    return constraint_set(model, functions=True, loops=has_loops and not native_loops)
