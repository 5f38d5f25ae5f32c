"""Joint functions and closed loops from an independent, demanding user (the `<biobullet>` block's functions of
every kind, `<coordinates>`, loops closing to the world, singular and undefined states). Each test is a defect the
probe found, failing on the code before its fix; the numbers are checked against closed forms, not against the
code under test."""
from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import biobullet
from biobullet.core.errors import ModelError, SolverError

ROD = ('<inertial><origin xyz="0.5 0 0"/><mass value="1"/>'
       '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>')

# three unit rods from the origin, the last one's tip pinned to the world at P = (2.2, 0.8): a four-bar whose
# ground link is the world itself (the loop's link_b). Non-Grashof (1 + 2.34 > 1 + 1): the input j0 swings between
# the two toggles where rods 2 and 3 align, |P − (cos j0, sin j0)| = 2.
WORLD_PINNED = f"""<robot name="pinned"><link name="ground"/>
  <link name="l0">{ROD}</link><link name="l1">{ROD}</link><link name="l2">{ROD}</link>
  <joint name="j0" type="continuous"><parent link="ground"/><child link="l0"/><axis xyz="0 0 1"/></joint>
  <joint name="j1" type="continuous"><parent link="l0"/><child link="l1"/><origin xyz="1 0 0"/><axis xyz="0 0 1"/></joint>
  <joint name="j2" type="continuous"><parent link="l1"/><child link="l2"/><origin xyz="1 0 0"/><axis xyz="0 0 1"/></joint>
  <biobullet version="1"><gravity xyz="0 -9.81 0"/>
    <loop name="W" type="planar" link_a="l2" xyz_a="1 0 0" link_b="ground" xyz_b="2.2 0.8 0" normal="0 0 1"/>
    <coordinates names="j0"/>
    <initial joint="j0" position="0.6"/><initial joint="j1" position="-0.5"/><initial joint="j2" position="-0.9"/>
  </biobullet></robot>"""


def _write(tmp_path, text: str, name: str = "model.urdf") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _toggle_angles() -> tuple[float, float]:
    """j0 at the two toggles of WORLD_PINNED: P·u(j0) = (|P|² + 1 − 4) / 2, from |P − u|² = 4."""
    p = np.array([2.2, 0.8])
    phi, half = math.atan2(p[1], p[0]), math.acos((p @ p - 3.0) / 2.0 / np.linalg.norm(p))
    return phi - half, phi + half


@pytest.mark.slow
def test_a_run_into_a_world_loops_toggle_names_the_loop(tmp_path) -> None:
    """Swung at 2 rad/s, the world-pinned four-bar reaches its lower toggle at t ≈ 0.82 s. The run stopped with
    "the state is not finite; state [q, v] = [nan nan]": inside the failing step a stage whose loop solve failed
    returned NaN (to reject the step), the next stage was fed that NaN, and its "state is not finite" replaced the
    loop's own error as the step's kept failure. Now the run names the loop and its singular configuration, at the
    toggle angle of the closed form (the stop is where cond(∂Φ/∂θ_dep) passes 1e8, so |j0 − toggle| ≲ 1e-12;
    measured 1e-15)."""
    model = biobullet.load_model(_write(tmp_path, WORLD_PINNED))
    with pytest.raises(SolverError) as caught:
        biobullet.simulate(model, 3.0, progress=False, initial={"j0_dot": 2.0})
    message = str(caught.value)
    assert "not finite" not in message and "nan" not in message
    assert "<loop> 'W'" in message and re.search(r"singular loop configuration|did not converge", message)
    reported = float(re.search(r"j0 = (-?[0-9.e+-]+)", message).group(1))
    assert abs(reported - _toggle_angles()[0]) <= 1e-8


CHAIN = """<robot name="chain"><link name="base"/>
  <link name="la">{rod}</link><link name="lb">{rod}</link>
  <joint name="a" type="revolute"><parent link="base"/><child link="la"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="b" type="revolute"><parent link="la"/><child link="lb"/><origin xyz="1 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <biobullet version="1">{block}</biobullet></robot>"""


