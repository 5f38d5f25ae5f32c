"""The general recursion equals an automatic SymPy Lagrange derivation (tests/extensible_lagrange.py) to round-off,
for chain shapes 3+3+3, 2+2+2, 1+1+1 and asymmetric ones, including springs, dampers, gravity, joint moments
(by virtual work) and İ terms."""
from __future__ import annotations

import numpy as np
import pytest
from biobullet.extensible import recursion as rec
from biobullet.extensible.chain_model import ChainModel, InertiaLaw, Link
from extensible_lagrange import derive

SHAPES = [(3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 3, 2), (2, 1, 1)]


def model_and_params(shape, rng):
    chains, P = [], {key: [] for key in ("m", "n", "L0", "k", "c", "I", "Idot")}
    t = 0.37
    for size in shape:
        links = []
        for _ in range(size):
            m, n, L0 = rng.uniform(0.5, 30), rng.uniform(0.05, 0.95), rng.uniform(0.2, 0.6)
            k, c = rng.uniform(1e3, 1e5), rng.uniform(0, 40)
            coeffs = (rng.uniform(0.05, 1.0), rng.uniform(-0.3, 0.3), rng.uniform(-0.2, 0.2))
            law = InertiaLaw("polynomial", coeffs)
            links.append(Link(mass=m, n=n, rest_length=L0, stiffness=k, damping=c, inertia=law))
            for key, val in (("m", m), ("n", n), ("L0", L0), ("k", k), ("c", c), ("I", law.value(t)),
                             ("Idot", coeffs[1] + 2 * coeffs[2] * t)):
                P[key].append(val)
        chains.append(links)
    P["g"] = 9.81
    return ChainModel.build(*chains, gravity=9.81), P, t


@pytest.mark.parametrize("shape", SHAPES)
def test_recursion_equals_lagrange(shape):
    rng = np.random.default_rng(31 + 5 * sum(shape) + shape[0])
    f = derive(*shape)
    for _ in range(5):
        model, P, t = model_and_params(shape, rng)
        n = model.n_links
        q = np.concatenate([rng.uniform(-1, 1, 2), rng.uniform(-np.pi, np.pi, n), model.rest_lengths
                            * rng.uniform(0.8, 1.2, n)])
        v = rng.normal(size=2 * n + 2)
        M_ref, h_ref = f(q, v, P)
        M, h = rec.mass_matrix(model, q, t), rec.bias_forces(model, q, v, t)
        scale_M, scale_h = np.abs(M_ref).max(), np.abs(h_ref).max()
        assert np.max(np.abs(M - M_ref)) <= 1e-13 * scale_M
        assert np.max(np.abs(h - h_ref)) <= 1e-12 * scale_h
        # joint moments: Bᵀτ is the virtual work of +τ on the child and −τ on the parent angle
        tau = rng.normal(size=n - 1)
        Q = rec.joint_moment_force(model, tau)
        dphi = rng.normal(size=n)
        work = sum(tj * (dphi[jt.child] - dphi[jt.parent]) for tj, jt in zip(tau, model.joints))
        assert Q[2:2 + n] @ dphi == pytest.approx(work, rel=1e-13)
        # the shared vocabulary: model.forward_dynamics(q, v, tau = Q, t) solves the Lagrange equations
        acc_ref = np.linalg.solve(M_ref, Q - h_ref)
        acc = model.forward_dynamics(q, v, Q, t)
        assert np.max(np.abs(M_ref @ (acc - acc_ref))) <= 1e-11 * max(scale_h, np.abs(Q).max())
        assert np.array_equal(model.mass_matrix(q, t), M) and np.array_equal(model.bias_forces(q, v, t), h)
