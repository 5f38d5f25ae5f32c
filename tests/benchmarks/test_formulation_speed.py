"""Mass matrix + bias forces per call, each formulation against Pinocchio alone, in one run.

Reported as ratios (wall-clock varies between machines; ratios taken in one process do not). Targets from the
foundation issue: reduced on a C++ tree algorithm (reduced_pinocchio) ≤ 2× Pinocchio; own numpy recursion ≤ 20×.
Run with `make bench`; prints a table and writes out/benchmarks/formulation_speed.json. With numba installed the
reduced formulations run compiled kernels (dynamics/compiled_kernels.py); the "[numpy path]" rows time the same
formulations with the kernels switched off (the fallback without numba).
"""
from __future__ import annotations

import json
import os
import timeit
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.dynamics import compiled_kernels
from biobullet.dynamics.formulation import formulation_names, get_formulation

ROOT = Path(__file__).resolve().parents[2]
MODELS = ["arm7.urdf", "humanoid.urdf", "shoulder_rhythm.urdf"]


def _interleaved(functions: dict, rounds: int = 60, number: int = 20, slow: tuple = ()) -> dict:
    """Best per-call time of each function over short batches taken in turn (round robin), so that every function
    sees the same machine load (the machine may be busy with other work; slow calls are outliers). Functions named
    in `slow` run one batch of `number // 4` calls every fourth round."""
    best = {label: float("inf") for label in functions}
    for function in functions.values():
        function()  # warm-up (caches, compiled kernels)
    for r in range(rounds):
        for label, function in functions.items():
            if label in slow:
                if r % 4:
                    continue
                n = max(1, number // 4)
            else:
                n = number
            best[label] = min(best[label], timeit.timeit(function, number=n) / n)
    return best


def _pinocchio_call(model):
    import pinocchio as pin

    path = model.file
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if model.floating_base else pin.buildModelFromUrdf(path)
    data = pm.createData()
    q = pin.neutral(pm)
    v = np.random.default_rng(0).normal(size=pm.nv)
    zero = np.zeros(pm.nv)
    return lambda: (pin.crba(pm, data, q), pin.rnea(pm, data, q, v, zero))


def _without_kernels(function):
    def call():
        enabled = compiled_kernels.ENABLED
        compiled_kernels.ENABLED = False
        try:
            return function()
        finally:
            compiled_kernels.ENABLED = enabled
    return call


@pytest.mark.parametrize("name", MODELS)
def test_formulation_speed(name, capsys):
    model = biobullet.load_model(ROOT / "urdf" / name)
    rng = np.random.default_rng(1)
    q, _ = model.initial_state()
    v = rng.normal(size=model.nv)
    pinocchio_label = "pinocchio (crba + rnea, full tree)"
    functions = {pinocchio_label: _pinocchio_call(model)}
    for formulation in formulation_names():
        if formulation == "multipliers":
            continue
        f = get_formulation(formulation)
        functions[formulation] = (lambda f=f: f.mass_and_bias(model, q, v, 0.0))
    if compiled_kernels.ENABLED:  # the same formulations on the numpy fallback (what runs without numba)
        for formulation in ("reduced", "reduced_pinocchio"):
            if formulation in functions:
                f = get_formulation(formulation)
                functions[f"{formulation} [numpy path]"] = _without_kernels(
                    lambda f=f: f.mass_and_bias(model, q, v, 0.0))
    times = _interleaved(functions, slow=("matrix_calculus", "reduced_recursive", "reduced [numpy path]"))
    reference = times[pinocchio_label]
    rows = {label: (seconds, seconds / reference) for label, seconds in times.items()}
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
