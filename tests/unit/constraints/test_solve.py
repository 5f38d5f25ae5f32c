"""THE constrained solve (`constraints.solve`) against independent solutions.

(1) Random SPD mass matrices, Jacobians, forces and targets: every path (numpy range-space, compiled Schur
    kernel, null-space kernel compiled and numpy, least squares) gives the dense KKT solution of numpy.linalg.solve
    on the assembled [[M, Φ_xᵀ], [Φ_x, 0]] to 1e-10 relative; redundant rows raise a SolverError naming the rows
    (or give the minimum-norm accelerations with redundant="least_squares").
(2) A spatial closed chain (3 + 3 revolute joints closed by a point loop, random inertias; `closed_chains`) at
    assembled moving states: ẍ and λ equal Pinocchio's constraintDynamics (tests/loop_oracle.py) to 1e-8 relative.
(3) The corrector: Baumgarte (α, β) ↔ (kd, kp) = (2α, β²), and the target a* = −b − kd Φ̇ − kp Φ.
"""
import numpy as np
import pytest

from biobullet.constraints import solve
from biobullet.constraints.solve import Corrector, constrained_acceleration
from biobullet.core.errors import SolverError


def _problem(rng, n, m):
    a = rng.normal(size=(n, n))
    mass = a @ a.T + n * np.eye(n)
    return mass, rng.normal(size=n), rng.normal(size=n), rng.normal(size=(m, n)), rng.normal(size=m)


def _dense(mass, bias, tau, jac, target):
    n, m = len(bias), len(jac)
    kkt = np.block([[mass, -jac.T], [jac, np.zeros((m, m))]])   # M ẍ − Φ_xᵀλ = τ − h
    solution = np.linalg.solve(kkt, np.concatenate([tau - bias, target]))
    return solution[:n], solution[n:]


@pytest.mark.parametrize("n,m", [(4, 1), (7, 3), (12, 5)])
def test_paths_equal_the_dense_kkt_solution(n, m):
    rng = np.random.default_rng(n * 10 + m)
    mass, bias, tau, jac, _ = _problem(rng, n, m)
    x, xd = rng.normal(size=n), rng.normal(size=n)
    offset = rng.normal(size=m)
    corrector = Corrector.baumgarte(3.0, 5.0)
    phi, phi_dot = jac @ x - offset, jac @ xd
    target = corrector.target(phi, phi_dot, np.zeros(m))
    xdd_ref, lam_ref = _dense(mass, bias, tau, jac, target)
    scale = max(1.0, np.abs(xdd_ref).max(), np.abs(lam_ref).max())
    xdd, lam = constrained_acceleration(mass, bias, tau, jac, target)
    assert np.abs(xdd - xdd_ref).max() <= 1e-10 * scale and np.abs(lam - lam_ref).max() <= 1e-10 * scale
    xdd, lam = solve._least_squares(mass, jac, tau - bias, target)
    assert np.abs(xdd - xdd_ref).max() <= 1e-10 * scale and np.abs(lam - lam_ref).max() <= 1e-10 * scale
    xdd, lam = np.empty(n), np.empty(m)
    rows = solve.ConstraintRows(jac, phi, np.zeros(m), True, np.zeros(m), corrector.kp, corrector.kd)
    status = solve.schur_solve(mass, bias, tau, True, rows, xd, solve.PIVOT_CHECK, 0.0, xdd, lam)
    assert status == 0
    assert np.abs(xdd - xdd_ref).max() <= 1e-10 * scale and np.abs(lam - lam_ref).max() <= 1e-10 * scale
    const = solve.null_space_basis(jac, offset)
    out = np.empty(n + m)
    status = solve.null_space_kernel()(mass, bias, tau, const, np.array((x, xd)), corrector.kp, corrector.kd,
                                       np.inf, np.empty((2 * n - m + 1, n)), out)
    assert status == 0
    # the kernel returns τ_out = M ẍ + h = τ + Φ_xᵀλ and λ
    assert np.abs(out[:n] - (tau + jac.T @ lam_ref)).max() <= 1e-10 * scale * n
    assert np.abs(out[n:] - lam_ref).max() <= 1e-10 * scale


