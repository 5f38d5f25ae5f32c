"""Every script in demos/ runs (so none rots), with a small budget, and draws its picture.

Each gallery demo is run as a user would run it (`python demos/NAME.py --out DIR ...`) and must exit 0, print its
numbers and write a non-blank PNG below 300 KB. The numbers each demo prints are checked against their independent
references (closed forms, Pinocchio, beam theory). The script runs as `__main__` in a fresh namespace inside this test
process (tests/in_process.py: its argv, stdout, stderr and exit code as a subprocess gives them), so a demo does not
pay Python's start-up and the loading of every compiled kernel again; `sweep_dask.py` (its Dask worker processes)
and `headline.py --help` (the `make demo` entry) still run as processes of their own.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import in_process

REPO = Path(__file__).resolve().parents[2]
DEMOS = REPO / "demos"

# demo → (small-budget arguments, picture it writes or None)
BUDGET = {
    "joint_function.py": ([], "joint_function.png"),
    "fourbar_pybullet.py": (["--t-end", "1.0"], "fourbar_pybullet.png"),
    "contact_laws.py": (["--t-end", "0.6"], "contact_laws.png"),
    "flexible_ringing.py": (["--t-end", "0.5", "--segments", "6"], "flexible_ringing.png"),
    "sweep_dask.py": (["--points", "4", "--workers", "1"], "sweep_dask.png"),
    "validate_pinocchio.py": (["--samples", "2"], "validate_pinocchio.png"),
    "shoulder_rhythm.py": (["--no-bridge", "--samples", "201"], "motion.png"),
    "opensim_gait2392.py": (["--t-end", "0.3"], "opensim_gait2392.png"),
    "opensim_gait2392_pybullet.py": (["--t-end", "0.15", "--fps", "10"], "opensim_gait2392_pybullet.png"),
    "gym_reach.py": (["--episodes", "3", "--steps", "60"], "gym_reach.png"),
    "arm26_muscles.py": (["--t-end", "0.3", "--dt", "1e-3"], "arm26_muscles.png"),
}
# `make demo`: the two headline studies end to end (bridge replay, 1280×720 video; minutes) — those studies are
# run by their own tests; here only its command line is exercised
HELP_ONLY = {"headline.py"}


def test_every_demo_is_listed():
    assert {p.name for p in DEMOS.glob("*.py")} == set(BUDGET) | HELP_ONLY


#: demos run as a process of their own (see the module docstring)
OWN_PROCESS = {"sweep_dask.py", "headline.py"}


def _run(name: str, *args: str) -> subprocess.CompletedProcess:
    if name not in OWN_PROCESS:
        return in_process.script(DEMOS / name, *args, env={"MPLBACKEND": "Agg"})
    env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"), MPLBACKEND="Agg")
    return subprocess.run([sys.executable, str(DEMOS / name), *args], capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.mark.parametrize("name", sorted(BUDGET))
def test_demo_runs_and_draws(name, tmp_path):
    args, picture = BUDGET[name]
    result = _run(name, "--out", str(tmp_path), *args)
    assert result.returncode == 0, result.stderr[-2000:]
    from PIL import Image
    path = tmp_path / picture
    image = np.asarray(Image.open(path).convert("RGB"), dtype=float)
    assert path.stat().st_size < 300_000 and image.std() > 10  # small, and not a blank canvas
    assert image.shape[1] >= 1000, image.shape   # the gallery is read on large screens
    assert "LayoutWarning" not in result.stderr, result.stderr[-2000:]   # nothing overlaps (core.figures)
    _check_numbers(name, result.stdout)


def _number(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in output:\n{text}"
    return float(match.group(1))


def _check_numbers(name: str, out: str) -> None:
    if name == "joint_function.py":
        # the coupling pip = 0.8 mcp + 0.3 mcp² holds on PyBullet to the bridge's stabilisation level
        assert _number(r"over the swing: ([\d.e+-]+) rad", out) < 1e-3
    elif name == "fourbar_pybullet.py":
        assert _number(r"max loop residual ([\d.e+-]+) m", out) < 1e-6
    elif name == "contact_laws.py":
        # every law bounces below its drop height and above a dead stop, near the nominal 0.7
        for law in ("kelvin_voigt", "hunt_crossley", "flores", "hu_guo"):
            first = _number(law + r"\s+restitution of the first bounces: ([\d.]+)", out)
            assert 0.55 < first < 0.85, (law, first)
    elif name == "flexible_ringing.py":
        model = _number(r"linearised model ([\d.]+) Hz", out)
        beam = _number(r"Euler–Bernoulli cantilever ([\d.]+) Hz", out)
        peak = _number(r"PyBullet tip motion ([\d.]+) Hz", out)
        assert abs(model - beam) / beam < 0.03    # 6 segments: lumped-segment error ~1 %
        assert abs(peak - beam) <= 2.0 + 0.03 * beam  # FFT bin 2 Hz for 0.5 s of signal
    elif name == "arm26_muscles.py":
        # PyBullet with the muscles' forces converges to the reference engine at first order: the largest elbow
        # gap halves with dt (docs/muscles.md: 1.91 at 1 → 0.5 ms, 2.07 at 0.5 → 0.25, 2.26 at 0.25 → 0.125)
        assert 1.7 <= _number(r"convergence ratio ([\d.]+)", out) <= 2.5
    elif name == "sweep_dask.py":
        assert _number(r"closed form\| / period = ([\d.e+-]+)", out) < 1e-6
    elif name == "validate_pinocchio.py":
        assert "model my_arm: OK" in out
    elif name == "opensim_gait2392.py":
        assert "23 coordinates" in out
        # a passive skeleton without forces conserves energy (integrator rtol 1e-10)
        assert _number(r"relative energy drift ([\d.e+-]+)", out) < 1e-7
    elif name == "opensim_gait2392_pybullet.py":
        assert "23 coordinates on PyBullet" in out and re.search(r"\(\d+ frames\)", out)
        # the bridge (1 ms steps, first order) follows the reference engine: 0.15 s gives ~2e-3 rad
        assert _number(r"reference engine ([\d.e+-]+) rad", out) < 1e-2
        # nothing holds the skeleton: its centre of mass falls at g (PyBullet's momentum balance; observed 6e-5)
        fall = _number(r"centre of mass falls at ([\d.e+-]+) m/s", out)
        assert abs(fall - 9.80665) < 1e-3 * 9.80665, fall
    elif name == "gym_reach.py":
        # Gymnasium's own API checker passes, and the coupling holds to the bridge's promise in every episode
        assert "gymnasium check_env: OK" in out
        assert _number(r"max coupling residual over \d+ episodes: ([\d.e+-]+) rad", out) <= 1e-6


def test_headline_demo_command_line():
    result = _run("headline.py", "--help")
    assert result.returncode == 0 and "--out" in result.stdout
