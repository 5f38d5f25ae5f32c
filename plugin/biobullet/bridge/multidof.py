"""Spherical joints (PyBullet's `spherical` URDF joint: 3 DOF, quaternion configuration) on the PyBullet bridge.

The state conversion is `conventions.PyBulletMap` (PyBullet keeps the joint's quaternion, angular velocity and
torque in the child link's inertial frame; biobullet in its link frame, as Pinocchio) and PyBullet's default
spherical motor is switched off by `connection.prepare_body`. What is left is here:

* torques: one `setJointMotorControlMultiDofArray(TORQUE_CONTROL)` call for every joint, τ_pb = R_iᵀ τ per
  spherical joint and [τ] per 1-DOF joint (0.7 µs less than a second call for the 1-DOF joints);
* M and h: PyBullet's calculateMassMatrix / calculateInverseDynamics do not take spherical joints of a fixed-base
  body, so the bridge's general path (joint functions, loops, projections) uses biobullet's own recursions —
  the compiled kernel `algorithms.compiled_kernels.tree_dynamics` with the masses, COMs and inertia tensors PyBullet
  stores for the links (`Bridge._pybullet_inertia`, the body PyBullet integrates; they differ from the file's by
  the float round-off of its principal-axes diagonalisation, ~1e-7 relative, unless `match_inertia` could not
  apply the model's values).
  tests/unit/bridge/test_spherical_bridge.py checks both against Pinocchio and against PyBullet's own forward
  dynamics (the velocity change of one step).
"""
from __future__ import annotations

from operator import itemgetter

import numpy as np

__all__ = ["SphericalJoints"]


class SphericalJoints:
    """The bridge's handling of a body with spherical joints (`Bridge._spherical`; None for other bodies)."""

    def __init__(self, bridge) -> None:
        from biobullet.algorithms.compiled_kernels import pack, tree_dynamics_kernel
        self.map = bridge.map
        self.model = bridge.model
        self._p, self._client, self._body = bridge._p, bridge.client, bridge.body
        self._indices = list(self.map.spherical_indices)
        #: the joints of the one torque call: the spherical joints, then the 1-DOF joints (tree order after the base
        #: and the spherical block of τ, `_first_joint`); `_one_each` splits their list of τ into [τ] entries
        self._joints = self._indices + self.map.joint_indices.tolist()
        self._first_joint = self.model.base_nv
        count = len(self.map.joint_indices)
        self._one_each = (itemgetter(*[slice(k, k + 1) for k in range(count)]) if count > 1
                          else (lambda values: (values,)) if count else (lambda values: ()))
        #: the compiled recursion and its (meta, body, gravity) arguments; the bridge's per-step M, h (`Bridge.own_dynamics`) use the same arrays,
        #: so a followed setGravity reaches both
        self.kernel = tree_dynamics_kernel()
        meta, body = pack(self.model)
        self.packed = (meta, bridge._pybullet_inertia(body), np.array(bridge.gravity, dtype=float))

    def mass_and_bias(self, x: np.ndarray, xd: np.ndarray, need_mass: bool = True):
        """(M(x) or None, h(x, ẋ)) in biobullet's tree order (n_tangent): h = RNEA(x, ẋ, 0) with gravity."""
        x = np.array(x, dtype=float)
        xd = np.array(xd, dtype=float)
        meta, body, gravity = self.packed
        mass, bias = self.kernel(meta, body, x, xd, xd, gravity, self.model.n_tangent, need_mass, True, False)
        return (mass if need_mass else None), bias

    def send(self, torque: np.ndarray) -> None:
        """The joints' part of the tree torque τ (our order, N·m or N) through TORQUE_CONTROL, in one call."""
        p = self._p
        forces = self.map.spherical_torques(torque)   # a new list of [τx, τy, τz] per spherical joint
        forces += self._one_each(torque[self._first_joint:].tolist())
        p.setJointMotorControlMultiDofArray(self._body, self._joints, p.TORQUE_CONTROL, forces=forces,
                                            physicsClientId=self._client)
