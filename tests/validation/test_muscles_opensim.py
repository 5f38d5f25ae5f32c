"""Muscles against OpenSim 4.6 itself on the OpenSim models of shared/opensim (path lengths from the bodies'
ground transforms OpenSim computes; moment arms from the chain rule against OpenSim's computeMomentArm; the Hill
curves against OpenSim's curve objects and muscle states; equilibrium tendon forces against
Model.equilibrateMuscles; activation dynamics against OpenSim's derivatives).

Tolerances: lengths 1e-9 m (the kernels evaluate the same formulas: agreement is round-off, ≈ 1e-15 m);
moment arms 1e-6 m (the frame Jacobians come from central differences of OpenSim's transforms, h = 1e-6: error
≈ h² ≈ 1e-12 relative, well inside); Millard curves 1e-11 (OpenSim stops its Newton iteration for the Bézier
parameter at a tolerance, we at adjacent doubles); equilibrium tendon forces 1e-6 F₀ (OpenSim's equilibrium
solvers stop at their tolerances, ≈ 1e-8 F₀ observed; the issue asks ≤ 1e-3 F₀), while our residual is
round-off (≤ 1e-12 F₀) and the fiber velocity that balances the forces is zero to ≤ 1e-9.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

osim = pytest.importorskip("opensim")
osim.Logger.setLevelString("error")   # the models name mesh files that are not here

from biobullet.muscles import hill  # noqa: E402
from biobullet.muscles.description import MuscleParameters  # noqa: E402
from biobullet.muscles.location import simm_spline  # noqa: E402
from biobullet.muscles.osim import load_osim_muscles  # noqa: E402
from biobullet.muscles.path import compile_paths, moment_arms, no_directions, path_gradients  # noqa: E402


def _models_folder() -> Path | None:
    # the library's bundled copies of the shared corpus (plugin/biobullet/data/opensim), or another folder
    candidates = [os.environ.get("BIOBULLET_OPENSIM_MODELS", ""),
                  Path(__file__).resolve().parents[2] / "plugin" / "biobullet" / "data" / "opensim"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "arm26.osim").is_file():
            return Path(candidate)
    return None


FOLDER = _models_folder()
pytestmark = pytest.mark.skipif(FOLDER is None, reason="the bundled OpenSim models are missing "
                                                      "(plugin/biobullet/data/opensim; or set BIOBULLET_OPENSIM_MODELS)")
WRAP_FREE = ["Tug_of_War_Millard", "gait10dof18musc", "leg6dof9musc", "gait2392_millard2012muscle", "arm26"]


SPHERE_OSIM = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><Model name="sphere_wrap">
 <Ground name="ground"><WrapObjectSet><objects>
   <WrapSphere name="ball"><xyz_body_rotation>0.3 -0.2 0.5</xyz_body_rotation><translation>0.01 0 0.005</translation>
    <quadrant>QUADRANT</quadrant><radius>0.04</radius></WrapSphere></objects></WrapObjectSet></Ground>
 <BodySet><objects><Body name="arm"><mass>1</mass><mass_center>0 -0.2 0</mass_center><inertia>0.01 0.01 0.01 0 0 0</inertia></Body></objects></BodySet>
 <JointSet><objects><BallJoint name="shoulder"><socket_parent_frame>ground_offset</socket_parent_frame>
  <socket_child_frame>arm_offset</socket_child_frame>
  <coordinates><Coordinate name="q1"><range>-3 3</range></Coordinate><Coordinate name="q2"><range>-3 3</range></Coordinate>
   <Coordinate name="q3"><range>-3 3</range></Coordinate></coordinates>
  <frames><PhysicalOffsetFrame name="ground_offset"><socket_parent>/ground</socket_parent><translation>0 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
   <PhysicalOffsetFrame name="arm_offset"><socket_parent>/bodyset/arm</socket_parent><translation>0 0.06 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame></frames>
 </BallJoint></objects></JointSet>
 <ForceSet><objects><DeGrooteFregly2016Muscle name="wrapper">
  <GeometryPath><PathPointSet><objects>
   <PathPoint name="origin"><socket_parent_frame>/ground</socket_parent_frame><location>0.02 0.09 0.01</location></PathPoint>
   <PathPoint name="insertion"><socket_parent_frame>/bodyset/arm</socket_parent_frame><location>0.015 -0.12 0.02</location></PathPoint>
  </objects></PathPointSet>
  <PathWrapSet><objects><PathWrap name="w"><wrap_object>ball</wrap_object><method>hybrid</method><range>-1 -1</range></PathWrap></objects></PathWrapSet>
  </GeometryPath><max_isometric_force>100</max_isometric_force><optimal_fiber_length>0.1</optimal_fiber_length><tendon_slack_length>0.05</tendon_slack_length>
 </DeGrooteFregly2016Muscle></objects></ForceSet>
</Model></OpenSimDocument>
"""


