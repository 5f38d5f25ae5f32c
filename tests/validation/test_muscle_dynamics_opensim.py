"""Forward simulation with muscles against OpenSim 4.6's Manager: arm26 (Thelen2003, compliant tendons) under a
constant excitation of 0.5 for 1 s from rest at the default pose, activations 0.05, fibers equilibrated
(`equilibrateMuscles`; ours: static equilibrium to round-off), gravity on.

Muscles: TRIlat, TRImed (over the cylinder wrap "TRI") and BICshort. BIClong, TRIlong and BRA are left out:
on their wrapped paths OpenSim applies R_osᵀ T with R_os its `computeMomentArm`, which is not −dl/dq of its own
lengths (measured below, `test_arm26_opensim_applies_compute_moment_arm_not_the_length_derivative`), while ours is
−T dl/dq; with all six the elbow parts by 1.35e-3 rad at 80 ms (docs/muscles.md), as much as that difference
predicts (`test_arm26_six_muscles_part_from_opensim_as_the_moment_arm_difference_predicts`, 10 ms; a 1-s run of the
six costs 30–60 s of CPU). The skeleton alone agrees with OpenSim to 1e-8 (tests/unit/opensim/test_opensim_oracle.py).

Tug_of_War_Millard (a block on a slider between two Millard2012Equilibrium muscles, compliant tendons, fiber damping
0.1) under excitations 0.8 and 0.3 from activations 0.1, as filed and with its muscles turned into
DeGrooteFregly2016Muscle (compliant, no damping) by OpenSim's own `replaceMuscles`.

Tolerances: OpenSim's Manager at accuracy 1e-10 and the engine at rtol 1e-11, atol 1e-12 — the gap is the two
integrators' error (observed: arm26 1.5e-8 rad, 1.5e-7 rad/s, 4e-11 m; Tug_of_War 3e-12 m, 5e-11 m/s, DeGroote
5e-14 m); bounds 1e-7 (rad or m), 1e-6 (rad/s or m/s), fiber lengths 1e-9 m, activations 1e-9.
"""
from __future__ import annotations

import numpy as np
import pytest

osim = pytest.importorskip("opensim")
osim.Logger.setLevelString("error")

import biobullet  # noqa: E402
from muscle_models import ARM26, arm26_with, load_quietly, opensim_run  # noqa: E402

pytestmark = pytest.mark.skipif(not ARM26.is_file(), reason="the bundled OpenSim models are missing")
MUSCLES = ("TRIlat", "TRImed", "BICshort")
EXCITATION, ACTIVATION, T_END = 0.5, 0.05, 1.0


def test_arm26_one_second_under_constant_excitation_matches_opensims_manager(tmp_path):
    path = arm26_with(MUSCLES, tmp_path)
    start, values, final = opensim_run(osim, path, EXCITATION, ACTIVATION, T_END)
    model = load_quietly(path)
    run = biobullet.simulate(model, T_END, initial=(np.zeros(2), np.zeros(2)), excitations=EXCITATION,
                             activations=ACTIVATION, rtol=1e-11, atol=1e-12, t_eval=[0.0, T_END], progress=False)
    names = biobullet.muscles.names(model)
    expected_q = np.array([values[c][0] for c in model.coordinate_names])
    expected_v = np.array([values[c][1] for c in model.coordinate_names])
    assert np.abs(run.q[-1] - run.q[0]).max() > 0.2   # the arm moves
    assert np.abs(run.q[-1] - expected_q).max() <= 1e-7
    assert np.abs(run.v[-1] - expected_v).max() <= 1e-6
    assert np.abs(run.muscles["fiber_length"][0] - [start[n] for n in names]).max() <= 1e-9
    assert np.abs(run.muscles["fiber_length"][-1] - [final[n][0] for n in names]).max() <= 1e-9
    assert np.abs(run.muscles["activation"][-1] - [final[n][1] for n in names]).max() <= 1e-9


TUG = {"RightMuscle": 0.8, "LeftMuscle": 0.3}


