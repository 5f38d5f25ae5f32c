"""Demo point functions: cheap, real and deterministic (used by tests, benchmarks and as examples)."""
from __future__ import annotations

import math
import os
import time
from typing import Any, Mapping

from biobullet.sweep.schema import Param, point_function

#: If set (tests): the path of a file holding a number n; `sleep` with ``value ≥ n`` (or while the file is absent)
#: waits, checking every 20 ms, until the file allows it — a test stops a sweep at a known point, whatever the load.
HOLD_ENV = "BIOBULLET_SWEEP_HOLD"

#: longest wait for HOLD_ENV (s): a forgotten hold ends, the sweep goes on
HOLD_LIMIT = 120.0


@point_function(
    params={
        "mass": Param("float", minimum=1e-6, maximum=1e6, default=1.0, unit="kg"),
        "stiffness": Param("float", minimum=1e-6, maximum=1e9, unit="N/m"),
        "damping": Param("float", minimum=0.0, maximum=1e9, default=0.0, unit="N s/m"),
        "velocity": Param("float", minimum=1e-9, maximum=1e6, default=1.0, unit="m/s"),
        "cycles": Param("float", minimum=1.0, maximum=1000.0, default=6.0),
    },
    results=("peak_amplitude", "period", "damping_ratio", "frequency_hz"),
)
def damped_oscillator(params: Mapping[str, float]) -> dict[str, Any]:
    """Free vibration m x'' + c x' + k x = 0 from x = 0, x' = v: peak amplitude and measured period.

    The state is propagated with the exact discrete transition matrix expm(A dt), so samples are exact; the peak
    is refined by parabolic interpolation and the period measured from zero up-crossings. ``period`` is None
    when the motion does not oscillate (ζ ≥ 1).
    """
    import numpy as np
    from scipy.linalg import expm

    m, k, c, v0 = (float(params[name]) for name in ("mass", "stiffness", "damping", "velocity"))
    omega_n = math.sqrt(k / m)
    zeta = c / (2.0 * math.sqrt(k * m))
    period_n = 2.0 * math.pi / omega_n
    steps_per_period = 4000
    dt = period_n / steps_per_period
    n = int(math.ceil(float(params["cycles"]) * steps_per_period))
    transition = expm(np.array([[0.0, 1.0], [-k / m, -c / m]]) * dt)
    states = np.empty((n + 1, 2))
    states[0] = (0.0, v0)
    for i in range(n):
        states[i + 1] = transition @ states[i]
    x = states[:, 0]
    i_peak = int(np.argmax(np.abs(x[1:-1]))) + 1
    y0, y1, y2 = np.abs(x[i_peak - 1:i_peak + 2])
    denom = y0 - 2.0 * y1 + y2
    peak = float(y1 - 0.125 * (y2 - y0) ** 2 / denom) if denom != 0.0 else float(y1)
    up = np.nonzero((x[:-1] < 0.0) & (x[1:] >= 0.0))[0]
    period = None
    if up.size >= 2:
        crossings = (up + x[up] / (x[up] - x[up + 1])) * dt
        period = float(np.mean(np.diff(crossings)))
    return {"peak_amplitude": peak, "period": period, "damping_ratio": zeta,
            "frequency_hz": None if period is None else 1.0 / period}


@point_function(
    params={
        "duration": Param("float", minimum=0.0, maximum=600.0, default=0.1, unit="s"),
        "value": Param("float", default=0.0),
        "fail_above": Param("float", optional=True, doc="raise if value > fail_above"),
    },
    results=("value", "square", "duration"),
)
def sleep(params: Mapping[str, float]) -> dict[str, Any]:
    """Sleep ``duration`` seconds and return ``value`` and its square; raise if ``value > fail_above``."""
    value = float(params["value"])
    _hold(value)
    time.sleep(float(params["duration"]))
    limit = params.get("fail_above")
    if limit is not None and value > float(limit):
        raise ValueError(f"value {value:g} is above fail_above {float(limit):g} (requested failure)")
    return {"value": value, "square": value * value, "duration": float(params["duration"])}


def _hold(value: float) -> None:
    """Wait while the HOLD_ENV file (if the variable is set) is absent or holds a number ≤ ``value``."""
    path = os.environ.get(HOLD_ENV)
    deadline = time.monotonic() + HOLD_LIMIT
    while path and time.monotonic() < deadline:
        try:
            with open(path, encoding="utf-8") as handle:
                if value < float(handle.read()):
                    return
        except (OSError, ValueError):   # absent, or being written: wait
            pass
        time.sleep(0.02)


@point_function(
    params={
        "iterations": Param("int", minimum=1, maximum=10**7, default=100),
        "size": Param("int", minimum=1, maximum=10**7, default=200_000),
        "seed": Param("int", minimum=0, maximum=2**31 - 1, default=0),
    },
    results=("checksum",),
)
def busy(params: Mapping[str, float]) -> dict[str, Any]:
    """CPU-bound, single-threaded numpy work (element-wise maps, no BLAS): for scaling benchmarks."""
    import numpy as np

    x = np.random.default_rng(int(params["seed"])).random(int(params["size"]))
    for _ in range(int(params["iterations"])):
        x = np.sin(x) * 0.5 + np.sqrt(x + 1.0) * 0.25
    return {"checksum": float(np.sum(x))}
