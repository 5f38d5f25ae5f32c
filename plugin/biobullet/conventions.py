"""Conventions: how biobullet's vectors map onto Pinocchio's and PyBullet's (every claim here is tested).

biobullet (see `model.tree`)
    x  = [base position (3), base quaternion x y z w (4)]? + θ (every 1-DOF joint, URDF file order)
    ẋ  = [base linear velocity of the URDF root-link origin, base angular velocity, both in the ROOT-LINK
          frame (6)]? + θ̇.  Spatial vectors are [linear; angular]; generalized forces are dual to ẋ.
Pinocchio (`pin.buildModelFromUrdf(file[, pin.JointModelFreeFlyer()])`)
    * joints are ordered depth-first (not file order); match them by name (`model.names`);
    * fixed joints become frames; link frames keep their URDF names (`getFrameId(link)`);
    * continuous joints have nq = 2: (cos θ, sin θ); nv = 1;
    * free flyer: q = [position, quaternion x y z w] of the root-link frame, v = [linear; angular] in the
      root-link frame — identical to biobullet's base block.
PyBullet (`loadURDF(file, useFixedBase=..., flags=URDF_USE_INERTIA_FROM_FILE)`)
    * joint index i is also link index i and counts fixed joints; the movable ones (qIndex > −1, in index
      order) make the "dof order" used by calculateMassMatrix / calculateInverseDynamics / resetJointState;
    * the base "position and orientation" is that of the root link's INERTIAL frame: the `<inertial>` origin,
      further rotated onto the principal axes (PyBullet diagonalises the inertia tensor). The offset
      (p_i, R_i) is `getDynamicsInfo(body, -1)[3:5]`; for a fixed base the URDF root frame sits at
      `basePosition`;
    * getBaseVelocity: world-frame linear velocity of the base COM and world-frame angular velocity;
    * getLinkState(..., computeLinkVelocity=1, computeForwardKinematics=1): [0], [1] = link inertial (COM)
      frame pose, exact; [2], [3] = that frame in the URDF link frame; [4], [5] = URDF link frame pose, but
      only to ~1e-8 m (PyBullet rounds it), so `link_state` rebuilds it from [0]–[3]; [6], [7] = world
      linear velocity of the link COM and world angular velocity;
    * floating base, calculateMassMatrix(body, θ) → (6 + n)²: base rows/columns are [ω; v_com] in the
      base INERTIAL frame (angular first, reference point the COM), then the joints in dof order;
    * floating base, calculateInverseDynamics(body, [p_com (3), quat (4), θ], [ω; v_com; θ̇],
      [ω̇; a_com; θ̈]) → [force; moment (about the COM); τ]: inputs angular-first but OUTPUT linear-first;
      all base vectors in the base inertial frame; a_com is the classical acceleration of the COM
      (R_cᵀ d²p_com/dt², i.e. d/dt v_com + ω × v_com); and the quaternion is converted to roll-pitch-yaw
      with getEulerFromQuaternion but rebuilt as INTRINSIC X-Y-Z angles, so a general orientation is
      misread: `pybullet_id_quaternion` returns the quaternion to pass so that PyBullet uses the intended one.
    * spherical joints (JOINT_SPHERICAL; resetJointStateMultiDof / getJointStatesMultiDof /
      setJointMotorControlMultiDofArray): PyBullet's quaternion (x y z w) and 3-vector velocity and torque live in
      the child link's INERTIAL (principal-axes) frame R_i = getDynamicsInfo(body, joint)[4], not in the URDF link
      frame of biobullet's (and Pinocchio's) spherical joint: q_pb = q_i* ⊗ q ⊗ q_i (R_pb = R_iᵀ R R_i),
      ω_pb = R_iᵀ ω, τ_pb = R_iᵀ τ, with q, ω, τ biobullet's (child-frame) ones. Both agree when the link's
      inertia is diagonal in its link frame. PyBullet gives every spherical joint a default motor holding it at
      the identity (POSITION_CONTROL), which TORQUE_CONTROL does not replace: it must be switched off with
      force [0, 0, 0] (`bridge.connection.prepare_body`). calculateMassMatrix / calculateInverseDynamics do not
      take spherical joints of a fixed-base body (the latter fails, the former returns a wrong matrix), so
      `mass_matrix_from_pybullet` / `inverse_dynamics` refuse such bodies. (Spherical claims are tested in
      tests/unit/bridge/test_spherical_bridge.py, the others in tests/unit/test_conventions.py.)
"""
from __future__ import annotations

from itertools import chain
from operator import itemgetter
from typing import NamedTuple

import numpy as np

from biobullet.core.native import import_pybullet, native_output
from biobullet.core import jit
from biobullet.core.errors import ModelError
from biobullet.spatial.rotations import quaternion_multiply, quaternion_to_matrix, skew

