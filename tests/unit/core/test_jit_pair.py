"""core.jit_pair: a kernel compiled without numba's reference-counting runtime reads and writes a borrowed record's
fields (the public calls' forward kernel, `pipeline.kernels.forward_kernel`, and the loop residual do).

numba's own StructRef field access goes through the runtime (`NRT_MemInfo_data_fast`): such a kernel failed to
compile ("NRT required but not enabled"); `core.jit_pair` registers the record's field access itself."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from biobullet.core import jit

PLUGIN = Path(__file__).resolve().parents[3] / "plugin"

KERNELS = """
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
RUN = """
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


@pytest.mark.skipif(not jit.ENABLED, reason="numba not installed or BIOBULLET_NUMBA=0")
def test_a_kernel_without_the_runtime_reads_and_writes_a_borrowed_record(tmp_path: Path) -> None:
    """Expected (by hand): count 7; 0.5 · ((0 + 1 + 2 + 3) + b[1, 2] = 6) = 6.0; c = 0.5 · a = 0, 0.5, 1, 1.5."""
    (tmp_path / "kernels.py").write_text(textwrap.dedent(KERNELS))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(PLUGIN)])}
    result = subprocess.run([sys.executable, "-c", RUN], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["7", "6.0", "0.0", "0.5", "1.0", "1.5"]
