"""The bridge's time step against the explicit stability limit of each stiff element.

PyBullet holds the bridge's torque over a step and integrates semi-implicitly (v⁺ = v + dt M⁻¹(τ − h), x⁺ = x + dt
v⁺). For one linear element of stiffness k and damping c acting along a direction g of the generalized velocities
(a joint's row of G, or the contact normal's row nᵀ J G), linearised at the initial state without gravity, that
map is stable iff

    k_r dt² + 2 c_r dt < 4,      k_r = k w,  c_r = c w,  w = g M_r⁻¹ gᵀ   (w: the inverse effective mass or inertia)

(the Jury conditions of the 2 × 2 step matrix; without damping ω dt < 2). Several elements together only raise
the highest frequency (M⁻¹ΣK ⪰ M⁻¹K_i), so each element's limit is necessary: a dt beyond it diverges.
Joint springs and point-to-point springs act all the time — a violation is a ModelError naming the element; joint
stops and linear ground contacts act only when engaged — a violation is one BridgeWarning naming the element (the
run diverges at the first engagement). Nonlinear laws (exponent ≠ 1: Hertz, Hunt–Crossley, Hu–Guo) have no fixed
limit and are not checked; flexible segments are checked as a whole (`flexible.highest_frequency`).

With k PyBullet sub-steps (numSubSteps) the torque is held over all of them: x⁺ = x + dt v + c dt² a, v⁺ = v + dt a,
c = (k+1)/(2k) (`bridge.substep_weight`). The step matrix then has determinant 1 − c_r dt + (1 − c) k_r dt², so the
map is stable iff (1 − c) k_r dt < c_r and (2c − 1) k_r dt² + 2 c_r dt < 4: sub-steps shrink the stable step, and an
undamped element has none (checked against PyBullet itself: tests/integration/test_unseen56_bridge_habits2.py; before,
the one-step limit was applied and its message recommended sub-steps).

Muscle states (activations, compliant fibers' lengths) advance by explicit Euler at the step's (x, ẋ). Each muscle's
rates depend on its own states only, with ∂ȧ/∂l_M = 0, so the state Jacobian is block-triangular and its
eigenvalues are its diagonal entries λ = ∂ṡ_i/∂s_i: Euler with step h is stable iff h |λ| < 2 (λ < 0).
`muscle_state_limits` estimates λ by one forward difference of all activations together and one of all fiber
lengths together; stiff tendons make λ large (arm26's at rest: ≈ −1e3 1/s, the step of 4 ms diverges). Rather
than force PyBullet's whole step down, the bridge sub-steps the muscle states alone (`muscle_substeps`): h = dt/n
with n = ⌈dt max|λ|⌉ (h |λ| ≤ 1: no overshoot), re-estimated every step from the muscle part of the stage alone
(`muscles.dynamics.evaluate_rates`: the paths are evaluated once per step, their lengths carried on as l + τ l̇
within it, `bridge.muscles`); beyond `MAX_MUSCLE_SUBSTEPS` a ModelError names the muscle and its largest stable
step.
"""
from __future__ import annotations

import warnings

import numpy as np

from biobullet.core.errors import ModelError


def coordinate_inertia(model, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, G, M_r⁻¹) at generalized configuration q: the tree configuration, the coordinate gradient ẋ = G v and the
    inverse mass matrix — what w = g M_r⁻¹ gᵀ of an element's row g = (a row of G) J reads (module docstring). The
    model's warm starts are kept as they were."""
    from biobullet.flexible.segments import kept_warm_starts
    with kept_warm_starts(model):
        mass = model.mass_matrix(q)
        x, gradient = model.coordinate_gradient(q)
    return x, gradient, np.linalg.inv(mass)


def stiff_elements(model, q0=None) -> list[tuple[object, float, float, bool]]:
    """(element, k_r (1/s²), c_r (1/s), always acting) of every linear stiff element of `model` at the
    configuration q0 (default: the model's initial state); see the module docstring."""
    from biobullet.contact.element import contact_elements
    from biobullet.forces import force_elements
    from biobullet.forces.base import joint_indices
    from biobullet.forces.elements import JointSpring, JointStop, Spring

    forces = [e for e in force_elements(model) if type(e) in (JointSpring, JointStop, Spring)
              and not (type(e) is JointStop and e.exponent != 1.0)]
    contacts = [c for c in contact_elements(model) if getattr(c.normal_law, "exponent", 1.0) == 1.0
                and getattr(c.normal_law, "stiffness", None) is not None]
    if not forces and not contacts:
        return []
    from biobullet.algorithms.kinematics import frame_jacobian, frame_placement
    q0 = model.initial_state()[0] if q0 is None else np.asarray(q0, dtype=float)
    x, gradient, inverse = coordinate_inertia(model, q0)
    out = []
    for element in forces:
        if type(element) is Spring:
            ends = ((element.link_b, element.xyz_b), (element.link_a, element.xyz_a))
            points = []
            for link, xyz in ends:
                rotation, origin = frame_placement(model, x, link)
                points.append(rotation @ xyz + origin)
            axis = points[0] - points[1]
            length = float(np.linalg.norm(axis))
            if length == 0.0:
                continue
            jac = frame_jacobian(model, x, ends[0][0], ends[0][1]) - frame_jacobian(model, x, ends[1][0], ends[1][1])
            row = (axis / length) @ jac[:3] @ gradient
            stiffness, damping, always = element.stiffness, element.damping, True
        else:
            row = gradient[joint_indices(model, element.joint, element.source)[1]]
            stiffness, damping = element.stiffness, element.damping
            always = type(element) is JointSpring
        w = float(row @ inverse @ row)
        out.append((element, stiffness * w, damping * w, always))
    for contact in contacts:
        jac = frame_jacobian(model, x, contact.link, contact.xyz)[:3] @ gradient
        row = contact.ground.n @ jac
        w = float(row @ inverse @ row)
        law = contact.normal_law
        out.append((contact, law.stiffness * w, getattr(law, "damping", 0.0) * w, False))
    return out


