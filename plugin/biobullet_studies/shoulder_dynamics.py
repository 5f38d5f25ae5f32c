"""Computations of the shoulder-rhythm study (paper 000): prescribed motion, computed torques, metrics, energy.

Pure functions, no files. Units: angles in rad (the `*_deg` constants in degrees), time s, torques N·m,
energies J. Coordinate order: each model's `coordinate_names` = (plane_of_elevation, elevation, axial_rotation,
elbow_flexion).

Motion (paper 000's Fig. 3 is missing from the source, so this is our choice):

    Hy(t) = c − a·cos(2π t / T),   c = (Hy0 + Hy1)/2,  a = (Hy1 − Hy0)/2,   Hy0 = −20°, Hy1 = 120°, T = 4 s

i.e. the plane of elevation sweeps from −20° (slightly behind the frontal plane) through abduction (0°) and
scaption (~30°) to 120° (across the front of the body) and back. A cosine is C∞ and periodic, starts and ends at
rest (q̇ = 0, so no torque step at t = 0), has q̈ = ±a(2π/T)² at the ends (the arm must be accelerated
from rest, which it is in any real reach), and its peak speed aπ/(T/2) ≈ 110 °/s is a moderate reaching speed.
Elevation is held at 50° (case 1) or 90° (case 2), axial rotation at −30° (paper 000), and the elbow at 0°
(straight: the paper's model has no forearm, so its forearm and hand ride rigidly on the humerus).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biobullet.analysis.metrics import nrmse, pearson, rmse  # noqa: F401  (re-exported)

PLANE_START_DEG = -20.0
PLANE_PEAK_DEG = 120.0
PERIOD = 4.0  # s
AXIAL_ROTATION_DEG = -30.0
ELBOW_FLEXION_DEG = 0.0
CASES_DEG = {"case1": 50.0, "case2": 90.0}  # held elevation per case
#: the reference (original) rhythm first: NRMSE is normalised by its torque range
MODELS = {"de_groot": "shoulder_rhythm.urdf", "holzbaur": "shoulder_simplified.urdf"}
COMPARED = ("plane_of_elevation", "elevation")


@dataclass(frozen=True)
class Motion:
    """Prescribed generalized motion: cosine plane-of-elevation sweep, other coordinates held (see module doc)."""

    elevation_deg: float
    plane_start_deg: float = PLANE_START_DEG
    plane_peak_deg: float = PLANE_PEAK_DEG
    period: float = PERIOD
    axial_rotation_deg: float = AXIAL_ROTATION_DEG
    elbow_flexion_deg: float = ELBOW_FLEXION_DEG

    def __call__(self, t, names) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q, q̇, q̈) at times t (s), each (N, len(names)), columns in the order of `names` (rad, rad/s, rad/s²)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        centre = np.radians(0.5 * (self.plane_start_deg + self.plane_peak_deg))
        amplitude = np.radians(0.5 * (self.plane_peak_deg - self.plane_start_deg))
        omega = 2.0 * np.pi / self.period
        held = {"elevation": self.elevation_deg, "axial_rotation": self.axial_rotation_deg,
                "elbow_flexion": self.elbow_flexion_deg}
        q, v, a = (np.zeros((t.size, len(names))) for _ in range(3))
        for k, name in enumerate(names):
            if name == "plane_of_elevation":
                q[:, k] = centre - amplitude * np.cos(omega * t)
                v[:, k] = amplitude * omega * np.sin(omega * t)
                a[:, k] = amplitude * omega ** 2 * np.cos(omega * t)
            else:
                q[:, k] = np.radians(held[name])
        return q, v, a


@dataclass
class InverseDynamics:
    """Computed torques along a motion: Q = M(q) q̈ + h(q, q̇) (N·m), with the energies used by the power check."""

    t: np.ndarray          # (N,) s
    names: tuple[str, ...]
    q: np.ndarray          # (N, nv) rad
    v: np.ndarray
    a: np.ndarray
    torque: np.ndarray     # (N, nv) N·m
    kinetic: np.ndarray    # (N,) J, ½ q̇ᵀ M q̇
    potential: np.ndarray  # (N,) J, −Σ m g·c (gravity)

    def column(self, name: str) -> np.ndarray:
        return self.torque[:, self.names.index(name)]


def gravity_potential(model, q) -> float:
    """−Σ_bodies m g·c (J) at generalized position q (`integrate.gravity_potential` of the joint configuration)."""
    from biobullet.integrate import gravity_potential as tree_gravity_potential
    return tree_gravity_potential(model, model.joint_configuration(q))


def inverse_dynamics(model, motion: Motion, t, formulation: str = "reduced", progress=None) -> InverseDynamics:
    """Computed torque (perfect tracking) Q(t) = M q̈ + h with the given formulation, plus ½q̇ᵀMq̇ and V(q)."""
    names = tuple(model.coordinate_names)
    t = np.asarray(t, dtype=float)
    q, v, a = motion(t, names)
    torque = np.empty_like(q)
    kinetic, potential = np.empty(t.size), np.empty(t.size)
    for k in range(t.size):
        mass = model.mass_matrix(q[k], formulation=formulation)
        torque[k] = mass @ a[k] + model.bias_forces(q[k], v[k], formulation=formulation)
        kinetic[k] = 0.5 * v[k] @ mass @ v[k]
        potential[k] = gravity_potential(model, q[k])
        if progress is not None:
            progress(k)
    return InverseDynamics(t, names, q, v, a, torque, kinetic, potential)


def bridge_inverse_dynamics(bridge, result: InverseDynamics) -> np.ndarray:
    """The same torques from PyBullet's own M and bias projected through G (`Bridge.inverse_dynamics`)."""
    return np.array([bridge.inverse_dynamics(q, v, a) for q, v, a in zip(result.q, result.v, result.a)])


