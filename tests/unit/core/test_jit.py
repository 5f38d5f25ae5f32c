"""core.jit: compiled twins equal the Python functions, and a kernel's on-disk cache follows the kernels bound into
it (numba alone keys the cache on the kernel's own file, so an edited callee in another file was silently kept)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from biobullet.core import jit

PLUGIN = Path(__file__).resolve().parents[3] / "plugin"
needs_numba = pytest.mark.skipif(not jit.ENABLED, reason="numba not installed or BIOBULLET_NUMBA=0")

CALLER = """
def _scale_py(x):
    return 2.0 * _add(x)   # `_add` is bound by core.jit: never a global of this module
"""
RUN = """
import callee, caller
from biobullet.core import jit
kernel = jit.compiled(caller._scale_py, bind={"_add": callee._add_py})
print(kernel(1.0))
"""


def _environment(folder: Path, cache: Path | None = None) -> dict[str, str]:
    """The subprocess's environment: `folder` and the library on the path, numba's cache in `cache`
    (NUMBA_CACHE_DIR) or, without it, beside the sources (where these tests look for it, whatever NUMBA_CACHE_DIR
    the test run itself has)."""
    env = {name: value for name, value in os.environ.items() if name != "NUMBA_CACHE_DIR"}
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = str(cache)
    return {**env, "PYTHONPATH": os.pathsep.join([str(folder), str(PLUGIN)])}


def _run(folder: Path, cache: Path | None = None) -> float:
    env = _environment(folder, cache)
    result = subprocess.run([sys.executable, "-c", RUN], cwd=folder, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    return float(result.stdout.strip().splitlines()[-1])


@needs_numba
@pytest.mark.parametrize("cache_dir", [False, True], ids=["beside_the_source", "numba_cache_dir"])
def test_editing_a_bound_callee_recompiles_the_cached_caller(tmp_path: Path, cache_dir: bool) -> None:
    """Wherever numba keeps the cache: `__pycache__` beside the source, or NUMBA_CACHE_DIR when set."""
    source = tmp_path / "source"
    source.mkdir()
    cache = tmp_path / "numba_cache" if cache_dir else None
    (source / "caller.py").write_text(textwrap.dedent(CALLER))
    (source / "callee.py").write_text("def _add_py(x):\n    return x + 1.0\n")
    assert _run(source, cache) == 4.0
    cached = (cache or source).rglob("caller._scale_py-*.nbi")
    assert list(cached)   # cached on disk, where numba keeps it
    assert cache is None or not list(source.rglob("*.nb[ic]"))
    (source / "callee.py").write_text("def _add_py(x):\n    return x + 2.0\n")
    assert _run(source, cache) == 6.0   # not the cached 4.0


def test_switched_off_every_entry_gives_the_same_function_run_by_python(monkeypatch) -> None:
    """BIOBULLET_NUMBA=0: `compiled`, `lazy` and an address call give the function itself (its code object) with
    the same bindings, run by Python."""
    def _twice_py(x):
        return _FACTOR * x   # noqa: F821  (bound)

    def _call_py(address, x):
        return _CALLER(address)(x)   # noqa: F821  (bound)

    monkeypatch.setattr(jit, "ENABLED", False)
    kernel = jit.lazy(_twice_py, bind={"_FACTOR": 2.0})
    assert kernel(3.0) == 6.0 and kernel.resolve().__code__ is _twice_py.__code__
    three = jit.compiled(_twice_py, bind={"_FACTOR": 3.0}, variant="three")
    assert three(3.0) == 9.0 and three.__code__ is _twice_py.__code__
    address = jit.function_address(_twice_py, "float64(float64)", bind={"_FACTOR": 5.0})
    caller = jit.compiled(_call_py, bind={"_CALLER": jit.address_caller("float64(float64)")})
    assert caller(address, 2.0) == 10.0


@needs_numba
def test_a_compile_on_an_empty_cache_is_announced_once(tmp_path: Path) -> None:
    """The first run says, on stderr, that it is compiling (one line, however many kernels); a cached run says
    nothing."""
    (tmp_path / "caller.py").write_text(textwrap.dedent(CALLER))
    (tmp_path / "callee.py").write_text("def _add_py(x):\n    return x + 1.0\n")
    env = _environment(tmp_path)

    def stderr_of_a_run() -> str:
        done = subprocess.run([sys.executable, "-c", RUN], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stderr

    first, second = stderr_of_a_run(), stderr_of_a_run()
    assert first.count("compiling numerical kernels (first run only") == 1, first   # callee and caller: one line
    assert "compiling" not in second, second


@needs_numba
def test_compile_clock_counts_a_compile_and_not_a_call_of_compiled_code() -> None:
    import numba
    import numpy as np

    def _square_sum(values):   # a new function: numba has nothing of it in any cache (cache=False)
        total = 0.0
        for v in values:
            total += v * v
        return total

    kernel = numba.njit(cache=False)(_square_sum)
    values = np.arange(4.0)
    with jit.compile_clock() as first:
        assert kernel(values) == 14.0
    with jit.compile_clock() as second:
        assert kernel(values) == 14.0
    assert first.seconds > 0.0   # typing, lowering and LLVM of a new function take milliseconds at least
    assert second.seconds == 0.0


GUARDED = """
def _offset_py(x):
    if _WITH_ADD:   # bound False: the branch is pruned before typing, `_add` never looked up
        return _add(x)
    return x
