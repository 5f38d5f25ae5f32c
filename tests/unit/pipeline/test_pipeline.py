"""The pipeline's own entries (biobullet.pipeline): `forward(model, data, q, v, tau, t)` in place against
Pinocchio's ABA, M and h against CRBA and RNEA (arm7: revolute chain; humanoid: floating base, spherical joints),
two workspaces independent of each other, and calls the pipeline declines (bad input) reaching the library's
error through the Model's methods. The default-formulation calls of every bundled model are checked against
Pinocchio in tests/validation/test_oracles.py and test_joint_types.py."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.conventions import PinocchioMap, build_pinocchio_model
from biobullet.core.errors import ModelError
from biobullet.pipeline.forward import bias_forces, forward, mass_matrix

pin = pytest.importorskip("pinocchio")
ROOT = Path(__file__).resolve().parents[3]


def _state(model, rng):
    q, _ = model.initial_state()
    q = q + 0.3 * rng.normal(size=model.nq) * (np.arange(model.nq) >= model.base_nq)
    if model.base_nq:   # a random base pose (unit quaternion)
        q[:3] = rng.normal(size=3)
        quaternion = rng.normal(size=4)
        q[3:7] = quaternion / np.linalg.norm(quaternion)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


@pytest.mark.parametrize("name", ["arm7.urdf", "humanoid.urdf"])
def test_forward_mass_and_bias_equal_pinocchio(name):
    model = biobullet.load_model(ROOT / "urdf" / name)
    assert model.coordinate_map.identity   # tree order = generalized order up to Pinocchio's joint order
    pm = build_pinocchio_model(model)
    pd = pm.createData()
    mapping = PinocchioMap(model, pm)
    data = model.data()
    rng = np.random.default_rng(4)
    for _ in range(5):
        q, v, tau = _state(model, rng)
        pq, pv = mapping.config_to_pinocchio(q), mapping.velocity_to_pinocchio(v)
        ptau = mapping.velocity_to_pinocchio(tau)
        accel = forward(model, data, q, v, tau, 0.0)
        assert accel is data.acceleration   # in place
        expected = mapping.velocity_from_pinocchio(pin.aba(pm, pd, pq, pv, ptau))
        assert np.allclose(accel, expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())
        mass = mass_matrix(model, data, q, 0.0)
        expected_mass = pin.crba(pm, pd, pq)
        expected_mass = np.triu(expected_mass) + np.triu(expected_mass, 1).T
        assert np.allclose(mass, mapping.matrix_from_pinocchio(expected_mass), rtol=0, atol=1e-12 * np.abs(mass).max())
        bias = bias_forces(model, data, q, v, 0.0)
        expected_bias = mapping.velocity_from_pinocchio(pin.rnea(pm, pd, pq, pv, np.zeros(pm.nv)))
        assert np.allclose(bias, expected_bias, rtol=0, atol=1e-12 * max(1.0, np.abs(bias).max()))


def test_workspaces_are_independent():
    """Two Data of one model: a call on one leaves the other's results as they were."""
    model = biobullet.load_model(ROOT / "urdf" / "arm7.urdf")
    rng = np.random.default_rng(5)
    first, second = model.data(), model.data()
    q, v, tau = _state(model, rng)
    a = forward(model, first, q, v, tau).copy()
    forward(model, second, *_state(model, rng))
    assert np.array_equal(first.acceleration, a)
    assert np.array_equal(forward(model, first, q, v, tau), a)


def test_declined_calls_report_through_the_model():
    """Input the kernels do not take (wrong size, NaN) makes the compiled entry decline; the pipeline's entries and
    the Model's methods then raise the library's ModelError naming the argument (never None, never a traceback)."""
    model = biobullet.load_model(ROOT / "urdf" / "arm7.urdf")
    q, v, tau = _state(model, np.random.default_rng(6))
    data = model.data()
    assert data.forward(model, q[:-1], v, tau) is None
    with pytest.raises(ModelError, match="'q'"):
        forward(model, data, q[:-1], v, tau)
    bad = q.copy()
    bad[2] = np.nan
    with pytest.raises(ModelError, match="'q'"):
        forward(model, data, bad, v, tau)
    with pytest.raises(ModelError, match="'q'"):
        model.forward_dynamics(bad, v, tau)
    with pytest.raises(ModelError, match="'tau'"):
        model.forward_dynamics(q, v, tau[:-1])
    with pytest.raises(ModelError, match="'v'"):
        model.bias_forces(q, v[:3])


