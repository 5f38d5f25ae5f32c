"""CLI habits found by the second unseen-input probe: Ctrl-C during `simulate` keeps the partial CSV and exits
130 (it was 'internal error: SystemError' when the signal arrived inside the compiled integrator); a `view` port
beyond 65535 is argparse's one-line error (the server's bind() raised OverflowError in its event loop and hung)."""
from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import biobullet

PLUGIN = str(Path(biobullet.__file__).parent.parent)
ARM26 = Path(biobullet.__file__).parent / "data" / "opensim" / "arm26.osim"


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to a child process")
def test_ctrl_c_during_simulate_keeps_the_partial_csv(tmp_path) -> None:
    """SIGINT once the progress bar shows simulated time (the compiled DOP853 segment is running): exit 130,
    'interrupted' naming the partial CSV, no internal error; the partial CSV's states are arm26's: the rows hold
    finite q, v from t = 0 on, with the file's initial state (zero) in the first row."""
    out = tmp_path / "run.csv"
    child = subprocess.Popen(
        [sys.executable, "-m", "biobullet", "simulate", str(ARM26), "--t-end", "1e5", "--rtol", "1e-12",
         "--atol", "1e-12", "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": PLUGIN, "BIOBULLET_DEBUG": "0"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))   # a background shell ignores SIGINT
    seen, deadline = b"", time.monotonic() + 240   # the first run compiles the kernels
    os.set_blocking(child.stderr.fileno(), False)
    while b"t = " not in seen and child.poll() is None and time.monotonic() < deadline:
        seen += child.stderr.read() or b""
        time.sleep(0.1)
    time.sleep(1.0)   # well inside the integration
    child.send_signal(signal.SIGINT)
    os.set_blocking(child.stderr.fileno(), True)
    seen += child.communicate(timeout=120)[1]
    message = seen.decode(errors="replace")
    assert child.returncode == 130, message[-600:]
    assert "internal error" not in message and "Traceback" not in message
    partial = Path(str(out) + ".partial.csv")
    assert f"interrupted; partial trajectory written to {partial}" in message
    assert not out.exists()
    table = np.loadtxt(partial, delimiter=",", skiprows=1, ndmin=2)
    assert table.shape[0] >= 2 and table.shape[1] == 5 and np.all(np.isfinite(table))
    np.testing.assert_array_equal(table[0], 0.0)
    assert np.all(np.diff(table[:, 0]) > 0)


@pytest.mark.parametrize("port", ["0", "65536", "99999"])
def test_view_refuses_a_port_out_of_range(port, monkeypatch) -> None:
    from biobullet.cli import main
    from biobullet.render import viewer

    def no_server(*args, **kwargs):   # (the old parse let 99999 through to a server that hung)
        raise AssertionError("the port reached the server")
    monkeypatch.setattr(viewer, "serve", no_server)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as done:
        main(["view", str(ARM26), "--port", port])
    assert done.value.code == 2
    assert f"argument --port: must be in 1 … 65535, got '{port}'" in err.getvalue()
