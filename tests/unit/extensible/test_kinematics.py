"""The anthropomorph's kinematics (`extensible.kinematics`) against published numbers and finite differences, and
the tree model's mass matrix against the kinetic energy of the COM velocities and against its known singularity."""
from __future__ import annotations

import numpy as np
import pytest
from biobullet.core.errors import SolverError
from biobullet.extensible import kinematics as kin
from biobullet.extensible.chain_model import ChainModel, Link, reference_flight_state, six_link_reference

SHAPES = [(1, 1, 1), (2, 2, 2), (1, 3, 2)]


def random_model(shape, rng) -> ChainModel:
    chains = [[Link(mass=rng.uniform(0.5, 30.0), n=rng.uniform(0.05, 0.95), rest_length=rng.uniform(0.2, 0.6),
                    stiffness=rng.uniform(1e3, 1e5), inertia=rng.uniform(0.01, 1.0)) for _ in range(size)]
              for size in shape]
    return ChainModel.build(*chains, gravity=9.81)


def random_state(model: ChainModel, rng):
    n = model.n_links
    q = np.concatenate([rng.uniform(-1, 1, 2), rng.uniform(-np.pi, np.pi, n),
                        model.rest_lengths * rng.uniform(0.8, 1.2, n)])
    return q, rng.normal(size=2 * n + 2)


def test_reference_conventions_energy_and_momentum():
    """The issue's checks of the conventions: E0 ≈ 849.197650 J, L_G ≈ −0.182080 kg·m²/s (published to 1e-6)."""
    model = six_link_reference()
    q, v = reference_flight_state(model)
    e = kin.energy(model, q, v)
    assert float(e.total) == pytest.approx(849.197650, abs=5e-7)
    assert float(kin.angular_momentum_about_com(model, q, v)) == pytest.approx(-0.182080, abs=5e-7)
    # the kinetic energy of the COM velocities (+ ½ I φ̇²) equals ½ q̇ᵀ M q̇ of the tree model (round-off)
    assert float(e.kinetic) == pytest.approx(0.5 * v @ model.mass_matrix(q) @ v, rel=1e-14)


def test_foot_jacobian_and_bias_by_finite_differences():
    rng = np.random.default_rng(11)
    model = random_model((2, 3, 2), rng)
    q, v = random_state(model, rng)
    eps = 1e-6
    for foot in (0, 1):
        J = kin.foot_jacobian(model, q, foot)
        Jfd = np.column_stack([(kin.foot_position(model, q + eps * e, foot) - kin.foot_position(model, q - eps * e, foot))
                               / (2 * eps) for e in np.eye(model.dof)])
        assert np.allclose(J, Jfd, atol=1e-8)
        # J̇ q̇ = d/dt (J) q̇ along q̇
        Jd = (kin.foot_jacobian(model, q + eps * v, foot) - kin.foot_jacobian(model, q - eps * v, foot)) / (2 * eps)
        assert np.allclose(kin.foot_velocity_product(model, q, v, foot), Jd @ v, atol=1e-7)


def test_mass_matrix_singular_exactly_when_all_links_are_parallel():
    """With every link parallel, stretching all links about their fixed COMs (plus a hip shift) has zero kinetic
    energy, so M is singular there (documented); one non-parallel link restores definiteness."""
    rng = np.random.default_rng(21)
    for shape in SHAPES:
        model = random_model(shape, rng)
        n = model.n_links
        phi = rng.uniform(0, np.pi) + np.pi * rng.integers(0, 2, n)          # parallel or anti-parallel
        q = np.concatenate([[0.1, 0.7], phi, model.rest_lengths])
        w = np.linalg.eigvalsh(model.mass_matrix(q))
        assert w[0] < 1e-12 * w[-1]
        with pytest.raises(SolverError, match="singular to round-off at this state: coordinate .l"):
            model.forward_dynamics(q, np.zeros(model.dof))
        q[2 + int(rng.integers(n))] += 0.2
        assert np.linalg.eigvalsh(model.mass_matrix(q))[0] > 1e-9 * w[-1]
