"""Defects found by the sixteenth unseen-input probe: the kinematics and dynamics of `.osim` joints, frames and
coordinate couplers against OpenSim 4.6 (the oracle).

Each model is the smallest file that showed the defect. Compared at random states: body placements
(`Body.getTransformInGround`), the mass matrix (`calcM`) and forward dynamics under gravity and random
generalized forces (CoordinateActuators with overridden actuation, `getUDot`); u = q̇ for every joint here.
Bounds: 1e-12 (placements, M relative to its largest entry) and 1e-11 (q̈ relative), a few hundred ulps of
round-off on these well-conditioned two- and three-body chains (measured ≤ 1e-15).
"""
from __future__ import annotations

import numpy as np
import pytest

from opensim_oracle import import_opensim, load_with_warnings, opensim_without_forces, placement_difference

osim = import_opensim()

import biobullet  # noqa: E402
from biobullet.core.errors import ModelError  # noqa: E402
from biobullet.forces.collection import applied_forces  # noqa: E402

SAMPLES = 8
INERTIA = "<mass>1.2</mass><mass_center>0.01 -0.1 0.02</mass_center><inertia>0.03 0.02 0.025 0.001 -0.002 0.003</inertia>"


def _document(joints: str, constraints: str = "") -> str:
    """An OpenSim 4 model of bodies a, b, c (same inertia) with `joints` and `constraints`."""
    bodies = "".join(f'<Body name="{name}">{INERTIA}</Body>' for name in "abc")
    return (f'<?xml version="1.0" encoding="UTF-8" ?>\n<OpenSimDocument Version="40600"><Model name="probe">'
            f'<gravity>0.4 -9.80665 0.3</gravity><Ground name="ground"/>'
            f'<BodySet name="bodyset"><objects>{bodies}</objects></BodySet>'
            f'<JointSet name="jointset"><objects>{joints}</objects></JointSet>'
            f'<ConstraintSet name="constraintset"><objects>{constraints}</objects></ConstraintSet>'
            f"</Model></OpenSimDocument>\n")


def _coordinate(name: str, default: float = 0.0, locked: bool = False) -> str:
    return (f'<Coordinate name="{name}"><default_value>{default}</default_value><range>-1.2 1.2</range>'
            f"<locked>{str(locked).lower()}</locked></Coordinate>")


def _pin(name: str, parent: str, child: str, coordinate: str, translation: str = "0.1 -0.3 0.05") -> str:
    """A PinJoint placed by an offset frame on the parent."""
    return (f'<PinJoint name="{name}"><socket_parent_frame>{name}_offset</socket_parent_frame>'
            f"<socket_child_frame>{child}</socket_child_frame><coordinates>{coordinate}</coordinates>"
            f'<frames><PhysicalOffsetFrame name="{name}_offset"><socket_parent>{parent}</socket_parent>'
            f"<translation>{translation}</translation><orientation>0.3 -0.2 0.5</orientation>"
            f"</PhysicalOffsetFrame></frames></PinJoint>")


def _axis(name: str, axis: str, coordinates: str = "", function: str = "<Constant><value>0</value></Constant>"
          ) -> str:
    return (f'<TransformAxis name="{name}"><coordinates>{coordinates}</coordinates><axis>{axis}</axis>'
            f"{function}</TransformAxis>")


def _custom(axes: dict[str, str], coordinates: str) -> str:
    """CustomJoint j2 from a to b: `axes` by TransformAxis name, the others constant zero about X, Y, Z."""
    standard = {"rotation1": "1 0 0", "rotation2": "0 1 0", "rotation3": "0 0 1", "translation1": "1 0 0",
                "translation2": "0 1 0", "translation3": "0 0 1"}
    text = "".join(axes.get(name, _axis(name, axis)) for name, axis in standard.items())
    return (f'<CustomJoint name="j2"><socket_parent_frame>/bodyset/a</socket_parent_frame>'
            f"<socket_child_frame>/bodyset/b</socket_child_frame><coordinates>{coordinates}</coordinates>"
            f"<SpatialTransform>{text}</SpatialTransform></CustomJoint>")


def _write(tmp_path, text: str, name: str = "probe.osim") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _load(path: str):
    """biobullet's model, its body map and the warnings the import gave."""
    return load_with_warnings(path)


def _set_coordinates(state, coordinates, actuators, values: dict[str, tuple[float, float, float]]) -> None:
    """OpenSim's state at {coordinate: (value, speed, generalized force)} (the force through its actuator)."""
    for name, (value, rate, force) in values.items():
        coordinates[name].setValue(state, float(value), False)
        coordinates[name].setSpeedValue(state, float(rate))
        actuators[name].overrideActuation(state, True)
        actuators[name].setOverrideActuation(state, float(force))


