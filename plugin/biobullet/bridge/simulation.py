"""`simulate_bridge`: a whole run on the PyBullet bridge, same Trajectory / CSV as the reference engine.

(Named `simulation` rather than `simulate` so that `biobullet.bridge.simulate` stays the function the CLI calls.)
"""
from __future__ import annotations

from collections.abc import Mapping

import math
import os
import warnings

import numpy as np

from biobullet.core.errors import ModelError


def _steps(t_end: float, dt: float) -> int:
    for name, value in (("t_end", t_end), ("dt", dt)):
        if not isinstance(value, (int, float, np.floating, np.integer)) or not np.isfinite(value) or value <= 0:
            raise ModelError(f"argument {name!r} is {value!r}", attribute=name, expected="a positive number (s)")
    ratio = t_end / dt
    return max(1, int(round(ratio)) if abs(ratio - round(ratio)) < 1e-9 * max(1.0, ratio) else math.ceil(ratio))


def simulate_bridge(model, t_end: float, dt: float | None = None, *, initial=None, out=None, progress=None,
                    client=None, excitations=None, activations=None, **bridge_options):
    """Step the whole `model` (joint functions, loops, force elements, contacts, flexible links: see `Bridge`) on
    PyBullet from t = 0 to t_end (s) with step dt (s); record every step.

    dt: None = the bridge's default (1 ms; with `<flexible>` links ¼ of PyBullet's explicit stability limit
    2/ω_max of the segmented model, capped at 1 ms). initial: (q0, v0) generalized state or a {name: value}
    mapping (default: the model's `<initial>`). out: optional output file, written atomically: .npz by its suffix
    (`Trajectory.to_npz`), else CSV (`t`, joint names, `<name>_dot`). progress: as the reference engine's
    (`biobullet.simulate`): None = a tqdm bar on stderr once a run takes > 2 s, True = always, False = never.
    Further keyword arguments go to `Bridge` (segments, shear, baumgarte, ground_body, ...). If t_end is not a
    multiple of dt the run ends at the first step past t_end. The trajectory's joints are the segmented model's
    for a model with flexible links. excitations: the muscles enter the dynamics (`Bridge.set_excitations`) with
    these constant excitations — a number for every muscle or a mapping by name; activations: their initial
    activations (default: each muscle's default_activation, docs/muscles.md). Excitations that vary (the
    reference engine's functions of t, a controller) are a ModelError: set them each step in your own loop.
    """
    from biobullet.bridge.bridge import Bridge
    if model.nv == 0:
        from biobullet.integrate.engine import nothing_to_simulate
        raise nothing_to_simulate(model)
    if dt is not None:
        _steps(t_end, dt)
    if activations is not None and excitations is None:   # (were ignored, as in the reference engine before)
        raise ModelError("initial activations given, but no excitations: the muscles are off in this run",
                         argument="activations", expected="excitations= too (docs/muscles.md), or no activations")
    from biobullet.bridge.lifecycle import DivergenceError, check_divergence
    with Bridge(model, client, dt=dt, record=True, initial=initial, **bridge_options) as bridge:
        n_steps = _steps(t_end, bridge.dt)
        if excitations is not None:
            from biobullet.muscles.api import names
            if callable(excitations) or (isinstance(excitations, Mapping)
                                         and any(callable(value) for value in excitations.values())):
                # (were "not a number": the reference engine's functions of t and controllers are not stepped here)
                raise ModelError("simulate_bridge takes constant excitations, not functions or a controller",
                                 file=model.file, argument="excitations",
                                 expected="numbers in [0, 1]; to vary them, call bridge.set_excitations(...) before "
                                          "each bridge.step() in your own loop")
            by_name = dict(excitations) if isinstance(excitations, Mapping) else dict.fromkeys(names(model),
                                                                                              excitations)
            bridge.set_excitations(activations, **by_name)
        from biobullet.integrate.stepper import Progress   # the reference engine's bar: shown once a run takes > 2 s
        bar = Progress(0.0, n_steps * bridge.dt, progress, f"pybullet {model.name}")
        try:
            for k in range(n_steps):
                bridge.step()
                check_divergence(bridge, *bridge.samples[-1])  # non-finite or runaway: stop, say why
                if k % 100 == 99 or k == n_steps - 1:
                    bar((k + 1) * bridge.dt)
        except BaseException as exc:   # every failure keeps the steps before it (Ctrl-C and internal errors too)
            bar.close()
            if isinstance(exc, DivergenceError):
                del bridge.samples[-1]  # the diverged sample is not part of the trajectory
            path = None
            if out is not None and bridge.samples:
                try:
                    bridge.trajectory().to_csv(os.fspath(out) + ".partial.csv")
                    path = os.fspath(out) + ".partial.csv"
                except Exception:  # noqa: BLE001  (the run's own failure is the one to report)
                    pass
            if isinstance(exc, DivergenceError) and path is not None:
                raise DivergenceError(f"{exc}; partial trajectory written to {path}") from None
            if path is not None:
                warnings.warn(f"the run stopped at t = {bridge.time:.6g} s; partial trajectory written to {path}",
                              stacklevel=2)
            raise
        trajectory = bridge.trajectory()
    bar.close()
    if out is not None:   # as the reference engine: .npz by its suffix, else CSV (it wrote CSV text into x.npz)
        (trajectory.to_npz if os.fspath(out).lower().endswith(".npz") else trajectory.to_csv)(os.fspath(out))
    return trajectory
