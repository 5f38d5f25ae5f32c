"""Oracles: independent implementations of the tree dynamics, used only to check biobullet.

Each oracle loads the SAME URDF file as the Model (Pinocchio: `buildModelFromUrdf`; PyBullet: `loadURDF` with
`URDF_USE_INERTIA_FROM_FILE`, which stops PyBullet from recomputing inertias from collision shapes), with the
model's base type and gravity. Tree quantities are projected through OUR coordinate map θ = f(q, t):
    M_r = Gᵀ M_oracle(x) G,    h_r = Gᵀ RNEA_oracle(x, ẋ, γ),    q̈ = M_r⁻¹ (Q − h_r)
(G and γ are checked separately against finite differences: `check_coordinate_map`). Without joint functions
the Pinocchio oracle's forward dynamics is its own ABA.
"""
from __future__ import annotations

import numpy as np

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
        self.pin_model = build_pinocchio_model(model, self.file)
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
        return self.map.jacobian_from_pinocchio(jac)

    def frame_placement(self, x, link: str) -> tuple[np.ndarray, np.ndarray]:
        pin = self.pin
        pin.framesForwardKinematics(self.pin_model, self.data, self.map.config_to_pinocchio(x))
        placement = self.data.oMf[self.map.frame_id(link)]
        return np.array(placement.rotation), np.array(placement.translation)


def build_pinocchio_model(model, file: str | None = None):
    """Pinocchio model from the Model's own URDF file (or `file`), with the model's base type and gravity."""
    import pinocchio as pin
    file = str(file if file is not None else model.file)
    if any(body.multi_dof and body.joint for body in model.bodies):
        # Pinocchio's URDF parser (urdfdom) knows no "spherical" joint and ignores a planar joint's axis: build
        # the model joint by joint from the file's description (the same parse of the file, Pinocchio's joints)
        from biobullet.model.urdf import load_description
        pin_model = pinocchio_model_from_description(load_description(file), model.floating_base)
        pin_model.gravity.linear = np.array(model.gravity, dtype=float)
        return pin_model
    try:
        if model.floating_base:
            pin_model = pin.buildModelFromUrdf(file, pin.JointModelFreeFlyer())
        else:
            pin_model = pin.buildModelFromUrdf(file)
    except (RuntimeError, ValueError) as exc:
        raise ModelError(f"Pinocchio cannot read the file ({exc})", file=file) from None
    pin_model.gravity.linear = np.array(model.gravity, dtype=float)
    return pin_model


