"""Hand-written special-purpose solver for Andrews' squeezing mechanism (independent oracle).

The classic 7-coordinate formulation of Hairer & Wanner, *Solving Ordinary Differential Equations II*,
Sec. VII.7 (eq. 7.11 and the data that follow), also the IVP test set problem "andrews"
(Mazzia & Magherini, https://archimede.uniba.it/~testset/). Written from the published equations in plain
numpy; it must never import biobullet, because it is what biobullet is checked against.

Coordinates q = (beta, Theta, gamma, Phi, delta, Omega, epsilon): beta, gamma, delta, epsilon are absolute
angles of the ground-mounted bodies 1, 3, 5, 7; Theta, Phi, Omega are relative angles of bodies 2, 4, 6 with
respect to bodies 1, 5, 7.  Equations of motion (multiplier sign of the classic problem)

    M(q) q'' = f(q, q') - G(q)^T lam,      g(q) = 0  (6 equations, point E closed three times),

solved here in index-1 form  [M G^T; G 0] [q''; lam] = [f; -g_qq(q)(q', q')]  and integrated with scipy's
DOP853 as a first-order ODE in y = (q, q').

Also used by ``tests/benchmarks/test_andrews_classic.py`` (speed ratio of the library against this solver).
"""
from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

# ----------------------------------------------------------------------------------------------------------
# data (Hairer & Wanner II, Sec. VII.7; IVP test set "andrews")
M1, M2, M3, M4, M5, M6, M7 = 0.04325, 0.00365, 0.02373, 0.00706, 0.07050, 0.00706, 0.05498
I1, I2, I3, I4, I5, I6, I7 = 2.194e-6, 4.410e-7, 5.255e-6, 5.667e-7, 1.169e-5, 5.667e-7, 1.912e-5
XA, YA = -0.06934, -0.00227
XB, YB = -0.03635, 0.03273
XC, YC = 0.014, 0.072
D, DA, E, EA = 0.028, 0.0115, 0.02, 0.01421
RR, RA = 0.007, 0.00092
SS, SA, SB, SC, SD = 0.035, 0.01874, 0.01043, 0.018, 0.02
TA, TB = 0.02308, 0.00916
U, UA, UB = 0.04, 0.01228, 0.00449
ZF, ZT = 0.02, 0.04
FA = 0.01421
MOM = 0.033          # driving torque on body 1 [N m]
C0 = 4530.0          # spring stiffness [N/m]
L0 = 0.07785         # spring rest length [m]

COORDINATE_NAMES = ("beta", "theta", "gamma", "phi", "delta", "omega", "epsilon")

#: consistent initial positions (all initial velocities are zero)
Q0 = np.array([
    -0.0617138900142764496358948458001,
    0.0,
    0.455279819163070380255912382449,
    0.222668390165885884674473185609,
    0.487364979543842550225598953530,
    -0.222668390165885884674473185609,
    1.23054744454982119249735015568,
])

#: IVP test set reference solution at t = 0.03 (PSIDE, rtol = atol = 1e-14), positions then velocities
REFERENCE_T = 0.03
REFERENCE_Q = np.array([
    0.1581077119629904e+2, -0.1575637105984298e+2, 0.4082224013073101e-1, -0.5347301163226948e+0,
    0.5244099658805304e+0, 0.5347301163226948e+0, 0.1048080741042263e+1,
])
REFERENCE_V = np.array([
    0.1139920302151208e+4, -0.1424379294994111e+4, 0.1103291221937134e+2, 0.1929337464421385e+2,
    0.5735699284790808e+0, -0.1929337464421385e+2, 0.3231791658026955e+0,
])
#: published consistent accelerations and multipliers at t = 0 (test set initial values)
REFERENCE_QDD0 = np.array([14222.4439199541138705911625887, -10666.8329399655854029433719415, 0, 0, 0, 0, 0])
REFERENCE_LAMBDA0 = np.array([98.5668703962410896057654982170, -6.12268834425566265503114393122, 0, 0, 0, 0])


