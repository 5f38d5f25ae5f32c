"""The bridge's fast path (one kernel per step) gives the KKT solution, and skipping the velocity projection below
its tolerance costs no accuracy (moved here from the speed benchmark so it runs by default)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

import biobullet
from biobullet.bridge import Bridge

SHOULDER = Path(__file__).resolve().parents[2] / "urdf" / "shoulder_rhythm.urdf"
HORIZON = 0.5    # s, accuracy comparison (longer free falls of the 4-DOF arm diverge chaotically with dt)


def test_fast_path_is_the_kkt_solution_and_the_skipped_projection_costs_no_accuracy(capsys):
    """(1) At a moving state and a random τ, the fast kernel gives the KKT solution's
    τ + Φ_xᵀλ and λ. (2) 0.5 s of free fall with the projection at every step (projection_tolerance=0) and with
    the default tolerance: the same max |Φ| and a trajectory difference ≤ 1e-4 of what halving dt changes (the
    dead-beat Baumgarte term makes the velocity correction itself). (3) An inconsistent velocity (reset_tree) is
    still projected at once."""
    model = biobullet.load_model(SHOULDER)
    rng = np.random.default_rng(3)
    with Bridge(model, dt=1e-3) as bridge:
        for _ in range(50):
            bridge.step()
        _, x, xd = bridge.state()
        mass, bias = bridge.tree_mass_and_bias(x, xd)
        tau = rng.normal(size=model.n_tangent)
        jac, offset = bridge.linear
        phi, phi_dot = jac @ x - offset, jac @ xd
        target = -2.0 * bridge.alpha * phi_dot - bridge.beta ** 2 * phi
        n, m = model.n_tangent, len(jac)
        kkt = np.block([[mass, jac.T], [jac, np.zeros((m, m))]])   # dense KKT matrix, solved by LAPACK
        solution = np.linalg.solve(kkt, np.concatenate([tau - bias, target]))
        lam = -solution[model.n_tangent:]
        expected = np.concatenate([tau + jac.T @ lam, lam])
        scale = np.abs(expected).max()
        out = np.empty(bridge._out_size)
        assert bridge._kernels[2](mass, bias, tau, bridge._null, np.array((x, xd)), bridge.corrector.kp,
                                  bridge.corrector.kd, np.inf, bridge._null_work, out) == 0
        assert np.abs(out - expected).max() <= 1e-10 * scale
        # (3) inconsistent velocity → projected in the next step
        bridge.reset_tree(x, xd + 0.1)
        before = bridge.projections
        bridge.step()
        assert bridge.projections == before + 1
    runs = {}
    for dt, tolerance in ((1e-3, 0.0), (1e-3, None), (5e-4, None)):
        with Bridge(model, dt=dt, projection_tolerance=tolerance) as bridge:
            worst = 0.0
            for _ in range(int(round(HORIZON / dt))):
                bridge.step()
                worst = max(worst, max(abs(r) for r in bridge.constraint_residuals().values()))
            runs[dt, tolerance] = (worst, bridge.generalized_state()[1], bridge.projections)
    every, default, half = runs[1e-3, 0.0], runs[1e-3, None], runs[5e-4, None]
    projection_effect = np.abs(every[1] - default[1]).max()
    step_effect = np.abs(default[1] - half[1]).max()
    with capsys.disabled():
        print(f"\n{HORIZON:g} s free fall, dt = 1 ms: projection every step: max|Φ| = {every[0]:.2e} rad "
              f"({every[2]} write-backs); default tolerance: max|Φ| = {default[0]:.2e} rad ({default[2]} "
              f"write-backs); max |Δq| between the two = {projection_effect:.2e} rad; for scale, halving dt changes "
              f"q by {step_effect:.2e} rad")
    assert default[0] <= 1e-6 and every[0] <= 1e-6
    assert projection_effect <= 1e-4 * step_effect
