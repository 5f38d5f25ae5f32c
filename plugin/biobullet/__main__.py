"""`python -m biobullet`: the command-line interface (see `biobullet.cli`)."""
from __future__ import annotations

import sys

from biobullet.cli import main

if __name__ == "__main__":
    sys.exit(main())