TORUS_OSIM = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><Model name="torus_wrap">
 <Ground name="ground"><WrapObjectSet><objects>
   <WrapTorus name="ring"><xyz_body_rotation>0.2 -0.1 0.3</xyz_body_rotation><translation>0.005 0 -0.003</translation>
    <quadrant>QUADRANT</quadrant><inner_radius>0.015</inner_radius><outer_radius>0.05</outer_radius></WrapTorus>
 </objects></WrapObjectSet></Ground>
 <BodySet><objects><Body name="arm"><mass>1</mass><mass_center>0 0 -0.1</mass_center><inertia>0.01 0.01 0.01 0 0 0</inertia></Body></objects></BodySet>
 <JointSet><objects><BallJoint name="shoulder"><socket_parent_frame>ground_offset</socket_parent_frame>
  <socket_child_frame>arm_offset</socket_child_frame>
  <coordinates><Coordinate name="q1"><range>-3 3</range></Coordinate><Coordinate name="q2"><range>-3 3</range></Coordinate>
   <Coordinate name="q3"><range>-3 3</range></Coordinate></coordinates>
  <frames><PhysicalOffsetFrame name="ground_offset"><socket_parent>/ground</socket_parent><translation>0 0 -0.09</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
   <PhysicalOffsetFrame name="arm_offset"><socket_parent>/bodyset/arm</socket_parent><translation>0 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame></frames>
 </BallJoint></objects></JointSet>
 <ForceSet><objects><DeGrooteFregly2016Muscle name="through_ring">
  <GeometryPath><PathPointSet><objects>
   <PathPoint name="origin"><socket_parent_frame>/ground</socket_parent_frame><location>ORIGIN</location></PathPoint>
   <PathPoint name="insertion"><socket_parent_frame>/bodyset/arm</socket_parent_frame><location>INSERTION</location></PathPoint>
  </objects></PathPointSet>
  <PathWrapSet><objects><PathWrap name="w"><wrap_object>ring</wrap_object><range>-1 -1</range></PathWrap></objects></PathWrapSet>
  </GeometryPath><max_isometric_force>100</max_isometric_force><optimal_fiber_length>0.1</optimal_fiber_length><tendon_slack_length>0.05</tendon_slack_length>
 </DeGrooteFregly2016Muscle></objects></ForceSet>
</Model></OpenSimDocument>
"""


def _opensim_model(name: str):
    model = osim.Model(str(FOLDER / f"{name}.osim"))
    state = model.initSystem()
    return model, state


def _random_pose(model, state, rng) -> None:
    coordinates = model.getCoordinateSet()
    for i in range(coordinates.getSize()):
        coordinate = coordinates.get(i)
        if not coordinate.getLocked(state):
            coordinate.setValue(state, rng.uniform(coordinate.getRangeMin(), coordinate.getRangeMax()), False)
        coordinate.setSpeedValue(state, 0.0)
    model.assemble(state)
    model.realizePosition(state)


def _transforms(model, state, frames):
    rotations, positions = [], []
    for name in frames:
        transform = model.getBodySet().get(name).getTransformInGround(state)
        rotation = transform.R()
        rotations.append([[rotation.get(i, j) for j in range(3)] for i in range(3)])
        positions.append([transform.p()[i] for i in range(3)])
    return np.array(rotations), np.array(positions).reshape(-1, 3)


def _coordinates(model, state, names):
    return np.array([model.getCoordinateSet().get(name).getValue(state) for name in names])


def _evaluated(muscle_set):
    """The muscles whose paths are evaluated: all of the shared models' (cylinders, spheres, ellipsoids, several
    wraps per path)."""
    return muscle_set


@pytest.mark.parametrize("name", WRAP_FREE)
def test_path_lengths_match_opensim(name):
    muscle_set = _evaluated(load_osim_muscles(FOLDER / f"{name}.osim"))
    paths = compile_paths(muscle_set)
    assert paths.names, "no muscle to compare"
    if name == "arm26":   # every muscle: BIClong (ellipsoid), TRIlong (cylinder, ellipsoid, cylinder), 3 cylinders
        assert set(paths.names) == {"TRIlong", "TRIlat", "TRImed", "BIClong", "BICshort", "BRA"}
    model, state = _opensim_model(name)
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(30 if name == "arm26" else 6):
        _random_pose(model, state, rng)
        rotations, positions = _transforms(model, state, paths.frames)
        gradient = path_gradients(paths, rotations, positions, _coordinates(model, state, paths.coordinates))
        reference = np.array([model.getMuscles().get(n).getLength(state) for n in paths.names])
        worst = max(worst, float(np.max(np.abs(gradient.lengths - reference))))
    assert worst <= 1e-9, worst


def test_gait10dof_has_moving_and_conditional_points():
    muscle_set = load_osim_muscles(FOLDER / "gait10dof18musc.osim")
    kinds = {point.kind for muscle in muscle_set.muscles for point in muscle.points}
    assert kinds == {"fixed", "conditional", "moving"}


def _frame_jacobians(model, state, paths, coordinates, step=1e-6):
    """Frame-origin Jacobians [v; ω] per coordinate from central differences of OpenSim's body transforms."""
    coordinate_set = model.getCoordinateSet()
    q0 = _coordinates(model, state, paths.coordinates)
    rotations, _ = _transforms(model, state, paths.frames)
    jacobians = np.zeros((len(paths.frames), 6, len(paths.coordinates)))
    for k, coordinate in enumerate(paths.coordinates):
        if coordinate not in coordinates:
            continue
        sides = []
        for sign in (1.0, -1.0):
            coordinate_set.get(coordinate).setValue(state, q0[k] + sign * step, True)
            sides.append(_transforms(model, state, paths.frames))
        coordinate_set.get(coordinate).setValue(state, q0[k], True)
        (r_plus, p_plus), (r_minus, p_minus) = sides
        jacobians[:, :3, k] = (p_plus - p_minus) / (2 * step)
        for f in range(len(paths.frames)):   # ω× = Ṙ Rᵀ
            skew = (r_plus[f] - r_minus[f]) / (2 * step) @ rotations[f].T
            jacobians[f, 3:, k] = [skew[2, 1], skew[0, 2], skew[1, 0]]
    model.realizePosition(state)
    return jacobians


