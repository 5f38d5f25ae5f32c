"""Shared by the OpenSim oracle tests: OpenSim imported without leaving a log file in the checkout."""
from __future__ import annotations

import os
import tempfile

import pytest


def import_opensim():
    """OpenSim, imported in a scratch folder: on import it opens `opensim.log` in the working directory, and the
    tests then close that file sink (nothing is left in the checkout). Skips the test module without OpenSim."""
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="biobullet-opensim-") as scratch:
        os.chdir(scratch)
        try:
            module = pytest.importorskip("opensim", reason="OpenSim (the oracle) is installed by the test extra: "
                                         "pip install -e '.[test]'")
            module.Logger.removeFileSink()
        finally:
            os.chdir(here)
    module.Logger.setLevelString("error")
    return module