@pytest.mark.parametrize("kind", ["millard2012", "degroote2016"])
def test_tug_of_war_one_second_matches_opensims_manager(kind, tmp_path):
    path = str(ARM26.parent / "Tug_of_War_Millard.osim")
    if kind == "degroote2016":   # OpenSim's own conversion, written out and loaded by both
        converted = osim.Model(path)
        osim.DeGrooteFregly2016Muscle.replaceMuscles(converted)
        for k in range(converted.getMuscles().getSize()):
            muscle = osim.DeGrooteFregly2016Muscle.safeDownCast(converted.getMuscles().get(k))
            muscle.set_ignore_tendon_compliance(False)
            muscle.set_fiber_damping(0.0)
        converted.finalizeConnections()
        path = str(tmp_path / "tug_of_war_degroote.osim")
        converted.printToXML(path)
    start, values, final = opensim_run(osim, path, TUG, 0.1, T_END)
    model = load_quietly(path)
    assert {m.model for m in biobullet.muscles.api.muscle_set(model).muscle_set.muscles} == {kind}
    run = biobullet.simulate(model, T_END, initial=(np.zeros(1), np.zeros(1)), excitations=TUG, activations=0.1,
                             rtol=1e-11, atol=1e-12, t_eval=[0.0, T_END], progress=False)
    names = biobullet.muscles.names(model)
    assert abs(run.q[-1, 0]) > 0.02   # the block moves
    assert abs(run.q[-1, 0] - values["block_tz"][0]) <= 1e-7
    assert abs(run.v[-1, 0] - values["block_tz"][1]) <= 1e-6
    assert np.abs(run.muscles["fiber_length"][0] - [start[n] for n in names]).max() <= 1e-9
    assert np.abs(run.muscles["fiber_length"][-1] - [final[n][0] for n in names]).max() <= 1e-9
    assert np.abs(run.muscles["activation"][-1] - [final[n][1] for n in names]).max() <= 1e-9


def _tensions_arms_mass(model, state):
    """OpenSim's tendon forces (N), `computeMomentArm` (n_muscles × 2, m) and mass matrix at a realized state."""
    coordinates, muscles = model.getCoordinateSet(), model.getMuscles()
    n = muscles.getSize()
    tension = np.array([muscles.get(k).getTendonForce(state) for k in range(n)])
    arms = np.array([[muscles.get(k).computeMomentArm(state, coordinates.get(i)) for i in range(2)] for k in range(n)])
    matrix = osim.Matrix()
    model.getMatterSubsystem().calcM(state, matrix)
    return tension, arms, np.array([[matrix.get(i, j) for j in range(2)] for i in range(2)])


