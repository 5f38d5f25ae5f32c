"""The .osim importer against OpenSim 4.6 itself (the oracle, installed by the `test` extra).

For every bundled OpenSim model (plugin/biobullet/data/opensim, the five files of the shared corpus) and for
`joint_zoo.osim` (every joint type and joint-function type the importer reads, written for this test), with all
OpenSim forces switched off: body placements, the mass matrix (reduced through the CoordinateCouplerConstraints
with OpenSim's own coupling-function derivatives) and forward dynamics under gravity and random generalized
forces (applied in OpenSim by CoordinateActuators with overridden actuation) at 20 random states inside the
coordinate ranges; and a 1 s passive simulation against OpenSim's Manager.
"""
from __future__ import annotations

import glob
import os
import warnings

import numpy as np
import pytest

from opensim_oracle import import_opensim, opensim_without_forces, placement_difference

osim = import_opensim()

import biobullet  # noqa: E402
from biobullet.forces.collection import applied_forces  # noqa: E402
from biobullet.opensim import osim_body_links  # noqa: E402

HERE = os.path.dirname(__file__)
DATA = os.path.join(os.path.dirname(biobullet.__file__), "data", "opensim")
SHARED = sorted(glob.glob(os.path.join(DATA, "*.osim")))
ZOO = os.path.join(HERE, "joint_zoo.osim")
#: the zoo's BallJoint and FreeJoint coordinates: OpenSim's speeds of these are angular velocities, not the
#: Euler-angle rates (biobullet's v = q̇); the tests keep their speeds and generalized forces at zero
EULER_SPEED = ("f_rx", "f_ry", "f_rz", "f_tx", "f_ty", "f_tz", "b_rx", "b_ry", "b_rz")
SAMPLES = 20



def _opensim(path: str, actuators: bool = True):
    """OpenSim model with every force switched off, plus one CoordinateActuator per coordinate; its state."""
    return opensim_without_forces(osim, path, actuators)


def _couplers(model):
    """(dependent, independent names, function, scale factor) of the model's coupler constraints."""
    result = []
    for constraint in model.getConstraintSet():
        coupler = osim.CoordinateCouplerConstraint.safeDownCast(constraint)
        if coupler is None:
            continue
        names = coupler.getIndependentCoordinateNames()
        scale = osim.PropertyHelper.getValueDouble(coupler.getPropertyByName("scale_factor"))
        result.append((coupler.getDependentCoordinateName(), [names.get(i) for i in range(names.getSize())],
                       coupler.getFunction(), scale))
    return result


def _set_state(model, state, coordinates, names, q, v):
    """OpenSim state with the independent coordinates at (q, q̇ = v) and the coupled ones on their constraint;
    returns G = ∂u/∂v (mobility speeds per independent speed), from OpenSim's coupling-function derivatives."""
    all_coordinates = list(model.getCoordinateSet())
    for coordinate in all_coordinates:
        coordinate.setSpeedValue(state, 0.0)
    for name, value, rate in zip(names, q, v):
        coordinates[name].setValue(state, float(value), False)
        coordinates[name].setSpeedValue(state, float(rate))
    gradient = {name: {name: 1.0} for name in names}
    for dependent, independent, function, scale in _couplers(model):
        x = osim.Vector(len(independent), 0.0)
        for i, name in enumerate(independent):
            x.set(i, coordinates[name].getValue(state))
        coordinates[dependent].setValue(state, scale * function.calcValue(x), False)
        row = {name: scale * function.calcDerivative(osim.StdVectorInt([i]), x) for i, name in enumerate(independent)}
        gradient[dependent] = row
        coordinates[dependent].setSpeedValue(state, sum(g * coordinates[n].getSpeedValue(state) for n, g in row.items()))
    return gradient


def _speed_index(model, state) -> dict[str, int]:
    """Index in OpenSim's u of each coordinate's speed."""
    index = {}
    coordinates = list(model.getCoordinateSet())
    for coordinate in coordinates:
        for other in coordinates:
            other.setSpeedValue(state, 0.0)
        coordinate.setSpeedValue(state, 1.0)
        index[coordinate.getName()] = int(np.argmax(np.abs(state.getU().to_numpy())))
        coordinate.setSpeedValue(state, 0.0)
    return index


