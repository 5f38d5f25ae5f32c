"""Random spatial closed chains for the loop tests (shared helper; imported by name, tests/ is on the path).

Two random revolute branches from a fixed root, closed by a `point` loop (3 + 3 joints, 3 DOF) or a `revolute`
loop (4 + 4 joints, 3 DOF), the loop closed at zero angles by construction; independent joints = the
best-conditioned choice at the zero pose.
"""
import itertools

import numpy as np

import biobullet
from biobullet.algorithms.kinematics import frame_placement
from biobullet.constraints.loops import loop_terms, parse_loops
from biobullet.model.urdf import load_description
from biobullet.validate.random_models import random_inertia


# A planar crank–rocker four-bar (crank 1, coupler 3, rocker 2.5, ground 3 m); LOOPATTRS, INDEPENDENT and INIT are
# filled in by the tests.
FOURBAR = """<robot name="fourbar">
  <link name="ground"/>
  <link name="crank"><inertial><origin xyz="0.5 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="coupler"><inertial><origin xyz="1.5 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.5" iyz="0" izz="0.5"/></inertial></link>
  <link name="rocker"><inertial><origin xyz="1.25 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.3" iyz="0" izz="0.3"/></inertial></link>
  <joint name="crank_j" type="continuous"><parent link="ground"/><child link="crank"/><axis xyz="0 0 1"/></joint>
  <joint name="coupler_j" type="continuous"><parent link="crank"/><child link="coupler"/>
    <origin xyz="1 0 0"/><axis xyz="0 0 1"/></joint>
  <joint name="rocker_j" type="continuous"><parent link="ground"/><child link="rocker"/>
    <origin xyz="3 0 0"/><axis xyz="0 0 1"/></joint>
  <biobullet version="1"><gravity xyz="0 -9.81 0"/>
    <loop name="C" LOOPATTRS/>
    <coordinates names="INDEPENDENT"/>
    <initial joint="crank_j" position="INIT"/>
  </biobullet>
</robot>"""
# crank 1, coupler 3, rocker 2.5, ground 3 (crank–rocker). At θ = (0, 0, π) the coupler end (4, 0) is ~1.5 from
# the rocker end (0.5, 0): the default guess is NOT closed, assembly has to close it.
GOOD_LOOP = 'type="planar" link_a="coupler" xyz_a="3 0 0" link_b="rocker" xyz_b="2.5 0 0" normal="0 0 1"'


def crank_rocker_into_toggle() -> str:
    """The crank–rocker with the rocker as input, started 0.05 rad inside its range and driven at −3 rad/s into
    the toggle (crank and coupler aligned: |rocker tip − O| = 1 + 3), which it reaches at t ≈ 0.03 s."""
    limit = np.arccos((16 - 9 - 6.25) / (2 * 3 * 2.5))
    return (FOURBAR.replace("LOOPATTRS", GOOD_LOOP).replace("INDEPENDENT", "rocker_j")
            .replace('<initial joint="crank_j" position="INIT"/>',
                     f'<initial joint="rocker_j" position="{float(limit) + 0.05!r}" velocity="-3"/>'))


def coupler_midpoint(crank: float, coupler: float) -> np.ndarray:
    """The midpoint P (x, y, m) of the crank–rocker's coupler at crank and coupler angles (rad)."""
    return np.array([np.cos(crank), np.sin(crank)]) + 1.5 * np.array([np.cos(crank + coupler),
                                                                        np.sin(crank + coupler)])


def two_loops_sharing_a_link(path) -> tuple[str, np.ndarray]:
    """(URDF text, pivot G₂) of the crank–rocker (crank input, at 0.8 rad) with a second dyad (1.6 + 1.5 m: joints
    r2_j, r2b_j, from a world pivot G₂ = P + (0.5, 2)) closing on the coupler's midpoint P: loops C and D share the
    coupler; the dyad straightens (|P − G₂| = 3.1) as the crank turns. `path`: a file for the one-loop model."""
    text = FOURBAR.replace("LOOPATTRS", GOOD_LOOP).replace("INDEPENDENT", "crank_j").replace("INIT", "0.8")
    with open(path, "w") as handle:
        handle.write(text)
    crank, coupler = biobullet.load_model(str(path)).joint_positions([0.8])[:2]
    pivot = coupler_midpoint(crank, coupler) + np.array([0.5, 2.0])
    offset = coupler_midpoint(crank, coupler) - pivot   # the dyad's first guess: elbow on one side of G₂P
    distance = np.linalg.norm(offset)
    first = np.arctan2(offset[1], offset[0]) + np.arccos((1.6 ** 2 + distance ** 2 - 1.5 ** 2) / (3.2 * distance))
    elbow = pivot + 1.6 * np.array([np.cos(first), np.sin(first)])
    second = np.arctan2(*(coupler_midpoint(crank, coupler) - elbow)[::-1]) - first
    rod = ('<inertial><origin xyz="0.8 0 0"/><mass value="0.5"/>'
           '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>')
    links = (f'<link name="r2">{rod}</link><link name="r2b">{rod}</link>'
             f'<joint name="r2_j" type="continuous"><parent link="ground"/><child link="r2"/>'
             f'<origin xyz="{float(pivot[0])!r} {float(pivot[1])!r} 0"/><axis xyz="0 0 1"/></joint>'
             '<joint name="r2b_j" type="continuous"><parent link="r2"/><child link="r2b"/><origin xyz="1.6 0 0"/>'
             '<axis xyz="0 0 1"/></joint>')
    block = ('<loop name="D" type="planar" link_a="r2b" xyz_a="1.5 0 0" link_b="coupler" xyz_b="1.5 0 0" '
             f'normal="0 0 1"/><initial joint="r2_j" position="{float(first)!r}"/>'
             f'<initial joint="r2b_j" position="{float(second)!r}"/>')
    return text.replace('<biobullet version="1">', links + '<biobullet version="1">' + block), pivot


