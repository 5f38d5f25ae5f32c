"""The public API as a control or learning engineer's code uses it (hunt20's probe): argument habits, copies of a
model for worker processes, and the Python `simulate`'s naming of a time function it runs into.

Defects these tests pin (each failed on main):
- `pickle.dumps(model)` and `copy.deepcopy(model)` raised "TypeError: cannot pickle 'module' object" (and, for a model
  with loops or force elements, "cannot pickle 'mappingproxy' object"): a model could not go to a
  multiprocessing / dask worker; `copy.copy(model)` shared the original's workspace and compiled calls.
- a ragged q (`[0.1, [0.2, 0.3]]`) was NumPy's bare "setting an array element with a sequence" ValueError;
- `integrate_configuration` with a short v was a NumPy broadcast error, with NaN in q, v or dt a NaN result;
  `normalize_configuration` of a q of the wrong length returned a vector normalised at the wrong entries;
- `biobullet.simulate` ran into a time function's pole and failed naming a runaway state or SciPy's step size, not
  the element the CLI names before its run; float32 `t_eval` ending at t_end was refused as outside [0, t_end], text
  read as times; `baumgarte` "x" failed at t = 0 (-1: a bare TypeError) and was ignored by the reduced
  formulations, `excitations` on a model without muscles ignored; `events=f` was "not iterable";
- a worker's Trajectory could not be pickled back (its model); `copy.copy(bridge)` shared the PyBullet body;
- the calls taking t read text as a time and a flag as 1 s (None or a list: bare TypeErrors); after the first
  call `inspect.signature(model.forward_dynamics)` began with self;
- the gym demo's environment was not registered with Gymnasium.
Behaviour users rely on and that was right already is pinned too: array kinds accepted by the public calls (against
Pinocchio) and results kept in a list (a replay buffer) not overwritten by later calls.
"""
from __future__ import annotations

import copy
import pickle
import warnings
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.core.errors import ModelError
from hostile_cli import chain

pin = pytest.importorskip("pinocchio")
REPO = Path(__file__).resolve().parents[2]

#: a floating base with two branches: revolute, prismatic on a skew axis, revolute; a revolute on the base.
#: Per link: (name, COM, mass, inertia ixx iyy izz ixy ixz iyz); per joint: (name, type, parent, child, origin xyz,
#: origin rpy, axis)
LINKS = [("base", "0.01 0.02 0.03", 3.0, "0.2 0.25 0.3 0.01 0 0.02"),
         ("l1", "0 0.05 0.1", 1.5, "0.02 0.03 0.02 0 0.001 0"),
         ("l2", "0.02 0 0.05", 0.8, "0.01 0.012 0.005 0 0 0"),
         ("l3", "0 0 0.1", 0.5, "0.004 0.005 0.002 0 0 0"),
         ("l4", "0.1 0 0", 0.7, "0.003 0.004 0.005 0 0 0")]
JOINTS = [("j1", "revolute", "base", "l1", "0.1 0 0.2", "0.1 0.2 0.3", "0 1 0"),
          ("j2", "prismatic", "l1", "l2", "0 0 0.3", "0 0 0", "0 0.6 0.8"),
          ("j3", "revolute", "l2", "l3", "0 0.1 0.1", "0 0.5 0", "1 0 0"),
          ("j4", "revolute", "base", "l4", "-0.1 0 0.2", "0 0 0", "0 0 1")]


INERTIA_KEYS = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")


def _robot_text() -> str:
    links = "".join(
        f'<link name="{name}"><inertial><origin xyz="{com}"/><mass value="{mass}"/><inertia '
        + " ".join(f'{key}="{value}"' for key, value in zip(INERTIA_KEYS, inertia.split()))
        + "/></inertial></link>\n" for name, com, mass, inertia in LINKS)
    joints = "".join(
        f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/><origin xyz="{xyz}" '
        f'rpy="{rpy}"/><axis xyz="{axis}"/><limit lower="-1" upper="1" effort="10" velocity="10"/></joint>\n'
        for name, kind, parent, child, xyz, rpy, axis in JOINTS)
    return (f'<robot name="probe">\n{links}{joints}<biobullet version="1"><gravity xyz="0 0 -9.81"/>'
            '<base type="floating"/></biobullet>\n</robot>\n')


