"""Gallery: add a joint function to your own URDF.

A two-link planar finger whose distal joint follows the proximal one, θ_distal = 0.3·sin(θ_proximal)·… — written
as a safe arithmetic `expression` in a `<biobullet>` block appended to an ordinary URDF. The finger then has ONE
generalized coordinate; PyBullet swings it under gravity (the bridge turns the coupling into joint torques every
step) and the picture shows three instants side by side.

    python demos/joint_function.py --out out/gallery
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import biobullet
from biobullet.bridge.simulation import simulate_bridge
from biobullet.core.atomic import write_text
from biobullet.core.errors import BiobulletError
from biobullet.render import render_frames, side_by_side, write_png

LINK = """  <link name="{name}">
    <inertial><origin xyz="0.05 0 0"/><mass value="0.05"/>
      <inertia ixx="1e-6" ixy="0" ixz="0" iyy="5e-5" iyz="0" izz="5e-5"/></inertial>
    <visual><origin xyz="0.05 0 0" rpy="0 1.5708 0"/><geometry><cylinder radius="0.01" length="0.1"/></geometry>
      <material name="skin"><color rgba="0.85 0.62 0.5 1"/></material></visual>
  </link>"""

# your URDF: nothing biobullet-specific above the <biobullet> block
URDF = f"""<robot name="finger">
  <link name="palm"><inertial><mass value="0.2"/><inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/>
    </inertial><visual><geometry><box size="0.04 0.06 0.04"/></geometry>
    <material name="grey"><color rgba="0.5 0.5 0.55 1"/></material></visual></link>
{LINK.format(name="proximal")}
{LINK.format(name="distal")}
  <joint name="mcp" type="revolute"><parent link="palm"/><child link="proximal"/><origin xyz="0.02 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-1.6" upper="1.6" effort="1" velocity="10"/></joint>
  <joint name="pip" type="revolute"><parent link="proximal"/><child link="distal"/><origin xyz="0.1 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="1" velocity="10"/></joint>
  <biobullet version="1">
    <gravity xyz="0 0 -9.81"/>
    <!-- the distal joint is a FUNCTION of the proximal one (no eval: a parsed arithmetic expression) -->
    <joint_function joint="pip" type="expression" inputs="mcp" expression="k*mcp + c*mcp**2" parameters="k=0.8 c=0.3"/>
    <initial joint="mcp" position="-1.2" velocity="0"/>
  </biobullet>
</robot>
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/gallery", help="output folder (default out/gallery)")
    args = parser.parse_args(argv)
    try:
        os.makedirs(args.out, exist_ok=True)
        path = write_text(os.path.join(args.out, "finger.urdf"), URDF)
        model = biobullet.load_model(path)
        print(f"{model.name}: {model.n_joints} joints, generalized coordinates {model.coordinate_names}")
        run = simulate_bridge(model, 0.6, 1e-3)
        mcp, pip = (run.positions[:, model.joint_names.index(name)] for name in ("mcp", "pip"))
        # the coupling holds on PyBullet at every step (the bridge's constraint stabilisation keeps it)
        print(f"max |pip − (0.8·mcp + 0.3·mcp²)| over the swing: {np.abs(pip - (0.8 * mcp + 0.3 * mcp ** 2)).max():.2e} rad")
        frames = render_frames(model, run, width=360, height=320, fps=1 / 0.3, title="finger")
        picture = side_by_side([[f] for f in frames])[0]
        out = write_png(picture, os.path.join(args.out, "joint_function.png"))
        print(f"wrote {out}")
    except BiobulletError as error:
        print(f"biobullet: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
