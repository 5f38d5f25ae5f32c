"""The engine's contact event functions (touch, release, slip stop, slip start: `Contact.events`) evaluated through
the compiled contact kernel (`contact.kernels._contact_kinematics_py`, reached through the run's compiled observer)
against the numpy contact kinematics (`contact.geometry.sphere_kinematics`, the reference and every run without
numba): equal event values at random states of a planar chain with three contacts (a switched Coulomb contact,
Stribeck, a tilted plane) and of a free-floating spinning ball; whole runs with compiled and generic event
functions locate the same events at the same times."""
from __future__ import annotations

import biobullet
import numpy as np
import pytest
from biobullet.contact.element import Contact
from biobullet.core import jit
from biobullet.integrate.engine import System
from test_compiled_contacts import DROP_LAWS, _planar_chain

needs_numba = pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: the compiled path is off")

FREE_BALL = ('<robot name="free_ball"><link name="ball"><inertial><origin xyz="0 0 0"/><mass value="1.3"/>'
             '<inertia ixx="0.002" ixy="0.0001" ixz="0" iyy="0.0025" iyz="0" izz="0.003"/></inertial></link>'
             '<biobullet version="1"><gravity xyz="0 0 -9.81"/><base type="floating"/>'
             '<contact name="c" link="ball" xyz="0.01 -0.02 0.005" radius="0.05" normal_law="hunt_crossley" '
             'stiffness="1e5" restitution="0.7" friction_law="coulomb" mu="0.4"/></biobullet></robot>')


def _model(tmp_path, name):
    if name == "planar chain":
        return biobullet.load_model(_planar_chain(tmp_path))
    path = tmp_path / "free_ball.urdf"
    path.write_text(FREE_BALL)
    return biobullet.load_model(path)


@needs_numba
@pytest.mark.parametrize("name", ["planar chain", "free ball"])
def test_event_values_equal_the_numpy_kinematics(tmp_path, name):
    model = _model(tmp_path, name)
    system = System(model, None)
    assert system._compiled is not None
    contacts = [e for e in system.elements if type(e) is Contact]
    assert all(c.__dict__.get("_sampler") is not None for c in contacts)   # the compiled observer is on
    rng = np.random.default_rng(5)
    checked = set()
    for trial in range(30):
        y = system.initial_vector({}, 0.0)
        y[:system.n_pos] += rng.uniform(-0.3, 0.3, system.n_pos)
        y[system.n_pos:system.n_pos + system.n_vel] = rng.uniform(-2.0, 2.0, system.n_vel)
        x, xd = system.tree_state(0.0, y)
        for contact in contacts:
            state = contact.state   # every discrete state the event functions distinguish
            state.active, state.resting = bool(trial % 3), trial % 3 == 2
            state.impact_velocity = 0.5
            state.slip_direction = None if trial % 3 == 2 else rng.normal(size=3)
            for event in contact.events(model):
                compiled = event(0.0, x, xd)
                sampler = contact._sampler
                contact._sampler = None   # the numpy reference path
                try:
                    reference = event(0.0, x, xd)
                finally:
                    contact._sampler = sampler
                # the same kinematics from independent code: round-off of positions/velocities of size ~1
                assert compiled == pytest.approx(reference, rel=1e-12, abs=1e-14), (event.name, trial)
                checked.add(event.name.split(":")[1])
    assert checked >= {"touch", "slip_stop", "slip_start"}, checked


@needs_numba
@pytest.mark.parametrize("law", ["hunt_crossley", "kelvin_voigt"])
def test_runs_locate_the_same_events(tmp_path, monkeypatch, law):
    """Ball drops (bounces: touch events, and release events of the clipped Kelvin–Voigt law): the compiled run (compiled right-hand side and event
    functions) and the generic run locate the same events at the same times within the integration tolerance.
    (Slip events are covered at random states above; a switched-Coulomb ball run chatters between stick and
    slip, too slow for the default run on the generic path.)"""
    from biobullet.contact.kernels import ContactSampler
    from biobullet.contact.testbed import drop_urdf
    from biobullet.loader import load_text
    model = load_text(drop_urdf(DROP_LAWS[law]), tmp_path)
    calls = {"compiled": 0}
    original = ContactSampler.kinematics

    def counted(self, x, xd):
        calls["compiled"] += 1
        return original(self, x, xd)

    monkeypatch.setattr(ContactSampler, "kinematics", counted)
    kw = {"rtol": 1e-10, "atol": 1e-13, "initial": {"drop": 0.15}, "progress": False}
    fast = biobullet.simulate(model, 0.4, **kw)
    used = calls["compiled"]
    slow = biobullet.simulate(model, 0.4, compiled=False, **kw)
    assert used > 20 and calls["compiled"] == used   # only the compiled run's events took the kernel
    names = [e[0] for e in fast.events]
    assert names == [e[0] for e in slow.events], (names, [e[0] for e in slow.events])
    # onset and separation (δ through 0) are both "touch" crossings; Kelvin–Voigt also releases (clipped force)
    assert names.count("C:touch") >= 2 and ("C:release" in names) == (law == "kelvin_voigt"), names
    np.testing.assert_allclose([e[1] for e in fast.events], [e[1] for e in slow.events], rtol=0, atol=1e-8)
