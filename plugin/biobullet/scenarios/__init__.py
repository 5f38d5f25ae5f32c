"""Paper studies, one module per scenario, run by `biobullet run NAME` and `make demo`.

Each scenario module has `run(out_dir, **options) -> dict` that writes its plots, report and
`summary.json` into `out_dir` and returns the summary. Modules are imported only when run.
"""
from __future__ import annotations

import importlib
from typing import Any

from ..errors import ModelError

SCENARIOS: dict[str, tuple[str, str]] = {
    "foundation": ("biobullet.scenarios.foundation",
                   "validate every bundled model against Pinocchio and PyBullet; plot the shoulder rhythms"),
    "shoulder": ("biobullet.scenarios.shoulder",
                 "paper 000 Table 1: de Groot vs Holzbaur shoulder rhythm — computed torques, power balance, "
                 "PyBullet replay, 3D video"),
    "andrews": ("biobullet.scenarios.andrews",
                "paper 000 benchmark: Andrews' squeezer 0–0.03 s, reduced vs multipliers — t=0 numbers, energy "
                "drift, loop residuals, convergence table, mechanism picture"),
    "fourbar": ("biobullet.scenarios.fourbar",
                "paper 003: four-bar knee — ICR J-curve of the shank over 0–110° flexion from the loop model"),
    "bridge-accuracy": ("biobullet.scenarios.bridge_accuracy",
                        "PyBullet bridge accuracy: constraint residuals (shoulder 10 s, Andrews' loops) and "
                        "convergence to the reference engine"),
    "prosthesis": ("biobullet.scenarios.prosthesis",
                   "paper 003: hip-driven four-bar knee prosthesis, 20 gait cycles — knee vs reference, ICR path, "
                   "contacts, period/spectrum, energy, 3D video (substitute data; see README status)"),
    "prosthesis-study": ("biobullet.scenarios.prosthesis_study",
                         "paper 003 study from the k sweeps: Fig. 11 spectrum-vs-k maps (± hip hiking), Poincaré "
                         "bifurcation, period, ρ/peak flexion per c/k, knee-stop/contact evidence, findings report"),
    "contact": ("biobullet.scenarios.contact",
                "compliant contact: restitution per law vs the 1-DOF oracle, friction laws, sliding block"),
    "elastic-robot": ("biobullet.scenarios.elastic_robot",
                      "paper 002: 1.5 s drop of the elastic 3-link robot (Gibbs–Appell, Timoshenko modes, "
                      "Hu–Guo contact, Ambrosio friction)"),
    "anthropomorph": ("biobullet_studies.anthropomorph",
                      "paper 004: planar anthropomorph with extensible links — flight, static stance, jump "
                      "(lift-off/touchdown events, energy budget, video), three-link model"),
}


def scenario_names() -> list[str]:
    return sorted(SCENARIOS)


def run_scenario(name: str, out_dir: str, **options: Any) -> dict:
    if name not in SCENARIOS:
        raise ModelError(f"unknown scenario {name!r}", argument="SCENARIO", expected="one of " + ", ".join(scenario_names()))
    module = importlib.import_module(SCENARIOS[name][0])
    return module.run(out_dir, **options)
