"""Spherical-joint test robots (URDF text): a spherical pendulum, a shoulder–elbow–wrist arm (spherical, revolute,
spherical) and an arm whose pronation is a polynomial of the elbow, every moving link with a rotated inertial frame
and a non-diagonal tensor (tests/unit/bridge/test_spherical_bridge.py, tests/benchmarks/test_bridge_model_kinds.py)."""
from __future__ import annotations

LIMIT = '<limit lower="-3" upper="3" effort="1" velocity="1"/>'
INERTIAL = ('<inertial><origin xyz="{xyz}" rpy="{rpy}"/><mass value="{m}"/><inertia ixx="{i[0]}" iyy="{i[1]}" '
            'izz="{i[2]}" ixy="{i[3]}" ixz="{i[4]}" iyz="{i[5]}"/></inertial>')


def link_text(name, xyz="0 0 0", rpy="0 0 0", m=1.0, i=(0.1, 0.1, 0.1, 0, 0, 0)):
    return f'<link name="{name}">{INERTIAL.format(xyz=xyz, rpy=rpy, m=m, i=i)}</link>'


def robot_text(name, links, joints, extension=""):
    return (f'<?xml version="1.0"?>\n<robot name="{name}">\n  ' + "\n  ".join(links + joints)
            + (f"\n  <biobullet>{extension}</biobullet>" if extension else "") + "\n</robot>\n")


# every moving link has a rotated inertial frame and a non-diagonal tensor: PyBullet's joint frame (the link's
# principal axes) then differs from the URDF link frame, so a missed conversion is an O(1) error
PENDULUM = robot_text("spherical_pendulum",
                      [link_text("base"),
                       link_text("bob", "0.03 -0.02 -0.5", "0.3 -0.4 0.2", 2.0,
                                 (0.05, 0.045, 0.02, 0.002, -0.003, 0.001))],
                      ['<joint name="ball" type="spherical"><parent link="base"/><child link="bob"/>'
                       '<origin xyz="0 0 1" rpy="0.2 0.1 -0.3"/></joint>'])
ARM_LINKS = [link_text("torso"),
             link_text("upper", "0.02 -0.01 -0.2", "0.1 0.2 0.3", 2.0, (0.03, 0.025, 0.01, 0.001, 0.002, -0.001)),
             link_text("lower", "0 0.01 -0.15", "-0.2 0.1 0.4", 1.5, (0.02, 0.018, 0.005, 0.001, 0, 0)),
             link_text("hand", "0.01 0.02 -0.05", "0.3 0 -0.2", 0.5, (0.002, 0.003, 0.0015, 0, 0.0002, 0))]
SHOULDER = ['<joint name="shoulder" type="spherical"><parent link="torso"/><child link="upper"/>'
            '<origin xyz="0.1 0 0.5" rpy="0.3 -0.2 0.1"/></joint>',
            f'<joint name="elbow" type="revolute"><parent link="upper"/><child link="lower"/>'
            f'<origin xyz="0 0 -0.4"/><axis xyz="0 1 0"/>{LIMIT}</joint>']
# shoulder (spherical) + elbow (revolute) + wrist (spherical, its parent's inertial frame rotated too)
ARM = robot_text("ball_arm", ARM_LINKS, SHOULDER + [
    '<joint name="wrist" type="spherical"><parent link="lower"/><child link="hand"/>'
    '<origin xyz="0 0 -0.3" rpy="0 0.5 0"/></joint>'])
# a joint function whose input is a revolute joint and whose output is another revolute joint, in a model with a
# spherical shoulder: the forearm's pronation follows the elbow
COUPLED = robot_text("coupled_arm", ARM_LINKS, SHOULDER + [
    f'<joint name="pronation" type="revolute"><parent link="lower"/><child link="hand"/>'
    f'<origin xyz="0 0 -0.3"/><axis xyz="0 0 1"/>{LIMIT}</joint>'],
    '<joint_function joint="pronation" type="polynomial" inputs="elbow" coefficients="0.1 0.5 -0.3"/>'
    '<initial joint="elbow" position="0.6" velocity="1.5"/>')
