"""The public muscle API on models loaded from `.osim` (`biobullet.muscles.names/lengths/moment_arms/
equilibrium_tendon_forces(model, ...)`) against OpenSim 4.6 on the same file, with the same coordinate values set by
name in both: here the body placements, Jacobians and joint values are biobullet's own (the importer's
translation: joint functions, couplers, offset frames), not OpenSim's transforms.

Tolerances: lengths 1e-9 m (the same path formulas on independently computed placements: round-off, ≈ 1e-15 m
observed); moment arms 1e-6 m against central differences (h = 1e-6) of OpenSim's lengths (the definition
R = −dl/dq; truncation ≈ h² l‴ ≈ 1e-12, round-off ≈ 1e-16/h ≈ 1e-10) and of our own lengths, and against
OpenSim's `computeMomentArm` on paths without wraps, 1e-9 m (the issue asks 1e-5 m; ≈ 1e-15 observed); equilibrium tendon
forces 1e-6 F₀ (OpenSim's equilibrium solvers stop at their tolerances, ≈ 1e-8 F₀; the issue asks ≤ 1e-3 F₀).
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

osim = pytest.importorskip("opensim")
osim.Logger.setLevelString("error")   # the models name mesh files that are not here

import biobullet  # noqa: E402
import biobullet.muscles as muscles  # noqa: E402

FOLDER = Path(os.environ.get("BIOBULLET_OPENSIM_MODELS", "")) if os.environ.get("BIOBULLET_OPENSIM_MODELS") \
    else Path(__file__).resolve().parents[2] / "plugin" / "biobullet" / "data" / "opensim"
pytestmark = pytest.mark.skipif(not (FOLDER / "arm26.osim").is_file(), reason="the bundled OpenSim models are "
                                "missing (plugin/biobullet/data/opensim; or set BIOBULLET_OPENSIM_MODELS)")
MODELS = ["arm26", "Tug_of_War_Millard", "gait10dof18musc", "leg6dof9musc", "gait2392_millard2012muscle"]


def _load(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = biobullet.load_model(FOLDER / f"{name}.osim")
    theirs = osim.Model(str(FOLDER / f"{name}.osim"))
    return model, theirs, theirs.initSystem()


def _random_pose(model, theirs, state, rng) -> np.ndarray:
    """A random pose of the free coordinates in OpenSim (couplers assembled) and the same q for biobullet."""
    coordinates = theirs.getCoordinateSet()
    for i in range(coordinates.getSize()):
        c = coordinates.get(i)
        if not c.getLocked(state) and not c.isDependent(state):
            c.setValue(state, rng.uniform(c.getRangeMin(), c.getRangeMax()), False)
        c.setSpeedValue(state, 0.0)
    theirs.assemble(state)
    theirs.realizePosition(state)
    return np.array([coordinates.get(name).getValue(state) for name in model.coordinate_names])


def _set_coordinate(theirs, state, name: str, value: float) -> None:
    """Set coordinate `name` and every coupled coordinate from its coupler's function (exactly: OpenSim's
    assembler would stop at its tolerance, ≈ 1e-3 of a 1e-6 step on leg6dof9musc's patella)."""
    coordinates = theirs.getCoordinateSet()
    coordinates.get(name).setValue(state, value, False)
    constraints = theirs.getConstraintSet()
    for i in range(constraints.getSize()):
        coupler = osim.CoordinateCouplerConstraint.safeDownCast(constraints.get(i))
        if coupler is None:
            continue
        inputs = coupler.getIndependentCoordinateNames()
        x = osim.Vector(inputs.getSize(), 0.0)
        for k in range(inputs.getSize()):
            x.set(k, coordinates.get(inputs.get(k)).getValue(state))
        coordinates.get(coupler.getDependentCoordinateName()).setValue(state, coupler.getFunction().calcValue(x),
                                                                        False)
    theirs.realizePosition(state)


def _opensim_lengths(theirs, state, names) -> np.ndarray:
    return np.array([theirs.getMuscles().get(n).getLength(state) for n in names])


def _evaluated(model) -> list[int]:
    q = np.zeros(model.nq)
    return [k for k, value in enumerate(muscles.lengths(model, q)) if np.isfinite(value)]