def _worst_differences(model, links, reference_path: str, forces: bool = False) -> dict[str, float]:
    """Largest placement, mass-matrix and q̈ differences from OpenSim's model at `reference_path` (its
    coordinates named as biobullet's). OpenSim's ForceSet is switched off; `forces`: forces outside it act in
    OpenSim, and biobullet's force elements then act too. Coupled coordinates follow OpenSim's own coupling
    functions (value and derivative: M is compared as Gᵀ M_u G over biobullet's coordinates)."""
    reference, state, actuators = opensim_without_forces(osim, reference_path)   # off: the ForceSet's forces
    coordinates = {c.getName(): c for c in reference.getCoordinateSet()}
    names = model.coordinate_names
    index = {}
    for name in coordinates:   # OpenSim's speed index of each coordinate
        for other in coordinates.values():
            other.setSpeedValue(state, 0.0)
        coordinates[name].setSpeedValue(state, 1.0)
        index[name] = int(np.argmax(np.abs(state.getU().to_numpy())))
        coordinates[name].setSpeedValue(state, 0.0)
    order = [index[n] for n in names]
    couplers = [osim.CoordinateCouplerConstraint.safeDownCast(c) for c in reference.getComponentsList()
                if c.getConcreteClassName() == "CoordinateCouplerConstraint"]   # the sets' and `<components>`
    rng = np.random.default_rng(16)
    worst = {"placement": 0.0, "mass_matrix": 0.0, "qdd": 0.0}
    for _ in range(SAMPLES):
        q, v, tau = rng.uniform(-1.0, 1.0, len(names)), rng.normal(size=len(names)), rng.normal(size=len(names))
        _set_coordinates(state, coordinates, actuators, dict(zip(names, zip(q, v, tau))))
        rows = {name: np.zeros(len(names)) for name in coordinates}   # ∂u/∂v: zero for a held coordinate
        rows.update({name: np.eye(len(names))[k] for k, name in enumerate(names)})
        for coupler in couplers:   # in file order, each on coordinates already set
            inputs = [coupler.getIndependentCoordinateNames().get(i)
                      for i in range(coupler.getIndependentCoordinateNames().getSize())]
            point = osim.Vector(len(inputs), 0.0)
            for i, name in enumerate(inputs):
                point.set(i, coordinates[name].getValue(state))
            dependent, function = coupler.getDependentCoordinateName(), coupler.getFunction()
            scale = osim.PropertyHelper.getValueDouble(coupler.getPropertyByName("scale_factor"))
            coordinates[dependent].setValue(state, scale * function.calcValue(point), False)
            rows[dependent] = sum(scale * function.calcDerivative(osim.StdVectorInt([i]), point) * rows[name]
                                  for i, name in enumerate(inputs))
            coordinates[dependent].setSpeedValue(state, float(rows[dependent] @ v))
        gradient = np.zeros((state.getNU(), len(names)))
        for name, row in rows.items():
            gradient[index[name]] = row
        reference.realizeAcceleration(state)
        x, xd, _, _ = model.joint_state(q, v)
        worst["placement"] = max(worst["placement"], placement_difference(reference, state, model, links, x))
        matrix = osim.Matrix()
        reference.getMatterSubsystem().calcM(state, matrix)
        expected_m = gradient.T @ np.array([[matrix.get(i, j) for j in range(matrix.ncol())]
                                            for i in range(matrix.nrow())]) @ gradient
        worst["mass_matrix"] = max(worst["mass_matrix"],
                                   np.abs(model.mass_matrix(q) - expected_m).max() / np.abs(expected_m).max())
        expected_qdd = state.getUDot().to_numpy()[order]
        applied = model.generalized_forces(applied_forces(model, x, xd), q) if forces else 0.0
        qdd = model.forward_dynamics(q, v, tau + applied)
        worst["qdd"] = max(worst["qdd"], np.abs(qdd - expected_qdd).max() / max(1.0, np.abs(expected_qdd).max()))
    return worst


def _assert_agrees(worst: dict[str, float]) -> None:
    assert worst["placement"] <= 1e-12 and worst["mass_matrix"] <= 1e-12 and worst["qdd"] <= 1e-11, worst


# ---------------------------------------------------------------------------------------------------------------
def test_frames_and_forces_in_the_models_components_list_act_as_in_opensim(tmp_path):
    """OpenSim's `Model.addComponent` writes a PhysicalOffsetFrame or a force into the Model's `<components>`
    list (path "/name"), where OpenSim uses them as if they were in the sets. Before: a joint on such a frame was
    refused ("unknown frame '/mf'"), and a SpringGeneralizedForce there was silently dropped (q̈ −8.17 against
    OpenSim's 116.83 rad/s²), and so was a CoordinateCouplerConstraint there (its dependent coordinate left free).
    Now the frame places the joint, the spring and the coupler are imported (q̈ equal to round-off); a force owned
    by a body (its `<components>`) is reported, not silently dropped."""
    model = osim.Model()
    model.setGravity(osim.Vec3(0.4, -9.80665, 0.3))
    a = osim.Body("a", 1.2, osim.Vec3(0.01, -0.1, 0.02), osim.Inertia(0.03, 0.02, 0.025, 0.001, -0.002, 0.003))
    b = osim.Body("b", 0.8, osim.Vec3(0.02, -0.15, 0.0), osim.Inertia(0.02, 0.01, 0.02))
    model.addBody(a)
    model.addBody(b)
    offset = osim.PhysicalOffsetFrame("mf", model.getGround(), osim.Transform(
        osim.Rotation(0.4, osim.CoordinateAxis(0)), osim.Vec3(0.1, 0.2, 0.3)))
    model.addComponent(offset)   # → the Model's <components>
    nested = osim.PhysicalOffsetFrame("af", a, osim.Transform(osim.Vec3(0.05, -0.3, 0.02)))
    a.addComponent(nested)       # → body a's <components>
    model.addJoint(osim.PinJoint("j1", offset, a))
    model.addJoint(osim.PinJoint("j2", nested, b))
    spring = osim.SpringGeneralizedForce("j1_coord_0")
    spring.setName("spring")
    spring.setStiffness(50.0)
    spring.setRestLength(0.3)
    spring.setViscosity(0.7)
    model.addComponent(spring)
    model.finalizeConnections()
    path = str(tmp_path / "api_components.osim")
    model.printToXML(path)
    ours, links, messages = _load(path)
    assert not messages
    assert ours.coordinate_names == ("j1_coord_0", "j2_coord_0")
    _assert_agrees(_worst_differences(ours, links, path, forces=True))

    # a coupler added by `Model.addComponent` (enforced by OpenSim): before, silently dropped (j2 left free)
    coupled = osim.Model(path)
    coupler = osim.CoordinateCouplerConstraint()
    coupler.setName("coupler")
    independent = osim.ArrayStr()
    independent.append("j1_coord_0")
    coupler.setIndependentCoordinateNames(independent)
    coupler.setDependentCoordinateName("j2_coord_0")
    coupler.setFunction(osim.LinearFunction(0.5, 0.1))
    coupled.addComponent(coupler)
    coupled.finalizeConnections()
    coupled_path = str(tmp_path / "coupled.osim")
    coupled.printToXML(coupled_path)
    ours, links, messages = _load(coupled_path)
    assert ours.coordinate_names == ("j1_coord_0",) and not messages
    _assert_agrees(_worst_differences(ours, links, coupled_path, forces=True))

    # a force owned by a body (not through the sets or the Model's own list): reported by name
    owned = osim.Model(path)
    band = osim.SpringGeneralizedForce("j2_coord_0")
    band.setName("band")
    band.setStiffness(5.0)
    owned.updBodySet().get("b").addComponent(band)
    owned.finalizeConnections()
    owned_path = str(tmp_path / "owned.osim")
    owned.printToXML(owned_path)
    _, _, messages = _load(owned_path)
    assert any("SpringGeneralizedForce band: not imported" in m for m in messages), messages
    with pytest.raises(ModelError, match="band"):
        biobullet.load_model(owned_path, strict=True)


