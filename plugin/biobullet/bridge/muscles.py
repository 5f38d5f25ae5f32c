"""Muscles on the bridge: `Bridge.set_excitations(name=value, ...)` puts the model's muscles into the bridge's
dynamics, with their states (activations, compliant tendons' fiber lengths: `muscles.dynamics`) stepped with it.

Each step, before the step's torques are sent, the muscle stage (`muscles.dynamics`, the same kernel the reference
engine's pipeline calls) runs at PyBullet's (x, ẋ) and the muscle state: its generalized force τ = −Σ T ∂l/∂x is
added to the step's joint torques, and the muscle state advances by one explicit Euler step with the rates of the
step's start (first order in dt, as the bridge's semi-implicit Euler for the skeleton). The bridge drives PyBullet
with joint torques, so the muscles enter as the generalized force their point forces along the path exert (equal
by virtual work: T ∂l/∂x collects each path point's and wrap tangent point's force through its body's Jacobian);
applying them as Cartesian point forces would give PyBullet the same joint-space force by another route.
"""
from __future__ import annotations

import numpy as np

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

    def set(self, values: dict) -> None:
        """Constant excitations by muscle name (others keep theirs), each in [0, 1]."""
        excitations = self.run.excitations
        for name, value in values.items():
            excitations.constant[excitations.index(name)] = excitations.checked_value(name, value)
        self.run.rows.excitation[:] = excitations.constant

    def torques(self, tau):
        """The step's joint torques with the muscles' added (`tau`: the caller's, None, a vector or a mapping by
        joint name), and the muscle state advanced by dt."""
        bridge = self.bridge
        x, xd = bridge._read_state()
        muscle_tau = np.zeros(bridge.model.n_tangent)
        evaluate_stage(bridge.model, self.run.rows, x, xd, self.state, muscle_tau)
        self.state = self.state + bridge.dt * self.run.rows.rate
        if tau is None:
            return muscle_tau
        return muscle_tau + bridge._torque_argument(tau)

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
    bridge.muscles.set(excitations)
    return bridge.muscles


__all__ = ["BridgeMuscles", "set_excitations"]
