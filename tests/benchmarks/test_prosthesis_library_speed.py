"""Prosthesis, 20 gait cycles in one run: the library model (urdf/prosthesis_fourbar.urdf with its study elements,
`biobullet.simulate`) on the compiled right-hand side — the study elements through their `compiled_kernel`
hooks — against the same run on the generic path and against the study's hand-written model
(`FastProsthesis` with its numba twin, `biobullet_studies.prosthesis.simulate_cycles`), all at the study's
tolerance (LSODA, rtol 1e-6, atol 1e-8; the library with error control on its integrated state, as the
hand-written model).

Also per call: the library's compiled right-hand side, the hand-written kernel and the generic path at the same
states; and where the library run's time goes (right-hand sides, the contact interval log's samples, the rest of
the stepping). Times are reported, not asserted (loaded machine); the runs must finish and reach their end time.
The generic library run is shorter by default (`PROSTHESIS_GENERIC_CYCLES`, 2: its 20 cycles take ~20 min on
the shared machine); `PROSTHESIS_CYCLES=2` shortens the others.
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
GENERIC_CYCLES = float(os.environ.get("PROSTHESIS_GENERIC_CYCLES", "2"))
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


def _library_run(model, compiled: bool, cycles: float) -> dict:
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
        run = biobullet.simulate(model, cycles, method="LSODA", rtol=RTOL, atol=ATOL, compiled=compiled,
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
    generic_system = System(model, "reduced", {"compiled": False})
    assert compiled_system._compiled is not None
    states = [(float(t), np.concatenate([q, v, [0.0, 0.0]])) for t, q, v in zip(warm.t[1:], warm.q[1:], warm.v[1:])]
    per_call = {
        "library compiled": _per_call(lambda t, y: compiled_system._compiled(t, y), states),
        "hand-written kernel": _per_call(lambda t, y: fast.rhs(t, y[:4]), states),
        "library generic": _per_call(generic_system._checked_rhs, states, repeat=10),
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
    library = _library_run(model, True, CYCLES)
    generic = _library_run(model, False, min(GENERIC_CYCLES, CYCLES))
    for label, result in (("library compiled", library), ("library generic", generic)):
        meta = result["run"].meta
        rest = result["wall"] - result["rhs"] - result["observer"]
        print(f"{result['cycles']:g} cycles, {label}: {result['wall']:.1f} s "
              f"({result['wall'] / hand_wall * CYCLES / result['cycles']:.0f}× hand-written per cycle), "
              f"{meta['nfev']} RHS calls, {meta['steps']} steps: right-hand sides {result['rhs']:.1f} s, contact "
              f"interval log {result['observer']:.1f} s, rest (events, stepping, output) {rest:.1f} s")
        record_property(f"wall_time_s_{label.replace(' ', '_')}", result["wall"])
        assert result["run"].t[-1] == result["cycles"]
    n = len(generic["run"].t)
    knee = [library["run"].q[:, 0], generic["run"].q[:, 0], hand["y"][:, 0]]
    print(f"max |Δ knee_A|: library compiled vs generic (first {generic['cycles']:g} cycles) "
          f"{np.abs(knee[0][:n] - knee[1]).max():.1e} rad, library compiled vs hand-written "
          f"{np.abs(knee[0] - knee[2]).max():.1e} rad")
    print(f"ratio library compiled / hand-written: {library['wall'] / hand_wall:.0f}×; generic / compiled per "
          f"cycle (first {generic['cycles']:g}): "
          f"{generic['wall'] / (library['wall'] * generic['cycles'] / CYCLES):.1f}× (approximate: cycles differ)")
