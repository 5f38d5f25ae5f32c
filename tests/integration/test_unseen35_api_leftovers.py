"""Leftovers of the last round's probes in the API, CLI, files and validate (apifix). Each test failed on main:
- `simulate(model, "0.01")`, rtol/atol/max_step/t0 and the Bridge's dt took text as a number;
- a Python-float t = NaN or ±inf went through the compiled public calls of a time-free model (the class methods'
  conversion refused it): now one rule (`core.arguments.time_argument`) on every path;
- a contact law's exponent="100" (δ¹⁰⁰ = 1e-300 at 1 mm: the contact vanished), stiffness="1e300" were legal;
- a huge torque ended in "the mass matrix is singular or not positive definite … or a result is not finite",
  naming no element; a path of many points whose muscle force overflowed named `<muscle>` without its name;
- a run's output had no ceiling but the sample count (10⁷ samples of the two-link chain peaked at 2.4 GB);
- `biobullet simulate` ran the time-function check twice (once in the CLI, again in `simulate`);
- the Gymnasium environment was registered only by the demo's `register_env()` (the demo had to be imported);
- validate's "max rel" was the absolute error wherever the oracle's entries are below 1 (a small robot passed
  with a 1e-4 relative error in M);
- link_segment's `mass_matrix(q)` then `bias_forces(q, v)` solved the whole mass-and-bias system twice;
- `core.jit`'s cache stamp did not change when a callee's binding switched between IR-inlined and called.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.core.errors import ModelError, SolverError
from biobullet.integrate import IntegrationError
from hostile_cli import chain, run_cli

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "plugin"


# ------------------------------------------------------------------------------------------- numeric arguments
@pytest.mark.parametrize("keyword", ["t_end", "t0", "rtol", "atol", "max_step"])
@pytest.mark.parametrize("value", ["0.01", b"0.01", True])
def test_simulate_names_a_number_given_as_text(tmp_path, keyword, value):
    model = biobullet.load_model(chain(tmp_path))
    arguments = {"t_end": 0.02, "progress": False, keyword: value}
    with pytest.raises(ModelError, match=f"argument '{keyword}': not a number \\(got {type(value).__name__}"):
        biobullet.simulate(model, arguments.pop("t_end"), **arguments)


def test_an_initial_value_given_as_text_is_named(tmp_path):
    """`initial={"j1": "0.3"}` was read as 0.3 rad; a number is still taken (q0 = 0.3 by hand)."""
    model = biobullet.load_model(chain(tmp_path))
    with pytest.raises(ModelError, match="argument 'j1': not a number \\(got str '0.3'\\)"):
        model.initial_state({"j1": "0.3"})
    with pytest.raises(ModelError, match="argument 'j1_dot': not a number"):
        biobullet.simulate(model, 0.01, initial={"j1_dot": "1"}, progress=False)
    assert model.initial_state({"j1": 0.3})[0][0] == 0.3


def test_the_bridge_names_a_time_step_given_as_text():
    pytest.importorskip("pybullet")
    model = biobullet.load_model("arm7")
    with pytest.raises(ModelError, match="argument 'dt': not a number \\(got str"):
        biobullet.Bridge(model, dt="0.001")
    with biobullet.Bridge(model, dt=0.001) as bridge:
        with pytest.raises(ModelError, match="argument 'dt': not a number"):
            bridge.set_time_step("0.002")
        assert bridge.dt == 0.001


# ------------------------------------------------------------------------------------------- t = NaN, ±inf
@pytest.mark.parametrize("t", [math.nan, math.inf, -math.inf])
def test_a_non_finite_time_is_refused_on_every_path(tmp_path, t):
    """The chain has no time-dependent element, so its kernels never read t: the compiled closures returned M, h and
    v̇ for t = NaN. Each path now names argument 't', the compiled closures (after a first call bound them), the
    class methods, the pipeline's free functions and a check formulation alike."""
    from biobullet.pipeline import forward as pipeline
    model = biobullet.load_model(chain(tmp_path))
    q, v, tau = np.array([0.3, -0.2]), np.array([0.1, 0.4]), np.array([0.5, -0.5])
    model.mass_matrix(q), model.bias_forces(q, v), model.forward_dynamics(q, v, tau)   # binds the closures
    assert "forward_dynamics" in model.__dict__
    data = model.data()
    calls = [lambda: model.mass_matrix(q, t), lambda: model.bias_forces(q, v, t),
             lambda: model.forward_dynamics(q, v, tau, t), lambda: model.forward_dynamics(q, v, tau, t=t),
             lambda: model.forward_dynamics(q, v, tau, t, out=np.empty(2)),
             lambda: type(model).mass_matrix(model, q, t), lambda: pipeline.forward(model, data, q, v, tau, t),
             lambda: pipeline.mass_matrix(model, data, q, t),
             lambda: model.forward_dynamics(q, v, tau, t, formulation="reduced_recursive")]
    for call in calls:
        with pytest.raises(ModelError, match="argument 't'"):
            call()


