"""``python -m biobullet.sweep CONFIG [--scheduler ADDRESS] [--out DIR] [--workers N]``."""
from __future__ import annotations

import sys

from biobullet.sweep.cli import main

if __name__ == "__main__":
    sys.exit(main())
