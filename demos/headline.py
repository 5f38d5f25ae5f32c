"""The headline study run by `make demo`: writes everything into OUT (default out/).

1. foundation — every bundled model validated against Pinocchio and PyBullet, shoulder rhythms plotted;
2. shoulder — paper 000's Table 1 study: computed torques of both shoulder rhythms, power balance, PyBullet
   replay and a 3D video, into OUT/shoulder/.
"""
from __future__ import annotations

import argparse
import os
import sys

from biobullet.core.errors import BiobulletError
from biobullet.studies import run_scenario

HEADLINE = ["foundation", "shoulder"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="out", help="output folder (default: out)")
    args = parser.parse_args()
    try:
        for name in HEADLINE:
            summary = run_scenario(name, os.path.join(args.out, name))
            if not summary.get("all_ok", True):
                print(f"{name}: some checks failed, see {args.out}/{name}", file=sys.stderr)
                return 1
    except BiobulletError as error:
        print(f"biobullet: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