# ------------------------------------------------------------------------------------------- contact laws
CONTACT = ('<contact name="heel" link="l2" xyz="0 0 0" radius="0.05" ground="plane" ground_height="-0.6" '
           'friction_law="none" {law}/>')


@pytest.mark.parametrize("law, attribute, accepted", [
    ('normal_law="hertz" stiffness="1e5" exponent="100"', "exponent", "[1, 3]"),
    ('normal_law="hertz" stiffness="1e5" exponent="0.5"', "exponent", "[1, 3]"),
    ('normal_law="hunt_crossley" stiffness="1e5" restitution="0.5" exponent="3.5"', "exponent", "[1, 3]"),
    ('normal_law="opensim_hunt_crossley" stiffness="1e5" dissipation="1" exponent="40"', "exponent", "[1, 3]"),
    ('normal_law="hertz" stiffness="1e300"', "stiffness", "≤ 1e+18"),
    ('normal_law="flores" stiffness="1e19" restitution="0.5"', "stiffness", "≤ 1e+18"),
    ('normal_law="kelvin_voigt" stiffness="1e5" damping="1e300"', "damping", "≤ 1e+18"),
    ('normal_law="opensim_hunt_crossley" stiffness="1e5" dissipation="1e300"', "dissipation", "≤ 1e+06"),
])
def test_absurd_contact_law_parameters_are_refused_at_parse_time(tmp_path, law, attribute, accepted):
    """exponent 100 at δ = 1 mm gives K δ¹⁰⁰ = 1e5 · 1e-300: the contact was there and pushed nothing. The error names
    the file, the element, the attribute and the accepted range."""
    path = chain(tmp_path, CONTACT.format(law=law))
    with pytest.raises(ModelError) as info:
        biobullet.load_model(path)
    error = info.value
    assert error.file == path and error.element == '<contact name="heel">' and error.attribute == attribute
    assert accepted in str(error)


@pytest.mark.parametrize("exponent", ["1", "3"])
def test_the_ends_of_the_exponent_range_give_hertz_forces(tmp_path, exponent):
    """The accepted range's ends load, and the contact's force is K δⁿ by hand (δ = 0.01 m at the chain's tip)."""
    from biobullet.contact.registry import get_normal_law
    biobullet.load_model(chain(tmp_path, CONTACT.format(law=f'normal_law="hertz" stiffness="1e5" '
                                                          f'exponent="{exponent}"')))
    law = get_normal_law("hertz")(stiffness=1e5, exponent=float(exponent))
    force = law.force(np.array([0.01]), np.array([0.0]))
    assert force[0] == pytest.approx(1e5 * 0.01 ** float(exponent), rel=1e-14)


# ------------------------------------------------------------------------------------------- overflow messages
def test_a_huge_force_is_named_not_a_singular_mass_matrix(tmp_path):
    """M of the chain is regular (Cholesky of its closed form: M = [[0.2075 + …]]): the message was "singular or not
    positive definite … or a result is not finite". Now the direct call names the force and its coordinate, and a
    run names the element whose torque made the state run away."""
    model = biobullet.load_model(chain(tmp_path))
    q, v = np.zeros(2), np.zeros(2)
    np.linalg.cholesky(model.mass_matrix(q))   # regular
    with pytest.raises(SolverError) as info:
        model.forward_dynamics(q, v, np.array([0.0, 1e308]))
    message = str(info.value)
    assert "singular" not in message and "|Q| = 1e+308 on 'j2'" in message and "not finite" in message
    torqued = biobullet.load_model(chain(tmp_path, '<joint_torque joint="j1" value="1e300"/>', name="t.urdf"))
    with pytest.raises(IntegrationError) as info:
        biobullet.simulate(torqued, 0.1, progress=False)
    message = str(info.value)
    assert "singular" not in message and "not finite" in message
    assert 'the largest applied force there is that of <joint_torque joint="j1"> (|Q| = 1e+300 on \'j1\')' in message


