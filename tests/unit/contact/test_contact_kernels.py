"""The contact law kernels (`contact.kernels`, which the law classes evaluate) and the contact step.

Independent references: each law's closed form written out here from its paper (numpy; relative 1e-13: a few ulp
of pow/atan/exp between numpy and libm); the event action and one contact's step against hand-worked sequences
(onset, separation, slip modes; the interval log of constant kinematics in closed form); the ground-contact call's
geometry against finite differences (δ̇, v_p and J_p of points on a chain, fixed and floating base) and virtual
power (τ·ẋ = F·v_p), its forces against the closed-form laws. Each check runs on the pure-Python form (always) and
on the compiled kernel (skipped without numba).
"""
from __future__ import annotations

import numpy as np
import pytest
from biobullet.contact import kernels as K
from biobullet.contact.element import Contact
from biobullet.contact.friction import (
    Ambrosio,
    Coulomb,
    NoFriction,
    OpenSimFriction,
    Regularized,
    Stribeck,
)
from biobullet.contact.geometry import GroundPlane
from biobullet.contact.normal import (
    Flores,
    Hertz,
    HuGuo,
    HuntCrossley,
    KelvinVoigt,
    KelvinVoigtSmooth,
    OpenSimHuntCrossley,
)
from biobullet.contact.registry import FRICTION_LAWS, NORMAL_LAWS

RTOL = 1e-13
TWINS = [pytest.param("python", id="python"), pytest.param("compiled", id="compiled")]


def normal_laws():
    return [KelvinVoigt(stiffness=2e5, damping=300.0), KelvinVoigt(stiffness=1e4, damping=50.0, adhesion=True),
            KelvinVoigtSmooth(stiffness=2e5, damping=300.0, smoothing=3e3),
            KelvinVoigtSmooth(stiffness=2e5, damping=300.0, smoothing=1e6, adhesion=True),
            Hertz(stiffness=1e6), Hertz(stiffness=3e5, exponent=1.0, adhesion=True),
            HuntCrossley(stiffness=1e5, restitution=0.8), Flores(stiffness=1e5, restitution=0.5, exponent=1.3),
            HuGuo(stiffness=1e5, restitution=0.8), HuGuo(stiffness=2e6, restitution=0.3, min_impact_velocity=0.05),
            OpenSimHuntCrossley(stiffness=3e6, dissipation=1.0)]


def friction_laws():
    return [NoFriction(), Coulomb(mu=0.4), Regularized(mu=0.5, v0=1e-3), Regularized(mu=0.7, v0=0.02,
                                                                                      regularization="tanh"),
            Ambrosio(mu=0.3, v0=1e-3, v1=0.05), Ambrosio(mu=0.3, v0=0.0, v1=0.01),
            Stribeck(mu=0.3, mu_static=0.5, stribeck_velocity=0.05, v0=1e-3, viscous=0.2),
            Stribeck(mu=0.3, mu_static=0.3, stribeck_velocity=0.1, v0=1e-2, regularization="tanh"),
            OpenSimFriction(mu_static=0.8, mu_dynamic=0.5, mu_viscous=0.1, transition_velocity=0.05)]


def _normal(twin):
    return K.normal_force_kernel() if twin == "compiled" else K._normal_force_py


def _friction(twin):
    return K.friction_coefficient_kernel() if twin == "compiled" else K._friction_coefficient_py


def _update(twin):
    return K.contact_update_kernel() if twin == "compiled" else K._contact_update_py


def test_every_builtin_law_has_a_twin():
    """Every law registered by the library has a twin; a subclass or plug-in law has none (it keeps Python)."""
    for registry, pack in ((NORMAL_LAWS, K.pack_normal), (FRICTION_LAWS, K.pack_friction)):
        builtins = [cls for cls in registry.classes() if cls.__module__.startswith("biobullet.contact.")]
        assert len(builtins) == (7 if registry is NORMAL_LAWS else 6)
        for cls in builtins:
            law = next((law for law in normal_laws() + friction_laws() if type(law) is cls), None)
            assert law is not None, f"no test instance of {cls.__name__}"
            assert pack(law) is not None, f"{cls.law_name} has no compiled twin"

    class Renamed(HuGuo):   # a subclass that keeps the formula keeps the kernel
        law_name = "renamed_hu_guo"
    assert K.pack_normal(Renamed(stiffness=1e5, restitution=0.8))[0] == K.NORMAL_RESTITUTION

    class Plugin(HuGuo):   # a third party's own formula: no kernel (its Python callback serves)
        law_name = "plugin_hu_guo"

        def _unclipped(self, delta, delta_dot, impact_velocity):
            return self.stiffness * delta
    assert K.pack_normal(Plugin(stiffness=1e5, restitution=0.8)) is None
    assert Plugin(stiffness=1e5, restitution=0.8).force(2e-3, 1.0, 1.0) == pytest.approx(200.0, rel=1e-15)


