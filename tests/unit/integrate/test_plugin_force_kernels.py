"""Third-party force elements on the compiled right-hand sides (`ForceElement.compiled_kernel`, forces/base.py):
two toy elements registered here — a joint-space one (a nonlinear torsion spring with quadratic damping and a
time-dependent drive torque) and a Cartesian one (a damped spring from a point of a link to a fixed world point,
which reads the tree kinematics the kernel is handed) — on a chain (`CompiledReducedRHS`) and on a four-bar knee
(`CompiledReducedRHS`, loop map).

Reference: the elements' documented laws written out in the test (`_joint_law`, `_anchor_law`: the anchor's point
and Jacobian from Pinocchio), not the elements' own methods. ẏ at random states satisfies d'Alembert's principle
with Pinocchio's inverse dynamics and those laws (`rhs_oracles`), and its input and dissipated power entries equal
the laws' powers (1e-12 relative), with one, the other or both elements (kernels of different types chained in one
call), on a chain and on the four-bar knee's loop map; a kernel's non-zero status hands the state over and the
result still obeys the law; a run's energy balance T + V − W + D closes.
"""
from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.algorithms.kinematics import body_placements, frame_jacobian, frame_placement
from biobullet.core.attributes import check_known_attributes, number, vector3
from biobullet.forces import add_force_element
from biobullet.forces.base import ForceElement, ForceKernel, joint_indices, register_force
from biobullet.integrate.compiled_rhs import CompiledReducedRHS
from biobullet.integrate.engine import System
from multiloop_models import driven_knee
from rhs_oracles import PinocchioTree, assert_dalembert, spring_force


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
        jac = frame_jacobian(model, x, self.link, self.xyz)[:3]
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


def _joint_law(model, joint: str, amplitude: float = 0.7):
    """`joint_spring`'s law: τ = −2.5 sin(θ − 0.3) − 0.4 θ̇|θ̇| + a cos(5 t); input a cos(5 t) θ̇, dissipated
    0.4 |θ̇|³ — (τ, input power, dissipated power) of (x, ẋ, t)."""
    from biobullet.forces.base import joint_indices
    i, k = joint_indices(model, joint, None)

    def law(x, xd, t):
        tau = np.zeros(len(xd))
        drive = amplitude * math.cos(5.0 * t)
        tau[k] = -2.5 * math.sin(x[i] - 0.3) - 0.4 * xd[k] * abs(xd[k]) + drive
        return tau, drive * xd[k], 0.4 * abs(xd[k]) ** 3
    return law


def _anchor_law(tree, link: str, stiffness: float = 60.0):
    """`anchor`'s law: F = −k (p − (0.2, 0.05, −0.5)) − 1.5 v at the point (0.03, 0.01, −0.12) of `link`,
    τ = J_pᵀ F (Pinocchio's point and Jacobian); dissipated 1.5 |v|²."""
    def law(x, xd, t):
        p, jac = tree.point(x, link, [0.03, 0.01, -0.12])
        v = jac @ xd
        return jac.T @ (-stiffness * (p - np.array([0.2, 0.05, -0.5])) - 1.5 * v), 0.0, 1.5 * float(v @ v)
    return law


def _j1_spring_law(model):
    """The file's `<joint_spring joint="j1" stiffness="3" rest="0.1" damping="0.05"/>`."""
    from biobullet.forces.base import joint_indices
    i, k = joint_indices(model, "j1", None)

    def law(x, xd, t):
        tau = np.zeros(len(xd))
        tau[k] = -3.0 * (x[i] - 0.1) - 0.05 * xd[k]
        return tau, 0.0, 0.05 * xd[k] ** 2
    return law


def _assert_laws(system, tree, t, y, ydot, laws) -> float:
    """ẏ obeys the laws: d'Alembert with Σ τ, and ẏ's power entries = Σ input, Σ dissipated (1e-12 relative:
    the same sums in another order). Returns the dissipated power."""
    def force(x, xd, s):
        return sum(law(x, xd, s)[0] for law in laws)
    assert_dalembert(system, tree, t, y, ydot, force)
    x, xd = system.tree_state(t, y)
    powers = np.sum([law(x, xd, t)[1:] for law in laws], axis=0)
    np.testing.assert_allclose(ydot[-2:], powers, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(powers).max()))
    return float(powers[1])


def _random_states(system, model, rng, n, scale=0.4):
    """States near the initial one; the prismatic j4 (URDF limit stop at ±1 m) kept inside its limits."""
    from biobullet.forces.base import joint_indices
    i4 = joint_indices(model, "j4", None)[0]
    y0 = system.initial_vector(None, 0.0)
    for _ in range(n):
        y = y0.copy()
        y[:system.n_pos + system.n_vel] += rng.normal(scale=scale, size=system.n_pos + system.n_vel)
        y[i4] = np.clip(y[i4], -0.9, 0.9)
        yield float(rng.uniform(0.0, 2.0)), y


