"""biobullet.bridge: PyBullet steps a whole biobullet model file — joint functions and loops (constraint forces from
the library's one constrained solve), force elements, compliant contact with the file's ground and any body in the
scene, flexible links expanded into segments — through one object, `Bridge(model)` (see docs/bridge.md).

Public: `Bridge`, `simulate` (= `simulate_bridge`, what `biobullet simulate --engine pybullet` calls).
Nothing heavy is imported until used.
"""
from __future__ import annotations

from biobullet.core.lazy import lazy_attributes

__all__ = ["Bridge", "simulate", "simulate_bridge"]

__getattr__ = lazy_attributes(__name__, {"Bridge": ".bridge", "simulate_bridge": ".simulation"})


def simulate(model, t_end: float, **options):
    """`simulate_bridge(model, t_end, dt=..., initial=..., out=..., progress=...)` (see bridge.simulation)."""
    from biobullet.bridge.simulation import simulate_bridge
    return simulate_bridge(model, t_end, **options)
