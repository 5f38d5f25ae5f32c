"""Regenerate docs/robots.md: every URDF of example-robot-data and every robot of pybullet_data, loaded with the
default inertia policy, validated against Pinocchio and PyBullet (fixed base as in the file, and with
--floating-base), and for a few fixed-base robots simulated 0.5 s on the reference engine and on the bridge.

    PYTHONPATH=plugin python tools/robot_corpus.py [--samples N] [--out docs/robots.md] [--runs NAME ...]

Needs `pip install example-robot-data==6.0.0` (the `test` extra) and pybullet (pybullet_data). Takes a few
minutes; progress on stderr.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "plugin"))

from biobullet.core.atomic import write_text  # noqa: E402
from biobullet.validate.corpus import check_robot, compare_engine_bridge, corpus_files  # noqa: E402

#: robots run on both engines (fixed base): massless links with inertia (panda), plain arms, and every corpus file
#: with links lacking <inertial> (PyBullet's 1 kg before the fix)
RUNS = ("pybullet_data/franka_panda/panda.urdf", "pybullet_data/kuka_iiwa/model.urdf",
        "erd/ur_description/urdf/ur5_gripper.urdf", "erd/xarm_description/urdf/xarm7.urdf",
        "erd/alex_description/urdf/alex_psyonic_hands.urdf", "erd/centauro_description/urdf/centauro.urdf",
        "erd/g1_description/urdf/g1_29dof_rev_1_0.urdf", "erd/g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf",
        "erd/human_description/robots/human.urdf", "erd/pr2_description/urdf/pr2.urdf",
        "erd/romeo_description/urdf/romeo_laas_small.urdf", "erd/romeo_description/urdf/romeo_small.urdf",
        "erd/tiago_pro_description/robots/tiago_pro.urdf", "pybullet_data/quadruped/spirit40newer.urdf")
#: causes established by hand for runs whose gap does not shrink with dt
KNOWN = {"erd/human_description/robots/human.urdf": (
             None, "massless 'virtual' links between revolute joints (ball joints built from three hinges): "
                   "PyBullet's step with them at zero mass needs far smaller steps (gap 9.4 rad at 0.25 ms, 3.6 at "
                   "0.125 ms); before the fix PyBullet gave each 1 kg and 1 kg·m²"),
         "erd/g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf": (
             "yes, below 0.5 ms", "light finger links make the run stiff: the first-order regime starts below "
                                  "0.5 ms (gap 0.32 rad at 0.25 ms, 0.19 at 0.125 ms: ratio 0.59)")}


INTRODUCTION = """## Inertia: the same bodies as Pinocchio and PyBullet

* A link's `<inertial>` is part of its body even when its mass is 0: a massless link keeps its rotational
  inertia (Pinocchio and PyBullet do the same; before, biobullet dropped it — pybullet_data's panda was 12 % off
  in M, kuka_iiwa with a floating base had a singular M).
