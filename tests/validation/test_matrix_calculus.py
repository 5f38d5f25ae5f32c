"""The matrix-calculus formulation (paper 000) against independent oracles.

- the `reduced` formulation (spatial CRBA/RNEA + projection) on random trees, with and without joint functions,
  fixed and floating base;
- Pinocchio directly (same URDF, joints mapped by name) on trees without joint functions;
- SymPy Lagrange equations written here for planar chains with a polynomial coupling and a Fourier time driver.
Tolerances: all paths are exact up to floating-point round-off on O(1) quantities (condition of the
forward-dynamics solve included), so relative 1e-10 leaves >10⁴ margin over the ~1e-15 errors observed while
catching any missing term (those are O(1)).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import sympy as sp

from biobullet.dynamics.formulation import get_formulation
from biobullet.loader import load_model
from biobullet.validate.random_models import random_urdf

RTOL = 1e-10


def _rel(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300))


def _random_state(model, rng):
    q = rng.uniform(-1.5, 1.5, model.nq)
    if model.floating_base:
        q[3:7] /= np.linalg.norm(q[3:7])
    return q, rng.uniform(-2.0, 2.0, model.nv)


def _load(tmp_path, text: str, name: str = "model.urdf"):
    path = tmp_path / name
    path.write_text(text)
    return load_model(path), path


# ---------------------------------------------------------------------------------------------- reduced
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("floating", [False, True])
@pytest.mark.parametrize("couplings", [0, 2, 3])
def test_agrees_with_reduced(tmp_path, seed, floating, couplings):
    model, _ = _load(tmp_path, random_urdf(seed, 7, floating_base=floating, couplings=couplings))
    if couplings:
        assert model.nq < model.n_config  # the joint functions really made joints dependent
    mc, ref = get_formulation("matrix_calculus"), get_formulation("reduced")
    rng = np.random.default_rng(100 + seed)
    for _ in range(3):
        q, v = _random_state(model, rng)
        t = rng.uniform(0.0, 2.0)
        assert _rel(mc.mass_matrix(model, q, t), ref.mass_matrix(model, q, t)) < RTOL
        h_ref = ref.bias_forces(model, q, v, t)
        assert _rel(mc.bias_forces(model, q, v, t), h_ref) < RTOL
        a = model.forward_dynamics(q, v, t=t, formulation="matrix_calculus")
        assert _rel(a, model.forward_dynamics(q, v, t=t, formulation="reduced")) < RTOL


# ---------------------------------------------------------------------------------------------- Pinocchio
def _pinocchio_maps(pmodel, model):
    """Index arrays: our q / v entries → Pinocchio's, and the continuous joints (cos, sin in Pinocchio)."""
    base_q, base_v = (7, 6) if model.floating_base else (0, 0)
    v_perm = list(range(base_v))
    for name in model.coordinate_names[base_q:]:
        v_perm.append(pmodel.joints[pmodel.getJointId(name)].idx_v)
    return np.array(v_perm)


def _pinocchio_q(pmodel, model, q):
    base_q = 7 if model.floating_base else 0
    pq = pin.neutral(pmodel)
    pq[:base_q] = q[:base_q]
    for name, value in zip(model.coordinate_names[base_q:], q[base_q:]):
        joint = pmodel.joints[pmodel.getJointId(name)]
        if joint.nq == 2:  # continuous joint
            pq[joint.idx_q:joint.idx_q + 2] = np.cos(value), np.sin(value)
        else:
            pq[joint.idx_q] = value
    return pq


@pytest.mark.parametrize("seed", [0, 4, 7])
@pytest.mark.parametrize("floating", [False, True])
def test_agrees_with_pinocchio(tmp_path, seed, floating):
    model, path = _load(tmp_path, random_urdf(seed, 7, floating_base=floating))
    pmodel = (pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating
              else pin.buildModelFromUrdf(str(path)))
    pmodel.gravity.linear = model.gravity
    data = pmodel.createData()
    perm = _pinocchio_maps(pmodel, model)
    assert sorted(perm) == list(range(pmodel.nv))
    mc = get_formulation("matrix_calculus")
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q, v = _random_state(model, rng)
        pq = _pinocchio_q(pmodel, model, q)
        pv = np.zeros(pmodel.nv)
        pv[perm] = v
        mass = pin.crba(pmodel, data, pq)
        mass = np.triu(mass) + np.triu(mass, 1).T
        bias = pin.rnea(pmodel, data, pq, pv, np.zeros(pmodel.nv))
        assert _rel(mc.mass_matrix(model, q, 0.0), mass[np.ix_(perm, perm)]) < RTOL
        assert _rel(mc.bias_forces(model, q, v, 0.0), bias[perm]) < RTOL


