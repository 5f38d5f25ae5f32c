"""Wall time of one 20-cycle prosthesis run, the compiled right-hand side (prosthesis_kernel.py) against its Python
form (`FastProsthesis(compiled=False)`), measured in one run at the study's tolerance; ratios reported, not asserted."""
import time

import numpy as np

from biobullet_studies import prosthesis


def test_prosthesis_20_cycles_compiled_vs_python(record_property):
    walls, runs = {}, {}
    prosthesis.simulate_cycles(prosthesis.build(), 0.1, details=False)   # compile / load the kernel first
    for compiled in (False, True):
        fast = prosthesis.build()
        fast.compiled = compiled
        started = time.perf_counter()
        runs[compiled] = prosthesis.simulate_cycles(fast, 20, details=False)
        walls[compiled] = time.perf_counter() - started
    for compiled, label in ((False, "python"), (True, "compiled")):
        record_property(f"wall_time_s_{label}", walls[compiled])
        print(f"prosthesis 20 cycles, {label}: {walls[compiled]:.1f} s ({runs[compiled]['wall_time']:.1f} s "
              f"integrating), {runs[compiled]['nfev']} RHS evaluations")
    print(f"speed-up: {walls[False] / walls[True]:.1f}× whole run, "
          f"{runs[False]['wall_time'] / runs[True]['wall_time']:.1f}× integration; "
          f"max |Δ knee| = {np.max(np.abs(runs[True]['knee'] - runs[False]['knee'])):.1e} rad")
    assert runs[True]["t"][-1] == 20.0
