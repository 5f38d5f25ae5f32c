"""The engines a user would pick instead, on the same model built from the same numbers: MuJoCo (MJCF written
from a biobullet Model) and Pinocchio's constrained dynamics (`constraintDynamics`, proximal) integrated with
SciPy. Used by the work–precision benchmark (`bench.work_precision`); both are optional (`bench` extra).

MuJoCo model (`mjcf_text`): the same kinematic tree (body placements, joint axes, masses, centres of mass, full
inertia tensors, gravity), with
  - explicit polynomial or one-input linear joint functions of degree ≤ 4 → `<equality><joint polycoef=…>`;
  - loops (point and planar) → `<equality><connect site1 site2>` at the same two points (a point coincidence in
    3-D: for a planar mechanism the out-of-plane row is redundant, which MuJoCo's regularised solver tolerates);
  - point-to-point springs → spatial tendons with the same stiffness, rest length and damping;
  - constant joint torques → `qfrc_applied`;
  - a spherical contact element → a sphere geom on a ground plane (MuJoCo's own soft contact: not the same law);
  - equality constraints as stiff as MuJoCo allows: solref = (2 dt, 1) — the time-constant floor MuJoCo enforces
    (`refsafe`) — and solimp = (0.9999, 0.9999, 0.001).
Anything else (expression functions, other force elements) raises `Unsupported`.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np


class Unsupported(ValueError):
    """The model has an element the competitor cannot represent (the benchmark then leaves it out)."""


def _fmt(values) -> str:
    return " ".join(f"{float(v):.17g}" for v in np.asarray(values, dtype=float).reshape(-1))


def _site_in_body(model, link: str, xyz) -> tuple[int, np.ndarray]:
    frame = model.frame(link)
    return int(frame.body), frame.rotation @ np.asarray(xyz, dtype=float) + frame.translation


def mjcf_text(model, *, dt: float, integrator: str = "RK4") -> tuple[str, dict[str, float]]:
    """(MJCF text, {joint name: constant torque}) of a biobullet Model for MuJoCo."""
    import mujoco

    from biobullet.forces import force_elements
    from biobullet.forces.elements import JointTorque, Spring
    from biobullet.functions.linear import LinearFunction
    from biobullet.functions.polynomial import PolynomialFunction
    from biobullet.model.coordinates import ExplicitFunction

    bodies = model.bodies
    sites: dict[int, list[str]] = {i: [] for i in range(-1, len(bodies))}
    equalities, tendons, torques, geoms = [], [], {}, {i: [] for i in range(-1, len(bodies))}
    names = model.joint_names
    for resolver in model.coordinate_map.resolvers:
        if type(resolver).__name__ == "LoopResolver":   # loop-dependent joints: the loops below
            continue
        if type(resolver) is not ExplicitFunction or len(resolver.inputs) != 1:
            raise Unsupported(f"{type(resolver).__name__}: only one-input polynomial/linear joint functions")
        f = resolver.function
        if type(f) is PolynomialFunction and len(f.coefficients) <= 5:
            coef = list(f.coefficients) + [0.0] * (5 - len(f.coefficients))
        elif type(f) is LinearFunction:
            coef = [f.offset, float(f.coefficients[0]), 0.0, 0.0, 0.0]
        else:
            raise Unsupported(f"joint function {type(f).__name__} has no MuJoCo equality")
        equalities.append(f'<joint joint1="{names[resolver.output]}" joint2="{names[resolver.inputs[0]]}" '
                          f'polycoef="{_fmt(coef)}" EQ/>')
    for k, loop in enumerate(model.description.elements_of("loop")):
        a = loop.attributes
        if a.get("type", "point") not in ("point", "planar"):
            raise Unsupported(f"loop type {a.get('type')}")
        names_ = []
        for end in ("a", "b"):
            body, point = _site_in_body(model, a[f"link_{end}"], np.fromstring(a.get(f"xyz_{end}", "0 0 0"),
                                                                              sep=" "))
            name = f"loop{k}{end}"
            sites[body].append(f'<site name="{name}" pos="{_fmt(point)}"/>')
            names_.append(name)
        equalities.append(f'<connect site1="{names_[0]}" site2="{names_[1]}" EQ/>')
    contact = False
    for e, element in enumerate(force_elements(model)):
        if type(element) is Spring:
            ends = []
            for end, (link, xyz) in enumerate(((element.link_a, element.xyz_a), (element.link_b, element.xyz_b))):
                body, point = _site_in_body(model, link, xyz)
                name = f"spring{e}{end}"
                sites[body].append(f'<site name="{name}" pos="{_fmt(point)}"/>')
                ends.append(name)
            tendons.append(f'<spatial stiffness="{element.stiffness!r}" springlength="{element.rest_length!r}" '
                           f'damping="{element.damping!r}"><site site="{ends[0]}"/><site site="{ends[1]}"/>'
                           '</spatial>')
        elif type(element) is JointTorque and element.value is not None:
            torques[element.joint] = torques.get(element.joint, 0.0) + element.value
        elif type(element).__name__ == "Contact" and getattr(element, "radius", 0.0) > 0.0:
            body, point = _site_in_body(model, element.link, element.xyz)
            geoms[body].append(f'<geom type="sphere" size="{element.radius!r}" pos="{_fmt(point)}"/>')
            contact = True
        else:
            raise Unsupported(f"force element {type(element).__name__} {element.name!r}")

    def body_xml(i: int) -> str:
        b = bodies[i]
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, np.asarray(b.rotation, dtype=float).reshape(9))
        inertia = np.asarray(b.inertia_com, dtype=float)
        full = [inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2], inertia[1, 2]]
        if b.joint_type == "free":
            joint = '<freejoint name="base"/>'
        else:
            kind = "hinge" if b.joint_type == "revolute" else "slide"
            joint = f'<joint name="{b.joint}" type="{kind}" axis="{_fmt(b.axis)}" limited="false"/>'
        children = "".join(body_xml(c) for c in range(len(bodies)) if bodies[c].parent == i)
        return (f'<body name="{b.link}" pos="{_fmt(b.translation)}" quat="{_fmt(quat)}">{joint}'
                f'<inertial pos="{_fmt(b.com)}" mass="{max(b.mass, 1e-9)!r}" fullinertia="{_fmt(full)}"/>'
                + "".join(sites[i]) + "".join(geoms[i]) + children + "</body>")

    eq = f'solref="{2 * dt!r} 1" solimp="0.9999 0.9999 0.001 0.5 2"'
    world = "".join(body_xml(i) for i in range(len(bodies)) if bodies[i].parent < 0)
    text = (f'<mujoco model="{model.name}"><compiler angle="radian"/>'
            f'<option timestep="{dt!r}" integrator="{integrator}" gravity="{_fmt(model.gravity)}" '
            'tolerance="1e-12" iterations="100" jacobian="dense">'
            + ("" if contact else '<flag contact="disable"/>') + "</option>"
            "<worldbody>" + ('<geom type="plane" size="10 10 0.1"/>' if contact else "")
            + "".join(sites[-1]) + world + "</worldbody>"
            + (f"<equality>{''.join(equalities).replace('EQ', eq)}</equality>" if equalities else "")
            + (f"<tendon>{''.join(tendons)}</tendon>" if tendons else "") + "</mujoco>")
    return text, torques


class MujocoRun:
    """One MuJoCo model of a biobullet Model at one (integrator, dt): `run(x0, ẋ0, t_end)` → (x(t_end) in
    biobullet joint order, wall seconds of the stepping alone). Steps in C (`mujoco.rollout`)."""

    def __init__(self, model, dt: float, integrator: str) -> None:
        import mujoco

        text, torques = mjcf_text(model, dt=dt, integrator=integrator)
        self.mj = mujoco.MjModel.from_xml_string(text)
        self.data = mujoco.MjData(self.mj)
        self.dt = dt
        self.model = model
        self.qpos_of = [self.mj.joint(name).qposadr[0] for name in model.joint_names]
        self.dof_of = [self.mj.joint(name).dofadr[0] for name in model.joint_names]
        self.torques = np.zeros(self.mj.nv)
        for name, value in torques.items():
            self.torques[self.mj.joint(name).dofadr[0]] += value

    def run(self, x0: np.ndarray, xd0: np.ndarray, t_end: float) -> tuple[np.ndarray, float]:
        import mujoco
        from mujoco import rollout

        mj, data = self.mj, self.data
        mujoco.mj_resetData(mj, data)
        base_q, base_v = (7, 6) if self.model.floating_base else (0, 0)
        if base_q:   # biobullet (x, y, z, qx, qy, qz, qw), base-frame twist; MuJoCo (x, y, z, qw, qx, qy, qz)
            data.qpos[:3], data.qpos[3], data.qpos[4:7] = x0[:3], x0[6], x0[3:6]
            data.qvel[:6] = xd0[:6]
        data.qpos[self.qpos_of] = x0[base_q:]
        data.qvel[self.dof_of] = xd0[base_v:]
        data.qfrc_applied[:] = self.torques
        mujoco.mj_forward(mj, data)
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        state = np.empty(mujoco.mj_stateSize(mj, spec))
        mujoco.mj_getState(mj, data, state, spec)
        steps = int(round(t_end / self.dt))
        started = time.perf_counter()
        # the constant joint torques as the rollout's "control" (qfrc_applied), else the rollout zeroes them
        states, _ = rollout.rollout(mj, data, state[None, :], self.torques[None, None, :],
                                    control_spec=mujoco.mjtState.mjSTATE_QFRC_APPLIED, nstep=steps)
        wall = time.perf_counter() - started
        final = states[0, -1]
        mujoco.mj_setState(mj, data, final, spec)
        return np.asarray(data.qpos[self.qpos_of], dtype=float).copy(), wall


def pinocchio_loops(model, baumgarte: tuple[float, float] = (0.0, 0.0)) -> tuple[Callable[..., np.ndarray], Any]:
    """Pinocchio's constrained dynamics of a fixed-base model whose coordinate map has loop resolvers only:
    (`accelerations(q, v, tau)` — `pin.constraintDynamics` on its whole tree, in Pinocchio's order, each loop a 3-D
    point constraint between its two points (a planar loop's out-of-plane row is redundant, which the proximal
    solver, 1e-12 / 1e-10 / 20 iterations, tolerates), force elements not included —, the map of our tree order to
    Pinocchio's). `baumgarte` = (Kp, Kd) of every constraint's corrector (zero: exact at a consistent state)."""
    import pinocchio as pin

    resolvers = getattr(model.coordinate_map, "resolvers", ())
    # loops only: an explicit joint function (e.g. the coupled chain's polynomial coupling) is a constraint
    # Pinocchio is not given here, so its run would integrate a different (uncoupled) system
    if model.floating_base or model.coordinate_map.kind != "general" or not resolvers or any(
            type(r).__name__ != "LoopResolver" for r in resolvers):
        raise Unsupported("Pinocchio's constrained dynamics here takes fixed-base loop models only")
    from biobullet.conventions import PinocchioMap, build_pinocchio_model
    pm = build_pinocchio_model(model)
    index = PinocchioMap(model, pm)   # continuous joints are (cos θ, sin θ) in Pinocchio
    data = pm.createData()
    constraints = pin.StdVec_RigidConstraintModel()
    for loop in model.description.elements_of("loop"):
        a = loop.attributes
        ends = []
        for end in ("a", "b"):
            link = a[f"link_{end}"]
            frame = pm.frames[pm.getFrameId(link)]
            point = frame.placement * pin.SE3(np.eye(3), np.fromstring(a.get(f"xyz_{end}", "0 0 0"), sep=" "))
            ends.append((frame.parentJoint, point))
        c = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, ends[0][0], ends[0][1], ends[1][0],
                                     ends[1][1], pin.ReferenceFrame.LOCAL)
        c.setBaumgarteCorrectorParameters(pin.BaumgarteCorrectorParameters(*baumgarte))
        constraints.append(c)
    datas = pin.StdVec_RigidConstraintData()
    for c in constraints:
        datas.append(c.createData())
    pin.initConstraintDynamics(pm, data, constraints, datas)
    settings = pin.ProximalSettings(1e-12, 1e-10, 20)
    return (lambda q, v, tau: pin.constraintDynamics(pm, data, q, v, tau, constraints, datas, settings)), index


def pinocchio_fourbar_rhs(model) -> Callable[[float, np.ndarray], np.ndarray]:
    """ẏ = (v, constraintDynamics(q, v, 0)) of the whole tree of a model with loops (`pinocchio_loops`),
    Baumgarte-stabilised (critically damped: Kp = 100, Kd = 20); a model with force elements is Unsupported (they
    are not passed to Pinocchio here)."""
    from biobullet.forces import force_elements
    if force_elements(model):
        raise Unsupported("force elements are not passed to Pinocchio here")
    accelerations, index = pinocchio_loops(model, baumgarte=(100.0, 20.0))
    n, zero = model.n_config, index.velocity_to_pinocchio(np.zeros(model.n_tangent))

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        q, v = index.config_to_pinocchio(y[:n]), index.velocity_to_pinocchio(y[n:])
        return np.concatenate([y[n:], index.velocity_from_pinocchio(accelerations(q, v, zero))])
    return rhs


def pinocchio_run(rhs, x0: np.ndarray, xd0: np.ndarray, t_end: float, method: str, rtol: float
                  ) -> tuple[np.ndarray, float]:
    """(x(t_end), wall s) of SciPy's `solve_ivp` on Pinocchio's right-hand side (final state only)."""
    from scipy.integrate import solve_ivp
    started = time.perf_counter()
    solution = solve_ivp(rhs, (0.0, t_end), np.concatenate([x0, xd0]), method=method, rtol=rtol,
                         atol=rtol * 1e-3, t_eval=[t_end])
    wall = time.perf_counter() - started
    return solution.y[:len(x0), -1], wall


def available(name: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(name) is not None


__all__ = ["Unsupported", "mjcf_text", "MujocoRun", "pinocchio_loops", "pinocchio_fourbar_rhs", "pinocchio_run",
           "available"]
