"""`biobullet bench`: speed ratios measured in one run on the bundled models (reported, never asserted).

  formulations  mass matrix + bias forces per call, each formulation against Pinocchio's CRBA + RNEA on the same
                model and state;
  bridge        time per 1 ms step on the shoulder model: bare PyBullet (τ = 0), the minimal computed-torque loop
                a user writes without biobullet (joint states, mass matrix, inverse dynamics, torques, step), and
                `Bridge.step()` (that loop plus the 10 joint-function rows held).

Timing: candidates take turns (round robin) in many short batches and each keeps its best batch, so a busy machine
slows all of them alike; the bridge rounds also report the thread's CPU time (PyBullet DIRECT runs in the calling
thread). tests/benchmarks/ use the same functions with more rounds and more detail (README "Benchmarks").
"""
from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import platform
import sys
import time
import timeit
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import numpy as np

PINOCCHIO = "pinocchio (crba + rnea, full tree)"
FORMULATION_MODELS = ("arm7.urdf", "humanoid.urdf", "shoulder_rhythm.urdf")
BRIDGE_MODEL = "shoulder_rhythm.urdf"
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}
#: the slow pure-Python formulations run one short batch every fourth round (they would dominate the run);
#: `--quick` leaves them out (link_segment and reduced_recursive, compiled, run with the rest)
SLOW = ("matrix_calculus",)


@contextlib.contextmanager
def kept_on_interrupt(summary: dict[str, Any], path: str | None, what: str) -> Iterator[None]:
    """Ctrl-C / SIGTERM inside the block: `summary` (what was measured so far) marked `"interrupted": true` and
    written to `path` atomically (nothing when path is None), then KeyboardInterrupt saying where `what` is kept (the
    CLI prints it and exits 130 / 143)."""
    try:
        yield
    except KeyboardInterrupt:
        summary["interrupted"] = True
        if path is None:
            raise
        from biobullet.core.atomic import write_text
        written = write_text(path, json.dumps(summary, indent=2) + "\n")
        raise KeyboardInterrupt(f"{what} are in {written}") from None


