"""The robot corpus: every URDF of the `example-robot-data` package and every robot (a URDF with a moving joint) of
PyBullet's `pybullet_data`, loaded, validated against Pinocchio and PyBullet, and (for some) simulated on the
reference engine and on the PyBullet bridge.

Used by `tools/robot_corpus.py` (the whole corpus → docs/robots.md) and tests/validation/test_robot_corpus.py
(a sample of it in the default test run). Neither package is a runtime dependency: `corpus_files()` lists what is
installed.
"""
from __future__ import annotations

import glob
import os
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from biobullet.core.native import import_pybullet
from biobullet.core.errors import BiobulletError

MOVING_JOINT = re.compile(rb'<joint[^>]*type\s*=\s*"(revolute|continuous|prismatic|spherical|planar|floating)"')


def example_robot_data_root() -> str | None:
    """The `robots` folder example-robot-data installs (a cmeel package: under site-packages/cmeel.prefix)."""
    import site
    import sys
    roots = list(sys.path) + site.getsitepackages()
    for root in roots:
        path = os.path.join(root, "cmeel.prefix", "share", "example-robot-data", "robots")
        if os.path.isdir(path):
            return path
    return None


def pybullet_data_root() -> str | None:
    try:
        import pybullet_data
    except ImportError:
        return None
    return pybullet_data.getDataPath()


def corpus_files() -> list[tuple[str, str]]:
    """(name, path) of every corpus URDF installed: example-robot-data's, then pybullet_data's robots (files with
    a moving joint, outside its random_urdfs/ objects), sorted by name."""
    out: list[tuple[str, str]] = []
    erd = example_robot_data_root()
    if erd:
        for path in sorted(glob.glob(os.path.join(erd, "**", "*.urdf"), recursive=True)):
            out.append(("erd/" + os.path.relpath(path, erd), path))
    pbd = pybullet_data_root()
    if pbd:
        for path in sorted(glob.glob(os.path.join(pbd, "**", "*.urdf"), recursive=True)):
            relative = os.path.relpath(path, pbd)
            if relative.startswith("random_urdfs"):
                continue
            with open(path, "rb") as handle:
                if not MOVING_JOINT.search(handle.read()):
                    continue
            out.append(("pybullet_data/" + relative, path))
    return out


@dataclass
class RobotResult:
    """One corpus file: what happened and the worst relative errors (see validate.report)."""

    name: str
    path: str
    floating_base: bool = False
    dof: int | None = None
    outcome: str = ""         # "ok" | "FAILED" | "rejected" | "internal error"
    detail: str = ""          # the error message, or notes of the validation
    worst: dict[str, float] = field(default_factory=dict)   # e.g. {"M pinocchio": 1e-16}
    warnings: list[str] = field(default_factory=list)
    run: dict[str, float] | None = None   # engine vs bridge comparison, see compare_engine_bridge
    oracles_load: dict[str, bool] | None = None   # for a rejected file: do PyBullet and Pinocchio load it?


def oracles_load(path: str, floating_base: bool | None = None) -> dict[str, bool]:
    """Whether PyBullet (loadURDF) and Pinocchio (buildModelFromUrdf) accept the file — the corpus promise is
    that biobullet loads every file both accept."""
    out = {}
    try:
        p = import_pybullet()   # banner kept off the terminal (core.native)
        client = p.connect(p.DIRECT)
        try:
            p.loadURDF(path, useFixedBase=not floating_base, flags=p.URDF_USE_INERTIA_FROM_FILE,
                       physicsClientId=client)
            out["pybullet"] = True
        except p.error:
            out["pybullet"] = False
        finally:
            p.disconnect(client)
    except ImportError:
        pass
    try:
        import pinocchio as pin
        try:
            pin.buildModelFromUrdf(path)
            out["pinocchio"] = True
        except (RuntimeError, ValueError):
            out["pinocchio"] = False
    except ImportError:
        pass
    return out


