"""`formulation="multipliers"` on a tree whose mass matrix is singular along a COMBINATION of directions.

A floating base whose root link has no mass and a slider along the base's x (the prosthesis' treadmill): base x
minus the slider moves only the massless root, so the tree M is singular, while the slider's joint-function row
holds that motion and the KKT matrix [[M, Φ_xᵀ], [Φ_x, 0]] is regular (M positive definite on ker Φ_x). The solve
handled singular DIAGONAL directions only and refused it at t = 0 ("the tree mass matrix is singular to round-off
…", no joint named), in the accelerations and in the projections. Now the KKT matrix is solved wherever it is
regular (`constraints.solve.unheld_direction`, on the rare path where M's own factorisation fails) and refused,
naming the joints, where it is not.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.algorithms.vectorized import mass_matrix_and_bias
from biobullet.constraints.equations import constraint_set
from biobullet.dynamics.multipliers import project_positions, project_velocities

pin = pytest.importorskip("pinocchio")

ROOT = Path(__file__).parents[2]
EPS = np.finfo(float).eps


def test_floating_prosthesis_follows_the_reduced_solve():
    """The bundled prosthesis on a floating base (massless 'world' root, prescribed treadmill along the base's x):
    `multipliers` integrates and follows `reduced` (the pipeline's solve of the independent coordinates) to the
    integrator's tolerance over 10 ms (before the heel strikes: every position and speed of the base and the joints); on main it raised at t = 0."""
    model = biobullet.load_model(ROOT / "urdf" / "prosthesis_fourbar.urdf", floating_base=True)
    options = dict(rtol=1e-10, atol=1e-12)
    got = biobullet.simulate(model, 0.01, formulation="multipliers", **options)
    expected = biobullet.simulate(model, 0.01, formulation="reduced", **options)
    assert got.t[-1] == 0.01 and np.array_equal(got.t, expected.t)
    assert got.position_names == expected.position_names and got.velocity_names == expected.velocity_names
    # every joint and the base, at every sample, within 10 × the integrator's local tolerance (rtol |y| + atol):
    # ~1e-11 here, the joints moving ~1e-4 rad; measured 2e-15 (positions) and 7e-14 (speeds)
    for name, a, b in (("positions", got.positions, expected.positions), ("velocities", got.velocities,
                                                                          expected.velocities)):
        assert np.all(np.abs(a - b) <= 10.0 * (options["rtol"] * np.abs(b) + options["atol"])), name


def _cart_fourbar(tmp_path, prescribed: bool = True, probe: bool = False) -> Path:
    """The bundled four-bar knee hung from a massless 'cart' by a slider 'slide' along x: on a floating base,
    base x minus slide moves no mass. prescribed: slide = 0.3 t (a joint-function row holds it), else slide is an
    independent coordinate (nothing holds it). probe: a hinge 'spin' on the shank through a 0.3 kg point mass."""
    text = (ROOT / "urdf" / "fourbar_knee.urdf").read_text(encoding="utf-8")
    text = text.replace('<link name="thigh">', '''<link name="cart"/>
  <joint name="slide" type="prismatic"><parent link="cart"/><child link="thigh"/><axis xyz="1 0 0"/>
    <limit lower="-10" upper="10" effort="0" velocity="10"/></joint>
  <link name="thigh">''', 1)
    if prescribed:
        text = text.replace('<biobullet version="1">', '''<biobullet version="1">
    <joint_function joint="slide" type="expression" expression="v*t" parameters="v=0.3"/>''', 1)
    else:
        text = text.replace('<coordinates names="knee_A"/>', '<coordinates names="knee_A slide"/>')
    if probe:
        text = text.replace('<biobullet version="1">', '''<link name="probe"><inertial><origin xyz="0.05 0 0"/>
    <mass value="0.3"/><inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="spin" type="continuous"><parent link="shank"/><child link="probe"/><origin xyz="0.01 0 -0.3"
    rpy="0.2 0.1 0.3"/><axis xyz="1 0 0"/></joint>
  <biobullet version="1">''').replace('<coordinates names="knee_A"/>', '<coordinates names="knee_A spin"/>')
    path = tmp_path / "cart_fourbar.urdf"
    path.write_text(text, encoding="utf-8")
    return path


def _states(model, seed: int, count: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        q = model.integrate_configuration(model.neutral_configuration(), rng.uniform(-0.5, 0.5, model.nv), 1.0)
        yield q, rng.uniform(-1.0, 1.0, model.nv), rng.uniform(-1.0, 1.0, model.nv)


def test_floating_fourbar_on_a_massless_cart_equals_pinocchio(tmp_path):
    """Pinocchio's M of the floating cart four-bar is singular (smallest eigenvalue of the Jacobi-scaled CRBA ≤ 1e-14:
    the massless cart), the prescribed slide holds that motion: `multipliers` equals `reduced_pinocchio` (Pinocchio's
    CRBA + RNEA projected by the loop's and the function's G) to 10·cond(M_r)·ε; on main it raised."""
    path = _cart_fourbar(tmp_path)
    model = biobullet.load_model(path, floating_base=True)
    pin_model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    mass = pin.crba(pin_model, pin_model.createData(), pin.neutral(pin_model))
    root = np.sqrt(np.diagonal(mass))
    assert np.linalg.eigvalsh(mass / np.outer(root, root))[0] <= 1e-14
    for q, v, tau in _states(model, 5, 4):
        expected = model.forward_dynamics(q, v, tau, t=0.2, formulation="reduced_pinocchio")
        reduced = model.mass_matrix(q, t=0.2, formulation="reduced_pinocchio")
        got = model.forward_dynamics(q, v, tau, t=0.2, formulation="multipliers")
        tolerance = 10.0 * np.linalg.cond(reduced) * EPS * max(1.0, np.max(np.abs(expected)))
        assert np.max(np.abs(got - expected)) <= tolerance


def test_floating_fourbar_on_a_massless_cart_projects(tmp_path):
    """The projections of `multipliers` on the same tree (on main: the unnamed "singular" error): the velocity
    projection meets Φ_x ẋ + Φ_t = 0 and is the closest in the M metric (M Δẋ in the range of Φ_xᵀ, the KKT
    condition, checked by least squares with the tree's M), the position projection meets Φ = 0 to its 1e-12 tolerance."""
    model = biobullet.load_model(_cart_fourbar(tmp_path), floating_base=True)
    cset = constraint_set(model)
    rng = np.random.default_rng(7)
    for q, v, _ in _states(model, 6, 3):
        x, xd, _, _ = model.joint_state(q, v, 0.2)
        moved = xd + 0.1 * rng.normal(size=xd.size)
        projected = project_velocities(model, x, moved, 0.2)
        _, jac, phi_t, _ = cset.all_terms(x, None, 0.2)
        assert np.max(np.abs(jac @ projected + phi_t)) <= 1e-12 * max(1.0, np.max(np.abs(projected)))
        mass = mass_matrix_and_bias(model, x)[0]
        change = mass @ (projected - moved)
        multipliers = np.linalg.lstsq(jac.T, change, rcond=None)[0]
        assert np.max(np.abs(jac.T @ multipliers - change)) <= 1e-10 * max(1.0, np.max(np.abs(change)))
        shifted = model.integrate_configuration(x, 0.01 * rng.normal(size=xd.size), 1.0)
        assert np.max(np.abs(cset.residual(shifted, 0.2))) > 1e-4
        assert np.max(np.abs(cset.residual(project_positions(model, shifted, 0.2), 0.2))) <= 1e-12


def test_floating_cart_fourbar_refused_naming_the_unheld_motion(tmp_path):
    """Slide free (an independent coordinate): nothing holds base x minus slide, the KKT matrix is singular — refused
    naming both directions, in the accelerations (on main: a finite, meaningless ẍ — LAPACK factorised the singular
    M on a round-off pivot) and the projections (on main: "the tree mass matrix is singular", no joint named)."""
    model = biobullet.load_model(_cart_fourbar(tmp_path, prescribed=False), floating_base=True)
    for q, v, tau in _states(model, 8, 2):
        with pytest.raises(biobullet.SolverError, match=r"singular along the motion.*'base_vx'.*'slide'.*no constraint "
                                                        r"row holds that motion"):
            model.forward_dynamics(q, v, tau, formulation="multipliers")
        x, xd, _, _ = model.joint_state(q, v, 0.0)
        with pytest.raises(biobullet.SolverError, match=r"'base_vx'.*'slide'.*no constraint row holds"):
            project_velocities(model, x, xd, 0.0)


def test_floating_cart_fourbar_names_a_hinge_through_a_point_mass(tmp_path):
    """The held cart plus a hinge 'spin' through a point mass (Pinocchio's M entry 0 to round-off), which no row
    holds: still refused, naming 'spin', in the accelerations (as on main) and in the projections (on main: the
    unnamed "singular" error)."""
    path = _cart_fourbar(tmp_path, probe=True)
    model = biobullet.load_model(path, floating_base=True)
    pin_model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    spin = pin_model.joints[pin_model.getJointId("spin")].idx_v
    assert abs(pin.crba(pin_model, pin_model.createData(), pin.neutral(pin_model))[spin, spin]) < 1e-15
    for q, v, tau in _states(model, 9, 2):
        with pytest.raises(biobullet.SolverError, match=r"'spin' moves no mass.*no constraint row holds it"):
            model.forward_dynamics(q, v, tau, t=0.2, formulation="multipliers")
        x, xd, _, _ = model.joint_state(q, v, 0.2)
        with pytest.raises(biobullet.SolverError, match=r"'spin' moves no mass.*no constraint row holds it"):
            project_velocities(model, x, xd, 0.2)


def test_unheld_direction_closed_form():
    """`unheld_direction` on M = [[1, 1, 0], [1, 1, 0], [0, 0, 2]] (singular along (1, −1, 0)/√2, each diagonal entry
    1 or 2, far above a 1e-12 floor): that direction without rows or with a row on the third direction only; None
    (the KKT matrix regular: M positive definite on ker Φ_x) with a row on the second; None for a positive definite
    M whose combination moves mass (eigenvalue 1e-15 of a 1 kg scale: a near-singular posture, not massless)."""
    from biobullet.constraints.solve import unheld_direction
    mass, floor_root = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]]), np.full(3, 1e-6)
    for rows in (np.zeros((0, 3)), np.array([[0.0, 0.0, 3.0]])):
        direction = unheld_direction(mass, rows, floor_root)
        assert np.allclose(np.abs(direction), [np.sqrt(0.5), np.sqrt(0.5), 0.0], atol=1e-12)
        assert direction[0] * direction[1] < 0.0
    assert unheld_direction(mass, np.array([[0.0, 2.0, 0.0]]), floor_root) is None
    assert unheld_direction(mass, np.array([[1.0, 1.0, 0.0]]), floor_root) is not None   # (holds (1, 1, 0) only)
    near = np.array([[1.0, 1.0 - 1e-15, 0.0], [1.0 - 1e-15, 1.0, 0.0], [0.0, 0.0, 2.0]])
    assert np.all(np.linalg.eigvalsh(near) > 0.0)
    assert unheld_direction(near, np.zeros((0, 3)), np.full(3, 1e-9)) is None
