"""`validate` passed a wrong model (hunt29's finding): arm7 (bundled) with a 1e-6 kg sensor link, checked against a
reference URDF whose sensor is wrong.

- q̈ was judged against tolerances inflated by the conditioning of M (cond ≈ 1e14 with the sensor): 100·ε·‖M⁻¹‖
  for PyBullet (ε an absolute inertia error of the heavy links, ‖M⁻¹‖ ≈ 1e14: a tolerance of 3.6e3) and
  1e-15·cond(M) for Pinocchio (0.43), while q̈'s error was measured against its largest entry. The sensor's
  inertia 2× off, or 1e-3 off, passed.
- The inertia check was absolute in SI units below 1 (Pinocchio 1e-9, PyBullet 1e-6): a 1e-6 kg sensor's mass,
  COM (1 mm) or inertia (1e-14 kg·m²) off by 1e-3 of itself passed.

Now each body's mass, COM and inertia are judged against the body's own size, and q̈ by the generalized force
its error stands for, M (q̈ − q̈_ref), against the force scale (m·|g|·L, or the largest |M q̈_ref|): per direction of
M, without cond(M). Checked against Pinocchio on the two files: the sensor's own acceleration really differs by
what the report says, and the correct model still passes with both oracles.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.validate import validate_model

pin = pytest.importorskip("pinocchio")
pytest.importorskip("pybullet")

ARM7 = Path(biobullet.__file__).resolve().parents[2] / "urdf" / "arm7.urdf"
SENSOR = dict(mass=1e-6, com=(1e-3, 0.0, 0.0), inertia=(1e-14, 1e-14, 1e-14))


def _with_sensor(mass: float, com, inertia) -> str:
    """arm7 with a sensor on link_7: a hinge about z, its COM 1 mm off the axis (M's sensor entry ≈ 1e-12 kg·m²
    against the arm's ≈ 1: cond(M) ≈ 1e13)."""
    ixx, iyy, izz = inertia
    sensor = f'''<link name="sensor"><inertial><origin xyz="{com[0]!r} {com[1]!r} {com[2]!r}"/>
  <mass value="{mass!r}"/><inertia ixx="{ixx!r}" ixy="0" ixz="0" iyy="{iyy!r}" iyz="0" izz="{izz!r}"/></inertial></link>
<joint name="sensor_hinge" type="revolute"><parent link="link_7"/><child link="sensor"/><origin xyz="0 0 0.05"/>
  <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
'''
    return ARM7.read_text().replace("<biobullet", sensor + "<biobullet", 1)


def _write(folder: Path, name: str, **changes) -> str:
    path = folder / f"{name}.urdf"
    path.write_text(_with_sensor(**{**SENSOR, **changes}))
    return str(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("light_link")
    return {
        "correct": _write(folder, "correct"),
        "inertia_2x": _write(folder, "inertia_2x", inertia=(2e-14, 2e-14, 2e-14)),
        "inertia_1e-3": _write(folder, "inertia_1e-3", inertia=(1.001e-14, 1.001e-14, 1.001e-14)),
        "com_1e-3": _write(folder, "com_1e-3", com=(1.001e-3, 0.0, 0.0)),
        "mass_1e-3": _write(folder, "mass_1e-3", mass=1.001e-6),
    }


@pytest.fixture(scope="module")
def model(files):
    return biobullet.load_model(files["correct"])


def _sensor_acceleration_change(correct: str, wrong: str) -> float:
    """Pinocchio's ABA on both files at one state: the relative change of the sensor's q̈ (the wrong file's
    effect, measured without biobullet)."""
    accelerations = []
    for file in (correct, wrong):
        pin_model = pin.buildModelFromUrdf(file)
        q = np.linspace(-0.5, 0.6, pin_model.nq)
        v = np.linspace(0.3, -0.4, pin_model.nv)
        tau = np.linspace(1.0, -1.0, pin_model.nv) * 1e-9   # (torques the sensor can carry)
        accelerations.append(pin.aba(pin_model, pin_model.createData(), q, v, tau)[-1])
    return abs(accelerations[1] - accelerations[0]) / abs(accelerations[0])


def _failed(report) -> set[str]:
    return {check.quantity for check in report.checks if not check.ok}


@pytest.mark.parametrize("oracle", ["pinocchio", "pybullet"])
def test_the_correct_model_passes(model, files, oracle):
    report = validate_model(model, samples=3, oracles=(oracle,), reference_file=files["correct"])
    assert report.ok, report.to_table()
    # the forward dynamics are judged at the tolerance itself (before: 0.43 for Pinocchio, 3.6e3 for PyBullet)
    for check in report.checks:
        if check.quantity == "forward_dynamics":
            assert check.tolerance <= 1e-7, report.to_table()


def test_inertia_twice_as_large_is_reported_against_pybullet(model, files):
    """(a) PyBullet, the sensor's inertia 2× the model's: on main OK (q̈ measured against a tolerance of 3.6e3)."""
    assert _sensor_acceleration_change(files["correct"], files["inertia_2x"]) > 1e-3
    report = validate_model(model, samples=3, oracles=("pybullet",), reference_file=files["inertia_2x"])
    assert not report.ok
    assert {"spatial_inertia", "forward_dynamics"} <= _failed(report), report.to_table()
    inertia = next(c for c in report.checks if c.quantity == "spatial_inertia")
    assert "link sensor" in (inertia.error or ""), inertia


def test_inertia_off_by_1e_3_is_reported_against_pinocchio(model, files):
    """(b) Pinocchio, the sensor's inertia 1e-3 off: on main OK (q̈ against 1e-15·cond(M) = 0.43; the inertia
    check absolute below 1 kg·m²)."""
    change = _sensor_acceleration_change(files["correct"], files["inertia_1e-3"])
    assert change > 1e-6   # the sensor's own acceleration moves by ≈ 1e-5 of itself: far above round-off
    report = validate_model(model, samples=3, oracles=("pinocchio",), reference_file=files["inertia_1e-3"])
    assert {"spatial_inertia", "forward_dynamics"} <= _failed(report), report.to_table()
    inertia = next(c for c in report.checks if c.quantity == "spatial_inertia")
    assert "sensor_hinge" in (inertia.error or ""), inertia
    # the error is reported as what it is relative to the sensor: 1e-5 of its inertia about its hinge
    assert 1e-6 < inertia.max_rel_error < 1e-4


@pytest.mark.parametrize("wrong", ["com_1e-3", "mass_1e-3"])
def test_light_link_com_or_mass_off_by_1e_3_is_reported(model, files, wrong):
    """A 1 µm error of the sensor's 1 mm COM, or 1e-9 kg of its 1e-6 kg: on main OK against PyBullet (absolute
    inertia tolerance 1e-6), now the inertia check fails with both oracles, naming the sensor."""
    assert _sensor_acceleration_change(files["correct"], files[wrong]) > 1e-5
    for oracle, body in (("pybullet", "link sensor"), ("pinocchio", "sensor_hinge")):
        report = validate_model(model, samples=2, oracles=(oracle,), reference_file=files[wrong])
        assert "spatial_inertia" in _failed(report), report.to_table()
        inertia = next(c for c in report.checks if c.quantity == "spatial_inertia")
        assert body in (inertia.error or "") and 1e-4 < inertia.max_rel_error < 1e-2, inertia
