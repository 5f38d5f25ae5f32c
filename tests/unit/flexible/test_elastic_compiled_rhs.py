"""The drop kernel of paper 002 (`flexible/gibbs_appell_kernels.py`: the contact laws' kernels, Cholesky) checked
against physics, not against the general path (`gibbs_appell_drop.drop_rhs`).

- Random states (deflected, moving, penetrating the ground, random contact phases) of all four mode sets and a
  pinned two-mode chain: the power balance of ẏ — d/dt (T + V_g + V_e) along the flow, by central differences of
  the energy functions, equals the power of the damping, normal and friction forces (ẏ's three last entries) to
  1e-6 of the power terms; a 1e-4 error of z̈ fails it.
- The sampled outputs: T = ½ żᵀ M ż, V_e = ½ zᵀ K z, no contact force at points not in contact.
- A drop through the first impact (0.45 s): free fall from rest to the first touchdown at t = √(2h/g) with
  δ̇⁻ = √(2gh) (h the lowest contact point's height), the energy balance closes.
- A plug-in contact law without a kernel gives no drop kernel (its drop, on the law classes, falls freely to the
  first touchdown and closes the energy balance); a smoothed law (acting outside contact) has one and
  closes the power balance; a call that fails (non-finite state) returns False so the caller takes the general
  path.
"""
from __future__ import annotations

import numpy as np
import pytest

from biobullet.contact import KelvinVoigtSmooth
from biobullet.flexible.gibbs_appell import ElasticChain, link_from_beam
from biobullet_studies.elastic_robot import MODE_SETS
from biobullet_studies.gibbs_appell_drop import simulate_drop
from biobullet_studies.paper002 import TABLE3_UNROUNDED, paper002_chain

def _random_states(chain: ElasticChain, rng: np.random.Generator, count: int):
    n_c, n_pts = chain.n_coordinates, len(chain.links) + 1
    for _ in range(count):
        z = rng.normal(scale=0.5, size=n_c)
        z[chain.modal_indices] *= 1e-2                       # modal amplitudes of mm–cm, as in the drop
        if chain.base == "floating":
            z[chain.idx_x[1]] = rng.uniform(-0.02, 0.02)   # some points below the ground: contact forces act
        zd = rng.normal(scale=2.0, size=n_c)
        y = np.concatenate([z, zd, rng.normal(size=3)])
        active = rng.random(n_pts) < 0.7
        vimp = rng.uniform(0.0, 4.0, n_pts)
        vimp[0] = 1e-4                                 # below the law's floor δ̇⁻_min
        yield y, active, vimp


def _pinned_chain() -> ElasticChain:
    links = [link_from_beam(f"l{i}", boundary=bc, n_modes=2, kelvin_voigt=125.0, air_damping=0.025,
                            **TABLE3_UNROUNDED) for i, bc in enumerate(("cc", "ss"))]
    return ElasticChain(links, base="pinned", base_position=(0.1, 0.02), initial_angles=(0.3, -0.5))


def _power_residual(chain: ElasticChain, y, active, vimp, ydot, h: float = 1e-7) -> tuple[float, float]:
    """(|d/dt (T + V_g + V_e) − P|, tolerance): the energies (the kernel's sampled outputs T, V_g and V_e = ½ zᵀKz)
    by the five-point central difference along ẏ with the contact phase held; P = ẏ's damping, normal and friction
    powers. Truncation O(h⁴ E⁽⁵⁾) — the stiff contacts (K = 1.4e8 N/m^1.5, points up to 2 cm deep) make the
    energy's time derivatives large, so the fourth order is needed —, cancellation ≈ 1e2 ε E / h: the tolerance
    is 1e-6 of the power terms plus the cancellation."""
    n_c = chain.n_coordinates
    fast = chain.compiled()

    def energies(s: float) -> np.ndarray:
        z = y[:n_c] + s * ydot[:n_c]
        zd = y[n_c:2 * n_c] + s * ydot[n_c:2 * n_c]
        _, _, _, _, kinetic, gravity, _ = fast.outputs(z[None, :], zd[None, :], active[None, :], vimp[None, :])
        return np.array([kinetic[0], gravity[0], 0.5 * z @ chain.stiffness_matrix @ z])

    rates = (8.0 * (energies(h) - energies(-h)) - (energies(2.0 * h) - energies(-2.0 * h))) / (12.0 * h)
    powers = ydot[2 * n_c:2 * n_c + 3]
    cancellation = 1e2 * np.finfo(float).eps * float(np.sum(np.abs(energies(0.0)))) / h
    tolerance = 1e-6 * (float(np.sum(np.abs(rates))) + float(np.sum(np.abs(powers)))) + cancellation
    return abs(float(np.sum(rates)) - float(np.sum(powers))), tolerance


