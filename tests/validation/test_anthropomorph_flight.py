"""Paper 004, torque-free flight: conservation laws (energy, angular momentum about the COM, COM parabola), with
constant and with prescribed time-varying I(t)."""
from __future__ import annotations

import numpy as np
import pytest
from biobullet.extensible import kinematics as kin
from biobullet.extensible.chain_model import (
    ChainModel,
    InertiaLaw,
    Link,
    reference_flight_state,
    six_link_reference,
    three_link_reference,
)
from biobullet_studies.anthropomorph_phases import simulate_phases
from scipy.integrate import simpson


def _flight(model, q0, v0, t_end, tol=1e-11):
    return simulate_phases(model, t_end, initial=(q0, v0), with_ground=False, method="DOP853", rtol=tol, atol=tol,
                           dt_sample=2e-3)


def test_six_link_reference_flight_conserves_energy_momentum_and_com_parabola():
    model = six_link_reference()
    q0, v0 = reference_flight_state(model)
    tr = _flight(model, q0, v0, 0.1)
    E = kin.energy(model, tr.q, tr.v, tr.t).total
    assert E[0] == pytest.approx(849.197650, abs=5e-7)
    # DOP853 at rtol = atol = 1e-11: the energy is conserved to ~1e-9 relative
    assert np.max(np.abs(E - E[0])) < 1e-7
    L = kin.angular_momentum_about_com(model, tr.q, tr.v, tr.t)
    assert L[0] == pytest.approx(-0.182080, abs=5e-7)
    assert np.max(np.abs(L - L[0])) < 1e-9
    G, Gd = kin.center_of_mass(model, tr.q, tr.v)
    t = tr.t
    parabola = G[0] + np.outer(t, Gd[0]) + np.outer(0.5 * t * t, [0.0, -model.gravity])
    assert np.max(np.abs(G - parabola)) < 1e-10
    assert tr.phase == ["flight"] * len(t)


def _time_varying(model: ChainModel) -> ChainModel:
    links = []
    for i, lk in enumerate(model.links):
        i0 = lk.inertia.value(0.0)
        law = InertiaLaw("fourier", (i0, 0.1 * i0), (0.3 * i0,), 0.15 + 0.02 * i)
        links.append(Link(lk.mass, lk.n, lk.rest_length, lk.stiffness, 0.0, law, lk.name))
    k1, k2, _ = model.chain_sizes
    return ChainModel.build(links[:k1], links[k1:k1 + k2], links[k1 + k2:])


def test_time_varying_inertia_energy_change_equals_idot_integral_and_momentum_is_conserved():
    model = _time_varying(three_link_reference())
    assert model.time_varying_inertia
    q0 = np.concatenate([[0.0, 1.2], np.pi / 2 + np.array([0.2, -0.25, 0.1]), 1.01 * model.rest_lengths])
    v0 = np.array([0.8, 2.0, 3.0, -2.5, 1.3, 0.0, 0.05, -0.05])
    tr = simulate_phases(model, 0.1, initial=(q0, v0), with_ground=False, method="DOP853", rtol=1e-11, atol=1e-11,
                         dt_sample=2e-4)
    E = kin.energy(model, tr.q, tr.v, tr.t).total
    n = model.n_links
    phid = tr.v[:, 2:2 + n]
    idot = np.stack([lk.inertia.rate(tr.t) for lk in model.links], axis=-1)
    integrand = -0.5 * np.sum(idot * phid ** 2, axis=1)
    change = E - E[0]
    assert np.max(np.abs(change)) > 0.5                         # the İ term really changes the energy (~3 J)
    # Simpson quadrature of the sampled integrand over the whole run (independent of the integrated power)
    assert change[-1] == pytest.approx(simpson(integrand, x=tr.t), rel=1e-5)
    assert np.max(np.abs(change - tr.work["inertia"])) < 1e-8   # the integrated power
    L = kin.angular_momentum_about_com(model, tr.q, tr.v, tr.t)
    assert np.max(np.abs(L - L[0])) < 1e-9 * (1 + abs(L[0]))
