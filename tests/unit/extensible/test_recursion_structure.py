"""Structure of the corrected general recursion (paper 004) on random states and random parameters."""
from __future__ import annotations

import numpy as np
import pytest
from biobullet.extensible import recursion as rec
from biobullet.extensible.chain_model import ChainModel, Link, reference_flight_state, six_link_reference

SHAPES = [(1, 1, 1), (2, 2, 2), (3, 3, 3), (1, 3, 2), (2, 1, 3)]


def random_model(shape, rng, damping=False) -> ChainModel:
    chains = []
    for size in shape:
        chains.append([Link(mass=rng.uniform(0.5, 30.0), n=rng.uniform(0.05, 0.95), rest_length=rng.uniform(0.2, 0.6),
                            stiffness=rng.uniform(1e3, 1e5), damping=rng.uniform(0, 50.0) if damping else 0.0,
                            inertia=rng.uniform(0.01, 1.0)) for _ in range(size)])
    return ChainModel.build(*chains, gravity=9.81)


def random_state(model: ChainModel, rng):
    n = model.n_links
    q = np.concatenate([rng.uniform(-1, 1, 2), rng.uniform(-np.pi, np.pi, n),
                        model.rest_lengths * rng.uniform(0.8, 1.2, n)])
    v = rng.normal(size=2 * n + 2)
    return q, v


@pytest.mark.parametrize("shape", SHAPES)
def test_mass_matrix_structure(shape):
    rng = np.random.default_rng(sum(shape) * 7 + shape[0])
    for _ in range(20):
        model = random_model(shape, rng)
        q, _ = random_state(model, rng)
        n = model.n_links
        M = rec.mass_matrix(model, q)
        assert np.array_equal(M, M.T)
        assert np.linalg.eigvalsh(M).min() > 0.0
        mtot = model.total_mass
        assert M[0, 0] == pytest.approx(mtot, rel=1e-15) and M[1, 1] == pytest.approx(mtot, rel=1e-15)
        assert M[0, 1] == 0.0
        phi_rows, l_rows = 2 + np.arange(n), 2 + n + np.arange(n)
        assert np.all(M[phi_rows, l_rows] == 0.0)          # M[φi, li] = 0 (e_i ⊥ e_i^⊥)
        for i in range(n):
            for j in range(n):
                if model.chain[i] != model.chain[j]:
                    block = M[np.ix_([2 + i, 2 + n + i], [2 + j, 2 + n + j])]
                    assert np.all(block == 0.0)


@pytest.mark.parametrize("shape", SHAPES)
def test_velocity_terms_structure(shape):
    """h_vel is a combination of φ̇_j² and l̇_j φ̇_j only: zero when all φ̇ = 0, independent of ẋ, ẏ, linear in
    l̇ at fixed φ̇, and a quadratic form in φ̇ (no φ̇_i φ̇_j cross products): h(φ̇) = Σ_j h(φ̇_j e_j)."""
    rng = np.random.default_rng(100 + sum(shape))
    for _ in range(10):
        model = random_model(shape, rng)
        n = model.n_links
        q, v = random_state(model, rng)
        # no damping, constant inertia: the velocity terms are h(q, v) − h(q, 0) (gravity and springs cancel exactly)
        vel = lambda vv: rec.bias_forces(model, q, vv) - rec.bias_forces(model, q, np.zeros_like(vv))
        h0 = vel(v)
        w = v.copy()
        w[:2] = rng.normal(size=2) * 10
        assert np.allclose(vel(w), h0, rtol=0, atol=1e-13 * (1 + np.abs(h0).max()))
        z = v.copy()
        z[2:2 + n] = 0.0
        assert np.all(vel(z) == 0.0)                          # no l̇² or l̇_i l̇_j terms
        # no φ̇_i φ̇_j (i ≠ j) and no l̇_i φ̇_j (i ≠ j): the sum of single-link contributions
        parts = np.zeros_like(h0)
        for j in range(n):
            u = np.zeros_like(v)
            u[2 + j], u[2 + n + j] = v[2 + j], v[2 + n + j]
            parts += vel(u)
        assert np.allclose(parts, h0, rtol=0, atol=1e-12 * (1 + np.abs(h0).max()))
        # each single-link contribution is α φ̇_j² + β l̇_j φ̇_j: scaling φ̇_j by s, l̇_j fixed, gives α s² + β s
        j = int(rng.integers(n))
        u = np.zeros_like(v)
        u[2 + j], u[2 + n + j] = 1.0, 0.0
        alpha = vel(u)
        u[2 + n + j] = 1.0
        beta = vel(u) - alpha
        u[2 + j], u[2 + n + j] = 2.5, -0.7
        assert np.allclose(vel(u), alpha * 6.25 + beta * 2.5 * -0.7, rtol=0, atol=1e-12 * (1 + np.abs(alpha).max()))


def test_reference_conventions_energy_and_momentum():
    """The issue's checks of the conventions: E0 ≈ 849.197650 J, L_G ≈ −0.182080 kg·m²/s (published to 1e-6)."""
    model = six_link_reference()
    q, v = reference_flight_state(model)
    e = rec.energy(model, q, v)
    assert float(e.total) == pytest.approx(849.197650, abs=5e-7)
    assert float(rec.angular_momentum_about_com(model, q, v)) == pytest.approx(-0.182080, abs=5e-7)
    # kinetic energy from the COM velocities equals ½ q̇ᵀ M q̇ of the recursion
    assert float(e.kinetic) == pytest.approx(0.5 * v @ rec.mass_matrix(model, q) @ v, rel=1e-14)


def test_foot_jacobian_and_bias_by_finite_differences():
    rng = np.random.default_rng(11)
    model = random_model((2, 3, 2), rng)
    q, v = random_state(model, rng)
    eps = 1e-6
    for foot in (0, 1):
        J = rec.foot_jacobian(model, q, foot)
        Jfd = np.column_stack([(rec.foot_position(model, q + eps * e, foot) - rec.foot_position(model, q - eps * e, foot))
                               / (2 * eps) for e in np.eye(model.dof)])
        assert np.allclose(J, Jfd, atol=1e-8)
        # J̇ q̇ = d/dt (J) q̇ along q̇
        Jd = (rec.foot_jacobian(model, q + eps * v, foot) - rec.foot_jacobian(model, q - eps * v, foot)) / (2 * eps)
        assert np.allclose(rec.foot_velocity_product(model, q, v, foot), Jd @ v, atol=1e-7)


def test_mass_matrix_singular_exactly_when_all_links_are_parallel():
    """Point-mass links: with every link parallel, stretching all links about their fixed COMs (plus a hip shift)
    has zero kinetic energy, so M is singular there (documented); one non-parallel link restores definiteness."""
    from biobullet.core.errors import SolverError
    rng = np.random.default_rng(21)
    for shape in SHAPES:
        model = random_model(shape, rng)
        n = model.n_links
        base = rng.uniform(0, np.pi)
        phi = base + np.pi * rng.integers(0, 2, n)          # parallel or anti-parallel
        q = np.concatenate([[0.1, 0.7], phi, model.rest_lengths])
        M = rec.mass_matrix(model, q)
        w = np.linalg.eigvalsh(M)
        assert w[0] < 1e-12 * w[-1]
        with pytest.raises(SolverError, match="parallel"):
            rec.forward_dynamics(model, q, np.zeros(model.dof))
        q[2 + int(rng.integers(n))] += 0.2
        assert np.linalg.eigvalsh(rec.mass_matrix(model, q))[0] > 1e-9 * w[-1]
