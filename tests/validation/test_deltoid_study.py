"""The deltoid study (biobullet_studies.deltoid): the middle deltoid on the de Groot and Holzbaur shoulders.

Independent checks: (1) where the path misses the humeral head (the segment from the acromion to the deltoid
tuberosity stays > 25 mm from the glenohumeral centre), its length is the distance between the two attachment
points placed by Pinocchio's forward kinematics of the same URDF at the joint values x(q) of the rhythm — to
1e-12 m (round-off); (2) R = −dl/dq against central differences (h = 1e-6 rad) of those Pinocchio lengths, 1e-8 m
(truncation ≈ h² l‴ ≈ 1e-13, round-off ≈ 1e-16/h = 1e-10); (3) on wrapped poses R against central differences of
our own lengths, 1e-7 m; (4) the two rhythms give different moment arms (by more than 1 mm somewhere on the grid),
and the study's summary reports its own check within tolerance.
"""
from __future__ import annotations

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import biobullet.muscles as muscles  # noqa: E402
from biobullet_studies import deltoid  # noqa: E402

ORIGIN = ("scapula", np.array([-0.010, 0.000, 0.025]))
INSERTION = ("humerus", np.array([0.005, -0.100, 0.015]))
HEAD_RADIUS = 0.025


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("deltoid"))
    return {rhythm: deltoid.deltoid_model(rhythm, folder, slack=0.02) for rhythm in deltoid.MODELS}


def _pinocchio_points(model, q):
    """World positions of the two attachments and of the humeral head centre, by Pinocchio at x(q)."""
    oracle = pin.buildModelFromUrdf(str(model.file))
    data = oracle.createData()
    x = model.joint_positions(q)
    configuration = pin.neutral(oracle)
    for k, name in enumerate(model.joint_names):
        if oracle.existJointName(name):
            joint = oracle.joints[oracle.getJointId(name)]
            configuration[joint.idx_q] = x[k]
    pin.forwardKinematics(oracle, data, configuration)
    pin.updateFramePlacements(oracle, data)
    points = []
    for link, local in (ORIGIN, INSERTION, ("humerus", np.zeros(3))):
        placement = data.oMf[oracle.getFrameId(link)]
        points.append(placement.rotation @ local + placement.translation)
    return points


def _clear_of_the_head(points) -> bool:
    a, b, centre = points
    t = np.clip(np.dot(centre - a, b - a) / np.dot(b - a, b - a), 0.0, 1.0)
    return np.linalg.norm(a + t * (b - a) - centre) > HEAD_RADIUS + 1e-3


def test_deltoid_against_pinocchio_and_finite_differences(models):
    checked_free, checked_wrapped = 0, 0
    for rhythm, model in models.items():
        for plane in deltoid.PLANES_DEG:
            for elevation in (10.0, 40.0, 80.0, 110.0, 140.0):
                q = deltoid.pose(model, plane, elevation)
                arms = muscles.moment_arms(model, q)[0]
                points = _pinocchio_points(model, q)
                if _clear_of_the_head(points):
                    assert abs(muscles.lengths(model, q)[0] - np.linalg.norm(points[1] - points[0])) <= 1e-12
                    for j in range(model.nq):
                        sides = []
                        for sign in (1.0, -1.0):
                            shifted = q.copy()
                            shifted[j] += sign * 1e-6
                            a, b, _ = _pinocchio_points(model, shifted)
                            sides.append(np.linalg.norm(b - a))
                        assert abs(arms[j] + (sides[0] - sides[1]) / 2e-6) <= 1e-8, (rhythm, plane, elevation, j)
                    checked_free += 1
                else:
                    assert np.max(np.abs(arms - deltoid.length_derivative(model, q))) <= 1e-7
                    checked_wrapped += 1
    assert checked_free >= 6 and checked_wrapped >= 6


def test_the_rhythm_changes_the_deltoid_moment_arms(models):
    largest = 0.0
    for plane in deltoid.PLANES_DEG:
        for elevation in np.arange(0.0, 151.0, 15.0):
            arms = [muscles.moment_arms(model, deltoid.pose(model, plane, elevation))[0] for model in models.values()]
            largest = max(largest, float(np.max(np.abs(arms[0] - arms[1]))))
    assert largest > 1e-3   # m: paper 000's point, on a muscle


def test_study_summary(tmp_path):
    summary = deltoid.run(str(tmp_path), step_deg=15.0)
    assert summary["ok"] and summary["finite_difference_check"]["max_abs_m"] <= 1e-7
    assert (tmp_path / "deltoid_moment_arms.png").is_file()
    assert summary["difference"]["90"]["plane_of_elevation"]["max_abs_mm"] > 1.0


def test_moving_point_on_a_wrapped_path_moment_arms_match_finite_differences(tmp_path):
    """A wrapped path with a moving point (its insertion slides with the elbow): the API's moment arms (one complex
    step per coordinate through the whole wrapped path, the moving point's ∂p/∂c included) against central
    differences of the lengths, 1e-7 m, on poses where the humeral head wraps and where it does not."""
    import biobullet
    from biobullet.model.bundled import bundled_model
    element = """<muscle name="sliding" max_isometric_force="500" optimal_fiber_length="0.1" tendon_slack_length="0.03">
  <point link="scapula" xyz="-0.010 0.000 0.025"/>
  <moving_point link="humerus" coordinate="elbow_flexion">
    <x type="polynomial" coefficients="0.004 0.005"/><y type="polynomial" coefficients="-0.01 -0.1"/>
    <z type="polynomial" coefficients="0.003 0.015"/>
  </moving_point>
  <wrap name="head" type="sphere" link="humerus" xyz="0 0 0" radius="0.025" quadrant="+z"/>
</muscle>
"""
    text = open(bundled_model("shoulder_rhythm.urdf"), encoding="utf-8").read()
    (tmp_path / "sliding.urdf").write_text(text.replace("</biobullet>", element + "</biobullet>"))
    model = biobullet.load_model(tmp_path / "sliding.urdf")
    elbow = model.coordinate_names.index("elbow_flexion")
    for plane, elevation, flexion in ((0.0, 10.0, 0.4), (30.0, 40.0, 1.0), (90.0, 120.0, 1.5)):
        q = deltoid.pose(model, plane, elevation)
        q[elbow] = flexion
        arms = muscles.moment_arms(model, q)[0]
        assert abs(arms[elbow]) > 1e-3   # the moving point makes the elbow a lever of this muscle
        assert np.max(np.abs(arms - deltoid.length_derivative(model, q))) <= 1e-7