__all__ = ["PinocchioMap", "PyBulletMap", "StateConversion", "build_pinocchio_model", "matrix_to_quaternion",
           "pinocchio_model_from_description", "pinocchio_parser_departure", "pybullet_id_quaternion"]


def matrix_to_quaternion(rotation: np.ndarray) -> np.ndarray:
    """Rotation matrix → unit quaternion (x, y, z, w) with w ≥ 0; a non-finite matrix (a diverged PyBullet state)
    gives a NaN quaternion, for the caller's divergence check to name, instead of SciPy's LinAlgError."""
    from scipy.spatial.transform import Rotation
    if not np.all(np.isfinite(rotation)):
        return np.full(4, np.nan)
    quat = Rotation.from_matrix(rotation).as_quat()
    return quat if quat[3] >= 0 else -quat


def pybullet_id_quaternion(rotation: np.ndarray) -> np.ndarray:
    """The quaternion to give PyBullet's floating-base calculateInverseDynamics for base rotation `rotation`.

    PyBullet turns the quaternion into (r, p, y) = getEulerFromQuaternion(quat) and then uses the rotation
    Rx(r) Ry(p) Rz(y) (intrinsic X-Y-Z) instead of Rz(y) Ry(p) Rx(r); we hand it angles that undo this.
    """
    from scipy.spatial.transform import Rotation
    rpy = Rotation.from_matrix(rotation).as_euler("XYZ")
    return Rotation.from_euler("xyz", rpy).as_quat()


#: a getJointStates(MultiDof) entry's position(s) and velocity (velocities)
_POSITION, _VELOCITY = itemgetter(0), itemgetter(1)


#: the rotation helpers of `spatial.rotations` as the per-step kernels below call them (`jit.compiled` binds these
#: names to their compiled twins; the module's other code keeps calling the Python functions)
rotation_of, hamilton_product = quaternion_to_matrix, quaternion_multiply


def _base_pose_py(position, quaternion, base_conjugate, offset, out):
    """PyBullet's base (COM position, inertial-frame quaternion q_pb) → out = our (root-frame position, quaternion
    q = q_pb ⊗ q_i*, unit, w ≥ 0) (7); returns our rotation matrix R. base_conjugate: q_i*, offset: p_i."""
    q = hamilton_product(quaternion, base_conjugate)
    q = q / np.sqrt(np.sum(q * q))
    if q[3] < 0.0:
        q = -q
    rotation = rotation_of(q)
    for i in range(3):
        out[i] = position[i] - (rotation[i, 0] * offset[0] + rotation[i, 1] * offset[1] + rotation[i, 2] * offset[2])
    out[3:7] = q
    return rotation


def _state_from_pybullet_py(raw, floating, base_conjugate, offset, conjugations, rotations, starts, x, xd):
    """Our (x, ẋ) from PyBullet's state in one flat array `raw`: [p_com, q_pb, v_com, ω (world), 13 if floating],
    the joint positions (q_pb (4) per spherical joint, then θ of the 1-DOF joints in model order), then the joint
    velocities (ω_pb (3) per spherical joint, then θ̇). Spherical joints:
    q = K q_pb (K: conjugations[s], q ↦ q_i ⊗ q ⊗ q_i*), ω = R_i ω_pb (rotations[s]) at x[starts[s, 0]:],
    ẋ[starts[s, 1]:] (file order, not the tree's); the 1-DOF joints follow the leading block. See `PyBulletMap`."""
    k = 0
    if floating:
        rotation = pose_of_base(raw[0:3], raw[3:7], base_conjugate, offset, x)
        for i in range(3):   # ω = Rᵀ ω_world, v = Rᵀ v_com − ω × p_i
            xd[3 + i] = rotation[0, i] * raw[10] + rotation[1, i] * raw[11] + rotation[2, i] * raw[12]
            xd[i] = rotation[0, i] * raw[7] + rotation[1, i] * raw[8] + rotation[2, i] * raw[9]
        w0, w1, w2 = xd[3], xd[4], xd[5]
        xd[0] -= w1 * offset[2] - w2 * offset[1]
        xd[1] -= w2 * offset[0] - w0 * offset[2]
        xd[2] -= w0 * offset[1] - w1 * offset[0]
        k = 13
    n_s = conjugations.shape[0]
    jq, jv = 7 * floating + 4 * n_s, 6 * floating + 3 * n_s   # the 1-DOF joints follow the leading block
    n_1 = x.shape[0] - jq
    kv = k + 4 * n_s + n_1   # the velocities
    for s in range(n_s):
        a, b = k + 4 * s, kv + 3 * s
        for i in range(4):
            x[starts[s, 0] + i] = (conjugations[s, i, 0] * raw[a] + conjugations[s, i, 1] * raw[a + 1]
                                   + conjugations[s, i, 2] * raw[a + 2] + conjugations[s, i, 3] * raw[a + 3])
        for i in range(3):
            xd[starts[s, 1] + i] = rotations[s, i, 0] * raw[b] + rotations[s, i, 1] * raw[b + 1] \
                + rotations[s, i, 2] * raw[b + 2]
    for j in range(n_1):
        x[jq + j] = raw[k + 4 * n_s + j]
        xd[jv + j] = raw[kv + 3 * n_s + j]


