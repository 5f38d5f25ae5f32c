"""Wall time of one 20-cycle prosthesis run (target ≤ 30 s on a 2-core machine); reported, not asserted."""
import time

from biobullet_studies import prosthesis


def test_prosthesis_20_cycles_wall_time(record_property):
    fast = prosthesis.build()
    started = time.perf_counter()
    run = prosthesis.simulate_cycles(fast, 20, details=False)
    wall = time.perf_counter() - started
    record_property("wall_time_s", wall)
    record_property("nfev", run["nfev"])
    print(f"prosthesis 20 cycles: {wall:.1f} s, {run['nfev']} RHS evaluations "
          f"({1e6 * wall / max(run['nfev'], 1):.0f} µs each)")
    assert run["t"][-1] == 20.0