def test_a_muscle_whose_force_overflows_is_named(tmp_path):
    """A path zig-zagging 100 times between x = −0.5 and 0.5 m on link a is 99 · 1 m + 0.5 m = 99.5 m long (by hand):
    far beyond the fiber's range, its force is not finite. The error named `<muscle>`; now the muscle and its
    length."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_unseen13_muscle_input import muscle_urdf
    points = "".join(f'<point link="a" xyz="{(-1) ** k * 0.5} 0 0"/>' for k in range(100))
    model = biobullet.load_model(muscle_urdf(tmp_path, inner=points))
    with pytest.raises(IntegrationError) as info:
        biobullet.simulate(model, 0.001, excitations=0.5, progress=False)
    assert '<muscle name="m">: its force or fiber velocity is not finite at a musculotendon length of 99.5 m' \
        in str(info.value)


# ------------------------------------------------------------------------------------------- output size
def _stop_at_once(t, x, xd):
    return t - 1e-4


_stop_at_once.terminal = True


def test_an_output_above_the_ceiling_is_refused_before_the_run(tmp_path):
    """The chain stores 14 numbers a sample (q, v and the two power integrals; x, ẋ; the generalized q, v: 2 each),
    so the documented estimate is 128 + 16 · 14 = 352 B a sample and the 2 GB ceiling allows 5,681,818 samples. On main
    this run (ended early by a terminal event) was accepted."""
    model = biobullet.load_model(chain(tmp_path))
    with pytest.raises(ModelError) as info:
        biobullet.simulate(model, 1.0, t_eval=np.linspace(0.0, 1.0, 6_000_000), events=[_stop_at_once],
                           progress=False)
    message = str(info.value)
    assert "argument 't_eval'" in message and "6,000,000 samples of 14 columns" in message
    assert "at most 5,681,818 samples" in message and "--dt" in message
    trajectory = biobullet.simulate(model, 1.0, t_eval=np.linspace(0.0, 1.0, 5_000_000), events=[_stop_at_once],
                                    progress=False)
    assert trajectory.t[-1] == pytest.approx(1e-4, abs=1e-9)


def test_the_output_estimate_bounds_the_measured_peak(tmp_path):
    """tracemalloc's peak of a run of 200,000 samples stays below the estimate (352 B a sample for the chain)."""
    model = biobullet.load_model(chain(tmp_path))
    biobullet.simulate(model, 0.01, progress=False)   # compiled and warm: the peak is the run's own
    tracemalloc.start()
    try:
        biobullet.simulate(model, 0.2, t_eval=np.linspace(0.0, 0.2, 200_000), initial={"j1": 0.3}, progress=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0.5 * 200_000 * 352 < peak < 200_000 * 352


# ------------------------------------------------------------------------------------------- CLI
def test_the_cli_checks_time_functions_once(tmp_path, monkeypatch):
    from biobullet.integrate import checks
    calls = []
    original = checks.time_function_check

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)
    monkeypatch.setattr(checks, "time_function_check", counted)
    path = chain(tmp_path, '<joint_torque joint="j1" type="expression" expression="sin(t)"/>')
    code, lines = run_cli("simulate", path, "--t-end", "0.01", "--out", str(tmp_path / "run.csv"))
    assert code == 0, lines
    assert len(calls) == 1
    # a pole inside the run is still refused before it, naming the element
    path = chain(tmp_path, '<joint_torque joint="j1" type="expression" expression="1/(t-0.005)"/>', name="p.urdf")
    code, lines = run_cli("simulate", path, "--t-end", "0.01", "--out", str(tmp_path / "pole.csv"))
    assert code == 2 and '<joint_torque joint="j1">' in lines[-1] and not (tmp_path / "pole.csv").exists()