# ----------------------------------------------------------------------------------------------------------
# model functions
def mass_matrix(q):
    """Classic 7x7 mass matrix M(q)."""
    _, th, _, ph, _, om, _ = q
    m = np.zeros((7, 7))
    m[0, 0] = M1 * RA**2 + M2 * (RR**2 - 2 * DA * RR * np.cos(th) + DA**2) + I1 + I2
    m[0, 1] = m[1, 0] = M2 * (DA**2 - DA * RR * np.cos(th)) + I2
    m[1, 1] = M2 * DA**2 + I2
    m[2, 2] = M3 * (SA**2 + SB**2) + I3
    m[3, 3] = M4 * (E - EA) ** 2 + I4
    m[3, 4] = m[4, 3] = M4 * ((E - EA) ** 2 + ZT * (E - EA) * np.sin(ph)) + I4
    m[4, 4] = M4 * (ZT**2 + 2 * ZT * (E - EA) * np.sin(ph) + (E - EA) ** 2) + M5 * (TA**2 + TB**2) + I4 + I5
    m[5, 5] = M6 * (ZF - FA) ** 2 + I6
    m[5, 6] = m[6, 5] = M6 * ((ZF - FA) ** 2 - U * (ZF - FA) * np.sin(om)) + I6
    m[6, 6] = M6 * ((ZF - FA) ** 2 - 2 * U * (ZF - FA) * np.sin(om) + U**2) + M7 * (UA**2 + UB**2) + I6 + I7
    return m


def spring_point_d(q):
    """World position of D (spring end on body 3)."""
    ga = q[2]
    return np.array([XB + SD * np.cos(ga) + SC * np.sin(ga), YB + SD * np.sin(ga) - SC * np.cos(ga)])


def spring_length(q):
    dx, dy = spring_point_d(q) - (XC, YC)
    return float(np.hypot(dx, dy))


def forces(q, v):
    """Right-hand side f(q, q'): motor torque, spring, and the velocity-product (Coriolis) terms."""
    _, th, ga, ph, _, om, _ = q
    bep, thp, _, php, dep, omp, epp = v
    xd, yd = spring_point_d(q)
    lng = np.hypot(xd - XC, yd - YC)
    fac = -C0 * (lng - L0) / lng
    fx, fy = fac * (xd - XC), fac * (yd - YC)
    return np.array([
        MOM - M2 * DA * RR * thp * (thp + 2 * bep) * np.sin(th),
        M2 * DA * RR * bep**2 * np.sin(th),
        fx * (SC * np.cos(ga) - SD * np.sin(ga)) + fy * (SD * np.cos(ga) + SC * np.sin(ga)),
        M4 * ZT * (E - EA) * dep**2 * np.cos(ph),
        -M4 * ZT * (E - EA) * php * (php + 2 * dep) * np.cos(ph),
        -M6 * U * (ZF - FA) * epp**2 * np.cos(om),
        M6 * U * (ZF - FA) * omp * (omp + 2 * epp) * np.cos(om),
    ])


def constraints(q):
    """g(q): the three closures of point E (rows: body2=body3 x,y; body2=body4 x,y; body2=body6 x,y)."""
    be, th, ga, ph, de, om, ep = q
    ex = RR * np.cos(be) - D * np.cos(be + th)       # E as reached through bodies 1, 2 (O = origin)
    ey = RR * np.sin(be) - D * np.sin(be + th)
    return np.array([
        ex - SS * np.sin(ga) - XB,
        ey + SS * np.cos(ga) - YB,
        ex - E * np.sin(ph + de) - ZT * np.cos(de) - XA,
        ey + E * np.cos(ph + de) - ZT * np.sin(de) - YA,
        ex - ZF * np.cos(om + ep) - U * np.sin(ep) - XA,
        ey - ZF * np.sin(om + ep) + U * np.cos(ep) - YA,
    ])


def constraint_jacobian(q):
    """G(q) = dg/dq (6x7)."""
    be, th, ga, ph, de, om, ep = q
    sbt, cbt = np.sin(be + th), np.cos(be + th)
    spd, cpd = np.sin(ph + de), np.cos(ph + de)
    soe, coe = np.sin(om + ep), np.cos(om + ep)
    g = np.zeros((6, 7))
    g[0::2, 0] = -RR * np.sin(be) + D * sbt
    g[0::2, 1] = D * sbt
    g[1::2, 0] = RR * np.cos(be) - D * cbt
    g[1::2, 1] = -D * cbt
    g[0, 2] = -SS * np.cos(ga)
    g[1, 2] = -SS * np.sin(ga)
    g[2, 3] = -E * cpd
    g[2, 4] = -E * cpd + ZT * np.sin(de)
    g[3, 3] = -E * spd
    g[3, 4] = -E * spd - ZT * np.cos(de)
    g[4, 5] = ZF * soe
    g[4, 6] = ZF * soe - U * np.cos(ep)
    g[5, 5] = -ZF * coe
    g[5, 6] = -ZF * coe - U * np.sin(ep)
    return g


