"""The prosthesis right-hand side of `FastProsthesis` (prosthesis_model.py), written once as a numba kernel through
the library's one jit helper (`biobullet.core.jit`; `BIOBULLET_NUMBA=0` runs the same function by Python, for
debugging), with the model's numbers packed into arrays once (`pack`). Besides ẏ it gives the work rates and, for
sampled output, the mechanism's details (`DETAILS`: angles, points, loop residual, energy, element forces). It
reports a state it cannot evaluate by its status (ASSEMBLY: the four-bar cannot assemble; NOT_FINITE).
tests/validation/test_prosthesis_model.py checks it against the library's general engine on the same model file and
by the energy balance; tests/benchmarks/test_prosthesis_library_speed.py times it against the library's pipeline.
"""
from __future__ import annotations

import math

import numpy as np

from biobullet.core import jit

# rows of the packed vectors (FastProsthesis attributes of these names)
VECTORS = ("A_t", "B_t", "d_AD", "k_s", "c_a", "c_b", "damper_thigh", "damper_shank")
PARAMETERS = ("damper_k", "damper_c", "damper_l0", "stop_k", "stop_c", "stop_c3", "stop_lever", "ankle_k",
              "ankle_c", "contact_k", "contact_c", "contact_c1", "mu", "v0")
#: what the kernel computes: ẏ only, ẏ and the work rates (W_drive, W_forces), or those and `DETAILS`
RATES, WORK, DETAILED = 0, 1, 2
#: status of a call
OK, ASSEMBLY, NOT_FINITE = 0, 1, 2
#: the detail entries after ẏ (4) and the work rates (2): absolute angles ψ (rad, about +y), world points (x, z) (m)
#: A, B, D, C, K (ankle), the loop residual (m), kinetic and gravity energy of the response bodies (J), the damper's
#: length (m) and tension (N), the knee-stop force (N), the ankle torque (N m); then per contact (heel, toe) the
#: normal and friction force on the foot (N), the penetration (m) and the slip velocity along x (m/s)
DETAILS = ("psi_t", "psi_ad", "psi_bc", "psi_s", "psi_f", "A_x", "A_z", "B_x", "B_z", "D_x", "D_z", "C_x", "C_z",
           "K_x", "K_z", "residual_x", "residual_z", "kinetic", "gravity", "damper_length", "damper_tension",
           "stop_force", "ankle_torque")
CONTACT_DETAILS = ("normal", "friction", "penetration", "slip")
FIRST_DETAIL = 6
N_DETAILS = len(DETAILS)


def pack(fast) -> tuple:
    """(series, harmonics, vectors, bodies, contacts, gravity, scalars, parameters) of a FastProsthesis: its Fourier
    drivers (hip x, hip y, thigh, ankle reference) as rows (period, a0, a_k…, b_k…), its planar vectors (`VECTORS`),
    bodies (m, c_x, c_z, I_yy), contact points, gravity, (r_a, r_b, branch, belt speed) and `PARAMETERS`."""
    drivers = (fast.f_hx, fast.f_hy, fast.f_th, fast.f_ank)
    k = max(max(len(f.a) for f in drivers), 1)
    table = np.zeros((len(drivers), 2 + 2 * k))
    harmonics = np.zeros(len(drivers), dtype=np.int64)
    for r, f in enumerate(drivers):
        table[r, 0], table[r, 1] = f.period, f.a0
        table[r, 2:2 + len(f.a)] = f.a
        table[r, 2 + k:2 + k + len(f.b)] = f.b
        harmonics[r] = len(f.a)
    vectors = np.array([getattr(fast, name) for name in VECTORS], dtype=float)
    bodies = np.array([[m, c[0], c[1], i] for m, c, i in fast.bodies], dtype=float)
    contacts = np.array([h for _, h in fast.contacts], dtype=float).reshape(-1, 2)
    scalars = np.array([fast.r_a, fast.r_b, fast.branch, fast.belt], dtype=float)
    parameters = np.array([getattr(fast.p, name) for name in PARAMETERS], dtype=float)
    return table, harmonics, vectors, bodies, contacts, np.array(fast.gravity, dtype=float), scalars, parameters


