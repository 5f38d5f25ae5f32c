"""Small URDF models for the force-element and reference-engine tests (written to tmp files by the tests).

`chain_urdf`: a serial chain in the x-y plane, revolute joints j1, j2, … about z, link i of length l_i along its
x axis, a point-like mass m_i at (c_i, 0, 0) with inertia izz_i (ixx = iyy = izz: valid tensor). Gravity along +x
by default, so the chain hangs along +x and rests at θ = 0.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path


def chain_urdf(links, *, gravity: str = "9.81 0 0", extension: str = "", base: str = "fixed",
               name: str = "chain") -> str:
    """links: sequence of (length l, mass m, com offset c, inertia i) per moving link."""
    lines = [f'<robot name="{name}">',
             '  <link name="base"><inertial><origin xyz="0 0 0"/><mass value="1"/>'
             '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>']
    parent_length = 0.0
    for k, (length, mass, com, inertia) in enumerate(links, start=1):
        lines.append(f'  <link name="l{k}"><inertial><origin xyz="{com!r} 0 0"/><mass value="{mass!r}"/>'
                     f'<inertia ixx="{inertia!r}" ixy="0" ixz="0" iyy="{inertia!r}" iyz="0" izz="{inertia!r}"/>'
                     '</inertial></link>')
        parent = "base" if k == 1 else f"l{k - 1}"
        lines.append(f'  <joint name="j{k}" type="continuous"><parent link="{parent}"/><child link="l{k}"/>'
                     f'<origin xyz="{parent_length!r} 0 0" rpy="0 0 0"/><axis xyz="0 0 1"/></joint>')
        parent_length = length
    lines.append(f'  <biobullet version="1"><gravity xyz="{gravity}"/><base type="{base}"/>{extension}'
                 '</biobullet>')
    lines.append("</robot>")
    return "\n".join(lines)


def load_chain(tmp_path: Path, links, **kwargs):
    from biobullet import load_model
    path = Path(tmp_path) / f"{kwargs.get('name', 'chain')}.urdf"
    path.write_text(chain_urdf(links, **kwargs))
    return load_model(path)


def with_elements(urdf: str, elements: str) -> str:
    """Insert `<biobullet>` children into URDF text (creating the block if needed)."""
    if "</biobullet>" in urdf:
        return urdf.replace("</biobullet>", elements + "</biobullet>")
    return urdf.replace("</robot>", f'<biobullet version="1">{elements}</biobullet></robot>')


def import_helper():
    """This module, importable from any test directory."""
    spec = importlib.util.spec_from_file_location("engine_models", Path(__file__))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
