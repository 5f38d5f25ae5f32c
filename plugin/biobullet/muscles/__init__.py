"""Muscles: musculotendon paths (points fixed, conditional and moving on bodies; wrapping surfaces parsed),
their lengths and exact gradients (moment arms by the chain rule), OpenSim's Hill-type models and activation
dynamics, and the `.osim` muscle parser. See docs/muscles.md.
"""
