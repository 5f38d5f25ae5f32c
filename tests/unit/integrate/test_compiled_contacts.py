"""Ground contacts in the engine's compiled right-hand sides (`CompiledReducedRHS`, `CompiledReducedRHS` with
`contact.kernels._ground_forces_py`) checked against physics, not against the callback stage (the law kernels are
checked against their papers' closed forms in `tests/unit/contact/test_contact_kernels.py`).

- Power balance of one ẏ (`rhs_oracles.assert_power_balance`): d/dt (T + V_gravity + V_elastic) along ẏ, by
  central finite differences of the energy functions, equals −P_dissipated (ẏ's last entry) to 1e-6 of the power
  terms (a 1e-4 error of v̇ fails it) — at every discrete state the
  engine's events can set (before onset, at δ = 0, inside, inactive inside: free fall exactly, active outside;
  switched Coulomb sliding, resting, stale slip direction), on a ball drop per normal law, a planar chain with
  three contacts, a free-floating spinning ball and the four-bar knee's loop map with a heel contact.
- Whole compiled ball-drop runs against closed forms: free fall to the first onset, ballistic flight between
  bounces, momentum (impulse) and energy (normal dissipation) of each logged contact interval, energy balance.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from biobullet.contact.element import Contact, contact_intervals
from biobullet.contact.geometry import GroundPlane
from biobullet.core.frozen import set_parameter
from biobullet.contact.normal import HuGuo
from biobullet.contact.testbed import drop_urdf
from biobullet.loader import load_text
from biobullet.integrate.compiled_rhs import CompiledReducedRHS
from biobullet.integrate.engine import System, simulate
from rhs_oracles import assert_power_balance, scaled_accelerations


#: every built-in normal law (the restitution laws need δ̇⁻ from the state, Kelvin–Voigt clips, the smooth one acts
#: outside contact, with adhesion it pulls)
DROP_LAWS = {
    "kelvin_voigt": {"normal_law": "kelvin_voigt", "stiffness": "2e5", "damping": "300"},
    "kelvin_voigt_smooth": {"normal_law": "kelvin_voigt_smooth", "stiffness": "2e5", "damping": "300",
                            "smoothing": "3e3", "adhesion": "true"},
    "hertz": {"normal_law": "hertz", "stiffness": "1e6", "exponent": "1.5"},
    "hunt_crossley": {"normal_law": "hunt_crossley", "stiffness": "1e5", "restitution": "0.8"},
    "flores": {"normal_law": "flores", "stiffness": "1e5", "restitution": "0.5", "exponent": "1.3"},
    "hu_guo": {"normal_law": "hu_guo", "stiffness": "2e6", "restitution": "0.3", "min_impact_velocity": "0.05"},
}


def _contacts(system) -> list[Contact]:
    return [e for e in system.elements if type(e) is Contact]


def _set_state(systems, k: int, *, active: bool, impact: float = 0.0, resting: bool = True,
               direction=None) -> None:
    """The same discrete state on contact k of every system (what the engine's event actions would set)."""
    for system in systems:
        contact = _contacts(system)[k]
        state = contact.state
        state.active, state.impact_velocity, state.resting = active, impact, resting
        state.slip_direction = None if direction is None else np.asarray(direction, dtype=float)
        contact._last = None   # the generic element's per-state cache (its event action clears it too)


@pytest.mark.parametrize("law", sorted(DROP_LAWS))
def test_ball_drop_rhs_power_balance_at_every_contact_state(tmp_path: Path, law: str) -> None:
    """The compiled ẏ at every discrete contact state: power balance where the contact acts (active, or always for
    the smooth law), free fall −g exactly where it does not."""
    model = load_text(drop_urdf(DROP_LAWS[law]), tmp_path)
    compiled = System(model, None)
    assert isinstance(compiled._compiled, CompiledReducedRHS)
    systems = (compiled,)
    r = 0.05
    cases = [  # (height of the centre, velocity, active, δ̇⁻ stored at onset)
        (r + 0.02, -1.3, False, 0.0),     # before onset, falling
        (r, -1.3, True, 1.3),             # at onset (δ = 0, approaching)
        (r - 2e-4, -0.9, True, 1.3),      # inside, compressing
        (r - 1e-3, 0.2, True, 1.3),       # inside, restituting
        (r - 3e-4, 0.7, True, 1.3),       # inside, fast rebound (the damped laws clip at zero)
        (r - 1e-4, -0.02, True, 0.02),    # slow impact: the restitution floor δ̇⁻_min
        (r - 2e-4, -0.9, False, 0.0),     # inside but not active yet (a trial stage beyond the onset)
        (r + 1e-4, 0.8, True, 1.3),       # outside but still active (separation not yet located)
    ]
    forced = 0
    for height, velocity, active, impact in cases:
        _set_state(systems, 0, active=active, impact=impact)
        y = compiled.initial_vector({"drop": height}, 0.0)
        y[1] = velocity
        out = compiled._compiled(0.1, np.array(y))
        assert out is not None, "the compiled call handed over to the callback stage"
        if active or law == "kelvin_voigt_smooth":   # the smooth law acts whatever the discrete state
            assert_power_balance(compiled, 0.1, y, out, 1e-11 if height == r else 1e-7)
        else:
            assert out[1] == pytest.approx(-9.81, rel=1e-14)
        forced += abs(out[1] + 9.81) > 1e-9
    assert forced >= 3, "the contact force acted in too few cases: the comparison would be vacuous"


def _planar_chain(tmp_path: Path) -> Path:
    """Three links hinged about y in the x-z plane, hanging from a slider on x; a point contact at link 2's tip
    (switched Coulomb: sliding/resting states) and a sphere at link 3's tip (Stribeck), a third (regularized) on a
    tilted plane, so that friction acts in the plane and τ = J_pᵀ F spans revolute and prismatic columns."""
    inertia = '<inertia ixx="0.01" ixy="0" ixz="0.001" iyy="0.012" iyz="0" izz="0.004"/>'
    links = ['<link name="world"/>',
             f'<link name="cart"><inertial><origin xyz="0 0 0"/><mass value="2"/>{inertia}</inertial></link>']
    joints = [('<joint name="slide" type="prismatic"><parent link="world"/><child link="cart"/>'
               '<origin xyz="0 0 0.5"/><axis xyz="1 0 0"/><limit lower="-5" upper="5" effort="1e9" velocity="1e9"/>'
               '</joint>')]
    for k in range(1, 4):
        links.append(f'<link name="l{k}"><inertial><origin xyz="0.01 0 -0.1"/><mass value="{1.0 + 0.2 * k}"/>'
                     f'{inertia}</inertial></link>')
        parent = "cart" if k == 1 else f"l{k - 1}"
        joints.append(f'<joint name="j{k}" type="continuous"><parent link="{parent}"/><child link="l{k}"/>'
                      f'<origin xyz="0 0 {-0.2 if k > 1 else 0}"/><axis xyz="0 1 0"/></joint>')
    contacts = ('<contact name="tip2" link="l2" xyz="0 0 -0.2" normal_law="hunt_crossley" stiffness="1e5" '
                'restitution="0.7" friction_law="coulomb" mu="0.6"/>'
                '<contact name="tip3" link="l3" xyz="0 0 -0.2" radius="0.03" normal_law="hertz" stiffness="3e5" '
                'friction_law="stribeck" mu="0.3" mu_static="0.5" stribeck_velocity="0.05" v0="1e-3" '
                'viscous="0.2"/>'
                '<contact name="knee" link="l1" xyz="0.02 0 -0.2" radius="0.01" normal_law="kelvin_voigt" '
                'stiffness="5e4" damping="80" friction_law="regularized" mu="0.5" v0="0.01" '
                'ground_normal="0.3 0 1" ground_height="-0.1"/>')
    text = ('<robot name="planar_contacts">' + "".join(links) + "".join(joints)
            + f'<biobullet version="1"><gravity xyz="0 0 -9.81"/>{contacts}</biobullet></robot>')
    path = tmp_path / "planar_contacts.urdf"
    path.write_text(text)
    return path


def test_planar_chain_with_friction_rhs_power_balance(tmp_path: Path) -> None:
    """The compiled ẏ of the planar chain with three contacts (Coulomb sliding, resting, stale slip direction;
    Stribeck; a tilted plane) closes the power balance in every discrete state."""
    import biobullet
    model = biobullet.load_model(_planar_chain(tmp_path))
    compiled = System(model, None)
    assert isinstance(compiled._compiled, CompiledReducedRHS)
    systems = (compiled,)
    rng = np.random.default_rng(7)
    planes = [contact.ground for contact in _contacts(compiled)[:2]]
    tangential = {contact.name: 0 for contact in _contacts(compiled)}
    modes = [  # contact 0 (switched Coulomb): sliding along the slip, resting, stale direction (reversed slip)
        {"active": True, "impact": 0.8, "resting": False, "direction": None},
        {"active": True, "impact": 0.8, "resting": True, "direction": None},
        {"active": True, "impact": 0.01, "resting": False, "direction": (-1.0, 0.0, 0.0)},
        {"active": False, "impact": 0.0, "resting": True, "direction": None},
    ]
    friction_seen = 0
    for trial in range(12):
        y = compiled.initial_vector({}, 0.0)
        y[:4] = rng.uniform(-0.4, 0.4, 4)
        y[4:8] = rng.uniform(-1.5, 1.5, 4)
        mode = dict(modes[trial % len(modes)])
        if mode["direction"] is None and not mode["resting"]:
            mode["direction"] = (1.0, 0.0, 0.0)
        _set_state(systems, 0, **mode)
        _set_state(systems, 1, active=trial % 3 != 2)
        _set_state(systems, 2, active=trial % 2 == 0)
        # the tips near their planes (δ = ±1 mm, 3 mm): move the planes
        target = 1e-3 * (trial % 3 - 0.5) * 2.0
        for system in systems:
            for contact, plane in zip(_contacts(system)[:2], planes):
                set_parameter(contact, "ground", plane)
                kin = contact.kinematics(model, *system.tree_state(0.0, y), need_jacobian=False)
                set_parameter(contact, "ground", GroundPlane(plane.height + target - kin.delta, plane.normal))
                contact._last = None
        compiled._compiled = CompiledReducedRHS.for_system(compiled)   # repack the moved planes
        out = compiled._compiled(0.0, np.array(y))
        assert out is not None, "the compiled call handed over to the callback stage"
        acting = [contact for contact in _contacts(compiled) if contact.state.active]
        friction_seen += assert_power_balance(compiled, 0.0, y, out, acting=acting) > 0.0
        for contact in acting:   # friction forces that actually entered the balance
            _, ft, _ = contact.forces(contact.kinematics(model, *compiled.tree_state(0.0, y)))
            tangential[contact.name] += bool(np.any(ft))
    assert friction_seen >= 6, "dissipation (friction or damping) acted in too few states"
    assert tangential["tip2"] >= 2 and tangential["tip3"] >= 2, tangential   # Coulomb sliding, Stribeck


def test_plug_in_law_keeps_the_generic_path(tmp_path: Path) -> None:
    class PluginLaw(HuGuo):   # a third party's own formula and no compiled twin
        def _unclipped(self, delta, delta_dot, impact_velocity):
            return self.stiffness * delta ** self.exponent

    model = load_text(drop_urdf(DROP_LAWS["hu_guo"]), tmp_path)
    system = System(model, None)
    assert isinstance(system._compiled, CompiledReducedRHS)
    contact = _contacts(system)[0]
    set_parameter(contact, "normal_law", PluginLaw(stiffness=2e6, restitution=0.3))
    assert CompiledReducedRHS.for_system(system) is None


@pytest.mark.parametrize("law", ["hunt_crossley", "kelvin_voigt"])
def test_ball_drop_run_free_flight_momentum_and_energy(tmp_path: Path, law: str) -> None:
    """A compiled ball-drop run (1 kg, r = 5 cm, centre from 15 cm) against closed forms: first onset at
    t = √(2·0.1/g) with v⁻ = √(2g·0.1); between bounces free flight (next onset 2v/g after the separation, apex
    r + v²/2g); each contact's logged impulse = m(v⁻ + v⁺) + m g t_c (momentum) and logged normal dissipation
    = ½m(v⁻² − v⁺²) (onset and separation both at δ = 0), v⁺ the next onset's v⁻; the energy balance closes.
    Measured at rtol 1e-9: free fall to 1e-14, impulse ≤ 9e-9, dissipation ≤ 3e-8 relative (the Gauss-sampled
    interval log integrates the force over each accepted step)."""
    g, mass, r, fall = 9.81, 1.0, 0.05, 0.1
    model = load_text(drop_urdf(DROP_LAWS[law]), tmp_path)
    run = simulate(model, 0.6, initial={"drop": r + fall}, rtol=1e-9, atol=1e-11)
    assert run.meta["right_hand_side"]["path"] != "callback stage", run.meta["right_hand_side"]
    log = contact_intervals(run)
    assert len(log) >= 2
    assert log[0]["start"] == pytest.approx(np.sqrt(2.0 * fall / g), abs=1e-12)
    assert log[0]["impact_velocity"] == pytest.approx(np.sqrt(2.0 * g * fall), rel=1e-12)
    for now, after in zip(log, log[1:]):
        v_in, v_out = now["impact_velocity"], after["impact_velocity"]
        assert 0.0 < v_out < v_in
        assert after["start"] - now["end"] == pytest.approx(2.0 * v_out / g, rel=1e-10)
        duration = now["end"] - now["start"]
        assert now["impulse"] == pytest.approx(mass * (v_in + v_out) + mass * g * duration, rel=1e-7)
        assert now["dissipated_normal"] == pytest.approx(0.5 * mass * (v_in ** 2 - v_out ** 2), rel=1e-6)
    after = (run.t > log[0]["end"]) & (run.t < log[1]["start"])
    apex = r + log[1]["impact_velocity"] ** 2 / (2.0 * g)
    assert np.max(run.q[after, 0]) <= apex + 1e-9
    assert np.max(run.q[after, 0]) == pytest.approx(apex, abs=1e-6)   # the 0.6 ms output grid: ≤ ½g(Δt/2)²
    assert np.max(run.energy["potential_elastic"]) > 0.0
    balance = run.energy_balance()
    assert np.max(np.abs(balance - balance[0])) < 1e-6


def test_loop_map_rhs_with_a_contact_power_balance(tmp_path: Path) -> None:
    """The four-bar knee (loop map: `CompiledReducedRHS`) with a heel sphere on the shank tip against the ground
    (Hunt–Crossley, regularized friction): the compiled ẏ closes the power balance (tree energies of the loop
    map's tree states along the flow)."""
    import biobullet
    from biobullet.integrate.compiled_rhs import CompiledReducedRHS
    root = Path(__file__).resolve().parents[3]
    text = (root / "urdf" / "fourbar_knee.urdf").read_text()
    contact = ('<contact name="heel" link="shank" xyz="0.01 0 -0.37" radius="0.02" normal_law="hunt_crossley" '
               'stiffness="2e5" restitution="0.6" friction_law="regularized" mu="0.6" v0="0.01"/>')
    text = text.replace("</biobullet>", contact + "</biobullet>")
    path = tmp_path / "fourbar_heel.urdf"
    path.write_text(text)
    model = biobullet.load_model(path)
    fast = System(model, "reduced")
    assert isinstance(fast._compiled, CompiledReducedRHS)
    plane = _contacts(fast)[0].ground
    forced = 0
    for k, (angle, rate) in enumerate([(0.1, -2.0), (0.5, 1.0), (0.9, 3.0), (0.3, -0.5), (1.2, 0.4)]):
        y = np.zeros(fast.size)
        y[0], y[1] = angle, rate
        target = 1e-3 * (k % 3 - 0.5)
        contact = _contacts(fast)[0]
        set_parameter(contact, "ground", plane)
        kin = contact.kinematics(model, *fast.tree_state(0.0, y), need_jacobian=False)
        set_parameter(contact, "ground", GroundPlane(plane.height + target - kin.delta, plane.normal))
        contact.state.active, contact.state.impact_velocity = k != 3, 0.7
        contact._last = None
        fast._compiled = CompiledReducedRHS.for_system(fast)   # repack the moved plane
        out = fast._compiled(0.0, y.copy())
        assert out is not None
        acting = [e for e in fast.elements if type(e) is not Contact or e.state.active]
        forced += assert_power_balance(fast, 0.0, y, out, acting=acting) > 0.0
    assert forced >= 2


def test_floating_ball_with_friction_rhs_power_balance(tmp_path: Path) -> None:
    """A free-floating spinning ball (quaternion base) with an off-centre sphere contact: τ = J_pᵀ F on the base's
    six velocity columns (linear and angular), friction from the spin and the drift; the compiled ẏ closes the
    power balance."""
    import biobullet
    text = ('<robot name="free_ball"><link name="ball"><inertial><origin xyz="0 0 0"/><mass value="1.3"/>'
            '<inertia ixx="0.002" ixy="0.0001" ixz="0" iyy="0.0025" iyz="0" izz="0.003"/></inertial></link>'
            '<biobullet version="1"><gravity xyz="0 0 -9.81"/><base type="floating"/>'
            '<contact name="c" link="ball" xyz="0.01 -0.02 0.005" radius="0.05" normal_law="hunt_crossley" '
            'stiffness="1e5" restitution="0.7" friction_law="ambrosio" mu="0.4" v0="1e-3" v1="0.05"/>'
            '</biobullet></robot>')
    path = tmp_path / "free_ball.urdf"
    path.write_text(text)
    model = biobullet.load_model(path)
    compiled = System(model, None)
    assert isinstance(compiled._compiled, CompiledReducedRHS)
    rng = np.random.default_rng(3)
    plane = _contacts(compiled)[0].ground
    tangential = 0
    for trial in range(6):
        y = compiled.initial_vector({}, 0.0)
        y[:3] = rng.uniform(-0.2, 0.2, 3)
        quat = rng.normal(size=4)
        y[3:7] = quat / np.linalg.norm(quat)
        y[7:13] = rng.uniform(-2.0, 2.0, 6)
        contact = _contacts(compiled)[0]
        set_parameter(contact, "ground", plane)
        kin = contact.kinematics(model, *compiled.tree_state(0.0, y), need_jacobian=False)
        set_parameter(contact, "ground", GroundPlane(plane.height + 1e-3 - kin.delta, plane.normal))
        contact.state.active, contact.state.impact_velocity = True, 1.0
        contact._last = None
        compiled._compiled = CompiledReducedRHS.for_system(compiled)
        out = compiled._compiled(0.0, np.array(y))
        assert out is not None, "the compiled call handed over to the callback stage"
        assert assert_power_balance(compiled, 0.0, y, out) > 0.0
        if trial == 0:   # the balance is not vacuous: v̇ off by 1e-4 of itself fails it
            with pytest.raises(AssertionError):
                assert_power_balance(compiled, 0.0, y, scaled_accelerations(compiled, out))
        _, ft, _ = contact.forces(contact.kinematics(model, *compiled.tree_state(0.0, y)))
        tangential += bool(np.any(ft))
    assert tangential >= 4