@pytest.mark.parametrize("name", MODELS)
def test_lengths_and_moment_arms_match_opensim(name):
    model, theirs, state = _load(name)
    names = muscles.names(model)
    assert list(names) == [theirs.getMuscles().get(i).getName() for i in range(theirs.getMuscles().getSize())]
    evaluated = _evaluated(model)
    wrap_free = [k for k in evaluated if theirs.getMuscles().get(names[k]).getGeometryPath().getWrapSet().getSize()
                 == 0]
    assert wrap_free, "no muscle to compare against computeMomentArm"
    rng = np.random.default_rng(5)
    step = 1e-6
    worst = {"length": 0.0, "their_derivative": 0.0, "our_derivative": 0.0, "compute_moment_arm": 0.0}
    for _ in range(1 if name.startswith("gait2392") else 3):   # gait2392: 92 muscles × 23 coordinates
        q = _random_pose(model, theirs, state, rng)
        ours = muscles.lengths(model, q)
        worst["length"] = max(worst["length"], np.max(np.abs(ours[evaluated] - _opensim_lengths(
            theirs, state, [names[k] for k in evaluated]))))
        arms = muscles.moment_arms(model, q)
        assert arms.shape == (len(names), model.nq)
        for j, coordinate_name in enumerate(model.coordinate_names):
            coordinate = theirs.getCoordinateSet().get(coordinate_name)
            sides_theirs, sides_ours = [], []
            for sign in (1.0, -1.0):
                _set_coordinate(theirs, state, coordinate_name, q[j] + sign * step)
                sides_theirs.append(_opensim_lengths(theirs, state, [names[k] for k in evaluated]))
                shifted = q.copy()
                shifted[j] += sign * step
                sides_ours.append(muscles.lengths(model, shifted)[evaluated])
            _set_coordinate(theirs, state, coordinate_name, q[j])
            their_derivative = -(sides_theirs[0] - sides_theirs[1]) / (2 * step)
            our_derivative = -(sides_ours[0] - sides_ours[1]) / (2 * step)
            worst["their_derivative"] = max(worst["their_derivative"],
                                            np.max(np.abs(arms[evaluated, j] - their_derivative)))
            worst["our_derivative"] = max(worst["our_derivative"], np.max(np.abs(arms[evaluated, j] - our_derivative)))
            for k in wrap_free:
                reference = theirs.getMuscles().get(names[k]).getGeometryPath().computeMomentArm(state, coordinate)
                worst["compute_moment_arm"] = max(worst["compute_moment_arm"], abs(arms[k, j] - reference))
    print(name, worst)
    assert worst["length"] <= 1e-9
    assert worst["their_derivative"] <= 1e-6
    assert worst["our_derivative"] <= 1e-6
    assert worst["compute_moment_arm"] <= 1e-9


@pytest.mark.parametrize("name", MODELS)
def test_equilibrium_tendon_forces_match_opensim(name):
    model, theirs, state = _load(name)
    names = muscles.names(model)
    evaluated = _evaluated(model)
    rng = np.random.default_rng(9)
    q = _random_pose(model, theirs, state, rng)
    activation = rng.uniform(0.1, 1.0, len(names))
    for k, muscle in enumerate(names):
        theirs.getMuscles().get(muscle).setActivation(state, float(activation[k]))
    theirs.equilibrateMuscles(state)
    theirs.realizeDynamics(state)
    reference = np.array([theirs.getMuscles().get(names[k]).getTendonForce(state) for k in evaluated])
    maximum = np.array([theirs.getMuscles().get(names[k]).getMaxIsometricForce() for k in evaluated])
    ours = muscles.equilibrium_tendon_forces(model, q, activation)
    assert ours.shape == (len(names),)
    assert np.max(np.abs(ours[evaluated] - reference) / maximum) <= 1e-6


def test_every_arm26_muscle_is_evaluated():
    """arm26's BIClong (ellipsoid) and TRIlong (three wraps) are evaluated: no muscle warning at load (the
    importer still names the markers it does not import), no NaN row."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = biobullet.load_model(FOLDER / "arm26.osim")
        muscles.names(model)
    assert not [w for w in caught if "not evaluated" in str(w.message)]
    q = np.array([0.3, 1.0])
    assert np.all(np.isfinite(muscles.lengths(model, q)))
    assert np.all(np.isfinite(muscles.moment_arms(model, q)))


def test_converted_urdf_keeps_the_muscles(tmp_path):
    """`convert` writes the muscles as <muscle> elements: the URDF gives OpenSim's lengths too."""
    from biobullet.opensim import convert_osim
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        convert_osim(FOLDER / "gait10dof18musc.osim", tmp_path / "gait.urdf")
        model = biobullet.load_model(tmp_path / "gait.urdf", joint_limits=False)
    assert "<muscle " in (tmp_path / "gait.urdf").read_text()
    theirs = osim.Model(str(FOLDER / "gait10dof18musc.osim"))
    state = theirs.initSystem()
    q = _random_pose(model, theirs, state, np.random.default_rng(3))
    names = muscles.names(model)
    assert len(names) == 18
    assert np.max(np.abs(muscles.lengths(model, q) - _opensim_lengths(theirs, state, names))) <= 1e-9


def test_a_locked_coordinate_holds_its_points(tmp_path):
    """gait10dof18musc with knee_angle_r locked: no joint carries it, so its conditional and moving points (rect_fem_r,
    vasti_r, ...) are fixed at the coordinate's default value, as OpenSim evaluates them."""
    text = (FOLDER / "gait10dof18musc.osim").read_text()
    start = text.index('<Coordinate name="knee_angle_r"')
    at = text.index("<locked>false</locked>", start)
    (tmp_path / "locked.osim").write_text(text[:at] + "<locked>true</locked>" + text[at + len("<locked>false</locked>"):])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = biobullet.load_model(tmp_path / "locked.osim")
    assert "knee_angle_r" not in model.coordinate_names
    theirs = osim.Model(str(tmp_path / "locked.osim"))
    state = theirs.initSystem()
    rng = np.random.default_rng(13)
    names = muscles.names(model)
    for _ in range(3):
        q = _random_pose(model, theirs, state, rng)
        assert np.max(np.abs(muscles.lengths(model, q) - _opensim_lengths(theirs, state, names))) <= 1e-9
