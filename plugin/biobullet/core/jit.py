"""The one accelerator switch: numba kernels, and their uncompiled form run by Python.

numba is a required dependency. Every compiled kernel of the library is written once, as a plain Python function
named `_NAME_py` (`NAME_py` when another module binds it) that numba can compile (loops over float64 arrays), and
reached through this module:

- `compiled(function, bind=...)` → the `numba.njit(cache=True, nogil=True)` kernel, compiled (or loaded from the
  on-disk cache in `__pycache__`) once per process, on its first call.
- `lazy(function)` → a callable that compiles on its first call and then dispatches to the compiled kernel.
- `direct_entry(kernel, *args)` → the compiled kernel's entry for exactly these argument types (per-step callers).
- `function_address(function, signature, bind=...)` → the address (an int) of `function` compiled as a C
  callable of a fixed `signature` (a numba signature string); `address_caller(signature)` → a numba
  intrinsic that turns such an address (an int64 inside a kernel) back into a callable of that signature. Together
  they let one compiled kernel call any number of plug-in kernels chosen at run time — their addresses are an int64
  array argument, so the caller's machine code (and numba's on-disk cache of it) does not depend on them. A
  library kernel that is also a `compiled` dispatcher (linked into another kernel) is reached at its dispatcher's
  C entry for the signature (`_compiled_address`): compiled once, not as a cfunc and again as a dispatcher.
  `entry_address(kernel, *args)` → the address of a compiled kernel's own C entry, for the same kind of call.
- `uncompiled()` → inside, this thread's entries give the uncompiled forms (a run's cold start), a kernel reached
  by address included (found by the address `function_address` gave); `resume_compiling()` ends that early.

`bind` (a mapping, or a function returning one, called when compiling) gives the names a kernel calls but does not
define: the kernels it calls (each compiled first; a plain `_NAME_py` is compiled to be IR-inlined) and constants
(bools, ints, floats). They are not written into the kernel's module: `compiled` compiles a copy of the function
whose globals are its module's plus these bindings, so two bindings of one function are two kernels, and nothing
is patched at bind time (an IR-inlined callee, whose globals numba reads when its caller compiles, also sees
the caller's bindings). A constant bool that guards a branch (`if _SPRINGS: ...`) makes numba prune the branch
before typing it, so a kernel bound with the flag off never compiles what the branch calls: the pipeline compiles
per model only the stages of the features it has (`pipeline.kernels`). Such a variant is named by `variant`
(a suffix of its qualified name: numba's on-disk cache keeps each variant apart). numba keys its on-disk cache on
the kernel's own file only; `compiled` also keys it on the source of the bound kernels, how each is reached
(IR-inlined or called), the bound constants, and what the kernel reads from its module's globals — constants by
name or as MODULE.NAME, kernels called by a global name (`_global_texts`) — (a stamp beside the cache files), so
editing a callee or a constant in another file, or switching its binding, recompiles its callers; a cache entry numba cannot
load (a type its index names has moved, a garbled file) is compiled again, not raised (`_guard_cache`). A module whose kernels
are reached by address declares `KERNEL_ERROR_MODEL = "numpy"`: each of its kernels then compiles with that one
error model wherever it is reached, so once (`_error_model`).

numba's inlining of an IR-inlined callee copied the callee's whole variable scope once per block of its IR
(quadratic in its size: most of the front end of the kernels that inline whole stages); from the first `compiled`
on, it copies it once per copied IR (`_share_inlined_scope`: the same IR spliced in, the same machine code).

A library kernel (one defined in the `biobullet` package) that fails to compile raises `KernelCompileError` —
a bug report naming the kernel and numba's first error line — wherever it is compiled (its first call, a caller's
compile, `direct_entry`, `function_address`): nothing falls back to the uncompiled form. Only a plug-in's kernel
reached by address (a joint-function type's jets, a contact law's twin, a force element's kernel, defined outside
the package) may fail: `function_address(..., plugin=...)` then gives None and warns once, and the model runs on
the callback stage (`_compile_failures`).

Debugging: with `BIOBULLET_NUMBA=0` in the environment (`ENABLED` False) nothing is compiled and every entry above
gives the uncompiled form of the same kernels with the same bindings (`twin`), run by Python — the same functions,
so the same numbers (float division by zero raises ZeroDivisionError in Python where a "numpy" error model gives
inf), about a thousand times slower. An address is then an index into this process's table of uncompiled kernels,
and `address_caller` looks it up. There is no second implementation behind the switch.
"""
from __future__ import annotations

import hashlib
import inspect
import os
import threading
import types
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Mapping

from biobullet.core.errors import KernelCompileError

#: False with BIOBULLET_NUMBA=0 in the environment: every kernel runs uncompiled, by Python (debugging)
ENABLED = os.environ.get("BIOBULLET_NUMBA", "1").strip().lower() not in ("0", "false", "no", "off")
_THREAD = threading.local()   # `uncompiled()`: a thread's own switch to the uncompiled forms


def compiling() -> bool:
    """Whether `core.jit`'s entries compile in this thread: numba switched on (`ENABLED`) and the thread not
    inside `uncompiled()`."""
    return ENABLED and not getattr(_THREAD, "uncompiled", False)

_COMPILED: dict[Any, Any] = {}   # (function, inline, variant, error model, nogil, nrt) → its compiled twin
_DIGESTS: dict[Any, str] = {}   # compiled Python function (a bound copy), or one a kernel reads as a global → digest
#                                 of its source, its globals and its bindings


def _constant_text(value: Any) -> str | None:
    """The text of a global value numba compiles in as a constant (a number, a string, a tuple of them, an array),
    None for anything else."""
    if isinstance(value, (bool, int, float, complex, str, bytes, type(None))):
        return repr(value)
    if isinstance(value, tuple):
        parts = [_constant_text(part) for part in value]
        return None if None in parts else "(" + ", ".join(parts) + ")"   # type: ignore[arg-type]
    if type(value).__module__ == "numpy" and hasattr(value, "tobytes") and hasattr(value, "dtype"):
        return f"{value.dtype}{getattr(value, 'shape', ())}:{hashlib.sha256(value.tobytes()).hexdigest()}"
    return None


