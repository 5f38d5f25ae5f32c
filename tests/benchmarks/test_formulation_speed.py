"""Mass matrix + bias forces per call, each formulation against Pinocchio alone, in one run.

Reported as ratios (wall-clock varies between machines; ratios taken in one process do not). Targets from the
foundation issue: reduced on a C++ tree algorithm (reduced_pinocchio) ≤ 2× Pinocchio; own numpy recursion ≤ 20×.
Run with `make bench`; prints a table and writes out/benchmarks/formulation_speed.json. The measurement is
`biobullet.bench.formulation_speed` (also behind `biobullet bench`). The reduced formulations run compiled
kernels (algorithms/compiled_kernels.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest

import biobullet
from biobullet.bench import PINOCCHIO, formulation_speed
from records import keep_result

ROOT = Path(__file__).resolve().parents[2]
MODELS = ["arm7.urdf", "humanoid.urdf", "shoulder_rhythm.urdf"]


@pytest.mark.parametrize("name", MODELS)
def test_formulation_speed(name, capsys):
    model = biobullet.load_model(ROOT / "urdf" / name)
    pinocchio_label = PINOCCHIO
    times = formulation_speed(model)
    reference = times[pinocchio_label]
    rows = {label: (seconds, seconds / reference) for label, seconds in times.items()}
    with capsys.disabled():
        print(f"\n{name}: mass matrix + bias forces per call (nv = {model.nv}, tree n = {model.n_tangent})")
        for label, (seconds, ratio) in rows.items():
            print(f"  {label:<36} {seconds * 1e6:10.1f} µs   {ratio:7.1f}× Pinocchio")
    keep_result("formulation_speed.json", name,
                {label: {"seconds": s, "ratio_to_pinocchio": r} for label, (s, r) in rows.items()})