@pytest.mark.parametrize("q", [(0.3, 1.1), (-0.4, 0.2), (0.9, 2.0)])
def test_arm26_opensim_applies_compute_moment_arm_not_the_length_derivative(q):
    """Why arm26 with all six muscles parts from OpenSim's Manager (docs/muscles.md): the generalized force OpenSim
    applies for its muscles, M (u̇ − u̇ without muscles), is R_osᵀ T with R_os its `computeMomentArm` (to
    round-off) — the tension along the straight segments into the wrap tangent points — and R_os is not −dl/dq of
    OpenSim's own lengths (central differences, h = 1e-6) on wrapped paths, which is what our force uses (checked
    in tests/unit/test_muscle_arm26_six.py). The gap in τ is (R − R_os)ᵀ T: 0.05–0.23 N·m at these poses."""
    model = osim.Model(str(ARM26))
    state = model.initSystem()
    coordinates, muscles = model.getCoordinateSet(), model.getMuscles()
    n = muscles.getSize()

    def lengths(values):
        for i, value in enumerate(values):
            coordinates.get(i).setValue(state, value)
        model.realizePosition(state)
        return np.array([muscles.get(k).getLength(state) for k in range(n)])

    h = 1e-6
    derivative = np.column_stack([(lengths(np.add(q, h * e)) - lengths(np.subtract(q, h * e))) / (2 * h)
                                  for e in np.eye(2)])
    lengths(q)
    for k in range(n):
        muscles.get(k).setActivation(state, 0.5)
    model.equilibrateMuscles(state)
    model.realizeAcceleration(state)
    udot = np.array([state.getUDot().get(i) for i in range(2)])
    tension, r_opensim, mass = _tensions_arms_mass(model, state)
    for k in range(n):
        muscles.get(k).setAppliesForce(state, False)
    model.realizeAcceleration(state)
    applied = mass @ (udot - np.array([state.getUDot().get(i) for i in range(2)]))
    assert np.abs(r_opensim.T @ tension - applied).max() <= 1e-9 * tension.sum()
    ours = load_quietly(str(ARM26))
    r_ours = biobullet.muscles.moment_arms(ours, np.array(q))
    assert np.abs(r_ours + derivative).max() <= 1e-6                     # ours: −dl/dq of OpenSim's lengths
    gap = np.abs(r_opensim + derivative).max(axis=1)
    names = biobullet.muscles.names(ours)
    assert gap[names.index("BICshort")] <= 1e-9                          # no wrap: the three agree
    assert gap.max() > 5e-5                                              # a wrapped muscle: they do not
    assert np.abs(r_ours.T @ tension - applied).max() > 1e-2             # ... and the applied force differs


def test_arm26_bra_switches_sides_of_its_cylinder_in_opensims_lengths_too():
    """Why arm26 with all six muscles under u = 0.5 stalled at t ≈ 0.088 s (docs/muscles.md): the triceps drive the
    elbow past its range (0 … 2.27 rad) into hyperextension, and at elbow ≈ −0.03408 rad the straight line between
    BRA's ends over the cylinder "TRI" (quadrant all) crosses the cylinder's axis, so the wrap jumps to the other
    side. The length has a kink there — in OpenSim's lengths as in ours (equal to 1e-9 m on both sides) — and BRA's
    elbow moment arm jumps from +0.0153 m (flexor) to −0.0198 m (extensor).

    Up to the kink the moment arm is smooth: 1e-8 rad either side of the switch ours equals the one-sided limit,
    the linear extrapolation of central differences of OpenSim's lengths at 1e-4 and 2e-4 rad (h = 1e-5 rad,
    inside each side), to 1e-7 m. (Before `wrapping._cylinder_apex_py` the apex's direction came from a cross
    product of nearly opposite vectors: within 1e-6 rad of the switch ours was off by up to 1e-2 m, round-off,
    and the integrator's steps fell to 1e-9 s.)"""
    model = osim.Model(str(ARM26))
    state = model.initSystem()
    coordinates, bra = model.getCoordinateSet(), model.getMuscles().get("BRA")

    def opensim_length(values):
        for i, value in enumerate(values):
            coordinates.get(i).setValue(state, value, False)
        model.realizePosition(state)
        return bra.getLength(state)

    def opensim_arm(q, h=1e-5):
        return -np.array([(opensim_length(q + h * e) - opensim_length(q - h * e)) / (2 * h) for e in np.eye(2)])

    ours = load_quietly(str(ARM26))
    k = biobullet.muscles.names(ours).index("BRA")
    shoulder = -0.02078687
    lo, hi = -0.0341, -0.0340   # the switch lies between: the moment arm's elbow entry changes sign
    for _ in range(50):
        middle = 0.5 * (lo + hi)
        if biobullet.muscles.moment_arms(ours, np.array([shoulder, middle]))[k, 1] > 0.0:
            hi = middle
        else:
            lo = middle
    switch = np.array([shoulder, 0.5 * (lo + hi)])
    elbow_arms = []
    for sign in (1.0, -1.0):
        near, far = (switch + [0.0, sign * d] for d in (1e-4, 2e-4))
        assert abs(biobullet.muscles.lengths(ours, near)[k] - opensim_length(near)) <= 1e-9
        limit = 2.0 * opensim_arm(near) - opensim_arm(far)
        closest = biobullet.muscles.moment_arms(ours, switch + [0.0, sign * 1e-8])[k]
        assert np.abs(closest - limit).max() <= 1e-7
        elbow_arms.append(closest[1])
    assert elbow_arms[0] > 0.015 and elbow_arms[1] < -0.019   # flexor above the switch, extensor below


