"""A 3-link planar pendulum whose third joint follows a nonlinear `expression` of the other two (shared test model;
tests/ is on the path): j3 = 0.5·sin(j1) + 0.3·j2² (rad). Links 0.4 m, 1 kg, thin rods about y; gravity −z."""
from __future__ import annotations

from pathlib import Path

LINK = ('<link name="{name}"><inertial><origin xyz="0 0 -0.2"/><mass value="1"/>'
        '<inertia ixx="0.0134" ixy="0" ixz="0" iyy="0.0134" iyz="0" izz="0.0005"/></inertial></link>')
JOINT = ('<joint name="{name}" type="continuous"><parent link="{parent}"/><child link="{child}"/>'
         '<origin xyz="0 0 {z}"/><axis xyz="0 1 0"/></joint>')


def pendulum_text(expression: str = "0.5*sin(j1) + 0.3*j2**2") -> str:
    parts = ['<robot name="nonlinear_pendulum">', '<link name="base"/>']
    parent = "base"
    for k in (1, 2, 3):
        parts.append(LINK.format(name=f"l{k}"))
        parts.append(JOINT.format(name=f"j{k}", parent=parent, child=f"l{k}", z="0" if k == 1 else "-0.4"))
        parent = f"l{k}"
    parts.append('<biobullet version="1"><gravity xyz="0 0 -9.81"/>'
                 f'<joint_function joint="j3" type="expression" inputs="j1 j2" expression="{expression}"/>'
                 '<initial joint="j1" position="1.2" velocity="0"/><initial joint="j2" position="-0.6" velocity="0"/>'
                 '</biobullet>')
    parts.append("</robot>")
    return "\n".join(parts)


def write_pendulum(directory: Path) -> Path:
    path = Path(directory) / "nonlinear_pendulum.urdf"
    path.write_text(pendulum_text())
    return path
