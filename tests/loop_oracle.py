"""Pinocchio oracle for closed loops: its constraint dynamics (`RigidConstraintModel` + `constraintDynamics`).

Loops map to Pinocchio constraints between the two links' parent joints, anchored at the loop points:
  point     → one CONTACT_3D (A on link_a, B on link_b);
  revolute  → two CONTACT_3D, at the loop points and at the points one `length` further along the hinge axis
              (6 rows for 5 equations: redundant, so the oracle uses proximal iterations; only the accelerations
              are unique and comparable, `forces` then holds Pinocchio's minimum-norm split);
  weld      → one CONTACT_6D between the frames (A, rpy_a) and (B, rpy_b);
  planar    → not representable (a 3D point constraint adds a redundant row only on exactly planar motion):
              ModelError.
Pinocchio's contact force λ of a CONTACT_3D in LOCAL frame is the force on joint 1 (link_a) in the frame of
link_a, with the convention M a + h = τ + Jᵀ λ (checked in tests against our multipliers).
"""
from __future__ import annotations

import numpy as np

from biobullet.core.errors import ModelError


class PinocchioLoopOracle:
    def __init__(self, model, *, revolute_length: float = 0.1) -> None:
        import pinocchio as pin
        from biobullet.constraints.equations import constraint_set
        from biobullet.conventions import PinocchioMap
        from biobullet.conventions import build_pinocchio_model
        self.pin, self.model, self.revolute_length = pin, model, revolute_length
        self.pin_model = build_pinocchio_model(model)
        self.data = self.pin_model.createData()
        self.map = PinocchioMap(model, self.pin_model)
        cset = constraint_set(model)
        if cset.functions:
            raise ModelError("the Pinocchio loop oracle does not support joint functions", file=model.file)
        self.loops = cset.loops
        self.constraints, self.owner = [], []
        for loop in self.loops:
            if loop.type not in ("point", "revolute", "weld"):
                raise loop.source.error("type", f"{loop.type} loops have no Pinocchio counterpart",
                                        "point, revolute or weld")
            if loop.type == "weld":
                j1, p1 = self._anchor(loop.link_a, loop.xyz_a, loop.law.frame_a)
                j2, p2 = self._anchor(loop.link_b, loop.xyz_b, loop.law.frame_b)
                self.constraints.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_6D, self.pin_model,
                                                                 j1, p1, j2, p2, pin.ReferenceFrame.LOCAL))
                self.owner.append(loop.name)
                continue
            anchors = [(loop.xyz_a, loop.xyz_b)]
            if loop.type == "revolute":
                axis_b = np.cross(loop.basis[:, 0], loop.basis[:, 1])
                anchors.append((loop.xyz_a + revolute_length * loop.axis_a, loop.xyz_b + revolute_length * axis_b))
            for xyz_a, xyz_b in anchors:
                j1, p1 = self._anchor(loop.link_a, xyz_a)
                j2, p2 = self._anchor(loop.link_b, xyz_b)
                self.constraints.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, self.pin_model,
                                                                 j1, p1, j2, p2, pin.ReferenceFrame.LOCAL))
                self.owner.append(loop.name)
        self.redundant = any(loop.type == "revolute" for loop in self.loops)
        self.constraints = pin.StdVec_RigidConstraintModel(self.constraints)
        self.constraint_datas = pin.StdVec_RigidConstraintData([c.createData() for c in self.constraints])
        pin.initConstraintDynamics(self.pin_model, self.data, self.constraints, self.constraint_datas)

    def _anchor(self, link: str, xyz: np.ndarray, rotation: np.ndarray | None = None):
        """(parent joint id, placement of the point (and frame `rotation` in the link) in that joint's frame)."""
        pin = self.pin
        frame = self.pin_model.frames[self.map.frame_id(link)]
        return frame.parentJoint, frame.placement * pin.SE3(np.eye(3) if rotation is None else rotation,
                                                            np.asarray(xyz, dtype=float))

    def accelerations(self, x, xd, tau) -> tuple[np.ndarray, list[np.ndarray]]:
        """(ẍ in our order, per Pinocchio constraint the 3D force on link_a in WORLD axes; a weld's 6D
        constraint: its force part)."""
        pin, m = self.pin, self.map
        q, v = m.config_to_pinocchio(np.asarray(x, float)), m.velocity_to_pinocchio(np.asarray(xd, float))
        settings = pin.ProximalSettings(1e-14, 1e-10 if self.redundant else 0.0, 200 if self.redundant else 1)
        a = pin.constraintDynamics(self.pin_model, self.data, q, v, m.velocity_to_pinocchio(np.asarray(tau, float)),
                                   self.constraints, self.constraint_datas, settings)
        pin.forwardKinematics(self.pin_model, self.data, q)
        forces = []
        lam = np.asarray(self.data.lambda_c)
        row = 0
        for c in self.constraints:
            rotation = (self.data.oMi[c.joint1_id] * c.joint1_placement).rotation
            forces.append(rotation @ lam[row:row + 3])
            row += 6 if c.type == self.pin.ContactType.CONTACT_6D else 3
        return m.velocity_from_pinocchio(a), forces
