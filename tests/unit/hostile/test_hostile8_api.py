"""Hostile input, eighth campaign: the Python API a user calls (`Model` methods, `simulate`, `Trajectory`).

Bad arguments give one `BiobulletError` naming the argument — never an AttributeError or TypeError from inside the
library, a misleading SolverError, or a silently accepted value (text read as a time, a string as a flag) — and
the input layouts NumPy users pass (float32, strided, read-only, lists, columns) give the float64 call's numbers
without modifying the caller's arrays. Each case failed before this campaign (docs/hostile_input.md "Python API")."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import biobullet
from biobullet.core.errors import BiobulletError, ModelError
from biobullet.integrate.trajectory import Trajectory

from test_hostile7_outputs import two_links   # (the one-joint pendulum of the seventh campaign)


@pytest.fixture(scope="module")
def pendulum(tmp_path_factory):
    path = tmp_path_factory.mktemp("api") / "pend.urdf"
    path.write_text(two_links())
    return biobullet.load_model(path)


def argument_error(call, argument: str) -> BiobulletError:
    """The one BiobulletError of `call()`, which must name `argument`."""
    with pytest.raises(BiobulletError) as caught:
        call()
    assert f"'{argument}'" in str(caught.value), str(caught.value)
    return caught.value


@pytest.mark.parametrize("overrides", [["j"], "j", 5, {3: 1.0}])
def test_initial_state_refuses_what_is_not_a_mapping_of_names(pendulum, overrides):
    """(AttributeError: 'list' object has no attribute 'items', 'int' object has no attribute 'endswith')"""
    argument_error(lambda: pendulum.initial_state(overrides), "overrides")


def test_frame_of_an_unhashable_name_is_a_model_error(pendulum):
    """(TypeError: unhashable type: 'list')"""
    with pytest.raises(ModelError, match="unknown link"):
        pendulum.frame(["arm"])


def test_missing_speeds_are_an_argument_error_not_a_singular_mass_matrix(pendulum):
    """v=None was taken as zero speeds by the error path, which then blamed the mass matrix (SolverError "the mass
    matrix is singular or not positive definite")."""
    q, tau = np.zeros(1), np.zeros(1)
    error = argument_error(lambda: pendulum.forward_dynamics(q, None, tau), "v")
    assert isinstance(error, ModelError)
    argument_error(lambda: pendulum.bias_forces(q, None), "v")


@pytest.mark.parametrize("t", ["0.5", True, float("nan"), float("inf"), np.float64("-inf")])
def test_time_must_be_one_finite_number(pendulum, t):
    """`float()` read text and flags as times (t="0.5" ran at 0.5 s, True at 1 s) and NaN or ±inf times went
    through; a list q takes the converting path, as `joint_state` does every time."""
    argument_error(lambda: pendulum.forward_dynamics([0.1], [0.0], [0.0], t), "t")
    argument_error(lambda: pendulum.mass_matrix([0.1], t), "t")
    argument_error(lambda: pendulum.joint_state(np.zeros(1), np.zeros(1), t), "t")


@pytest.mark.parametrize("keyword, value", [
    ("method", 3),                    # AttributeError: 'int' object has no attribute 'upper'
    ("progress", "yes"),              # ran, as True
    ("projection", "no"),             # ran, projecting
    ("max_evaluations", -1),          # ran; an implicit method stopped at once
    ("max_evaluations", 1.5),         # ran, as 1
    ("python_start_seconds", -1.0),   # ran
    ("python_start_seconds", float("nan")),
    ("out", 3),                       # TypeError from os.fspath
    ("rtol", 10.0),                   # ran: a relative tolerance ≥ 1 bounds nothing (the CLI refused it)
    ("activations", "x"),             # ignored without excitations
])
def test_simulate_names_a_bad_keyword_before_any_work(pendulum, keyword, value):
    argument_error(lambda: biobullet.simulate(pendulum, 0.01, **{keyword: value}), keyword)


@pytest.mark.parametrize("model", ["pend.urdf", None])
def test_simulate_of_what_is_not_a_model(model):
    """(AttributeError: 'str' object has no attribute 'nv')"""
    argument_error(lambda: biobullet.simulate(model, 0.01), "model")


def test_simulate_events_that_are_not_callables(pendulum):
    """(TypeError from core.events.as_event)"""
    argument_error(lambda: biobullet.simulate(pendulum, 0.01, events=["g"]), "events")


def test_simulate_refuses_more_samples_than_the_cli_allows(pendulum, monkeypatch):
    """(t_eval of 10⁸ times ran, and the process was killed for memory when the trajectory was built)"""
    from biobullet.integrate import engine
    monkeypatch.setattr(engine, "MAX_SAMPLES", 1000)   # (the same check, without a 10⁷-entry array)
    argument_error(lambda: biobullet.simulate(pendulum, 0.01, t_eval=np.linspace(0.0, 0.01, 1001)), "t_eval")


def test_simulate_accepts_a_numpy_integer_budget(pendulum):
    trajectory = biobullet.simulate(pendulum, 0.01, max_evaluations=np.int64(10 ** 6), t_eval=[0.0, 0.01])
    assert len(trajectory) == 2


def test_trajectory_column_plot_and_csv_reading(pendulum, tmp_path):
    trajectory = biobullet.simulate(pendulum, 0.01, t_eval=[0.0, 0.01])
    for name in (None, 3):   # (AttributeError: 'NoneType' object has no attribute 'rpartition')
        with pytest.raises(KeyError, match="column name is text"):
            trajectory.column(name)
    figure = trajectory.plot("j")   # one name: was read as the columns 'j' … ("'n' is not a column" for "nope")
    assert [line.get_label() for line in figure.axes[0].get_lines()] == ["j"]
    archive = trajectory.to_npz(tmp_path / "run.npz")
    with pytest.raises(ModelError, match="not a text file"):   # (UnicodeDecodeError)
        Trajectory.from_csv(archive)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=3, max_size=3),
       st.sampled_from(["float32", "strided", "readonly", "list", "column", "fortran_column", "big_endian"]))