def relative_difference(a: np.ndarray, b: np.ndarray) -> float:
    """max|a − b| / max|b| (b the reference; 0 if both vanish)."""
    scale = float(np.abs(b).max())
    return float(np.abs(a - b).max()) / scale if scale else float(np.abs(a - b).max())


# --------------------------------------------------------------------------------------------- metrics
def comparison_table(reference: InverseDynamics, other: InverseDynamics, names=COMPARED) -> dict:
    """Per coordinate: NRMSE (normalised by the reference's range), Pearson r, RMSE and both ranges (N·m)."""
    table = {}
    for name in names:
        ref, oth = reference.column(name), other.column(name)
        table[name] = {"nrmse": nrmse(ref, oth), "r": pearson(ref, oth), "rmse": rmse(ref, oth),
                       "reference_range": float(ref.max() - ref.min()), "other_range": float(oth.max() - oth.min()),
                       "reference_mean": float(ref.mean()), "other_mean": float(oth.mean())}
    return table


# --------------------------------------------------------------------------------------------- energy
def power_balance(result: InverseDynamics) -> dict:
    """Work of the computed torques W(t) = ∫₀ᵗ Q·q̇ dt (cumulative Simpson) vs ΔE(t) = Δ(½q̇ᵀMq̇ + V).

    Both sides come from the same M and h only through the identity d/dt(T + V) = q̇ᵀ(M q̈ + h), which holds
    only if h's Coriolis part is consistent with M and its gravity part with V: a physical consistency check.
    Returns the series and `relative_error` = max|W − ΔE| / max|ΔE|.
    """
    from scipy.integrate import cumulative_simpson
    power = np.einsum("ij,ij->i", result.torque, result.v)
    work = cumulative_simpson(power, x=result.t, initial=0.0)
    energy = result.kinetic + result.potential
    delta = energy - energy[0]
    scale = float(np.abs(delta).max())
    error = float(np.abs(work - delta).max())
    return {"power": power, "work": work, "delta_energy": delta, "max_abs_error": error,
            "relative_error": error / scale if scale else error, "max_delta_energy": scale}