def _global_texts(function: Callable, bound: Mapping[str, Any], seen: frozenset) -> list[str]:
    """What numba freezes into `function`'s machine code from its module's globals (besides `bound`): each constant
    it reads by name or as MODULE.NAME (its value), and each kernel or function it calls by a global name (its
    digest, its own globals included). numba keys its on-disk cache on the kernel's own file only, so a constant
    imported from another module (`from x import LIMIT`) or a callee edited in its own file left a stale kernel."""
    names: set[str] = set()
    codes = [function.__code__]
    while codes:   # (nested functions' names too)
        code = codes.pop()
        names.update(code.co_names)
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    namespace = getattr(function, "__globals__", {})
    texts = []
    for name in sorted(names):
        if name in bound or name not in namespace:
            continue
        value = namespace[name]
        if isinstance(value, types.ModuleType):   # MODULE.NAME: its constants among the names read
            for attribute in sorted(names):
                try:   # (a lazy package's __getattr__ may raise what it likes for a name it does not have)
                    text = _constant_text(getattr(value, attribute))
                except Exception:
                    continue
                if text is not None:
                    texts.append(f"{name}.{attribute}={text}")
            continue
        text = _constant_text(value)
        if text is not None:
            texts.append(f"{name}={text}")
            continue
        callee = getattr(value, "py_func", value)
        if isinstance(callee, types.FunctionType) and callee.__code__ not in seen:
            digest = _DIGESTS.get(callee)
            if digest is None:   # (kept: a function read by many kernels is digested once per process)
                digest = _DIGESTS[callee] = _code_digest(callee, seen)
            texts.append(f"{name}:{digest}")
    return texts


def _code_digest(function: types.FunctionType, seen: frozenset) -> str:
    """Digest of a function a kernel calls by a global name: its byte code, constants and names (nested functions'
    too: what numba compiles, read without `inspect.getsource`, which parses the file: ≈ 2 ms a function) and the
    globals it reads in turn (`_global_texts`)."""
    digest = hashlib.sha256()
    codes = [function.__code__]
    while codes:
        code = codes.pop()
        digest.update(code.co_code)
        digest.update(repr((code.co_names, code.co_varnames)).encode())
        for constant in code.co_consts:
            if isinstance(constant, types.CodeType):
                codes.append(constant)
            elif isinstance(constant, frozenset):   # (`x in {...}`: its repr's order follows the string hash seed)
                digest.update(repr(sorted(map(repr, constant))).encode())
            else:
                digest.update(repr(constant).encode())
    for text in _global_texts(function, {}, seen | {function.__code__}):
        digest.update(text.encode())
    return digest.hexdigest()


def _source_digest(function: Callable, bound: Mapping[str, Any], seen: frozenset = frozenset()) -> str:
    """Digest of `function`'s source, of the globals numba compiles into it (`_global_texts`) and of the kernels
    bound into it (their own bindings included)."""
    digest = hashlib.sha256()
    try:
        digest.update(inspect.getsource(function).encode())
    except (OSError, TypeError):
        digest.update(function.__qualname__.encode())
    code = getattr(function, "__code__", None)
    if code is not None:
        for text in _global_texts(function, bound, seen | {code}):
            digest.update(text.encode())
    for name in sorted(bound):
        callee = getattr(bound[name], "py_func", bound[name])
        digest.update(name.encode())
        if not callable(callee) and not _is_intrinsic(callee):   # a constant: its value is compiled in
            digest.update(repr(callee).encode())
            continue
        if _is_intrinsic(callee):   # an address caller: its signature is all that its machine code depends on
            digest.update(str(getattr(callee, "_biobullet_signature", name)).encode())
            continue
        digest.update((_DIGESTS.get(callee) or _source_digest(callee, {})).encode())
        # a compiled callee's error model is in its machine code too, and so is how it is reached: IR-inlined into
        # the caller or called (the same source bound either way gave one stamp: the cache kept the other's code)
        options = getattr(bound[name], "targetoptions", {})
        digest.update(str(options.get("error_model", "")).encode())
        if options.get("inline", "never") != "never":
            digest.update(b"|inlined")
        if options.get("_nrt", True) is False:   # (and whether it counts references: a switched binding recompiles)
            digest.update(b"|no_nrt")
    return digest.hexdigest()


def _numba_cache_folder(function: Callable) -> Path | None:
    """The folder numba caches `function` in, found by numba's own locators in numba's order: NUMBA_CACHE_DIR
    (`numba.core.config.CACHE_DIR`) when set, else `__pycache__` beside the source, else the user-wide cache;
    None when none is writable (numba then does not cache it either)."""
    from numba.core import caching

    source = inspect.getfile(function)
    for locator_class in (caching.UserProvidedCacheLocator, caching.InTreeCacheLocator,
                          caching.UserWideCacheLocator):
        locator = locator_class.from_function(function, source)
        if locator is not None:
            return Path(locator.get_cache_path())
    return None


def _drop_stale_cache(function: Callable, digest: str) -> None:
    """numba's on-disk cache is keyed on the kernel's own file only: when a kernel it calls changed (another file),
    the cached machine code still holds the old callee. Keep a stamp of the callees' digest beside the cache (where
    numba keeps it: `_numba_cache_folder`) and delete the kernel's cache files when it differs."""
    try:
        folder = _numba_cache_folder(function)
        if folder is None:
            return
        stem = Path(inspect.getfile(function)).stem
        stamp = folder / f"{stem}.{function.__qualname__}.bindings"
        if stamp.is_file() and stamp.read_text() == digest:
            return
        for stale in folder.glob(f"{stem}.{function.__qualname__}-*.nb[ic]"):
            stale.unlink()
        stamp.write_text(digest)
    except OSError:   # a read-only installation: numba then cannot cache there either
        pass


_GUARDED_CACHE: list = []   # the FunctionCache subclass `_guard_cache` installs (made on first use)
#: longest wait (s) for another process's compile of the same kernel; then this process compiles it too
COMPILE_LOCK_WAIT = 300.0
_HELD_LOCKS: set = set()   # compile-lock files this process holds (a nested compile of the same kernel)


