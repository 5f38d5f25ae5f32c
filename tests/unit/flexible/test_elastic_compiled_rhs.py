"""The drop kernel of paper 002 (`flexible/gibbs_appell_kernels.py`: the contact laws' kernels, Cholesky)
against the general path (`gibbs_appell_drop.drop_rhs`: the chain's M and h with the library's contact law classes
and `np.linalg.solve`).

- Random states (deflected, moving, penetrating the ground, random contact phases) of all four mode sets and a
  pinned two-mode chain: the two agree to 1e-12 relative (round-off of an 8–9 coordinate solve is ~1e-14).
- A drop through the first impact (0.45 s: free fall, O1/O4 touch down, 3 sub-impacts): contact onsets and
  separations agree to 1e-9 s and the sampled states to 1e-7 relative — the integrators see right-hand sides that
  differ by round-off, so the trajectories differ by the integration error (rtol 1e-9), amplified by the stiff
  contact (K = 1.4e8 N/m^1.5).
- A plug-in contact law without a kernel gives no drop kernel; a smoothed law (acting outside contact) has one and
  agrees with the general path; a call that fails (non-finite state) returns
  False so the caller takes the general path.
"""
from __future__ import annotations

import numpy as np
import pytest

from biobullet.contact import KelvinVoigtSmooth
from biobullet.flexible.gibbs_appell import ElasticChain, link_from_beam
from biobullet_studies.elastic_robot import MODE_SETS
from biobullet_studies.gibbs_appell_drop import drop_rhs, simulate_drop
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


@pytest.mark.parametrize("modes", [*MODE_SETS, "pinned"])
def test_kernel_rhs_matches_the_general_path(modes) -> None:
    chain = _pinned_chain() if modes == "pinned" else paper002_chain(modes)
    fast = chain.compiled()
    assert fast is not None
    rng = np.random.default_rng(17)
    n_c = chain.n_coordinates
    n_contact = 0
    for y, active, vimp in _random_states(chain, rng, 40):
        expected = drop_rhs(chain, y, active, vimp)
        got = np.empty_like(y)
        assert fast.rhs(y[:n_c], y[n_c:2 * n_c], active, vimp, got)
        n_contact += expected[2 * n_c + 1] != 0.0
        # z̈ relative to its largest component; the power terms relative to each one
        zdd, zdd_c = expected[n_c:2 * n_c], got[n_c:2 * n_c]
        assert np.abs(zdd_c - zdd).max() <= 1e-12 * np.abs(zdd).max()
        assert np.array_equal(got[:n_c], expected[:n_c])
        for slot in range(2 * n_c, 2 * n_c + 3):
            assert abs(got[slot] - expected[slot]) <= 1e-12 * max(abs(expected[slot]), 1e-300)
    if modes != "pinned":
        assert n_contact > 10   # the contact forces were exercised


def test_kernel_outputs_match_the_law_classes() -> None:
    chain = paper002_chain("sc-cc-cs")
    n_c = chain.n_coordinates
    rows = list(_random_states(chain, np.random.default_rng(3), 25))
    Y = np.array([r[0] for r in rows])
    A = np.array([r[1] for r in rows])
    V = np.array([r[2] for r in rows])
    pts, vel, fn, ft, kin_e, grav, ela = chain.compiled().outputs(Y[:, :n_c], Y[:, n_c:2 * n_c], A, V)
    from biobullet_studies.gibbs_appell_drop import contact_forces
    for i in range(len(rows)):
        z, zd = Y[i, :n_c], Y[i, n_c:2 * n_c]
        kin = chain.kinematics(z, zd)
        f_n, f_t = contact_forces(chain, kin, A[i], V[i])
        np.testing.assert_allclose(fn[i], f_n, rtol=1e-12, atol=1e-12 * max(np.abs(f_n).max(), 1.0))
        np.testing.assert_allclose(ft[i], f_t, rtol=1e-12, atol=1e-12 * max(np.abs(f_t).max(), 1.0))
        assert kin_e[i] == pytest.approx(0.5 * zd @ chain.mass_matrix(z) @ zd, rel=1e-12)
        assert ela[i] == pytest.approx(0.5 * z @ chain.stiffness_matrix @ z, rel=1e-12)


