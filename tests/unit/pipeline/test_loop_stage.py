"""The pipeline's loop stage (`constraints/newton_kernel._loop_newton_py` in `pipeline.stages.joint_state_stage_py`)
behind the public calls of closed-loop models, against Pinocchio's constraint dynamics.

Random spatial chains closed by a `point` loop (3 + 3 joints) or a `revolute` loop (4 + 4 joints), nearby states
assembled consistently: the Data's forward call (the compiled loop stage, not the callback or the callback stage — it must not
decline) gives v̇ whose tree accelerations G v̇ + γ are Pinocchio's (`constraintDynamics`) to 1e-8 of their size, and
M_r, h_r by the same stage give the same v̇. A Data starts from the generic resolver's solution, written into its own warm start (one record),
and continues from there; a large jump of the inputs hands the call to the callback stage (continuation), which
solves into the same record, after which the stage resumes — with Pinocchio's accelerations there too.
"""
from __future__ import annotations

import numpy as np
import pytest

from biobullet.constraints.assembly import assemble, assemble_velocities
from biobullet.pipeline.compiled_model import COMPILED_STATE
from closed_chains import closed_chain
from rhs_oracles import PinocchioTree, loop_closure

pytest.importorskip("pinocchio")


@pytest.mark.parametrize("kind,seed", [("point", 3), ("revolute", 4)])
def test_public_calls_of_loop_models_run_the_loop_stage_and_match_pinocchio(tmp_path, kind, seed):
    from loop_oracle import PinocchioLoopOracle

    model = closed_chain(tmp_path, seed, kind)
    assert model.compiled.state_stage == COMPILED_STATE and model.compiled.loops.stages.shape[0] == 1
    oracle = PinocchioLoopOracle(model)
    data = model.data()
    warm = data.arrays.loop_warm
    rng = np.random.default_rng(200 + seed)
    independent = list(model.coordinate_map.independent)
    x = rng.uniform(-0.2, 0.2, model.n_config)
    for k in range(4):   # states a few hundredths of a radian apart: within the stage's no-continuation radius
        x, residual = assemble(model, x + rng.uniform(-0.02, 0.02, model.n_config))
        assert residual <= 1e-12
        xd = assemble_velocities(model, x, rng.normal(size=model.n_tangent))
        tau = rng.normal(size=model.n_tangent)
        expected, _ = oracle.accelerations(x, xd, tau)
        scale = np.max(np.abs(expected))
        q, v = x[independent], xd[independent]
        if k == 0:   # a fresh Data has no warm start: the callback stage solves first, into the Data's record
            assert not warm.valid.any()
            data.bind_loops(model)
            model.joint_state(q, v)
            assert warm.valid.all()
        # the generalized force of τ: Gᵀ τ (G from the compiled stage itself: ∂x/∂q at this state)
        gradient = _stage_gradient(data, model, q, v)
        accel = data.forward(model, q, v, gradient.T @ tau, 0.0, np.empty(model.nv))
        assert accel is not None, "the loop stage declined"
        arrays = data.arrays
        np.testing.assert_allclose(arrays.x, x, rtol=0, atol=1e-11)
        np.testing.assert_allclose(arrays.gradient @ accel + arrays.gamma, expected, rtol=0, atol=1e-8 * scale)
        mass = data.mass_matrix(model, q)
        bias = data.bias_forces(model, q, v)
        assert mass is not None and bias is not None
        np.testing.assert_allclose(np.linalg.solve(mass, gradient.T @ tau - bias), accel, rtol=0,
                                   atol=1e-9 * max(1.0, np.max(np.abs(accel))))
        np.testing.assert_allclose(warm.known0, x[model.compiled.loops.known], rtol=0, atol=1e-12)


def _stage_gradient(data, model, q, v) -> np.ndarray:
    """G = ∂x/∂q written by the loop stage at (q, v) (a bias call runs the joint-state stage)."""
    assert data.bias_forces(model, q, v) is not None
    return data.arrays.gradient.copy()


def _count_seeds(data) -> list:
    """A list that gets one entry per `data.start_loops` call (the generic resolvers solving a state the loop stage
    declined, or its first)."""
    seeds, start = [], data.start_loops

    def counted(*args):
        seeds.append(1)
        return start(*args)
    data.start_loops = counted
    return seeds


