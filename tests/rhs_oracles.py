"""Independent checks of an engine right-hand side ẏ = f(t, y) (shared by the compiled right-hand-side tests).

- `assert_power_balance`: d/dt (T + V_gravity + V_elastic) along ẏ, by central finite differences of the energy
  functions, equals the input power minus the dissipated power (ẏ's last two entries).
- `assert_dalembert`: Pinocchio's inverse dynamics of the tree motion that ẏ implies, projected on the admissible
  directions, equals the projected applied forces: Gᵀ (RNEA(x, ẋ, ẍ) − τ) = 0 (d'Alembert–Lagrange). ẍ is the
  central difference of ẋ along the flow (t + s, y + s ẏ), G the velocity map's columns (ẋ is linear in v: exact),
  and ẋ itself is checked against the configuration's motion (Pinocchio's `difference` along the flow). Nothing of
  the library's M, h, force assembly or solve enters; τ is the test's own written-out law.
- `loop_closure`: the loop points' distance (in the loop's plane for planar loops) by Pinocchio's kinematics.
"""
from __future__ import annotations

import numpy as np

from biobullet.integrate.engine import gravity_potential, kinetic_energy


def assert_power_balance(system, t: float, y: np.ndarray, ydot: np.ndarray, h: float = 1e-7,
                         acting=None) -> float:
    """d/dt (T + V_gravity + V_elastic) along ẏ = P_input − P_dissipated (ẏ's last two entries): the energy
    functions (`kinetic_energy`, `gravity_potential`, each element's `potential_energy`) differentiated by central
    finite differences along the flow (step h in time), independent of the right-hand side's force assembly
    (τ = J_pᵀ F, M⁻¹). At δ = 0 exactly, V ∝ δⁿ⁺¹ has a kink in its higher derivatives: the central difference errs
    by ≈ V(δ̇ h)/(2h) there, so such states take a small h (the tolerance then grows with the cancellation ε E/h).
    `acting`: the elements whose potential counts (default all; a contact switched off by its discrete state stores
    no energy). Returns the dissipated power."""
    model = system.model
    elastic = [e for e in (system.elements if acting is None else acting) if hasattr(e, "potential_energy")]

    def energies(s: float) -> np.ndarray:
        x, xd = system.tree_state(t + s, y + s * ydot)
        return np.array([kinetic_energy(model, x, xd), gravity_potential(model, x),
                         sum(e.potential_energy(model, x) for e in elastic)])

    rates = (energies(h) - energies(-h)) / (2.0 * h)   # truncation O(h²), cancellation ~1e-16 E/h
    supplied, dissipated = float(ydot[-2]), float(ydot[-1])
    cancellation = 1e2 * np.finfo(float).eps * float(np.sum(np.abs(energies(0.0)))) / h
    tolerance = 1e-6 * (float(np.sum(np.abs(rates))) + abs(dissipated) + abs(supplied)) + cancellation
    assert abs(float(np.sum(rates)) - supplied + dissipated) <= tolerance, (rates, supplied, dissipated)
    return dissipated


