"""Muscles on the bridge: `Bridge.set_excitations(name=value, ...)` puts the model's muscles into the bridge's
dynamics, with their states (activations, compliant tendons' fiber lengths: `muscles.dynamics`) stepped with it.

Each step, before the step's torques are sent, the muscle stage (`muscles.dynamics`, the same kernel the reference
engine's pipeline calls) runs at PyBullet's (x, ẋ) and the muscle state, in its frame-twist mode
(`pack_muscles(frame_twists=True)`): a wrapped path is differentiated along each moving frame's unit twists, so one
path pass per step gives every frame's wrench, and τ is those wrenches through the motion subspaces, as for
straight paths. Its forces act on PyBullet as what they
are, forces along the path: the tension pulls every path point, every moving point and every wrap surface's
tangent points along the path's segments, and each body gets the sum over its frames — the path kernel's
∂l/∂(frame motion) [F; M] times −T (`PathGradient.dl_dframes`: fixed, conditional and moving points, and the
wraps' tangent points on the wrap's body) — as one force and one torque in world axes
(`applyExternalForce`/`applyExternalTorque`, WORLD_FRAME; the force applied at the world origin, so PyBullet adds
its moment about the link's centre of mass, and the torque is the wrench's moment about the world origin; link −1
for a floating base). Only a moving point's motion along its coordinate (∂l/∂c, OpenSim's mobility force) is a
joint torque. The bridge's constraint solve (couplings, loops, motors) still sees the muscles' generalized force
τ = −Σ T ∂l/∂x, which by virtual work is what these wrenches exert (Σ_b J_bᵀ w_b), and the joint torques sent are
the solve's minus that wrench part: `apply()` returns the joint torques alone, and a floating base gets no
muscle wrench on its 6 free directions that no joint could apply.

The muscle state advances by explicit Euler over the step from the step's lengths and lengthening speeds (first
order in dt, as the bridge's semi-implicit Euler for the skeleton), in as many sub-steps as its stiffest state
needs to be stable (`bridge.stability.muscle_substeps`: stiff tendons' fibers diverge at a few ms); within the
step the lengths move on as l + τ l̇ (`muscles.dynamics.evaluate_rates`: the Hill part without the paths, so the
paths are evaluated once per step). Every recorded sample keeps the muscle state; `Bridge.trajectory()` carries the
muscles' records.
"""
from __future__ import annotations

import numpy as np

from biobullet.bridge.stability import muscle_substeps
from biobullet.core.errors import ModelError
from biobullet.muscles.dynamics import LENGTH, SPEED, TENDON_FORCE, MuscleRun, evaluate_rates, evaluate_stage


