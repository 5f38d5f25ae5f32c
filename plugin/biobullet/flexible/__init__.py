"""Flexible links: Timoshenko / Euler–Bernoulli beam modes and assumed-modes integrals."""
from biobullet.flexible.beam import BOUNDARIES, THEORIES, BeamModes, BeamParameters, ModeShape, beam_modes
from biobullet.flexible.modal import ModalIntegrals, modal_integrals
from biobullet.flexible.paper002 import table2_comparison

__all__ = ["BOUNDARIES", "THEORIES", "BeamModes", "BeamParameters", "ModeShape", "ModalIntegrals",
           "beam_modes", "modal_integrals", "table2_comparison"]
