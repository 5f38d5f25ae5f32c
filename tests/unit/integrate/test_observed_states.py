"""Event functions and step observers on a loop map with a compiled right-hand side take their tree states from
the compiled Newton solve (`System.observed_state(s)`) instead of the generic coordinate map: equal to
`System.tree_state` (the generic path) at states of a run, and whole runs with a heel strike locate the same
contact events and log the same intervals as runs whose observers use the generic path.

Model: the four-bar knee swinging from knee_A = 0.5 rad with a heel sphere on the shank tip and the ground 2 mm
above the heel's lowest point, so the heel strikes while swinging through (Hunt–Crossley, regularised friction)."""
from __future__ import annotations

from pathlib import Path

import biobullet
import numpy as np
import pytest
from biobullet.core import jit
from biobullet.integrate import engine
from biobullet.integrate.compiled_rhs import CompiledReducedRHS
from biobullet.integrate.engine import System

pytestmark = pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: no compiled loop map to observe through")

ROOT = Path(__file__).resolve().parents[3]
CONTACT = ('<contact name="heel" link="shank" xyz="0.01 0 -0.37" radius="0.02" normal_law="hunt_crossley" '
           'stiffness="2e5" restitution="0.6" friction_law="regularized" mu="0.6" v0="0.01" ground_height="{h!r}"/>')


def _heel_model(tmp_path: Path, height: float):
    text = (ROOT / "urdf" / "fourbar_knee.urdf").read_text()
    path = tmp_path / f"fourbar_heel_{len(list(tmp_path.iterdir()))}.urdf"
    path.write_text(text.replace("</biobullet>", CONTACT.format(h=height) + "</biobullet>"))
    return biobullet.load_model(path)


@pytest.fixture(scope="module")
def heel_model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("observed")
    probe = _heel_model(folder, -1.0)
    system = System(probe, "reduced", {"compiled": False})
    contact = next(e for e in system.elements if type(e).__name__ == "Contact")
    gap = contact.kinematics(probe, *system.tree_state(0.0, system.initial_vector({}, 0.0)),
                             need_jacobian=False).delta   # the heel hanging at rest (δ < 0: above the ground)
    return _heel_model(folder, -1.0 - gap + 2e-3)


@pytest.mark.parametrize("shadow", [True, False])
def test_observed_state_equals_the_generic_tree_state(heel_model, shadow):
    system = System(heel_model, "reduced", {"shadow": shadow})
    generic = System(heel_model, "reduced", {"shadow": shadow, "compiled": False})
    assert isinstance(system._compiled, CompiledReducedRHS)
    y = system.initial_vector({"knee_A": 0.5}, 0.0)
    rng = np.random.default_rng(3)
    for _ in range(20):   # states along a swing: the right-hand side's cache sits near each one
        system.rhs(0.0, y)
        generic.rhs(0.0, y)
        y = y + 0.01 * system.rhs(0.0, y)
        y[1] += 0.05 * rng.standard_normal()
        x, xd = system.observed_state(0.0, y)
        gx, gxd = generic.tree_state(0.0, y)
        np.testing.assert_allclose(x, gx, rtol=0, atol=1e-12)
        np.testing.assert_allclose(xd, gxd, rtol=0, atol=1e-11)
        xs, xds = system.observed_states(np.zeros(3), np.array([y, y, y]))
        np.testing.assert_allclose(xs, np.array([gx] * 3), rtol=0, atol=1e-12)


@pytest.mark.parametrize("error_control", ["joints", "state"])
def test_runs_with_a_heel_strike_agree_with_generic_observers(heel_model, monkeypatch, error_control):
    kw = {"rtol": 1e-9, "atol": 1e-12, "initial": {"knee_A": 0.5}, "progress": False,
          "error_control": error_control}
    passes = []
    original = CompiledReducedRHS.tree_states

    def counted(self, *args, **kwargs):
        passes.append(len(args[0]))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(CompiledReducedRHS, "tree_states", counted)
    fast = biobullet.simulate(heel_model, 0.6, **kw)
    assert len(passes) > 10 and max(passes) > 1   # events and observers went through the compiled solve
    with monkeypatch.context() as m:   # observers and events on the generic coordinate map (as before)
        m.setattr(engine.System, "observed_state", engine.System.tree_state)
        m.setattr(engine.System, "observed_states", lambda self, t, y: tuple(
            np.array(rows) for rows in zip(*(self.tree_state(s, row) for s, row in zip(t, y)))))
        slow = biobullet.simulate(heel_model, 0.6, **kw)
    assert fast.meta["right_hand_side"]["path"] == slow.meta["right_hand_side"]["path"] == "compiled loop map"
    events = [(name, t) for name, t, _ in fast.events]
    assert [name for name, _ in events] == [name for name, _, _ in slow.events] and len(events) >= 1
    # event functions differ by round-off only: event times within the step tolerance, runs within rtol
    np.testing.assert_allclose([t for _, t in events], [t for _, t, _ in slow.events], rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.positions, slow.positions, rtol=0, atol=1e-7)
    a, b = fast.meta["discrete"]["heel"]["intervals"], slow.meta["discrete"]["heel"]["intervals"]
    assert len(a) == len(b) >= 1
    for left, right in zip(a, b):
        for key in ("start", "end", "impulse", "peak_force", "max_penetration", "dissipated_normal"):
            if right[key] is None:   # an interval still open at t_end has no end
                assert left[key] is None, key
            else:
                assert left[key] == pytest.approx(right[key], rel=1e-6, abs=1e-12), key
