"""`make docs` builds the API reference of the public modules from their docstrings (pdoc), and fails loudly if a
public name does not resolve: built here into a temporary folder, as `tools/build_api_docs.py` does (without the
functions' highlighted source and the search index: no name depends on them, and they were most of the build's
time)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import biobullet

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_api_reference_builds_for_the_public_modules(tmp_path):
    pytest.importorskip("pdoc", reason="pdoc is in the docs/test extras: pip install 'biobullet[docs]'")
    env_path = str(Path(biobullet.__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "build_api_docs.py"), "--out", str(tmp_path),
                           "--no-show-source", "--no-search"],
                          capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "PYTHONPATH": env_path})
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "index.html").is_file()
    loader = (tmp_path / "biobullet" / "loader.html").read_text()
    assert "joint_limits" in loader and "bundled model" in loader   # load_model's docstring
    bridge = (tmp_path / "biobullet" / "bridge.html").read_text()
    assert '<section id="Bridge">' in bridge   # a lazily exported class has its own section
    assert (tmp_path / "biobullet" / "core" / "errors.html").is_file()
