"""Gallery: arm26 lifts its forearm on PyBullet from a constant muscle excitation.

The bundled OpenSim model arm26 (Thelen2003 muscles, compliant tendons) with four of its muscles: TRIlat, TRImed,
BICshort and BRA (BIClong and TRIlong, over an ellipsoid and several surfaces, are left out to keep the run short;
docs/muscles.md compares all six with OpenSim). The elbow flexors BRA and BICshort get a constant excitation,
the triceps a small one; from rest with the arm hanging, PyBullet steps the skeleton with the muscles' forces (`Bridge.set_excitations`, muscle states
stepped with the bridge) and the reference engine integrates the same model (`simulate(excitations=)`). The
picture: the elbow angle on both, and the muscles' tendon forces.

    python demos/arm26_muscles.py --out out/gallery
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings
import xml.etree.ElementTree as ET

import numpy as np

import biobullet
from biobullet.bridge.simulation import simulate_bridge
from biobullet.core.atomic import save_figure, write_text
from biobullet.core.errors import BiobulletError

ARM26 = os.path.join(os.path.dirname(biobullet.__file__), "data", "opensim", "arm26.osim")
KEEP = ("TRIlat", "TRImed", "BICshort", "BRA")
EXCITATIONS = {"BRA": 0.25, "BICshort": 0.25, "TRIlat": 0.05, "TRImed": 0.05}


def arm_model(folder: str):
    """arm26 with the muscles of KEEP, written to `folder` and loaded."""
    root = ET.parse(ARM26).getroot()
    for force_set in root.iter("ForceSet"):
        objects = force_set.find("objects")
        for element in list(objects):
            if element.get("name") not in KEEP:
                objects.remove(element)
    path = write_text(os.path.join(folder, "arm26_four_muscles.osim"), ET.tostring(root, encoding="unicode"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # markers are reported, not imported
        return biobullet.load_model(path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/gallery", help="output folder (default out/gallery)")
    parser.add_argument("--t-end", type=float, default=0.6, help="simulated time, s (default 0.6)")
    parser.add_argument("--dt", type=float, default=5e-4, help="PyBullet step, s (default 0.5 ms)")
    args = parser.parse_args(argv)
    try:
        os.makedirs(args.out, exist_ok=True)
        model = arm_model(args.out)
        start = (np.zeros(model.nq), np.zeros(model.nv))
        engine = biobullet.simulate(model, args.t_end, initial=start, excitations=EXCITATIONS, progress=False,
                                    t_eval=np.linspace(0.0, args.t_end, 301))
        bridge = simulate_bridge(model, args.t_end, args.dt, initial=start, excitations=EXCITATIONS)
        elbow = model.coordinate_names.index("r_elbow_flex")
        on_bridge = np.interp(engine.t, bridge.t, bridge.q[:, elbow])
        gap = np.abs(on_bridge - engine.q[:, elbow]).max()
        print(f"elbow flexion after {args.t_end:g} s: engine {engine.q[-1, elbow]:.4f} rad, "
              f"PyBullet {bridge.q[-1, elbow]:.4f} rad")
        print(f"largest elbow difference PyBullet vs engine: {gap:.2e} rad")
        from matplotlib.figure import Figure
        figure = Figure(figsize=(9.0, 3.6), layout="constrained")
        left, right = figure.subplots(1, 2)
        left.plot(engine.t, engine.q[:, elbow], lw=2.0, label="reference engine")
        left.plot(bridge.t, bridge.q[:, elbow], "--", lw=1.5, label=f"PyBullet (dt = {args.dt * 1e3:g} ms)")
        left.set_xlabel("t (s)")
        left.set_ylabel("elbow flexion (rad)")
        left.legend(fontsize=8, loc="lower right")
        for m, name in enumerate(biobullet.muscles.names(model)):
            right.plot(engine.t, engine.muscles["tendon_force"][:, m], lw=1.6,
                       label=f"{name} (u = {EXCITATIONS[name]:g})")
        right.set_xlabel("t (s)")
        right.set_ylabel("tendon force (N)")
        right.legend(fontsize=8, loc="upper right")
        figure.suptitle("arm26 lifting its forearm: constant excitation of the elbow flexors")
        out = os.path.join(args.out, "arm26_muscles.png")
        save_figure(figure, out, dpi=120)   # gallery: ≥ 1000 px wide
        print(f"wrote {out}")
    except BiobulletError as error:
        print(f"biobullet: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
