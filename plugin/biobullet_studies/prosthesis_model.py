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
        #: `rhs` runs the compiled kernel (prosthesis_kernel.py); False: its Python form (debugging)
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

    def knee_flexion(self, t: float, y: np.ndarray) -> float:
        (pt, p_ad, p_bc, p_s, p_f), _ = self.positions(t, float(y[0]), float(y[1]))
        return _wrap(p_s - pt)


    # ================================================================ scalar right-hand side (prosthesis_kernel.py)
    # Same equations as `evaluate`, written for speed as a scalar kernel on the numbers packed here (numpy
    # costs ~1 µs per tiny-array operation; this model has 4 angles), one cos/sin pair per time for all Fourier
    # drivers (harmonics by the angle-addition recurrence), and the loop eliminated by the velocity-coefficient
    # (null-space) projection instead of the 6×6 KKT system: ψ̈ = G q̈ + h with q = (knee_A, ankle), so
    # (Σ_b m_b J_bᵀJ_b + I_b g_b g_bᵀ) q̈ = Σ_b m_b J_bᵀ(g − a0_b) − I_b g_b h_b + F_q   (2×2).
    # tests/validation/test_prosthesis_model.py checks it against `evaluate` (and so the general engine).
    def _setup_scalar(self) -> None:
        def tup(v):
            return (float(v[0]), float(v[1]))

        def series(f):
            return (float(f.period), float(f.a0), tuple(float(v) for v in f.a), tuple(float(v) for v in f.b))

        #: the numbers the scalar kernel packs (`prosthesis_kernel.pack`): Fourier drivers, vectors, bodies, contacts,
        #: gravity as plain floats
        self.scalar_series = [series(f) for f in (self.f_hx, self.f_hy, self.f_th, self.f_ank)]
        self.scalar_vectors = {k: tup(getattr(self, k)) for k in ("A_t", "B_t", "d_AD", "k_s", "c_a", "c_b",
                                                               "damper_thigh", "damper_shank")}
        self.scalar_bodies = [(float(m), tup(c), float(i)) for m, c, i in self.bodies]
        self.scalar_contacts = [tup(h) for _, h in self.contacts]
        self.scalar_gravity = tup(self.gravity)

    def rhs(self, t: float, y, work: bool = False) -> np.ndarray:
        """d/dt (knee_A, ankle, knee_A', ankle') [+ (W_drive, W_forces) if work]: the kernel of
        prosthesis_kernel.py, compiled (or its Python form where `compiled` is False or numba is missing).
        FloatingPointError where the four-bar cannot assemble or the result is not finite."""
        if self._kernel is None:
            from biobullet_studies import prosthesis_kernel
            self._kernel = (prosthesis_kernel.kernel(self.compiled), prosthesis_kernel.pack(self))
        self.nfev += 1
        status, out = self._kernel[0](float(t), np.asarray(y, dtype=float), bool(work), *self._kernel[1])
        if status != 0:
            self.positions(t, float(y[0]), float(y[1]))   # raises where the four-bar cannot assemble
            raise FloatingPointError(f"prosthesis right-hand side not finite at t = {t:g}, y = {list(y)}")
        return out

    __call__ = evaluate


def _wrap(a: float) -> float:
    return (a + math.pi) % (2.0 * math.pi) - math.pi
