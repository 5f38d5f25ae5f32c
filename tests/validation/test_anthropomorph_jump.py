"""Paper 004 jump (study (c)): stance → push-off by joint moments → lift-off → flight → compliant landing.
The energy budget closes, lift-off and touchdown are located as events, no negative normal force."""
from __future__ import annotations

import numpy as np
import pytest
from biobullet.extensible import recursion as rec
from biobullet.extensible.chain_model import six_link_reference
from biobullet_studies.anthropomorph import JUMP_DAMPING, jump_study


@pytest.fixture(scope="module")
def jump():
    model = six_link_reference(damping=JUMP_DAMPING)
    tr, res = jump_study(model, touchdown="compliant", t_end=0.68)
    return model, tr, res


def test_phase_sequence_and_events(jump):
    model, tr, res = jump
    labels = [p for i, p in enumerate(tr.phase) if i == 0 or p != tr.phase[i - 1]]
    assert labels[0] == "double(pinned)" and "flight" in labels and labels[-1] == "double(compliant)"
    kinds = [e["kind"] for e in tr.events]
    assert "liftoff" in kinds and "touchdown" in kinds
    first = next(e for e in tr.events if e["kind"] == "liftoff")
    k = int(np.searchsorted(tr.t, first["t"]))
    # the last sample before the event (≤ 2 ms earlier) still pushes, but with a small fraction of the push-off peak
    before = tr.reactions[k - 1, first["foot"], 1]
    assert first["t"] - tr.t[k - 1] <= 2e-3 + 1e-12
    assert 0.0 < before < 0.05 * tr.reactions[:k, first["foot"], 1].max()
    landing = [e for e in tr.events if e["kind"] == "touchdown" and e["t"] > 0.5]
    assert landing and landing[0]["foot_velocity_y"] < -0.5
    kl = int(np.searchsorted(tr.t, landing[0]["t"]))
    for i in landing[0]["feet"]:
        assert abs(rec.foot_position(model, tr.q[kl], i)[1]) < 1e-9


def test_no_negative_normal_force_and_budget_closes(jump):
    model, tr, res = jump
    assert np.min(tr.reactions[:, :, 1]) >= 0.0
    e = tr.energy_table()
    exchanged = np.max(np.abs(e["work_moments"]))
    assert exchanged > 50.0                                  # the push-off does real work
    assert np.max(np.abs(e["residual"])) < 1e-7 * exchanged * 100   # LSODA rtol 1e-9: ~1e-6 J on ~150 J
    assert e["contact_dissipation"][-1] > 0.0 and e["work_damper"][-1] < 0.0
    assert res["constraint_drift_max"] < 1e-8
