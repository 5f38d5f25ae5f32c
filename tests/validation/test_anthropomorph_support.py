"""Paper 004, support phases: Σ reactions = M_tot (a_G + g ŷ) in double support, the static stance compresses the
legs (closed-form check), touchdown and lift-off events, impact map."""
from __future__ import annotations

import numpy as np
import pytest
from biobullet.extensible import kinematics as kin
from biobullet.extensible.chain_model import six_link_reference, three_link_reference
from biobullet.extensible.phases import FootConstraint, constrained_accelerations, impact_map, static_stance
from biobullet_studies.anthropomorph_phases import simulate_phases


@pytest.mark.parametrize("make", [six_link_reference, three_link_reference])
def test_double_support_reactions_equal_total_mass_times_com_acceleration_plus_gravity(make):
    """Newton for the whole body, with a_G from finite differences of Ġ(q, q̇) along the computed motion (an
    independent kinematic check of the x, y rows and of the KKT solve), random states and joint moments."""
    model = make()
    rng = np.random.default_rng(3)
    n = model.n_links
    for _ in range(5):
        q = np.concatenate([[0.0, 1.0], np.pi / 2 + rng.uniform(-0.4, 0.4, n), model.rest_lengths
                            * rng.uniform(0.97, 1.03, n)])
        v = rng.normal(size=model.dof)
        cons = [FootConstraint(i, tuple(kin.foot_position(model, q, i))) for i in (0, 1)]
        tau = rng.normal(scale=50.0, size=n - 1)
        a, R = constrained_accelerations(model, q, v, 0.0, kin.joint_moment_force(model, tau), cons)
        # G̈ = (∂Ġ/∂q̇) q̈ + (∂Ġ/∂q) q̇: the first term exactly (Ġ is linear in q̇), the second by a central
        # difference along q̇ (error O(ε²))
        eps = 1e-6
        _, a_lin = kin.center_of_mass(model, q, a)
        _, gd_p = kin.center_of_mass(model, q + eps * v, v)
        _, gd_m = kin.center_of_mass(model, q - eps * v, v)
        a_G = a_lin + (gd_p - gd_m) / (2 * eps)
        expected = model.total_mass * (a_G + np.array([0.0, model.gravity]))
        assert np.allclose(R.sum(axis=0), expected, rtol=1e-8, atol=1e-8 * model.total_mass * model.gravity)
        # the constrained feet do not accelerate (Baumgarte terms vanish on the constraint with J q̇ ≠ 0 only
        # through J q̇, so check J q̈ = −J̇q̇ − 2α J q̇)
        for c in cons:
            J = kin.foot_jacobian(model, q, c.foot)
            assert np.allclose(J @ a, c.acceleration_rhs(model, q, v, J), atol=1e-8)


def test_static_stance_compresses_the_legs_closed_form():
    """Vertical stance with both feet at the origin: R = (0, W/2) per foot by symmetry; trunk link j carries the
    weight above its COM share: k Δl_j = −g μ_j; leg link j: k Δl_j = g μ_j − W/2 (μ = m ρ + mass distal)."""
    model = six_link_reference()
    st = static_stance(model)
    W = model.total_mass * model.gravity
    assert np.allclose(st.reactions, [[0.0, W / 2], [0.0, W / 2]], atol=1e-8)
    g, k, mu = model.gravity, model.stiffness, model.mu
    expected = np.where(model.chain == 2, -g * mu / k, (g * mu - W / 2) / k)
    assert np.allclose(st.compressions, expected, rtol=1e-9, atol=1e-13)
    assert np.all(st.compressions < 0.0)                       # every link is compressed, none stretched
    leg = model.chain == 0
    assert st.hip_height == pytest.approx(float(np.sum(model.rest_lengths[leg] + st.compressions[leg])), rel=1e-12)
    assert np.allclose(st.q[2:2 + model.n_links], np.pi / 2, atol=1e-10)
    # it is an equilibrium of the pinned double support
    cons = [FootConstraint(0, (0.0, 0.0)), FootConstraint(1, (0.0, 0.0))]
    a, R = constrained_accelerations(model, st.q, np.zeros(model.dof), 0.0, np.zeros(model.dof), cons)
    assert np.max(np.abs(a)) < 1e-8
    assert np.allclose(R, st.reactions, atol=1e-6)


def test_three_link_stance_compresses():
    st = static_stance(three_link_reference())
    assert np.all(st.compressions < 0.0)


