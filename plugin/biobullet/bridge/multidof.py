"""Spherical joints (PyBullet's `spherical` URDF joint: 3 DOF, quaternion configuration) on the PyBullet bridge.

The state conversion is `conventions.PyBulletMap` (PyBullet keeps the joint's quaternion, angular velocity and
torque in the child link's inertial frame; biobullet in its link frame, as Pinocchio) and PyBullet's default
spherical motor is switched off by `connection.prepare_body`. What is left is here:

* torques: `setJointMotorControlMultiDofArray(TORQUE_CONTROL)` with τ_pb = R_iᵀ τ per spherical joint (the 1-DOF
  joints keep the bridge's setJointMotorControlArray);
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
        #: the compiled recursion (None with numba disabled: then `mass_and_bias` runs its Python form) and its
        #: (meta, body, gravity) arguments; the bridge's per-step M, h (`Bridge.own_dynamics`) use the same arrays,
        #: so a followed setGravity reaches both
        self.kernel = tree_dynamics_kernel()
        meta, body = pack(self.model)
        self.packed = (meta, bridge._pybullet_inertia(body), np.array(bridge.gravity, dtype=float))

    def mass_and_bias(self, x: np.ndarray, xd: np.ndarray, need_mass: bool = True):
        """(M(x) or None, h(x, ẋ)) in biobullet's tree order (n_tangent): h = RNEA(x, ẋ, 0) with gravity."""
        from biobullet.algorithms.compiled_kernels import tree_dynamics
        x = np.array(x, dtype=float)
        xd = np.array(xd, dtype=float)
        meta, body, gravity = self.packed
        mass, bias = (self.kernel or tree_dynamics)(meta, body, x, xd, xd, gravity, self.model.n_tangent, need_mass,
                                                    True, False)
        return (mass if need_mass else None), bias

    def send(self, torque: np.ndarray) -> None:
        """The spherical joints' part of the tree torque τ (our order, N·m) through TORQUE_CONTROL."""
        p = self._p
        p.setJointMotorControlMultiDofArray(self._body, self._indices, p.TORQUE_CONTROL,
                                            forces=self.map.spherical_torques(torque), physicsClientId=self._client)