def pinocchio_model_from_description(description, floating_base: bool):
    """A Pinocchio model built with its own joint models from a ModelDescription: JointModelRevoluteUnaligned
    (continuous: RevoluteUnboundedUnaligned), PrismaticUnaligned, Spherical, FreeFlyer, Planar (rotated so that its
    z axis is the URDF axis), every link's inertia appended to its joint (fixed joints welded by Pinocchio), a
    body frame per link. Independent of biobullet's tree compilation and dynamics."""
    import pinocchio as pin
    from biobullet.model.tree import plane_basis
    from biobullet.spatial.rotations import rpy_to_matrix
    pm = pin.Model()
    pm.name = description.name
    root = 0
    if floating_base:
        root = pm.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root_joint")
    links = {link.name: link for link in description.links}
    children: dict[str, list] = {}
    for joint in description.joints:
        children.setdefault(joint.parent, []).append(joint)
    frame_of: dict[str, int] = {}

    def attach(link_name: str, joint_id: int, placement, previous: int) -> None:
        link = links[link_name]
        if link.inertial is not None:
            inertial = link.inertial
            inertia = pin.Inertia(inertial.mass, np.array(inertial.com, dtype=float),
                                  np.array(inertial.inertia, dtype=float))
            pm.appendBodyToJoint(joint_id, inertia, placement)
        frame_of[link_name] = pm.addBodyFrame(link_name, joint_id, placement, previous)

    attach(description.root_link, root, pin.SE3.Identity(), 0)
    stack = [(description.root_link, root, pin.SE3.Identity())]
    while stack:
        link_name, joint_id, placement = stack.pop()
        for joint in children.get(link_name, []):
            origin = placement * pin.SE3(rpy_to_matrix(joint.origin_rpy), np.array(joint.origin_xyz, dtype=float))
            axis = np.array(joint.axis, dtype=float)
            if joint.type == "fixed":
                attach(joint.child, joint_id, origin, frame_of[link_name])
                stack.append((joint.child, joint_id, origin))
                continue
            after = pin.SE3.Identity()   # child link frame in the new joint's frame
            if joint.type == "revolute":
                joint_model = pin.JointModelRevoluteUnaligned(axis)
            elif joint.type == "continuous":
                joint_model = pin.JointModelRevoluteUnboundedUnaligned(axis)
            elif joint.type == "prismatic":
                joint_model = pin.JointModelPrismaticUnaligned(axis)
            elif joint.type == "spherical":
                joint_model = pin.JointModelSpherical()
            elif joint.type == "floating":
                joint_model = pin.JointModelFreeFlyer()
            else:  # planar: Pinocchio's plane is its joint frame's xy plane; turn z onto the URDF axis
                basis = plane_basis(axis)
                origin = origin * pin.SE3(basis, np.zeros(3))
                after = pin.SE3(basis.T, np.zeros(3))
                joint_model = pin.JointModelPlanar()
            new_id = pm.addJoint(joint_id, joint_model, origin, joint.name)
            attach(joint.child, new_id, after, frame_of[link_name])
            stack.append((joint.child, new_id, after))
    return pm


