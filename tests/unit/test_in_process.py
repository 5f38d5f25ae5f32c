"""tests/in_process.py runs a command or a script in the test process as its own process would run it: the exit code,
standard output and standard error of `python -m biobullet ARGV` (and of `python SCRIPT` / `python -c CODE`) equal
the real subprocess's, warnings shown as a user sees them, and nothing the command changes leaks into the tests
after it. The subprocess is the oracle here."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import in_process

PLUGIN = Path(__file__).resolve().parents[2] / "plugin"
#: a pendulum whose gravity is written in mm/s² (one UnitWarning on load) and whose file says nothing else odd
PENDULUM = """<robot name="p">
  <link name="base"/>
  <link name="arm"><inertial><origin xyz="0 0 -0.5"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/></joint>
  <biobullet version="1"><gravity xyz="0 0 -9810"/></biobullet>
</robot>
"""


def _process(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(PLUGIN))
    env.pop("BIOBULLET_DEBUG", None)
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


@pytest.mark.parametrize("argv", [
    ("info", "p.urdf"),                       # a result on stdout and a unit warning on stderr
    ("--quiet", "info", "p.urdf", "--json"),  # --quiet drops the warning
    ("info", "absent.urdf"),                  # a one-line error, exit 2
    ("info",),                                # argparse's usage error (SystemExit 2)
    ("simulate", "--help"),                   # help wrapped to a pipe's 80 columns (SystemExit 0)
])
def test_the_cli_in_process_prints_and_returns_what_its_process_does(argv, tmp_path):
    (tmp_path / "p.urdf").write_text(PENDULUM)
    real = _process("-m", "biobullet", *argv, cwd=tmp_path)
    level, handlers, formatter = (logging.getLogger("biobullet").level, logging.getLogger("biobullet").handlers[:],
                                  warnings.formatwarning)
    here = in_process.cli(*argv, cwd=tmp_path, env={"BIOBULLET_DEBUG": None})
    assert (here.returncode, here.stdout, here.stderr) == (real.returncode, real.stdout, real.stderr)
    # what the command set for its own run is put back
    assert logging.getLogger("biobullet").level == level and logging.getLogger("biobullet").handlers == handlers
    assert warnings.formatwarning is formatter and os.getcwd() != str(tmp_path)


SCRIPT = """import sys, warnings
print("argv", sys.argv[1:], __name__)
warnings.warn("shown once")
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""


@pytest.mark.parametrize("status", ["0", "3"])
def test_a_script_in_process_prints_and_returns_what_its_process_does(status, tmp_path):
    path = tmp_path / "s.py"
    path.write_text(SCRIPT)
    real = _process(str(path), status, cwd=tmp_path)
    here = in_process.script(path, status, cwd=tmp_path)
    assert (here.returncode, here.stdout, here.stderr) == (real.returncode, real.stdout, real.stderr)
    assert here.returncode == int(status) and "UserWarning: shown once" in here.stderr


def test_code_that_raises_exits_1_with_its_traceback(tmp_path):
    done = in_process.source("import os\nraise ValueError('no')\n", "snippet.md:3", cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.splitlines()[-1] == "ValueError: no"
    assert 'File "snippet.md:3", line 2' in done.stderr
