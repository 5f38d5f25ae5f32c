"""Small contact test models and measurements (used by the tests, the `contact` scenario and the bridge check; load the text with
`biobullet.loader.load_text`).

  drop model:   world —prismatic `drop` (z)→ ball (mass m, sphere radius r, contact `C` at its centre).
                A 1-DOF drop: the reference engine's impact equals the 1-DOF oracle `impact1d.simulate_impact`
                exactly when gravity is off (`gravity="0 0 0"`, the ball thrown at the ground with v⁻).
  slider model: world —prismatic `slide` (x)→ carriage (massless) —prismatic `drop` (z)→ block (mass m,
                point contact `C` at its bottom, z = 0 of the block frame). The block cannot rotate, so a
                sliding block decelerates at exactly μ_eff F_N / m.
  ball model:   a solid ball (mass m, radius r) on a floating base, contact `C` at its centre.
"""
from __future__ import annotations


_INERTIA = '<inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{i}"/>'


def _contact_tag(attributes: dict) -> str:
    return "<contact " + " ".join(f'{k}="{v}"' for k, v in attributes.items()) + "/>"


def drop_urdf(contact: dict, *, mass: float = 1.0, radius: float = 0.05, gravity: str = "0 0 -9.81",
              name: str = "drop") -> str:
    """URDF text of the drop model; `contact` holds the law attributes (normal_law, stiffness, …)."""
    inertia = 0.4 * mass * radius ** 2
    attributes = {"name": "C", "link": "ball", "xyz": "0 0 0", "radius": repr(radius), **contact}
    return "\n".join([
        f'<robot name="{name}">',
        '  <link name="world"/>',
        f'  <link name="ball"><inertial><origin xyz="0 0 0"/><mass value="{mass!r}"/>{_INERTIA.format(i=repr(inertia))}'
        f'</inertial><collision><geometry><sphere radius="{radius!r}"/></geometry></collision></link>',
        '  <joint name="drop" type="prismatic"><parent link="world"/><child link="ball"/>'
        '<origin xyz="0 0 0"/><axis xyz="0 0 1"/><limit lower="-10" upper="10" effort="1e9" velocity="1e9"/></joint>',
        f'  <biobullet version="1"><gravity xyz="{gravity}"/>{_contact_tag(attributes)}</biobullet>',
        "</robot>"])


def slider_urdf(contact: dict, *, mass: float = 1.0, gravity: str = "0 0 -9.81", name: str = "slider") -> str:
    """URDF text of the slider model (block of `mass` kg, point contact at its origin)."""
    return "\n".join([
        f'<robot name="{name}">',
        '  <link name="world"/>',
        '  <link name="carriage"/>',
        f'  <link name="block"><inertial><origin xyz="0 0 0"/><mass value="{mass!r}"/>{_INERTIA.format(i="0.01")}'
        '</inertial></link>',
        '  <joint name="slide" type="prismatic"><parent link="world"/><child link="carriage"/>'
        '<origin xyz="0 0 0"/><axis xyz="1 0 0"/><limit lower="-100" upper="100" effort="1e9" velocity="1e9"/></joint>',
        '  <joint name="drop" type="prismatic"><parent link="carriage"/><child link="block"/>'
        '<origin xyz="0 0 0"/><axis xyz="0 0 1"/><limit lower="-10" upper="10" effort="1e9" velocity="1e9"/></joint>',
        f'  <biobullet version="1"><gravity xyz="{gravity}"/>'
        f'{_contact_tag({"name": "C", "link": "block", "xyz": "0 0 0", "radius": "0", **contact})}</biobullet>',
        "</robot>"])


def ball_urdf(contact: dict, *, mass: float = 2.0, radius: float = 0.1, gravity: str = "0 0 -9.81",
              name: str = "ball") -> str:
    """URDF text of the ball model (a solid sphere's inertia 2/5 m r², no collision shape: the analytic ground)."""
    inertia = 0.4 * mass * radius ** 2
    attributes = {"name": "C", "link": "ball", "xyz": "0 0 0", "radius": repr(radius), **contact}
    return (f'<robot name="{name}"><link name="ball"><inertial><origin xyz="0 0 0"/><mass value="{mass!r}"/>'
            f'{_INERTIA.format(i=repr(inertia))}</inertial></link><biobullet version="1"><gravity xyz="{gravity}"/>'
            f'<base type="floating"/>{_contact_tag(attributes)}</biobullet></robot>')
