"""The prosthesis study's force elements (`biobullet_studies.tracking`: `joint_spring_reference`,
`joint_contact_stop`) on the library's compiled right-hand sides through their `compiled_kernel` hooks, checked
against their documented laws written out in the test and physics (`rhs_oracles`), not against the elements' own
numpy methods.

- The bundled model urdf/prosthesis_fourbar.urdf with ALL its elements (four drivers, the knee loop, the damper,
  heel and toe contacts, the knee stop, the ankle spring) runs on `CompiledReducedRHS`; at random states (knee
  stop engaged by hyperextension or not, the foot clear of the ground) ẏ satisfies d'Alembert's principle with
  Pinocchio's inverse dynamics and the laws written out (`rhs_oracles.prosthesis_forces`).
- Each element alone on a pendulum (`CompiledReducedRHS`): θ̈ = (−m g l sin θ + τ)/I in closed form, τ the
  element's law — the reference angle as a Fourier series, a constant, an expression in t; the stop with a lower
  and an upper limit, at angles beyond each limit, inside the arctan smoothing band and far away (1e-12 relative).
- A 0.1 s run of the prosthesis through the first heel strike; its states before the strike obey the laws.
"""
from __future__ import annotations

from pathlib import Path


import numpy as np
import pytest

import biobullet
from biobullet.integrate.compiled_rhs import CompiledReducedRHS
from biobullet.integrate.engine import System
from biobullet_studies.common import bundled_model
from biobullet_studies.tracking import JointContactStop, JointSpringReference
from rhs_oracles import PinocchioTree, assert_dalembert, fourier, prosthesis_forces, states_of


PATH = bundled_model("prosthesis_fourbar.urdf")


@pytest.fixture(scope="module")
def model():
    return biobullet.load_model(PATH)


def test_bundled_model_with_its_study_elements_is_compiled(model):
    system = System(model, "reduced")
    assert type(system._compiled) is CompiledReducedRHS
    assert {type(e) for e in system.elements} >= {JointContactStop, JointSpringReference}
    tree = PinocchioTree(model)
    law = prosthesis_forces(tree, Path(PATH).read_text())
    knee_b = model.joint_names.index("knee_B")
    rng = np.random.default_rng(23)
    engaged = checked = 0
    for k in range(30):
        t = float(rng.uniform(0.0, 2.0))
        # every third state hyperextended (knee_A < 0 → knee_B < 0: the stop pushes)
        q = np.array([rng.uniform(-0.1, -0.01) if k % 3 == 0 else rng.uniform(0.0, 1.2), rng.uniform(-0.4, 0.4)])
        v = rng.normal(size=2) * 3.0
        x, _, _, _ = model.joint_state(q, v, t)
        if min(tree.point(x, "foot", [dx, 0.0, -0.07098])[0][2] for dx in (-0.06, 0.19)) < 0.01:
            continue   # the foot near the ground: the contacts' laws are checked in test_compiled_contacts.py
        y = np.concatenate([q, v, [0.0, 0.0]])
        assert_dalembert(system, tree, t, y, system.rhs(t, y), law)
        checked += 1
        engaged += x[knee_b] < 0.0
    assert checked >= 10 and engaged >= 3   # both regimes of the stop were checked


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


def _pendulum_torque(label: str, theta: float, rate: float, t: float) -> float:
    """Each element's documented law with `ELEMENTS`' numbers: the spring τ = −k (θ − θ₀(t)) − c θ̇; the stop
    τ = Σ ±d F, F = max(0, [½ + atan(C δ)/π](K δ + D δ̇)), δ = d (lower − θ) and d (θ − upper)."""
    if label == "stop, lower and upper":
        d, total = 0.01, 0.0
        for sign, delta, delta_dot in ((1.0, d * (-0.2 - theta), -d * rate), (-1.0, d * (theta - 0.4), d * rate)):
            force = (0.5 + np.arctan(1e6 * delta) / np.pi) * (75000.0 * delta + 20.0 * delta_dot)
            total += sign * d * max(0.0, force)
        return total
    stiffness, damping, rest = {
        "spring, Fourier reference": (10.0, 0.2, fourier(t, 1.0, 0.1, [0.3, -0.05], [0.02, 0.1])),
        "spring, constant rest": (7.0, 0.5, 0.25),
        "spring, expression in t": (4.0, 0.1, 0.2 * np.sin(3.0 * t) + 0.1 * t)}[label]
    return -stiffness * (theta - rest) - damping * rate


@pytest.mark.parametrize("label", list(ELEMENTS))
def test_each_study_element_alone(tmp_path, label):
    """The pendulum: 1.2 kg at l = 0.3 m below the axis (y), I = 0.012 + 1.2·0.3² kg m²; θ̈ closed form to 1e-12
    relative of the largest term (the torques cancel to ~1e-3 of the stop's lever force near its limits)."""
    path = tmp_path / "pendulum.urdf"
    path.write_text(PENDULUM.format(elements=ELEMENTS[label]))
    model = biobullet.load_model(path)
    system = System(model, "reduced")
    assert type(system._compiled) is CompiledReducedRHS, label
    rng = np.random.default_rng(3)
    inertia, weight = 0.012 + 1.2 * 0.3 ** 2, 1.2 * 9.81 * 0.3
    # beyond each limit, inside the smoothing band (|δ| ≲ 1e-6 m: |Δθ| ≲ 1e-4 rad), far away, and random
    angles = [-0.5, -0.2 - 2e-5, -0.2 + 3e-5, -0.2, 0.0, 0.4 - 4e-5, 0.4 + 1e-5, 0.9, *rng.uniform(-1.0, 1.0, 6)]
    for theta in angles:
        for rate in (-2.0, 0.0, 1.5):
            t = float(rng.uniform(0.0, 2.0))
            got = system._compiled(t, np.array([theta, rate, 0.0, 0.0]))
            assert got is not None
            torque = _pendulum_torque(label, theta, rate, t)
            scale = max(abs(torque), weight) / inertia
            expected = (-weight * np.sin(theta) + torque) / inertia
            assert abs(got[1] - expected) <= 1e-12 * scale, (label, theta, rate, got[1] - expected)
            if "stop" not in label:
                assert got[-1] > 0.0 or rate == 0.0   # damping dissipates
            if "spring" in label and rate != 0.0:
                assert got[-2] != 0.0                 # the elastic part is booked as input power


@pytest.mark.slow
def test_short_run_obeys_the_laws(model):
    """0.1 s from rest through the first heel strike (contact from t ≈ 0.09 s), Radau at rtol 1e-7: the heel
    strikes, damping dissipates, and the run's states before the strike satisfy d'Alembert's principle with the
    laws written out."""
    run = biobullet.simulate(model, 0.1, method="Radau", rtol=1e-7, atol=1e-9, progress=False,
                             t_eval=np.linspace(0.0, 0.1, 11), error_control="state")
    assert run.meta["discrete"]["heel"]["intervals"]   # the heel did strike
    assert run.energy["dissipated"][-1] > 0.1
    system = System(model, "reduced")
    tree = PinocchioTree(model)
    law = prosthesis_forces(tree, Path(PATH).read_text())
    for t, y in states_of(system, run, (2, 5, 8)):
        assert_dalembert(system, tree, t, y, system.rhs(t, y), law)