def _q_index(model, state) -> dict[str, int]:
    """Index in OpenSim's q of each coordinate (BallJoint/FreeJoint rotations excluded: quaternions there)."""
    index = {}
    for coordinate in model.getCoordinateSet():
        before = state.getQ().to_numpy().copy()
        coordinate.setValue(state, coordinate.getValue(state) + 0.1, False)
        index[coordinate.getName()] = int(np.argmax(np.abs(state.getQ().to_numpy() - before)))
        coordinate.setValue(state, coordinate.getValue(state) - 0.1, False)
    return index


def _matrix(osim_matrix) -> np.ndarray:
    return np.array([[osim_matrix.get(i, j) for j in range(osim_matrix.ncol())] for i in range(osim_matrix.nrow())])


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # markers are reported, not imported
        return biobullet.load_model(path), osim_body_links(path)


@pytest.mark.parametrize("path", [*SHARED, ZOO], ids=os.path.basename)
def test_placements_mass_matrix_and_forward_dynamics_match_opensim(path):
    model, links = _load(path)
    reference, state, actuators = _opensim(path)
    coordinates = {c.getName(): c for c in reference.getCoordinateSet()}
    names = model.coordinate_names
    locked = [c for c in reference.getCoordinateSet() if c.getDefaultLocked()]
    # the importer's coordinates: OpenSim's, without the coupled (dependent) and the locked ones, in order
    dependent = {d for d, *_ in _couplers(reference)}
    assert names == tuple(c.getName() for c in reference.getCoordinateSet()
                          if c.getName() not in dependent and c not in locked
                          and not c.getDefaultLocked())
    speed_index = _speed_index(reference, state)
    q_index = _q_index(reference, state)
    euler = [i for i, name in enumerate(names) if name in EULER_SPEED]
    rng = np.random.default_rng(24)
    worst = {"placement": 0.0, "mass_matrix": 0.0, "residual": 0.0}
    for _ in range(SAMPLES):
        q = np.array([rng.uniform(coordinates[n].getRangeMin(), coordinates[n].getRangeMax()) for n in names])
        v = rng.normal(size=len(names))
        tau = rng.normal(size=len(names))
        v[euler] = tau[euler] = 0.0
        gradient = _set_state(reference, state, coordinates, names, q, v)
        for name, value in zip(names, tau):
            actuators[name].overrideActuation(state, True)
            actuators[name].setOverrideActuation(state, float(value))
        reference.realizeAcceleration(state)
        x = model.joint_configuration(q)
        worst["placement"] = max(worst["placement"], placement_difference(reference, state, model, links, x))
        mass_matrix = model.mass_matrix(q)
        if not euler:    # OpenSim's M is over its speeds u; u = q̇ for every joint but Ball and Free
            m_u = osim.Matrix()
            reference.getMatterSubsystem().calcM(state, m_u)
            g = np.zeros((state.getNU(), len(names)))
            for row, entries in gradient.items():
                for column, value in entries.items():
                    g[speed_index[row], names.index(column)] = value
            expected_m = g.T @ _matrix(m_u) @ g
            worst["mass_matrix"] = max(worst["mass_matrix"],
                                       np.abs(mass_matrix - expected_m).max() / np.abs(expected_m).max())
        qdd_all = state.getQDotDot().to_numpy()
        expected_qdd = np.array([qdd_all[q_index[n]] for n in names])
        qdd = model.forward_dynamics(q, v, tau)
        keep = [i for i in range(len(names)) if i not in euler]
        # backward error: OpenSim's q̈ in biobullet's equations of motion (independent of M's conditioning) ...
        residual = mass_matrix @ (qdd - expected_qdd)
        worst["residual"] = max(worst["residual"],
                                np.linalg.norm(residual[keep]) / np.linalg.norm((mass_matrix @ expected_qdd)[keep]))
        # ... and forward error, bounded by cond(M) times the two solvers' round-off (gait2392: cond(M) ≈ 2e7)
        bound = max(1e-9, 10 * np.finfo(float).eps * np.linalg.cond(mass_matrix))
        error = np.linalg.norm((qdd - expected_qdd)[keep]) / np.linalg.norm(expected_qdd[keep])
        assert error <= bound, (os.path.basename(path), error, bound)
    assert worst["placement"] <= 1e-12, worst
    assert worst["mass_matrix"] <= 1e-12, worst
    assert worst["residual"] <= 1e-9, worst


