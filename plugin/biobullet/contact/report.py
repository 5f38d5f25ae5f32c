"""The contact laws tuned to a requested restitution, and their figures (for the README and for choosing a law).

`make_normal_law` sets a law's damping for cr: the Hunt–Crossley family's depends on cr only (the effective
restitution it delivers: tests/impact_closed_forms.py); for Kelvin–Voigt the damping comes from the
textbook (unclipped) formula ζ = −ln cr / √(π² + ln² cr), so force clipping changes what it delivers. The study
`contact` (`biobullet_studies/contact.py`) measures each law's restitution in the engine against the 1-DOF oracle.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from biobullet.core.atomic import save_figure
from biobullet.contact.base import FrictionLaw, NormalLaw
from biobullet.contact.impact1d import kelvin_voigt_damping_ratio, simulate_impact
from biobullet.contact.registry import get_normal_law


def make_normal_law(name: str, cr: float, *, mass: float, stiffness: float,
                    exponent: float = 1.5) -> NormalLaw:
    """A law of type `name` tuned to restitution `cr` (KV laws: textbook damping for point mass `mass`)."""
    cls = get_normal_law(name)
    if name in ("kelvin_voigt", "kelvin_voigt_smooth"):
        zeta = kelvin_voigt_damping_ratio(cr)
        return cls(stiffness=stiffness, damping=2.0 * zeta * np.sqrt(stiffness * mass))
    if name == "hertz":
        return cls(stiffness=stiffness, exponent=exponent)
    return cls(stiffness=stiffness, restitution=cr, exponent=exponent)


def plot_hysteresis(path: str | Path, *, cr: float = 0.5,
                    laws: Iterable[str] = ("hertz", "hunt_crossley", "flores", "hu_guo", "kelvin_voigt",
                                           "kelvin_voigt_smooth"),
                    m: float = 1.0, v: float = 1.0, K: float = 1.0e6) -> Path:
    """PNG of force–penetration loops (1-DOF impact) per normal law; returns the path."""
    plt, fig, ax = _figure()
    for name in laws:
        res = simulate_impact(make_normal_law(name, cr, mass=m, stiffness=K), mass=m, velocity=v, samples=600)
        ax.plot(res.delta * 1e3, res.force, label=f"{name} (e = {res.restitution:.3f})")
    return _save(plt, fig, ax, Path(path), "penetration δ [mm]", "normal force F_N [N]",
                 f"Impact hysteresis, requested cr = {cr:g} (m = {m:g} kg, v⁻ = {v:g} m/s, K = {K:g})")


def _figure():
    """(pyplot, figure, axes) of one report plot, drawn off screen."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    return plt, fig, ax


def _save(plt, fig, ax, path: Path, xlabel: str, ylabel: str, title: str) -> Path:
    """Label, save (atomically, layout checked) and close a report plot; returns its path."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def default_friction_laws() -> dict[str, FrictionLaw]:
    """Illustrative instances of every built-in friction law."""
    from biobullet.contact.friction import Ambrosio, Coulomb, Regularized, Stribeck
    return {
        "coulomb (μ=0.5)": Coulomb(mu=0.5),
        "regularized atan (v0=5 mm/s)": Regularized(mu=0.5, v0=5e-3),
        "regularized tanh (v0=5 mm/s)": Regularized(mu=0.5, v0=5e-3, regularization="tanh"),
        "ambrosio (v0=10, v1=30 mm/s)": Ambrosio(mu=0.5, v0=1e-2, v1=3e-2),
        "stribeck (μs=0.8, vs=30 mm/s, σ=1 s/m)": Stribeck(mu=0.5, mu_static=0.8, stribeck_velocity=3e-2,
                                                           v0=1e-3, viscous=1.0),
    }


def plot_friction_curves(path: str | Path, *, laws: Mapping[str, FrictionLaw] | None = None,
                         normal_force: float = 1.0, v_max: float = 0.15) -> Path:
    """PNG of friction force vs signed slip velocity (1-D) per friction law; returns the path."""
    laws = default_friction_laws() if laws is None else laws
    slip = np.linspace(-v_max, v_max, 2001)
    plt, fig, ax = _figure()
    for label, law in laws.items():
        ax.plot(slip * 1e3, law.force_1d(slip, normal_force), label=label)
    ax.axhline(0.0, color="k", lw=0.5)
    return _save(plt, fig, ax, Path(path), "slip velocity v_t [mm/s]",
                 f"friction force F_T [N] (F_N = {normal_force:g} N)", "Friction laws (force opposes slip)")