def test_a_jump_goes_to_the_generic_resolver_and_the_stage_resumes(tmp_path):
    from loop_oracle import PinocchioLoopOracle
    model = closed_chain(tmp_path, 5, "point")
    data = model.data()
    q0, v0 = model.initial_state()
    model.joint_state(q0, v0)
    assert data.forward(model, q0, v0) is not None
    far = q0 + 0.6   # beyond the stage's no-continuation radius: the generic resolver's continuation decides
    seeds = _count_seeds(data)
    # the stage declines; the generic resolver (bound to the Data's record on the decline) solves `far` into the
    # Data's warm start (one record) and the stage runs again from it in the same call (before: None)
    assert data.forward(model, far, v0) is not None and seeds == [1]
    independent = list(model.coordinate_map.independent)
    in_q = [model.base_nq + independent.index(j - model.base_nv) for j in model.compiled.loops.known]
    np.testing.assert_array_equal(data.arrays.loop_warm.known0, far[in_q])
    again = data.forward(model, far, v0, None, 0.0, np.empty(model.nv))
    assert again is not None
    arrays = data.arrays
    x, gradient, gamma = arrays.x.copy(), arrays.gradient.copy(), arrays.gamma.copy()
    assert loop_closure(PinocchioTree(model), x) <= 1e-10   # the stage's x closes the loop
    expected, _ = PinocchioLoopOracle(model).accelerations(x, gradient @ v0, np.zeros(model.n_tangent))
    np.testing.assert_allclose(gradient @ again + gamma, expected, rtol=0,
                               atol=1e-8 * max(1.0, np.max(np.abs(expected))))


def test_the_model_calls_of_a_loop_model_match_pinocchio_across_a_jump(tmp_path):
    """`model.forward_dynamics`, `mass_matrix`, `bias_forces` of a loop model, as a control loop calls them (the
    workspace's closures after the first call, `Data.public_calls`): at nearby states, at a jump the loop stage
    declines (the call falls back to the class methods: the generic resolver's continuation) and at states near
    it again, G v̇ + γ is Pinocchio's `constraintDynamics` and M_r v̇ + h_r = Q."""
    from loop_oracle import PinocchioLoopOracle
    model = closed_chain(tmp_path, 5, "point")
    oracle = PinocchioLoopOracle(model)
    rng = np.random.default_rng(206)
    q0, _ = model.initial_state()
    for k in range(6):
        # from k = 3 on near q0 + 0.6 (the jump: beyond the stage's no-continuation radius, as above)
        q = q0 + (0.6 if k >= 3 else 0.0) + 0.02 * rng.uniform(-1.0, 1.0, model.nq)
        v, force = rng.normal(size=model.nv), rng.normal(size=model.nv)
        accel = model.forward_dynamics(q, v, force)
        if k == 0:
            assert "forward_dynamics" in model.__dict__   # later calls take the closures
        x, xd, gradient, gamma = model.joint_state(q, v)
        assert loop_closure(PinocchioTree(model), x) <= 1e-10
        # Q = Gᵀ τ with τ the tree forces of least norm giving Q (Pinocchio takes tree forces)
        tau = np.linalg.lstsq(gradient.T, force, rcond=None)[0]
        expected, _ = oracle.accelerations(x, xd, tau)
        np.testing.assert_allclose(gradient @ accel + gamma, expected, rtol=0,
                                   atol=1e-8 * max(1.0, np.max(np.abs(expected))))
        mass, bias = model.mass_matrix(q), model.bias_forces(q, v)
        np.testing.assert_allclose(mass @ accel + bias, force, rtol=0, atol=1e-9 * max(1.0, np.max(np.abs(force))))


def test_a_call_that_overflows_leaves_no_poisoned_warm_start(tmp_path):
    """One call with an overflowing rate (v = 1e200: the rows' bias and the curvature −Φ_dep⁻¹ b are inf/NaN) is a
    SolverError; the calls after it are Pinocchio's again. The loop stage stored that NaN curvature in the Data's warm
    start, and every later valid call then failed ("singular constraint Jacobian … = nan")."""
    from biobullet import SolverError
    from loop_oracle import PinocchioLoopOracle
    model = closed_chain(tmp_path, 5, "point")
    oracle = PinocchioLoopOracle(model)
    rng = np.random.default_rng(207)
    q0, _ = model.initial_state()
    for k in range(3):
        q = q0 + 0.02 * rng.uniform(-1.0, 1.0, model.nq)
        v, force = rng.normal(size=model.nv), rng.normal(size=model.nv)
        model.forward_dynamics(q, v, force)
        with pytest.raises(SolverError):
            model.forward_dynamics(q, np.full(model.nv, 1e200), force)
        accel = model.forward_dynamics(q, v, force)
        x, xd, gradient, gamma = model.joint_state(q, v)
        tau = np.linalg.lstsq(gradient.T, force, rcond=None)[0]
        expected, _ = oracle.accelerations(x, xd, tau)
        np.testing.assert_allclose(gradient @ accel + gamma, expected, rtol=0,
                                   atol=1e-8 * max(1.0, np.max(np.abs(expected))))


