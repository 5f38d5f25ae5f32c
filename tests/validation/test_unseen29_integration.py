"""The reference engine's integration promises, probed from outside (hunt23): each run against an independent
oracle — SciPy's `solve_ivp` (DOP853, rtol 1e-13) on the pendulum's own equation I θ̈ = −m g l sin θ, written here
from the model's numbers — or against the requested output times themselves.

The pendulum: a 1 kg bob 1 m below a y-axis pivot with its own inertia 1e-3 kg m², so I = 1.001 kg m² about the pivot
and m g l = 9.81 N m; released at 0.5 rad.
"""
from __future__ import annotations

import csv
import warnings

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import biobullet
from biobullet.cli import main
from biobullet.core.errors import ModelError
from biobullet.loader import load_text

INERTIA, MGL, THETA0 = 1.0 + 1e-3, 9.81, 0.5

PENDULUM = f"""<?xml version="1.0"?>
<robot name="pendulum">
  <link name="base"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>
  </link>
  <link name="bob"><inertial><origin xyz="0 0 -1"/><mass value="1"/>
    <inertia ixx="1e-3" ixy="0" ixz="0" iyy="1e-3" iyz="0" izz="1e-3"/></inertial></link>
  <joint name="swing" type="continuous"><parent link="base"/><child link="bob"/><origin xyz="0 0 0"/>
    <axis xyz="0 1 0"/></joint>
  <biobullet version="1"><gravity xyz="0 0 -9.81"/><base type="fixed"/>
    <initial joint="swing" position="{THETA0}" velocity="0"/></biobullet>
</robot>"""


@pytest.fixture(scope="module")
def pendulum(tmp_path_factory):
    return load_text(PENDULUM, tmp_path_factory.mktemp("pendulum"), "pendulum.urdf")