pose_of_base = _base_pose_py   # bound to its compiled twin in the compiled state kernel


def _spherical_torques_py(torque, rotations, starts, out):
    """out[s] = R_iᵀ τ[starts[s, 1]:+3] (N·m): each spherical joint's torque in PyBullet's frame (see `PyBulletMap`)."""
    for s in range(rotations.shape[0]):
        j = starts[s, 1]
        for i in range(3):
            out[s, i] = rotations[s, 0, i] * torque[j] + rotations[s, 1, i] * torque[j + 1] \
                + rotations[s, 2, i] * torque[j + 2]


class StateConversion(NamedTuple):
    """The constants of PyBullet's raw state → our (x, ẋ) (`_state_from_pybullet_py`) and of the spherical joints'
    torques back (`_spherical_torques_py`), one record for the bridge's per-step kernel: floating base; the base's
    conjugate inertial quaternion q_i* and COM offset p_i (root-link frame); per spherical joint the 4×4 matrix K
    (q = K q_pb), R_i and its (x, ẋ) entries."""
    floating: bool
    base_conjugate: np.ndarray
    offset: np.ndarray
    conjugations: np.ndarray
    rotations: np.ndarray
    starts: np.ndarray


def base_pose_kernel():
    """The compiled `_base_pose_py`."""
    return jit.compiled(_base_pose_py, bind={"rotation_of": quaternion_to_matrix,
                                             "hamilton_product": quaternion_multiply})


def state_kernel():
    """The compiled `_state_from_pybullet_py` (compiled or loaded from numba's cache on first use)."""
    return jit.compiled(_state_from_pybullet_py, bind={"pose_of_base": base_pose_kernel()})


def spherical_torques_kernel():
    """The compiled `_spherical_torques_py`."""
    return jit.compiled(_spherical_torques_py)


class PinocchioMap:
    """Index maps between a biobullet Model and a Pinocchio model built from the same URDF file."""

    def __init__(self, model, pin_model) -> None:
        self.model, self.pin_model = model, pin_model
        base = model.base_nq   # floating base and multi-DOF joints: same coordinates as Pinocchio's joints
        base_v = model.base_nv
        if pin_model.nv != model.n_tangent:
            raise ModelError(f"Pinocchio model has nv={pin_model.nv}, biobullet n_tangent={model.n_tangent}",
                             file=model.file)
        names = list(pin_model.names)
        plain_src, plain_dst, cont_src, cont_dst = [], [], [], []
        tangent = [0] * base_v
        for body in model.bodies:
            if not body.multi_dof:
                continue
            name = body.joint or ("root_joint" if "root_joint" in names else names[1])
            joint = pin_model.joints[names.index(name)]
            plain_src += range(body.q_index, body.q_index + body.nq)
            plain_dst += range(joint.idx_q, joint.idx_q + body.nq)
            tangent[body.v_index:body.v_index + body.nv] = range(joint.idx_v, joint.idx_v + body.nv)
        for k, name in enumerate(model.joint_names):
            if name not in names:
                raise ModelError(f"joint {name!r} not found in the Pinocchio model", file=model.file)
            jid = names.index(name)
            joint = pin_model.joints[jid]
            tangent.append(joint.idx_v)
            if joint.nq == 2:  # continuous: (cos, sin)
                cont_src.append(base + k)
                cont_dst.append(joint.idx_q)
            else:
                plain_src.append(base + k)
                plain_dst.append(joint.idx_q)
        self.plain_src, self.plain_dst = np.array(plain_src, int), np.array(plain_dst, int)
        self.cont_src, self.cont_dst = np.array(cont_src, int), np.array(cont_dst, int)
        self.tangent_index = np.array(tangent, int)  # ours k → Pinocchio v index
        self._frame_ids: dict[str, int] = {}

    def config_to_pinocchio(self, x: np.ndarray) -> np.ndarray:
        """biobullet x → Pinocchio q (continuous joints as cos, sin)."""
        q = np.zeros(self.pin_model.nq)
        q[self.plain_dst] = x[self.plain_src]
        angles = x[self.cont_src]
        q[self.cont_dst] = np.cos(angles)
        q[self.cont_dst + 1] = np.sin(angles)
        return q

    def config_from_pinocchio(self, q: np.ndarray) -> np.ndarray:
        """Pinocchio q → biobullet x (continuous angles by atan2, in (−π, π])."""
        x = np.zeros(self.model.n_config)
        x[self.plain_src] = q[self.plain_dst]
        x[self.cont_src] = np.arctan2(q[self.cont_dst + 1], q[self.cont_dst])
        return x

    def velocity_to_pinocchio(self, xd: np.ndarray) -> np.ndarray:
        """Any tangent vector (velocity, acceleration, generalized force) from our order to Pinocchio's."""
        out = np.zeros(self.pin_model.nv)
        out[self.tangent_index] = xd
        return out

    def velocity_from_pinocchio(self, v: np.ndarray) -> np.ndarray:
        return np.asarray(v)[self.tangent_index]

    def matrix_from_pinocchio(self, matrix: np.ndarray) -> np.ndarray:
        """Pinocchio nv × nv (e.g. the CRBA mass matrix) → our tangent order."""
        return np.asarray(matrix)[np.ix_(self.tangent_index, self.tangent_index)]

    def jacobian_from_pinocchio(self, jacobian: np.ndarray) -> np.ndarray:
        """Pinocchio 6 × nv Jacobian → columns in our tangent order (rows stay [linear; angular])."""
        return np.asarray(jacobian)[:, self.tangent_index]

    def frame_id(self, link: str) -> int:
        if link not in self._frame_ids:
            import pinocchio as pin
            if not self.pin_model.existFrame(link, pin.FrameType.BODY):
                raise ModelError(f"link {link!r} has no Pinocchio body frame", file=self.model.file)
            self._frame_ids[link] = self.pin_model.getFrameId(link, pin.FrameType.BODY)
        return self._frame_ids[link]


