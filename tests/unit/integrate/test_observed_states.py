"""Event functions and step observers on a loop map with a compiled right-hand side take their tree states from
the compiled Newton solve (`System.observed_state(s)`) instead of the coordinate map: at states of a swing they are
the loop's solution (independent joints = the state's, loop closed in position and velocity by Pinocchio's
kinematics), and whole runs with a heel strike locate their contact events where the heel sphere touches the
ground (gap from Pinocchio's kinematics), bracketing each logged interval.

Model: the four-bar knee swinging from knee_A = 0.5 rad with a heel sphere on the shank tip and the ground 2 mm
above the heel's lowest point, so the heel strikes while swinging through (Hunt–Crossley, regularised friction)."""
from __future__ import annotations

from pathlib import Path

import biobullet
import numpy as np
import pytest
from biobullet.integrate.compiled_rhs import CompiledReducedRHS
from biobullet.integrate.engine import System
from rhs_oracles import PinocchioTree, loop_closure


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
    system = System(probe, "reduced")
    contact = next(e for e in system.elements if type(e).__name__ == "Contact")
    gap = contact.kinematics(probe, *system.tree_state(0.0, system.initial_vector({}, 0.0)),
                             need_jacobian=False).delta   # the heel hanging at rest (δ < 0: above the ground)
    return _heel_model(folder, -1.0 - gap + 2e-3)


def _assert_loop_solution(model, tree, x, xd, y) -> None:
    """x, ẋ solve the loop for the state y: knee_A and its rate are y's (1e-15), the loop closed to 1e-11 m and
    its points moving together to 1e-10 m/s (the Newton tolerance of the observers' solve is below both)."""
    independent = list(model.coordinate_map.independent)
    np.testing.assert_allclose(x[independent], y[:1], rtol=0, atol=1e-15)
    np.testing.assert_allclose(xd[independent], y[1:2], rtol=0, atol=1e-15)
    assert loop_closure(tree, x) <= 1e-11
    assert loop_closure(tree, x, xd) <= 1e-10 * max(1.0, float(np.abs(xd).max()))


@pytest.mark.parametrize("shadow", [True, False])
def test_observed_state_solves_the_loop(heel_model, shadow):
    system = System(heel_model, "reduced", {"shadow": shadow})
    assert isinstance(system._compiled, CompiledReducedRHS)
    tree = PinocchioTree(heel_model)
    y = system.initial_vector({"knee_A": 0.5}, 0.0)
    rng = np.random.default_rng(3)
    for _ in range(8):   # states along a swing: the right-hand side's cache sits near each one
        y = y + 0.01 * system.rhs(0.0, y)
        y[1] += 0.05 * rng.standard_normal()
        x, xd = system.observed_state(0.0, y)
        _assert_loop_solution(heel_model, tree, x, xd, y)
        xs, xds = system.observed_states(np.zeros(3), np.array([y, y, y]))
        for k in range(3):
            _assert_loop_solution(heel_model, tree, xs[k], xds[k], y)


@pytest.mark.parametrize("error_control", ["joints", "state"])
def test_heel_strike_events_are_where_the_heel_touches(heel_model, monkeypatch, error_control):
    """The run's contact events (observers through the compiled solve) at the times the heel sphere (r = 2 cm at
    (0.01, 0, −0.37) on the shank) touches the ground plane: |p_z − r − h| ≤ 1e-9 m (the event location's
    tolerance in time times the heel's speed, ≈ 1 m/s, is far below); the logged intervals start and end at
    events."""
    kw = {"rtol": 1e-9, "atol": 1e-12, "initial": {"knee_A": 0.5}, "progress": False,
          "error_control": error_control}
    passes = []
    original = CompiledReducedRHS.tree_states

    def counted(self, *args, **kwargs):
        passes.append(len(args[0]))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(CompiledReducedRHS, "tree_states", counted)
    run = biobullet.simulate(heel_model, 0.6, **kw)
    assert len(passes) > 10 and max(passes) > 1   # events and observers went through the compiled solve
    assert run.meta["right_hand_side"]["path"] == "compiled loop map"
    assert len(run.events) >= 1
    system = System(heel_model, "reduced", {"shadow": error_control == "joints"})
    tree = PinocchioTree(heel_model)
    contact = next(e for e in system.elements if type(e).__name__ == "Contact")
    height = float(contact.ground.height)
    for _, t, y in run.events:
        x, xd = system.tree_state(t, y)
        _assert_loop_solution(heel_model, tree, x, xd, y)
        centre, _ = tree.point(x, "shank", [0.01, 0.0, -0.37])
        assert abs(centre[2] - 0.02 - height) <= 1e-9, centre[2] - 0.02 - height
    times = [t for _, t, _ in run.events]
    intervals = run.meta["discrete"]["heel"]["intervals"]
    assert len(intervals) >= 1
    for interval in intervals:
        assert min(abs(interval["start"] - s) for s in times) <= 1e-12
        if interval["end"] is not None:   # an interval still open at t_end has no end
            assert min(abs(interval["end"] - s) for s in times) <= 1e-12
