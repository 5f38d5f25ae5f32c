"""The cold-start rule (`simulate(python_start_seconds=)`, `CompiledReducedRHS.python_start`): while numba has no
compiled right-hand side for a run, the run (explicit or loop map) goes by the kernels' uncompiled forms until its
right-hand side's calls have taken that much CPU, then compiles; with the default 0 nothing is probed and the kernel
compiles at once. The probe itself (`core.jit.is_cached`) is checked on a kernel written to a fresh directory, so it
has no cache there; the CLI's cold run of a loop map in a subprocess with an empty numba cache."""
from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

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
    monkeypatch.setattr(jit, "is_cached", lambda kernel, *args: False)


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

    monkeypatch.setattr(jit, "is_cached", probe)
    run = biobullet.simulate(chain, 0.05, progress=False)
    assert run.meta["right_hand_side"]["uncompiled_calls"] == 0


def test_is_cached_compiles_nothing_until_numba_has_the_kernel(tmp_path):
    source = tmp_path / "fresh_kernel.py"
    source.write_text("def _twice_py(x):\n    return 2.0 * x\n")
    spec = importlib.util.spec_from_file_location("fresh_kernel", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = jit.compiled(module._twice_py)
    assert not jit.is_cached(kernel, 1.5)
    assert not kernel.overloads   # nothing compiled
    assert kernel(1.5) == 3.0     # compiles (and saves it to the cache)
    assert jit.is_cached(kernel, 2.0)


def test_a_cold_cli_run_of_a_loop_map_compiles_nothing_and_matches_the_compiled_run(tmp_path):
    """The four-bar knee's first CLI run on an empty numba cache: its loop solves, right-hand side and trajectory go
    by the kernels' uncompiled forms (no compile starts, so no compile line), and the trajectory is the compiled
    run's to the integrator's tolerance, closed to 1e-10 m (Pinocchio's placements)."""
    from rhs_oracles import PinocchioTree, loop_closure
    path = bundled_model("fourbar_knee.urdf")
    out = tmp_path / "cold.csv"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
           "PYTHONPATH": os.pathsep.join([str(Path(biobullet.__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "biobullet", "simulate", str(path), "--t-end", "0.3", "--out",
                           str(out)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert jit.COMPILE_NOTICE not in done.stderr and "compiling kernels" not in done.stderr, done.stderr
    assert "calls by its uncompiled form: cold cache" in done.stderr
    cold = np.loadtxt(out, delimiter=",", skiprows=1)
    model = biobullet.load_model(path)
    warm = biobullet.simulate(model, 0.3, progress=False)
    assert warm.meta["right_hand_side"]["uncompiled_calls"] == 0
    n = model.n_config
    assert np.array_equal(cold[:, 0], warm.t)
    assert np.max(np.abs(cold[:, 1:1 + n] - warm.positions)) < 1e-8
    assert np.max(np.abs(cold[:, 1 + n:1 + n + model.n_tangent] - warm.velocities)) < 1e-7
    tree = PinocchioTree(model)
    assert max(loop_closure(tree, x) for x in cold[:, 1:1 + n]) <= 1e-10


def _fresh_module(tmp_path, text: str):
    source = tmp_path / "fresh_kernels.py"
    source.write_text(text)
    spec = importlib.util.spec_from_file_location("fresh_kernels", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_kernels_called_by_address_run_uncompiled_by_their_compiled_address(tmp_path):
    """A plug-in kernel compiled as a C callable (`function_address`) and a compiled kernel's own C entry
    (`entry_address`) are called by address from a compiled kernel; inside `uncompiled()` the caller's uncompiled
    form reaches the plug-in kernel's uncompiled form through the same compiled address (a cold run's plug-ins)."""
    module = _fresh_module(tmp_path, "def _cube_py(x):\n    return x * x * x\n\n"
                                     "def _call_py(address, x):\n    return _CALL(address)(x) + 1.0\n")
    address = jit.function_address(module._cube_py, "float64(float64)")
    caller = jit.compiled(module._call_py, bind={"_CALL": jit.address_caller("float64(float64)")})
    assert caller(address, 2.0) == 9.0
    with jit.uncompiled():
        python_caller = jit.compiled(module._call_py, bind={"_CALL": jit.address_caller("float64(float64)")})
        assert python_caller(address, 3.0) == 28.0
    assert python_caller.py_func is python_caller   # (the uncompiled form, not a dispatcher)
    # an address taken inside the block is the compiled one: a table packed during a cold start (a model's
    # plug-in rows) is later read by compiled kernels, which would crash calling a table index
    (tmp_path / "second").mkdir()
    square = _fresh_module(tmp_path / "second", "def _square_py(x):\n    return x * x\n")._square_py
    with jit.uncompiled():
        inside = jit.function_address(square, "float64(float64)")
    assert inside == jit.function_address(square, "float64(float64)") and inside > 1 << 16
    assert caller(inside, 5.0) == 26.0
    cube = jit.compiled(module._cube_py)
    entry, signature = jit.entry_address(cube, 2.0)
    via_entry = jit.compiled(module._call_py, bind={"_CALL": jit.address_caller(signature)}, variant="entry")
    assert via_entry(entry, 4.0) == 65.0
