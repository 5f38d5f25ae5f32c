"""Scenario `contact`: compliant contact in the reference engine against the 1-DOF oracle.

Writes into out_dir: restitution.md / restitution.json (measured e per law and requested cr, engine vs
`impact1d.simulate_impact`), hysteresis.png and friction_curves.png (law library plots), sliding_block.png
(speed of a block sliding under each friction law vs the μg line) and summary.json.
"""
from __future__ import annotations

import json
import os

import numpy as np

from biobullet.core import atomic

CR_VALUES = (0.3, 0.5, 0.8, 0.95)
LAWS = ("hunt_crossley", "flores", "hu_guo", "kelvin_voigt")
M, K, V, R, GAP = 1.0, 1.0e6, 1.0, 0.05, 0.01
ENGINE_T_END = GAP / V + 0.05   # s, one engine drop: the fall through the gap, the impact, and after
SLIDE_T_END = 0.08              # s, one sliding-block run
FRICTION = {
    "coulomb": {"friction_law": "coulomb", "mu": "0.5"},
    "regularized": {"friction_law": "regularized", "mu": "0.5", "v0": "1e-3"},
    "ambrosio": {"friction_law": "ambrosio", "mu": "0.5", "v0": "0.02", "v1": "0.05"},
    "stribeck": {"friction_law": "stribeck", "mu": "0.5", "mu_static": "0.8", "stribeck_velocity": "0.03",
                 "v0": "1e-3", "viscous": "0.5"},
}


def _engine_restitution(name: str, cr: float, folder: str) -> dict:
    from biobullet.contact.element import contact_intervals
    from biobullet.contact.report import make_normal_law
    from biobullet.contact.testbed import drop_urdf
    from biobullet.loader import load_text
    from biobullet.integrate import simulate
    law = make_normal_law(name, cr, mass=M, stiffness=K)
    attributes = {"normal_law": name, **{k: repr(v) for k, v in law.parameters.items() if k != "adhesion"}}
    model = load_text(drop_urdf(attributes, mass=M, radius=R, gravity="0 0 0"), folder)
    t_end = ENGINE_T_END
    trajectory = simulate(model, t_end, initial={"drop": R + GAP, "drop_dot": -V}, progress=False,
                          t_eval=np.array([0.0, t_end]))
    return contact_intervals(trajectory)[0]


def restitution_rows(folder: str) -> list[dict]:
    """One row per (law, cr): engine e, oracle e, |difference|, duration, peak force."""
    from biobullet.contact.impact1d import simulate_impact
    from biobullet.contact.report import make_normal_law
    rows = []
    for name in LAWS:
        for cr in CR_VALUES:
            interval = _engine_restitution(name, cr, folder)
            oracle = simulate_impact(make_normal_law(name, cr, mass=M, stiffness=K), mass=M, velocity=V, samples=2)
            rows.append({"law": name, "cr": cr, "engine": interval["restitution"], "oracle": oracle.restitution,
                         "difference": abs(interval["restitution"] - oracle.restitution),
                         "duration": interval["duration"], "peak_force": interval["peak_force"]})
    return rows


def restitution_markdown(rows: list[dict]) -> str:
    head = "| law | " + " | ".join(f"cr = {c:g} (engine / oracle)" for c in CR_VALUES) + " | max abs diff |"
    lines = [head, "|---|" + "---|" * (len(CR_VALUES) + 1)]
    for name in LAWS:
        mine = [r for r in rows if r["law"] == name]
        cells = [f"{r['engine']:.6f} / {r['oracle']:.6f}" for r in mine]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {max(r['difference'] for r in mine):.1e} |")
    return "\n".join(lines)


def sliding_block(folder: str, path: str, v_start: float = 0.2, t_end: float = SLIDE_T_END) -> dict:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from biobullet.contact.testbed import slider_urdf
    from biobullet.loader import load_text
    from biobullet.integrate import simulate
    g = 9.81
    delta_static = (M * g / K) ** (1.0 / 1.5)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    t = np.linspace(0.0, t_end, 161)
    out = {}
    for name, attributes in FRICTION.items():
        model = load_text(slider_urdf({"normal_law": "hertz", "stiffness": repr(K), **attributes}), folder,
                          name=f"slider_{name}.urdf")
        trajectory = simulate(model, t_end, initial={"drop": -delta_static, "slide_dot": v_start},
                              progress=False, t_eval=t)
        speed = trajectory.column("slide_dot")
        ax.plot(t * 1e3, speed, label=name)
        early = t <= 0.02
        out[name] = {"final_speed": float(speed[-1]),
                     "deceleration_early": float(-np.polyfit(t[early], speed[early], 1)[0]),
                     "dissipated": float(trajectory.energy["dissipated"][-1])}
    ax.plot(t * 1e3, np.maximum(v_start - 0.5 * g * t, 0.0), "k--", lw=0.8, label="μ g line (μ = 0.5)")
    ax.set_xlabel("t [ms]")
    ax.set_ylabel("slip speed [m/s]")
    ax.set_title("Block sliding on the ground (F_N = m g, engine)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    atomic.save_figure(fig, path, dpi=120)
    plt.close(fig)
    return out


def run(out_dir: str) -> dict:
    from biobullet.contact.report import plot_friction_curves, plot_hysteresis
    from biobullet_studies.common import simulated_time, write_atomic
    os.makedirs(out_dir, exist_ok=True)
    models = os.path.join(out_dir, "models")
    rows = restitution_rows(models)
    table = restitution_markdown(rows)
    write_atomic(os.path.join(out_dir, "restitution.md"), table + "\n")
    write_atomic(os.path.join(out_dir, "restitution.json"), json.dumps(rows, indent=2))
    plot_hysteresis(os.path.join(out_dir, "hysteresis.png"))
    plot_friction_curves(os.path.join(out_dir, "friction_curves.png"))
    sliding = sliding_block(models, os.path.join(out_dir, "sliding_block.png"))
    summary = {"max_restitution_difference": max(r["difference"] for r in rows), "restitution": rows,
               "sliding_block": sliding,
               "files": ["restitution.md", "restitution.json", "hysteresis.png", "friction_curves.png",
                         "sliding_block.png"],
               # the engine's runs: one drop per (law, cr) and one slide per friction law (the 1-DOF oracle's own
               # integrations are not counted)
               **simulated_time(len(rows) * ENGINE_T_END + len(sliding) * SLIDE_T_END)}
    write_atomic(os.path.join(out_dir, "summary.json"), json.dumps(summary, indent=2))
    return summary
