"""hunt11 — OpenSim 4.6 muscles at states its own tests rarely reach, against its Manager.

A one-DOF tug of war written by OpenSim itself (a 20-kg block on a slider between two muscles of one class, 0.5 m
either side, no gravity), loaded by `load_model` and run by `simulate` (rtol 1e-11) and by OpenSim's Manager
(accuracy 1e-10) under constant or stepped excitations. The gap of the base case is the two integrators' error
(observed ≤ 6e-11 m, fiber lengths ≤ 7e-11 m, activations ≤ 3e-14); bounds 1e-8 m and 1e-8 m, activations 1e-9.
Each test names the defect it found (the old code's number in its docstring).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

osim = pytest.importorskip("opensim")
osim.Logger.setLevelString("error")

import biobullet  # noqa: E402

CLASSES = {"thelen2003": "Thelen2003Muscle", "millard2012": "Millard2012EquilibriumMuscle",
           "degroote2016": "DeGrooteFregly2016Muscle"}
T_END = 0.3


def tug_of_war(kind: str, folder, properties=None, name="tug", mass: float = 20.0) -> str:
    """The tug of war with two muscles of class `kind` (F₀ 500 N, l₀ 0.2 m, l_s 0.28 m), the OpenSim setters in
    `properties` applied to both, written by OpenSim to `folder`; returns the file's path."""
    model = osim.Model()
    model.setName(name)
    model.setGravity(osim.Vec3(0))
    body = osim.Body("block", mass, osim.Vec3(0), osim.Inertia(0.1))
    model.addBody(body)
    joint = osim.SliderJoint("slider", model.getGround(), osim.Vec3(0), osim.Vec3(0), body, osim.Vec3(0),
                             osim.Vec3(0))
    joint.updCoordinate().setName("x")
    model.addJoint(joint)
    for muscle_name, side in (("left", -1.0), ("right", 1.0)):
        muscle = getattr(osim, CLASSES[kind])()
        muscle.setName(muscle_name)
        muscle.set_max_isometric_force(500.0)
        muscle.set_optimal_fiber_length(0.2)
        muscle.set_tendon_slack_length(0.28)
        for key, value in (properties or {}).items():
            getattr(muscle, "set_" + key)(value)
        muscle.addNewPathPoint("origin", model.getGround(), osim.Vec3(0.5 * side, 0, 0))
        muscle.addNewPathPoint("insertion", body, osim.Vec3(0))
        model.addForce(muscle)
    model.finalizeConnections()
    path = str(folder / f"{name}_{kind}.osim")
    model.printToXML(path)
    return path


def opensim_run(path: str, excitations: dict, activations: dict | None, t_end: float = T_END, x0: float = 0.0):
    """OpenSim's Manager from x = 0 at rest: constant excitations, the activations set (None: the file's
    defaults), fibers equilibrated. Returns ({muscle: (fiber length, activation)} at 0, (x, ẋ) at T_END,
    {muscle: (fiber length, activation)} at T_END), activations as OpenSim's getActivation reports them."""
    model = osim.Model(path)
    controller = osim.PrescribedController()
    muscles = model.getMuscles()
    for k in range(muscles.getSize()):
        controller.addActuator(muscles.get(k))
        value = excitations[muscles.get(k).getName()]   # a number, or an OpenSim Function of time
        controller.prescribeControlForActuator(muscles.get(k).getName(),
                                               osim.Constant(value) if isinstance(value, float) else value)
    model.addController(controller)
    state = model.initSystem()
    model.getCoordinateSet().get(0).setValue(state, x0)
    for k in range(muscles.getSize()):
        if activations is not None:
            muscles.get(k).setActivation(state, activations[muscles.get(k).getName()])
    model.equilibrateMuscles(state)

    def muscle_states(s):
        model.realizeDynamics(s)
        return {muscles.get(k).getName(): (muscles.get(k).getFiberLength(s), muscles.get(k).getActivation(s))
                for k in range(muscles.getSize())}

    start = muscle_states(state)
    manager = osim.Manager(model)
    manager.setIntegratorAccuracy(1e-10)
    state.setTime(0.0)
    manager.initialize(state)
    end = manager.integrate(t_end)
    coordinate = model.getCoordinateSet().get(0)
    return start, (coordinate.getValue(end), coordinate.getSpeedValue(end)), muscle_states(end)


