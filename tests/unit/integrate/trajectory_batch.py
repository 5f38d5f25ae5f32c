"""Shared by the loop-trajectory tests: rebuild a run's trajectory from its integrator states once by the
vectorised/compiled batch and once sample by sample (the generic path), and compare them."""
from __future__ import annotations

import numpy as np

from biobullet.integrate.engine import System, build_trajectory


def batch_and_per_sample(model, trajectory, control: str, monkeypatch):
    """(batch trajectory, per-sample trajectory, times the batch handed to the generic `System.tree_state`) of
    `trajectory`'s samples, for error_control `control` ("state" or "joints")."""
    system = System(model, "reduced", {"shadow": control == "joints"})
    columns = [trajectory.q, trajectory.v]
    if control == "joints":
        rows_x, rows_v = system.shadow
        columns += [trajectory.positions[:, rows_x], trajectory.velocities[:, rows_v]]
    y = np.column_stack(columns + [trajectory.energy["work_applied"], trajectory.energy["dissipated"]])
    generic = []
    original = System.tree_state
    monkeypatch.setattr(System, "tree_state", lambda self, t, y: generic.append(t) or original(self, t, y))
    fast = build_trajectory(system, trajectory.t, y, [], {}, vectorised=True)
    monkeypatch.setattr(System, "tree_state", original)
    slow = build_trajectory(System(model, "reduced", {"shadow": control == "joints"}), trajectory.t, y, [], {},
                            vectorised=False)
    return fast, slow, generic


def assert_same_states(fast, slow, tolerance: float = 1e-13) -> None:
    """Positions equal to `tolerance` (rad, m), velocities to `tolerance` relative to their largest entry."""
    assert np.abs(fast.positions - slow.positions).max() <= tolerance
    scale = np.abs(slow.velocities).max()
    assert np.abs(fast.velocities - slow.velocities).max() <= tolerance * scale
