"""Cost of the muscle stage in the engine's right-hand side: gait10dof18musc (18 Millard muscles, 10 DOF) with
excitations against the skeleton alone, both compiled right-hand sides timed alternately in one process (CPU
time), ratio printed (not asserted: speed is not a unit test)."""
from __future__ import annotations

import time
import warnings

import biobullet
from biobullet.integrate.engine import System


def _per_call(rhs, y, calls: int = 2000) -> float:
    start = time.process_time()
    for _ in range(calls):
        rhs(0.0, y)
    return (time.process_time() - start) / calls


def test_muscle_stage_cost(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = biobullet.load_model("gait10dof18musc")
    with_muscles = System(model, None, {"excitations": 0.2})
    skeleton = System(model, None, {})
    y_muscles, y_skeleton = with_muscles.initial_vector(None, 0.0), skeleton.initial_vector(None, 0.0)
    assert with_muscles._compiled is not None and with_muscles._compiled(0.0, y_muscles) is not None
    skeleton._compiled(0.0, y_skeleton)
    rows = []
    for _ in range(3):
        rows.append((_per_call(with_muscles._compiled, y_muscles), _per_call(skeleton._compiled, y_skeleton)))
    best_muscles, best_skeleton = min(r[0] for r in rows), min(r[1] for r in rows)
    with capsys.disabled():
        print(f"\ngait10dof18musc right-hand side: with 18 muscles {best_muscles * 1e6:.1f} µs, skeleton "
              f"{best_skeleton * 1e6:.1f} µs (ratio {best_muscles / best_skeleton:.1f}; "
              f"{(best_muscles - best_skeleton) / 18 * 1e6:.2f} µs per muscle)")
