"""Unit checks of loop constraints: Φ̇_x ẋ, implicit G/γ/Hessians vs finite differences, assembly, errors."""
from pathlib import Path

import re

import numpy as np
import pytest

import biobullet
from biobullet.constraints.assembly import assemble, assemble_velocities
from biobullet.constraints.equations import constraint_set
from biobullet.constraints.implicit import loop_condition
from biobullet.core.errors import ModelError, SolverError
from closed_chains import FOURBAR, GOOD_LOOP

ROOT = Path(__file__).resolve().parents[3]
ANDREWS = ROOT / "urdf" / "andrews_squeezer.urdf"



def fourbar(tmp_path, loop=GOOD_LOOP, independent="crank_j", init="0.8", name="fourbar.urdf"):
    path = tmp_path / name
    path.write_text(FOURBAR.replace("LOOPATTRS", loop).replace("INDEPENDENT", independent).replace("INIT", init))
    return biobullet.load_model(path)


def closed_fourbar_state(model, crank):
    """Assemble the four-bar at a crank angle from a rough elbow-up guess."""
    guess = np.array([crank, 1.0, 2.0])
    x, _ = assemble(model, guess, fixed=["crank_j"])
    return x


@pytest.fixture(scope="module")
def andrews():
    return biobullet.load_model(ANDREWS)


def test_velocity_product_matches_finite_differences(andrews, tmp_path):
    """b = Φ̇_x ẋ equals d/ds [Φ_x(x + s ẋ) ẋ] (central differences, h = 1e-5: error ~ h² · |Φ'''| ≈ 1e-10)."""
    rng = np.random.default_rng(1)
    models = [andrews, biobullet.load_model(_revolute_chain(tmp_path))]
    for model in models:
        cset = constraint_set(model)
        for _ in range(3):
            x, xd = rng.uniform(-np.pi, np.pi, model.n_config), rng.normal(size=model.n_tangent)
            h = 1e-5
            fd = (cset.jacobian(x + h * xd) @ xd - cset.jacobian(x - h * xd) @ xd) / (2 * h)
            scale = max(1.0, np.max(np.abs(fd)))
            np.testing.assert_allclose(cset.velocity_bias(x, xd), fd, rtol=0, atol=1e-8 * scale)
            fd_jac = np.column_stack([(cset.residual(x + h * e) - cset.residual(x - h * e)) / (2 * h)
                                      for e in np.eye(model.n_tangent)])
            np.testing.assert_allclose(cset.jacobian(x), fd_jac, rtol=0, atol=1e-8)