def test_transform_axis_listing_a_coordinate_without_function_is_constant_as_in_opensim(tmp_path):
    """A TransformAxis that lists coordinates but has no function: OpenSim 4.6 gives it Constant 0 (the
    coordinate does not move it). Before: read as the identity 1·q + 0, body b up to 0.92 m from OpenSim's
    placement at the test's states. Now Constant 0, with a warning naming the joint and the axis."""
    axes = {"rotation1": _axis("rotation1", "0 0 1", "q2", ""),   # no function: constant 0 in OpenSim
            "rotation2": _axis("rotation2", "0 1 0", "q2", "<LinearFunction><coefficients>0.8 0.1</coefficients>"
                               "</LinearFunction>"),
            "translation1": _axis("translation1", "1 0 0", "q3", ""),
            "translation2": _axis("translation2", "0 1 0", "q3", "<LinearFunction><coefficients>1 0</coefficients>"
                                  "</LinearFunction>"),
            "rotation3": _axis("rotation3", "1 0 0")}
    joints = _pin("j1", "/ground", "/bodyset/a", _coordinate("q1")) + _custom(
        axes, _coordinate("q2") + _coordinate("q3"))
    path = _write(tmp_path, _document(joints).replace('<Body name="c">' + INERTIA + "</Body>", ""))
    model, links, messages = _load(path)
    _assert_agrees(_worst_differences(model, links, path))
    assert sum("has no function; OpenSim makes it Constant 0" in m and "/jointset/j2" in m for m in messages) == 2


@pytest.mark.parametrize("axes", [
    {"rotation3": _axis("rotation3", "1 0 0")},                                  # rotation1 ∥ rotation3
    {"rotation2": _axis("rotation2", "0 0.001 0"), "rotation3": _axis("rotation3", "0 0 0.001")},   # too short
    {"translation2": _axis("translation2", "2 1e-6 0", "q2", "<LinearFunction><coefficients>1 0</coefficients>"
                           "</LinearFunction>")},                               # translation1 ∥ translation2
], ids=["parallel_rotations", "short_axes", "parallel_translations"])
def test_collinear_custom_joint_axes_are_refused_as_opensim_refuses_them(tmp_path, axes):
    """OpenSim 4.6 refuses a CustomJoint whose rotation (or translation) axes, as written, have |a × b| < 1e-5.
    Before: biobullet loaded such files (normalizing the axes). Now the same refusal, naming the joint."""
    joints = _pin("j1", "/ground", "/bodyset/a", _coordinate("q1")) + _custom(
        {"rotation1": _axis("rotation1", "1 0 0", "q2", "<LinearFunction><coefficients>1 0</coefficients>"
                            "</LinearFunction>"), **axes}, _coordinate("q2"))
    path = _write(tmp_path, _document(joints))
    with pytest.raises(RuntimeError, match="collinear axes"):
        osim.Model(path)
    with pytest.raises(ModelError, match=r'CustomJoint name="j2".*collinear.*OpenSim 4.6 refuses'):
        biobullet.load_model(path)


def test_constant_coupling_function_holds_the_dependent_coordinate(tmp_path):
    """A CoordinateCouplerConstraint with a Constant function (q3 = 0.25 whatever q1). Before: an internal
    AssertionError. Now q3 is held at 0.25 — the model equals OpenSim's with q3 locked there (placements, M, q̈ to
    round-off) — and a warning says what OpenSim 4.6 itself does with this file, checked here: it holds the
    independent coordinate q1 at 0.25 (its position error q1 − 0.25, q̈1 = 0) and leaves q3 free."""
    joints = (_pin("j1", "/ground", "/bodyset/a", _coordinate("q1"))
              + _pin("j2", "/bodyset/a", "/bodyset/b", _coordinate("q2"), "0.0 -0.25 0.1")
              + _pin("j3", "/bodyset/b", "/bodyset/c", _coordinate("q3", 0.25), "0.05 -0.2 0.0"))
    coupler = ("<CoordinateCouplerConstraint name='cc'><coupled_coordinates_function><Constant><value>0.25</value>"
               "</Constant></coupled_coordinates_function><independent_coordinate_names>q1"
               "</independent_coordinate_names><dependent_coordinate_name>q3</dependent_coordinate_name>"
               "</CoordinateCouplerConstraint>")
    path = _write(tmp_path, _document(joints, coupler))
    model, links, messages = _load(path)
    assert model.coordinate_names == ("q1", "q2")
    assert any("Constant function holds q3 at 0.25" in m and "OpenSim 4.6 holds the independent q1" in m
               for m in messages), messages
    locked = _write(tmp_path, _document(joints.replace(_coordinate("q3", 0.25), _coordinate("q3", 0.25, True))),
                    "locked.osim")
    _assert_agrees(_worst_differences(model, links, locked))

    # what OpenSim 4.6 does with the coupler: the constraint falls on q1
    reference, state, _ = opensim_without_forces(osim, path, actuators=False)
    q1 = reference.getCoordinateSet().get("q1")
    q1.setValue(state, 0.6, False)
    q1.setSpeedValue(state, 0.9)
    reference.realizeAcceleration(state)
    assert abs(abs(state.getQErr().to_numpy()[0]) - 0.35) < 1e-12
    assert abs(state.getUDot().to_numpy()[0]) < 1e-12