@pytest.mark.parametrize("modes", [*MODE_SETS, "pinned"])
def test_kernel_rhs_closes_the_power_balance(modes) -> None:
    chain = _pinned_chain() if modes == "pinned" else paper002_chain(modes)
    fast = chain.compiled()
    assert fast is not None
    rng = np.random.default_rng(17)
    n_c = chain.n_coordinates
    n_contact = 0
    for k, (y, active, vimp) in enumerate(_random_states(chain, rng, 12)):
        got = np.empty_like(y)
        assert fast.rhs(y[:n_c], y[n_c:2 * n_c], active, vimp, got)
        assert np.array_equal(got[:n_c], y[n_c:2 * n_c])
        n_contact += got[2 * n_c + 1] != 0.0
        residual, tolerance = _power_residual(chain, y, active, vimp, got)
        assert residual <= tolerance, (residual, tolerance)
        if k == 0:   # the check is not vacuous: z̈ off by 1e-4 of itself fails it
            wrong = got.copy()
            wrong[n_c:2 * n_c] *= 1.0 + 1e-4
            residual, tolerance = _power_residual(chain, y, active, vimp, wrong)
            assert residual > tolerance
    if modes != "pinned":
        assert n_contact > 3   # the contact forces were exercised


def test_kernel_outputs_are_the_energies_and_the_contact_phase() -> None:
    chain = paper002_chain("sc-cc-cs")
    n_c = chain.n_coordinates
    rows = list(_random_states(chain, np.random.default_rng(3), 25))
    Y = np.array([r[0] for r in rows])
    A = np.array([r[1] for r in rows])
    V = np.array([r[2] for r in rows])
    pts, vel, fn, ft, kin_e, grav, ela = chain.compiled().outputs(Y[:, :n_c], Y[:, n_c:2 * n_c], A, V)
    for i in range(len(rows)):
        z, zd = Y[i, :n_c], Y[i, n_c:2 * n_c]
        assert not np.any(fn[i][~A[i]]) and not np.any(ft[i][~A[i]])   # no force where not in contact
        assert kin_e[i] == pytest.approx(0.5 * zd @ chain.mass_matrix(z) @ zd, rel=1e-12)
        assert ela[i] == pytest.approx(0.5 * z @ chain.stiffness_matrix @ z, rel=1e-12)


def test_short_drop_falls_freely_to_the_first_touchdown() -> None:
    """From rest, the undeformed chain falls as a rigid body until its lowest contact point touches the ground:
    touchdown at t = √(2h/g) to 1e-9 s (event location), δ̇⁻ = √(2gh) to 1e-9 relative; the run's energy error
    stays constant to 1e-5 % (rtol 1e-9) through the impacts."""
    chain = paper002_chain("ss-ss-ss")
    fast = simulate_drop(chain, t_end=0.45, dt_out=2e-3)
    assert fast.n_rhs_general == 0
    assert len(fast.contacts) >= 6   # O1 and O4, with sub-impacts
    z0, _ = chain.initial_state()
    height = min(chain.point_heights(z0)[k] - chain.ground_height for k in chain.contact_points)
    first = min(fast.contacts, key=lambda c: c["time"])
    assert first["time"] == pytest.approx(np.sqrt(2.0 * height / chain.gravity), abs=1e-9)
    assert first["impact_velocity"] == pytest.approx(np.sqrt(2.0 * chain.gravity * height), rel=1e-9)
    assert np.abs(fast.energy_error_percent - fast.energy_error_percent[0]).max() < 1e-5


def test_no_drop_kernel_for_a_law_without_kernel() -> None:
    class Plugin(KelvinVoigtSmooth):   # a third party's formula, no compiled twin
        law_name = "plugin_linear"

        def _unclipped(self, delta, delta_dot, impact_velocity):
            return self.stiffness * delta
    plugin = paper002_chain("ss-ss-ss")
    plugin.normal_law = Plugin(stiffness=1e6, damping=1e3)
    assert plugin.compiled() is None
    # its drop runs through the law classes (`drop_rhs`): free fall to the first touchdown, energy balance (eq. 31)
    drop = simulate_drop(plugin, t_end=0.45, dt_out=2e-3)
    z0, _ = plugin.initial_state()
    height = min(plugin.point_heights(z0)[k] - plugin.ground_height for k in plugin.contact_points)
    assert min(c["time"] for c in drop.contacts) == pytest.approx(np.sqrt(2.0 * height / plugin.gravity), abs=1e-9)
    assert np.abs(drop.normal_force).max() > 0.0
    assert np.abs(drop.energy_error_percent - drop.energy_error_percent[0]).max() < 1e-5
    soft = paper002_chain("ss-ss-ss")
    soft.normal_law = KelvinVoigtSmooth(stiffness=1e6, damping=1e3)   # acts outside contact: its kernel serves
    fast = soft.compiled()
    assert fast is not None
    n_c = soft.n_coordinates
    for y, active, vimp in _random_states(soft, np.random.default_rng(5), 6):
        got = np.empty_like(y)
        assert fast.rhs(y[:n_c], y[n_c:2 * n_c], active, vimp, got)
        residual, tolerance = _power_residual(soft, y, active, vimp, got)
        assert residual <= tolerance, (residual, tolerance)


def test_failing_call_declines() -> None:
    chain = paper002_chain("cs-ss-sc")
    n_c = chain.n_coordinates
    z, zd = chain.initial_state()
    z[0] = np.nan
    out = np.empty(2 * n_c + 3)
    assert chain.compiled().rhs(z, zd, np.zeros(4, bool), np.zeros(4), out) is False
