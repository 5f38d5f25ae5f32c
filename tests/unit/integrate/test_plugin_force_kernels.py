"""Third-party force elements on the compiled right-hand sides (`ForceElement.compiled_kernel`, forces/base.py):
two toy elements registered here — a joint-space one (a nonlinear torsion spring with quadratic damping and a
time-dependent drive torque) and a Cartesian one (a damped spring from a point of a link to a fixed world point,
which reads the tree kinematics the kernel is handed) — on a chain (`CompiledExplicitRHS`) and on a four-bar knee
(`CompiledReducedRHS`, loop map).

Reference: the generic path (`System._checked_rhs`), where the same elements act through their numpy methods
(`generalized_force` with the library's frame Jacobians, `input_power`, `dissipated_power`): ẏ — accelerations,
input and dissipated power — must agree to 1e-12 relative at random states, with one, the other or both elements
(kernels of different types chained in one call); a kernel's non-zero status must hand the state to the generic
path; whole runs compiled and generic must agree within the integration tolerance, and the compiled run's energy
balance T + V − W + D (V from the elements' own `potential_energy`) must close.
"""
from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.algorithms.kinematics import body_placements, frame_jacobian, frame_placement
from biobullet.core import jit
from biobullet.core.attributes import check_known_attributes, number, vector3
from biobullet.forces import add_force_element
from biobullet.forces.base import ForceElement, ForceKernel, joint_indices, register_force
from biobullet.integrate.compiled_explicit import CompiledExplicitRHS
from biobullet.integrate.compiled_rhs import CompiledReducedRHS
from biobullet.integrate.engine import System
from multiloop_models import driven_knee

pytestmark = pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: the compiled path is off")

#: |θ̇| above which the toy joint kernel hands over (exercises the per-call fallback)
HAND_OVER_RATE = 50.0


def _toy_joint_py(t, x, xd, rot, pos, sub, ancestry, fparams, iparams, tau, power):
    """τ_k += −k sin(θ − θ0) − c θ̇ |θ̇| + a cos(ω t); input power a cos(ω t) θ̇, dissipated c |θ̇|³."""
    i, k = iparams[0], iparams[1]
    rate = xd[k]
    if abs(rate) > fparams[5]:
        return 7
    drive = fparams[3] * math.cos(fparams[4] * t)
    tau[k] += -fparams[0] * math.sin(x[i] - fparams[1]) - fparams[2] * rate * abs(rate) + drive
    power[0] += drive * rate
    power[1] += fparams[2] * rate * rate * abs(rate)
    return 0


@register_force("toy_joint_spring")
class ToyJointSpring(ForceElement):
    uses_placements = False

    def __init__(self, name, joint, stiffness, rest, damping, amplitude, omega, source=None):
        super().__init__(name, source)
        self.joint, self.k, self.rest, self.c, self.a, self.w = joint, stiffness, rest, damping, amplitude, omega

    @classmethod
    def from_description(cls, model, element):
        s, a = element.source, element.attributes
        check_known_attributes(s, a, {"name", "joint", "stiffness", "rest", "damping", "amplitude", "omega"})
        joint_indices(model, a.get("joint", ""), s)
        return cls(a.get("name", "toy"), a["joint"], *(number(s, a, key, 0.0) for key in
                                                       ("stiffness", "rest", "damping", "amplitude", "omega")),
                   source=s)

    def generalized_force(self, model, x, xd, t, placements=None):
        i, k = joint_indices(model, self.joint, self.source)
        tau = np.zeros(model.n_tangent)
        tau[k] = -self.k * np.sin(x[i] - self.rest) - self.c * xd[k] * np.abs(xd[k]) + self.a * np.cos(self.w * t)
        return tau

    def potential_energy(self, model, x):
        return self.k * (1.0 - math.cos(x[joint_indices(model, self.joint, self.source)[0]] - self.rest))

    def input_power(self, model, x, xd, t):
        return self.a * math.cos(self.w * t) * xd[joint_indices(model, self.joint, self.source)[1]]

    def dissipated_power(self, model, x, xd):
        return self.c * abs(xd[joint_indices(model, self.joint, self.source)[1]]) ** 3

    def compiled_kernel(self, model):
        i, k = joint_indices(model, self.joint, self.source)
        return ForceKernel(_toy_joint_py, np.array([self.k, self.rest, self.c, self.a, self.w, HAND_OVER_RATE]),
                           np.array([i, k], dtype=np.int64))


