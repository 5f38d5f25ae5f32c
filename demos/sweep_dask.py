"""Gallery: sweep a parameter on Dask.

A sweep is a config (a dict here, or a JSON/TOML file for `biobullet sweep`) naming a point function, fixed
parameters and the swept axis. `run_sweep` runs every point as a Dask task — on a local cluster of worker
processes, or on any scheduler you pass (`scheduler="tcp://host:8786"`) — writes one JSON file per point
(atomically, so a killed sweep resumes where it stopped), a summary CSV/JSON and plots. Here: the period of a
damped oscillator against its stiffness, next to the closed form T = 2π/(ω_n√(1−ζ²)).

    python demos/sweep_dask.py --out out/gallery
"""
from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

from biobullet.core.arguments import positive_int
from biobullet.core.atomic import save_figure
from biobullet.core.errors import BiobulletError
from biobullet.sweep import run_sweep


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/gallery", help="output folder (default out/gallery)")
    parser.add_argument("--points", type=positive_int, default=8, help="stiffness values (default 8)")
    parser.add_argument("--workers", type=positive_int, default=2, help="local Dask worker processes (default 2)")
    parser.add_argument("--scheduler", default=None, help="address of a running Dask scheduler (optional)")
    args = parser.parse_args(argv)
    mass, damping = 2.0, 0.5
    config = {
        "name": "oscillator_stiffness",
        "function": "demo.damped_oscillator",            # a registered point function (or "pkg.module:function")
        "fixed": {"mass": mass, "damping": damping, "velocity": 1.0, "cycles": 3},
        "sweep": [{"path": "stiffness", "start": 1.0, "stop": 100.0, "num": args.points, "log": True}],
    }
    try:
        result = run_sweep(config, scheduler=args.scheduler, workers=args.workers,
                           out=os.path.join(args.out, "sweep_dask"), progress=False, plots=False)
        rows = sorted(result.ok, key=lambda r: r["params"]["stiffness"])
        k = np.array([r["params"]["stiffness"] for r in rows])
        period = np.array([r["result"]["period"] for r in rows])
        exact = 2 * np.pi / (np.sqrt(k / mass) * np.sqrt(1 - (damping / (2 * np.sqrt(k * mass))) ** 2))
        print(f"{len(rows)} points on {result.n_workers} Dask workers in {result.wall_seconds:.1f} s; "
              f"max |period − closed form| / period = {np.max(np.abs(period - exact) / exact):.1e}")
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        figure, axis = plt.subplots(figsize=(6.4, 3.4))
        kk = np.logspace(0, 2, 200)
        axis.loglog(kk, 2 * math.pi / np.sqrt(kk / mass * (1 - damping ** 2 / (4 * kk * mass))), "k-", lw=1,
                    label="closed form")
        axis.loglog(k, period, "o", color="tab:orange", label=f"sweep points (Dask, {result.n_workers} workers)")
        axis.set_xlabel("stiffness k (N/m)")
        axis.set_ylabel("period (s)")
        axis.set_title("a parameter sweep on Dask: oscillator period vs stiffness", fontsize=10)
        axis.legend(fontsize=8)
        figure.tight_layout()
        os.makedirs(args.out, exist_ok=True)
        out = os.path.join(args.out, "sweep_dask.png")
        save_figure(figure, out, dpi=160)   # gallery: ≥ 1000 px wide
        plt.close(figure)
        print(f"wrote {out}")
    except BiobulletError as error:
        print(f"biobullet: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
