"""Benchmark: Andrews' squeezer, hand-written special-purpose solver vs the biobullet reference engine.

Not in the default test run (``make bench``).  Speed is reported as a ratio measured in one run, never asserted
against wall-clock thresholds; accuracy is asserted against the IVP test-set reference at t = 0.03.
The special-purpose solver lives in tests/andrews_classic.py (also used by the validation tests).
"""
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]




import andrews_classic as ac  # tests/andrews_classic.py
RTOL = ATOL = 1e-10


def _timed(fun, repeat=3):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fun()
        best = min(best, time.perf_counter() - t0)
    return best, out


def test_classic_solver_speed_and_accuracy():
    wall, (t, y) = _timed(lambda: ac.solve_andrews(t_end=0.03, rtol=RTOL, atol=ATOL))
    err = np.max(np.abs(y[-1, :7] - ac.REFERENCE_Q) / np.abs(ac.REFERENCE_Q))
    print(f"\n[andrews classic] DOP853 rtol=atol={RTOL:g}: {len(t) - 1} steps, {wall * 1e3:.1f} ms, "
          f"max rel err q(0.03) = {err:.2e}")
    assert err < 1e-8   # converged accuracy at this tolerance is ~7e-10 (measured)


def test_library_vs_classic_speed_ratio():
    import biobullet
    model = biobullet.load_model(ROOT / "urdf" / "andrews_squeezer.urdf")
    wall_c, _ = _timed(lambda: ac.solve_andrews(t_end=0.03, rtol=RTOL, atol=ATOL))
    wall_l, traj = _timed(lambda: biobullet.simulate(model, 0.03, rtol=RTOL, atol=ATOL, t_eval=[0.03],
                                                     progress=False), repeat=1)
    names = list(traj.joint_names)
    q_end = np.array([traj.positions[-1][names.index(n)] for n in ac.COORDINATE_NAMES])
    err = np.max(np.abs(q_end - ac.REFERENCE_Q) / np.abs(ac.REFERENCE_Q))
    print(f"\n[andrews] library {wall_l * 1e3:.1f} ms vs classic {wall_c * 1e3:.1f} ms: "
          f"ratio {wall_l / wall_c:.1f}x; library max rel err q(0.03) = {err:.2e}")
    assert err < 1e-7