def _opensim_length_derivative(model, state, muscle, coordinate, step=1e-6):
    """−dl/dq of OpenSim's own lengths by central differences (OpenSim's definition of R, evaluated directly)."""
    c = model.getCoordinateSet().get(coordinate)
    q0 = c.getValue(state)
    lengths = []
    for sign in (1.0, -1.0):
        c.setValue(state, q0 + sign * step, True)
        model.realizePosition(state)
        lengths.append(model.getMuscles().get(muscle).getLength(state))
    c.setValue(state, q0, True)
    model.realizePosition(state)
    return -(lengths[0] - lengths[1]) / (2 * step)


@pytest.mark.parametrize("name", ["gait10dof18musc", "Tug_of_War_Millard", "arm26"])
def test_moment_arms_match_opensim(name):
    """R = −dl/dq from the exact path gradient (forward-mode tangents through the wraps of arm26) and the frames'
    Jacobians (central differences of OpenSim's own transforms) against central differences of OpenSim's own
    lengths (the definition), and against OpenSim's computeMomentArm where no wrap is active: on wrapped arm26
    paths computeMomentArm differs from the derivative of OpenSim's own lengths by up to ≈ 1e-4 m."""
    muscle_set = _evaluated(load_osim_muscles(FOLDER / f"{name}.osim"))
    paths = compile_paths(muscle_set)
    model, state = _opensim_model(name)
    rng = np.random.default_rng(11)
    coordinate_set = model.getCoordinateSet()
    unlocked = [n for n in paths.coordinates if not coordinate_set.get(n).getLocked(state)]
    worst, worst_difference, wrapped_disagreement, wrapped_poses = 0.0, 0.0, 0.0, 0
    for _ in range(20 if name == "arm26" else 3):
        _random_pose(model, state, rng)
        q0 = _coordinates(model, state, paths.coordinates)
        rotations, positions = _transforms(model, state, paths.frames)
        arms = moment_arms(paths, rotations, positions, q0, _frame_jacobians(model, state, paths, unlocked))
        wrap_active = path_gradients(paths, rotations, positions, q0).wrap_active
        for m, muscle in enumerate(paths.names):
            wrapped = bool(np.any(wrap_active[paths.arrays.wrap_start[m]:paths.arrays.wrap_start[m + 1]]))
            wrapped_poses += int(wrapped)
            for k, coordinate in enumerate(paths.coordinates):
                if coordinate in unlocked:
                    difference = abs(arms[m, k] - _opensim_length_derivative(model, state, muscle, coordinate))
                    worst_difference = max(worst_difference, difference)
                    reference = model.getMuscles().get(muscle).computeMomentArm(state, coordinate_set.get(coordinate))
                    if wrapped:   # computeMomentArm is not −dl/dq there (docs/muscles.md): recorded, not asserted
                        wrapped_disagreement = max(wrapped_disagreement, abs(arms[m, k] - reference))
                    else:
                        worst = max(worst, abs(arms[m, k] - reference))
    print(name, "vs computeMomentArm (unwrapped)", worst, "(wrapped)", wrapped_disagreement,
          "vs −dl/dq of OpenSim's lengths", worst_difference)
    assert worst_difference <= 1e-6, worst_difference
    assert worst <= 1e-6, worst
    assert name != "arm26" or wrapped_poses >= 4


def test_simm_spline_matches_opensim():
    rng = np.random.default_rng(3)
    x = np.cumsum(rng.uniform(0.1, 1.0, 9))
    y = rng.normal(size=9)
    ours = simm_spline(x, y)
    theirs = osim.SimmSpline()
    for a, b in zip(x, y):
        theirs.addPoint(float(a), float(b))
    for value in np.linspace(x[0] - 1.0, x[-1] + 1.0, 200):
        assert abs(ours(value) - theirs.calcValue(osim.Vector(1, float(value)))) <= 1e-12