def test_coordinate_hessians_match_finite_differences(tmp_path):
    model, _ = _load(tmp_path, random_urdf(3, 7, couplings=3))
    cmap = model.coordinate_map
    q = np.random.default_rng(0).uniform(-1, 1, cmap.nq)
    t, eps = 0.2, 1e-6
    theta, grad, hess = cmap.evaluate_hessians(q, t)
    jets = cmap.evaluate(q, t)
    assert np.array_equal(theta, jets.theta)
    assert np.allclose(grad[:, :-1], jets.gradient, rtol=0, atol=1e-15)
    for k in range(cmap.nq):
        dq = np.zeros(cmap.nq)
        dq[k] = eps
        fd = (cmap.evaluate_hessians(q + dq, t)[1] - cmap.evaluate_hessians(q - dq, t)[1]) / (2 * eps)
        assert np.allclose(fd, hess[:, :, k], rtol=0, atol=1e-8)
    assert np.allclose(hess, np.transpose(hess, (0, 2, 1)), rtol=0, atol=1e-14)


# ---------------------------------------------------------------------------------------------- SymPy oracle
LENGTHS = (0.7, 0.5, 0.4)
COMS = (0.3, 0.2, 0.15)
MASSES = (1.3, 0.9, 0.6)
IZZ = (0.05, 0.03, 0.02)
GRAVITY = (0.0, -9.81, 0.0)


def _planar_urdf(functions: str) -> str:
    links = ['<link name="base"/>']
    joints = []
    parent = "base"
    for k in range(3):
        links.append(f'<link name="l{k + 1}"><inertial><origin xyz="{COMS[k]} 0 0"/><mass value="{MASSES[k]}"/>'
                     f'<inertia ixx="{0.6 * IZZ[k]}" ixy="0" ixz="0" iyy="{0.7 * IZZ[k]}" iyz="0" izz="{IZZ[k]}"/>'
                     '</inertial></link>')  # ixx, iyy: physical (triangle inequality) but irrelevant in the plane
        origin = 0.0 if k == 0 else LENGTHS[k - 1]
        joints.append(f'<joint name="j{k + 1}" type="revolute"><parent link="{parent}"/><child link="l{k + 1}"/>'
                      f'<origin xyz="{origin} 0 0"/><axis xyz="0 0 1"/>'
                      f'<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>')
        parent = f"l{k + 1}"
    return ("<robot name=\"planar\">" + "".join(links) + "".join(joints)
            + f'<biobullet version="1"><gravity xyz="{" ".join(map(str, GRAVITY))}"/>{functions}</biobullet></robot>')


def _sympy_equations(angles, coords, t):
    """M and h (M q̈ + h = 0 generalized forces) of the planar 3-link chain, Lagrange's equations, θ = angles(q, t)."""
    phi = [sum(angles[:k + 1]) for k in range(3)]
    kinetic, potential = 0, 0
    joint = sp.Matrix([0, 0])
    for k in range(3):
        direction = sp.Matrix([sp.cos(phi[k]), sp.sin(phi[k])])
        com = joint + COMS[k] * direction
        velocity = com.diff(t)
        kinetic += sp.Rational(1, 2) * MASSES[k] * velocity.dot(velocity) + sp.Rational(1, 2) * IZZ[k] * phi[k].diff(t) ** 2
        potential += -MASSES[k] * (GRAVITY[0] * com[0] + GRAVITY[1] * com[1])
        joint = joint + LENGTHS[k] * direction
    lagrangian = kinetic - potential
    eom = sp.Matrix([lagrangian.diff(c.diff(t)).diff(t) - lagrangian.diff(c) for c in coords])
    qs, ws, accs = (sp.symbols(f"{p}0:{len(coords)}") for p in ("x", "w", "a"))
    # replace q̈, then q̇, then q by plain symbols (outermost derivatives first so they are matched whole)
    eom = eom.xreplace({c.diff(t, 2): a for c, a in zip(coords, accs)})
    eom = eom.xreplace({c.diff(t): w for c, w in zip(coords, ws)}).xreplace(dict(zip(coords, qs)))
    mass = eom.jacobian(accs)
    bias = eom.xreplace({a: 0 for a in accs})
    return (sp.lambdify((qs, t), mass, "numpy"), sp.lambdify((qs, ws, t), bias, "numpy"))


