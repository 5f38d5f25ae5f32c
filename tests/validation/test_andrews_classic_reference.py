"""The hand-written Andrews solver (tests/andrews_classic.py) against published numbers and conservation laws.

Published: Hairer & Wanner II Sec. VII.7 / IVP test set "andrews" (consistent initial accelerations and
multipliers, reference solution at t = 0.03 computed with PSIDE at rtol = atol = 1e-14) and paper 000's digest
(dTheta/dbeta = -0.75, M(beta0) = 2.3202763313e-06, energy 1.43579639916 J).  The equations are also checked
against their own definitions by finite differences (Jacobian, curvature term, Lagrange velocity terms, spring
force = -dV/dgamma), so a typo in any one of them fails here.
"""

import numpy as np
import pytest




import andrews_classic as ac  # tests/andrews_classic.py


@pytest.fixture(scope="module")
def solution():
    # DOP853 at 1e-12: converged to < 1e-11 relative in q(0.03) (1e-13 and 1e-14 change nothing beyond that)
    return ac.solve_andrews(t_end=0.03, rtol=1e-12, atol=1e-12, t_eval=np.linspace(0.0, 0.03, 61))


def test_initial_accelerations_and_multipliers_match_the_test_set():
    qdd, lam = ac.initial_accelerations()
    # published to 30 digits; our 13x13 solve in double precision with condition ~1e6 -> 1e-10 relative
    np.testing.assert_allclose(qdd[:2], ac.REFERENCE_QDD0[:2], rtol=1e-10)
    np.testing.assert_allclose(qdd[2:], 0.0, atol=1e-8)       # vs |qdd| ~ 1e4
    np.testing.assert_allclose(lam[:2], ac.REFERENCE_LAMBDA0[:2], rtol=1e-10)
    np.testing.assert_allclose(lam[2:], 0.0, atol=1e-10)      # vs |lam| ~ 1e2
    assert qdd[0] == pytest.approx(14222.4439199541, rel=1e-12)
    assert qdd[1] == pytest.approx(-10666.83294, rel=1e-9)    # digest gives 10 digits


def test_initial_state_is_consistent():
    assert np.max(np.abs(ac.constraints(ac.Q0))) < 1e-16
    assert ac.spring_length(ac.Q0) == pytest.approx(0.0526725161, abs=1e-10)


def test_reference_solution_at_t_003(solution):
    _, y = solution
    # the reference itself is accurate to ~1e-10 relative in q (PSIDE, tol 1e-14 on an index-3 DAE; our
    # 1e-12/1e-13/1e-14 runs agree with each other to <1e-11 and with it to 3e-10): 1e-8 leaves margin
    np.testing.assert_allclose(y[-1, :7], ac.REFERENCE_Q, rtol=1e-8)
    # velocities: absolute error measured against the velocity scale |v| ~ 1.4e3 rad/s (reference ~5e-7 abs)
    np.testing.assert_allclose(y[-1, 7:], ac.REFERENCE_V, rtol=0, atol=1e-8 * np.max(np.abs(ac.REFERENCE_V)))


def test_omega_is_minus_phi_and_constraints_hold(solution):
    _, y = solution
    # symmetry of the two E-G-A / E-H-A branches: exact in the equations, only integration error remains
    assert np.max(np.abs(y[:, 3] + y[:, 5])) < 1e-10
    drift = max(np.max(np.abs(ac.constraints(r[:7]))) for r in y)
    assert drift < 1e-11          # metres; index-1 drift with tol 1e-12 stays ~1e-14
    vdrift = max(np.max(np.abs(ac.constraint_jacobian(r[:7]) @ r[7:])) for r in y)
    assert vdrift < 1e-8          # m/s, vs link-point speeds ~ 10 m/s


def test_energy_is_conserved(solution):
    _, y = solution
    e = np.array([ac.energy(r[:7], r[7:]) for r in y])
    assert e[0] == pytest.approx(1.43579639916, abs=1e-11)    # digest value has 12 significant digits
    # kinetic energy reaches ~ 1.4 J ... (motor work ~ 0.5 J); 1e-9 J = integration error budget at tol 1e-12
    assert np.max(np.abs(e - e[0])) < 1e-9


def test_generalized_mass_and_velocity_ratio_at_t0():
    t = ac.tangent(ac.Q0)
    assert np.max(np.abs(ac.constraint_jacobian(ac.Q0) @ t)) < 1e-15
    assert t[1] == pytest.approx(-0.75, abs=1e-12)            # dTheta/dbeta at beta0 (digest)
    assert ac.reduced_mass(ac.Q0) == pytest.approx(2.3202763313e-06, rel=1e-10)   # digest, 11 digits
    # consistent with the published initial acceleration: M_r beta'' = generalized force (motor + spring) at v=0
    gen_force = t @ ac.forces(ac.Q0, np.zeros(7))
    assert gen_force / ac.reduced_mass(ac.Q0) == pytest.approx(14222.4439199541, rel=1e-10)


# ---------------- self-consistency of the published equations (finite differences) -----------------------
RNG = np.random.default_rng(3)
STATES = [(RNG.uniform(-np.pi, np.pi, 7), RNG.uniform(-50, 50, 7)) for _ in range(4)]


def _fd(fun, x, h=1e-6):
    cols = [(fun(x + h * e) - fun(x - h * e)) / (2 * h) for e in np.eye(len(x))]
    return np.array(cols).T


@pytest.mark.parametrize("q,v", STATES)
def test_jacobian_is_the_derivative_of_g(q, v):
    # central differences, h=1e-6 on O(0.04 m) terms: truncation ~ 0.04*h^2 ~ 1e-14, rounding ~ 1e-11
    np.testing.assert_allclose(ac.constraint_jacobian(q), _fd(ac.constraints, q), atol=1e-9)


@pytest.mark.parametrize("q,v", STATES)
def test_curvature_is_the_time_derivative_of_g_times_v(q, v):
    h = 1e-6
    fd = (ac.constraint_jacobian(q + h * v) @ v - ac.constraint_jacobian(q - h * v) @ v) / (2 * h)
    # |term| ~ 0.04 * 50^2 ~ 1e2; central difference error ~ 1e2 * (50 h)^2 + rounding ~ 1e-6
    np.testing.assert_allclose(ac.constraint_curvature(q, v), fd, rtol=1e-7, atol=1e-6)


@pytest.mark.parametrize("q,v", STATES)
def test_velocity_terms_follow_from_the_mass_matrix(q, v):
    """Lagrange: f_vel = -(dM/dt) v + 1/2 d(v^T M v)/dq."""
    mdot = _fd(lambda x: ac.mass_matrix(x).ravel(), q) @ v
    dT = _fd(lambda x: np.array([v @ ac.mass_matrix(x) @ v]), q)[0]
    f_vel = ac.forces(q, v) - ac.forces(q, np.zeros(7))
    # terms ~ 1e-6 * 50^2 ~ 3e-3; FD error ~ 1e-10 relative to that
    np.testing.assert_allclose(f_vel, -mdot.reshape(7, 7) @ v + 0.5 * dT, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("q,v", STATES)
def test_spring_force_is_minus_the_potential_gradient(q, v):
    pot = lambda x: np.array([0.5 * ac.C0 * (ac.spring_length(x) - ac.L0) ** 2])
    f_static = ac.forces(q, np.zeros(7)) - np.array([ac.MOM, 0, 0, 0, 0, 0, 0])
    np.testing.assert_allclose(f_static, -_fd(pot, q)[0], rtol=1e-7, atol=1e-9)
