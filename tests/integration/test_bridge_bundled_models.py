"""The bundled prosthesis and elastic-robot models through `Bridge(model)` / `biobullet simulate --engine pybullet`
with no special loader, against their references.

* Prosthesis (hip-driven four-bar, treadmill `expression` function, damper, knee stop, ankle spring, heel/toe
  contact): the study's fast right-hand side (checked against the general reference engine to 1e-9 in
  tests/validation/test_prosthesis_model.py), integrated by Radau at rtol 1e-10, is the reference. PyBullet's
  semi-implicit Euler is first order: max |Δq| over 0.1 s measured 1.33e-3, 6.1e-4, 3.1e-4 rad at dt = 4e-4, 2e-4,
  1e-4 s; asserted: the error halves (order 0.8…1.3) and is ≤ 4e-4 rad at 1e-4 s.
* Elastic 3-link robot (`<flexible>` links expanded by the bridge on load, default 4 segments, shear off; point
  contacts on the file's ground): the free fall before the ground contact (0.1 s) against the exact discrete
  solution of PyBullet's semi-implicit Euler (the drop and its impacts against Gibbs–Appell are
  tests/validation/test_elastic_robot_bridge.py, which now also runs through `Bridge(model)`).
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pybullet")

import biobullet  # noqa: E402
from biobullet import cli  # noqa: E402
from biobullet.bridge import Bridge  # noqa: E402
from biobullet.model.bundled import bundled_model  # noqa: E402

T_PROSTHESIS = 0.1
G = 9.81


@pytest.fixture(scope="module")
def prosthesis_reference():
    from scipy.integrate import solve_ivp
    from biobullet_studies.prosthesis_model import FastProsthesis
    fast = FastProsthesis(bundled_model("prosthesis_fourbar.urdf"))
    solution = solve_ivp(lambda t, y: fast.rhs(t, y), (0.0, T_PROSTHESIS), [0.0, 0.0, 0.0, 0.0], method="Radau",
                         rtol=1e-10, atol=1e-12, dense_output=True)
    assert solution.status == 0
    return solution.sol


def _prosthesis_error(model, dt, reference) -> float:
    with Bridge(model, dt=dt, record=True) as bridge:
        for _ in range(int(round(T_PROSTHESIS / dt))):
            bridge.step()
        trajectory = bridge.trajectory()
    return float(np.abs(trajectory.q - reference(trajectory.t).T[:, :2]).max())


def test_prosthesis_converges_to_its_reference(prosthesis_reference, tmp_path):
    model = biobullet.load_model(bundled_model("prosthesis_fourbar.urdf"))
    errors = [_prosthesis_error(model, dt, prosthesis_reference) for dt in (4e-4, 2e-4, 1e-4)]
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(orders > 0.8) and np.all(orders < 1.3), errors
    assert errors[-1] <= 4e-4, errors
    # the command line runs the same model the same way
    out = tmp_path / "prosthesis.csv"
    assert cli.main(["simulate", str(model.file), "--engine", "pybullet", "--dt", "2e-4", "--t-end",
                     repr(T_PROSTHESIS), "--out", str(out)]) == 0
    data = np.genfromtxt(out, delimiter=",", names=True)
    q = np.column_stack([data["knee_A"], data["ankle"]])
    assert np.abs(q - prosthesis_reference(data["t"]).T[:, :2]).max() == pytest.approx(errors[1], rel=1e-9)


def test_elastic_robot_free_fall_through_simulate_engine_pybullet(tmp_path):
    """Without air damping the free fall is exact for PyBullet's semi-implicit Euler: y_n = y0 − g dt² n(n+1)/2
    (asserted to 1e-9 m), with undeformed links; the command line (defaults: air damping on) gives the Python API's
    trajectory, and its fall differs from the undamped one only by the small air drag (< 1e-6 m in 0.01 s)."""
    path = bundled_model("elastic_robot_3link.urdf")
    model = biobullet.load_model(path)
    t_end = 0.1
    with Bridge(model, air_damping=False, record=True) as bridge:
        assert len(bridge.layouts) == 3 and all(lay.segments == 4 for lay in bridge.layouts.values())
        dt = bridge.dt
        n = int(round(t_end / dt))
        for _ in range(n):
            bridge.step()
        undamped = bridge.trajectory()
    steps = np.arange(n + 1)
    y0 = undamped.positions[0, undamped.joint_names.index("base_y")]
    exact = y0 - G * dt * dt * steps * (steps + 1) / 2
    assert np.abs(undamped.positions[:, undamped.joint_names.index("base_y")] - exact).max() <= 1e-9
    bends = [k for k, name in enumerate(undamped.joint_names) if "__bend" in name]
    assert len(bends) == 12 and np.abs(undamped.positions[:, bends]).max() <= 1e-9
    out = tmp_path / "robot.csv"
    t_end = 0.01   # the segments' air damping costs ~40 ms per step (Python Jacobians)
    assert cli.main(["simulate", path, "--engine", "pybullet", "--t-end", repr(t_end), "--out", str(out)]) == 0
    data = np.genfromtxt(out, delimiter=",", names=True)
    assert float(data["t"][1] - data["t"][0]) == pytest.approx(dt, rel=1e-9)
    n = len(data["t"]) - 1      # the first step past t_end
    with Bridge(model, record=True) as bridge:   # the same run through the Python API
        for _ in range(n):
            bridge.step()
        api = bridge.trajectory()
    np.testing.assert_allclose(data["base_y"], api.positions[:, api.joint_names.index("base_y")], rtol=0,
                               atol=1e-12)
    drag = np.abs(data["base_y"] - exact[:n + 1]).max()
    assert 0.0 < drag < 1e-6
