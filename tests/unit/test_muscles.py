"""Muscle paths, Hill kernels and the muscle parsers without OpenSim: exact gradients against central finite
differences, the compiled kernels against their Python twins, the `<muscle>` element round trip, and clear
errors (file, element, attribute) for bad input. The comparisons with OpenSim itself are in
tests/validation/test_muscles_opensim.py."""
from __future__ import annotations

import dataclasses
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from biobullet.core.errors import ModelError
from biobullet.muscles import hill
from biobullet.muscles.element import muscle_elements, parse_muscles
from biobullet.muscles.location import piecewise_linear, polynomial, simm_spline
from biobullet.muscles.osim import load_osim_muscles
from biobullet.muscles.path import (path_gradients_py, compile_paths, gradient_buffers, moment_arms, no_directions,
                                   path_gradients, path_lengths)

#: the library's bundled copy of the shared OpenSim corpus
GAIT = Path(__file__).resolve().parents[2] / "plugin" / "biobullet" / "data" / "opensim" / "gait10dof18musc.osim"
needs_models = pytest.mark.skipif(not GAIT.is_file(), reason="the bundled OpenSim models are missing")


def _rotation(rng) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    return q * np.sign(np.diag(r))


def _state(paths, rng):
    rotations = np.array([_rotation(rng) for _ in paths.frames])
    positions = rng.normal(scale=0.3, size=(len(paths.frames), 3))
    return rotations, positions


TWO_POINT_OSIM = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><Model name="m">
 <Ground name="ground"/>
 <BodySet><objects><Body name="arm"/><Body name="hand"/></objects></BodySet>
 <JointSet><objects><PinJoint name="j"><coordinates><Coordinate name="q"><range>-1 1</range></Coordinate>
 </coordinates></PinJoint></objects></JointSet>
 <ForceSet><objects><Thelen2003Muscle name="m1">
  <GeometryPath><PathPointSet><objects>
   <PathPoint name="a"><socket_parent_frame>/bodyset/arm</socket_parent_frame><location>0 0.1 0</location></PathPoint>
   <ConditionalPathPoint name="b"><socket_parent_frame>/ground</socket_parent_frame><location>0.2 0 0</location>
    <socket_coordinate>/jointset/j/q</socket_coordinate><range>0 0.5</range></ConditionalPathPoint>
   <MovingPathPoint name="c"><socket_parent_frame>/bodyset/hand</socket_parent_frame>
    <socket_x_coordinate>/jointset/j/q</socket_x_coordinate>
    <x_location><MultiplierFunction><function><SimmSpline><x>-1 0 0.5 1</x><y>0 0.1 0.3 0.2</y></SimmSpline>
    </function><scale>2</scale></MultiplierFunction></x_location>
    <y_location><Constant><value>0.05</value></Constant></y_location>
   </MovingPathPoint>
  </objects></PathPointSet></GeometryPath>
  MAXFORCE
 </Thelen2003Muscle></objects></ForceSet>