def test_a_function_undefined_at_the_start_is_not_blamed_on_loops(tmp_path) -> None:
    """b = sqrt(a) is not differentiable at the neutral a = 0 and undefined at a = −0.4. A model without any loop
    was refused with "<loop>: the loops () close neither at the neutral configuration nor at the initial state …
    (expected loops whose links can meet)". Now the error names the joint function and the file once, and asks
    for an initial state inside its domain; with one (a = 0.4) the model loads and b = √0.4."""
    function = '<joint_function joint="b" type="expression" inputs="a" expression="sqrt(a)"/>'
    for initial in ("", '<initial joint="a" position="-0.4"/>'):
        path = _write(tmp_path, CHAIN.format(rod=ROD, block=function + initial))
        with pytest.raises(ModelError) as caught:
            biobullet.load_model(path)
        message = str(caught.value)
        assert "<loop>" not in message and "loops ()" not in message
        assert '<joint_function joint="b">' in message and message.count(path) == 1
        assert "an <initial> state inside the joint functions' domain" in message
    path = _write(tmp_path, CHAIN.format(rod=ROD, block=function + '<initial joint="a" position="0.4"/>'))
    model = biobullet.load_model(path)
    assert abs(model.joint_positions(model.initial_state()[0])[1] - math.sqrt(0.4)) <= 1e-15


def test_a_velocity_of_a_loops_dependent_joint_is_refused(tmp_path) -> None:
    """`<initial joint="j1" velocity="7">` on a joint the loop closes was read by nothing: the run started with
    j1's rate G v₀ (here 0: j0 at rest), not 7, and said nothing. Its position stays the assembly's first guess, and
    velocity="0" (the bundled loop files' habit) stays accepted; a nonzero one is one ModelError naming the element
    and the attribute."""
    text = WORLD_PINNED.replace('<initial joint="j1" position="-0.5"/>',
                                '<initial joint="j1" position="-0.5" velocity="{}"/>')
    with pytest.raises(ModelError) as caught:
        biobullet.load_model(_write(tmp_path, text.format(7)))
    assert caught.value.attribute == "velocity" and '<initial joint="j1">' in str(caught.value)
    assert "closed by a loop" in str(caught.value)
    model = biobullet.load_model(_write(tmp_path, text.format(0), "zero.urdf"))
    q0, v0 = model.initial_state()
    assert q0.tolist() == [0.6] and v0.tolist() == [0.0]


@pytest.mark.slow
def test_a_run_whose_steps_collapse_at_a_toggle_names_the_loop(tmp_path) -> None:
    """The crank–rocker driven by its rocker into the toggle (crank and coupler aligned, closed form
    ψ* = acos((16 − 9 − 6.25) / (2·3·2.5))): the steps shrink to nothing before cond₁(∂Φ/∂θ_dep) reaches the
    resolver's 1e8, and the run stopped with SciPy's bare "Required step size is less than spacing between numbers"
    (tests/unit/hostile/test_second_campaign.py's toggle test failed so on `merge`), after a warning that the
    problem looked stiff and a switch to Radau. Now the stiffness watch sees the toggle and the failure names the
    loop and its near-singular configuration, without the stiffness warning, and the last accepted rocker angle is the closed form's toggle (cond grows
    like |ψ − ψ*|^(−1/2): 4e3 at 1e-6 rad, so a stop at cond ≥ 1e4 is within 1.6e-7 rad)."""
    from closed_chains import crank_rocker_into_toggle
    model = biobullet.load_model(_write(tmp_path, crank_rocker_into_toggle()))
    out = tmp_path / "run.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # (it was called stiff, and Radau tried: a toggle is no stiffness)
        with pytest.raises(SolverError) as caught:
            biobullet.simulate(model, 0.05, progress=False, out=out)
    message = str(caught.value)
    assert "<loop> 'C'" in message and "singular loop configuration" in message
    header = (tmp_path / "run.csv.partial.csv").read_text().splitlines()[0].split(",")
    partial = np.loadtxt(str(out) + ".partial.csv", delimiter=",", skiprows=1, ndmin=2)
    toggle = math.acos((16 - 9 - 6.25) / (2 * 3 * 2.5))
    assert abs(partial[-1, header.index("rocker_j")] - toggle) <= 1.6e-7


DRIVEN = CHAIN.replace('type="revolute"', 'type="continuous"').format(rod=ROD, block=(
    '<gravity xyz="0 -9.81 0"/><joint_function joint="b" type="fourier" period="0.5" a0="0.2" a="0.6" b="0"/>'
    '<initial joint="a" position="0.3"/>'))