#: PyBullet's state requests (getJointState(s), getBasePositionAndOrientation, getLinkState) fail for a body of this
#: many joints or more, fixed joints counted, whatever its degrees of freedom (measured on chains of 127 and 128
#: joints, fixed and floating base; example-robot-data's tiago_dual has 129)
PYBULLET_MAX_JOINTS = 128


class PyBulletMap:
    """Index and frame maps between a biobullet Model and a body loaded in PyBullet from the same file."""

    def __init__(self, model, body_id: int, client: int = 0) -> None:
        p = import_pybullet()   # banner kept off the terminal (core.native)
        multi = [f"{b.joint} ({b.joint_type})" for b in model.bodies
                 if b.multi_dof and b.joint and b.joint_type != "spherical"]
        if multi:
            raise ModelError(f"the PyBullet map (bridge, PyBullet oracle) handles 1-DOF joints, spherical joints and "
                             f"a floating base; joints {', '.join(multi)} are of a type PyBullet's multibody does not "
                             f"simulate from URDF (use the reference engine, `biobullet simulate` without "
                             f"--engine pybullet)", file=model.file)
        self.model, self.body_id, self.client = model, body_id, client
        count = p.getNumJoints(body_id, physicsClientId=client)
        if count >= PYBULLET_MAX_JOINTS:
            raise ModelError(f"PyBullet cannot report the state of a body with {PYBULLET_MAX_JOINTS} or more joints, "
                             f"fixed ones included (its getJointState and getBasePositionAndOrientation fail); this "
                             f"body has {count}: use the reference engine (`biobullet simulate` without --engine "
                             f"pybullet)", file=model.file)
        info = [p.getJointInfo(body_id, i, physicsClientId=client) for i in range(count)]
        joint_index = {i[1].decode(): i[0] for i in info}
        self.link_index: dict[str, int] = {i[12].decode(): i[0] for i in info}
        root = p.getBodyInfo(body_id, physicsClientId=client)[0].decode()
        self.link_index[root] = -1
        missing = [n for n in model.joint_names if n not in joint_index]
        if missing or any(info[joint_index[n]][3] < 0 for n in model.joint_names):
            raise ModelError(f"joints {missing or model.joint_names} do not match the PyBullet body", file=model.file)
        self.joint_indices = np.array([joint_index[n] for n in model.joint_names], int)  # θ_k → PyBullet joint
        #: spherical joints: (PyBullet joint index, q_index, v_index, R_i, q_i) with R_i / q_i the child link's
        #: inertial-frame rotation / quaternion, the frame of PyBullet's joint quaternion and velocity
        spherical = []
        for b in model.bodies:
            if b.joint_type != "spherical":
                continue
            index = joint_index.get(b.joint)
            if index is None or info[index][2] != p.JOINT_SPHERICAL:
                raise ModelError(f"spherical joint {b.joint!r} is not a spherical joint of the PyBullet body",
                                 file=model.file, element=f'<joint name="{b.joint}">')
            quaternion = np.array(p.getDynamicsInfo(body_id, index, physicsClientId=client)[4], float)
            spherical.append((index, b.q_index, b.v_index, quaternion_to_matrix(quaternion), quaternion))
        self.spherical: tuple = tuple(spherical)
        self.spherical_indices: list[int] = [s[0] for s in spherical]
        # the conversions as one block-diagonal product each (per step, no per-joint Python quaternion products):
        # q = K q_pb with K the 4×4 matrix of q ↦ q_i ⊗ q ⊗ q_i* (orthogonal: q_pb = Kᵀ q), ω = R_i ω_pb
        n_s = len(spherical)
        self._sph_q = np.array([i for s in spherical for i in range(s[1], s[1] + 4)], dtype=int)
        self._sph_v = np.array([i for s in spherical for i in range(s[2], s[2] + 3)], dtype=int)
        self._sph_conj = np.zeros((4 * n_s, 4 * n_s))
        self._sph_rot = np.zeros((3 * n_s, 3 * n_s))
        for k, (_, _, _, rotation, inertial) in enumerate(spherical):
            self._sph_conj[4 * k:4 * k + 4, 4 * k:4 * k + 4] = _conjugation_matrix(inertial)
            self._sph_rot[3 * k:3 * k + 3, 3 * k:3 * k + 3] = rotation
        #: True when the body has spherical joints: no calculateMassMatrix / calculateInverseDynamics
        self.multi_dof = bool(spherical)
        # dof order of the 1-DOF joints among themselves (that of calculateMassMatrix for bodies without spherical
        # joints, which PyBullet's calls do not take)
        movable = sorted((i[3], i[0]) for i in info if i[3] > -1 and i[2] != p.JOINT_SPHERICAL)
        if len(movable) != model.n_joints:
            raise ModelError(f"PyBullet has {len(movable)} movable joints, biobullet {model.n_joints}",
                             file=model.file)
        order = {joint: d for d, (_, joint) in enumerate(movable)}
        self.dof_of_joint = np.array([order[j] for j in self.joint_indices], int)  # θ_k → PyBullet dof slot
        base = 6 if model.floating_base else 0
        self.tangent_index = np.concatenate([np.arange(base), base + self.dof_of_joint]).astype(int)
        dyn = p.getDynamicsInfo(body_id, -1, physicsClientId=client)
        self.inertial_position = np.array(dyn[3], float)                  # p_i, root-link frame
        self.inertial_rotation = quaternion_to_matrix(dyn[4])             # R_i, root-link frame
        self.inertial_quaternion = np.array(dyn[4], float)
        a = np.eye(6)
        a[:3, 3:] = -skew(self.inertial_position)                          # v_com = v + ω × p_i
        base_map = np.kron(np.eye(2), self.inertial_rotation.T) @ a        # [v_com; ω] in the inertial frame
        self.base_map_linear_first = base_map
        self.base_map_angular_first = np.vstack([base_map[3:], base_map[:3]])
        # the state read (`state_from_pybullet`): every movable joint in one call (spherical joints first, then the
        # 1-DOF joints in model order), converted by one compiled call (`state_kernel`)
        self._base_conjugate = self.inertial_quaternion * np.array([-1.0, -1.0, -1.0, 1.0])
        self._read_joints = [int(s[0]) for s in spherical] + self.joint_indices.tolist()
        self._raw_size = 13 * bool(model.floating_base) + 7 * n_s + 2 * len(self.joint_indices)
        self._conjugations = np.ascontiguousarray(
            [self._sph_conj[4 * k:4 * k + 4, 4 * k:4 * k + 4] for k in range(n_s)]).reshape(n_s, 4, 4)
        self._rotations = np.ascontiguousarray(
            [self._sph_rot[3 * k:3 * k + 3, 3 * k:3 * k + 3] for k in range(n_s)]).reshape(n_s, 3, 3)
        self._state_entry = None   # the compiled state conversion, made on the first read
        self._p, self._floating = p, bool(model.floating_base)
        self._n_config, self._n_tangent = model.n_config, model.n_tangent
        self._torque_entry, self._torque_out = None, np.empty((n_s, 3))   # the same for the spherical torques
        self._starts = np.array([(s[1], s[2]) for s in spherical], dtype=np.int64).reshape(n_s, 2)
        #: the conversions' constants as one record (the bridge's per-step kernel takes it whole)
        self.conversion = StateConversion(self._floating, self._base_conjugate, self.inertial_position,
                                          self._conjugations, self._rotations, self._starts)

    # ------------------------------------------------------------------ vectors and matrices
    def tangent_map(self, angular_first: bool = True) -> np.ndarray:
        """T with u_pybullet = T ẋ (constant): base block [ω; v_com] (angular_first) in the inertial frame."""
        n = self.model.n_tangent
        t = np.zeros((n, n))
        base = 6 if self.model.floating_base else 0
        if base:
            t[:6, :6] = self.base_map_angular_first if angular_first else self.base_map_linear_first
        t[base + self.dof_of_joint, np.arange(base, n)] = 1.0
        return t

    def joints_to_pybullet(self, theta: np.ndarray) -> list[float]:
        """θ (URDF order) → PyBullet dof order."""
        out = np.zeros(self.model.n_joints)
        out[self.dof_of_joint] = theta
        return out.tolist()

    def _refuse_multi_dof(self, call: str) -> None:
        if self.multi_dof:
            names = ", ".join(b.joint for b in self.model.bodies if b.joint_type == "spherical")
            raise ModelError(f"PyBullet's {call} does not take spherical joints ({names}); use biobullet's own "
                             "recursions (the bridge does)", file=self.model.file)

    def mass_matrix_from_pybullet(self, matrix: np.ndarray) -> np.ndarray:
        """calculateMassMatrix result → M in our tangent order and base convention: Tᵀ M_pb T."""
        self._refuse_multi_dof("calculateMassMatrix")
        t = self.tangent_map(angular_first=True)
        return t.T @ np.asarray(matrix) @ t

    def base_pose_to_pybullet(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(COM position, inertial-frame quaternion x y z w) of the base for our x."""
        rotation = quaternion_to_matrix(x[3:7])
        return rotation @ self.inertial_position + x[:3], matrix_to_quaternion(rotation @ self.inertial_rotation)

    def base_pose_from_pybullet(self, position, quaternion) -> tuple[np.ndarray, np.ndarray]:
        """PyBullet base (COM position, inertial quaternion) → our (root-frame position, quaternion q_pb ⊗ q_i*,
        w ≥ 0)."""
        out = np.empty(7)
        base_pose_kernel()(np.asarray(position, dtype=float), np.asarray(quaternion, dtype=float),
                           self._base_conjugate, self.inertial_position, out)
        return out[:3], out[3:]

    def inverse_dynamics(self, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray) -> np.ndarray:
        """calculateInverseDynamics, converted both ways: generalized forces dual to our ẋ (our order)."""
        p = import_pybullet()   # banner kept off the terminal (core.native)
        self._refuse_multi_dof("calculateInverseDynamics")
        model = self.model
        if not model.floating_base:
            out = p.calculateInverseDynamics(self.body_id, self.joints_to_pybullet(x), self.joints_to_pybullet(xd),
                                              self.joints_to_pybullet(xdd), physicsClientId=self.client)
            return np.asarray(out)[self.dof_of_joint]
        t = self.tangent_map(angular_first=True)
        u, ud = t @ xd, t @ xdd
        ud[3:6] += np.cross(u[:3], u[3:6])  # PyBullet wants the classical COM acceleration
        position, _ = self.base_pose_to_pybullet(x)
        rotation = quaternion_to_matrix(x[3:7]) @ self.inertial_rotation
        positions = np.concatenate([position, pybullet_id_quaternion(rotation), self.joints_to_pybullet(x[7:])])
        out = np.asarray(p.calculateInverseDynamics(self.body_id, positions.tolist(), u.tolist(), ud.tolist(),
                                                    physicsClientId=self.client))
        return self.tangent_map(angular_first=False).T @ out  # output is [force; moment; τ]

    # ------------------------------------------------------------------ state
    def state_to_pybullet(self, x: np.ndarray, xd: np.ndarray) -> None:
        """Reset the PyBullet body to our (x, ẋ)."""
        p = import_pybullet()   # banner kept off the terminal (core.native)
        model, c, b = self.model, self.client, self.body_id
        base = model.base_nq   # floating base (7) and spherical joints (4 each) lead x
        if model.floating_base:
            position, quaternion = self.base_pose_to_pybullet(x)
            p.resetBasePositionAndOrientation(b, position.tolist(), quaternion.tolist(), physicsClientId=c)
            rotation = quaternion_to_matrix(x[3:7])
            v_com = rotation @ (xd[:3] + np.cross(xd[3:6], self.inertial_position))
            p.resetBaseVelocity(b, v_com.tolist(), (rotation @ xd[3:6]).tolist(), physicsClientId=c)
        if self.spherical:
            quaternions, velocities = self.spherical_to_pybullet(x, xd)
            p.resetJointStatesMultiDof(b, self.spherical_indices, quaternions, targetVelocities=velocities,
                                       physicsClientId=c)
        offset = model.base_nv
        for k, joint in enumerate(self.joint_indices):
            p.resetJointState(b, int(joint), float(x[base + k]), float(xd[offset + k]), physicsClientId=c)

    def spherical_to_pybullet(self, x: np.ndarray, xd: np.ndarray) -> tuple[list, list]:
        """PyBullet's (quaternions, angular velocities) of the spherical joints for our (x, ẋ):
        q_pb = q_i* ⊗ q ⊗ q_i and ω_pb = R_iᵀ ω (see the module docstring)."""
        quaternions = (self._sph_conj.T @ np.asarray(x, dtype=float)[self._sph_q]).reshape(-1, 4)
        velocities = (self._sph_rot.T @ np.asarray(xd, dtype=float)[self._sph_v]).reshape(-1, 3)
        return quaternions.tolist(), velocities.tolist()

    def spherical_torques(self, torque: np.ndarray) -> list[list[float]]:
        """τ_pb = R_iᵀ τ of every spherical joint (N·m, our τ (float64, n_tangent) dual to the child-frame ω) for
        setJointMotorControlMultiDofArray (one compiled call)."""
        torque = np.ascontiguousarray(torque, dtype=float)
        entry = self._torque_entry
        if entry is None:
            entry = self._torque_entry = jit.direct_entry(spherical_torques_kernel(), torque,
                                                          self._rotations, self._starts, self._torque_out)
        entry(torque, self._rotations, self._starts, self._torque_out)
        return self._torque_out.tolist()

    def state_from_pybullet(self) -> tuple[np.ndarray, np.ndarray]:
        """Our (x, ẋ) read back from the PyBullet body: `raw_state`, converted by one compiled call
        (`state_kernel`)."""
        raw = self.raw_state()
        x, xd = np.empty(self._n_config), np.empty(self._n_tangent)
        entry = self._state_entry
        if entry is None:
            entry = self._state_entry = jit.direct_entry(state_kernel(), raw, self._floating, self._base_conjugate,
                                                         self.inertial_position, self._conjugations, self._rotations,
                                                         self._starts, x, xd)
        entry(raw, self._floating, self._base_conjugate, self.inertial_position, self._conjugations, self._rotations,
              self._starts, x, xd)
        return x, xd

    def raw_state(self) -> np.ndarray:
        """PyBullet's state of the body as one flat float array (`_state_from_pybullet_py`'s `raw`): the base in two
        calls (pose, velocity), every joint in one call (getJointStatesMultiDof with spherical joints, else
        getJointStates)."""
        # (the client id passed by position, here and below: a keyword makes Python build a dict for the call)
        p, c, b = self._p, self.client, self.body_id
        if self._floating:
            (position, orientation), (linear, angular) = p.getBasePositionAndOrientation(b, c), p.getBaseVelocity(b, c)
        if self.spherical:   # one call for every joint; each entry's position and velocity are tuples: one chain
            # over the base's tuples and theirs, read by fromiter (≈ 0.9 µs less on pybullet_data's humanoid than
            # joining them by tuple concatenation first)
            states = p.getJointStatesMultiDof(b, self._read_joints, c)
            base = (position, orientation, linear, angular) if self._floating else ()
            return np.fromiter(chain(*base, *map(_POSITION, states), *map(_VELOCITY, states)), float,
                               self._raw_size)
        # 1-DOF joints only: getJointStates (numbers, not tuples; 2 µs less on 19 joints); one list built by C-level
        # unpacking, then fromiter (≈ 1 µs less than iterating nested chains; ≈ 0.4 µs less on humanoid.urdf than
        # joining the base's tuples first)
        states = p.getJointStates(b, self._read_joints, c) if self._read_joints else ()
        if self._floating:
            return np.fromiter([*position, *orientation, *linear, *angular, *map(_POSITION, states),
                                *map(_VELOCITY, states)], float, self._raw_size)
        return np.fromiter([*map(_POSITION, states), *map(_VELOCITY, states)], float, self._raw_size)

    def link_state(self, link: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(R, p) of the URDF link frame and (COM linear velocity, angular velocity), world frame."""
        p = import_pybullet()   # banner kept off the terminal (core.native)
        index = self.link_index[link]
        c, b = self.client, self.body_id
        if index < 0:
            position, quaternion = p.getBasePositionAndOrientation(b, physicsClientId=c)
            base_p, base_q = self.base_pose_from_pybullet(position, quaternion)
            linear, angular = p.getBaseVelocity(b, physicsClientId=c)
            return quaternion_to_matrix(base_q), base_p, np.asarray(linear), np.asarray(angular)
        s = p.getLinkState(b, index, computeLinkVelocity=1, computeForwardKinematics=1, physicsClientId=c)
        rotation = quaternion_to_matrix(s[1]) @ quaternion_to_matrix(s[3]).T  # COM frame ∘ inertial offset⁻¹
        position = np.asarray(s[0]) - rotation @ np.asarray(s[2])
        return rotation, position, np.asarray(s[6]), np.asarray(s[7])

    def link_com(self, link: str) -> np.ndarray:
        """PyBullet's inertial-frame origin of `link` in the URDF link frame (m)."""
        p = import_pybullet()   # banner kept off the terminal (core.native)
        index = self.link_index[link]
        if index < 0:
            return self.inertial_position.copy()
        return np.asarray(p.getDynamicsInfo(self.body_id, index, physicsClientId=self.client)[3])


