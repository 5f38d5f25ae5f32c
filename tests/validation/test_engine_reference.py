"""Reference engine against closed forms and hand-written integrations.

Pendulum + joint spring: small-angle closed form and a hand-written SciPy integration of the 1-DOF ODE
(I θ̈ = −m g c sin θ − k θ − b θ̇ + τ(t)); energy conservation on a random tree; energy balance with dampers and
actuators; convergence as tolerances tighten; switched joint stop: event times vs the analytic crossing and the
half-period bounce; floating-base free flight: COM parabola and conserved angular momentum about the COM.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from biobullet import load_model
from biobullet.algorithms.kinematics import body_placements, frame_jacobian
from biobullet.integrate import simulate
from biobullet.validate.random_models import random_urdf

import engine_models as models  # tests/engine_models.py

G, M, C, IZZ = 9.81, 1.0, 1.0, 1e-3
INERTIA = IZZ + M * C ** 2  # about the joint


def _pendulum(tmp_path, extension):
    return models.load_chain(tmp_path, [(1.0, M, C, IZZ)], extension=extension, gravity=f"{G} 0 0")


def test_small_angle_closed_form(tmp_path):
    k, amplitude = 4.0, 1e-4
    model = _pendulum(tmp_path, f'<joint_spring joint="j1" stiffness="{k}"/><initial joint="j1" position="{amplitude}"/>')
    t = np.linspace(0, 3, 61)
    trajectory = simulate(model, 3.0, t_eval=t, rtol=1e-11, atol=1e-16, progress=False)
    omega = np.sqrt((M * G * C + k) / INERTIA)
    # sin θ ≈ θ: frequency error ~ θ0²/16 · (mgc/(mgc+k)) ≈ 4e-10 relative → |Δθ| ≲ θ0 · 1e-8 over 3 s
    np.testing.assert_allclose(trajectory.positions[:, 0], amplitude * np.cos(omega * t), rtol=0, atol=1e-12)


def _hand_pendulum(t_end, t_eval, k, b, tau, theta0, rtol=1e-13):
    def rhs(t, y):
        return [y[1], (-M * G * C * np.sin(y[0]) - k * y[0] - b * y[1] + tau(t)) / INERTIA]
    return solve_ivp(rhs, (0, t_end), [theta0, 0.0], method="DOP853", t_eval=t_eval, rtol=rtol, atol=1e-15).y


PENDULUM = ('<joint_spring joint="j1" stiffness="4" damping="0.2"/><initial joint="j1" position="1.2"/>'
            '<joint_torque joint="j1" type="fourier" period="0.7" a0="0.3" a="0.5" b="-0.4"/>')


def _torque(t):
    w = 2 * np.pi / 0.7
    return 0.3 + 0.5 * np.cos(w * t) - 0.4 * np.sin(w * t)


@pytest.mark.parametrize("formulation", ["reduced", "reduced_recursive", "matrix_calculus"])
def test_pendulum_matches_hand_written_ode(tmp_path, formulation):
    model = _pendulum(tmp_path, PENDULUM)
    t = np.linspace(0, 2, 41)
    ours = simulate(model, 2.0, t_eval=t, rtol=1e-11, atol=1e-13, formulation=formulation, progress=False)
    ref = _hand_pendulum(2.0, t, 4.0, 0.2, _torque, 1.2)
    np.testing.assert_allclose(ours.positions[:, 0], ref[0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(ours.velocities[:, 0], ref[1], rtol=0, atol=1e-9)
    # energy balance: T + V_g + V_spring − ∫τθ̇ + ∫bθ̇² constant (pendulum: T = ½Iθ̇², V_g = −m g c cos θ)
    np.testing.assert_allclose(ours.energy["kinetic"], 0.5 * INERTIA * ref[1] ** 2, atol=1e-8)
    np.testing.assert_allclose(ours.energy["potential_gravity"], -M * G * C * np.cos(ref[0]), atol=1e-8)
    balance = ours.energy_balance()
    assert np.ptp(balance) <= 1e-9 * np.abs(ours.total_energy()).max()


def test_convergence_as_tolerances_tighten(tmp_path, capsys):
    model = _pendulum(tmp_path, PENDULUM)
    ref = _hand_pendulum(2.0, [2.0], 4.0, 0.2, _torque, 1.2)[:, -1]
    rows = []
    for rtol in (1e-5, 1e-7, 1e-9, 1e-11):
        end = simulate(model, 2.0, t_eval=[2.0], rtol=rtol, atol=rtol * 1e-3, progress=False)
        error = max(abs(end.positions[-1, 0] - ref[0]), abs(end.velocities[-1, 0] - ref[1]))
        rows.append((rtol, error, end.meta["nfev"]))
    with capsys.disabled():
        print("\n  rtol      end-state error   nfev")
        for rtol, error, nfev in rows:
            print(f"  {rtol:7.0e}   {error:14.3e}   {nfev}")
    errors = [r[1] for r in rows]
    assert all(b < a for a, b in zip(errors, errors[1:])) and errors[-1] < 1e-9
    assert all(error < 100 * rtol for rtol, error, _ in rows)


def test_energy_conserved_on_random_tree(tmp_path):
    path = tmp_path / "tree.urdf"
    path.write_text(random_urdf(11, 4))
    names = load_model(path).joint_names
    springs = "".join(f'<joint_spring joint="{n}" stiffness="{3 + k}" rest="0.1"/>' for k, n in enumerate(names))
    path.write_text(models.with_elements(random_urdf(11, 4), springs))
    model = load_model(path)
    initial = {f"{n}_dot": 0.5 * (-1) ** k for k, n in enumerate(model.coordinate_names)}
    trajectory = simulate(model, 0.5, t_eval=np.linspace(0, 0.5, 21), rtol=1e-11, atol=1e-13, initial=initial,
                          progress=False)
    energy = trajectory.total_energy()
    scale = max(np.abs(trajectory.energy[k]).max() for k in ("kinetic", "potential_gravity", "potential_elastic"))
    assert np.ptp(energy) <= 1e-8 * scale
    assert np.all(trajectory.energy["dissipated"] == 0) and np.all(trajectory.energy["work_applied"] == 0)


def test_energy_balance_with_dampers_and_actuators(tmp_path):
    extension = ('<spring name="s" link_a="base" xyz_a="0.3 0.5 0" link_b="l3" xyz_b="0.5 0.1 0" stiffness="30" '
                 'rest_length="0.2" damping="2"/><joint_spring joint="j2" stiffness="3" damping="0.4"/>'
                 '<joint_stop joint="j3" lower="-0.3" upper="0.3" stiffness="400" damping="2"/>'
                 '<joint_torque joint="j1" type="fourier" period="0.5" a="1.5" b="0.5"/>'
                 '<initial joint="j3" position="0.25" velocity="3"/>')
    model = models.load_chain(tmp_path, [(1.0, 1.0, 0.5, 1e-2), (0.8, 0.5, 0.4, 2e-2), (0.6, 0.4, 0.3, 1e-2)],
                              extension=extension)
    trajectory = simulate(model, 0.5, t_eval=np.linspace(0, 0.5, 26), progress=False)
    e = trajectory.energy
    assert e["dissipated"][-1] > 0.1 and np.all(np.diff(e["dissipated"]) >= 0)
    assert np.abs(e["work_applied"]).max() > 0.1 and e["potential_elastic"].max() > 0.1
    residual = np.ptp(trajectory.energy_balance())
    assert residual <= 1e-8 * np.abs(trajectory.total_energy()).max()


def test_switched_stop_events_match_free_rotation(tmp_path):
    """No gravity, θ̇0 = ω: the stop at θ = 0.5 is reached at t = 0.5/ω; inside, θ obeys I θ̈ = −k (θ − 0.5),
    a half period π√(I/k) later the link leaves with θ̇ = −ω (no damping)."""
    omega, k = 2.0, 1e4
    model = models.load_chain(tmp_path, [(1.0, M, C, IZZ)], gravity="0 0 0",
                              extension=f'<joint_stop joint="j1" upper="0.5" stiffness="{k}" type="switched"/>'
                                        f'<initial joint="j1" velocity="{omega}"/>')
    trajectory = simulate(model, 0.5, progress=False)
    names = [e[0] for e in trajectory.events]
    assert names == ["joint_stop_j1.upper", "joint_stop_j1.upper"] and trajectory.meta["restarts"] == 2
    t_in, t_out = trajectory.events[0][1], trajectory.events[1][1]
    assert t_in == pytest.approx(0.5 / omega, abs=1e-12)
    assert t_out - t_in == pytest.approx(np.pi * np.sqrt(INERTIA / k), abs=1e-9)
    assert trajectory.events[1][2][1] == pytest.approx(-omega, abs=1e-8)
    late = trajectory.t > t_out
    np.testing.assert_allclose(trajectory.positions[late, 0], 0.5 - omega * (trajectory.t[late] - t_out), atol=1e-8)


def test_floating_base_free_flight(tmp_path):
    path = tmp_path / "flyer.urdf"
    path.write_text(random_urdf(5, 3, floating_base=True))
    model = load_model(path)
    q0, v0 = model.initial_state({"base_z": 1.0, **{f"{n}_dot": 0.7 for n in model.coordinate_names[7:]}})
    v0[:6] = [0.4, -0.3, 2.0, 1.0, -2.0, 0.5]  # base twist (base frame)
    initial = (q0, v0)
    t = np.linspace(0, 0.6, 13)
    trajectory = simulate(model, 0.6, t_eval=t, rtol=1e-11, atol=1e-13, initial=initial, progress=False)
    com, momentum = [], []
    for x, xd in zip(trajectory.positions, trajectory.velocities):
        c, p, h = _com_and_momenta(model, x, xd)
        com.append(c)
        momentum.append(h)
        if not com[1:]:
            c0, v0 = c, p / model.total_mass
    expected = c0 + np.outer(t, v0) + 0.5 * np.outer(t ** 2, model.gravity)
    np.testing.assert_allclose(np.array(com), expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.array(momentum), np.array(momentum)[0] + 0 * t[:, None], rtol=0,
                               atol=1e-9 * max(1.0, np.abs(momentum[0]).max()))
    np.testing.assert_allclose(np.linalg.norm(trajectory.positions[:, 3:7], axis=1), 1.0, atol=1e-15)


def _com_and_momenta(model, x, xd):
    """COM (m), linear momentum (kg·m/s) and angular momentum about the COM (kg·m²/s), world frame."""
    placements = body_placements(model, x)
    masses, points, velocities, spins = [], [], [], []
    for body, (r, p) in zip(model.bodies, placements):
        jac = frame_jacobian(model, x, body.link, body.com)
        masses.append(body.mass)
        points.append(r @ body.com + p)
        velocities.append(jac[:3] @ xd)
        spins.append(r @ body.inertia_com @ r.T @ (jac[3:] @ xd))
    masses, points, velocities = np.array(masses), np.array(points), np.array(velocities)
    com = masses @ points / masses.sum()
    linear = masses @ velocities
    angular = sum(m * np.cross(c - com, v) + s for m, c, v, s in zip(masses, points, velocities, spins))
    return com, linear, angular


@pytest.mark.parametrize("projection", [False, True])
def test_multipliers_agree_with_reduced_on_a_loop(projection):
    """Four-bar knee (one loop): the DAE on the full tree (Baumgarte, optional projection) and the reduced ODE
    on the implicit coordinate give the same motion; the loop stays closed."""
    model = load_model(Path(__file__).parents[2] / "urdf" / "fourbar_knee.urdf")
    t = np.linspace(0, 0.3, 7)
    dae = simulate(model, 0.3, t_eval=t, formulation="multipliers", projection=projection, progress=False)
    ode = simulate(model, 0.3, t_eval=t, progress=False)
    np.testing.assert_allclose(dae.positions, ode.positions, rtol=0, atol=1e-9)
    np.testing.assert_allclose(dae.velocities, ode.velocities, rtol=0, atol=1e-8)
    assert dae.multipliers.shape == (7, 2) and np.ptp(dae.energy_balance()) < 1e-9