def constraint_curvature(q, v):
    """g_qq(q)(q', q') = d/dt(G q') - G q'' : the velocity-product part of the constraint acceleration."""
    be, th, ga, ph, de, om, ep = q
    bep, thp, gap, php, dep, omp, epp = v
    w12, w45, w67 = bep + thp, php + dep, omp + epp
    ax = -RR * np.cos(be) * bep**2 + D * np.cos(be + th) * w12**2
    ay = -RR * np.sin(be) * bep**2 + D * np.sin(be + th) * w12**2
    return np.array([
        ax + SS * np.sin(ga) * gap**2,
        ay - SS * np.cos(ga) * gap**2,
        ax + E * np.sin(ph + de) * w45**2 + ZT * np.cos(de) * dep**2,
        ay - E * np.cos(ph + de) * w45**2 + ZT * np.sin(de) * dep**2,
        ax + ZF * np.cos(om + ep) * w67**2 + U * np.sin(ep) * epp**2,
        ay + ZF * np.sin(om + ep) * w67**2 - U * np.cos(ep) * epp**2,
    ])


def accelerations(q, v):
    """Index-1 solve: returns (q'', lambda) from [M G^T; G 0][q''; lam] = [f; -g_qq(q', q')]."""
    m, g = mass_matrix(q), constraint_jacobian(q)
    kkt = np.zeros((13, 13))
    kkt[:7, :7] = m
    kkt[:7, 7:] = g.T
    kkt[7:, :7] = g
    rhs = np.concatenate([forces(q, v), -constraint_curvature(q, v)])
    sol = np.linalg.solve(kkt, rhs)
    return sol[:7], sol[7:]


def andrews_rhs(t, y):
    """First-order right-hand side, y = (q, q')."""
    q, v = y[:7], y[7:]
    qdd, _ = accelerations(q, v)
    return np.concatenate([v, qdd])


def andrews_initial_state():
    """y0 = (q0, 0)."""
    return np.concatenate([Q0, np.zeros(7)])


def initial_accelerations():
    """(q''(0), lambda(0)) of the consistent initial state."""
    y0 = andrews_initial_state()
    return accelerations(y0[:7], y0[7:])


def solve_andrews(t_end=REFERENCE_T, rtol=1e-12, atol=1e-12, t_eval=None, method="DOP853"):
    """Integrate from the classic initial state; returns (t, y) with y of shape (n, 14)."""
    sol = solve_ivp(andrews_rhs, (0.0, t_end), andrews_initial_state(), method=method, rtol=rtol, atol=atol,
                    t_eval=t_eval)
    if not sol.success:
        raise RuntimeError(f"andrews classic solver failed: {sol.message}")
    return sol.t, sol.y.T


# ----------------------------------------------------------------------------------------------------------
# derived quantities (what the library must later reproduce)
def energy(q, v):
    """Kinetic + spring energy minus motor work: 1/2 q'^T M q' + 1/2 c0 (l - l0)^2 - mom (beta - beta0)."""
    return float(0.5 * v @ mass_matrix(q) @ v + 0.5 * C0 * (spring_length(q) - L0) ** 2 - MOM * (q[0] - Q0[0]))


def tangent(q):
    """Null-space vector of G(q) normalised so that beta' = 1 (velocities per unit crank rate)."""
    g = constraint_jacobian(q)
    # beta' = 1: solve G[:, 1:] t_rest = -G[:, 0]
    rest = np.linalg.solve(g[:, 1:], -g[:, 0])
    return np.concatenate([[1.0], rest])


def reduced_mass(q):
    """Generalized mass in the independent coordinate beta: t^T M t."""
    t = tangent(q)
    return float(t @ mass_matrix(q) @ t)


if __name__ == "__main__":  # pragma: no cover - manual look
    qdd0, lam0 = initial_accelerations()
    print("q''(0)   =", qdd0)
    print("lambda(0)=", lam0)
    print("dTheta/dbeta(0) =", tangent(Q0)[1], " M_r(0) =", reduced_mass(Q0), " l(0) =", spring_length(Q0))
    t, y = solve_andrews()
    print("q(0.03)  =", y[-1, :7])
    print("rel err  =", np.abs(y[-1, :7] - REFERENCE_Q) / np.abs(REFERENCE_Q))
    print("v rel err=", np.abs(y[-1, 7:] - REFERENCE_V) / np.abs(REFERENCE_V))
