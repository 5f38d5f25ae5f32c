"""Gallery: arm26 lifts its forearm on PyBullet from a constant muscle excitation.

The bundled OpenSim model arm26 with all six muscles (Thelen2003, compliant tendons; BIClong over an ellipsoid,
TRIlong over three wraps, TRIlat, TRImed and BRA over a cylinder). The elbow flexors BIClong, BICshort and BRA get
a constant excitation, the triceps a small one; from rest with the arm hanging, PyBullet steps the skeleton with
the muscles' forces along their paths (`Bridge.set_excitations`, muscle states stepped with the bridge) and the
reference engine integrates the same model (`simulate(excitations=)`). PyBullet's step is first order in dt, so
the check is its convergence: the run is made at dt and dt/2, and the largest elbow difference to the engine halves
(docs/muscles.md). The picture: the elbow and shoulder angles on both, the elbow difference at both steps, and
the muscles' tendon forces.

    python demos/arm26_muscles.py --out out/gallery
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

import biobullet
from biobullet.core.arguments import positive_float
from biobullet.bridge.simulation import simulate_bridge
from biobullet.core.atomic import save_figure
from biobullet.core.errors import BiobulletError

ARM26 = os.path.join(os.path.dirname(biobullet.__file__), "data", "opensim", "arm26.osim")
EXCITATIONS = {"BIClong": 0.25, "BICshort": 0.25, "BRA": 0.25, "TRIlong": 0.05, "TRIlat": 0.05, "TRImed": 0.05}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/gallery", help="output folder (default out/gallery)")
    parser.add_argument("--t-end", type=positive_float, default=0.6, help="simulated time, s (default 0.6)")
    parser.add_argument("--dt", type=positive_float, default=5e-4,
                        help="PyBullet step, s (default 0.5 ms; also run at dt/2)")
    args = parser.parse_args(argv)
    try:
        os.makedirs(args.out, exist_ok=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # markers are reported, not imported
            model = biobullet.load_model(ARM26)
        start = (np.zeros(model.nq), np.zeros(model.nv))
        # the engine's error (rtol 1e-6: ≈ 1e-6 rad) is far below PyBullet's first-order error at these steps (1e-3)
        engine = biobullet.simulate(model, args.t_end, initial=start, excitations=EXCITATIONS, rtol=1e-6,
                                    atol=1e-10, progress=False, t_eval=np.linspace(0.0, args.t_end, 301))
        elbow = model.coordinate_names.index("r_elbow_flex")
        shoulder = model.coordinate_names.index("r_shoulder_elev")
        runs, gaps = {}, {}
        for dt in (args.dt, args.dt / 2):
            runs[dt] = simulate_bridge(model, args.t_end, dt, initial=start, excitations=EXCITATIONS)
            gaps[dt] = np.abs(np.interp(engine.t, runs[dt].t, runs[dt].q[:, elbow]) - engine.q[:, elbow])
        coarse, fine = gaps[args.dt].max(), gaps[args.dt / 2].max()
        bridge = runs[args.dt]
        print(f"elbow flexion after {args.t_end:g} s: engine {engine.q[-1, elbow]:.4f} rad, "
              f"PyBullet {bridge.q[-1, elbow]:.4f} rad")
        print(f"largest elbow difference PyBullet vs engine: {coarse:.2e} rad (dt = {args.dt * 1e3:g} ms), "
              f"{fine:.2e} rad (dt = {args.dt * 500:g} ms)")
        print(f"convergence ratio {coarse / fine:.2f} (first order: 2)")
        from matplotlib.figure import Figure
        figure = Figure(figsize=(13.0, 3.8), layout="constrained")
        left, middle, right = figure.subplots(1, 3)
        for index, name in ((elbow, "elbow"), (shoulder, "shoulder")):
            left.plot(engine.t, engine.q[:, index], lw=2.0, label=f"{name}, reference engine")
            left.plot(bridge.t, bridge.q[:, index], "--", lw=1.5, label=f"{name}, PyBullet")
        left.set_xlabel("t (s)")
        left.set_ylabel("angle (rad)")
        left.legend(fontsize=7, loc="center right")
        for dt, gap in gaps.items():
            middle.plot(engine.t, gap, lw=1.5, label=f"dt = {dt * 1e3:g} ms")
        middle.set_xlabel("t (s)")
        middle.set_ylabel("|elbow, PyBullet − engine| (rad)")
        middle.legend(fontsize=8, loc="upper left")
        for m, name in enumerate(biobullet.muscles.names(model)):
            right.plot(engine.t, engine.muscles["tendon_force"][:, m], lw=1.6,
                       label=f"{name} (u = {EXCITATIONS[name]:g})")
        right.set_xlabel("t (s)")
        right.set_ylabel("tendon force (N)")
        right.legend(fontsize=7, loc="upper right")
        figure.suptitle("arm26 lifting its forearm: six muscles, constant excitation of the elbow flexors")
        out = os.path.join(args.out, "arm26_muscles.png")
        save_figure(figure, out, dpi=120)   # gallery: ≥ 1000 px wide
        print(f"wrote {out}")
    except BiobulletError as error:
        print(f"biobullet: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
