"""Issue 23's speed promises on the class of robots, not only the bundled ones: corpus robots (example-robot-data,
pybullet_data: `biobullet.validate.corpus`; a robot whose package is not installed is skipped) of every kind —
fixed arms, arms and humanoids with `<mimic>` joints (their coordinate map is not the identity: Gᵀ M G), floating
quadrupeds and humanoids, continuous wheels, spherical joints.

(a) The public calls `model.forward_dynamics`, `mass_matrix`, `bias_forces` against Pinocchio's `aba` and
    `crba` + `rnea` (`biobullet.bench.public_api_speed`: calls in turns, thread CPU time), each robot in a process of
    its own (this file run as a script), best of 7 batches of 2,000 calls; ≤ 3× asserted on every robot. Pinocchio
    is given the whole tree: for a mimic robot it computes less than the projected call (no Gᵀ M G), so the bound is
    the harder one there (Pinocchio 4.1's `mimic=True` refuses Talos' grippers).
(b) `Bridge.step()` against the minimal hand-written loop of the same job (`bench.minimal_kind`; test_bridge_model_kinds
    describes the loops) on the bridge's own connection, every robot in this one run; ≤ 1.25× asserted.

Prints tables (docs/speed.md "The robot corpus", README) and writes out/benchmarks/corpus_speed.json.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

#: label | package | path inside it | base
ROBOT_TABLE = """
ur5                                  | erd           | ur_description/urdf/ur5_robot.urdf                 | fixed
kinova                               | erd           | kinova_description/robots/kinova.urdf              | fixed
panda (2 mimic fingers)              | erd           | panda_description/urdf/panda.urdf                  | fixed
double_pendulum                      | erd           | double_pendulum_description/urdf/double_pendulum.urdf | fixed
baxter (2 mimic)                     | erd           | baxter_description/urdf/baxter.urdf                | fixed
tiago (continuous wheels)            | erd           | tiago_description/robots/tiago.urdf                | fixed
solo12                               | erd           | solo_description/robots/solo12.urdf                | floating
anymal                               | erd           | anymal_b_simple_description/robots/anymal.urdf     | floating
go1                                  | erd           | go1_description/urdf/go1.urdf                      | floating
icub                                 | erd           | icub_description/robots/icub.urdf                  | floating
talos_full (12 mimic)                | erd           | talos_data/robots/talos_full_v2.urdf               | floating
humanoid (8 spherical)               | pybullet_data | humanoid/humanoid.urdf                             | floating
"""
#: label → (package, path inside it, floating base)
PUBLIC_ROBOTS = {label: (package, path, base == "floating") for label, package, path, base in
                 (tuple(cell.strip() for cell in row.split("|")) for row in ROBOT_TABLE.strip().splitlines())}
BRIDGE_ROBOTS = ("ur5", "panda (2 mimic fingers)", "tiago (continuous wheels)", "solo12", "talos_full (12 mimic)",
                 "humanoid (8 spherical)")


def corpus_path(label: str) -> str | None:
    """The installed file of a robot of PUBLIC_ROBOTS, or None."""
    from biobullet.validate.corpus import example_robot_data_root, pybullet_data_root
    package, relative, _ = PUBLIC_ROBOTS[label]
    root = example_robot_data_root() if package == "erd" else pybullet_data_root()
    path = None if root is None else os.path.join(root, relative)
    return path if path and os.path.exists(path) else None


def load(label: str):
    import warnings

    import biobullet
    with warnings.catch_warnings():   # the corpus files' own inertia and axis warnings (docs/robots.md)
        warnings.simplefilter("ignore")
        return biobullet.load_model(corpus_path(label), floating_base=PUBLIC_ROBOTS[label][2])


def measure_public_calls(label: str) -> dict:
    """(a) for one robot: the per-call seconds and the ratios."""
    from biobullet.bench import public_api_speed
    model = load(label)
    times = public_api_speed(model, rounds=7, number=2000)
    return {"nv": model.nv, "tree": model.n_tangent, "floating": bool(model.floating_base), "seconds": times,
            "forward_dynamics / aba": times["forward_dynamics"] / times["pinocchio aba"],
            "(mass_matrix + bias_forces) / (crba + rnea)": (times["mass_matrix"] + times["bias_forces"])
            / (times["pinocchio crba"] + times["pinocchio rnea"])}


@pytest.mark.parametrize("label", list(PUBLIC_ROBOTS))
def test_public_calls_on_corpus_robots(label, capsys):
    from records import keep_result
    if corpus_path(label) is None:
        pytest.skip(f"{PUBLIC_ROBOTS[label][0]} not installed")
    done = subprocess.run([sys.executable, __file__, label], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    keep_result("corpus_speed.json", f"public calls: {label}", result)
    t = {k: v * 1e6 for k, v in result["seconds"].items()}
    with capsys.disabled():
        print(f"\n| {label} | {result['nv']} | {'floating' if result['floating'] else 'fixed'} | "
              f"{t['pinocchio aba']:.2f} | {t['forward_dynamics']:.2f} | {result['forward_dynamics / aba']:.2f}× | "
              f"{t['pinocchio crba']:.2f} + {t['pinocchio rnea']:.2f} | {t['mass_matrix']:.2f} + "
              f"{t['bias_forces']:.2f} | {result['(mass_matrix + bias_forces) / (crba + rnea)']:.2f}× |")
    assert result["forward_dynamics / aba"] <= 3.0
    assert result["(mass_matrix + bias_forces) / (crba + rnea)"] <= 3.0


def test_bridge_step_on_corpus_robots(capsys):
    pytest.importorskip("pybullet")
    from biobullet.bench import KIND_RUNNERS, bridge_speed
    from records import keep_result
    labels = [label for label in BRIDGE_ROBOTS if corpus_path(label) is not None]
    if not labels:
        pytest.skip("no corpus package installed")
    rows = {}
    for label in labels:
        model = load(label)
        best = bridge_speed(model, rounds=20, steps=50, dt=1e-3, runners=KIND_RUNNERS)
        cpu = best["best"]["cpu"]
        rows[label] = {"nv": model.nv, "minimal_is": best["minimal_kind"], **{k: v * 1e6 for k, v in cpu.items()},
                       "bridge / minimal": cpu["bridge"] / cpu["minimal"], "bridge / bare": cpu["bridge"] / cpu["bare"]}
        keep_result("corpus_speed.json", f"bridge: {label}", rows[label])
    with capsys.disabled():
        print("\n| robot | nv | bare (µs) | minimal loop | minimal (µs) | bridge (µs) | bridge / minimal |")
        for label, r in rows.items():
            print(f"| {label} | {r['nv']} | {r['bare']:.1f} | {r['minimal_is'].replace('_', ' ')} | "
                  f"{r['minimal']:.1f} | {r['bridge']:.1f} | {r['bridge / minimal']:.2f}× |")
    assert all(r["bridge / minimal"] <= 1.25 for r in rows.values()), rows


if __name__ == "__main__":   # (a) for the robot named on the command line, in this process alone
    print(json.dumps(measure_public_calls(sys.argv[1])))