def test_coordinate_prescribed_by_a_constant_is_held_as_in_opensim(tmp_path):
    """A coordinate prescribed by a Constant: OpenSim holds it at that value (q̇ = q̈ = 0), whatever its default.
    Before: reported and left free at its default — the initial pose 0.097 m off OpenSim's (body c) and q̈ there
    (−8.94, −13.20, 16.61) against OpenSim's (−18.26, 0, 5.48) rad/s². Now held (a locked
    coordinate at the constant): placements, M and q̈ equal OpenSim's on the prescribed file itself. A spline of
    time is still reported."""
    prescribed = ("<prescribed>true</prescribed><prescribed_function><Constant><value>0.7</value></Constant>"
                  "</prescribed_function>")
    held = _coordinate("c", 0.1).replace("</Coordinate>", prescribed + "</Coordinate>")
    joints = (_pin("j1", "/ground", "/bodyset/a", _coordinate("q1"))
              + _pin("j2", "/bodyset/a", "/bodyset/b", held, "0.0 -0.25 0.1")
              + _pin("j3", "/bodyset/b", "/bodyset/c", _coordinate("q3"), "0.05 -0.2 0.0"))
    path = _write(tmp_path, _document(joints))
    model, links, messages = _load(path)
    assert model.coordinate_names == ("q1", "q3") and not messages
    _assert_agrees(_worst_differences(model, links, path))
    moving = _write(tmp_path, _document(joints.replace("<Constant><value>0.7</value></Constant>",
                                                       "<SimmSpline><x>0 1 2</x><y>0.1 0.3 0.2</y></SimmSpline>")),
                    "moving.osim")
    _, _, messages = _load(moving)
    assert any("Coordinate c: prescribed motion not imported" in m for m in messages), messages


def test_linear_coupler_of_a_locked_and_a_free_coordinate_matches_opensim(tmp_path):
    """q3 = 0.5 q1 − 0.3 q2 + 0.1 with q1 locked at 0.3: OpenSim couples q3 to q2 with q1 held. Before: refused
    ("a coupling of locked and free coordinates is not supported"). Now the locked input folds into the
    intercept: placements, M and q̈ equal OpenSim's."""
    joints = (_pin("j1", "/ground", "/bodyset/a", _coordinate("q1", 0.3, True))
              + _pin("j2", "/bodyset/a", "/bodyset/b", _coordinate("q2"), "0.0 -0.25 0.1")
              + _pin("j3", "/bodyset/b", "/bodyset/c", _coordinate("q3"), "0.05 -0.2 0.0"))
    coupler = ("<CoordinateCouplerConstraint name='cc'><coupled_coordinates_function><LinearFunction><coefficients>"
               "0.5 -0.3 0.1</coefficients></LinearFunction></coupled_coordinates_function>"
               "<independent_coordinate_names>q1 q2</independent_coordinate_names>"
               "<dependent_coordinate_name>q3</dependent_coordinate_name><scale_factor>1.5</scale_factor>"
               "</CoordinateCouplerConstraint>")
    path = _write(tmp_path, _document(joints, coupler))
    model, links, messages = _load(path)
    assert model.coordinate_names == ("q2",) and not messages
    _assert_agrees(_worst_differences(model, links, path))


def test_transform_axis_linear_in_a_locked_and_a_free_coordinate_matches_opensim(tmp_path):
    """A TransformAxis LinearFunction of q2 (free) and q3 (locked at 0.4). Before: refused with an error about
    an element of the translated URDF, not of the file ("<joint_function joint="j2_translation1">: attribute
    'inputs': unknown joint 'q3'"). Now the locked coordinate folds into the intercept: placements, M and q̈
    equal OpenSim's."""
    linear = "<LinearFunction><coefficients>{}</coefficients></LinearFunction>".format
    axes = {"rotation1": _axis("rotation1", "1 0 0", "q2 q3", linear("0.7 -0.4 0.1")),
            "rotation2": _axis("rotation2", "0 1 0", "q2", linear("1 0")),
            "translation1": _axis("translation1", "1 0 0", "q3 q2", linear("0.2 0.1 0.05"))}
    joints = _pin("j1", "/ground", "/bodyset/a", _coordinate("q1")) + _custom(
        axes, _coordinate("q2") + _coordinate("q3", 0.4, True))
    path = _write(tmp_path, _document(joints).replace('<Body name="c">' + INERTIA + "</Body>", ""))
    model, links, messages = _load(path)
    assert model.coordinate_names == ("q1", "q2") and not messages
    _assert_agrees(_worst_differences(model, links, path))