def test_the_closures_keep_their_workspace_alive(tmp_path):
    """A control loop that holds `model.forward_dynamics` (the workspace's closure) after the model's workspace was
    deleted still gets Pinocchio's `constraintDynamics`: the closure's entry reads the workspace record by its
    address, and that record borrows the Data's arrays (`core.jit_pair.borrow_pair`), so the closure keeps its Data.
    Without it the record and arrays were freed and the call read reused memory."""
    import gc
    from loop_oracle import PinocchioLoopOracle
    model = closed_chain(tmp_path, 5, "point")
    oracle = PinocchioLoopOracle(model)
    rng = np.random.default_rng(208)
    q0, _ = model.initial_state()
    model.forward_dynamics(q0, np.zeros(model.nv))
    forward_dynamics = model.forward_dynamics   # the closure
    del model.__dict__["workspace"]
    gc.collect()
    filler = [rng.normal(size=64) for _ in range(4000)]   # takes memory the Data would have freed
    for k in range(3):
        q = q0 + 0.02 * rng.uniform(-1.0, 1.0, model.nq)
        v, force = rng.normal(size=model.nv), rng.normal(size=model.nv)
        accel = forward_dynamics(q, v, force)
        x, xd, gradient, gamma = model.joint_state(q, v)
        tau = np.linalg.lstsq(gradient.T, force, rcond=None)[0]
        expected, _ = oracle.accelerations(x, xd, tau)
        np.testing.assert_allclose(gradient @ accel + gamma, expected, rtol=0,
                                   atol=1e-8 * max(1.0, np.max(np.abs(expected))))
    assert len(filler) == 4000


def test_calls_at_a_fixed_point_of_the_loop_newton_match_pinocchio():
    """The public calls' loop Newton keeps a converged solution and takes it, instead of solving, when a call's
    joint layout is that solution bit for bit (`constraints.newton_kernel._keep_fixed_point_py`):
    the four-bar knee's `forward_dynamics` called three times at each of four states written into the same q array
    in place (new keys: solved; the third call takes the kept point, so no residual writes Φ_θ into the work
    arrays) gives Pinocchio's `constraintDynamics` accelerations every time (its planar loop as a point
    constraint, `bench.competitors.pinocchio_loops`), and M_r v̇ + h_r = Q. Fails on main (no point is kept)."""
    import biobullet
    from biobullet.bench.competitors import pinocchio_loops
    model = biobullet.load_model("fourbar_knee")
    pinocchio_accelerations, index = pinocchio_loops(model)
    rng = np.random.default_rng(208)
    q0, _ = model.initial_state()
    q = q0.copy()
    taken = 0
    for k in range(4):
        q[:] = q0 + 0.05 * rng.uniform(-1.0, 1.0, model.nq)   # in place: the caller's array holds another state
        v, force = rng.normal(size=model.nv), rng.normal(size=model.nv)
        results = [model.forward_dynamics(q, v, force).copy() for _ in range(2)]
        jacobian = model.workspace.loop_work.jac   # Φ_θ: written by the solve's residual only
        jacobian[:] = np.nan
        results.append(model.forward_dynamics(q, v, force).copy())
        taken += bool(np.isnan(jacobian).all())
        x, xd, gradient, gamma = model.joint_state(q, v)
        tau = np.linalg.lstsq(gradient.T, force, rcond=None)[0]
        expected = pinocchio_accelerations(index.config_to_pinocchio(x), index.velocity_to_pinocchio(xd),
                                           index.velocity_to_pinocchio(tau))
        for accel in results:
            np.testing.assert_allclose(index.velocity_to_pinocchio(gradient @ accel + gamma), expected, rtol=0,
                                       atol=1e-8 * max(1.0, np.max(np.abs(expected))))
        mass, bias = model.mass_matrix(q), model.bias_forces(q, v)
        np.testing.assert_allclose(mass @ results[-1] + bias, force, rtol=0,
                                   atol=1e-9 * max(1.0, np.max(np.abs(force))))
    # every state: the solution is kept where the residual at it is at most 1e-3 of the tolerance, also where the
    # last correction moved θ_dep (two of these four states; before, only bit-for-bit fixed points were kept)
    assert taken == 4, taken