@pytest.mark.parametrize("name", ["gait10dof18musc", "Tug_of_War_Millard"])
def test_millard_curves_match_opensim(name):
    muscle_set = load_osim_muscles(FOLDER / f"{name}.osim")
    model = osim.Model(str(FOLDER / f"{name}.osim"))
    for muscle in muscle_set.muscles:
        theirs = osim.Millard2012EquilibriumMuscle.safeDownCast(model.getMuscles().get(muscle.name))
        curves = hill.curve_parameters("millard2012", muscle.parameters)
        for ours, curve, xs in (
                (hill.active_force_length, theirs.getActiveForceLengthCurve(), np.linspace(0.2, 2.0, 181)),
                (hill.passive_force_length, theirs.getFiberForceLengthCurve(), np.linspace(0.8, 2.0, 121)),
                (hill.force_velocity, theirs.getForceVelocityCurve(), np.linspace(-1.2, 1.2, 121)),
                (hill.tendon_force_length, theirs.getTendonForceLengthCurve(), np.linspace(0.98, 1.08, 101))):
            errors = [abs(ours(hill.MILLARD, curves, float(x)) - curve.calcValue(float(x))) for x in xs]
            assert max(errors) <= 1e-11, (muscle.name, curve.getName(), max(errors))


def test_degroote_curves_match_opensim_and_published_points():
    theirs = osim.DeGrooteFregly2016Muscle()
    for width, strain, tendon in ((1.0, 0.6, 0.049), (1.3, 0.45, 0.033)):
        theirs.set_active_force_width_scale(width)
        theirs.set_passive_fiber_strain_at_one_norm_force(strain)
        theirs.set_tendon_strain_at_one_norm_force(tendon)
        parameters = MuscleParameters(1000.0, 0.1, 0.2, extra=(("active_force_width_scale", width),
                                                               ("passive_fiber_strain_at_one_norm_force", strain),
                                                               ("tendon_strain_at_one_norm_force", tendon)))
        curves = hill.curve_parameters("degroote2016", parameters)
        for x in np.linspace(0.3, 1.9, 81):
            assert abs(hill.active_force_length(hill.DEGROOTE, curves, x)
                       - theirs.calcActiveForceLengthMultiplier(x)) <= 1e-14
            assert abs(hill.passive_force_length(hill.DEGROOTE, curves, x)
                       - theirs.calcPassiveForceMultiplier(x)) <= 1e-14
        for x in np.linspace(0.97, 1.1, 41):
            assert abs(hill.tendon_force_length(hill.DEGROOTE, curves, x) - theirs.calcTendonForceMultiplier(x)) \
                <= 1e-13
        for v in np.linspace(-1.0, 1.0, 41):
            assert abs(hill.force_velocity(hill.DEGROOTE, curves, v) - theirs.calcForceVelocityMultiplier(v)) <= 1e-14
        # the published anchors (De Groote et al. 2016 with OpenSim's refits): f_L(1) = 1, f_V(−1) = 0,
        # f_V(0) = 1, f_PE(1 + e₀) = 1, f_T(1) = 0, f_T(1 + ε₀) = 1
        assert hill.active_force_length(hill.DEGROOTE, curves, 1.0) == pytest.approx(1.0, abs=1e-12)
        assert hill.force_velocity(hill.DEGROOTE, curves, -1.0) == pytest.approx(0.0, abs=1e-12)
        assert hill.force_velocity(hill.DEGROOTE, curves, 0.0) == pytest.approx(1.0, abs=1e-12)
        assert hill.passive_force_length(hill.DEGROOTE, curves, 1.0 + strain) == pytest.approx(1.0, abs=1e-12)
        assert hill.tendon_force_length(hill.DEGROOTE, curves, 1.0) == pytest.approx(0.0, abs=1e-12)
        assert hill.tendon_force_length(hill.DEGROOTE, curves, 1.0 + tendon) == pytest.approx(1.0, abs=1e-12)


def test_thelen_curves_match_opensim_muscle_states():
    """Thelen's curves and pennation through OpenSim's own muscle: set the fiber length state, read the
    multipliers, the pennation angle and the tendon force."""
    muscle_set = load_osim_muscles(FOLDER / "arm26.osim")
    model, state = _opensim_model("arm26")
    model.realizePosition(state)
    rng = np.random.default_rng(5)
    for muscle in muscle_set.muscles:
        theirs = model.getMuscles().get(muscle.name)
        curves = hill.curve_parameters("thelen2003", muscle.parameters)
        vector = hill.muscle_vector("thelen2003", muscle.parameters)
        for _ in range(5):
            length = muscle.parameters.optimal_fiber_length * rng.uniform(0.6, 1.5)
            theirs.setStateVariableValue(state, "fiber_length", length)
            theirs.setActivation(state, 0.5)
            # OpenSim keeps the muscle's length info cached at the position stage, which a new fiber length state
            # does not invalidate: setting a coordinate to its own value does
            elbow = model.getCoordinateSet().get(0)
            elbow.setValue(state, elbow.getValue(state), False)
            model.realizeDynamics(state)
            assert theirs.getFiberLength(state) == pytest.approx(length, rel=1e-14)
            normalized = length / muscle.parameters.optimal_fiber_length
            assert abs(hill.active_force_length(hill.THELEN, curves, normalized)
                       - theirs.getActiveForceLengthMultiplier(state)) <= 1e-13
            assert abs(hill.passive_force_length(hill.THELEN, curves, normalized)
                       - theirs.getPassiveForceMultiplier(state)) <= 1e-13
            cos_alpha, _ = hill.pennation_py(hill.THELEN, curves, vector, length)
            assert abs(cos_alpha - theirs.getCosPennationAngle(state)) <= 1e-13
            tendon = (theirs.getLength(state) - length * cos_alpha) / muscle.parameters.tendon_slack_length
            assert abs(hill.tendon_force_length(hill.THELEN, curves, tendon) * muscle.parameters.max_isometric_force
                       - theirs.getTendonForce(state)) <= 1e-9 * muscle.parameters.max_isometric_force