def oracle(times: np.ndarray, t0: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(θ, θ̇) of the pendulum at `times` (s, from t0), by SciPy at rtol 1e-13: far below every tolerance used here."""
    times = np.asarray(times, dtype=float)
    solution = solve_ivp(lambda t, y: [y[1], -MGL / INERTIA * np.sin(y[0])], (t0, times[-1]), [THETA0, 0.0],
                         method="DOP853", rtol=1e-13, atol=1e-15, t_eval=times)
    return solution.y[0], solution.y[1]


def test_a_max_step_is_not_called_stiffness(pendulum):
    """max_step holds the steps down, not stiffness: the run keeps DOP853 and says nothing of stiffness. Before, a
    window of 5,000 steps of max_step < 1e-5 s was reported as "the problem looks stiff", the default method switched
    to Radau (whose steps max_step holds down alike; a 0.2 s run then stopped at Radau's evaluation budget)."""
    t_end = 0.06   # 12,000 steps of 5e-6 s: the stiffness watch checks its windows of 5,000 steps
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = biobullet.simulate(pendulum, t_end, max_step=5e-6, t_eval=[0.0, 0.02, 0.04, t_end], progress=False)
    assert not [w for w in caught if "stiff" in str(w.message)], [str(w.message) for w in caught]
    assert run.meta["method"] == "DOP853"
    theta, rate = oracle(run.t)
    # 12,000 DOP853 steps of 5e-6 s: local errors ~ (5e-6 s · 30 rad/s²)⁸ vanish; rtol 1e-9 of |θ| ≈ 0.5 bounds it
    np.testing.assert_allclose(run.q[:, 0], theta, rtol=0, atol=1e-9)
    np.testing.assert_allclose(run.v[:, 0], rate, rtol=0, atol=1e-9)


@pytest.mark.parametrize("rtol", [1e-15, 1e-300])
def test_an_rtol_scipy_cannot_honour_is_refused(pendulum, rtol):
    """SciPy raises an rtol below 100 ε to 100 ε (2.2e-14) with a warning about "an element of `rtol`", while the
    trajectory's meta recorded the rtol asked for: one ModelError naming rtol instead."""
    with pytest.raises(ModelError, match="rtol"):
        biobullet.simulate(pendulum, 1.0, rtol=rtol, progress=False)


def test_the_tightest_rtol_scipy_honours_runs_and_is_recorded(pendulum):
    """rtol = 100 ε runs without SciPy's warning, records that rtol, and meets the oracle."""
    rtol = 100 * np.finfo(float).eps
    times = np.linspace(0.0, 1.0, 11)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = biobullet.simulate(pendulum, 1.0, rtol=rtol, atol=1e-15, t_eval=times, progress=False)
    assert run.meta["rtol"] == rtol
    theta, rate = oracle(times)
    # DOP853 at rtol 2.2e-14 on a 1 s swing: 1e-12 is ≈ 50× the tolerance, the oracle's own error is ≤ 1e-13
    np.testing.assert_allclose(run.q[:, 0], theta, rtol=0, atol=1e-12)


def test_the_cli_writes_each_dt_multiple_once_and_t_end_last(pendulum, tmp_path):
    """`--t-end 0.081 --dt 0.009`: the samples are k·0.009 (k = 0 … 8) and 0.081. Before, 9·0.009 =
    0.080999999999999989 was written as a sample of its own, 1.4e-17 s before 0.081."""
    out = tmp_path / "run.csv"
    assert main(["simulate", pendulum.file, "--t-end", "0.081", "--dt", "0.009", "--out", str(out)]) == 0
    with open(out, encoding="utf-8") as handle:
        rows = list(csv.reader(handle))[1:]
    times = np.array([float(row[0]) for row in rows])
    expected = np.append(np.arange(9) * 0.009, 0.081)
    assert len(times) == len(expected)
    np.testing.assert_array_equal(times, expected)
    theta, _ = oracle(times)
    # the default rtol 1e-9, atol 1e-12 over 0.081 s (a few steps): 1e-9 rad
    np.testing.assert_allclose([float(row[1]) for row in rows], theta, rtol=0, atol=1e-9)


def test_the_default_samples_are_distinct_times(pendulum):
    """A span with fewer representable times than the default 1,001 samples (t0 = 1e9 s: spacing 1.2e-7 s, 1e-6 s
    long) gives each time once, from t0 to t_end. Before, np.linspace repeated them (1,001 rows, Δt = 0 between most)."""
    t0 = 1e9
    t_end = t0 + 1e-6
    run = biobullet.simulate(pendulum, t_end, t0=t0, progress=False)
    assert run.t[0] == t0 and run.t[-1] == t_end
    assert np.all(np.diff(run.t) > 0)
    theta, rate = oracle(run.t, t0)
    np.testing.assert_allclose(run.q[:, 0], theta, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["DOP853", "RK45", "Radau", "BDF", "LSODA", "RK23"])
def test_each_method_meets_its_tolerance_at_the_requested_times(pendulum, method):
    """Every method the API accepts, at rtol 1e-6 and atol 1e-9 over a 2 s swing (≈ one period): the samples sit at
    the requested times (dense output, not the nearest step) and their error stays within a factor of the
    tolerance — SciPy's global errors on this swing measured 0.1× (Radau) … 5× (BDF) of rtol·|y|; 20× allows
    for the order of a few sums."""
    times = np.linspace(0.0, 2.0, 41)
    run = biobullet.simulate(pendulum, 2.0, method=method, rtol=1e-6, atol=1e-9, t_eval=times, progress=False)
    np.testing.assert_array_equal(run.t, times)
    assert run.meta["method"] == method and run.meta["rtol"] == 1e-6 and run.meta["atol"] == 1e-9
    theta, rate = oracle(times)
    scale = 1e-9 + 1e-6 * 3.0   # atol + rtol · max|θ̇| (≈ 3 rad/s at the bottom)
    assert np.max(np.abs(run.q[:, 0] - theta)) < 20 * scale
    assert np.max(np.abs(run.v[:, 0] - rate)) < 20 * scale


def test_the_cli_counts_t_end_among_the_samples_it_limits(pendulum, tmp_path, capsys):
    """`--t-end 2000 --dt 2e-4` asks for 10,000,001 samples (k·dt for k = 0 … 9,999,999, then t_end): the CLI's own
    check refuses it naming --t-end and --dt. Before, it passed that check (counting 10⁷) and the engine refused it
    after loading the model, naming an argument `t_eval` the command line does not have."""
    with pytest.raises(SystemExit) as stop:
        main(["simulate", pendulum.file, "--t-end", "2000", "--dt", "2e-4", "--out", str(tmp_path / "run.csv")])
    assert stop.value.code == 2
    message = capsys.readouterr().err
    assert "--dt" in message and "10000001" in message and "t_eval" not in message


FREE_BODY = """<?xml version="1.0"?>
<robot name="free_body">
  <link name="body"><inertial><mass value="2"/>
    <inertia ixx="1" ixy="0" ixz="0" iyy="2" iyz="0" izz="3"/></inertial></link>
  <biobullet version="1"><gravity xyz="0 0 0"/><base type="floating"/></biobullet>
</robot>"""


def euler_top(times: np.ndarray, omega0: np.ndarray, z0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ω (n, 3) in the body frame, unit quaternion z (n, 4) as x y z w) of a torque-free body with principal
    inertia diag(1, 2, 3) kg m²: Euler's equations I ω̇ = −ω × I ω and ż = ½ z ⊗ (ω, 0), SciPy at rtol 1e-13."""
    inertia = np.array([1.0, 2.0, 3.0])

    def rate(_t, y):
        omega, vector, scalar = y[:3], y[3:6], y[6]
        return np.concatenate([-np.cross(omega, inertia * omega) / inertia,
                               0.5 * (scalar * omega + np.cross(vector, omega)), [-0.5 * vector @ omega]])
    solution = solve_ivp(rate, (0.0, times[-1]), np.concatenate([omega0, z0]), method="DOP853", rtol=1e-13,
                         atol=1e-15, t_eval=times)
    return solution.y[:3].T, solution.y[3:].T


def test_an_initial_quaternion_off_unit_length_is_the_rotation_it_scales_to(tmp_path):
    """A floating body started from (q0, v0) whose quaternion is 2·z (z a unit quaternion: the same rotation,
    `normalize_configuration` scales it) moves as the body started from z: against Euler's equations for the
    asymmetric top and the straight line of its centre of mass (p = p0 + R(z) v_lin t, torque-free, no gravity).
    Before, the integrated quaternion kept length 2 while its rate was that of z, so the body turned at half the
    rate (0.2 m off in position after 1 s) while every sample showed a unit quaternion."""
    from scipy.spatial.transform import Rotation

    model = load_text(FREE_BODY, tmp_path, "free_body.urdf")
    z0 = Rotation.from_rotvec([0.3, -0.2, 0.5]).as_quat()   # x y z w
    omega0, linear0 = np.array([0.3, 2.0, 0.4]), np.array([0.1, -0.2, 0.3])   # base frame
    times = np.linspace(0.0, 2.0, 21)
    run = biobullet.simulate(model, 2.0, rtol=1e-10, atol=1e-12, t_eval=times, progress=False,
                             initial=(np.concatenate([[0.0, 0.0, 0.0], 2.0 * z0]),
                                      np.concatenate([linear0, omega0])))
    omega, z = euler_top(times, omega0, z0)
    # DOP853 at rtol 1e-10 over 2 s (≈ 0.6 turns): measured errors ≤ 1e-10; 1e-8 leaves room for the global error
    np.testing.assert_allclose(run.v[:, 3:6], omega, rtol=0, atol=1e-8)
    quaternion = run.q[:, 3:7] * np.sign(np.sum(run.q[:, 3:7] * z, axis=1))[:, None]
    np.testing.assert_allclose(quaternion, z, rtol=0, atol=1e-8)
    line = Rotation.from_quat(z0).apply(linear0)   # the world velocity of the centre of mass, constant
    np.testing.assert_allclose(run.q[:, :3], times[:, None] * line, rtol=0, atol=1e-8)


def test_a_step_budget_spent_at_max_step_says_so():
    """y' = −y with max_step = 1e-6 s and a budget of 100 steps: the steps are held at max_step, which the error
    says. Before, it said "the problem looks stiff … use an implicit method" (mean step below 1e-5 s), whose steps
    max_step holds alike."""
    from biobullet.integrate.stepper import StepFailure, run_loop
    with pytest.raises(StepFailure, match=r"held at max_step = 1e-06 s") as failure:
        run_loop(lambda t, y: -y, 0.0, np.array([1.0]), 1.0, method="DOP853", rtol=1e-6, atol=1e-9, max_step=1e-6,
                 t_eval=None, events=[], max_steps=100)
    assert "stiff" not in str(failure.value)
    # the steps taken are the exact solution's to the tolerance: y(t) = e^(−t) at the last accepted time
    assert abs(failure.value.y[0] - np.exp(-failure.value.t)) < 1e-9


@pytest.mark.parametrize("method", ["DOP853", "Radau", "LSODA"])
def test_a_torque_free_body_keeps_its_invariants_along_the_run(tmp_path, method):
    """The asymmetric top spinning near its unstable middle axis for 10 s: every sample's
    quaternion has unit length (normalised on output), and the world angular momentum R I ω and the kinetic energy
    stay constant — to rtol 1e-10 scaled by the run's length (measured drift ≤ 1e-10 for the three methods)."""
    from scipy.spatial.transform import Rotation

    model = load_text(FREE_BODY, tmp_path, "free_body.urdf")
    inertia = np.diag([1.0, 2.0, 3.0])
    run = biobullet.simulate(model, 10.0, method=method, rtol=1e-10, atol=1e-12, progress=False,
                             initial=(np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]),
                                      np.array([0.1, -0.2, 0.3, 0.3, 2.0, 0.4])))
    assert run.q.shape == (1001, 7) and run.v.shape == (1001, 6) and run.t.shape == (1001,)
    np.testing.assert_allclose(np.linalg.norm(run.q[:, 3:7], axis=1), 1.0, rtol=0, atol=4e-16)
    omega = run.v[:, 3:6]
    momentum = np.einsum("nij,jk,nk->ni", Rotation.from_quat(run.q[:, 3:7]).as_matrix(), inertia, omega)
    np.testing.assert_allclose(momentum, np.broadcast_to(momentum[0], momentum.shape), rtol=0, atol=1e-8)
    kinetic = 0.5 * np.einsum("ni,ij,nj->n", omega, inertia, omega) + 0.5 * 2.0 * np.sum(run.v[:, :3] ** 2, axis=1)
    np.testing.assert_allclose(kinetic, kinetic[0], rtol=0, atol=1e-8)
    np.testing.assert_allclose(run.energy["kinetic"], kinetic, rtol=0, atol=1e-12)
