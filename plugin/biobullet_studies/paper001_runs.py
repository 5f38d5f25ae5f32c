"""Paper 001's own integrators, as its studies run them (the library's runs are `biobullet.simulate` on the one
hybrid integrator `integrate.stepper.run_loop`):

- `rk4`: classical RK4 on (q, v) with a stop event located by linear interpolation (the sprint and pitching
  studies' forward runs of the link-segment accelerations);
- `simulate_absolute`: RK4 on the segments' absolute coordinates with the acceleration-level rows only, the paper's
  scheme, whose joint drift and its Baumgarte feedback docs/link_segment.md ("Drift") describes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from biobullet.core.errors import ModelError, SolverError
from biobullet.dynamics import link_segment as ls
from biobullet.spatial.rotations import skew


def rk4(model, q0, v0, t0: float, t_end: float, dt: float, acceleration: Callable[[float, np.ndarray, np.ndarray], np.ndarray],
        stop: Callable[[float, np.ndarray, np.ndarray], float] | None = None, progress: Callable | None = None):
    """Classical RK4 (the paper's integrator) on (q, v) with q̇ = `model.configuration_rate`. `stop(t, q, v)` crossing zero from above ends the run at
    the linearly interpolated instant. Returns (t, Q, V) arrays (the last row is the stop instant if any)."""
    q, v, t = np.array(q0, dtype=float), np.array(v0, dtype=float), float(t0)
    ts, qs, vs = [t], [q.copy()], [v.copy()]
    previous = stop(t, q, v) if stop is not None else None
    n_steps = int(round((t_end - t0) / dt))
    for step in range(n_steps):
        def f(tt, qq, vv):
            return model.configuration_rate(qq, vv), acceleration(tt, qq, vv)
        k1q, k1v = f(t, q, v)
        k2q, k2v = f(t + dt / 2, q + dt / 2 * k1q, v + dt / 2 * k1v)
        k3q, k3v = f(t + dt / 2, q + dt / 2 * k2q, v + dt / 2 * k2v)
        k4q, k4v = f(t + dt, q + dt * k3q, v + dt * k3v)
        q_new = q + dt / 6 * (k1q + 2 * k2q + 2 * k3q + k4q)
        v_new = v + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        if model.base_nq:   # unit quaternions (and planar cos, sin pairs)
            q_new = model.normalize_configuration(q_new)
        t_new = t0 + (step + 1) * dt
        if stop is not None:
            value = stop(t_new, q_new, v_new)
            if previous > 0.0 >= value:
                s = previous / (previous - value)
                ts.append(t + s * dt)
                qs.append(q + s * (q_new - q))
                vs.append(v + s * (v_new - v))
                break
            previous = value
        q, v, t = q_new, v_new, t_new
        ts.append(t)
        qs.append(q.copy())
        vs.append(v.copy())
        if progress is not None:
            progress(step + 1, n_steps)
    return np.array(ts), np.array(qs), np.array(vs)


@dataclass
class AbsoluteRun:
    """Integration in the paper's own unknowns (segment COM position, orientation, velocities), hinge models.

    t (s); com (T, N, 3); rotations (T, N, 3, 3); gap (T,) largest joint-point separation (m); axis_error (T,)
    largest |U_a·U_b| of the hinge rows (the constraint rows' own invariants, rad-like)."""

    t: np.ndarray
    com: np.ndarray
    rotations: np.ndarray
    gap: np.ndarray
    axis_error: np.ndarray


def constraint_residuals(model, st: ls.SegmentState) -> tuple[float, float]:
    """(largest joint-point gap in m, largest |U_a·U_b|) of an absolute state — both 0 when assembled."""
    s = ls.structure(model)
    gap, axis = 0.0, 0.0
    for joint in s.joints:
        first = model.bodies[joint.bodies[0]]
        cb = s.segments[joint.child]
        if joint.parent >= 0:
            pb = s.segments[joint.parent]
            point_p, rot_p = st.origins[pb] + st.rotations[pb] @ first.translation, st.rotations[pb]
        else:
            point_p, rot_p = first.translation, np.eye(3)
        gap = max(gap, float(np.linalg.norm(st.origins[cb] - point_p)))
        u_a = rot_p @ first.rotation @ first.axis
        for w in ls.perpendicular_pair(model.bodies[cb].axis):
            axis = max(axis, abs(float(u_a @ (st.rotations[cb] @ w))))
    return gap, axis


def simulate_absolute(model, q0, v0, t_end: float, dt: float, *, tau=None, baumgarte=None,
                      gyroscopic: bool = True, tolerance: float = 1e-9,
                      state0: ls.SegmentState | None = None) -> AbsoluteRun:
    """RK4 on the segments' absolute coordinates with the acceleration-level equations only (the paper's scheme).

    The joint constraints are enforced only through their second derivatives, so position and velocity errors of
    the joints drift; `baumgarte=(α, β)` feeds them back (−2α ċ − β² c). The initial state comes from (q0, v0) and is
    checked for consistency (assembly) to `tolerance` (`state0`: an absolute state of your own instead, e.g. from
    measured segment poses — the check is what catches a non-assembled one; tolerance=inf skips it). Hinge joints only (grouped joints need their massless
    links' orientations, which absolute coordinates do not carry). `tau(t)` → generalized forces (nv), default 0.
    Rotations are re-orthonormalised after every step (polar decomposition)."""
    s = ls.structure(model)
    if any(j.kind != "hinge" for j in s.joints):
        raise ModelError("simulate_absolute supports hinge joints only", file=model.file, argument="model",
                         expected="a model without <segment_joint> groups")
    if state0 is None:
        x, xd, _, _ = model.joint_state(q0, v0)
        st = ls.segment_state(model, x, xd)
    else:
        st = state0
    gap, axis = constraint_residuals(model, st)
    if gap > tolerance or axis > tolerance:
        raise SolverError(f"inconsistent initial conditions: joint gap {gap:.3g} m, axis error {axis:.3g}")
    locals_ = np.array([model.bodies[b].com for b in s.segments])
    inertia_body = np.array([model.bodies[b].inertia_com for b in s.segments])
    seg = list(s.segments)

    def make_state(com, rot, vel, omega) -> ls.SegmentState:
        arms = np.einsum("nij,nj->ni", rot, locals_)
        return ls.SegmentState(rot, com - arms, omega, vel - np.cross(omega, arms), com, vel,
                            np.einsum("nij,njk,nlk->nil", rot, inertia_body, rot))

    def rates(t, com, rot, vel, omega):
        state = make_state(com, rot, vel, omega)
        generalized = None if tau is None else tau(t)
        system = ls.assemble(model, None, None, generalized, gyroscopic=gyroscopic, baumgarte=baumgarte, state=state)
        z = system.solve()
        n = s.n_segments
        acc = z[:3 * n].reshape(n, 3)
        alpha = z[3 * n:6 * n].reshape(n, 3)
        rot_dot = np.einsum("nij,njk->nik", np.array([skew(w) for w in omega]), rot)
        return vel, rot_dot, acc, alpha

    com, rot = st.com.copy(), st.rotations[seg].copy()
    vel, omega = st.com_velocity.copy(), st.omega[seg].copy()
    times, coms, rots, gaps, axes = [0.0], [com.copy()], [rot.copy()], [gap], [axis]
    steps = int(round(t_end / dt))
    for k in range(steps):
        t = k * dt
        y = (com, rot, vel, omega)
        k1 = rates(t, *y)
        k2 = rates(t + dt / 2, *(a + dt / 2 * b for a, b in zip(y, k1)))
        k3 = rates(t + dt / 2, *(a + dt / 2 * b for a, b in zip(y, k2)))
        k4 = rates(t + dt, *(a + dt * b for a, b in zip(y, k3)))
        com, rot, vel, omega = (a + dt / 6 * (b1 + 2 * b2 + 2 * b3 + b4) for a, b1, b2, b3, b4 in zip(y, k1, k2, k3, k4))
        u, _, vt = np.linalg.svd(rot)
        rot = u @ vt
        gap, axis = constraint_residuals(model, make_state(com, rot, vel, omega))
        times.append((k + 1) * dt)
        coms.append(com.copy())
        rots.append(rot.copy())
        gaps.append(gap)
        axes.append(axis)
    return AbsoluteRun(np.array(times), np.array(coms), np.array(rots), np.array(gaps), np.array(axes))


__all__ = ["rk4", "AbsoluteRun", "constraint_residuals", "simulate_absolute"]