def test_interleaved_custom_joint_velocity_terms_follow_opensims_mass_matrix():
    """c1 drives rotation1 and rotation3 around c2's rotation2. Placements and M match OpenSim; OpenSim 4.6's own
    q̈ there leaves out a velocity cross term (c1–c2), so the velocity terms are checked against the Christoffel
    symbols of OpenSim's mass matrix instead: h(q, v) − h(q, 0) = Σ_jk (∂M_ij/∂q_k − ½ ∂M_jk/∂q_i) v_j v_k, with
    ∂M from central differences (step 1e-5: truncation ≈ 1e-10 relative)."""
    path = os.path.join(HERE, "interleaved_custom_joint.osim")
    model, _ = _load(path)
    reference, state, _ = _opensim(path, actuators=False)
    coordinates = {c.getName(): c for c in reference.getCoordinateSet()}
    names = model.coordinate_names
    assert names == ("c1", "c2")
    speed_index = _speed_index(reference, state)
    order = [speed_index[n] for n in names]

    def opensim_mass_matrix(q):
        _set_state(reference, state, coordinates, names, q, np.zeros(2))
        reference.realizePosition(state)
        m_u = osim.Matrix()
        reference.getMatterSubsystem().calcM(state, m_u)
        return _matrix(m_u)[np.ix_(order, order)]

    rng = np.random.default_rng(7)
    step = 1e-5
    for _ in range(5):
        q = np.array([rng.uniform(coordinates[n].getRangeMin(), coordinates[n].getRangeMax()) for n in names])
        v = rng.normal(size=2)
        expected_m = opensim_mass_matrix(q)
        assert np.abs(model.mass_matrix(q) - expected_m).max() <= 1e-12 * np.abs(expected_m).max()
        derivative = [(opensim_mass_matrix(q + step * e) - opensim_mass_matrix(q - step * e)) / (2 * step)
                      for e in np.eye(2)]
        christoffel = np.array([sum((derivative[k][i, j] - 0.5 * derivative[i][j, k]) * v[j] * v[k]
                                    for j in range(2) for k in range(2)) for i in range(2)])
        velocity_terms = model.bias_forces(q, v) - model.bias_forces(q, np.zeros(2))
        assert np.abs(velocity_terms - christoffel).max() <= 1e-7 * max(1.0, np.abs(christoffel).max())


@pytest.mark.parametrize("path", SHARED, ids=os.path.basename)
def test_one_second_passive_simulation_matches_opensims_manager(path):
    """From the default pose with random initial speeds (so the joints move: a free skeleton released at rest
    only falls as a whole), all forces off, gravity on. OpenSim's Manager at accuracy 1e-10 and the reference
    engine at rtol 1e-11: the gap is the two integrators' error — with both tightened (1e-12 and 1e-13) it falls
    to 1e-11 rad and 1e-10 rad/s on gait2392 — so the bounds are 2e-8 (positions) and 1e-7 (rates) for motions of
    up to 5 rad and 5 m."""
    model, _ = _load(path)
    reference, state, _ = _opensim(path, actuators=False)
    coordinates = {c.getName(): c for c in reference.getCoordinateSet()}
    names = model.coordinate_names
    q0 = np.array([coordinates[n].getDefaultValue() for n in names])
    v0 = np.random.default_rng(5).normal(size=len(names))
    _set_state(reference, state, coordinates, names, q0, v0)
    manager = osim.Manager(reference)
    manager.setIntegratorAccuracy(1e-10)
    state.setTime(0.0)
    manager.initialize(state)
    end = manager.integrate(1.0)
    expected_q = np.array([coordinates[n].getValue(end) for n in names])
    expected_v = np.array([coordinates[n].getSpeedValue(end) for n in names])
    trajectory = biobullet.simulate(model, 1.0, initial=(q0, v0), rtol=1e-11, atol=1e-12, t_eval=[0.0, 1.0],
                                    progress=False)
    assert np.abs(trajectory.q[-1] - expected_q).max() <= 2e-8
    assert np.abs(trajectory.v[-1] - expected_v).max() <= 1e-7