class BridgeMuscles:
    """The muscles of one bridge: their run (rows, excitations) and state, stepped by `torques`, and the wrenches
    of the last step (`wrenches`: per loaded body [F; M] in world axes, M about the world origin)."""

    def __init__(self, bridge, activations=None) -> None:
        self.bridge = bridge
        # wrapped paths differentiated along each frame's unit twists: one path pass gives the wrenches and τ
        self.run = MuscleRun(bridge.model, 0.0, activations, frame_twists=True)
        t, q, v = bridge.generalized_state()
        self.state = self.run.initial_state(q, v, t)
        self.started = self.state   # the state the last apply() started from (a repeated apply() starts there again)
        self.names = self.run.names
        self.substeps = 1   # the last step's muscle sub-steps
        self.recorded: dict[int, np.ndarray] = {}   # the muscle state at the bridge's recorded sample k
        model, rows = bridge.model, self.run.rows
        # the bodies carrying path frames (a frame on the world, or on a fixed base's root link, has none)
        loaded = sorted({int(b) for b in rows.frame_body if b >= 0})
        self.bodies = np.array(loaded, dtype=np.int64)   # model body indices
        self.links = [bridge.map.link_index[model.bodies[b].link] for b in loaded]   # their PyBullet links
        # sums the frames' wrenches per loaded body (n_bodies × n_frames of 0/1; a frame on the world in no row)
        self._frame_to_body = np.zeros((len(loaded), len(rows.frame_body)))
        for f, b in enumerate(rows.frame_body):
            if b >= 0:
                self._frame_to_body[loaded.index(int(b)), f] = 1.0
        self._any_link = next((link for link in self.links if link >= 0), None)   # a link other than the base
        self.wrenches = np.zeros((len(loaded), 6))
        self.tensions = np.zeros(len(self.names))   # the last step's tendon forces (N)
        self.joint_torque = np.zeros(model.n_tangent)   # the moving points' share, sent as joint torques
        self.body_torque = np.zeros(model.n_tangent)    # the wrenches' generalized force, tree coordinates
        self._outputs_here()

    def set(self, values: dict) -> None:
        """Constant excitations by muscle name (others keep theirs), each in [0, 1]; all checked before any is
        set (a bad one changes none)."""
        excitations = self.run.excitations
        checked = [(excitations.index(name), excitations.checked_value(name, value)) for name, value in values.items()]
        for m, value in checked:
            excitations.constant[m] = value
        self.run.rows.excitation[:] = excitations.constant

    def restart(self) -> None:
        """A new run from the bridge's current pose (`Bridge.reset`): the initial activations and the compliant
        fibers in static equilibrium there, as the first `set_excitations` made them; the excitations are kept.
        (Kept states would start the new run from the old one's: arm26 0.46 rad off a fresh bridge 0.1 s later.)"""
        t, q, v = self.bridge.generalized_state()
        self.state = self.started = self.run.initial_state(q, v, t)
        self.recorded.clear()
        self._outputs_here()

    def _outputs_here(self) -> None:
        """`outputs()` and `tensions` at the bridge's current state and the muscle state, before a step reads them
        (they were zeros before the first step — a 0 m path, a 0 N tendon — and the old run's after a reset)."""
        _, x, xd = self.bridge.state()
        self.tensions = self.run.outputs(x, xd, self.state)[:, TENDON_FORCE].copy()

    def torques(self, x: np.ndarray, xd: np.ndarray) -> np.ndarray:
        """The muscles' generalized force τ (n_tangent, tree order) at the step's state (x, ẋ) as the bridge read
        it; `tensions`, `wrenches`, `body_torque` (the part of τ the wrenches exert) and `joint_torque` (the rest:
        moving points along their coordinates); the muscle state advanced by dt."""
        bridge, rows = self.bridge, self.run.rows
        muscle_tau = np.zeros(bridge.model.n_tangent)
        evaluate_stage(bridge.model, rows, x, xd, self.state, muscle_tau)
        tension = rows.outputs[:, TENDON_FORCE]
        path = rows.path   # every path's ∂l/∂(frame motion) and ∂l/∂c (the stage's frame-twist mode)
        frames = -np.tensordot(tension, path.dl_dframes, axes=1)   # [F; M about the frame origin] per frame
        frames[:, 3:] += np.cross(rows.origins, frames[:, :3])       # M about the world origin
        self.wrenches = self._frame_to_body @ frames
        self.tensions = tension.copy()
        joints = np.zeros(bridge.model.n_tangent)   # moving points along their coordinates: joint torques
        np.add.at(joints, rows.coordinate_slots[:, 1], -(tension @ path.dl_dcoordinates))
        self.joint_torque = joints
        self.body_torque = muscle_tau - joints
        lengths, speeds = rows.outputs[:, LENGTH].copy(), rows.outputs[:, SPEED].copy()
        self.substeps = muscle_substeps(self.run, lengths, speeds, self.state, bridge.dt)
        h = bridge.dt / self.substeps
        state = self.state.copy()
        for k in range(self.substeps):   # the paths move on within the step: l + τ l̇
            evaluate_rates(bridge.model, rows, lengths + (k * h) * speeds, speeds, state)
            state = state + h * rows.rate
        self.state = state
        return muscle_tau

    def send(self, sent: np.ndarray | None = None) -> None:
        """The last step's wrenches to PyBullet (one force and one torque per loaded body; cleared by PyBullet
        after its step); minus `sent`, the wrenches an apply() of the same step already sent (PyBullet adds them up
        until its step)."""
        bridge = self.bridge
        p, c, b = bridge.pybullet, bridge.client, bridge.body
        if self._any_link is not None:   # PyBullet places a WORLD_FRAME force on a link by the link's cached
            # transform, left from the last step's start: one forward kinematics call brings every link's up to date
            # (else each force acts O(v dt) off its point: 6.6e-7 rad/s after the second arm26 step at 0.5 ms)
            p.getLinkState(b, self._any_link, computeForwardKinematics=True, physicsClientId=c)
        # (the wrenches are about the model's origin: in PyBullet's world, a fixed base's link frame, `base_origin` —
        # before, the world origin: a leg loaded 1 m up was 1.64 rad off the same leg at the origin after 0.1 s)
        origin = bridge.base_origin().tolist()
        for link, wrench in zip(self.links, (self.wrenches if sent is None else self.wrenches - sent).tolist()):
            p.applyExternalForce(b, link, wrench[:3], origin, p.WORLD_FRAME, physicsClientId=c)
            p.applyExternalTorque(b, link, wrench[3:], p.WORLD_FRAME, physicsClientId=c)

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
        """The muscles' last stage outputs by `muscles.dynamics.MUSCLE_OUTPUTS` key (one value per muscle): at the
        last step's start, or at the state where the muscles entered or restarted before a step."""
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
        muscles = BridgeMuscles(bridge, activations)
        muscles.set(excitations)   # a bad excitation: the muscles stay out (a later call's activations still count)
        bridge.muscles = muscles
        if bridge.samples and bridge.samples[-1][0] == bridge.time:   # the sample of the current state
            bridge.muscles.record(len(bridge.samples) - 1)
        return muscles
    # (later activations were ignored: they are a state, set once, then integrated; the same initial activations
    # restated on every call of a user's loop change nothing and stay accepted)
    if activations is not None and not np.array_equal(bridge.muscles.run.resolved_activations(activations),
                                                      bridge.muscles.run.initial_activations):
        raise ModelError("initial activations given after the muscles entered the bridge: they are its state now",
                         file=bridge.model.file, argument="activations",
                         expected="activations on the first set_excitations call only, or the same again "
                                  "(bridge.reset() restarts the muscles from those)")
    bridge.muscles.set(excitations)
    return bridge.muscles


__all__ = ["BridgeMuscles", "set_excitations"]
