"""The compiled loop right-hand side (integrate/compiled_rhs.py `CompiledReducedRHS`, staged entry) on the maps it
newly covers — a four-bar knee on a free-floating base, and a coordinate map built by hand with two loop
resolvers and an explicit joint function between them (fixed and floating base) — against the generic path
(`System._checked_rhs`: `CoordinateMap.evaluate` resolver by resolver, with the generic loop Newton of
constraints/implicit.py on a floating base, force elements, tree dynamics, projection as separate calls), and a
passive floating-base loop run against energy conservation (an independent check of both paths)."""
from __future__ import annotations

import biobullet
import numpy as np
import pytest
from biobullet.core import jit
from biobullet.integrate import compiled_rhs
from biobullet.integrate.engine import System
from multiloop_models import count_compiled_calls, floating_knee, two_resolvers

compiled_only = pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: the compiled path is off")

MODELS = {"floating knee": (lambda d: biobullet.load_model(floating_knee(d)), {"hip": 0.3, "knee_A": 0.4}),
          "two resolvers": (two_resolvers, {"hip_1": 0.3, "knee_A_1": 0.4, "hip_2": -0.2}),
          "two resolvers, floating": (lambda d: two_resolvers(d, floating=True),
                                      {"hip_1": 0.3, "knee_A_1": 0.4, "hip_2": -0.2})}


def _loop_resolvers(model) -> list:
    return [r for r in model.coordinate_map.resolvers if type(r).__name__ == "LoopResolver"]


def _caches(resolvers) -> list:
    return [(r._warm, r._warm_condition, r._warm_curvature, r._anchor) for r in resolvers]


def _restore(resolvers, caches) -> None:
    for r, (warm, condition, curvature, anchor) in zip(resolvers, caches):
        r._warm, r._warm_condition, r._warm_curvature, r._anchor = warm, condition, curvature, anchor


@compiled_only
@pytest.mark.parametrize("name", list(MODELS))
def test_matches_the_generic_path_at_random_states(tmp_path, name):
    build, initial = MODELS[name]
    model = build(tmp_path)
    resolvers = _loop_resolvers(model)
    assert len(resolvers) == (1 if name == "floating knee" else 2)
    assert model.floating_base == ("floating" in name)
    if name.startswith("two"):
        assert [type(r).__name__ for r in model.coordinate_map.resolvers] == [
            "LoopResolver", "ExplicitFunction", "LoopResolver"]
    fast = System(model, "reduced", {"shadow": True})
    slow = System(model, "reduced", {"shadow": True, "compiled": False})
    assert type(fast._compiled) is compiled_rhs.CompiledReducedRHS and fast._compiled._staged
    trajectory = biobullet.simulate(model, 0.3, t_eval=np.linspace(0, 0.3, 8), initial=initial, progress=False)
    rows_x, rows_v = slow.shadow
    nq, nv, m = model.nq, model.nv, len(rows_v)
    rng = np.random.default_rng(17)
    for k, t in enumerate(trajectory.t):
        q = trajectory.q[k] + rng.uniform(-0.02, 0.02, nq)
        if model.floating_base:   # a random base pose (any orientation) and twist
            q[3:7] = rng.normal(size=4)
        v = rng.uniform(-3.0, 3.0, nv)
        x, xd, _, _ = model.joint_state(q, v, t)
        y = np.concatenate([q, v, x[rows_x], xd[rows_v], [0.0, 0.0]])
        near = y.copy()
        near[nq - 3:nq] += 3e-3   # the caches at a nearby solution: Newton has work to do from there
        slow._checked_rhs(t, near)
        before = _caches(resolvers)
        compiled = fast._compiled(t, y)
        after = _caches(resolvers)
        _restore(resolvers, before)
        generic = slow._checked_rhs(t, y)
        assert compiled is not None, f"the compiled path handed over at t = {t}"
        # round-off (1e-12 relative): the same algorithm from the same caches, each entry against the size of
        # its terms — the shadow accelerations G_dep v̇ + γ_dep are sums of terms much larger than themselves —
        # floored at 1e-12 of the largest entry (a component that is zero up to cancellation)
        _, _, gradient, gamma = model.joint_state(q, v, t)   # G, γ: independent of the base pose
        scale = np.abs(generic)
        accel = generic[nq:nq + nv]
        terms = np.abs(gradient[rows_v]) @ np.abs(accel) + np.abs(gamma[rows_v])
        scale[nq + nv + m:nq + nv + 2 * m] = np.maximum(scale[nq + nv + m:nq + nv + 2 * m], terms)
        scale = np.maximum(scale, 1e-12 * np.max(np.abs(generic)))
        assert np.all(np.abs(compiled - generic) <= 1e-12 * scale), (name, t, (compiled - generic) / scale)
        for (warm, *_), r in zip(after, resolvers):   # each cache moved to the same solution
            np.testing.assert_allclose(warm[1], r._warm[1], rtol=0, atol=1e-13)


