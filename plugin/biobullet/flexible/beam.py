"""Natural modes of a uniform Timoshenko (or Euler–Bernoulli) beam.

Equations (x in m, t in s, w transverse deflection, θ cross-section rotation):

    ρA w_tt = κGA (w_x − θ)_x              ρI θ_tt = EI θ_xx + κGA (w_x − θ)

With ξ = x/L, Ω² = ρA ω² L⁴/EI, r² = I/(A L²) (rotary inertia), s² = EI/(κGA L²) (shear), a solution
W ~ exp(i k ξ) needs σ = k² to solve the dispersion relation

    σ² − (r² + s²) Ω² σ + Ω² (r² s² Ω² − 1) = 0.

The larger root σ₁ = λ² > 0 gives the trigonometric wavenumber λ = αωL of paper 002 (eq. 28); the other
root σ₂ is negative (σ₂ = −μ², hyperbolic wavenumber μ = βωL) below the transition frequency
ω_c = sqrt(κGA/(ρI)) and positive (a second trigonometric wavenumber) above it. Euler–Bernoulli is r = s = 0.

The rotation follows from the first equation, Θ_ξ = W_ξξ + c W with c = s² Ω², e.g. W = sin(λξ) has
Θ = a cos(λξ), a = (λ² − c)/λ, and W = sinh(μξ) has Θ = b cosh(μξ), b = (μ² + c)/μ (paper eqs. 28–29).

Boundary conditions (per end): clamped W = Θ = 0; pinned (simply supported) W = 0, EIΘ_x = 0;
free EIΘ_x = 0 and shear κGA(W_x − Θ) = −(EIΘ_xx + ρIω²Θ) = 0 (the latter form stays well conditioned
for slender beams and is the Euler–Bernoulli W_xxx = 0 when r = s = 0).

The frequency equation det M(Ω) = 0 (4×4 boundary matrix) is written in a basis that is an entire
function of σ₂ (no singularity at the transition frequency) and, for large μ, in the exponentially scaled
basis exp(μ(ξ−1)), exp(−μξ) with a sign factor so that both forms have the same sign everywhere. Roots are
bracketed by a scan whose step keeps every wavenumber's phase increment ≤ π/16, then refined with brentq.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
import numpy as np
from scipy.optimize import brentq, minimize_scalar

from biobullet.core.attributes import to_float
from biobullet.core.errors import ModelError, SolverError

BOUNDARIES = ("ss", "cc", "sc", "cs", "cf")
THEORIES = ("timoshenko", "euler_bernoulli")
_END_KIND = {"s": "pinned", "c": "clamped", "f": "free"}
_MU_SWITCH = 1.0  # hyperbolic wavenumber above which the exponentially scaled basis is used
_PHASE_STEP = math.pi / 16.0


@dataclass(frozen=True)
class BeamParameters:
    """Uniform beam data in SI units and the derived dimensionless groups."""

    length: float  # m
    youngs_modulus: float  # Pa
    shear_modulus: float  # Pa
    shear_coefficient: float  # κ, -
    area: float  # m²
    second_moment: float  # m⁴
    density: float  # kg/m³
    boundary: str
    theory: str

    @property
    def r2(self) -> float:
        """Rotary-inertia group r² = I/(A L²) (0 for Euler–Bernoulli)."""
        if self.theory == "euler_bernoulli":
            return 0.0
        return self.second_moment / (self.area * self.length ** 2)

    @property
    def s2(self) -> float:
        """Shear group s² = EI/(κGA L²) (0 for Euler–Bernoulli)."""
        if self.theory == "euler_bernoulli":
            return 0.0
        return (self.youngs_modulus * self.second_moment
                / (self.shear_coefficient * self.shear_modulus * self.area * self.length ** 2))

    @property
    def omega_scale(self) -> float:
        """ω = Ω · omega_scale, omega_scale = sqrt(EI/(ρA L⁴)) in rad/s."""
        return math.sqrt(self.youngs_modulus * self.second_moment
                         / (self.density * self.area * self.length ** 4))


def dispersion_roots(omega_dimless: float, r2: float, s2: float) -> tuple[float, float]:
    """Return (σ₁, σ₂) for dimensionless frequency Ω; σ₁ = λ² > 0, σ₂ < 0 below the transition."""
    om2 = omega_dimless * omega_dimless
    p = (r2 + s2) * om2
    q = om2 * (r2 * s2 * om2 - 1.0)
    sigma1 = 0.5 * (p + math.sqrt((r2 - s2) ** 2 * om2 * om2 + 4.0 * om2))
    sigma2 = q / sigma1  # product of the roots; no cancellation
    return sigma1, sigma2


def _c_s(sigma: float, xi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Entire functions C = cos(√σ ξ), S = sin(√σ ξ)/√σ (cosh/sinh for σ < 0, 1/ξ at σ = 0)."""
    if sigma > 0.0:
        k = math.sqrt(sigma)
        return np.cos(k * xi), np.sin(k * xi) / k
    if sigma < 0.0:
        m = math.sqrt(-sigma)
        if m > 1e-8:
            return np.cosh(m * xi), np.sinh(m * xi) / m
    return np.ones_like(xi), xi.copy()