def test_redundant_rows_are_named_or_solved_in_least_squares():
    rng = np.random.default_rng(5)
    mass, bias, tau, jac, _ = _problem(rng, 6, 2)
    jac = np.vstack([jac, jac[0] + jac[1]])
    target = jac @ rng.normal(size=6)              # consistent: the rows agree
    with pytest.raises(SolverError, match="rank deficient.*left, right, sum"):
        constrained_acceleration(mass, bias, tau, jac, target, names=("left", "right", "sum"))
    xdd, _ = constrained_acceleration(mass, bias, tau, jac, target, redundant="least_squares")
    xdd_ref, _ = _dense(mass, bias, tau, jac[:2], target[:2])   # the same motion without the dependent row
    assert np.abs(xdd - xdd_ref).max() <= 1e-9 * max(1.0, np.abs(xdd_ref).max())


def test_velocity_projection_is_the_mass_weighted_closest_velocity():
    rng = np.random.default_rng(8)
    mass, _, _, jac, phi_t = _problem(rng, 5, 2)
    xd = rng.normal(size=5)
    projected = solve.velocity_projection(mass, jac, xd, phi_t)
    assert np.abs(jac @ projected + phi_t).max() <= 1e-12 * max(1.0, np.abs(xd).max())
    # optimality: M(ẋ − ẋ_in) lies in the row space of Φ_x (Lagrange condition)
    residual = mass @ (projected - xd)
    coefficients = np.linalg.lstsq(jac.T, residual, rcond=None)[0]
    assert np.abs(jac.T @ coefficients - residual).max() <= 1e-12 * max(1.0, np.abs(residual).max())


def test_corrector_gains():
    c = Corrector.baumgarte(2.0, 3.0)
    assert (c.kd, c.kp, c.alpha, c.beta) == (4.0, 9.0, 2.0, 3.0)
    assert np.allclose(c.target([1.0], [2.0], [0.5]), [-0.5 - 8.0 - 9.0])
    # step_end: −Φ(x + dt ẋ, t + dt)/dt² for a quadratic row Φ = x² − 1 (Taylor exact to second order)
    dt, x, xd = 1e-3, 0.9, 2.0
    e = Corrector.step_end(dt)
    assert (e.kd, e.kp, e.kb) == (1e3, 1e6, 0.5)
    predicted = (x + dt * xd) ** 2 - 1.0
    assert np.allclose(e.target([x * x - 1.0], [2 * x * xd], [2 * xd * xd]), [-predicted / dt ** 2], rtol=1e-12)
    with pytest.raises(SolverError, match="kp"):
        Corrector(kp=-1.0)


def test_closed_chain_matches_pinocchio_constraint_dynamics(tmp_path):
    pytest.importorskip("pinocchio")
    from biobullet.algorithms.vectorized import mass_matrix_and_bias
    from biobullet.constraints.assembly import assemble, assemble_velocities
    from biobullet.constraints.equations import constraint_set
    from loop_oracle import PinocchioLoopOracle
    from closed_chains import closed_chain
    model = closed_chain(tmp_path, 11, "point")
    oracle = PinocchioLoopOracle(model)
    cset = constraint_set(model)
    rng = np.random.default_rng(12)
    for _ in range(3):
        x, residual = assemble(model, rng.uniform(-0.3, 0.3, model.n_config))
        assert residual <= 1e-12
        xd = assemble_velocities(model, x, rng.normal(size=model.n_tangent))
        tau = rng.normal(size=model.n_tangent)
        expected, forces = oracle.accelerations(x, xd, tau)
        mass, bias = mass_matrix_and_bias(model, x, xd)
        phi, jac, phi_t, rate_bias = cset.all_terms(x, xd, 0.0)
        target = Corrector().target(phi, jac @ xd + phi_t, rate_bias)
        xdd, lam = constrained_acceleration(mass, bias, tau, jac, target)
        scale = np.abs(expected).max()
        assert np.abs(xdd - expected).max() <= 1e-8 * scale
        assert np.abs(lam - forces[0]).max() <= 1e-8 * max(1.0, np.abs(lam).max())
