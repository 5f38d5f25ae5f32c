"""Shoulder-rhythm study (paper 000, Table 1): de Groot & Brand vs Holzbaur rhythm, computed torques.

Writes plots, report.md, summary.json (and, when PyBullet and the renderer are available, the bridge replay and
a 3D video) into OUT (default out/shoulder). All the work is in `biobullet_studies.shoulder`.
"""
from __future__ import annotations

import argparse
import sys

from biobullet.core.arguments import positive_int
from biobullet.core.errors import BiobulletError
from biobullet_studies.shoulder import run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="out/shoulder", help="output folder (default: out/shoulder)")
    parser.add_argument("--no-bridge", action="store_true", help="skip the PyBullet replay and the video")
    parser.add_argument("--no-video", action="store_true", help="skip the 3D video")
    parser.add_argument("--samples", type=positive_int, default=801, help="analysis grid points (default 801)")
    args = parser.parse_args()
    try:
        summary = run(args.out, samples=args.samples, bridge=not args.no_bridge, video=not args.no_video)
    except BiobulletError as error:
        print(f"biobullet: error: {error}", file=sys.stderr)
        return 2
    if not summary["ok"]:
        print(f"shoulder: some checks failed, see {args.out}/report.md", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
