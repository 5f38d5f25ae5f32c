"""`validate_model`: every registered formulation against every oracle, on random states.

Relative error of one quantity = max|ours − oracle| over the samples / its scale: the oracle's largest entry over
the samples, at least the quantity's physical scale (`_Accumulator`, `physical_scales`) — M: none (its diagonal is
its scale: a 1 mm, 1 g robot is judged relatively); h: m·|g|·L of the bodies (bias forces that are round-off at
every sample, r2d2's, are not divided by themselves); Jacobians and link velocities: 1 (absolute in SI units below
it). Two quantities are judged per body or per direction, so a 1e-6 kg sensor on a 10 kg arm is judged on its own
size: each body's mass, COM and inertia against the body's own (`oracles.own_inertia_scales`), and q̈ by the
generalized force its error stands for, M (q̈ − q̈_ref), against h's scale (the oracle's largest |M q̈_ref| = |Q − h|,
at least m·|g|·L) — an error in a light direction of M counts as the force it takes there, not amplified by cond(M).
A check passes when max_rel_error ≤ its tolerance: `tol` for Pinocchio; for PyBullet, which stores every tensor
diagonalised to 1e-6 of its trace, M and h allow max(tol, PYBULLET_FACTOR · ε · max(scale, 1) / scale) with ε
(kg·m²) the largest of its inertia errors (measured per model against the file, 0 for diagonal tensors), q̈
max(tol, PYBULLET_FACTOR · ε_link) with ε_link the largest of them against each link's own size, and the inertias
PYBULLET_INERTIA_TOLERANCE of each body's own size. docs/precision.md says why each one.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterator, Sequence

import numpy as np

from biobullet.core.errors import BiobulletError, ModelError, SolverError, clean_message
from biobullet.core.native import native_output
from biobullet.spatial.dense import massless_coordinates, model_reach
from biobullet.validate.oracles import ORACLE_NAMES, make_oracle, native_errors

EXCLUDED_FORMULATIONS = ("reduced_pinocchio",)  # it IS Pinocchio: never check Pinocchio against itself
# Inertia errors enter M linearly (times squared lever arms ≲ 1 m², summed over bodies), h times |v|², and the
# force M (q̈ − q̈_ref) as each link's error times its own acceleration; the ratio max_rel_error / ε measured on 60
# random 8- and 12-link trees stays below 15, so 100 leaves a ~7× margin.
PYBULLET_FACTOR = 1e2
# PyBullet stores each link's tensor diagonalised by Jacobi rotations (btMatrix3x3::diagonalize, threshold 1e-6, 30
# steps) that stop once the off-diagonal entries are below 1e-6 of the trace: its tensor reproduces the file to that,
# relative to the link's own size (`oracles.own_inertia_scales`; measured on the corpus: up to 5.5e-7, TIAGo's wheels
# whose principal moments differ by 2e-5 of themselves); 1e-5 leaves a 10× margin over the threshold.
PYBULLET_INERTIA_TOLERANCE = 1e-5


@dataclass(frozen=True)
class Check:
    quantity: str  # mass_matrix | bias_forces | forward_dynamics | jacobian | link_velocity | spatial_inertia
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
    # what was not compared and why, and where an oracle departs from the file (its own error, worked around)
    notes: list[str] = field(default_factory=list)
    # a model without moving joints has no dynamics to compare: it passes on its inertia checks alone
    nothing_to_compare: bool = False

    @property
    def ok(self) -> bool:
        return (bool(self.checks) or self.nothing_to_compare) and all(c.ok for c in self.checks)

    @property
    def nothing_compared(self) -> bool:
        """No check could be made although the model has dynamics (every oracle refused it: see `notes`)."""
        return not self.checks and not self.nothing_to_compare

    def to_dict(self) -> dict:
        checks = []
        for c in self.checks:
            d = asdict(c)
            for key in ("max_abs_error", "max_rel_error"):
                d[key] = d[key] if np.isfinite(d[key]) else None
            if d["error"] is None:
                del d["error"]
            checks.append(d)
        return {"model": self.model, "ok": self.ok, "samples": self.samples, "checks": checks,
                "notes": list(self.notes)}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_table(self) -> str:
        # name columns as wide as their longest entry (reduced_recursive, spatial_inertia), so every row aligns
        wq, wf, wo = (max([len(title)] + [len(getattr(c, key)) for c in self.checks])
                      for key, title in (("quantity", "quantity"), ("formulation", "formulation"), ("oracle", "oracle")))
        header = f"{'quantity':<{wq}} {'formulation':<{wf}} {'oracle':<{wo}} {'max abs':>10} {'max rel':>10} {'tol':>8}  ok"
        verdict = "OK" if self.ok else "NOT COMPARED" if self.nothing_compared else "FAILED"
        lines = [f"model {self.model}: {verdict} ({self.samples} samples)", header,
                 "-" * len(header)]
        for c in self.checks:
            lines.append(f"{c.quantity:<{wq}} {c.formulation:<{wf}} {c.oracle:<{wo}} {c.max_abs_error:>10.2e} "
                         f"{c.max_rel_error:>10.2e} {c.tolerance:>8.0e}  {'yes' if c.ok else 'NO'}"
                         + (f"  ({c.error})" if c.error else ""))
        lines += [f"note: {note}" for note in (REL_TEXT, *self.notes)]
        return "\n".join(lines)


#: the scale of a quantity without a physical one of its own (`physical_scales`): SI units, absolute below it
UNIT_SCALE = 1.0
#: what a report's table says the "max rel" column is
REL_TEXT = ("max rel = |ours − oracle| / the oracle's largest entry over the samples, at least m·|g|·L of the bodies "
            "for h; for q̈ |M (q̈ − q̈_ref)| / h's scale; for inertias each body's error / its own size (mass, "
            "COM, inertia); 1 for Jacobians and velocities")


def physical_scales(model) -> dict[str, float]:
    """The least scale of each compared quantity: M none (its own entries), h the gravity moment m·|g|·L of the
    bodies (m the total mass, L the model's reach: Σ |joint origins| + Σ |centres of mass|, as the massless floor
    takes it, `spatial.dense.model_reach`), q̈ that over the largest M entry a body can give (m L² +
    Σ trace I_c: the scale of q̈ itself, whose "max abs" the report gives; it is judged by M q̈ against h's scale),
    the others UNIT_SCALE. 0 where the model has no mass or no gravity (then the oracle's own entries)."""
    bodies = model.bodies
    reach = model_reach(bodies)
    mass = sum(float(b.mass) for b in bodies)
    moment = float(np.linalg.norm(model.gravity)) * mass * reach
    inertia = mass * reach * reach + sum(float(np.trace(b.inertia_com)) for b in bodies)
    with np.errstate(all="ignore"):
        scales = {"mass_matrix": 0.0, "bias_forces": moment, "forward_dynamics": moment / inertia if inertia else 0.0}
    return {key: value if math.isfinite(value) else 0.0 for key, value in scales.items()}


class _Accumulator:
    """max|ours − oracle| (`abs`) and the oracle's largest entry (`peak`) per key over the samples; `rel` = abs /
    max(peak, the quantity's scale: `scales`, else UNIT_SCALE)."""

    def __init__(self, scales: dict[str, float] | None = None) -> None:
        self.abs: dict[tuple[str, str, str], float] = {}
        self.peak: dict[tuple[str, str, str], float] = {}
        self.scales = scales or {}
        self.errors: dict[tuple[str, str, str], str] = {}
        self.judged: dict[tuple[str, str, str], float] = {}   # keys judged entry by entry (`add_scaled`)

    def add(self, key, ours, oracle) -> None:
        ours, oracle = np.asarray(ours, float), np.asarray(oracle, float)
        diff = float(np.abs(ours - oracle).max(initial=0.0)) if ours.shape == oracle.shape else np.inf
        if not np.isfinite(diff):
            diff = np.inf
        self.abs[key] = max(self.abs.get(key, 0.0), diff)
        self.peak[key] = max(self.peak.get(key, 0.0), float(np.abs(oracle).max(initial=0.0)))

    def add_scaled(self, key, ours, oracle, scale) -> float:
        """`add`, and the relative error judged entry by entry against `scale` (same shape; an entry ≤ 0 judged
        against UNIT_SCALE) instead of the peak: a body's inertia against its own size. Returns that error."""
        self.add(key, ours, oracle)
        ours, oracle, scale = (np.asarray(a, float) for a in (ours, oracle, scale))
        with np.errstate(all="ignore"):
            rel = (float(np.max(np.abs(ours - oracle) / np.where(scale > 0.0, scale, UNIT_SCALE), initial=0.0))
                   if ours.shape == oracle.shape == scale.shape else np.inf)
        rel = rel if np.isfinite(rel) else np.inf
        self.judged[key] = max(self.judged.get(key, 0.0), rel)
        return rel

    def scale(self, key) -> float:
        """What `key`'s error is divided by (> 0)."""
        scale = max(self.peak.get(key, 0.0), self.scales.get(key[0], UNIT_SCALE))
        return scale if scale > 0.0 else UNIT_SCALE

    @property
    def rel(self) -> dict[tuple[str, str, str], float]:
        return {key: self.judged[key] if key in self.judged and np.isfinite(value) else value / self.scale(key)
                for key, value in self.abs.items()}

    def fail(self, key, message: str) -> None:
        self.abs[key] = np.inf
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
    b = model.base_nq
    for body in model.bodies:  # floating base and multi-DOF joints: uniform rotations, positions within ±1 m
        if not body.multi_dof:
            continue
        k = body.q_index
        if body.joint_type == "planar":
            q[k:k + 2] = rng.uniform(-1.0, 1.0, 2)
            angle = rng.uniform(-np.pi, np.pi)
            q[k + 2:k + 4] = np.cos(angle), np.sin(angle)
            continue
        if body.joint_type == "free":
            q[k:k + 3] = rng.uniform(-1.0, 1.0, 3)
            k += 3
        quat = rng.normal(size=4)
        q[k:k + 4] = quat / np.linalg.norm(quat)
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
    """Generalized formulations to check; with `model`, only those that apply to it (a formulation may declare
    `supports(model)`: link_segment has no prismatic joints, joint functions or loops)."""
    from biobullet.dynamics.formulation import GENERALIZED, formulation_names, get_formulation
    names = [name for name in formulation_names(GENERALIZED) if name not in EXCLUDED_FORMULATIONS]
    if model is None:
        return names
    return [name for name in names if getattr(get_formulation(name), "supports", lambda m: True)(model)]


def _check_arguments(samples, seed, tol, oracles, formulations) -> None:
    """One ModelError naming the argument for a sample count or seed that is not an integer in range (NumPy's own
    ValueError for seed=-1), a tolerance that is not a finite number > 0 (tol=-1 or NaN passed every comparison
    or none), and oracles or formulations given as one string (iterated letter by letter)."""
    for name, value, least, most in (("samples", samples, 1, None), ("seed", seed, 0, 2 ** 32 - 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least \
                or (most is not None and value > most):
            raise ModelError(f"got {value!r:.60}", argument=name,
                             expected=f"an integer ≥ {least}" if most is None else f"an integer in {least} … {most}")
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)) \
            or not math.isfinite(tol) or tol <= 0:
        raise ModelError(f"got {tol!r:.60}", argument="tol", expected="a finite number > 0, e.g. 1e-9")
    for name, names in (("oracles", oracles), ("formulations", formulations)):
        if names is not None and (isinstance(names, (str, bytes)) or not isinstance(names, (list, tuple, set))):
            raise ModelError(f"is not a list of names (got {type(names).__name__} {names!r:.60})", argument=name,
                             expected="a list such as ['pinocchio']")


def validate_model(model, *, samples: int = 10, seed: int = 0, tol: float = 1e-9,
                   oracles: Sequence[str] = ORACLE_NAMES,
                   progress: Callable[[int, int], None] | None = None,
                   reference_file: str | None = None,
                   formulations: Sequence[str] | None = None) -> ValidationReport:
    """Compare every registered formulation (except reduced_pinocchio) with each oracle on `samples` random
    states: mass matrix, bias forces, forward dynamics; plus our frame Jacobians of every link (Pinocchio)
    and J·ẋ against PyBullet's link velocities. `progress(done, total)` is called after every sample.
    `reference_file`: the URDF the oracles read (default: the model's own file). `formulations`: those to check
    (default: every registered one but reduced_pinocchio).

    Never dies on a loadable model: an oracle that cannot take the model is left out with its reason in
    `report.notes`, as is anything an oracle departs from the file on (and how the oracle was corrected); a model
    without degrees of freedom compares inertias only; samples where M is singular skip forward dynamics and say
    which joints move no mass."""
    from biobullet.algorithms.kinematics import frame_jacobian
    _check_arguments(samples, seed, tol, oracles, formulations)
    translated = model.description.translated_urdf
    if reference_file is None and translated is not None:
        # a model translated from another format (an OpenSim .osim): the oracles read its URDF text
        with tempfile.TemporaryDirectory(prefix="biobullet-") as folder:
            urdf = os.path.join(folder, "model.urdf")
            with open(urdf, "w", encoding="utf-8") as handle:
                handle.write(translated)
            return validate_model(model, samples=samples, seed=seed, tol=tol, oracles=oracles, progress=progress,
                                  reference_file=urdf, formulations=formulations)
    rng = np.random.default_rng(seed)
    unknown = [name for name in oracles if name not in ORACLE_NAMES]
    if unknown or not oracles:
        raise ModelError(f"unknown oracles {unknown}" if unknown else "no oracle selected", argument="oracles",
                         expected="some of " + ", ".join(ORACLE_NAMES))
    report = ValidationReport(model=model.name, samples=samples)
    built = []
    try:
        for name in oracles:
            # (urdfdom's and PyBullet's C++ messages are caught and said in the note, not spilled on stderr)
            with native_output(f"oracle {name}") as printed:
                try:
                    built.append(make_oracle(name, model, reference_file))
                    refusal = None
                except ModelError as exc:   # the oracle cannot take this model: its own limitation, said as such
                    refusal = exc.detail if hasattr(exc, 'detail') else str(exc)
            if refusal is not None:
                native = native_errors("\n".join(printed))
                said = f" — it said: {'; '.join(native[:3])}" if native else ""
                report.notes.append(clean_message(f"oracle {name} not used: {refusal}{said}"))
    except BaseException:
        for oracle in built:
            getattr(oracle, "close", lambda: None)()
        raise
    for oracle in built:
        report.notes.extend(f"{oracle.name}: {note}" for note in oracle.notes)
    if formulations is None:   # every registered formulation that describes this model (see `_formulations`)
        formulations = _formulations(model)
        report.notes.extend(f"formulation {name} not checked: it does not describe this model"
                            for name in _formulations() if name not in formulations)
    else:
        formulations = list(formulations)
    acc = _Accumulator(physical_scales(model))
    t = 0.0
    # every body's mass, COM and inertia against its own size (`oracles.own_inertia_scales`)
    inertia_tolerance = {"pinocchio": tol, "pybullet": PYBULLET_INERTIA_TOLERANCE}
    for oracle in built:
        ours, theirs, sizes = oracle.ours_inertias(), oracle.body_inertias(), oracle.inertia_scales()
        key = ("spatial_inertia", "model", oracle.name)
        errors = {name: acc.add_scaled(key, value, theirs.get(name, np.full(13, np.nan)), sizes[name])
                  for name, value in ours.items()}
        worst = max(errors, key=errors.get, default=None)
        if worst is not None and errors[worst] > inertia_tolerance.get(oracle.name, tol):
            acc.errors[key] = f"worst: {worst}"
    if model.nv == 0:
        report.notes.append("the model has no degree of freedom (no moving joint): only the inertias of moving "
                            "bodies are compared (a fixed base has none)")
        report.nothing_to_compare = True
        samples = 0
    skipped_dynamics = 0
    singular_variants: set[int] = set()   # oracle subjects whose singular M has been noted
    singular_refusals: set[str] = set()   # formulations that refused a singular M (noted once)
    not_applicable: dict[str, str] = {}
    # q̈ is judged by the generalized force its error stands for, M (q̈ − q̈_ref), against the force scale
    # (`physical_scales`): per direction of M, so the light directions of an ill-conditioned M (cond 1e14 with a
    # 1e-6 kg sensor) are judged on what moves them, and no bound on ‖M⁻¹‖ or cond(M) loosens the heavy ones
    forces = _Accumulator({"forward_dynamics": acc.scales.get("bias_forces", 0.0)})
    try:
        for sample in range(samples):
            q, v, tau = random_state(model, rng)
            if model.coordinate_map.uses_time:
                t = float(rng.uniform(0.0, 1.0))
            still = _joints_moving_no_mass(model, q, t)
            if still is not None:
                skipped_dynamics += 1
                if skipped_dynamics == 1:
                    report.notes.append("forward dynamics not compared where the mass matrix is singular: "
                                        + still)
            by_subject = {}   # an oracle may compare with a variant of the model (see Oracle.subject)
            stills = {}       # … whose M may be singular where the model's is not (PyBullet's zeroed inertias)
            for subject in {id(o.subject): o.subject for o in built}.values():
                by_subject[id(subject)] = results = {}
                stills[id(subject)] = subject_still = (
                    still if subject is model or still is not None else _joints_moving_no_mass(subject, q, t))
                if subject_still is not None and still is None and id(subject) not in singular_variants:
                    singular_variants.add(id(subject))
                    report.notes.append("forward dynamics not compared with the oracles that read the model with "
                                        "their own inertias where that variant's mass matrix is singular: "
                                        + subject_still)
                for name in formulations:
                    try:
                        mass = subject.mass_matrix(q, t, formulation=name)
                        bias = subject.bias_forces(q, v, t, formulation=name)
                        accel = None if subject_still is not None else \
                            subject.forward_dynamics(q, v, tau, t, formulation=name)
                        results[name] = (mass, bias, accel)
                    except ModelError as exc:
                        if exc.argument != "formulation":
                            results[name] = exc
                        elif name not in not_applicable:   # a stated limitation of the formulation, not an error
                            not_applicable[name] = exc.detail
                            report.notes.append(f"formulation {name} not checked: {exc.detail}")
                    except SolverError as exc:
                        if subject_still is None:
                            results[name] = exc
                        elif name not in singular_refusals:   # (link_segment derives M from M⁻¹: none here)
                            singular_refusals.add(name)
                            report.notes.append(f"formulation {name} not compared where the mass matrix is "
                                                f"singular: {clean_message(str(exc))}")
                    except (BiobulletError, NotImplementedError, ArithmeticError, ValueError) as exc:
                        results[name] = exc
            x, xd, _, _ = model.joint_state(q, v, t)
            jacobians = {link: frame_jacobian(model, x, link) for link in model.link_names}
            for oracle in built:
                reference = (oracle.mass_matrix(q, t), oracle.bias_forces(q, v, t),
                             None if stills[id(oracle.subject)] is not None else oracle.forward_dynamics(q, v, tau, t))
                for name, ours in by_subject[id(oracle.subject)].items():
                    for qty, o_val, r_val in zip(("mass_matrix", "bias_forces", "forward_dynamics"),
                                                 ours if not isinstance(ours, Exception) else (None,) * 3,
                                                 reference):
                        key = (qty, name, oracle.name)
                        if isinstance(ours, Exception):
                            acc.fail(key, f"{type(ours).__name__}: {ours}")
                        elif r_val is not None:
                            acc.add(key, o_val, r_val)
                            weight = reference[0] if reference[0] is not None else ours[0]
                            if qty == "forward_dynamics" and weight is not None:   # (M: the oracle's, else ours)
                                forces.add(key, _force(weight, o_val), _force(weight, r_val))
                if oracle.has_jacobians:
                    for link, jac in jacobians.items():
                        acc.add(("jacobian", "kinematics", oracle.name), jac, oracle.frame_jacobian(x, link))
                if hasattr(oracle, "link_velocities"):
                    for link, (linear, angular) in oracle.link_velocities(x, xd).items():
                        com = oracle.map.link_com(link)
                        jac = frame_jacobian(model, x, link, point=com)
                        acc.add(("link_velocity", "kinematics", oracle.name), jac @ xd,
                                np.concatenate([linear, angular]))
            if progress is not None:
                progress(sample + 1, samples)
    finally:
        for oracle in built:
            getattr(oracle, "close", lambda: None)()
    if skipped_dynamics:
        report.notes.append(f"forward dynamics skipped in {skipped_dynamics} of {samples} samples")
    tolerances = {o.name: PYBULLET_FACTOR * getattr(o, "inertia_error", 0.0) for o in built}
    oracle_epsilon = {o.name: getattr(o, "inertia_error_relative", 0.0) for o in built}
    kinematic_tolerance = {o.name: getattr(o, "kinematic_tolerance", 0.0) for o in built}
    relative = acc.rel
    relative.update((key, value) for key, value in forces.rel.items() if np.isfinite(acc.abs.get(key, np.inf)))
    for key in acc.abs:
        qty, name, oracle_name = key
        rel = relative[key]
        # PyBullet's inertia error ε is absolute (kg·m²): below a scale of 1 it stays an absolute bound, as before
        scale = acc.scale(key)
        limit = (inertia_tolerance.get(oracle_name, tol) if qty == "spatial_inertia"
                 else max(tol, tolerances[oracle_name] * max(scale, 1.0) / scale))
        if qty == "link_velocity":
            limit = max(limit, kinematic_tolerance.get(oracle_name, 0.0))
        if qty == "forward_dynamics":
            # the oracle's inertia error δI_l (each link's, against its own size: ε) stands for the force
            # δI_l α_l, ε times the link's own inertial torque: ε of the force scale, no cond(M)
            limit = max(tol, PYBULLET_FACTOR * oracle_epsilon.get(oracle_name, 0.0))
        report.checks.append(Check(qty, name, oracle_name, acc.abs[key], rel, bool(rel <= limit), limit,
                                   acc.errors.get(key)))
    return report


def _force(mass: np.ndarray | None, acceleration) -> np.ndarray:
    """M q̈ (N·m, N): the generalized force an acceleration stands for; NaN where there is no M."""
    acceleration = np.asarray(acceleration, float)
    if mass is None or np.shape(mass) != (acceleration.size, acceleration.size):
        return np.full(acceleration.shape, np.nan)
    return np.asarray(mass, float) @ acceleration


#: relative singularity threshold of the mass matrix: the smallest eigenvalue of M scaled by each direction's own
#: inertia (D^-½ M D^-½, D = diag M: unit diagonal) below it is singular. Per direction, not against M's largest
#: entry: a 1e-6 kg sensor on a 10 kg arm (cond(M) 1.4e13) is regular — its own diagonal entry is its scale, as
#: for the solve's massless floor (`spatial.dense.MASS_FLOOR_RATIO`), which decides first
SINGULAR = 1e-12


def _joints_moving_no_mass(model, q, t: float) -> str | None:
    """None if M(q) is positive definite; else which generalized velocities move no mass (the solve's test:
    `spatial.dense.massless_coordinate`). Singular: a coordinate below its massless floor, or the Jacobi-scaled
    M's smallest eigenvalue not above SINGULAR."""
    mass = model.mass_matrix(q, t, formulation="reduced")
    if mass.size == 0:
        return None
    diagonal = np.diagonal(mass)
    if np.all(diagonal > 0.0):
        root = 1.0 / np.sqrt(diagonal)
        with np.errstate(all="ignore"):
            scaled = np.linalg.eigvalsh(mass * root[:, None] * root[None, :])[0]
        if scaled > SINGULAR and not _massless_names(model, q, t, mass):
            return None
    return _still_message(model, q, t, mass)


def _massless_names(model, q, t: float, mass: np.ndarray) -> list[str]:
    """The coordinates the solve refuses as moving no mass (`spatial.dense.massless_coordinate`)."""
    gradient = None if model.coordinate_map.identity else model.joint_state(q, np.zeros(model.nv), t)[2]
    return [model.velocity_names[k] for k in massless_coordinates(mass, model.compiled.mass_floor_root, gradient)]


def _still_message(model, q, t: float, mass: np.ndarray) -> str:
    still = _massless_names(model, q, t, mass)
    if still:
        return (f"joints moving no mass (every link they move is massless): {', '.join(still[:10])}"
                f"{' …' if len(still) > 10 else ''}; M is singular and q̈ undefined for them")
    return "M is singular (some combination of joints moves no mass)"


def validate_random_trees(n_models: int, seed: int = 0, *, n_links: int = 6, samples: int = 5,
                          tol: float = 1e-9, oracles: Sequence[str] = ORACLE_NAMES,
                          progress: Callable[[int, int], None] | None = None) -> list[ValidationReport]:
    """Validate `n_models` random URDF trees (seeds seed, seed+1, …): alternating fixed/floating bases,
    continuous joints, and 0–2 joint-function couplings."""
    return list(random_tree_reports(n_models, seed, n_links=n_links, samples=samples, tol=tol, oracles=oracles,
                                    progress=progress))


def random_tree_reports(n_models: int, seed: int = 0, *, n_links: int = 6, samples: int = 5,
                        tol: float = 1e-9, oracles: Sequence[str] = ORACLE_NAMES,
                        progress: Callable[[int, int], None] | None = None) -> Iterator[ValidationReport]:
    """The reports of `validate_random_trees`, one at a time (an interrupted run keeps the finished ones)."""
    from biobullet.loader import load_model
    from biobullet.validate.random_models import random_urdf
    with tempfile.TemporaryDirectory(prefix="biobullet_random_") as folder:
        for k in range(n_models):
            s = seed + k
            path = os.path.join(folder, f"random_{s}.urdf")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(random_urdf(s, n_links, floating_base=bool(k % 2), couplings=k % 3))
            yield validate_model(load_model(path), samples=samples, seed=s, tol=tol, oracles=oracles)
            if progress is not None:
                progress(k + 1, n_models)
