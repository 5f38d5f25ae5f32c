"""Moment arms of wrapped paths, R = −dl/dq (forward-mode tangents carried through each wrap's algebra,
`muscles.path`), against central differences of OpenSim 4.6's own lengths (the definition, h = 1e-6 and 1e-7 rad):

- a muscle from the ground over a surface fixed in the ground to an arm on a ball joint, for every surface kind
  (cylinder, sphere, ellipsoid, torus) and quadrant (all sides, and constrained ones), at random poses and at
  poses 1e-5 rad either side of each place along a line of poses where the wrap switches on or off or jumps to
  another side (found by bisection to 1e-8 rad, so no difference stencil straddles it);
- arm26 (cylinders, ellipsoids, several wraps per path) through the muscle stage of the pipeline: τ = Σ T_m R_m
  against the same sum with OpenSim's −dl/dq.

The model and the coordinates are ours (`load_model`, `muscles.moment_arms`, the stage); OpenSim supplies only
lengths. Tolerance: 1e-7 m plus the difference quotients' own error, estimated from two steps (`_excess`); away
from switches that error is about 1e-11 m (round-off ≈ 0.2 m × 1e-16 / 1e-6, truncation ≈ h² l‴ ≈ 1e-12 m)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from muscle_models import ARM26
from opensim_oracle import import_opensim

osim = import_opensim()

import biobullet  # noqa: E402
import biobullet.muscles as muscles  # noqa: E402
from biobullet.muscles.dynamics import TENDON_FORCE, evaluate_stage, pack_muscles  # noqa: E402
from biobullet.muscles.hill import L_SLACK  # noqa: E402

STEP = 1e-6
SURFACES = {
    "cylinder": '<WrapCylinder name="obj"><xyz_body_rotation>0.3 -0.2 0.5</xyz_body_rotation>'
                '<translation>0.01 0 0.005</translation><quadrant>QUADRANT</quadrant><radius>0.03</radius>'
                '<length>0.3</length></WrapCylinder>',
    "sphere": '<WrapSphere name="obj"><xyz_body_rotation>0.3 -0.2 0.5</xyz_body_rotation>'
              '<translation>0.01 0 0.005</translation><quadrant>QUADRANT</quadrant><radius>0.04</radius></WrapSphere>',
    "ellipsoid": '<WrapEllipsoid name="obj"><xyz_body_rotation>0.3 -0.2 0.5</xyz_body_rotation>'
                 '<translation>0.01 0 0.005</translation><quadrant>QUADRANT</quadrant>'
                 '<dimensions>0.03 0.045 0.035</dimensions></WrapEllipsoid>',
    "torus": '<WrapTorus name="obj"><xyz_body_rotation>0.2 -0.1 0.3</xyz_body_rotation>'
             '<translation>0.005 0 -0.003</translation><quadrant>QUADRANT</quadrant><inner_radius>0.015</inner_radius>'
             '<outer_radius>0.05</outer_radius></WrapTorus>',
}
#: (joint offset in the ground, origin on the ground, insertion on the arm) per kind: paths that wrap in some poses
PLACES = {"torus": ("0 0 -0.09", "0.05 0.005 0.08", "0.07 0.0 -0.05"),
          "sphere": ("0 0.06 0", "0.02 0.09 0.01", "0.015 -0.12 0.02"),
          "ellipsoid": ("0 0.06 0", "0.02 0.09 0.01", "0.015 -0.12 0.02")}
PLACE = ("0 0.06 0", "0.02 0.09 0.01", "0.015 -0.18 0.02")

MODEL = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><Model name="wrap_KIND">
 <Ground name="ground"><WrapObjectSet><objects>SURFACE</objects></WrapObjectSet></Ground>
 <BodySet><objects><Body name="arm"><mass>1</mass><mass_center>0 -0.2 0</mass_center><inertia>0.01 0.01 0.01 0 0 0</inertia></Body></objects></BodySet>
 <JointSet><objects><BallJoint name="shoulder"><socket_parent_frame>ground_offset</socket_parent_frame>
  <socket_child_frame>arm_offset</socket_child_frame>
  <coordinates><Coordinate name="q1"><range>-3 3</range></Coordinate><Coordinate name="q2"><range>-3 3</range></Coordinate>
   <Coordinate name="q3"><range>-3 3</range></Coordinate></coordinates>
  <frames><PhysicalOffsetFrame name="ground_offset"><socket_parent>/ground</socket_parent><translation>JOINT</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
   <PhysicalOffsetFrame name="arm_offset"><socket_parent>/bodyset/arm</socket_parent><translation>0 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame></frames>
 </BallJoint></objects></JointSet>
 <ForceSet><objects><DeGrooteFregly2016Muscle name="wrapper">
  <GeometryPath><PathPointSet><objects>
   <PathPoint name="origin"><socket_parent_frame>/ground</socket_parent_frame><location>ORIGIN</location></PathPoint>
   <PathPoint name="insertion"><socket_parent_frame>/bodyset/arm</socket_parent_frame><location>INSERTION</location></PathPoint>
  </objects></PathPointSet>
  <PathWrapSet><objects><PathWrap name="w"><wrap_object>obj</wrap_object><method>hybrid</method><range>-1 -1</range></PathWrap></objects></PathWrapSet>
  </GeometryPath><max_isometric_force>100</max_isometric_force><optimal_fiber_length>0.1</optimal_fiber_length><tendon_slack_length>0.05</tendon_slack_length>
 </DeGrooteFregly2016Muscle></objects></ForceSet>
</Model></OpenSimDocument>
"""