def _offsets(parent: str, child: str) -> str:
    """Offset frames po (on `parent`) and co (on `child`), rotated and shifted."""
    return (f'<frames><PhysicalOffsetFrame name="po"><socket_parent>{parent}</socket_parent><translation>0.1 -0.2 '
            f"0.05</translation><orientation>0.3 -0.4 0.7</orientation></PhysicalOffsetFrame>"
            f'<PhysicalOffsetFrame name="co"><socket_parent>{child}</socket_parent><translation>-0.05 0.1 0.02'
            f"</translation><orientation>0.6 0.1 -0.3</orientation></PhysicalOffsetFrame></frames>")


def test_reversed_joints_match_opensim(tmp_path):
    """Joints whose child is the ground or a body already placed: OpenSim reverses their mobilizers (the parent
    body hangs from the child, X_FM(q) keeps its meaning). Here j1 has parent a and child the ground, a CustomJoint
    with a spline translation, a scaled rotation about a non-orthogonal axis and constant axes, between rotated
    offset frames; j2 (PinJoint) hangs c from a, forward; j3 (GimbalJoint) has parent b and child c, reversed
    again. Before: refused ("the child frame is on the ground (a reversed joint)"). Now the chain runs from M to F
    (X_MF = X_FM⁻¹: the axes in the opposite order about the opposite directions): placements, M and q̈ equal
    OpenSim's."""
    linear = "<LinearFunction><coefficients>{}</coefficients></LinearFunction>".format
    spline = "<SimmSpline><x>-1.5 -0.5 0 0.7 1.5</x><y>0.1 -0.2 0.05 0.3 0.2</y></SimmSpline>"
    transform = "".join([
        _axis("rotation1", "0 0 1", "q1", linear("1 0")), _axis("rotation2", "1 0.2 0", "q2", linear("0.8 0.1")),
        _axis("rotation3", "0 1 0", "", "<Constant><value>0.3</value></Constant>"),
        _axis("translation1", "1 0 0", "q1", spline), _axis("translation2", "0 1 0", "q2", linear("0.2 0.05")),
        _axis("translation3", "0 0 1", "", "<Constant><value>-0.1</value></Constant>")])
    joints = (f'<CustomJoint name="j1"><socket_parent_frame>po</socket_parent_frame><socket_child_frame>co'
              f"</socket_child_frame><coordinates>{_coordinate('q1') + _coordinate('q2')}</coordinates>"
              f"{_offsets('/bodyset/a', '/ground')}<SpatialTransform>{transform}</SpatialTransform></CustomJoint>"
              + _pin("j2", "/bodyset/a", "/bodyset/c", _coordinate("p"))
              + f'<GimbalJoint name="j3"><socket_parent_frame>po</socket_parent_frame><socket_child_frame>co'
              f"</socket_child_frame><coordinates>{''.join(_coordinate(n) for n in ('g1', 'g2', 'g3'))}"
              f"</coordinates>{_offsets('/bodyset/b', '/bodyset/c')}</GimbalJoint>")
    path = _write(tmp_path, _document(joints))
    model, links, messages = _load(path)
    assert model.coordinate_names == ("q1", "q2", "p", "g1", "g2", "g3") and not messages
    _assert_agrees(_worst_differences(model, links, path))


def test_a_loop_of_joints_is_refused_naming_the_joint(tmp_path):
    """Two joints into the same body (OpenSim cuts such a loop with a hidden weld constraint): refused, naming the
    joint that closes it and the body, never loaded as a different tree (a guard for the reversed joints' new
    ordering: main refused this file too, as "the child of two joints")."""
    joints = (_pin("j1", "/ground", "/bodyset/a", _coordinate("q1")) + _pin("j2", "/ground", "/bodyset/b",
                                                                             _coordinate("q2"))
              + _pin("j3", "/bodyset/a", "/bodyset/b", _coordinate("q3")))
    path = _write(tmp_path, _document(joints).replace('<Body name="c">' + INERTIA + "</Body>", ""))
    with pytest.raises(ModelError, match=r'PinJoint name="j3".*closes a loop.*/bodyset/b'):
        biobullet.load_model(path)


def _three_pins(locked: str = "") -> str:
    """PinJoints j1 (q1), j2 (q2), j3 (q3) in a chain ground → a → b → c; `locked` coordinate locked at 0.2."""
    return (_pin("j1", "/ground", "/bodyset/a", _coordinate("q1", 0.2, locked == "q1"))
            + _pin("j2", "/bodyset/a", "/bodyset/b", _coordinate("q2"), "0.0 -0.25 0.1")
            + _pin("j3", "/bodyset/b", "/bodyset/c", _coordinate("q3", 0.2, locked == "q3"), "0.05 -0.2 0.0"))


def _coupler(name: str, dependent: str, independent: str, coefficients: str = "0.5 0.1") -> str:
    return (f"<CoordinateCouplerConstraint name='{name}'><coupled_coordinates_function><LinearFunction><coefficients>"
            f"{coefficients}</coefficients></LinearFunction></coupled_coordinates_function>"
            f"<independent_coordinate_names>{independent}</independent_coordinate_names>"
            f"<dependent_coordinate_name>{dependent}</dependent_coordinate_name></CoordinateCouplerConstraint>")


def test_locked_dependent_coordinate_holds_its_couplers_input_as_in_opensim(tmp_path):
    """q3 = 0.5 q1 + 0.1 with q3 locked at 0.2: OpenSim's coupler then holds q1 at 0.2 (q̈1 = 0). Before: the
    coupler was skipped and q1 left free, silently: at the default pose q̈ = (−16.33, 1.81) rad/s² for (q1, q2)
    where OpenSim's is (0, −21.11). Now q1 is held too:
    placements, M and q̈ equal OpenSim's."""
    path = _write(tmp_path, _document(_three_pins("q3"), _coupler("cc", "q3", "q1")))
    model, links, messages = _load(path)
    assert model.coordinate_names == ("q2",) and not messages
    _assert_agrees(_worst_differences(model, links, path))


