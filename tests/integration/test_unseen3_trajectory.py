"""Found by the third unseen-input probe: `Trajectory.from_csv` split a spherical joint's columns wrongly (its rates
`<joint>_wx …` were counted as positions: 8 position and 1 velocity columns for a ball + knee model). The split now
follows the header's own names (DESIGN.md: `t`, positions, velocities); `joint_names` name the positions' columns."""
from __future__ import annotations

import csv

import numpy as np

import biobullet

BALL_AND_KNEE = """<robot name="ball_and_knee">
  <link name="base"/>
  <link name="a"><inertial><origin xyz="0 0 -0.3"/><mass value="1"/>
    <inertia ixx="0.02" iyy="0.03" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><origin xyz="0 0 -0.2"/><mass value="0.5"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.004" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="ball" type="spherical"><parent link="base"/><child link="a"/></joint>
  <joint name="knee" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0 0 -0.6"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="1" velocity="10"/></joint>
  <biobullet version="1"><initial joint="knee" position="0.3" velocity="0.5"/></biobullet>
</robot>
"""


def test_spherical_joint_trajectory_round_trips_through_csv(tmp_path) -> None:
    """Header read with the csv module: quaternion (4) + knee positions, then the ball's 3 rates + knee_dot; the
    file read back has those columns, the same numbers (CSV keeps 17 digits: exact) and joint_names naming the positions' columns."""
    path = tmp_path / "ball_and_knee.urdf"
    path.write_text(BALL_AND_KNEE)
    model = biobullet.load_model(path)
    trajectory = biobullet.simulate(model, 0.005)
    trajectory.to_csv(tmp_path / "run.csv")
    with open(tmp_path / "run.csv", newline="") as handle:
        header = next(csv.reader(handle))
    assert header == ["t", "ball_qx", "ball_qy", "ball_qz", "ball_qw", "knee", "ball_wx", "ball_wy", "ball_wz",
                      "knee_dot"]
    read = biobullet.Trajectory.from_csv(tmp_path / "run.csv", model)
    assert read.position_names == tuple(header[1:6]) and read.velocity_names == tuple(header[6:])
    assert read.joint_names == tuple(header[1:6])
    assert np.array_equal(read.positions, trajectory.positions)
    assert np.array_equal(read.velocities, trajectory.velocities)
    assert np.array_equal(read.q, trajectory.q) and np.array_equal(read.v, trajectory.v)


def test_joint_names_name_the_position_columns_on_a_floating_base(tmp_path) -> None:
    """`dict(zip(trajectory.joint_names, trajectory.positions[k]))` is the state at sample k, on the reference engine
    and the bridge, for a floating base (7 pose columns first). Before, `joint_names` was θ alone (1 name here for 8
    columns): zipping it paired the knee's name with base_x's value, with no error. Checked against PyBullet's own
    base position and knee angle, read from the bridge's client, and the CSV header."""
    import pybullet as p
    path = tmp_path / "floating_knee.urdf"
    body = BALL_AND_KNEE.replace('  <link name="base"/>\n', "")
    path.write_text(body[:body.index('  <joint name="ball"')] + body[body.index('  <joint name="knee"'):])
    model = biobullet.load_model(path, floating_base=True)
    engine = biobullet.simulate(model, 0.004)
    assert len(engine.joint_names) == engine.positions.shape[1] == 8
    state = dict(zip(engine.joint_names, engine.positions[-1]))
    assert state["knee"] == engine.column("knee")[-1]
    assert abs(np.linalg.norm([state[f"base_q{c}"] for c in "xyzw"]) - 1.0) < 1e-12   # the pose's quaternion
    engine.to_csv(tmp_path / "run.csv")
    with open(tmp_path / "run.csv", newline="") as handle:
        header = next(csv.reader(handle))
    assert list(engine.joint_names) == header[1:1 + len(engine.joint_names)]
    bridge = biobullet.Bridge(model, record=True)
    try:
        for _ in range(3):
            bridge.step()
        run = bridge.trajectory()
        last = dict(zip(run.joint_names, run.positions[-1]))
        # PyBullet reports the base's inertial frame: the link origin is 0.3 m from it along the body's z axis
        com, orientation = p.getBasePositionAndOrientation(bridge.body, physicsClientId=bridge.client)
        z_axis = np.reshape(p.getMatrixFromQuaternion(orientation), (3, 3))[:, 2]
        assert np.abs([last[f"base_{c}"] for c in "xyz"] - (np.array(com) + 0.3 * z_axis)).max() < 1e-12
        knee = [k for k in range(p.getNumJoints(bridge.body, physicsClientId=bridge.client))
                if p.getJointInfo(bridge.body, k, physicsClientId=bridge.client)[1] == b"knee"]
        assert abs(last["knee"] - p.getJointState(bridge.body, knee[0], physicsClientId=bridge.client)[0]) < 1e-12
    finally:
        bridge.close()
