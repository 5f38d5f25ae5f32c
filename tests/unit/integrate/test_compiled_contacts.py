"""Ground contacts in the engine's compiled explicit right-hand side (`CompiledExplicitRHS` with
`contact.kernels._ground_forces_py`) against the generic path (`System._checked_rhs`: `Contact.generalized_force`
and `Contact.dissipated_power` from `contact.geometry.sphere_kinematics` and the Python law objects).

Both evaluate the same algebra through different right-hand sides (the generic engine's M, h and per-element forces
vs the compiled tree kernel with `_ground_forces_py`), so ẏ — accelerations and the dissipated power — must agree to
round-off (1e-12 relative to the largest term) at every discrete state the engine's events can set: before onset
(inactive, δ < 0), at onset (δ = 0), active inside, inactive inside (a trial stage beyond a not yet located onset:
no force), active outside (a separation not yet located), and for switched Coulomb friction sliding, resting and
with a stale slip direction. Whole ball-drop runs with the compiled path on and off must locate the same onsets and
separations and reach the same apex within the integration tolerance.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from biobullet.contact.element import Contact, contact_intervals
from biobullet.contact.geometry import GroundPlane
from biobullet.contact.normal import HuGuo
from biobullet.contact.testbed import drop_urdf
from biobullet.loader import load_text
from biobullet.core import jit
from biobullet.integrate.compiled_explicit import CompiledExplicitRHS
from biobullet.integrate.engine import System, simulate

needs_numba = pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: the compiled path is off")
RTOL = 1e-12

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


def _systems(model):
    compiled, generic = System(model, None), System(model, None, {"compiled": False})
    assert isinstance(compiled._compiled, CompiledExplicitRHS)
    assert generic._compiled is None
    return compiled, generic


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


def _assert_equal_rhs(compiled, generic, t: float, y: np.ndarray) -> np.ndarray:
    fast = compiled._compiled(t, np.array(y))
    assert fast is not None, "the compiled call handed over to the generic path"
    slow = generic._checked_rhs(t, np.array(y))
    scale = max(1.0, float(np.max(np.abs(slow))))
    np.testing.assert_allclose(fast, slow, rtol=0.0, atol=RTOL * scale)
    return slow


@needs_numba
@pytest.mark.parametrize("law", sorted(DROP_LAWS))
def test_ball_drop_rhs_equals_generic_at_every_contact_state(tmp_path: Path, law: str) -> None:
    model = load_text(drop_urdf(DROP_LAWS[law]), tmp_path)
    compiled, generic = _systems(model)
    systems = (compiled, generic)
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
        out = _assert_equal_rhs(compiled, generic, 0.1, y)
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


@needs_numba
def test_planar_chain_with_friction_rhs_equals_generic(tmp_path: Path) -> None:
    import biobullet
    model = biobullet.load_model(_planar_chain(tmp_path))
    compiled, generic = _systems(model)
    systems = (compiled, generic)
    rng = np.random.default_rng(7)
    planes = [contact.ground for contact in _contacts(compiled)[:2]]
    tangential = {contact.name: 0 for contact in _contacts(generic)}
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
        # the tips near their planes (δ = ±1 mm, 3 mm): move the planes, the same on both systems
        target = 1e-3 * (trial % 3 - 0.5) * 2.0
        for system in systems:
            for contact, plane in zip(_contacts(system)[:2], planes):
                contact.ground = plane
                kin = contact.kinematics(model, *system.tree_state(0.0, y), need_jacobian=False)
                contact.ground = GroundPlane(plane.height + target - kin.delta, plane.normal)
                contact._last = None
        compiled._compiled = CompiledExplicitRHS.for_system(compiled)   # repack the moved planes
        out = _assert_equal_rhs(compiled, generic, 0.0, y)
        friction_seen += out[-1] > 0.0
        for contact in _contacts(generic):   # friction forces that actually entered the comparison
            _, ft, _ = contact.forces(contact.kinematics(model, *generic.tree_state(0.0, y)))
            tangential[contact.name] += bool(np.any(ft))
    assert friction_seen >= 6, "dissipation (friction or damping) acted in too few states"
    assert tangential["tip2"] >= 2 and tangential["tip3"] >= 2, tangential   # Coulomb sliding, Stribeck


@needs_numba
def test_plug_in_law_keeps_the_generic_path(tmp_path: Path) -> None:
    class PluginLaw(HuGuo):   # a third party's own formula and no compiled twin
        def _unclipped(self, delta, delta_dot, impact_velocity):
            return self.stiffness * delta ** self.exponent

    model = load_text(drop_urdf(DROP_LAWS["hu_guo"]), tmp_path)
    system = System(model, None)
    assert isinstance(system._compiled, CompiledExplicitRHS)
    contact = _contacts(system)[0]
    contact.normal_law = PluginLaw(stiffness=2e6, restitution=0.3)
    assert CompiledExplicitRHS.for_system(system) is None


@pytest.mark.parametrize("law", ["hunt_crossley", "kelvin_voigt"])
def test_ball_drop_runs_agree_compiled_and_generic(tmp_path: Path, law: str) -> None:
    """Same onsets and separations (located events) and apex after the first bounce, within the tolerance."""
    model = load_text(drop_urdf(DROP_LAWS[law]), tmp_path)
    runs = [simulate(model, 0.6, initial={"drop": 0.15}, rtol=1e-9, atol=1e-11, compiled=flag)
            for flag in (True, False)]
    intervals = [contact_intervals(run) for run in runs]
    assert len(intervals[0]) == len(intervals[1]) >= 2
    for a, b in zip(*intervals):
        assert a["start"] == pytest.approx(b["start"], abs=1e-8)
        assert a["end"] == pytest.approx(b["end"], abs=1e-8)
        assert a["impact_velocity"] == pytest.approx(b["impact_velocity"], rel=1e-7)
        assert a["peak_force"] == pytest.approx(b["peak_force"], rel=1e-6)
        for key in ("impulse", "dissipated_normal", "max_penetration"):
            assert a[key] == pytest.approx(b[key], rel=1e-6, abs=1e-12), key
    apex = []
    for run, log in zip(runs, intervals):
        after = run.t > log[0]["end"]
        apex.append(float(np.max(run.q[after, 0])))
    assert apex[0] == pytest.approx(apex[1], abs=1e-8)
    assert runs[0].meta["nfev"] == pytest.approx(runs[1].meta["nfev"], rel=0.05)
    # the elastic energy of the contact (compiled δ batch vs per-sample kinematics) on the same samples, and the
    # energy balance closing on both
    fast, slow = runs
    assert np.max(fast.energy["potential_elastic"]) > 0.0
    np.testing.assert_allclose(fast.energy["potential_elastic"], slow.energy["potential_elastic"], rtol=1e-5,
                               atol=1e-9)
    for run in runs:
        balance = run.energy_balance()
        assert np.max(np.abs(balance - balance[0])) < 1e-6


@needs_numba
def test_elastic_energy_batch_equals_per_sample(tmp_path: Path) -> None:
    model = load_text(drop_urdf(DROP_LAWS["hunt_crossley"]), tmp_path)
    system = System(model, None)
    contact = _contacts(system)[0]
    assert contact.__dict__.get("_sampler") is not None
    positions = np.linspace(0.03, 0.06, 41).reshape(-1, 1)
    expected = np.array([contact.potential_energy(model, x) for x in positions])
    assert np.count_nonzero(expected) > 10
    np.testing.assert_allclose(contact.potential_energy_batch(model, positions), expected, rtol=1e-13, atol=0.0)


@needs_numba
def test_loop_map_rhs_with_a_contact_equals_generic(tmp_path: Path) -> None:
    """The four-bar knee (loop map: `CompiledReducedRHS`) with a heel sphere on the shank tip against the ground
    (Hunt–Crossley, regularized friction): same ẏ as the generic path, from the same resolver cache."""
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
    fast, slow = System(model, "reduced"), System(model, "reduced", {"compiled": False})
    assert isinstance(fast._compiled, CompiledReducedRHS) and slow._compiled is None
    plane = _contacts(fast)[0].ground
    forced = 0
    for k, (angle, rate) in enumerate([(0.1, -2.0), (0.5, 1.0), (0.9, 3.0), (0.3, -0.5), (1.2, 0.4)]):
        y = np.zeros(fast.size)
        y[0], y[1] = angle, rate
        slow._checked_rhs(0.0, y)   # the resolver's cache at this state's solution (shared by both systems)
        target = 1e-3 * (k % 3 - 0.5)
        for system in (fast, slow):
            contact = _contacts(system)[0]
            contact.ground = plane
            kin = contact.kinematics(model, *system.tree_state(0.0, y), need_jacobian=False)
            contact.ground = GroundPlane(plane.height + target - kin.delta, plane.normal)
            contact.state.active, contact.state.impact_velocity = k != 3, 0.7
            contact._last = None
        fast._compiled = CompiledReducedRHS.for_system(fast)   # repack the moved plane
        compiled = fast._compiled(0.0, y.copy())
        assert compiled is not None
        generic = slow._checked_rhs(0.0, y.copy())
        np.testing.assert_allclose(compiled, generic, rtol=0.0, atol=1e-11 * max(1.0, np.max(np.abs(generic))))
        forced += generic[-1] > 0.0
    assert forced >= 2


@needs_numba
def test_step_observer_samples_compiled_equal_python(tmp_path: Path) -> None:
    """The interval log of one step (Gauss impulse and dissipation, grid and bounded search for the peak) from the
    compiled sampler equals the Python `forces`/`power_split` path, on the planar chain (friction in the plane)."""
    import copy

    import biobullet
    model = biobullet.load_model(_planar_chain(tmp_path))
    system = System(model, None, {"compiled": False})
    y0 = system.initial_vector({}, 0.0)
    y0[:4] = (0.1, 0.3, -0.4, 0.6)
    y0[4:8] = (0.8, -1.2, 0.5, 2.0)
    rate = np.concatenate([y0[4:8], np.array([3.0, -20.0, 9.0, -4.0])])

    def state_at(s: float):
        return system.tree_state(s, np.concatenate([y0[:8] + s * rate, y0[8:]]))

    checked = 0
    for contact in _contacts(system):
        kin = contact.kinematics(model, *state_at(0.005))
        contact.ground = GroundPlane(contact.ground.height + 2e-3 - kin.delta, contact.ground.normal)   # inside
        contact.state.touch(0.0, 0.4)
        contact.state.resting = False
        logs = []
        for compiled in (False, True):
            run = copy.copy(contact)
            run._state = copy.deepcopy(contact.state)
            run._last = None
            run._sampler = None
            if compiled:
                assert run.use_compiled_observer(model)
            run.observe_step(model, 0.0, 0.01, state_at)
            logs.append(run.state.current)
        python, fast = logs
        assert python.peak_force > 0.0
        checked += python.dissipated_friction > 0.0
        for key in ("impulse", "dissipated_normal", "dissipated_friction", "max_penetration", "peak_force",
                    "peak_force_time"):
            assert getattr(fast, key) == pytest.approx(getattr(python, key), rel=1e-12, abs=1e-15), key
    assert checked >= 2   # friction dissipated in the log of at least two contacts


@needs_numba
def test_floating_ball_with_friction_rhs_equals_generic(tmp_path: Path) -> None:
    """A free-floating spinning ball (quaternion base) with an off-centre sphere contact: τ = J_pᵀ F on the base's
    six velocity columns (linear and angular), friction from the spin and the drift."""
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
    compiled, generic = _systems(model)
    rng = np.random.default_rng(3)
    plane = _contacts(compiled)[0].ground
    tangential = 0
    for trial in range(6):
        y = compiled.initial_vector({}, 0.0)
        y[:3] = rng.uniform(-0.2, 0.2, 3)
        quat = rng.normal(size=4)
        y[3:7] = quat / np.linalg.norm(quat)
        y[7:13] = rng.uniform(-2.0, 2.0, 6)
        for system in (compiled, generic):
            contact = _contacts(system)[0]
            contact.ground = plane
            kin = contact.kinematics(model, *system.tree_state(0.0, y), need_jacobian=False)
            contact.ground = GroundPlane(plane.height + 1e-3 - kin.delta, plane.normal)
            contact.state.active, contact.state.impact_velocity = True, 1.0
            contact._last = None
        compiled._compiled = CompiledExplicitRHS.for_system(compiled)
        _assert_equal_rhs(compiled, generic, 0.0, y)
        contact = _contacts(generic)[0]
        _, ft, _ = contact.forces(contact.kinematics(model, *generic.tree_state(0.0, y)))
        tangential += bool(np.any(ft))
    assert tangential >= 4