"""
VARIANTS = """
import sys
import callee, guarded
from biobullet.core import jit
plain = jit.compiled(guarded._offset_py, bind={"_WITH_ADD": False}, variant="plain")
added = jit.compiled(guarded._offset_py, bind={"_WITH_ADD": True, "_add": callee._add_py})
print(plain(1.0), added(1.0), hasattr(guarded, "_add"), hasattr(guarded, "_WITH_ADD"))
print(jit.twin(guarded._offset_py, {"_WITH_ADD": True, "_add": callee._add_py})(1.0))
"""


@needs_numba
def test_feature_flags_prune_branches_and_bindings_leave_the_module_alone(tmp_path: Path) -> None:
    """A kernel bound with a feature flag off compiles without the callee of that branch (not even bound), the
    variant with it on calls the callee, both are cached apart, and neither writes a global into the module; the
    uncompiled twin with the same bindings gives the same number."""
    (tmp_path / "guarded.py").write_text(textwrap.dedent(GUARDED))
    (tmp_path / "callee.py").write_text("def _add_py(x):\n    return x + 1.0\n")
    env = _environment(tmp_path)
    for _ in range(2):   # compiled, then loaded from the cache: the same numbers
        done = subprocess.run([sys.executable, "-c", VARIANTS], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.strip().splitlines()
        assert lines[-2].split() == ["1.0", "2.0", "False", "False"], done.stdout
        assert float(lines[-1]) == 2.0
    cached = sorted(path.name.split("-")[0] for path in (tmp_path / "__pycache__").glob("guarded.*.nbi"))
    assert cached == ["guarded._offset_py", "guarded._offset_py__plain"]


STALE_PROBE = """
from collections import namedtuple
{name} = namedtuple("{name}", "x y")


def _norm2_py(point):
    return point.x * point.x + point.y * point.y
"""


def _load_probe(path: Path, name: str, monkeypatch):
    """(A fresh import of) the module at `path` as `name` (a new function object: a new dispatcher)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)   # where pickle looks the type up
    spec.loader.exec_module(module)
    return module