* A link without `<inertial>` has zero mass and inertia (URDF specification, Pinocchio). PyBullet gives such a
  link 1 kg and a unit inertia: the bridge sets them to zero with `changeDynamics` (`bridge/inertia.py`) and warns
  once naming the links, so that engine and bridge simulate the same robot (xarm7: 3.9 rad apart after 0.5 s
  before, now the bridge's first-order step error, see below).
* Point masses (zero tensor) and other positive semi-definite tensors that satisfy the triangle inequality
  (a thin rod: 0, I, I) are physical bodies and load.
* Physically impossible tensors — indefinite, or principal moments with I1 + I2 < I3 — follow the policy
  `load_model(path, inertia=...)` / `--inertia` on `info`, `validate`, `simulate`:
  * `warn` (default): keep the file's tensor, as Pinocchio does, and warn once per file naming each link and its
    relative distance to the nearest physical tensor. A PyBullet user expects the file to load (PyBullet loads it
    with a console warning, and so does Pinocchio): one bad sensor link must not block Talos, TIAGo, ANYmal or
    Go1. Keeping the numbers keeps biobullet equal to Pinocchio on the same file; changing them is the user's call.
  * `repair`: replace each by the nearest physical tensor in the Frobenius norm (same principal axes, principal
    moments projected onto the cone I_i ≤ I_j + I_k by non-negative least squares) and warn with the relative
    change per link.
  * `strict`: reject the file with a ModelError naming the link and attribute.
  PyBullet itself replaces a triangle-violating tensor by zero and an indefinite one by its diagonal; the bridge
  restores the model's tensor with `changeDynamics` where PyBullet's inertial frame allows it (it does for every
  diagonal tensor and every repaired one) and names the links it cannot restore.
* `validate` compares the full spatial inertia of every body (mass, COM, rotational inertia about the COM)
  against Pinocchio's `model.inertias` (world frame, neutral configuration) and every link's against PyBullet's
  `getDynamicsInfo`.

## Joint types

| URDF type | biobullet kind | nq | configuration | nv | velocity | bridge |
|---|---|---|---|---|---|---|
| revolute, continuous | revolute | 1 | angle | 1 | rate | yes |
| prismatic | prismatic | 1 | displacement | 1 | rate | yes |
| fixed | (welded) | 0 | — | 0 | — | yes |
| spherical (PyBullet's extension) | spherical | 4 | quaternion x y z w | 3 | angular velocity, child frame | yes (a `<limit>` on it: clear error; `docs/bridge.md`) |
| planar | planar | 4 | x, y, cos φ, sin φ (plane normal to `<axis>`) | 3 | vx, vy (child frame), φ̇ | no: clear error |
| floating | free | 7 | position, quaternion x y z w | 6 | linear, angular velocity, child frame | no: clear error |

These are Pinocchio's conventions (JointModelSpherical, JointModelPlanar, JointModelFreeFlyer). Multi-DOF joints sit
with the floating base in the leading block of q (`model.base_nq`, `base_nv`; names `JOINT_qx`, …, `JOINT_wx`, …)
and pass the coordinate map unchanged: joint functions, `<mimic>` and loops act on 1-DOF joints. Every formulation
handles them except `matrix_calculus` (a ModelError says so); the reference engine integrates their quaternions
on the sphere (`model.integrate_configuration` = `pin.integrate`). Validation builds Pinocchio's joint models
explicitly (its URDF parser knows no `spherical` joint and ignores a planar joint's axis). The PyBullet map
(`conventions.PyBulletMap`) handles 1-DOF joints, spherical joints and a floating base: the bridge runs spherical
joints through `resetJointStateMultiDof` / `getJointStatesMultiDof` / `setJointMotorControlMultiDofArray`, with
PyBullet's quaternion, velocity and torque converted from the child link's inertial frame, its default spherical
motor switched off, and M, h from biobullet's recursions (`docs/bridge.md`, "Spherical joints"). A spherical
joint with a `<limit>` is refused on the bridge (PyBullet's cone constraint cannot be switched off; the engine has
none). PyBullet's `calculateMassMatrix` / `calculateInverseDynamics` do not take spherical joints, so validation
compares PyBullet on its own forward dynamics there (the velocity change of one step; fixed base without joint
functions), link velocities and inertias, not on M and h (Pinocchio checks those); URDF `planar` and `floating`
joints are engine and Pinocchio only (PyBullet's multibody has no such URDF joints).

## Leniency

As PyBullet and Pinocchio: whitespace before `<?xml`, `<limit lower > upper>` (PyBullet: no limit), a `<mimic>`
naming an unknown joint (ignored with a warning). A xacro template (xacro elements) gets "this is a xacro file …
expand it first with `xacro FILE > FILE.urdf`"."""


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.0e}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=3, help="random states per robot and base (default 3)")
    parser.add_argument("--out", default=os.path.join(REPO, "docs", "robots.md"))
    parser.add_argument("--runs", nargs="*", default=list(RUNS), help="corpus names simulated on both engines")
    args = parser.parse_args(argv)
    files = corpus_files()
    if not files:
        print("no corpus installed (pip install example-robot-data==6.0.0 pybullet)", file=sys.stderr)
        return 1
    rows = []
    start = time.time()
    for number, (name, path) in enumerate(files, 1):
        for floating in (None, True):
            result = check_robot(name, path, floating_base=floating, samples=args.samples)
            rows.append(result)
        print(f"[{number}/{len(files)}] {name}: {rows[-2].outcome} / floating {rows[-1].outcome} "
              f"({time.time() - start:.0f} s)", file=sys.stderr, flush=True)
    runs = {}
    for name in args.runs:
        path = dict(files).get(name)
        if path is not None:
            try:
                runs[name] = compare_engine_bridge(path)
            except Exception as exc:  # noqa: BLE001 - a run that cannot be made is reported in the table
                runs[name] = {"error": f"{type(exc).__name__}: {exc}".replace(path, os.path.basename(path))}
            print(f"run {name}: {runs[name]}", file=sys.stderr, flush=True)
    write_text(args.out, render(rows, runs, args.samples))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def render(rows, runs, samples: int) -> str:
    count = {}
    for row in rows:
        count[row.outcome] = count.get(row.outcome, 0) + 1
    files = len(rows) // 2
    lines = [
        "# Real robots: the corpus", "",
        "Generated by `tools/robot_corpus.py` (do not edit by hand). Every URDF of the `example-robot-data` "
        "package (6.0.0) and every robot (a URDF with a moving joint) of PyBullet's `pybullet_data`, loaded "
        "with the default inertia policy (`warn`) and validated (`biobullet validate`, formulation `reduced`, "
        f"{samples} random states) against Pinocchio and PyBullet, once with the file's fixed base and once with "
        "`--floating-base`.", "",
        f"{files} files, {len(rows)} runs: " + ", ".join(f"{n} {k}" for k, n in sorted(count.items())) + ".", "",
        "Columns: worst relative error (max |ours − oracle| / max(max |oracle|, 1)) of the mass matrix M, the bias "
        "forces h, forward dynamics q̈ and the body spatial inertias I (mass, COM, rotational inertia) against "
        "Pinocchio (pin) and PyBullet (pb); — where that oracle was not used (see the notes). *rejected* is a "
        "clear error message of biobullet; each rejected file is rejected by Pinocchio too (the notes say what "
        "PyBullet and Pinocchio do with it).", "",
        INTRODUCTION, "",
        "## Engine and bridge: the same robot", "",
        "0.5 s from the same state on the reference engine (rtol 1e-9) and on the bridge (PyBullet, steps dt and "
        "dt/2): the largest joint-coordinate gap over the run. The bridge's step is first order, so on the same "
        "robot the gap halves with dt (ratio 0.5 ± 0.15). Where it is not, the note says why.", "",
        "| robot | gap at dt = 1 ms | gap at 0.5 ms | ratio | same robot | note |", "|---|---|---|---|---|---|"]
    for name, run in runs.items():
        if "error" in run:
            lines.append(f"| {name} | — | — | — | — | {run['error']} |")
            continue
        verdict, note = KNOWN.get(name, (None, ""))
        verdict = verdict or ("yes" if 0.35 <= run["ratio"] <= 0.65 else "no")
        if run.get("unmatched"):
            note = (f"PyBullet replaced the impossible tensors of {run['unmatched']} and cannot take the model's "
                    f"(its inertial frame does not diagonalise them); the bridge warns")
        lines.append(f"| {name} | {run['gap_dt']:.2e} | {run['gap_half_dt']:.2e} | {run['ratio']:.2f} | "
                     f"{verdict} | {note} |")
    lines += ["", "## Validation", "",
              "| robot | base | DOF | outcome | M pin | M pb | h pin | h pb | q̈ pin | q̈ pb | I pin | I pb |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        w = row.worst
        lines.append(f"| {row.name} | {'floating' if row.floating_base else 'file'} | "
                     f"{'' if row.dof is None else row.dof} | {row.outcome} | "
                     + " | ".join(_fmt(w.get(f"{q} {o}")) for q in ("M", "h", "q̈", "I")
                                  for o in ("pinocchio", "pybullet")) + " |")
    lines += ["", "## Notes", "", "What an oracle departs from the file on (and how it was corrected), what was not "
              "compared and why, warnings of the load, and the messages of rejected files.", ""]
    for row in rows:
        text = [row.detail] if row.detail else []
        if row.oracles_load is not None:
            text.append("PyBullet " + ("loads" if row.oracles_load.get("pybullet") else "rejects") + " it, Pinocchio "
                        + ("loads" if row.oracles_load.get("pinocchio") else "rejects") + " it")
        text += row.warnings
        if text:
            base = "floating" if row.floating_base else "file"
            lines.append(f"- **{row.name}** ({base}): " + " · ".join(t.replace("|", "/") for t in text))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