</Model></OpenSimDocument>
"""


def _write(tmp_path, text, name="model.osim") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_small_osim_model_parses_every_point_kind(tmp_path):
    muscle_set = load_osim_muscles(_write(tmp_path, TWO_POINT_OSIM.replace("MAXFORCE", "")))
    (muscle,) = muscle_set.muscles
    assert [p.kind for p in muscle.points] == ["fixed", "conditional", "moving"]
    assert muscle.parameters.max_isometric_force == 1000.0   # OpenSim's default
    moving = muscle.points[2]
    assert moving.functions[0](0.5) == pytest.approx(0.6)   # 2 × spline through (0.5, 0.3)
    assert moving.functions[1](0.3) == 0.05


@needs_models
def test_path_gradient_matches_finite_differences(tmp_path):
    muscle_set = load_osim_muscles(GAIT)
    paths = compile_paths(muscle_set)
    rng = np.random.default_rng(2)
    rotations, positions = _state(paths, rng)
    q = np.array([0.1, 0.0, 0.9, 0.3, -0.8, 0.1, -0.2, -0.5, 0.2, 0.1])   # away from conditional switches
    gradient = path_gradients(paths, rotations, positions, q)
    h = 1e-6
    # translating a frame moves its points: dl/dt_f = Σ_{points on f} ∂l/∂p
    for f in range(len(paths.frames)):
        for axis in range(3):
            plus, minus = positions.copy(), positions.copy()
            plus[f, axis] += h
            minus[f, axis] -= h
            numeric = (path_lengths(paths, rotations, plus, q) - path_lengths(paths, rotations, minus, q)) / (2 * h)
            exact = gradient.dl_dframes[:, f, axis]   # the force share of frame f (its points and surfaces)
            assert np.max(np.abs(numeric - exact)) <= 1e-8
    # the coordinates act through moving points only (the frames held fixed)
    for c in range(len(q)):
        plus, minus = q.copy(), q.copy()
        plus[c] += h
        minus[c] -= h
        numeric = (path_lengths(paths, rotations, positions, plus) - path_lengths(paths, rotations, positions, minus)) \
            / (2 * h)
        assert np.max(np.abs(numeric - gradient.dl_dcoordinates[:, c])) <= 1e-8
    assert np.any(gradient.dl_dcoordinates != 0.0)


def test_moment_arms_are_minus_the_length_derivative_on_a_rotating_frame(tmp_path):
    """One coordinate spins frame `hand` about z through the origin: R = −dl/dq by differences."""
    muscle_set = load_osim_muscles(_write(tmp_path, TWO_POINT_OSIM.replace("MAXFORCE", "")))
    paths = compile_paths(muscle_set)
    hand = paths.frames.index("hand")

    def placement(q):
        c, s = math.cos(q), math.sin(q)
        rotations = np.array([np.eye(3)] * len(paths.frames))
        rotations[hand] = [[c, -s, 0], [s, c, 0], [0, 0, 1]]
        positions = np.zeros((len(paths.frames), 3))
        positions[hand] = [0.0, 0.3, 0.0]
        return rotations, positions

    jacobians = np.zeros((len(paths.frames), 6, 1))
    jacobians[hand, 5, 0] = 1.0   # ω = ż
    for q in (-0.7, 0.2, 0.8):
        rotations, positions = placement(q)
        arms = moment_arms(paths, rotations, positions, np.array([q]), jacobians)
        h = 1e-6
        numeric = (path_lengths(paths, *placement(q + h), np.array([q + h]))
                   - path_lengths(paths, *placement(q - h), np.array([q - h]))) / (2 * h)
        assert arms[0, 0] == pytest.approx(-numeric[0], abs=1e-8)


@needs_models
def test_compiled_kernels_equal_their_python_twins():
    paths = compile_paths(load_osim_muscles(GAIT))
    rng = np.random.default_rng(4)
    rotations, positions = _state(paths, rng)
    q = rng.uniform(-1.0, 1.0, len(paths.coordinates))
    directions = no_directions(len(paths.frames), len(paths.coordinates))
    compiled = path_gradients(paths, rotations, positions, q, directions)
    twin = gradient_buffers(paths)
    path_gradients_py(paths.arrays, rotations, positions, q, directions, twin)
    assert np.array_equal(twin.lengths, compiled.lengths)
    assert np.array_equal(twin.dl_dpoints, compiled.dl_dpoints)
    assert np.array_equal(twin.dl_dframes, compiled.dl_dframes)
    muscle = load_osim_muscles(GAIT).muscles[0]
    for model in hill.MODEL_CODES:
        code = hill.MODEL_CODES[model]
        curves = hill.curve_parameters(model, muscle.parameters)
        vector = hill.muscle_vector(model, muscle.parameters)
        vector[hill.COMPLIANT] = 1.0
        # equal to round-off: the Python twins call the Python curves, the compiled kernels the compiled ones
        # (LLVM may fuse a multiply-add into one rounding)
        for x in (0.5, 0.9, 1.0, 1.3):
            assert hill.active_force_length(code, curves, x) == pytest.approx(
                hill.active_force_length_py(code, curves, x), rel=1e-14, abs=1e-16)
            assert hill.tendon_force_length(code, curves, 1 + 0.04 * x) == pytest.approx(
                hill.tendon_force_length_py(code, curves, 1 + 0.04 * x), rel=1e-14, abs=1e-16)
        out, twin_out = np.zeros(5), np.zeros(5)
        length = muscle.parameters.optimal_fiber_length + muscle.parameters.tendon_slack_length * 1.02
        hill.equilibrium(code, curves, vector, length, 0.6, out)
        hill._equilibrium_py(code, curves, vector, length, 0.6, twin_out)
        np.testing.assert_allclose(out, twin_out, rtol=1e-12, atol=1e-12)


def test_location_functions():
    f = polynomial([2.0, -1.0, 0.5])   # 2x² − x + 0.5
    assert f(1.5) == pytest.approx(2 * 2.25 - 1.5 + 0.5)
    g = piecewise_linear([0, 1, 3], [0, 2, 3])
    assert g(2.0) == pytest.approx(2.5) and g(4.0) == pytest.approx(3.5) and g(-1) == pytest.approx(-2.0)
    s = simm_spline([0, 1, 2, 3, 4], [0, 1, 8, 27, 64])   # x³: the end conditions reproduce a cubic exactly
    for x in np.linspace(0, 4, 17):
        assert s(x) == pytest.approx(x ** 3, abs=1e-12)
    with pytest.raises(ModelError, match="strictly increasing"):
        simm_spline([0, 1, 1], [0, 1, 2])


@needs_models
def test_muscle_element_round_trip_gives_the_same_paths():
    muscle_set = load_osim_muscles(GAIT)
    block = ET.Element("biobullet")
    block.extend(muscle_elements(muscle_set))
    text = ET.tostring(block, encoding="unicode")
    parsed = parse_muscles("model.urdf", ET.fromstring(text), set(muscle_set.frames),
                           dict(zip(muscle_set.coordinates, map(tuple, muscle_set.coordinate_ranges))))
    assert parsed.names == muscle_set.names
    assert [m.parameters for m in parsed.muscles] == [m.parameters for m in muscle_set.muscles]
    original, again = compile_paths(muscle_set), compile_paths(dataclasses.replace(parsed, frames=muscle_set.frames))
    rng = np.random.default_rng(8)
    rotations, positions = _state(original, rng)
    for _ in range(5):
        q = rng.uniform(-1.5, 1.5, len(original.coordinates))
        assert np.allclose(path_lengths(original, rotations, positions, q),
                           path_lengths(again, rotations, positions, q), rtol=0, atol=1e-15)


def _element(text: str):
    block = ET.fromstring(f"<biobullet>{text}</biobullet>")
    return parse_muscles("model.urdf", block, {"upper", "lower"}, {"elbow": (0.0, 2.0)})


@pytest.mark.parametrize("text, attribute", [
    ('<muscle name="m" model="hill" max_isometric_force="1" optimal_fiber_length="0.1" tendon_slack_length="0.2">'
     '<point link="upper" xyz="0 0 0"/><point link="lower" xyz="0 0 0"/></muscle>', "model"),
    ('<muscle name="m" optimal_fiber_length="0.1" tendon_slack_length="0.2">'
     '<point link="upper" xyz="0 0 0"/><point link="lower" xyz="0 0 0"/></muscle>', "max_isometric_force"),
    ('<muscle name="m" max_isometric_force="1e999" optimal_fiber_length="0.1" tendon_slack_length="0.2">'
     '<point link="upper" xyz="0 0 0"/><point link="lower" xyz="0 0 0"/></muscle>', "max_isometric_force"),
    ('<muscle name="m" max_isometric_force="1" optimal_fiber_length="0.1" tendon_slack_length="0.2">'
     '<point link="femur" xyz="0 0 0"/><point link="lower" xyz="0 0 0"/></muscle>', "link"),
    ('<muscle name="m" max_isometric_force="1" optimal_fiber_length="0.1" tendon_slack_length="0.2">'
     '<point link="upper" xyz="0 0 0" coordinate="elbow" range="1 0"/><point link="lower" xyz="0 0 0"/></muscle>',
     "range"),
    ('<muscle name="m" max_isometric_force="1" optimal_fiber_length="0.1" tendon_slack_length="0.2">'
     '<point link="upper" xyz="0 0 0" coordinate="knee" range="0 1"/><point link="lower" xyz="0 0 0"/></muscle>',
     "coordinate"),
    ('<muscle name="m" max_isometric_force="1" optimal_fiber_length="0.1" tendon_slack_length="0.2">'
     '<point link="upper" xyz="0 0 0"/><moving_point link="lower" coordinate="elbow">'
     '<x type="simm_spline" x="0 1 1" y="0 1 2"/></moving_point></muscle>', "x"),
    ('<muscle name="m" max_isometric_force="1" optimal_fiber_length="0.1" tendon_slack_length="0.2" colour="red">'
     '<point link="upper" xyz="0 0 0"/><point link="lower" xyz="0 0 0"/></muscle>', "colour"),
    ('<muscle name="m" max_isometric_force="1" optimal_fiber_length="0.1" tendon_slack_length="0.2">'
     '<point link="upper" xyz="0 0 0"/><point link="lower" xyz="0 0 0"/>'
     '<wrap type="torus" link="upper" inner_radius="0.05" outer_radius="0.05"/></muscle>', "outer_radius"),
])
def test_bad_muscle_elements_name_file_element_and_attribute(text, attribute):
    with pytest.raises(ModelError) as raised:
        _element(text)
    message = str(raised.value)
    assert "model.urdf" in message and "<muscle" in message and f"'{attribute}'" in message, message


def test_one_point_muscle_is_refused():
    with pytest.raises(ModelError, match="at least 2"):
        _element('<muscle name="m" max_isometric_force="1" optimal_fiber_length="0.1" tendon_slack_length="0.2">'
                 '<point link="upper" xyz="0 0 0"/></muscle>')


def test_bad_osim_files_name_the_file_and_property(tmp_path):
    with pytest.raises(ModelError, match="Version"):
        load_osim_muscles(_write(tmp_path, TWO_POINT_OSIM.replace("40000", "30000").replace("MAXFORCE", "")))
    with pytest.raises(ModelError) as raised:
        load_osim_muscles(_write(tmp_path, TWO_POINT_OSIM.replace(
            "MAXFORCE", "<max_isometric_force>-5</max_isometric_force>")))
    assert "model.osim" in str(raised.value) and "max_isometric_force" in str(raised.value)
    with pytest.raises(ModelError, match="unknown frame"):
        load_osim_muscles(_write(tmp_path, TWO_POINT_OSIM.replace("/bodyset/arm<", "/bodyset/leg<")
                                 .replace("MAXFORCE", "")))
    with pytest.raises(ModelError, match="entities"):
        load_osim_muscles(_write(tmp_path, '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><x/>'))


@needs_models
def test_bad_state_arguments_are_refused():
    paths = compile_paths(load_osim_muscles(GAIT))
    rotations = np.array([np.eye(3)] * len(paths.frames))
    positions = np.zeros((len(paths.frames), 3))
    q = np.zeros(len(paths.coordinates))
    with pytest.raises(ModelError, match="coordinates"):
        path_lengths(paths, rotations, positions, q[:-1])
    with pytest.raises(ModelError, match="body_positions"):
        path_lengths(paths, rotations, positions[:-1], q)
    bad = q.copy()
    bad[0] = np.nan
    with pytest.raises(ModelError, match="non-finite"):
        path_lengths(paths, rotations, positions, bad)


TORUS_MUSCLE = ('<muscle name="m" max_isometric_force="1" optimal_fiber_length="0.1" tendon_slack_length="0.2">'
                '<point link="upper" xyz="START"/><point link="lower" xyz="END"/>'
                '<wrap name="ring" type="torus" link="upper" xyz_body_rotation="0 0 ANGLE" inner_radius="0.015" '
                'outer_radius="0.05" quadrant="QUADRANT"/></muscle>')


def _torus_path(start, end, angle=0.0, quadrant="all"):
    text = (TORUS_MUSCLE.replace("START", " ".join(map(repr, start))).replace("END", " ".join(map(repr, end)))
            .replace("ANGLE", repr(angle)).replace("QUADRANT", quadrant))
    return compile_paths(_element(text))


def test_torus_wrap_against_the_geometry_written_by_hand():
    """A segment through the torus's tube, parallel to its axis and through its centre circle, from h above to h
    below: it wraps the tube (radius r) on the side of the torus's axis (OpenSim's +x cylinder there), length
    2√(h² − r²) + r(π − 2 acos(r/h)), for any turn of the torus about its axis; a segment through the hole's
    centre misses it (straight length), and so does the first with quadrant −x (the torus frame's); `<wrap
    type="torus">` survives the element round trip."""
    r, big, h = 0.015, 0.05, 0.04
    expected = 2 * math.sqrt(h * h - r * r) + r * (math.pi - 2 * math.acos(r / h))
    identity = (np.array([np.eye(3)] * 2), np.zeros((2, 3)))
    for angle in (0.0, 0.7, -2.4):
        c, s = math.cos(angle), math.sin(angle)
        for quadrant in ("all", "+x", "-x"):   # the segment meets the circle at the torus frame's +x
            paths = _torus_path((big * c, big * s, h), (big * c, big * s, -h), angle, quadrant)
            result = path_gradients(paths, *identity, np.zeros(len(paths.coordinates)))
            if quadrant == "-x":
                assert not result.wrap_active[0] and abs(result.lengths[0] - 2 * h) <= 1e-15
                continue
            assert abs(result.lengths[0] - expected) <= 1e-12
            assert result.wrap_active[0]
            for point in result.wrap_points[0]:   # the tangent points on the inner side of the tube
                assert math.hypot(point[0], point[1]) < big - 0.5 * r
        missed = _torus_path((0.001, 0.0, h), (0.01, 0.0, -h), angle)
        assert abs(path_lengths(missed, *identity, np.zeros(len(missed.coordinates)))[0] - math.hypot(0.009, 2 * h)) <= 1e-15
    block = ET.Element("biobullet")
    block.extend(muscle_elements(_element(TORUS_MUSCLE.replace("START", "0 0 0").replace("END", "0 0 1")
                                          .replace("ANGLE", "0").replace("QUADRANT", "-y"))))
    again = _element(ET.tostring(block[0], encoding="unicode")).surfaces[0]
    assert (again.type, again.dimensions, again.quadrant) == ("torus", (0.015, 0.05), "-y")


def test_torus_wrap_gradient_matches_finite_differences():
    """The forward-mode gradient through the torus wrap (the closest-point search on the centre circle
    differentiated by the implicit function theorem): moment arms about a rotation of the `lower` link against
    central differences of the lengths (h = 1e-7 rad), wrapped and straight poses; moving both links rigidly
    together changes nothing (the wrench shares sum to zero)."""
    paths = _torus_path((0.05, 0.005, 0.08), (0.07, 0.0, -0.05))
    lower = paths.frames.index("lower")
    q = np.zeros(len(paths.coordinates))

    def placement(angle):   # `lower` turned about y through (0, 0, −0.09)
        rotations = np.array([np.eye(3)] * len(paths.frames))
        positions = np.zeros((len(paths.frames), 3))
        axis = np.array([0.0, 1.0, 0.0])
        skew = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
        rotations[lower] = np.eye(3) + math.sin(angle) * skew + (1 - math.cos(angle)) * skew @ skew
        positions[lower] = [0.0, 0.0, -0.09]
        return rotations, positions

    jacobians = np.zeros((len(paths.frames), 6, 1))
    jacobians[lower, 4, 0] = 1.0
    wrapped = 0
    for angle in np.linspace(-3.0, 3.0, 13):
        rotations, positions = placement(angle)
        gradient = path_gradients(paths, rotations, positions, q)
        wrapped += int(gradient.wrap_active[0])
        arms = moment_arms(paths, rotations, positions, q, jacobians)
        h = 1e-7
        numeric = (path_lengths(paths, *placement(angle + h), q) - path_lengths(paths, *placement(angle - h), q)) \
            / (2 * h)
        assert abs(arms[0, 0] + numeric[0]) <= 1e-7
        assert np.max(np.abs(gradient.dl_dframes.sum(axis=1)[:, :3])) <= 1e-12
    print("wrapped in", wrapped, "of 13 poses")
    assert 2 <= wrapped <= 11


@needs_models
def test_multi_wrap_gradient_matches_finite_differences():
    """arm26's BIClong (ellipsoid) and TRIlong (cylinder, ellipsoid, cylinder): the forward-mode gradient through
    the points and the surfaces' frames against central differences of the lengths under a rigid rotation of the
    forearm and of the humerus (which carries the surfaces), both algorithms (with and without OpenSim 4.6's
    wrap-point cache). h = 1e-7 rad: truncation ≈ 1e-14, round-off ≈ 1e-16/h ≈ 1e-9; 1e-6 m allows for the
    ellipsoid's tangent-point iteration stopping at 1e-8 (squared residual), which makes the length piecewise
    smooth at that level."""
    muscle_set = load_osim_muscles(GAIT.parent / "arm26.osim")
    muscle_set = dataclasses.replace(muscle_set, muscles=tuple(
        m for m in muscle_set.muscles if m.name in ("BIClong", "TRIlong")))
    for cache in (True, False):
        paths = compile_paths(muscle_set, opensim_wrap_cache=cache)
        humerus = paths.frames.index("r_humerus")
        ulna = paths.frames.index("r_ulna_radius_hand")
        q = np.zeros(len(paths.coordinates))

        def placement(elbow, shoulder):   # the humerus turned about x at the origin, the forearm about z at the elbow
            rotations = np.array([np.eye(3)] * len(paths.frames))
            positions = np.zeros((len(paths.frames), 3))
            c, s = math.cos(shoulder), math.sin(shoulder)
            turn = np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
            rotations[humerus] = turn
            c, s = math.cos(elbow), math.sin(elbow)
            rotations[ulna] = turn @ np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
            positions[ulna] = turn @ np.array([0.0061, -0.2904, -0.0123])
            return rotations, positions

        wrapped = 0
        for elbow, shoulder in [(0.2, 0.3), (1.0, -0.4), (1.8, 0.8), (2.3, 0.1), (0.6, 1.2)]:
            rotations, positions = placement(elbow, shoulder)
            gradient = path_gradients(paths, rotations, positions, q)
            wrapped += int(np.sum(gradient.wrap_active))
            h = 1e-7
            for k, (de, ds) in enumerate([(h, 0.0), (0.0, h)]):
                numeric = (path_lengths(paths, *placement(elbow + de, shoulder + ds), q)
                           - path_lengths(paths, *placement(elbow - de, shoulder - ds), q)) / (2 * h)
                # dl/dθ = Σ_f [F; M]_f · (v_f, ω_f) of the motion: the elbow turns the forearm about its z axis
                # through its origin; the shoulder turns everything about world x through the origin
                axis_e = rotations[ulna] @ np.array([0.0, 0.0, 1.0])
                analytic = gradient.dl_dframes[:, ulna, 3:] @ axis_e if k == 0 else sum(
                    gradient.dl_dframes[:, f, :3] @ np.cross([1.0, 0, 0], positions[f])
                    + gradient.dl_dframes[:, f, 3:] @ np.array([1.0, 0, 0]) for f in (humerus, ulna))
                assert np.max(np.abs(analytic - numeric)) <= 1e-6, (cache, elbow, shoulder, analytic - numeric)
        assert wrapped >= 3   # wraps active in several of the poses (both algorithms)


@needs_models
def test_cylinder_wrap_gradient_matches_finite_differences():
    """arm26's single-cylinder muscles (TRIlat, TRImed, BRA): the forward-mode gradient of the wrapped length,
    through the points and the surface's frame, against central differences of the lengths."""
    muscle_set = load_osim_muscles(GAIT.parent / "arm26.osim")
    muscle_set = dataclasses.replace(muscle_set, muscles=tuple(
        m for m in muscle_set.muscles if m.name in ("TRIlat", "TRImed", "BRA")))
    paths = compile_paths(muscle_set)
    humerus = paths.frames.index("r_humerus")
    ulna = paths.frames.index("r_ulna_radius_hand")
    q = np.zeros(len(paths.coordinates))

    def placement(angle):   # the forearm turned about the elbow's z axis, the humerus fixed
        rotations = np.array([np.eye(3)] * len(paths.frames))
        positions = np.zeros((len(paths.frames), 3))
        c, s = math.cos(angle), math.sin(angle)
        rotations[ulna] = [[c, -s, 0], [s, c, 0], [0, 0, 1]]
        positions[ulna] = [0.0061, -0.2904, -0.0123]
        return rotations, positions

    jacobians = np.zeros((len(paths.frames), 6, 1))
    jacobians[ulna, 5, 0] = 1.0
    wrapped = 0
    for angle in np.linspace(0.1, 2.2, 8):
        rotations, positions = placement(angle)
        gradient = path_gradients(paths, rotations, positions, q)
        wrapped += int(np.sum(gradient.wrap_active))
        arms = moment_arms(paths, rotations, positions, q, jacobians)
        h = 1e-7
        numeric = (path_lengths(paths, *placement(angle + h), q) - path_lengths(paths, *placement(angle - h), q)) \
            / (2 * h)
        assert np.max(np.abs(arms[:, 0] + numeric)) <= 1e-7
        # moving the humerus (which carries the cylinder) rigidly with everything changes nothing
        assert np.max(np.abs(gradient.dl_dframes.sum(axis=1)[:, :3])) <= 1e-12
    assert wrapped >= 4


@needs_models
def test_wrap_surfaces_survive_the_element_round_trip():
    muscle_set = load_osim_muscles(GAIT.parent / "arm26.osim")
    block = ET.Element("biobullet")
    block.extend(muscle_elements(muscle_set))
    parsed = parse_muscles("arm.urdf", ET.fromstring(ET.tostring(block, encoding="unicode")), set(muscle_set.frames),
                           dict(zip(muscle_set.coordinates, map(tuple, muscle_set.coordinate_ranges))))
    original = {s.name: s for s in muscle_set.surfaces}
    used = {w.surface for m in muscle_set.muscles for w in m.wraps}
    again = {s.name: s for s in parsed.surfaces}
    assert used <= set(again) and {"TRI", "TRIlonghh", "BIClonghh", "TRIlongglen"} <= used
    for name in used:
        a, b = original[name], again[name]
        assert (a.type, a.frame, a.quadrant, a.dimensions) == (b.type, b.frame, b.quadrant, b.dimensions)
        assert np.allclose(a.rotation, b.rotation, atol=1e-14) and np.array_equal(a.translation, b.translation)


def test_deeply_nested_functions_are_refused(tmp_path):
    nested = "<SimmSpline><x>0 1</x><y>0 1</y></SimmSpline>"
    for _ in range(5000):
        nested = f"<MultiplierFunction><function>{nested}</function><scale>1</scale></MultiplierFunction>"
    text = TWO_POINT_OSIM.replace("MAXFORCE", "").replace(
        "<y_location><Constant><value>0.05</value></Constant></y_location>", f"<y_location>{nested}</y_location>")
    with pytest.raises(ModelError, match="nested"):
        load_osim_muscles(_write(tmp_path, text))


def test_thelen_fiber_velocity_is_not_finite_where_the_active_curve_underflows():
    """Thelen's inverse force–velocity divides by b ∝ a f_L: a trial state with the fiber ~20 l₀ from optimal
    makes f_L = exp(−(l̃ − 1)²/0.45) underflow to 0, and OpenSim's calcdlceN gives 0/0 there. Ours returns NaN —
    the stage's "not finite" status, so the integrator rejects the trial step — rather than raising
    ZeroDivisionError from the compiled kernel (which ended a 1-s arm26 run at t = 0.201 s). At the optimal length
    a force a f_L is isometric: ṽ = 0."""
    from biobullet.muscles.description import MuscleParameters
    parameters = MuscleParameters(1.0, 0.1, 0.2)
    curves = hill.curve_parameters("thelen2003", parameters)
    vector = hill.muscle_vector("thelen2003", parameters)
    length = 21.0
    active = hill.active_force_length_py(hill.THELEN, curves, length)
    assert active == 0.0
    assert math.isnan(hill.fiber_velocity_py(hill.THELEN, curves, vector, 0.5, active, 0.0, length, 0.0))
    assert hill.fiber_velocity_py(hill.THELEN, curves, vector, 0.5, 1.0, 0.0, 1.0, 0.5) == 0.0
