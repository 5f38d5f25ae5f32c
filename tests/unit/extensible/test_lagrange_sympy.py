"""The anthropomorph's dynamics — the tree model of its generated model file (`extensible.model_file`), time-varying
inertias as two point masses at ±sqrt(I(t)/m) — equal an independent SymPy Lagrange derivation
(tests/extensible_lagrange.py, which writes I(t) φ̇²/2 directly) to round-off, for chain shapes 3+3+3, 2+2+2, 1+1+1
and asymmetric ones, with springs, dampers, gravity, joint moments (by virtual work) and the İφ̇ terms of
polynomial and Fourier inertia laws.

Tolerances: M and h to 1e-14 of their largest entry — round-off of a few dozen frame transforms (the largest error
seen on these draws is 4e-16), while the smallest physical term checked, İφ̇ of the time-varying laws, is 1e-5 to
1e-3 of h's scale (spring forces up to ~1e4 N).
"""
from __future__ import annotations

import numpy as np
import pytest
from biobullet.core.errors import ModelError
from biobullet.extensible import kinematics as kin
from biobullet.extensible.chain_model import ChainModel, InertiaLaw, Link
from extensible_lagrange import derive

SHAPES = [(3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 3, 2), (2, 1, 1)]
LAWS = ("constant", "polynomial", "fourier")


def inertia_law(kind: str, rng) -> InertiaLaw:
    if kind == "constant":
        return InertiaLaw("constant", (rng.uniform(0.05, 1.0),))
    if kind == "polynomial":
        return InertiaLaw("polynomial", (rng.uniform(0.3, 1.0), rng.uniform(-0.3, 0.3), rng.uniform(-0.2, 0.2)))
    return InertiaLaw("fourier", (rng.uniform(0.5, 1.0), rng.uniform(-0.2, 0.2), rng.uniform(-0.1, 0.1)),
                      (rng.uniform(-0.2, 0.2), rng.uniform(-0.1, 0.1)), rng.uniform(0.3, 2.0))


def model_and_params(shape, rng, kind):
    chains, P = [], {key: [] for key in ("m", "n", "L0", "k", "c", "I", "Idot")}
    t = 0.37
    for size in shape:
        links = []
        for _ in range(size):
            m, n, L0 = rng.uniform(0.5, 30), rng.uniform(0.05, 0.95), rng.uniform(0.2, 0.6)
            k, c = rng.uniform(1e3, 1e5), rng.uniform(0, 40)
            law = inertia_law(kind, rng)
            links.append(Link(mass=m, n=n, rest_length=L0, stiffness=k, damping=c, inertia=law))
            for key, val in (("m", m), ("n", n), ("L0", L0), ("k", k), ("c", c), ("I", law.value(t)),
                             ("Idot", law.rate(t))):
                P[key].append(val)
        chains.append(links)
    P["g"] = 9.81
    return ChainModel.build(*chains, gravity=9.81), P, t


@pytest.mark.parametrize("kind", LAWS)
@pytest.mark.parametrize("shape", SHAPES)
def test_tree_model_equals_lagrange(shape, kind):
    rng = np.random.default_rng(31 + 5 * sum(shape) + shape[0] + 17 * LAWS.index(kind))
    f = derive(*shape)
    for _ in range(2):   # (each draw loads a tree model: 0.2–0.5 s of CPU)
        model, P, t = model_and_params(shape, rng, kind)
        assert model.time_varying_inertia == (kind != "constant")
        n = model.n_links
        q = np.concatenate([rng.uniform(-1, 1, 2), rng.uniform(-np.pi, np.pi, n), model.rest_lengths
                            * rng.uniform(0.8, 1.2, n)])
        v = rng.normal(size=2 * n + 2)
        M_ref, h_ref = f(q, v, P)
        M, h = model.mass_matrix(q, t), model.bias_forces(q, v, t)
        scale_M, scale_h = np.abs(M_ref).max(), np.abs(h_ref).max()
        assert np.max(np.abs(M - M_ref)) <= 1e-14 * scale_M
        assert np.max(np.abs(h - h_ref)) <= 1e-14 * scale_h
        # joint moments: Bᵀτ is the virtual work of +τ on the child and −τ on the parent angle
        tau = rng.normal(size=n - 1)
        Q = kin.joint_moment_force(model, tau)
        dphi = rng.normal(size=n)
        work = sum(tj * (dphi[jt.child] - dphi[jt.parent]) for tj, jt in zip(tau, model.joints))
        assert Q[2:2 + n] @ dphi == pytest.approx(work, rel=1e-13)
        # the shared vocabulary: model.forward_dynamics(q, v, tau = Q, t) solves the Lagrange equations
        acc_ref = np.linalg.solve(M_ref, Q - h_ref)
        acc = model.forward_dynamics(q, v, Q, t)
        assert np.max(np.abs(M_ref @ (acc - acc_ref))) <= 1e-10 * max(scale_h, np.abs(Q).max())


def test_inertia_law_not_positive_is_refused():
    law = InertiaLaw("polynomial", (0.2, -0.1))              # I(t) = 0.2 − 0.1 t: zero at t = 2 s
    with pytest.raises(ModelError) as err:
        Link(mass=1.0, n=0.5, rest_length=0.4, stiffness=1e4, inertia=InertiaLaw("polynomial", (-0.1, 0.2)),
             name="shin")
    assert err.value.attribute == "inertia" and "shin" in str(err.value)
    links = [Link(mass=1.0, n=0.5, rest_length=0.4, stiffness=1e4, inertia=law, name=f"link{i}") for i in range(3)]
    model = ChainModel.build(links[:1], links[1:2], links[2:])
    q = np.concatenate([[0.0, 1.0], [1.0, 2.0, 1.5], [0.4, 0.4, 0.4]])
    model.mass_matrix(q, 1.0)
    with pytest.raises(ModelError) as err:
        model.mass_matrix(q, 2.5)
    assert err.value.attribute == "inertia" and "link0" in str(err.value)