def _conjugation_matrix(quaternion: np.ndarray) -> np.ndarray:
    """The 4×4 matrix K with K q = a ⊗ q ⊗ a* for the unit quaternion a (x y z w); orthogonal, K⁻¹ = Kᵀ."""
    conjugate = quaternion * np.array([-1.0, -1.0, -1.0, 1.0])
    return np.column_stack([quaternion_multiply(quaternion_multiply(quaternion, e), conjugate) for e in np.eye(4)])


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
        with native_output(f"pinocchio.buildModelFromUrdf({file})"):   # urdfdom's C++ warnings: logged (DEBUG)
            if model.floating_base:
                pin_model = pin.buildModelFromUrdf(file, pin.JointModelFreeFlyer())
            else:
                pin_model = pin.buildModelFromUrdf(file)
    except (RuntimeError, ValueError) as exc:
        raise ModelError(f"Pinocchio cannot read the file ({exc})", file=file) from None
    pin_model.gravity.linear = np.array(model.gravity, dtype=float)
    return pin_model


def pinocchio_parser_departure(model, file: str) -> str:
    """Why Pinocchio's URDF parser reads different inertias than the file says, or '' (checked on the file:
    urdfdom drops an `<inertial>` whose `<inertia>` lacks one of its six attributes — the URDF specification
    makes all six required, biobullet and PyBullet default them to 0; under inertia="repair" the model's
    tensors are not the file's)."""
    from biobullet.model.urdf import read_xml
    try:
        robot = read_xml(file)
    except ModelError:
        return ""
    keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    dropped = [link.get("name", "?") for link in robot.findall("link")
               for inertia in link.findall("inertial/inertia") if any(k not in inertia.attrib for k in keys)]
    repaired = [issue[0] for issue in model.description.inertia_issues if issue[3]]
    if file != model.file:
        repaired = []
    reasons = []
    if dropped:
        reasons.append(f"Pinocchio's URDF parser (urdfdom) drops the <inertial> of links {', '.join(dropped[:6])}"
                       f"{' …' if len(dropped) > 6 else ''} (their <inertia> omits attributes it requires)")
    if repaired:
        reasons.append(f"the model repaired the inertia of links {', '.join(repaired[:6])} (inertia=\"repair\")")
    if not reasons:
        return ""
    return "; ".join(reasons) + ": the Pinocchio model is built from Pinocchio's joint models with the model's inertias"


