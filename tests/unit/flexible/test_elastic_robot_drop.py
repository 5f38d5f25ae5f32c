"""Paper 002 drop of the 3-link elastic robot: free fall, first contact, mirror symmetry, energy balance.

Exact references: during free fall the uniform gravity field accelerates every material point alike, so the
modal amplitudes stay exactly zero and O1/O4 (initially at X2 = 0.9 m) touch y = 0 at t = sqrt(1.8/g) with
speed sqrt(1.8 g) = 4.2021 m/s. The initial state is mirror symmetric about x = 0, so O1↔O4, O2↔O3,
δ11 = δ31 and the contact forces (F_T antisymmetric) must stay mirrored. Eq. 31 must hold to the integration
error. The drop is simulated once (0.45 s: free fall and the first impact with its 3 sub-impacts).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from biobullet_studies.paper002 import paper002_chain
from biobullet_studies.gibbs_appell_drop import simulate_drop
from biobullet_studies.elastic_robot import symmetry_residual

T_CONTACT = math.sqrt(1.8 / 9.81)


@pytest.fixture(scope="module")
def drop():
    return simulate_drop(paper002_chain("ss-ss-ss"), t_end=0.45, rtol=1e-9, atol=1e-12,
                         dt_out=2e-3)


def test_free_fall_without_modal_excitation(drop) -> None:
    before = drop.t < T_CONTACT - 1e-9
    assert np.abs(drop.modal_amplitudes[before]).max() < 1e-12  # m; ≈ roundoff of a 0.9 m, 4 m/s motion
    y_exact = 0.9 - 0.5 * 9.81 * drop.t[before] ** 2
    assert np.abs(drop.points[before, 0, 1] - y_exact).max() < 1e-10
    assert np.abs(drop.normal_force[before]).max() == 0.0


def test_first_contact_time_and_velocity(drop) -> None:
    first = drop.contacts[:2]
    assert sorted(c["point"] for c in first) == ["O1", "O4"]
    for c in first:
        assert abs(c["time"] - T_CONTACT) < 1e-8
        assert c["impact_velocity"] == pytest.approx(math.sqrt(1.8 * 9.81), rel=1e-9)
    assert first[0]["time"] == first[1]["time"]  # switched together (mirror pair)


def test_first_impact_splits_into_three_sub_impacts(drop) -> None:
    # paper 002 Fig. 7/11: the first O1/O4 impact shows three separate force pulses
    assert [len(i["sub_impacts"]) for i in drop.impacts] == [3, 3]
    assert {i["point"] for i in drop.impacts} == {"O1", "O4"}


def test_mirror_symmetry(drop) -> None:
    assert drop.normal_force.max() > 1e3  # the impact is inside the checked window
    assert np.abs(drop.friction_force).max() > 10.0
    assert symmetry_residual(drop) <= 1e-8


def test_energy_balance_eq31(drop) -> None:
    # all terms active (contact, friction, damping); balance to the integration error (rtol 1e-9: ~5e-8 %)
    assert drop.work_normal[-1] < -0.1 and drop.work_friction[-1] < 0.0 and drop.work_damping[-1] < 0.0
    assert np.abs(drop.energy_error_percent).max() < 1e-6
    assert drop.gravity[0] == pytest.approx(36.297, abs=1e-12)


def test_energy_conservation_without_damping_and_contact() -> None:
    from scipy.integrate import solve_ivp
    chain = paper002_chain("sc-cc-cs", damping=False, contact=False)
    z0, _ = chain.initial_state()
    rng = np.random.default_rng(5)
    zd0 = rng.normal(size=z0.size)
    zd0[chain.modal_indices] *= 0.02
    N = z0.size

    def f(t, y):
        return np.concatenate([y[N:], chain.forward_dynamics(y[:N], y[N:])])

    def energy(y):
        z, zd = y[:N], y[N:]
        return chain.kinetic_energy(z, zd) + chain.gravity_energy(z) + chain.elastic_energy(z)

    sol = solve_ivp(f, (0.0, 0.02), np.concatenate([z0, zd0]), method="DOP853", rtol=1e-12, atol=1e-14)
    e = np.array([energy(y) for y in sol.y.T])
    assert np.abs(e - e[0]).max() / abs(e[0]) < 1e-8
    assert np.abs(sol.y[chain.modal_indices, -1]).max() > 1e-6  # the modes were excited


def test_bad_arguments_raise_model_error() -> None:
    from biobullet.core.errors import ModelError
    with pytest.raises(ModelError, match="modes"):
        paper002_chain("ss-ss")
    with pytest.raises(ModelError, match="boundary"):
        paper002_chain("ss-xx-ss")
    with pytest.raises(ModelError, match="t_end"):
        simulate_drop(paper002_chain(), t_end=-1.0)