@contextmanager
def _compile_lock(path: str, waiting: Callable | None = None):
    """Hold the compile lock `path` (an exclusive `flock`) while compiling a kernel, so that processes sharing
    numba's on-disk cache (the test run's workers, a sweep's) compile each kernel once: the second waits — inside
    the context `waiting()` gives, if any — then loads what the first saved. No lock where `flock` or the folder is
    unavailable, or after COMPILE_LOCK_WAIT seconds. A process compiles callees inside a caller's compile, so it
    holds locks along a call chain; the call graph has no cycles, so two processes never wait for each other."""
    if path in _HELD_LOCKS:
        yield
        return
    try:
        import fcntl
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle = open(path, "a")
    except (ImportError, OSError):
        yield
        return
    try:
        import time
        from contextlib import ExitStack
        deadline = time.monotonic() + COMPILE_LOCK_WAIT
        with ExitStack() as wait:
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        break
                    if waiting is not None:
                        wait.enter_context(waiting())
                        waiting = None
                    time.sleep(0.05)
                except OSError:
                    break
        _HELD_LOCKS.add(path)
        yield
    finally:
        _HELD_LOCKS.discard(path)
        handle.close()   # (releases the lock)


def _guard_cache(kernel: Any) -> Any:
    """Give `kernel` (a numba dispatcher or cfunc, caching not yet used) a guarded cache:
    - an entry numba cannot load is compiled again, not raised: numba's loader unpickles the whole index of a
      kernel's cache and raises when a type it names has moved or been renamed since (`AttributeError: Can't get
      attribute ...`; an upgraded installation with an old `__pycache__`), or when a file is truncated or garbled.
      Any failure to load an entry empties that kernel's index and compiles it again; the new entry is saved;
    - a dispatcher's compile of a new signature (cache load, compile, save) holds the kernel's compile lock
      (`_compile_lock`, a file beside its cache files), so two processes do not compile the same kernel at once
      (a cfunc is compiled under it by `_compile_locked`).
    `kernel` as it was when numba's internals moved (then numba's own behaviour stands)."""
    try:
        if not _GUARDED_CACHE:
            from numba.core.caching import FunctionCache

            class GuardedCache(FunctionCache):
                def lock_path(self) -> str:
                    return os.path.join(self._cache_path, self._impl.filename_base + ".compile-lock")

                def probe(self, sig, target_context) -> bool:
                    """Whether the cache has an entry for `sig` (loaded now, and handed to the dispatcher's
                    compile of `sig` next, which then does not load it again)."""
                    entry = self.load_overload(sig, target_context)
                    if entry is not None:
                        self.__dict__.setdefault("probed", {})[tuple(sig)] = entry
                    return entry is not None

                def load_overload(self, sig, target_context):
                    probed = self.__dict__.get("probed")
                    if probed and tuple(sig) in probed:
                        return probed.pop(tuple(sig))
                    try:
                        return super().load_overload(sig, target_context)
                    except Exception:   # stale or unreadable: an empty index, and compile it again
                        self.flush()
                        return None

                def save_overload(self, sig, data):
                    try:
                        super().save_overload(sig, data)
                    except Exception:   # an index written meanwhile by an older layout: replace it
                        self.flush()
                        super().save_overload(sig, data)

            _GUARDED_CACHE.append(GuardedCache)
        cache = kernel._cache = _GUARDED_CACHE[0](getattr(kernel, "py_func", None) or kernel._pyfunc)
        kernel.cache_probe = cache.probe   # (`is_cached`)
        if hasattr(kernel, "overloads"):   # a dispatcher: numba calls its `compile` per new signature
            unlocked = kernel.compile

            def compile(sig):
                if kernel.overloads.get(tuple(sig) if isinstance(sig, tuple) else None) is not None:
                    return unlocked(sig)
                with _compile_failures(kernel.py_func), \
                        _compile_lock(cache.lock_path(), lambda: _compiling_elsewhere(kernel, sig)):
                    return unlocked(sig)

            kernel.compile = compile
    except Exception:   # pragma: no cover - numba internals moved
        pass
    return kernel


def _is_library(function: Callable) -> bool:
    """Whether `function` is defined in the `biobullet` package (a library kernel, not a plug-in's)."""
    module = getattr(function, "__module__", None) or ""
    return module == "biobullet" or module.startswith("biobullet.")


def _first_error_line(error: BaseException) -> str:
    """numba's first informative line of `error` (its "Failed in ... pipeline" headers skipped; a line ending
    in ':' joined with the next), or the error's type."""
    lines = [line.strip() for line in str(error).splitlines()]
    lines = [line for line in lines if line and not line.startswith("Failed in ")]
    if not lines:
        return type(error).__name__
    return f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0]


@contextmanager
def _compile_failures(function: Callable):
    """Around one numba compile of `function`: a failure of the outermost compile in this thread becomes
    `KernelCompileError`, naming `function` and the innermost kernel whose compile failed first (with its first
    error line). A nested compile's failure (a callee compiled while its caller is typed) propagates as numba
    raised it: numba may recover from it (it retries some calls with other argument types), and then a compile at
    that depth succeeds and forgets it."""
    from numba.core.errors import ForceLiteralArg

    depth = getattr(_THREAD, "compile_depth", 0)
    if depth == 0:
        _THREAD.failed_callee = None
    _THREAD.compile_depth = depth + 1
    name = f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', function)}"
    try:
        yield
    except (KernelCompileError, ForceLiteralArg):   # (numba's request to retype with literal arguments)
        raise
    except Exception as error:
        if _THREAD.failed_callee is None:
            _THREAD.failed_callee = (name, _first_error_line(error), depth)
        if depth:
            raise
        callee, reason, _ = _THREAD.failed_callee
        raise KernelCompileError(name, reason, callee, library=_is_library(function)) from error
    else:
        if _THREAD.failed_callee is not None and _THREAD.failed_callee[2] >= depth:   # recovered
            _THREAD.failed_callee = None
    finally:
        _THREAD.compile_depth = depth


