"""Joint reactions for any tree model: what the parent exerts on the child at every joint origin, world axes.

`joint_reactions(model, q, v, tau)` → {URDF joint name: Reaction(.force N, .moment N·m, .constraint_torques,
.constraint_axes)}. The moment is the whole moment transmitted (the actuation along a hinge axis included);
`constraint_torques` are its components along the forbidden rotation axes (`constraint_axes`, unit, world):
for a hinge the two axes u × w₁, u × w₂ of the link-segment constraint rows, none for ball and free joints, three
for a prismatic joint, two (in the plane) for a planar one.

Two methods, the same numbers where both apply (tests check both against Pinocchio's RNEA `data.f`):
  "link_segment" — paper 001's square system: the joint forces and constraint torques are its unknowns;
  "tree"         — v̇ from the model's forward dynamics (any formulation; joint functions included through
                   ẍ = G q̈ + γ), then one Newton–Euler backward pass in world axes.
Default: link_segment where the model is a link-segment model (hinge/two-axis/ball joints, no joint functions),
tree otherwise. Applied forces are the generalized forces `tau` (the model's nv); force elements of the model file
(springs, contacts, stops) are not added here — pass their generalized forces in `tau`. Closed loops: ModelError
(their cut-joint forces are not tree reactions; use the multipliers formulation's λ).
"""
from __future__ import annotations

import numpy as np

from biobullet.core.errors import ModelError
from biobullet.dynamics import link_segment
from biobullet.dynamics.link_segment import Reaction, perpendicular_pair, body_accelerations, body_kinematics

__all__ = ["Reaction", "joint_reactions"]


def joint_reactions(model, q, v, tau=None, t: float = 0.0, *, method: str | None = None,
                    formulation: str | None = None) -> dict[str, Reaction]:
    """Reactions at every movable joint (see the module docstring). `method`: "link_segment" | "tree" | None."""
    if model.description.elements_of("loop"):
        raise ModelError("joint reactions of a model with closed loops are not tree reactions", file=model.file,
                         element=model.description.elements_of("loop")[0].source.element,
                         expected="a tree model (use the multipliers formulation's λ for loop forces)")
    if method is None:
        try:
            link_segment.structure(model)
            method = "link_segment"
        except ModelError:
            method = "tree"
    if method == "link_segment":
        return link_segment.solve(model, q, v, tau, t)[1]
    if method != "tree":
        raise ModelError(f"unknown method {method!r}", argument="method", expected="'link_segment' or 'tree'")
    accel = model.forward_dynamics(q, v, tau, t, formulation=formulation)
    x, xd, gradient, gamma = model.joint_state(q, v, t)
    xdd = gradient @ accel + gamma
    return tree_reactions(model, x, xd, xdd)


def tree_reactions(model, x: np.ndarray, xd: np.ndarray, xdd: np.ndarray,
                   external: np.ndarray | None = None) -> dict[str, Reaction]:
    """Newton–Euler backward pass (world axes) for the tree state (x, ẋ, ẍ): reactions by URDF joint name.
    `external`: wrenches applied to the bodies (n_bodies × 6: force, moment about the world origin; N, N·m), which
    the joints then need not transmit."""
    rot, pos, omega, vel = body_kinematics(model, x, xd)
    alpha, acc = body_accelerations(model, x, xd, xdd)
    bodies = model.bodies
    n = len(bodies)
    force, moment = np.zeros((n, 3)), np.zeros((n, 3))  # transmitted into each body at its origin
    g = model.gravity
    for i in range(n - 1, -1, -1):
        body = bodies[i]
        arm = rot[i] @ body.com
        a_com = acc[i] + np.cross(alpha[i], arm) + np.cross(omega[i], np.cross(omega[i], arm))
        inertia = rot[i] @ body.inertia_com @ rot[i].T
        f = body.mass * (a_com - g)
        force[i] += f
        moment[i] += inertia @ alpha[i] + np.cross(omega[i], inertia @ omega[i]) + np.cross(arm, f)
        if external is not None:
            force[i] -= external[i, :3]
            moment[i] -= external[i, 3:] - np.cross(pos[i], external[i, :3])
        if body.parent >= 0:
            p = body.parent
            force[p] += force[i]
            moment[p] += moment[i] + np.cross(pos[i] - pos[p], force[i])
    out: dict[str, Reaction] = {}
    for body in bodies:
        if not body.joint:   # the floating base: no joint (its generalized force is an external wrench)
            continue
        if body.joint_type == "revolute":   # the link-segment rows' directions u × w₁, u × w₂
            w1, w2 = perpendicular_pair(body.axis)
            u = body.axis
            axes = np.array([rot[body.index] @ np.cross(u, w1), rot[body.index] @ np.cross(u, w2)])
        else:   # the rotations the joint forbids: the complement of its angular motion directions
            angular = rot[body.index] @ body.motion_subspace[3:, :]
            left, singular, _ = np.linalg.svd(angular)
            rank = int(np.sum(singular > 1e-12))
            axes = left[:, rank:].T
        m = moment[body.index]
        out[body.joint] = Reaction(force[body.index].copy(), m.copy(), axes @ m, axes)
    return out
