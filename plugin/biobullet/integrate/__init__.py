"""biobullet.integrate: the reference engine — `simulate()`, events, projection, `Trajectory` (CSV/NPZ).

See `engine.simulate` for the state vector, defaults and failure behaviour.
"""
from __future__ import annotations

from biobullet.integrate.engine import IntegrationError, cli_simulate, gravity_potential, kinetic_energy, simulate
from biobullet.core.events import Event
from biobullet.integrate.trajectory import ENERGY_KEYS, Trajectory

__all__ = ["simulate", "Trajectory", "Event", "IntegrationError", "cli_simulate", "kinetic_energy",
           "gravity_potential", "ENERGY_KEYS"]