ROBOT = _robot_text()
#: M, h, v̇ against Pinocchio on the same file, relative to the largest entry: both round off at ≈ 1e-15 of it, and
#: v̇ = M⁻¹(τ − h) multiplies that by cond(M) (≈ 50 at these states)
RELATIVE = 1e-13


def _close(actual, expected) -> None:
    expected = np.asarray(expected)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=RELATIVE * max(1.0, float(np.abs(expected).max())))


@pytest.fixture(scope="module")
def robot(tmp_path_factory):
    """(model, Pinocchio model, state sampler) of ROBOT; its joints are in Pinocchio's order (no reordering)."""
    path = tmp_path_factory.mktemp("robot") / "probe.urdf"
    path.write_text(ROBOT)
    model = biobullet.load_model(path, joint_limits=False)
    pin_model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    pin_model.gravity.linear = np.array([0.0, 0.0, -9.81])
    assert [*pin_model.names][2:] == list(model.coordinate_names[7:]) and pin_model.nq == model.nq
    return model, pin_model


def _state(model, seed: int):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=model.nq)
    q[3:7] /= np.linalg.norm(q[3:7])   # Pinocchio's free flyer: x y z, then the quaternion x y z w
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def _pinocchio(pin_model, q, v, tau):
    """(M, h, v̇) by Pinocchio's crba, rnea and aba."""
    data = pin_model.createData()
    mass = pin.crba(pin_model, data, q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    return mass, pin.rnea(pin_model, data, q, v, np.zeros(pin_model.nv)), pin.aba(pin_model, data, q, v, tau)


class _ArrayLike:
    """What a torch tensor or a JAX array offers NumPy: `__array__` only."""

    def __init__(self, values) -> None:
        self.values = np.asarray(values)

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)


def _read_only(values: np.ndarray) -> np.ndarray:
    values = values.copy()
    values.setflags(write=False)
    return values


ARRAY_KINDS = {
    "list": list, "tuple": tuple, "column (n, 1)": lambda a: a[:, None], "row (1, n)": lambda a: a[None, :],
    "strided view": lambda a: np.repeat(a, 2)[::2], "reversed view": lambda a: a[::-1].copy()[::-1],
    "Fortran column": lambda a: np.asfortranarray(a[:, None]), "read-only": _read_only, "__array__": _ArrayLike,
    "long double": lambda a: a.astype(np.longdouble),
}


@pytest.mark.parametrize("kind", ARRAY_KINDS)
def test_every_array_kind_gives_pinocchios_numbers(robot, kind):
    model, pin_model = robot
    q, v, tau = _state(model, 1)
    mass, bias, acceleration = _pinocchio(pin_model, q, v, tau)
    as_kind = ARRAY_KINDS[kind]
    for _ in range(2):   # the first call binds the compiled closures; the second goes through them
        _close(model.mass_matrix(as_kind(q)), mass)
        _close(model.bias_forces(as_kind(q), as_kind(v)), bias)
        _close(model.forward_dynamics(as_kind(q), as_kind(v), as_kind(tau)), acceleration)


def test_numpy_scalar_times_and_keywords_give_the_same_numbers(robot):
    model, pin_model = robot
    q, v, tau = _state(model, 2)
    expected = _pinocchio(pin_model, q, v, tau)[2]
    for t in (0.0, 0, np.float64(0.5), np.float32(0.5), np.int64(1), np.array(0.5)):
        _close(model.forward_dynamics(q, v, tau, t), expected)
        _close(model.forward_dynamics(q=q, v=v, tau=tau, t=t), expected)


