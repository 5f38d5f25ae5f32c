"""A mass matrix singular to round-off is one SolverError naming the coordinate whose pivot the solve refuses
(`spatial.dense.MASS_PIVOT_RATIO`), never huge accelerations: through `model.forward_dynamics` and through
`biobullet.simulate` (its partial trajectory kept), on two unrelated models — the anthropomorph with every link
parallel (stretching every link about its fixed COM then has no inertia; the projected solve) and two prismatic
joints whose axes a revolute joint between them makes collinear at r = 0 (fixed base: the dense solve; floating
base). At the states below the factorisation's pivot is round-off of either sign; before the bound, the positive
ones were solved without an error (at rest: 33 and 345 m/s² for the anthropomorph at φ = π/2 and 1.5707963, 2.2e7
for the sliders at r = 3e-9; the check formulation's solve 2.2e7–2.2e8 at r = 1e-9…1e-8). Nearby regular states agree with Pinocchio's ABA, or with a numpy
solve of Pinocchio's CRBA projected through the joint functions."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import biobullet
from biobullet.core.errors import SolverError
from biobullet.integrate.engine import IntegrationError
from biobullet.spatial.dense import MASS_PIVOT_RATIO, declined_pivot

pytest.importorskip("pinocchio")
from biobullet.validate.oracles import make_oracle  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


def _collinear_urdf(folder: Path) -> Path:
    """base —p1 (axis a)→ l1 —r (axis ⊥ a)→ l2 —p2→ slider; l1, l2 massless; p2's axis is a in the world at
    r = 0 (written in its rotated joint frame, so the two columns of M agree only to round-off)."""
    axis = np.array([1.0, 2.0, 3.0]) / np.sqrt(14.0)
    local = Rotation.from_euler("xyz", [0.3, 0.2, 0.1]).as_matrix().T @ axis   # URDF rpy: fixed axes x, y, z
    text = f"""<robot name="collinear_sliders">
  <link name="base"><inertial><origin xyz="0.1 0 0"/><mass value="3.0"/>
    <inertia ixx="0.1" iyy="0.2" izz="0.15" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l1"/>
  <link name="l2"/>
  <link name="slider"><inertial><origin xyz="0 0 0"/><mass value="2.0"/>
    <inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="p1" type="prismatic"><parent link="base"/><child link="l1"/><axis xyz="1 2 3"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="r" type="continuous"><parent link="l1"/><child link="l2"/><axis xyz="3 0 -1"/></joint>
  <joint name="p2" type="prismatic"><parent link="l2"/><child link="slider"/>
    <origin xyz="0 0 0" rpy="0.3 0.2 0.1"/><axis xyz="{' '.join(repr(float(c)) for c in local)}"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""
    path = folder / "collinear_sliders.urdf"
    path.write_text(text)
    return path


def _anthropomorph():
    model = biobullet.load_model(ROOT / "urdf" / "anthropomorph_six_link.urdf")
    q, _ = model.initial_state()
    return model, q


def _simulate_error(model, q) -> IntegrationError:
    with pytest.raises(IntegrationError) as caught:
        biobullet.simulate(model, 0.01, initial=(q, np.zeros(model.nv)), progress=False)
    return caught.value


@pytest.mark.parametrize("phi", [np.pi / 2, 1.5707963, 1.3])
def test_parallel_anthropomorph_is_one_error_naming_a_length(phi):
    model, q = _anthropomorph()
    q[2:8] = phi
    # the premise: M is singular (the smallest eigenvalue is round-off of the largest)
    eigen = np.linalg.eigvalsh(model.mass_matrix(q))
    assert abs(eigen[0]) < 1e-14 * eigen[-1]
    with pytest.raises(SolverError, match=r"singular to round-off at this state: coordinate 'l\d'"):
        model.forward_dynamics(q, np.zeros(model.nv))
    error = _simulate_error(model, q)
    assert "singular to round-off at this state: coordinate 'l" in str(error)
    assert error.trajectory is not None


@pytest.mark.parametrize("floating_base", [False, True])
@pytest.mark.parametrize("angle", [0.0, 1e-9, 3e-9, 1e-8])
def test_collinear_sliders_are_one_error_naming_the_slider(tmp_path, floating_base, angle):
    model = biobullet.load_model(_collinear_urdf(tmp_path), floating_base=floating_base)
    q, v = model.initial_state()
    q[model.coordinate_names.index("r")] = angle
    eigen = np.linalg.eigvalsh(model.mass_matrix(q))
    assert abs(eigen[0]) < 1e-13 * eigen[-1]
    with pytest.raises(SolverError, match=r"singular to round-off at this state: coordinate 'p[12]'"):
        model.forward_dynamics(q, v)
    with pytest.raises(SolverError, match=r"singular to round-off at this state: coordinate 'p[12]'"):
        model.forward_dynamics(q, v, formulation="reduced_recursive")   # a check formulation's own solve
    error = _simulate_error(model, q)
    assert "coordinate 'p" in str(error) and error.trajectory is not None


def test_tree_sparse_factorisation_refuses_the_round_off_pivot(tmp_path):
    """The Lᵀ D L eliminates from the leaf: p2 and r keep their inertia, p1 (sharing p2's column) is refused."""
    from biobullet.pipeline.stages import ltdl_solve_py
    model = biobullet.load_model(_collinear_urdf(tmp_path))
    q, _ = model.initial_state()
    q[1] = 3e-9
    mass = model.mass_matrix(q)
    out = np.empty(3)
    assert ltdl_solve_py(mass, np.array([-1, 0, 1]), np.ones(3), out, MASS_PIVOT_RATIO) == 0
    assert declined_pivot(mass[::-1, ::-1]) == 2   # the error path's reading of the same order
    q[1] = 0.1
    assert ltdl_solve_py(model.mass_matrix(q), np.array([-1, 0, 1]), np.ones(3), out, MASS_PIVOT_RATIO) == -1


@pytest.mark.parametrize("floating_base", [False, True])
def test_collinear_sliders_near_the_singularity_agree_with_pinocchio_aba(tmp_path, floating_base):
    model = biobullet.load_model(_collinear_urdf(tmp_path), floating_base=floating_base)
    oracle = make_oracle("pinocchio", model)
    rng = np.random.default_rng(4)
    q, _ = model.initial_state()
    for angle in (0.1, -0.05, 0.02):
        q[model.coordinate_names.index("r")] = angle
        q[model.coordinate_names.index("p2")] = rng.uniform(-0.5, 0.5)
        v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        ours = model.forward_dynamics(q, v, tau)
        theirs = oracle.forward_dynamics(q, v, tau)
        # cond(M) ≈ 1/angle²: 2500 at 0.02, so agreement to ≈ cond · 1e-16 of the largest acceleration
        assert np.allclose(ours, theirs, rtol=0.0, atol=1e-10 * np.abs(theirs).max())


def test_anthropomorph_near_parallel_agrees_with_pinocchio_crba_solve():
    model, q = _anthropomorph()
    oracle = make_oracle("pinocchio", model)
    rng = np.random.default_rng(5)
    for spread in (0.1, 0.02):
        q[2:8] = np.pi / 2 + spread * rng.normal(size=6)
        v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        ours = model.forward_dynamics(q, v, tau)
        theirs = np.linalg.solve(oracle.mass_matrix(q), tau - oracle.bias_forces(q, v))
        cond = np.linalg.cond(oracle.mass_matrix(q))
        assert np.allclose(ours, theirs, rtol=0.0, atol=cond * 1e-15 * np.abs(theirs).max())
