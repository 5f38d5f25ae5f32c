"""A third-party loop type (the constraints plugin family): a massless rod of length L between A and B,
Φ = ½ (|p_A − p_B|² − L²), registered with `register_loop_type` and used from a model file.

Checked against things it does not compute itself: finite differences of Φ along a path (Φ_x ẋ and b = Φ̇_x ẋ),
the two formulations against each other (reduced: implicit Newton on the plugin's rows; multipliers: KKT with the
plugin's Jacobian and bias), conservation of energy (gravity only), and the rod length along the motion.
"""
from __future__ import annotations

import numpy as np
import pytest

import biobullet
from biobullet.constraints import loop_types
from biobullet.constraints.equations import constraint_set
from biobullet.constraints.loop_types import LoopType, register_loop_type
from biobullet.constraints.loops import loop_terms
from biobullet.core.errors import ModelError


class Rod(LoopType):
    type_name = "rod_test"
    n_equations = 1
    row_suffixes = ("length",)
    attributes = ("length",)

    def __init__(self, length: float) -> None:
        self.length = length

    @classmethod
    def from_attributes(cls, attributes, source):
        text = attributes.get("length")
        if text is None:
            raise source.error("length", "missing required attribute", "the rod length > 0 (m)")
        value = float(text)
        if not value > 0:
            raise source.error("length", f"not positive: {text!r}", "the rod length > 0 (m)")
        return cls(value)

    def rows(self, a, b, *, jacobian, rates):
        d = a.position - b.position
        phi = np.array([0.5 * (d @ d - self.length ** 2)])
        jac = (d @ (a.jacobian[:3] - b.jacobian[:3]))[None] if jacobian else None
        bias = None
        if rates:
            d_dot = a.velocity - b.velocity
            bias = np.array([d_dot @ d_dot + d @ (a.accel - b.accel)])
        return phi, jac, bias


ARM = """<?xml version="1.0"?>
<robot name="rod_arm">
  <link name="ground"/>
  <link name="link1"><inertial><origin xyz="0.2 0 0"/><mass value="1.0"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.0143" iyz="0" izz="0.0143"/></inertial></link>
  <link name="link2"><inertial><origin xyz="0.15 0 0"/><mass value="0.5"/>
    <inertia ixx="0.0005" ixy="0" ixz="0" iyy="0.00425" iyz="0" izz="0.00425"/></inertial></link>
  <joint name="j1" type="continuous"><parent link="ground"/><child link="link1"/><axis xyz="0 1 0"/></joint>
  <joint name="j2" type="continuous"><parent link="link1"/><child link="link2"/>
    <origin xyz="0.4 0 0"/><axis xyz="0 1 0"/></joint>
  <biobullet version="1">
    <gravity xyz="0 0 -9.81"/>
    <loop name="rod" type="rod_test" link_a="link2" xyz_a="0.3 0 0" link_b="ground" xyz_b="0.7 0 -0.5" LENGTH/>
    <coordinates names="j1"/>
  </biobullet>
</robot>
"""


@pytest.fixture()
def rod_type(monkeypatch):
    loop_types.LOOP_TYPES.load()
    monkeypatch.setattr(loop_types.LOOP_TYPES, "_table", dict(loop_types.LOOP_TYPES._table))
    register_loop_type(Rod)
    return Rod


def _write(tmp_path, length='length="0.5"'):
    path = tmp_path / "rod_arm.urdf"
    path.write_text(ARM.replace("LENGTH", length))
    return path


def test_plugin_rows_match_finite_differences(rod_type, tmp_path):
    model = biobullet.load_model(_write(tmp_path))
    loops = constraint_set(model).loops
    assert [loop.type for loop in loops] == ["rod_test"] and loops[0].row_names == ("rod.length",)
    rng = np.random.default_rng(3)
    for _ in range(5):
        x, xd = rng.uniform(-1.5, 1.5, 2), rng.normal(size=2)
        phi, jac, bias = loop_terms(model, loops, x, xd)
        h = 1e-5

        def phi_at(s):
            return loop_terms(model, loops, x + s * xd, None, jacobian=False)[0]
        rate = (phi_at(h) - phi_at(-h)) / (2 * h)                       # Φ̇ = Φ_x ẋ
        second = (phi_at(h) - 2 * phi_at(0.0) + phi_at(-h)) / h ** 2    # Φ̈ with ẍ = 0 is b
        np.testing.assert_allclose(jac @ xd, rate, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(bias, second, rtol=1e-5, atol=1e-6)


def test_both_formulations_integrate_the_plugin_loop_alike(rod_type, tmp_path):
    model = biobullet.load_model(_write(tmp_path))
    # 0.25 s: the arm falls through ~50° of j1; at ~0.39 s it reaches the mechanism's toggle (rod along link2)
    kw = dict(method="DOP853", rtol=1e-10, atol=1e-12, t_eval=np.linspace(0, 0.25, 11), progress=False)
    reduced = biobullet.simulate(model, 0.25, formulation="reduced", **kw)
    multipliers = biobullet.simulate(model, 0.25, formulation="multipliers", projection=True, **kw)
    # it moved (gravity) and both agree on every joint, including the dependent one
    assert np.ptp(reduced.column("j1")) > 0.3
    np.testing.assert_allclose(multipliers.positions, reduced.positions, atol=1e-7)
    # the rod length holds along the motion, and energy is conserved (gravity only)
    loops = constraint_set(model).loops
    for x in reduced.positions:
        assert abs(loop_terms(model, loops, x, None, jacobian=False)[0][0]) <= 1e-12
    for run in (reduced, multipliers):
        energy = run.total_energy()
        assert np.max(np.abs(energy - energy[0])) <= 1e-7


def test_plugin_attributes_are_checked_with_clear_errors(rod_type, tmp_path):
    with pytest.raises(ModelError) as missing:
        biobullet.load_model(_write(tmp_path, length=""))
    assert missing.value.attribute == "length" and "<loop" in str(missing.value)
    with pytest.raises(ModelError) as unknown:
        biobullet.load_model(_write(tmp_path, length='length="0.5" normal="0 1 0"'))
    assert unknown.value.attribute == "normal" and "length" in str(unknown.value)


def test_unknown_loop_type_lists_the_registered_ones(rod_type, tmp_path):
    path = tmp_path / "bad.urdf"
    path.write_text(ARM.replace("rod_test", "rod_nope").replace("LENGTH", 'length="0.5"'))
    with pytest.raises(ModelError, match="unknown loop type 'rod_nope'") as error:
        biobullet.load_model(path)
    for name in ("point", "planar", "revolute", "rod_test"):
        assert name in str(error.value)


def test_the_pinocchio_oracle_refuses_a_plugin_type_clearly(rod_type, tmp_path):
    pytest.importorskip("pinocchio")
    from loop_oracle import PinocchioLoopOracle
    model = biobullet.load_model(_write(tmp_path))
    with pytest.raises(ModelError, match="rod_test loops have no Pinocchio counterpart"):
        PinocchioLoopOracle(model)
