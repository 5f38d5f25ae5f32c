"""Cold start (issue 23): the first `biobullet simulate urdf/coupled_chain.urdf --t-end 1` on an empty numba cache.

Runs the CLI in a subprocess with `NUMBA_CACHE_DIR` an empty folder and a `numba:compile` event listener, then
checks what compiled: one line announced the compile, the right-hand side ran uncompiled (the CLI's cold-start
rule), no kernel of a feature the model lacks (tree kinematics,
springs, contact laws, plug-in callers, the expression-tape interpreter, joint forces) compiled, and every kernel
compiled with one signature. The CPU time of the command is printed, not asserted (the machine is shared; the
figure and its history are in docs/speed.md "Cold start")."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = textwrap.dedent("""
    import json, resource, sys
    from numba.core import event
    compiled = []

    class Record(event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            function = ev.data["dispatcher"].py_func
            if function.__module__.startswith("biobullet"):
                compiled.append([function.__qualname__, str(ev.data["args"])])

    event.register("numba:compile", Record())
    from biobullet.cli import main
    status = main(sys.argv[1:])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print("COLD-START " + json.dumps({"status": status, "compiled": compiled,
                                       "cpu": usage.ru_utime + usage.ru_stime}))
""")

ABSENT = ("_tree_kinematics_kernel_py", "_spring_forces_py", "_spring_kernel_py", "_normal_force_py",
          "_friction_coefficient_py", "_plugin_forces_py", "_tape_jets", "_joint_forces_py")


def test_coupled_chain_cold_start_compiles_only_its_features(tmp_path: Path, capsys) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "PYTHONPATH": str(ROOT / "plugin")}
    done = subprocess.run([sys.executable, "-c", PROBE, "simulate", str(ROOT / "urdf" / "coupled_chain.urdf"),
                           "--t-end", "1", "--out", str(tmp_path / "out")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr
    line = next(text for text in done.stdout.splitlines() if text.startswith("COLD-START "))
    report = json.loads(line.removeprefix("COLD-START "))
    assert report["status"] == 0
    assert done.stderr.count("compiling numerical kernels (first run only") == 1, done.stderr
    names = [name for name, _ in report["compiled"]]
    assert not [name for name in names if name.startswith(ABSENT)], names
    assert len(names) == len(set(names)), names   # one specialisation per kernel
    # the CLI's cold-start rule (`engine.PYTHON_START_SECONDS`): the 1 s run ends before its right-hand side's
    # uncompiled calls take that much CPU, so that kernel is not compiled; the trajectory's kernels are
    assert not any(name.startswith("rhs_py") for name in names), names
    assert "calls by its uncompiled form" in done.stderr, done.stderr
    assert any(name.startswith("_tree_energies_py") for name in names), names
    with capsys.disabled():
        print(f"\ncold start of simulate coupled_chain --t-end 1: {report['cpu']:.1f} s CPU, "
              f"{len(names)} kernels compiled: {', '.join(names)}")