def test_couplers_in_a_cycle_are_refused_naming_the_coupler(tmp_path):
    """q3 = f(q1) and q1 = g(q3) (OpenSim solves the pair together). Before: refused by an error about an element
    of the generated URDF (`<joint_function joint="q3">`), not of the file. Now the error names the coupler and
    the cycle."""
    path = _write(tmp_path, _document(_three_pins(), _coupler("c1", "q3", "q1") + _coupler("c2", "q1", "q3")))
    with pytest.raises(ModelError, match=r'CoordinateCouplerConstraint name="c1".*cycle: q3 → q1 → q3'):
        biobullet.load_model(path)


def _gimbal_chain_with_point_constraint(tmp_path, centred: bool, coupler: str) -> str:
    """a on a GimbalJoint at the ground origin, b pinned to a; c on a GimbalJoint at the origin too (`centred`) or
    0.4 m from b's tip, across both the tip's radius and ground y (so c2 moves c's point along that radius: a
    well-conditioned closure); b's tip held by a PointConstraint on the point of c where it is at the default
    pose (the defaults close the loop; c3 = 0.25 is on the coupler c3 = 0.5 b1 + 0.1); `coupler` added (1 DOF
    left). The file's path."""
    joints = _gimbal_joints("0 0 0")
    free = osim.Model(_write(tmp_path, _document(joints), "free.osim"))
    state = free.initSystem()
    tip = free.getBodySet().get("b").findStationLocationInGround(state, osim.Vec3(0, -0.3, 0))
    tip = np.array([tip.get(i) for i in range(3)])
    if not centred:
        across = np.cross([0.0, 1.0, 0.0], tip)
        joints = _gimbal_joints(" ".join(repr(float(v)) for v in tip - 0.4 * across / np.linalg.norm(across)))
        free = osim.Model(_write(tmp_path, _document(joints), "free.osim"))
        state = free.initSystem()
    point = free.getBodySet().get("b").findStationLocationInAnotherFrame(state, osim.Vec3(0, -0.3, 0),
                                                                          free.getBodySet().get("c"))
    constraint = ("<PointConstraint name='pc'><socket_body_1>/bodyset/c</socket_body_1><socket_body_2>/bodyset/b"
                  f"</socket_body_2><location_body_1>{point.get(0)!r} {point.get(1)!r} {point.get(2)!r}"
                  "</location_body_1><location_body_2>0 -0.3 0</location_body_2></PointConstraint>")
    return _write(tmp_path, _document(joints, constraint + coupler), "constrained.osim")


def _gimbal_joints(c_origin: str) -> str:
    """The joints of `_gimbal_chain_with_point_constraint`, c's gimbal at `c_origin` in ground."""
    gimbal = "".join(_coordinate(n, d) for n, d in (("c1", 0.1), ("c2", -0.1), ("c3", 0.25)))
    joints = (f'<GimbalJoint name="j0"><socket_parent_frame>g0</socket_parent_frame><socket_child_frame>/bodyset/c'
              f"</socket_child_frame><coordinates>{gimbal}</coordinates><frames><PhysicalOffsetFrame name=\"g0\">"
              f"<socket_parent>/ground</socket_parent><translation>{c_origin}</translation></PhysicalOffsetFrame>"
              "</frames></GimbalJoint>"
              + '<GimbalJoint name="j1"><socket_parent_frame>/ground</socket_parent_frame><socket_child_frame>pa'
              f"</socket_child_frame><coordinates>{''.join(_coordinate(n, d) for n, d in (('a1', 0.1), ('a2', 0.2), ('a3', -0.1)))}"
              '</coordinates><frames><PhysicalOffsetFrame name="pa"><socket_parent>/bodyset/a</socket_parent>'
              "<translation>0 0.3 0</translation><orientation>0.5 0.4 0.7</orientation></PhysicalOffsetFrame></frames>"
              "</GimbalJoint>"
              + '<PinJoint name="j2"><socket_parent_frame>fa</socket_parent_frame><socket_child_frame>pb'
              f"</socket_child_frame><coordinates>{_coordinate('b1', 0.3)}</coordinates><frames>"
              '<PhysicalOffsetFrame name="fa"><socket_parent>/bodyset/a</socket_parent><translation>0 -0.3 0'
              "</translation><orientation>0.3 0.2 0</orientation></PhysicalOffsetFrame>"
              '<PhysicalOffsetFrame name="pb"><socket_parent>/bodyset/b</socket_parent><translation>0 0.3 0'
              "</translation></PhysicalOffsetFrame></frames></PinJoint>")
    return joints


