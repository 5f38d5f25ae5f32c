"""The bridge's own M and h and its compiled explicit-function path.

(1) biobullet's compiled recursions (`algorithms.compiled_kernels.tree_dynamics`, packed with the inertia PyBullet
    stores for the links) equal PyBullet's calculateMassMatrix / calculateInverseDynamics for the bodies the
    bridge simulates — every bundled fixed-base model in PyBullet's dof order, the nonlinear pendulum, and a link
    without <inertial> (PyBullet's default mass 1, unit inertia) — at random states, relative 1e-12 (round-off;
    measured ≈ 1e-15).
(2) The one-call explicit-function path (`Bridge._apply_rows`: rows, M, h, Schur solve) gives the same run as the
    general path with PyBullet's M and h (per-row plug-in jets, `kkt_torque`) to 1e-9 rad over 1 s, and holds the
    polynomial coupling to ≤ 1e-6 rad at dt = 1 ms over 5 s, the expression pendulum's (its tape in the kernel)
    over 10 s, also with an expression of another function's output; loop rows and an expression row in one call.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.bridge import Bridge
from biobullet.bridge import bridge as bridge_module

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from nonlinear_pendulum import pendulum_text, write_pendulum  # noqa: E402

#: fixed-base bundled models whose PyBullet dof order is the URDF joint order (the fast paths' condition; the
#: prosthesis's branched tree is numbered differently by PyBullet and keeps PyBullet's M and h)
FIXED_BASE = ["shoulder_rhythm.urdf", "shoulder_simplified.urdf", "arm7.urdf", "fourbar_knee.urdf",
              "andrews_squeezer.urdf"]
POLYNOMIAL = 'type="polynomial" inputs="j1" coefficients="0.1 0.5 -0.3 0.2"'
EXPRESSION = 'type="expression" inputs="j1 j2" expression="0.5*sin(j1) + 0.3*j2**2"'


def _polynomial_pendulum(tmp_path: Path, *, inertial: bool = True) -> Path:
    text = pendulum_text().replace(EXPRESSION, POLYNOMIAL)
    if not inertial:   # the last link without <inertial>: PyBullet gives it mass 1 and unit inertia
        start = text.index('<link name="l3">')
        end = text.index("</link>", start) + len("</link>")
        text = text[:start] + '<link name="l3"/>' + text[end:]
    path = tmp_path / f"polynomial_pendulum_{inertial}.urdf"
    path.write_text(text)
    return path


def _compare(bridge, n_states: int = 5) -> float:
    p, c, b = bridge.pybullet, bridge.client, bridge.body
    kernel, meta, body, gravity = bridge._own
    n = bridge.model.n_tangent
    rng = np.random.default_rng(11)
    worst = 0.0
    for _ in range(n_states):
        x, xd = rng.uniform(-2.0, 2.0, n), rng.uniform(-3.0, 3.0, n)
        mass = np.asarray(p.calculateMassMatrix(b, x.tolist(), physicsClientId=c))
        bias = np.asarray(p.calculateInverseDynamics(b, x.tolist(), xd.tolist(), [0.0] * n, physicsClientId=c))
        own_mass, own_bias = kernel(meta, body, x, xd, xd, gravity, n, True, True, False)
        worst = max(worst, np.abs(own_mass - mass).max() / np.abs(mass).max(),
                    np.abs(own_bias - bias).max() / np.abs(bias).max())
    return worst


@pytest.mark.parametrize("name", FIXED_BASE)
def test_own_mass_and_bias_equal_pybullets(name):
    model = biobullet.load_model(ROOT / "urdf" / name)
    assert not model.floating_base
    with Bridge(model, dt=1e-3) as bridge:
        assert bridge.own_dynamics
        assert _compare(bridge) <= 1e-12


def test_branched_prosthesis_keeps_pybullets_dynamics():
    with Bridge(biobullet.load_model(ROOT / "urdf" / "prosthesis_fourbar.urdf"), dt=1e-3) as bridge:
        assert not bridge._dof_identity and not bridge.own_dynamics


def test_own_dynamics_use_pybullets_default_inertia(tmp_path):
    model = biobullet.load_model(_polynomial_pendulum(tmp_path, inertial=False))
    with Bridge(model, dt=1e-3) as bridge:
        assert bridge.own_dynamics and bridge._rows_fast
        assert _compare(bridge) <= 1e-12
    with Bridge(model, dt=1e-3, dynamics="pybullet") as bridge:
        assert not bridge.own_dynamics


def test_compiled_rows_path_equals_general_path_and_holds_the_coupling(tmp_path):
    model = biobullet.load_model(_polynomial_pendulum(tmp_path))
    finals = []
    for fast in (True, False):
        with Bridge(model, dt=1e-3, dynamics="auto" if fast else "pybullet") as bridge:
            assert bridge._rows_fast
            bridge._rows_fast = fast
            for _ in range(1000):
                bridge.step()
            finals.append(np.concatenate(bridge.state()[1:]))
    assert np.abs(finals[0] - finals[1]).max() <= 1e-9
    with Bridge(model, dt=1e-3) as bridge:
        worst = 0.0
        for _ in range(5000):
            bridge.step()
            worst = max(worst, abs(bridge.constraint_residuals()["j3.function"]))
    assert worst <= 1e-6


def _composed_pendulum(tmp_path: Path) -> Path:
    """j2 an expression driver of t, j3 = 0.5 sin(j1) + 0.3 j2²: an expression of another function's output."""
    text = pendulum_text().replace('<initial joint="j2" position="-0.6" velocity="0"/>', "").replace(
        "<joint_function ", '<joint_function joint="j2" type="expression" expression="-0.6 + 0.3*sin(2*t)"/>'
                            "<joint_function ")
    path = tmp_path / "composed_pendulum.urdf"
    path.write_text(text)
    return path


