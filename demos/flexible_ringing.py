"""Gallery: a flexible link that rings.

A 1 m steel cantilever (`<flexible>` link, Euler–Bernoulli, no damping) is cut into rigid segments joined by
bending springs (`load_segmented_model`), bent by a tip load, released and stepped on PyBullet. The tip rings at
the beam's first natural frequency: the picture compares the tip motion's spectrum peak with the model's linearised
frequency (`natural_frequencies`) and the textbook cantilever value f₁ = (1.8751²/2π)·√(EI/ρAL⁴).

    python demos/flexible_ringing.py --out out/gallery
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from biobullet.core.arguments import positive_float, positive_int
from biobullet.algorithms.kinematics import frame_placement
from biobullet.bridge.simulation import simulate_bridge
from biobullet.core.atomic import save_figure, write_text
from biobullet.core.errors import BiobulletError
from biobullet.flexible.segments import load_segmented_model, natural_frequencies

E, RHO, WIDTH, THICKNESS, LENGTH = 2.0e11, 7850.0, 0.03, 0.01, 1.0   # Pa, kg/m³, m, m, m
AREA, SECOND_MOMENT = WIDTH * THICKNESS, WIDTH * THICKNESS ** 3 / 12  # bending about z (deflection along y)

URDF = f"""<robot name="cantilever">
  <link name="wall"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <link name="beam"><inertial><origin xyz="{LENGTH / 2} 0 0"/><mass value="{RHO * AREA * LENGTH}"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.2"/></inertial></link>
  <joint name="clamp" type="fixed"><parent link="wall"/><child link="beam"/></joint>
  <biobullet version="1">
    <gravity xyz="0 0 0"/>
    <flexible link="beam" theory="euler_bernoulli" length="{LENGTH}" youngs_modulus="{E}" shear_modulus="{E / 2.6}"
              shear_coefficient="0.8333" area="{AREA}" second_moment="{SECOND_MOMENT}" density="{RHO}"/>
  </biobullet>
</robot>
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/gallery", help="output folder (default out/gallery)")
    parser.add_argument("--segments", type=positive_int, default=8, help="rigid segments (default 8)")
    parser.add_argument("--t-end", type=positive_float, default=0.5, help="simulated time (s, default 0.5)")
    args = parser.parse_args(argv)
    try:
        os.makedirs(args.out, exist_ok=True)
        path = write_text(os.path.join(args.out, "cantilever.urdf"), URDF)
        model, layouts = load_segmented_model(path, segments=args.segments)
        lay = layouts["beam"]
        tip_link = lay.body_names()[-1]
        omega = natural_frequencies(model)
        f_model = omega[0] / (2 * np.pi)
        f_beam = 1.8751 ** 2 / (2 * np.pi) * np.sqrt(E * SECOND_MOMENT / (RHO * AREA * LENGTH ** 4))
        # initial shape: the static deflection under a tip load, θ'(x) ∝ (L − x) — each bending joint at a
        # section x_k turns by h·κ(x_k), so the tip starts ~2 cm aside
        q0 = np.zeros(model.nq)
        for k, name in enumerate(model.coordinate_names):
            if "__bend" in name:
                x_k = (int(name.rsplit("bend", 1)[1]) - 0.5) * lay.h
                q0[k] = 0.06 * lay.h * (LENGTH - x_k) / LENGTH ** 2
        dt = 2e-4
        run = simulate_bridge(model, args.t_end, dt, initial=(q0, np.zeros(model.nv)))
        tip = np.array([frame_placement(model, x, tip_link)[0] @ [lay.bodies[-1][1] - lay.bodies[-1][0], 0, 0]
                        + frame_placement(model, x, tip_link)[1] for x in run.positions])[:, 1]
        spectrum = np.abs(np.fft.rfft(tip - tip.mean()))
        frequencies = np.fft.rfftfreq(len(tip), dt)
        f_peak = frequencies[np.argmax(spectrum)]
        print(f"first frequency: PyBullet tip motion {f_peak:.2f} Hz (resolution {1 / args.t_end:.1f} Hz), "
              f"linearised model {f_model:.2f} Hz, Euler–Bernoulli cantilever {f_beam:.2f} Hz")
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        figure, (left, right) = plt.subplots(1, 2, figsize=(7.2, 3.2), gridspec_kw={"width_ratios": [3, 2]})
        left.plot(run.t, 1000 * tip, lw=1.4)
        left.set_xlabel("t (s)")
        left.set_ylabel("tip deflection (mm)")
        left.set_title(f"1 m steel cantilever, {args.segments} segments, on PyBullet", fontsize=9)
        right.plot(frequencies, spectrum / spectrum.max(), lw=1.4)
        right.axvline(f_model, color="tab:green", ls="--", lw=1, label=f"model {f_model:.1f} Hz")
        right.axvline(f_beam, color="k", ls=":", lw=1, label=f"beam theory {f_beam:.1f} Hz")
        right.set_xlim(0, 4 * f_beam)
        right.set_xlabel("frequency (Hz)")
        right.set_ylabel("tip amplitude spectrum / peak")
        right.legend(fontsize=7)
        figure.tight_layout()
        out = os.path.join(args.out, "flexible_ringing.png")
        save_figure(figure, out, dpi=160)   # gallery: ≥ 1000 px wide
        plt.close(figure)
        print(f"wrote {out}")
    except BiobulletError as error:
        print(f"biobullet: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
