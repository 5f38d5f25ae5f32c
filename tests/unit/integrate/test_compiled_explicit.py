"""The compiled right-hand side of models with explicit joint functions (integrate/compiled_explicit.py
`CompiledExplicitRHS`) against the generic path, and the vectorised trajectory post-processing against the
per-sample one.

The generic path (`System._checked_rhs`: coordinate map, force elements, formulation as separate Python calls)
is the reference: both evaluate the same algebra, so ẏ must agree to round-off at random states — polynomial,
linear (affine map), spline, Fourier and expression joint functions (an expression pendulum; an expression
driver and an expression of another function's output), point-to-point springs with damping, joint
spring-dampers, constant and time-dependent joint torques, a floating base. Whole runs with the compiled path on
and off must agree to the integration tolerance.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.pipeline.compiled_model import SPARSE
from biobullet.core import jit
from biobullet.integrate.engine import System, build_trajectory

ROOT = Path(__file__).resolve().parents[3]

needs_numba = pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: the compiled path is off")

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


def _binary_tree(tmp_path: Path):
    from biobullet.bench.scaling import tree_urdf
    path = tmp_path / "tree30.urdf"
    path.write_text(tree_urdf(30, branched=True))
    return biobullet.load_model(path)


@needs_numba
def test_compiled_rhs_equals_the_generic_path_to_round_off(tmp_path):
    rng = np.random.default_rng(7)
    for label, model in _models(tmp_path).items():
        fast = System(model, "reduced", {"compiled": True})
        slow = System(model, "reduced", {"compiled": False})
        assert type(fast._compiled).__name__ == "CompiledExplicitRHS", label
        if "tree-sparse" in label:
            assert model.compiled.solver == SPARSE   # the sparse factorisation is the one exercised
        assert slow._compiled is None
        y0 = fast.initial_vector(None, 0.0)
        for _ in range(5):
            y = y0.copy()
            y[:fast.n_pos + fast.n_vel] += rng.normal(scale=0.3, size=fast.n_pos + fast.n_vel)
            t = float(rng.uniform(0.0, 1.0))
            compiled, generic = fast._compiled(t, y), slow._checked_rhs(t, y)
            assert compiled is not None, label
            scale = max(1.0, float(np.abs(generic).max()))
            assert np.abs(compiled - generic).max() <= 1e-12 * scale, (label, compiled - generic)


@needs_numba
def test_non_finite_state_hands_over_to_the_generic_path():
    model = biobullet.load_model(ROOT / "urdf" / "coupled_chain.urdf")
    fast = System(model, "reduced", {"compiled": True})
    y = fast.initial_vector(None, 0.0)
    y[1] = np.nan
    assert fast._compiled(0.0, y) is None


def test_compiled_and_generic_runs_agree_to_the_tolerance(tmp_path):
    model = biobullet.load_model(_chain(tmp_path))
    runs = [biobullet.simulate(model, 0.3, rtol=1e-10, atol=1e-12, compiled=c, progress=False,
                               t_eval=np.linspace(0.0, 0.3, 31)) for c in (True, False)]
    assert np.abs(runs[0].positions - runs[1].positions).max() < 1e-8
    assert np.abs(runs[0].energy["dissipated"] - runs[1].energy["dissipated"]).max() < 1e-8
    # without the time driver the energy balance closes (damped spring, joint spring-damper, Fourier and
    # constant torques): an independent check of the compiled forces and power components
    balance = biobullet.simulate(biobullet.load_model(_chain(tmp_path, driver=False)), 0.3, rtol=1e-10,
                                 atol=1e-12, progress=False).energy_balance()
    assert np.ptp(balance) < 1e-7


def test_expression_runs_agree_and_undefined_points_are_reported(tmp_path):
    """Expression functions (a time driver, a composed function of j1 and of a spline's output): whole runs with
    the compiled path on and off agree to the integration tolerance; at a state where an expression is undefined
    the compiled call hands over (None) and the generic path raises the EvaluationError naming the expression."""
    from biobullet.core.errors import EvaluationError
    from nonlinear_pendulum import pendulum_text
    model = biobullet.load_model(_expression_chain(tmp_path))
    runs = [biobullet.simulate(model, 0.3, rtol=1e-10, atol=1e-12, compiled=c, progress=False,
                               t_eval=np.linspace(0.0, 0.3, 31)) for c in (True, False)]
    assert np.abs(runs[0].positions - runs[1].positions).max() < 1e-8
    assert np.abs(runs[0].energy["dissipated"] - runs[1].energy["dissipated"]).max() < 1e-8
    path = tmp_path / "log_pendulum.urdf"
    path.write_text(pendulum_text("log(j1) + 0.3*j2**2"))
    system = System(biobullet.load_model(path), "reduced", {"compiled": True})
    y = system.initial_vector(None, 0.0)
    y[0] = -0.5   # log(j1) undefined
    if jit.ENABLED:
        assert type(system._compiled).__name__ == "CompiledExplicitRHS"
        assert system._compiled(0.0, y) is None
    with pytest.raises(EvaluationError, match=r"'log\(j1\) \+ 0.3\*j2\*\*2' at t = 0 s \(j1 = -0.5"):
        system._rhs(0.0, y)   # the generic right-hand side, where `rhs` goes when the compiled call hands over
    with pytest.raises(Exception, match=r"log\(j1\).*not finite"):
        system.rhs(0.0, y)


def test_vectorised_trajectory_equals_the_per_sample_one(tmp_path):
    """Tree states over all samples at once (explicit maps, affine maps, floating base, a loop model's per-sample
    fallback) equal the per-sample coordinate map to round-off."""
    models = _models(tmp_path)
    models["four-bar knee (loop)"] = biobullet.load_model(ROOT / "urdf" / "fourbar_knee.urdf")
    for label, model in models.items():
        trajectory = biobullet.simulate(model, 0.2, rtol=1e-8, progress=False, t_eval=np.linspace(0, 0.2, 41),
                                        error_control="state")
        system = System(model, "reduced", {})
        y = np.column_stack([trajectory.q, trajectory.v, trajectory.energy["work_applied"],
                             trajectory.energy["dissipated"]])
        fast = build_trajectory(system, trajectory.t, y, [], {}, vectorised=True)
        slow = build_trajectory(system, trajectory.t, y, [], {}, vectorised=False)
        assert np.abs(fast.positions - slow.positions).max() <= 1e-13, label
        assert np.abs(fast.velocities - slow.velocities).max() <= 1e-12, label


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
    assert ltdl_solve_py(mass, tangent_parents(model), b, out)
    assert np.allclose(out, np.linalg.solve(mass, b), rtol=1e-10, atol=1e-12)
    assert not ltdl_solve_py(-mass, tangent_parents(model), b, out)
