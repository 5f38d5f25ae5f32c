"""The wheel ships the bundled models: built from a copy of the checkout, installed into a fresh folder, and the
installed package (not the checkout) finds them — `biobullet.model.bundled` and the elastic robot's
`urdf/…` default path — and loads one."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

CHECK = """
import sys
from pathlib import Path
site = Path(sys.argv[1]).resolve()
import biobullet
assert Path(biobullet.__file__).resolve().is_relative_to(site), biobullet.__file__
from biobullet.model.bundled import bundled_model, bundled_models
path = Path(bundled_model("andrews_squeezer.urdf"))
assert path.resolve().is_relative_to(site), path
elastic = Path(bundled_model("elastic_robot_3link.urdf"))   # the paper-002 robot of the studies
assert elastic.resolve().is_relative_to(site), elastic
model = biobullet.load_model(path)
by_name = biobullet.load_model("andrews_squeezer")   # a bare name: the installed bundled model, from anywhere
assert Path(by_name.file).resolve().is_relative_to(site), by_name.file
print(len(bundled_models()), model.nq, len(model.joint_names))
"""


def test_the_wheel_ships_the_bundled_models(tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(REPO, source, symlinks=True,
                    ignore=shutil.ignore_patterns(".git", ".venv", "out", "__pycache__", "*.egg-info", "build"))
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
                            "--no-index", "-q", "-w", str(wheels)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = wheels.glob("biobullet-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    bundled = sorted(p.name for p in (REPO / "urdf").glob("*.urdf"))
    assert len(bundled) >= 8
    missing = [n for n in bundled + ["README.md"] if f"biobullet/data/urdf/{n}" not in names]
    assert not missing, missing
    assert "biobullet/data/gait/walking_1ms.json" in names
    assert "biobullet/py.typed" in names   # PEP 561: type checkers read the package's hints
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(n for n in names if "dist-info" in n)

    site = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q",
                                "--target", str(site), str(wheel)], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-2000:]
    assert not (site / "biobullet" / "data" / "urdf").is_symlink()   # real files, not a link into the checkout
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-c", CHECK, str(site)], capture_output=True, text=True, timeout=300,
                          cwd=elsewhere, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    n_models, nq, n_joints = (int(v) for v in done.stdout.split())
    assert (n_models, nq, n_joints) == (len(bundled), 1, 7)
