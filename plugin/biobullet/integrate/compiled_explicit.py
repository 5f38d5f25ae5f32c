"""The engine's compiled right-hand side of a reduced model whose coordinate map is explicit joint functions
(identity, affine, polynomial, linear, cubic spline, Fourier drivers, expressions, plug-in jets), fixed or floating
base, spherical, planar and inner free joints, with point-to-point springs, joint spring-dampers, joint stops,
joint torques, ground contacts with compiled laws and third-party elements' kernels: `CompiledExplicitRHS`, one
call of the pipeline's right-hand-side kernel (`pipeline.stages.rhs_py`: joint state → forces → M, h → solve →
q̇) on the model's compiled arrays, a Data of its own and the run's packed force rows (`pipeline.force_rows`).
The loop map's `compiled_rhs.CompiledReducedRHS` is this class with the loop stage's warm starts managed.

A call returns None — the generic path then evaluates the state — for a non-finite state or result (an
expression outside its domain included: the generic path raises its EvaluationError), a zero-length spring or a
mass matrix that is not positive definite. `explicit_states_batch` evaluates the same table over all samples of a
trajectory (post-processing).
"""
from __future__ import annotations

import numpy as np

from biobullet.core import jit
from biobullet.model.joint_jets import PLUGIN, explicit_jets, explicit_table, has_tapes, jets_kernel  # noqa: F401
from biobullet.pipeline.compiled_model import COMPILED_STATE, TREE_JOINTS
from biobullet.pipeline.force_rows import NO_PLUGINS, pack_force_rows


def plugin_elements(system, builtins) -> tuple[list, tuple | None]:
    """(the run's elements that are not of the `builtins` types, their packed kernels): the packed kernels are
    `forces.compiled.pack_plugins`'s tuple, `NO_PLUGINS` without such elements, or None when one of them has no
    compiled kernel (the run then keeps the generic path)."""
    from biobullet.forces.compiled import pack_plugins
    others = [e for e in system.elements if type(e) not in builtins]
    if not others:
        return others, NO_PLUGINS
    return others, pack_plugins(system.model, others)


class CompiledExplicitRHS:
    """`__call__(t, y)` → ẏ for a "reduced" run of a model whose coordinate map the pipeline's joint-state stage
    evaluates (identity, affine or explicit joint functions; fixed or floating base; 1-DOF, spherical, planar and
    free joints), with joint torques, joint spring-dampers, joint stops (smooth or switched; the switched stops'
    restart events stay with the engine's event handling), point-to-point springs, ground contacts with built-in
    laws or plug-in laws with a compiled twin, and third-party elements with a compiled kernel
    (`ForceElement.compiled_kernel`): one compiled call; None where the generic path must evaluate. Built by
    :meth:`for_system` (None for other models: loops, plug-in functions, elements or contact laws without a
    compiled form, …)."""

    def __init__(self, system, springs, joint_springs, torques, joint_stops=(), contacts=(), plugins=None) -> None:
        from biobullet.pipeline.kernels import features, rhs_kernel

        model = system.model
        self._compiled = model.compiled
        self._data = model.data()
        self._muscles = system.muscles
        self._forces = pack_force_rows(model, springs, joint_springs, joint_stops, contacts, plugins,
                                       None if system.muscles is None else system.muscles.rows)
        self._nq, self._nv = model.nq, model.nv
        self._kernel = rhs_kernel(**features(self._compiled, self._forces))   # only the stages this run uses
        self._torques = [(torque, torque.joint_slots(model)[1]) for torque in torques]
        self._constant_tau = np.zeros(model.n_tangent)
        for torque, k in self._torques:
            if torque.value is not None:
                self._constant_tau[k] += torque.value
        self._forces.tau_time[:] = self._constant_tau
        self._varying = [(torque, k) for torque, k in self._torques if torque.value is None]
        # ground contacts: state rows refreshed from the run's ContactStates at every call (the engine's event
        # actions change those in Python)
        self._contact_states = [contact.state for contact in contacts]
        for contact in contacts:   # the interval log's samples by the same compiled laws
            contact.use_compiled_observer(model)
        self._entry = None

    @classmethod
    def for_system(cls, system) -> "CompiledExplicitRHS | None":
        from biobullet.contact.element import Contact
        from biobullet.contact.kernels import has_twins
        from biobullet.forces.elements import JointSpring, JointStop, JointTorque, Spring

        model = system.model
        if system.joint_space or system.formulation != "reduced" or system.shadow is not None:
            return None
        # ground contacts: built-in laws only (a plug-in law keeps the generic path); run copies (a state)
        contacts = [e for e in system.elements if type(e) is Contact]
        if any(not has_twins(e) or e.state is None for e in contacts):
            return None
        # third-party elements: each with its compiled kernel (`ForceElement.compiled_kernel`), else generic
        _, plugins = plugin_elements(system, (Spring, JointTorque, JointSpring, JointStop, Contact))
        if plugins is None:
            return None
        if any(b.joint_type not in TREE_JOINTS for b in model.bodies):
            return None
        if model.compiled.state_stage != COMPILED_STATE or model.compiled.loops.stages.shape[0]:
            return None   # (loops: `compiled_rhs.CompiledReducedRHS`, which keeps their warm starts)
        path = cls(system, [e for e in system.elements if type(e) is Spring],
                   [e for e in system.elements if type(e) is JointSpring],
                   [e for e in system.elements if type(e) is JointTorque],
                   [e for e in system.elements if type(e) is JointStop], contacts, plugins)
        return path if path._kernel is not None else None

    def _refreshed(self, t: float, y: np.ndarray):
        """The run's ForceRows with τ(t), the contacts' discrete state rows and the muscles' excitations of this
        call (state y) written in."""
        forces = self._forces
        if self._varying:
            tau = forces.tau_time
            tau[:] = self._constant_tau
            for torque, k in self._varying:
                tau[k] += torque.torque(t)
        if self._muscles is not None:
            self._muscles.refresh(t, y[:self._nq], y[self._nq:self._nq + self._nv])
        if self._contact_states:
            from biobullet.contact.kernels import discrete_rows
            discrete_rows(self._contact_states, forces.contact_state)
        return forces

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray | None:
        if not (y.flags.c_contiguous and y.flags.writeable and y.dtype == np.float64):
            y = np.array(y, dtype=float)
        out = np.empty(y.shape[0])
        args = (self._compiled, self._data.arrays, self._refreshed(t, y), y, float(t), out)
        if self._entry is None:
            self._entry = jit.direct_entry(self._kernel, *args)
        return out if self._entry(*args) == 0 else None