def basis(omega_dimless: float, r2: float, s2: float, xi: np.ndarray) -> tuple[np.ndarray, float]:
    """Four independent solutions at ξ: array (5, 4, n) of [W, W_ξ, Θ̂, Θ̂_ξ, Θ̂_ξξ] with Θ̂ = LΘ.

    Also returns the sign factor that makes det of the boundary matrix in this basis have the same
    sign as in the entire (transition-regular) basis.
    """
    xi = np.asarray(xi, dtype=float)
    sig1, sig2 = dispersion_roots(omega_dimless, r2, s2)
    c = s2 * omega_dimless ** 2
    out = np.empty((5, 4) + xi.shape)
    lam = math.sqrt(sig1)
    a = (sig1 - c) / lam
    sn, cs = np.sin(lam * xi), np.cos(lam * xi)
    # column 0: W = sin, Θ = a cos ; column 1: W = cos, Θ = −a sin
    out[:, 0] = [sn, lam * cs, a * cs, -a * lam * sn, -a * lam * lam * cs]
    out[:, 1] = [cs, -lam * sn, -a * sn, -a * lam * cs, a * lam * lam * sn]
    sign = 1.0
    mu = math.sqrt(-sig2) if sig2 < 0.0 else 0.0
    if mu >= _MU_SWITCH:
        b = (mu * mu + c) / mu
        ep, em = np.exp(mu * (xi - 1.0)), np.exp(-mu * xi)
        out[:, 2] = [ep, mu * ep, b * ep, b * mu * ep, b * mu * mu * ep]
        out[:, 3] = [em, -mu * em, -b * em, b * mu * em, -b * mu * mu * em]
        sign = -1.0
    else:
        cc_, ss_ = _c_s(sig2, xi)
        d = c - sig2  # > 0 for every Ω
        out[:, 2] = [cc_, -sig2 * ss_, d * ss_, d * cc_, -sig2 * d * ss_]
        out[:, 3] = [-sig2 * ss_, -sig2 * cc_, d * cc_, -sig2 * d * ss_, -sig2 * d * cc_]
    return out, sign


def _end_rows(kind: str, vals: np.ndarray, r2: float, omega_dimless: float) -> np.ndarray:
    """Two boundary-condition rows (2, 4) from basis values (5, 4) at one end."""
    w, _, th, th1, th2 = vals
    if kind == "clamped":
        return np.array([w, th])
    if kind == "pinned":
        return np.array([w, th1])
    return np.array([th1, th2 + r2 * omega_dimless ** 2 * th])


