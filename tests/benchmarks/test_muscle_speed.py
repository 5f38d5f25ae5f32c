"""Muscle path evaluation against OpenSim 4.6's own cost on the same model and state, one run, calls in turns,
CPU time (`time.process_time`): `muscles.lengths` (every muscle) against setting the coordinates, realizing
Position and `getLength` of every muscle; `muscles.moment_arms` (every muscle × every coordinate, exact by the
chain rule) against OpenSim's `computeMomentArm` for every muscle and unlocked coordinate. Models: gait2392 (92
Millard muscles, no wraps) and arm26 (6 muscles over cylinders, ellipsoids, and a three-wrap path). Prints a
table and writes out/benchmarks/muscle_speed.json; README and docs/muscles.md carry the figures. Asserted on
gait2392 only: on arm26 (one complex step of each wrapped path per coordinate, each with OpenSim's ellipsoid fan
and passes) the two sides are close (≈ 0.9×), which the table shows."""
from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import pytest

osim = pytest.importorskip("opensim")
osim.Logger.setLevelString("error")

import biobullet  # noqa: E402
import biobullet.muscles as muscles  # noqa: E402
from records import keep_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "plugin" / "biobullet" / "data" / "opensim"


def _cpu_per_call(call, repeats: int) -> float:
    start = time.process_time()
    for _ in range(repeats):
        call()
    return (time.process_time() - start) / repeats


@pytest.mark.parametrize("name", ["gait2392_millard2012muscle", "arm26"])
def test_muscle_speed_against_opensim(name, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = biobullet.load_model(FOLDER / f"{name}.osim")
    theirs = osim.Model(str(FOLDER / f"{name}.osim"))
    state = theirs.initSystem()
    coordinates = theirs.getCoordinateSet()
    rng = np.random.default_rng(1)
    q = np.zeros(model.nq)
    for j, coordinate_name in enumerate(model.coordinate_names):   # one pose, set by name in both
        c = coordinates.get(coordinate_name)
        if not c.getLocked(state):
            q[j] = rng.uniform(c.getRangeMin(), c.getRangeMax()) * 0.5
    names = muscles.names(model)
    their_muscles = [theirs.getMuscles().get(n) for n in names]
    unlocked = [coordinates.get(n) for n in model.coordinate_names if not coordinates.get(n).getLocked(state)]
    flip = [0]

    def opensim_pose():   # a new state each call (alternating by 1e-9 rad), so OpenSim recomputes its paths
        flip[0] ^= 1
        for j, coordinate_name in enumerate(model.coordinate_names):
            coordinates.get(coordinate_name).setValue(state, float(q[j]) + 1e-9 * flip[0], False)
        theirs.realizePosition(state)

    def opensim_lengths():
        opensim_pose()
        return [m.getLength(state) for m in their_muscles]

    def opensim_moment_arms():
        opensim_pose()
        return [[m.computeMomentArm(state, c) for c in unlocked] for m in their_muscles]

    muscles.moment_arms(model, q)   # compiled and cached before timing
    times = {"ours lengths": [], "opensim lengths": [], "ours moment_arms": [], "opensim computeMomentArm": []}
    for _ in range(3):   # in turns, so that load on the machine falls on both sides alike
        times["ours lengths"].append(_cpu_per_call(lambda: muscles.lengths(model, q), 200))
        times["opensim lengths"].append(_cpu_per_call(opensim_lengths, 20))
        times["ours moment_arms"].append(_cpu_per_call(lambda: muscles.moment_arms(model, q), 100))
        times["opensim computeMomentArm"].append(_cpu_per_call(opensim_moment_arms, 1))
    best = {label: min(values) for label, values in times.items()}
    ratios = {"lengths: ours / opensim": best["ours lengths"] / best["opensim lengths"],
              "moment arms: ours / opensim computeMomentArm":
                  best["ours moment_arms"] / best["opensim computeMomentArm"]}
    with capsys.disabled():
        print(f"\n{name}: {len(names)} muscles, {len(unlocked)} unlocked coordinates (CPU time per call)")
        for label, seconds in best.items():
            print(f"  {label:<28} {seconds * 1e3:10.3f} ms")
        for label, ratio in ratios.items():
            print(f"  {label:<44} {ratio:8.4f}×")
    keep_result("muscle_speed.json", name, {"seconds": best, "ratios": ratios})
    if name.startswith("gait2392"):   # the case: 92 muscles must not dominate a step
        assert ratios["lengths: ours / opensim"] < 1.0
        assert ratios["moment arms: ours / opensim computeMomentArm"] < 0.1
