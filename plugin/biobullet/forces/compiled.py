"""Numba kernels of the built-in force elements for the compiled right-hand sides: the point-to-point spring's
generalized force (the hot path of `elements.Spring`), and the joint-space laws of `JointSpring` and `JointStop`
(`_joint_forces_py`, which the element classes evaluate as well; a switched stop's restart events stay with the
engine's event handling), and the sum over
third-party elements' own kernels (`_plugin_forces_py`: `ForceElement.compiled_kernel`, called by address; a model
with an element that has none stays on the callback stage). Contacts are not here (their law kernels: `contact`).

The spring: τ = J_bᵀ F − J_aᵀ F over each end point's ancestor joints
(`algorithms.compiled_kernels.point_force`), from the shared tree kinematics (world placements and motion
subspaces); `Spring` evaluates it (`spring`, its Python form without numba) on every path. Compiled on first use
(`cache=True`: kept in __pycache__ between processes).
"""
from __future__ import annotations

import math

import numpy as np

from biobullet.algorithms.compiled_kernels import point_force, point_kernels, point_velocity
from biobullet.core import jit



def _spring_kernel_py(rot, pos, sub, ancestry, xd, body_b, local_b, body_a, local_a, params, zero_length):
    """(status, τ, dissipated power c L̇² (W), L) of one spring between point local_b of body_b and local_a of
    body_a (−1: the world); params = (stiffness N/m, rest length m, damping N s/m). status 1 = zero length with
    rest_length > 0 (direction undefined), else 0."""
    stiffness, rest, damping = params[0], params[1], params[2]
    n = sub.shape[1]
    tau = np.zeros(n)
    pb = np.empty(3)
    pa = np.empty(3)
    for i in range(3):
        if body_b >= 0:
            pb[i] = rot[body_b, i, 0] * local_b[0] + rot[body_b, i, 1] * local_b[1] + rot[body_b, i, 2] * local_b[2] \
                + pos[body_b, i]
        else:
            pb[i] = local_b[i]
        if body_a >= 0:
            pa[i] = rot[body_a, i, 0] * local_a[0] + rot[body_a, i, 1] * local_a[1] + rot[body_a, i, 2] * local_a[2] \
                + pos[body_a, i]
        else:
            pa[i] = local_a[i]
    d0, d1, d2 = pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]
    length = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    rate = 0.0
    if length < zero_length:
        if rest > 0.0 and stiffness > 0.0:
            return 1, tau, 0.0, length
        coef_d = -stiffness
    else:
        if damping != 0.0:   # L̇ = u·ḋ, ḋ = v_b − v_a (point velocities)
            vb = np.empty(3)
            va = np.empty(3)
            _POINT_VELOCITY(sub, ancestry, body_b, pb, xd, vb)
            _POINT_VELOCITY(sub, ancestry, body_a, pa, xd, va)
            rate = (d0 * (vb[0] - va[0]) + d1 * (vb[1] - va[1]) + d2 * (vb[2] - va[2])) / length
        if rest == 0.0:
            coef_d, coef_u = -stiffness, -damping * rate
        else:
            coef_d, coef_u = 0.0, -(stiffness * (length - rest) + damping * rate)
        coef_d += coef_u / length   # force_b = coef_d d  (u = d / L)
    f0, f1, f2 = coef_d * d0, coef_d * d1, coef_d * d2   # on b; −F on a
    _POINT_FORCE(sub, ancestry, body_b, pb, f0, f1, f2, tau)
    _POINT_FORCE(sub, ancestry, body_a, pa, -f0, -f1, -f2, tau)
    return 0, tau, damping * rate * rate, length


_POINT_VELOCITY, _POINT_FORCE = point_velocity, point_force   # compiled and inlined when the spring kernel compiles


def spring_kernel():
    """The compiled `_spring_kernel_py`."""
    return jit.compiled(_spring_kernel_py, bind=point_kernels)


spring = jit.lazy(_spring_kernel_py, bind=point_kernels)   # the compiled kernel, or its Python form


def _spring_forces_py(rot, pos, sub, ancestry, xd, bodies, points, params, zero_length, tau):
    """Add every point-to-point spring's joint force to `tau` (rows of bodies/points/params: end b first, as
    `pipeline.force_rows` packs them); (status, dissipated power W), status 1 when a spring
    has zero length with rest_length > 0 (the callback stage then reports it). One sum for every compiled
    right-hand side and the bridge's per-step kernel."""
    dissipated = 0.0
    for s in range(bodies.shape[0]):
        status, spring_tau, power, _ = _SPRING(rot, pos, sub, ancestry, xd, bodies[s, 0], points[s, 0], bodies[s, 1],
                                              points[s, 1], params[s], zero_length)
        if status != 0:
            return 1, 0.0
        for k in range(tau.shape[0]):
            tau[k] += spring_tau[k]
        dissipated += power
    return 0, dissipated


def spring_forces_kernel():
    """The compiled `_spring_forces_py` (with the compiled spring kernel bound)."""
    return jit.compiled(_spring_forces_py, bind=lambda: {"_SPRING": spring_kernel()})


