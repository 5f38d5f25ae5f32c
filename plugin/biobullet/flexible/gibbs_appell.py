"""Recursive Gibbs–Appell equations of a planar chain of flexible (assumed-modes) links (paper 002).

Geometry and conventions (SI units, planar, X1 horizontal, X2 up, gravity −g X2):
  * link i has a body frame at its start point O_i with absolute angle φ_i; a point at 0 ≤ η ≤ l_i is
    r = O_i + R(φ_i) [η, w_i(η)], w_i = Σ_j δ_ij W_ij(η) (transverse deflection only, paper eqs. 1–2);
    its cross section turns by φ_i + θ_i(η), θ_i = Σ_j δ_ij Θ_ij(η) (Timoshenko, eqs. 3–4).
  * O_{i+1} = O_i + R(φ_i) [l_i, w_i(l_i)]; the next frame turns with the end frame x̂_i of link i:
    φ_{i+1} = φ_i + ψ_i + q_{i+1}, ψ_i = Σ_j δ_ij Θ_ij(l_i) (end_rotation="theta", the cross-section
    rotation; the paper says "tangent to the end of the link" — "slope" uses W'(l_i), the centre-line
    tangent, instead). φ_1 = q_1 is absolute. φ is linear in the coordinates, so φ̈ = J_φ z̈ exactly.
  * generalized coordinates, paper eq. 13: z = [q1 δ11..δ1m1 q2 δ21.. ... qn δn1.. X1 X2] with (X1, X2)
    the position of O_1 (omitted for base="pinned", where O_1 is fixed at `base_position`).

Gibbs function S = Σ_i ∫ [½ ρA a·a + ½ ρI (φ̈_i + θ̈_i)²] dη (eq. 7, planar: the ω̃Jω term vanishes).
With a = A(η) z̈ + b(η), ∂S/∂z̈ = M z̈ + h where, per link, in the link frame (P = Rᵀ J_O, c = Rᵀ c_O):
    M_i = Bᵀ L B,  B = [P_1; P_2; J_φ; E_i] (E_i selects δ_i), with the modal "link mass"
        L = [[m, 0, −s_w, 0], [0, m, m_1, ∫ρAW], [−s_w, m_1, I_O + δᵀM_tδ, ∫ρAxW + ∫ρIΘ], [.., M_t + M_r]],
    h_i = Bᵀ [m c_1 − φ̇² m_1 − 2φ̇ ∫ρAẇ,  m c_2 − φ̇² s_w,  m_1 c_2 − s_w c_1 + 2φ̇ δᵀM_tδ̇,
              ∫ρAW c_2 − φ̇² M_t δ],
s_w = ∫ρA w. Gravity enters as the acceleration +g X2 of the reference (c_O1 = (0, g)). The recursion
J_O(i+1) = J_O(i) + R(φ_i)[−w_l J_φ; l J_φ + W_lᵀ E_i], c_O(i+1) = c_O(i) + R(φ_i)[−φ̇² l − 2φ̇ẇ_l; −φ̇² w_l]
runs forward along the chain; the elastic and Rayleigh terms are ∂V_e/∂δ = Kδ, ∂D/∂δ̇ = Dδ̇ (eqs. 8–11).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from biobullet.core.errors import ModelError, SolverError

BASES = ("floating", "pinned")
END_ROTATIONS = ("theta", "slope")


@dataclass(frozen=True)
class FlexibleLinkData:
    """Assumed-modes data of one link (kg, m, N/m, N s/m); m = number of modes (0: rigid link).

    inertia is ∫(ρA x² + ρI) dx about the start point; rotary_inertia = ∫ρI dx (included in inertia).
    """

    name: str
    length: float
    mass: float
    first_moment: float
    inertia: float
    rotary_inertia: float
    w_integral: np.ndarray
    xw_integral: np.ndarray
    theta_integral: np.ndarray
    mass_translational: np.ndarray
    mass_rotary: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    end_w: np.ndarray  # W_j(l)
    end_rotation: np.ndarray  # Θ_j(l) or W_j'(l) (see ElasticChain.end_rotation)
    boundary: str = "rigid"
    modes: Any = field(default=None, repr=False)  # BeamModes (for shapes and plots) or None

    @property
    def n_modes(self) -> int:
        return int(self.w_integral.size)

    @classmethod
    def rigid(cls, name: str, length: float, mass: float, rotary_inertia: float = 0.0) -> "FlexibleLinkData":
        """A uniform rigid link (no modes) of given length (m), mass (kg) and ∫ρI dx (kg m²)."""
        e = np.zeros(0)
        z = np.zeros((0, 0))
        return cls(name, float(length), float(mass), 0.5 * mass * length, mass * length ** 2 / 3.0
                   + rotary_inertia, float(rotary_inertia), e, e, e, z, z, z, z, e, e)

    def shape(self, x: np.ndarray) -> np.ndarray:
        """W_j(x) as an (m, len(x)) array (needs `modes`)."""
        if self.n_modes == 0:
            return np.zeros((0, np.size(x)))
        if self.modes is None:
            raise ModelError(f"link {self.name!r} has no mode shapes", attribute="modes")
        return np.array([s.W(x) for s in self.modes.shapes[: self.n_modes]])


def link_from_beam(name: str, *, length: float, youngs_modulus: float, shear_modulus: float,
                   shear_coefficient: float, area: float, second_moment: float, density: float,
                   boundary: str, n_modes: int = 1, theory: str = "timoshenko", kelvin_voigt: float = 0.0,
                   air_damping: float = 0.0, end_rotation: str = "theta") -> FlexibleLinkData:
    """Link data from `flexible.beam_modes` + `flexible.modal_integrals` (n_modes = 0: rigid link)."""
    from biobullet.flexible import beam_modes, modal_integrals
    if end_rotation not in END_ROTATIONS:
        raise ModelError(f"unknown end_rotation {end_rotation!r}", attribute="end_rotation",
                         expected=" or ".join(END_ROTATIONS))
    if isinstance(n_modes, bool) or not isinstance(n_modes, (int, np.integer)) or n_modes < 0:
        raise ModelError(f"'n_modes' must be an integer >= 0, got {n_modes!r}", attribute="n_modes",
                         expected="an integer >= 0")
    if n_modes == 0:
        rho_i = density * second_moment * length if theory == "timoshenko" else 0.0
        return FlexibleLinkData.rigid(name, length, density * area * length, rho_i)
    modes = beam_modes(length, youngs_modulus, shear_modulus, shear_coefficient, area, second_moment,
                       density, boundary, int(n_modes), theory)
    mi = modal_integrals(modes, kelvin_voigt=kelvin_voigt, air_damping=air_damping)
    timo = theory == "timoshenko"
    zero = np.zeros(n_modes)
    rot = mi.end_theta[1] if end_rotation == "theta" else mi.end_dw[1]
    rho_i_l = density * second_moment * length if timo else 0.0
    return FlexibleLinkData(
        name=name, length=float(length), mass=mi.link_mass, first_moment=mi.link_first_moment,
        inertia=mi.link_mass * length ** 2 / 3.0 + rho_i_l, rotary_inertia=rho_i_l,
        w_integral=mi.w_integral.copy(), xw_integral=mi.xw_integral.copy(),
        theta_integral=mi.theta_integral.copy() if timo else zero,
        mass_translational=mi.mass_translational.copy(),
        mass_rotary=mi.mass_rotary.copy() if timo else np.zeros((n_modes, n_modes)),
        stiffness=mi.stiffness.copy(), damping=mi.kelvin_voigt + mi.air_damping,
        end_w=mi.end_w[1].copy(), end_rotation=np.asarray(rot, dtype=float).copy(), boundary=boundary,
        modes=modes)


@dataclass(frozen=True)
class ChainKinematics:
    """Joint points O_1..O_{n+1}: positions p (n+1, 2), velocities v (n+1, 2), Jacobians J (n+1, 2, N);
    link angles φ (n) and rates φ̇ (n)."""

    p: np.ndarray
    v: np.ndarray
    J: np.ndarray
    phi: np.ndarray
    phi_dot: np.ndarray


class ElasticChain:
    """A planar open chain of flexible links with a floating (or pinned) base, plus ground contacts.

    contact_points: indices k of joint points O_{k+1} (0-based) that may touch the ground y = 0;
    normal_law / friction_law: `biobullet.contact` laws (None: no contact). Derived arrays (read by the compiled
    twin and the mirror symmetry): modal_indices (every modal coordinate), stiffness_matrix K and damping_matrix D
    (N × N), angle_rows J_φ (n × N, φ = J_φ z), end_deflection_rows (n × N), link_mass_blocks (constant parts of
    each link's mass matrix).
    """

    def __init__(self, links: list[FlexibleLinkData] | tuple[FlexibleLinkData, ...], *, gravity: float = 9.81,
                 base: str = "floating", base_position: tuple[float, float] = (0.0, 0.0),
                 end_rotation: str = "theta", normal_law: Any = None, friction_law: Any = None,
                 contact_points: tuple[int, ...] | None = None, ground_height: float = 0.0,
                 initial_angles: tuple[float, ...] | None = None,
                 initial_base: tuple[float, float] = (0.0, 0.0), name: str = "elastic_chain") -> None:
        links = tuple(links)
        if not links or not all(isinstance(l, FlexibleLinkData) for l in links):
            raise ModelError("'links' must be a non-empty sequence of FlexibleLinkData", attribute="links")
        if base not in BASES:
            raise ModelError(f"unknown base {base!r}", attribute="base", expected=" or ".join(BASES))
        if end_rotation not in END_ROTATIONS:
            raise ModelError(f"unknown end_rotation {end_rotation!r}", attribute="end_rotation",
                             expected=" or ".join(END_ROTATIONS))
        if not math.isfinite(gravity):
            raise ModelError("'gravity' must be finite", attribute="gravity")
        self.links, self.gravity, self.base, self.end_rotation = links, float(gravity), base, end_rotation
        self.base_position = np.asarray(base_position, dtype=float)
        self.normal_law, self.friction_law = normal_law, friction_law
        self.ground_height, self.name = float(ground_height), name
        n = len(links)
        npts = n + 1
        self.contact_points = tuple(range(npts)) if contact_points is None else tuple(contact_points)
        if any(not 0 <= k < npts for k in self.contact_points):
            raise ModelError(f"contact point index out of range 0..{n}", attribute="contact_points")
        idx_q, idx_d, names, i0 = [], [], [], 0
        for i, link in enumerate(links):
            idx_q.append(i0)
            names.append(f"q{i + 1}")
            idx_d.append(np.arange(i0 + 1, i0 + 1 + link.n_modes))
            names += [f"d{i + 1}{j + 1}" for j in range(link.n_modes)]
            i0 += 1 + link.n_modes
        self.idx_x = np.array([i0, i0 + 1]) if base == "floating" else np.zeros(0, dtype=int)
        if base == "floating":
            names += ["X1", "X2"]
        self.idx_q, self.idx_d = np.array(idx_q), tuple(idx_d)
        self.coordinate_names = tuple(names)
        self.n_coordinates = len(names)
        ang = (0.0,) * n if initial_angles is None else tuple(float(a) for a in initial_angles)
        if len(ang) != n:
            raise ModelError(f"'initial_angles' needs {n} values", attribute="initial_angles")
        self.initial_angles, self.initial_base = ang, tuple(float(v) for v in initial_base)
        self.modal_indices = np.concatenate(self.idx_d) if n else np.zeros(0, dtype=int)
        self.stiffness_matrix = np.zeros((self.n_coordinates,) * 2)
        self.damping_matrix = np.zeros((self.n_coordinates,) * 2)
        for link, d in zip(links, self.idx_d):
            self.stiffness_matrix[np.ix_(d, d)] = link.stiffness
            self.damping_matrix[np.ix_(d, d)] = link.damping
        self._Jphi_local = []  # constant J_φ rows (φ is linear in z)
        row = np.zeros(self.n_coordinates)
        for i, link in enumerate(links):
            if i > 0:
                row = row.copy()
                row[self.idx_d[i - 1]] += links[i - 1].end_rotation
            row = row.copy()
            row[self.idx_q[i]] += 1.0
            self._Jphi_local.append(row)
        self.angle_rows = np.array(self._Jphi_local)
        self._precompute()

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_model_file(cls, path: str | Path, *, joint_limits: bool = True, **overrides: Any) -> "ElasticChain":
        """Build from a URDF with `<flexible>` (and optional `<contact>`) elements; see gibbs_appell_io. The chain
        has no joint stops: a URDF `<limit>` on its joints is refused (ModelError naming the joint), or ignored with
        joint_limits=False (as `load_model(path, joint_limits=False)` ignores it)."""
        from biobullet.flexible.gibbs_appell_io import chain_from_model_file
        return chain_from_model_file(cls, path, joint_limits=joint_limits, **overrides)

    def compiled(self) -> Any:
        """The kernels of this chain's drop (`gibbs_appell_kernels.CompiledChain`, built once), or None when its
        contact laws are not compiled."""
        from biobullet.flexible.gibbs_appell_kernels import CompiledChain
        if "_drop_kernels" not in self.__dict__:
            self.__dict__["_drop_kernels"] = CompiledChain.build(self)
        return self.__dict__["_drop_kernels"]

    def _mechanics(self) -> Any:
        """The kernels of this chain with contact off (`CompiledChain.mechanics`), built once."""
        from biobullet.flexible.gibbs_appell_kernels import CompiledChain
        if "_mechanics_kernels" not in self.__dict__:
            self.__dict__["_mechanics_kernels"] = CompiledChain.mechanics(self)
        return self.__dict__["_mechanics_kernels"]

    # ------------------------------------------------------------------ state helpers
    def initial_state(self) -> tuple[np.ndarray, np.ndarray]:
        """(z0, ż0): initial joint angles and base position, zero modal amplitudes and velocities."""
        z = np.zeros(self.n_coordinates)
        z[self.idx_q] = self.initial_angles
        if self.base == "floating":
            z[self.idx_x] = self.initial_base
        return z, np.zeros(self.n_coordinates)

    def modal_amplitudes(self, z: np.ndarray) -> list[np.ndarray]:
        """δ_i per link (m), from z (…, N)."""
        z = np.asarray(z)
        return [z[..., d] for d in self.idx_d]

    # ------------------------------------------------------------------ kinematics
    def _precompute(self) -> None:
        """Constant per-link arrays used by the recursion (end deflection rows, constant link-mass parts)."""
        n, N = len(self.links), self.n_coordinates
        self.end_deflection_rows = np.zeros((n, N))
        self.link_mass_blocks = []
        for i, link in enumerate(self.links):
            d, m = self.idx_d[i], link.n_modes
            self.end_deflection_rows[i, d] = link.end_w
            L = np.zeros((3 + m, 3 + m))
            L[0, 0] = L[1, 1] = link.mass
            L[1, 2] = L[2, 1] = link.first_moment
            L[2, 2] = link.inertia
            L[1, 3:] = L[3:, 1] = link.w_integral
            L[2, 3:] = L[3:, 2] = link.xw_integral + link.theta_integral
            L[3:, 3:] = link.mass_translational + link.mass_rotary
            self.link_mass_blocks.append(L)

    def point_heights(self, z: np.ndarray) -> np.ndarray:
        """y of the joint points O_1..O_{n+1} (m), cheap (used by the event functions)."""
        return self._mechanics().point_heights(z)

    def kinematics(self, z: np.ndarray, zd: np.ndarray) -> ChainKinematics:
        """Forward recursion over the chain (see module docstring; the kernel `gibbs_appell_kernels` runs)."""
        work = self._mechanics().terms(z, zd)
        return ChainKinematics(work.p.copy(), work.v.copy(), work.jac.copy(), work.phi.copy(), work.phid.copy())

    # ------------------------------------------------------------------ Gibbs–Appell terms
    def mass_and_bias(self, z: np.ndarray, zd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """M(z) (N×N) and h(z, ż) (N) of ∂S/∂z̈ = M z̈ + h (velocity and gravity terms, no elastic ones)."""
        work = self._mechanics().terms(z, zd)
        return work.mass.copy(), work.bias.copy()

    # The vocabulary of every model kind (`biobullet.Model`'s methods): q = z, v = ż, `tau` = Q; t is accepted for
    # the shared signature (the chain is autonomous).
    def mass_matrix(self, q: np.ndarray, t: float = 0.0) -> np.ndarray:
        """Generalized inertia matrix I(Z) of eq. 15 (symmetric positive definite)."""
        return self.mass_and_bias(np.asarray(q, float), np.zeros(self.n_coordinates))[0]

    def bias_forces(self, q: np.ndarray, v: np.ndarray, t: float = 0.0) -> np.ndarray:
        """h(q, v) of M v̇ + h = Q: velocity and gravity terms plus the internal (elastic and damping) forces'
        negative, so that `forward_dynamics` = M⁻¹ (Q − h)."""
        q, v = np.asarray(q, float), np.asarray(v, float)
        return self.mass_and_bias(q, v)[1] - self.internal_forces(q, v)

    def internal_forces(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """−∂V_e/∂z − ∂D/∂ż: elastic (−Kδ) and Kelvin–Voigt + air damping (−Dδ̇) generalized forces."""
        return -(self.stiffness_matrix @ q) - (self.damping_matrix @ v)

    def forward_dynamics(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray | None = None,
                         t: float = 0.0) -> np.ndarray:
        """v̇ = z̈ from M z̈ = −h − Kδ − Dδ̇ + Q (`tau` = Q: extra generalized forces, e.g. contact Σ J_kᵀ F_k)."""
        M, h = self.mass_and_bias(q, v)
        rhs = -h + self.internal_forces(q, v)
        if tau is not None:
            rhs = rhs + tau
        try:
            return np.linalg.solve(M, rhs)
        except np.linalg.LinAlgError as exc:  # pragma: no cover - M is SPD for valid data
            raise SolverError(f"singular inertia matrix: {exc}") from exc

    # ------------------------------------------------------------------ energies (eq. 31)
    def energies(self, z: np.ndarray, zd: np.ndarray) -> tuple[float, float, float]:
        """(T = ½ żᵀ M ż, V_g = g Σ_i ∫ρA y dη with the ground y = 0 as reference, V_e = ½ δᵀKδ) in J: the drop
        kernel's sampled outputs (`gibbs_appell_kernels._elastic_outputs_py`) at one state."""
        n = len(self.links) + 1
        out = self._mechanics().outputs(np.asarray(z, float)[None, :], np.asarray(zd, float)[None, :],
                                        np.zeros((1, n), bool), np.zeros((1, n)))
        return float(out[4][0]), float(out[5][0]), float(out[6][0])

    def kinetic_energy(self, z: np.ndarray, zd: np.ndarray) -> float:
        """T = ½ żᵀ M ż (J)."""
        return self.energies(z, zd)[0]

    def gravity_energy(self, z: np.ndarray) -> float:
        """V_g = g Σ_i ∫ρA y dη (J), ground y = 0 as reference."""
        return self.energies(z, np.zeros(self.n_coordinates))[1]

    def elastic_energy(self, z: np.ndarray) -> float:
        """V_e = ½ δᵀKδ (J), eq. 8."""
        return 0.5 * float(z @ self.stiffness_matrix @ z)

    def dissipation_power(self, zd: np.ndarray) -> float:
        """Power of the damping forces −żᵀDż (W, ≤ 0)."""
        return -float(zd @ self.damping_matrix @ zd)

    def link_points(self, z: np.ndarray, n_points: int = 41, scale: float = 1.0) -> list[np.ndarray]:
        """Deformed centre lines (n_points, 2) per link, deflection magnified by `scale` (joints exact)."""
        kin = self.kinematics(z, np.zeros(self.n_coordinates))
        out = []
        for i, link in enumerate(self.links):
            x = np.linspace(0.0, link.length, n_points)
            w = link.shape(x).T @ z[self.idx_d[i]] if link.n_modes else np.zeros_like(x)
            cs, sn = math.cos(kin.phi[i]), math.sin(kin.phi[i])
            pts = kin.p[i] + np.outer(x, (cs, sn)) + np.outer(scale * w, (-sn, cs))
            out.append(pts)
        return out


__all__ = ["ElasticChain", "FlexibleLinkData", "ChainKinematics", "link_from_beam", "BASES", "END_ROTATIONS"]
