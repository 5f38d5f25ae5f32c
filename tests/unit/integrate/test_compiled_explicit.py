"""The compiled right-hand side of models with explicit joint functions (integrate/compiled_explicit.py
`CompiledReducedRHS`) checked against physics, not against another implementation.

- ẏ at random states satisfies d'Alembert's principle with Pinocchio's inverse dynamics (`rhs_oracles`): the tree
  motion it implies, projected on the joint functions' admissible directions, balances the applied forces written
  out in the test (a damped point-to-point spring through Pinocchio's point Jacobians, a joint spring-damper,
  constant and Fourier joint torques; joint stops inside their limits act with zero force) — polynomial, linear
  (affine map), spline, Fourier and expression joint functions (an expression pendulum; an expression driver and an
  expression of another function's output), fixed and floating bases, a tree-sparse solve. The check fails on a
  1e-4 error of v̇.
- Whole runs: the energy balance T + V − W + D closes (driverless chain); trajectory output of a loop model keeps
  the loop closed at every sample (Pinocchio's kinematics).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.pipeline.compiled_model import SPARSE
from biobullet.integrate.engine import System
from rhs_oracles import (PinocchioTree, assert_dalembert, fourier, loop_closure, normalized, scaled_accelerations,
                         spring_force)

ROOT = Path(__file__).resolve().parents[3]


#: a 4-link chain in the x-z plane: j2 = spline(j1), j3 = Fourier driver, j4 = linear(j1, j2); every force kind
#: the kernel evaluates (damped point-to-point spring, joint spring-damper, constant and Fourier joint torques)
ELEMENTS = ('<joint_function joint="j2" type="spline" inputs="j1" x="-2 -1 0 1 2" y="0.3 -0.2 0.1 0.5 -0.4"/>'
            '<joint_function joint="j3" type="fourier" period="0.7" a0="0.2" a="0.3 -0.1" b="0.05 0.2"/>'
            '<joint_function joint="j4" type="linear" inputs="j1 j2" coefficients="0.4 -1.3" offset="0.05"/>'
            '<coordinates names="j1 j5"/>'
            '<spring name="s" link_a="base" xyz_a="0.1 0 0.2" link_b="l3" xyz_b="0.05 0 -0.1" stiffness="40" '
            'rest_length="0.2" damping="0.8"/>'
            '<joint_spring joint="j5" stiffness="3" rest="0.2" damping="0.05"/>'
            '<joint_torque joint="j1" value="0.3"/>'
            '<joint_torque joint="j5" type="fourier" period="0.5" a0="0.1" a="0.2" b="-0.1"/>')


def _chain(tmp_path: Path, base: str = "fixed", driver: bool = True) -> Path:
    """`ELEMENTS` on a 5-link chain; without `driver` j3 is a polynomial of j1 instead of the Fourier driver
    (no time-dependent joint function: the energy balance then closes)."""
    elements = ELEMENTS if driver else ELEMENTS.replace(
        'type="fourier" period="0.7" a0="0.2" a="0.3 -0.1" b="0.05 0.2"',
        'type="polynomial" inputs="j1" coefficients="0.1 -0.3 0.2"')
    links, joints = [], []
    for k in range(1, 6):
        links.append(f'<link name="l{k}"><inertial><origin xyz="0.01 0 -0.1"/><mass value="{1.0 + 0.1 * k}"/>'
                     f'<inertia ixx="0.01" ixy="0" ixz="0.001" iyy="0.012" iyz="0" izz="0.004"/></inertial></link>')
        parent = "base" if k == 1 else f"l{k - 1}"
        kind = "prismatic" if k == 5 else "continuous"
        limit = '<limit lower="-1" upper="1" effort="100" velocity="10"/>' if k == 5 else ""
        joints.append(f'<joint name="j{k}" type="{kind}"><parent link="{parent}"/><child link="l{k}"/>'
                      f'<origin xyz="0 0 {-0.2 if k > 1 else 0}" rpy="0.1 0 0"/><axis xyz="0 1 0"/>{limit}</joint>')
    text = ('<robot name="explicit_chain"><link name="base"><inertial><origin xyz="0 0 0"/><mass value="2"/>'
            '<inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>'
            + "".join(links) + "".join(joints)
            + f'<biobullet version="1"><gravity xyz="0 0 -9.81"/><base type="{base}"/>{elements}</biobullet></robot>')
    path = tmp_path / f"explicit_chain_{base}_{driver}.urdf"
    path.write_text(text)
    return path


#: `ELEMENTS` with expressions: j3 a time driver, j4 a function of j1 and of j2 = spline(j1) — an expression whose
#: input is the output of another function (composed), time-dependent too
EXPRESSIONS = (('type="fourier" period="0.7" a0="0.2" a="0.3 -0.1" b="0.05 0.2"',
                'type="expression" expression="0.2 + 0.3*cos(9*t) - 0.1*sin(4.5*t)*exp(-t)"'),
               ('type="linear" inputs="j1 j2" coefficients="0.4 -1.3" offset="0.05"',
                'type="expression" inputs="j1 j2" expression="0.4*sin(j1)*j2 - 1.3*j2**2 + 0.05*t*cos(j1 + t)"'))


def _expression_chain(tmp_path: Path, base: str = "fixed") -> Path:
    path = _chain(tmp_path, base=base)
    text = path.read_text()
    for old, new in EXPRESSIONS:
        assert old in text
        text = text.replace(old, new)
    out = tmp_path / f"expression_chain_{base}.urdf"
    out.write_text(text)
    return out


def _models(tmp_path: Path):
    from nonlinear_pendulum import write_pendulum
    return {"coupled chain (polynomial)": biobullet.load_model(ROOT / "urdf" / "coupled_chain.urdf"),
            "expression pendulum": biobullet.load_model(write_pendulum(tmp_path)),
            "expressions: driver, composed, floating base": biobullet.load_model(_expression_chain(tmp_path,
                                                                                                   "floating")),
            "shoulder (linear, affine map)": biobullet.load_model(ROOT / "urdf" / "shoulder_rhythm.urdf"),
            "humanoid (floating base)": biobullet.load_model(ROOT / "urdf" / "humanoid.urdf"),
            "spline, fourier, linear, all forces": biobullet.load_model(_chain(tmp_path)),
            "the same, floating base": biobullet.load_model(_chain(tmp_path, "floating")),
            "binary tree of 30 joints (tree-sparse solve)": _binary_tree(tmp_path)}


#: the models carrying `ELEMENTS` (the others have no elements but URDF limit stops)
CHAIN_MODELS = ("expressions: driver, composed, floating base", "spline, fourier, linear, all forces",
                "the same, floating base")


def _binary_tree(tmp_path: Path):
    from biobullet.bench.scaling import tree_urdf
    path = tmp_path / "tree30.urdf"
    path.write_text(tree_urdf(30, branched=True))
    return biobullet.load_model(path)


def _slot(model, name: str) -> tuple[int, int]:
    from biobullet.forces.base import joint_indices
    return joint_indices(model, name, None)


def _chain_law(model, tree):
    """`ELEMENTS`' forces written out: spring s (base → l3, k 40 N/m, L₀ 0.2 m, c 0.8 N s/m), joint spring-damper
    at j5 (τ = −3 (θ − 0.2) − 0.05 θ̇), torque 0.3 N m at j1, Fourier torque at j5 (T 0.5 s, a0 0.1, a 0.2,
    b −0.1); the URDF limit stop of j5 (±1 m) acts only beyond its limits."""
    (_, k1), (i5, k5) = _slot(model, "j1"), _slot(model, "j5")

    def force(x, xd, t):
        assert abs(x[i5]) < 1.0, "the j5 stop would act"
        tau = spring_force(tree, x, xd, ("base", [0.1, 0.0, 0.2]), ("l3", [0.05, 0.0, -0.1]), 40.0, 0.2, 0.8)
        tau[k1] += 0.3
        tau[k5] += -3.0 * (x[i5] - 0.2) - 0.05 * xd[k5] + fourier(t, 0.5, 0.1, [0.2], [-0.1])
        return tau
    return force


def _stops_only(system):
    """The model's only elements are joint stops (URDF limits): zero force inside the limits, which the state
    sampler keeps; returns the force law (None) after checking the state is inside."""
    stops = [e for e in system.elements]
    assert all(type(e).__name__ == "JointStop" for e in stops), [type(e).__name__ for e in stops]
    slots = [(_slot(system.model, e.joint)[0], e.lower, e.upper) for e in stops]

    def force(x, xd, t):
        for i, lower, upper in slots:
            assert (lower is None or x[i] > lower) and (upper is None or x[i] < upper), "a stop would act"
        return np.zeros(len(xd))
    return force, slots


def _random_states(system, rng, count, slots=()):
    """States near the initial one (positions ± 0.3, rates ± 0.3 normal), with the stopped independent joints
    clipped 5 mrad inside their limits."""
    independent = list(system.model.coordinate_map.independent)   # joint indices (x index − base_nq)
    base = system.model.base_nq
    y0 = system.initial_vector(None, 0.0)
    for _ in range(count):
        y = y0.copy()
        y[:system.n_pos + system.n_vel] += rng.normal(scale=0.3, size=system.n_pos + system.n_vel)
        for i, lower, upper in slots:
            if i - base in independent:
                k = base + independent.index(i - base)
                y[k] = np.clip(y[k], -np.inf if lower is None else lower + 5e-3,
                               np.inf if upper is None else upper - 5e-3)
        yield float(rng.uniform(0.0, 1.0)), normalized(system, y)


def test_rhs_satisfies_dalembert_with_pinocchio(tmp_path):
    rng = np.random.default_rng(7)
    for label, model in _models(tmp_path).items():
        system = System(model, None)
        assert system.right_hand_side()["path"] == "compiled explicit map", label
        if "tree-sparse" in label:
            assert model.compiled.solver == SPARSE   # the sparse factorisation is the one exercised
        tree = PinocchioTree(model)
        if label in CHAIN_MODELS:
            force, slots = _chain_law(model, tree), ()
        else:
            force, slots = _stops_only(system)
        for t, y in _random_states(system, rng, 3, slots):
            assert_dalembert(system, tree, t, y, system.rhs(t, y), force)


def test_the_dalembert_check_fails_on_a_wrong_acceleration(tmp_path):
    """The oracle is not vacuous: v̇ scaled by 1 + 1e-4 is rejected, on the chain with every force kind and on the
    expression pendulum."""
    from nonlinear_pendulum import write_pendulum
    rng = np.random.default_rng(1)
    for path, law in ((_chain(tmp_path), _chain_law), (write_pendulum(tmp_path), None)):
        model = biobullet.load_model(path)
        system, tree = System(model, None), PinocchioTree(model)
        force = law(model, tree) if law else None
        t, y = next(_random_states(system, rng, 1))
        ydot = system.rhs(t, y)
        assert_dalembert(system, tree, t, y, ydot, force)
        with pytest.raises(AssertionError):
            assert_dalembert(system, tree, t, y, scaled_accelerations(system, ydot), force)


def test_non_finite_state_hands_over_to_the_generic_path():
    model = biobullet.load_model(ROOT / "urdf" / "coupled_chain.urdf")
    fast = System(model, "reduced")
    y = fast.initial_vector(None, 0.0)
    y[1] = np.nan
    assert fast._compiled(0.0, y) is None


def test_energy_balance_of_a_run_closes(tmp_path):
    """Without the time driver the energy balance T + V − W + D closes (damped spring, joint spring-damper,
    Fourier and constant torques): the run's forces, their powers and the trajectory output agree with the energy
    functions. rtol 1e-10 over 0.3 s: measured drift ≈ 1e-10 J of ≈ 3 J."""
    run = biobullet.simulate(biobullet.load_model(_chain(tmp_path, driver=False)), 0.3, rtol=1e-10,
                             atol=1e-12, progress=False)
    assert run.energy["dissipated"][-1] > 1e-3   # damping acted: the balance has a dissipation term
    assert np.ptp(run.energy_balance()) < 1e-7


def test_undefined_expression_points_are_reported(tmp_path):
    """At a state where an expression is undefined the compiled call hands over (None) and the right-hand side
    raises an error naming the expression."""
    from nonlinear_pendulum import pendulum_text
    path = tmp_path / "log_pendulum.urdf"
    path.write_text(pendulum_text("log(j1) + 0.3*j2**2"))
    system = System(biobullet.load_model(path), "reduced")
    y = system.initial_vector(None, 0.0)
    y[0] = -0.5   # log(j1) undefined
    assert type(system._compiled).__name__ == "CompiledReducedRHS"
    assert system._compiled(0.0, y) is None
    with pytest.raises(Exception, match=r"log\(j1\)"):
        system.rhs(0.0, y)


def test_trajectory_of_a_loop_model_stays_closed():
    """The trajectory output's tree states of the four-bar knee (loop-dependent joints solved per sample) close
    the loop at every sample to 1e-10 m (Pinocchio's kinematics), and its energy is conserved (no elements):
    positions and velocities of the output, not only of the integrator's state."""
    model = biobullet.load_model(ROOT / "urdf" / "fourbar_knee.urdf")
    run = biobullet.simulate(model, 0.2, rtol=1e-10, atol=1e-12, progress=False, t_eval=np.linspace(0, 0.2, 41),
                             error_control="state", initial={"knee_A": 0.5})
    tree = PinocchioTree(model)
    assert max(loop_closure(tree, x) for x in run.positions) <= 1e-10
    energy = run.total_energy()
    assert np.ptp(run.energy["kinetic"]) > 1e-3 and np.ptp(energy) < 1e-8 * max(1.0, abs(energy[0]))


def test_tree_sparse_factorisation_solves_the_mass_matrix():
    """`ltdl_solve_py` (M = Lᵀ D L over the tree's parent array) against numpy's dense solve, on the humanoid
    (floating base: a 6-direction chain, branches) at a random configuration; a non-positive-definite matrix is
    refused."""
    from biobullet.pipeline.compiled_model import tangent_parents
    from biobullet.pipeline.stages import ltdl_solve_py
    model = biobullet.load_model(ROOT / "urdf" / "humanoid.urdf")
    rng = np.random.default_rng(2)
    q, _ = model.initial_state()
    q = q + rng.normal(scale=0.2, size=model.nq)
    q[3:7] /= np.linalg.norm(q[3:7])
    x = model.joint_state(q, np.zeros(model.nv))[0]
    from biobullet.algorithms.vectorized import mass_matrix_and_bias
    mass = mass_matrix_and_bias(model, x)[0]
    b = rng.normal(size=model.n_tangent)
    out = np.empty_like(b)
    from biobullet.spatial.dense import MASS_PIVOT_RATIO
    assert ltdl_solve_py(mass, tangent_parents(model), b, out, MASS_PIVOT_RATIO) == -1
    assert np.allclose(out, np.linalg.solve(mass, b), rtol=1e-10, atol=1e-12)
    # the leaves are eliminated first: the last direction's pivot is the first refused
    assert ltdl_solve_py(-mass, tangent_parents(model), b, out, MASS_PIVOT_RATIO) == model.n_tangent - 1