def _compiling_elsewhere(kernel: Any, sig: Any):
    """A numba compile event around the wait for another process's compile of `kernel`: the compile notice and
    `compile_clock` count the wait as compiling (a run's report then does not call it integration time)."""
    from numba.core import event
    return event.trigger_event("numba:compile", data={"dispatcher": kernel, "args": sig, "return_type": None})


def _compile_locked(entry: Any) -> None:
    """Compile a cfunc (`function_address`) under its compile lock (`_guard_cache`)."""
    lock = getattr(entry._cache, "lock_path", None)
    if lock is None:
        entry.compile()
        return
    with _compile_lock(lock()):
        entry.compile()


#: the one line said when a process first compiles a kernel (none was in numba's on-disk cache)
COMPILE_NOTICE = ("compiling numerical kernels (first run only: about 15 s for a tree, up to a minute or two for a model "
                  "with loops; cached afterwards) ...")
_NOTICE_LISTENER: list = []   # the one numba event listener that says COMPILE_NOTICE (registered on first use)
_KERNEL_CODES: set = set()     # code objects of the functions handed to numba here (their compiles are announced)


def _announce_compiles() -> None:
    """Say COMPILE_NOTICE once per process (logger `biobullet`, WARNING, so `--quiet` hides it) when numba starts
    compiling a kernel handed to it here (`compiled`, `function_address`) — not when it loads one from its on-disk
    cache, wherever `NUMBA_CACHE_DIR` puts it: a first run compiles for seconds, which should not look like a hang.
    Registered once, on the first `compiled` / `function_address` call (no import-time side effect)."""
    if _NOTICE_LISTENER:
        return
    from numba.core import event

    class Notice(event.Listener):
        said = False

        def on_start(self, ev) -> None:
            dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
            code = getattr(getattr(dispatcher, "py_func", None), "__code__", None)
            if not self.said and code in _KERNEL_CODES:
                import logging
                self.said = True
                logging.getLogger("biobullet").warning(COMPILE_NOTICE)

        def on_end(self, ev) -> None:
            pass

    listener = Notice()
    event.register("numba:compile", listener)
    _NOTICE_LISTENER.append(listener)


_INLINE_SCOPES: list[dict] = []   # inside numba's inlining of a callee: {id(scope): (scope, its one copy)}


def _scope_copied_once(scope: Any, memo: dict) -> Any:
    """numba's `ir.Scope.__deepcopy__` while numba inlines a callee (`_share_inlined_scope`): the scope's one copy
    for the whole copied IR, made on its first copy (as `copy.deepcopy`'s default would: a new instance, then its
    attributes copied with the memo)."""
    import copy
    copies = _INLINE_SCOPES[-1]
    entry = copies.get(id(scope))
    if entry is None:
        duplicate = type(scope).__new__(type(scope))
        memo[id(scope)] = duplicate
        duplicate.__dict__.update(copy.deepcopy(scope.__dict__, memo))
        entry = copies[id(scope)] = (scope, duplicate)   # (the original kept: its id stays its own meanwhile)
    memo[id(scope)] = entry[1]
    return entry[1]


def _share_inlined_scope() -> None:
    """Make numba's inlining of an IR-inlined callee copy the callee's variable scope once, not once per block.
    numba's `InlineWorker.inline_ir` copies the callee's IR (twice: one copy to splice in, one returned) block by
    block, each with `copy.deepcopy` and a memo of its own; every variable in a block refers to the function's one
    scope, which holds every variable of the function, so each block's copy copied all of them again — O(blocks ×
    variables) per inlined call, and an inlined callee's IR holds its own inlined callees': ≈ 55 % of the public
    calls' forward kernel's front end (fourbar_knee; cProfile: 27 million `deepcopy` calls). Inside `inline_ir` the
    scope is copied once per copied IR (`_scope_copied_once`); the blocks then share that copy, as the original's
    blocks share the original — the IR numba splices in is the same (the callee's variables are renamed into the
    caller's scope, then every block's scope is set to the caller's), so the machine code is too. Installed once,
    on the first `compiled` (numba pinned; where its internals moved, its own behaviour stands)."""
    if _SHARED_SCOPE:
        return
    _SHARED_SCOPE.append(True)
    try:
        from numba.core import inline_closurecall, ir
        inline_ir = inline_closurecall.InlineWorker.inline_ir
        if "__deepcopy__" in vars(ir.Scope):   # (numba copies scopes its own way now: leave it)
            return
    except (ImportError, AttributeError):   # pragma: no cover - numba internals moved
        return

    def inline_ir_sharing_scope(self, *args, **kwargs):
        _INLINE_SCOPES.append({})
        ir.Scope.__deepcopy__ = _scope_copied_once   # (numba's compile lock is held: no other thread copies IR)
        try:
            return inline_ir(self, *args, **kwargs)
        finally:
            _INLINE_SCOPES.pop()
            if not _INLINE_SCOPES:
                del ir.Scope.__deepcopy__

    inline_ir_sharing_scope.__wrapped__ = inline_ir   # type: ignore[attr-defined]
    inline_closurecall.InlineWorker.inline_ir = inline_ir_sharing_scope


_SHARED_SCOPE: list = []   # [True] once `_share_inlined_scope` ran


def _is_dispatcher(value: Any) -> bool:
    return hasattr(value, "py_func")


def _is_intrinsic(value: Any) -> bool:
    """A numba intrinsic (`address_caller`): bound as it is, compiled into its caller."""
    return type(value).__name__ == "_Intrinsic"


Bindings = Mapping[str, Callable] | Callable[[], Mapping[str, Callable]] | None


_INLINE_OWN: dict[Any, frozenset] = {}   # an IR-inlined twin → the names bound into it explicitly


def _bind_callees(function: Callable, bind: Bindings) -> dict[str, Any]:
    """The names `bind` gives, resolved: dispatchers, address callers and constants as they are, a plain
    `_NAME_py` callee compiled to be IR-inlined; {name: bound kernel or constant}. numba reads an inlined callee's
    globals when its caller compiles, so an inlined callee also sees the caller's bindings (it may call the same
    kernels, or another inlined callee), its own first."""
    bound_kernels: dict[str, Any] = {}
    for name, callee in ((bind() if callable(bind) else bind) or {}).items():
        if _is_dispatcher(callee) or _is_intrinsic(callee) or not callable(callee):
            bound = callee
        else:
            bound = compiled(callee, inline=True)
        bound_kernels[name] = bound
    for kernel in bound_kernels.values():
        own = _INLINE_OWN.get(kernel) if _is_dispatcher(kernel) else None
        if own is not None:
            kernel.py_func.__globals__.update({k: v for k, v in bound_kernels.items() if k not in own})
    return bound_kernels