class PyBulletOracle(Oracle):
    """PyBullet's calculateMassMatrix / calculateInverseDynamics (its own DIRECT client).

    Floating bases are supported by both calls (see `conventions` for the base-frame conventions and the
    orientation quirk that `PyBulletMap.inverse_dynamics` works around). Link kinematics are compared through
    `link_velocities` (getLinkState vs our Jacobians); PyBullet's own Jacobians are not used.
    """

    name = "pybullet"

    def __init__(self, model, file: str | None = None) -> None:
        super().__init__(model, file)
        import pybullet as p
        from biobullet.conventions import PyBulletMap
        self.p = p
        self.client = p.connect(p.DIRECT)
        try:
            self.body = p.loadURDF(self.file, useFixedBase=not model.floating_base,
                                   flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=self.client)
        except p.error as exc:
            p.disconnect(self.client)
            raise ModelError(f"PyBullet cannot load the file ({exc})", file=self.file) from None
        p.setGravity(*[float(g) for g in model.gravity], physicsClientId=self.client)
        self.map = PyBulletMap(model, self.body, self.client)
        self.inertia_error = self._inertia_error()

    def _inertia_error(self) -> float:
        """Max |R diag(I) Rᵀ − I_file| (kg·m²) over links: PyBullet's own error in diagonalising the inertias
        of the file it loaded (not a comparison with our model)."""
        from biobullet.spatial.rotations import quaternion_to_matrix
        from biobullet.model.urdf import load_description
        worst = 0.0
        for link in load_description(self.file).links:
            if link.inertial is None or link.name not in self.map.link_index:
                continue
            if self.map.link_index[link.name] < 0 and not self.model.floating_base:
                continue  # PyBullet gives a fixed base zero mass: it does not enter the dynamics
            info = self.p.getDynamicsInfo(self.body, self.map.link_index[link.name], physicsClientId=self.client)
            rotation = quaternion_to_matrix(info[4])
            stored = rotation @ np.diag(info[2]) @ rotation.T
            worst = max(worst, float(np.abs(stored - np.array(link.inertial.inertia)).max()))
        return worst

    def close(self) -> None:
        if self.client is not None:
            self.p.disconnect(self.client)
            self.client = None

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass

    def inertial_parameters(self) -> tuple[np.ndarray, np.ndarray]:
        """(file, PyBullet) arrays of [mass, COM x y z] per link (a link without `<inertial>` has mass 0 in the
        file and in Pinocchio, but PyBullet gives it 1 kg and unit inertia). A fixed root is skipped."""
        ours, theirs = [], []
        for link in self.model.description.links:
            index = self.map.link_index.get(link.name)
            if index is None or (index < 0 and not self.model.floating_base):
                continue
            info = self.p.getDynamicsInfo(self.body, index, physicsClientId=self.client)
            mass = 0.0 if link.inertial is None else link.inertial.mass
            com = np.zeros(3) if link.inertial is None else np.array(link.inertial.com)
            ours.append(np.concatenate([[mass], com if mass > 0 else np.zeros(3)]))
            theirs.append(np.concatenate([[info[0]], np.array(info[3]) if info[0] > 0 else np.zeros(3)]))
        return np.array(ours).reshape(-1, 4), np.array(theirs).reshape(-1, 4)

    def tree_mass_matrix(self, x):
        base = 7 if self.model.floating_base else 0
        mass = self.p.calculateMassMatrix(self.body, self.map.joints_to_pybullet(x[base:]),
                                          physicsClientId=self.client)
        return self.map.mass_matrix_from_pybullet(np.asarray(mass))

    def tree_inverse_dynamics(self, x, xd, xdd):
        return self.map.inverse_dynamics(x, xd, xdd)

    def link_velocities(self, x, xd) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per link: (world linear velocity of PyBullet's link COM, world angular velocity) after a reset."""
        self.map.state_to_pybullet(x, xd)
        out = {}
        for link in self.model.link_names:
            _, _, linear, angular = self.map.link_state(link)
            out[link] = (linear, angular)
        return out


def make_oracle(name: str, model, file: str | None = None) -> Oracle:
    """Oracle `name` for `model`, reading `file` (default: the model's own URDF file)."""
    if name == "pinocchio":
        return PinocchioOracle(model, file)
    if name == "pybullet":
        return PyBulletOracle(model, file)
    raise ModelError(f"unknown oracle {name!r}", attribute="oracles", expected="one of " + ", ".join(ORACLE_NAMES))


def check_coordinate_map(model, q, v, t: float = 0.0, *, step: float = 1e-5) -> tuple[float, float]:
    """Relative errors (G vs central differences of θ(q), γ vs second differences along q + s v).

    G: columns (θ(q + h e_k) − θ(q − h e_k)) / 2h; γ(q, v) at fixed t (when no function uses time) equals
    d²θ/ds² along q(s) = q + s v minus G·0, i.e. (θ(q+hv) − 2θ(q) + θ(q−hv)) / h². Truncation O(h²) and
    rounding O(ε/h²) give ~1e-7 relative at h = 1e-4 for the second difference; both are reported.
    Floating bases are excluded (their block is the identity).
    """
    b = 7 if model.floating_base else 0
    bv = 6 if model.floating_base else 0
    q = np.asarray(q, float)
    v = np.asarray(v, float)
    _, gradient = model.coordinate_gradient(q, t)
    gradient = gradient[bv:, bv:]
    numeric = np.zeros_like(gradient)
    for k in range(gradient.shape[1]):
        dq = np.zeros_like(q)
        dq[b + k] = step
        numeric[:, k] = (model.joint_positions(q + dq, t) - model.joint_positions(q - dq, t)) / (2 * step)
    g_err = np.abs(gradient - numeric).max(initial=0.0) / max(np.abs(gradient).max(initial=0.0), 1.0)
    if model.coordinate_map.uses_time:
        raise ModelError("check_coordinate_map handles time-independent joint functions only", file=model.file)
    _, _, _, gamma = model.joint_state(q, v, t)
    gamma = gamma[bv:]
    h = 1e-4
    dq = np.zeros_like(q)
    dq[b:] = v[bv:] * h
    second = (model.joint_positions(q + dq, t) - 2 * model.joint_positions(q, t)
              + model.joint_positions(q - dq, t)) / h ** 2
    c_err = np.abs(gamma - second).max(initial=0.0) / max(np.abs(gamma).max(initial=0.0), 1.0)
    return float(g_err), float(c_err)
