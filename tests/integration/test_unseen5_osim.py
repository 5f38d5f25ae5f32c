"""Defects found by the fifth unseen-input probe: the .osim importer on models of opensim-org/opensim-models it
had never seen (fixtures in tests/data/osim_unseen, credits there), checked against OpenSim 4.6 and Pinocchio."""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import biobullet
from opensim_oracle import import_opensim, opensim_without_forces

UNSEEN = Path(__file__).parents[1] / "data" / "osim_unseen"

#: three bodies on a prismatic, a revolute and a revolute about another axis; no joint function
CHAIN = """<?xml version="1.0"?>
<robot name="chain">
  <link name="base"/>
  <link name="a"><inertial><origin xyz="0.3 0 0.1"/><mass value="2"/>
    <inertia ixx="0.1" iyy="0.2" izz="0.3" ixy="0.01" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><origin xyz="0.2 0.1 0"/><mass value="1"/>
    <inertia ixx="0.05" iyy="0.06" izz="0.07" ixy="0" ixz="0.01" iyz="0"/></inertial></link>
  <link name="c"><inertial><origin xyz="0.1 0 0"/><mass value="0.5"/>
    <inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="prismatic"><parent link="base"/><child link="a"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0.5 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j3" type="revolute"><parent link="b"/><child link="c"/><origin xyz="0.4 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <biobullet version="1"><coordinates names="ORDER"/></biobullet>
</robot>
"""


@pytest.mark.parametrize("order", [("j1", "j2", "j3"), ("j2", "j1", "j3"), ("j3", "j2", "j1")], ids="-".join)
def test_a_coordinate_order_that_permutes_the_joints_keeps_the_dynamics(tmp_path, order):
    """`<coordinates>` listing the joints in another order than the tree, no joint function: M, h and q̈ came out
    in tree order under names in the listed order (M off by 3.2, q̈ by 34 against Pinocchio), silently — every
    OpenSim PlanarJoint (coordinates rotation first, the chain translations first) and FreeJoint model. Now
    equal to Pinocchio's CRBA, RNEA and ABA, permuted by joint name, to round-off."""
    pin = pytest.importorskip("pinocchio")
    path = tmp_path / "chain.urdf"
    path.write_text(CHAIN.replace("ORDER", " ".join(order)))
    model = biobullet.load_model(str(path))
    assert model.coordinate_names == order
    reference = pin.buildModelFromUrdf(str(path))
    reference.gravity.linear[:] = model.gravity
    data = reference.createData()
    index = [reference.idx_qs[reference.getJointId(name)] for name in order]
    rng = np.random.default_rng(11)
    for _ in range(3):
        q, v, tau = rng.uniform(-1, 1, 3), rng.normal(size=3), rng.normal(size=3)
        q_pin, v_pin, tau_pin = np.zeros(3), np.zeros(3), np.zeros(3)
        q_pin[index], v_pin[index], tau_pin[index] = q, v, tau
        mass_matrix = pin.crba(reference, data, q_pin)
        mass_matrix = np.triu(mass_matrix) + np.triu(mass_matrix, 1).T
        expected_m = mass_matrix[np.ix_(index, index)]
        assert np.abs(model.mass_matrix(q) - expected_m).max() <= 1e-13 * np.abs(expected_m).max()
        expected_h = pin.rnea(reference, data, q_pin, v_pin, np.zeros(3))[index]
        assert np.abs(model.bias_forces(q, v) - expected_h).max() <= 1e-13 * np.abs(expected_h).max()
        expected_a = pin.aba(reference, data, q_pin, v_pin, tau_pin)[index]
        assert np.abs(model.forward_dynamics(q, v, tau) - expected_a).max() <= 1e-12 * np.abs(expected_a).max()


def test_the_bridge_on_a_permuted_coordinate_order_converges_to_the_engine(tmp_path):
    """The same chain listed (j3, j1, j2), stepped on PyBullet by the bridge at dt = 4, 2, 1 ms for 0.3 s against
    the reference engine (rtol 1e-11): the gap stayed at 4.3 whatever dt (one of the two ran the tree-order
    equations); now it halves with dt (first order, semi-implicit Euler: observed orders 1.000)."""
    from bridge_convergence import bridge_orders
    path = tmp_path / "chain.urdf"
    path.write_text(CHAIN.replace("ORDER", "j3 j1 j2"))
    model = biobullet.load_model(str(path))
    errors, orders = bridge_orders(model, np.array([0.3, 0.1, -0.2]), np.array([0.5, -0.3, 0.2]))
    assert errors[-1] <= 5e-3, errors
    assert np.all(np.abs(orders - 1.0) <= 0.05), orders


