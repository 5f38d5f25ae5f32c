"""Issue 27's leftovers: bounded work on stiff models (the implicit methods' Jacobian and evaluation budget), long
`<mimic>` chains loaded in linear time, mesh files checked by `info`, and initial states that overflow."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.core.errors import ModelError
from biobullet.integrate.engine import IntegrationError
from biobullet.integrate.stepper import (EVALUATIONS_PER_SECOND, MAX_EVALUATIONS, LoopResult, StepFailure,
                                        finite_difference_jacobian, run_loop)
from hostile_cli import CHAIN, chain, one_error, run_cli

REPO = Path(__file__).resolve().parents[3]
URDF = REPO / "plugin" / "biobullet" / "data" / "urdf"


# ------------------------------------------------------------------------------------------------ stiff models
def test_the_finite_difference_jacobian_matches_the_analytic_one():
    """A damped pendulum f(θ, ω) = (ω, −(g/l) sin θ − c ω): forward differences with the step √ε·max(|y|, 1) are
    accurate to about √ε·|f''| ≈ 1e-7 of the entries; a column whose forward stage fails (NaN) is taken
    backwards."""
    g_over_l, c = 9.81 / 0.7, 0.3

    def rhs(t, y):
        if y[0] > 2.0:   # a stage that cannot be evaluated, as `_StepRhs` reports it
            return np.full(2, np.nan)
        return np.array([y[1], -g_over_l * np.sin(y[0]) - c * y[1]])

    jac = finite_difference_jacobian(rhs)
    for y in (np.array([0.3, -1.2]), np.array([2.0, 5.0])):   # the second: θ + h lands in the failing region
        analytic = np.array([[0.0, 1.0], [-g_over_l * np.cos(y[0]), -c]])
        np.testing.assert_allclose(jac(0.0, y), analytic, rtol=0, atol=2e-6 * g_over_l)
    pinned = finite_difference_jacobian(lambda t, y: rhs(t, y) if y[0] == 2.0 else np.full(2, np.nan))
    with pytest.raises(FloatingPointError, match="either side"):   # neither way: the step fails with the cause
        pinned(0.0, np.array([2.0, 5.0]))


def _stiff_squeezer(tmp_path: Path) -> str:
    """The Andrews squeezer with its spring ×10⁶ (4.53·10⁹ N/m), as the fuzz campaign's stiff mutant."""
    text = (URDF / "andrews_squeezer.urdf").read_text()
    stiffened = text.replace('stiffness="4530"', 'stiffness="4.53e+09"')
    assert stiffened != text
    path = tmp_path / "squeezer_x1e6.urdf"
    path.write_text(stiffened)
    return str(path)


def test_radau_gets_past_the_start_of_a_very_stiff_squeezer_and_the_budget_stops_it(tmp_path):
    """SciPy's own finite-difference Jacobian grew its step tenfold per call until the perturbed state overflowed:
    Radau stopped at t ≈ 1e-9 s with "the state is not finite" after minutes. With the fixed-step Jacobian it steps
    on (≈ 2e-8 s steps: the spring's oscillation is resolved at rtol 1e-9), and the evaluation budget stops the
    run with one error naming the spring, the time reached and the remedies, keeping the partial trajectory."""
    model = biobullet.load_model(_stiff_squeezer(tmp_path))
    out = tmp_path / "run.csv"
    with pytest.raises(IntegrationError) as caught:
        biobullet.simulate(model, 0.02, method="Radau", max_evaluations=3000, progress=False, out=str(out))
    message = str(caught.value)
    assert "work budget exhausted" in message and 'probably <spring name="spring"> (stiffness 4.53e+09' in message
    assert "max_evaluations=" in message and "make it less extreme" in message
    assert caught.value.t > 1e-6   # (previously 1e-9 s, and "the state is not finite")
    partial = np.loadtxt(str(out) + ".partial.csv", delimiter=",", skiprows=1, ndmin=2)
    assert len(partial) >= 2 and partial[-1, 0] > 0 and np.all(np.isfinite(partial))


def test_the_evaluation_budget_counts_only_implicit_evaluations():
    """y' = −y: DOP853 is bounded by its step budget (and the stiffness watch), not by evaluations; an implicit
    method stops once it has used `max_evaluations`."""
    rhs = lambda t, y: -y   # noqa: E731
    options = dict(rtol=1e-9, atol=1e-12, max_step=np.inf, t_eval=None, events=[], max_evaluations=10)
    explicit = run_loop(rhs, 0.0, np.ones(1), 1.0, method="DOP853", **options)
    assert explicit.status == "finished" and explicit.nfev > 10
    result = LoopResult()
    with pytest.raises(StepFailure, match="work budget exhausted"):
        run_loop(rhs, 0.0, np.ones(1), 1.0, method="Radau", result=result, **options)
    assert result.status == "budget" and 0 < result.last_t < 1.0


