"""Flight/contact phases of an ElasticChain on the ground y = 0 (paper 002 eqs. 15–19, 31).

Each joint point in `chain.contact_points` is either free or in contact. Events of the reference engine's hybrid
integrator (`biobullet.integrate.stepper.run_loop`, restart events and a mode switch) locate the onset (y_k crosses
0 downwards, the approach speed −ẏ_k is stored as the impact velocity δ̇⁻ of the Hu–Guo law) and the separation
(y_k crosses 0 upwards); the integration restarts at every event. Points that
reach the same switching condition within `switch_tolerance` of an event switch together (mirror pairs).
In contact: F_N = law(δ = −y_k, δ̇ = −ẏ_k, δ̇⁻) along +y and F_T = friction(ẋ_k, F_N) along x, entering as
U = Σ_k J_kᵀ (F_T, F_N) (eq. 17). Work of damping, normal and friction forces are integrated as 3 extra states:
T + V_g + V_e − W_D − W_FN − W_FT = const (eq. 31).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from biobullet.core.errors import ModelError, SolverError
from biobullet.flexible.gibbs_appell import ElasticChain
from biobullet.integrate.stepper import LoopEvent, StepFailure, run_loop
from biobullet.integrate.trajectory import Trajectory


@dataclass
class DropResult(Trajectory):
    """A `Trajectory` of a drop (positions z, velocities ż (T, N), named by `ElasticChain.coordinate_names`; `model`
    the chain) with, per sample: points / point_velocities (T, n+1, 2), normal_force / friction_force (T, n+1) (N,
    on the point, +y / +x), energy components (T,) in J, energy_error_percent (T,) = 100 (E − E0)/E0 with
    E = T + V_g + V_e − W_D − W_FN − W_FT (`energy_balance()`). contacts: onsets (dict: time, point,
    impact_velocity, slip_velocity); impacts: onsets grouped into impacts with their sub-impacts (re-contacts of
    the same point within `sub_impact_gap` s)."""

    points: np.ndarray | None = None
    point_velocities: np.ndarray | None = None
    normal_force: np.ndarray | None = None
    friction_force: np.ndarray | None = None
    kinetic: np.ndarray | None = None
    gravity: np.ndarray | None = None
    elastic: np.ndarray | None = None
    work_damping: np.ndarray | None = None
    work_normal: np.ndarray | None = None
    work_friction: np.ndarray | None = None
    contacts: list[dict[str, Any]] = field(default_factory=list)
    separations: list[dict[str, Any]] = field(default_factory=list)
    impacts: list[dict[str, Any]] = field(default_factory=list)
    n_rhs: int = 0
    wall_time: float = 0.0
    symmetry_correction: float | None = None  # largest state change of a mirror projection (None: not used)
    n_symmetry_projections: int = 0
    n_rhs_general: int = 0  # kernel right-hand-side calls that declined and took the general path (`drop_rhs`)

    @property
    def chain(self) -> ElasticChain:
        return self.model

    @property
    def z(self) -> np.ndarray:
        """(T, N) generalized coordinates (rad, m)."""
        return self.positions

    @property
    def zd(self) -> np.ndarray:
        """(T, N) their rates."""
        return self.velocities

    @property
    def energy_error_percent(self) -> np.ndarray:
        e = self.energy_balance()   # T + V_g + V_e − W_D − W_FN − W_FT (eq. 31)
        return 100.0 * (e - e[0]) / e[0]

    @property
    def modal_amplitudes(self) -> np.ndarray:
        """(T, Σm) modal amplitudes δ_ij in chain order (m)."""
        return self.z[:, self.chain.modal_indices]


def point_name(k: int) -> str:
    return f"O{k + 1}"


def contact_forces(chain: ElasticChain, kin: Any, active: np.ndarray,
                   impact_velocity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(F_N, F_T) per joint point for the active contacts (zeros elsewhere)."""
    npts = kin.p.shape[0]
    fn, ft = np.zeros(npts), np.zeros(npts)
    if chain.normal_law is None:
        return fn, ft
    for k in np.flatnonzero(active):
        delta = chain.ground_height - kin.p[k, 1]
        f = chain.normal_law.force(delta, -kin.v[k, 1], impact_velocity[k]) \
            if chain.normal_law.needs_impact_velocity else chain.normal_law.force(delta, -kin.v[k, 1])
        fn[k] = f
        if chain.friction_law is not None and f > 0.0:
            ft[k] = chain.friction_law.force(float(kin.v[k, 0]), f)
    return fn, ft