@pytest.mark.parametrize("name", ["fourbar_knee", "andrews_squeezer", "prosthesis_fourbar"])
def test_public_calls_at_new_and_repeated_states_match_the_check_formulation(name):
    """A control loop's calls of a bundled loop model — `forward_dynamics`, `mass_matrix`, `bias_forces` at each
    state of a walk of 1e-3 steps with a 0.3 jump every fifth state (the jump declined to the generic resolver),
    then again in the other order at the same state (the loop Newton's kept solution taken,
    `_keep_fixed_point_py`), then walks of mass-matrix calls alone (their secant curvature,
    `secant_curvature_py`) and of bias forces — agree with the `reduced_pinocchio` check formulation (its own
    tree algorithms and the generic resolver) to 1e-12 of the result's largest entry. The bound: a solution
    taken instead of a solve uses Φ_θ of a point at most cond₁ · 1e-3 of the solver's tolerance (≤ 1e-13 m) from
    the solution, so it moves results by ≈ 1e-16 relative (measured against main: ≤ 5e-15 of the largest entry,
    as the check formulation itself differs by ≈ 3e-15); a wrong G or γ would miss by the prediction's error
    (≥ 1e-11) or more."""
    import biobullet
    model = biobullet.load_model(name)
    check = biobullet.load_model(name)   # its own resolvers and warm starts
    rng = np.random.default_rng(230)
    q, _ = model.initial_state()
    states = []
    for k in range(15):
        q = q + (0.3 if k % 5 == 4 else 1e-3) * rng.uniform(-1.0, 1.0, model.nq)
        states.append(q)
    v, force = rng.normal(size=model.nv), rng.normal(size=model.nv)

    def agree(result, expected):
        np.testing.assert_allclose(result, expected, rtol=0, atol=1e-12 * np.max(np.abs(expected)))

    for q in states:
        expected = {"fd": check.forward_dynamics(q, v, force, formulation="reduced_pinocchio"),
                    "M": check.mass_matrix(q, formulation="reduced_pinocchio"),
                    "h": check.bias_forces(q, v, formulation="reduced_pinocchio")}
        for call in ("fd", "M", "h", "h", "M", "fd"):
            result = (model.forward_dynamics(q, v, force) if call == "fd" else model.mass_matrix(q) if call == "M"
                      else model.bias_forces(q, v))
            agree(result, expected[call])
    for k in range(1, 11):
        q = states[-1] + 1e-3 * k
        agree(model.mass_matrix(q), check.mass_matrix(q, formulation="reduced_pinocchio"))
    for k in range(11, 21):
        q = states[-1] + 1e-3 * k
        agree(model.bias_forces(q, v), check.bias_forces(q, v, formulation="reduced_pinocchio"))


def test_a_walk_of_mass_matrix_calls_keeps_a_second_order_prediction():
    """The mass-matrix call has no rates for the curvature of the loop's solution, so its warm start takes the
    secant one along the call's input change δ (`secant_curvature_py`): after mass-matrix calls along a walk of
    1e-3 steps, the warm start's curvature term along δ is θ_dep''[δ, δ] — the second difference of the generic
    resolver's solutions at q − δ, q, q + δ (another model's: its own warm starts), to 1e-3 of it (the secant's
    error is O(|δ|³), the difference's round-off ≈ 1e-16 / |δ|² of the angles). On main the mass-matrix call left
    no curvature (the next call's prediction first order: a second Newton step at every call of such a walk).
    A mass-matrix call at the warm start's own state (after h there) keeps the curvature it finds."""
    import biobullet
    model = biobullet.load_model("fourbar_knee")
    reference = biobullet.load_model("fourbar_knee")
    q, _ = model.initial_state()
    delta = np.full(model.nq, 1e-3)
    for k in range(5):
        model.mass_matrix(q + k * delta)
    q = q + 4 * delta
    warm, loops = model.workspace.arrays.loop_warm, model.compiled.loops
    assert warm.curved.all()
    np.testing.assert_allclose(warm.u0, delta[:1], rtol=1e-12)   # one known joint: its change
    solutions = [reference.joint_state(q + s * delta, np.zeros(model.nv))[0][loops.view_start:][loops.dep]
                 for s in (-1.0, 0.0, 1.0)]
    second_difference = solutions[0] - 2.0 * solutions[1] + solutions[2]
    np.testing.assert_allclose(warm.h0, second_difference, rtol=1e-3, atol=1e-3 * np.max(np.abs(second_difference)))
    # h, then M at the same state (τ = M a + h): M leaves h's curvature along the rate, still this solution's
    model.bias_forces(q + delta, np.ones(model.nv))
    curvature = (warm.u0.copy(), warm.h0.copy())
    model.mass_matrix(q + delta)
    assert warm.curved.all()
    np.testing.assert_array_equal(warm.u0, curvature[0])
    np.testing.assert_array_equal(warm.h0, curvature[1])


