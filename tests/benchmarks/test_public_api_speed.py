"""The public calls of a control or learning loop — `model.forward_dynamics`, `mass_matrix`, `bias_forces`, on
the pipeline (biobullet.pipeline) — against Pinocchio's `aba`, `crba`, `rnea` on the same model and state, one
run, calls in turns, thread CPU time (`biobullet.bench.public_api_speed`), each call at one state and each call at
a new state (`walk`: what a control loop does; a loop model's Newton then starts from the last call's solution). Target (issue 23): ≤ 3× `aba` and
≤ 3× `crba` + `rnea`, asserted on every model with a fair Pinocchio counterpart — its coordinate map the identity
(no joint functions, no loops: the same equations as Pinocchio's tree): every such bundled model (arm7, humanoid,
sprint_leg, pitching_arm, elastic_robot_3link, and the OpenSim arm26 and Tug_of_War_Millard, against Pinocchio on
the URDF they are translated to), a spherical-joint arm and a 1- and 2-link pendulum. On the smallest trees a
call's fixed cost decides the ratio (the single pendulum's M: ≈ 0.6 µs of Python and numba's argument conversion
beside ≈ 0.3 µs of kernel, against ≈ 0.35 µs for Pinocchio's whole `crba`; docs/speed.md "The public calls on the
pipeline"): 2.5–2.7× there. Reported only: a model with joint functions or loops,
which computes more than the open tree Pinocchio is given (jets, loop closure, Gᵀ M G) — the coupled chain,
shoulder_rhythm, the four-bar knee, Andrews' squeezer and the prosthesis (a loop and joint functions); for a loop
model without joint functions also against what a Pinocchio user calls for its accelerations,
`constraintDynamics` with the loops as point constraints. Prints a table and writes
out/benchmarks/public_api_speed.json; README and docs/speed.md carry the figures."""
from __future__ import annotations

from pathlib import Path

import pytest

import biobullet
from biobullet.bench import public_api_speed
from engine_models import chain_urdf
from records import keep_result
from spherical_arms import ARM

ROOT = Path(__file__).resolve().parents[2]
MODELS = ["arm7", "humanoid", "sprint_leg", "pitching_arm", "elastic_robot_3link", "arm26", "Tug_of_War_Millard",
          "ball_arm", "double_pendulum", "pendulum", "shoulder_rhythm", "coupled_chain", "fourbar_knee",
          "andrews_squeezer", "prosthesis_fourbar"]
# bundled models by name (arm26, Tug_of_War_Millard: OpenSim files); ball_arm: spherical shoulder and wrist
# (tests/spherical_arms.py); the pendulums: the smallest fixed-base chains (tests/engine_models.py);
# shoulder_rhythm: 10 joint functions; coupled_chain: polynomial joint functions; fourbar_knee: a planar loop;
# andrews_squeezer: three; prosthesis_fourbar: a loop and joint functions
TEXTS = {"ball_arm": ARM,
         "double_pendulum": chain_urdf([(0.5, 1.0, 0.25, 0.02), (0.4, 0.8, 0.2, 0.015)], gravity="0 0 -9.81",
                                       name="double_pendulum"),
         "pendulum": chain_urdf([(0.5, 1.0, 0.25, 0.02)], gravity="0 0 -9.81", name="pendulum")}


@pytest.mark.parametrize("name", MODELS)
def test_public_api_speed(name, capsys, tmp_path):
    path: str | Path = name
    if name in TEXTS:
        path = tmp_path / f"{name}.urdf"
        path.write_text(TEXTS[name])
    model = biobullet.load_model(path)
    fair = model.coordinate_map.identity
    bodies = len(model.bodies)   # moving bodies (a floating base's included)
    results = {}
    for mode, walk in (("one state", False), ("a new state each call", True)):
        times = public_api_speed(model, walk=walk)
        ratios = {"forward_dynamics / aba": times["forward_dynamics"] / times["pinocchio aba"],
                  "mass_matrix + bias_forces / (crba + rnea)":
                      (times["mass_matrix"] + times["bias_forces"])
                      / (times["pinocchio crba"] + times["pinocchio rnea"]),
                  "mass_matrix / crba": times["mass_matrix"] / times["pinocchio crba"],
                  "bias_forces / rnea": times["bias_forces"] / times["pinocchio rnea"],
                  "(mass_matrix then bias_forces) / (crba then rnea)":
                      times["mass_matrix then bias_forces"] / times["pinocchio crba then rnea"]}
        if "pinocchio constraintDynamics" in times:
            ratios["forward_dynamics / constraintDynamics"] = (times["forward_dynamics"]
                                                               / times["pinocchio constraintDynamics"])
        results[mode] = {"seconds": times, "ratios": ratios}
        with capsys.disabled():
            print(f"\n{name}, {mode}: public calls per call, thread CPU time (nv = {model.nv}, tree n = "
                  f"{model.n_tangent}, {bodies} moving bodies{'' if fair else '; reported only'})")
            for label, seconds in times.items():
                print(f"  {label:<28} {seconds * 1e6:8.2f} µs")
            for label, ratio in ratios.items():
                print(f"  {label:<44} {ratio:6.2f}×")
    keep_result("public_api_speed.json", name, {**results, "asserted": fair})
    if fair:
        for mode in results.values():
            assert mode["ratios"]["forward_dynamics / aba"] <= 3.0
            assert mode["ratios"]["mass_matrix + bias_forces / (crba + rnea)"] <= 3.0
