"""Fast special-purpose right-hand side of the hip-driven four-bar prosthesis (urdf/prosthesis_fourbar.urdf).

Why: the general reference engine evaluates this 8-joint loop model in ≈ 4 ms per right-hand side; 20 gait
cycles with the paper's contact (K_N = 1e5 N/m) and friction regularisation (C2 = 1e4 s/m, i.e. v0 = 1e-4 m/s,
a stiff ODE) need ~10⁵ evaluations. This module states the SAME equations (our formulation — NOT paper 003's
appendix) specialised to the planar mechanism, with every number read from the URDF, and is checked against the
general engine (`model.forward_dynamics` with the same force elements) to 1e-9 in
tests/validation/test_prosthesis_model.py.

Formulation: absolute body angles q = (ψ_AD, ψ_BC, ψ_s, ψ_f) about +y (x forward, z up; a positive ψ swings a
downward-pointing segment backwards), positions of all bodies as p(t) + Σ R(ψ_j) v_j, the driven hip/thigh
motion p(t), ψ_t(t) from the Fourier drivers; the loop C_BC = C_shank (2 equations) enters with Lagrange
multipliers and is solved at acceleration level by the library's one constrained solve (`constraints.solve`)
per evaluation. The ODE state is the independent pair (knee_A, ankle) and its rates; ψ_BC, ψ_s are recomputed
EXACTLY from the closed-form four-bar position solution at every evaluation, so the loop residual is round-off
(no drift, no Baumgarte).
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from biobullet.constraints.solve import constrained_acceleration
from biobullet.functions.fourier import FourierFunction

_NO_BIAS = np.zeros(4)


def _vec(text: str) -> np.ndarray:
    x, _, z = (float(v) for v in text.split())
    return np.array([x, z])


def rot(psi: float, v: np.ndarray) -> np.ndarray:
    """R(ψ) v: rotation about +y acting on (x, z)."""
    c, s = math.cos(psi), math.sin(psi)
    return np.array([c * v[0] + s * v[1], -s * v[0] + c * v[1]])


def drot(psi: float, v: np.ndarray) -> np.ndarray:
    """dR(ψ)/dψ v."""
    c, s = math.cos(psi), math.sin(psi)
    return np.array([-s * v[0] + c * v[1], -c * v[0] - s * v[1]])


def angle(v: np.ndarray) -> float:
    """ψ with R(ψ) (1, 0) ∥ v."""
    return math.atan2(-v[1], v[0])


@dataclass
class Parameters:
    damper_k: float = 1.6e4      # N/m
    damper_c: float = 800.0      # N s/m
    damper_l0: float = 0.16879   # m
    stop_k: float = 7.5e4        # N/m (paper 003 K_c)
    stop_c: float = 20.0         # N s/m (C_c)
    stop_c3: float = 1e6         # 1/m (C3)
    stop_lever: float = 0.01     # m (d)
    ankle_k: float = 10.0        # N m/rad
    ankle_c: float = 0.2         # N m s/rad
    contact_k: float = 1e5       # N/m (K_N)
    contact_c: float = 20.0      # N s/m (χ_N)
    contact_c1: float = 1e6      # 1/m (C1)
    mu: float = 0.6
    v0: float = 1e-4             # m/s (= 1/C2)


class FastProsthesis:
    """Planar prosthesis RHS; `hip_y_scale` applies hip hiking (whole hip_y signal × factor, paper 003)."""

    def __init__(self, urdf_path: str, params: Parameters | None = None, *, hip_y_scale: float = 1.0,
                 belt_speed: float | None = None, compiled: bool = True) -> None:
        #: `rhs` runs the compiled twin (prosthesis_kernel.py) when numba is available; False = plain Python
        self.compiled = compiled
        from biobullet_studies.gait import load_gait

        self.p = params or Parameters()
        root = ET.parse(urdf_path).getroot()
        joints = {j.get("name"): j for j in root.findall("joint")}
        org = {name: _vec(j.find("origin").get("xyz")) for name, j in joints.items()}
        self.A_t, self.B_t = org["knee_A"], org["knee_B"]
        self.d_AD, self.k_s = org["knee_D"], org["ankle"]
        inert = {}
        for link in root.findall("link"):
            node = link.find("inertial")
            if node is None:
                continue
            o = node.find("origin")
            inert[link.get("name")] = (float(node.find("mass").get("value")), _vec(o.get("xyz")),
                                       float(node.find("inertia").get("iyy")))
        self.bodies = [inert[n] for n in ("posterior_link", "anterior_link", "shank", "foot")]
        bb = root.find("biobullet")
        loop = bb.find("loop")
        self.c_a, self.c_b = _vec(loop.get("xyz_a")), _vec(loop.get("xyz_b"))
        self.r_a, self.r_b = float(np.linalg.norm(self.c_a)), float(np.linalg.norm(self.c_b))
        spring = bb.find("spring")
        self.damper_thigh = _vec(spring.get("xyz_a"))
        self.damper_shank = _vec(spring.get("xyz_b"))  # shank frame (origin D)
        contacts = bb.findall("contact")
        self.contacts = [(c.get("name"), _vec(c.get("xyz"))) for c in contacts]
        self.gravity = _vec(bb.find("gravity").get("xyz"))
        fn = {f.get("joint"): f for f in bb.findall("joint_function")}

        def fourier(node, scale=1.0):
            return FourierFunction(float(node.get("period")), scale * float(node.get("a0")),
                                   [scale * float(v) for v in node.get("a").split()],
                                   [scale * float(v) for v in node.get("b").split()])
        self.f_hx, self.f_hy, self.f_th = fourier(fn["hip_x"]), fourier(fn["hip_y"], hip_y_scale), fourier(fn["hip"])
        if belt_speed is None:
            belt_speed = float(fn["treadmill"].get("parameters").split("=")[1])
        self.belt = float(belt_speed)
        a = load_gait("walking_1ms").signal("ankle")
        self.f_ank = FourierFunction(a.period, a.a0, a.a, a.b)
        # branch of the four-bar: sign of the cross product (C−D) × (B−D) at full extension
        d0 = self.A_t + self.d_AD
        c0 = d0 + self.c_b
        self.branch = math.copysign(1.0, self._cross(c0 - d0, self.B_t - d0))
        self.nfev = 0
        self._setup_scalar()
        self._kernel = None

    @staticmethod
    def _cross(u, v) -> float:
        return float(u[0] * v[1] - u[1] * v[0])

    # ---------------------------------------------------------------- drive
    def drive(self, t: float):
        """hip position/velocity/acceleration (x, z) and thigh ψ_t, ψ̇_t, ψ̈_t (ψ_t = −α1)."""
        hx, dhx, ddhx = self.f_hx.evaluate(None, t)
        hy, dhy, ddhy = self.f_hy.evaluate(None, t)
        th, dth, ddth = self.f_th.evaluate(None, t)
        hip = np.array([self.belt * t + hx, hy])
        dhip = np.array([self.belt + dhx[0], dhy[0]])
        ddhip = np.array([ddhx[0, 0], ddhy[0, 0]])
        return hip, dhip, ddhip, -th, -dth[0], -ddth[0, 0]

    # ---------------------------------------------------------------- position solution
    def positions(self, t: float, knee_a: float, ankle: float):
        """All absolute angles (ψ_t, ψ_AD, ψ_BC, ψ_s, ψ_f) and the world points A, B, D, C, K (ankle)."""
        hip, _, _, pt, _, _ = self.drive(t)
        A = hip + rot(pt, self.A_t)
        B = hip + rot(pt, self.B_t)
        p_ad = pt + knee_a
        D = A + rot(p_ad, self.d_AD)
        dv = B - D
        dist = float(np.hypot(*dv))
        along = (dist * dist + self.r_b ** 2 - self.r_a ** 2) / (2.0 * dist)
        h2 = self.r_b ** 2 - along * along
        if h2 < 0.0:
            raise FloatingPointError(f"four-bar cannot assemble at t = {t:g}, knee_A = {knee_a:g}")
        h = math.sqrt(h2)
        e = dv / dist
        n = np.array([-e[1], e[0]])
        C = D + along * e - self.branch * h * n
        if math.copysign(1.0, self._cross(C - D, B - D)) != self.branch:
            C = D + along * e + self.branch * h * n
        p_s = angle(C - D) - angle(self.c_b)
        p_bc = angle(C - B) - angle(self.c_a)
        p_f = p_s - ankle
        K = D + rot(p_s, self.k_s)
        return (pt, p_ad, p_bc, p_s, p_f), (A, B, D, C, K)

    def joint_angles(self, t: float, knee_a: float, ankle: float) -> dict:
        (pt, p_ad, p_bc, p_s, p_f), _ = self.positions(t, knee_a, ankle)
        return {"knee_A": knee_a, "knee_D": _wrap(p_s - p_ad), "knee_B": _wrap(p_bc - pt), "ankle": ankle,
                "hip": -pt}

    # ---------------------------------------------------------------- right-hand side
    def evaluate(self, t: float, y: np.ndarray, details: bool = False):
        self.nfev += 1
        P = self.p
        knee_a, ankle, dknee_a, dankle = (float(v) for v in y[:4])
        hip, dhip, ddhip, pt, dpt, ddpt = self.drive(t)
        (pt, p_ad, p_bc, p_s, p_f), (A, B, D, C, K) = self.positions(t, knee_a, ankle)
        # driven points
        dA = dhip + drot(pt, self.A_t) * dpt
        dB = dhip + drot(pt, self.B_t) * dpt
        ddA = ddhip + drot(pt, self.A_t) * ddpt - rot(pt, self.A_t) * dpt * dpt
        ddB = ddhip + drot(pt, self.B_t) * ddpt - rot(pt, self.B_t) * dpt * dpt
        # velocity constraint → ψ̇_BC, ψ̇_s
        w_ad = drot(p_ad, self.d_AD)
        w_ca = drot(p_bc, self.c_a)
        w_cb = drot(p_s, self.c_b)
        dp_ad = dpt + dknee_a
        rhs = w_ad * dp_ad + dA - dB
        m2 = np.array([[w_ca[0], -w_cb[0]], [w_ca[1], -w_cb[1]]])
        dp_bc, dp_s = np.linalg.solve(m2, rhs)
        dp_f = dp_s - dankle
        dq = np.array([dp_ad, dp_bc, dp_s, dp_f])
        psis = (p_ad, p_bc, p_s, p_f)
        # body Jacobians (2 × 4), drift accelerations
        (m_ad, c_ad, i_ad), (m_bc, c_bc, i_bc), (m_s, c_s, i_s), (m_f, c_f, i_f) = self.bodies
        rel = [  # per body: list of (column, vector in that body's frame), root point accel
            ([(0, c_ad)], ddA, dA),
            ([(1, c_bc)], ddB, dB),
            ([(0, self.d_AD), (2, c_s)], ddA, dA),
            ([(0, self.d_AD), (2, self.k_s), (3, c_f)], ddA, dA),
        ]
        masses = (m_ad, m_bc, m_s, m_f)
        M = np.diag([i_ad, i_bc, i_s, i_f]).astype(float)
        Q = np.zeros(4)
        q_gravity = np.zeros(4)
        g = self.gravity
        kin_energy = 0.5 * float(np.array([i_ad, i_bc, i_s, i_f]) @ dq ** 2)
        pot = 0.0
        for (terms, ddroot, droot), m in zip(rel, masses):
            J = np.zeros((2, 4))
            drift = ddroot.copy()
            vel = droot.copy()
            pos = A.copy() if ddroot is ddA else B.copy()
            for col, v in terms:
                J[:, col] += drot(psis[col], v)
                drift -= rot(psis[col], v) * dq[col] ** 2
                pos += rot(psis[col], v)
            vel += J @ dq
            M += m * J.T @ J
            Q += J.T @ (m * g - m * drift)
            q_gravity += J.T @ (m * g - m * drift)
            kin_energy += 0.5 * m * float(vel @ vel)
            pot -= m * float(g @ pos)
        # damper: thigh point (xyz_a) – shank point (xyz_b, shank frame at D)
        jd = np.zeros((2, 4))
        jd[:, 0] = w_ad
        jd[:, 2] = drot(p_s, self.damper_shank)
        Bd = hip + rot(pt, self.damper_thigh)
        dBd = dhip + drot(pt, self.damper_thigh) * dpt
        Sd = D + rot(p_s, self.damper_shank)
        dvec = Sd - Bd
        length = float(np.hypot(*dvec))
        u = dvec / length
        dD = dA + jd @ dq
        rate = float(u @ (dD - dBd))
        tension = P.damper_k * (length - P.damper_l0) + P.damper_c * rate
        Q += jd.T @ (-tension * u)
        # knee stop on knee_B = ψ_BC − ψ_t (lower limit 0), lever d
        kb, dkb = p_bc - pt, dp_bc - dpt
        delta, ddelta = P.stop_lever * (0.0 - kb), -P.stop_lever * dkb
        f_stop = max((0.5 + math.atan(P.stop_c3 * delta) / math.pi) * (P.stop_k * delta + P.stop_c * ddelta), 0.0)
        Q[1] += P.stop_lever * f_stop
        # ankle spring (ankle = ψ_s − ψ_f) tracking the reference
        ref = self.f_ank.evaluate(None, t)[0]
        tau_a = -P.ankle_k * (ankle - ref) - P.ankle_c * dankle
        Q[2] += tau_a
        Q[3] -= tau_a
        # contacts (heel, toe) on the foot; ground z = 0 at rest in the belt frame
        forces = []
        for name, h in self.contacts:
            jp = np.zeros((2, 4))
            jp[:, 0] = w_ad
            jp[:, 2] = drot(p_s, self.k_s)
            jp[:, 3] = drot(p_f, h)
            point = K + rot(p_f, h)
            vp = dA + jp @ dq
            pen, dpen = -point[1], -vp[1]
            fn = max((0.5 + math.atan(P.contact_c1 * pen) / math.pi) * (P.contact_k * pen + P.contact_c * dpen), 0.0)
            ft = -P.mu * fn * (2.0 / math.pi) * math.atan(vp[0] / P.v0)
            Q += jp.T @ np.array([ft, fn])
            forces.append((fn, ft, pen, vp[0]))
        # loop at acceleration level: Φ = B + R(ψ_BC) c_a − D − R(ψ_s) c_b
        phi_q = np.zeros((2, 4))
        phi_q[:, 0] = -w_ad
        phi_q[:, 1] = w_ca
        phi_q[:, 2] = -w_cb
        gamma = -(ddB - ddA - rot(p_bc, self.c_a) * dp_bc ** 2 + rot(p_ad, self.d_AD) * dp_ad ** 2
                  + rot(p_s, self.c_b) * dp_s ** 2)
        # the library's one constrained solve: M q̈ = Q + Φ_qᵀλ, Φ_q q̈ = γ (no drift correction: the loop is
        # closed exactly above); the multiplier μ of M q̈ + Φ_qᵀμ = Q is −λ
        ddq, lam = constrained_acceleration(M, _NO_BIAS, Q, phi_q, gamma)
        sol = np.concatenate([ddq, -lam])
        dd_knee_a = ddq[0] - ddpt
        dd_ankle = ddq[2] - ddq[3]
        out = np.array([dknee_a, dankle, dd_knee_a, dd_ankle])
        if not details:
            return out
        residual = B + rot(p_bc, self.c_a) - D - rot(p_s, self.c_b)
        p_drive = 0.0
        for (terms, ddroot, droot), m in zip(rel, masses):
            acc = ddroot.copy()
            for col, v in terms:
                acc += drot(psis[col], v) * ddq[col] - rot(psis[col], v) * dq[col] ** 2
            p_drive += m * float((acc - g) @ droot)
        p_drive += float(sol[4:] @ (dB - dA))  # KKT: M q̈ + Φ_qᵀ μ = Q, Φ_q q̇ = −(Ḃ − Ȧ)
        p_forces = float(dq @ (Q - q_gravity))
        return out, {"forces": forces, "knee_flexion": _wrap(p_s - pt), "residual": residual,
                     "kinetic": kin_energy, "gravity": pot, "A": A, "B": B, "C": C, "D": D, "K": K,
                     "psi": (pt, p_ad, p_bc, p_s, p_f), "damper_length": length, "damper_tension": tension,
                     "stop_force": f_stop, "ankle_torque": tau_a, "lambda": sol[4:],
                     "powers": (p_drive, p_forces)}

    def with_work(self, t: float, y: np.ndarray) -> np.ndarray:
        """RHS of the state extended by W_drive and W_forces (J)."""
        out, (p_drive, p_forces) = self._rhs_power(t, y)
        return np.concatenate([out, [p_drive, p_forces]])

    def _rhs_power(self, t, y):
        out, d = self.evaluate(t, y[:4], details=True)
        return out, d["powers"]

    def knee_flexion(self, t: float, y: np.ndarray) -> float:
        (pt, p_ad, p_bc, p_s, p_f), _ = self.positions(t, float(y[0]), float(y[1]))
        return _wrap(p_s - pt)


    # ================================================================ scalar (plain-float) right-hand side
    # Same equations as `evaluate`, written for speed: plain Python floats (numpy costs ~1 µs per tiny-array
    # operation; this model has 4 angles), one cos/sin pair per time for all Fourier drivers (harmonics by
    # the angle-addition recurrence), and the loop eliminated by the velocity-coefficient (null-space)
    # projection instead of the 6×6 KKT system: ψ̈ = G q̈ + h with q = (knee_A, ankle), so
    # (Σ_b m_b J_bᵀJ_b + I_b g_b g_bᵀ) q̈ = Σ_b m_b J_bᵀ(g − a0_b) − I_b g_b h_b + F_q   (2×2).
    # tests/validation/test_prosthesis_model.py checks it against `evaluate` (and so the general engine).
    def _setup_scalar(self) -> None:
        def tup(v):
            return (float(v[0]), float(v[1]))

        def series(f):
            return (float(f.period), float(f.a0), tuple(float(v) for v in f.a), tuple(float(v) for v in f.b))

        self._s_series = [series(f) for f in (self.f_hx, self.f_hy, self.f_th, self.f_ank)]
        self._s_vec = {k: tup(getattr(self, k)) for k in ("A_t", "B_t", "d_AD", "k_s", "c_a", "c_b",
                                                          "damper_thigh", "damper_shank")}
        self._s_bodies = [(float(m), tup(c), float(i)) for m, c, i in self.bodies]
        self._s_contacts = [tup(h) for _, h in self.contacts]
        self._s_g = tup(self.gravity)

    def drive_scalar(self, t: float):
        """[(value, rate, acceleration)] of hip_x, hip_y, thigh (α1), ankle reference — plain floats."""
        out, cache = [], {}
        for period, a0, a, b in self._s_series:
            w = 2.0 * math.pi / period
            key = period
            if key not in cache:
                c1, s1 = math.cos(w * t), math.sin(w * t)
                cs = [(c1, s1)]
                for _ in range(1, max(len(a), 1)):
                    c, s = cs[-1]
                    cs.append((c * c1 - s * s1, s * c1 + c * s1))
                cache[key] = cs
            cs = cache[key]
            v, dv, ddv = a0, 0.0, 0.0
            for k in range(len(a)):
                c, s = cs[k]
                kw = (k + 1) * w
                ac, bs = a[k] * c, b[k] * s
                v += ac + bs
                dv += kw * (b[k] * c - a[k] * s)
                ddv -= kw * kw * (ac + bs)
            out.append((v, dv, ddv))
        return out

    def positions_scalar(self, t: float, knee_a: float, ankle: float, drive=None):
        """(ψ_t, ψ_AD, ψ_BC, ψ_s, ψ_f) and hip (x, z) — plain floats; same branch as `positions`."""
        (hx, _, _), (hy, _, _), (th, _, _), _ = drive or self.drive_scalar(t)
        V = self._s_vec
        pt = -th
        c, s = math.cos(pt), math.sin(pt)
        ax, az = V["A_t"]
        bx, bz = V["B_t"]
        Ax, Az = c * ax + s * az, -s * ax + c * az
        Bx, Bz = c * bx + s * bz, -s * bx + c * bz
        p_ad = pt + knee_a
        c, s = math.cos(p_ad), math.sin(p_ad)
        dx, dz = V["d_AD"]
        Dx, Dz = Ax + c * dx + s * dz, Az - s * dx + c * dz
        vx, vz = Bx - Dx, Bz - Dz
        dist = math.hypot(vx, vz)
        along = (dist * dist + self.r_b ** 2 - self.r_a ** 2) / (2.0 * dist)
        h2 = self.r_b ** 2 - along * along
        if h2 < 0.0:
            raise FloatingPointError(f"four-bar cannot assemble at t = {t:g}, knee_A = {knee_a:g}")
        h = math.sqrt(h2)
        ex, ez = vx / dist, vz / dist
        # C = D + along e − branch h n, n = (−e_z, e_x): this choice always has sign(cross(C−D, B−D)) = branch
        cx = along * ex + self.branch * h * ez
        cz = along * ez - self.branch * h * ex
        Cx, Cz = Dx + cx, Dz + cz
        cbx, cbz = V["c_b"]
        cax, caz = V["c_a"]
        p_s = math.atan2(-cz, cx) - math.atan2(-cbz, cbx)
        p_bc = math.atan2(-(Cz - Bz), Cx - Bx) - math.atan2(-caz, cax)
        return (pt, p_ad, p_bc, p_s, p_s - ankle), (self.belt * t + hx, hy)

    def rhs(self, t: float, y, work: bool = False):
        """d/dt (knee_A, ankle, knee_A', ankle') [+ (W_drive, W_forces) if work]: a float array from the compiled
        twin (prosthesis_kernel.py) where it evaluates the state, else a list of floats from the Python path."""
        if self.compiled:
            if self._kernel is None:
                from biobullet_studies import prosthesis_kernel
                compiled = prosthesis_kernel.kernel()
                self._kernel = (compiled, prosthesis_kernel.pack(self)) if compiled is not None else False
            if self._kernel:
                status, out = self._kernel[0](float(t), np.asarray(y, dtype=float), bool(work), *self._kernel[1])
                if status == 0:
                    self.nfev += 1
                    return out
        return self._rhs_python(t, y, work)

    def _rhs_python(self, t: float, y, work: bool = False):
        """The plain-Python right-hand side (reference of the compiled twin)."""
        self.nfev += 1
        P = self.p
        V = self._s_vec
        kA, ank, dkA, dank = y[0], y[1], y[2], y[3]
        drv = self.drive_scalar(t)
        (hx, dhx, ddhx), (hy, dhy, ddhy), (th, dth, ddth), (aref, _, _) = drv
        (pt, p_ad, p_bc, p_s, p_f), _ = self.positions_scalar(t, kA, ank, drv)
        dpt, ddpt = -dth, -ddth
        dhx += self.belt
        # rotated vectors r = R(ψ) v and derivatives dR v = (r_z, −r_x)
        ct, st = math.cos(pt), math.sin(pt)

        def R(c, s, v):
            return c * v[0] + s * v[1], -s * v[0] + c * v[1]
        rA = R(ct, st, V["A_t"])
        rB = R(ct, st, V["B_t"])
        rBd = R(ct, st, V["damper_thigh"])
        dAx, dAz = dhx + rA[1] * dpt, dhy - rA[0] * dpt
        dBx, dBz = dhx + rB[1] * dpt, dhy - rB[0] * dpt
        ddAx = ddhx + rA[1] * ddpt - rA[0] * dpt * dpt
        ddAz = ddhy - rA[0] * ddpt - rA[1] * dpt * dpt
        ddBx = ddhx + rB[1] * ddpt - rB[0] * dpt * dpt
        ddBz = ddhy - rB[0] * ddpt - rB[1] * dpt * dpt
        cad, sad = math.cos(p_ad), math.sin(p_ad)
        cbc, sbc = math.cos(p_bc), math.sin(p_bc)
        cs_, ss_ = math.cos(p_s), math.sin(p_s)
        cf, sf = math.cos(p_f), math.sin(p_f)
        r_ad = R(cad, sad, V["d_AD"])
        r_ca = R(cbc, sbc, V["c_a"])
        r_cb = R(cs_, ss_, V["c_b"])
        # loop velocity/acceleration: [w_ca, −w_cb] (ψ̇_BC, ψ̇_s) = w_ad ψ̇_AD + Ȧ − Ḃ
        wca0, wca1 = r_ca[1], -r_ca[0]
        wcb0, wcb1 = r_cb[1], -r_cb[0]
        wad0, wad1 = r_ad[1], -r_ad[0]
        det = -wca0 * wcb1 + wcb0 * wca1

        def solve2(r0, r1):
            return (-r0 * wcb1 + wcb0 * r1) / det, (wca0 * r1 - wca1 * r0) / det
        dp_ad = dpt + dkA
        a1, a2 = solve2(wad0, wad1)                       # ∂(ψ̇_BC, ψ̇_s)/∂ψ̇_AD
        c1, c2 = solve2(dAx - dBx, dAz - dBz)
        dp_bc, dp_s = a1 * dp_ad + c1, a2 * dp_ad + c2
        dp_f = dp_s - dank
        e1, e2 = solve2(ddAx - ddBx - r_ad[0] * dp_ad ** 2 + r_ca[0] * dp_bc ** 2 - r_cb[0] * dp_s ** 2,
                        ddAz - ddBz - r_ad[1] * dp_ad ** 2 + r_ca[1] * dp_bc ** 2 - r_cb[1] * dp_s ** 2)
        # ψ̈ = G q̈ + h   (rows AD, BC, s, f; columns knee_A, ankle)
        h_ad, h_bc, h_s = ddpt, a1 * ddpt + e1, a2 * ddpt + e2
        gx, gz = self._s_g
        (m_ad, cc_ad, i_ad), (m_bc, cc_bc, i_bc), (m_s, cc_s, i_s), (m_f, cc_f, i_f) = self._s_bodies
        r_c_ad = R(cad, sad, cc_ad)
        r_c_bc = R(cbc, sbc, cc_bc)
        r_c_s = R(cs_, ss_, cc_s)
        r_k = R(cs_, ss_, V["k_s"])
        r_c_f = R(cf, sf, cc_f)
        # body COM Jacobians (columns: knee_A, ankle) and accelerations at q̈ = 0
        # posterior link: A + R_ad c
        J1x0, J1z0 = r_c_ad[1], -r_c_ad[0]
        a1x = ddAx + r_c_ad[1] * h_ad - r_c_ad[0] * dp_ad ** 2
        a1z = ddAz - r_c_ad[0] * h_ad - r_c_ad[1] * dp_ad ** 2
        # anterior link: B + R_bc c
        J2x0, J2z0 = r_c_bc[1] * a1, -r_c_bc[0] * a1
        a2x = ddBx + r_c_bc[1] * h_bc - r_c_bc[0] * dp_bc ** 2
        a2z = ddBz - r_c_bc[0] * h_bc - r_c_bc[1] * dp_bc ** 2
        # shank: D + R_s c
        Dax = ddAx + r_ad[1] * h_ad - r_ad[0] * dp_ad ** 2       # D acceleration at q̈ = 0
        Daz = ddAz - r_ad[0] * h_ad - r_ad[1] * dp_ad ** 2
        J3x0, J3z0 = wad0 + r_c_s[1] * a2, wad1 - r_c_s[0] * a2
        a3x = Dax + r_c_s[1] * h_s - r_c_s[0] * dp_s ** 2
        a3z = Daz - r_c_s[0] * h_s - r_c_s[1] * dp_s ** 2
        # foot: K + R_f c, K = D + R_s k
        Kax = Dax + r_k[1] * h_s - r_k[0] * dp_s ** 2
        Kaz = Daz - r_k[0] * h_s - r_k[1] * dp_s ** 2
        JKx0, JKz0 = wad0 + r_k[1] * a2, wad1 - r_k[0] * a2
        J4x0, J4z0 = JKx0 + r_c_f[1] * a2, JKz0 - r_c_f[0] * a2
        J4x1, J4z1 = -r_c_f[1], r_c_f[0]
        a4x = Kax + r_c_f[1] * h_s - r_c_f[0] * dp_f ** 2
        a4z = Kaz - r_c_f[0] * h_s - r_c_f[1] * dp_f ** 2
        # reduced mass matrix and right-hand side
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
        # applied forces → generalised forces F_q (power through q̇: q̇·F_q)
        # damper thigh point Bd – shank point Sd = D + R_s s, tension T: force −T u on Sd
        hip_x, hip_z = self.belt * t + hx, hy
        Dx = hip_x + rA[0] + r_ad[0]
        Dz = hip_z + rA[1] + r_ad[1]
        r_sd = R(cs_, ss_, V["damper_shank"])
        ux, uz = Dx + r_sd[0] - (hip_x + rBd[0]), Dz + r_sd[1] - (hip_z + rBd[1])
        length = math.hypot(ux, uz)
        ux, uz = ux / length, uz / length
        vDx, vDz = dAx + wad0 * dp_ad, dAz + wad1 * dp_ad
        vBdx, vBdz = dhx + rBd[1] * dpt, dhy - rBd[0] * dpt
        rate = ux * (vDx + r_sd[1] * dp_s - vBdx) + uz * (vDz - r_sd[0] * dp_s - vBdz)
        tension = P.damper_k * (length - P.damper_l0) + P.damper_c * rate
        F0 = -tension * (ux * (wad0 + r_sd[1] * a2) + uz * (wad1 - r_sd[0] * a2))
        F1 = 0.0
        # knee stop on knee_B = ψ_BC − ψ_t (lower limit 0), lever d: torque d·F on ψ_BC
        delta, ddelta = -P.stop_lever * (p_bc - pt), -P.stop_lever * (dp_bc - dpt)
        f_stop = (0.5 + math.atan(P.stop_c3 * delta) / math.pi) * (P.stop_k * delta + P.stop_c * ddelta)
        if f_stop > 0.0:
            F0 += P.stop_lever * f_stop * a1
        # ankle spring tracking the reference (ankle = ψ_s − ψ_f)
        F1 += -P.ankle_k * (ank - aref) - P.ankle_c * dank
        # contacts on the foot (ground z = 0 in the belt frame)
        Kx = Dx + r_k[0]
        Kz = Dz + r_k[1]
        vKx = vDx + r_k[1] * dp_s
        vKz = vDz - r_k[0] * dp_s
        k_n, c_n, c1n, mu, v0 = P.contact_k, P.contact_c, P.contact_c1, P.mu, P.v0
        for hv in self._s_contacts:
            r_h = R(cf, sf, hv)
            pen = -(Kz + r_h[1])
            vx_ = vKx + r_h[1] * dp_f
            vz_ = vKz - r_h[0] * dp_f
            fn = (0.5 + math.atan(c1n * pen) / math.pi) * (k_n * pen - c_n * vz_)
            if fn <= 0.0:
                continue
            ft = -mu * fn * (2.0 / math.pi) * math.atan(vx_ / v0)
            # point Jacobian columns: knee_A: JK + dR_f h·a2, ankle: −dR_f h
            jx0, jz0 = JKx0 + r_h[1] * a2, JKz0 - r_h[0] * a2
            F0 += ft * jx0 + fn * jz0
            F1 += -ft * r_h[1] + fn * r_h[0]
        f0 += F0
        f1 += F1
        detm = M00 * M11 - M01 * M01
        q0 = (f0 * M11 - f1 * M01) / detm
        q1 = (M00 * f1 - M01 * f0) / detm
        if not work:
            return [dkA, dank, q0, q1]
        # powers: dE/dt = q̇·F_q + P_drive, P_drive = Σ_b m (a_b − g)·v_drive,b + I ψ̈_b ψ̇_drive,b
        # (v_drive,b: the body velocity with q̇ = 0, i.e. the part imposed by the hip/thigh motion)
        hv_ad, hv_bc, hv_s = dpt, a1 * dpt + c1, a2 * dpt + c2
        pdd_ad, pdd_bc, pdd_s = ddpt + q0, a1 * (ddpt + q0) + e1, a2 * (ddpt + q0) + e2
        pdd_f = pdd_s - q1

        def acc(ax0, az0, jx0, jz0, jx1=0.0, jz1=0.0):
            return ax0 + jx0 * q0 + jx1 * q1, az0 + jz0 * q0 + jz1 * q1
        b1 = acc(a1x, a1z, J1x0, J1z0)
        b2 = acc(a2x, a2z, J2x0, J2z0)
        b3 = acc(a3x, a3z, J3x0, J3z0)
        b4 = acc(a4x, a4z, J4x0, J4z0, J4x1, J4z1)
        v1 = (dAx + r_c_ad[1] * hv_ad, dAz - r_c_ad[0] * hv_ad)
        v2 = (dBx + r_c_bc[1] * hv_bc, dBz - r_c_bc[0] * hv_bc)
        vDd = (dAx + wad0 * hv_ad, dAz + wad1 * hv_ad)
        v3 = (vDd[0] + r_c_s[1] * hv_s, vDd[1] - r_c_s[0] * hv_s)
        vKd = (vDd[0] + r_k[1] * hv_s, vDd[1] - r_k[0] * hv_s)
        v4 = (vKd[0] + r_c_f[1] * hv_s, vKd[1] - r_c_f[0] * hv_s)
        p_drive = 0.0
        for m, (ax_, az_), (vx, vz), inertia, pdd, hv_ in ((m_ad, b1, v1, i_ad, pdd_ad, hv_ad),
                                                          (m_bc, b2, v2, i_bc, pdd_bc, hv_bc),
                                                          (m_s, b3, v3, i_s, pdd_s, hv_s),
                                                          (m_f, b4, v4, i_f, pdd_f, hv_s)):
            p_drive += m * ((ax_ - gx) * vx + (az_ - gz) * vz) + inertia * pdd * hv_
        p_forces = dkA * F0 + dank * F1
        return [dkA, dank, q0, q1, p_drive, p_forces]

    __call__ = evaluate


def _wrap(a: float) -> float:
    return (a + math.pi) % (2.0 * math.pi) - math.pi
