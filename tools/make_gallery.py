"""Regenerate docs/gallery/: run every gallery demo into it (each writes its own picture) and render the README's
animated GIF of the shoulder rhythm (PyBullet swing, framed over the whole motion, ground grid, overlay) and the
same swing as a self-contained HTML replay (shoulder.html: open it from disk, no server).

    PYTHONPATH=plugin python tools/make_gallery.py [--out docs/gallery]

Only the pictures (and the gait2392 GIF) are kept (the demos' other outputs go to a temporary folder); each must stay < 1 MB, and every
PNG must be ≥ 1000 px wide (the gallery is read on large screens).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PICTURES = {"joint_function.py": "joint_function.png", "fourbar_pybullet.py": "fourbar_pybullet.png",
            "contact_laws.py": "contact_laws.png", "flexible_ringing.py": "flexible_ringing.png",
            "sweep_dask.py": "sweep_dask.png", "validate_pinocchio.py": "validate_pinocchio.png",
            "opensim_gait2392.py": "opensim_gait2392.png",
            "opensim_gait2392_pybullet.py": ("opensim_gait2392_pybullet.png", "opensim_gait2392_pybullet.gif")}
LIMIT = 1_000_000
MIN_WIDTH = 1000


def shoulder_gif(path: Path) -> None:
    """The README's GIF and HTML replay of a shoulder swing. The GIF is what the rhythm is about: a close-up of the
    shoulder girdle (the shoulder study's camera, `biobullet_studies.shoulder_bridge.video_camera`), clavicle and
    scapula in colour, following the swinging arm. Prints its framing (render.coverage against the scene without the
    model, shadows off): the rule is ≥ 8 % model pixels and a bounding box ≥ 25 % of the frame."""
    import numpy as np
    import biobullet
    from biobullet.bridge.simulation import simulate_bridge
    from biobullet.model.bundled import bundled_model
    from biobullet.render import coverage, export_html, render_frames, write_video
    from biobullet_studies.shoulder_bridge import GIRDLE, GIRDLE_COLORS, video_camera
    model = biobullet.load_model(bundled_model("shoulder_rhythm.urdf"))
    q0, v0 = model.initial_state()
    v0 = np.array(v0, float)
    v0[model.coordinate_names.index("elevation")] = 2.0   # a swing upward: clavicle and scapula follow the rhythm
    run = simulate_bridge(model, 2.0, 2e-3, initial=(q0, v0))
    size = (640, 400)
    look = dict(width=size[0], height=size[1], fps=10, title="shoulder rhythm (PyBullet)",
                camera=video_camera([(model, run)], size), link_colors=dict.fromkeys(GIRDLE, GIRDLE_COLORS[0]))
    write_video(render_frames(model, run, **look), path, fps=10)
    plain = render_frames(model, run, shadows=False, **look)
    empty = render_frames(model, run, shadows=False, hide_model=True, **look)
    measured = [coverage(f, e) for f, e in zip(plain, empty)]
    print(f"{path.name}: model pixels {min(m.pixels for m in measured):.1%}–{max(m.pixels for m in measured):.1%}, "
          f"box ≥ {min(m.box for m in measured):.0%} of the frame", file=sys.stderr)
    export_html(model, run, path.with_suffix(".html"), fps=20, title="shoulder rhythm (PyBullet)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(REPO / "docs" / "gallery"))
    parser.add_argument("--only", choices=("demos", "shoulder"), help="regenerate only the demos' pictures or only "
                        "the shoulder GIF and replay")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"), MPLBACKEND="Agg")
    with tempfile.TemporaryDirectory() as work:
        for demo, pictures in PICTURES.items() if args.only != "shoulder" else ():
            print(f"running demos/{demo} …", file=sys.stderr)
            subprocess.run([sys.executable, str(REPO / "demos" / demo), "--out", work], check=True, env=env,
                           stdout=subprocess.DEVNULL)
            for picture in (pictures,) if isinstance(pictures, str) else pictures:
                shutil.copyfile(Path(work) / picture, out / picture)
    if args.only != "demos":
        shoulder_gif(out / "shoulder.gif")
    from PIL import Image
    ok = True
    for file in sorted(out.iterdir()):
        size = file.stat().st_size
        width = Image.open(file).size[0] if file.suffix in (".png", ".gif") else None
        narrow = file.suffix == ".png" and width < MIN_WIDTH
        ok &= size <= LIMIT and not narrow
        print(f"{file.name}: {size / 1000:.0f} kB" + (f", {width} px wide" if width else "")
              + ("  TOO BIG" if size > LIMIT else "") + ("  TOO NARROW" if narrow else ""), file=sys.stderr)
    return 0 if ok else 1

if __name__ == "__main__":
    sys.exit(main())
