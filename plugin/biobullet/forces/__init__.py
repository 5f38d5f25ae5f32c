"""biobullet.forces: springs, dampers, joint stops and actuators acting on the tree.

Elements come from the model file (`<spring>`, `<joint_spring>`, `<joint_torque>`, `<joint_stop>`) or from
Python (`add_force_element(model, JointSpring(...))`). `applied_forces(model, x, ẋ, t)` sums their generalized
forces τ (n_tangent, tree order); the reference engine projects them as Q = Gᵀ τ.
"""
from __future__ import annotations

from biobullet.forces.base import ForceElement, force_type, register_force
from biobullet.forces.collection import (add_force_element, applied_forces, clear_added_force_elements,
                                         force_elements, force_events)
from biobullet.forces.elements import JointSpring, JointStop, JointTorque, Spring

__all__ = ["ForceElement", "register_force", "force_type", "force_elements", "add_force_element",
           "clear_added_force_elements", "applied_forces", "force_events",
           "Spring", "JointSpring", "JointTorque", "JointStop"]
