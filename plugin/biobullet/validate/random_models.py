"""Random URDF trees for validation: random depth and branching, mixed joint types, random rpy origins,
full inertias (random principal moments satisfying the triangle inequality, random principal axes), optional
floating base and random polynomial / expression couplings. Used by tests and `biobullet validate --random`.
"""
from __future__ import annotations

import numpy as np


def _vec(values) -> str:
    return " ".join(f"{float(v):.17g}" for v in values)


def random_inertia(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(inertia tensor about the COM in the link frame, principal moments)."""
    a, b = rng.uniform(0.01, 0.1, size=2)
    c = rng.uniform(abs(a - b) + 1e-3, a + b - 1e-3)  # strict triangle inequality
    principal = np.array([a, b, c])
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return q @ np.diag(principal) @ q.T, principal


def random_urdf(seed: int, n_links: int = 6, *, floating_base: bool = False, couplings: int = 0,
                fixed_probability: float = 0.15, continuous: bool = True) -> str:
    """URDF text of a random tree with `n_links` links besides the root (joint names j1, j2, …)."""
    rng = np.random.default_rng(seed)
    lines = [f'<robot name="random_{seed}">']
    joints: list[tuple[str, str]] = []

    def link(name: str) -> None:
        inertia, _ = random_inertia(rng)
        mass = rng.uniform(0.2, 3.0)
        lines.append(f'  <link name="{name}"><inertial>'
                     f'<origin xyz="{_vec(rng.uniform(-0.2, 0.2, 3))}" rpy="0 0 0"/>'
                     f'<mass value="{mass:.17g}"/>'
                     f'<inertia ixx="{inertia[0, 0]:.17g}" ixy="{inertia[0, 1]:.17g}" ixz="{inertia[0, 2]:.17g}" '
                     f'iyy="{inertia[1, 1]:.17g}" iyz="{inertia[1, 2]:.17g}" izz="{inertia[2, 2]:.17g}"/>'
                     f'</inertial></link>')

    link("root")
    names = ["root"]
    movable: list[str] = []
    for k in range(1, n_links + 1):
        name = f"l{k}"
        link(name)
        parent = names[int(rng.integers(0, len(names)))]
        kinds = ["revolute", "prismatic"] + (["continuous"] if continuous else [])
        kind = "fixed" if (rng.random() < fixed_probability and k > 1) else kinds[int(rng.integers(0, len(kinds)))]
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        if rng.random() < 0.4:  # some axis-aligned joints as well
            axis = np.eye(3)[int(rng.integers(0, 3))]
        limit = '<limit lower="-3" upper="3" effort="100" velocity="10"/>' if kind in ("revolute", "prismatic") else ""
        lines.append(f'  <joint name="j{k}" type="{kind}"><parent link="{parent}"/><child link="{name}"/>'
                     f'<origin xyz="{_vec(rng.uniform(-0.4, 0.4, 3))}" rpy="{_vec(rng.uniform(-np.pi, np.pi, 3))}"/>'
                     f'<axis xyz="{_vec(axis)}"/>{limit}</joint>')
        names.append(name)
        if kind != "fixed":
            movable.append(f"j{k}")
        joints.append((f"j{k}", kind))
    block = ['  <biobullet version="1">', f'    <gravity xyz="{_vec(rng.uniform(-3, 3, 2))} -9.81"/>']
    if floating_base:
        block.append('    <base type="floating"/>')
    dependent: set[str] = set()
    for c in range(min(couplings, max(len(movable) - 1, 0))):
        candidates = [j for j in movable if j not in dependent]
        target = candidates[int(rng.integers(1, len(candidates)))] if len(candidates) > 1 else None
        if target is None:
            break
        sources = [j for j in movable if j != target and j not in dependent]
        if not sources:
            break
        dependent.add(target)
        inputs = list(rng.choice(sources, size=min(2, len(sources)), replace=False))
        if c % 2 == 0:
            coefficients = _vec(rng.uniform(-1, 1, 4))
            block.append(f'    <joint_function joint="{target}" type="polynomial" inputs="{inputs[0]}" '
                         f'coefficients="{coefficients}"/>')
        else:
            a, b = rng.uniform(-1, 1, 2)
            other = inputs[1] if len(inputs) > 1 else inputs[0]
            block.append(f'    <joint_function joint="{target}" type="expression" inputs="{" ".join(inputs)}" '
                         f'expression="{a:.6f}*sin({inputs[0]}) + {b:.6f}*{other}**2 + 0.1*cos({inputs[0]}*{other})"/>')
    block.append('  </biobullet>')
    lines.extend(block)
    lines.append('</robot>')
    return "\n".join(lines) + "\n"
