"""The contact law kernels (`contact.kernels`, which the law classes evaluate) and the contact step.

Independent references: each law's closed form written out here from its paper (numpy), the engine's event action
`element.sync_state` + `Contact.forces` + the bridge's interval log `bridge.contact._account` (one contact's step),
and `contact.geometry.sphere_kinematics` with `Contact` for the whole ground-contact call (kinematics from
`algorithms.kinematics`, τ = J_pᵀ F). Same formulas, so equal to round-off: relative 1e-13 on forces (a few ulp of
pow/atan/exp between numpy and libm), exact on discrete decisions (onsets, separations, stored δ̇⁻, slip modes).
Each check runs on the pure-Python twin (always) and on the compiled twin (skipped without numba).
"""
from __future__ import annotations

import numpy as np
import pytest
from biobullet.bridge.contact import _account
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
from biobullet.contact.geometry import ContactKinematics, GroundPlane
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
from biobullet.core import jit

RTOL = 1e-13
_compiled = pytest.mark.skipif(not jit.ENABLED, reason="numba missing or BIOBULLET_NUMBA=0: no compiled twin")
TWINS = [pytest.param("python", id="python"), pytest.param("compiled", id="compiled", marks=_compiled)]


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


def _kinematics(delta, rate, slip, normal):
    return ContactKinematics(float(delta), float(rate), np.zeros(3), np.asarray(slip, float), normal,
                             np.zeros((3, 1)))


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("normal_law, friction_law", [(n, f) for n in normal_laws()[::2] for f in friction_laws()[:5]],
                         ids=repr)
def test_contact_step_equals_python_step(normal_law, friction_law, twin):
    """One contact through random bounces: the compiled step (`_contact_update_py` on a state row, events replayed
    on the ContactState) against the Python step (`sync_state`, `Contact.forces`, the bridge's log): the force
    every step, δ̇⁻ stored at each onset, the slip mode, and the whole interval log."""
    rng = np.random.default_rng(11)
    normal = np.array([0.1, -0.2, 1.0]) / np.linalg.norm([0.1, -0.2, 1.0])
    steps, dt = 600, 1e-4
    phase = np.cumsum(rng.uniform(0.0, 0.06, steps))
    delta = 2e-3 * np.sin(phase) - 3e-4                      # in and out of contact, several onsets
    delta[[50, 51, 200]] = 0.0                               # exact zeros: onset iff approaching
    rate = rng.uniform(-2.0, 2.0, steps)
    slips = rng.normal(size=(steps, 3)) * rng.choice([0.0, 1e-7, 1e-3, 0.5], size=(steps, 1))
    slips -= np.outer(slips @ normal, normal)
    make = lambda: Contact("C", "ball", [0, 0, 0], normal_law, friction_law, 0.05, GroundPlane()).for_run(None)
    python, compiled = make(), make()
    row = K.state_row(compiled.state)
    packed_n, packed_f = K.pack_normal(normal_law), K.pack_friction(friction_law)
    update = _update(twin)
    onsets = 0
    for k in range(steps):
        t = k * dt
        kin = _kinematics(delta[k], rate[k], slips[k], normal)
        expected = _account(python, kin, t, dt)
        laws = K.ContactLaws(packed_n[0], packed_n[1], packed_f[0], packed_f[1], normal_law.acts_outside_contact,
                             normal_law.needs_impact_velocity, friction_law.discontinuous)
        event = update(laws, row, kin.delta, kin.delta_dot, kin.slip, normal, t, dt)
        if event:
            K.pull_event(row, compiled.state, t)
            onsets += event == K.ONSET
        got = row[K.FORCE:K.FORCE + 3]
        if expected is None:
            assert not got.any(), k
        else:
            np.testing.assert_allclose(got, expected, rtol=RTOL, atol=RTOL * np.abs(expected).max())
        assert bool(row[K.ACTIVE]) == python.state.active, k
        assert row[K.IMPACT] == python.state.impact_velocity, k   # δ̇⁻ stored at onset, exactly
        if friction_law.discontinuous:
            assert bool(row[K.RESTING]) == python.state.resting, k
    assert onsets >= 3
    K.pull_state(row, compiled.state)
    got, expected = compiled.state.log()["intervals"], python.state.log()["intervals"]
    assert len(got) == len(expected) >= 3
    for a, b in zip(got, expected):
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(b[key], float) and isinstance(a[key], float):
                assert a[key] == pytest.approx(b[key], rel=1e-12, abs=1e-300), key
            else:
                assert a[key] == b[key], key


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


