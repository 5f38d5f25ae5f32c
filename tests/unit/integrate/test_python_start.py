"""The cold-start rule (`simulate(python_start_seconds=)`, `CompiledReducedRHS._start`): while numba has no compiled
right-hand side for a run, an explicit map's kernel runs uncompiled until its calls have taken that much CPU, then
compiles; with the default 0 nothing is probed and the kernel compiles at once. The probe itself
(`core.jit.cached_entry`) is checked on a kernel written to a fresh directory, so it has no cache there."""
from __future__ import annotations

import importlib.util
import math

import biobullet
import numpy as np
import pytest
from biobullet.core import jit
from biobullet.model.bundled import bundled_model


@pytest.fixture(scope="module")
def chain():
    return biobullet.load_model(bundled_model("coupled_chain.urdf"))


def _cold(monkeypatch):
    """As on an empty numba cache: the probe finds no compiled right-hand side."""
    monkeypatch.setattr(jit, "cached_entry", lambda kernel, *args: None)


def test_a_cold_run_within_the_budget_runs_uncompiled_and_conserves_energy(chain, monkeypatch):
    _cold(monkeypatch)
    run = biobullet.simulate(chain, 0.5, progress=False, python_start_seconds=math.inf)
    report = run.meta["right_hand_side"]
    assert report["uncompiled_calls"] == run.meta["nfev"] > 0 and report["callback_calls"] == 0
    # the uncompiled kernel is the dynamics: the undamped chain keeps its energy to the integrator's tolerance
    balance = run.energy_balance()
    assert np.max(np.abs(balance - balance[0])) < 1e-6 * max(1.0, float(np.max(np.abs(run.energy["kinetic"]))))


def test_a_cold_run_past_the_budget_compiles_and_switches(chain, monkeypatch):
    _cold(monkeypatch)
    run = biobullet.simulate(chain, 0.5, progress=False, python_start_seconds=1e-12)
    # the first call spends more than the budget: every later call goes to the compiled kernel
    assert run.meta["right_hand_side"]["uncompiled_calls"] == 1 < run.meta["nfev"]


def test_the_default_compiles_at_once_without_probing(chain, monkeypatch):
    def probe(kernel, *args):
        raise AssertionError("probed the cache with python_start_seconds = 0")

    monkeypatch.setattr(jit, "cached_entry", probe)
    run = biobullet.simulate(chain, 0.05, progress=False)
    assert run.meta["right_hand_side"]["uncompiled_calls"] == 0


def test_cached_entry_compiles_nothing_until_numba_has_the_kernel(tmp_path):
    source = tmp_path / "fresh_kernel.py"
    source.write_text("def _twice_py(x):\n    return 2.0 * x\n")
    spec = importlib.util.spec_from_file_location("fresh_kernel", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = jit.compiled(module._twice_py)
    assert jit.cached_entry(kernel, 1.5) is None
    assert not kernel.overloads   # nothing compiled
    assert kernel(1.5) == 3.0     # compiles (and saves it to the cache)
    assert jit.cached_entry(kernel, 2.0)(2.0) == 4.0