def test_thelen_tendon_follows_the_published_definition():
    """Thelen 2003 eq. (5): exponential toe up to 0.33 F₀ at ε_toe, then linear, reaching F₀ at ε₀; C¹ at ε_toe."""
    e0 = 0.04
    curves = hill.curve_parameters("thelen2003", MuscleParameters(1.0, 0.1, 0.2, extra=(("FmaxTendonStrain", e0),)))
    toe = 99.0 * e0 * math.exp(3) / (166.0 * math.exp(3) - 67.0)
    assert toe == pytest.approx(0.609 * e0, rel=1e-3)
    f = lambda strain: hill.tendon_force_length(hill.THELEN, curves, 1.0 + strain)  # noqa: E731
    assert f(e0) == pytest.approx(1.0, abs=1e-14)
    assert f(toe) == pytest.approx(0.33, abs=1e-14)
    assert f(-0.01) == 0.0
    h = 1e-7
    assert (f(toe + h) - f(toe)) / h == pytest.approx((f(toe) - f(toe - h)) / h, rel=1e-5)


def _equilibrium_check(model, state, muscle_set, model_name=None, trials=4, seed=1, solvable_only=False):
    rng = np.random.default_rng(seed)
    worst, worst_residual, worst_velocity = 0.0, 0.0, 0.0
    compared = 0
    for _ in range(trials):
        _random_pose(model, state, rng)
        activation = float(rng.uniform(0.05, 1.0))
        for i in range(model.getMuscles().getSize()):
            model.getMuscles().get(i).setActivation(state, activation)
        try:
            model.equilibrateMuscles(state)
        except RuntimeError:
            # OpenSim's DeGroote solver brackets the normalized tendon force in [0, 5]: a slack muscle (tendon
            # force ≤ 0 at every fiber length) has no root there
            if solvable_only:
                continue
            raise
        model.realizeDynamics(state)
        for muscle in muscle_set.muscles:
            kind = model_name or muscle.model
            theirs = model.getMuscles().get(muscle.name)
            curves = hill.curve_parameters(kind, muscle.parameters)
            vector = hill.muscle_vector(kind, muscle.parameters)
            out = np.zeros(5)
            code = hill.MODEL_CODES[kind]
            hill.equilibrium(code, curves, vector, theirs.getLength(state), activation, out)
            force = muscle.parameters.max_isometric_force
            worst = max(worst, abs(out[0] - theirs.getTendonForce(state)) / force)
            worst_residual = max(worst_residual, abs(out[4]))
            # zero fiber velocity: the velocity at which the fiber carries the tendon's force is 0
            length = out[1] / muscle.parameters.optimal_fiber_length
            a = activation if code == hill.DEGROOTE else max(activation, vector[hill.A_MIN])
            velocity = hill.fiber_velocity(code, curves, vector, a, hill.active_force_length(code, curves, length),
                                           hill.passive_force_length(code, curves, length), length,
                                           out[0] / force / out[3])
            worst_velocity = max(worst_velocity, abs(velocity))
            if code == hill.DEGROOTE:   # OpenSim's own residual f_T − fiber force along the tendon at our solution
                opensim_residual = osim.DeGrooteFregly2016Muscle.safeDownCast(theirs).calcEquilibriumResidual(
                    theirs.getLength(state), 0.0, activation, out[0] / force, 0.0)
                worst_residual = max(worst_residual, abs(opensim_residual))
            compared += 1
    return compared, worst, worst_residual, worst_velocity


@pytest.mark.parametrize("name", ["Tug_of_War_Millard", "gait10dof18musc", "arm26", "leg6dof9musc"])
def test_equilibrium_tendon_forces_match_opensim(name):
    muscle_set = load_osim_muscles(FOLDER / f"{name}.osim")
    model, state = _opensim_model(name)
    compared, worst, residual, velocity = _equilibrium_check(model, state, muscle_set)
    assert compared >= 8
    assert worst <= 1e-6, worst
    assert residual <= 1e-12, residual
    assert velocity <= 1e-9, velocity


def test_degroote_equilibrium_matches_opensim():
    """The Tug-of-War muscles turned into DeGrooteFregly2016Muscle (compliant tendon) by OpenSim itself."""
    muscle_set = load_osim_muscles(FOLDER / "Tug_of_War_Millard.osim")
    model = osim.Model(str(FOLDER / "Tug_of_War_Millard.osim"))
    osim.DeGrooteFregly2016Muscle.replaceMuscles(model)
    for i in range(model.getMuscles().getSize()):
        osim.DeGrooteFregly2016Muscle.safeDownCast(model.getMuscles().get(i)).set_ignore_tendon_compliance(False)
    state = model.initSystem()
    import dataclasses
    muscle_set = dataclasses.replace(muscle_set, muscles=tuple(
        dataclasses.replace(m, parameters=dataclasses.replace(m.parameters, fiber_damping=0.0, extra=()))
        for m in muscle_set.muscles))
    compared, worst, residual, velocity = _equilibrium_check(model, state, muscle_set, "degroote2016", trials=40,
                                                             solvable_only=True)
    assert compared >= 8
    assert worst <= 1e-6, worst
    assert residual <= 1e-12, residual
    assert velocity <= 1e-9, velocity


