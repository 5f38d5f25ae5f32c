"""The catalogue of paper studies: name → (module, one-line description), published to the library through the
entry point `biobullet.studies` (see pyproject.toml), so `biobullet run NAME` and `make demo` find them.

Each study module has `run(out_dir, **options) -> dict` that writes its plots, report and `summary.json` into
`out_dir` and returns the summary. Modules are imported only when run.
"""
from __future__ import annotations


STUDIES: dict[str, tuple[str, str]] = {
    "foundation": ("biobullet_studies.foundation",
                   "validate every bundled model against Pinocchio and PyBullet; plot the shoulder rhythms"),
    "shoulder": ("biobullet_studies.shoulder",
                 "paper 000 Table 1: de Groot vs Holzbaur shoulder rhythm — computed torques, power balance, "
                 "PyBullet replay, 3D video"),
    "deltoid": ("biobullet_studies.deltoid",
                "paper 000 on a muscle: a middle deltoid on the de Groot and Holzbaur shoulders — moment arms and "
                "torque over elevation, checked against finite differences of its length"),
    "andrews": ("biobullet_studies.andrews",
                "paper 000 benchmark: Andrews' squeezer 0–0.03 s, reduced vs multipliers — t=0 numbers, energy "
                "drift, loop residuals, convergence table, mechanism picture"),
    "fourbar": ("biobullet_studies.fourbar",
                "paper 003: four-bar knee — ICR J-curve of the shank over 0–110° flexion from the loop model"),
    "bridge-accuracy": ("biobullet_studies.bridge_accuracy",
                        "PyBullet bridge accuracy: constraint residuals (shoulder 10 s, Andrews' loops) and "
                        "convergence to the reference engine"),
    "prosthesis": ("biobullet_studies.prosthesis",
                   "paper 003: hip-driven four-bar knee prosthesis, 20 gait cycles — knee vs reference, ICR path, "
                   "contacts, period/spectrum, energy, 3D video (substitute data; see README status)"),
    "prosthesis-study": ("biobullet_studies.prosthesis_study",
                         "paper 003 study from the k sweeps: Fig. 11 spectrum-vs-k maps (± hip hiking), Poincaré "
                         "bifurcation, period, ρ/peak flexion per c/k, knee-stop/contact evidence, findings report"),
    "contact": ("biobullet_studies.contact",
                "compliant contact: restitution per law vs the 1-DOF oracle, friction laws, sliding block"),
    "elastic-robot": ("biobullet_studies.elastic_robot",
                      "paper 002: 1.5 s drop of the elastic 3-link robot (Gibbs–Appell, Timoshenko modes, "
                      "Hu–Guo contact, Ambrosio friction)"),
    "anthropomorph": ("biobullet_studies.anthropomorph",
                      "paper 004: planar anthropomorph with extensible links — flight, static stance, jump "
                      "(lift-off/touchdown events, energy budget, video), three-link model"),
    "sprint": ("biobullet_studies.sprint",
               "paper 001 §3.2: sprint swing leg (2D link-segment, 13×13) — inverse→forward round trip, high-knee "
               "modification under the six Table 1 strategies, Table 2 analog, failure flags, stick figures, video "
               "(substitute data)"),
    "pitching": ("biobullet_studies.pitching",
                 "paper 001 §3.1: 3D pitching arm (upper trunk, upper arm, forearm; ball shoulder, two-axis elbow; "
                 "25×25) — inverse dynamics of substitute kinematics, forward RK4 round trip, stick figures, video"),
}
