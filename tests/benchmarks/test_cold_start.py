"""Cold start (issue 23): the first `biobullet simulate urdf/MODEL.urdf --t-end 1` on an empty numba cache, for an
explicit map (the coupled chain) and a loop map (the four-bar knee).

Runs the CLI in a subprocess with `NUMBA_CACHE_DIR` an empty folder and a `numba:compile` event listener, then
checks what compiled: at most one line announced a compile, the run went by the kernels' uncompiled forms (the
CLI's cold-start rule, `CompiledReducedRHS.python_start`), no right-hand side, loop solve or stepper compiled, no
kernel of a feature the model lacks (tree kinematics, springs, contact laws, plug-in callers, the expression-tape
interpreter, joint forces) compiled, and every kernel compiled with one signature. The CPU time of the command is
printed, not asserted (the machine is shared; the figure and its history are in docs/speed.md "Cold start")."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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

COMPILED_LATER = ("rhs_py", "_newton_solve_py", "_dop853_segment_py", "_loop_positions_py",
                  "_loop_states_py")
ABSENT = ("_tree_kinematics_kernel_py", "_spring_forces_py", "_spring_kernel_py", "_normal_force_py",
          "_friction_coefficient_py", "_plugin_forces_py", "_tape_jets", "_joint_forces_py")


@pytest.mark.parametrize("name", ["coupled_chain", "fourbar_knee"])
def test_cold_start_compiles_no_right_hand_side(tmp_path: Path, capsys, name: str) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "PYTHONPATH": str(ROOT / "plugin")}
    done = subprocess.run([sys.executable, "-c", PROBE, "simulate", str(ROOT / "urdf" / f"{name}.urdf"),
                           "--t-end", "1", "--out", str(tmp_path / "out")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr
    line = next(text for text in done.stdout.splitlines() if text.startswith("COLD-START "))
    report = json.loads(line.removeprefix("COLD-START "))
    assert report["status"] == 0
    assert done.stderr.count("compiling numerical kernels (first run only") <= 1, done.stderr
    names = [name for name, _ in report["compiled"]]
    assert not [name for name in names if name.startswith(ABSENT)], names
    assert len(names) == len(set(names)), names   # one specialisation per kernel
    # the CLI's cold-start rule (`engine.PYTHON_START_SECONDS`): the 1 s run ends by Python, so neither its
    # right-hand side nor the loop solve, the stepper or the trajectory's passes compile
    assert not [name for name in names if name.startswith(COMPILED_LATER)], names
    assert "calls by its uncompiled form" in done.stderr, done.stderr
    with capsys.disabled():
        print(f"\ncold start of simulate {name} --t-end 1: {report['cpu']:.1f} s CPU, "
              f"{len(names)} kernels compiled: {', '.join(names)}")