@pytest.mark.parametrize("base", ["fixed", "floating"])
@pytest.mark.parametrize("twin", TWINS)
def test_ground_call_equals_python_kinematics_and_laws(tmp_path, twin, base):
    """All contacts of a chain (prismatic + revolute joints, a fixed link, a tilted ground, a link fixed to the
    root; the root fixed to the world or floating) in one call: δ, point, force and τ = Σ J_pᵀ F against
    `Contact.kinematics` + the Python step, over a random trajectory through contact."""
    from biobullet.contact.element import contact_elements
    from biobullet.loader import load_text
    floating = base == "floating"
    text = ARM.replace('<biobullet version="1">', '<biobullet version="1"><base type="floating"/>') if floating else ARM
    model = load_text(text, tmp_path)
    assert model.floating_base == floating
    templates = contact_elements(model)
    python = [c.for_run(model) for c in templates]
    ground = K.GroundContacts(model, [c.for_run(model) for c in templates])
    if twin == "python":
        ground.kernel = K._ground_contacts_py
    else:
        assert ground.kernel is K.ground_contacts_kernel()
    rng = np.random.default_rng(5)
    dt, touched = 1e-3, set()
    for k in range(300):
        x = np.array([-0.3 + 0.25 * np.sin(0.03 * k), 0.8 * np.sin(0.05 * k + 1.0)])
        if floating:   # base pose: a small drift and tilt (unit quaternion x, y, z, w) in front of the joints
            axis = np.array([np.sin(0.02 * k), 0.3, np.cos(0.02 * k)])
            half = 0.1 * np.sin(0.04 * k)
            quaternion = np.concatenate([np.sin(half) * axis / np.linalg.norm(axis), [np.cos(half)]])
            x = np.concatenate([[0.02 * np.sin(0.03 * k), -0.01, 0.01 * np.cos(0.05 * k)], quaternion, x])
        xd = rng.normal(size=model.n_tangent)
        t = k * dt
        tau = np.zeros(model.n_tangent)
        ground.step(x, xd, t, dt, tau)
        expected = np.zeros(model.n_tangent)
        for i, contact in enumerate(python):
            kin = contact.kinematics(model, x, xd)
            force = _account(contact, kin, t, dt)
            row = ground.state[i]
            assert row[K.DELTA] == pytest.approx(kin.delta, rel=1e-12, abs=1e-14)
            np.testing.assert_allclose(row[K.POINT:K.POINT + 3], kin.point, rtol=0, atol=1e-14)
            if force is not None:
                touched.add(contact.name)
                expected += kin.generalized(force)
                np.testing.assert_allclose(row[K.FORCE:K.FORCE + 3], force, rtol=1e-12,
                                           atol=1e-12 * np.abs(force).max())
            else:
                assert not row[K.FORCE:K.FORCE + 3].any()
            assert bool(row[K.ACTIVE]) == contact.state.active
        np.testing.assert_allclose(tau, expected, rtol=1e-12, atol=1e-12 * max(np.abs(expected).max(), 1.0))
    assert touched == {"S", "P", "W"}


def test_ground_call_reports_a_non_finite_state(tmp_path):
    from biobullet.contact.element import contact_elements
    from biobullet.loader import load_text
    model = load_text(ARM, tmp_path)
    ground = K.GroundContacts(model, [c.for_run(model) for c in contact_elements(model)])
    tau = np.zeros(2)
    assert ground.step(np.array([0.0, np.nan]), np.zeros(2), 0.0, 1e-3, tau) == -1
    assert not tau.any()