def test_impact_map_stops_the_feet_and_loses_energy():
    model = six_link_reference()
    rng = np.random.default_rng(8)
    q = np.concatenate([[0.0, 0.95], np.pi / 2 + rng.uniform(-0.3, 0.3, 6), model.rest_lengths])
    v = rng.normal(size=model.dof)
    v[1] = -2.0
    v_plus, _ = impact_map(model, q, v, 0.0, [0, 1])
    for i in (0, 1):
        assert np.allclose(kin.foot_jacobian(model, q, i) @ v_plus, 0.0, atol=1e-12)
    T0, T1 = kin.energy(model, q, v).kinetic, kin.energy(model, q, v_plus).kinetic
    assert T1 < T0
    # Carnot: the kinetic energy lost is ½ (q̇⁻ − q̇⁺)ᵀ M (q̇⁻ − q̇⁺) for a perfectly plastic impact
    dv = v - v_plus
    assert T0 - T1 == pytest.approx(0.5 * dv @ model.mass_matrix(q) @ dv, rel=1e-10)


def test_drop_touchdown_event_is_located_and_normal_force_never_negative():
    """Three-link body falling vertically onto compliant ground: in free fall the springs stay at rest length, so
    the body translates rigidly and the feet reach y = 0 at t* solving 0.05 − t − g t²/2 = 0; after touchdown F_N ≥ 0 and the budget closes."""
    model = three_link_reference(damping=100.0)
    # legs splayed ±0.1 rad (all links parallel would make M singular: see docs), feet 0.05 m above the ground
    q = np.concatenate([[0.0, 0.05 + 0.9 * np.cos(0.1)], np.pi / 2 + np.array([0.1, -0.1, 0.0]),
                        model.rest_lengths])
    v = np.zeros(model.dof)
    v[1] = -1.0
    tr = simulate_phases(model, 0.1, initial=(q, v), method="LSODA", rtol=1e-10, atol=1e-10, dt_sample=1e-3)
    g = model.gravity
    t_star = (-1.0 + np.sqrt(1.0 + 2 * g * 0.05)) / g
    touch = [e for e in tr.transitions if e["kind"] == "touchdown"]
    assert len(touch) == 2 and {f for e in touch for f in e["feet"]} == {0, 1}
    assert touch[0]["t"] == pytest.approx(t_star, abs=1e-8)
    assert np.min(tr.reactions[:, :, 1]) >= 0.0
    assert tr.phase[-1] == "double(compliant)"
    e = tr.energy_table()
    assert e["contact_dissipation"][-1] > 0.0
    assert np.max(np.abs(e["residual"])) < 1e-6 * np.max(np.abs(e["mechanical"] - e["mechanical"][0]))
    # the same budget as the Trajectory's energy record: T + V − W_applied + E_dissipated stays constant
    balance = tr.energy_balance()
    assert np.max(np.abs(balance - balance[0])) < 1e-6 * np.max(np.abs(e["mechanical"] - e["mechanical"][0]))
    assert np.all(np.diff(tr.energy["dissipated"]) > -1e-7)   # dampers, contact, impacts only take energy (J)


def test_liftoff_event_where_the_normal_reaction_vanishes():
    """Pinned three-link stance with pre-compressed leg springs: the legs push the body up and the feet lift off
    exactly where the vertical reaction of the constrained phase reaches 0."""
    model = three_link_reference()
    q = np.concatenate([[0.0, 0.0], np.pi / 2 + np.array([0.1, -0.1, 0.05]),
                        model.rest_lengths * np.array([0.97, 0.97, 1.0])])
    q[1] = q[2 + 3] * np.cos(0.1)              # hip on top of the compressed, splayed legs; feet on y = 0
    tr = simulate_phases(model, 0.03, initial=(q, np.zeros(model.dof)), feet=("pinned", "pinned"), with_ground=False,
                         method="DOP853", rtol=1e-10, atol=1e-10, dt_sample=1e-3)
    lift = [e for e in tr.transitions if e["kind"] == "liftoff"]
    assert {e["foot"] for e in lift} == {0, 1}
    W = model.total_mass * model.gravity
    pinned = [0, 1]
    for ev in lift:                           # the reaction of the foot that lifts, in the phase that ends there
        k = int(np.searchsorted(tr.t, ev["t"]))
        cons = [FootConstraint(i, tuple(kin.foot_position(model, q, i))) for i in pinned]
        _, R = constrained_accelerations(model, tr.q[k], tr.v[k], ev["t"], np.zeros(model.dof), cons)
        assert abs(R[pinned.index(ev["foot"]), 1]) < 1e-6 * W
        pinned.remove(ev["foot"])
    assert np.min(tr.reactions[:, :, 1]) >= -1e-6 * W
    assert tr.phase[-1] == "flight"