def _uncompiled(function: Callable, bound: Mapping[str, Any], inline: bool) -> Callable:
    """`compiled`'s result with numba switched off: a copy of `function` whose globals are its module's and `bound`
    (the uncompiled forms of its callees), run by Python. It carries `py_func` (itself), so that binding it into
    another kernel treats it as a kernel, not as a plain callee to inline; an inlined one is a fresh copy per
    caller, whose namespace then receives that caller's bindings (as numba's inlining reads them)."""
    namespace = dict(function.__globals__)
    namespace.update(bound)
    copy = types.FunctionType(function.__code__, namespace, function.__name__, function.__defaults__,
                              function.__closure__)
    copy.__qualname__, copy.__module__, copy.__doc__ = function.__qualname__, function.__module__, function.__doc__
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.py_func = copy   # type: ignore[attr-defined]
    if inline:
        _INLINE_OWN[copy] = frozenset(bound)
    return copy


def _with_globals(function: Callable, bound: Mapping[str, Any], variant: str = "") -> Callable:
    """A copy of `function` whose globals are its module's and `bound` (the module is left as it is), named
    `function`'s qualified name + "__" + `variant` (numba's cache files and index are named by it)."""
    if not bound and not variant:
        return function
    namespace = dict(function.__globals__)
    namespace.update(bound)
    copy = types.FunctionType(function.__code__, namespace, function.__name__, function.__defaults__,
                              function.__closure__)
    copy.__qualname__ = function.__qualname__ + (f"__{variant}" if variant else "")
    copy.__module__, copy.__doc__, copy.__kwdefaults__ = function.__module__, function.__doc__, function.__kwdefaults__
    return copy


def twin(function: Callable, bind: Bindings = None) -> Callable:
    """The uncompiled form of `function` with `bind`'s names as its globals (Python functions and constants used
    as they are): what `compiled(function, bind=...)` compiles, run by Python."""
    return _with_globals(function, dict((bind() if callable(bind) else bind) or {}))


#: the error model `compiled` compiles with when the kernel's module names none: "python" (a
#: float division by zero raises ZeroDivisionError), or the caller's (the kernels a `bind` compiles get the error
#: model of the kernel they are bound into; "numpy" — inf or NaN — for those of a kernel reached by address
#: (`function_address`), where an exception cannot propagate)
_ERROR_MODEL: list[str] = ["python"]


def _error_model(function: Callable) -> str:
    """The error model `function` compiles with: its module's `KERNEL_ERROR_MODEL` (a module whose kernels are reached by address declares "numpy" once, so that each of its kernels compiles
    with one error model wherever it is reached — by address, linked into a kernel or called from Python — and
    is compiled once, not once per error model), else the caller's (`_ERROR_MODEL`)."""
    return function.__globals__.get("KERNEL_ERROR_MODEL") or _ERROR_MODEL[-1]


def compiled(function: Callable, *, bind: Bindings = None, inline: bool = False, variant: str = "",
             nogil: bool = True, nrt: bool = True):
    """The compiled kernel of `function` with the names `bind` gives (a variant named `variant` when one function
    is compiled with several bindings; numba compiles it on its first call, and a library kernel that fails to
    raises `KernelCompileError`); with `ENABLED` off its uncompiled form with the same bindings (`_uncompiled`).
    Its error model (`_error_model`) applies to the kernels `bind` compiles too, unless their modules declare
    their own. `nogil=False` keeps the
    GIL during a call from Python: releasing and taking it back costs ≈ 0.035 µs a call, which a kernel called per
    step from Python for well under a microsecond (the public calls' entry) does not win back. `nrt=False` compiles
    it without numba's reference-counting runtime (a thin entry from Python that allocates nothing and returns no
    array: its wrapper then converts an array argument without allocating a memory-info record for it, and the
    kernels it calls count no references on it — `pipeline.stages.forward_entry_py`); the kernels it calls keep
    their own switch (each kernel's is explicit: numba gives a callee compiled inside it its caller's)."""
    error_model = _error_model(function)
    if not compiling():
        key = (function, inline, variant, error_model)
        kernel = None if inline else _COMPILED.get(key)   # (an inlined form is a copy per caller)
        if kernel is None:
            kernel = _uncompiled(function, _bind_callees(function, bind), inline)
            if not inline:
                _COMPILED[key] = kernel
        return kernel
    kernel = _COMPILED.get((function, inline, variant, error_model, nogil, nrt))   # an inlined twin: its own dispatcher
    if kernel is None:
        import numba
        _ERROR_MODEL.append(error_model)
        try:
            bound_kernels = _bind_callees(function, bind)
        finally:
            _ERROR_MODEL.pop()
        name = variant or ("inlined" if inline else "")
        if error_model != "python":   # its own cache files
            name = f"{name}_{error_model}" if name else error_model
        if not nogil:   # (numba's cache index does not tell the two wrappers apart)
            name = f"{name}_gil" if name else "gil"
        if not nrt:   # (nor the two runtimes)
            name = f"{name}_no_nrt" if name else "no_nrt"
        # an inlined twin is always a copy: its callers' bindings go into its own namespace, not the module
        target = _with_globals(function, bound_kernels, name)
        digest = _DIGESTS[target] = _source_digest(function, bound_kernels)
        if not inline:   # an inlined twin has no cache of its own: its caller's decides
            _drop_stale_cache(target, digest)
        _announce_compiles()
        _share_inlined_scope()
        _KERNEL_CODES.add(function.__code__)
        # the runtime switch given either way: numba gives a kernel without one its caller's, so a kernel first
        # compiled inside an NRT-free kernel's compile would lose the runtime (and be cached so for every caller)
        options = {"cache": True, "nogil": nogil, "error_model": error_model, "_nrt": nrt}
        if inline:
            options["inline"] = "always"
        kernel = _guard_cache(numba.njit(**options)(target))
        if inline:
            _INLINE_OWN[kernel] = frozenset(bound_kernels)
        _COMPILED[function, inline, variant, error_model, nogil, nrt] = kernel
    return kernel


