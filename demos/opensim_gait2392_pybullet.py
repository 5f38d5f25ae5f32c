"""Gallery: OpenSim's gait2392 skeleton falling on PyBullet, with a video.

Loads the bundled OpenSim model `gait2392_millard2012muscle` (23 coordinates, spline-driven knees, a free pelvis),
releases it from its default pose with the joints swinging, and steps it on PyBullet through the bridge
(`biobullet.bridge.simulate`: the knees' joint functions are enforced by the bridge; muscles are imported but do not
act, so the skeleton is passive and falls freely). Checks that its centre of mass falls at g and compares its joint
angles with biobullet's reference engine over the same time; writes a short GIF video (framed on the whole motion;
a GIF so that the README shows it inline) and a PNG of three instants.

    python demos/opensim_gait2392_pybullet.py --out out/gallery
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

import biobullet
import biobullet.bridge
from biobullet.core.arguments import positive_float
from biobullet.algorithms.kinematics import body_placements
from biobullet.core.errors import BiobulletError
from biobullet.render import fit_camera, motion_points, render_frames, side_by_side, write_png, write_video

WIDTH, HEIGHT = 360, 400   # one frame (px); the PNG puts three side by side

SWING = {"hip_flexion_r": 3.0, "hip_flexion_l": -3.0, "knee_angle_r": -4.0, "knee_angle_l": 2.0,
         "lumbar_extension": -1.0, "ankle_angle_r": 3.0}   # initial rates (rad/s)


def centre_of_mass_height(model, x: np.ndarray) -> float:
    """Height (m, along −gravity) of the whole body's centre of mass at tree configuration x."""
    up = -np.asarray(model.gravity, float) / np.linalg.norm(model.gravity)
    masses = np.array([body.mass for body in model.bodies])
    centres = np.array([r @ body.com + p for body, (r, p) in zip(model.bodies, body_placements(model, x))])
    return float(masses @ centres @ up / masses.sum())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/gallery", help="output folder (default out/gallery)")
    parser.add_argument("--t-end", type=positive_float, default=0.6, help="simulated time, s (default 0.6)")
    parser.add_argument("--fps", type=positive_float, default=20.0,
                        help="video frames per second of model time (default 20)")
    args = parser.parse_args(argv)
    try:
        os.makedirs(args.out, exist_ok=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # the reports on what is not imported (markers, ...)
            model = biobullet.load_model("gait2392_millard2012muscle")
        q0, v0 = model.initial_state()
        for name, rate in SWING.items():
            v0[model.coordinate_names.index(name)] = rate
        run = biobullet.bridge.simulate(model, args.t_end, dt=1e-3, initial=(q0, v0), progress=False)
        reference = biobullet.simulate(model, run.t[-1], initial=(q0, v0), rtol=1e-9, atol=1e-11, progress=False)
        rotations = [i for i, name in enumerate(model.coordinate_names) if name not in
                     ("pelvis_tx", "pelvis_ty", "pelvis_tz")]
        gap = float(np.abs(run.q[-1][rotations] - reference.q[-1][rotations]).max())
        height = model.coordinate_names.index("pelvis_ty")
        drop = float(q0[height] - run.q[-1][height])
        # nothing holds the skeleton: its centre of mass falls with acceleration g whatever the joints do
        heights = np.array([centre_of_mass_height(model, x) for x in run.positions])
        fall = -2.0 * np.polyfit(run.t, heights, 2)[0]
        print(f"{model.name}: {len(model.coordinate_names)} coordinates on PyBullet, {len(run.t) - 1} steps of 1 ms")
        print(f"after {run.t[-1]:.3f} s: pelvis dropped {drop:.3f} m; max joint-angle gap to the reference engine "
              f"{gap:.2e} rad")
        print(f"centre of mass falls at {fall:.4f} m/s² (|gravity| = {np.linalg.norm(model.gravity):.4f} m/s²)")
        # framed on the whole motion, with room above the head for the overlay (title, time, grid size)
        camera = fit_camera(motion_points(model, run), model.gravity, aspect=WIDTH / HEIGHT, margin=1.3)
        frames = render_frames(model, run, width=WIDTH, height=HEIGHT, fps=args.fps, camera=camera,
                               title="gait2392 on PyBullet")
        video = write_video(frames, os.path.join(args.out, "opensim_gait2392_pybullet.gif"), args.fps)
        picks = [frames[0], frames[len(frames) // 2], frames[-1]]
        picture = write_png(side_by_side([[frame] for frame in picks])[0],
                            os.path.join(args.out, "opensim_gait2392_pybullet.png"))
        print(f"wrote {video} ({len(frames)} frames) and {picture}")
    except BiobulletError as exc:
        print(f"opensim_gait2392_pybullet: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
