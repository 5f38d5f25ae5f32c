"""Shared helpers of the hostile-input tests: a small two-link chain model and the CLI run in-process."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

from biobullet.cli import main

CHAIN = """<robot name="c">
  <link name="base"/>
  <link name="l1"><inertial><origin xyz="{com}"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l2"><inertial><mass value="0.5"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 1 0"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 -0.5"/>
    <axis xyz="0 1 0"/></joint>
  <biobullet>{extension}</biobullet>
</robot>
"""


def chain(tmp_path: Path, extension: str = "", com: str = "0 0 -0.25", name: str = "c.urdf") -> str:
    """The two-link chain with `extension` inside its `<biobullet>` block, written to `tmp_path / name`."""
    path = tmp_path / name
    path.write_text(CHAIN.format(extension=extension, com=com), encoding="utf-8")
    return str(path)


def run_cli(*argv: str) -> tuple[int, list[str]]:
    """`biobullet ARGV` in-process: (exit code, non-empty stderr lines)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    return code, [line for line in err.getvalue().splitlines() if line.strip()]


def one_error(*argv: str) -> str:
    """The one error line of a command that must exit 2 (argparse's usage lines may stand above it)."""
    code, lines = run_cli(*argv)
    assert code == 2, lines
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 1 and errors[0] == lines[-1] and not any("Traceback" == l[:9] for l in lines), lines
    return errors[0]