def check_robot(name: str, path: str, *, floating_base: bool | None = None, samples: int = 2, seed: int = 0,
                inertia: str = "warn", formulations=("reduced",)) -> RobotResult:
    """Load and validate one file; never raises for a file (an internal error is reported as the outcome)."""
    from biobullet.loader import load_model
    from biobullet.validate.report import validate_model
    result = RobotResult(name, path, bool(floating_base))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = load_model(path, floating_base=floating_base, inertia=inertia)
            result.dof = model.nv
            report = validate_model(model, samples=samples, seed=seed, formulations=formulations)
        except BiobulletError as exc:
            result.outcome, result.detail = "rejected", str(exc).replace(path, os.path.basename(path))
            result.oracles_load = oracles_load(path, floating_base)
            return result
        except Exception as exc:  # noqa: BLE001 - the corpus reports internal errors instead of stopping
            result.outcome, result.detail = "internal error", f"{type(exc).__name__}: {exc}"
            return result
    result.warnings = [str(w.message).replace(path, os.path.basename(path)) for w in caught
                       if issubclass(w.category, UserWarning)]
    result.outcome = "ok" if report.ok else "FAILED"
    result.detail = " | ".join(report.notes)
    labels = {"mass_matrix": "M", "bias_forces": "h", "forward_dynamics": "q̈", "spatial_inertia": "I",
              "jacobian": "J", "link_velocity": "Jv"}
    for check in report.checks:
        key = f"{labels.get(check.quantity, check.quantity)} {check.oracle}"
        result.worst[key] = max(result.worst.get(key, 0.0), check.max_rel_error)
        if not check.ok and check.error:
            result.detail = (result.detail + " | " if result.detail else "") + f"{key}: {check.error}"
    return result


def compare_engine_bridge(path: str, *, floating_base: bool | None = None, t_end: float = 0.5, dt: float = 1e-3,
                          seed: int = 0, inertia: str = "warn", joint_limits: bool = False) -> dict[str, float]:
    """Run the same initial state for t_end (s) on the reference engine (rtol 1e-9) and on the bridge with steps
    dt and dt/2. Returns the largest |q_bridge − q_engine| over the run for both steps and their ratio: the
    bridge's semi-implicit Euler step is first order, so for the same robot the gap halves (ratio ≈ 0.5) and
    vanishes with dt; for different robots it does not shrink. "unmatched": links whose inertia PyBullet cannot
    take (the bridge warns; see bridge.inertia). Initial state: the model's `<initial>`, 1-DOF
    joints displaced by 0.3 N(0, 1) rad (or m) and clipped to their limits, zero velocity. `joint_limits`: off by
    default — the comparison measures the free dynamics' step error, and clipped states start on the limits, where
    the stiff limit stops (on both engines) keep a 1 ms step out of its first-order regime."""
    from biobullet.bridge.simulation import simulate_bridge
    from biobullet.integrate.engine import simulate
    from biobullet.loader import load_model
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_model(path, floating_base=floating_base, inertia=inertia, joint_limits=joint_limits)
        q0, v0 = model.initial_state()
        rng = np.random.default_rng(seed)
        b = model.base_nq
        for k, joint_name in enumerate(model.independent_joint_names):
            joint = model.description.joint(joint_name)
            value = q0[b + k] + 0.3 * rng.normal()
            if joint.lower is not None and joint.upper is not None and joint.lower < joint.upper:
                value = min(max(value, joint.lower), joint.upper)
            q0[b + k] = value
        gaps = []
        for step in (dt, dt / 2):
            bridge = simulate_bridge(model, t_end, dt=step, initial=(q0, v0), progress=False)
            times = np.minimum(bridge.t, t_end)
            keep = np.concatenate([[True], np.diff(times) > 0])
            engine = simulate(model, t_end, initial=(q0, v0), rtol=1e-9, atol=1e-9, progress=False,
                              t_eval=times[keep])
            gaps.append(float(np.abs(bridge.q[keep] - engine.q).max()))
    unmatched = sorted({str(w.message).split("inertia of links ")[1].split(" (")[0] for w in caught
                        if "cannot take the model's inertia" in str(w.message)})
    return {"gap_dt": gaps[0], "gap_half_dt": gaps[1], "ratio": gaps[1] / gaps[0] if gaps[0] > 0 else 0.0,
            "dt": dt, "unmatched": "; ".join(unmatched)}