def test_input_layouts_give_the_float64_numbers_and_are_not_modified(pendulum, values, layout):
    """Every layout a NumPy user passes is read as the float64 vector of its values (float32 rounded first): the
    same M, h and v̇ to the last bit as the float64 call, and the caller's arrays untouched."""
    q, v, tau = (np.array([x]) for x in values)
    if layout == "float32":
        q, v, tau = (a.astype(np.float32) for a in (q, v, tau))

    def shaped(a: np.ndarray):
        if layout == "strided":
            b = np.empty(2 * a.size, dtype=a.dtype)[::2]
            b[:] = a
            return b
        if layout == "readonly":
            b = a.copy()
            b.setflags(write=False)
            return b
        if layout == "list":
            return a.tolist()
        if layout == "column":
            return a.reshape(-1, 1).copy()
        if layout == "fortran_column":
            return np.asfortranarray(np.stack([a, a], axis=1))[:, 0]
        if layout == "big_endian":
            return a.astype(">f8")
        return a

    args = [shaped(a) for a in (q, v, tau)]
    before = [np.array(a, copy=True) for a in args]
    exact = [np.asarray(a, dtype=np.float64).reshape(-1).copy() for a in (q, v, tau)]
    # the oracle: a point mass 1 kg at 0.5 m on a rod of Ixx 0.1 kg·m², hanging in -z, turning about x:
    # M = 0.1 + 0.5², h = m g l sin q
    mass, bias = 0.1 + 0.25, 9.81 * 0.5 * np.sin(exact[0][0])
    np.testing.assert_allclose(pendulum.forward_dynamics(*exact), [(exact[2][0] - bias) / mass], rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_array_equal(pendulum.forward_dynamics(*args), pendulum.forward_dynamics(*exact))
    np.testing.assert_array_equal(pendulum.mass_matrix(args[0]), pendulum.mass_matrix(exact[0]))
    np.testing.assert_array_equal(pendulum.bias_forces(args[0], args[1]), pendulum.bias_forces(*exact[:2]))
    for given_array, kept in zip(args, before):
        np.testing.assert_array_equal(np.asarray(given_array), kept)


def test_bridge_sub_steps_are_bounded(pendulum):
    """`bridge.set_time_step(1e-3, 10**9)` was accepted: every stepSimulation() would have run 10⁹ PyBullet sub-steps.
    Now one ModelError naming the argument; a sensible count is still taken (PyBullet's own parameter reads it)."""
    import pybullet
    from biobullet.bridge import Bridge
    client = pybullet.connect(pybullet.DIRECT)
    try:
        bridge = Bridge(pendulum, client=client, dt=1e-3)
        with pytest.raises(ModelError, match="substeps"):
            bridge.set_time_step(1e-3, 10**9)
        bridge.set_time_step(1e-3, 4)
        assert pybullet.getPhysicsEngineParameters(physicsClientId=client)["numSubSteps"] == 4
    finally:
        pybullet.disconnect(client)


def test_pipeline_forward_refuses_a_foreign_data_and_bad_state(pendulum, tmp_path):
    """`biobullet.pipeline.forward.forward(model, data, ...)`: data=None was an AttributeError; another model's Data
    or a q of n+1 entries (or None) returned None ("declined") with no error."""
    from biobullet.pipeline.forward import bias_forces, forward, mass_matrix
    other_path = tmp_path / "pend2.urdf"
    other_path.write_text(two_links())
    other = biobullet.load_model(other_path)
    q, v = np.zeros(1), np.zeros(1)
    for data in (None, other.data(), "data"):
        argument_error(lambda: forward(pendulum, data, q, v), "data")
        argument_error(lambda: mass_matrix(pendulum, data, q), "data")
    data = pendulum.data()
    argument_error(lambda: forward(pendulum, data, None, v), "q")
    argument_error(lambda: forward(pendulum, data, np.zeros(2), v), "q")
    argument_error(lambda: forward(pendulum, data, q, [np.nan]), "v")
    argument_error(lambda: forward(pendulum, data, q, v, np.zeros(3)), "tau")
    argument_error(lambda: bias_forces(pendulum, data, q, None), "v")
    assert np.array_equal(forward(pendulum, data, q, v), pendulum.forward_dynamics(q, v))


@pytest.mark.parametrize("argument, value", [("samples", "x"), ("samples", 0), ("samples", 2.5), ("seed", -1),
                                             ("seed", "1"), ("tol", -1), ("tol", float("nan")), ("tol", "1e-9"),
                                             ("oracles", "pinocchio"), ("formulations", "reduced")])
def test_validate_model_refuses_bad_arguments(pendulum, argument, value):
    """`validate_model`: samples="x" was a TypeError, seed=-1 NumPy's ValueError, tol=-1 or NaN were accepted (every
    comparison failed, or none), oracles="pinocchio" was split into letters."""
    from biobullet.validate import validate_model
    error = argument_error(lambda: validate_model(pendulum, **{argument: value}), argument)
    assert isinstance(error, ModelError)
    if argument in ("oracles", "formulations"):   # (not "unknown oracles ['p', 'i', 'n', ...]")
        assert "not a list of names" in str(error), str(error)


@pytest.mark.parametrize("argument, value", [("query_distance", -1.0), ("query_distance", float("nan")),
                                             ("query_distance", "x"), ("contact_geometry", "x"),
                                             ("contact_geometry", ["analytic"])])
def test_bridge_refuses_bad_contact_options_on_any_model(pendulum, argument, value):
    """Bridge(m, query_distance=-1) and contact_geometry="x" were accepted on a model without contacts (and
    query_distance="x" was NumPy's TypeError on one with contacts)."""
    from biobullet.bridge import Bridge
    error = argument_error(lambda: Bridge(pendulum, **{argument: value}), argument)
    assert isinstance(error, ModelError)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "0.5", None])