def group_impacts(contacts: list[dict[str, Any]], separations: list[dict[str, Any]],
                   gap: float) -> list[dict[str, Any]]:
    impacts: list[dict[str, Any]] = []
    last: dict[str, dict[str, Any]] = {}
    for c in contacts:
        k = c["point"]
        prev = last.get(k)
        sep = [s["time"] for s in separations if s["point"] == k and s["time"] <= c["time"]]
        if prev is not None and sep and c["time"] - max(sep) < gap:
            prev["sub_impacts"].append(c)
            continue
        imp = {"time": c["time"], "point": k, "impact_velocity": c["impact_velocity"],
               "slip_velocity": c["slip_velocity"], "sub_impacts": [c]}
        impacts.append(imp)
        last[k] = imp
    return impacts


def drop_rhs(chain: ElasticChain, y: np.ndarray, active: np.ndarray, impact_velocity: np.ndarray) -> np.ndarray:
    """The general right-hand side of a drop (any contact law: the law classes, with the chain's M and h): y = [z,
    ż, W_D, W_FN, W_FT] (2N + 3) → [ż, z̈, −żᵀDż, F_N·ẏ, F_T·ẋ] for the contact phase `active` (n+1 bools) with
    stored impact velocities δ̇⁻ (m/s)."""
    N = chain.n_coordinates
    z, zd = y[:N], y[N:2 * N]
    kin = chain.kinematics(z, zd)
    fn, ft = contact_forces(chain, kin, active, impact_velocity)
    U = kin.J[:, 0].T @ ft + kin.J[:, 1].T @ fn   # Σ_k J_kᵀ (F_T, F_N); zero rows for inactive points
    zdd = chain.forward_dynamics(z, zd, U)
    out = np.empty_like(y)
    out[:N], out[N:2 * N] = zd, zdd
    out[2 * N] = chain.dissipation_power(zd)
    out[2 * N + 1] = float(fn @ kin.v[:, 1])
    out[2 * N + 2] = float(ft @ kin.v[:, 0])
    return out


