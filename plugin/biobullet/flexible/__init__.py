"""Flexible links: Timoshenko / Euler–Bernoulli beam modes and assumed-modes integrals."""
from biobullet.flexible.beam import BOUNDARIES, THEORIES, BeamModes, BeamParameters, ModeShape, beam_modes
from biobullet.flexible.modal import ModalIntegrals, modal_integrals

__all__ = ["BOUNDARIES", "THEORIES", "BeamModes", "BeamParameters", "ModeShape", "ModalIntegrals",
           "beam_modes", "modal_integrals"]
