"""Prosthesis, 20 gait cycles in one run: the library model (urdf/prosthesis_fourbar.urdf with its study elements,
`biobullet.simulate`) on the compiled right-hand side — the study elements through their `compiled_kernel`
hooks — against the study's hand-written model
(`FastProsthesis` on its kernel, `biobullet_studies.prosthesis.simulate_cycles`), all at the study's
tolerance (LSODA, rtol 1e-6, atol 1e-8; the library with error control on its integrated state, as the
hand-written model).

Also per call: the library's compiled right-hand side and the hand-written kernel at the same states; and where
the library run's time goes (right-hand sides, the contact interval log's samples, the rest of the stepping).
Times are reported, not asserted (loaded machine); the runs must finish and reach their end time.
`PROSTHESIS_CYCLES=2` shortens them.
"""
from __future__ import annotations

import os
import time

import numpy as np

import biobullet
from biobullet.contact.element import Contact
from biobullet.integrate.engine import System
from biobullet_studies import prosthesis
from biobullet_studies.common import bundled_model

CYCLES = float(os.environ.get("PROSTHESIS_CYCLES", "20"))
RTOL, ATOL = prosthesis.RTOL, prosthesis.ATOL


def _per_call(function, states, repeat: int = 200) -> float:
    """Median wall time of one call (µs) over the states."""
    times = []
    for t, y in states:
        function(t, y)
        started = time.perf_counter()
        for _ in range(repeat):
            function(t, y)
        times.append((time.perf_counter() - started) / repeat * 1e6)
    return float(np.median(times))


def _library_run(model, cycles: float) -> dict:
    """One library run with its time split: right-hand sides, the contact interval log (`observe_step`), rest."""
    spent = {"rhs": 0.0, "observer": 0.0}
    rhs, observe = System.rhs, Contact.observe_step

    def timed_rhs(self, t, y):
        started = time.perf_counter()
        try:
            return rhs(self, t, y)
        finally:
            spent["rhs"] += time.perf_counter() - started

    def timed_observe(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return observe(self, *args, **kwargs)
        finally:
            spent["observer"] += time.perf_counter() - started

    System.rhs, Contact.observe_step = timed_rhs, timed_observe
    try:
        started = time.perf_counter()
        run = biobullet.simulate(model, cycles, method="LSODA", rtol=RTOL, atol=ATOL,
                                 error_control="state", progress=True,
                                 t_eval=np.linspace(0.0, cycles, int(cycles * 200) + 1))
        wall = time.perf_counter() - started
    finally:
        System.rhs, Contact.observe_step = rhs, observe
    return {"run": run, "wall": wall, "cycles": cycles, **spent}


def test_prosthesis_library_vs_hand_written(record_property):
    model = biobullet.load_model(bundled_model(prosthesis.MODEL))
    # per call, at states of a short run (the compiled kernels are compiled / loaded first)
    warm = biobullet.simulate(model, 0.3, method="LSODA", rtol=RTOL, atol=ATOL, error_control="state",
                              progress=False, t_eval=np.linspace(0.0, 0.3, 7))
    fast = prosthesis.build()
    prosthesis.simulate_cycles(fast, 0.1, details=False)
    compiled_system = System(model, "reduced")
    assert compiled_system._compiled is not None
    states = [(float(t), np.concatenate([q, v, [0.0, 0.0]])) for t, q, v in zip(warm.t[1:], warm.q[1:], warm.v[1:])]
    per_call = {
        "library compiled": _per_call(lambda t, y: compiled_system._compiled(t, y), states),
        "hand-written kernel": _per_call(lambda t, y: fast.rhs(t, y[:4]), states),
    }
    for label, value in per_call.items():
        print(f"per call, {label}: {value:.1f} µs")
        record_property(f"per_call_us_{label.replace(' ', '_')}", value)

    started = time.perf_counter()
    hand = prosthesis.simulate_cycles(prosthesis.build(), CYCLES, details=False)
    hand_wall = time.perf_counter() - started
    print(f"{CYCLES:g} cycles, hand-written (FastProsthesis, compiled): {hand_wall:.1f} s, {hand['nfev']} RHS calls",
          flush=True)
    record_property("wall_time_s_hand_written", hand_wall)
    library = _library_run(model, CYCLES)
    meta = library["run"].meta
    rest = library["wall"] - library["rhs"] - library["observer"]
    print(f"{CYCLES:g} cycles, library compiled: {library['wall']:.1f} s, {meta['nfev']} RHS calls, {meta['steps']} "
          f"steps: right-hand sides {library['rhs']:.1f} s, contact interval log {library['observer']:.1f} s, rest "
          f"(events, stepping, output) {rest:.1f} s")
    record_property("wall_time_s_library_compiled", library["wall"])
    assert library["run"].t[-1] == CYCLES
    knee = [library["run"].q[:, 0], hand["y"][:, 0]]
    print(f"max |Δ knee_A|: library compiled vs hand-written {np.abs(knee[0] - knee[1]).max():.1e} rad")
    print(f"ratio library compiled / hand-written: {library['wall'] / hand_wall:.0f}×")