@needs_numba
@pytest.mark.parametrize("damage", ["type_renamed", "data_garbled", "index_truncated"])
def test_a_stale_or_unreadable_cache_entry_is_compiled_again(tmp_path: Path, monkeypatch, damage: str) -> None:
    """numba's loader unpickles a kernel's cache index, which names its argument types by module and class: after
    a type moved (the public calls' StructRef type, pipeline/workspace.py → core/jit_pair.py) it raised
    `AttributeError: Can't get attribute ...` instead of compiling. A renamed type, a garbled data file and a
    truncated index each compile again (a miss, the right value) and leave a cache the next process loads (a hit)."""
    name = f"bb_stale_probe_{damage}"
    path = tmp_path / f"{name}.py"
    path.write_text(STALE_PROBE.format(name="Point"))
    module = _load_probe(path, name, monkeypatch)
    kernel = jit.compiled(module._norm2_py)
    assert kernel(module.Point(3.0, 4.0)) == 25.0
    folder = Path(kernel.stats.cache_path)
    index, = folder.glob(f"{name}._norm2_py-*.nbi")
    data, = folder.glob(f"{name}._norm2_py-*.nbc")
    if damage == "type_renamed":
        path.write_text(STALE_PROBE.format(name="Moved"))   # the index still names bb_stale_probe_*.Point
    elif damage == "data_garbled":
        data.write_bytes(b"not a pickle")
    else:
        index.write_bytes(index.read_bytes()[: index.stat().st_size // 2])
    point_type = "Moved" if damage == "type_renamed" else "Point"
    for hits, misses in ((0, 1), (1, 0)):   # compiled again, then loaded from what it saved
        module = _load_probe(path, name, monkeypatch)
        kernel = jit.compiled(module._norm2_py)
        assert kernel(getattr(module, point_type)(3.0, 4.0)) == 25.0
        assert (sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values())) == (hits, misses)


@needs_numba
def test_a_kernel_another_process_is_compiling_is_waited_for_and_loaded(tmp_path: Path, monkeypatch) -> None:
    """The test run's workers share numba's on-disk cache: a kernel another process is compiling (it holds the
    kernel's compile lock) is waited for and then loaded from the cache that process saved, not compiled twice."""
    import fcntl
    import threading

    import numba

    path = tmp_path / "bb_lock_probe.py"
    path.write_text(STALE_PROBE.format(name="Point"))
    module = _load_probe(path, "bb_lock_probe", monkeypatch)
    kernel = jit.compiled(module._norm2_py)
    lock = Path(kernel._cache.lock_path())
    lock.parent.mkdir(parents=True, exist_ok=True)
    results = []
    with open(lock, "a") as other:   # "another process" compiling: it holds the lock
        fcntl.flock(other, fcntl.LOCK_EX)
        waiting = threading.Thread(target=lambda: results.append(kernel(module.Point(3.0, 4.0))))
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive() and not results   # it waits for the lock
        # the other compile, saved in the same cache (numba's own dispatcher: no lock)
        assert numba.njit(cache=True)(module._norm2_py)(module.Point(3.0, 4.0)) == 25.0
    waiting.join(60)
    assert results == [25.0]
    assert (sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values())) == (1, 0)


def _triple_py(x):
    return 3.0 * x


def test_uncompiled_is_the_calling_threads_switch():
    """`jit.uncompiled()` gives the uncompiled form in the thread inside it only: another thread asking for a kernel
    at the same time gets numba's compiled kernel (a process-wide switch gave it the slow Python form)."""
    import threading
    inside, entered, release, seen = [], threading.Event(), threading.Event(), []

    def hold():
        with jit.uncompiled():
            inside.append(jit.compiled(_triple_py, variant="thread_check"))
            entered.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert entered.wait(30)
    seen.append(jit.compiled(_triple_py, variant="thread_check"))
    release.set()
    holder.join(30)
    assert not hasattr(inside[0], "overloads") and inside[0](2.0) == 6.0   # the Python form
    assert hasattr(seen[0], "overloads") and seen[0](2.0) == 6.0           # numba's dispatcher
    assert jit.compiling()


def _mistyped_py(x):
    return x + "one"   # float + str: numba's typing rejects it


def _calls_mistyped_py(x):
    return 2.0 * _MISTYPED(x)   # noqa: F821  (bound)


def _well_typed_py(x):
    return x + 1.0