def _check_against_sympy(model, mass_fn, bias_fn, times):
    mc = get_formulation("matrix_calculus")
    rng = np.random.default_rng(11)
    for t in times:
        q, v = _random_state(model, rng)
        mass = np.array(mass_fn(q, t), dtype=float)
        bias = np.array(bias_fn(q, v, t), dtype=float).reshape(-1)
        assert _rel(mc.mass_matrix(model, q, t), mass) < RTOL
        assert _rel(mc.bias_forces(model, q, v, t), bias) < RTOL


def test_planar_arm_with_polynomial_coupling_matches_sympy(tmp_path):
    """θ3 = 0.3 − 0.7 θ2 + 0.4 θ2²: the Hessian of the coupling enters N; q = (θ1, θ2)."""
    model, _ = _load(tmp_path, _planar_urdf(
        '<joint_function joint="j3" type="polynomial" inputs="j2" coefficients="0.3 -0.7 0.4"/>'))
    assert model.coordinate_names == ("j1", "j2")
    t = sp.Symbol("t")
    q1, q2 = sp.Function("q1")(t), sp.Function("q2")(t)
    angles = [q1, q2, 0.3 - 0.7 * q2 + 0.4 * q2 ** 2]
    _check_against_sympy(model, *_sympy_equations(angles, [q1, q2], t), times=[0.0, 0.0, 0.0])


def test_fourier_driven_joint_matches_sympy(tmp_path):
    """θ2(t) prescribed by a Fourier driver and θ3 = poly(θ1): ∂f/∂t and ∂²f/∂t² enter N exactly."""
    model, _ = _load(tmp_path, _planar_urdf(
        '<joint_function joint="j2" type="fourier" period="1.3" a0="0.2" a="0.5 -0.1" b="0.3 0.2"/>'
        '<joint_function joint="j3" type="polynomial" inputs="j1" coefficients="0.1 0.5 -0.3"/>'))
    assert model.coordinate_names == ("j1",)
    t = sp.Symbol("t")
    q1 = sp.Function("q1")(t)
    w = 2 * sp.pi / sp.Float(1.3)
    driver = (0.2 + 0.5 * sp.cos(w * t) + 0.3 * sp.sin(w * t) - 0.1 * sp.cos(2 * w * t)
              + 0.2 * sp.sin(2 * w * t))
    angles = [q1, driver, 0.1 + 0.5 * q1 - 0.3 * q1 ** 2]
    mass_fn, bias_fn = _sympy_equations(angles, [q1], t)
    _check_against_sympy(model, mass_fn, bias_fn, times=[0.0, 0.37, 0.9, 1.21])
    # the driver really matters: at rest the bias differs from the static gravity load
    q, v = np.array([0.4]), np.zeros(1)
    assert abs(bias_fn(q, v, 0.37)[0][0] - bias_fn(q, v, 0.37 + 0.65)[0][0]) > 1e-2


def test_fourier_driver_on_floating_base_agrees_with_reduced(tmp_path):
    text = random_urdf(6, 6, floating_base=True, couplings=2).replace(
        "</biobullet>", '<joint_function joint="j6" type="fourier" period="0.8" a0="-0.2" a="0.7" b="0.4"/>'
                        "</biobullet>")
    model, _ = _load(tmp_path, text)
    assert "j6" not in model.coordinate_names
    mc, ref = get_formulation("matrix_calculus"), get_formulation("reduced")
    rng = np.random.default_rng(2)
    for t in (0.1, 0.55):
        q, v = _random_state(model, rng)
        assert _rel(mc.bias_forces(model, q, v, t), ref.bias_forces(model, q, v, t)) < RTOL
        assert _rel(mc.mass_matrix(model, q, t), ref.mass_matrix(model, q, t)) < RTOL
