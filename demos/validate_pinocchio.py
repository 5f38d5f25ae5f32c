"""Gallery: validate your robot against Pinocchio (and PyBullet).

Point `validate_model` at any URDF (here a 3-DOF arm written below; use your own file instead): at random states
it compares every biobullet formulation's mass matrix, bias forces and forward dynamics with Pinocchio's and
PyBullet's, our frame Jacobians with Pinocchio's, and J·ẋ with PyBullet's link velocities. The same check is
`biobullet validate my_robot.urdf` on the command line. The picture: the largest relative error of each check.

    python demos/validate_pinocchio.py --out out/gallery [--model my_robot.urdf]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import biobullet
from biobullet.core.arguments import positive_int
from biobullet.core.atomic import save_figure, write_text
from biobullet.core.errors import BiobulletError
from biobullet.validate import validate_model

INERTIAL = ('<inertial><origin xyz="0 0 {c}"/><mass value="{m}"/>'
            '<inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{j}"/></inertial>')
URDF = f"""<robot name="my_arm">
  <link name="base">{INERTIAL.format(c=0.05, m=2.0, i=0.01, j=0.01)}</link>
  <link name="upper">{INERTIAL.format(c=0.15, m=1.5, i=0.012, j=0.002)}</link>
  <link name="fore">{INERTIAL.format(c=0.12, m=1.0, i=0.006, j=0.001)}</link>
  <link name="hand">{INERTIAL.format(c=0.04, m=0.4, i=0.0008, j=0.0004)}</link>
  <joint name="yaw" type="revolute"><parent link="base"/><child link="upper"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="50" velocity="5"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="fore"/><origin xyz="0 0 0.3" rpy="0.2 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-2.5" upper="2.5" effort="30" velocity="5"/></joint>
  <joint name="wrist" type="revolute"><parent link="fore"/><child link="hand"/><origin xyz="0 0 0.25"/>
    <axis xyz="1 0 0"/><limit lower="-1.5" upper="1.5" effort="10" velocity="5"/></joint>
</robot>
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/gallery", help="output folder (default out/gallery)")
    parser.add_argument("--model", default=None, help="your URDF (default: the 3-DOF arm in this script)")
    parser.add_argument("--samples", type=positive_int, default=5, help="random states (default 5)")
    args = parser.parse_args(argv)
    try:
        os.makedirs(args.out, exist_ok=True)
        path = args.model or write_text(os.path.join(args.out, "my_arm.urdf"), URDF)
        model = biobullet.load_model(path)
        report = validate_model(model, samples=args.samples, seed=0)
        print(report.to_table())
        checks = [c for c in report.checks if np.isfinite(c.max_rel_error)]
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        figure, axis = plt.subplots(figsize=(7.2, 0.22 * len(checks) + 1.2))
        labels = [f"{c.quantity} · {c.formulation} vs {c.oracle}" for c in checks]
        errors = [max(c.max_rel_error, 1e-17) for c in checks]
        axis.barh(range(len(checks)), errors, color=["tab:green" if c.ok else "tab:red" for c in checks])
        axis.set_xscale("log")
        axis.set_yticks(range(len(checks)), labels, fontsize=6)
        axis.invert_yaxis()
        axis.axvline(checks[0].tolerance if checks and checks[0].tolerance else 1e-9, color="k", ls="--", lw=1,
                     label="tolerance")
        axis.set_xlabel("max relative error")
        axis.set_title(f"{model.name}: {'all checks pass' if report.ok else 'SOME CHECKS FAIL'} "
                       f"({report.samples} random states)", fontsize=9)
        axis.legend(fontsize=7)
        figure.tight_layout()
        out = os.path.join(args.out, "validate_pinocchio.png")
        save_figure(figure, out, dpi=160)   # gallery: ≥ 1000 px wide
        plt.close(figure)
        print(f"wrote {out}")
    except BiobulletError as error:
        print(f"biobullet: error: {error}", file=sys.stderr)
        return 2
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