def test_ordinary_implicit_runs_stay_far_below_the_budget():
    """The bundled squeezer (its own 4530 N/m spring; the fastest bundled mechanism) with Radau at the default
    rtol 1e-9 over the first 0.01 s of its classic run: a fifth of the default budget at most (no false alarm on
    an ordinary model; the whole 0.03 s takes about 16,000 evaluations)."""
    model = biobullet.load_model(str(URDF / "andrews_squeezer.urdf"))
    run = biobullet.simulate(model, 0.01, method="Radau", progress=False)
    budget = MAX_EVALUATIONS + EVALUATIONS_PER_SECOND * 0.01
    assert run.meta["status"] == "finished" and run.meta["nfev"] < budget / 5


# ------------------------------------------------------------------------------------------------ long chains
def test_the_mass_matrix_diagonal_matches_pinocchio():
    """`mass_matrix_diagonal` (the URDF limit stops' inertia: composite inertias only, linear in the bodies) is the
    diagonal of Pinocchio's CRBA (tree coordinates) at random configurations of arm7 (7 revolute joints)."""
    pin = pytest.importorskip("pinocchio")
    from biobullet.algorithms.crba import mass_matrix_diagonal
    from biobullet.conventions import PinocchioMap
    path = str(URDF / "arm7.urdf")
    model = biobullet.load_model(path)
    pin_model = pin.buildModelFromUrdf(path)
    data = pin_model.createData()
    mapping = PinocchioMap(model, pin_model)
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = model.joint_configuration(model.neutral_configuration() + rng.uniform(-1.5, 1.5, model.nq))
        theirs = pin.crba(pin_model, data, mapping.config_to_pinocchio(x))
        theirs = mapping.matrix_from_pinocchio(np.triu(theirs) + np.triu(theirs, 1).T)
        np.testing.assert_allclose(mass_matrix_diagonal(model, x), np.diag(theirs), rtol=1e-12, atol=1e-14)


def _mimic_chain(tmp_path: Path, n: int) -> str:
    links = "".join(f'<link name="l{i}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" '
                    f'ixy="0" ixz="0" iyz="0"/></inertial></link>' for i in range(n + 1))
    joints = "".join(f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
                     f'<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>'
                     + (f'<mimic joint="j{i + 1}"/>' if i < n else "") + "</joint>" for i in range(1, n + 1))
    path = tmp_path / "long.urdf"
    path.write_text(f'<robot name="long">{links}{joints}</robot>')
    return str(path)


def test_a_long_mimic_chain_orders_its_functions_in_linear_time(tmp_path, monkeypatch):
    """2,000 `<mimic>`s (the most joints a model may have), each naming the next joint: the coordinate map orders
    them in one pass (Kahn) and the tree check walks each link once; the URDF limit stops read the mass-matrix
    diagonal, never the full CRBA (quadratic on a chain: 16 s of `info` for 1,500 links)."""
    import biobullet.algorithms.crba as crba_module
    from biobullet.model.urdf import MAX_JOINTS
    n = MAX_JOINTS
    path = _mimic_chain(tmp_path, n)
    def no_full_crba(*args):
        pytest.fail("the full CRBA was called at load")
    monkeypatch.setattr(crba_module, "crba", no_full_crba)
    monkeypatch.setattr("biobullet.forces.elements.crba", no_full_crba, raising=False)   # (where it was called)
    model = biobullet.load_model(path)
    order = [f.output for f in model.coordinate_map.resolvers]
    assert model.nq == 1 and len(order) == n - 1
    assert order == sorted(order, reverse=True)   # j(n−1) first (it mimics the independent j(n)), then down
    error = one_error("info", _mimic_chain(tmp_path, n + 1))   # one joint more: one error naming the count
    assert f"{n + 1} joints: more than {n}" in error and "<robot>" in error


# ------------------------------------------------------------------------------------------------ meshes
MESH_LINK = ('<link name="l2"><inertial><mass value="0.5"/>\n    '
             '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>{shape}</link>')