def test_results_kept_in_a_list_are_not_overwritten_by_later_calls(robot):
    """A replay buffer keeps every call's result: each must stay the number of its own state (the closures reuse
    a result array only when nothing else holds it)."""
    model, pin_model = robot
    states = [_state(model, seed) for seed in range(10, 16)]
    masses, biases, accelerations, rows = [], [], [], []
    for q, v, tau in states:
        masses.append(model.mass_matrix(q))
        rows.append(model.mass_matrix(q)[0])   # a view of a result: its base is held through it
        biases.append(model.bias_forces(q, v))
        accelerations.append(model.forward_dynamics(q, v, tau))
    for (q, v, tau), mass, row, bias, acceleration in zip(states, masses, rows, biases, accelerations):
        expected = _pinocchio(pin_model, q, v, tau)
        _close(mass, expected[0])
        _close(row, expected[0][0])
        _close(bias, expected[1])
        _close(acceleration, expected[2])


def test_a_ragged_argument_is_one_error_naming_it(robot):
    model, _ = robot
    q, v, _ = _state(model, 3)
    for call in (lambda: model.mass_matrix([0.1, [0.2, 0.3]]), lambda: model.forward_dynamics(q, [[1.0], 2.0]),
                 lambda: model.joint_configuration([0.1, [0.2]]), lambda: model.normalize_configuration([1, [2]])):
        with pytest.raises(ModelError, match="argument '[qv]' is not a vector of real numbers"):
            call()


def test_integrate_configuration_checks_its_arguments_and_matches_pinocchio(robot):
    model, pin_model = robot
    q, v, _ = _state(model, 4)
    expected = pin.integrate(pin_model, q, v * 0.01)
    np.testing.assert_allclose(model.integrate_configuration(list(q), tuple(v), 0.01), expected, rtol=0, atol=1e-14)
    for arguments, name in (((q, v[:-1], 0.01), "v"), ((q[:-1], v, 0.01), "q"), ((q, np.r_[np.nan, v[1:]], 0.01), "v"),
                            ((np.r_[q[:-1], np.inf], v, 0.01), "q"), ((q, v, float("nan")), "dt")):
        with pytest.raises(ModelError, match=f"argument '{name}'"):
            model.integrate_configuration(*arguments)