def _v(values):
    return " ".join(f"{float(c):.17g}" for c in values)


def _loop_xml(kind, n_a, n_b, xyz_a, xyz_b, extra, independent=None):
    coords = "" if independent is None else f'<coordinates names="{" ".join(independent)}"/>'
    return (f'<biobullet version="1"><gravity xyz="0 0 -9.81"/><loop name="close" type="{kind}" link_a="a{n_a}" '
            f'xyz_a="{_v(xyz_a)}" link_b="b{n_b}" xyz_b="{_v(xyz_b)}"{extra}/>{coords}</biobullet>')


def closed_chain(tmp_path, seed, kind):
    """Write a random closed chain; independent joints = the best-conditioned choice at the zero pose."""
    n_a = n_b = 3 if kind == "point" else 4
    rng = np.random.default_rng(seed)
    lines, names = [f'<robot name="chain_{seed}">', '<link name="root"/>'], []
    for branch, n in (("a", n_a), ("b", n_b)):
        parent = "root"
        for k in range(1, n + 1):
            name = f"{branch}{k}"
            inertia, _ = random_inertia(rng)
            lines.append(f'<link name="{name}"><inertial><origin xyz="{_v(rng.uniform(-0.1, 0.1, 3))}"/>'
                         f'<mass value="{rng.uniform(0.5, 2):.17g}"/><inertia ixx="{inertia[0, 0]:.17g}" '
                         f'ixy="{inertia[0, 1]:.17g}" ixz="{inertia[0, 2]:.17g}" iyy="{inertia[1, 1]:.17g}" '
                         f'iyz="{inertia[1, 2]:.17g}" izz="{inertia[2, 2]:.17g}"/></inertial></link>')
            axis = rng.normal(size=3)
            origin = rng.uniform(-0.3, 0.3, 3) + (np.array([0.5, 0, 0]) if (branch, k) == ("b", 1) else 0)
            lines.append(f'<joint name="j{name}" type="continuous"><parent link="{parent}"/><child link="{name}"/>'
                         f'<origin xyz="{_v(origin)}" rpy="{_v(rng.uniform(-1, 1, 3))}"/>'
                         f'<axis xyz="{_v(axis / np.linalg.norm(axis))}"/></joint>')
            names.append(f"j{name}")
            parent = name
    tree_text = "\n".join(lines) + "\n</robot>"
    path = tmp_path / f"chain_{kind}_{seed}.urdf"
    path.write_text(tree_text)
    tree = biobullet.load_model(path)
    x0 = np.zeros(tree.n_config)
    ra, pa = frame_placement(tree, x0, f"a{n_a}")
    rb, pb = frame_placement(tree, x0, f"b{n_b}")
    xyz_b = rng.uniform(-0.1, 0.1, 3)
    xyz_a = ra.T @ (rb @ xyz_b + pb - pa)
    extra = ""
    if kind == "revolute":
        w = rng.normal(size=3)
        w /= np.linalg.norm(w)
        extra = f' axis_a="{_v(ra.T @ w)}" axis_b="{_v(rb.T @ w)}"'
    path.write_text(tree_text.replace("</robot>", _loop_xml(kind, n_a, n_b, xyz_a, xyz_b, extra) + "</robot>"))
    loops = parse_loops(load_description(path), tree.link_names)
    jac = loop_terms(tree, loops, x0)[1]
    n_eq = loops[0].n_equations
    best = max(itertools.combinations(range(len(names)), n_eq),
               key=lambda d: np.linalg.svd(jac[:, d], compute_uv=False)[-1])
    independent = [n for k, n in enumerate(names) if k not in best]
    path.write_text(tree_text.replace("</robot>", _loop_xml(kind, n_a, n_b, xyz_a, xyz_b, extra, independent)
                                      + "</robot>"))
    return biobullet.load_model(path)