@needs_numba
def test_a_library_kernel_that_fails_to_compile_raises_one_clear_error(monkeypatch) -> None:
    """A library kernel that numba cannot compile raises KernelCompileError — naming the kernel, the callee that
    failed and numba's first error line — wherever it is first compiled (a call, a caller's compile, a direct
    entry, an address): nothing falls back to the Python form (which would run this kernel by Python and give a
    number, silently a thousand times slower)."""
    from biobullet.core.errors import BiobulletError, KernelCompileError
    for function in (_mistyped_py, _calls_mistyped_py):   # as if defined in the library
        monkeypatch.setattr(function, "__module__", "biobullet.core.kernels_under_test")
    kernel = jit.compiled(_mistyped_py, variant="compile_failure")
    with pytest.raises(KernelCompileError) as raised:
        kernel(1.0)
    message = str(raised.value)
    assert "library kernel biobullet.core.kernels_under_test._mistyped_py" in message
    assert "No implementation of function" in message and "bug in biobullet" in message
    assert not isinstance(raised.value, BiobulletError)   # not bad input: the CLI reports an internal error
    with pytest.raises(KernelCompileError, match="_mistyped_py"):
        jit.lazy(_mistyped_py)(1.0)
    with pytest.raises(KernelCompileError, match="_mistyped_py"):
        jit.direct_entry(jit.compiled(_mistyped_py, variant="direct_failure"), 1.0)
    caller = jit.compiled(_calls_mistyped_py, bind={"_MISTYPED": jit.compiled(_mistyped_py, variant="bound")})
    with pytest.raises(KernelCompileError) as raised:
        caller(1.0)
    assert raised.value.kernel.endswith("_calls_mistyped_py") and "_mistyped_py" in raised.value.callee
    assert "No implementation of function" in raised.value.reason
    with pytest.raises(KernelCompileError, match="_mistyped_py"):
        jit.function_address(_mistyped_py, "float64(float64)")
    with pytest.raises(KernelCompileError, match="_mistyped_py"):   # a library kernel at a plug-in site too
        jit.function_address(_mistyped_py, "float64(int64)", plugin="a built-in element")
    assert jit.compiled(_well_typed_py, variant="compile_failure_control")(1.0) == 2.0   # the same path compiles


@needs_numba
def test_a_plugin_kernel_that_fails_to_compile_gives_no_address_and_warns_once() -> None:
    """A plug-in's kernel (defined outside the library) reached by address: None and one RuntimeWarning naming the
    plug-in, the kernel and numba's reason (its caller runs the callback stage:
    tests/unit/integrate/test_plugin_joint_functions.py); the same kernel without `plugin` raises."""
    import warnings

    from biobullet.core.errors import KernelCompileError

    def _plugin_mistyped_py(x):
        return x + "one"

    with pytest.raises(KernelCompileError, match="kernel .*_plugin_mistyped_py failed to compile"):
        jit.function_address(_plugin_mistyped_py, "float64(int64)")   # not declared a plug-in's
    with pytest.warns(RuntimeWarning, match=r"toy law: its compiled kernel .*_plugin_mistyped_py does not compile "
                                            r"\(No implementation of function"):
        assert jit.function_address(_plugin_mistyped_py, "float64(float64)", plugin="toy law") is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # said once
        assert jit.function_address(_plugin_mistyped_py, "float64(float64)", plugin="toy law") is None


class _Rows(NamedTuple):
    values: np.ndarray
    weights: np.ndarray


class _OtherRows(NamedTuple):   # the same fields, another class: another numba type
    values: np.ndarray
    weights: np.ndarray


def _weighted_sum_py(rows, scale):
    total = 0.0
    for i in range(rows.values.shape[0]):
        total += rows.values[i] * rows.weights[i]
    return scale * total


