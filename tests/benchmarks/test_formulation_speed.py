"""Mass matrix + bias forces per call, each formulation against Pinocchio alone, in one run.

Reported as ratios (wall-clock varies between machines; ratios taken in one process do not). Targets from the
foundation issue: reduced on a C++ tree algorithm (reduced_pinocchio) ≤ 2× Pinocchio; own numpy recursion ≤ 20×.
Run with `make bench`; prints a table and writes out/benchmarks/formulation_speed.json.
"""
from __future__ import annotations

import json
import os
import timeit
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.dynamics.formulation import formulation_names, get_formulation

ROOT = Path(__file__).resolve().parents[2]
MODELS = ["arm7.urdf", "humanoid.urdf", "shoulder_rhythm.urdf"]


def _per_call(function, repeat: int = 5, number: int = 200) -> float:
    return min(timeit.repeat(function, repeat=repeat, number=number)) / number


def _pinocchio_time(model) -> float:
    import pinocchio as pin

    path = model.file
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if model.floating_base else pin.buildModelFromUrdf(path)
    data = pm.createData()
    q = pin.neutral(pm)
    v = np.random.default_rng(0).normal(size=pm.nv)
    zero = np.zeros(pm.nv)
    return _per_call(lambda: (pin.crba(pm, data, q), pin.rnea(pm, data, q, v, zero)))


@pytest.mark.parametrize("name", MODELS)
def test_formulation_speed(name, capsys):
    model = biobullet.load_model(ROOT / "urdf" / name)
    rng = np.random.default_rng(1)
    q, _ = model.initial_state()
    v = rng.normal(size=model.nv)
    reference = _pinocchio_time(model)
    rows = {"pinocchio (crba + rnea, full tree)": (reference, 1.0)}
    for formulation in formulation_names():
        f = get_formulation(formulation)
        if formulation == "multipliers":
            continue
        seconds = _per_call(lambda: f.mass_and_bias(model, q, v, 0.0), number=50)
        rows[formulation] = (seconds, seconds / reference)
    with capsys.disabled():
        print(f"\n{name}: mass matrix + bias forces per call (nv = {model.nv}, tree n = {model.n_tangent})")
        for label, (seconds, ratio) in rows.items():
            print(f"  {label:<36} {seconds * 1e6:10.1f} µs   {ratio:7.1f}× Pinocchio")
    out = ROOT / "out" / "benchmarks"
    out.mkdir(parents=True, exist_ok=True)
    path = out / "formulation_speed.json"
    existing = json.loads(path.read_text()) if path.exists() else {}
    existing[name] = {label: {"seconds": s, "ratio_to_pinocchio": r} for label, (s, r) in rows.items()}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(existing, indent=2))
    os.replace(tmp, path)
