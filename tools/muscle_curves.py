"""Regenerate docs/gallery/muscle_curves.png: the normalized Hill curves of the three OpenSim muscle models as the
library's kernels compute them (lines), with OpenSim 4.6's own values where its Python bindings expose them
(markers: Millard's curve objects, DeGroote's static curve functions).

    PYTHONPATH=plugin python tools/muscle_curves.py [--out docs/gallery/muscle_curves.png]
"""
from __future__ import annotations

import argparse

import numpy as np


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/gallery/muscle_curves.png")
    args = parser.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from biobullet.core.atomic import save_figure
    from biobullet.muscles import hill
    from biobullet.muscles.description import MuscleParameters

    try:
        import opensim as osim
        osim.Logger.setLevelString("error")
    except ImportError:   # the lines alone
        osim = None
    parameters = MuscleParameters(1000.0, 0.1, 0.2)
    curves = {name: hill.curve_parameters(name, parameters) for name in hill.MODEL_CODES}
    colors = {"degroote2016": "tab:blue", "millard2012": "tab:orange", "thelen2003": "tab:green"}
    panels = [("active force–length f_L", "normalized fiber length l̃", np.linspace(0.3, 1.9, 400),
               hill.active_force_length, "getActiveForceLengthCurve", "calcActiveForceLengthMultiplier"),
              ("passive force–length f_PE", "normalized fiber length l̃", np.linspace(0.8, 1.8, 400),
               hill.passive_force_length, "getFiberForceLengthCurve", "calcPassiveForceMultiplier"),
              ("force–velocity f_V", "normalized fiber velocity ṽ (lengthening > 0)", np.linspace(-1.0, 1.0, 400),
               hill.force_velocity, "getForceVelocityCurve", "calcForceVelocityMultiplier"),
              ("tendon force–length f_T", "normalized tendon length l̃_T", np.linspace(0.99, 1.06, 400),
               hill.tendon_force_length, "getTendonForceLengthCurve", "calcTendonForceMultiplier")]
    millard = osim.Millard2012EquilibriumMuscle() if osim else None
    degroote = osim.DeGrooteFregly2016Muscle() if osim else None
    figure, axes = plt.subplots(2, 2, figsize=(11, 8))
    for axis, (title, label, xs, kernel, millard_curve, degroote_curve) in zip(axes.flat, panels):
        for name, code in hill.MODEL_CODES.items():
            if kernel is hill.force_velocity and code == hill.THELEN:
                # Thelen's curve is defined through its inverse (ṽ from force, activation 1): plot that
                forces = np.linspace(0.0, 1.7, 400)
                velocities = [hill.fiber_velocity(code, curves[name], hill.muscle_vector(name, parameters), 1.0,
                                                  1.0, 0.0, 1.0, f) for f in forces]
                axis.plot(velocities, forces, color=colors[name], label=f"{name} (a = 1)")
                continue
            axis.plot(xs, [kernel(code, curves[name], float(x)) for x in xs], color=colors[name], label=name)
        if osim:
            marks = xs[::25]
            curve = getattr(millard, millard_curve)()
            axis.plot(marks, [curve.calcValue(float(x)) for x in marks], "o", color=colors["millard2012"],
                      mfc="none", label="OpenSim 4.6 Millard")
            axis.plot(marks, [getattr(degroote, degroote_curve)(float(x)) for x in marks], "s",
                      color=colors["degroote2016"], mfc="none", label="OpenSim 4.6 DeGroote")
        axis.set_title(title)
        axis.set_xlabel(label)
        axis.set_ylabel("force / F₀")
        axis.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    axes[1, 0].legend(fontsize=8)
    figure.suptitle("OpenSim's Hill-type muscle curves (default parameters): biobullet.muscles.hill (lines), "
                    "OpenSim 4.6 (markers)", fontsize=11)
    figure.tight_layout()
    save_figure(figure, args.out, dpi=110)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