def boundary_matrix(omega_dimless: float, params: BeamParameters) -> tuple[np.ndarray, float]:
    """Boundary matrix M(Ω) (4×4) and its sign factor (see `basis`)."""
    vals, sign = basis(omega_dimless, params.r2, params.s2, np.array([0.0, 1.0]))
    k0, k1 = (_END_KIND[ch] for ch in params.boundary)
    m = np.vstack([_end_rows(k0, vals[..., 0], params.r2, omega_dimless),
                   _end_rows(k1, vals[..., 1], params.r2, omega_dimless)])
    return m, sign


def frequency_function(omega_dimless: float, params: BeamParameters) -> float:
    """Scaled determinant whose sign changes mark natural frequencies (continuous in sign across bases)."""
    m, sign = boundary_matrix(omega_dimless, params)
    norms = np.linalg.norm(m, axis=1)  # a boundary row never vanishes identically (basis spans the state)
    return sign * float(np.linalg.det(m / norms[:, None]))


def frequency_residual(omega_dimless: float, params: BeamParameters) -> float:
    """Relative residual |det M| / Π‖row‖ ∈ [0, 1] (Hadamard-normalised) of the frequency equation at Ω."""
    return abs(frequency_function(omega_dimless, params))


def _step(omega: float, r2: float, s2: float) -> float:
    """Frequency step keeping phase increments of both wavenumbers ≤ π/16."""
    sig1, sig2 = dispersion_roots(omega, r2, s2)
    p = r2 + s2
    f_om = lambda sg: -2.0 * p * omega * sg + 4.0 * r2 * s2 * omega ** 3 - 2.0 * omega
    d1 = -f_om(sig1) / (2.0 * sig1 - p * omega ** 2)
    d2 = -f_om(sig2) / (2.0 * sig2 - p * omega ** 2)
    steps = []
    for sig, dsig in ((sig1, d1), (sig2, d2)):
        nu = math.sqrt(abs(sig))
        if dsig != 0.0:
            steps.append(((nu + _PHASE_STEP) ** 2 - nu ** 2) / abs(dsig))
    return min(steps)


@dataclass(frozen=True)
class ModeShape:
    """One normalised mode: W(x) (max|W| = 1 on [0, L], dimensionless) and Θ(x) (rad per unit W, 1/m).

    Sign convention: W > 0 on the first lobe next to x = 0 (for the first mode of ss/cc/sc/cs/cf, W ≥ 0).
    Exception: the Timoshenko ss beam has a pure-rotation mode at ω = ω_c (W ≡ 0, Θ uniform); it is
    normalised to L·Θ = +1.
    """

    omega: float  # rad/s
    omega_dimless: float
    length: float  # m
    r2: float
    s2: float
    coefficients: np.ndarray = field(repr=False)  # on the internal basis

    def _eval(self, x: np.ndarray | float) -> np.ndarray:
        xi = np.asarray(x, dtype=float) / self.length
        vals, _ = basis(self.omega_dimless, self.r2, self.s2, np.atleast_1d(xi))
        res = np.tensordot(vals, self.coefficients, axes=([1], [0]))  # (5, n)
        return res.reshape((5,) + np.shape(xi))

    def W(self, x: np.ndarray | float) -> np.ndarray:
        """Transverse shape W(x), dimensionless."""
        return self._eval(x)[0]

    def Theta(self, x: np.ndarray | float) -> np.ndarray:
        """Cross-section rotation Θ(x) in 1/m (rad per metre of modal coordinate)."""
        return self._eval(x)[2] / self.length

    def dW(self, x: np.ndarray | float) -> np.ndarray:
        """W'(x) in 1/m."""
        return self._eval(x)[1] / self.length

    def dTheta(self, x: np.ndarray | float) -> np.ndarray:
        """Θ'(x) (curvature) in 1/m²."""
        return self._eval(x)[3] / self.length ** 2

    def d2W(self, x: np.ndarray | float) -> np.ndarray:
        """W''(x) = Θ' − (ρω²/κG) W in 1/m² (from the shear equation)."""
        v = self._eval(x)
        c = self.s2 * self.omega_dimless ** 2
        return (v[3] - c * v[0]) / self.length ** 2

    def paper_form(self) -> dict[str, float]:
        """Coefficients as in paper 002 Table 2 / eqs. 28–29 (with η = x/L, valid below the transition):

        W = C1 sin(λη) + C2 cos(λη) + C3 sinh(μη) + C4 cosh(μη),
        LΘ = a C1 cos(λη) − a C2 sin(λη) + b C3 cosh(μη) + b C4 sinh(μη).
        """
        sig1, sig2 = dispersion_roots(self.omega_dimless, self.r2, self.s2)
        if sig2 >= 0.0:
            raise ModelError("paper_form is defined below the transition frequency only",
                             attribute="omega", expected="omega < sqrt(kappa G A/(rho I))")
        lam, mu = math.sqrt(sig1), math.sqrt(-sig2)
        c = self.s2 * self.omega_dimless ** 2
        k = self.coefficients
        if mu >= _MU_SWITCH:  # A e^{μ(ξ−1)} + B e^{−μξ}
            ea, eb = k[2] * math.exp(-mu), k[3]
            c3, c4 = ea - eb, ea + eb
        else:  # P = cosh + ..., Q = μ² sinh/μ
            c4, c3 = k[2], -sig2 * k[3] / mu
        return {"lambda": lam, "mu": mu, "C1": float(k[0]), "C2": float(k[1]), "C3": float(c3),
                "C4": float(c4), "a": (lam * lam - c) / lam, "b": (mu * mu + c) / mu}