@pytest.mark.parametrize("kind", ["visual", "collision"])
def test_info_says_which_mesh_files_are_missing(tmp_path, kind):
    """`info` names file, link, element and attribute of a mesh file that does not exist (a warning: the dynamics
    read no meshes and Pinocchio loads such a file; PyBullet and the viewer refuse it, and `view` names the same
    file)."""
    shape = f'<{kind}><geometry><mesh filename="meshes/missing.stl"/></geometry></{kind}>'
    text = CHAIN.format(extension="", com="0 0 -0.25")
    old = MESH_LINK.format(shape="")
    assert old in text
    path = tmp_path / "m.urdf"
    path.write_text(text.replace(old, MESH_LINK.format(shape=shape)))
    with pytest.warns(UserWarning) as caught:
        assert run_cli("info", str(path))[0] == 0
    warning = [str(w.message) for w in caught if "mesh file" in str(w.message)]
    assert len(warning) == 1, [str(w.message) for w in caught]
    assert (f'<link name="l2"> <{kind}> number 1 <geometry> <mesh> filename=\'meshes/missing.stl\'' in warning[0]
            and str(path) in warning[0])
    if kind == "visual":
        from biobullet.render.scene import read_visuals
        with pytest.raises(ModelError, match="missing.stl") as caught:
            read_visuals(str(path))
        assert caught.value.attribute == "filename"
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "missing.stl").write_text("solid t\nendsolid t\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # the file exists now: no warning
        biobullet.load_model(str(path))


# ------------------------------------------------------------------------------------------------ initial state
@pytest.mark.parametrize("model, value", [("fourbar_knee", "knee_A_dot=1e300"), ("fourbar_knee", "knee_A_dot=1e154"),
                                          ("arm7", "joint_2_dot=1e200"), ("arm7", "joint_2=1e300")])
def test_an_initial_state_that_overflows_is_one_error_without_numpy_warnings(tmp_path, model, value):
    """A finite `--set` value whose rates or their squares overflow (the loop's velocity map, the velocity-product
    forces, SciPy's error norms, the limit stop's energy k p² in the partial trajectory): exit 2 with one error
    line and no NumPy "overflow encountered" line above it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, lines = run_cli("simulate", str(URDF / f"{model}.urdf"), "--t-end", "0.01", "--set", value,
                              "--out", str(tmp_path / "run.csv"))
    assert code == 2 and "error:" in lines[-1], lines
    numpy_warnings = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert not numpy_warnings and not [line for line in lines if "encountered" in line], (numpy_warnings, lines)


def test_the_initial_state_error_names_the_values_set(tmp_path):
    model = biobullet.load_model(str(URDF / "fourbar_knee.urdf"))
    with pytest.raises(ModelError, match=r"knee_A_dot=1e\+300.*not finite") as caught:
        biobullet.simulate(model, 0.01, initial={"knee_A_dot": 1e300}, progress=False)
    assert caught.value.attribute == "initial"
    path = chain(tmp_path)   # an ordinary initial state is no error
    assert biobullet.simulate(biobullet.load_model(path), 0.01, initial={"j1_dot": 1e3}, progress=False).t[-1] == 0.01


# ------------------------------------------------------------------------------------------------ campaign finds
def test_a_zero_newton_step_of_a_loop_is_a_solver_error_not_a_division_by_zero(tmp_path):
    """Fuzz campaign run 5, mutant 73: the prosthesis with its hip 10⁶ m out of place. The loop's residual rounds off
    so that Newton's step is exactly zero at a random state: a ZeroDivisionError escaped from the step limit; now
    that Newton stops there (and the continuation, or the closure's "did not converge", takes over)."""
    text = (URDF / "prosthesis_fourbar.urdf").read_text()
    moved = text.replace('<child link="hip_slider"/><origin xyz="0 0 0"/>',
                         '<child link="hip_slider"/><origin xyz="1e6 1e6 1e6"/>')
    assert moved != text
    path = tmp_path / "far.urdf"
    path.write_text(moved)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (the unit plausibility warning: 1e6 m looks like millimetres)
        model = biobullet.load_model(str(path))
    rng = np.random.default_rng(73)   # the campaign's states for mutant 73
    q0, v0 = model.initial_state()
    states = [q0]
    for _ in range(3):
        states.append(model.neutral_configuration() + rng.uniform(-1, 1, model.nq))
        rng.uniform(-1, 1, model.nv)
    for q in states:   # finite, or the closure's own error (the continuation finds these states)
        try:
            assert np.all(np.isfinite(model.joint_configuration(q)))
        except biobullet.SolverError as exc:
            assert "loop closure" in str(exc)