def lazy(function: Callable, *, bind: Bindings = None) -> Callable:
    """A callable that compiles `function` on its first call (see `compiled`) and then always calls the compiled
    kernel (its uncompiled form with `ENABLED` off). `.resolve()` gives what it dispatches to."""
    holder: list[Callable | None] = [None]

    def resolve() -> Callable:
        target = holder[0]
        if target is None:
            target = compiled(function, bind=bind)
            if compiling():   # (inside `uncompiled()`: the uncompiled form for now, compiled on a later call)
                holder[0] = target
        return target

    def dispatch(*args):
        return (holder[0] or resolve())(*args)

    dispatch.__name__ = function.__name__.removesuffix("_py").lstrip("_")
    dispatch.__doc__ = function.__doc__
    dispatch.resolve = resolve   # type: ignore[attr-defined]
    return dispatch


def _argument_type(value: Any):
    """numba's type of a kernel argument, an array with a non-unit stride typed as of any layout ('A') even where
    NumPy calls it contiguous (a one-entry view): a strided copy then gets the any-layout entry at every size,
    not a C-contiguous one (another compile of the kernel) when it has one entry."""
    import numba
    from numba.core import types
    kind = numba.typeof(value)
    if isinstance(kind, types.Array) and kind.layout != "A" and value.size and value.strides[-1] != value.itemsize:
        kind = kind.copy(layout="A")
    return kind


def argument_types(*args: Any) -> tuple:
    """numba's types of kernel arguments, as `direct_entry` and `entry_address` match them (`_argument_type`)."""
    return tuple(_argument_type(a) for a in args)


#: (dispatcher, numba's fingerprint of the arguments) → [its compile result for their types, its C entry's address
#: or None until asked] (`_overload`)
_OVERLOADS: dict[tuple, list] = {}


def _fingerprint(value: Any) -> Any:
    """numba's fingerprint of a value's type (`compute_fingerprint`); a tuple holding a value it does not take (a
    `core.jit_pair` record: the loop record inside the Data's arrays) by its members', such a record by its numba type
    (`numba.typeof` of the proxy: no typing of the arrays it holds). Raises NotImplementedError for other values."""
    from numba._dispatcher import compute_fingerprint
    try:
        return compute_fingerprint(value)
    except NotImplementedError:
        if isinstance(value, tuple):
            return (type(value), tuple(_fingerprint(member) for member in value))
        if not hasattr(value, "__dict__"):   # (a string, a number kind numba's fingerprint refuses: typed each time)
            raise
        import numba
        return ("numba type", numba.typeof(value))   # (a record: numba reads its type from the proxy, arrays untyped)


def _overload(kernel: Callable, args: tuple) -> list:
    """[numba's compile result of the dispatcher `kernel` for exactly the types of `args` (`argument_types`),
    the address of its C entry or None] — compiled or loaded from the cache (a library kernel that fails raises
    KernelCompileError). Found again by the arguments' fingerprint (numba's own C key of a value's type, a few µs for
    a run's structured arguments), as numba's dispatcher finds its overloads: typing those arguments in Python and
    hashing their nested types costs ≈ 1.5 ms, a fifth of a short run (each run of a model brings new arrays of the
    same types)."""
    try:
        key = (kernel, _fingerprint(args))
    except NotImplementedError:   # (a value numba's fingerprint does not take, e.g. a string: typed each time)
        key = None
    found = _OVERLOADS.get(key) if key is not None else None
    if found is None:
        signature = argument_types(*args)
        kernel.compile(signature)   # (a library kernel that fails raises KernelCompileError)
        found = [kernel.overloads[signature], None]
        if key is not None:
            _OVERLOADS[key] = found
    return found


def direct_entry(kernel: Callable, *args: Any) -> Callable:
    """numba's compiled wrapper of the dispatcher `kernel` for exactly the types of `args` (`_overload`; compiled
    or loaded from the cache, then called with `args` once): calling it skips the dispatcher's per-call matching
    of the argument types (≈ 0.4 µs for eleven arguments — for a per-step kernel between two PyBullet steps, 2 % of
    a step). The caller must pass the same types on every call (C-contiguous float64 arrays and Python floats where
    `args` has them): the wrapper converts but does not check. `kernel` itself when it is an uncompiled form (made
    with `ENABLED` off or inside `uncompiled()`), or inside `uncompiled()`."""
    entry = matched_entry(kernel, *args)
    entry(*args)
    return entry


def matched_entry(kernel: Callable, *args: Any) -> Callable:
    """`direct_entry` without its first call: numba's compiled wrapper of the dispatcher `kernel` for the types of
    `args`, found by their fingerprint (`_overload`) — for a kernel whose call has effects (a segment of steps) and
    whose arguments hold a `core.jit_pair` record, which the dispatcher's own matching types in Python at every call
    (≈ 2.5 ms for a run's arguments); `kernel` itself where it runs uncompiled."""
    if not compiling() or not hasattr(kernel, "overloads"):
        return kernel
    return _overload(kernel, args)[0].entry_point


def is_cached(kernel: Callable, *args: Any) -> bool:
    """Whether numba has the dispatcher `kernel` for the types of `args` compiled in this process or in its on-disk
    cache (then loaded, once): nothing is compiled or called. True with `ENABLED` off, or where the kernel has no
    guarded cache (`_guard_cache`)."""
    if not compiling():
        return True
    signature = argument_types(*args)
    probe = getattr(kernel, "cache_probe", None)
    return kernel.overloads.get(signature) is not None or probe is None or probe(signature, kernel.targetctx)