@dataclass(frozen=True)
class BeamModes:
    """Result of `beam_modes`.

    omega: natural angular frequencies (rad/s), ascending. wavenumbers: (n, 2) array [λ, μ] = [αωL, βωL]
    of paper 002 Table 2 (trigonometric and hyperbolic wavenumbers times L; above the transition μ is
    reported as −ν where ν is the second trigonometric wavenumber). For Euler–Bernoulli λ = μ = β_n L.
    shapes: ModeShape per mode. residuals: relative frequency-equation residual at each root.
    """

    params: BeamParameters
    omega: np.ndarray
    omega_dimless: np.ndarray
    wavenumbers: np.ndarray
    shapes: tuple[ModeShape, ...]
    residuals: np.ndarray


def make_parameters(length: float, youngs_modulus: float, shear_modulus: float,
                    shear_coefficient: float, area: float, second_moment: float, density: float,
                    boundary: str, theory: str = "timoshenko") -> BeamParameters:
    """Validate beam data (ModelError naming the argument) and return BeamParameters."""
    vals = {n: to_float(None, n, v, positive=True) for n, v in (
        ("length", length), ("youngs_modulus", youngs_modulus), ("shear_modulus", shear_modulus),
        ("shear_coefficient", shear_coefficient), ("area", area), ("second_moment", second_moment),
        ("density", density))}
    if vals["shear_coefficient"] > 1.2:
        raise ModelError(f"'shear_coefficient' must lie in (0, 1.2], got {shear_coefficient!r}",
                         attribute="shear_coefficient", expected="0 < kappa <= 1.2")
    if not isinstance(boundary, str) or boundary not in BOUNDARIES:
        raise ModelError(f"unknown 'boundary' {boundary!r}", attribute="boundary",
                         expected="one of " + ", ".join(BOUNDARIES))
    if not isinstance(theory, str) or theory not in THEORIES:
        raise ModelError(f"unknown 'theory' {theory!r}", attribute="theory",
                         expected="one of " + ", ".join(THEORIES))
    return BeamParameters(boundary=boundary, theory=theory, **vals)