def _check_unconstrained_dynamics(osim, model, path: str, seed: int, samples: int = 5) -> None:
    """For a model whose speeds are OpenSim's coordinate rates in CoordinateSet order (no coupler, lock, Ball or
    Free joint), all OpenSim forces off: at random states inside the coordinate ranges, M ≤ 1e-12 relative and q̈
    under gravity and random generalized forces (CoordinateActuators with overridden actuation) ≤ 1e-9 relative."""
    reference, state, actuators = opensim_without_forces(osim, path)
    coordinates = {c.getName(): c for c in reference.getCoordinateSet()}
    names = model.coordinate_names
    assert names == tuple(coordinates)
    rng = np.random.default_rng(seed)
    for _ in range(samples):
        q = np.array([rng.uniform(max(coordinates[n].getRangeMin(), -np.pi), min(coordinates[n].getRangeMax(), np.pi))
                      for n in names])
        v, tau = rng.normal(size=len(names)), rng.normal(size=len(names))
        for name, value, rate, force in zip(names, q, v, tau):
            coordinates[name].setValue(state, float(value), False)
            coordinates[name].setSpeedValue(state, float(rate))
            actuators[name].overrideActuation(state, True)
            actuators[name].setOverrideActuation(state, float(force))
        reference.realizeAcceleration(state)
        m_u = osim.Matrix()
        reference.getMatterSubsystem().calcM(state, m_u)
        expected_m = np.array([[m_u.get(i, j) for j in range(m_u.ncol())] for i in range(m_u.nrow())])
        assert np.abs(model.mass_matrix(q) - expected_m).max() <= 1e-12 * np.abs(expected_m).max()
        expected_a = np.array([coordinates[n].getAccelerationValue(state) for n in names])
        error = np.linalg.norm(model.forward_dynamics(q, v, tau) - expected_a) / np.linalg.norm(expected_a)
        assert error <= 1e-9, error


