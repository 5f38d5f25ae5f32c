"""Hostile and careless input, one case per class of issue #16: each gives one clear error (exit 2, one line) or
a correct result — never an internal error, a NaN, unbounded work, or an output that escapes or destroys."""
from __future__ import annotations

import json
import os
import stat
import warnings
from pathlib import Path

import numpy as np
import pytest

from biobullet.core.atomic import OutputError, write_text
from biobullet.core.errors import EvaluationError, SolverError, clean_message, shown
from hostile_cli import CHAIN, chain, one_error, run_cli

REPO = Path(__file__).resolve().parents[3]


# ------------------------------------------------------------------------------------------------ outputs
@pytest.mark.parametrize("kind", ["directory", "fifo", "symlink", "device"])
def test_outputs_never_replace_a_non_regular_file(tmp_path, kind):
    target = tmp_path / "target"
    if kind == "directory":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink":
        (tmp_path / "real.txt").write_text("keep")
        target.symlink_to(tmp_path / "real.txt")
    else:
        target = Path("/dev/null")
    before = os.lstat(target)
    with pytest.raises(OutputError):
        write_text(target, "data")
    after = os.lstat(target)
    assert (before.st_mode, before.st_ino) == (after.st_mode, after.st_ino)   # untouched
    if kind == "symlink":
        assert (tmp_path / "real.txt").read_text() == "keep"   # links are refused, not written through
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]   # no debris


def test_outputs_follow_the_umask_and_keep_an_existing_mode(tmp_path):
    old = os.umask(0o027)
    try:
        write_text(tmp_path / "new.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.txt").st_mode) == 0o640
    existing = tmp_path / "old.txt"
    existing.write_text("a")
    os.chmod(existing, 0o604)
    write_text(existing, "b")
    assert stat.S_IMODE(os.stat(existing).st_mode) == 0o604 and existing.read_text() == "b"


def test_cli_refuses_bad_outputs_and_arguments_before_work(tmp_path):
    model = str(REPO / "urdf" / "arm7.urdf")
    assert "is a directory" in one_error("simulate", model, "--t-end", "0.01", "--out", str(tmp_path))
    assert "device" in one_error("simulate", model, "--t-end", "0.01", "--out", "/dev/null")
    assert "limit" in one_error("simulate", model, "--t-end", "1", "--dt", "1e-12", "--out", str(tmp_path / "a.csv"))
    assert "--seed" in one_error("validate", model, "--seed", "-1")
    # a typo'd count of work items is refused before any work (it would run for days)
    assert "--samples: must be in 1 … 100,000" in one_error("validate", model, "--samples", "1000000000")
    assert "--random: must be in 1 … 10,000" in one_error("validate", "--random", "99999999")
    (tmp_path / "file").write_text("x")
    assert "not a directory" in one_error("bench", "--out", str(tmp_path / "file"))
    assert "no option 'modes'" in one_error("run", "andrews", "--modes", "x", "--out", str(tmp_path / "o"))
    assert "argument 'modes': needs 3 boundary pairs" in one_error("run", "elastic-robot", "--modes", "xx-yy-zz",
                                                                   "--out", str(tmp_path / "o2"))
    assert not (tmp_path / "a.csv").exists() and not (tmp_path / "o").exists() and not (tmp_path / "o2").exists()


# ------------------------------------------------------------------------------------------------ messages
def test_messages_escape_control_characters_and_truncate_long_values(tmp_path):
    path = chain(tmp_path, '<joint_spring joint="j1" stiffness="a&#10;Traceback (most recent call last):&#13;x"/>')
    line = one_error("info", path)
    assert "\\nTraceback" in line and "\\r" in line
    path = chain(tmp_path, f'<joint_spring joint="j1" stiffness="{"7" * 2_000_000}"/>', name="long.urdf")
    line = one_error("info", path)
    assert len(line) < 600 and "more characters" in line
    assert shown("a\x1b[2Jb\u2028") == "'a\\x1b[2Jb\\u2028'"
    assert clean_message("x" * 5000).endswith("(3000 more characters)")


# ------------------------------------------------------------------------------------------------ model files
def test_every_element_is_checked_at_load(tmp_path):
    for extension, attribute in [('<spring link_a="base" link_b="l2" stiffness="-1"/>', "stiffness"),
                                 ('<contact link="l2" normal_law="hunt_crossley" stiffness="1e6"/>', None),
                                 ('<joint_torque joint="j1" type="fourier" period="-1"/>', "period"),
                                 ('<joint_stop joint="j1" stiffness="1"/>', "lower"),
                                 ('<flexible link="l1" boundary="ss" youngs_modulus="nan"/>', None)]:
        line = one_error("info", chain(tmp_path, extension))
        assert attribute is None or f"attribute '{attribute}'" in line, line
        assert one_error("validate", chain(tmp_path, extension)) == line