def entry_address(kernel: Callable, *args: Any) -> tuple[int, Any]:
    """(the address of the C entry of the dispatcher `kernel` compiled for exactly the types of `args`, its numba
    signature), as `direct_entry` compiles (or loads) it (a library kernel that fails raises `KernelCompileError`).
    numba compiles a C entry beside every kernel (its first-class function wrapper), so another kernel can call this one through
    `address_caller(signature)` without linking it: the caller's machine code, and its on-disk cache, then do not
    depend on which kernel it calls. An exception inside the call cannot reach the caller (numba prints it): call
    only kernels that report failure by their return value. With `ENABLED` off: an index into this process's table
    of uncompiled kernels (as `function_address`) and None for the signature."""
    if not compiling():
        _UNCOMPILED_ADDRESSED.append(kernel)
        return len(_UNCOMPILED_ADDRESSED), None
    found = _overload(kernel, args)
    result = found[0]
    if found[1] is None:
        found[1] = int(result.library.get_pointer_to_function(result.fndesc.llvm_cfunc_wrapper_name))
    return found[1], result.signature


@contextmanager
def uncompiled():
    """Inside, in this thread: `compiled`, `lazy`, `function_address` and `direct_entry` give the uncompiled forms of
    kernels, as with `ENABLED` off (a run that starts its right-hand side by Python, `integrate.compiled_rhs`).
    Kernels that numba compiled already are not affected; the uncompiled forms are kept apart from the compiled
    ones. The switch is the calling thread's (`compiling`): other threads keep compiling."""
    previous = getattr(_THREAD, "uncompiled", False)
    _THREAD.uncompiled = True
    try:
        yield
    finally:
        _THREAD.uncompiled = previous


def resume_compiling() -> None:
    """Inside `uncompiled()`: this thread's entries compile again from here to the end of the block (a run whose
    uncompiled start has used its time, `integrate.compiled_rhs.CompiledReducedRHS.python_start`)."""
    _THREAD.uncompiled = False


_ADDRESSES: dict[Any, Any] = {}   # (function, signature) → the numba cfunc (kept alive: its address is in use)
_CALLERS: dict[str, Any] = {}     # signature → its address-caller intrinsic
#: id of the signature object a caller was made for → (that object, its caller): a numba Signature of a run's
#: structured arguments takes ≈ 30 µs to hash (its nested types hash anew each time), and `entry_address` gives the
#: same object at every run
_CALLERS_BY_ID: dict[int, tuple] = {}
_UNCOMPILED_ADDRESSED: list[Callable] = []   # with `ENABLED` off: the kernels whose "addresses" are index + 1
#: the address of a C callable `function_address` compiled → (its function, bindings), then its uncompiled form
_FORMS_AT: dict[int, Any] = {}


def _uncompiled_at(address: int) -> Callable:
    """`address_caller` with `ENABLED` off or inside `uncompiled()`: the uncompiled kernel `function_address` gave
    `address` for — an index into this process's table, or the address of a kernel it compiled (a run's uncompiled
    start calls the plug-in kernels its rows name by their compiled addresses)."""
    form = _FORMS_AT.get(int(address))
    if form is None:
        return _UNCOMPILED_ADDRESSED[int(address) - 1]
    if isinstance(form, tuple):
        function, bind = form
        form = _FORMS_AT[int(address)] = _uncompiled(function, _bind_callees(function, bind), False)
    return form


_uncompiled_at.py_func = _uncompiled_at   # type: ignore[attr-defined]  (bound into kernels as it is)


def function_address(function: Callable, signature, *, bind: Bindings = None, plugin: str = "") -> int | None:
    """The address of `function` compiled as a C callable of `signature` (a numba signature string, e.g.
    "int64(float64, float64[::1])"; arrays C-contiguous), compiled (or loaded from numba's on-disk cache) once per
    process. A library kernel that fails to compile raises `KernelCompileError`; a plug-in's (`plugin` names what
    brings it, e.g. "joint function type X", and `function` is defined outside the `biobullet` package) gives None
    and one RuntimeWarning saying why: its caller then runs the callback stage. `bind` as for `compiled`: the kernels
    `function` calls. The compiled object is kept for the life of the process, so the address stays valid — in
    this process only: arrays holding addresses are packed where they are used (per `System`, per bridge) and must
    not be sent to another process. A kernel reached this way must not raise (the C call cannot carry a Python
    exception): report failure through its return value — `KERNEL_ERROR_MODEL = "numpy"` in its module makes a
    float division by zero give inf or NaN instead of raising, in `function` and in the kernels `bind` compiles for
    it (else "python"). `signature` may also be a numba Signature
    (`kernel_signature`). With `ENABLED` off: the index (from 1) of its uncompiled form in this process's table,
    which `address_caller`'s callers look up."""
    if not ENABLED:   # (inside `uncompiled()` a real address: a table packed there may outlive the block)
        key = (function, signature)
        if key not in _ADDRESSES:
            _UNCOMPILED_ADDRESSED.append(_uncompiled(function, _bind_callees(function, bind), False))
            _ADDRESSES[key] = len(_UNCOMPILED_ADDRESSED)
        return _ADDRESSES[key]
    error_model = function.__globals__.get("KERNEL_ERROR_MODEL") or "python"
    key = (function, signature)
    entry = _ADDRESSES.get(key)
    if entry is None:
        try:
            entry = _compiled_address(function, signature, bind, error_model)
        except Exception as error:
            if not plugin or _is_library(function):
                raise
            import warnings
            entry = False   # a plug-in's kernel: said once; its caller runs the callback stage
            warnings.warn(f"{plugin}: its compiled kernel {function.__qualname__} does not compile "
                          f"({getattr(error, 'reason', None) or _first_error_line(error)}); it runs on the callback "
                          "stage (its Python form, slower)", RuntimeWarning, stacklevel=3)
        _ADDRESSES[key] = entry
    if not entry:
        return None   # a plug-in's kernel that does not compile
    _FORMS_AT.setdefault(int(entry.address), (function, bind))
    return int(entry.address)


class _KernelEntry:
    """`function_address`'s entry of a library kernel that is also a `compiled` dispatcher: the C entry of the
    dispatcher's overload (`_shared_address`), the dispatcher kept alive with it."""

    def __init__(self, kernel: Any, address: int) -> None:
        self.kernel, self.address = kernel, address