def test_walker_planar_joint_matches_opensim():
    """WalkerModel.osim (opensim-models): a PlanarJoint pelvis whose coordinates OpenSim lists (rz, tx, ty). Its
    mass matrix was 96 % off OpenSim's and q̈ 22× (the permuted-order defect above). Now, all OpenSim forces off,
    at 5 random states inside the coordinate ranges: M ≤ 1e-12 relative, q̈ under gravity and random generalized
    forces (CoordinateActuators with overridden actuation) ≤ 1e-9 relative."""
    osim = import_opensim()
    path = str(UNSEEN / "WalkerModel.osim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # its foot contacts are against a half-space on a body: reported
        model = biobullet.load_model(path)
    assert model.coordinate_names[:3] == ("Pelvis_rx", "Pelvis_tx", "Pelvis_ty")   # OpenSim's order, u = q̇
    _check_unconstrained_dynamics(osim, model, path, seed=5)


#: a Hunt–Crossley force as OpenSim 4.6 writes it: element names with `::` (legal XML 1.0, rejected by
#: namespace-aware parsers); Jumper, ToyLanding and SoccerKick of opensim-models have such blocks
CONTACT = """<HuntCrossleyForce name="contact">
  <HuntCrossleyForce::ContactParametersSet name="contact_parameters"><objects>
    <HuntCrossleyForce::ContactParameters><geometry></geometry><stiffness>1e6</stiffness><dissipation>1</dissipation>
      <static_friction>0.8</static_friction><dynamic_friction>0.5</dynamic_friction>
      <viscous_friction>0</viscous_friction></HuntCrossleyForce::ContactParameters>
  </objects></HuntCrossleyForce::ContactParametersSet><transition_velocity>0.1</transition_velocity>
</HuntCrossleyForce>
"""


def test_load_osim_muscles_reads_a_file_with_opensims_double_colon_names(tmp_path):
    """`muscles.osim.load_osim_muscles(path)` (docs/muscles.md) refused such files as 'not well-formed XML'
    although `load_model` and OpenSim read them. Now its muscles are the file's (OpenSim's muscle names, the same
    descriptions as without the contact block)."""
    from biobullet.muscles.osim import load_osim_muscles
    original = Path(biobullet.__file__).parent / "data" / "opensim" / "Tug_of_War_Millard.osim"
    text = original.read_text()
    marker = '<ForceSet name="forceset">\n\t\t\t<objects>\n'
    assert marker in text
    path = tmp_path / "tug_with_contact.osim"
    path.write_text(text.replace(marker, marker + CONTACT))
    muscles, expected = load_osim_muscles(path), load_osim_muscles(original)
    assert [(m.name, m.model, m.parameters, len(m.points)) for m in muscles.muscles] == \
        [(m.name, m.model, m.parameters, len(m.points)) for m in expected.muscles]
    osim = import_opensim()
    reference = osim.Model(str(path))
    reference.initSystem()
    assert [m.name for m in muscles.muscles] == [reference.getMuscles().get(i).getName()
                                                for i in range(reference.getMuscles().getSize())]


def _walker_contact_states(osim, path, samples, seed):
    """(model, OpenSim model, state, coordinates, HuntCrossleyForces) with only the contact forces on in OpenSim;
    yields (q, v) with the pelvis lowered 3 mm below the first contact with the platform (bisection on Pelvis_ty
    with OpenSim's own forces), v random."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # the impossible inertias are reported, kept as OpenSim keeps them
        model = biobullet.load_model(str(path))
    reference = osim.Model(str(path))
    for force in reference.getForceSet():
        force.set_appliesForce(force.getConcreteClassName() == "HuntCrossleyForce")
    state = reference.initSystem()
    coordinates = {c.getName(): c for c in reference.getCoordinateSet()}
    contacts = [f for f in reference.getForceSet() if f.getConcreteClassName() == "HuntCrossleyForce"]
    names = model.coordinate_names

    def touching(q):
        for name, value in zip(names, q):
            coordinates[name].setValue(state, float(value), False)
            coordinates[name].setSpeedValue(state, 0.0)
        reference.realizeDynamics(state)
        return any(f.getRecordValues(state).get(i) != 0.0 for f in contacts for i in range(6))

    rng = np.random.default_rng(seed)
    height = names.index("Pelvis_ty")
    found = []
    while len(found) < samples:
        q = np.array([rng.uniform(max(coordinates[n].getRangeMin(), -1.0), min(coordinates[n].getRangeMax(), 1.0))
                      for n in names])
        low, high = -1.0, 2.0
        q[height] = low
        if not touching(q):
            continue
        while high - low > 1e-9:
            q[height] = 0.5 * (low + high)
            low, high = (q[height], high) if touching(q) else (low, q[height])
        q[height] = high - 3e-3
        found.append((q, rng.normal(size=len(names)) * 0.3))
    return model, reference, state, coordinates, found


@pytest.mark.parametrize("friction", [True, False], ids=["sliding", "sliding_without_friction"])
def test_walker_feet_on_a_welded_platform_match_opensims_contact(tmp_path, friction):
    """WalkerModel.osim's Hunt–Crossley spheres (feet, knees, hips) touch a ContactHalfSpace on a Platform body
    welded to the ground: all six pairs were reported 'not imported (only spheres on a ground half-space)', so the
    walker fell through its floor. A welded body does not move, so its half-space is a ground half-space. Now, with
    only the contact forces on in OpenSim, at 4 poses 3 mm into the (tilted) platform, sliding: q̈ ≤ 1e-9 relative
    to OpenSim's, with the file's friction (applied at Simbody's point, docs/opensim.md) and with the friction
    coefficients set to 0."""
    from biobullet.contact.element import contact_elements
    from biobullet.forces.collection import applied_forces
    osim = import_opensim()
    path = UNSEEN / "WalkerModel.osim"
    if not friction:
        text = re.sub(r"<(static_friction|dynamic_friction|viscous_friction)>[^<]*<", r"<\1>0<", path.read_text())
        path = tmp_path / "walker_frictionless.osim"
        path.write_text(text)
    model, reference, state, coordinates, states = _walker_contact_states(osim, path, 4, seed=4)
    elements = contact_elements(model)
    assert len(elements) == 6
    for q, v in states:
        for name, value, rate in zip(model.coordinate_names, q, v):
            coordinates[name].setValue(state, float(value), False)
            coordinates[name].setSpeedValue(state, float(rate))
        reference.realizeAcceleration(state)
        expected = np.array([coordinates[n].getAccelerationValue(state) for n in model.coordinate_names])
        x, x_dot, _, _ = model.joint_state(q, v)
        tau = model.generalized_forces(applied_forces(model, x, x_dot, elements=elements), q)
        error = np.linalg.norm(model.forward_dynamics(q, v, tau) - expected) / np.linalg.norm(expected)
        assert error <= 1e-9, error


#: one coordinate on rotation2 and rotation3 of a CustomJoint (rotation1 constant), written for this test: the
#: smallest form of Rajagopal2016's walker knee, whose knee_angle drives all three rotations
TWO_ROTATIONS = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><Model name="two_rotations"><gravity>0.3 -9.80665 0.2</gravity><Ground name="ground"/>
 <BodySet name="bodyset"><objects><Body name="b"><mass>0.6</mass><mass_center>0.01 -0.05 -0.01</mass_center>
  <inertia>0.006 0.002 0.0055 0.0002 0 0</inertia></Body></objects></BodySet>
 <JointSet name="jointset"><objects><CustomJoint name="custom">
  <socket_parent_frame>ground_offset</socket_parent_frame><socket_child_frame>b_offset</socket_child_frame>
  <coordinates><Coordinate name="c"><default_value>0</default_value><range>-1 1</range></Coordinate></coordinates>
  <frames><PhysicalOffsetFrame name="ground_offset"><socket_parent>/ground</socket_parent>
    <translation>0.01 -0.2 0.03</translation><orientation>0.3 -0.2 0.5</orientation></PhysicalOffsetFrame>
   <PhysicalOffsetFrame name="b_offset"><socket_parent>/bodyset/b</socket_parent>
    <translation>-0.02 0.05 0.01</translation><orientation>-0.1 0.4 0.2</orientation></PhysicalOffsetFrame></frames>
  <SpatialTransform>
   <TransformAxis name="rotation1"><coordinates></coordinates><axis>0 0 1</axis><Constant name="function"><value>0</value></Constant></TransformAxis>
   <TransformAxis name="rotation2"><coordinates>c</coordinates><axis>1 0 0</axis><LinearFunction name="function"><coefficients>0.5 0</coefficients></LinearFunction></TransformAxis>
   <TransformAxis name="rotation3"><coordinates>c</coordinates><axis>0 1 0</axis><LinearFunction name="function"><coefficients>0.3 0</coefficients></LinearFunction></TransformAxis>
   <TransformAxis name="translation1"><coordinates></coordinates><axis>1 0 0</axis><Constant name="function"><value>0</value></Constant></TransformAxis>
   <TransformAxis name="translation2"><coordinates></coordinates><axis>0 1 0</axis><Constant name="function"><value>0</value></Constant></TransformAxis>
   <TransformAxis name="translation3"><coordinates></coordinates><axis>0 0 1</axis><Constant name="function"><value>0</value></Constant></TransformAxis>
  </SpatialTransform></CustomJoint></objects></JointSet>
</Model></OpenSimDocument>
"""


def test_one_coordinate_on_two_rotations_follows_lagrange_on_opensims_mass_matrix(tmp_path):
    """Rajagopal2016 (opensim-models) imports with placements and M equal to OpenSim's (≤ 1e-14) but q̈ 3e-5 off
    OpenSim's: OpenSim 4.6 drops velocity terms when one coordinate drives rotation2 and rotation3 of a
    CustomJoint (here its velocity term is ≈ 0; with no force its own Manager loses 5.8 % of the kinetic energy in
    1 s). The independent check, on one coordinate: T = ½ M(q) q̇² with OpenSim's M, so h(q, q̇) − h(q, 0) =
    ½ M'(q) q̇² (M' by central differences of OpenSim's M, step 1e-5: ≈ 1e-10 relative truncation)."""
    osim = import_opensim()
    path = tmp_path / "two_rotations.osim"
    path.write_text(TWO_ROTATIONS)
    model = biobullet.load_model(str(path))
    reference = osim.Model(str(path))
    state = reference.initSystem()
    coordinate = reference.getCoordinateSet().get("c")

    def opensim_mass(q):
        coordinate.setValue(state, float(q), False)
        reference.realizePosition(state)
        matrix = osim.Matrix()
        reference.getMatterSubsystem().calcM(state, matrix)
        return matrix.get(0, 0)

    step = 1e-5
    for q in (-0.8, -0.3, 0.1, 0.6):
        for rate in (1.0, -2.5):
            assert abs(model.mass_matrix([q])[0, 0] - opensim_mass(q)) <= 1e-12 * opensim_mass(q)
            expected = 0.5 * (opensim_mass(q + step) - opensim_mass(q - step)) / (2 * step) * rate ** 2
            velocity_terms = model.bias_forces([q], [rate])[0] - model.bias_forces([q], [0.0])[0]
            assert abs(velocity_terms - expected) <= 1e-7 * abs(expected), (q, velocity_terms, expected)


def test_a_muscle_switched_off_in_the_file_does_not_pull(tmp_path):
    """Tug_of_War_Millard with LeftMuscle's `appliesForce` false: OpenSim applies no force from it, but it was
    imported as a `<muscle>` and pulled (after 0.3 s the block at −0.032 m where OpenSim's is at −0.161 m). Now it
    is left out, like the other forces switched off in a file, and the run follows OpenSim's Manager (accuracy
    1e-10; ours rtol 1e-11; observed 4e-12 m) to 1e-7 m and 1e-6 m/s."""
    from muscle_models import opensim_run
    osim = import_opensim()
    text = (Path(biobullet.__file__).parent / "data" / "opensim" / "Tug_of_War_Millard.osim").read_text()
    start = text.index('<Millard2012EquilibriumMuscle name="LeftMuscle">')
    flag = text.index("<appliesForce>", start)
    path = tmp_path / "tug_left_switched_off.osim"
    path.write_text(text[:flag] + "<appliesForce>false" + text[text.index("</appliesForce>", flag):])
    excitations = {"RightMuscle": 0.8, "LeftMuscle": 0.3}
    _, values, _ = opensim_run(osim, str(path), excitations, 0.1, 0.3)
    model = biobullet.load_model(str(path))
    assert biobullet.muscles.names(model) == ("RightMuscle",)
    run = biobullet.simulate(model, 0.3, initial=(np.zeros(1), np.zeros(1)), excitations={"RightMuscle": 0.8},
                             activations=0.1, rtol=1e-11, atol=1e-12, t_eval=[0.0, 0.3], progress=False)
    assert abs(run.q[-1, 0] - values["block_tz"][0]) <= 1e-7
    assert abs(run.v[-1, 0] - values["block_tz"][1]) <= 1e-6


def test_ignore_activation_dynamics_is_named_not_silently_dropped(tmp_path):
    """Tug_of_War_Millard with `ignore_activation_dynamics` true (OpenSim: activation = excitation, no lag): the
    flag was dropped without a word and the block ran 2 % off OpenSim's Manager after 0.3 s (−0.03248 m against
    −0.03317 m). Each such muscle is now named in a warning (the activation dynamics are kept), and
    `convert --strict` refuses the file (exit 2)."""
    from biobullet.cli import main
    text = (Path(biobullet.__file__).parent / "data" / "opensim" / "Tug_of_War_Millard.osim").read_text()
    assert text.count("<ignore_activation_dynamics>false</ignore_activation_dynamics>") == 2
    path = tmp_path / "tug_no_activation_dynamics.osim"
    path.write_text(text.replace("<ignore_activation_dynamics>false", "<ignore_activation_dynamics>true"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        biobullet.load_model(str(path))
    messages = [str(w.message) for w in caught]
    for muscle in ("RightMuscle", "LeftMuscle"):
        assert any(f"muscle {muscle}: ignore_activation_dynamics is not imported" in m for m in messages), messages
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["convert", str(path), "--out", str(tmp_path / "tug.urdf"), "--strict"]) == 2


@pytest.mark.parametrize("knee", [0.25, 0.35])
def test_moment_arms_beyond_a_coordinate_range_follow_opensims_lengths(knee):
    """leg6dof9musc's knee past its range (upper end 0.1745 rad; Leg39 of opensim-models runs there under
    excitation 0.4 after 65 ms). OpenSim holds a MovingPathPoint's coordinate at the range end, so its lengths stop
    changing with the knee through those points; ours too (R = −dl/dq: the points' ∂p/∂c is 0 there). OpenSim's
    own `computeMomentArm` — and the force it applies — keep the function's slope: 0.0316 m for rect_fem_r at 0.3 rad
    against −dl/dq of its lengths 0.0786 m, so a run of Leg39 parts from OpenSim's Manager once the knee passes the
    range (docs/muscles.md). Checked: R over the knee equals central differences of OpenSim's lengths (h = 1e-6,
    truncation ≈ 1e-12 m) to 1e-9 m."""
    osim = import_opensim()
    path = str(Path(biobullet.__file__).parent / "data" / "opensim" / "leg6dof9musc.osim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # markers, the toes' inertia
        model = biobullet.load_model(path)
    reference = osim.Model(path)
    state = reference.initSystem()
    names = biobullet.muscles.names(model)
    column = model.coordinate_names.index("knee_angle_r")
    q, _ = model.initial_state()

    coordinates = reference.getCoordinateSet()
    couplers = [osim.CoordinateCouplerConstraint.safeDownCast(c) for c in reference.getConstraintSet()]

    def opensim_lengths(value):
        for name, x in zip(model.coordinate_names, q):
            coordinates.get(name).setValue(state, float(value if name == "knee_angle_r" else x), False)
        for coupler in couplers:    # the patella's coordinates follow the knee through OpenSim's own functions
            inputs = coupler.getIndependentCoordinateNames()
            x = osim.Vector(inputs.getSize(), 0.0)
            for i in range(inputs.getSize()):
                x.set(i, coordinates.get(inputs.get(i)).getValue(state))
            scale = osim.PropertyHelper.getValueDouble(coupler.getPropertyByName("scale_factor"))
            coordinates.get(coupler.getDependentCoordinateName()).setValue(
                state, scale * coupler.getFunction().calcValue(x), False)
        reference.realizePosition(state)
        return np.array([reference.getMuscles().get(name).getLength(state) for name in names])

    q[column] = knee
    step = 1e-6
    expected = -(opensim_lengths(knee + step) - opensim_lengths(knee - step)) / (2 * step)
    arms = biobullet.muscles.moment_arms(model, q)[:, column]
    assert np.abs(arms - expected).max() <= 1e-9, dict(zip(names, arms - expected))
    assert abs(arms[names.index("rect_fem_r")]) > 0.05   # the patella's points do move the path here


def test_validate_names_pybullets_refusal_of_the_walkers_inertias(capsys):
    """`biobullet validate WalkerModel.osim` ended in 'internal error: SystemError: calculateMassMatrix returned a
    result with an exception set': the file's inertias break the triangle inequality (OpenSim keeps them), the
    PyBullet oracle sets them (changeDynamics) and Bullet's inverse dynamics then refuses every call. Now the oracle
    declines the model with a note quoting Bullet, and Pinocchio's checks run (they agree: exit 0)."""
    from biobullet.cli import main
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["validate", str(UNSEEN / "WalkerModel.osim"), "--samples", "2"])
    out = capsys.readouterr()
    assert "internal error" not in out.out + out.err
    assert "oracle pybullet not used: PyBullet's inverse dynamics refuses the file's inertia tensors" in out.out
    assert "I(0,0) + I(1,1) < I(2,2)" in out.out
    assert code == 0


@pytest.mark.parametrize("clamped", ["true", "false"])
def test_a_clamped_coordinates_default_outside_its_range(tmp_path, capsys, clamped):
    """arm26's elbow with default −0.5 below its range [0, 2.27]: OpenSim refuses the file when the coordinate is
    clamped ('Default coordinate value is less than range minimum') and starts at −0.5 when it is not. biobullet
    loaded both and started at −0.5; now the clamped one is one error naming the coordinate and the attribute
    (exit 2), and the unclamped one starts where OpenSim's does."""
    from biobullet.cli import main
    osim = import_opensim()
    text = (Path(biobullet.__file__).parent / "data" / "opensim" / "arm26.osim").read_text()
    start = text.index('<Coordinate name="r_elbow_flex">')
    block = text[start:text.index("</Coordinate>", start)]
    assert "<default_value>0</default_value>" in block and "<clamped>false</clamped>" in block
    path = tmp_path / "arm26_elbow_default.osim"
    path.write_text(text.replace(block, block.replace("<default_value>0<", "<default_value>-0.5<")
                                 .replace("<clamped>false<", f"<clamped>{clamped}<")))
    if clamped == "true":
        with pytest.raises(Exception, match="Default coordinate value is less than range minimum"):
            osim.Model(str(path)).initSystem()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert main(["info", str(path)]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert ('<Coordinate name="r_elbow_flex">: attribute \'default_value\': default -0.5 outside the range '
                '[0, 2.26893] of a clamped coordinate') in err
    else:
        reference = osim.Model(str(path))
        state = reference.initSystem()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")    # markers
            model = biobullet.load_model(str(path))
        q, _ = model.initial_state()
        elbow = reference.getCoordinateSet().get("r_elbow_flex").getValue(state)
        assert q[model.coordinate_names.index("r_elbow_flex")] == elbow == -0.5


def test_a_massless_body_with_an_inertia_has_none_as_in_opensim(tmp_path):
    """arm26 with the humerus's mass set to 0 and its inertia kept: OpenSim (Body::getInertia) resets the inertia
    of a massless body to zero; biobullet kept it, so M was 13 % and q̈ 20 % off OpenSim's. Now at 5 random states,
    all OpenSim forces off: M ≤ 1e-12 relative, q̈ under gravity and random generalized forces ≤ 1e-9 relative."""
    osim = import_opensim()
    text = (Path(biobullet.__file__).parent / "data" / "opensim" / "arm26.osim").read_text()
    start = text.index("<mass>", text.index('<Body name="r_humerus">'))
    path = tmp_path / "arm26_massless_humerus.osim"
    path.write_text(text[:start] + "<mass>0" + text[text.index("</mass>", start):])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # markers
        model = biobullet.load_model(str(path))
    reference = osim.Model(str(path))
    reference.initSystem()
    moments = reference.getBodySet().get("r_humerus").getInertia().getMoments()
    assert [moments.get(i) for i in range(3)] == [0.0, 0.0, 0.0]   # the oracle does reset it
    _check_unconstrained_dynamics(osim, model, str(path), seed=8)


def test_a_control_for_an_actuator_on_a_locked_coordinate_moves_nothing(tmp_path):
    """Rajagopal2016 (opensim-models) has reserve CoordinateActuators on its locked wrist coordinates:
    `actuator_forces` refused a control for them ('its coordinate is locked or unknown'), so a controls mapping
    over all of `osim_actuators` failed. In OpenSim the lock takes such a force. Here arm26 with its shoulder locked
    at 0.4 rad and motors on the shoulder and the elbow, driven together: q̈ equals OpenSim's (muscles off, the
    motors' actuation overridden to optimal force × control) to 1e-9 relative at 3 random states."""
    from biobullet.opensim import actuator_forces, osim_actuators
    osim = import_opensim()
    text = (Path(biobullet.__file__).parent / "data" / "opensim" / "arm26.osim").read_text()
    start = text.index('<Coordinate name="r_shoulder_elev">')
    block = text[start:text.index("</Coordinate>", start)]
    text = text.replace(block, block.replace("<locked>false<", "<locked>true<").replace("<default_value>0<",
                                                                                       "<default_value>0.4<"))
    motors = "".join(f'<CoordinateActuator name="{name}"><coordinate>{coordinate}</coordinate>'
                     f"<optimal_force>{force}</optimal_force></CoordinateActuator>"
                     for name, coordinate, force in (("shoulder_motor", "r_shoulder_elev", 50.0),
                                                     ("elbow_motor", "r_elbow_flex", 20.0)))
    marker = '<ForceSet name="forceset">\n\t\t\t<objects>\n'
    assert marker in text
    path = tmp_path / "arm26_locked_shoulder.osim"
    path.write_text(text.replace(marker, marker + motors))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # markers
        model = biobullet.load_model(str(path))
        actuators = osim_actuators(str(path))
    assert model.coordinate_names == ("r_elbow_flex",) and set(actuators) == {"shoulder_motor", "elbow_motor"}
    reference = osim.Model(str(path))
    for force in reference.getMuscles():
        force.set_appliesForce(False)
    state = reference.initSystem()
    elbow = reference.getCoordinateSet().get("r_elbow_flex")
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, v = np.array([rng.uniform(0.1, 2.0)]), np.array([rng.normal()])
        controls = {"shoulder_motor": float(rng.normal()), "elbow_motor": float(rng.normal())}
        elbow.setValue(state, float(q[0]), False)
        elbow.setSpeedValue(state, float(v[0]))
        for name, control in controls.items():
            motor = osim.CoordinateActuator.safeDownCast(reference.getForceSet().get(name))
            motor.overrideActuation(state, True)
            motor.setOverrideActuation(state, motor.getOptimalForce() * control)
        reference.realizeAcceleration(state)
        expected = elbow.getAccelerationValue(state)
        qdd = model.forward_dynamics(q, v, actuator_forces(model, actuators, q, controls))[0]
        assert abs(qdd - expected) <= 1e-9 * abs(expected), (qdd, expected)