@pytest.mark.parametrize("composed", [False, True])
def test_expression_rows_path_equals_general_path_and_holds_the_coupling(tmp_path, composed):
    """The expression pendulum (and its composed, time-driven variant) on the one-call path — the expression's
    tape in the kernel, own M and h — against the general path with the per-row `ExpressionFunction.evaluate` and
    PyBullet's M and h: same state to 1e-9 over 1 s; the joint-function residual stays ≤ 1e-6 at dt = 1 ms over
    10 s (measured 7.3e-7 rad on the pendulum)."""
    model = biobullet.load_model(_composed_pendulum(tmp_path) if composed else write_pendulum(tmp_path))
    finals = []
    for fast in (True, False):
        with Bridge(model, dt=1e-3, dynamics="auto" if fast else "pybullet") as bridge:
            assert bridge._rows_fast
            bridge._rows_fast = fast
            if not fast:
                bridge.constraints._table = None   # per-row `ExpressionFunction.evaluate`
            for _ in range(1000):
                bridge.step()
            finals.append(np.concatenate(bridge.state()[1:]))
    assert np.abs(finals[0] - finals[1]).max() <= 1e-9
    with Bridge(model, dt=1e-3) as bridge:
        worst = 0.0
        for _ in range(10000):
            bridge.step()
            worst = max(worst, max(abs(r) for r in bridge.constraint_residuals().values()))
    assert worst <= 1e-6


def test_undefined_expression_on_the_bridge_is_reported(tmp_path):
    """An expression that leaves its domain during the run: the compiled step declines and the general path
    raises the EvaluationError naming the expression (never NaN torques)."""
    from biobullet.core.errors import EvaluationError
    path = tmp_path / "log_pendulum.urdf"
    path.write_text(pendulum_text("log(1.3 - j1) + 0.3*j2**2"))   # undefined for j1 ≥ 1.3
    with Bridge(biobullet.load_model(path), dt=1e-3) as bridge:
        bridge.pybullet.resetJointState(bridge.body, bridge._joint_list[0], 1.4, physicsClientId=bridge.client)
        with pytest.raises(EvaluationError, match=r"log\(1.3 - j1\)"):
            bridge.step()


def test_compiled_loop_path_equals_general_path(monkeypatch):
    """Andrews' squeezer (3 planar loops, a spring, a joint torque) for 0.005 s at dt = 1e-5 s: the one-call
    path (loop rows, spring and M, h in the kernel) against the general path (Python force hook, PyBullet's M,
    h, per-row loop evaluation): same state to 1e-9 of its scale, residual ≤ 1e-8 m. Both evaluate the loops' end
    point every step (LOOP_SKIP_BELOW = 0; the one-call path skips it where Taylor's miss is below 1e-9 m, which
    changes ẋ by up to miss/dt: 4.9e-5 rad/s after 500 steps here)."""
    monkeypatch.setattr(bridge_module, "LOOP_SKIP_BELOW", 0.0)
    model = biobullet.load_model(ROOT / "urdf" / "andrews_squeezer.urdf")
    finals, worst = [], 0.0
    for fast in (True, False):
        with Bridge(model, dt=1e-5, dynamics="auto" if fast else "pybullet") as bridge:
            assert bridge._rows_fast and bridge._compiled_forces is not None
            bridge._rows_fast = fast
            for _ in range(500):
                bridge.step()
                if fast:
                    worst = max(worst, max(abs(r) for r in bridge.constraint_residuals().values()))
            finals.append(np.concatenate(bridge.state()[1:]))
    assert np.abs(finals[0] - finals[1]).max() <= 1e-9 * np.abs(finals[1]).max()
    assert worst <= 1e-8