_SAMPLE_JETS = explicit_jets   # `explicit_states_batch` binds the compiled jets; this serves the Python form


def _explicit_states_py(table, inputs, coef, t, theta, rate):
    """θ, θ̇ of the dependent joints at each sample by the kernel's own jets (`_explicit_jets_py`); G and γ are
    not wanted (a one-column zero gradient). False when an expression is not finite at some sample."""
    gradient = np.zeros((theta.shape[1], 1))
    gamma = np.zeros(theta.shape[1])
    for k in range(t.shape[0]):
        x = theta[k]
        xd = rate[k]
        if _SAMPLE_JETS(table, inputs, coef, t[k], int(0), int(0), x, xd, gradient, gamma) != 0:
            return False
    return True


def explicit_states_batch(table, inputs, coef, t: np.ndarray, theta: np.ndarray, rate: np.ndarray) -> bool:
    """θ and θ̇ of the dependent joints at n samples, in place (theta, rate: (n, n_joints), independent columns
    set; t: (n,)): the kernel's own jets sample by sample, in one compiled call (run by Python with numba
    disabled). False when an expression is not finite at some sample (the caller's per-sample path then reports
    it) or, with numba disabled, when the table holds a third-party function's compiled jets."""
    if not table.shape[0]:
        return True
    tapes = has_tapes(table)
    kernel = jit.compiled(_explicit_states_py, bind=lambda: {"_SAMPLE_JETS": jets_kernel(tapes)},
                          variant="" if tapes else "no_tapes")
    if kernel is None:
        if np.any(table[:, 0] == PLUGIN):   # third-party compiled jets: only a compiled kernel can call them
            return False
        kernel = _explicit_states_py
    # C-contiguous arrays: one specialisation of the kernel for every caller
    theta_c, rate_c = np.ascontiguousarray(theta), np.ascontiguousarray(rate)
    with np.errstate(all="ignore"):   # the Python form's overflow becomes inf (then False), as in the kernel
        done = bool(kernel(np.ascontiguousarray(table), np.ascontiguousarray(inputs),
                           np.ascontiguousarray(coef, dtype=float), np.ascontiguousarray(t, dtype=float), theta_c,
                           rate_c))
    if theta_c is not theta:
        theta[...] = theta_c
    if rate_c is not rate:
        rate[...] = rate_c
    return done
