"""Muscles on the bridge: `Bridge.set_excitations(name=value, ...)` puts the model's muscles into the bridge's
dynamics, with their states (activations, compliant tendons' fiber lengths: `muscles.dynamics`) stepped with it.

Each step, before the step's torques are sent, the muscle stage (`muscles.dynamics`, the same kernel the reference
engine's pipeline calls) runs at PyBullet's (x, ẋ) and the muscle state: its generalized force τ = −Σ T ∂l/∂x is
added to the step's joint torques, and the muscle state advances by explicit Euler over the step from the step's
(x, ẋ) (first order in dt, as the bridge's semi-implicit Euler for the skeleton), in as many sub-steps as its
stiffest state needs to be stable (`bridge.stability.muscle_substeps`: stiff tendons' fibers diverge at a few ms).
Every recorded sample keeps the muscle state; `Bridge.trajectory()` carries the muscles' records. The bridge drives PyBullet
with joint torques, so the muscles enter as the generalized force their point forces along the path exert (equal
by virtual work: T ∂l/∂x collects each path point's and wrap tangent point's force through its body's Jacobian);
applying them as Cartesian point forces would give PyBullet the same joint-space force by another route.
"""
from __future__ import annotations

import numpy as np

from biobullet.bridge.stability import muscle_substeps
from biobullet.core.errors import ModelError
from biobullet.muscles.dynamics import MuscleRun, evaluate_stage


class BridgeMuscles:
    """The muscles of one bridge: their run (rows, excitations) and state, stepped by `torques`."""

    def __init__(self, bridge, activations=None) -> None:
        self.bridge = bridge
        self.run = MuscleRun(bridge.model, 0.0, activations)
        t, q, v = bridge.generalized_state()
        self.state = self.run.initial_state(q, v, t)
        self.names = self.run.names
        self.substeps = 1   # the last step's muscle sub-steps
        self.recorded: dict[int, np.ndarray] = {}   # the muscle state at the bridge's recorded sample k

    def set(self, values: dict) -> None:
        """Constant excitations by muscle name (others keep theirs), each in [0, 1]."""
        excitations = self.run.excitations
        for name, value in values.items():
            excitations.constant[excitations.index(name)] = excitations.checked_value(name, value)
        self.run.rows.excitation[:] = excitations.constant

    def torques(self, x: np.ndarray, xd: np.ndarray) -> np.ndarray:
        """The muscles' joint torques (n_tangent, tree order) at the step's state (x, ẋ) as the bridge read it,
        and the muscle state advanced by dt."""
        bridge = self.bridge
        self.substeps = muscle_substeps(self.run, x, xd, self.state, bridge.dt)
        muscle_tau = np.zeros(bridge.model.n_tangent)
        evaluate_stage(bridge.model, self.run.rows, x, xd, self.state, muscle_tau)
        h = bridge.dt / self.substeps
        state = self.state + h * self.run.rows.rate
        # the paths move on within the step: x advances with ẋ where x is additive (no quaternion), else it is held;
        # a held x would let fast fibers settle at the step's start lengths and lag the motion by O(l̇ dt)
        moving = bridge.model.n_config == bridge.model.n_tangent
        for k in range(1, self.substeps):
            evaluate_stage(bridge.model, self.run.rows, x + (k * h) * xd if moving else x, xd, state,
                           np.zeros(bridge.model.n_tangent))
            state = state + h * self.run.rows.rate
        self.state = state
        return muscle_tau

    def record(self, sample: int) -> None:
        """Keep the current muscle state for the bridge's recorded sample `sample`."""
        self.recorded[sample] = self.state.copy()

    def samples(self, x: np.ndarray, xd: np.ndarray) -> dict[str, np.ndarray]:
        """The muscles' records (`Trajectory.muscles`) at the bridge's samples (x, ẋ: n_t rows); NaN at samples
        taken before the muscles entered."""
        kept = sorted(k for k in self.recorded if k < len(x))
        records = self.run.samples(x[kept], xd[kept], np.array([self.recorded[k] for k in kept]).reshape(
            len(kept), self.run.size))
        out = {}
        for key, values in records.items():
            out[key] = np.full((len(x), len(self.names)), np.nan)
            out[key][kept] = values
        return out

    def outputs(self) -> dict[str, np.ndarray]:
        """The muscles' last stage outputs by `muscles.dynamics.MUSCLE_OUTPUTS` key (one value per muscle)."""
        from biobullet.muscles.dynamics import MUSCLE_OUTPUTS
        return {key: self.run.rows.outputs[:, j].copy() for j, key in enumerate(MUSCLE_OUTPUTS)}


def set_excitations(bridge, activations=None, **excitations: float) -> BridgeMuscles:
    """`Bridge.set_excitations`: the bridge's muscles (made on the first call: states at the current pose, fiber
    lengths in static equilibrium), their excitations set by name."""
    if bridge.muscles is None:
        from biobullet.muscles.api import names
        if not names(bridge.model):
            raise ModelError("the model has no muscles", file=bridge.model.file, argument="excitations",
                             expected="a model with <muscle> elements")
        bridge.muscles = BridgeMuscles(bridge, activations)
        if bridge._samples and bridge._samples[-1][0] == bridge.time:   # the sample of the current state
            bridge.muscles.record(len(bridge._samples) - 1)
    bridge.muscles.set(excitations)
    return bridge.muscles


__all__ = ["BridgeMuscles", "set_excitations"]
