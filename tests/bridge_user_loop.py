"""A user's PyBullet scene for the bridge tests: KUKA iiwa from pybullet_data with a nonlinear joint function the
repository does not ship (joint 3 = 0.5 sin(joint 2) + 0.2 joint 4², written into a copy of the URDF), and the
residual read straight from PyBullet's joint states (not through the bridge's own rows)."""
from __future__ import annotations

import math
from pathlib import Path

import pybullet_data

SOURCE = Path(pybullet_data.getDataPath()) / "kuka_iiwa" / "model.urdf"
J2, J3, J4 = "lbr_iiwa_joint_2", "lbr_iiwa_joint_3", "lbr_iiwa_joint_4"
BLOCK = f"""<biobullet version="1"><gravity xyz="0 0 -9.81"/><base type="fixed"/>
  <joint_function joint="{J3}" type="expression" inputs="{J2} {J4}" expression="0.5*sin({J2}) + 0.2*{J4}**2"/>
  <initial joint="{J2}" position="0.4"/><initial joint="{J4}" position="-0.6"/>
</biobullet>"""


def write_coupled_kuka(folder: Path) -> Path:
    """The KUKA URDF with absolute mesh paths and the `<biobullet>` block above, written to folder."""
    text = SOURCE.read_text().replace('filename="meshes/', f'filename="{SOURCE.parent}/meshes/')
    path = Path(folder) / "kuka_coupled.urdf"
    path.write_text(text.replace("</robot>", BLOCK + "\n</robot>"))
    return path


def pybullet_residual(p, body: int, client: int) -> float:
    """|q3 − (0.5 sin q2 + 0.2 q4²)| from PyBullet's own joint states (joints 1, 2, 3 of the body)."""
    q2, q3, q4 = (s[0] for s in p.getJointStates(body, [1, 2, 3], physicsClientId=client))
    return abs(q3 - (0.5 * math.sin(q2) + 0.2 * q4 * q4))


def coupled_rate_residual(p, body: int, client: int) -> float:
    """|q̇3 − (0.5 cos q2 q̇2 + 0.4 q4 q̇4)| from PyBullet's joint states."""
    (q2, v2), (_, v3), (q4, v4) = ((s[0], s[1]) for s in p.getJointStates(body, [1, 2, 3], physicsClientId=client))
    return abs(v3 - (0.5 * math.cos(q2) * v2 + 0.4 * q4 * v4))


def episodes(p, urdf: Path, client: int, count: int, *, reset_simulation: bool, steps: int):
    """Gym-style episodes on one client: (resetSimulation,) a Bridge made, `steps` steps, closed. Yields the number
    of bodies in the client after each episode's steps (before close)."""
    from biobullet.bridge import Bridge
    p.setGravity(0, 0, -9.81, physicsClientId=client)
    for _ in range(count):
        if reset_simulation:
            p.resetSimulation(physicsClientId=client)
            p.setGravity(0, 0, -9.81, physicsClientId=client)
        with Bridge(urdf, client=client) as bridge:
            for _ in range(steps):
                bridge.step()
            bodies = p.getNumBodies(physicsClientId=client)
        yield bodies