def our_run(path: str, excitations: dict, activations: dict | None, t_end: float = T_END, x0: float = 0.0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = biobullet.load_model(path)
    run = biobullet.simulate(model, t_end, initial=(np.full(1, x0), np.zeros(1)), excitations=excitations,
                             activations=activations, rtol=1e-11, atol=1e-12, t_eval=[0.0, t_end], progress=False)
    assert biobullet.muscles.names(model) == ("left", "right")
    return run


def assert_same_run(path: str, excitations: dict, activations: dict | None, t_end: float = T_END, x0: float = 0.0):
    """Our run and OpenSim's agree (module docstring); `excitations` by name: numbers or OpenSim Functions of time
    (ours evaluates the same Function)."""
    start, (x, speed), final = opensim_run(path, excitations, activations, t_end, x0)
    ours = {name: value if isinstance(value, float) else (lambda t, f=value: f.calcValue(osim.Vector(1, float(t))))
            for name, value in excitations.items()}
    run = our_run(path, ours, activations, t_end, x0)
    names = ("left", "right")
    assert abs(run.q[-1, 0] - x0) > 1e-3   # the block moves (≥ 1.9 mm in every test here)
    assert abs(run.q[-1, 0] - x) <= 1e-8
    assert abs(run.v[-1, 0] - speed) <= 1e-7
    for k, (sample, reference) in enumerate(((0, start), (-1, final))):
        assert np.abs(run.muscles["fiber_length"][sample] - [reference[n][0] for n in names]).max() <= 1e-8, k
        assert np.abs(run.muscles["activation"][sample] - [reference[n][1] for n in names]).max() <= 1e-9, k
    return run


@pytest.mark.parametrize("tendon", ["compliant", "rigid"])
def test_degroote_fiber_damping_acts_as_in_opensim(tendon, tmp_path):
    """OpenSim 4.6's DeGrooteFregly2016Muscle with a compliant tendon (explicit tendon dynamics) takes the fiber
    velocity from f_V's inverse without the damping term (`calcFiberVelocityInfoHelper`): fiber_damping = 0.1
    leaves its run unchanged. Ours solved a f_L f_V(ṽ) + f_PE + β ṽ = f_T/cos α: x 4.2e-3 m and the fiber lengths
    3.9e-3 m off after 0.3 s, the tendon forces 17 N. With a rigid tendon the damping acts in both."""
    properties = {"fiber_damping": 0.1, "ignore_tendon_compliance": tendon == "rigid"}
    assert_same_run(tug_of_war("degroote2016", tmp_path, properties), {"left": 0.8, "right": 0.3},
                    {"left": 0.1, "right": 0.1})


@pytest.mark.parametrize("kind", ["millard2012", "thelen2003"])
def test_activation_below_the_minimum_as_opensim_reports_it(kind, tmp_path):
    """Activations 0 and 1 under excitations 1 and 0 (a_min = 0.01). Millard's setActivation stores 0 as a_min:
    ours started at 0, the fibers then 7.2e-6 m and x 8.2e-6 m off after 0.3 s. Under an excitation below a_min the
    state sinks below a_min in both (OpenSim's first-order model clamps only the activation it reads), and OpenSim
    reports the activation that acts (getActivation: clamped to [a_min, 1]); ours reported the state: −0.034
    (Millard) and −0.018 (Thelen) after 0.6 s where OpenSim reports 0.01 (the run's states agree to 1e-11)."""
    assert_same_run(tug_of_war(kind, tmp_path), {"left": 1.0, "right": 0.0}, {"left": 0.0, "right": 1.0})


@pytest.mark.parametrize("kind", sorted(CLASSES))
@pytest.mark.parametrize("default", [None, 0.3])
def test_initial_activations_are_the_files_defaults(kind, default, tmp_path):
    """A run without `activations` starts, as OpenSim's initSystem does, at each muscle's `default_activation`, or
    its class's default (DeGroote 0.5, Thelen and Millard 0.05). Ours started every muscle at 0.05: with
    default_activation 0.3 x was 1.8e-4 m (Thelen) off after 0.3 s; a DeGroote file without it 1.2e-5 m."""
    properties = {} if default is None else {"default_activation": default}
    path = tug_of_war(kind, tmp_path, properties)
    start, _, _ = opensim_run(path, {"left": 0.8, "right": 0.3}, None)
    expected = default if default is not None else (0.5 if kind == "degroote2016" else 0.05)
    assert start["left"][1] == pytest.approx(expected, abs=1e-15)
    assert_same_run(path, {"left": 0.8, "right": 0.3}, None)


@pytest.mark.parametrize("inner, match", [
    ('<parameter name="default_activation" value="1.5"/>', r"<muscle name=\"m\">.*default_activation.*at most 1"),
    ('<wrap type="sphere" link="b" radius="0.01" range="1 3"/>',
     r"<muscle name=\"m\"> <wrap>.*range.*last point 3 beyond the path's 2 points")])
def test_a_bad_muscle_value_in_a_urdf_is_named(inner, match, tmp_path):
    """A `<muscle>` with default_activation 1.5, or a wrap over points 1 … 3 of a two-point path (OpenSim fails
    there), is refused naming the file, the muscle element and the attribute (ours started the run at 1.5, and
    took points 1 … 2)."""
    from biobullet.core.errors import ModelError
    urdf = tmp_path / "bad.urdf"
    urdf.write_text(f"""<robot name="r"><link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/>
      </inertial></link><link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/></inertial>
      </link><joint name="j" type="prismatic"><parent link="a"/><child link="b"/><axis xyz="1 0 0"/>
      <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <biobullet><muscle name="m" max_isometric_force="100" optimal_fiber_length="0.1" tendon_slack_length="0.2">
        {inner}
        <point link="a" xyz="-0.5 0 0"/><point link="b" xyz="0 0 0"/></muscle></biobullet></robot>""")
    with pytest.raises(ModelError, match=r"bad\.urdf.*" + match):
        biobullet.muscles.names(biobullet.load_model(urdf))


ARM26 = biobullet.__file__.replace("__init__.py", "data/opensim/arm26.osim")


def arm26_with_wrap_ranges(folder, ranges) -> str:
    """arm26.osim with its PathWraps' `range`s "-1 -1" replaced, in file order (TRIlong's three, TRIlat, TRImed,
    BRA; BIClong's is "2 3")."""
    import re
    ranges = iter(ranges)
    text = re.sub(r"<range>-1 -1</range>", lambda match: f"<range>{next(ranges)}</range>", open(ARM26).read())
    path = folder / "arm26_wrap_ranges.osim"
    path.write_text(text)
    return str(path)


def test_wrap_ranges_select_the_path_points_as_in_opensim(tmp_path):
    """PathWrap ranges (1-based first and last point, −1 the path's end, a first point beyond the path: no wrap)
    over TRIlong's three wraps, TRIlat, TRImed and BRA (BIClong's 2 … 3 as filed): lengths equal OpenSim's
    `getLength` to 1e-9 m in 20 random poses (observed ≈ 3e-16 m: the same formulas)."""
    import biobullet.muscles as muscles
    path = arm26_with_wrap_ranges(tmp_path, ["2 4", "1 2", "3 -1", "1 3", "2 3", "3 -1"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = biobullet.load_model(path)
    theirs = osim.Model(path)
    state = theirs.initSystem()
    names = muscles.names(model)
    assert len(names) == 6
    coordinates = theirs.getCoordinateSet()
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = np.array([rng.uniform(coordinates.get(n).getRangeMin(), coordinates.get(n).getRangeMax())
                      for n in model.coordinate_names])
        for name, value in zip(model.coordinate_names, q):
            coordinates.get(name).setValue(state, value, False)
        theirs.realizePosition(state)
        expected = [theirs.getMuscles().get(n).getLength(state) for n in names]
        assert np.abs(muscles.lengths(model, q) - expected).max() <= 1e-9


def test_a_wrap_range_beyond_the_path_is_named(tmp_path):
    """BRA (two points) wrapping over points −1 … 3: OpenSim 4.6 fails in getLength (an array index out of
    bounds); ours took points 1 … 2 silently. Now load_osim_muscles names the file, the PathWrap and `range`, and
    load_model reports the muscles as not imported."""
    path = arm26_with_wrap_ranges(tmp_path, ["-1 -1"] * 5 + ["-1 3"])
    theirs = osim.Model(path)
    state = theirs.initSystem()
    with pytest.raises(RuntimeError, match="out of bounds"):
        theirs.getMuscles().get("BRA").getLength(state)
    assert_muscles_refused(path, r"arm26_wrap_ranges\.osim.*<PathWrap name=\"pathwrap\">.*range.*last point 3 "
                           r"beyond the path's 2 points", "muscles not imported.*range")


def assert_muscles_refused(path: str, error: str, warning: str) -> None:
    """load_osim_muscles raises a ModelError matching `error`; load_model warns (`warning`) and imports no muscle."""
    from biobullet.core.errors import ModelError
    from biobullet.muscles.osim import load_osim_muscles
    with pytest.raises(ModelError, match=error):
        load_osim_muscles(path)
    with pytest.warns(UserWarning, match=warning):
        model = biobullet.load_model(path)
    assert biobullet.muscles.names(model) == ()


def with_properties(path: str, kind: str, properties: dict) -> str:
    """The file at `path` with both muscles' `properties` written into its XML (OpenSim's setters would check or
    change them)."""
    import xml.etree.ElementTree as ET
    tree = ET.parse(path)
    for muscle in tree.getroot().iter(CLASSES[kind]):
        for key, value in properties.items():   # key: a property, or "Curve/property"
            element = muscle.find(key)
            if element is None:
                parent, _, tag = key.rpartition("/")
                element = ET.SubElement(muscle.find(parent) if parent else muscle, tag)
            element.text = repr(value)
    tree.write(path)
    return path


def test_millard_damping_below_opensims_threshold_is_no_damping(tmp_path):
    """Millard2012EquilibriumMuscle takes a fiber_damping below 0.001 as 0 (its undamped model,
    MIN_NONZERO_DAMPING_COEFFICIENT); ours damped with 9e-4: x 3.8e-4 m off after 0.3 s."""
    path = with_properties(tug_of_war("millard2012", tmp_path), "millard2012", {"fiber_damping": 0.0009})
    assert_same_run(path, {"left": 1.0, "right": 0.05}, {"left": 0.02, "right": 0.02})


def test_millard_curves_are_fitted_to_the_damped_model_as_in_opensim(tmp_path):
    """A damped Millard muscle (fiber_damping 0.1) whose file gives the undamped model's curve ends (f_L's
    minimum_value 0.1, f_V's slopes at ±v_max 0.125 and 0.075): OpenSim 4.6 sets them to 0 when it loads the
    file; ours used the file's: x 1.8e-4 m off after 0.3 s. (The undamped model's adjustments: the test above,
    whose file has the damped model's curves.)"""
    path = with_properties(tug_of_war("millard2012", tmp_path), "millard2012", {
        "ActiveForceLengthCurve/minimum_value": 0.1, "ForceVelocityCurve/concentric_slope_at_vmax": 0.125,
        "ForceVelocityCurve/eccentric_slope_at_vmax": 0.075})
    assert_same_run(path, {"left": 1.0, "right": 0.05}, {"left": 0.02, "right": 0.02})


@pytest.mark.parametrize("kind, properties, attribute", [
    ("thelen2003", {"Flen": 1.0}, "Flen"),
    ("thelen2003", {"fv_linear_extrap_threshold": 0.5}, "fv_linear_extrap_threshold"),
    ("thelen2003", {"KshapeActive": 0.0}, "KshapeActive"),
    ("thelen2003", {"minimum_activation": 0.001}, "minimum_activation"),
    ("degroote2016", {"active_force_width_scale": 0.5}, "active_force_width_scale"),
    ("degroote2016", {"tendon_strain_at_one_norm_force": 0.0}, "tendon_strain_at_one_norm_force"),
    ("degroote2016", {"default_activation": 0.0}, "default_activation"),
    ("millard2012", {"fiber_damping": 0.0, "minimum_activation": 0.001}, "minimum_activation"),
    ("thelen2003", {"tendon_slack_length": 0.0}, "tendon_slack_length"),
    ("degroote2016", {"tendon_slack_length": 0.0}, "tendon_slack_length")])
def test_properties_opensim_refuses_are_named(kind, properties, attribute, tmp_path):
    """Curve and activation properties outside what OpenSim 4.6 accepts (its extendFinalizeFromProperties checks;
    OpenSim refuses each file) are refused naming the file, the muscle and the property. Ours loaded them: Flen = 1
    divides by zero in Thelen's force–velocity, a minimum activation of 0.001 lets an undamped fiber velocity blow
    up as a → 0. A compliant tendon of slack length 0 (OpenSim loads it) stopped our run at t = 0 with "a muscle
    force or fiber velocity is not finite"; it is now named at load."""
    from biobullet.core.errors import ModelError
    from biobullet.muscles.osim import load_osim_muscles
    path = with_properties(tug_of_war(kind, tmp_path), kind, properties)
    if attribute == "tendon_slack_length":   # OpenSim loads it; its normalized tendon length is then l_T / 0
        with pytest.raises(ModelError, match="must be positive"):
            load_osim_muscles(path)
        return
    with pytest.raises(RuntimeError):
        osim.Model(path).initSystem()
    with pytest.raises(ModelError, match=rf"tug_{kind}\.osim.*name=\"left\".*'{attribute}'"):
        load_osim_muscles(path)


def test_degroote_implicit_tendon_dynamics_is_named(tmp_path):
    """tendon_compliance_dynamics_mode = implicit: OpenSim's Manager holds the normalized tendon force's derivative
    at its discrete variable (0), so the tug of war, started in equilibrium, stays at rest (x = 0 after 0.3 s);
    ours ran the explicit dynamics (x = −0.087 m). Now the file, the muscle and the property are named (the
    importer reports its muscles as not imported)."""
    path = tug_of_war("degroote2016", tmp_path, {"tendon_compliance_dynamics_mode": "implicit"})
    _, (x, speed), _ = opensim_run(path, {"left": 0.8, "right": 0.3}, {"left": 0.1, "right": 0.1})
    assert (x, speed) == (0.0, 0.0)
    assert_muscles_refused(path, r"tug_degroote2016\.osim.*name=\"left\".*tendon_compliance_dynamics_mode"
                           r".*'implicit' is not implemented", "muscles not imported.*tendon_compliance_dynamics_mode")


@pytest.mark.parametrize("properties", [{}, {"fiber_damping": 0.0}, {"ignore_tendon_compliance": True}],
                         ids=["damped", "undamped", "rigid"])
def test_millard_lengthening_past_the_maximum_velocity(properties, tmp_path):
    """A 0.2-kg block pulled by a fully active muscle against one at its minimum activation: the weak fiber
    lengthens at up to 2.07 v_max. OpenSim's damped Millard solves its fiber velocity by an unbounded Newton
    iteration on f_V continued by its end lines, the undamped one inverts f_V continued so (its inverse curve);
    ours stopped at ṽ = ±1: x 1.2e-3 m (damped) and 2.2e-3 m (undamped) off after 0.1 s (now ≈ 1e-13). The
    rigid tendon (f_V continued by its end lines in both) agreed in x; its activation was reported below a_min."""
    path = tug_of_war("millard2012", tmp_path, properties, mass=0.2)
    assert_same_run(path, {"left": 1.0, "right": 0.0}, {"left": 1.0, "right": 0.01}, t_end=0.1)


@pytest.mark.parametrize("kind", sorted(CLASSES))
def test_full_pennation_and_excitation_steps_match_opensim(kind, tmp_path):
    """Pennation 1.3 rad at optimal length (Thelen and Millard at their maximum, acos 0.1, while the fibers
    shorten) under excitation steps (OpenSim's smooth StepFunction: 0 → 1 over 50–100 ms on one muscle, 0.7 → 0
    at 100 ms on the other, from activations 0.02 and 0.5). Agreed before this probe (a coverage check)."""
    path = tug_of_war(kind, tmp_path, {"pennation_angle_at_optimal": 1.3})
    assert_same_run(path, {"left": osim.StepFunction(0.05, 0.1, 0.0, 1.0), "right": osim.StepFunction(0.1, 0.1001, 0.7,
                                                                                                          0.0)},
                    {"left": 0.02, "right": 0.5}, t_end=0.2)


def pendulum():
    """(OpenSim model, its bar, the pin joint about z whose coordinate is "angle"), no muscle yet."""
    model = osim.Model()
    body = osim.Body("bar", 1.0, osim.Vec3(0), osim.Inertia(0.1))
    model.addBody(body)
    joint = osim.PinJoint("pin", model.getGround(), osim.Vec3(0), osim.Vec3(0), body, osim.Vec3(0), osim.Vec3(0))
    joint.updCoordinate().setName("angle")
    model.addJoint(joint)
    return model, body, joint


def test_a_coordinate_without_range_clamps_moving_points_at_opensims_default(tmp_path):
    """OpenSim 4.6's Coordinate range defaults to [−10, 10] and `printToXML` writes no <range> then (every model
    built by its API and saved). A MovingPathPoint clamps its coordinate to that range; ours took ±π/2: a pendulum's
    muscle 1.4e-2 m (at 2 rad), 8.3e-2 m (3 rad) and 5.5e-2 m (−2.5 rad) too long or short. Lengths now equal
    OpenSim's `getLength` to 1e-12 m."""
    import biobullet.muscles as muscles
    model, body, joint = pendulum()
    muscle = osim.Thelen2003Muscle("muscle", 100.0, 0.1, 0.2, 0.0)
    muscle.addNewPathPoint("origin", model.getGround(), osim.Vec3(0, 0.5, 0))
    point = osim.MovingPathPoint()
    point.setName("moving")
    point.setParentFrame(body)
    point.set_x_location(osim.LinearFunction(0.1, 0.2))
    point.set_y_location(osim.Constant(0.0))
    point.set_z_location(osim.Constant(0.05))
    for set_coordinate in (point.setXCoordinate, point.setYCoordinate, point.setZCoordinate):
        set_coordinate(joint.getCoordinate())
    muscle.updGeometryPath().updPathPointSet().adoptAndAppend(point)
    model.addForce(muscle)
    model.finalizeConnections()
    path = str(tmp_path / "pendulum.osim")
    model.printToXML(path)
    assert "<range>" not in open(path).read()
    theirs = osim.Model(path)
    state = theirs.initSystem()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = biobullet.load_model(path)
    for angle in (0.5, 2.0, 3.0, -2.5, 9.0):
        theirs.getCoordinateSet().get("angle").setValue(state, angle)
        theirs.realizePosition(state)
        assert muscles.lengths(ours, np.array([angle]))[0] == pytest.approx(
            theirs.getMuscles().get(0).getLength(state), abs=1e-12)


def test_wrap_objects_and_conditional_points_at_opensims_defaults(tmp_path):
    """OpenSim writes no property at its default: a WrapSphere of radius 0.05, a WrapEllipsoid of dimensions
    0.05 × 3, a quadrant never set ("Unassigned": all), a ConditionalPathPoint's range (0, 0). Ours required radius,
    dimensions and range, and knew no upper-case quadrant ("X"), so every muscle of such a file was dropped
    ("muscles not imported"). Now the lengths equal OpenSim's `getLength` (1e-12 m) at poses that wrap and, at
    angle 0, with the conditional point on the path."""
    import biobullet.muscles as muscles
    model, body, joint = pendulum()
    sphere = osim.WrapSphere()
    sphere.setName("ball")
    ellipsoid = osim.WrapEllipsoid()
    ellipsoid.setName("egg")
    ellipsoid.set_translation(osim.Vec3(0, 0.3, 0))
    ellipsoid.set_quadrant("Y")
    for surface in (sphere, ellipsoid):
        model.getGround().addWrapObject(surface)
    for name, height, surface in (("over_ball", 0.0, sphere), ("over_egg", 0.3, ellipsoid)):
        muscle = osim.Thelen2003Muscle(name, 100.0, 0.1, 0.2, 0.0)
        muscle.addNewPathPoint("origin", model.getGround(), osim.Vec3(0.2, height + 0.02, 0))
        if name == "over_ball":
            point = osim.ConditionalPathPoint()
            point.setName("sometimes")
            point.setParentFrame(model.getGround())
            point.set_location(osim.Vec3(0.1, 0.2, 0.01))
            point.setCoordinate(joint.getCoordinate())
            muscle.updGeometryPath().updPathPointSet().adoptAndAppend(point)
        muscle.addNewPathPoint("insertion", body, osim.Vec3(-0.2, height + 0.02, 0))
        muscle.updGeometryPath().addPathWrap(surface)
        model.addForce(muscle)
    model.finalizeConnections()
    path = str(tmp_path / "defaults.osim")
    model.printToXML(path)
    text = open(path).read()
    assert "<radius>" not in text and "<dimensions>" not in text and "<ConditionalPathPoint" in text
    assert "<range>" not in text.split("<ConditionalPathPoint")[1].split("</ConditionalPathPoint>")[0]
    theirs = osim.Model(path)
    state = theirs.initSystem()
    ours = biobullet.load_model(path)
    names = muscles.names(ours)
    assert names == ("over_ball", "over_egg")
    for angle in (0.0, 0.1, -0.2, 0.4, 1.0):
        theirs.getCoordinateSet().get("angle").setValue(state, angle)
        theirs.realizePosition(state)
        expected = [theirs.getMuscles().get(n).getLength(state) for n in names]
        assert np.abs(muscles.lengths(ours, np.array([angle])) - expected).max() <= 1e-12, angle
        if angle == 0.1:   # the ball is wrapped: longer than the straight line
            c, s = np.cos(angle), np.sin(angle)
            insertion = np.array([-0.2 * c - 0.02 * s, -0.2 * s + 0.02 * c])
            assert expected[0] > np.hypot(*(insertion - [0.2, 0.02])) + 1e-3


def test_a_function_based_path_is_named_not_implemented(tmp_path):
    """OpenSim 4.5's FunctionBasedPath (the length a function of coordinates): OpenSim 4.6 reads it; ours said "the
    muscle has no <GeometryPath>". Now the refusal names the path class as not implemented."""
    model, _, _ = pendulum()
    muscle = osim.DeGrooteFregly2016Muscle()
    muscle.setName("muscle")
    path = osim.FunctionBasedPath()
    path.setName("path")
    path.appendCoordinatePath("/jointset/pin/angle")
    path.setLengthFunction(osim.LinearFunction(-0.05, 0.3))
    muscle.set_path(path)
    model.addForce(muscle)
    model.finalizeConnections()
    file = str(tmp_path / "function_path.osim")
    model.printToXML(file)
    theirs = osim.Model(file)
    assert theirs.getMuscles().get(0).getLength(theirs.initSystem()) == pytest.approx(0.3)
    assert_muscles_refused(file, r"function_path\.osim.*name=\"muscle\".*'FunctionBasedPath'.*<FunctionBasedPath> "
                           r"paths are not implemented", "muscles not imported.*FunctionBasedPath")


def test_gait10dof18musc_falling_with_its_muscles_excited_matches_opensim():
    """gait10dof18musc (18 Millard muscles over moving and conditional points, a free pelvis under gravity) with
    every muscle at excitation 0.3 from activation 0.1 for 50 ms: the coordinates equal OpenSim's Manager to 1e-8
    (observed 5e-10 rad), the fibers to 1e-9 m (2e-11 m)."""
    from muscle_models import opensim_run as manager_run
    path = ARM26.replace("arm26.osim", "gait10dof18musc.osim")
    _, values, final = manager_run(osim, path, 0.3, 0.1, 0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = biobullet.load_model(path)
    theirs = osim.Model(path)
    state = theirs.initSystem()
    q0 = np.array([theirs.getCoordinateSet().get(n).getValue(state) for n in model.coordinate_names])
    run = biobullet.simulate(model, 0.05, initial=(q0, np.zeros(model.nv)), excitations=0.3, activations=0.1,
                             rtol=1e-10, atol=1e-11, t_eval=[0.0, 0.05], progress=False)
    assert np.abs(run.q[-1] - q0).max() > 0.05   # it falls
    assert np.abs(run.q[-1] - [values[n][0] for n in model.coordinate_names]).max() <= 1e-8
    names = biobullet.muscles.names(model)
    assert np.abs(run.muscles["fiber_length"][-1] - [final[n][0] for n in names]).max() <= 1e-9


@pytest.mark.parametrize("kind, x0", [("thelen2003", -0.216), ("millard2012", -0.2)])
def test_a_fiber_starting_at_its_shortest(kind, x0, tmp_path):
    """The block started 0.2 m (Thelen 0.216 m) towards the fully active muscle (its path 0.3 m against
    l_s = 0.28 m, pennation 0.3 rad): its fiber sits at the model's shortest length (Thelen h / sin α_max, Millard
    the active curve's lower end) with a slack tendon, OpenSim's clamped fiber state, until the other muscle pulls
    the block back. Agreed before this probe (a coverage check). DeGroote has no shortest fiber: OpenSim's
    equilibrateMuscles fails there."""
    path = tug_of_war(kind, tmp_path, {"pennation_angle_at_optimal": 0.3})
    run = assert_same_run(path, {"left": 1.0, "right": 0.2}, {"left": 1.0, "right": 0.2}, t_end=0.2, x0=x0)
    shortest = 0.2 * np.sin(0.3) / np.sqrt(1.0 - 0.1 ** 2)   # h / sin α_max, α_max = acos 0.1
    if kind == "millard2012":
        shortest = max(shortest, (0.47 - 0.0259) * 0.2)   # the active force–length curve's lower end
    assert run.muscles["fiber_length"][0, 0] == pytest.approx(shortest, abs=1e-12)