def test_simulate_refuses_flexible_links_it_would_ignore(tmp_path):
    flexible = ('<flexible link="l1" boundary="ss" youngs_modulus="7e10" shear_modulus="2.7e10" '
                'shear_coefficient="0.85" area="1e-4" second_moment="1e-9" density="2700" length="0.5"/>')
    path = chain(tmp_path, flexible)
    assert run_cli("info", path)[0] == 0
    assert "does not run <flexible>" in one_error("simulate", path, "--t-end", "0.01", "--out",
                                                 str(tmp_path / "t.csv"))


@pytest.mark.parametrize("encoding, message", [("utf-32", "UTF-32"), ("klingon", "unsupported encoding")])
def test_encoding_declarations_are_handled_or_refused(tmp_path, encoding, message):
    text = CHAIN.format(extension="", com="0 0 -0.25")
    path = tmp_path / "e.urdf"
    declaration = f'<?xml version="1.0" encoding="{encoding}"?>'
    path.write_bytes((declaration + text).encode("utf-32" if encoding == "utf-32" else "utf-8"))
    assert message in one_error("info", str(path))
    path.write_bytes(('<?xml version="1.0" encoding="UTF-16"?>' + text).encode("utf-16"))
    assert run_cli("info", str(path))[0] == 0


def test_file_size_and_entities_are_bounded(tmp_path, monkeypatch):
    import biobullet.model.urdf as urdf
    path = chain(tmp_path)
    monkeypatch.setattr(urdf, "MAX_FILE_BYTES", 200)
    assert "limited to" in one_error("info", path)
    monkeypatch.undo()
    bomb = tmp_path / "bomb.urdf"
    bomb.write_text('<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>'
                    + CHAIN.format(extension="", com="0 0 -0.25").replace('name="c"', 'name="&b;"'))
    assert "<!ENTITY>" in one_error("info", str(bomb))


@pytest.mark.parametrize("kind", ["mimic", "function"])
def test_chains_of_1500_dependent_joints_load(tmp_path, kind):
    n = 1500
    links = "".join(f'<link name="l{i}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" '
                    f'ixy="0" ixz="0" iyz="0"/></inertial></link>' for i in range(n + 1))
    mimic = (lambda i: f'<mimic joint="j{i + 1}"/>' if i < n else "") if kind == "mimic" else (lambda i: "")
    joints = "".join(f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
                     f'<axis xyz="0 0 1"/>{mimic(i)}</joint>' for i in range(1, n + 1))
    functions = "" if kind == "mimic" else "<biobullet>" + "".join(
        f'<joint_function joint="j{i}" type="linear" inputs="j{i + 1}" coefficients="1"/>'
        for i in range(1, n)) + "</biobullet>"
    path = tmp_path / "long.urdf"
    path.write_text(f'<robot name="long">{links}{joints}{functions}</robot>')
    from biobullet import load_model
    model = load_model(path)
    assert model.nq == 1 and np.isfinite(model.mass_matrix(np.array([0.3]))).all()


# ------------------------------------------------------------------------------------------------ expressions
@pytest.mark.parametrize("expression, message", [
    ("exp(" * 200 + "j1" + ")" * 200, "nested"),
    ("j1" + "**j1" * 100, "nested"),
    ("j1*" + "9" * 400, "400 digits"),
])
def test_expression_size_is_bounded_at_parse_time(tmp_path, expression, message):
    path = chain(tmp_path, f'<joint_function joint="j2" type="expression" inputs="j1" expression="{expression}"/>')
    line = one_error("info", path)
    assert message in line and "attribute 'expression'" in line


def test_domain_errors_and_poles_raise_instead_of_nan(tmp_path):
    from biobullet import load_model
    model = load_model(chain(tmp_path, '<joint_function joint="j2" type="expression" inputs="j1" '
                                       'expression="log(j1)"/>'))
    with pytest.raises(EvaluationError, match=r"log\(j1\).*t = 0 s.*j1 = 0"):
        model.mass_matrix(np.zeros(1))
    assert np.isfinite(model.mass_matrix(np.array([0.5]))).all()   # inside the domain: a number
    model = load_model(chain(tmp_path, '<joint_function joint="j2" type="expression" inputs="j1" '
                                       'expression="1/(t-0.1)"/>', name="pole.urdf"))
    with pytest.raises(EvaluationError, match=r"t = 0\.1 s"):
        model.forward_dynamics(np.zeros(1), np.zeros(1), t=0.1)
    # the CLI finds the pole before integrating (pre-check over [0, t_end])
    assert "at t = 0.1 s" in one_error("simulate", str(tmp_path / "pole.urdf"), "--t-end", "0.2",
                                                 "--out", str(tmp_path / "p.csv"))