def _closed_form_normal(law, d, dd, vi):
    """F_N of each built-in law written out from its paper (`contact.normal`'s table), clipped as documented."""
    inside = d > 0.0
    dp = np.where(inside, d, 0.0)
    if isinstance(law, KelvinVoigtSmooth):
        f = (0.5 + np.arctan(law.smoothing * d) / np.pi) * (law.stiffness * d + law.damping * dd)
        inside = np.ones_like(inside)
    elif isinstance(law, KelvinVoigt):
        f = law.stiffness * d + law.damping * dd
    elif isinstance(law, OpenSimHuntCrossley):
        f = law.stiffness * dp ** law.exponent * (1.0 + 1.5 * law.dissipation * dd)
    elif isinstance(law, (HuntCrossley, Flores, HuGuo)):
        slope, over = {HuntCrossley: (1.5, False), Flores: (1.6, True), HuGuo: (1.5, True)}[type(law)]
        c = slope * (1.0 - law.restitution) / (law.restitution if over else 1.0)
        f = law.stiffness * dp ** law.exponent * (1.0 + c * dd / np.maximum(vi, law.min_impact_velocity))
    else:
        f = law.stiffness * dp ** law.exponent
    f = np.where(inside, f, 0.0)
    return f if law.adhesion else np.maximum(f, 0.0)


def _closed_form_friction(law, s):
    """μ_eff(s) of each built-in friction law written out (`contact.friction`'s table)."""
    def r(x, kind):
        return np.tanh(x) if kind == "tanh" else 2.0 / np.pi * np.arctan(x)
    if isinstance(law, NoFriction):
        return np.zeros_like(s)
    if isinstance(law, Coulomb):
        return np.where(s > 0.0, law.mu, 0.0)
    if isinstance(law, Regularized):
        return law.mu * r(s / law.v0, law.regularization)
    if isinstance(law, Ambrosio):
        return law.mu * np.clip((s - law.v0) / (law.v1 - law.v0), 0.0, 1.0)
    if isinstance(law, Stribeck):
        dry = law.mu + (law.mu_static - law.mu) * np.exp(-(s / law.stribeck_velocity) ** 2)
        return dry * r(s / law.v0, law.regularization) + law.viscous * s
    ratio = s / law.transition_velocity
    return (np.minimum(ratio, 1.0) * (law.mu_dynamic + 2.0 * (law.mu_static - law.mu_dynamic) / (1.0 + ratio ** 2))
            + law.mu_viscous * s)


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("law", normal_laws(), ids=repr)
def test_normal_kernel_equals_closed_form(law, twin):
    """F_N(δ, δ̇, δ̇⁻) of the kernel (run by Python, as the law class does, or compiled) over random penetrations (both signs and exactly 0), rates and impact velocities (below and
    above the floor)."""
    rng = np.random.default_rng(7)
    delta = np.concatenate([rng.uniform(-2e-3, 5e-3, 400), [0.0, -0.0, 1e-12, -1e-12]])
    rate = rng.uniform(-3.0, 3.0, delta.size)
    impact = np.concatenate([rng.uniform(0.0, 4.0, delta.size - 4), [0.0, 1e-5, 1e-3, 2.0]])
    kind, params = K.pack_normal(law)
    force = _normal(twin)
    expected = _closed_form_normal(law, delta, rate, impact)
    got = np.array([force(kind, params, d, r, v) for d, r, v in zip(delta, rate, impact)])
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=0.0)
    np.testing.assert_allclose(law.force(delta, rate, impact if law.needs_impact_velocity else None), expected,
                               rtol=RTOL, atol=0.0)
    assert np.count_nonzero(expected) > 100   # the inputs do reach the law


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("law", friction_laws(), ids=repr)
def test_friction_kernel_equals_closed_form(law, twin):
    """μ_eff(s) of the kernel (as for the normal laws) over random slip speeds (0, around v0 and the Stribeck velocity, large)."""
    rng = np.random.default_rng(3)
    speed = np.concatenate([[0.0, 1e-12, 1e-3, 0.05], rng.uniform(0.0, 2e-3, 100), rng.uniform(0.0, 0.2, 100),
                            rng.uniform(0.0, 10.0, 100)])
    kind, params = K.pack_friction(law)
    coefficient = _friction(twin)
    got = np.array([coefficient(kind, params, s) for s in speed])
    expected = _closed_form_friction(law, speed)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=0.0)
    np.testing.assert_allclose(law.coefficient(speed), expected, rtol=RTOL, atol=0.0)