def test_point_constraint_closed_around_a_coupler_input_matches_opensim(tmp_path):
    """c3 = 0.5 b1 + 0.1 (a coupler on the constrained chain, fed by b1), with a PointConstraint closing the chain.
    The dependent coordinates were taken from the last backwards: b1 first — but the loop resolver needs b1 known
    to compute c3 on the loop's path. Before: refused by an error about the generated `<loop>` ("joint functions
    and loop closures depend on joints that are neither independent nor computed: c3"). Now a coordinate that
    feeds a joint function on a loop's path is never made dependent: the coordinates are (c1, a1, b1) and the
    constrained accelerations equal OpenSim's at consistent states near the default pose (1e-9 relative, the
    bound of test_opensim_constraints). Where only such a coordinate can close the loop (both gimbals at the
    ground origin), the refusal names the constraint and the coordinate."""
    coupler = _coupler("cc", "c3", "b1")
    path = _gimbal_chain_with_point_constraint(tmp_path, False, coupler)
    model = biobullet.load_model(path)
    assert model.coordinate_names == ("c1", "a1", "b1")
    reference = osim.Model(path)
    state = reference.initSystem()
    coordinates = {c.getName(): c for c in reference.getCoordinateSet()}
    rng = np.random.default_rng(16)
    q_default, _ = model.initial_state()
    for _ in range(6):
        q, v = q_default + rng.uniform(-0.05, 0.05, model.nq), rng.normal(size=model.nq)
        x, xd, gradient, gamma = model.joint_state(q, v)
        for name, value, rate in zip(model.joint_names, x, xd):
            if name in coordinates:
                coordinates[name].setValue(state, float(value), False)
                coordinates[name].setSpeedValue(state, float(rate))
        reference.realizeAcceleration(state)
        assert np.abs(state.getQErr().to_numpy()).max() <= 1e-12   # a consistent state for OpenSim too
        expected = np.array([coordinates[n].getAccelerationValue(state) for n in coordinates])
        xdd = gradient @ model.forward_dynamics(q, v, np.zeros(model.nq)) + gamma
        ours = np.array([xdd[model.joint_names.index(n)] for n in coordinates])
        assert np.linalg.norm(ours - expected) <= 1e-9 * np.linalg.norm(expected)

    centred = _gimbal_chain_with_point_constraint(tmp_path, True, coupler)
    with pytest.raises(ModelError, match=r"PointConstraint name=\"pc\".*need one of b1 as a dependent"):
        biobullet.load_model(centred)


SCAPULOTHORACIC = ("<thoracic_ellipsoid_radii_x_y_z>0.07 0.15 0.08</thoracic_ellipsoid_radii_x_y_z>"
                   "<scapula_winging_axis_origin>-0.05 0.02</scapula_winging_axis_origin>"
                   "<scapula_winging_axis_direction>0.4</scapula_winging_axis_direction>")


@pytest.mark.parametrize("kind, names, properties", [
    ("EllipsoidJoint", ("e1", "e2", "e3"), "<radii_x_y_z>0.1 0.2 0.3</radii_x_y_z>"),
    ("ScapulothoracicJoint", ("e1", "e2", "e3", "wing"), SCAPULOTHORACIC),
    # as OpenSim writes it with the winging axis at its defaults (the properties left out)
    ("ScapulothoracicJoint", ("e1", "e2", "e3", "wing"), SCAPULOTHORACIC.split("<scapula")[0]),
], ids=["ellipsoid", "scapulothoracic", "scapulothoracic_defaults"])
def test_ellipsoid_and_scapulothoracic_joints_match_opensim(tmp_path, kind, names, properties):
    """EllipsoidJoint (radii 0.1, 0.2, 0.3 m) and ScapulothoracicJoint (radii 0.07, 0.15, 0.08 m, winging axis
    at 0.4 rad through (−0.05, 0.02)), between rotated offset frames, under a PinJoint. Simbody's Ellipsoid
    mobilizer puts M's origin at p = (a n_x, b n_y, c n_z) in F, n = R_FM ẑ, R_FM = Rx(e1) Ry(e2) Rz(e3) — three
    translations driven by expressions of (e1, e2), then the rotations; the ScapulothoracicJoint is OpenSim's
    Ellipsoid (F turned by Rz(π/2), radii x and y swapped, M turned back) then a pin for the winging. Before:
    refused. Now placements equal OpenSim's; OpenSim's speeds of the ellipsoid are ω_FM in F (u = J q̇, J's
    columns x̂, Rx(e1) ŷ, Rx(e1) Ry(e2) ẑ), so biobullet's M equals Jᵀ M_u J, and with the ellipsoid's speeds
    and forces zero (J̇ q̇ = 0) OpenSim's u̇ equals J q̈ (1e-12 relative)."""
    from biobullet.opensim.document import axis_rotation

    joints = (_pin("j0", "/ground", "/bodyset/a", _coordinate("q0"))
              + f'<{kind} name="j1"><socket_parent_frame>po</socket_parent_frame><socket_child_frame>co'
              f"</socket_child_frame><coordinates>{''.join(_coordinate(n) for n in names)}</coordinates>"
              f"{_offsets('/bodyset/a', '/bodyset/b')}{properties}</{kind}>")
    path = _write(tmp_path, _document(joints).replace('<Body name="c">' + INERTIA + "</Body>", ""))
    model, links, messages = _load(path)
    assert model.coordinate_names == ("q0", *names) and not messages
    reference, state, actuators = opensim_without_forces(osim, path)
    coordinates = {c.getName(): c for c in reference.getCoordinateSet()}
    pinned = [0] + list(range(4, model.nq))   # q0 and the winging: u = q̇
    rng = np.random.default_rng(16)
    for _ in range(SAMPLES):
        q, v, tau = rng.uniform(-1.0, 1.0, model.nq), np.zeros(model.nq), np.zeros(model.nq)
        v[pinned], tau[pinned] = rng.normal(size=len(pinned)), rng.normal(size=len(pinned))
        _set_coordinates(state, coordinates, actuators, dict(zip(model.coordinate_names, zip(q, v, tau))))
        reference.realizeAcceleration(state)
        x = model.joint_configuration(q)
        assert placement_difference(reference, state, model, links, x) <= 1e-12
        jacobian = np.eye(model.nq)
        rx = axis_rotation((1.0, 0.0, 0.0), q[1])
        jacobian[1:4, 1:4] = np.column_stack([(1.0, 0.0, 0.0), rx[:, 1],
                                              (rx @ axis_rotation((0.0, 1.0, 0.0), q[2]))[:, 2]])
        matrix = osim.Matrix()
        reference.getMatterSubsystem().calcM(state, matrix)
        expected_m = jacobian.T @ np.array([[matrix.get(i, j) for j in range(model.nq)]
                                            for i in range(model.nq)]) @ jacobian
        assert np.abs(model.mass_matrix(q) - expected_m).max() <= 1e-12 * np.abs(expected_m).max()
        expected_udot = state.getUDot().to_numpy()
        udot = jacobian @ model.forward_dynamics(q, v, tau)
        assert np.abs(udot - expected_udot).max() <= 1e-12 * max(1.0, np.abs(expected_udot).max())