def interleaved_best(functions: Mapping[str, Callable[[], Any]], rounds: int = 60, number: int = 20,
                     slow: tuple[str, ...] = (), clock: Callable[[], float] = time.perf_counter) -> dict[str, float]:
    """Best seconds per call of each function over `rounds` batches of `number` calls taken in turn, timed by
    `clock`; functions named in `slow` run one batch of `number // 4` calls every fourth round. One warm-up call
    each first."""
    best = {label: float("inf") for label in functions}
    for function in functions.values():
        function()
    for r in range(rounds):
        for label, function in functions.items():
            if label in slow:
                if r % 4:
                    continue
                n = max(1, number // 4)
            else:
                n = number
            best[label] = min(best[label], timeit.Timer(function, timer=clock).timeit(number=n) / n)
    return best


def pinocchio_call(model) -> Callable[[], Any]:
    """CRBA + RNEA of Pinocchio on the model's own URDF (free flyer if floating), neutral q, random v."""
    import pinocchio as pin

    path = model.file
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if model.floating_base \
        else pin.buildModelFromUrdf(path)
    data = pm.createData()
    q = pin.neutral(pm)
    v = np.random.default_rng(0).normal(size=pm.nv)
    zero = np.zeros(pm.nv)
    return lambda: (pin.crba(pm, data, q), pin.rnea(pm, data, q, v, zero))


def formulation_speed(model, *, rounds: int = 60, number: int = 20, slow: bool = True) -> dict[str, float]:
    """Seconds per `mass_and_bias` call of every formulation (but multipliers, which has no reduced M) and of
    Pinocchio (key `PINOCCHIO`) at the model's initial q and a random v. `slow=False` leaves out the formulations
    named in SLOW."""
    from biobullet.dynamics.formulation import GENERALIZED, formulation_names, get_formulation

    q, _ = model.initial_state()
    v = np.random.default_rng(1).normal(size=model.nv)
    functions: dict[str, Callable[[], Any]] = {PINOCCHIO: pinocchio_call(model)}
    for name in formulation_names(GENERALIZED):   # joint-space formulations have no reduced M
        formulation = get_formulation(name)
        if not getattr(formulation, "supports", lambda m: True)(model):   # e.g. link_segment on joint functions
            continue
        if not slow and name in SLOW:
            continue
        functions[name] = lambda f=formulation: f.mass_and_bias(model, q, v, 0.0)
    return interleaved_best(functions, rounds=rounds, number=number, slow=SLOW)


def public_api_speed(model, *, rounds: int = 300, number: int = 100, seed: int = 3,
                     walk: bool = False) -> dict[str, float]:
    """Seconds per call of the public calls a control or learning loop makes (`model.forward_dynamics(q, v, tau)`,
    `model.mass_matrix(q)`, `model.bias_forces(q, v)`: the pipeline) and of Pinocchio's `aba`, `crba`, `rnea`
    on the whole tree of the model's own URDF (`conventions.build_pinocchio_model`; for an OpenSim model, the URDF
    it was translated to and loaded from, `opensim.osim_urdf`), at the same random state
    (mapped to Pinocchio's joint order; for a model with joint functions or loops, the tree state x, ẋ its map
    gives: the loops closed). A model with loops and no joint functions also times what a user of Pinocchio
    calls for its accelerations, `constraintDynamics` with the loops as point constraints ("pinocchio
    constraintDynamics", `bench.competitors.pinocchio_loops`). Timed in the thread's CPU time (both sides call
    from this thread; a shared machine's other work is not counted), best of many short batches. walk: each call
    takes the next state of a walk back and forth through `number` states 1e-3 apart in every joint coordinate (a
    control loop's states: a loop model's Newton starts from the last call's solution, never at it), the same
    states on both sides; else every call is at one state. "mass_matrix then bias_forces" (and Pinocchio's "crba
    then rnea") times both calls at one state of that walk, as a control loop asks them: a loop model's second
    call takes the first's loop solution."""
    import pinocchio as pin
    from biobullet.conventions import PinocchioMap, build_pinocchio_model

    rng = np.random.default_rng(seed)
    q, _ = model.initial_state()
    q = q + 0.1 * rng.normal(size=model.nq) * (np.arange(model.nq) >= model.base_nq)
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    if str(model.file).endswith(".osim"):   # the URDF the model was loaded from (`biobullet.opensim.osim_urdf`)
        import tempfile
        from biobullet.opensim import osim_urdf
        with tempfile.TemporaryDirectory() as folder:
            urdf = Path(folder) / "model.urdf"
            urdf.write_text(osim_urdf(model.file))
            pm = build_pinocchio_model(model, urdf)
    else:
        pm = build_pinocchio_model(model)
    pd = pm.createData()
    mapping = PinocchioMap(model, pm)
    ptau = rng.normal(size=pm.nv)
    path = [q]
    if walk:
        step = 1e-3 * (np.arange(model.nq) >= model.base_nq)
        forward = [q + k * step for k in range(number)]
        path = forward + forward[-2:0:-1]   # back and forth: no jump, no state twice in a row
    states = []
    for qk in path:
        x, xd = model.joint_state(qk, v)[:2]
        states.append((qk, mapping.config_to_pinocchio(x), mapping.velocity_to_pinocchio(xd)))
    ours, theirs = itertools.cycle([s[0] for s in states]), itertools.cycle([s[1:] for s in states])

    def pinocchio_pair():   # (the same frame on both sides)
        x, xd = next(theirs)
        pin.crba(pm, pd, x)
        return pin.rnea(pm, pd, x, xd, ptau)

    def model_pair():
        qk = next(ours)
        model.mass_matrix(qk)
        return model.bias_forces(qk, v)
    functions: dict[str, Callable[[], Any]] = {
        "pinocchio aba": lambda: pin.aba(pm, pd, *next(theirs), ptau),
        "pinocchio crba": lambda: pin.crba(pm, pd, next(theirs)[0]),
        "pinocchio rnea": lambda: pin.rnea(pm, pd, *next(theirs), ptau),
        "forward_dynamics": lambda: model.forward_dynamics(next(ours), v, tau),
        "mass_matrix": lambda: model.mass_matrix(next(ours)),
        "bias_forces": lambda: model.bias_forces(next(ours), v),
        # a control loop's pair: M and h at one state (the second call takes the first's loop solution)
        "pinocchio crba then rnea": pinocchio_pair, "mass_matrix then bias_forces": model_pair,
    }
    from biobullet.bench.competitors import Unsupported, pinocchio_loops
    try:
        accelerations = pinocchio_loops(model)[0]
    except Unsupported:
        pass
    else:
        functions["pinocchio constraintDynamics"] = lambda: accelerations(*next(theirs), ptau)
    return interleaved_best(functions, rounds=rounds, number=number, clock=time.thread_time)


# ------------------------------------------------------------------------------------------------ bridge steps
def bare_steps(bridge, steps: int, clock: Callable[[], float]) -> float:
    """Seconds per step of PyBullet alone: zero torques, stepSimulation."""
    p, body, c = bridge.pybullet, bridge.body, bridge.client
    joints = bridge.map.joint_indices.tolist()
    zeros = [0.0] * len(joints)
    start = clock()
    for _ in range(steps):
        p.setJointMotorControlArray(body, joints, p.TORQUE_CONTROL, forces=zeros, physicsClientId=c)
        p.stepSimulation(physicsClientId=c)
    return (clock() - start) / steps


class HandLoop:
    """The least a user writes in PyBullet alone for a step of `bridge`'s body (built from its map, run on its client):

    read      the state in the fewest calls: getJointStates (1-DOF joints), or one getJointStatesMultiDof when
              the body has spherical joints; a floating base adds getBasePositionAndOrientation + getBaseVelocity;
    dynamics  M = calculateMassMatrix and h = calculateInverseDynamics(q, q̇, 0) (a floating base: base COM pose,
              quaternion and joint positions, as PyBullet takes them), each where PyBullet takes the body
              (`calls`: calculateInverseDynamics refuses spherical joints on a fixed base — the loop then has M
              only, cheaper than any correct loop); τ = h + M·0;
    send      setJointMotorControlArray(TORQUE_CONTROL) for the 1-DOF joints, setJointMotorControlMultiDofArray
              for the spherical joints (τ = 0 without dynamics), a base wrench is not sent;
    stops     the URDF `<limit>` stops the bridge holds (`forces.elements.limit_stops`), their smooth law
              f = k p² + c s(p) ṗ written in plain floats and added to the joints' τ (`stops`) — the bridge's
              body has PyBullet's rigid limits switched off (`connection.prepare_body`): a loop without them let a
              knee pass its limit, 0.2 rad in 0.1 s on pybullet_data's humanoid, where the bridge's stop holds it;
              PyBullet's own limits back on hold it too, but as another law and dearer (its limit rows: 40.1
              against 33.8 µs a step there);
    step      stepSimulation."""

    def __init__(self, bridge, dynamics: bool) -> None:
        self.p, self.body, self.client = bridge.pybullet, bridge.body, bridge.client
        m = bridge.map
        self.floating = bool(bridge.model.floating_base)
        self.joints = m.joint_indices.tolist()
        self.spherical = list(m.spherical_indices)
        self.read_joints = self.spherical + self.joints
        #: the URDF `<limit>` stops: (entry in `joints`, lower, upper, k, c, exponent, smoothing)
        self.stops = self._limit_stops(bridge)
        self.calls: list[str] = []
        if dynamics:
            p = self.p
            q, v = self._read()
            for name in ("calculateMassMatrix", "calculateInverseDynamics"):
                try:
                    self._dynamics_call(name, q, v)
                    self.calls.append(name)
                except (p.error, SystemError):   # PyBullet refuses the body (spherical joints, fixed base)
                    pass

    def _limit_stops(self, bridge) -> list[tuple]:
        """The stops of the URDF `<limit>`s the bridge holds (none when the model was loaded with
        joint_limits=False), as `steps` evaluates them."""
        if not bridge.model.description.joint_limits:
            return []
        from biobullet.forces.elements import limit_stops
        return [(self.joints.index(bridge.joint_index[s.joint]), s.lower, s.upper, s.stiffness, s.damping,
                 s.exponent, s.smoothing) for s in limit_stops(bridge.model)]

    def _add_stops(self, q, v, tau) -> None:
        """The stops' τ added to tau (the 1-DOF joints' entries, `joints` order) at the joint positions q and rates v
        (lists, the 1-DOF joints' entries last): f = k p^e + c s(p) ṗ beyond a limit (p the penetration, s the C¹
        smoothstep over `smoothing`), as `forces.elements.JointStop` (smooth) defines it, in plain floats."""
        offset_q, offset_v = len(q) - len(self.joints), len(v) - len(self.joints)
        for i, lower, upper, k, c, exponent, smoothing in self.stops:
            theta = q[offset_q + i]
            if theta > upper:
                pen, rate, sign = theta - upper, v[offset_v + i], -1.0
            elif theta < lower:
                pen, rate, sign = lower - theta, -v[offset_v + i], 1.0
            else:
                continue
            u = min(pen / smoothing, 1.0)
            tau[i] += sign * (k * pen ** exponent + c * u * u * (3.0 - 2.0 * u) * rate)

    def _read(self):
        p, b, c = self.p, self.body, self.client
        base = ()
        if self.floating:
            position, orientation = p.getBasePositionAndOrientation(b, physicsClientId=c)
            linear, angular = p.getBaseVelocity(b, physicsClientId=c)
            base = (position, orientation, linear, angular)
        if self.spherical:
            states = p.getJointStatesMultiDof(b, self.read_joints, physicsClientId=c)
            q = [value for s in states for value in s[0]]
            v = [value for s in states for value in s[1]]
        else:
            states = p.getJointStates(b, self.joints, physicsClientId=c)
            q, v = [s[0] for s in states], [s[1] for s in states]
        return (base, q), v

    def _dynamics_call(self, name, q, v):
        p, b, c = self.p, self.body, self.client
        base, positions = q
        if name == "calculateMassMatrix":
            return np.asarray(p.calculateMassMatrix(b, positions, physicsClientId=c))
        if self.floating:
            position, orientation, linear, angular = base
            positions = [*position, *orientation, *positions]
            v = [*angular, *linear, *v]
        return np.asarray(p.calculateInverseDynamics(b, positions, v, [0.0] * len(v), physicsClientId=c))

    def steps(self, steps: int, clock: Callable[[], float]) -> float:
        p, b, c = self.p, self.body, self.client
        n1, ns = len(self.joints), len(self.spherical)
        offset = (6 if self.floating else 0)
        stops = self.stops
        start = clock()
        for _ in range(steps):
            q, v = self._read()
            tau = np.zeros(len(v) + offset)
            if self.calls:
                mass = self._dynamics_call("calculateMassMatrix", q, v)
                tau = mass @ np.zeros(len(mass))
                if len(self.calls) > 1:
                    tau = tau + self._dynamics_call("calculateInverseDynamics", q, v)
            # PyBullet's order: spherical blocks first (read order), then the 1-DOF joints
            joint_tau = tau[len(tau) - 3 * ns - n1:]
            if ns:
                p.setJointMotorControlMultiDofArray(b, self.spherical, p.TORQUE_CONTROL,
                                                    forces=joint_tau[:3 * ns].reshape(ns, 3).tolist(),
                                                    physicsClientId=c)
            sent = joint_tau[3 * ns:].tolist()
            if stops:
                self._add_stops(q[1], v, sent)
            p.setJointMotorControlArray(b, self.joints, p.TORQUE_CONTROL, forces=sent, physicsClientId=c)
            p.stepSimulation(physicsClientId=c)
        return (clock() - start) / steps


class ForcesLoop(HandLoop):
    """`HandLoop`'s read and send with the forces the bridge applies to a model without rows computed as a user
    writes them with PyBullet alone — the fair minimal loop of a model with `<contact>`s or joint springs:

    springs   τ = −k (q − q0) − c q̇ of the file's joint spring-dampers (`<joint_spring>`, a flexible link's
              segment joints), one vectorised numpy expression (its stops are left out: cheaper than any correct
              loop);
    contacts  every `<contact>` on its analytic plane: the contact point's world position and velocity from one
              getLinkStates(computeLinkVelocity=1, computeForwardKinematics=1) call (PyBullet has no kinematics
              without it), penetration δ = radius + h − n·p, the Hu–Guo normal force K δⁿ (1 + 3(1 − cr)/(2 cr)
              · δ̇/δ̇⁻) with δ̇⁻ kept from the onset, Ambrosio's friction μ F_n ramped between v0 and v1 against the
              tangential velocity, and one applyExternalForce(WORLD_FRAME) per touching contact."""

    def __init__(self, bridge) -> None:
        super().__init__(bridge, False)
        from biobullet.forces.base import joint_indices
        from biobullet.forces.collection import force_elements
        from biobullet.forces.elements import JointSpring
        model = bridge.model
        springs = [e for e in force_elements(model) if type(e) is JointSpring]
        # HandLoop sends the 1-DOF joints in model.joint_names order: τ index − base_nv
        self.spring_index = np.array([joint_indices(model, e.joint, e.source)[1] - model.base_nv for e in springs],
                                     dtype=int)
        self.spring_k = np.array([e.stiffness for e in springs])
        self.spring_rest = np.array([e.rest for e in springs])
        self.spring_c = np.array([e.damping for e in springs])
        self.contacts = []
        for element in model.description.elements_of("contact"):
            get = element.get
            numbers = lambda key, default="0": [float(v) for v in (get(key) or default).split()]
            normal = np.array(numbers("ground_normal", "0 0 1"))
            restitution = float(get("restitution") or 1.0)
            self.contacts.append(dict(
                link=bridge.map.link_index[get("link")], xyz=tuple(numbers("xyz", "0 0 0")),
                radius=float(get("radius") or 0.0), height=float(get("ground_height") or 0.0),
                normal=tuple((normal / np.linalg.norm(normal)).tolist()), stiffness=float(get("stiffness")),
                exponent=float(get("exponent") or 1.5), factor=1.5 * (1.0 - restitution) / restitution,
                mu=float(get("mu") or 0.0), v0=float(get("v0") or 1e-4), v1=float(get("v1") or 1e-3),
                impact=0.0))
        self.links = [c["link"] for c in self.contacts]

    def steps(self, steps: int, clock: Callable[[], float]) -> float:
        p, b, c = self.p, self.body, self.client
        joints, links, contacts = self.joints, self.links, self.contacts
        index, k, rest, damping = self.spring_index, self.spring_k, self.spring_rest, self.spring_c
        frame = p.WORLD_FRAME
        stops = self.stops
        start = clock()
        for _ in range(steps):
            (_, q), v = self._read()
            tau = np.zeros(len(joints))
            if len(index):
                q_array, v_array = np.array(q), np.array(v)
                tau[index] = -k * (q_array[index] - rest) - damping * v_array[index]
            if links:
                states = p.getLinkStates(b, links, computeLinkVelocity=1, computeForwardKinematics=1,
                                         physicsClientId=c)
                for contact, state in zip(contacts, states):   # plain floats: cheaper than numpy for 3-vectors
                    (ux, uy, uz, uw), (ax, ay, az) = state[5], contact["xyz"]
                    tx, ty, tz = 2.0 * (uy * az - uz * ay), 2.0 * (uz * ax - ux * az), 2.0 * (ux * ay - uy * ax)
                    arm = (ax + uw * tx + uy * tz - uz * ty, ay + uw * ty + uz * tx - ux * tz,
                           az + uw * tz + ux * ty - uy * tx)   # R(u) xyz
                    point = [o + r for o, r in zip(state[4], arm)]
                    (wx, wy, wz), com = state[7], state[0]
                    rx, ry, rz = point[0] - com[0], point[1] - com[1], point[2] - com[2]
                    velocity = [state[6][0] + wy * rz - wz * ry, state[6][1] + wz * rx - wx * rz,
                                state[6][2] + wx * ry - wy * rx]
                    nx, ny, nz = contact["normal"]
                    depth = contact["radius"] + contact["height"] - (nx * point[0] + ny * point[1] + nz * point[2])
                    if depth <= 0.0:
                        contact["impact"] = 0.0
                        continue
                    rate = -(nx * velocity[0] + ny * velocity[1] + nz * velocity[2])
                    if contact["impact"] <= 0.0:
                        contact["impact"] = max(rate, 1e-3)   # floored as the library floors it (m/s)
                    force_n = max(0.0, contact["stiffness"] * depth ** contact["exponent"]
                                  * (1.0 + contact["factor"] * rate / contact["impact"]))
                    slip = [velocity[0] + rate * nx, velocity[1] + rate * ny, velocity[2] + rate * nz]
                    speed = math.sqrt(slip[0] ** 2 + slip[1] ** 2 + slip[2] ** 2)
                    drag = 0.0
                    if speed > contact["v0"] and contact["mu"]:
                        drag = contact["mu"] * force_n * min(1.0, (speed - contact["v0"])
                                                             / (contact["v1"] - contact["v0"])) / speed
                    radius = contact["radius"]
                    force = [force_n * nx - drag * slip[0], force_n * ny - drag * slip[1],
                             force_n * nz - drag * slip[2]]
                    p.applyExternalForce(b, contact["link"], force,
                                         [point[0] - radius * nx, point[1] - radius * ny, point[2] - radius * nz],
                                         frame, physicsClientId=c)
            sent = tau.tolist()
            if stops:
                self._add_stops(q, v, sent)
            p.setJointMotorControlArray(b, joints, p.TORQUE_CONTROL, forces=sent, physicsClientId=c)
            p.stepSimulation(physicsClientId=c)
        return (clock() - start) / steps


def _hand_loop_steps(bridge, steps: int, clock: Callable[[], float], dynamics: bool | str) -> float:
    loops = bridge.__dict__.setdefault("hand_loops", {})   # built once per timed bridge
    if dynamics not in loops:
        loops[dynamics] = ForcesLoop(bridge) if dynamics == "forces" else HandLoop(bridge, dynamics)
    return loops[dynamics].steps(steps, clock)


def read_send_steps(bridge, steps: int, clock: Callable[[], float]) -> float:
    """Seconds per step of `HandLoop` without dynamics: read the state, send τ = 0, step."""
    return _hand_loop_steps(bridge, steps, clock, False)


def computed_torque_steps(bridge, steps: int, clock: Callable[[], float]) -> float:
    """Seconds per step of `HandLoop` with dynamics: the computed-torque loop τ = h(q, q̇) (q̈_des = 0)."""
    return _hand_loop_steps(bridge, steps, clock, True)


def forces_steps(bridge, steps: int, clock: Callable[[], float]) -> float:
    """Seconds per step of `ForcesLoop`: read, the joint springs' and the ground contacts' forces, send, step."""
    return _hand_loop_steps(bridge, steps, clock, "forces")


def minimal_kind(bridge) -> str:
    """The minimal loop a user writes with PyBullet alone for the same job as `bridge`: "computed_torque" when the
    bridge's step solves with M and h (joint functions or loops), "forces" (`ForcesLoop`) for a model without rows
    whose file has `<contact>`s or joint springs (the bridge computes their forces every step), else "read_send"."""
    if bridge.constraints.n:
        return "computed_torque"
    from biobullet.forces.collection import force_elements
    from biobullet.forces.elements import JointSpring
    if bridge.model.description.elements_of("contact") or any(type(e) is JointSpring
                                                             for e in force_elements(bridge.model)):
        return "forces"
    return "read_send"


def minimal_steps(bridge, steps: int, clock: Callable[[], float]) -> float:
    """Seconds per step of the minimal loop a user writes with PyBullet alone for the same job (`minimal_kind`)."""
    kind = minimal_kind(bridge)
    return _hand_loop_steps(bridge, steps, clock, "forces" if kind == "forces" else kind == "computed_torque")


def bridge_steps(bridge, steps: int, clock: Callable[[], float]) -> float:
    """Seconds per `Bridge.step()`."""
    start = clock()
    for _ in range(steps):
        bridge.step()
    return (clock() - start) / steps


STEP_RUNNERS = {"bare": bare_steps, "minimal": minimal_steps, "bridge": bridge_steps}


#: the runners of the per-model-kind benchmark: both hand-written loops, whichever is the kind's minimal
KIND_RUNNERS = {"bare": bare_steps, "read_send": read_send_steps, "computed_torque": computed_torque_steps,
                "forces": forces_steps, "minimal": minimal_steps, "bridge": bridge_steps}


def bridge_speed(model, *, rounds: int = 100, steps: int = 50, dt: float = 1e-3,
                 keep_bridge: bool = False, runners: Mapping[str, Callable] = STEP_RUNNERS) -> dict[str, Any]:
    """Per-step times of `runners` on their own DIRECT connections, restarted from the model's initial state
    every round, rounds interleaved (each round one block of `steps` steps per runner and clock, the runners' order
    reversed every other round so that none always follows another): {"best"/"median": {clock: {runner: s}},
    "paired": {clock: the bridge / minimal ratio of each round's two adjacent blocks — "median", "q1", "q3", "min",
    "max", "rounds"} (with both runners), "max_residual", "projections", …} — plus "bridge" (the timed Bridge, still
    open: close it) with `keep_bridge`. The paired median is the honest ratio: both loops see the same machine state
    within a round, and one slow block moves a median by one rank, where it moves a best-of-rounds ratio whole."""
    from biobullet.bridge import Bridge

    q0, v0 = model.initial_state()
    bridges = {name: Bridge(model, dt=dt) for name in runners}
    try:
        per_step = {clock: {name: [] for name in runners} for clock in CLOCKS}
        names = list(runners)
        for r in range(rounds):
            order = names if r % 2 == 0 else names[::-1]
            for clock_name, clock in CLOCKS.items():
                for name in order:
                    bridges[name].reset(q0, v0)
                    per_step[clock_name][name].append(runners[name](bridges[name], steps, clock))
        timed = bridges["bridge"]
        result = {
            "best": {c: {n: float(min(t)) for n, t in per.items()} for c, per in per_step.items()},
            "median": {c: {n: float(np.median(t)) for n, t in per.items()} for c, per in per_step.items()},
            # the speed is not bought with accuracy: the timed bridge kept its joint functions
            "max_residual": float(max((abs(r) for r in timed.constraint_residuals().values()), default=0.0)),
            "projections": int(timed.projections),
            "fast_path": bool(timed.uses_null_space),
            "joint_functions": int(timed.constraints.n),
            "minimal_kind": minimal_kind(timed),
        }
        if "minimal" in runners:
            result["paired"] = {c: paired_ratio(per["bridge"], per["minimal"]) for c, per in per_step.items()}
        if keep_bridge:
            result["bridge"] = bridges.pop("bridge")
        return result
    finally:
        for bridge in bridges.values():
            bridge.close()


def paired_ratio(numerator: list[float], denominator: list[float]) -> dict[str, float]:
    """The ratios of paired samples (the same round's blocks): median, quartiles q1 and q3, min, max and the count."""
    ratios = np.asarray(numerator, dtype=float) / np.asarray(denominator, dtype=float)
    q1, median, q3 = np.percentile(ratios, (25.0, 50.0, 75.0))
    return {"median": float(median), "q1": float(q1), "q3": float(q3), "min": float(ratios.min()),
            "max": float(ratios.max()), "rounds": int(len(ratios))}


# ------------------------------------------------------------------------------------------------ the command
def run_bench(*, quick: bool = False, out: str | os.PathLike[str] | None = None,
              log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Both measurements on the bundled models; the summary dict (also written to `out`/bench.json, atomically).
    `quick`: a few rounds of the compiled formulations and Pinocchio only (seconds instead of about a minute;
    noisier)."""
    from biobullet.core import jit
    from biobullet.loader import load_model
    from biobullet.model.bundled import bundled_model
    from biobullet.core.atomic import write_text as write_atomic

    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    f_rounds, b_rounds = (8, 10) if quick else (60, 100)   # quick: also without the slow Python formulations
    summary: dict[str, Any] = {
        "quick": quick, "numba_kernels": jit.ENABLED, "python": platform.python_version(),
        "machine": platform.machine(), "cpu_count": os.cpu_count(), "formulations": {}, "bridge": {}}
    path = None if out is None else os.path.join(os.fspath(out), "bench.json")
    with kept_on_interrupt(summary, path, "the rows measured so far"):
        for name in FORMULATION_MODELS:
            log(f"bench: formulations on {name} …")
            model = load_model(bundled_model(name))
            times = formulation_speed(model, rounds=f_rounds, slow=not quick)
            reference = times[PINOCCHIO]
            summary["formulations"][name] = {
                "nv": model.nv, "n_joints": model.n_tangent,
                "rows": {label: {"us_per_call": s * 1e6, "ratio_to_pinocchio": s / reference}
                         for label, s in times.items()}}
        log(f"bench: bridge steps on {BRIDGE_MODEL} …")
        result = bridge_speed(load_model(bundled_model(BRIDGE_MODEL)), rounds=b_rounds)
        best = result["best"]
        summary["bridge"] = {
            "model": BRIDGE_MODEL, "dt": 1e-3, "rounds": b_rounds,
            "us_per_step": {c: {n: s * 1e6 for n, s in best[c].items()} for c in CLOCKS},
            "ratio_bridge_to_bare": {c: best[c]["bridge"] / best[c]["bare"] for c in CLOCKS},
            "ratio_bridge_to_minimal": {c: best[c]["bridge"] / best[c]["minimal"] for c in CLOCKS},
            "max_joint_function_residual": result["max_residual"], "velocity_projections": result["projections"],
            "fast_path": result["fast_path"], "joint_functions": result["joint_functions"]}
    if path is not None:
        write_atomic(path, json.dumps(summary, indent=2) + "\n")
    return summary


def format_bench(summary: Mapping[str, Any]) -> str:
    """The summary of `run_bench` as text tables."""
    lines = [f"biobullet bench ({'quick' if summary['quick'] else 'full'}; numba kernels: "
             f"{summary['numba_kernels']}; ratios taken in one run)"]
    for name, entry in summary["formulations"].items():
        lines.append(f"\n{name}: mass matrix + bias forces per call (nv = {entry['nv']}, "
                     f"{entry['n_joints']} joints)")
        for label, row in entry["rows"].items():
            lines.append(f"  {label:<36}{row['us_per_call']:10.1f} µs {row['ratio_to_pinocchio']:8.1f}× Pinocchio")
    b = summary["bridge"]
    lines.append(f"\n{b['model']}: per 1 ms step ({b['joint_functions']} joint functions held by the bridge)")
    labels = {"bare": "bare PyBullet step (τ = 0)", "minimal": "minimal computed-torque loop",
              "bridge": "Bridge.step()"}
    for clock in CLOCKS:
        lines.append(f"  [{clock} clock]")
        for runner, label in labels.items():
            us = b["us_per_step"][clock][runner]
            lines.append(f"    {label:<34}{us:8.1f} µs {us / b['us_per_step'][clock]['bare']:6.2f}× bare")
        lines.append(f"    bridge / minimal loop: {b['ratio_bridge_to_minimal'][clock]:.2f}×")
    lines.append(f"  max joint-function residual after the timed steps: {b['max_joint_function_residual']:.1e}")
    return "\n".join(lines)


__all__ = ["PINOCCHIO", "interleaved_best", "pinocchio_call", "formulation_speed", "bare_steps", "minimal_steps", "HandLoop", "read_send_steps",
           "computed_torque_steps", "forces_steps", "minimal_kind", "ForcesLoop", "KIND_RUNNERS",
           "bridge_steps", "bridge_speed", "paired_ratio", "run_bench", "format_bench"]