def test_a_torque_pole_between_samples_is_found_before_the_run(tmp_path):
    # 1/(t - 0.1) is finite at every one of the 257 samples of [0, 0.3]: SymPy's singularities() finds the pole
    path = chain(tmp_path, '<joint_torque joint="j1" type="expression" expression="1/(t-0.1)"/>')
    line = one_error("simulate", path, "--t-end", "0.3", "--out", str(tmp_path / "t.csv"))
    assert "singular at t = 0.1 s" in line and "<joint_torque" in line
    assert run_cli("info", path)[0] == 0     # the model itself is valid; only this run would cross the pole


def test_absurd_magnitudes_raise_instead_of_nan(tmp_path):
    from biobullet import load_model
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # one error where M is used, no NumPy overflow warning at load
        model = load_model(chain(tmp_path, com="0 0 1e200"))
    with pytest.raises(SolverError, match="not finite"):
        model.mass_matrix(np.zeros(model.nq))


# ------------------------------------------------------------------------------------------------ budgets
def test_loop_continuation_is_bounded():
    """A jump of 1e12 rad from the warm start would ask for 1e13 continuation substeps: the continuation refuses
    beyond MAX_SUBSTEPS (an unbounded one would not return), and the solve is then retried from a fresh model's
    start (`LoopResolver.solve`), which gives at that state what a fresh model gives."""
    from biobullet import load_model
    model = load_model(REPO / "urdf" / "andrews_squeezer.urdf")
    q, _ = model.initial_state()
    model.mass_matrix(q)
    expected = load_model(REPO / "urdf" / "andrews_squeezer.urdf").mass_matrix(q + 1e12)
    assert np.abs(model.mass_matrix(q + 1e12) - expected).max() <= 1e-9 * np.abs(expected).max()


def test_step_budget_stops_a_stiff_run_and_names_an_implicit_method():
    from biobullet.integrate.stepper import LoopResult, StepFailure, run_loop
    result = LoopResult()
    stiff = lambda t, y: -1e7 * (y - np.cos(t))  # noqa: E731  (λ = -1e7: explicit steps of ~3e-7 s)
    with pytest.raises(StepFailure, match="budget.*Radau"):
        run_loop(stiff, 0.0, np.array([1.0]), 1.0, method="DOP853", rtol=1e-6, atol=1e-9, max_step=np.inf,
                 t_eval=None, events=[], result=result, max_steps=300)
    assert 0 < result.last_t < 1.0 and len(result.t) > 1       # the partial run is kept
    run_loop(stiff, 0.0, np.array([1.0]), 1.0, method="Radau", rtol=1e-6, atol=1e-9, max_step=np.inf,
             t_eval=None, events=[], max_steps=300)             # an implicit method needs few steps


def test_failure_at_a_sample_time_keeps_the_partial_trajectory(tmp_path):
    from biobullet import load_model
    from biobullet.integrate import IntegrationError, simulate
    model = load_model(chain(tmp_path, '<joint_function joint="j2" type="expression" inputs="j1" '
                                       'expression="0.1/(t-0.15)"/>'))
    out = tmp_path / "run.csv"
    with pytest.raises(IntegrationError) as info:
        simulate(model, 0.3, t_eval=np.linspace(0.0, 0.3, 7), out=out)
    partial = Path(str(out) + ".partial.csv")
    assert partial.exists() and "0.15" in str(info.value)
    times = np.loadtxt(partial, delimiter=",", skiprows=1, usecols=0, ndmin=1)
    assert times[0] == 0.0 and 0.1 <= times[-1] < 0.15