def check_stop_penetration(model, q: np.ndarray, dt: float) -> None:
    """One BridgeWarning per joint stop (a `<joint_stop>`, or the stop of a URDF `<limit>`) that the generalized
    configuration q puts so far beyond its limit that its stiffness there, d/dp (k pᵉ) = e k pᵉ⁻¹
    at the penetration p, makes dt beyond the explicit stability limit (module docstring): PyBullet's step then
    diverges in the first steps (a reset beyond a limit of 0.29 rad on the shoulder model at 240 Hz: 7e4 rad/s after
    12 steps), which the divergence would otherwise blame on a force outside the bridge."""
    from biobullet.forces import force_elements
    from biobullet.forces.base import joint_indices
    from biobullet.forces.elements import JointStop

    stops = [element for element in force_elements(model) if type(element) is JointStop]
    if not stops:
        return
    x, gradient, inverse = coordinate_inertia(model, q)
    deep = []
    for element in stops:
        index, column = joint_indices(model, element.joint, element.source)
        theta = float(x[index])
        for side, limit, depth in (("lower", element.lower, None if element.lower is None else element.lower - theta),
                                   ("upper", element.upper, None if element.upper is None else theta - element.upper)):
            if depth is not None and depth > 0.0:
                stiffness = element.exponent * element.stiffness * depth ** (element.exponent - 1.0)
                deep.append((element, side, limit, depth, stiffness, column))
    if not deep:
        return
    from biobullet.bridge.lifecycle import BridgeWarning
    for element, side, limit, depth, stiffness, column in deep:
        row = gradient[column]
        w = float(row @ inverse @ row)   # the joint's inverse effective inertia on the model's coordinates
        limit_dt = step_limit(stiffness * w, element.damping * w)
        if dt >= limit_dt:
            source = element.source
            warnings.warn(f"{source.file}: joint {element.joint!r} starts {depth:.3g} rad or m beyond the {side} limit "
                          f"{limit:g} of {source.element}, where the stop's stiffness ({stiffness:.3g}) makes the "
                          f"explicit step limit {limit_dt:.3g} s: PyBullet's step of {dt:g} s is beyond it and the run may "
                          "diverge; start within the limits (or use a smaller dt)", BridgeWarning, stacklevel=3)


def step_limit(k_r: float, c_r: float, substeps: int = 1) -> float:
    """The largest stable step (s) of one element whose force is held over `substeps` PyBullet sub-steps (module
    docstring): dt below the positive root of (2c − 1) k_r dt² + 2 c_r dt − 4 = 0 and, with sub-steps,
    (1 − c) k_r dt < c_r (c = (k+1)/(2k), `bridge.substep_weight`; 0 for an undamped element: no dt is stable;
    inf if the element has neither stiffness nor damping)."""
    from biobullet.bridge.bridge import substep_weight
    if k_r <= 0.0 and c_r <= 0.0:
        return np.inf
    weight = substep_weight(substeps)
    stiff = (2.0 * weight - 1.0) * k_r
    limit = 4.0 / (c_r + np.sqrt(c_r * c_r + 4.0 * stiff)) if stiff > 0.0 else 2.0 / c_r
    if substeps > 1 and k_r > 0.0:   # the step matrix's determinant 1 − c_r dt + (1 − c) k_r dt² must stay below 1
        limit = min(limit, c_r / ((1.0 - weight) * k_r))
    return float(limit)


def always_acting_step_limit(model) -> float:
    """The smallest explicit step limit (s) of the model's always-acting stiff elements (inf if none)."""
    return min((step_limit(k_r, c_r) for _, k_r, c_r, always in stiff_elements(model) if always), default=np.inf)