def _shape_at_root(omega_d: float, params: BeamParameters) -> ModeShape:
    m, _ = boundary_matrix(omega_d, params)
    _, _, vt = np.linalg.svd(m / np.linalg.norm(m, axis=1)[:, None])
    coef = vt[-1]
    shape = ModeShape(omega_d * params.omega_scale, omega_d, params.length, params.r2, params.s2, coef)
    length = params.length
    x = np.linspace(0.0, length, 2049)
    w = shape.W(x)
    i = int(np.argmax(np.abs(w)))
    peak = abs(w[i])
    lo, hi = x[max(i - 1, 0)], x[min(i + 1, x.size - 1)]
    if hi > lo:
        res = minimize_scalar(lambda t: -abs(float(shape.W(t))), bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-12 * length})
        peak = max(peak, -float(res.fun))
    theta_peak = float(np.max(np.abs(shape.Theta(x)))) * length
    if peak <= 1e-8 * theta_peak:  # pure-rotation mode (W ≡ 0, ss at ω = ω_c): normalise LΘ instead
        w, peak = shape.Theta(x) * length, theta_peak
    first = int(np.argmax(np.abs(w) > 1e-3 * peak))
    scale = (1.0 if w[first] > 0.0 else -1.0) / peak
    return ModeShape(shape.omega, omega_d, length, params.r2, params.s2, coef * scale)


def solve_modes(params: BeamParameters, n_modes: int) -> BeamModes:
    """Find the first n_modes roots of the frequency equation and their normalised shapes."""
    r2, s2 = params.r2, params.s2
    roots: list[float] = []
    om = 1e-3
    f_prev = frequency_function(om, params)
    for _ in range(200000 + 400 * n_modes):
        om_next = om + _step(om, r2, s2)
        f_next = frequency_function(om_next, params)
        if f_prev == 0.0:
            roots.append(om)
        elif f_prev * f_next < 0.0:
            roots.append(brentq(frequency_function, om, om_next, args=(params,), xtol=1e-300,
                                rtol=4.0 * np.finfo(float).eps, maxiter=500))
        if len(roots) >= n_modes:
            break
        om, f_prev = om_next, f_next
    else:
        raise SolverError(f"found only {len(roots)} of {n_modes} modes for boundary {params.boundary!r}")
    om_d = np.array(roots[:n_modes])
    shapes = tuple(_shape_at_root(o, params) for o in om_d)
    waves = np.empty((n_modes, 2))
    for i, o in enumerate(om_d):
        sig1, sig2 = dispersion_roots(o, r2, s2)
        waves[i] = math.sqrt(sig1), (math.sqrt(-sig2) if sig2 <= 0.0 else -math.sqrt(sig2))
    res = np.array([frequency_residual(o, params) for o in om_d])
    return BeamModes(params, om_d * params.omega_scale, om_d, waves, shapes, res)


def beam_modes(length: float, youngs_modulus: float, shear_modulus: float, shear_coefficient: float,
               area: float, second_moment: float, density: float, boundary: str, n_modes: int,
               theory: str = "timoshenko") -> BeamModes:
    """Natural modes of a uniform beam (SI units: m, Pa, Pa, -, m², m⁴, kg/m³).

    boundary: 'ss', 'cc', 'sc', 'cs', 'cf' (s pinned, c clamped, f free; first letter = end x = 0).
    theory: 'timoshenko' (shear + rotary inertia) or 'euler_bernoulli' (slender limit).
    """
    params = make_parameters(length, youngs_modulus, shear_modulus, shear_coefficient, area,
                             second_moment, density, boundary, theory)
    if isinstance(n_modes, bool) or not isinstance(n_modes, (int, np.integer)) or n_modes < 1:
        raise ModelError(f"'n_modes' must be an integer >= 1, got {n_modes!r}", attribute="n_modes",
                         expected="an integer >= 1")
    return solve_modes(params, int(n_modes))