def test_first_order_activation_matches_opensim():
    theirs = osim.MuscleFirstOrderActivationDynamicModel()
    theirs.set_activation_time_constant(0.012)
    theirs.set_deactivation_time_constant(0.045)
    theirs.set_minimum_activation(0.02)
    theirs.finalizeFromProperties()
    vector = hill.muscle_vector("thelen2003", MuscleParameters(1.0, 0.1, 0.2, activation_time_constant=0.012,
                                                               deactivation_time_constant=0.045,
                                                               minimum_activation=0.02))
    for a in np.linspace(0.0, 1.0, 21):
        for u in np.linspace(0.0, 1.0, 21):
            for code in (hill.THELEN, hill.MILLARD):
                assert hill.activation_rate(code, vector, a, u) == pytest.approx(theirs.calcDerivative(a, u),
                                                                                 rel=1e-14, abs=1e-12)


_DEGROOTE_ACTIVATION_SCRIPT = """
import json, opensim as osim
model = osim.Model()
body = osim.Body("block", 1.0, osim.Vec3(0), osim.Inertia(1))
model.addBody(body)
model.addJoint(osim.SliderJoint("slider", model.getGround(), body))
muscle = osim.DeGrooteFregly2016Muscle()
muscle.setName("muscle")
muscle.addNewPathPoint("origin", model.getGround(), osim.Vec3(0))
muscle.addNewPathPoint("insertion", body, osim.Vec3(0))
model.addForce(muscle)
state = model.initSystem()
rates = []
for a in (0.05, 0.3, 0.7, 1.0):
    for u in (0.0, 0.2, 0.5, 0.9, 1.0):
        muscle.setActivation(state, a)
        controls = model.updControls(state)
        controls.set(0, u)
        model.setControls(state, controls)
        model.realizeAcceleration(state)
        rates.append((a, u, muscle.getStateVariableDerivativeValue(state, "activation")))
print(json.dumps({"tau_a": muscle.get_activation_time_constant(), "tau_d": muscle.get_deactivation_time_constant(),
                  "smoothing": muscle.get_activation_dynamics_smoothing(), "rates": rates}))
"""


def test_degroote_activation_matches_opensim():
    """DeGroote's tanh-blended activation rate from OpenSim's state derivative, in a fresh process: OpenSim 4.6 keeps
    the time constants in function-static variables set by the first DeGroote muscle of a process, so a test that
    converted another model's muscles earlier in the same worker changed the reference (an order-dependent
    failure)."""
    import json
    import subprocess
    import sys
    result = subprocess.run([sys.executable, "-c", _DEGROOTE_ACTIVATION_SCRIPT], capture_output=True, text=True,
                            timeout=120, check=True)
    reference = json.loads(result.stdout.strip().splitlines()[-1])
    parameters = MuscleParameters(1000.0, 0.1, 0.2, activation_time_constant=reference["tau_a"],
                                  deactivation_time_constant=reference["tau_d"],
                                  extra=(("activation_dynamics_smoothing", reference["smoothing"]),))
    vector = hill.muscle_vector("degroote2016", parameters)
    assert len(reference["rates"]) == 20
    for a, u, rate in reference["rates"]:
        assert hill.activation_rate(hill.DEGROOTE, vector, a, u) == pytest.approx(rate, rel=1e-12, abs=1e-12)


def test_all_muscles_in_one_call_match_opensim():
    """`equilibrium_tendon_forces` over the 18 Millard muscles of gait10dof18musc at once (one kernel call)."""
    muscle_set = load_osim_muscles(FOLDER / "gait10dof18musc.osim")
    table = hill.muscle_table(muscle_set.muscles)
    model, state = _opensim_model("gait10dof18musc")
    _random_pose(model, state, np.random.default_rng(21))
    activations = np.linspace(0.05, 0.95, len(muscle_set.muscles))
    for i, muscle in enumerate(muscle_set.muscles):
        model.getMuscles().get(muscle.name).setActivation(state, float(activations[i]))
    model.equilibrateMuscles(state)
    model.realizeDynamics(state)
    lengths = [model.getMuscles().get(m.name).getLength(state) for m in muscle_set.muscles]
    forces = hill.equilibrium_tendon_forces(table, lengths, activations)
    reference = np.array([model.getMuscles().get(m.name).getTendonForce(state) for m in muscle_set.muscles])
    maximum = np.array([m.parameters.max_isometric_force for m in muscle_set.muscles])
    assert np.max(np.abs(forces - reference) / maximum) <= 1e-6
    rates = hill.activation_rates(table, activations, 0.5)
    theirs = osim.MuscleFirstOrderActivationDynamicModel()
    theirs.set_activation_time_constant(0.01)
    theirs.set_deactivation_time_constant(0.04)
    theirs.set_minimum_activation(0.01)
    theirs.finalizeFromProperties()
    assert np.allclose(rates, [theirs.calcDerivative(float(a), 0.5) for a in activations], rtol=1e-14, atol=1e-12)


