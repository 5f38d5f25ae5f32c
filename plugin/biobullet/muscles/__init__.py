"""Muscles: musculotendon paths (points fixed, conditional and moving on bodies; wrapping surfaces parsed),
their lengths and exact gradients (moment arms by the chain rule), OpenSim's Hill-type models and activation
dynamics, and the `.osim` muscle parser. See docs/muscles.md.

The public API on a loaded model (`biobullet.muscles.api`): `names(model)`, `lengths(model, q)`,
`moment_arms(model, q)`, `equilibrium_tendon_forces(model, q, activation)`; `path_polylines(model, x)` for drawing.
"""
from biobullet.muscles.api import equilibrium_tendon_forces, lengths, moment_arms, names, path_polylines

__all__ = ["names", "lengths", "moment_arms", "equilibrium_tendon_forces", "path_polylines"]