def _revolute_chain(tmp_path):
    """Spatial chain closed by a revolute loop (built like the Pinocchio test, zero pose closed)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("loops_pin", ROOT / "tests" / "validation" / "test_loops_pinocchio.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.closed_chain(tmp_path, 5, "revolute").file


def test_implicit_gradient_and_gamma_match_finite_differences(andrews):
    rng = np.random.default_rng(2)
    q0, _ = andrews.initial_state()
    for _ in range(3):
        q, v = q0 + rng.uniform(-0.5, 0.5, 1), rng.uniform(-20, 20, 1)
        x, xd, gradient, gamma = andrews.joint_state(q, v)
        h = 1e-5
        xp, xm = andrews.joint_positions(q + h), andrews.joint_positions(q - h)
        np.testing.assert_allclose(gradient[:, 0], (xp - xm) / (2 * h), rtol=0, atol=1e-8)
        np.testing.assert_allclose(xd, gradient @ v, rtol=0, atol=1e-12 * np.max(np.abs(xd)))
        # along q(s) = q + v s (q̈ = 0): θ̈ = γ; second difference, h = 1e-4 → error ~ 1e-8 relative
        h = 1e-4
        second = (andrews.joint_positions(q + v * h) - 2 * x + andrews.joint_positions(q - v * h)) / h**2
        np.testing.assert_allclose(gamma, second, rtol=0, atol=1e-5 * np.max(np.abs(gamma)))


def test_implicit_hessians_match_finite_differences(andrews):
    cmap = andrews.coordinate_map
    q = np.array([0.4])
    _, gradient, hessian = cmap.evaluate_hessians(q, 0.0)
    h = 1e-5
    gp = cmap.evaluate_hessians(q + h, 0.0, with_hessian=False)[1]
    gm = cmap.evaluate_hessians(q - h, 0.0, with_hessian=False)[1]
    np.testing.assert_allclose(hessian[:, 0, 0], (gp - gm)[:, 0] / (2 * h), rtol=0, atol=1e-8)
    assert np.all(hessian[:, 1, :] == 0) and np.all(gradient[:, 1] == 0)  # loops do not depend on time


def test_assembly_from_a_perturbed_guess(andrews):
    q, _ = andrews.initial_state()
    exact = andrews.joint_configuration(q)
    guess = exact + np.random.default_rng(4).uniform(-0.05, 0.05, exact.size)
    guess[0] = exact[0]
    x, residual = assemble(andrews, guess)   # default: hold the independent coordinate beta
    assert residual <= 1e-13
    np.testing.assert_allclose(x, exact, rtol=0, atol=1e-12)
    xd = assemble_velocities(andrews, x, np.r_[2.0, np.zeros(6)])
    _, v_exact, _, _ = andrews.joint_state(q, [2.0])
    np.testing.assert_allclose(xd, v_exact, rtol=0, atol=1e-10)


def test_fourbar_assembles_and_resolves(tmp_path):
    model = fourbar(tmp_path)
    x = closed_fourbar_state(model, 0.8)
    assert np.max(np.abs(constraint_set(model).residual(x))) <= 1e-12
    np.testing.assert_allclose(model.joint_positions([0.8]), x, rtol=0, atol=1e-10)


def test_unassemblable_loop_raises_solver_error(tmp_path):
    # coupler end 10 m from the rocker tip: no configuration closes it
    loop = 'type="planar" link_a="coupler" xyz_a="30 0 0" link_b="rocker" xyz_b="2.5 0 0" normal="0 0 1"'
    model = fourbar(tmp_path, loop=loop)
    with pytest.raises(SolverError, match=r"residual \|Φ\|∞ = [0-9.]+"):
        assemble(model, np.array([0.8, 1.0, 2.0]))
    with pytest.raises(SolverError, match=r"<loop> 'C': loop closure did not converge.*damped Newton.*may not close"
                                          r".*t = 0") as info:
        model.joint_positions([0.8])
    assert str(info.value).startswith(f"{model.file}: ")   # the file and the element, as every error names them
    # damped and bounded: Newton stops within π of its prediction (the declared initial angles, |θ| ≤ 2) instead
    # of wandering off to other branches (it once reported -13 and 19 rad)
    reported = [float(value) for value in re.findall(r"_j = (-?[0-9.e+-]+)", str(info.value))]
    assert len(reported) == 3 and max(abs(value) for value in reported) <= 2.0 + np.pi


def test_toggle_position_is_detected(tmp_path):
    """Rocker as input: at its limit the crank and coupler are aligned (|rocker tip − O| = 1 + 3)."""
    model = fourbar(tmp_path, independent="rocker_j", init="0")
    # rocker tip P = (3, 0) + 2.5 (cos ψ, sin ψ); |P|² = 15.25 + 15 cos ψ ≤ 16 needs ψ ≥ the limit
    limit = np.arccos((16 - 9 - 6.25) / (2 * 3 * 2.5))
    conditions = []
    for eps in (1e-1, 1e-2, 1e-3, 1e-4):
        conditions.append(loop_condition(model, [limit + eps]))
    assert all(b > 2.5 * a for a, b in zip(conditions, conditions[1:]))   # grows like eps^-1/2
    with pytest.raises(SolverError, match=r"singular|did not converge"):
        model.joint_positions([limit - 1e-3])


@pytest.mark.parametrize("loop,attribute", [
    ('type="hinge" link_a="coupler" link_b="rocker"', "type"),
    ('type="planar" link_a="coupler" xyz_a="3 0" link_b="rocker" normal="0 0 1"', "xyz_a"),
    ('type="planar" link_a="coupler" link_b="rocker" normal="0 0 0"', "normal"),
    ('type="planar" link_a="coupler" link_b="rocker"', "normal"),
    ('type="revolute" link_a="coupler" link_b="rocker" axis="0 0 x"', "axis"),
    ('type="point" link_a="coupler" link_b="nowhere"', "link_b"),
])
def test_bad_loop_attributes_name_the_attribute(tmp_path, loop, attribute):
    with pytest.raises(ModelError) as info:
        fourbar(tmp_path, loop=loop)
    assert info.value.attribute == attribute
    assert "<loop" in str(info.value)


def test_equation_count_mismatch_names_loop_and_joints(tmp_path):
    # a point loop gives 3 equations for 2 dependent joints
    loop = 'type="point" link_a="coupler" xyz_a="3 0 0" link_b="rocker" xyz_b="2.5 0 0"'
    with pytest.raises(ModelError, match=r"loop 'C' gives 3 equations for 2 dependent joints \(coupler_j, rocker_j\)"
                                         r"; use type=\"planar\" for loop 'C' \(2 equations instead of 3\)"):
        fourbar(tmp_path, loop=loop)