def simulate_drop(chain: ElasticChain, t_end: float = 1.5, *, method: str = "DOP853", rtol: float = 1e-9,
                  atol: float = 1e-12, max_step: float = 2e-3, dt_out: float = 1e-4,
                  switch_tolerance: float = 1e-11, sub_impact_gap: float = 0.02, max_events: int = 10000,
                  initial: tuple[np.ndarray, np.ndarray] | None = None,
                  progress: Callable[[float], None] | None = None, symmetry: str = "auto",
                  symmetry_interval: float = 0.01) -> DropResult:
    """Integrate the chain from its initial state (or `initial` = (z0, ż0)) to t_end (s).

    Output at every solver step and on a uniform grid dt_out (s). max_step (s) keeps the modal vibration
    (≈ 300–700 rad/s, period ≥ 9 ms) sampled ≥ 4 times per period so that no brief contact is stepped over.
    symmetry: "auto" (default) — if the chain and the initial state are mirror symmetric
    (`gibbs_appell_symmetry.MirrorSymmetry.detect`), the state is projected back onto the symmetric manifold
    every `symmetry_interval` s and at every event (removes round-off asymmetry only; see that module);
    "off" — never. The result's `symmetry_correction` is the largest change a projection made.
    The right-hand side, the event heights and the sampled outputs are the kernels of
    `flexible/gibbs_appell_kernels.py` (`ElasticChain.compiled()`), contact laws included (every built-in law has a kernel);
    a plug-in law without a compiled twin enters through `drop_rhs`, the law classes with the chain's M and h, which
    also reports a call the kernel declines.
    Raises SolverError if the integrator fails.
    """
    if not (t_end > 0.0 and math.isfinite(t_end)):
        raise ModelError(f"'t_end' must be positive, got {t_end!r}", attribute="t_end")
    N = chain.n_coordinates
    npts = len(chain.links) + 1
    z0, zd0 = chain.initial_state() if initial is None else (np.asarray(initial[0], float),
                                                             np.asarray(initial[1], float))
    cpts = np.array(chain.contact_points, dtype=int) if chain.normal_law is not None else np.zeros(0, int)
    active = np.zeros(npts, dtype=bool)
    vimp = np.zeros(npts)
    counter = [0]

    fast = chain.compiled()
    declined = [0]

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        counter[0] += 1
        if fast is not None:
            out = np.empty_like(y)
            if fast.rhs(y[:N], y[N:2 * N], active, vimp, out):
                return out
            declined[0] += 1   # Cholesky pivot or a non-finite value: the general path decides (and raises)
        return drop_rhs(chain, y, active, vimp)

    heights = chain.point_heights if fast is None else fast.point_heights

    def contact_events() -> list[LoopEvent]:
        """Per contact point: onset (height falls through the ground) or, in contact, separation."""
        return [LoopEvent(str(k), lambda t, y, k=k: float(heights(y[:N])[k]) - chain.ground_height,
                          1.0 if active[k] else -1.0, restart=True) for k in cpts]

    if symmetry not in ("auto", "off"):
        raise ModelError(f"unknown symmetry {symmetry!r}", attribute="symmetry", expected="auto or off")
    if not symmetry_interval > 0.0:
        raise ModelError(f"'symmetry_interval' must be positive, got {symmetry_interval!r}",
                         attribute="symmetry_interval")
    mirror = None
    if symmetry == "auto":
        from biobullet_studies.gibbs_appell_symmetry import MirrorSymmetry
        mirror = MirrorSymmetry.detect(chain, z0, zd0)
    # the mirror projection runs every symmetry_interval (a breakpoint; none within 1e-3 interval of t_end)
    projections = [] if mirror is None else [
        b for b in np.arange(symmetry_interval, t_end, symmetry_interval) if t_end - b >= 1e-3 * symmetry_interval]
    y0 = np.concatenate([z0, zd0, np.zeros(3)])
    ts: list[float] = [0.0]
    ys: list[np.ndarray] = [y0.copy()]
    acts, vis = [active.copy()], [vimp.copy()]
    contacts: list[dict[str, Any]] = []
    separations: list[dict[str, Any]] = []
    wall = time.perf_counter()
    grid = np.arange(0.0, t_end + 0.5 * dt_out, dt_out)
    next_sample = [1]
    n_events = [0]

    def sample(t: float, y: np.ndarray) -> None:
        ts.append(t)
        ys.append(y)
        acts.append(active.copy())
        vis.append(vimp.copy())

    def observe(t_old: float, t_stop: float, sol) -> None:   # output grid points inside the step, then its end
        start, stop = next_sample[0], int(np.searchsorted(grid, t_stop, side="left"))
        times = grid[start:stop]
        times = times[times > t_old]
        times = np.append(times, t_stop)
        for t, y in zip(times.tolist(), sol(times).T):   # one dense-output call for all of them
            sample(t, y)
        next_sample[0] = max(start, stop)

    def switch(t: float, y: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
        if mirror is not None:
            y[:N], y[N:2 * N] = mirror.project(y[:N], y[N:2 * N])
        if names != ("breakpoint",):
            n_events[0] += 1
            if n_events[0] > max_events:
                raise SolverError(f"more than {max_events} contact events before t_end = {t_end} s")
            kin = chain.kinematics(y[:N], y[N:2 * N])
            gap = kin.p[:, 1] - chain.ground_height
            for k in cpts:   # every point at its switching condition switches (mirror pairs together)
                if not active[k] and gap[k] <= switch_tolerance and kin.v[k, 1] < 0.0:
                    active[k], vimp[k] = True, -float(kin.v[k, 1])
                    contacts.append({"time": t, "point": point_name(int(k)), "impact_velocity": vimp[k],
                                     "slip_velocity": float(kin.v[k, 0])})
                elif active[k] and gap[k] >= -switch_tolerance and kin.v[k, 1] > 0.0:
                    active[k] = False
                    separations.append({"time": t, "point": point_name(int(k)),
                                        "separation_velocity": float(kin.v[k, 1])})
        sample(t, y.copy())   # the state the integration restarts from, in the new contact phase
        return y

    try:
        loop = run_loop(rhs, 0.0, y0, t_end, method=method, rtol=rtol, atol=atol, max_step=max_step, t_eval=None,
                        events=contact_events, observe=observe, switch=switch, breakpoints=projections,
                        on_step=progress)
    except StepFailure as failure:
        raise SolverError(f"integration failed at t = {failure.t:.9g} s: {failure}") from None
    wall = time.perf_counter() - wall
    result = _assemble(chain, ts, ys, acts, vis, contacts, separations, sub_impact_gap, counter[0], wall, fast)
    result.n_rhs_general = declined[0]
    result.events = [(point_name(int(name)), t, y[:2 * N]) for name, t, y in loop.events]   # onsets, separations
    if mirror is not None:
        result.symmetry_correction = mirror.max_correction
        result.n_symmetry_projections = mirror.n_projections
    return result


def _assemble(chain: ElasticChain, ts: list, ys: list, acts: list, vis: list, contacts: list,
              separations: list, gap: float, n_rhs: int, wall: float, fast: Any = None) -> DropResult:
    N = chain.n_coordinates
    t = np.array(ts)
    Y = np.array(ys)
    A = np.array(acts)
    V = np.array(vis)
    n = t.size
    npts = len(chain.links) + 1
    if fast is not None:
        pts, vel, fn, ft, kin_e, grav, ela = fast.outputs(Y[:, :N], Y[:, N:2 * N], A, V)
    else:
        pts, vel = np.empty((n, npts, 2)), np.empty((n, npts, 2))
        fn, ft = np.zeros((n, npts)), np.zeros((n, npts))
        kin_e, grav, ela = np.empty(n), np.empty(n), np.empty(n)
        for i in range(n):
            z, zd = Y[i, :N], Y[i, N:2 * N]
            kin = chain.kinematics(z, zd)
            pts[i], vel[i] = kin.p, kin.v
            fn[i], ft[i] = contact_forces(chain, kin, A[i], V[i])
            kin_e[i] = chain.kinetic_energy(z, zd)
            grav[i], ela[i] = chain.gravity_energy(z), chain.elastic_energy(z)
    names = tuple(chain.coordinate_names)
    z, zd = Y[:, :N], Y[:, N:2 * N]
    return DropResult(t=t, position_names=names, velocity_names=tuple(f"{c}_dot" for c in names),
                      positions=z, velocities=zd, q=z, v=zd, coordinate_names=names, model=chain,
                      points=pts, point_velocities=vel, normal_force=fn, friction_force=ft, kinetic=kin_e,
                      gravity=grav, elastic=ela, work_damping=Y[:, 2 * N], work_normal=Y[:, 2 * N + 1],
                      work_friction=Y[:, 2 * N + 2], contacts=contacts, separations=separations,
                      impacts=group_impacts(contacts, separations, gap), n_rhs=n_rhs, wall_time=wall,
                      energy={"kinetic": kin_e, "potential_gravity": grav, "potential_elastic": ela,
                              "work_applied": np.zeros(n),
                              "dissipated": -(Y[:, 2 * N] + Y[:, 2 * N + 1] + Y[:, 2 * N + 2])})


__all__ = ["DropResult", "simulate_drop", "drop_rhs", "contact_forces", "group_impacts", "point_name"]