def _joint_forces_py(x, xd, spring_index, spring_params, stop_index, stop_params, tau):
    """Add the joint-space force elements' torques to `tau` and return their dissipated power (W): the law of
    `JointSpring` and `JointStop`, written once (the classes call it too), one sum for every compiled right-hand
    side.

    spring_index, stop_index: (n, 2) int64 rows (index in x, index in ẋ); spring_params: (n, 3) rows
    (k, θ0, c) — τ = −k (θ − θ0) − c θ̇; stop_params: (n, 9) rows (has_lower, lower, has_upper, upper, k, c, e,
    smoothing, switched) — per limit the joint is beyond, penetration p > 0 (lower − θ or θ − upper) and its rate
    ṗ: τ = ±(k p^e + c s(p) ṗ), s the C¹ smoothstep of p / smoothing (1 for a switched stop, whose restart events
    stay with the generic engine's event handling)."""
    dissipated = 0.0
    for s in range(spring_index.shape[0]):
        i, k = spring_index[s, 0], spring_index[s, 1]
        stiffness, rest, damping = spring_params[s, 0], spring_params[s, 1], spring_params[s, 2]
        tau[k] += -stiffness * (x[i] - rest) - damping * xd[k]
        dissipated += damping * xd[k] * xd[k]
    for s in range(stop_index.shape[0]):
        i, k = stop_index[s, 0], stop_index[s, 1]
        theta, rate = x[i], xd[k]
        stiffness, damping, exponent = stop_params[s, 4], stop_params[s, 5], stop_params[s, 6]
        smoothing, switched = stop_params[s, 7], stop_params[s, 8] != 0.0
        total = 0.0
        for side in range(2):
            if side == 0:
                if stop_params[s, 0] == 0.0 or not theta < stop_params[s, 1]:
                    continue
                sign, pen, pen_rate = 1.0, stop_params[s, 1] - theta, -rate
            else:
                if stop_params[s, 2] == 0.0 or not theta > stop_params[s, 3]:
                    continue
                sign, pen, pen_rate = -1.0, theta - stop_params[s, 3], rate
            gate = 1.0
            if not switched:
                u = min(pen / smoothing, 1.0)
                gate = u * u * (3.0 - 2.0 * u)
            total += sign * (stiffness * pen ** exponent + damping * gate * pen_rate)
            dissipated += damping * gate * pen_rate * pen_rate
        tau[k] += total
    return dissipated


def joint_forces_kernel():
    """The compiled `_joint_forces_py`."""
    return jit.compiled(_joint_forces_py)


def pack_joint_forces(model, joint_springs, joint_stops) -> tuple:
    """(spring_index, spring_params, stop_index, stop_params) of `_joint_forces_py` for these `JointSpring` and
    `JointStop` elements."""
    spring_index = np.array([e.joint_slots(model) for e in joint_springs], dtype=np.int64).reshape(-1, 2)
    spring_params = np.array([[e.stiffness, e.rest, e.damping] for e in joint_springs], dtype=float).reshape(-1, 3)
    stop_index = np.array([e.joint_slots(model) for e in joint_stops], dtype=np.int64).reshape(-1, 2)
    stop_params = np.array([[e.lower is not None, 0.0 if e.lower is None else e.lower, e.upper is not None,
                             0.0 if e.upper is None else e.upper, e.stiffness, e.damping, e.exponent, e.smoothing,
                             e.switched] for e in joint_stops], dtype=float).reshape(-1, 9)
    return spring_index, spring_params, stop_index, stop_params


# ------------------------------------------------------------------------------------------------ plug-in kernels
def _plugin_forces_py(t, x, xd, rot, pos, sub, ancestry, addresses, fparams, iparams, tau, power):
    """Add every plug-in element's τ (`ForceElement.compiled_kernel`) to `tau` and its input and dissipated power
    to power[0], power[1] (W); 0, or the first non-zero status (the callback stage must evaluate this state).
    addresses: (n,) int64 C entries of the kernels (`core.jit.function_address`); fparams, iparams: (n, m) rows,
    each kernel's own parameters at the start of its row (`pack_plugins`). One sum for every compiled right-hand
    side: the kernels are called through their addresses, so this code does not depend on which they are."""
    for k in range(addresses.shape[0]):
        kernel = _CALL_FORCE(addresses[k])
        status = kernel(t, x, xd, rot, pos, sub, ancestry, fparams[k], iparams[k], tau, power)
        if status != 0:
            return status
    return 0


def plugin_forces_kernel():
    """The compiled `_plugin_forces_py` (its address caller bound)."""
    from biobullet.forces.base import FORCE_KERNEL_SIGNATURE
    return jit.compiled(_plugin_forces_py, bind={"_CALL_FORCE": jit.address_caller(FORCE_KERNEL_SIGNATURE)})


def pack_plugins(model, elements) -> tuple | None:
    """(addresses (n,) int64, fparams (n, m) float64, iparams (n, m') int64, kinematics) of these elements'
    compiled kernels (`ForceElement.compiled_kernel`), each row padded with zeros, kinematics True when any kernel
    reads the tree kinematics; None when an element has no kernel or a plug-in's kernel does not compile (the
    callback stage then serves)."""
    from biobullet.forces.base import FORCE_KERNEL_SIGNATURE

    kernels = [element.compiled_kernel(model) for element in elements]
    if any(kernel is None for kernel in kernels):
        return None
    addresses = [jit.function_address(k.function, FORCE_KERNEL_SIGNATURE, bind=k.bind,
                                      plugin=f"{element.source.file}: {element.source.element}")
                 for element, k in zip(elements, kernels)]
    if any(address is None for address in addresses):
        return None
    fwidth = max([1] + [np.asarray(k.fparams).size for k in kernels])
    iwidth = max([1] + [np.asarray(k.iparams).size for k in kernels])
    fparams = np.zeros((len(kernels), fwidth))
    iparams = np.zeros((len(kernels), iwidth), dtype=np.int64)
    for row, kernel in enumerate(kernels):
        f = np.asarray(kernel.fparams, dtype=float).reshape(-1)
        i = np.asarray(kernel.iparams, dtype=np.int64).reshape(-1)
        fparams[row, :f.size] = f
        iparams[row, :i.size] = i
    return (np.array(addresses, dtype=np.int64), fparams, iparams, any(k.kinematics for k in kernels))
