"""The public calls of a control or learning loop — `model.forward_dynamics`, `mass_matrix`, `bias_forces`, on
the pipeline (biobullet.pipeline) — against Pinocchio's `aba`, `crba`, `rnea` on the same model and state, one
run, calls in turns (`biobullet.bench.public_api_speed`). Target (issue 23): ≤ 3× `aba` and ≤ 3× `crba` + `rnea`
on arm7. Prints a table and writes out/benchmarks/public_api_speed.json; README and docs/speed.md carry the
figures."""
from __future__ import annotations

from pathlib import Path

import pytest

import biobullet
from biobullet.bench import public_api_speed
from records import keep_result

ROOT = Path(__file__).resolve().parents[2]
MODELS = ["arm7.urdf", "humanoid.urdf", "shoulder_rhythm.urdf"]


@pytest.mark.parametrize("name", MODELS)
def test_public_api_speed(name, capsys):
    model = biobullet.load_model(ROOT / "urdf" / name)
    times = public_api_speed(model)
    ratios = {"forward_dynamics / aba": times["forward_dynamics"] / times["pinocchio aba"],
              "mass_matrix + bias_forces / (crba + rnea)":
                  (times["mass_matrix"] + times["bias_forces"]) / (times["pinocchio crba"] + times["pinocchio rnea"]),
              "mass_matrix / crba": times["mass_matrix"] / times["pinocchio crba"],
              "bias_forces / rnea": times["bias_forces"] / times["pinocchio rnea"]}
    with capsys.disabled():
        print(f"\n{name}: public calls per call (nv = {model.nv}, tree n = {model.n_tangent})")
        for label, seconds in times.items():
            print(f"  {label:<20} {seconds * 1e6:8.2f} µs")
        for label, ratio in ratios.items():
            print(f"  {label:<44} {ratio:6.2f}×")
    keep_result("public_api_speed.json", name, {"seconds": times, "ratios": ratios})
    if name == "arm7.urdf":
        assert ratios["forward_dynamics / aba"] <= 3.0
        assert ratios["mass_matrix + bias_forces / (crba + rnea)"] <= 3.0