FORCES = """
		<ForceSet name="forceset">
			<objects>
				<CoordinateLimitForce name="pin_limit">
					<coordinate>pin_q</coordinate>
					<upper_stiffness>2</upper_stiffness>
					<upper_limit>20</upper_limit>
					<lower_stiffness>3</lower_stiffness>
					<lower_limit>-30</lower_limit>
					<damping>0.05</damping>
					<transition>10</transition>
				</CoordinateLimitForce>
				<CoordinateLimitForce name="slide_limit">
					<coordinate>slide</coordinate>
					<upper_stiffness>800</upper_stiffness>
					<upper_limit>0.03</upper_limit>
					<lower_stiffness>500</lower_stiffness>
					<lower_limit>-0.02</lower_limit>
					<damping>4</damping>
					<transition>0.02</transition>
				</CoordinateLimitForce>
				<SpringGeneralizedForce name="knee_spring">
					<coordinate>k</coordinate>
					<stiffness>3.5</stiffness>
					<rest_length>-0.4</rest_length>
					<viscosity>0.2</viscosity>
				</SpringGeneralizedForce>
				<PointToPointSpring name="band">
					<socket_body1>/bodyset/b3</socket_body1>
					<socket_body2>/bodyset/b9</socket_body2>
					<point1>0.02 -0.05 0.01</point1>
					<point2>-0.01 0.03 0.02</point2>
					<stiffness>150</stiffness>
					<rest_length>0.05</rest_length>
				</PointToPointSpring>
			</objects>
		</ForceSet>
"""


def _zoo_with_forces(tmp_path) -> str:
    """The joint zoo with FORCES added, written to tmp_path; its path."""
    with open(ZOO) as handle:
        text = handle.read().replace("\t</Model>", FORCES + "\t</Model>")
    path = str(tmp_path / "zoo_forces.osim")
    with open(path, "w") as handle:
        handle.write(text)
    return path


