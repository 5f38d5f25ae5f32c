"""`validate_model`: every registered formulation against every oracle, on random states.

Relative error of one quantity = max|ours − oracle| / max(max|oracle|, 1): relative for large entries,
absolute (in SI units) for entries below 1, so that near-zero quantities do not blow the ratio up. A check
passes when max_rel_error ≤ its tolerance: `tol` for Pinocchio; for PyBullet max(tol, PYBULLET_FACTOR · ε),
where ε (kg·m²) is how far PyBullet's own stored inertias (it diagonalises every tensor, with a loose
eigen-solver threshold) are from the file — measured per model, 0 for diagonal tensors.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

import numpy as np

from biobullet.core.errors import BiobulletError, ModelError
from biobullet.validate.oracles import ORACLE_NAMES, make_oracle

EXCLUDED_FORMULATIONS = ("reduced_pinocchio",)  # it IS Pinocchio: never check Pinocchio against itself
# Inertia errors enter M linearly (times squared lever arms ≲ 1 m², summed over bodies), h times |v|² and q̈
# times cond(M); the ratio max_rel_error / ε measured on 60 random 8- and 12-link trees stays below 15, so
# 100 leaves a ~7× margin while a model whose inertia is off by 1e-5 kg·m² still fails against PyBullet.
PYBULLET_FACTOR = 1e2


@dataclass(frozen=True)
class Check:
    quantity: str  # mass_matrix | bias_forces | forward_dynamics | jacobian | link_velocity | inertial_parameters
    formulation: str  # a registered formulation; "kinematics"/"model" for formulation-independent checks
    oracle: str
    max_abs_error: float
    max_rel_error: float
    ok: bool
    tolerance: float = 0.0
    error: str | None = None  # set when the formulation raised instead of answering


@dataclass
class ValidationReport:
    model: str
    checks: list[Check] = field(default_factory=list)
    samples: int = 0

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def to_dict(self) -> dict:
        checks = []
        for c in self.checks:
            d = asdict(c)
            for key in ("max_abs_error", "max_rel_error"):
                d[key] = d[key] if np.isfinite(d[key]) else None
            if d["error"] is None:
                del d["error"]
            checks.append(d)
        return {"model": self.model, "ok": self.ok, "samples": self.samples, "checks": checks}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_table(self) -> str:
        header = f"{'quantity':<17} {'formulation':<16} {'oracle':<10} {'max abs':>10} {'max rel':>10} {'tol':>8}  ok"
        lines = [f"model {self.model}: {'OK' if self.ok else 'FAILED'} ({self.samples} samples)", header,
                 "-" * len(header)]
        for c in self.checks:
            lines.append(f"{c.quantity:<17} {c.formulation:<16} {c.oracle:<10} {c.max_abs_error:>10.2e} "
                         f"{c.max_rel_error:>10.2e} {c.tolerance:>8.0e}  {'yes' if c.ok else 'NO'}"
                         + (f"  ({c.error})" if c.error else ""))
        return "\n".join(lines)


class _Accumulator:
    def __init__(self) -> None:
        self.abs: dict[tuple[str, str, str], float] = {}
        self.rel: dict[tuple[str, str, str], float] = {}
        self.errors: dict[tuple[str, str, str], str] = {}

    def add(self, key, ours, oracle) -> None:
        ours, oracle = np.asarray(ours, float), np.asarray(oracle, float)
        diff = float(np.abs(ours - oracle).max(initial=0.0)) if ours.shape == oracle.shape else np.inf
        if not np.isfinite(diff):
            diff = np.inf
        rel = diff / max(float(np.abs(oracle).max(initial=0.0)), 1.0)
        self.abs[key] = max(self.abs.get(key, 0.0), diff)
        self.rel[key] = max(self.rel.get(key, 0.0), rel)

    def fail(self, key, message: str) -> None:
        self.abs[key], self.rel[key] = np.inf, np.inf
        self.errors.setdefault(key, message)


#: loop models: independent coordinates are drawn within ±LOOP_STEP (rad, or m for prismatic) of the model's
#: initial state; the implicit solve reaches them by continuation from the previous sample (≤ 0.1 rad substeps,
#: constraints.implicit), so every sample stays on the assembly branch of the initial state. A draw whose
#: loop Jacobian is nearly singular (a toggle, cond > LOOP_CONDITION) is redrawn with half the step.
LOOP_STEP = 0.5
LOOP_CONDITION = 1e6


def has_loops(model) -> bool:
    """True if loop closures make some joints implicit functions of the independent coordinates."""
    from biobullet.constraints.implicit import LoopResolver
    return any(isinstance(r, LoopResolver) for r in model.coordinate_map.resolvers)


def random_state(model, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, v, Q): independent joints uniform within finite limits (else ±π), unit quaternion, base position
    ±1 m, v and Q standard normal. Loop models (`has_loops`): independent joints within ±LOOP_STEP of the
    model's initial state instead (loop-consistent, on the initial assembly branch; see LOOP_STEP)."""
    q = np.zeros(model.nq)
    b = 0
    if model.floating_base:
        q[:3] = rng.uniform(-1.0, 1.0, 3)
        quat = rng.normal(size=4)
        q[3:7] = quat / np.linalg.norm(quat)
        b = 7
    if has_loops(model):
        q[b:] = _loop_sample(model, rng, b)
        return q, rng.normal(size=model.nv), rng.normal(size=model.nv)
    for k, name in enumerate(model.independent_joint_names):
        joint = model.description.joint(name)
        lower, upper = joint.lower, joint.upper
        if joint.type == "continuous" or lower is None or upper is None or not lower < upper:
            lower, upper = -np.pi, np.pi
        q[b + k] = rng.uniform(lower, upper)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def _loop_sample(model, rng: np.random.Generator, b: int) -> np.ndarray:
    """Independent joint coordinates near the initial state where the loops close and are well conditioned."""
    from biobullet.constraints.implicit import loop_condition
    q0, _ = model.initial_state()
    initial = q0[b:]
    joints = [model.description.joint(name) for name in model.independent_joint_names]
    step = LOOP_STEP
    for _ in range(12):
        sample = initial + rng.uniform(-step, step, initial.size)
        for k, joint in enumerate(joints):
            if joint.type != "continuous" and joint.lower is not None and joint.upper is not None \
                    and joint.lower < joint.upper:
                sample[k] = min(max(sample[k], joint.lower), joint.upper)
        full = q0.copy()
        full[b:] = sample
        if loop_condition(model, full) < LOOP_CONDITION:
            return sample
        step *= 0.5
        loop_condition(model, q0)  # back to the initial branch before the next draw
    return initial.copy()