def test_sphere_wrap_lengths_match_opensim(tmp_path):
    """A muscle from ground over a sphere (ground, offset and rotated) to an arm on a ball joint: OpenSim's
    WrapSphere for every quadrant setting tried, random poses, lengths to 1e-9 m; the constrained quadrants change
    some wrapped lengths (the quadrant logic is exercised)."""
    by_quadrant = {}
    for quadrant in ("all", "+x", "-y", "+z"):
        path = tmp_path / f"sphere_{quadrant}.osim"
        path.write_text(SPHERE_OSIM.replace("QUADRANT", quadrant))
        paths = compile_paths(load_osim_muscles(path))
        model = osim.Model(str(path))
        state = model.initSystem()
        rng = np.random.default_rng(0)
        coordinates = model.getCoordinateSet()
        ours, wrapped = [], 0
        for _ in range(30):
            for i in range(coordinates.getSize()):
                coordinates.get(i).setValue(state, rng.uniform(-1.5, 1.5), False)
            model.realizePosition(state)
            rotations, positions = _transforms(model, state, paths.frames)
            gradient = path_gradients(paths, rotations, positions, _coordinates(model, state, paths.coordinates))
            assert abs(gradient.lengths[0] - model.getMuscles().get(0).getLength(state)) <= 1e-9
            if quadrant == "-y" and gradient.wrap_active[0]:   # R = −dl/dq through the sphere wrap
                q = _coordinates(model, state, paths.coordinates)
                arms = moment_arms(paths, rotations, positions, q,
                                   _frame_jacobians(model, state, paths, paths.coordinates))
                for k, coordinate in enumerate(paths.coordinates):
                    assert abs(arms[0, k] - _opensim_length_derivative(model, state, "wrapper", coordinate)) <= 1e-6
            ours.append(gradient.lengths[0])
            wrapped += int(gradient.wrap_active[0])
        assert wrapped >= 5
        by_quadrant[quadrant] = np.array(ours)
    assert any(np.max(np.abs(by_quadrant[q] - by_quadrant["all"])) > 1e-4 for q in ("+x", "-y", "+z"))


@pytest.mark.parametrize("origin, insertion", [("0.05 0.005 0.08", "0.07 0.0 -0.05"),
                                               ("0.06 0.02 0.05", "0.045 0.01 -0.02")])
def test_torus_wrap_lengths_and_moment_arms_match_opensim(tmp_path, origin, insertion):
    """A muscle from ground through a torus (ground, offset and rotated; tube 15 mm, centre circle 50 mm) to an arm
    on a ball joint: OpenSim 4.6's WrapTorus (lmdif's closest point on the centre circle, a 10-km cylinder there)
    over random poses, wrapped and not, quadrants all, +x, −y; lengths to 1e-9 m (round-off observed: the search is
    lmdif_C step for step); R = −dl/dq against central differences of OpenSim's lengths (1e-6 m; ≈ 1e-10
    observed); the quadrant changes some lengths (its logic is exercised); the same through `load_model` and
    `muscles.lengths`/`moment_arms` on the file."""
    by_quadrant = {}
    for quadrant in ("all", "+x", "-y"):
        path = tmp_path / f"torus_{quadrant}.osim"
        path.write_text(TORUS_OSIM.replace("QUADRANT", quadrant).replace("ORIGIN", origin)
                        .replace("INSERTION", insertion))
        paths = compile_paths(load_osim_muscles(path))
        model = osim.Model(str(path))
        state = model.initSystem()
        rng = np.random.default_rng(0)
        coordinates = model.getCoordinateSet()
        ours, wrapped, worst_length, worst_arm = [], 0, 0.0, 0.0
        for trial in range(30):
            for i in range(coordinates.getSize()):
                coordinates.get(i).setValue(state, rng.uniform(-2.5, 2.5), False)
            model.realizePosition(state)
            rotations, positions = _transforms(model, state, paths.frames)
            q = _coordinates(model, state, paths.coordinates)
            gradient = path_gradients(paths, rotations, positions, q)
            worst_length = max(worst_length, abs(gradient.lengths[0] - model.getMuscles().get(0).getLength(state)))
            if trial % 3 == 0:
                arms = moment_arms(paths, rotations, positions, q,
                                   _frame_jacobians(model, state, paths, paths.coordinates))
                for k, coordinate in enumerate(paths.coordinates):
                    worst_arm = max(worst_arm, abs(arms[0, k] - _opensim_length_derivative(
                        model, state, "through_ring", coordinate)))
            ours.append(gradient.lengths[0])
            wrapped += int(gradient.wrap_active[0])
        print(quadrant, origin, insertion, "length", worst_length, "moment arm", worst_arm, "wrapped", wrapped)
        assert worst_length <= 1e-9
        assert worst_arm <= 1e-6
        if quadrant == "all":
            assert 3 <= wrapped <= 27   # wrapped and straight poses both compared
        by_quadrant[quadrant] = np.array(ours)
    assert any(np.max(np.abs(by_quadrant[q] - by_quadrant["all"])) > 1e-4 for q in ("+x", "-y"))
    # the public API on the model loaded from the same file (the torus carried as a <muscle>'s <wrap>)
    import biobullet
    import biobullet.muscles as muscles
    ours_model = biobullet.load_model(path)
    rng = np.random.default_rng(3)
    for _ in range(5):
        for i in range(coordinates.getSize()):
            coordinates.get(i).setValue(state, rng.uniform(-2.5, 2.5), False)
        model.realizePosition(state)
        q = np.array([coordinates.get(name).getValue(state) for name in ours_model.coordinate_names])
        assert abs(muscles.lengths(ours_model, q)[0] - model.getMuscles().get(0).getLength(state)) <= 1e-9
        arms = muscles.moment_arms(ours_model, q)
        for j, coordinate in enumerate(ours_model.coordinate_names):
            assert abs(arms[0, j] - _opensim_length_derivative(model, state, "through_ring", coordinate)) <= 1e-6