def test_normalize_configuration_refuses_a_wrong_length(robot):
    model, _ = robot
    q, _, _ = _state(model, 5)
    q[3:7] *= 3.0
    stack = np.stack([q, 2 * q])
    unit = model.normalize_configuration(stack)
    np.testing.assert_allclose(np.linalg.norm(unit[:, 3:7], axis=1), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(unit[:, 7:], stack[:, 7:])
    for bad in (q[:-1], stack[:, :-1], 1.0):
        with pytest.raises(ModelError, match="argument 'q' has"):
            model.normalize_configuration(bad)


@pytest.mark.parametrize("duplicate", ["pickle", "deepcopy", "copy"])
def test_a_model_copies_and_pickles_with_its_own_workspace(robot, duplicate):
    """Worker processes receive models by pickle; each copy computes Pinocchio's numbers on its own buffers."""
    model, pin_model = robot
    make = {"pickle": lambda m: pickle.loads(pickle.dumps(m)), "deepcopy": copy.deepcopy, "copy": copy.copy}[duplicate]
    q, v, tau = _state(model, 6)
    model.forward_dynamics(q, v, tau)   # the original's compiled calls exist: the copy must not share them
    other = make(model)
    assert other.workspace is not model.workspace and other.coordinate_names == model.coordinate_names
    q2, v2, tau2 = _state(model, 7)
    mine, theirs = model.forward_dynamics(q, v, tau), other.forward_dynamics(q2, v2, tau2)   # interleaved
    _close(mine, _pinocchio(pin_model, q, v, tau)[2])
    _close(theirs, _pinocchio(pin_model, q2, v2, tau2)[2])


def test_a_loop_model_and_added_force_elements_survive_a_pickle():
    """The four-bar knee (a loop; its file's elements are read-only mappings) with a joint spring added in Python:
    the copy's v̇ is the original's, and the copy's spring gives −k θ on its joint (by hand)."""
    from biobullet.forces import add_force_element, force_elements
    from biobullet.forces.elements import JointSpring
    model = biobullet.load_model("fourbar_knee")
    q, v = model.initial_state()
    q, v = q + 0.2, v + 0.3
    joint = model.coordinate_names[0]
    add_force_element(model, JointSpring(name="extra", joint=joint, stiffness=3.0, rest=0.0))
    other = pickle.loads(pickle.dumps(model))
    _close(other.forward_dynamics(q, v), model.forward_dynamics(q, v))
    spring = [element for element in force_elements(other) if element.name == "extra"]
    assert len(spring) == 1 and spring[0] is not force_elements(model)[-1]
    x = other.joint_configuration(q)
    slot = other.joint_names.index(joint)
    force = spring[0].generalized_force(other, x, np.zeros(other.n_tangent), 0.0)
    assert force[slot] == pytest.approx(-3.0 * x[slot], rel=1e-15) and np.count_nonzero(force) == 1


def _worker_mass(model, q):
    return model.mass_matrix(q)


def test_a_model_goes_to_a_worker_process(robot):
    model, pin_model = robot
    q, _, _ = _state(model, 8)
    with ProcessPoolExecutor(1, mp_context=get_context("fork")) as pool:
        mass = pool.submit(_worker_mass, model, q).result(timeout=600)
    _close(mass, _pinocchio(pin_model, q, np.zeros(model.nv), np.zeros(model.nv))[0])


@pytest.mark.parametrize("extension, element, pole", [
    ('<joint_torque joint="j1" type="expression" expression="1/(t-0.1)"/>', '<joint_torque joint="j1">', 0.1),
    ('<joint_function joint="j2" type="expression" inputs="j1" expression="sqrt(0.1 - t)"/>',
     '<joint_function joint="j2">', 0.1),
])
def test_simulate_names_the_time_function_it_runs_into(tmp_path, extension, element, pole):
    """The CLI names the element before its run; the Python call runs (its partial trajectory is kept) and names
    it too. The pole and the domain's edge are at t = 0.1 s by the expressions themselves."""
    from biobullet.integrate import IntegrationError
    model = biobullet.load_model(chain(tmp_path, extension))
    out = tmp_path / "run.csv"
    with pytest.raises(IntegrationError) as info:
        biobullet.simulate(model, 0.3, t_eval=np.linspace(0.0, 0.3, 7), out=out)
    message = str(info.value)
    assert element in message and "found before the run" in message
    assert info.value.partial_path == str(out) + ".partial.csv"
    times = np.loadtxt(info.value.partial_path, delimiter=",", skiprows=1, usecols=0, ndmin=1)
    assert times[0] == 0.0 and times[-1] <= pole + 1e-6


def test_simulate_checks_time_functions_from_t0(tmp_path):
    """A pole before the run's t0 is outside the run: no warning, no error (the check's interval starts at t0)."""
    model = biobullet.load_model(chain(tmp_path, '<joint_torque joint="j1" type="expression" '
                                                 'expression="0.01/(t-0.1)"/>'))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trajectory = biobullet.simulate(model, 0.3, t0=0.2, t_eval=np.linspace(0.2, 0.3, 3), progress=False)
    assert trajectory.t[0] == 0.2 and trajectory.t[-1] == 0.3


def test_the_gym_environment_is_registered_with_gymnasium():
    """`gymnasium.make` of the demo's registered id gives the environment (the coupled KUKA written for it), which
    passes Gymnasium's checker; its coupling q3 = 0.5 sin q2 + 0.2 q4², read from PyBullet's joint states and
    evaluated here, holds to the bridge's 1e-6 rad under random actions through Gymnasium's wrappers."""
    import importlib.util
    import math
    gymnasium = pytest.importorskip("gymnasium")
    pybullet = pytest.importorskip("pybullet")
    from gymnasium.utils.env_checker import check_env
    spec = importlib.util.spec_from_file_location("gym_reach_registered", REPO / "demos" / "gym_reach.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    env_id = demo.register_env()
    assert demo.register_env() == env_id == "biobullet/CoupledReach-v0"   # a second registration is a no-op
    env = gymnasium.make(env_id, steps=30)
    try:
        assert env.spec.id == env_id
        check_env(env.unwrapped, skip_render_check=True)
        env.reset(seed=4)
        env.action_space.seed(4)
        base = env.unwrapped
        ids = {pybullet.getJointInfo(base.bridge.body, j, physicsClientId=base.client)[1].decode(): j
               for j in range(pybullet.getNumJoints(base.bridge.body, physicsClientId=base.client))}
        truncated, steps = False, 0
        while not truncated:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            steps += 1
            q2, q3, q4 = (pybullet.getJointState(base.bridge.body, ids[f"lbr_iiwa_joint_{k}"],
                                                 physicsClientId=base.client)[0] for k in (2, 3, 4))
            assert not terminated and abs(q3 - (0.5 * math.sin(q2) + 0.2 * q4 * q4)) <= 1e-6
        assert steps == 30
    finally:
        env.close()


def test_float32_sample_times_and_text_sample_times(robot):
    """np.float32(0.1) = 0.10000000149 is past t_end = 0.1 by its rounding: it was refused with "times within
    [0, 0.1]" (the user's times are); now it is the run's end. Text ("0.1") was read as a time; now refused. The
    samples are the run's state at those times: the float64 run's, bit for bit."""
    model, _ = robot
    single = biobullet.simulate(model, 0.1, t_eval=np.array([0.0, 0.05, 0.1], dtype=np.float32), progress=False)
    double = biobullet.simulate(model, 0.1, t_eval=np.array([0.0, np.float32(0.05), 0.1]), progress=False)
    assert single.t[-1] == 0.1 and single.t[1] == double.t[1]
    np.testing.assert_array_equal(single.positions, double.positions)
    with pytest.raises(ModelError, match=r"t_eval is not an array of times"):
        biobullet.simulate(model, 0.1, t_eval=["0", "0.1"], progress=False)
    with pytest.raises(ModelError, match=r"t_eval\[2\] = 0\.05 is not after the time before it"):
        biobullet.simulate(model, 0.1, t_eval=[0.0, 0.05, 0.05, 0.1], progress=False)


@pytest.mark.parametrize("call", ["joint_configuration", "joint_positions", "coordinate_gradient", "joint_state_view",
                                  "generalized_forces"])
def test_every_call_taking_t_names_a_wrong_t(tmp_path, call):
    """On a model whose joint function depends on t: text ("0.5") was read as a time, a flag as 1 s, None or a list
    was a bare TypeError; `mass_matrix` and `joint_state` named t already. A NumPy scalar t gives the float's
    numbers (θ₂ = 0.3 sin 2t + 0.5 θ₁ by hand)."""
    model = biobullet.load_model(chain(tmp_path, '<joint_function joint="j2" type="expression" inputs="j1" '
                                                 'expression="0.3*sin(2*t) + 0.5*j1"/>'))
    q, v = np.array([0.3]), np.array([0.1])
    run = {"joint_configuration": lambda t: model.joint_configuration(q, t),
           "joint_positions": lambda t: model.joint_positions(q, t),
           "coordinate_gradient": lambda t: model.coordinate_gradient(q, t)[0],
           "joint_state_view": lambda t: model.joint_state_view(q, v, t)[0],
           "generalized_forces": lambda t: model.generalized_forces(np.array([1.0, 2.0]), q, t)}[call]
    for t in ("0.5", None, [0.5], True):
        with pytest.raises(ModelError, match="argument 't'"):
            run(t)
    if call != "generalized_forces":
        np.testing.assert_allclose(run(np.float32(0.25)), [0.3, 0.3 * np.sin(0.5) + 0.15], rtol=0, atol=1e-15)
    else:   # Q = Gᵀ τ = τ₁ + 0.5 τ₂
        np.testing.assert_allclose(run(np.float32(0.25)), [2.0], rtol=0, atol=1e-15)


def _worker_run(model, t_end: float):
    return biobullet.simulate(model, t_end, t_eval=np.linspace(0.0, t_end, 5), progress=False)


def test_a_trajectory_comes_back_from_a_worker_process(robot):
    """dask and multiprocessing return a worker's Trajectory by pickle, with its model (it pickled the module of the
    model's dynamics: TypeError). Its samples are the parent's run, and its accelerations M⁻¹(−h) at a sample are
    Pinocchio's aba there."""
    model, pin_model = robot
    with ProcessPoolExecutor(1, mp_context=get_context("fork")) as pool:
        remote = pool.submit(_worker_run, model, 0.05).result(timeout=600)
    local = _worker_run(model, 0.05)
    np.testing.assert_array_equal(remote.positions, local.positions)
    np.testing.assert_array_equal(remote.velocities, local.velocities)
    q, v = remote.q[-1], remote.v[-1]
    _close(remote.accelerations(generalized=True)[-1], _pinocchio(pin_model, q, v, np.zeros(model.nv))[2])


def test_a_bridge_refuses_to_be_copied_or_pickled():
    """copy.copy(bridge) shared the original's PyBullet body (two bridges stepping and closing one body); pickle
    said "cannot pickle 'module' object". Now one TypeError saying what to pickle instead; the bridge is unharmed."""
    pytest.importorskip("pybullet")
    model = biobullet.load_model("arm7")
    with biobullet.Bridge(model) as bridge:
        for duplicate in (copy.copy, copy.deepcopy, pickle.dumps):
            with pytest.raises(TypeError, match="cannot be copied or pickled; pickle the model"):
                duplicate(bridge)
        bridge.step()
        assert bridge.time > 0.0


def test_the_public_calls_keep_their_signature_after_the_first_call(robot):
    """After the first call the model's calls are compiled closures; their signature said (self, q, v, …), so
    `inspect.signature(model.forward_dynamics).bind(q, v)` bound q to self and v to q (a wrapper framework's or an
    IDE's view of the call). Bound by that signature, the call gives Pinocchio's numbers."""
    import inspect
    model, pin_model = robot
    q, v, tau = _state(model, 9)
    model.forward_dynamics(q, v, tau)
    model.mass_matrix(q)
    model.bias_forces(q, v)
    for name, first in (("forward_dynamics", ["q", "v", "tau", "t"]), ("mass_matrix", ["q", "t"]),
                        ("bias_forces", ["q", "v", "t"])):
        assert list(inspect.signature(getattr(model, name)).parameters)[:len(first)] == first
    bound = inspect.signature(model.forward_dynamics).bind(q, v, tau)
    _close(model.forward_dynamics(*bound.args, **bound.kwargs), _pinocchio(pin_model, q, v, tau)[2])


@pytest.mark.parametrize("options, message", [
    ({"formulation": "multipliers", "baumgarte": "x"}, "argument 'baumgarte': is 'x'"),   # was: fails at t = 0
    ({"formulation": "multipliers", "baumgarte": -1}, "argument 'baumgarte': is -1"),   # was: a bare TypeError
    ({"formulation": "multipliers", "baumgarte": (20.0, -1.0)}, "two finite gains"),
    ({"baumgarte": (20.0, 20.0)}, "no constraint drift to correct"),   # was: ignored
    ({"excitations": 0.5}, "argument 'excitations': .* no muscles"),   # was: ignored
])
def test_simulate_names_options_it_would_ignore_or_fail_on(options, message):
    model = biobullet.load_model("fourbar_knee")
    with pytest.raises(ModelError, match=message):
        biobullet.simulate(model, 0.01, progress=False, **options)


def test_simulate_takes_a_single_event_as_a_list_of_one(tmp_path):
    """`events=f` was "'function' object is not iterable". The two-link chain released at j1 = 0.5 rad swings
    down: a terminal event at j1 = 0.25 rad stops the run there (located to the event tolerance), as `events=[f]`."""
    model = biobullet.load_model(chain(tmp_path))

    def crossing(t, x, xd):
        return x[0] - 0.25
    crossing.terminal = True
    single = biobullet.simulate(model, 2.0, events=crossing, initial={"j1": 0.5}, progress=False)
    listed = biobullet.simulate(model, 2.0, events=[crossing], initial={"j1": 0.5}, progress=False)
    assert len(single.events) == 1 and single.events[0][1] == listed.events[0][1] < 2.0
    assert single.positions[-1][0] == pytest.approx(0.25, abs=1e-9)