def _prosthesis_rhs_py(t, y, mode, table, harmonics, vec, bodies, contacts, g, scalars, par):
    """(status, out): out = ẏ (mode RATES), + (P_drive, P_forces) (WORK), + `DETAILS` and per contact
    `CONTACT_DETAILS` (DETAILED); status OK, ASSEMBLY or NOT_FINITE (then out is empty)."""
    k_max = (table.shape[1] - 2) // 2
    drive = np.zeros((4, 3))
    for r in range(4):   # Fourier series: harmonics by the angle-addition recurrence
        w = 2.0 * math.pi / table[r, 0]
        c1, s1 = math.cos(w * t), math.sin(w * t)
        c, s = c1, s1
        v, dv, ddv = table[r, 1], 0.0, 0.0
        for k in range(harmonics[r]):
            if k > 0:
                c, s = c * c1 - s * s1, s * c1 + c * s1
            kw = (k + 1) * w
            a, b = table[r, 2 + k], table[r, 2 + k_max + k]
            ac, bs = a * c, b * s
            v += ac + bs
            dv += kw * (b * c - a * s)
            ddv -= kw * kw * (ac + bs)
        drive[r, 0], drive[r, 1], drive[r, 2] = v, dv, ddv
    hx, dhx, ddhx = drive[0, 0], drive[0, 1], drive[0, 2]
    hy, dhy, ddhy = drive[1, 0], drive[1, 1], drive[1, 2]
    th, dth, ddth = drive[2, 0], drive[2, 1], drive[2, 2]
    aref = drive[3, 0]
    r_a, r_b, branch, belt = scalars[0], scalars[1], scalars[2], scalars[3]
    kA, ank, dkA, dank = y[0], y[1], y[2], y[3]
    # positions: the closed-form four-bar solution on the branch of `FastProsthesis.branch`
    pt = -th
    c, s = math.cos(pt), math.sin(pt)
    Ax, Az = c * vec[0, 0] + s * vec[0, 1], -s * vec[0, 0] + c * vec[0, 1]
    Bx, Bz = c * vec[1, 0] + s * vec[1, 1], -s * vec[1, 0] + c * vec[1, 1]
    p_ad = pt + kA
    c, s = math.cos(p_ad), math.sin(p_ad)
    Dx0, Dz0 = Ax + c * vec[2, 0] + s * vec[2, 1], Az - s * vec[2, 0] + c * vec[2, 1]
    vx, vz = Bx - Dx0, Bz - Dz0
    dist = math.hypot(vx, vz)
    along = (dist * dist + r_b ** 2 - r_a ** 2) / (2.0 * dist)
    h2 = r_b ** 2 - along * along
    if not h2 >= 0.0:
        return ASSEMBLY, np.zeros(0)
    h = math.sqrt(h2)
    ex, ez = vx / dist, vz / dist
    cx = along * ex + branch * h * ez
    cz = along * ez - branch * h * ex
    Cx, Cz = Dx0 + cx, Dz0 + cz
    p_s = math.atan2(-cz, cx) - math.atan2(-vec[5, 1], vec[5, 0])
    p_bc = math.atan2(-(Cz - Bz), Cx - Bx) - math.atan2(-vec[4, 1], vec[4, 0])
    p_f = p_s - ank
    # rhs
    dpt, ddpt = -dth, -ddth
    dhx += belt
    ct, st = math.cos(pt), math.sin(pt)
    rA0, rA1 = ct * vec[0, 0] + st * vec[0, 1], -st * vec[0, 0] + ct * vec[0, 1]
    rB0, rB1 = ct * vec[1, 0] + st * vec[1, 1], -st * vec[1, 0] + ct * vec[1, 1]
    rBd0, rBd1 = ct * vec[6, 0] + st * vec[6, 1], -st * vec[6, 0] + ct * vec[6, 1]
    dAx, dAz = dhx + rA1 * dpt, dhy - rA0 * dpt
    dBx, dBz = dhx + rB1 * dpt, dhy - rB0 * dpt
    ddAx = ddhx + rA1 * ddpt - rA0 * dpt * dpt
    ddAz = ddhy - rA0 * ddpt - rA1 * dpt * dpt
    ddBx = ddhx + rB1 * ddpt - rB0 * dpt * dpt
    ddBz = ddhy - rB0 * ddpt - rB1 * dpt * dpt
    cad, sad = math.cos(p_ad), math.sin(p_ad)
    cbc, sbc = math.cos(p_bc), math.sin(p_bc)
    cs_, ss_ = math.cos(p_s), math.sin(p_s)
    cf, sf = math.cos(p_f), math.sin(p_f)
    r_ad0, r_ad1 = cad * vec[2, 0] + sad * vec[2, 1], -sad * vec[2, 0] + cad * vec[2, 1]
    r_ca0, r_ca1 = cbc * vec[4, 0] + sbc * vec[4, 1], -sbc * vec[4, 0] + cbc * vec[4, 1]
    r_cb0, r_cb1 = cs_ * vec[5, 0] + ss_ * vec[5, 1], -ss_ * vec[5, 0] + cs_ * vec[5, 1]
    wca0, wca1 = r_ca1, -r_ca0
    wcb0, wcb1 = r_cb1, -r_cb0
    wad0, wad1 = r_ad1, -r_ad0
    det = -wca0 * wcb1 + wcb0 * wca1
    dp_ad = dpt + dkA
    a1, a2 = (-wad0 * wcb1 + wcb0 * wad1) / det, (wca0 * wad1 - wca1 * wad0) / det
    r0, r1 = dAx - dBx, dAz - dBz
    c1, c2 = (-r0 * wcb1 + wcb0 * r1) / det, (wca0 * r1 - wca1 * r0) / det
    dp_bc, dp_s = a1 * dp_ad + c1, a2 * dp_ad + c2
    dp_f = dp_s - dank
    r0 = ddAx - ddBx - r_ad0 * dp_ad ** 2 + r_ca0 * dp_bc ** 2 - r_cb0 * dp_s ** 2
    r1 = ddAz - ddBz - r_ad1 * dp_ad ** 2 + r_ca1 * dp_bc ** 2 - r_cb1 * dp_s ** 2
    e1, e2 = (-r0 * wcb1 + wcb0 * r1) / det, (wca0 * r1 - wca1 * r0) / det
    h_ad, h_bc, h_s = ddpt, a1 * ddpt + e1, a2 * ddpt + e2
    gx, gz = g[0], g[1]
    m_ad, i_ad = bodies[0, 0], bodies[0, 3]
    m_bc, i_bc = bodies[1, 0], bodies[1, 3]
    m_s, i_s = bodies[2, 0], bodies[2, 3]
    m_f, i_f = bodies[3, 0], bodies[3, 3]
    rcad0, rcad1 = cad * bodies[0, 1] + sad * bodies[0, 2], -sad * bodies[0, 1] + cad * bodies[0, 2]
    rcbc0, rcbc1 = cbc * bodies[1, 1] + sbc * bodies[1, 2], -sbc * bodies[1, 1] + cbc * bodies[1, 2]
    rcs0, rcs1 = cs_ * bodies[2, 1] + ss_ * bodies[2, 2], -ss_ * bodies[2, 1] + cs_ * bodies[2, 2]
    rk0, rk1 = cs_ * vec[3, 0] + ss_ * vec[3, 1], -ss_ * vec[3, 0] + cs_ * vec[3, 1]
    rcf0, rcf1 = cf * bodies[3, 1] + sf * bodies[3, 2], -sf * bodies[3, 1] + cf * bodies[3, 2]
    J1x0, J1z0 = rcad1, -rcad0
    a1x = ddAx + rcad1 * h_ad - rcad0 * dp_ad ** 2
    a1z = ddAz - rcad0 * h_ad - rcad1 * dp_ad ** 2
    J2x0, J2z0 = rcbc1 * a1, -rcbc0 * a1
    a2x = ddBx + rcbc1 * h_bc - rcbc0 * dp_bc ** 2
    a2z = ddBz - rcbc0 * h_bc - rcbc1 * dp_bc ** 2
    Dax = ddAx + r_ad1 * h_ad - r_ad0 * dp_ad ** 2
    Daz = ddAz - r_ad0 * h_ad - r_ad1 * dp_ad ** 2
    J3x0, J3z0 = wad0 + rcs1 * a2, wad1 - rcs0 * a2
    a3x = Dax + rcs1 * h_s - rcs0 * dp_s ** 2
    a3z = Daz - rcs0 * h_s - rcs1 * dp_s ** 2
    Kax = Dax + rk1 * h_s - rk0 * dp_s ** 2
    Kaz = Daz - rk0 * h_s - rk1 * dp_s ** 2
    JKx0, JKz0 = wad0 + rk1 * a2, wad1 - rk0 * a2
    J4x0, J4z0 = JKx0 + rcf1 * a2, JKz0 - rcf0 * a2
    J4x1, J4z1 = -rcf1, rcf0
    a4x = Kax + rcf1 * h_s - rcf0 * dp_f ** 2
    a4z = Kaz - rcf0 * h_s - rcf1 * dp_f ** 2
    M00 = (m_ad * (J1x0 * J1x0 + J1z0 * J1z0) + i_ad + m_bc * (J2x0 * J2x0 + J2z0 * J2z0) + i_bc * a1 * a1
           + m_s * (J3x0 * J3x0 + J3z0 * J3z0) + i_s * a2 * a2 + m_f * (J4x0 * J4x0 + J4z0 * J4z0)
           + i_f * a2 * a2)
    M01 = m_f * (J4x0 * J4x1 + J4z0 * J4z1) - i_f * a2
    M11 = m_f * (J4x1 * J4x1 + J4z1 * J4z1) + i_f
    f0 = (m_ad * (J1x0 * (gx - a1x) + J1z0 * (gz - a1z)) - i_ad * h_ad
          + m_bc * (J2x0 * (gx - a2x) + J2z0 * (gz - a2z)) - i_bc * a1 * h_bc
          + m_s * (J3x0 * (gx - a3x) + J3z0 * (gz - a3z)) - i_s * a2 * h_s
          + m_f * (J4x0 * (gx - a4x) + J4z0 * (gz - a4z)) - i_f * a2 * h_s)
    f1 = m_f * (J4x1 * (gx - a4x) + J4z1 * (gz - a4z)) + i_f * h_s
    hip_x, hip_z = belt * t + hx, hy
    Dx = hip_x + rA0 + r_ad0
    Dz = hip_z + rA1 + r_ad1
    rsd0, rsd1 = cs_ * vec[7, 0] + ss_ * vec[7, 1], -ss_ * vec[7, 0] + cs_ * vec[7, 1]
    ux, uz = Dx + rsd0 - (hip_x + rBd0), Dz + rsd1 - (hip_z + rBd1)
    length = math.hypot(ux, uz)
    ux, uz = ux / length, uz / length
    vDx, vDz = dAx + wad0 * dp_ad, dAz + wad1 * dp_ad
    vBdx, vBdz = dhx + rBd1 * dpt, dhy - rBd0 * dpt
    rate = ux * (vDx + rsd1 * dp_s - vBdx) + uz * (vDz - rsd0 * dp_s - vBdz)
    tension = par[0] * (length - par[2]) + par[1] * rate
    F0 = -tension * (ux * (wad0 + rsd1 * a2) + uz * (wad1 - rsd0 * a2))
    F1 = 0.0
    lever = par[6]
    delta, ddelta = -lever * (p_bc - pt), -lever * (dp_bc - dpt)
    f_stop = (0.5 + math.atan(par[5] * delta) / math.pi) * (par[3] * delta + par[4] * ddelta)
    f_stop = max(f_stop, 0.0)
    F0 += lever * f_stop * a1
    tau_ankle = -par[7] * (ank - aref) - par[8] * dank
    F1 += tau_ankle
    Kx = Dx + rk0
    Kz = Dz + rk1
    vKx = vDx + rk1 * dp_s
    vKz = vDz - rk0 * dp_s
    k_n, c_n, c1n, mu, v0 = par[9], par[10], par[11], par[12], par[13]
    n_out = 4 if mode == RATES else (6 if mode == WORK else FIRST_DETAIL + N_DETAILS + 4 * contacts.shape[0])
    out = np.zeros(n_out)
    at = FIRST_DETAIL + N_DETAILS
    for j in range(contacts.shape[0]):
        rh0 = cf * contacts[j, 0] + sf * contacts[j, 1]
        rh1 = -sf * contacts[j, 0] + cf * contacts[j, 1]
        pen = -(Kz + rh1)
        vx_ = vKx + rh1 * dp_f
        vz_ = vKz - rh0 * dp_f
        fn = (0.5 + math.atan(c1n * pen) / math.pi) * (k_n * pen - c_n * vz_)
        if mode == DETAILED:
            out[at + 4 * j + 2], out[at + 4 * j + 3] = pen, vx_
        if fn <= 0.0:
            continue
        ft = -mu * fn * (2.0 / math.pi) * math.atan(vx_ / v0)
        jx0, jz0 = JKx0 + rh1 * a2, JKz0 - rh0 * a2
        F0 += ft * jx0 + fn * jz0
        F1 += -ft * rh1 + fn * rh0
        if mode == DETAILED:
            out[at + 4 * j], out[at + 4 * j + 1] = fn, ft
    f0 += F0
    f1 += F1
    detm = M00 * M11 - M01 * M01
    q0 = (f0 * M11 - f1 * M01) / detm
    q1 = (M00 * f1 - M01 * f0) / detm
    out[0], out[1], out[2], out[3] = dkA, dank, q0, q1
    if mode != RATES:
        hv_ad, hv_bc, hv_s = dpt, a1 * dpt + c1, a2 * dpt + c2
        pdd_ad, pdd_bc, pdd_s = ddpt + q0, a1 * (ddpt + q0) + e1, a2 * (ddpt + q0) + e2
        pdd_f = pdd_s - q1
        b1x, b1z = a1x + J1x0 * q0, a1z + J1z0 * q0
        b2x, b2z = a2x + J2x0 * q0, a2z + J2z0 * q0
        b3x, b3z = a3x + J3x0 * q0, a3z + J3z0 * q0
        b4x, b4z = a4x + J4x0 * q0 + J4x1 * q1, a4z + J4z0 * q0 + J4z1 * q1
        v1x, v1z = dAx + rcad1 * hv_ad, dAz - rcad0 * hv_ad
        v2x, v2z = dBx + rcbc1 * hv_bc, dBz - rcbc0 * hv_bc
        vDdx, vDdz = dAx + wad0 * hv_ad, dAz + wad1 * hv_ad
        v3x, v3z = vDdx + rcs1 * hv_s, vDdz - rcs0 * hv_s
        vKdx, vKdz = vDdx + rk1 * hv_s, vDdz - rk0 * hv_s
        v4x, v4z = vKdx + rcf1 * hv_s, vKdz - rcf0 * hv_s
        p_drive = 0.0
        p_drive += m_ad * ((b1x - gx) * v1x + (b1z - gz) * v1z) + i_ad * pdd_ad * hv_ad
        p_drive += m_bc * ((b2x - gx) * v2x + (b2z - gz) * v2z) + i_bc * pdd_bc * hv_bc
        p_drive += m_s * ((b3x - gx) * v3x + (b3z - gz) * v3z) + i_s * pdd_s * hv_s
        p_drive += m_f * ((b4x - gx) * v4x + (b4z - gz) * v4z) + i_f * pdd_f * hv_s
        out[4], out[5] = p_drive, dkA * F0 + dank * F1
    if mode == DETAILED:
        d = FIRST_DETAIL
        out[d], out[d + 1], out[d + 2], out[d + 3], out[d + 4] = pt, p_ad, p_bc, p_s, p_f
        out[d + 5], out[d + 6] = hip_x + rA0, hip_z + rA1
        out[d + 7], out[d + 8] = hip_x + rB0, hip_z + rB1
        out[d + 9], out[d + 10] = Dx, Dz
        out[d + 11], out[d + 12] = hip_x + Cx, hip_z + Cz
        out[d + 13], out[d + 14] = Kx, Kz
        # the loop Φ = B + R(ψ_BC) c_a − D − R(ψ_s) c_b at the closed-form angles (round-off)
        out[d + 15] = rB0 + r_ca0 - rA0 - r_ad0 - r_cb0
        out[d + 16] = rB1 + r_ca1 - rA1 - r_ad1 - r_cb1
        # COM velocities of the four response bodies (Ṙ(ψ) c = ψ̇ (c_z', −c_x') of the rotated c')
        u1x, u1z = dAx + rcad1 * dp_ad, dAz - rcad0 * dp_ad
        u2x, u2z = dBx + rcbc1 * dp_bc, dBz - rcbc0 * dp_bc
        u3x, u3z = vDx + rcs1 * dp_s, vDz - rcs0 * dp_s
        u4x, u4z = vKx + rcf1 * dp_f, vKz - rcf0 * dp_f
        out[d + 17] = 0.5 * (i_ad * dp_ad ** 2 + i_bc * dp_bc ** 2 + i_s * dp_s ** 2 + i_f * dp_f ** 2
                             + m_ad * (u1x * u1x + u1z * u1z) + m_bc * (u2x * u2x + u2z * u2z)
                             + m_s * (u3x * u3x + u3z * u3z) + m_f * (u4x * u4x + u4z * u4z))
        out[d + 18] = -(m_ad * (gx * (hip_x + rA0 + rcad0) + gz * (hip_z + rA1 + rcad1))
                        + m_bc * (gx * (hip_x + rB0 + rcbc0) + gz * (hip_z + rB1 + rcbc1))
                        + m_s * (gx * (Dx + rcs0) + gz * (Dz + rcs1)) + m_f * (gx * (Kx + rcf0) + gz * (Kz + rcf1)))
        out[d + 19], out[d + 20], out[d + 21], out[d + 22] = length, tension, f_stop, tau_ankle
    for i in range(out.shape[0]):
        if not math.isfinite(out[i]):
            return NOT_FINITE, np.zeros(0)
    return OK, out


#: compiled on its first call (numba's on-disk cache), or run by Python with BIOBULLET_NUMBA=0
prosthesis_rhs = jit.lazy(_prosthesis_rhs_py)


__all__ = ["pack", "prosthesis_rhs", "VECTORS", "PARAMETERS", "DETAILS", "CONTACT_DETAILS", "FIRST_DETAIL", "RATES",
           "WORK", "DETAILED", "OK", "ASSEMBLY", "NOT_FINITE"]