def test_public_calls_write_into_out_and_accept_any_layout():
    """`out=` takes the result (the same array returned), strided and read-only inputs give Pinocchio's values
    (the entry takes arrays of any layout), and an `out` that cannot take the result is one ModelError naming it."""
    model = biobullet.load_model(ROOT / "urdf" / "arm7.urdf")
    pm = build_pinocchio_model(model)
    pd = pm.createData()
    mapping = PinocchioMap(model, pm)
    q, v, tau = _state(model, np.random.default_rng(7))
    pq, pv = mapping.config_to_pinocchio(q), mapping.velocity_to_pinocchio(v)
    expected_accel = mapping.velocity_from_pinocchio(pin.aba(pm, pd, pq, pv, mapping.velocity_to_pinocchio(tau)))
    expected_bias = mapping.velocity_from_pinocchio(pin.rnea(pm, pd, pq, pv, np.zeros(pm.nv)))
    crba = pin.crba(pm, pd, pq)
    expected_mass = mapping.matrix_from_pinocchio(np.triu(crba) + np.triu(crba, 1).T)
    mass, bias, accel = np.empty((model.nv, model.nv)), np.empty(model.nv), np.empty(model.nv)
    assert model.mass_matrix(q, out=mass) is mass
    assert model.bias_forces(q, v, out=bias) is bias
    assert model.forward_dynamics(q, v, tau, out=accel) is accel
    scale = np.abs(expected_accel).max()
    assert np.allclose(mass, expected_mass, rtol=0, atol=1e-12 * np.abs(mass).max())
    assert np.allclose(bias, expected_bias, rtol=0, atol=1e-12 * np.abs(bias).max())
    assert np.allclose(accel, expected_accel, rtol=0, atol=1e-10 * scale)
    strided = np.empty((model.nq, 3))[:, 1]
    strided[:] = q
    frozen = v.copy()
    frozen.setflags(write=False)
    assert np.allclose(model.forward_dynamics(strided, frozen, tau), expected_accel, rtol=0, atol=1e-10 * scale)
    with pytest.raises(ModelError, match="'out'"):
        model.mass_matrix(q, out=np.empty(model.nv))
    with pytest.raises(ModelError, match="'out'"):
        model.bias_forces(q, v, out=np.empty(model.nv, dtype=np.float32))


def test_results_the_caller_keeps_are_never_overwritten():
    """The Model's calls reuse a result array only when nothing holds it any more (`Data.public_calls`): results
    kept in a list, a view and a name each keep Pinocchio's values of their own state while later calls run; a
    loop that drops each result two calls later gets two arrays in turn."""
    model = biobullet.load_model(ROOT / "urdf" / "arm7.urdf")
    pm = build_pinocchio_model(model)
    pd = pm.createData()
    mapping = PinocchioMap(model, pm)
    rng = np.random.default_rng(8)
    states = [_state(model, rng) for _ in range(6)]
    kept = [(model.mass_matrix(q), model.bias_forces(q, v), model.forward_dynamics(q, v, tau)) for q, v, tau in states]
    row = model.mass_matrix(states[0][0])[2]   # a view: its base is held
    for _ in range(3):
        model.mass_matrix(states[1][0])
    for (q, v, tau), (mass, bias, accel) in zip(states, kept):
        pq, pv = mapping.config_to_pinocchio(q), mapping.velocity_to_pinocchio(v)
        crba = pin.crba(pm, pd, pq)
        expected_mass = mapping.matrix_from_pinocchio(np.triu(crba) + np.triu(crba, 1).T)
        assert np.allclose(mass, expected_mass, rtol=0, atol=1e-12 * np.abs(expected_mass).max())
        expected_bias = mapping.velocity_from_pinocchio(pin.rnea(pm, pd, pq, pv, np.zeros(pm.nv)))
        assert np.allclose(bias, expected_bias, rtol=0, atol=1e-12 * np.abs(expected_bias).max())
        expected = mapping.velocity_from_pinocchio(pin.aba(pm, pd, pq, pv, mapping.velocity_to_pinocchio(tau)))
        assert np.allclose(accel, expected, rtol=0, atol=1e-10 * np.abs(expected).max())
    assert np.allclose(row, kept[0][0][2], rtol=0, atol=1e-12 * np.abs(kept[0][0]).max())
    seen = set()
    for q, v, tau in states:
        accel = model.forward_dynamics(q, v, tau)
        seen.add(id(accel))
    assert len(seen) == 2
