"""Found by the third unseen-input probe: `Trajectory.from_csv` split a spherical joint's columns wrongly (its rates
`<joint>_wx …` were counted as positions: 8 position and 1 velocity columns for a ball + knee model) and listed the
quaternion columns among `joint_names`. The split now follows the header's own names (DESIGN.md: `t`, positions,
velocities)."""
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
    file read back has those columns, the same numbers (CSV keeps 17 digits: exact) and joint_names ('knee',)."""
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
    assert read.joint_names == ("knee",)
    assert np.array_equal(read.positions, trajectory.positions)
    assert np.array_equal(read.velocities, trajectory.velocities)
    assert np.array_equal(read.q, trajectory.q) and np.array_equal(read.v, trajectory.v)
