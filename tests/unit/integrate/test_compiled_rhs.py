"""The compiled right-hand side of reduced closed-loop models (integrate/compiled_rhs.py): whole Andrews runs meet
the published reference (IVP test set), fallbacks (large input change, non-finite state) hand over to the generic
path, a far trial stage retries from a recent solution, the models it covers, and the trajectory output's batch
pass.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet
from andrews_classic import REFERENCE_Q
from biobullet.core import jit
from biobullet.integrate import compiled_rhs
from biobullet.integrate.engine import System, _NonFinite

ROOT = Path(__file__).resolve().parents[3]
ANDREWS = ROOT / "urdf" / "andrews_squeezer.urdf"

pytestmark = pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: the compiled path is off")


def _variant(tmp_path: Path, damping: float = 0.0, fourier: bool = False) -> Path:
    text = ANDREWS.read_text()
    text = text.replace('rest_length="0.07785" damping="0"', f'rest_length="0.07785" damping="{damping:g}"')
    if fourier:   # τ(t) = 0.033 + 0.01 cos(ωt) + 0.005 sin(ωt), period 0.01 s
        text = text.replace('<joint_torque joint="beta" value="0.033"/>',
                            '<joint_torque joint="beta" type="fourier" period="0.01" a0="0.033" a="0.01" b="0.005"/>')
    path = tmp_path / "andrews_variant.urdf"
    path.write_text(text)
    return path


def _states(model, t_end: float = 0.01, n: int = 12):
    """(t, y) of the reduced system along a real trajectory (β, β̇ and the shadow rows from the coordinate map)."""
    trajectory = biobullet.simulate(model, t_end, formulation="reduced", t_eval=np.linspace(0, t_end, n),
                                    progress=False)
    system = System(model, "reduced", {"shadow": True, "compiled": False})
    rows_x, rows_v = system.shadow
    out = []
    for k, t in enumerate(trajectory.t):
        q, v = trajectory.q[k], trajectory.v[k]
        x, xd, _, _ = model.joint_state(q, v, t)
        out.append((float(t), np.concatenate([q, v, x[rows_x], xd[rows_v], [0.0, 0.0]])))
    return out


def test_simulation_is_the_same_with_and_without_the_compiled_path(monkeypatch):
    model = biobullet.load_model(ANDREWS)
    kw = dict(formulation="reduced", method="DOP853", rtol=1e-8, atol=1e-8, t_eval=[0.01, 0.03], progress=False)
    fast = biobullet.simulate(model, 0.03, **kw)
    monkeypatch.setattr(compiled_rhs.CompiledReducedRHS, "for_system", classmethod(lambda cls, system: None))
    slow = biobullet.simulate(model, 0.03, **kw)
    assert fast.meta["status"] == slow.meta["status"] == "finished"
    np.testing.assert_allclose(fast.column("beta"), slow.column("beta"), rtol=1e-9)
    # and both meet the published value (IVP test set, PSIDE 1e-14) to the benchmark's accuracy
    reference = REFERENCE_Q[0]
    assert abs(fast.column("beta")[-1] - reference) <= 1e-7 * reference


def test_hands_over_on_a_large_input_change_and_on_non_finite_states():
    model = biobullet.load_model(ANDREWS)
    fast = System(model, "reduced", {"shadow": True})
    slow = System(model, "reduced", {"shadow": True, "compiled": False})
    y0 = fast.initial_vector(None, 0.0)
    assert fast._compiled(0.0, y0) is not None
    far = y0.copy()
    far[0] += 0.5   # β jumps by 0.5 rad from the cached solution: continuation belongs to the generic path
    assert fast._compiled(0.0, far) is None
    np.testing.assert_allclose(fast.rhs(0.0, far), slow._checked_rhs(0.0, far), rtol=1e-12, atol=1e-12)
    bad = y0.copy()
    bad[1] = np.nan
    assert fast._compiled(0.0, bad) is None
    with pytest.raises(_NonFinite, match="not finite"):
        fast.rhs(0.0, bad)


def test_only_models_it_covers(monkeypatch):
    andrews = biobullet.load_model(ANDREWS)
    assert System(andrews, "reduced", {"shadow": False})._compiled is not None
    for formulation in ("reduced_recursive", "multipliers", "matrix_calculus"):
        assert System(andrews, formulation, {"shadow": False})._compiled is None, formulation
    assert System(biobullet.load_model(ROOT / "urdf" / "fourbar_knee.urdf"), "reduced", {"shadow": True})._compiled
    prosthesis = biobullet.load_model(ROOT / "urdf" / "prosthesis_fourbar.urdf")   # third-party force elements
    arm = biobullet.load_model(ROOT / "urdf" / "arm7.urdf")   # no loop: the explicit-map kernel instead
    # the study's elements hand over their compiled kernels (`ForceElement.compiled_kernel`); an element without
    # one keeps the generic path
    assert type(System(prosthesis, "reduced", {"shadow": True})._compiled) is compiled_rhs.CompiledReducedRHS
    from biobullet.forces import force_elements
    stop = type(next(e for e in force_elements(prosthesis) if e.name == "knee_stop"))
    monkeypatch.setattr(stop, "compiled_kernel", lambda self, model: None)
    assert System(prosthesis, "reduced", {"shadow": True})._compiled is None
    assert type(System(arm, "reduced", {"shadow": True})._compiled).__name__ == "CompiledExplicitRHS"
    monkeypatch.setattr(jit, "ENABLED", False)               # BIOBULLET_NUMBA=0
    assert System(andrews, "reduced", {"shadow": True})._compiled is None


@pytest.mark.parametrize("control", ["state", "joints"])
@pytest.mark.parametrize("name, t_end, initial", [("fourbar_knee.urdf", 1.0, {"knee_A": 0.5}),
                                                  ("andrews_squeezer.urdf", 0.03, None)])
def test_trajectory_batch_equals_the_per_sample_path(name, t_end, initial, control, monkeypatch):
    """The default 1,001-sample trajectory of a loop model: loop-dependent joints in one compiled Newton pass
    (`_loop_positions_py`, second-order prediction, rates from the last Jacobian) equal the per-sample Newton of
    `LoopResolver` (to its own tolerance) to round-off. The batch covers every sample: with
    error_control="joints" it starts from the integrated dependent joints, with "state" the first sample takes the
    generic path (which fixes the assembly branch)."""
    from trajectory_batch import assert_same_states, batch_and_per_sample
    model = biobullet.load_model(ROOT / "urdf" / name)
    trajectory = biobullet.simulate(model, t_end, rtol=1e-8, atol=1e-11, initial=initial, progress=False,
                                    error_control=control)
    assert len(trajectory.t) == 1001
    fast, slow, generic = batch_and_per_sample(model, trajectory, control, monkeypatch)
    assert generic == ([trajectory.t[0]] if control == "state" else []), f"{len(generic)} samples on the generic path"
    assert_same_states(fast, slow)


def test_a_far_trial_stage_retries_from_a_recent_solution():
    """A state 0.43 rad from the run's loop warm start (an explicit integrator's far trial stage), where the loop
    stage alone hands over (the declared initial solution is nearer than the warm start: continuation), is taken
    from the nearest of the stage's recent solutions, with the same ẏ as the generic path (to the Newton
    tolerance: 1e-9) — and a state far from every recent solution still hands over."""
    model = biobullet.load_model(ROOT / "urdf" / "fourbar_knee.urdf")
    fast = System(model, "reduced", {"shadow": True})
    slow = System(model, "reduced", {"shadow": True, "compiled": False})
    y = {a: fast.initial_vector({"knee_A": a, "knee_A_dot": 1.0}, 0.0) for a in (0.30, 0.32, 0.34, -0.1, 0.33, -0.5)}
    slow._checked_rhs(0.0, y[0.30])              # the resolver's cache at 0.30, then the stage's own solutions
    for a in (0.32, 0.34):
        assert fast._compiled(0.0, y[a]) is not None
    assert fast._compiled(0.0, y[-0.1]) is None  # a trial stage far away: the generic path's …
    fast.rhs(0.0, y[-0.1])                       # … solution there becomes the warm start
    assert fast._compiled.ready()
    assert fast._compiled._evaluate(0.0, y[0.33]) is None   # the stage alone hands over here …
    out = fast._compiled(0.0, y[0.33])                       # … the retry from 0.34 does not
    assert out is not None
    np.testing.assert_allclose(out, slow._checked_rhs(0.0, y[0.33]), rtol=1e-9, atol=1e-9)
    assert fast._compiled(0.0, y[-0.5]) is None              # nothing recent within 0.1 rad
