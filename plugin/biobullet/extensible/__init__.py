"""Planar anthropomorph with extensible links (paper 004): model, corrected recursion, phases.

`chain_model` (ChainModel, Link, InertiaLaw, JSON file format, reference sets), `recursion` (M, h, forward
dynamics, kinematics, energy, angular momentum), `phases` (flight/support/transitions, static stance), `control`
(momentum-based inverse dynamics and virtual-force support controllers),
`paper_printed` (the paper's printed general formulas, for comparison). See docs/anthropomorph.md.
"""
from biobullet.extensible.chain_model import (ChainModel, InertiaLaw, Link, load, loads, reference_flight_state,
                                              six_link_reference, three_link_reference)

__all__ = ["ChainModel", "InertiaLaw", "Link", "load", "loads", "reference_flight_state", "six_link_reference",
           "three_link_reference"]