def test_an_event_that_is_not_one_finite_number_is_named(pendulum, value):
    """events=[lambda t, x, xd: nan]: the run went on and the event never fired (a NaN never changes sign)."""
    def bad_event(t, x, xd):
        return value
    error = argument_error(lambda: biobullet.simulate(pendulum, 0.01, events=[bad_event]), "events")
    assert "bad_event" in str(error)


def test_trajectory_files_and_model_arguments_are_named(pendulum, tmp_path):
    """to_csv(None), to_npz(3), from_npz(None), from_csv(p, model="x") and accelerations("x") were TypeErrors or
    AttributeErrors from inside (to_npz(3) would have written to file descriptor 3)."""
    trajectory = biobullet.simulate(pendulum, 0.01)
    for call in (lambda: trajectory.to_csv(None), lambda: trajectory.to_npz(3), lambda: trajectory.to_csv(b"x.csv"),
                 lambda: Trajectory.from_npz(None), lambda: Trajectory.from_csv(""), lambda: Trajectory.from_csv(7)):
        assert isinstance(argument_error(call, "path"), ModelError)
    path = trajectory.to_csv(tmp_path / "run.csv")
    argument_error(lambda: Trajectory.from_csv(path, model="x"), "model")
    argument_error(lambda: trajectory.accelerations("x"), "model")
    argument_error(lambda: Trajectory.from_csv(path).accelerations(), "model")
    assert np.array_equal(Trajectory.from_csv(path, model=pendulum).positions, trajectory.positions)


@pytest.mark.parametrize("arguments, keywords, argument", [
    ((None,), {}, "path"), ((b"arm7",), {}, "path"), (("arm7", "no"), {}, "floating_base"),
    (("arm7",), {"joint_limits": "no"}, "joint_limits"), (("arm7",), {"strict": "no"}, "strict"),
    (("arm7",), {"strict": 1}, "strict")])
def test_load_model_arguments_are_model_errors(arguments, keywords, argument):
    """load_model(None), floating_base="no", joint_limits="no" were plain TypeErrors, and strict="no" was accepted
    silently (a truthy text)."""
    error = argument_error(lambda: biobullet.load_model(*arguments, **keywords), argument)
    assert isinstance(error, ModelError)