def test_the_energy_balance_of_a_time_driven_model_is_announced(tmp_path) -> None:
    """b = 0.2 + 0.6 cos(4πt) swings a rod on a free pendulum: the drive does work, which the energy record does
    not hold, so `energy_balance()` moved by joules (4.3 J over 1 s) and read as a broken run, silently (the plot
    labelled it "constant if correct", the notebook view showed the drift). Now it warns, naming the driven joint;
    the same model without the drive (b = 0.2 + 0.6 constant, `expression`) stays silent and conserves to 1e-8 of
    its kinetic-energy swing (rtol 1e-9; measured 4.5e-9)."""
    model = biobullet.load_model(_write(tmp_path, DRIVEN))
    run = biobullet.simulate(model, 1.0, progress=False)
    with pytest.warns(UserWarning, match=r"joints b are driven by time") as record:
        balance = run.energy_balance()
    assert len(record) == 1 and np.ptp(balance) > 0.1
    assert "time-driven joints do work" in run._repr_html_()
    still = DRIVEN.replace('type="fourier" period="0.5" a0="0.2" a="0.6" b="0"',
                           'type="expression" inputs="" expression="0.8"')
    model = biobullet.load_model(_write(tmp_path, still, "still.urdf"))
    run = biobullet.simulate(model, 1.0, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        balance = run.energy_balance()
    swing = np.ptp(run.energy["kinetic"])
    assert swing > 1.0 and np.ptp(balance) <= 1e-8 * swing


def test_a_piecewise_linear_functions_knot_jump_is_announced_and_exact(tmp_path) -> None:
    """b follows a broken line of a (`spline degree="1"`, OpenSim's PiecewiseLinearFunction) with slopes 1.3 and
    −1 about the knot a = 0. Crossing it, the run keeps v = ȧ (no impact is modelled), so ḃ jumps and the kinetic
    energy with it: `energy_balance()` stepped by −27.4 J there, silently. Now it warns, naming b; and the step is
    exactly the closed form ½ ȧ² (G₊ᵀ M G₊ − G₋ᵀ M G₋) with Pinocchio's tree mass matrix at the knot (the rate at
    the crossing interpolated between the two steps around it, 7e-8 s apart: rtol 1e-6; measured 1.5e-9), the
    balance constant elsewhere (≤ 1e-7 J)."""
    import pinocchio as pin
    block = ('<gravity xyz="0 -9.81 0"/><joint_function joint="b" type="spline" degree="1" inputs="a" '
             'x="-1 0 1" y="0.5 -0.5 0.8"/><initial joint="a" position="0.5" velocity="-3"/>')
    path = _write(tmp_path, CHAIN.replace('type="revolute"', 'type="continuous"').format(rod=ROD, block=block))
    run = biobullet.simulate(biobullet.load_model(path), 0.4, progress=False, t_eval="steps")
    with pytest.warns(UserWarning, match=r"joints b follow piecewise-linear functions") as record:
        balance = run.energy_balance()
    assert len(record) == 1
    a = run.q[:, 0]
    k = int(np.argmax(a < 0.0))   # the first step past the knot
    rate = np.interp(0.0, [a[k], a[k - 1]], [run.v[k, 0], run.v[k - 1, 0]])
    pin_model = pin.buildModelFromUrdf(path)
    mass = pin.crba(pin_model, pin_model.createData(), np.array([1.0, 0.0, math.cos(-0.5), math.sin(-0.5)]))
    mass = np.triu(mass) + np.triu(mass, 1).T
    before, after = np.array([1.0, 1.3]), np.array([1.0, -1.0])
    expected = 0.5 * rate ** 2 * (after @ mass @ after - before @ mass @ before)
    assert abs((balance[k] - balance[k - 1]) - expected) <= 1e-6 * abs(expected) and abs(expected) > 10.0
    assert np.ptp(balance[:k]) <= 1e-7 and np.ptp(balance[k:]) <= 1e-7


@pytest.mark.slow
def test_two_loops_sharing_a_link_run_into_a_toggle_named(tmp_path) -> None:
    """The crank–rocker four-bar with a second dyad (1.6 + 1.5 m, from a world pivot G₂) closing on the coupler's
    midpoint P: loops C and D share the coupler. Driven at 1 rad/s, the dyad straightens (|P − G₂| = 3.1) at
    t ≈ 0.84 s and the run stopped with "loop closure did not converge … r2_j = −165.4, r2b_j = 339.8" — the
    prediction thrown far by the growing sensitivity — with nothing saying why. Now the failure adds that the
    loops are near a singular configuration (cond₁ at the last accepted state 1.1e7), and that state is the closed
    form's toggle: |P − G₂| = 3.1 to 1e-9 m (measured 2e-13)."""
    from closed_chains import coupler_midpoint as midpoint, two_loops_sharing_a_link
    text, pivot = two_loops_sharing_a_link(tmp_path / "one.urdf")
    model = biobullet.load_model(_write(tmp_path, text, "two.urdf"))
    with pytest.raises(SolverError) as caught:
        biobullet.simulate(model, 2.0, progress=False, initial={"crank_j_dot": 1.0})
    message = str(caught.value)
    assert re.search(r"<loop> '[CD]', '[CD]': near a singular loop configuration", message)
    run = caught.value.trajectory
    tip = midpoint(run.column("crank_j")[-1], run.column("coupler_j")[-1])
    assert abs(np.linalg.norm(tip - pivot) - 3.1) <= 1e-9
