"""Oracles: independent implementations of the tree dynamics, used only to check biobullet.

Each oracle loads the SAME URDF file as the Model (Pinocchio: `buildModelFromUrdf`; PyBullet: `loadURDF` with
`URDF_USE_INERTIA_FROM_FILE`, which stops PyBullet from recomputing inertias from collision shapes, and without
collision or visual shapes), with the model's base type and gravity. Tree quantities are projected through OUR
coordinate map θ = f(q, t):
    M_r = Gᵀ M_oracle(x) G,    h_r = Gᵀ RNEA_oracle(x, ẋ, γ),    q̈ = M_r⁻¹ (Q − h_r)
(G and γ are checked separately against finite differences in tests/validation/test_oracles.py). Without joint functions
the Pinocchio oracle's forward dynamics is its own ABA.
"""
from __future__ import annotations

import os
import re
import tempfile
import xml.etree.ElementTree as ElementTree
from contextlib import contextmanager

import numpy as np

from biobullet.conventions import (build_pinocchio_model, pinocchio_model_from_description,  # noqa: F401  (re-exported)
                                   pinocchio_parser_departure)
from biobullet.core.native import import_pybullet, native_output
from biobullet.core.errors import ModelError

ORACLE_NAMES = ("pinocchio", "pybullet")