def pinocchio_model_from_description(description, floating_base: bool):
    """A Pinocchio model built with its own joint models from a ModelDescription: JointModelRevoluteUnaligned
    (continuous: RUBZ in a frame turned onto the axis), PrismaticUnaligned, Spherical, FreeFlyer, Planar (rotated so that its
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
    # depth first, one joint at a time: Pinocchio's CRBA assumes every joint's subtree has contiguous indices
    # (nvSubtree); adding all children of a link before their subtrees gives a wrong M on branched trees
    stack = [(joint, description.root_link, root, pin.SE3.Identity())
             for joint in reversed(children.get(description.root_link, []))]
    while stack:
        joint, link_name, joint_id, placement = stack.pop()
        origin = placement * pin.SE3(rpy_to_matrix(joint.origin_rpy), np.array(joint.origin_xyz, dtype=float))
        axis = np.array(joint.axis, dtype=float)
        if joint.type == "fixed":
            attach(joint.child, joint_id, origin, frame_of[link_name])
            stack.extend((j, joint.child, joint_id, origin) for j in reversed(children.get(joint.child, [])))
            continue
        after = pin.SE3.Identity()   # child link frame in the new joint's frame
        if joint.type == "revolute":
            joint_model = pin.JointModelRevoluteUnaligned(axis)
        elif joint.type == "continuous":
            # Pinocchio's Python RevoluteUnboundedUnaligned takes no axis (an ArgumentError, an internal error of
            # `validate`): the z-aligned unbounded revolute in a frame whose z is the axis, as for planar below
            basis = plane_basis(axis)
            origin = origin * pin.SE3(basis, np.zeros(3))
            after = pin.SE3(basis.T, np.zeros(3))
            joint_model = pin.JointModelRUBZ()
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
        stack.extend((j, joint.child, new_id, after) for j in reversed(children.get(joint.child, [])))
    return pm
