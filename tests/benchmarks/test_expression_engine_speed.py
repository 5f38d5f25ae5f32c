"""The reference engine on the expression pendulum (j3 = 0.5·sin(j1) + 0.3·j2², tests/nonlinear_pendulum.py), 5 s at
rtol 1e-8: the compiled explicit right-hand side (the expression's instruction tape in `model.joint_jets`) against
the generic path (`simulate(..., compiled=False)`: lambdified SymPy jets per call), in one run (process CPU time,
best of 3 interleaved rounds; integration and trajectory post-processing). Prints the ratio and writes
out/benchmarks/expression_engine_speed.json. No wall-clock thresholds.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import biobullet
import numpy as np
from nonlinear_pendulum import write_pendulum

ROOT = Path(__file__).resolve().parents[2]


def test_expression_pendulum_compiled_against_generic(tmp_path, capsys):
    model = biobullet.load_model(write_pendulum(tmp_path))
    biobullet.simulate(model, 0.1, compiled=True, progress=False)   # compile (or load the cached kernels) first
    best = {True: np.inf, False: np.inf}
    finals = {}
    for _ in range(3):
        for compiled in (True, False):
            start = time.process_time()
            run = biobullet.simulate(model, 5.0, rtol=1e-8, atol=1e-10, compiled=compiled, progress=False)
            best[compiled] = min(best[compiled], time.process_time() - start)
            finals[compiled] = run.positions[-1]
    difference = float(np.abs(finals[True] - finals[False]).max())
    result = {"compiled_s": best[True], "generic_s": best[False], "ratio": best[False] / best[True],
              "final_state_difference": difference}
    with capsys.disabled():
        print(f"\nexpression pendulum, 5 s: compiled {best[True]:.3f} s, generic {best[False]:.3f} s "
              f"({result['ratio']:.1f}x), final states differ by {difference:.1e}")
    out = ROOT / "out" / "benchmarks"
    out.mkdir(parents=True, exist_ok=True)
    from biobullet.core.atomic import write_text
    write_text(out / "expression_engine_speed.json", json.dumps(result, indent=2))
    assert difference < 1e-6   # same trajectory to the integration tolerance
