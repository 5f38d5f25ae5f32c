"""Prescribed ("imaginary") motion and strategies on the link-segment system (paper 001 §2.4–2.5).

A prescription adds rows to the link-segment system A z = b: the second derivative of a segment's absolute angle,
of a hinge angle, or of a point's position component must equal a given function of time. A chosen set of inputs
(joint generalized forces, point forces, moments) becomes the unknowns Δ (changes added to their base values):

    A z − C Δ = b(state, base inputs),     P z = r(t, state)

#Δ = #rows: determinate (one square solve). #Δ > #rows: minimise ½ Δᵀ W Δ subject to those equations (the KKT
system). A strategy is data — `Strategy.from_config({"name":, "vary": [input names], "objective": "torque" |
"power", "weights": {name: w}, "epsilon": ε})`: "torque" W = diag(w); "power" W = diag(w·rate² + ε) with rate the
joint angular velocity (torques), the point velocity along the force (forces) or the segment angular velocity
(moments) — Δpower = Δinput × rate; ε (default 1e-6, in the inputs' units) keeps W positive where a rate vanishes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from biobullet.core.errors import ModelError, SolverError
from biobullet.dynamics import link_segment as ls

TrajectoryFunction = Callable[[float], tuple[float, float, float]]  # t → (value, rate, acceleration)


@dataclass(frozen=True)
class SystemRow:
    """What inputs and prescriptions share: a name, a kind and the link or joint (`target`) they act on."""

    name: str
    kind: str
    target: str


@dataclass(frozen=True)
class Input(SystemRow):
    """One input of the link-segment system. kind: "joint" (generalized force of URDF joint `target`, N·m),
    "point_force" (force along world `direction` at `point` (m, link frame) of link `target`, N), "moment" (moment
    about world `direction` on link `target`, N·m)."""

    direction: tuple[float, float, float] = (0.0, 0.0, 0.0)
    point: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Prescription(SystemRow):
    """A prescribed motion row. kind: "segment_angle" (link `target`, angle about world `axis`), "joint_angle"
    (hinge `target`), "point" (component along world `axis` of the position of `point` (link frame) of link
    `target`). `trajectory(t)` → (value, rate, acceleration); the row prescribes the acceleration (a prescribed
    point acceleration, eq. (5))."""

    trajectory: TrajectoryFunction
    axis: tuple[float, float, float] = (0.0, 1.0, 0.0)
    point: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Strategy:
    """Which inputs change and which objective decides between them (data, not code)."""

    name: str
    vary: tuple[str, ...]
    objective: str = "none"          # "none" (determinate) | "torque" | "power"
    weights: Mapping[str, float] = field(default_factory=dict)
    epsilon: float = 1e-6

    @classmethod
    def from_config(cls, config: Mapping) -> "Strategy":
        unknown = set(config) - {"name", "vary", "objective", "weights", "epsilon"}
        if unknown:
            raise ModelError(f"unknown strategy keys {sorted(unknown)}", argument="strategy",
                             expected="name, vary, objective, weights, epsilon")
        objective = config.get("objective", "none")
        if objective not in ("none", "torque", "power"):
            raise ModelError(f"unknown objective {objective!r}", argument="strategy.objective",
                             expected="none, torque or power")
        return cls(str(config.get("name", "strategy")), tuple(config["vary"]), objective,
                   dict(config.get("weights", {})), float(config.get("epsilon", 1e-6)))


class StrategySolver:
    """Per-instant solves of a model's link-segment system with inputs, prescriptions and a strategy."""

    def __init__(self, model, inputs: Sequence[Input], *, planar=None, gyroscopic: bool = True) -> None:
        self.model = model
        self.structure = ls.structure(model)
        self.inputs = {i.name: i for i in inputs}
        self.planar = None if planar is None else np.asarray(planar, dtype=float)
        self.gyroscopic = gyroscopic
        for item in inputs:
            if item.kind == "joint":
                if item.target not in model.joint_names:   # 1-DOF joints (a ball joint's torque is 3 inputs)
                    raise ModelError(f"input {item.name!r}: {item.target!r} is not a one-degree-of-freedom joint",
                                     argument="inputs", expected="one of " + ", ".join(model.joint_names))
            elif item.kind in ("point_force", "moment"):
                self.structure.segment(item.target)
            else:
                raise ModelError(f"input {item.name!r}: unknown kind {item.kind!r}", argument="inputs",
                                 expected="joint, point_force or moment")

    # ------------------------------------------------------------------ pieces
    def _select(self, system, column3: np.ndarray) -> np.ndarray:
        return column3 if system.planar_basis is None else system.planar_basis[0] @ column3

    def input_column(self, system, name: str) -> np.ndarray:
        """d b / d u for input `name` (the system's own row space)."""
        item = self.inputs[name]
        lay, st, model = system.layout, system.state, self.model
        col = np.zeros(lay.size)
        if item.kind == "joint":
            tau = np.zeros(model.nv)
            tau[model.velocity_names.index(item.target)] = 1.0
            # the joint's share of the applied moments (linear in τ): one unit, with and without
            joint = self.structure.joint(item.target)
            bodies = model.bodies
            axes = ls.joint_axes(bodies, st, joint)
            unit = np.concatenate([np.full(bodies[k].nv, 1.0 if bodies[k].joint == item.target else 0.0)
                                   for k in joint.bodies])
            moment = axes.T @ np.linalg.solve(axes @ axes.T, unit)
            col[lay.alpha + 3 * joint.child:lay.alpha + 3 * joint.child + 3] += moment  # Euler rows = alpha cols
            if joint.parent >= 0:
                col[lay.alpha + 3 * joint.parent:lay.alpha + 3 * joint.parent + 3] -= moment
            return self._select(system, col)
        i = self.structure.segment(item.target)
        d = np.asarray(item.direction, dtype=float)
        if item.kind == "point_force":
            b = self.structure.segments[i]
            point = st.origins[b] + st.rotations[b] @ self._link_point(item.target, item.point)
            col[3 * i:3 * i + 3] = d
            col[lay.alpha + 3 * i:lay.alpha + 3 * i + 3] = np.cross(point - st.com[i], d)
        else:
            col[lay.alpha + 3 * i:lay.alpha + 3 * i + 3] = d
        return self._select(system, col)

    def _link_point(self, link: str, point) -> np.ndarray:
        frame = self.model.frame(link)
        return frame.rotation @ np.asarray(point, dtype=float) + frame.translation

    def input_rate(self, system, name: str, xd: np.ndarray) -> float:
        """The velocity that multiplies the input in its power (rad/s or m/s)."""
        item = self.inputs[name]
        st = system.state
        if item.kind == "joint":
            return float(xd[self.model.velocity_names.index(item.target)])
        i = self.structure.segment(item.target)
        b = self.structure.segments[i]
        d = np.asarray(item.direction, dtype=float)
        if item.kind == "moment":
            return float(d @ st.omega[b])
        point = st.origins[b] + st.rotations[b] @ self._link_point(item.target, item.point)
        return float(d @ (st.com_velocity[i] + np.cross(st.omega[b], point - st.com[i])))

    def prescription_row(self, system, item: Prescription, t: float) -> tuple[np.ndarray, float]:
        """(row over the system's unknowns, right-hand side) of one prescription."""
        lay, st, model, s = system.layout, system.state, self.model, self.structure
        row = np.zeros(lay.size)
        acc_des = item.trajectory(t)[2]
        axis = np.asarray(item.axis, dtype=float)
        if item.kind == "segment_angle":
            i = s.segment(item.target)
            b = s.segments[i]
            row[lay.alpha + 3 * i:lay.alpha + 3 * i + 3] = axis
            extra = 0.0
        elif item.kind == "joint_angle":
            joint = s.joint(item.target)
            if joint.kind != "hinge":
                raise ModelError(f"prescription {item.name!r}: joint {item.target!r} is not a hinge",
                                 argument="prescriptions")
            body = model.bodies[joint.bodies[0]]
            u = st.rotations[body.index] @ body.axis
            row[lay.alpha + 3 * joint.child:lay.alpha + 3 * joint.child + 3] = u
            if joint.parent >= 0:
                row[lay.alpha + 3 * joint.parent:lay.alpha + 3 * joint.parent + 3] = -u
            extra = 0.0
        elif item.kind == "point":
            i = s.segment(item.target)
            b = s.segments[i]
            w = st.omega[b]
            point = st.origins[b] + st.rotations[b] @ self._link_point(item.target, item.point)
            r = point - st.com[i]
            row[3 * i:3 * i + 3] = axis
            row[lay.alpha + 3 * i:lay.alpha + 3 * i + 3] = np.cross(r, axis)
            extra = float(axis @ np.cross(w, np.cross(w, r)))
        else:
            raise ModelError(f"prescription {item.name!r}: unknown kind {item.kind!r}", argument="prescriptions",
                             expected="segment_angle, joint_angle or point")
        target = acc_des - extra
        if system.planar_basis is not None:
            row = row @ system.planar_basis[1]
        return row, target

    # ------------------------------------------------------------------ the solve
    def solve(self, q, v, t: float, base_inputs: Mapping[str, float], prescriptions: Sequence[Prescription] = (),
              strategy: Strategy | None = None):
        """(v̇, Δ by input name, z (3D layout), system) at one instant."""
        model = self.model
        x, xd, _, _ = model.joint_state(q, v, 0.0)
        system = ls.assemble(model, x, xd, None, gyroscopic=self.gyroscopic, planar=self.planar)
        b = system.rhs.copy()
        for name, value in base_inputs.items():
            if value:
                b += self.input_column(system, name) * value
        vary = () if strategy is None else strategy.vary
        if len(vary) < len(prescriptions) or (strategy is None and prescriptions):
            raise ModelError(f"{len(prescriptions)} prescribed rows but {len(vary)} varied inputs",
                             argument="strategy", expected="at least as many varied inputs as prescribed rows")
        n_z, k, r = len(b), len(vary), len(prescriptions)
        big = np.zeros((n_z + r, n_z + k))
        rhs = np.zeros(n_z + r)
        big[:n_z, :n_z] = system.matrix
        rhs[:n_z] = b
        for c, name in enumerate(vary):
            if name not in self.inputs:
                raise ModelError(f"strategy {strategy.name!r} varies unknown input {name!r}", argument="strategy",
                                 expected="one of " + ", ".join(self.inputs))
            big[:n_z, n_z + c] = -self.input_column(system, name)
        for p, item in enumerate(prescriptions):
            big[n_z + p, :n_z], rhs[n_z + p] = self.prescription_row(system, item, t)
        if k == r:
            try:
                y = np.linalg.solve(big, rhs)
            except np.linalg.LinAlgError:
                raise SolverError(f"strategy {getattr(strategy, 'name', '')!r}: the varied inputs cannot realise "
                                  "the prescribed rows (singular system)") from None
        else:
            weights = self.objective_weights(system, strategy, xd)
            hessian = np.zeros((n_z + k, n_z + k))
            hessian[n_z:, n_z:] = np.diag(weights)
            kkt = np.block([[hessian, big.T], [big, np.zeros((n_z + r, n_z + r))]])
            y = np.linalg.solve(kkt, np.concatenate([np.zeros(n_z + k), rhs]))[:n_z + k]
        z = y[:n_z]
        z3 = z if system.planar_basis is None else system.planar_basis[1] @ z
        delta = dict(zip(vary, y[n_z:]))
        return ls.accelerations_from_solution(system, z3), delta, z3, system

    def objective_weights(self, system, strategy: Strategy, xd) -> np.ndarray:
        if strategy.objective == "none":
            raise ModelError(f"strategy {strategy.name!r} varies {len(strategy.vary)} inputs but has no objective",
                             argument="strategy.objective", expected="torque or power (or as many inputs as rows)")
        w = np.array([float(strategy.weights.get(name, 1.0)) for name in strategy.vary])
        if strategy.objective == "torque":
            return w
        rates = np.array([self.input_rate(system, name, xd) for name in strategy.vary])
        return w * rates ** 2 + strategy.epsilon