# ------------------------------------------------------------------------------------------------ sweeps
@pytest.mark.parametrize("change, message", [
    ({"out": "/tmp/elsewhere"}, "leaves the output folder"),
    ({"out": "../elsewhere"}, "leaves the output folder"),
    ({"name": "../../elsewhere"}, "not a plain name"),
    ({"name": "a\nTraceback"}, "not a plain name"),
    ({"sweep": [{"path": "damping", "start": 0.1, "stop": 1.0, "num": 10 ** 400}]}, "too many"),
    ({"sweep": [{"path": "damping", "start": 0.1, "stop": 1.0, "num": 1e8}]}, "not an integer"),
    ({"fixed": {"stiffness": 10 ** 400}}, "too large"),
])
def test_sweep_configs_stay_confined_and_bounded(tmp_path, change, message):
    config = {"function": "demo.damped_oscillator", "fixed": {"stiffness": 1.0},
              "sweep": [{"path": "damping", "values": [0.1, 0.2]}], **change}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(config))
    line = one_error("sweep", str(path), "--no-progress")
    assert message in line and "\nTraceback" not in line
    assert not (tmp_path.parent / "elsewhere").exists()


@pytest.mark.parametrize("content, message", [(b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
                                              (b'{"function": "caf\xe9"}', "not UTF-8")])
def test_sweep_config_files_that_are_not_configs(tmp_path, content, message):
    path = tmp_path / "c.json"
    path.write_bytes(content)
    assert message in one_error("sweep", str(path))


def test_sweep_out_through_a_symlink_is_refused(tmp_path):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "link").symlink_to(tmp_path)
    config = {"function": "demo.damped_oscillator", "fixed": {"stiffness": 1.0}, "out": "link/escaped",
              "sweep": [{"path": "damping", "values": [0.1]}]}
    (tmp_path / "cfg" / "c.json").write_text(json.dumps(config))
    assert "outside" in one_error("sweep", str(tmp_path / "cfg" / "c.json"))


def test_kinetic_energy_in_linear_time_equals_the_mass_matrix_form():
    # ½ ẋ·RNEA(x, 0, ẋ) (O(n), used for the trajectory's energy record) against ½ ẋᵀ CRBA(x) ẋ (O(n²))
    from biobullet import load_model
    from biobullet.algorithms.vectorized import mass_matrix_and_bias
    from biobullet.integrate.engine import kinetic_energy
    rng = np.random.default_rng(3)
    for name in ("humanoid", "shoulder_rhythm"):
        model = load_model(REPO / "urdf" / f"{name}.urdf")
        q, _ = model.initial_state()
        x = model.joint_configuration(q + 0.1)
        xd = rng.normal(size=model.n_tangent)
        mass = mass_matrix_and_bias(model, x, need_mass=True)[0]
        assert kinetic_energy(model, x, xd) == pytest.approx(0.5 * xd @ mass @ xd, rel=1e-13)


def test_vectorised_gravity_potential_equals_the_sum_over_bodies():
    from biobullet import load_model
    from biobullet.constraints.loops import tree_kinematics
    from biobullet.integrate.engine import gravity_potential
    model = load_model(REPO / "urdf" / "humanoid.urdf")
    q, _ = model.initial_state()
    x = model.joint_configuration(q + 0.2)
    kin, g = tree_kinematics(model, x), np.asarray(model.gravity)
    expected = -sum(b.mass * float(g @ (r @ np.asarray(b.com) + p))
                    for b, r, p in zip(model.bodies, kin.rotations, kin.positions))
    assert gravity_potential(model, x) == pytest.approx(expected, rel=1e-14)


def test_a_time_function_after_a_spherical_joint_is_checked_at_its_inputs_value(tmp_path):
    """The CLI's up-front check of time-dependent joint functions read each input at index (7 if floating else 0)
    + its place among the 1-DOF joints, so below a spherical joint it read the shoulder's quaternion: the pole of
    0.1/(t − elbow − 0.2) with elbow = 0.6 (<initial>) was reported at t = 0.2 s, not 0.8 s. The pole follows from
    the file's numbers by hand: t = 0.6 + 0.2."""
    import spherical_arms
    import biobullet
    from biobullet.integrate.checks import time_function_check
    text = spherical_arms.COUPLED.replace(
        '<joint_function joint="pronation" type="polynomial" inputs="elbow" coefficients="0.1 0.5 -0.3"/>',
        '<joint_function joint="pronation" type="expression" inputs="elbow" expression="0.1/(t - elbow - 0.2)"/>')
    assert "0.1/(t - elbow - 0.2)" in text and '<initial joint="elbow" position="0.6"' in text
    path = tmp_path / "pole_below_ball.urdf"
    path.write_text(text)
    with pytest.raises(biobullet.ModelError, match=r"singular at t = 0\.8 s"):
        time_function_check(biobullet.load_model(path), 1.0)