def check_stiff_elements(model, dt: float, what: str = "dt", substeps: int = 1) -> None:
    """ModelError naming the first always-acting element whose explicit limit dt exceeds with its force held over
    `substeps` PyBullet sub-steps (module docstring); one BridgeWarning per engaged-only element (stops, contacts)
    beyond its limit."""
    from biobullet.bridge.lifecycle import BridgeWarning
    for element, k_r, c_r, always in stiff_elements(model):
        limit = step_limit(k_r, c_r, substeps)
        if dt < limit:
            continue
        source = element.source
        held = (f" with {substeps} PyBullet sub-steps (numSubSteps: the bridge's torque is held over them)"
                if substeps > 1 else "")
        message = (f"{what} = {dt:g} s{held} is beyond the explicit stability limit of {source.element} "
                   f"({np.sqrt(k_r):.4g} rad/s, damping rate {c_r:.4g} 1/s on this model): PyBullet's step diverges "
                   f"{'when it engages' if not always else 'at once' if substeps == 1 else 'step by step'}")
        if substeps == 1:
            expected = f"dt < {limit:.3g} s (Bridge(model, dt=...) or bridge.set_time_step(dt)), or a softer element"
        else:   # sub-steps shrink the stable step (an undamped element has none): the remedy is none
            expected = (f"no sub-steps (bridge.set_time_step(dt, 1) or setPhysicsEngineParameter(numSubSteps=0)) "
                        f"and dt < {step_limit(k_r, c_r):.3g} s" + (f", or dt < {limit:.3g} s" if limit > 0.0 else "")
                        + ", or a softer element")
        if always:
            raise ModelError(message, file=source.file, element=source.element, attribute="dt", expected=expected)
        warnings.warn(f"{source.file}: {message}; expected {expected}", BridgeWarning, stacklevel=3)


#: more muscle sub-steps per bridge step than this: the muscle is too stiff for the step (ModelError)
MAX_MUSCLE_SUBSTEPS = 1000


def muscle_state_limits(run, lengths: np.ndarray, speeds: np.ndarray, state: np.ndarray) -> np.ndarray:
    """Per muscle state (activations, then the compliant fibers' lengths: `muscles.dynamics.MuscleRun`), the
    largest stable explicit Euler step 2/|λ| (s; inf where λ ≥ 0) at the musculotendon lengths and lengthening
    speeds (m, m/s; the stage's outputs at the step's tree state) and muscle state `state` (module docstring).
    Leaves the run's rows as evaluated at `state`."""
    from biobullet.muscles.dynamics import evaluate_rates
    rows, model = run.rows, run.model
    n_muscles = len(run.names)
    evaluate_rates(model, rows, lengths, speeds, state)
    rate = rows.rate.copy()
    diagonal = np.zeros(len(state))
    step = np.zeros(len(state))
    step[:n_muscles] = np.where(state[:n_muscles] > 0.5, -1e-7, 1e-7)   # activations stay in [0, 1]
    step[n_muscles:] = 1e-7 * np.maximum(np.abs(state[n_muscles:]), 1e-3)   # fiber lengths (m)
    for block in (slice(0, n_muscles), slice(n_muscles, len(state))):
        if block.start == block.stop:
            continue
        perturbed = state.copy()
        perturbed[block] += step[block]
        evaluate_rates(model, rows, lengths, speeds, perturbed)
        diagonal[block] = (rows.rate[block] - rate[block]) / step[block]
    evaluate_rates(model, rows, lengths, speeds, state)   # the rows as at `state`
    with np.errstate(divide="ignore"):
        return np.where(diagonal < 0.0, 2.0 / -diagonal, np.inf)


def muscle_substeps(run, lengths: np.ndarray, speeds: np.ndarray, state: np.ndarray, dt: float) -> int:
    """Explicit Euler sub-steps n of the muscle states for one bridge step dt (s): h = dt/n with h |λ| ≤ 1 for
    every muscle state, at the musculotendon lengths and lengthening speeds (m, m/s) of the step's start (module
    docstring). ModelError naming the stiffest muscle and its largest stable step when n would exceed
    `MAX_MUSCLE_SUBSTEPS`."""
    limits = muscle_state_limits(run, lengths, speeds, state)
    if not np.isfinite(limits).any():
        return 1
    stiffest = int(np.argmin(limits))
    n = max(1, int(np.ceil(2.0 * dt / limits[stiffest] - 1e-12)))
    if n > MAX_MUSCLE_SUBSTEPS:
        n_muscles = len(run.names)
        muscle = stiffest if stiffest < n_muscles else int(np.flatnonzero(run.rows.fiber_state == stiffest)[0])
        what = "activation" if stiffest < n_muscles else "fiber length"
        raise ModelError(f"the {what} of muscle {run.names[muscle]!r} is too stiff for dt = {dt:g} s: explicit "
                         f"Euler is stable up to {limits[stiffest]:.3g} s, and {n} sub-steps exceed "
                         f"{MAX_MUSCLE_SUBSTEPS}", file=run.model.file, element=f"<muscle name=\"{run.names[muscle]}\">",
                         attribute="dt", expected=f"dt < {MAX_MUSCLE_SUBSTEPS * limits[stiffest] / 2:.3g} s")
    return n


__all__ = ["always_acting_step_limit", "check_stiff_elements", "step_limit", "stiff_elements", "muscle_state_limits", "muscle_substeps",
           "MAX_MUSCLE_SUBSTEPS"]