class Oracle:
    """Reduced quantities from an oracle's tree mass matrix and inverse dynamics (our vector conventions)."""

    name = ""
    has_jacobians = False

    def tree_mass_matrix(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def tree_inverse_dynamics(self, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def tree_forward_dynamics(self, x, xd, tau) -> np.ndarray | None:
        return None

    def __init__(self, model, file: str | None = None) -> None:
        self.model = model
        self.file = str(file if file is not None else model.file)  # the URDF the oracle reads
        self.notes: list[str] = []   # where the oracle departs from the file, and what was done about it
        self.subject = model          # the biobullet model compared with this oracle (same robot as the oracle's)

    def body_inertias(self) -> dict[str, np.ndarray]:
        """Per body (or link): [mass, COM (3), rotational inertia about the COM (9)] as the oracle holds it,
        compared with `ours_inertias`."""
        raise NotImplementedError

    def ours_inertias(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def inertia_scales(self) -> dict[str, np.ndarray]:
        """Per key of `ours_inertias`: what each of its 13 entries is judged against, the body's own size
        (`own_inertia_scales`)."""
        raise NotImplementedError

    def mass_matrix(self, q, t: float = 0.0) -> np.ndarray:
        x, gradient = self.model.coordinate_gradient(q, t)
        return gradient.T @ self.tree_mass_matrix(x) @ gradient

    def bias_forces(self, q, v, t: float = 0.0) -> np.ndarray:
        x, xd, gradient, gamma = self.model.joint_state(q, v, t)
        return gradient.T @ self.tree_inverse_dynamics(x, xd, gamma)

    def forward_dynamics(self, q, v, tau, t: float = 0.0) -> np.ndarray:
        model = self.model
        if model.coordinate_map.identity and not model.coordinate_map.uses_time:
            x, xd, _, _ = model.joint_state(q, v, t)
            direct = self.tree_forward_dynamics(x, xd, tau)
            if direct is not None:
                return direct
        return np.linalg.solve(self.mass_matrix(q, t), tau - self.bias_forces(q, v, t))


class PinocchioOracle(Oracle):
    """Pinocchio's C++ CRBA, RNEA, ABA and frame Jacobians (LOCAL_WORLD_ALIGNED)."""

    name = "pinocchio"
    has_jacobians = True

    def __init__(self, model, file: str | None = None) -> None:
        super().__init__(model, file)
        import pinocchio as pin
        from biobullet.conventions import PinocchioMap
        self.pin = pin
        self.pin_model = build_pinocchio_model(model, self.file)   # urdfdom's C++ warnings: logged (conventions)
        departure = pinocchio_parser_departure(model, self.file)
        if departure:
            # Pinocchio's URDF parser departs from the file here: use Pinocchio's joint models on the file's
            # own inertias (the oracle then still checks the dynamics algorithms, not the parse)
            self.notes.append(departure)
            self.pin_model = pinocchio_model_from_description(model.description, model.floating_base)
            self.pin_model.gravity.linear = np.array(model.gravity, dtype=float)
        self.data = self.pin_model.createData()
        self.map = PinocchioMap(model, self.pin_model)

    def tree_mass_matrix(self, x):
        q = self.map.config_to_pinocchio(x)
        mass = self.pin.crba(self.pin_model, self.data, q)
        mass = np.triu(mass) + np.triu(mass, 1).T  # crba fills the upper triangle
        return self.map.matrix_from_pinocchio(mass)

    def tree_inverse_dynamics(self, x, xd, xdd):
        m = self.map
        tau = self.pin.rnea(self.pin_model, self.data, m.config_to_pinocchio(x), m.velocity_to_pinocchio(xd),
                            m.velocity_to_pinocchio(xdd))
        return m.velocity_from_pinocchio(tau)

    def tree_forward_dynamics(self, x, xd, tau):
        m = self.map
        a = self.pin.aba(self.pin_model, self.data, m.config_to_pinocchio(x), m.velocity_to_pinocchio(xd),
                         m.velocity_to_pinocchio(tau))
        return m.velocity_from_pinocchio(a)

    def frame_jacobian(self, x, link: str) -> np.ndarray:
        """6 × n_tangent, [linear; angular], LOCAL_WORLD_ALIGNED, at the link-frame origin."""
        pin = self.pin
        jac = pin.computeFrameJacobian(self.pin_model, self.data, self.map.config_to_pinocchio(x),
                                       self.map.frame_id(link), pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        # Pinocchio's Python binding returns a 1-D array for nv = 1
        return self.map.jacobian_from_pinocchio(np.asarray(jac).reshape(6, self.pin_model.nv))

    def body_inertias(self) -> dict[str, np.ndarray]:
        """Pinocchio's `model.inertias` of every joint's body, in the world frame at the neutral configuration."""
        pin = self.pin
        pin.forwardKinematics(self.pin_model, self.data, pin.neutral(self.pin_model))
        names = list(self.pin_model.names)
        out = {}
        for body in self.model.bodies:
            name = body.joint or "root_joint"
            if name not in names:
                continue
            jid = names.index(name)
            inertia, placement = self.pin_model.inertias[jid], self.data.oMi[jid]
            rotation = np.array(placement.rotation)
            out[_body_key(body)] = _inertia_vector(
                inertia.mass, rotation @ np.array(inertia.lever) + np.array(placement.translation),
                rotation @ np.array(inertia.inertia) @ rotation.T)
        return out

    def ours_inertias(self) -> dict[str, np.ndarray]:
        """Our bodies' inertias in the world frame at the same neutral configuration."""
        from biobullet.algorithms.kinematics import body_placements
        x = self.map.config_from_pinocchio(self.pin.neutral(self.pin_model))
        out = {}
        for body, (rotation, position) in zip(self.model.bodies, body_placements(self.model, x)):
            out[_body_key(body)] = _inertia_vector(body.mass, rotation @ body.com + position,
                                                   rotation @ body.inertia_com @ rotation.T)
        return out

    def inertia_scales(self) -> dict[str, np.ndarray]:
        return {_body_key(body): own_inertia_scales(body.mass, body.com, body.inertia_com)
                for body in self.model.bodies}


_PYBULLET_TAG = re.compile(r"b3(Error|Warning|Printf)\[[^\]\n]*\]:")


def native_errors(text: str) -> list[str]:
    """The error messages in an oracle's native output, one line each: urdfdom's `Error:   MESSAGE` (its
    `at line N in FILE` continuation dropped) and PyBullet's `b3Error[FILE,LINE]:` followed by the message."""
    errors: list[str] = []
    for line in text.splitlines():
        if line.startswith("Error:"):
            errors.append(line[len("Error:"):])
    pieces = _PYBULLET_TAG.split(text)   # [before, kind, message, kind, message, ...]
    errors += [message.strip().split("\n")[0] for kind, message in zip(pieces[1::2], pieces[2::2])
               if kind == "Error"]
    kept: list[str] = []
    for error in errors:
        error = " ".join(error.split())
        if error and error not in kept:
            kept.append(error)
    return kept


@contextmanager
def _unit_axes(file: str):
    """(the path PyBullet loads, the joints whose axes were made unit): `file`, or where a joint axis is not of unit length a copy with unit axes in a
    temporary folder. PyBullet's multibody turns a joint about the unit axis but gives the link the angular
    velocity axis·θ̇ (`bridge.connection.non_unit_axes`): its link velocities left the model's (and Pinocchio's)
    by the axis' length − 1 (6e-2 for an axis of length 1.06), a disagreement of PyBullet's, not the model's."""
    from biobullet.bridge.connection import non_unit_axes
    from biobullet.model.urdf import read_xml
    try:
        robot = read_xml(file)
    except ModelError:
        robot = None
    axes = non_unit_axes(robot) if robot is not None else []
    if not axes:
        yield file, []
        return
    for _, axis, unit in axes:
        axis.set("xyz", " ".join(repr(float(c)) for c in unit))
    for link in robot.iter("link"):   # (the oracle loads no shapes, and the copy's folder has no meshes beside it)
        for shape in link.findall("visual") + link.findall("collision"):
            link.remove(shape)
    with tempfile.TemporaryDirectory(prefix="biobullet-") as folder:
        path = os.path.join(folder, os.path.basename(file))
        with open(path, "wb") as handle:
            handle.write(ElementTree.tostring(robot, encoding="utf-8", xml_declaration=True))
        yield path, [name for name, _, _ in axes]


def _body_key(body) -> str:
    return f"body of joint {body.joint}" if body.joint else f"floating base {body.link}"


def own_inertia_scales(mass: float, com, inertia) -> np.ndarray:
    """The scales of a body's [mass, COM (3), inertia about the COM (9)] (`_inertia_vector`): its own size. Mass:
    m (kg); COM: ℓ = √(trace I_c / m + |c|²) (m), c the COM in the body's own frame; inertia: trace I_c + m|c|²
    (kg·m², its inertia about its frame origin, summed over axes — what its joint sees, and what a tensor shifted
    there and back, as a merge of fixed links does, keeps to ε). A 1e-6 kg sensor is judged on its own size, not
    absolutely in SI units (where any error below 1e-9 passed). 0 where the body has no such size (massless)."""
    mass = float(mass)
    com = np.asarray(com, float)
    moment = float(np.trace(np.asarray(inertia, float))) + mass * float(com @ com)
    length = float(np.sqrt(moment / mass)) if mass > 0.0 else 0.0
    return np.concatenate([[mass], np.full(3, length), np.full(9, moment)])


def _inertia_vector(mass: float, com, inertia) -> np.ndarray:
    """[mass, COM (zero when massless: it is then undefined), inertia about the COM (9)]."""
    com = np.asarray(com, float) if mass > 0 else np.zeros(3)
    return np.concatenate([[float(mass)], com, np.asarray(inertia, float).reshape(9)])


class PyBulletOracle(Oracle):
    """PyBullet's calculateMassMatrix / calculateInverseDynamics (its own DIRECT client).

    Floating bases are supported by both calls (see `conventions` for the base-frame conventions and the
    orientation quirk that `PyBulletMap.inverse_dynamics` works around). Link kinematics are compared through
    `link_velocities` (getLinkState vs our Jacobians); PyBullet's own Jacobians are not used.

    Spherical joints (fixed base): those two calls do not take them, so the oracle gives no M and h and compares
    PyBullet's own forward dynamics instead — the velocity change of one semi-implicit Euler step from the state
    (exact: v₊ = v + dt·v̇(x, v)), torques through `setJointMotorControlMultiDofArray`, the body prepared as the
    bridge prepares it (default spherical motors, velocity motors, damping and 1-DOF limits off) — plus link
    velocities and inertias. With joint functions or a floating base only the link velocities and inertias.
    """

    name = "pybullet"

    def __init__(self, model, file: str | None = None) -> None:
        super().__init__(model, file)
        from biobullet.conventions import PyBulletMap
        p = import_pybullet()   # build banner and URDF warnings are logged (biobullet --verbose), not printed
        multi = [b.joint for b in model.bodies if b.multi_dof and b.joint and b.joint_type != "spherical"]
        if multi:   # PyBullet's multibody has no URDF planar or floating joint
            raise ModelError(f"PyBullet's multibody takes 1-DOF joints, spherical joints and a floating base only "
                             f"(joints {', '.join(multi)} are planar or floating)", file=self.file)
        root = model.description.link(model.description.root_link)
        if model.floating_base and (root.inertial is None or root.inertial.mass == 0.0):
            raise ModelError(f"PyBullet makes a body whose base link is massless static, so it cannot be the "
                             f"oracle of a floating base on the massless root link {root.name!r}", file=self.file)
        self.p = p
        self.client = p.connect(p.DIRECT)
        try:
            with native_output(f"pybullet.loadURDF({self.file})"), _unit_axes(self.file) as (urdf, skewed):
                # no collision or visual shapes: the oracle steps no contact, and parsing their meshes took 99 %
                # of the load (corpus: 41 s of CPU for 226 loads, 0.6 s without; every link's mass, inertia,
                # inertial frame and joint identical with and without them)
                self.body = p.loadURDF(urdf, useFixedBase=not model.floating_base,
                                       flags=(p.URDF_USE_INERTIA_FROM_FILE | p.URDF_IGNORE_COLLISION_SHAPES
                                              | p.URDF_IGNORE_VISUAL_SHAPES), physicsClientId=self.client)
        except p.error as exc:
            p.disconnect(self.client)
            self.client = None
            raise ModelError(f"PyBullet cannot load the file ({exc})", file=self.file) from None
        p.setGravity(*[float(g) for g in model.gravity], physicsClientId=self.client)
        self.map = PyBulletMap(model, self.body, self.client)
        #: spherical joints: no calculateMassMatrix / calculateInverseDynamics, PyBullet's own step instead
        self.spherical = self.map.multi_dof
        if self.spherical:
            self._prepare_spherical()
        self._match_inertia()
        if model.n_tangent and not self.spherical:
            try:   # Bullet's inverse dynamics checks the inertias the oracle set (the file's): a tensor breaking
                # the triangle inequality (OpenSim's WalkerModel) makes calculateMassMatrix fail at every call
                self.tree_mass_matrix(model.joint_configuration(model.neutral_configuration()))
            except (p.error, SystemError):
                self.close()
                raise ModelError("PyBullet's inverse dynamics refuses the file's inertia tensors",
                                 file=self.file) from None
        self.inertia_error, self.inertia_error_relative = self._inertia_error()
        self.kinematic_tolerance = 0.0
        if skewed:   # (romeo's "0.573576 0.819152 1.05097e-07", norm 1 − 9e-7, left link velocities 1e-7 apart)
            self.notes.append(f"PyBullet is given unit joint axes for {', '.join(skewed[:4])}"
                              f"{' …' if len(skewed) > 4 else ''} (the file's are not of unit length; its multibody "
                              f"gives a link the angular velocity axis·θ̇)")
        # PyBullet's calculateInverseDynamics on a fixed base takes gravity in the root link's INERTIAL frame
        # without rotating it there: with an `rpy` on the root's <inertial> (R_i ≠ 1) the gravity terms are
        # wrong. The oracle passes R_iᵀ g instead (measured below once, to report by how much it matters).
        self._gravity_fix = (not model.floating_base
                             and float(np.abs(self.map.inertial_rotation - np.eye(3)).max()) > 1e-12)
        if self._gravity_fix and model.n_tangent and not self.spherical:
            x = np.zeros(model.n_config)
            zero = np.zeros(model.n_tangent)
            fixed = self.tree_inverse_dynamics(x, zero, zero)
            raw = np.asarray(p.calculateInverseDynamics(self.body, self.map.joints_to_pybullet(x),
                                                        zero.tolist(), zero.tolist(), physicsClientId=self.client)
                             )[self.map.dof_of_joint]
            self.notes.append(f"PyBullet's calculateInverseDynamics applies gravity in the root link's inertial "
                              f"frame, which the file rotates (rpy on the root's <inertial>): its gravity torques are "
                              f"wrong by up to {np.abs(raw - fixed).max():.3g} N·m (of {np.abs(fixed).max():.3g}) at "
                              f"x = 0; the oracle passes gravity rotated into that frame (R_iᵀ g), which "
                              f"corrects them")

    def _prepare_spherical(self) -> None:
        """The body as the bridge prepares it, a 1 ms step, and a note on what is compared. A spherical `<limit>`
        (PyBullet's cone constraint, not removable) leaves PyBullet's forward dynamics out."""
        from biobullet.bridge.connection import prepare_body
        self._limited = ""
        try:
            prepare_body(self.model, self.client, self.body, self.map.joint_indices, joint_limits=False)
        except ModelError as exc:   # raised after the body is prepared
            self._limited = exc.detail if hasattr(exc, "detail") else str(exc)
        self.p.setTimeStep(1e-3, physicsClientId=self.client)
        names = ", ".join(b.joint for b in self.model.bodies if b.joint_type == "spherical")
        if self._steps_forward_dynamics():
            compared = ("its own forward dynamics (the velocity change of one step, torques through "
                        "setJointMotorControlMultiDofArray), link velocities and inertias")
        elif self._limited:
            compared = f"link velocities and inertias (forward dynamics not compared: {self._limited})"
        else:
            compared = ("link velocities and inertias (a step gives no reduced forward dynamics with joint functions "
                        "or a floating base)")
        self.notes.append(f"PyBullet's calculateMassMatrix / calculateInverseDynamics do not take spherical joints "
                          f"({names}): PyBullet is compared on {compared}, not on M and h")

    def _steps_forward_dynamics(self) -> bool:
        cmap = self.model.coordinate_map
        return not self.model.floating_base and cmap.identity and not cmap.uses_time and not self._limited

    def mass_matrix(self, q, t: float = 0.0):
        return None if self.spherical else super().mass_matrix(q, t)

    def bias_forces(self, q, v, t: float = 0.0):
        return None if self.spherical else super().bias_forces(q, v, t)

    def forward_dynamics(self, q, v, tau, t: float = 0.0):
        if not self.spherical:
            return super().forward_dynamics(q, v, tau, t)
        if not self._steps_forward_dynamics():
            return None
        x, xd, _, _ = self.model.joint_state(q, v, t)
        return self.tree_forward_dynamics(x, xd, np.asarray(tau, dtype=float))

    def tree_forward_dynamics(self, x, xd, tau):
        """PyBullet's ẍ from one step of its semi-implicit Euler (spherical joints, fixed base; else None)."""
        if not self.spherical or not self._steps_forward_dynamics():
            return None
        p, c, b, m = self.p, self.client, self.body, self.map
        m.state_to_pybullet(x, xd)
        if len(m.joint_indices):
            p.setJointMotorControlArray(b, m.joint_indices.tolist(), p.TORQUE_CONTROL,
                                        forces=tau[self.model.base_nv:].tolist(), physicsClientId=c)
        p.setJointMotorControlMultiDofArray(b, m.spherical_indices, p.TORQUE_CONTROL, forces=m.spherical_torques(tau),
                                            physicsClientId=c)
        dt = float(p.getPhysicsEngineParameters(physicsClientId=c)["fixedTimeStep"])
        p.stepSimulation(physicsClientId=c)
        return (m.state_from_pybullet()[1] - np.asarray(xd, dtype=float)) / dt

    def _match_inertia(self) -> None:
        """Apply the bridge's `match_inertia` (PyBullet's 1 kg for links without <inertial>, its zeroed
        triangle-inequality violators, repaired tensors) and say so."""
        import warnings
        from biobullet.bridge.inertia import match_inertia
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            description = self.model.description
            if os.path.abspath(self.file) != os.path.abspath(self.model.file):   # the oracle reads another file
                from biobullet.model.urdf import load_description
                description = load_description(self.file, self.model.floating_base, description.inertia_policy)
            changed, impossible = match_inertia(self.model, self.client, self.body, self.map.link_index,
                                                description)
        self._file_description, self._unmatched = description, set(impossible)
        if changed:
            self.notes.append(f"PyBullet departs from the file's inertia on links {', '.join(changed[:8])}"
                              f"{' …' if len(changed) > 8 else ''} (1 kg for a link without <inertial>, zero for a "
                              f"tensor violating the triangle inequality); the oracle sets the model's values with "
                              f"changeDynamics, as the bridge does")
        if impossible:
            # PyBullet replaced these tensors (triangle inequality violated: by zero) in an inertial frame that
            # does not diagonalise the file's tensor, so changeDynamics cannot restore them: compare PyBullet with
            # biobullet run on PyBullet's values for these links (the same robot), and say so
            self.subject = self._subject_with_pybullet_inertia(impossible)
            self.notes.append(f"PyBullet replaced the inertia of links {', '.join(impossible[:8])}"
                              f"{' …' if len(impossible) > 8 else ''} (physically impossible tensors: zero, or the "
                              f"diagonal) and cannot take the model's values after loading: the comparison with "
                              f"PyBullet runs biobullet on PyBullet's values for these links")

    def _subject_with_pybullet_inertia(self, links: list[str]):
        import dataclasses
        from biobullet.model.description import InertialDescription
        from biobullet.dynamics.api import build_model
        theirs = self.body_inertias()
        replaced = []
        for link in self.model.description.links:
            if link.name in links and link.inertial is not None:
                vector = theirs[f"link {link.name}"]
                inertial = InertialDescription(mass=float(vector[0]), com=tuple(float(c) for c in vector[1:4]),
                                               inertia=tuple(tuple(float(v) for v in row)
                                                             for row in vector[4:].reshape(3, 3)))
                link = dataclasses.replace(link, inertial=inertial)
            replaced.append(link)
        return build_model(dataclasses.replace(self.model.description, links=tuple(replaced)))

    def tree_inverse_dynamics(self, x, xd, xdd):
        if not self._gravity_fix:
            return self.map.inverse_dynamics(x, xd, xdd)
        p, c = self.p, self.client
        gravity = np.array(self.model.gravity, dtype=float)
        p.setGravity(*(self.map.inertial_rotation.T @ gravity).tolist(), physicsClientId=c)
        try:
            return self.map.inverse_dynamics(x, xd, xdd)
        finally:
            p.setGravity(*gravity.tolist(), physicsClientId=c)

    def _inertia_error(self) -> tuple[float, float]:
        """(max |R diag(I) Rᵀ − I_file| (kg·m²), max of it over the link's own size, `own_inertia_scales`) over
        links: PyBullet's own error in diagonalising the inertias of the file it read (not a comparison with our
        model; links it cannot take are left out). The absolute one bounds M's and h's errors (against their
        largest entries); the per-link one q̈'s, each link's error acting on its own acceleration."""
        theirs = self.body_inertias()
        worst = relative = 0.0
        for link in self._file_description.links:
            key = f"link {link.name}"
            if key not in theirs or link.inertial is None or link.name in self._unmatched:
                continue
            error = float(np.abs(np.array(link.inertial.inertia).reshape(9) - theirs[key][4:]).max())
            size = own_inertia_scales(*_link_inertial(link))[4]
            worst = max(worst, error)
            relative = max(relative, error / size if size > 0.0 else error)
        return worst, relative

    def ours_inertias(self) -> dict[str, np.ndarray]:
        """Each URDF link's [mass, COM, inertia about the COM] in its link frame as the model has it (zero without
        <inertial>; the policy's repaired tensors). A fixed root is skipped (PyBullet gives it no mass)."""
        out = {}
        for link in self.subject.description.links:
            index = self.map.link_index.get(link.name)
            if index is None or (index < 0 and not self.model.floating_base):
                continue
            out[f"link {link.name}"] = _inertia_vector(*_link_inertial(link))
        return out

    def inertia_scales(self) -> dict[str, np.ndarray]:
        """`own_inertia_scales` of each link of `ours_inertias` (in its link frame: c from the link's origin)."""
        return {f"link {link.name}": own_inertia_scales(*_link_inertial(link))
                for link in self.subject.description.links}

    def body_inertias(self) -> dict[str, np.ndarray]:
        """getDynamicsInfo per link: mass, inertial-frame position and R diag(I) Rᵀ."""
        from biobullet.spatial.rotations import quaternion_to_matrix
        out = {}
        for link in self.model.description.links:
            index = self.map.link_index.get(link.name)
            if index is None or (index < 0 and not self.model.floating_base):
                continue
            info = self.p.getDynamicsInfo(self.body, index, physicsClientId=self.client)
            rotation = quaternion_to_matrix(info[4])
            out[f"link {link.name}"] = _inertia_vector(info[0], info[3], rotation @ np.diag(info[2]) @ rotation.T)
        return out

    def close(self) -> None:
        if self.client is not None:
            self.p.disconnect(self.client)
            self.client = None

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass

    def tree_mass_matrix(self, x):
        base = 7 if self.model.floating_base else 0
        mass = self.p.calculateMassMatrix(self.body, self.map.joints_to_pybullet(x[base:]),
                                          physicsClientId=self.client)
        return self.map.mass_matrix_from_pybullet(np.asarray(mass))

    def link_velocities(self, x, xd) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per link: (world linear velocity of PyBullet's link COM, world angular velocity) after a reset."""
        self.map.state_to_pybullet(x, xd)
        out = {}
        for link in self.model.link_names:
            _, _, linear, angular = self.map.link_state(link)
            out[link] = (linear, angular)
        return out


def _link_inertial(link) -> tuple[float, np.ndarray, np.ndarray]:
    """A URDF link's (mass, COM in its frame, inertia about the COM): zero without <inertial>."""
    if link.inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    return float(link.inertial.mass), np.asarray(link.inertial.com, float), np.asarray(link.inertial.inertia, float)


def make_oracle(name: str, model, file: str | None = None) -> Oracle:
    """Oracle `name` for `model`, reading `file` (default: the model's own URDF file)."""
    if name == "pinocchio":
        return PinocchioOracle(model, file)
    if name == "pybullet":
        return PyBulletOracle(model, file)
    raise ModelError(f"unknown oracle {name!r}", attribute="oracles", expected="one of " + ", ".join(ORACLE_NAMES))