def _toy_anchor_py(t, x, xd, rot, pos, sub, ancestry, fparams, iparams, tau, power):
    """F = −k (p − anchor) − c v at a body point p (local fparams[2:5]) toward a world anchor (fparams[5:8]);
    τ = Jᵀ F from the motion subspaces, dissipated c |v|²."""
    b = iparams[0]
    p = np.empty(3)
    for r in range(3):
        p[r] = (rot[b, r, 0] * fparams[2] + rot[b, r, 1] * fparams[3] + rot[b, r, 2] * fparams[4]) + pos[b, r]
    v = np.zeros(3)
    for j in range(xd.shape[0]):
        c = ancestry[b, j] * xd[j]
        if c != 0.0:
            v[0] += (sub[0, j] + sub[4, j] * p[2] - sub[5, j] * p[1]) * c
            v[1] += (sub[1, j] + sub[5, j] * p[0] - sub[3, j] * p[2]) * c
            v[2] += (sub[2, j] + sub[3, j] * p[1] - sub[4, j] * p[0]) * c
    f = np.empty(3)
    for r in range(3):
        f[r] = -fparams[0] * (p[r] - fparams[5 + r]) - fparams[1] * v[r]
    m0, m1, m2 = p[1] * f[2] - p[2] * f[1], p[2] * f[0] - p[0] * f[2], p[0] * f[1] - p[1] * f[0]
    for j in range(xd.shape[0]):
        if ancestry[b, j] != 0.0:
            tau[j] += (f[0] * sub[0, j] + f[1] * sub[1, j] + f[2] * sub[2, j]
                       + m0 * sub[3, j] + m1 * sub[4, j] + m2 * sub[5, j])
    power[1] += fparams[1] * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    return 0


@register_force("toy_anchor")
class ToyAnchor(ForceElement):
    def __init__(self, name, link, xyz, anchor, stiffness, damping, source=None):
        super().__init__(name, source)
        self.link, self.xyz, self.anchor, self.k, self.c = link, xyz, anchor, stiffness, damping

    @classmethod
    def from_description(cls, model, element):
        s, a = element.source, element.attributes
        return cls(a.get("name", "anchor"), a["link"], vector3(s, a, "xyz"), vector3(s, a, "anchor"),
                   number(s, a, "stiffness"), number(s, a, "damping", 0.0), source=s)

    def _point(self, model, x, xd, placements=None):
        placements = placements if placements is not None else body_placements(model, x)
        rotation, origin = frame_placement(model, x, self.link, placements)
        jac = frame_jacobian(model, x, self.link, self.xyz, placements)[:3]
        return rotation @ self.xyz + origin, jac, jac @ xd

    def generalized_force(self, model, x, xd, t, placements=None):
        p, jac, v = self._point(model, x, xd, placements)
        return jac.T @ (-self.k * (p - self.anchor) - self.c * v)

    def potential_energy(self, model, x):
        p, _, _ = self._point(model, x, np.zeros(model.n_tangent))
        return 0.5 * self.k * float((p - self.anchor) @ (p - self.anchor))

    def dissipated_power(self, model, x, xd):
        return self.c * float(np.sum(self._point(model, x, xd)[2] ** 2))

    def compiled_kernel(self, model):
        frame = model.frame(self.link)
        local = frame.rotation @ self.xyz + frame.translation
        return ForceKernel(_toy_anchor_py, np.array([self.k, self.c, *local, *self.anchor]),
                           np.array([frame.body], dtype=np.int64), kinematics=True)