class PinocchioTree:
    """Pinocchio's model of a biobullet Model's file (every joint of the tree; joint functions and loops are the
    biobullet model's business) and the index maps."""

    def __init__(self, model) -> None:
        import pinocchio as pin
        from biobullet.conventions import PinocchioMap, build_pinocchio_model
        self.pin, self.model = pin, model
        self.pin_model = build_pinocchio_model(model)
        self.data = self.pin_model.createData()
        self.map = PinocchioMap(model, self.pin_model)

    def inverse_dynamics(self, x, xd, xdd) -> np.ndarray:
        """RNEA(x, ẋ, ẍ) = M ẍ + h (gravity included), in our tangent order."""
        m = self.map
        tau = self.pin.rnea(self.pin_model, self.data, m.config_to_pinocchio(x), m.velocity_to_pinocchio(xd),
                            m.velocity_to_pinocchio(xdd))
        return m.velocity_from_pinocchio(tau)

    def motion(self, x_minus, x_plus, step: float) -> np.ndarray:
        """Central-difference tangent velocity between two configurations 2·step apart (our order)."""
        m = self.map
        dq = self.pin.difference(self.pin_model, m.config_to_pinocchio(x_minus), m.config_to_pinocchio(x_plus))
        return m.velocity_from_pinocchio(dq) / (2.0 * step)

    def point(self, x, link: str, xyz) -> tuple[np.ndarray, np.ndarray]:
        """(world position of the point `xyz` of `link`, its 3 × n_tangent Jacobian, our column order)."""
        pin, m = self.pin, self.map
        q = m.config_to_pinocchio(x)
        pin.forwardKinematics(self.pin_model, self.data, q)
        pin.updateFramePlacements(self.pin_model, self.data)
        frame = m.frame_id(link)
        placement = self.data.oMf[frame]
        offset = placement.rotation @ np.asarray(xyz, float)
        jac = pin.computeFrameJacobian(self.pin_model, self.data, q, frame, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        linear = jac[:3] - np.cross(offset, jac[3:].T).T   # v_p = v_o + ω × r = v_o − r × ω
        return placement.translation + offset, m.jacobian_from_pinocchio(linear)


def normalized(system, y: np.ndarray) -> np.ndarray:
    """y with its configuration normalised as the right-hand side reads it (unit quaternions, unit (cos, sin)
    pairs): along the flow of an off-unit state the configuration turns at |z|⁻¹ times the rate, so the rate check
    of `assert_dalembert` takes unit states."""
    out = np.array(y, dtype=float)
    out[:system.n_pos] = system.split(out)[0]
    return out


def velocity_map(system, t: float, y: np.ndarray) -> np.ndarray:
    """G (n_tangent × n_vel): ẋ is affine in v (ẋ = G v + ∂x/∂t), so each column is exact by differences."""
    start = system.n_pos
    base = np.array(y, dtype=float)
    base[start:start + system.n_vel] = 0.0
    _, offset = system.tree_state(t, base)
    columns = []
    for k in range(system.n_vel):
        probe = base.copy()
        probe[start + k] = 1.0
        columns.append(system.tree_state(t, probe)[1] - offset)
    return np.column_stack(columns)


def assert_dalembert(system, tree: PinocchioTree, t: float, y: np.ndarray, ydot: np.ndarray, force=None,
                     h: float = 1e-6, rtol: float = 1e-6) -> float:
    """Gᵀ (RNEA(x, ẋ, ẍ) − τ(x, ẋ, t)) = 0 and ẋ = the configuration's rate, for ẏ at (t, y). `force(x, ẋ, t)`:
    the applied generalized force on the tree (our tangent order), the test's written-out law (default none).
    Central differences with step h along the flow: truncation ~h² |d³x/dt³| ≈ 1e-12 relative, cancellation
    ~1e-16/h ≈ 1e-10 relative — rtol 1e-6 of the largest projected term leaves four orders of margin and still
    fails on a 1e-4 error of v̇. Returns the largest projected term (the check's scale)."""
    if np.abs(normalized(system, y) - y).max() > 1e-14:
        raise ValueError("assert_dalembert needs unit quaternions and (cos, sin) pairs in y (see `normalized`)")
    x, xd = system.tree_state(t, y)
    x_minus, xd_minus = system.tree_state(t - h, y - h * ydot)
    x_plus, xd_plus = system.tree_state(t + h, y + h * ydot)
    rate = tree.motion(x_minus, x_plus, h)
    assert np.abs(rate - xd).max() <= 1e-6 * max(1.0, np.abs(xd).max()), ("ẋ is not the rate of x", rate - xd)
    xdd = (xd_plus - xd_minus) / (2.0 * h)
    gradient = velocity_map(system, t, y)
    inertial = gradient.T @ tree.inverse_dynamics(x, xd, xdd)
    applied = gradient.T @ (np.zeros(len(xd)) if force is None else force(x, xd, t))
    scale = max(float(np.abs(inertial).max()), float(np.abs(applied).max()),
                float(np.abs(gradient.T @ tree.inverse_dynamics(x, xd, np.zeros(len(xd)))).max()), 1e-3)
    assert np.abs(inertial - applied).max() <= rtol * scale, (inertial - applied, scale)
    return scale


def scaled_accelerations(system, ydot: np.ndarray, factor: float = 1.0 + 1e-4) -> np.ndarray:
    """ẏ with v̇ scaled by `factor` (a wrong right-hand side the checks must reject)."""
    out = np.array(ydot, dtype=float)
    out[system.n_pos:system.n_pos + system.n_vel] *= factor
    return out


def loop_closure(tree: PinocchioTree, x: np.ndarray, xd: np.ndarray | None = None) -> float:
    """Largest distance (m) between the two points of each loop of the model at x (in the loop's plane for planar
    loops; point and revolute loops: the whole distance); with xd, the largest relative velocity (m/s) instead."""
    from biobullet.constraints.equations import constraint_set
    worst = 0.0
    for loop in constraint_set(tree.model).loops:
        a, ja = tree.point(x, loop.link_a, loop.xyz_a)
        b, jb = tree.point(x, loop.link_b, loop.xyz_b)
        gap = a - b if xd is None else (ja - jb) @ xd
        if loop.type == "planar":   # Eᵀ Rₐᵀ (p_A − p_B): the plane basis E is attached to link_a
            gap = loop.basis.T @ (tree.data.oMf[tree.map.frame_id(loop.link_a)].rotation.T @ gap)
        worst = max(worst, float(np.linalg.norm(gap)))
    return worst


def spring_force(tree: PinocchioTree, x: np.ndarray, xd: np.ndarray, end_a: tuple, end_b: tuple, stiffness: float,
                 rest: float, damping: float) -> np.ndarray:
    """Generalized force of a point-to-point spring-damper between end_a = (link, xyz) and end_b, written out:
    F_b = −(k (L − L₀) + c L̇) u = −F_a, u = (p_b − p_a)/L, τ = J_bᵀ F_b + J_aᵀ F_a (Pinocchio's points)."""
    pa, ja = tree.point(x, *end_a)
    pb, jb = tree.point(x, *end_b)
    gap = pb - pa
    length = float(np.linalg.norm(gap))
    u = gap / length
    force = -(stiffness * (length - rest) + damping * float(u @ ((jb - ja) @ xd))) * u
    return (jb - ja).T @ force


def fourier(t: float, period: float, a0: float, a, b) -> float:
    """a0 + Σ_k a_k cos(2πkt/T) + b_k sin(2πkt/T), k = 1..N (the documented Fourier series)."""
    k = np.arange(1, len(a) + 1)
    phase = 2.0 * np.pi * k * t / period
    return float(a0 + np.dot(a, np.cos(phase)) + np.dot(b, np.sin(phase)))


def assert_trajectory_closed(tree: PinocchioTree, trajectory, position_tol: float = 1e-10,
                             rate_tol: float = 1e-9) -> None:
    """Every sample of a loop model's trajectory output closes its loops: point gaps ≤ position_tol (m), relative
    point velocities ≤ rate_tol × the largest joint rate (the Newton tolerance of the output pass is far below)."""
    assert max(loop_closure(tree, x) for x in trajectory.positions) <= position_tol
    scale = float(np.abs(trajectory.velocities).max())
    assert scale > 0.1   # the mechanism moves: the velocity check is not vacuous
    worst = max(loop_closure(tree, x, xd) for x, xd in zip(trajectory.positions, trajectory.velocities))
    assert worst <= rate_tol * scale, worst


def states_of(system, trajectory, samples) -> list:
    """(t, y) of `system` (no shadow rows) at the given sample indices of a trajectory."""
    out = []
    for k in samples:
        y = np.zeros(system.size)
        y[:system.n_pos], y[system.n_pos:system.n_pos + system.n_vel] = trajectory.q[k], trajectory.v[k]
        out.append((float(trajectory.t[k]), y))
    return out


def prosthesis_forces(tree: PinocchioTree, text: str):
    """The force elements of urdf/prosthesis_fourbar.urdf (or a variant: those present in `text`) written out, with
    their numbers read from the file: the damper (point-to-point spring-damper), the knee stop (paper 003:
    τ = Σ ±d F(δ, δ̇), F = max(0, [½ + atan(C δ)/π](K δ + D δ̇)), δ = d (lower − θ)), the ankle's spring to a
    Fourier reference (τ = −k (θ − θ₀(t)) − c θ̇). The heel and toe contacts are required not to act (their
    normal law, the same smoothed Kelvin–Voigt at the foot points, is zero at the state: then friction is zero)."""
    import re
    from biobullet.forces.base import joint_indices
    model = tree.model

    def attributes(tag: str) -> list[dict]:
        return [dict(re.findall(r'(\w+)="([^"]*)"', m)) for m in re.findall(rf"<{tag} ([^>]*)/>", text)]

    def numbers(a: dict, key: str) -> np.ndarray:
        return np.array(a[key].split(), dtype=float)

    def smooth_kv(delta, rate, k, d, c):
        return max(0.0, (0.5 + np.arctan(c * delta) / np.pi) * (k * delta + d * rate))

    springs = attributes("spring")
    stops = attributes("joint_contact_stop")
    references = attributes("joint_spring_reference")
    contacts = attributes("contact")

    def force(x, xd, t):
        tau = np.zeros(len(xd))
        for a in springs:
            tau += spring_force(tree, x, xd, (a["link_a"], numbers(a, "xyz_a")), (a["link_b"], numbers(a, "xyz_b")),
                                float(a["stiffness"]), float(a["rest_length"]), float(a["damping"]))
        for a in stops:   # lower limit only in the bundled file
            i, k = joint_indices(model, a["joint"], None)
            lever = float(a["lever"])
            tau[k] += lever * smooth_kv(lever * (float(a["lower"]) - x[i]), -lever * xd[k], float(a["stiffness"]),
                                        float(a["damping"]), float(a["smoothing"]))
        for a in references:
            i, k = joint_indices(model, a["joint"], None)
            rest = fourier(t, float(a["period"]), float(a["a0"]), numbers(a, "a"), numbers(a, "b"))
            tau[k] += -float(a["stiffness"]) * (x[i] - rest) - float(a["damping"]) * xd[k]
        for a in contacts:
            p, jac = tree.point(x, a["link"], numbers(a, "xyz"))
            normal = smooth_kv(-p[2], -(jac @ xd)[2], float(a["stiffness"]), float(a["damping"]),
                               float(a["smoothing"]))
            assert normal == 0.0, f"contact {a['name']} acts at this state"
        return tau
    return force