def _load_quietly(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return biobullet.load_model(path)


class _OpenSimLengths:
    """OpenSim's lengths of every muscle at coordinates q (our coordinate order) and −dl/dq by central differences."""

    def __init__(self, path, names):
        self.model = osim.Model(str(path))
        self.state = self.model.initSystem()
        coordinate_set = self.model.getCoordinateSet()
        self.coordinates = [coordinate_set.get(name) for name in names]

    def lengths(self, q):
        for coordinate, value in zip(self.coordinates, q):
            coordinate.setValue(self.state, float(value), False)
        self.model.realizePosition(self.state)
        muscle_set = self.model.getMuscles()
        return np.array([muscle_set.get(i).getLength(self.state) for i in range(muscle_set.getSize())])

    def moment_arms(self, q):
        columns = []
        for j in range(len(q)):
            step = np.zeros(len(q))
            step[j] = STEP
            columns.append(-(self.lengths(q + step) - self.lengths(q - step)) / (2 * STEP))
        return np.array(columns).T


def _wrapped(model, q) -> bool:
    return len(muscles.path_polylines(model, model.joint_configuration(q))[0]) > 2


def _switch_poses(model, a, b):
    """Poses 1e-5 rad (along the line) either side of a wrap switch between poses a and b (bisection to 1e-8)."""
    low, high = 0.0, 1.0
    status = _wrapped(model, a)
    length = np.linalg.norm(b - a)
    while (high - low) * length > 1e-8:
        middle = 0.5 * (low + high)
        if _wrapped(model, a + middle * (b - a)) == status:
            low = middle
        else:
            high = middle
    offset = 1e-5 / length
    return [a + (low - offset) * (b - a), a + (high + offset) * (b - a)]


def _poses(model, n=12, spread=1.5, seed=5):
    """Random poses along a line (each coordinate within ±spread rad) and the poses either side of each switch
    between consecutive ones; (poses, number of switches)."""
    rng = np.random.default_rng(seed)
    line = [rng.uniform(-spread, spread, model.nq) for _ in range(n)]
    poses, switches = list(line), 0
    for a, b in zip(line, line[1:]):
        if _wrapped(model, a) != _wrapped(model, b):
            poses += _switch_poses(model, a, b)
            switches += 1
    return poses, switches


def _excess(ours, theirs, q, bound):
    """max |R − R_OpenSim| / (bound + the difference quotient's error), R_OpenSim by central differences of
    OpenSim's lengths at h = 1e-6 and 1e-7, the nearer taken per entry. Their difference d bounds the error of one
    of them: where truncation (∝ h²) dominates, that of h = 1e-7 is d/99 — near a switch the lengths can curve
    steeply (third derivatives of 1e5 m: h = 1e-6 is off by 0.4 m, ours agrees with h = 1e-8 to 1e-5); where the
    lengths' round-off noise (∝ 1/h) dominates, that of h = 1e-6 is d/9 — OpenSim's sphere lengths scatter by
    ≈ 4e-13 m, 4e-7 m in a quotient at h = 1e-6. Allowance: bound + 0.2 d."""
    global STEP
    coarse = theirs.moment_arms(q)
    STEP = 1e-7
    try:
        fine = theirs.moment_arms(q)
    finally:
        STEP = 1e-6
    error = np.minimum(np.abs(ours - coarse), np.abs(ours - fine))
    return float(np.max(error / (bound + 0.2 * np.abs(coarse - fine))))


BOUND = 1e-7   # m, on |R − (−dl/dq of OpenSim's lengths)| beyond the difference quotients' own error


@pytest.mark.parametrize("kind", sorted(SURFACES))
@pytest.mark.parametrize("quadrant", ["all", "+x", "+y"])
def test_wrapped_moment_arms_are_minus_the_derivative_of_opensim_lengths(kind, quadrant, tmp_path):
    joint, origin, insertion = PLACES.get(kind, PLACE)
    path = tmp_path / f"{kind}.osim"
    path.write_text(MODEL.replace("KIND", kind).replace("SURFACE", SURFACES[kind].replace("QUADRANT", quadrant))
                    .replace("JOINT", joint).replace("ORIGIN", origin).replace("INSERTION", insertion))
    model = _load_quietly(path)
    theirs = _OpenSimLengths(path, model.coordinate_names)
    poses, switches = _poses(model)
    worst, wrapped = 0.0, 0
    for q in poses:
        assert abs(muscles.lengths(model, q)[0] - theirs.lengths(q)[0]) <= 1e-9
        worst = max(worst, _excess(muscles.moment_arms(model, q), theirs, q, BOUND))
        wrapped += int(_wrapped(model, q))
    print(kind, quadrant, "worst error / bound", worst, "wrapped", wrapped, "of", len(poses), "switches", switches)
    assert worst <= 1.0
    assert 0 < wrapped < len(poses) and switches >= 1   # wrapped and straight poses, and switches, all checked


@pytest.mark.parametrize("frame_twists", [False, True], ids=["tree directions", "frame twists"])
def test_arm26_muscle_stage_generalized_forces_match_opensim_moment_arms(frame_twists):
    """The stage's τ = Σ_m T_m R_m (its forward-mode gradients of every arm26 path: cylinders, ellipsoids, three
    wraps on TRIlong) against Σ_m T_m (−dl/dq of OpenSim's lengths), with the stage's own tendon forces T — for the
    engine's mode (wrapped paths along the tree's directions) and the bridge's (along each frame's unit twists, τ
    from the per-frame wrenches through the motion subspaces)."""
    model = _load_quietly(ARM26)
    theirs = _OpenSimLengths(ARM26, model.coordinate_names)
    rows = pack_muscles(model, frame_twists)
    n_muscles = rows.excitation.shape[0]
    state = np.zeros(rows.state.shape[0])
    state[:n_muscles] = 0.5
    compliant = rows.fiber_state >= 0
    rng = np.random.default_rng(2)
    worst = 0.0
    for _ in range(6):
        q = np.array([rng.uniform(-0.5, 1.5), rng.uniform(0.0, 2.2)])
        # fibers 2 % of the tendon slack length short of the path: every tendon stretched, T > 0
        fibers = muscles.lengths(model, q) - 1.02 * rows.table.muscle[:, L_SLACK]
        state[rows.fiber_state[compliant]] = fibers[compliant]
        tau = np.zeros(model.n_tangent)
        evaluate_stage(model, rows, q, np.zeros(model.nv), state, tau)
        tension = rows.outputs[:, TENDON_FORCE]
        assert np.all(tension > 0.0)
        expected = tension @ theirs.moment_arms(q)
        worst = max(worst, float(np.max(np.abs(tau - expected) / np.sum(np.abs(tension)))))
    print("arm26 stage: worst |τ − Σ T R_OpenSim| / Σ|T|", worst)
    assert worst <= 1e-8   # m (6e-11 observed)