def test_andrews_squeezer_takes_its_kept_solution_at_a_repeated_state():
    """Andrews' squeezer's residual at its solution is at most 1e-3 of the tolerance, but its last correction
    moves θ_dep by a few ulps, so on main its solution was never kept (a solve at every call, even at the same
    state); now the kept solution is keyed on the corrected layout (`_keep_fixed_point_py`). A second call at the
    same state takes it (no residual writes Φ_θ into the work arrays), and its accelerations are Pinocchio's
    `constraintDynamics` (the three planar loops as point constraints) to 1e-8 of their size."""
    import biobullet
    from biobullet.bench.competitors import pinocchio_loops
    model = biobullet.load_model("andrews_squeezer")
    pinocchio_accelerations, index = pinocchio_loops(model)
    rng = np.random.default_rng(231)
    q0, _ = model.initial_state()
    taken = 0
    for k in range(4):
        q = q0 + 1e-3 * (k + 1) * rng.uniform(-1.0, 1.0, model.nq)
        v, force = rng.normal(size=model.nv), rng.normal(size=model.nv)
        model.forward_dynamics(q, v, force)
        jacobian = model.workspace.loop_work.jac   # Φ_θ: written by the solve's residual only
        jacobian[:] = np.nan
        accel = model.forward_dynamics(q, v, force).copy()
        taken += bool(np.isnan(jacobian).all())
        x, xd, gradient, gamma = model.joint_state(q, v)
        tau = np.linalg.lstsq(gradient.T, force, rcond=None)[0]
        expected = pinocchio_accelerations(index.config_to_pinocchio(x), index.velocity_to_pinocchio(xd),
                                           index.velocity_to_pinocchio(tau))
        np.testing.assert_allclose(index.velocity_to_pinocchio(gradient @ accel + gamma), expected, rtol=0,
                                   atol=1e-8 * max(1.0, np.max(np.abs(expected))))
    assert taken == 4, taken


def test_the_rate_pass_takes_the_residuals_placements_only_at_their_joint_layout():
    """The loop Newton's rate pass computes the bodies' velocities on the placements the last residual left in the
    work arrays where the joint layout is theirs to round-off (`constraints.newton_kernel.PLACED_ROUND_OFF`),
    else it places the bodies again. Four-bar knee, bias forces at a state twice (a solve, then its kept solution):
    with the work arrays' rotations then overwritten by NaN, a third call at that state reads them (the stage
    declines: no finite result; on main it placed the bodies again and did not); with their joint layout
    (`placed`) moved 1e-12 as well, the call places the bodies again and agrees with the `reduced_pinocchio` check
    formulation (its own tree algorithms and resolver) to 1e-12 of the result's largest entry."""
    import biobullet
    from biobullet.constraints.newton_kernel import PLACED_ROUND_OFF
    model = biobullet.load_model("fourbar_knee")
    check = biobullet.load_model("fourbar_knee")
    rng = np.random.default_rng(232)
    q0, _ = model.initial_state()
    v = rng.normal(size=model.nv)
    data, work = model.workspace, model.workspace.loop_work
    seeds = _count_seeds(data)
    for k, moved in enumerate((0.0, 1e-12)):
        q = q0 + 0.01 * (k + 1) * rng.uniform(-1.0, 1.0, model.nq)
        expected = check.bias_forces(q, v, formulation="reduced_pinocchio")
        for _ in range(2):
            np.testing.assert_allclose(model.bias_forces(q, v), expected, rtol=0,
                                       atol=1e-12 * np.max(np.abs(expected)))
        assert np.all(np.abs(work.placed - data.arrays.x[model.compiled.loops.view_start:]) <= PLACED_ROUND_OFF)
        work.rot[:] = np.nan
        work.placed[:] += moved
        seeds.clear()
        result = data.bias_forces(model, q, v)
        # the call's result is right either way: where the stage declines, the generic resolver solves the state
        # (placing the bodies again) and the stage runs once more (`Data._call`)
        np.testing.assert_allclose(result, expected, rtol=0, atol=1e-12 * np.max(np.abs(expected)))
        if moved:
            assert seeds == [], "the stage declined"
        else:
            assert seeds == [1], "the rate pass placed the bodies again"