@pytest.mark.parametrize("compiled_limits", [False, True], ids=["python", "compiled_limits"])
def test_mapped_forces_match_opensim(tmp_path, compiled_limits):
    """CoordinateLimitForce (rotational in degrees, translational), SpringGeneralizedForce and PointToPointSpring on
    the zoo, switched on: forward dynamics equal OpenSim's at 20 random states (the pin spans its limits and
    transition zones), same bounds as without forces. `compiled_limits`: the `<coordinate_limit>` forces from
    their compiled kernel (`_coordinate_limit_py` compiled by numba) instead of the Python law, and the zoo with
    its forces then simulates on the compiled right-hand side (no generic call)."""
    from biobullet.core import jit
    from biobullet.forces.collection import force_elements
    from biobullet.forces.elements import CoordinateLimit, _coordinate_limit_py

    path = _zoo_with_forces(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")    # every force is mapped: nothing to report
        model = biobullet.load_model(path)
    limits = [e for e in force_elements(model) if isinstance(e, CoordinateLimit)] if compiled_limits else []
    others = [e for e in force_elements(model) if e not in limits]
    kernel = jit.compiled(_coordinate_limit_py)
    assert kernel is not None and len(limits) == (2 if compiled_limits else 0)   # numba is a dependency
    n = model.n_tangent
    unused = (np.zeros((1, 3, 3)), np.zeros((1, 3)), np.zeros((6, n)), np.zeros((1, n)))   # rot, pos, sub, ancestry
    reference = osim.Model(path)
    state = reference.initSystem()
    coordinates = {c.getName(): c for c in reference.getCoordinateSet()}
    names = model.coordinate_names
    q_index = _q_index(reference, state)
    keep = [i for i, n in enumerate(names) if n not in EULER_SPEED]
    rng = np.random.default_rng(11)
    for _ in range(SAMPLES):
        q = np.array([rng.uniform(coordinates[n].getRangeMin(), coordinates[n].getRangeMax()) for n in names])
        v = rng.normal(size=len(names))
        v[[i for i in range(len(names)) if i not in keep]] = 0.0
        _set_state(reference, state, coordinates, names, q, v)
        reference.realizeAcceleration(state)
        qdd_all = state.getQDotDot().to_numpy()
        expected = np.array([qdd_all[q_index[n]] for n in names])
        x, xd, _, _ = model.joint_state(q, v)
        tau = applied_forces(model, x, xd, elements=others)   # the file's force elements
        for element in limits:
            packed = element.compiled_kernel(model)
            assert kernel(0.0, x, xd, *unused, packed.fparams, packed.iparams, tau, np.zeros(2)) == 0
        qdd = model.forward_dynamics(q, v, model.generalized_forces(tau, q))
        mass_matrix = model.mass_matrix(q)
        bound = max(1e-9, 10 * np.finfo(float).eps * np.linalg.cond(mass_matrix))
        assert np.linalg.norm((qdd - expected)[keep]) <= bound * np.linalg.norm(expected[keep])
    if compiled_limits:
        run = biobullet.simulate(model, 0.01, t_eval=[0.0, 0.01], progress=False)
        assert run.meta["right_hand_side"]["path"].startswith("compiled")
        assert run.meta["right_hand_side"]["callback_calls"] == 0


def _opensim_function(kind: str, x, y):
    function = getattr(osim, kind)()
    if kind == "GCVSpline":
        function.setDegree(3)
    for a, b in zip(x, y):
        function.addPoint(float(a), float(b))
    return function


@pytest.mark.parametrize("kind, attributes, points", [
    *(("SimmSpline", {"boundary": "fmm"}, n) for n in (2, 3, 4, 5, 9)),
    *(("PiecewiseLinearFunction", {"degree": "1"}, n) for n in (2, 3, 9)),
    *(("GCVSpline", {"boundary": "natural"}, n) for n in (6, 9)),    # OpenSim's cubic GCV fit needs 6 points
])
def test_spline_types_equal_opensims_functions(kind, attributes, points):
    """Value, first and second derivative of each spline mapping against OpenSim's own function object, inside
    the table and beyond both ends (linear extrapolation), and the compiled jets kernel against `evaluate`.
    GCVSpline needs 6 points (its degree-3 fit). Bounds: round-off of second derivatives on the shortest interval
    (0.011 wide: 5e-13) for the exact ports; GCVSPL's own solver differs from the natural spline's by up to 1e-10."""
    from biobullet.functions.spline import SplineFunction
    from biobullet.model.joint_jets import _explicit_jets_py, function_table, jets_kernel

    rng = np.random.default_rng(points)
    x = np.sort(rng.uniform(-2.0, 2.0, points))
    y = rng.normal(size=points)
    reference = _opensim_function(kind, x, y)
    ours = SplineFunction(("q",), x, y, extrapolation="linear", **{k: (int(v) if k == "degree" else v)
                                                                   for k, v in attributes.items()})
    tolerance = 1e-9 if kind == "GCVSpline" else 1e-11
    table, inputs, coef = function_table([(1, [0], ours)])
    kernels = [_explicit_jets_py] + ([jets_kernel()] if jets_kernel() is not None else [])
    for value in np.linspace(-3.0, 3.0, 61):
        point = osim.Vector(1, float(value))
        expected = (reference.calcValue(point), reference.calcDerivative(osim.StdVectorInt([0]), point),
                    reference.calcDerivative(osim.StdVectorInt([0, 0]), point))
        got, gradient, hessian = ours.evaluate(np.array([value]), 0.0)
        assert np.allclose((got, gradient[0], hessian[0, 0]), expected, rtol=0, atol=tolerance * max(1, np.abs(y).max()))
        for kernel in kernels:   # θ, θ̇ = f' ẋ, γ = f'' ẋ² of the output slot
            state, rate = np.array([value, 0.0]), np.array([0.7, 0.0])
            gradient_rows, gamma = np.array([[1.0], [0.0]]), np.zeros(2)
            assert kernel(table, inputs, coef, 0.0, 0, 0, state, rate, gradient_rows, gamma) == 0
            assert np.allclose((state[1], rate[1], gamma[1]), (got, gradient[0] * 0.7, hessian[0, 0] * 0.49),
                               rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("element, spec", [
    ("<PolynomialFunction><coefficients>0.2 -0.1 0.9 0.05</coefficients></PolynomialFunction>", None),
    ("<Sine><amplitude>0.4</amplitude><omega>1.7</omega><phase>0.2</phase></Sine>", None),
    ("<MultiplierFunction><function><LinearFunction><coefficients>0.02 -0.01</coefficients></LinearFunction>"
     "</function><scale>-1.5</scale></MultiplierFunction>", None),
])
def test_other_function_types_equal_opensims(element, spec):
    """PolynomialFunction (highest power first), Sine and MultiplierFunction: the importer's mapping evaluated
    against OpenSim's function objects read from the same XML."""
    import xml.etree.ElementTree as ET

    from biobullet.opensim.document import PropertyReader
    from biobullet.opensim.translate import evaluate

    ours = PropertyReader("test.osim").read_function(ET.fromstring(element))
    tag = element[1:element.index(">")]
    if tag == "PolynomialFunction":
        reference = osim.PolynomialFunction(osim.Vector([0.2, -0.1, 0.9, 0.05]))
    elif tag == "Sine":
        reference = osim.Sine(0.4, 1.7, 0.2)
    else:   # (a MultiplierFunction built in Python would own a Python-owned function: scale it here)
        reference = osim.LinearFunction(0.02, -0.01)
    scale = -1.5 if tag == "MultiplierFunction" else 1.0
    for value in np.linspace(-2.0, 2.0, 21):
        assert evaluate(ours, ("q",), {"q": value}) == pytest.approx(
            scale * reference.calcValue(osim.Vector(1, float(value))), rel=1e-14, abs=1e-15)


@pytest.mark.parametrize("degree, points", [(1, 4), (5, 6), (5, 11), (7, 9)])
def test_natural_spline_equals_opensims_gcvspline(degree, points):
    """GCVSpline without smoothing (error variance 0) of degree 1, 5, 7 → `natural_spline`: value and first two
    derivatives against OpenSim's GCVSpline inside and beyond the table (its continuation of degree m − 1), and
    the compiled path (the jets kernel calling the type's compiled jets by address) against OpenSim too.
    GCVSPL's own solver sets the bound (1e-9 of the table's scale, observed ≤ 4e-11)."""
    from biobullet.functions.natural_spline import NaturalSplineFunction
    from biobullet.model.joint_jets import function_table, jets_kernel

    rng = np.random.default_rng(degree * 100 + points)
    x = np.sort(rng.uniform(-2.0, 2.0, points))
    y = rng.normal(size=points)
    reference = osim.GCVSpline()
    reference.setDegree(degree)
    for a, b in zip(x, y):
        reference.addPoint(float(a), float(b))
    ours = NaturalSplineFunction(("q",), x, y, degree)
    table, inputs, coef = function_table([(1, [0], ours)])
    kernel = jets_kernel()
    assert kernel is not None   # numba is a dependency: the compiled path must serve
    scale = max(1.0, np.abs(y).max())
    for value in np.linspace(x[0] - 0.4, x[-1] + 0.4, 57):
        point = osim.Vector(1, float(value))
        expected = np.array([reference.calcValue(point), reference.calcDerivative(osim.StdVectorInt([0]), point),
                             reference.calcDerivative(osim.StdVectorInt([0, 0]), point)])
        got, gradient, hessian = ours.evaluate(np.array([value]), 0.0)
        orders = 3 if degree > 1 else 1    # degree 1: OpenSim's derivatives of a broken line are not defined
        assert np.allclose(np.array([got, gradient[0], hessian[0, 0]])[:orders], expected[:orders], rtol=0,
                           atol=1e-9 * scale * (10 if degree == 7 else 1))
        if kernel is not None:   # θ, θ̇ = f' ẋ, γ = f'' ẋ² of the output slot
            state, rate = np.array([value, 0.0]), np.array([0.7, 0.0])
            gradient_rows, gamma = np.array([[1.0], [0.0]]), np.zeros(2)
            assert kernel(table, inputs, coef, 0.0, 0, 0, state, rate, gradient_rows, gamma) == 0
            compiled = np.array([state[1], rate[1] / 0.7, gamma[1] / 0.49])
            assert np.allclose(compiled[:orders], expected[:orders], rtol=0,
                               atol=1e-9 * scale * (10 if degree == 7 else 1))