def test_event_action_follows_the_kinematics():
    """`sync_state` (the engine's event action) through a hand-worked sequence: onset at δ = 0 only when
    approaching, δ̇⁻ stored, switched-friction rest below REST_SPEED only after the slip reversed (or at rest),
    sliding again above it, separation with the rebound velocity."""
    from biobullet.contact.state import REST_SPEED, ContactState
    state = ContactState()
    K.sync_state(state, True, 0.0, 0.0, 0.0, [0.2, 0.0, 0.0])        # δ = 0 not approaching: apart
    assert not state.active and not state.intervals
    assert not state.resting and np.array_equal(state.slip_direction, [1.0, 0.0, 0.0])
    K.sync_state(state, True, 0.1, 0.0, 0.7, [0.2, 0.0, 0.0])        # δ = 0 approaching: onset
    assert state.active and state.impact_velocity == 0.7
    assert [(i.start, i.impact_velocity, i.end) for i in state.intervals] == [(0.1, 0.7, None)]
    K.sync_state(state, True, 0.15, 1e-3, 0.0, [0.1 * REST_SPEED, 0.0, 0.0])   # slow but not reversed: slides
    assert not state.resting and np.array_equal(state.slip_direction, [1.0, 0.0, 0.0])
    K.sync_state(state, True, 0.2, 1e-3, 0.0, [-0.5 * REST_SPEED, 0.0, 0.0])   # reversed and slow: rest
    assert state.resting and state.slip_direction is None
    K.sync_state(state, True, 0.25, 1e-3, 0.0, [0.0, 0.9 * REST_SPEED, 0.0])   # still slow: stays at rest
    assert state.resting
    K.sync_state(state, True, 0.3, 1e-3, -0.1, [0.0, 0.3, 0.4])                # fast: slides along v̂_t
    assert not state.resting and np.allclose(state.slip_direction, [0.0, 0.6, 0.8], rtol=0, atol=1e-16)
    assert state.active and len(state.intervals) == 1
    K.sync_state(state, False, 0.4, 0.0, -0.5, [0.0, 0.0, 0.0])                # δ = 0 leaving: separation
    assert not state.active
    interval = state.intervals[0]
    assert (interval.end, interval.rebound_velocity, interval.restitution) == (0.4, 0.5, 0.5 / 0.7)
    K.sync_state(state, False, 0.5, -1e-3, 0.2, [0.0, 0.0, 0.0])               # approaching but apart
    assert not state.active and len(state.intervals) == 1


@pytest.mark.parametrize("twin", TWINS)
def test_contact_step_logs_an_interval_in_closed_form(twin):
    """One contact's step (`_contact_update_py`) with Kelvin–Voigt and Coulomb friction at constant kinematics
    for n steps, then apart: F = (Kδ + Dδ̇) n − μ F_N v̂_t each step, impulse n F_N dt, normal dissipation
    n D δ̇² dt, friction dissipation n μ F_N |v_t| dt, peak at the first step, the events at onset and separation."""
    stiffness, damping, mu = 2e5, 300.0, 0.4
    law, friction = KelvinVoigt(stiffness=stiffness, damping=damping), Coulomb(mu=mu)
    normal = np.array([0.0, 0.6, 0.8])
    slip = np.array([0.3, 0.4 * 0.8, -0.4 * 0.6])   # ⟂ n, |v_t| = 0.5
    delta, rate, dt, n = 1e-3, 0.2, 1e-4, 25
    pn, pf = K.pack_normal(law), K.pack_friction(friction)
    laws = K.ContactLaws(pn[0], pn[1], pf[0], pf[1], False, False, True)
    row = K.state_row(Contact("C", "ball", [0, 0, 0], law, friction, 0.0, GroundPlane()).for_run(None).state)
    step = _update(twin)
    fn = stiffness * delta + damping * rate
    for k in range(n):
        event = step(laws, row, delta, rate, slip, normal, 0.01 + k * dt, dt)
        assert event == (K.ONSET if k == 0 else 0.0)
        np.testing.assert_allclose(row[K.FORCE:K.FORCE + 3], fn * normal - mu * fn * slip / 0.5, rtol=1e-14,
                                   atol=1e-14 * fn)
    assert row[K.IMPACT] == rate and row[K.RESTING] == 0.0
    assert row[K.IMPULSE] == pytest.approx(n * fn * dt, rel=1e-13)
    assert row[K.DISSIPATED_NORMAL] == pytest.approx(n * damping * rate ** 2 * dt, rel=1e-13)
    assert row[K.DISSIPATED_FRICTION] == pytest.approx(n * mu * fn * 0.5 * dt, rel=1e-13)
    assert (row[K.PEAK], row[K.PEAK_TIME], row[K.MAX_PENETRATION]) == (pytest.approx(fn, rel=1e-15), 0.01, delta)
    assert step(laws, row, -1e-4, -0.3, slip, normal, 0.02, dt) == K.SEPARATION
    assert row[K.ACTIVE] == 0.0 and not row[K.FORCE:K.FORCE + 3].any()
    assert row[K.IMPULSE] == pytest.approx(n * fn * dt, rel=1e-13)   # the log is kept for the closed interval


