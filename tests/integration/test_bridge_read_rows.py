"""The one-call step of a floating base or spherical joints held by joint functions (`Bridge._apply_read_rows`:
PyBullet's raw state → x, ẋ → rows, M, h and the solve → the torques as PyBullet takes them, one kernel call with
its constants passed by address, `bridge.kernels.at_kernel`) against the reference engine: with torques given as
`tau=` and as `generalized=` the bridge converges to the engine run of the same model whose file applies that
torque as a `<joint_torque>` at first order, and after `set_time_step` (which repacks the kernel's step gains) every
step stays clean and holds the joint function to the promise."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pybullet")

from biobullet import load_model  # noqa: E402
from biobullet.bridge import Bridge  # noqa: E402
from biobullet.bridge.outside import PROMISE  # noqa: E402
from biobullet.integrate.engine import simulate  # noqa: E402
from spherical_arms import COUPLED  # noqa: E402  (tests/spherical_arms.py)

ELBOW_TORQUE = 0.7   # N·m on the elbow (an independent coordinate; the pronation follows it)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("read_rows")
    plain, pushed = folder / "coupled.urdf", folder / "coupled_pushed.urdf"
    plain.write_text(COUPLED)
    pushed.write_text(COUPLED.replace("<biobullet>", f'<biobullet><joint_torque joint="elbow" value="{ELBOW_TORQUE}"/>'))
    return plain, pushed


@pytest.mark.parametrize("floating", [False, True])
@pytest.mark.parametrize("argument", ["tau", "generalized"])
def test_read_path_with_torques_converges_to_the_engine(files, floating, argument):
    """The bridge's largest error in (q, v) at t = 0.2 s against the engine (rtol 1e-11) on the file with the
    `<joint_torque>`, for dt = 4, 2, 1 ms with the torque passed to every step: semi-implicit Euler is first order,
    so each halving halves the error (accepted orders 0.85–1.15, as the spherical bridge's own convergence test).
    A torque lost or sent to the wrong joint on this path would leave an O(1) error that does not shrink; the
    errors themselves stay below 2e-2 (measured on the branch: see the print)."""
    plain, pushed = (load_model(path, floating_base=floating) for path in files)
    q0, v0 = plain.initial_state()
    t_end = 0.2
    reference = simulate(pushed, t_end, initial=(q0, v0), rtol=1e-11, atol=1e-11, progress=False)
    given = {"elbow": ELBOW_TORQUE}
    errors = []
    for dt in (4e-3, 2e-3, 1e-3):
        with Bridge(plain, dt=dt, initial=(q0, v0)) as bridge:
            for _ in range(round(t_end / dt)):
                bridge.step(**{argument: given})
            _, q, v = bridge.generalized_state()
            assert bridge.watch.disturbed_steps == 0
        errors.append(max(np.abs(q - reference.q[-1]).max(), np.abs(v - reference.v[-1]).max()))
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    print(argument, "floating" if floating else "fixed", "errors", errors, "orders", orders)
    assert np.all((orders > 0.85) & (orders < 1.15)), (errors, orders)
    assert errors[-1] < 2e-2


@pytest.mark.parametrize("floating", [False, True])
def test_read_path_follows_a_new_time_step(files, floating):
    """set_time_step(0.25 ms) after 100 steps of 1 ms: the kernel's record takes the new step gains, so the next
    200 steps are clean (the watch sees no step off its prediction) and the joint function holds within the
    promise after each (`constraint_residuals`, evaluated by the Python constraint set). With the old gains the
    step-end target aims at a 1 ms step: every step would end off the rows and be projected."""
    model = load_model(files[0], floating_base=floating)
    with Bridge(model, dt=1e-3) as bridge:
        for _ in range(100):
            bridge.step(tau={"elbow": ELBOW_TORQUE})
        bridge.set_time_step(2.5e-4)
        worst = 0.0
        for _ in range(200):
            bridge.step(tau={"elbow": ELBOW_TORQUE})
            worst = max(worst, max(abs(r) for r in bridge.constraint_residuals().values()))
        assert bridge.watch.disturbed_steps == 0 and bridge.watch.projections == 0
        assert worst <= PROMISE
        assert bridge.time == pytest.approx(0.1 + 200 * 2.5e-4)


def test_floating_base_with_pybullets_dynamics_steps_as_the_own_recursions(tmp_path):
    """A floating base without spherical joints held by a joint function, the chain swinging (M changes every step):
    with dynamics="pybullet" M and h come from PyBullet's calls each step (copied into the rows kernel's record; the
    one-call read path, which needs the own recursions, is not taken), with "auto" from biobullet's recursions
    (`own_dynamics`, equal to PyBullet's to round-off). The two runs agree to 1e-9 over 200 steps (measured 1.6e-15);
    the kernel reading M and h left in its record by an earlier step (the read path taken without the own
    recursions) put them 2.5e-5 apart."""
    from nonlinear_pendulum import write_pendulum   # (tests/nonlinear_pendulum.py)
    model = load_model(write_pendulum(tmp_path), floating_base=True)
    q0, v0 = model.initial_state()
    v0 = v0.copy()
    v0[6:] += np.random.default_rng(3).uniform(-2.0, 2.0, model.nv - 6)
    runs = {}
    for dynamics in ("pybullet", "auto"):
        with Bridge(model, dt=1e-3, initial=(q0, v0), dynamics=dynamics) as bridge:
            assert bridge.own_dynamics == (dynamics == "auto")
            states = []
            for _ in range(200):
                bridge.step()
                states.append(np.concatenate(bridge.generalized_state()[1:]))
            runs[dynamics] = np.array(states)
    gap = np.abs(runs["pybullet"] - runs["auto"]).max()
    print("floating pendulum: PyBullet's M and h against the own recursions, largest state difference", gap)
    assert gap < 1e-9
