"""Special-purpose right-hand side of the hip-driven four-bar prosthesis (urdf/prosthesis_fourbar.urdf).

Why: 20 gait cycles with the paper's contact (K_N = 1e5 N/m) and friction regularisation (C2 = 1e4 s/m, i.e.
v0 = 1e-4 m/s, a stiff ODE) need ~10⁵ evaluations; the library's pipeline on the same model file is about 95× slower
per cycle (README, "Speed"). This module states the SAME equations (our formulation — NOT paper 003's appendix)
specialised to the planar mechanism, with every number read from the URDF; the kernel that evaluates them is
`prosthesis_kernel._prosthesis_rhs_py` (one implementation), checked against the library's general engine on the same
file to 1e-9 and by the energy balance in tests/validation/test_prosthesis_model.py.

Formulation: absolute body angles ψ = (ψ_AD, ψ_BC, ψ_s, ψ_f) about +y (x forward, z up; a positive ψ swings a
downward-pointing segment backwards), positions of all bodies as p(t) + Σ R(ψ_j) v_j, the driven hip/thigh
motion p(t), ψ_t(t) from the Fourier drivers. The ODE state is the independent pair (knee_A, ankle) and its rates;
ψ_BC, ψ_s are recomputed EXACTLY from the closed-form four-bar position solution at every evaluation, so the loop
residual is round-off (no drift, no Baumgarte); the loop is eliminated by the velocity-coefficient (null-space)
projection ψ̈ = G q̈ + h, q = (knee_A, ankle), which leaves a 2 × 2 system.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from biobullet.functions.fourier import FourierFunction
from biobullet_studies import prosthesis_kernel as kernel


def _vec(text: str) -> np.ndarray:
    x, _, z = (float(v) for v in text.split())
    return np.array([x, z])


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
                 belt_speed: float | None = None) -> None:
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
        self._kernel = kernel.prosthesis_rhs.resolve()
        self._packed = kernel.pack(self)

    @staticmethod
    def _cross(u, v) -> float:
        return float(u[0] * v[1] - u[1] * v[0])

    # ================================================================ right-hand side (prosthesis_kernel.py)
    # A scalar kernel on the numbers packed once (numpy costs ~1 µs per tiny-array operation; this model has 4
    # angles), one cos/sin pair per time for all Fourier drivers (harmonics by the angle-addition recurrence); with
    # ψ̈ = G q̈ + h it solves (Σ_b m_b J_bᵀJ_b + I_b g_b g_bᵀ) q̈ = Σ_b m_b J_bᵀ(g − a0_b) − I_b g_b h_b + F_q (2×2).
    def _call(self, t: float, y, mode: int) -> np.ndarray:
        status, out = self._kernel(float(t), np.ascontiguousarray(y, dtype=float), mode, *self._packed)
        if status == kernel.ASSEMBLY:
            raise FloatingPointError(f"four-bar cannot assemble at t = {t:g}, knee_A = {float(y[0]):g}")
        if status != kernel.OK:
            raise FloatingPointError(f"prosthesis right-hand side not finite at t = {t:g}, y = {list(y)}")
        return out

    def rhs(self, t: float, y, work: bool = False) -> np.ndarray:
        """d/dt (knee_A, ankle, knee_A', ankle') [+ (W_drive, W_forces) if work]. FloatingPointError where the
        four-bar cannot assemble or the result is not finite."""
        self.nfev += 1
        return self._call(t, y, kernel.WORK if work else kernel.RATES)

    def details(self, t: float, y) -> dict:
        """The mechanism at state y = (knee_A, ankle, knee_A', ankle'): `prosthesis_kernel.DETAILS` by name (points
        as (x, z) arrays), ẏ, the work rates `powers` (P_drive, P_forces) (W), `forces` per contact (F_N, F_T,
        penetration, slip) and `knee_flexion` (rad)."""
        out = self._call(t, np.asarray(y, dtype=float)[:4], kernel.DETAILED)
        first = kernel.FIRST_DETAIL
        named = dict(zip(kernel.DETAILS, out[first:first + kernel.N_DETAILS].tolist()))
        row = {name: np.array([named[name + "_x"], named[name + "_z"]]) for name in ("A", "B", "D", "C", "K")}
        row["residual"] = np.array([named["residual_x"], named["residual_z"]])
        row["psi"] = tuple(named[n] for n in ("psi_t", "psi_ad", "psi_bc", "psi_s", "psi_f"))
        for name in ("kinetic", "gravity", "damper_length", "damper_tension", "stop_force", "ankle_torque"):
            row[name] = named[name]
        row["rates"], row["powers"] = out[:4], (float(out[4]), float(out[5]))
        row["forces"] = [tuple(c) for c in out[first + kernel.N_DETAILS:].reshape(-1, 4).tolist()]
        row["knee_flexion"] = _wrap(row["psi"][3] - row["psi"][0])
        return row

    def joint_angles(self, t: float, knee_a: float, ankle: float) -> dict:
        """The URDF joint angles (rad) of the four-bar and the hip at (knee_A, ankle)."""
        pt, p_ad, p_bc, p_s, _ = self.details(t, (knee_a, ankle, 0.0, 0.0))["psi"]
        return {"knee_A": knee_a, "knee_D": _wrap(p_s - p_ad), "knee_B": _wrap(p_bc - pt), "ankle": ankle,
                "hip": -pt}

    def knee_flexion(self, t: float, y) -> float:
        return self.details(t, (float(y[0]), float(y[1]), 0.0, 0.0))["knee_flexion"]


def _wrap(a: float) -> float:
    return (a + math.pi) % (2.0 * math.pi) - math.pi
