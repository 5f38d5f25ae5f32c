"""biobullet.bridge: PyBullet steps a biobullet model (constraint forces for joint functions and loops).

Public: `Bridge`, `simulate` (= `simulate_bridge`, what `biobullet simulate --engine pybullet` calls).
Nothing heavy is imported until used.
"""
from __future__ import annotations

__all__ = ["Bridge", "simulate", "simulate_bridge"]


def __getattr__(name: str):
    if name == "Bridge":
        from biobullet.bridge.bridge import Bridge
        return Bridge
    if name == "simulate_bridge":
        from biobullet.bridge.simulation import simulate_bridge
        return simulate_bridge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def simulate(model, t_end: float, **options):
    """`simulate_bridge(model, t_end, dt=..., initial=..., out=..., progress=...)` (see bridge.simulation)."""
    from biobullet.bridge.simulation import simulate_bridge
    return simulate_bridge(model, t_end, **options)