def _shared_address(kernel: Any, signature) -> Any:
    """The C entry of the dispatcher `kernel` compiled for `signature`'s argument types — numba compiles a C entry
    beside every overload (`entry_address`) —, or None where the overload's result type is not the signature's (an
    overload typed before, from a call, with another result): then a cfunc of its own."""
    from numba.core import sigutils

    arguments, result = sigutils.normalize_signature(signature)
    kernel.compile(arguments if result is None else result(*arguments))
    overload = kernel.overloads.get(tuple(arguments))
    if overload is None or (result is not None and overload.signature.return_type != result):
        return None
    return _KernelEntry(kernel, int(overload.library.get_pointer_to_function(overload.fndesc.llvm_cfunc_wrapper_name)))


def _compiled_address(function: Callable, signature, bind: Bindings, error_model: str) -> Any:
    """`function_address`'s entry of `function`: a numba cfunc (compiled, or loaded from numba's cache) — or, for a
    library kernel that is also a `compiled` dispatcher (made by its bindings or before: the cylinder wrap, reached
    by address for cylinders and linked into the torus wrap), that dispatcher's C entry (`_shared_address`), so it
    is compiled once, not as a cfunc and again as a dispatcher (≈ 2–4 s of CPU). Only then: a dispatcher also
    compiles its Python wrapper, which for a kernel of structured arguments reached only by address is work for
    nothing."""
    from numba.core import sigutils
    from numba.core.ccallback import CFunc

    _ERROR_MODEL.append(error_model)   # its callees compile with its error model
    try:
        bound_kernels = _bind_callees(function, bind)
    finally:
        _ERROR_MODEL.pop()
    dispatcher = _COMPILED.get((function, False, "", error_model, True, True))
    if dispatcher is not None and _is_library(function) and compiling():
        shared = _shared_address(dispatcher, signature)
        if shared is not None:
            return shared
    target = _with_globals(function, bound_kernels)
    # (without bindings the digest is the njit form's too, whatever the signature: a function compiled both ways, or
    # for several signatures, keeps one stamp instead of each deleting the other's cache files)
    _drop_stale_cache(target, _source_digest(function, bound_kernels)
                      + (str(signature) + error_model if bound_kernels else ""))
    _announce_compiles()
    _share_inlined_scope()
    _KERNEL_CODES.add(function.__code__)
    with _compile_failures(function):
        # numba.cfunc(signature, cache=True) with a guarded cache (it compiles at once)
        entry = _guard_cache(CFunc(target, sigutils.normalize_signature(signature), locals={},
                                   options={"error_model": error_model}))
        _compile_locked(entry)
    return entry


def kernel_signature(result: str, *arguments: Any, readonly: tuple[int, ...] = ()):
    """The numba signature `result(*types)` of a kernel reached by address (`function_address`,
    `address_caller`) whose arguments are typed like `arguments` (values, or numba types), with every top-level
    array argument typed as of any layout, and read-only at the positions `readonly`: callers may then pass
    contiguous or strided, writable or read-only arrays (numba converts at the call)."""
    import numba
    from numba.core import types

    typed = []
    for position, argument in enumerate(arguments):
        kind = argument if isinstance(argument, types.Type) else numba.typeof(argument)
        if isinstance(kind, types.Array):
            kind = types.Array(kind.dtype, kind.ndim, "A", readonly=position in readonly)
        typed.append(kind)
    return getattr(types, result)(*typed)


def address_caller(signature: str) -> Any:
    """A numba intrinsic `call = CALLER(address)` for kernels: `address` (int64) of a function compiled by
    `function_address` with this same `signature` → a first-class function value; `call(*args)` calls it (an
    indirect call, no Python involved). Bind it into the calling kernel (`compiled(...,
    bind={"NAME": address_caller(signature)})`). An address of another signature is undefined behaviour: pass only
    addresses that `function_address` returned for exactly this signature. With `ENABLED` off: a Python function
    from such an address to the uncompiled kernel."""
    if not compiling():
        return _uncompiled_at
    known = _CALLERS_BY_ID.get(id(signature))
    if known is not None and known[0] is signature:
        return known[1]
    caller = _CALLERS.get(signature)
    if caller is None:
        from numba.core import cgutils, sigutils, types
        from numba.extending import intrinsic

        args, result = sigutils.normalize_signature(signature)
        function_type = types.FunctionType(result(*args))

        def typer(typingctx, address):
            def codegen(context, builder, sig, values):
                # the first-class function value (numba's FunctionModel): the C entry only, so calls go
                # through it and never through the Python object or the dispatcher
                value = cgutils.create_struct_proxy(function_type)(context, builder)
                pointer = context.get_value_type(types.voidptr)
                value.c_addr = builder.inttoptr(values[0], pointer)
                value.py_addr = pointer(None)
                value.jit_addr = pointer(None)
                return value._getvalue()
            return function_type(types.int64), codegen

        typer.__name__ = typer.__qualname__ = "address_caller"
        caller = _CALLERS[signature] = intrinsic(typer)
        caller._biobullet_signature = signature
        _CALLERS_BY_ID[id(signature)] = (signature, caller)   # (the object made it: one entry per caller)
    return caller


class CompileClock:
    """Seconds numba spent compiling kernels (loading them from the on-disk cache excluded) inside a
    `compile_clock()` block; read `seconds` after the block."""

    seconds: float = 0.0


@contextmanager
def compile_clock():
    """`with compile_clock() as clock: …` — then `clock.seconds` is the time numba spent compiling inside the
    block (nested compiles of callees counted once), so that a run can report its compile apart from its own work.
    Always 0 without numba."""
    clock = CompileClock()
    if not ENABLED:
        yield clock
        return
    from numba.core import event

    listener = event.TimingListener()
    try:
        with event.install_listener("numba:compile", listener):
            yield clock
    finally:
        clock.seconds = listener.duration if listener.done else 0.0


__all__ = ["ENABLED", "CompileClock", "address_caller", "compile_clock", "compiled", "compiling", "direct_entry", "matched_entry",
           "entry_address", "function_address", "is_cached", "kernel_signature", "lazy",
           "resume_compiling", "twin", "uncompiled"]