def _check_chain(tmp_path, elements, laws, text=""):
    model = _load(_chain(tmp_path, text), elements)
    system = System(model, "reduced")
    assert type(system._compiled) is CompiledReducedRHS
    tree = PinocchioTree(model)
    laws = [law(model, tree) for law in laws]
    rng = np.random.default_rng(11)
    for t, y in _random_states(system, model, rng, 6):
        out = system._compiled(t, y)
        assert out is not None
        assert _assert_laws(system, tree, t, y, out, laws) > 0.0   # the elements' dissipation is in the check
    return model, system


def test_joint_space_element_on_the_explicit_path(tmp_path):
    model, system = _check_chain(tmp_path, [joint_spring("j2")], [lambda m, tree: _joint_law(m, "j2")])
    y = system.initial_vector(None, 0.0)
    y[system.n_pos + 1] = 1.3
    assert abs(system.rhs(0.1, y)[-2]) > 0.1   # the drive's input power is in the check too


def test_cartesian_element_on_the_explicit_path(tmp_path):
    _check_chain(tmp_path, [anchor("l3")], [lambda m, tree: _anchor_law(tree, "l3")])


def test_several_kernels_of_different_types_in_one_call(tmp_path):
    _check_chain(tmp_path, [joint_spring("j2"), anchor("l3"), anchor("l4", "tb", 25.0)],
                 [lambda m, tree: _joint_law(m, "j2"), lambda m, tree: _anchor_law(tree, "l3"),
                  lambda m, tree: _anchor_law(tree, "l4", 25.0), lambda m, tree: _j1_spring_law(m)],
                 '<joint_spring joint="j1" stiffness="3" rest="0.1" damping="0.05"/>')


def test_non_zero_status_hands_over_and_the_law_still_holds(tmp_path):
    model = _load(_chain(tmp_path), [joint_spring("j2")])
    system = System(model, "reduced")
    y = system.initial_vector(None, 0.0)
    k = model.joint_names.index("j2")
    y[system.n_pos + k] = 2.0 * HAND_OVER_RATE
    assert system._compiled(0.2, y) is None
    tree = PinocchioTree(model)
    _assert_laws(system, tree, 0.2, y, system.rhs(0.2, y), [_joint_law(model, "j2")])


def test_element_without_kernel_keeps_the_generic_path(tmp_path, monkeypatch):
    monkeypatch.setattr(ToyAnchor, "compiled_kernel", lambda self, model: None)
    model = _load(_chain(tmp_path), [anchor("l3")])
    assert System(model, "reduced")._compiled is None


def test_both_elements_on_the_loop_path(tmp_path):
    """The toy joint spring at the ankle (a joint the loop's functions drive) and the anchor on the shank, on the
    driven four-bar knee (its own damped spring thigh → foot: k 300 N/m, L₀ 0.3 m, c 2 N s/m)."""
    model = _load(driven_knee(tmp_path), [joint_spring("ankle"), anchor("shank")])
    system = System(model, "reduced")
    assert type(system._compiled) is CompiledReducedRHS
    tree = PinocchioTree(model)

    laws = [_joint_law(model, "ankle"), _anchor_law(tree, "shank")]
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(8):
        t = float(rng.uniform(0.0, 1.0))
        y = np.zeros(system.size)
        y[:model.nq] = rng.uniform(-0.3, 0.3, model.nq) + 0.3
        y[model.nq:model.nq + model.nv] = rng.uniform(-3.0, 3.0, model.nv)
        model.joint_state(y[:model.nq], y[model.nq:model.nq + model.nv], t)   # the resolver's solution here …
        system._compiled._warm.valid[:] = 0.0   # … the compiled call's warm start too (no continuation needed)
        out = system._compiled(t, y)
        if out is None:
            continue
        checked += 1

        def force(x, xd, s):
            return sum(law(x, xd, s)[0] for law in laws) + spring_force(
                tree, x, xd, ("thigh", [-0.01, 0.0, -0.05]), ("foot", [0.03, 0.0, 0.0]), 300.0, 0.3, 2.0)
        assert_dalembert(system, tree, t, y, out, force)
    assert checked >= 6


def test_energy_balance_of_a_run_closes(tmp_path):
    """T + V − W + D of a run with both elements (no drive) is constant: V from the laws' potentials in
    `potential_energy`, D from the kernels' dissipated power; rtol 1e-10 over 0.5 s."""
    model = _load(_chain(tmp_path), [joint_spring("j2", amplitude=0.0), anchor("l3")])
    run = biobullet.simulate(model, 0.5, rtol=1e-10, atol=1e-12, progress=False, t_eval=np.linspace(0.0, 0.5, 26))
    assert run.energy["dissipated"][-1] > 1e-3
    balance = run.energy_balance()
    assert np.ptp(balance) < 1e-7 * max(1.0, float(np.abs(run.energy["kinetic"]).max()))


def _not_compilable_py(t, x, xd, rot, pos, sub, ancestry, fparams, iparams, tau, power):
    """Not numba-compilable (a Python object): the element must keep the callback stage, with a warning."""
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
    y = system.initial_vector(None, 0.0) + 0.1   # the element's own law (generalized_force) serves instead
    _assert_laws(system, PinocchioTree(model), 0.3, y, system.rhs(0.3, y), [_joint_law(model, "j2")])