def test_short_drop_agrees_between_paths() -> None:
    chain = paper002_chain("ss-ss-ss")
    fast = simulate_drop(chain, t_end=0.45, dt_out=2e-3, compiled=True)
    slow = simulate_drop(chain, t_end=0.45, dt_out=2e-3, compiled=False)
    assert fast.n_rhs_general == 0
    assert len(fast.contacts) == len(slow.contacts) >= 6   # O1 and O4, with sub-impacts
    for a, b in zip(fast.contacts, slow.contacts):
        assert a["point"] == b["point"]
        assert abs(a["time"] - b["time"]) < 1e-9
        assert a["impact_velocity"] == pytest.approx(b["impact_velocity"], rel=1e-7)
    assert [s["point"] for s in fast.separations] == [s["point"] for s in slow.separations]
    for a, b in zip(fast.separations, slow.separations):
        assert abs(a["time"] - b["time"]) < 1e-9
    grid = np.arange(0.0, 0.45 + 1e-3, 2e-3)
    ia = np.searchsorted(fast.t, grid[1:-1])
    ib = np.searchsorted(slow.t, grid[1:-1])
    assert np.array_equal(fast.t[ia], slow.t[ib])        # the output grid is in both
    scale = np.abs(slow.z[ib]).max(axis=0) + 1e-6         # per coordinate (δ ~ 1e-4 m, q ~ 1 rad)
    assert (np.abs(fast.z[ia] - slow.z[ib]) / scale).max() < 1e-7
    assert np.abs(fast.energy_error_percent - fast.energy_error_percent[0]).max() < 1e-5
    # the peak force is the largest step-end sample of a ~ms contact: round-off moves the two runs' step ends near
    # the peak apart (by ~1e-7 s), so the sampled peaks lie on one force curve at slightly different times: they
    # differ by at most the force's change over that offset, bounded by the secant rate to the neighbouring samples
    fa, fb = np.abs(fast.normal_force).max(axis=1), np.abs(slow.normal_force).max(axis=1)
    k, j = int(np.argmax(fa)), int(np.argmax(fb))
    assert abs(fast.t[k] - slow.t[j]) < 1e-6
    rate = max(abs(fb[j + s] - fb[j]) / abs(slow.t[j + s] - slow.t[j]) for s in (-1, 1) if slow.t[j + s] != slow.t[j])
    assert abs(fa[k] - fb[j]) <= rate * abs(fast.t[k] - slow.t[j]) + 1e-9 * fb[j]


def test_no_drop_kernel_for_a_law_without_kernel() -> None:
    class Plugin(KelvinVoigtSmooth):   # a third party's formula, no compiled twin
        law_name = "plugin_linear"

        def _unclipped(self, delta, delta_dot, impact_velocity):
            return self.stiffness * delta
    plugin = paper002_chain("ss-ss-ss")
    plugin.normal_law = Plugin(stiffness=1e6, damping=1e3)
    assert plugin.compiled() is None
    soft = paper002_chain("ss-ss-ss")
    soft.normal_law = KelvinVoigtSmooth(stiffness=1e6, damping=1e3)   # acts outside contact: its kernel serves
    fast = soft.compiled()
    assert fast is not None
    n_c = soft.n_coordinates
    for y, active, vimp in _random_states(soft, np.random.default_rng(5), 10):
        expected = drop_rhs(soft, y, active, vimp)
        got = np.empty_like(y)
        assert fast.rhs(y[:n_c], y[n_c:2 * n_c], active, vimp, got)
        assert np.abs(got - expected).max() <= 1e-12 * np.abs(expected).max()


def test_failing_call_declines() -> None:
    chain = paper002_chain("cs-ss-sc")
    n_c = chain.n_coordinates
    z, zd = chain.initial_state()
    z[0] = np.nan
    out = np.empty(2 * n_c + 3)
    assert chain.compiled().rhs(z, zd, np.zeros(4, bool), np.zeros(4), out) is False