ARM = """<robot name="arm">
  <link name="world"/>
  <link name="upper"><inertial><origin xyz="0.2 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="fore"><inertial><origin xyz="0.15 0 0"/><mass value="0.5"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="hand"/>
  <joint name="slide" type="prismatic"><parent link="world"/><child link="upper"/><origin xyz="0 0 0.3"/>
    <axis xyz="0.3 0 1"/><limit lower="-10" upper="10" effort="1" velocity="1"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="fore"/><origin xyz="0.4 0 0" rpy="0.3 0 0.2"/>
    <axis xyz="0 1 0.2"/><limit lower="-10" upper="10" effort="1" velocity="1"/></joint>
  <joint name="wrist" type="fixed"><parent link="fore"/><child link="hand"/><origin xyz="0.3 0.02 0" rpy="0 0.4 0"/>
  </joint>
  <biobullet version="1"><gravity xyz="0 0 -9.81"/>
    <contact name="S" link="hand" xyz="0.02 0.01 -0.01" radius="0.04" ground_height="-0.1" ground_normal="0.2 0.1 1"
             normal_law="hu_guo" stiffness="1e5" restitution="0.8" friction_law="stribeck" mu="0.3"
             mu_static="0.5" stribeck_velocity="0.05" v0="1e-3"/>
    <contact name="P" link="fore" xyz="0.1 0 0" ground_height="-0.1" normal_law="kelvin_voigt_smooth"
             stiffness="1e5" damping="50" smoothing="2e3" friction_law="coulomb" mu="0.4"/>
    <contact name="W" link="world" xyz="0 0 0.01" radius="0.02" normal_law="hertz" stiffness="1e5"/>
  </biobullet>
</robot>"""


def _arm(tmp_path, base):
    from biobullet.contact.element import contact_elements
    from biobullet.loader import load_text
    floating = base == "floating"
    text = ARM.replace('<biobullet version="1">', '<biobullet version="1"><base type="floating"/>') if floating else ARM
    model = load_text(text, tmp_path)
    assert model.floating_base == floating
    return model, contact_elements(model)


def _arm_state(model, k, rng):
    x = np.array([-0.3 + 0.25 * np.sin(0.03 * k), 0.8 * np.sin(0.05 * k + 1.0)])
    if model.floating_base:   # base pose: a small drift and tilt (unit quaternion x, y, z, w) in front of the joints
        axis = np.array([np.sin(0.02 * k), 0.3, np.cos(0.02 * k)])
        half = 0.1 * np.sin(0.04 * k)
        quaternion = np.concatenate([np.sin(half) * axis / np.linalg.norm(axis), [np.cos(half)]])
        x = np.concatenate([[0.02 * np.sin(0.03 * k), -0.01, 0.01 * np.cos(0.05 * k)], quaternion, x])
    return x, rng.normal(size=model.n_tangent)