def joint_spring(joint: str, amplitude: float = 0.7) -> ToyJointSpring:
    return ToyJointSpring("tj", joint, 2.5, 0.3, 0.4, amplitude, 5.0)


def anchor(link: str, name: str = "ta", stiffness: float = 60.0) -> ToyAnchor:
    return ToyAnchor(name, link, np.array([0.03, 0.01, -0.12]), np.array([0.2, 0.05, -0.5]), stiffness, 1.5)


def _load(path: Path, elements) -> object:
    """The model at `path` with the toy elements attached from Python (`add_force_element`; the file reader
    takes third-party tags from entry points only)."""
    model = biobullet.load_model(path)
    for element in elements:
        add_force_element(model, element)
    return model


def _chain(directory: Path, elements: str = "") -> Path:
    """A 4-link spatial chain (three revolute joints about different axes, one prismatic) with `elements`."""
    axes = ("0 1 0", "1 0 0", "0 0 1", "0 0 1")
    links, joints = [], []
    for k in range(1, 5):
        links.append(f'<link name="l{k}"><inertial><origin xyz="0.02 0.01 -0.1"/><mass value="{0.8 + 0.2 * k}"/>'
                     f'<inertia ixx="0.012" ixy="0.001" ixz="0" iyy="0.011" iyz="0" izz="0.005"/></inertial></link>')
        kind = "prismatic" if k == 4 else "continuous"
        limit = '<limit lower="-1" upper="1" effort="100" velocity="10"/>' if k == 4 else ""
        joints.append(f'<joint name="j{k}" type="{kind}"><parent link="{"base" if k == 1 else f"l{k - 1}"}"/>'
                      f'<child link="l{k}"/><origin xyz="0 0 {-0.2 if k > 1 else 0}" rpy="0.1 0 0.2"/>'
                      f'<axis xyz="{axes[k - 1]}"/>{limit}</joint>')
    text = ('<robot name="plugin_chain"><link name="base"/>' + "".join(links) + "".join(joints)
            + f'<biobullet version="1"><gravity xyz="0 0 -9.81"/>{elements}</biobullet></robot>')
    path = directory / "plugin_chain.urdf"
    path.write_text(text)
    return path


def _random_states(system, model, rng, n, scale=0.4):
    y0 = system.initial_vector(None, 0.0)
    for _ in range(n):
        y = y0.copy()
        y[:system.n_pos + system.n_vel] += rng.normal(scale=scale, size=system.n_pos + system.n_vel)
        yield float(rng.uniform(0.0, 2.0)), y


def _compare_chain(tmp_path, elements, text=""):
    model = _load(_chain(tmp_path, text), elements)
    fast, slow = System(model, "reduced"), System(model, "reduced", {"compiled": False})
    assert type(fast._compiled) is CompiledExplicitRHS
    rng = np.random.default_rng(11)
    for t, y in _random_states(fast, model, rng, 40):
        got, ref = fast._compiled(t, y), slow._checked_rhs(t, y)
        assert got is not None
        assert np.abs(got - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max()), got - ref
        assert ref[-1] > 0.0   # the elements' dissipation is in the comparison
    return model, fast, slow


def test_joint_space_element_on_the_explicit_path(tmp_path):
    model, fast, slow = _compare_chain(tmp_path, [joint_spring("j2")])
    # the drive's input power is in the comparison too
    y = fast.initial_vector(None, 0.0)
    y[fast.n_pos + 1] = 1.3
    assert abs(slow._checked_rhs(0.1, y)[-2]) > 0.1


def test_cartesian_element_on_the_explicit_path(tmp_path):
    _compare_chain(tmp_path, [anchor("l3")])


def test_several_kernels_of_different_types_in_one_call(tmp_path):
    _compare_chain(tmp_path, [joint_spring("j2"), anchor("l3"), anchor("l4", "tb", 25.0)],
                   '<joint_spring joint="j1" stiffness="3" rest="0.1" damping="0.05"/>')


