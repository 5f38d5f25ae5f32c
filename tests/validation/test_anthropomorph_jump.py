"""Paper 004 jump (study (c)): stance → push-off by joint moments → lift-off → flight → landing on compliant feet →
stance that lasts. Checked: events, no negative normal force, the energy budget closes, the take-off is vertical
with (nearly) no angular momentum about the COM, and the body comes to rest in the double stance — compared with
the static stance, an independent root solve (`phases.static_stance`), lowered by the Hertz penetration of the
feet. One run of the study's jump (3.1 s of motion, ~15–20 s)."""
from __future__ import annotations

import numpy as np
import pytest
from biobullet.extensible import kinematics as kin
from biobullet.extensible.chain_model import six_link_reference
from biobullet.extensible.phases import FREE, static_stance
from biobullet_studies.anthropomorph import JUMP_DAMPING, SETTLE_SPEED, jump_study


@pytest.fixture(scope="module")
def jump():
    model = six_link_reference(damping=JUMP_DAMPING)
    tr, res = jump_study(model, touchdown="compliant")
    return model, tr, res


def test_phase_sequence_and_events(jump):
    model, tr, _res = jump
    labels = [p for i, p in enumerate(tr.phase) if i == 0 or p != tr.phase[i - 1]]
    # one flight, one landing, no hop: pinned push-off → flight → compliant double stance until the end; the two
    # (identical, coincident) feet leave and touch within a fraction of a millisecond of each other (round-off)
    assert labels[0] == "double(pinned)" and labels[-1] == "double(compliant)" and labels.count("flight") == 1
    assert set(labels[1:-1]) <= {"single(pinned)", "flight", "single(compliant)"}
    single_times = [e["t"] for e in tr.transitions]
    assert single_times[1] - single_times[0] < 1e-3 and single_times[-1] - single_times[-2] < 1e-3
    kinds = [e["kind"] for e in tr.transitions]
    assert kinds.count("liftoff") == 2 and kinds.count("release") == 0
    first = next(e for e in tr.transitions if e["kind"] == "liftoff")
    k = int(np.searchsorted(tr.t, first["t"]))
    # the last sample before the event (≤ 2 ms earlier) still pushes, but with a small fraction of the push-off peak
    before = tr.reactions[k - 1, first["foot"], 1]
    assert first["t"] - tr.t[k - 1] <= 2e-3 + 1e-12
    assert 0.0 < before < 0.05 * tr.reactions[:k, first["foot"], 1].max()
    landing = [e for e in tr.transitions if e["kind"] == "touchdown"]
    assert {f for e in landing for f in e["feet"]} == {0, 1} and all(e["foot_velocity_y"] < -0.5 for e in landing)
    kl = int(np.searchsorted(tr.t, landing[0]["t"]))
    for i in landing[0]["feet"]:
        assert abs(kin.foot_position(model, tr.q[kl], i)[1]) < 1e-9


def test_no_negative_normal_force_and_budget_closes(jump):
    _model, tr, res = jump
    assert np.min(tr.reactions[:, :, 1]) >= 0.0
    e = tr.energy_table()
    exchanged = np.max(np.abs(e["work_moments"]))
    assert exchanged > 50.0                                  # the push-off does real work
    # LSODA rtol = atol = 1e-9 on the state and on the work integrals (~2e4 steps): measured 3.2e-7 J on 112 J;
    # the bound allows 30× that, far below any modelling term (link dampers 12 J, contact 11 J)
    assert np.max(np.abs(e["residual"])) < 1e-7 * exchanged
    assert e["contact_dissipation"][-1] > 0.0 and e["work_damper"][-1] < 0.0
    assert res["constraint_drift_max"] < 1e-8
    # at rest again: the landing dissipated what the push-off put in beyond the (unchanged) potential energy
    assert abs(e["kinetic"][-1]) < 1e-3


def test_vertical_takeoff_without_angular_momentum(jump):
    """The push-off keeps the reaction line through the COM: L_G and ẋ_G at take-off are small against the scales
    of the jump (m y_G ẏ_G ≈ 70 kg·m²/s; the first version of this study left with −13 kg·m²/s), and L_G is then
    conserved in flight (no external moment: a conservation law, not a controller property)."""
    model, tr, res = jump
    m = model.total_mass
    k = tr.phase.index("flight")
    L = kin.angular_momentum_about_com(model, tr.q, tr.v, tr.t)
    G, Gd = kin.center_of_mass(model, tr.q, tr.v)
    assert Gd[k, 1] > 0.8
    assert abs(L[k]) < 5e-3 * m * G[k, 1] * Gd[k, 1]
    assert abs(Gd[k, 0]) < 1e-2 * Gd[k, 1]
    flight = np.array([p == "flight" for p in tr.phase])
    assert np.ptp(L[flight]) < 1e-6
    assert res["takeoff_angular_momentum"] == pytest.approx(L[k])
    # the pinned feet put no limit on the ankle moments; the push-off stays within what a foot of half-length
    # 0.1 m could carry (centre of pressure on the foot)
    assert res["push_ankle_to_foot_capacity_max"] <= 1.0


def test_settles_into_the_static_double_stance(jump):
    model, tr, res = jump
    t_land = res["landing_time"]
    after = tr.t > t_land + 1e-3    # both feet touch down within a few µs of t_land
    assert tr.t[-1] - t_land > 2.0
    assert all(all(s != FREE for s in fs) for fs, a in zip(tr.foot_states, after) if a)   # feet stay down
    assert np.min(tr.reactions[after][:, :, 1]) > 0.0                                       # and loaded:
    # > 0 from the touchdown on (the Hertz force starts at 0), and a good share of the weight once the landing law
    # has braked the fall
    W = model.total_mass * model.gravity
    assert np.min(tr.reactions[tr.t > t_land + 0.3][:, :, 1]) > 0.25 * W / 2
    _, Gd = kin.center_of_mass(model, tr.q, tr.v)
    speed = np.linalg.norm(Gd, axis=1)
    assert np.all(speed[tr.t >= t_land + 1.8] < SETTLE_SPEED)
    assert res["settled"] and res["settle_time_s"] < 1.8
    # the final state is the static double stance: same spring compressions and reactions (static_stance is an
    # independent root solve of ∂V/∂q = Jᵀ R), the hip lower by the feet's Hertz penetration δ = (W/2K)^(2/3).
    # Bounds: the residual motion (|Ġ| ~ 1e-3 m/s, a lean of ~1 mrad held by the ankles) changes Δl by ~1e-6 m
    # and the reactions by ~0.1 N.
    stance = static_stance(model)
    q = tr.q[-1]
    n = model.n_links
    delta = (W / 2 / 1.0e6) ** (2.0 / 3.0)
    feet_y = [kin.foot_position(model, q, i)[1] for i in range(2)]
    assert feet_y == pytest.approx([-delta, -delta], abs=2e-6)
    assert q[1] == pytest.approx(stance.hip_height - delta, abs=2e-5)
    assert np.max(np.abs(q[2 + n:] - model.rest_lengths - stance.compressions)) < 2e-6
    assert np.max(np.abs(tr.reactions[-1] - stance.reactions)) < 0.5
    assert np.max(np.abs(q[2:2 + n] - np.pi / 2)) < 5e-3