def test_ellipsoid_joint_with_locked_angles_moves_as_in_opensim(tmp_path):
    """The EllipsoidJoint with its first two angles locked at 0.4 and −0.3 rad (OpenSim holds those Euler angles,
    not components of its speeds: checked by its own run): released from rest under gravity for 0.3 s, OpenSim's
    Manager (accuracy 1e-11) and the reference engine (rtol 1e-11) agree to 1e-9 rad (measured 4e-12: the
    integrators' error)."""
    coordinates = "".join(_coordinate(n, d, locked) for n, d, locked in (("e1", 0.4, True), ("e2", -0.3, True),
                                                                         ("e3", 0.3, False)))
    joints = (_pin("j0", "/ground", "/bodyset/a", _coordinate("q0", 0.3))
              + f'<EllipsoidJoint name="j1"><socket_parent_frame>po</socket_parent_frame><socket_child_frame>co'
              f"</socket_child_frame><coordinates>{coordinates}</coordinates>{_offsets('/bodyset/a', '/bodyset/b')}"
              "<radii_x_y_z>0.1 0.2 0.3</radii_x_y_z></EllipsoidJoint>")
    path = _write(tmp_path, _document(joints).replace('<Body name="c">' + INERTIA + "</Body>", ""))
    model, _, messages = _load(path)
    assert model.coordinate_names == ("q0", "e3") and not messages
    reference = osim.Model(path)
    state = reference.initSystem()
    manager = osim.Manager(reference)
    manager.setIntegratorAccuracy(1e-11)
    state.setTime(0.0)
    manager.initialize(state)
    end = manager.integrate(0.3)
    expected = [reference.getCoordinateSet().get(n).getValue(end) for n in ("q0", "e1", "e2", "e3")]
    assert expected[1:3] == pytest.approx([0.4, -0.3], abs=1e-12)   # OpenSim holds the locked angles
    run = biobullet.simulate(model, 0.3, rtol=1e-11, atol=1e-12, t_eval=[0.0, 0.3], progress=False)
    assert np.abs(run.q[-1] - np.array([expected[0], expected[3]])).max() <= 1e-9


@pytest.mark.parametrize("function", [
    "<Sine><amplitude>0.6</amplitude><omega>3.0</omega><phase>0.4</phase><offset>-0.1</offset></Sine>",
    "<PolynomialFunction><coefficients>0.5 -0.3 0.8 0.2</coefficients></PolynomialFunction>",
    "<MultiplierFunction><function><LinearFunction><coefficients>1.5 -0.2</coefficients></LinearFunction>"
    "</function><scale>0.7</scale></MultiplierFunction>",
], ids=["sine", "polynomial", "scaled_linear"])
def test_coordinate_prescribed_by_a_function_of_time_matches_opensim(tmp_path, function):
    """A coordinate prescribed by f(t) (Sine, PolynomialFunction, a scaled LinearFunction): OpenSim moves it as
    q = f(t). Before: reported and left free (its own dynamics, a different model). Now its joint is driven by an
    `expression` of t: at times 0 … 1.4 s, with the free coordinates at random states, placements equal
    OpenSim's (1e-12) and so do the free coordinates' accelerations (1e-11 relative)."""
    prescribed = f"<prescribed>true</prescribed><prescribed_function>{function}</prescribed_function>"
    joints = (_pin("j1", "/ground", "/bodyset/a", _coordinate("q1"))
              + _pin("j2", "/bodyset/a", "/bodyset/b",
                     _coordinate("c", 0.1).replace("</Coordinate>", prescribed + "</Coordinate>"), "0.0 -0.25 0.1")
              + _pin("j3", "/bodyset/b", "/bodyset/c", _coordinate("q3"), "0.05 -0.2 0.0"))
    path = _write(tmp_path, _document(joints))
    model, links, messages = _load(path)
    assert model.coordinate_names == ("q1", "q3") and not messages
    reference, state, actuators = opensim_without_forces(osim, path)
    coordinates = {c.getName(): c for c in reference.getCoordinateSet()}
    rng = np.random.default_rng(16)
    for time in np.linspace(0.0, 1.4, 8):
        q, v, tau = rng.uniform(-1.0, 1.0, 2), rng.normal(size=2), rng.normal(size=2)
        state.setTime(float(time))
        # OpenSim's prescribed q and u, from its own function (Simbody prescribes them in its integrators, not in
        # realize; its prescribed acceleration f''(t) comes from realize)
        prescribed, at = coordinates["c"].getPrescribedFunction(), osim.Vector(1, float(time))
        coordinates["c"].setValue(state, prescribed.calcValue(at), False)
        coordinates["c"].setSpeedValue(state, prescribed.calcDerivative(osim.StdVectorInt([0]), at))
        _set_coordinates(state, coordinates, actuators, dict(zip(model.coordinate_names, zip(q, v, tau))))
        reference.realizeAcceleration(state)
        x = model.joint_state(q, v, float(time))[0]
        assert placement_difference(reference, state, model, links, x) <= 1e-12
        expected = np.array([coordinates[n].getAccelerationValue(state) for n in model.coordinate_names])
        qdd = model.forward_dynamics(q, v, tau, float(time))
        assert np.abs(qdd - expected).max() <= 1e-11 * max(1.0, np.abs(expected).max())
        assert coordinates["c"].getAccelerationValue(state) == pytest.approx(
            prescribed.calcDerivative(osim.StdVectorInt([0, 0]), at), abs=1e-12)   # prescribed motion acts