def test_arm26_six_muscles_part_from_opensim_as_the_moment_arm_difference_predicts():
    """All six muscles at u = 0.5 from rest (a₀ = 0.05, equilibrated), 10 ms: our run parts from OpenSim's Manager
    (accuracy 1e-10; ours rtol 1e-11) by δq(t) = ∫₀ᵗ (t − s) M⁻¹ (R − R_os)ᵀ T ds, the double integral of the
    acceleration that the difference between our R = −dl/dq and OpenSim's applied `computeMomentArm` R_os makes
    (M, T, R_os and q from OpenSim every 0.5 ms, our R at OpenSim's q; trapezoidal rule). That open-loop prediction
    leaves out how δq feeds back into the forces (second order in t beyond t²): observed within 2.5 % up to 6 ms,
    7 % at 10 ms (25 % at 20 ms); bounds 5 % up to 6 ms, 10 % at 10 ms. The parting is 1e-5–1e-4 rad here, three
    orders above the integrators' error (the three-muscle run above agrees to 1.5e-8 rad over 1 s): the moment arm
    difference is the whole of it. Over the full second the elbow crosses BRA's switch (above) 2–12 ms later on
    OpenSim, and the two runs end 2.7e-3 rad apart (shoulder; elbow 2.3e-4; docs/muscles.md)."""
    model = osim.Model(str(ARM26))
    controller = osim.PrescribedController()
    muscles = model.getMuscles()
    n = muscles.getSize()
    for k in range(n):
        controller.addActuator(muscles.get(k))
        controller.prescribeControlForActuator(muscles.get(k).getName(), osim.Constant(EXCITATION))
    model.addController(controller)
    state = model.initSystem()
    for k in range(n):
        muscles.get(k).setActivation(state, ACTIVATION)
    model.equilibrateMuscles(state)
    manager = osim.Manager(model)
    manager.setIntegratorAccuracy(1e-10)
    state.setTime(0.0)
    manager.initialize(state)
    coordinates = model.getCoordinateSet()
    ours = load_quietly(str(ARM26))
    assert biobullet.muscles.names(ours) == tuple(muscles.get(k).getName() for k in range(n))
    times = np.linspace(0.0, 0.01, 21)
    positions, accelerations = [], []
    for t in times:
        current = manager.integrate(t) if t > 0.0 else state
        model.realizeDynamics(current)
        q = np.array([coordinates.get(i).getValue(current) for i in range(2)])
        tension, r_opensim, mass = _tensions_arms_mass(model, current)
        r_ours = biobullet.muscles.moment_arms(ours, q)
        positions.append(q)
        accelerations.append(np.linalg.solve(mass, (r_ours - r_opensim).T @ tension))
    positions, accelerations = np.array(positions), np.array(accelerations)
    predicted = np.array([np.trapezoid((t - times[:j + 1])[:, None] * accelerations[:j + 1], times[:j + 1], axis=0)
                          for j, t in enumerate(times)])
    run = biobullet.simulate(ours, 0.01, initial=(np.zeros(2), np.zeros(2)), excitations=EXCITATION,
                             activations=ACTIVATION, rtol=1e-11, atol=1e-12, t_eval=times, progress=False)
    parting = run.q - positions
    elbow = ours.coordinate_names.index("r_elbow_flex")
    assert np.abs(parting[-1, elbow]) > 1e-5                       # far above the integrators' error
    for j in (4, 8, 12, 20):                                        # 2, 4, 6 and 10 ms
        bound = 0.05 if times[j] <= 0.006 + 1e-12 else 0.10
        assert np.abs(parting[j] - predicted[j]).max() <= bound * np.abs(predicted[j]).max()
