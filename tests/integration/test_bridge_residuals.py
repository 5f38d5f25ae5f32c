"""Andrews' squeezer (3 planar loops, 1 DOF) on the PyBullet bridge: loop residuals and convergence of β.

dt = 1e-5 s is Andrews' own step (see scenarios/bridge_accuracy.py): the crank reaches ~1.4e3 rad/s, so a step
turns it by ≤ 0.014 rad. The loops are closed by our constraint forces (native_loops=False, the default).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pybullet")

import biobullet  # noqa: E402
from biobullet.bridge import Bridge  # noqa: E402
from biobullet.integrate import simulate  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ANDREWS = ROOT / "urdf" / "andrews_squeezer.urdf"
DT = 1.0e-5


@pytest.fixture(scope="module")
def andrews():
    return biobullet.load_model(ANDREWS)


def _run(model, dt: float, t_end: float) -> tuple[float, float, np.ndarray]:
    """(β at t_end, max over all steps of max |Φ|, every row's max |Φ|) of a bridge run from <initial>."""
    n_steps = int(round(t_end / dt))
    worst_rows = np.zeros(0)
    with Bridge(model, dt=dt) as bridge:
        assert bridge.constraints.n == 6 and not bridge.native_loops   # 3 planar loops × 2 rows, our forces
        worst_rows = np.zeros(bridge.constraints.n)
        for _ in range(n_steps):
            bridge.step()
            _, x, _ = bridge.state()
            worst_rows = np.maximum(worst_rows, np.abs(bridge.constraints.residual(x, bridge.time)))
        beta = float(bridge.generalized_state()[1][0])
    return beta, float(worst_rows.max()), worst_rows


def test_loop_residuals_over_the_benchmark_horizon(andrews):
    """Every loop row |Φ| ≤ 1e-6 m after every one of the 3000 steps of the 0.03 s benchmark (β turns ~2.5 times:
    16 rad); 1e-6 m is 0.005 % of the smallest link (0.02 m). The Baumgarte gains are dead-beat for the step,
    so the residual is the O(dt²) curvature error of one step, not an accumulated drift."""
    beta, worst, rows = _run(andrews, DT, 0.03)
    print(f"\nAndrews on the bridge, dt = {DT:g} s, 0.03 s: β = {beta:.4f} rad, max |Φ| per row = {rows}")
    assert worst <= 1e-6, rows
    # the crank did turn as in the benchmark: β(0.03) = 15.81 rad (Hairer & Wanner), first-order error ~1e-3
    assert beta == pytest.approx(15.81, abs=0.05)


def test_beta_converges_to_the_reference_engine(andrews):
    """β(t = 5 ms) on the bridge vs the reference engine (reduced formulation, DOP853, rtol 1e-10, error ~1e-9
    rad, far below the bridge's): the error halves with dt — PyBullet's semi-implicit Euler is first order.
    Observed when written: dt 4e-5, 2e-5, 1e-5 s → 3.0e-3, 1.5e-3, 7.5e-4 rad (orders 1.00, 1.00)."""
    t_end = 0.005
    reference = simulate(andrews, t_end, formulation="reduced", method="DOP853", rtol=1e-10, atol=1e-12,
                         t_eval=[0.0, t_end], progress=False)
    beta_ref = float(reference.q[-1][0])
    steps = (4e-5, 2e-5, 1e-5)
    errors, residuals = [], []
    for dt in steps:
        beta, worst, _ = _run(andrews, dt, t_end)
        errors.append(abs(beta - beta_ref))
        residuals.append(worst)
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    table = "\n".join(f"{dt:8.1e}  {e:10.3e}  {'' if k == 0 else f'{orders[k - 1]:.2f}'}  {r:9.2e}"
                      for k, (dt, e, r) in enumerate(zip(steps, errors, residuals)))
    print(f"\nβ(5 ms) bridge vs reference ({beta_ref:.6f} rad)\n      dt       error  order   max|Φ|\n" + table)
    assert np.all(orders > 0.9) and np.all(orders < 1.2), table
    assert errors[-1] < 1e-3, table
    assert max(residuals) <= 1e-6, table