def test_non_zero_status_hands_over_to_the_generic_path(tmp_path):
    model = _load(_chain(tmp_path), [joint_spring("j2")])
    fast = System(model, "reduced")
    slow = System(model, "reduced", {"compiled": False})
    y = fast.initial_vector(None, 0.0)
    k = model.joint_names.index("j2")
    y[fast.n_pos + k] = 2.0 * HAND_OVER_RATE
    assert fast._compiled(0.2, y) is None
    assert np.array_equal(fast.rhs(0.2, y), slow._checked_rhs(0.2, y))   # served by the generic path


def test_element_without_kernel_keeps_the_generic_path(tmp_path, monkeypatch):
    monkeypatch.setattr(ToyAnchor, "compiled_kernel", lambda self, model: None)
    model = _load(_chain(tmp_path), [anchor("l3")])
    assert System(model, "reduced")._compiled is None


def test_both_elements_on_the_loop_path(tmp_path):
    model = _load(driven_knee(tmp_path), [joint_spring("ankle"), anchor("shank")])
    fast = System(model, "reduced", {"shadow": True})
    slow = System(model, "reduced", {"shadow": True, "compiled": False})
    assert type(fast._compiled) is CompiledReducedRHS
    rows_x, rows_v = slow.shadow
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(30):
        t = float(rng.uniform(0.0, 1.0))
        q = rng.uniform(-0.3, 0.3, model.nq) + 0.3
        v = rng.uniform(-3.0, 3.0, model.nv)
        x, xd, _, _ = model.joint_state(q, v, t)
        y = np.concatenate([q, v, x[rows_x], xd[rows_v], [0.0, 0.0]])
        ref = slow._checked_rhs(t, y)   # the resolver's cache at this state's solution …
        fast._compiled._warm.valid[:] = 0.0   # … the compiled run's warm start too: both from the same solution
        got = fast._compiled(t, y)
        if got is None:
            continue
        checked += 1
        assert np.abs(got - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max()), got - ref
    assert checked >= 25


def test_whole_runs_agree_and_the_energy_balance_closes(tmp_path):
    model = _load(_chain(tmp_path), [joint_spring("j2", amplitude=0.0), anchor("l3")])
    runs = [biobullet.simulate(model, 0.5, rtol=1e-10, atol=1e-12, compiled=c, progress=False,
                               t_eval=np.linspace(0.0, 0.5, 26)) for c in (True, False)]
    assert np.abs(runs[0].positions - runs[1].positions).max() < 1e-8
    assert runs[0].energy["dissipated"][-1] > 1e-3
    assert np.abs(runs[0].energy["dissipated"] - runs[1].energy["dissipated"]).max() < 1e-8
    balance = runs[0].energy_balance()
    assert np.ptp(balance) < 1e-7 * max(1.0, float(np.abs(runs[0].energy["kinetic"]).max()))


def _not_compilable_py(t, x, xd, rot, pos, sub, ancestry, fparams, iparams, tau, power):
    """Not numba-compilable (a Python object): the element must keep the generic path, with a warning."""
    stiffness = Fraction(1, 3) * fparams[0]
    tau[iparams[1]] += -stiffness * x[iparams[0]]
    return 0


def test_kernel_that_does_not_compile_warns_and_keeps_the_generic_path(tmp_path, monkeypatch):
    def broken(self, model):
        i, k = joint_indices(model, self.joint, self.source)
        return ForceKernel(_not_compilable_py, np.array([self.k]), np.array([i, k], dtype=np.int64))

    monkeypatch.setattr(ToyJointSpring, "compiled_kernel", broken)
    model = _load(_chain(tmp_path), [joint_spring("j2")])
    with pytest.warns(RuntimeWarning, match="_not_compilable_py does not compile"):
        system = System(model, "reduced")
    assert system._compiled is None
    slow = System(model, "reduced", {"compiled": False})
    y = system.initial_vector(None, 0.0) + 0.1
    assert np.array_equal(system.rhs(0.3, y), slow._checked_rhs(0.3, y))
