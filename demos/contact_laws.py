"""Gallery: compare contact laws by dropping balls.

The same 1 kg ball (radius 5 cm) is dropped from 30 cm onto the ground once per normal-contact law. Each law is
set up for the same nominal coefficient of restitution 0.7 and stiffness 1e5 N/m (`make_normal_law` picks the
damping the law needs), the drop is integrated by the reference engine, and the bounces are measured from the
trajectory (`contact_intervals`). They bounce differently because each law turns "c_r = 0.7" into damping in its
own way (linear dashpot, Hunt–Crossley's, Flores', Hu & Guo's hysteresis) — the picture shows by how much.

    python demos/contact_laws.py --out out/gallery
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np

from biobullet.core.arguments import positive_float
from biobullet.contact.element import contact_intervals
from biobullet.contact.report import make_normal_law
from biobullet.contact.testbed import drop_urdf
from biobullet.loader import load_text
from biobullet.core.atomic import save_figure
from biobullet.core.errors import BiobulletError
from biobullet.integrate import simulate

LAWS = ("kelvin_voigt", "hunt_crossley", "flores", "hu_guo")
MASS, RADIUS, HEIGHT, RESTITUTION, STIFFNESS = 1.0, 0.05, 0.30, 0.7, 1e5


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/gallery", help="output folder (default out/gallery)")
    parser.add_argument("--t-end", type=positive_float, default=1.2, help="simulated time (s, default 1.2)")
    args = parser.parse_args(argv)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        figure, axis = plt.subplots(figsize=(6.4, 3.6))
        with tempfile.TemporaryDirectory() as folder:
            for name in LAWS:
                law = make_normal_law(name, RESTITUTION, mass=MASS, stiffness=STIFFNESS)
                attributes = {"normal_law": name, **{k: repr(v) for k, v in law.parameters.items() if k != "adhesion"}}
                model = load_text(drop_urdf(attributes, mass=MASS, radius=RADIUS), folder, f"{name}.urdf")
                run = simulate(model, args.t_end, initial={"drop": HEIGHT}, progress=False,
                               t_eval=np.linspace(0.0, args.t_end, 1201))
                bounces = [b for b in contact_intervals(run) if b["restitution"] is not None]  # finished ones
                e = ", ".join(f"{b['restitution']:.3f}" for b in bounces[:3])
                print(f"{name:14s} restitution of the first bounces: {e}")
                axis.plot(run.t, run.column("drop") - RADIUS, lw=1.6,
                          label=f"{name} (e₁ = {bounces[0]['restitution']:.2f})" if bounces else name)
        axis.axhline(0.0, color="grey", lw=1)
        axis.set_xlabel("t (s)")
        axis.set_ylabel("height of the ball's bottom (m)")
        axis.set_title(f"one ball, four contact laws, nominal restitution {RESTITUTION}")
        axis.legend(fontsize=8)
        figure.tight_layout()
        os.makedirs(args.out, exist_ok=True)
        out = os.path.join(args.out, "contact_laws.png")
        save_figure(figure, out, dpi=160)   # gallery: ≥ 1000 px wide
        plt.close(figure)
        print(f"wrote {out}")
    except BiobulletError as error:
        print(f"biobullet: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