@pytest.mark.parametrize("base", ["fixed", "floating"])
def test_contact_kinematics_against_finite_differences(tmp_path, base):
    """`sphere_kinematics` (the contact kinematics kernel) on a chain (prismatic + revolute joints, a fixed link, a
    tilted ground, a contact on the world; fixed or floating root): δ̇ = dδ/ds along x ⊕ s ẋ, and for the point
    contacts (r = 0: p is a material point) v_p = dp/ds and J_p = ∂p/∂x column by column, by central differences
    (h = 1e-6: truncation ~h² and round-off ~1e-16/h, so 1e-8 absolute on quantities of size ~1)."""
    model, contacts = _arm(tmp_path, base)
    rng = np.random.default_rng(3)
    h = 1e-6

    def moved(x, v, s):
        return model.integrate_configuration(x, v, s)
    for k in range(0, 300, 37):
        x, xd = _arm_state(model, k, rng)
        for contact in contacts:
            kin = contact.kinematics(model, x, xd)
            ahead, behind = (contact.kinematics(model, moved(x, xd, s), None, need_jacobian=False) for s in (h, -h))
            assert kin.delta_dot == pytest.approx((ahead.delta - behind.delta) / (2 * h), abs=1e-8)
            if contact.radius == 0.0:
                velocity = (ahead.point - behind.point) / (2 * h)
                np.testing.assert_allclose(kin.slip, velocity - (velocity @ kin.normal) * kin.normal, atol=1e-8)
                np.testing.assert_allclose(kin.jacobian @ xd, velocity, atol=1e-8)
                for j in range(model.n_tangent):
                    unit = np.eye(model.n_tangent)[j]
                    column = (contact.kinematics(model, moved(x, unit, h), None, need_jacobian=False).point
                              - contact.kinematics(model, moved(x, unit, -h), None, need_jacobian=False).point)
                    np.testing.assert_allclose(kin.jacobian[:, j], column / (2 * h), atol=1e-8)
            else:   # the sphere's deepest point: v_p = J_p ẋ, its normal part −δ̇
                v_p = kin.jacobian @ xd
                assert float(v_p @ kin.normal) == pytest.approx(-kin.delta_dot, abs=1e-14)
                np.testing.assert_allclose(v_p - (v_p @ kin.normal) * kin.normal, kin.slip, atol=1e-14)


@pytest.mark.parametrize("base", ["fixed", "floating"])
@pytest.mark.parametrize("twin", TWINS)
def test_ground_call_forces_and_virtual_power(tmp_path, twin, base):
    """All contacts of the chain in one call (`_ground_contacts_py`) over a random trajectory through contact:
    δ and p as the contact kinematics, F_N the closed-form law at the row's δ, δ̇ and stored δ̇⁻, |F_T| = μ(|v_t|) F_N
    against the slip (off at rest), and τ·ẋ = Σ F·v_p (virtual power of τ = Σ J_pᵀ F)."""
    model, contacts = _arm(tmp_path, base)
    ground = K.GroundContacts(model, [c.for_run(model) for c in contacts])
    if twin == "python":
        ground.kernel = K._ground_contacts_py
    else:
        assert ground.kernel is K.ground_contacts_kernel()
    rng = np.random.default_rng(5)
    dt, touched = 1e-3, set()
    for k in range(300):
        x, xd = _arm_state(model, k, rng)
        tau = np.zeros(model.n_tangent)
        ground.step(x, xd, k * dt, dt, tau)
        power = 0.0
        for i, contact in enumerate(contacts):
            kin = contact.kinematics(model, x, xd)
            row = ground.state[i]
            assert row[K.DELTA] == kin.delta
            np.testing.assert_allclose(row[K.POINT:K.POINT + 3], kin.point, rtol=0, atol=1e-15)
            force = row[K.FORCE:K.FORCE + 3]
            active = row[K.ACTIVE] != 0.0
            assert active == (kin.delta > 0.0 or (kin.delta == 0.0 and kin.delta_dot > 0.0))   # δ = 0: approaching
            law, friction = contact.normal_law, contact.friction_law
            fn = float(_closed_form_normal(law, kin.delta, kin.delta_dot, row[K.IMPACT])) if active else 0.0
            assert row[K.NORMAL_FORCE] == pytest.approx(fn, rel=1e-13, abs=1e-9)
            speed = float(np.linalg.norm(kin.slip))
            resting = friction.discontinuous and row[K.RESTING] != 0.0
            mu = 0.0 if resting or fn <= 0.0 or speed == 0.0 else float(_closed_form_friction(friction, speed))
            expected = fn * kin.normal - (mu * fn / speed * kin.slip if mu else 0.0)
            np.testing.assert_allclose(force, expected, rtol=1e-12, atol=1e-12 * max(abs(fn), 1.0))
            if fn > 0.0:
                touched.add(contact.name)
            power += float(force @ (kin.slip - kin.delta_dot * kin.normal))
        assert float(tau @ xd) == pytest.approx(power, rel=1e-12, abs=1e-12)
    assert touched == {"S", "P", "W"}


def test_ground_call_reports_a_non_finite_state(tmp_path):
    from biobullet.contact.element import contact_elements
    from biobullet.loader import load_text
    model = load_text(ARM, tmp_path)
    ground = K.GroundContacts(model, [c.for_run(model) for c in contact_elements(model)])
    tau = np.zeros(2)
    assert ground.step(np.array([0.0, np.nan]), np.zeros(2), 0.0, 1e-3, tau) == -1
    assert not tau.any()