@needs_numba
def test_a_direct_entry_is_found_again_by_its_arguments_types_alone() -> None:
    """`direct_entry` and `entry_address` find a kernel's compiled entry again by numba's fingerprint of the
    arguments' types (a run's structured arguments are new arrays of the same types at every run): new arrays of the
    same types get the same entry; a strided view, a read-only array and another tuple class each get an entry of
    their own — each computing what NumPy computes (an entry of the wrong layout would read the strided view's
    elements from the wrong places)."""
    kernel = jit.compiled(_weighted_sum_py, variant="found_again")
    values = np.arange(1.0, 11.0)
    weights = np.arange(10.0, 0.0, -1.0)
    read_only = weights.copy()
    read_only.setflags(write=False)
    cases = {"contiguous": _Rows(values[:5].copy(), weights[:5].copy()), "strided": _Rows(values[::2], weights[::2]),
             "read-only": _Rows(values, read_only), "other class": _OtherRows(values[:5].copy(), weights[:5].copy())}
    entries = {}
    for name, rows in cases.items():
        entry = entries[name] = jit.direct_entry(kernel, rows, 2.0)
        assert entry(rows, 2.0) == 2.0 * float(np.dot(rows.values, rows.weights)), name   # (small integers: exact)
    assert len({id(entry) for entry in entries.values()}) == len(cases)
    again = _Rows(np.full(3, 2.0), np.full(3, 3.0))
    assert jit.direct_entry(kernel, again, 0.5) is entries["contiguous"]
    assert entries["contiguous"](again, 0.5) == 9.0
    addresses = {name: jit.entry_address(kernel, rows, 2.0) for name, rows in cases.items()}
    assert len({address for address, _ in addresses.values()}) == len(cases)
    assert jit.entry_address(kernel, again, 0.5) == addresses["contiguous"]


def test_a_second_run_of_a_loop_model_finds_its_stepper_entry_without_typing_its_arguments(monkeypatch) -> None:
    """The Data's arrays hold the loop stage's record (`core.jit_pair`), which numba's fingerprint does not take:
    every run typed its whole argument tuple again in Python (≈ 1.5 ms a call, two calls a run: the four-bar's 1 s run
    at rtol 1e-6 took 6.8 ms instead of 5.9), and so did numba's dispatcher at each compiled segment of steps. The record is keyed by its own numba type, so a second
    run of the same model types nothing; its trajectory equals the first's bit for bit."""
    import biobullet
    model = biobullet.load_model("fourbar_knee")
    run = lambda: biobullet.simulate(model, 0.2, rtol=1e-6, atol=1e-9, progress=False, initial={"knee_A": 0.5})
    first = run()
    assert first.meta["right_hand_side"]["compiled_stepper_steps"] > 0   # (the compiled stepper's path, as in the issue)
    typed = []
    original = jit.argument_types
    monkeypatch.setattr(jit, "argument_types", lambda *args: typed.append(len(args)) or original(*args))
    # (numba's dispatcher types by Python what its C fingerprint refuses: the compiled stepper's segment call did,
    # ≈ 2.5 ms a run on the four-bar and the coupled chain alike)
    from numba.core import dispatcher
    by_python = dispatcher._DispatcherBase.typeof_pyval
    monkeypatch.setattr(dispatcher._DispatcherBase, "typeof_pyval",
                        lambda self, value: typed.append(type(value).__name__) or by_python(self, value))
    second = run()
    assert typed == []
    assert np.array_equal(first.q, second.q) and np.array_equal(first.v, second.v)


NRT_CALLEE = """
import numpy as np


def _triangle_py(n):
    return np.arange(n).sum()   # allocates an array: needs numba's reference-counting runtime
"""
NRT_CALLER = """
def _entry_py(n):
    return _TRIANGLE(n)   # bound by core.jit
"""
NRT_RUN = """
import callee, caller
from biobullet.core import jit
triangle = jit.compiled(callee._triangle_py)
entry = jit.compiled(caller._entry_py, bind={"_TRIANGLE": triangle}, nrt=False)
print(entry(10), triangle(10))
"""