def test_linear_path_with_own_dynamics_equals_pybullets():
    """Shoulder rhythm (constant rows, null-space path) for 0.5 s at dt = 1 ms: M, h and the solve in one call
    (`kernels.linear_own_kernel`) against PyBullet's M and h with the same null-space kernel — same state to
    1e-9 of its scale (measured 1.7e-10: round-off of M, h grown over 500 steps of free fall)."""
    model = biobullet.load_model(ROOT / "urdf" / "shoulder_rhythm.urdf")
    finals = []
    for dynamics in ("auto", "pybullet"):
        with Bridge(model, dt=1e-3, dynamics=dynamics) as bridge:
            assert bridge.uses_null_space and (bridge._linear_own is not None) == (dynamics == "auto")
            for _ in range(500):
                bridge.step()
            finals.append(np.concatenate(bridge.state()[1:]))
    assert np.abs(finals[0] - finals[1]).max() <= 1e-9 * np.abs(finals[1]).max()


def test_loop_and_expression_rows_in_one_call(tmp_path):
    """The four-bar knee with a foot on the anterior link whose ankle follows a time-dependent expression of the
    independent knee_A (a model mixing `<loop>` rows and an expression row): the one-call loop kernel
    (`kernels.loop_torque_kernel`, the expression's tape in it) against the general path with the per-row
    `evaluate` jets and PyBullet's M and h over 0.2 s at dt = 1e-4 s: same state to 1e-9 of its scale (measured
    2.5e-12 relative to 1.6 over 0.3 s), residuals ≤ 1e-8 (measured 2.6e-12)."""
    text = (ROOT / "urdf" / "fourbar_knee.urdf").read_text()
    foot = ('<link name="foot"><inertial><origin xyz="0.05 0 -0.02"/><mass value="0.8"/>'
            '<inertia ixx="0.002" ixy="0" ixz="0" iyy="0.003" iyz="0" izz="0.002"/></inertial></link>'
            '<joint name="ankle" type="continuous"><parent link="anterior_link"/><child link="foot"/>'
            '<origin xyz="0.019 0 -0.083"/><axis xyz="0 1 0"/></joint>')
    function = ('<joint_function joint="ankle" type="expression" inputs="knee_A" '
                'expression="0.3*sin(knee_A) - 0.1*knee_A**2 + 0.05*sin(3*t)"/>')
    assert '<biobullet version="1">' in text and '<coordinates names="knee_A"/>' in text
    text = text.replace('<biobullet version="1">', foot + '<biobullet version="1">').replace(
        '<coordinates names="knee_A"/>', '<coordinates names="knee_A"/>' + function)
    path = tmp_path / "knee_foot.urdf"
    path.write_text(text)
    model = biobullet.load_model(path)
    finals, worst = [], 0.0
    for fast in (True, False):
        with Bridge(model, dt=1e-4, dynamics="auto" if fast else "pybullet") as bridge:
            assert bridge._rows_fast and bridge._loops_data is not None
            bridge._rows_fast = fast
            if not fast:
                bridge.constraints._table = None   # per-row `ExpressionFunction.evaluate`
            for _ in range(2000):
                bridge.step()
                worst = max(worst, max(abs(r) for r in bridge.constraint_residuals().values()))
            finals.append(np.concatenate(bridge.state()[1:]))
    assert np.abs(finals[0] - finals[1]).max() <= 1e-9 * np.abs(finals[1]).max()
    assert worst <= 1e-8


@pytest.mark.parametrize("name", ["humanoid.urdf", "pitching_arm.urdf"])
def test_floating_base_own_dynamics_equal_pybullets_through_the_map(name):
    """A floating base's general path takes biobullet's compiled M and h (`Bridge._mass_and_bias`): at a state the
    construction check did not see, they equal PyBullet's calculateMassMatrix / calculateInverseDynamics converted by
    `PyBulletMap`'s tangent maps (tests/unit/test_conventions.py checks the maps against PyBullet's own kinematics)
    to 1e-9 relative, the construction check's tolerance (round-off of PyBullet's diagonalised inertia)."""
    import pybullet as p
    model = biobullet.load_model(ROOT / "urdf" / name, floating_base=True)
    with Bridge(model, dt=1e-3) as bridge:
        assert bridge.own_dynamics
        rng = np.random.default_rng(7)
        x, xd = rng.uniform(-1.0, 1.0, model.n_config), rng.uniform(-1.0, 1.0, model.n_tangent)
        x[3:7] /= np.linalg.norm(x[3:7])
        own_mass, own_bias = bridge._mass_and_bias(x, xd)
        mass = bridge.map.mass_matrix_from_pybullet(np.asarray(p.calculateMassMatrix(
            bridge.body, bridge.map.joints_to_pybullet(x[7:]), physicsClientId=bridge.client)))
        bias = bridge.map.inverse_dynamics(x, xd, np.zeros(model.n_tangent))
        assert np.abs(own_mass - mass).max() <= 1e-9 * np.abs(mass).max()
        assert np.abs(own_bias - bias).max() <= 1e-9 * max(np.abs(bias).max(), 1.0)
