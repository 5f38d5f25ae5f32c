"""Gallery: OpenSim's gait2392 skeleton on biobullet and PyBullet.

Loads the bundled OpenSim model `gait2392_millard2012muscle.osim` (23 coordinates; the knees' tibia translations
are SimmSplines of the flexion angle, the pelvis floats through six function-driven axes), releases it from its
default pose with the joints swinging (muscles are reported, not imported: the skeleton is passive), simulates
0.6 s with the reference engine, checks that energy is conserved, and draws three instants side by side.

    python demos/opensim_gait2392.py --out out/gallery
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

import biobullet
from biobullet.core.arguments import positive_float
from biobullet.core.errors import BiobulletError
from biobullet.render import render_frames, side_by_side, write_png

MODEL = os.path.join(os.path.dirname(biobullet.__file__), "data", "opensim", "gait2392_millard2012muscle.osim")
SWING = {"hip_flexion_r": 3.0, "hip_flexion_l": -3.0, "knee_angle_r": -4.0, "knee_angle_l": 2.0,
         "lumbar_extension": -1.0, "ankle_angle_r": 3.0}   # initial rates (rad/s)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/gallery", help="output folder (default out/gallery)")
    parser.add_argument("--t-end", type=positive_float, default=0.6, help="simulated time, s (default 0.6)")
    args = parser.parse_args(argv)
    try:
        os.makedirs(args.out, exist_ok=True)
        with warnings.catch_warnings(record=True) as reports:
            warnings.simplefilter("always")
            model = biobullet.load_model(MODEL)
        print(f"{model.name}: {len(model.coordinate_names)} coordinates, {model.n_joints} URDF joints; "
              f"{len(reports)} warning(s) on what is not imported (muscles)")
        q0, v0 = model.initial_state()
        for name, rate in SWING.items():
            v0[model.coordinate_names.index(name)] = rate
        trajectory = biobullet.simulate(model, args.t_end, initial=(q0, v0), rtol=1e-10, atol=1e-12,
                                        progress=False)
        energy = trajectory.energy["kinetic"] + trajectory.energy["potential_gravity"]
        drift = float(np.abs(energy - energy[0]).max() / np.abs(energy).max())
        print(f"passive {args.t_end:g} s: relative energy drift {drift:.2e}")
        fps = 3.0 / args.t_end
        frames = render_frames(model, trajectory, width=360, height=400, fps=fps, title="gait2392 (OpenSim)")
        picks = [frames[0], frames[len(frames) // 2], frames[-1]]
        path = write_png(side_by_side([[frame] for frame in picks])[0], os.path.join(args.out, "opensim_gait2392.png"))
        print(f"wrote {path}")
    except BiobulletError as exc:
        print(f"opensim_gait2392: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