@needs_numba
def test_a_kernel_first_compiled_inside_an_nrt_free_kernel_keeps_the_runtime(tmp_path: Path) -> None:
    """`compiled(nrt=False)` (the public calls' forward kernel): a kernel it calls that is compiled inside its compile
    keeps its own runtime switch. numba gives a callee without an explicit switch its caller's: the allocating callee
    then failed to compile (and a callee that compiled so would be cached without the runtime for every caller).
    Expected: Σ_{k<10} k = 45 from both, the NRT-free entry and the callee called from Python."""
    (tmp_path / "callee.py").write_text(textwrap.dedent(NRT_CALLEE))
    (tmp_path / "caller.py").write_text(textwrap.dedent(NRT_CALLER))
    assert _script_output(tmp_path, NRT_RUN) == ["45", "45"]


def _script_output(folder: Path, script: str) -> list[str]:
    """What `script` prints, split (run in a subprocess with `folder`'s modules, numba's cache in folder/numba)."""
    result = subprocess.run([sys.executable, "-c", script], cwd=folder, env=_environment(folder, folder / "numba"),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.split()


RECORD_KERNELS = """
import numpy as np


def _read_py(address, out):
    # the fields of both tuples, a scalar among them, read without the runtime; one written
    record = _READ(address)
    total = record.scale * (record.a.sum() + record.b[1, 2])
    for i in range(record.c.shape[0]):
        record.c[i] = record.a[i] * record.scale
    out[0] = total
    return record.count
"""
RECORD_RUN = """
from typing import NamedTuple
import numpy as np
import kernels
from biobullet.core import jit
from biobullet.core.jit_pair import pack_record, record_reader

class Model(NamedTuple):
    a: np.ndarray
    b: np.ndarray
    scale: float

class Data(NamedTuple):
    c: np.ndarray
    count: int

model = Model(np.arange(4.0), np.arange(12.0).reshape(3, 4), 0.5)
data = Data(np.zeros(4), 7)
record, address = pack_record(model, data, borrowed=True)
kernel = jit.compiled(kernels._read_py, bind={"_READ": record_reader(model, data)}, nrt=False)
out = np.zeros(1)
print(kernel(address, out), float(out[0]), *data.c.tolist())
"""


@needs_numba
def test_a_kernel_without_the_runtime_reads_and_writes_a_borrowed_record(tmp_path: Path) -> None:
    """core.jit_pair: a kernel compiled without numba's reference-counting runtime reads and writes a borrowed
    record's fields (the public calls' forward kernel, `pipeline.kernels.forward_kernel`, and the loop residual do).
    numba's own StructRef field access goes through the runtime (`NRT_MemInfo_data_fast`): such a kernel did not
    compile ("NRT required but not enabled"); `core.jit_pair` registers the record's field access itself.
    Expected (by hand): count 7; 0.5 · ((0 + 1 + 2 + 3) + b[1, 2] = 6) = 6.0; c = 0.5 · a = 0, 0.5, 1, 1.5."""
    (tmp_path / "kernels.py").write_text(textwrap.dedent(RECORD_KERNELS))
    assert _script_output(tmp_path, RECORD_RUN) == ["7", "6.0", "0.0", "0.5", "1.0", "1.5"]


def _branchy_source(branches: int) -> str:
    """A callee with `branches` if-blocks (each a few numba IR blocks), and a caller inlining it twice."""
    lines = ["def branchy(x):", "    s = 0.0"]
    for b in range(branches):
        lines += [f"    if x[{b % 3}] > {b * 0.1}:", f"        s += x[{b % 3}] * {b + 1}.0",
                  "    else:", f"        s -= {b}.5"]
    lines += ["    return s", "", "def outer(x):", "    return BRANCHY(x) + 2.0 * BRANCHY(x[::-1])"]
    return "\n".join(lines)


def _inline_compile(branches: int, monkeypatch, numba_own: bool) -> tuple[int, str, float]:
    """(numba IR variables copied while compiling a kernel that inlines a `branches`-branch callee twice, its LLVM
    IR with numba's unique counters taken out, its value at a fixed x); `numba_own`: with numba's own inliner."""
    import re

    import numba
    from numba.core import inline_closurecall, ir

    namespace: dict = {}
    exec(compile(_branchy_source(branches), f"<branchy{branches}>", "exec"), namespace)
    namespace["BRANCHY"] = numba.njit(inline="always")(namespace["branchy"])
    kernel = numba.njit(namespace["outer"])
    if numba_own:
        monkeypatch.setattr(inline_closurecall.InlineWorker, "inline_ir",
                            inline_closurecall.InlineWorker.inline_ir.__wrapped__)
    copied = [0]
    var_copy = ir.Var.__deepcopy__

    def counting_copy(self, memo):
        copied[0] += 1
        return var_copy(self, memo)
    monkeypatch.setattr(ir.Var, "__deepcopy__", counting_copy)
    value = kernel(np.array([0.3, 0.9, 0.45]))
    monkeypatch.undo()
    text = next(iter(kernel.inspect_llvm().values()))
    return copied[0], re.sub(r"\$\d+|B\d+v\d+B|_v\d+_|\.\d+|\[\d+ x i8\]", "#", text), value


def test_inlining_a_callee_copies_its_scope_once_and_splices_the_same_code(monkeypatch) -> None:
    """numba copied an inlined callee's IR block by block, each copy with the whole variable scope again (O(blocks ×
    variables): most of the public calls' forward kernel's compile). `core.jit` makes it copy the scope once per
    copied IR: the variables copied grow with the callee's size, not with its size squared, and the kernel's code is what numba's own
    inliner gives (LLVM IR equal but for numba's unique counters), so are its results."""
    jit.compiled(_wide_py)   # (installs the shared-scope copy, on the first `compiled`)
    small, small_text, small_value = _inline_compile(4, monkeypatch, numba_own=False)
    large, large_text, large_value = _inline_compile(16, monkeypatch, numba_own=False)
    # measured: 544 → 2,176 variable copies for 4 → 16 branches (linear: 4×), numba's own 3,796 → 54,292
    # (quadratic: 14×); 16, not 40 branches: numba's own 40-branch compile cost 5 s of the test's 8
    assert large <= 6 * small
    own_small, own_small_text, own_small_value = _inline_compile(4, monkeypatch, numba_own=True)
    own_large, own_large_text, own_large_value = _inline_compile(16, monkeypatch, numba_own=True)
    assert own_large >= 10 * own_small
    assert (small_text, large_text) == (own_small_text, own_large_text)
    assert (small_value, large_value) == (own_small_value, own_large_value)


def _wide_py(x):
    return x + 1.0


def _call_pair_py(address, a, b):
    return _CALLER(address)(a, b)   # noqa: F821  (bound)


@needs_numba
def test_a_library_kernel_reached_by_address_is_compiled_once_with_its_dispatcher() -> None:
    """A library kernel reached by address (`function_address`) that is also a compiled kernel (`compiled`: linked
    into another, as a wrap kernel's bindings make every wrap kernel) is compiled once — its address is the C entry
    of the dispatcher's overload for the signature's types; the cylinder wrap, by address for cylinders and linked
    into the torus wrap, was compiled as a cfunc and again as a dispatcher (≈ 2–4 s of CPU). The address computes
    what the kernel's formula gives."""
    from numba.core import types

    from biobullet.muscles import wrapping

    signature = "complex128(complex128[::1], complex128[::1])"
    kernel = jit.compiled(wrapping._dot_py)
    address = jit.function_address(wrapping._dot_py, signature)
    vector = types.Array(types.complex128, 1, "C")
    overload = kernel.overloads[(vector, vector)]
    assert address == overload.library.get_pointer_to_function(overload.fndesc.llvm_cfunc_wrapper_name)
    caller = jit.compiled(_call_pair_py, bind={"_CALLER": jit.address_caller(signature)})
    a, b = np.array([1 + 2j, 3.0, -1j]), np.array([2.0, 1j, 4 - 1j])
    assert caller(address, a, b) == a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
