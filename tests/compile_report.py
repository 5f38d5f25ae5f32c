"""Where a test run's numba compile time goes, kernel by kernel (opt-in: `tests/conftest.py`).

`install_recorder(folder)` registers a numba event listener in this process that appends one JSON line per compile
to folder/compiles-<pid>.jsonl; `summary_lines(folder)` sums the files of every process by kernel.
`python tests/compile_report.py FOLDER [FOLDER_2]` prints the table (two folders: side by side, e.g. two commits).
Process CPU seconds, not wall: a shared machine stretches wall time, much less the CPU a compile takes.
"""
from __future__ import annotations

import collections
import glob
import json
import os
import sys
import time

REPORT_VARIABLE = "BIOBULLET_COMPILE_REPORT"


def _kernel_name(dispatcher) -> str:
    function = getattr(dispatcher, "py_func", None) or getattr(dispatcher, "_pyfunc", None)
    if function is None:
        return repr(dispatcher)
    return f"{function.__module__}.{function.__qualname__}".removeprefix("biobullet.")


def install_recorder(folder: str) -> None:
    """Record every numba compile of this process (dispatchers through numba's "numba:compile" event; C callables,
    `core.jit.function_address`, through numba's `CFunc._compile_uncached`) into folder/compiles-<pid>.jsonl. Nested compiles (the
    kernels a caller compiles while it is typed) are recorded each with its own line; `exclusive` leaves theirs out."""
    from numba.core import ccallback, event

    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"compiles-{os.getpid()}.jsonl")
    stack: list[list] = []   # [name, argument types, CPU at start, wall at start, CPU of nested compiles, wait]

    def start(name: str, arguments: str, wait: bool) -> None:
        stack.append([name, arguments, time.process_time(), time.perf_counter(), 0.0, wait])

    def end() -> None:
        name, arguments, cpu_start, wall_start, nested, wait = stack.pop()
        cpu = time.process_time() - cpu_start
        if stack:
            stack[-1][4] += cpu
        record = {"kernel": name, "arguments": arguments, "cpu": round(cpu, 4),
                  "exclusive": round(cpu - nested, 4), "wall": round(time.perf_counter() - wall_start, 4),
                  "wait": wait, "test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]}
        with open(path, "a") as handle:
            handle.write(json.dumps(record) + "\n")

    class Recorder(event.Listener):
        def on_start(self, ev) -> None:
            # `core.jit` announces its wait for another process's compile of a kernel with the same event, from
            # inside its compile lock: recorded as a wait, not a compile
            frame, wait = sys._getframe(1), False
            while frame is not None and not wait:
                wait = frame.f_code.co_name == "_compile_lock"
                frame = frame.f_back
            start(_kernel_name(ev.data["dispatcher"]), str(ev.data.get("args")), wait)

        def on_end(self, ev) -> None:
            end()

    event.register("numba:compile", Recorder())
    compile_cfunc = ccallback.CFunc._compile_uncached   # (`compile` loads from the cache or calls this)

    def compile_uncached(self):
        start(_kernel_name(self), str(self._sig), False)
        try:
            return compile_cfunc(self)
        finally:
            end()

    ccallback.CFunc._compile_uncached = compile_uncached


def totals(folder: str) -> tuple[dict, float, float]:
    """({kernel: [exclusive CPU s, compiles]}, CPU s of the outermost compiles, wall s waited) over the folder."""
    kernels: dict = collections.defaultdict(lambda: [0.0, 0])
    outermost = waited = 0.0
    for path in glob.glob(os.path.join(folder, "compiles-*.jsonl")):
        depth_cpu = []
        for line in open(path):
            record = json.loads(line)
            if record["wait"]:
                waited += record["wall"]
                continue
            entry = kernels[record["kernel"]]
            entry[0] += record["exclusive"]
            entry[1] += 1
            depth_cpu.append(record["exclusive"])
        outermost += sum(depth_cpu)
    return kernels, outermost, waited


def summary_lines(*folders: str, top: int = 25) -> list[str]:
    """The table: the `top` costliest kernels by exclusive compile CPU (one column pair per folder)."""
    data = [totals(folder) for folder in folders]
    lines = [f"compile report ({folder}): {outer:.1f} s of compile CPU in {sum(n for _, n in kernels.values())} "
             f"compiles; {waited:.1f} s waited for another process's compile" for folder, (kernels, outer, waited)
             in zip(folders, data)]
    names = set().union(*(kernels for kernels, _, _ in data))
    for name in sorted(names, key=lambda n: -max(kernels.get(n, (0.0,))[0] for kernels, _, _ in data))[:top]:
        cells = "".join(f"{kernels[name][0]:9.1f} s {kernels[name][1]:3d}×" if name in kernels else f"{'-':>16s}"
                        for kernels, _, _ in data)
        lines.append(f"  {name[:80]:80s}{cells}")
    return lines


if __name__ == "__main__":
    print("\n".join(summary_lines(*sys.argv[1:], top=60)))
