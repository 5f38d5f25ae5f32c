"""Planar anthropomorph with extensible links (paper 004): model, model file, kinematics, phases.

`chain_model` (ChainModel, Link, InertiaLaw, JSON file format, reference sets; `model.mass_matrix(q, t)`,
`bias_forces(q, v, t)`, `forward_dynamics(q, v, tau, t)` as for every model kind, run on the tree model of the
chain's model file), `model_file` (ChainModel → URDF + `<biobullet>` text, the tree model), `kinematics` (feet,
COM, energy, angular momentum, joint-moment forces), `phases` (foot constraints, compliant ground, the constrained
solve, the impact map, static stance). The paper-specific drivers are the study's: the phase-switching run
(`biobullet_studies.anthropomorph_phases`), the jump's support controllers (`anthropomorph_control`) and the paper's
printed general formulas (`anthropomorph_printed`). See docs/anthropomorph.md.
"""
from biobullet.extensible.chain_model import (ChainModel, InertiaLaw, Link, load, loads, reference_flight_state,
                                              six_link_reference, three_link_reference)

__all__ = ["ChainModel", "InertiaLaw", "Link", "load", "loads", "reference_flight_state", "six_link_reference",
           "three_link_reference"]
