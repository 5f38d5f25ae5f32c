"""The muscle stage and a whole state derivative against OpenSim 4.6's own cost on the same model and state, one
run, calls in turns, CPU time (`time.process_time`).

Same model file, same pose q (random, half the coordinate ranges), speeds v, activations 0.2 and fiber lengths of
static equilibrium (each side its own, which agree to 1e-6: tests/validation). Timed per call:

- ours: the compiled right-hand side ẏ(t, y) with the muscles (`System`, `simulate(excitations=)`'s), the same
  without muscles (the skeleton), and the muscle stage alone (`muscles.dynamics.stage_entry_kernel`: paths, exact
  gradients, Hill forces, τ −= T ∂l/∂x, the muscle states' rates) on the bodies' kinematics;
- OpenSim: `computeStateVariableDerivatives` (realizes Acceleration: every muscle's path, force and state
  derivatives) on a fresh state each call, and the same on the model with its muscles removed.

The muscle cost of each side is (with muscles − skeleton); the stage alone shows what the pipeline's share of it
is. Prints a table and writes out/benchmarks/muscle_stage_speed.json; README and docs/muscles.md carry the
figures. Asserted (gait2392, the issue's case: 92 muscles must not dominate a step): our whole derivative costs less
than OpenSim's, and our muscles less than theirs."""
from __future__ import annotations

import time
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

osim = pytest.importorskip("opensim")
osim.Logger.setLevelString("error")

import biobullet  # noqa: E402
import biobullet.muscles as muscles  # noqa: E402
from biobullet.constraints.loops import tree_kinematics  # noqa: E402
from biobullet.core.atomic import write_text  # noqa: E402
from records import keep_result  # noqa: E402
from biobullet.integrate.engine import System  # noqa: E402
from biobullet.muscles.dynamics import stage_entry_kernel  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "plugin" / "biobullet" / "data" / "opensim"
ACTIVATION = 0.2


def _cpu_per_call(call, repeats: int) -> float:
    start = time.process_time()
    for _ in range(repeats):
        call()
    return (time.process_time() - start) / repeats


def _without_muscles(name: str, folder: Path) -> str:
    root = ET.parse(FOLDER / f"{name}.osim").getroot()
    for objects in root.iter("objects"):
        for element in list(objects):
            if element.tag.endswith("Muscle"):
                objects.remove(element)
    return str(write_text(str(folder / f"{name}_skeleton.osim"), ET.tostring(root, encoding="unicode")))


def _opensim(path: str, q: np.ndarray, v: np.ndarray, names: list[str]):
    """An OpenSim model at (q, v) with every muscle at ACTIVATION in equilibrium, and a call that evaluates its
    state derivative on a fresh state (the time nudged, so nothing is cached)."""
    model = osim.Model(path)
    state = model.initSystem()
    coordinates = model.getCoordinateSet()
    for j, name in enumerate(names):
        coordinates.get(name).setValue(state, float(q[j]), False)
        coordinates.get(name).setSpeedValue(state, float(v[j]))
    for i in range(model.getMuscles().getSize()):
        model.getMuscles().get(i).setActivation(state, ACTIVATION)
    if model.getMuscles().getSize():
        model.equilibrateMuscles(state)
    flip = [0]

    def derivatives():
        flip[0] ^= 1
        state.setTime(1e-9 * flip[0])
        return model.computeStateVariableDerivatives(state)
    return derivatives


@pytest.mark.parametrize("name", ["gait2392_millard2012muscle", "arm26"])
def test_muscle_stage_against_opensim(name, tmp_path, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = biobullet.load_model(FOLDER / f"{name}.osim")
    theirs = osim.Model(str(FOLDER / f"{name}.osim"))
    state = theirs.initSystem()
    coordinates = theirs.getCoordinateSet()
    rng = np.random.default_rng(1)
    q, v = np.zeros(model.nq), np.zeros(model.nv)
    for j, coordinate_name in enumerate(model.coordinate_names):
        c = coordinates.get(coordinate_name)
        if not c.getLocked(state):
            q[j] = rng.uniform(c.getRangeMin(), c.getRangeMax()) * 0.5
            v[j] = rng.uniform(-0.5, 0.5)
    n_muscles = len(muscles.names(model))
    with_muscles = System(model, None, {"excitations": ACTIVATION, "activations": ACTIVATION})
    skeleton = System(model, None, {})
    y_muscles, y_skeleton = with_muscles.initial_vector((q, v), 0.0), skeleton.initial_vector((q, v), 0.0)
    assert with_muscles._compiled is not None and with_muscles._compiled(0.0, y_muscles) is not None
    assert skeleton._compiled(0.0, y_skeleton) is not None
    rows = with_muscles.muscles.rows
    rows.state[:] = y_muscles[-2 - rows.state.shape[0]:-2]
    kinematics = tree_kinematics(model, q)
    stage_arguments = (rows, kinematics.rotations, kinematics.positions, kinematics.subspace,
                       kinematics.arrays.ancestry, np.ascontiguousarray(q), np.ascontiguousarray(v),
                       np.zeros(model.n_tangent))
    stage = stage_entry_kernel(rows)
    assert stage(*stage_arguments)[0] == 0
    opensim_full = _opensim(str(FOLDER / f"{name}.osim"), q, v, list(model.coordinate_names))
    opensim_skeleton = _opensim(_without_muscles(name, tmp_path), q, v, list(model.coordinate_names))
    opensim_full(), opensim_skeleton()
    times = {"ours derivative": [], "ours skeleton": [], "ours muscle stage": [], "opensim derivative": [],
             "opensim skeleton": []}
    for _ in range(3):   # in turns, so that load on the machine falls on both sides alike
        times["ours derivative"].append(_cpu_per_call(lambda: with_muscles._compiled(0.0, y_muscles), 300))
        times["ours skeleton"].append(_cpu_per_call(lambda: skeleton._compiled(0.0, y_skeleton), 300))
        times["ours muscle stage"].append(_cpu_per_call(lambda: stage(*stage_arguments), 300))
        times["opensim derivative"].append(_cpu_per_call(opensim_full, 30))
        times["opensim skeleton"].append(_cpu_per_call(opensim_skeleton, 30))
    best = {label: min(values) for label, values in times.items()}
    ours_muscles = best["ours derivative"] - best["ours skeleton"]
    their_muscles = best["opensim derivative"] - best["opensim skeleton"]
    ratios = {"derivative: ours / opensim": best["ours derivative"] / best["opensim derivative"],
              "muscles (with − skeleton): ours / opensim": ours_muscles / their_muscles,
              "muscle stage alone / opensim muscles": best["ours muscle stage"] / their_muscles}
    per_muscle = {"ours muscle stage": best["ours muscle stage"] / n_muscles, "ours muscles": ours_muscles / n_muscles,
                  "opensim muscles": their_muscles / n_muscles}
    with capsys.disabled():
        print(f"\n{name}: {n_muscles} muscles, {model.nv} DOF (CPU time per call)")
        for label, seconds in best.items():
            print(f"  {label:<24} {seconds * 1e6:10.1f} µs")
        for label, seconds in per_muscle.items():
            print(f"  per muscle, {label:<20} {seconds * 1e6:8.2f} µs")
        for label, ratio in ratios.items():
            print(f"  {label:<44} {ratio:8.4f}×")
    keep_result("muscle_stage_speed.json", name, {"seconds": best, "per_muscle_seconds": per_muscle, "ratios": ratios})
    if name.startswith("gait2392"):
        assert ratios["derivative: ours / opensim"] < 1.0
        assert ratios["muscles (with − skeleton): ours / opensim"] < 1.0