def _formulations(model=None) -> list[str]:
    """Formulations to check; with `model`, only those that apply to it (a formulation may declare
    `supports(model)`: link_segment has no prismatic joints, joint functions or loops)."""
    from biobullet.dynamics.formulation import formulation_names, get_formulation
    names = [name for name in formulation_names() if name not in EXCLUDED_FORMULATIONS]
    if model is None:
        return names
    return [name for name in names if getattr(get_formulation(name), "supports", lambda m: True)(model)]


def validate_model(model, *, samples: int = 10, seed: int = 0, tol: float = 1e-9,
                   oracles: Sequence[str] = ORACLE_NAMES,
                   progress: Callable[[int, int], None] | None = None,
                   reference_file: str | None = None) -> ValidationReport:
    """Compare every registered formulation (except reduced_pinocchio) with each oracle on `samples` random
    states: mass matrix, bias forces, forward dynamics; plus our frame Jacobians of every link (Pinocchio)
    and J·ẋ against PyBullet's link velocities. `progress(done, total)` is called after every sample.
    `reference_file`: the URDF the oracles read (default: the model's own file)."""
    from biobullet.algorithms.kinematics import body_placements, frame_jacobian
    if samples < 1:
        raise ModelError(f"samples must be ≥ 1, got {samples}", attribute="samples")
    rng = np.random.default_rng(seed)
    unknown = [name for name in oracles if name not in ORACLE_NAMES]
    if unknown or not oracles:
        raise ModelError(f"unknown oracles {unknown}" if unknown else "no oracle selected", attribute="oracles",
                         expected="some of " + ", ".join(ORACLE_NAMES))
    built = []
    try:
        for name in oracles:
            built.append(make_oracle(name, model, reference_file))
    except BaseException:
        for oracle in built:
            getattr(oracle, "close", lambda: None)()
        raise
    formulations = _formulations(model)
    acc = _Accumulator()
    t = 0.0
    for oracle in built:
        if hasattr(oracle, "inertial_parameters"):
            acc.add(("inertial_parameters", "model", oracle.name), *oracle.inertial_parameters())
    try:
        for sample in range(samples):
            q, v, tau = random_state(model, rng)
            if model.coordinate_map.uses_time:
                t = float(rng.uniform(0.0, 1.0))
            results = {}
            for name in formulations:
                try:
                    results[name] = (model.mass_matrix(q, t, formulation=name),
                                     model.bias_forces(q, v, t, formulation=name),
                                     model.forward_dynamics(q, v, tau, t, formulation=name))
                except (BiobulletError, NotImplementedError, ArithmeticError, ValueError) as exc:
                    results[name] = exc
            x, xd, _, _ = model.joint_state(q, v, t)
            placements = body_placements(model, x)
            jacobians = {link: frame_jacobian(model, x, link, placements=placements) for link in model.link_names}
            for oracle in built:
                reference = (oracle.mass_matrix(q, t), oracle.bias_forces(q, v, t),
                             oracle.forward_dynamics(q, v, tau, t))
                for name, ours in results.items():
                    for qty, o_val, r_val in zip(("mass_matrix", "bias_forces", "forward_dynamics"),
                                                 ours if not isinstance(ours, Exception) else (None,) * 3,
                                                 reference):
                        key = (qty, name, oracle.name)
                        if isinstance(ours, Exception):
                            acc.fail(key, f"{type(ours).__name__}: {ours}")
                        else:
                            acc.add(key, o_val, r_val)
                if oracle.has_jacobians:
                    for link, jac in jacobians.items():
                        acc.add(("jacobian", "kinematics", oracle.name), jac, oracle.frame_jacobian(x, link))
                if hasattr(oracle, "link_velocities"):
                    for link, (linear, angular) in oracle.link_velocities(x, xd).items():
                        com = oracle.map.link_com(link)
                        jac = frame_jacobian(model, x, link, point=com, placements=placements)
                        acc.add(("link_velocity", "kinematics", oracle.name), jac @ xd,
                                np.concatenate([linear, angular]))
            if progress is not None:
                progress(sample + 1, samples)
    finally:
        for oracle in built:
            getattr(oracle, "close", lambda: None)()
    tolerances = {o.name: max(tol, PYBULLET_FACTOR * getattr(o, "inertia_error", 0.0)) for o in built}
    report = ValidationReport(model=model.name, samples=samples)
    for key in acc.abs:
        qty, name, oracle_name = key
        rel = acc.rel[key]
        limit = tolerances[oracle_name]
        report.checks.append(Check(qty, name, oracle_name, acc.abs[key], rel, bool(rel <= limit), limit,
                                   acc.errors.get(key)))
    return report


def validate_random_trees(n_models: int, seed: int = 0, *, n_links: int = 6, samples: int = 5,
                          tol: float = 1e-9, oracles: Sequence[str] = ORACLE_NAMES,
                          progress: Callable[[int, int], None] | None = None) -> list[ValidationReport]:
    """Validate `n_models` random URDF trees (seeds seed, seed+1, …): alternating fixed/floating bases,
    continuous joints, and 0–2 joint-function couplings."""
    from biobullet.model.model import load_model
    from biobullet.validate.random_models import random_urdf
    reports = []
    with tempfile.TemporaryDirectory(prefix="biobullet_random_") as folder:
        for k in range(n_models):
            s = seed + k
            path = os.path.join(folder, f"random_{s}.urdf")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(random_urdf(s, n_links, floating_base=bool(k % 2), couplings=k % 3))
            reports.append(validate_model(load_model(path), samples=samples, seed=s, tol=tol, oracles=oracles))
            if progress is not None:
                progress(k + 1, n_models)
    return reports