@compiled_only
@pytest.mark.parametrize("name", list(MODELS))
def test_whole_runs_agree_with_the_generic_path(tmp_path, name, monkeypatch):
    build, initial = MODELS[name]
    model = build(tmp_path)
    kw = {"rtol": 1e-9, "atol": 1e-12, "initial": initial, "progress": False, "t_eval": np.linspace(0, 0.3, 31)}
    calls = count_compiled_calls(monkeypatch)
    fast = biobullet.simulate(model, 0.3, **kw)
    slow = biobullet.simulate(model, 0.3, compiled=False, **kw)
    assert calls["compiled"] > 20 and calls["handed over"] <= 0.1 * calls["compiled"], calls
    assert fast.meta["status"] == slow.meta["status"] == "finished"
    # the same equations to round-off, integrated at rtol 1e-9: the runs differ by the integrator's error growth
    np.testing.assert_allclose(fast.positions, slow.positions, rtol=0, atol=1e-7)
    np.testing.assert_allclose(fast.velocities, slow.velocities, rtol=0, atol=1e-6)


def test_passive_floating_loop_conserves_energy(tmp_path):
    """No damping, no actuation: T + V_gravity + V_elastic of the floating four-bar (base flying and tumbling,
    knee swinging) is constant; the compiled run keeps it to the integration tolerance — an independent check of
    the compiled free-base and loop algebra (a wrong term of the base's q̇, of the loop's G or γ drifts it); with
    numba disabled, of the generic path."""
    model = biobullet.load_model(floating_knee(tmp_path, damping=0.0))
    system = System(model, "reduced", {"shadow": True})
    assert (type(system._compiled) is compiled_rhs.CompiledReducedRHS) == jit.ENABLED
    q0, v0 = model.initial_state({"hip": 0.3, "knee_A": 0.4})
    v0[:6] = [0.3, -0.2, 1.0, 2.0, -1.5, 3.0]   # a spinning, flying base
    trajectory = biobullet.simulate(model, 1.0, rtol=1e-10, atol=1e-12, initial=(q0, v0), progress=False)
    assert trajectory.meta["status"] == "finished"
    energy = trajectory.total_energy()
    swing = np.ptp(trajectory.energy["kinetic"])
    assert swing > 1.0   # energy moves between T and V (J): the check has something to conserve
    # rtol 1e-10 over 1 s: the drift is the integration error (measured 6e-10 J of E = 1.09 J, both paths)
    assert np.max(np.abs(energy - energy[0])) < 1e-8 * max(1.0, abs(energy[0])), np.ptp(energy)


@compiled_only
def test_tree_states_equal_the_per_sample_path(tmp_path, monkeypatch):
    """The 1,001-sample trajectory of the hand-built two-resolver map on a floating base: loop 1, the function, loop
    2 stage by stage over all samples, equal to the per-sample generic path to round-off."""
    from trajectory_batch import assert_same_states, batch_and_per_sample
    model = two_resolvers(tmp_path, floating=True)
    trajectory = biobullet.simulate(model, 1.0, rtol=1e-8, atol=1e-11, initial=MODELS["two resolvers"][1],
                                    progress=False)
    assert len(trajectory.t) == 1001
    fast, slow, generic = batch_and_per_sample(model, trajectory, "joints", monkeypatch)
    assert len(generic) <= 1, f"{len(generic)} samples on the generic path"
    assert_same_states(fast, slow)