# ------------------------------------------------------------------------------------------- gym
GYM = """
import math, sys
import gymnasium, pybullet
import biobullet.envs
assert "biobullet/CoupledReach-v0" not in gymnasium.registry   # importing registers nothing
from biobullet.envs import register_env
env_id = register_env()
env = gymnasium.make(env_id, steps=5)
env.reset(seed=1)
base = env.unwrapped
ids = {pybullet.getJointInfo(base.bridge.body, j, physicsClientId=base.client)[1].decode(): j
       for j in range(pybullet.getNumJoints(base.bridge.body, physicsClientId=base.client))}
worst = 0.0
for _ in range(5):
    env.step(env.action_space.sample())
    q2, q3, q4 = (pybullet.getJointState(base.bridge.body, ids[f"lbr_iiwa_joint_{k}"],
                                         physicsClientId=base.client)[0] for k in (2, 3, 4))
    worst = max(worst, abs(q3 - (0.5 * math.sin(q2) + 0.2 * q4 * q4)))
env.close()
print(env_id, worst, any("gym_reach" in name for name in sys.modules))
"""


def test_the_environment_registers_from_the_library_without_the_demo():
    """A fresh interpreter that never sees demos/: `biobullet.envs.register_env()` then `gymnasium.make` gives the
    coupled KUKA, whose q3 = 0.5 sin q2 + 0.2 q4² holds to the bridge's 1e-6 rad (read from PyBullet)."""
    pytest.importorskip("gymnasium")
    pytest.importorskip("pybullet")
    env = {**os.environ, "PYTHONPATH": str(PLUGIN)}
    result = subprocess.run([sys.executable, "-c", GYM], cwd=REPO / "plugin", env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    env_id, worst, demo = result.stdout.split()[-3:]
    assert env_id == "biobullet/CoupledReach-v0" and float(worst) <= 1e-6 and demo == "False"


# ------------------------------------------------------------------------------------------- validate
def _arm(length: float, mass: float, heavier: float = 1.0) -> str:
    """Three links on a fixed base, revolute about y, x, y; lengths and COM offsets × `length` (m), masses × `mass`
    (kg), inertias × mass · length² (kg·m²); masses and inertias (not the geometry) × `heavier`."""
    inertia = mass * length ** 2 * heavier
    links = "".join(
        f'<link name="l{k}"><inertial><origin xyz="{0.01 * k * length} 0 {-0.2 * length}"/>'
        f'<mass value="{m * mass * heavier!r}"/><inertia ixx="{0.03 * inertia!r}" iyy="{0.025 * inertia!r}" '
        f'izz="{0.02 * inertia!r}" ixy="{0.001 * inertia!r}" ixz="0" iyz="0"/></inertial></link>'
        for k, m in enumerate((1.0, 2.0, 1.5, 0.5)))
    joints = "".join(
        f'<joint name="j{k}" type="revolute"><parent link="l{k - 1}"/><child link="l{k}"/>'
        f'<origin xyz="0 {0.05 * length} {-0.4 * length}"/><axis xyz="{axis}"/>'
        f'<limit lower="-3" upper="3" effort="10" velocity="10"/></joint>'
        for k, axis in ((1, "0 1 0"), (2, "1 0 0"), (3, "0 1 0")))
    return f'<robot name="arm">{links}{joints}<biobullet><gravity xyz="0 0 -9.81"/></biobullet></robot>'


@pytest.mark.parametrize("scale", [1.0, 1e-3])
def test_validate_max_rel_is_relative_for_a_small_robot(tmp_path, scale):
    """Pinocchio reads a file whose masses and inertias are (1 + δ) times the model's, δ = 1e-4: M is linear in
    them, so M_oracle = (1 + δ) M and the relative error of M is δ / (1 + δ) exactly, at any scale. For the robot
    scaled by 1e-3 (lengths, masses) the column showed δ/(1 + δ) · |M| ≈ 1e-13 and the check passed."""
    pytest.importorskip("pinocchio")
    from biobullet.validate import validate_model
    delta = 1e-4
    model_path, reference = tmp_path / "arm.urdf", tmp_path / "heavier.urdf"
    model_path.write_text(_arm(scale, scale))
    reference.write_text(_arm(scale, scale, 1 + delta))
    model = biobullet.load_model(model_path)
    report = validate_model(model, samples=3, oracles=("pinocchio",), formulations=("reduced",),
                            reference_file=str(reference))
    check = next(c for c in report.checks if c.quantity == "mass_matrix" and c.oracle == "pinocchio")
    assert check.max_rel_error == pytest.approx(delta / (1 + delta), rel=1e-6)
    assert not check.ok
    assert "max rel = |ours − oracle| / the oracle's largest entry" in report.to_table()


# ------------------------------------------------------------------------------------------- link_segment
def test_link_segment_mass_then_bias_solves_the_system_once_for_the_matrix(monkeypatch):
    """`mass_matrix(q)` then `bias_forces(q, v)`: the second reuses the first's M (M depends on q only) and solves
    only v̇(Q = 0) (h = −M v̇). Both against the pipeline's CRBA and RNEA (another algorithm) to 1e-12 relative."""
    from biobullet.dynamics import link_segment
    wanted = []
    original = link_segment.solve_kernel

    def counted(*args):
        wanted.append(int(args[-1]))
        return original(*args)
    monkeypatch.setattr(link_segment, "solve_kernel", counted)
    model = biobullet.load_model("arm7")
    rng = np.random.default_rng(3)
    q, v = rng.uniform(-1, 1, model.nq), rng.uniform(-1, 1, model.nv)
    mass = model.mass_matrix(q, formulation="link_segment")
    bias = model.bias_forces(q, v, formulation="link_segment")
    assert wanted == [link_segment._WANT_MASS_AND_BIAS, link_segment._WANT_RATES]
    expected_mass, expected_bias = model.mass_matrix(q), model.bias_forces(q, v)
    np.testing.assert_allclose(mass, expected_mass, rtol=0, atol=1e-12 * np.abs(expected_mass).max())
    np.testing.assert_allclose(bias, expected_bias, rtol=0, atol=1e-12 * np.abs(expected_bias).max())
    wanted.clear()
    model.bias_forces(q + 0.1, v, formulation="link_segment")   # another configuration: the whole solve
    assert wanted == [link_segment._WANT_MASS_AND_BIAS]


# ------------------------------------------------------------------------------------------- core.jit
CALLER = """
def _scale_py(x):
    return 2.0 * _add(x)   # `_add` is bound by core.jit
"""
RUN = """
import sys
import callee, caller
from biobullet.core import jit
add = callee._add_py if sys.argv[1] == "inlined" else jit.compiled(callee._add_py)
kernel = jit.compiled(caller._scale_py, bind={"_add": add})
value = kernel(1.0)
print(value, sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values()))
"""


def _run_binding(folder: Path, mode: str) -> tuple[float, int, int]:
    env = {**{k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"},
           "PYTHONPATH": os.pathsep.join([str(folder), str(PLUGIN)])}
    result = subprocess.run([sys.executable, "-c", RUN, mode], cwd=folder, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    value, hits, misses = result.stdout.split()[-3:]
    return float(value), int(hits), int(misses)


def test_switching_a_callee_between_inlined_and_called_recompiles_the_caller(tmp_path):
    """One source, bound IR-inlined then called: the caller's machine code differs, so its cached entry must not be
    loaded for the other binding (it was: a cache hit). Each binding's second run loads its own entry."""
    from biobullet.core import jit
    if not jit.ENABLED:
        pytest.skip("numba switched off (BIOBULLET_NUMBA=0): nothing is cached")
    (tmp_path / "caller.py").write_text(textwrap.dedent(CALLER))
    (tmp_path / "callee.py").write_text("def _add_py(x):\n    return x + 1.0\n")
    assert _run_binding(tmp_path, "inlined") == (4.0, 0, 1)
    assert _run_binding(tmp_path, "inlined") == (4.0, 1, 0)
    assert _run_binding(tmp_path, "called") == (4.0, 0, 1)   # main: (4.0, 1, 0), the inlined form's entry
    assert _run_binding(tmp_path, "called") == (4.0, 1, 0)
