"""The prosthesis study's force elements (`biobullet_studies.tracking`: `joint_spring_reference`,
`joint_contact_stop`) on the library's compiled right-hand sides through their `compiled_kernel` hooks, against
the generic path (`System._checked_rhs`: the elements' numpy methods `generalized_force`, `input_power`,
`dissipated_power`).

- The bundled model urdf/prosthesis_fourbar.urdf with ALL its elements (four drivers, the knee loop, the damper,
  heel and toe contacts, the knee stop, the ankle spring) runs on `CompiledReducedRHS`; ẏ agrees with the generic
  path to 1e-12 relative at random states, the knee stop engaged (hyperextension) or not, contacts on or off.
- Each element alone on a pendulum (`CompiledExplicitRHS`): the reference angle as a Fourier series, a constant,
  and an expression in t; the stop with a lower and an upper limit, at angles beyond each limit, inside the
  arctan smoothing band and far away (1e-12 relative).
- A whole 0.1 s run of the prosthesis, compiled and generic, agrees within the integration tolerance.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.core import jit
from biobullet.integrate.compiled_explicit import CompiledExplicitRHS
from biobullet.integrate.compiled_rhs import CompiledReducedRHS
from biobullet.integrate.engine import System
from biobullet_studies.common import bundled_model
from biobullet_studies.tracking import JointContactStop, JointSpringReference

pytestmark = pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: the compiled path is off")

PATH = bundled_model("prosthesis_fourbar.urdf")


@pytest.fixture(scope="module")
def model():
    return biobullet.load_model(PATH)


def _close(got, ref, label=""):
    assert got is not None, label
    assert np.abs(got - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max()), (label, got - ref)


def test_bundled_model_with_its_study_elements_is_compiled(model):
    fast = System(model, "reduced", {"shadow": True})
    slow = System(model, "reduced", {"shadow": True, "compiled": False})
    assert type(fast._compiled) is CompiledReducedRHS
    assert {type(e) for e in fast.elements} >= {JointContactStop, JointSpringReference}
    rows_x, rows_v = slow.shadow
    stop = next(e for e in fast.elements if type(e) is JointContactStop)
    contacts = [e for e in slow.elements if type(e).__name__ == "Contact"]
    rng = np.random.default_rng(23)
    engaged = in_contact = 0
    for k in range(60):
        t = float(rng.uniform(0.0, 2.0))
        # every third state hyperextended (knee_A < 0 → knee_B < 0: the stop pushes)
        q = np.array([rng.uniform(-0.1, -0.01) if k % 3 == 0 else rng.uniform(0.0, 1.2), rng.uniform(-0.4, 0.4)])
        v = rng.normal(size=2) * 3.0
        x, xd, _, _ = model.joint_state(q, v, t)
        for system in (fast, slow):   # contacts on for half the states (the engine's events set this state)
            for contact in (e for e in system.elements if type(e).__name__ == "Contact"):
                contact.state.active = k % 2 == 0
        y = np.concatenate([q, v, x[rows_x], xd[rows_v], [0.0, 0.0]])
        ref = slow._checked_rhs(t, y)   # moves the loop resolver's cache to this state …
        fast._compiled._warm.valid[:] = 0.0   # … and the compiled run starts from it too
        _close(fast._compiled(t, y), ref, k)
        engaged += stop.contact_force(x[model.joint_names.index("knee_B")], 0.0) > 1.0
        in_contact += k % 2 == 0 and any(np.abs(c.generalized_force(model, x, xd, t)).max() > 1.0
                                         for c in contacts)
    assert engaged >= 3 and in_contact >= 3   # both study-relevant regimes were compared


PENDULUM = """<robot name="pendulum"><link name="base"/>
<link name="arm"><inertial><origin xyz="0 0 -0.3"/><mass value="1.2"/>
<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.012" iyz="0" izz="0.01"/></inertial></link>
<joint name="j" type="continuous"><parent link="base"/><child link="arm"/><origin xyz="0 0 0"/><axis xyz="0 1 0"/></joint>
<biobullet version="1"><gravity xyz="0 0 -9.81"/>{elements}</biobullet></robot>"""

ELEMENTS = {
    "spring, Fourier reference": '<joint_spring_reference joint="j" stiffness="10" damping="0.2" type="fourier" '
                                 'period="1.0" a0="0.1" a="0.3 -0.05" b="0.02 0.1"/>',
    "spring, constant rest": '<joint_spring_reference joint="j" stiffness="7" damping="0.5" rest="0.25"/>',
    "spring, expression in t": '<joint_spring_reference joint="j" stiffness="4" damping="0.1" type="expression" '
                               'expression="0.2*sin(3*t) + 0.1*t"/>',
    "stop, lower and upper": '<joint_contact_stop joint="j" lower="-0.2" upper="0.4" lever="0.01" stiffness="75000" '
                             'damping="20" smoothing="1e6"/>',
}


@pytest.mark.parametrize("label", list(ELEMENTS))
def test_each_study_element_alone(tmp_path, label):
    path = tmp_path / "pendulum.urdf"
    path.write_text(PENDULUM.format(elements=ELEMENTS[label]))
    model = biobullet.load_model(path)
    fast, slow = System(model, "reduced"), System(model, "reduced", {"compiled": False})
    assert type(fast._compiled) is CompiledExplicitRHS, label
    rng = np.random.default_rng(3)
    # beyond each limit, inside the smoothing band (|δ| ≲ 1e-6 m: |Δθ| ≲ 1e-4 rad), far away, and random
    angles = [-0.5, -0.2 - 2e-5, -0.2 + 3e-5, -0.2, 0.0, 0.4 - 4e-5, 0.4 + 1e-5, 0.9, *rng.uniform(-1.0, 1.0, 12)]
    for theta in angles:
        for rate in (-2.0, 0.0, 1.5):
            t = float(rng.uniform(0.0, 2.0))
            y = np.array([theta, rate, 0.0, 0.0])
            ref = slow._checked_rhs(t, y)
            _close(fast._compiled(t, y), ref, (label, theta, rate))
            if "stop" not in label:
                assert ref[-1] > 0.0 or rate == 0.0   # damping dissipates
            if "spring" in label and rate != 0.0:
                assert ref[-2] != 0.0                 # the elastic part is booked as input power


@pytest.mark.slow
def test_short_runs_agree(model):
    """0.1 s from rest through the first heel strike (contact from t ≈ 0.09 s), Radau at rtol 1e-7: positions and
    the dissipated energy of the compiled and the generic run agree within the tolerance (≈ 8 s, most of it the
    generic run)."""
    runs = [biobullet.simulate(model, 0.1, method="Radau", rtol=1e-7, atol=1e-9, compiled=c, progress=False,
                               t_eval=np.linspace(0.0, 0.1, 11), error_control="state") for c in (True, False)]
    assert runs[0].meta["discrete"]["heel"]["intervals"]   # the heel did strike
    assert np.abs(runs[0].positions - runs[1].positions).max() < 1e-7
    dissipated = runs[0].energy["dissipated"]
    assert dissipated[-1] > 0.1
    assert np.abs(dissipated - runs[1].energy["dissipated"]).max() < 1e-7 * max(1.0, dissipated[-1]) * 10