@pytest.mark.parametrize("order", ["torus first", "sphere first"])
def test_torus_and_a_sphere_on_one_path_match_opensim(tmp_path, order):
    """The torus path with a sphere as a second wrap, in either file order: several wraps, so OpenSim's passes,
    its stale wrap points and the torus's cylinder sliding its tangent points along the tube (_make_spiral_path);
    lengths to 1e-9 m (≈ 1e-15 observed) over random poses, both wraps active at once in some of them."""
    torus = '<PathWrap name="w"><wrap_object>ring</wrap_object><range>-1 -1</range></PathWrap>'
    sphere = '<PathWrap name="w2"><wrap_object>ball</wrap_object><range>-1 -1</range></PathWrap>'
    text = (TORUS_OSIM.replace("</WrapTorus>", '</WrapTorus><WrapSphere name="ball"><translation>0.03 0.0 -0.06'
                               '</translation><radius>0.02</radius></WrapSphere>')
            .replace(torus, torus + sphere if order == "torus first" else sphere + torus)
            .replace("QUADRANT", "all").replace("ORIGIN", "0.06 0.02 0.05").replace("INSERTION", "0.045 0.01 -0.02"))
    path = tmp_path / "torus_sphere.osim"
    path.write_text(text)
    paths = compile_paths(load_osim_muscles(path))
    model = osim.Model(str(path))
    state = model.initSystem()
    rng = np.random.default_rng(0)
    coordinates = model.getCoordinateSet()
    worst, both = 0.0, 0
    for _ in range(30):
        for i in range(coordinates.getSize()):
            coordinates.get(i).setValue(state, rng.uniform(-2.5, 2.5), False)
        model.realizePosition(state)
        rotations, positions = _transforms(model, state, paths.frames)
        result = path_gradients(paths, rotations, positions, _coordinates(model, state, paths.coordinates),
                                no_directions(len(paths.frames), len(paths.coordinates)))
        worst = max(worst, abs(result.lengths[0] - model.getMuscles().get(0).getLength(state)))
        both += int(result.wrap_active.all())
    print(order, "worst", worst, "both wraps active in", both)
    assert worst <= 1e-9
    assert both >= 3


def test_several_wraps_openSim_cache_and_the_algorithm_as_written():
    """arm26's TRIlong wraps over three surfaces. OpenSim 4.6 reads a wrap point's ground location as it was when
    first read during the path computation (PathWrapPoint::setLocation does not invalidate Point's cache), so when
    two or more of them wrap at once its length mixes earlier passes' tangent points with later arcs. With
    `opensim_wrap_cache` (the default) we reproduce that to round-off; the algorithm as written (each wrap point
    where it is) differs from it by millimetres in such poses, and agrees where at most one wrap is active."""
    import dataclasses
    muscle_set = load_osim_muscles(FOLDER / "arm26.osim")
    muscle_set = dataclasses.replace(muscle_set, muscles=tuple(m for m in muscle_set.muscles if m.name == "TRIlong"))
    as_opensim, as_written = compile_paths(muscle_set), compile_paths(muscle_set, opensim_wrap_cache=False)
    model, state = _opensim_model("arm26")
    rng = np.random.default_rng(2)
    worst_cache, worst_single, largest_multi, multi = 0.0, 0.0, 0.0, 0
    for _ in range(40):
        _random_pose(model, state, rng)
        rotations, positions = _transforms(model, state, as_opensim.frames)
        q = _coordinates(model, state, as_opensim.coordinates)
        reference = model.getMuscles().get("TRIlong").getLength(state)
        cached = path_gradients(as_opensim, rotations, positions, q)
        written = path_gradients(as_written, rotations, positions, q)
        worst_cache = max(worst_cache, abs(cached.lengths[0] - reference))
        if np.sum(written.wrap_active) >= 2:
            multi += 1
            largest_multi = max(largest_multi, abs(written.lengths[0] - reference))
        else:
            worst_single = max(worst_single, abs(written.lengths[0] - reference))
    print("TRIlong vs OpenSim: with its cache", worst_cache, "as written, one wrap", worst_single,
          "as written, several wraps", largest_multi, "in", multi, "poses")
    assert worst_cache <= 1e-9
    assert worst_single <= 1e-9
    assert multi >= 3 and largest_multi > 1e-4   # the difference is real, and shown in docs/muscles.md
