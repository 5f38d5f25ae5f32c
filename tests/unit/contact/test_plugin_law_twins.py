"""Plug-in contact laws with a compiled twin (`NormalLaw.compiled_twin` / `FrictionLaw.compiled_twin`,
contact/base.py): a toy normal law (F = K δ³ + D δ δ̇ for δ > 0, clipped) and a toy friction law
(μ_eff = μ tanh(s / v0) + σ s) registered here.

Reference: the laws written out in the test (`_normal_law`, `_friction_law`) and closed forms. The compiled law
dispatch (`contact.kernels._normal_force_py` / `_friction_coefficient_py`, the twin reached by its address)
equals the written-out laws to 1e-14 relative; on the compiled right-hand side a sliding point block (1 kg,
prismatic x and z, ground z = 0) has v̇ = (−μ_eff(|ẋ|) F_N sign ẋ, −g + F_N) and the dissipated power
D δ δ̇² + μ_eff F_N |ẋ| with the contact active, free fall when inactive (1e-12 relative); a run falls freely to
the onset at t = √(2h/g) and friction slows the block; on the PyBullet bridge a ball dropped onto the toy law comes
to rest where K δ³ = m g.
"""
from __future__ import annotations

import math
from fractions import Fraction
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pytest

from biobullet.contact import kernels
from biobullet.contact.base import FrictionLaw, LawTwin, NormalLaw
from biobullet.contact.element import Contact
from biobullet.contact.registry import FRICTION_LAWS, NORMAL_LAWS, register_friction_law, register_normal_law
from biobullet.contact.testbed import slider_urdf
from biobullet.loader import load_text
from biobullet.core.attributes import number
from biobullet.integrate.compiled_rhs import CompiledReducedRHS
from biobullet.integrate.engine import System, simulate



def _toy_cubic_py(p, delta, delta_dot, impact_velocity):
    """F_N = K δ³ + D δ δ̇ for δ > 0, clipped at 0 (p = [K, D])."""
    if not delta > 0.0:
        return 0.0
    f = p[0] * delta * delta * delta + p[1] * delta * delta_dot
    return f if f > 0.0 else 0.0


def _toy_tanh_py(p, speed):
    """μ_eff = μ tanh(s / v0) + σ s (p = [μ, v0, σ])."""
    return p[0] * math.tanh(speed / p[1]) + p[2] * speed


class ToyCubic(NormalLaw):
    law_name: ClassVar[str] = "toy_cubic"
    attributes: ClassVar[tuple[str, ...]] = ("stiffness", "damping")

    def __init__(self, *, stiffness: float, damping: float) -> None:
        super().__init__()
        self.stiffness, self.damping = float(stiffness), float(damping)

    @classmethod
    def from_attributes(cls, attributes: Mapping[str, Any], source=None) -> "ToyCubic":
        return cls(stiffness=number(source, attributes, "stiffness"), damping=number(source, attributes, "damping"))

    @property
    def parameters(self):
        return {"stiffness": self.stiffness, "damping": self.damping}

    def _unclipped(self, delta, delta_dot, impact_velocity):
        return self.stiffness * np.power(delta, 3) + self.damping * delta * delta_dot

    def compiled_twin(self):
        return LawTwin(_toy_cubic_py, (self.stiffness, self.damping))


class ToyTanh(FrictionLaw):
    law_name: ClassVar[str] = "toy_tanh"
    attributes: ClassVar[tuple[str, ...]] = ("mu", "v0", "viscous")

    def __init__(self, *, mu: float, v0: float, viscous: float) -> None:
        self.mu, self.v0, self.viscous = float(mu), float(v0), float(viscous)

    @classmethod
    def from_attributes(cls, attributes: Mapping[str, Any], source=None) -> "ToyTanh":
        return cls(**{key: number(source, attributes, key) for key in ("mu", "v0", "viscous")})

    @property
    def parameters(self):
        return {"mu": self.mu, "v0": self.v0, "viscous": self.viscous}

    def coefficient(self, speed):
        s = np.asarray(speed, dtype=float)
        return self.mu * np.tanh(s / self.v0) + self.viscous * s

    def compiled_twin(self):
        return LawTwin(_toy_tanh_py, (self.mu, self.v0, self.viscous))


@pytest.fixture(autouse=True, scope="module")
def _registered():
    """The toy laws in the registries for this module only (other tests list the registered laws)."""
    register_normal_law(ToyCubic)
    register_friction_law(ToyTanh)
    yield
    NORMAL_LAWS._table.pop(ToyCubic.law_name, None)
    FRICTION_LAWS._table.pop(ToyTanh.law_name, None)


LAWS = {"normal_law": "toy_cubic", "stiffness": "4e8", "damping": "3e4", "friction_law": "toy_tanh", "mu": "0.5",
        "v0": "0.01", "viscous": "0.2"}


def _normal_law(delta: float, delta_dot: float, stiffness: float, damping: float) -> float:
    """The toy normal law as documented: K δ³ + D δ δ̇ for δ > 0, clipped at 0; 0 outside contact."""
    return max(0.0, stiffness * delta ** 3 + damping * delta * delta_dot) if delta > 0.0 else 0.0


def _friction_law(speed: float) -> float:
    """The toy friction law with `LAWS`' parameters: μ_eff = 0.5 tanh(s / 0.01) + 0.2 s."""
    return 0.5 * math.tanh(speed / 0.01) + 0.2 * speed


def test_twins_are_reached_by_address_and_equal_the_written_out_laws():
    normal, friction = ToyCubic(stiffness=4e8, damping=2e6), ToyTanh(mu=0.5, v0=0.01, viscous=0.2)
    kind, p = kernels.pack_normal(normal)
    f_kind, f_p = kernels.pack_friction(friction)
    assert kind >= kernels.PLUGIN_KIND and f_kind >= kernels.PLUGIN_KIND
    force, coefficient = kernels.normal_force_kernel(), kernels.friction_coefficient_kernel()
    rng = np.random.default_rng(2)
    for delta, delta_dot, speed in zip(rng.uniform(-2e-3, 5e-3, 300), rng.normal(scale=0.5, size=300),
                                       np.abs(rng.normal(scale=0.05, size=300))):
        reference = _normal_law(delta, delta_dot, 4e8, 2e6)
        assert force(kind, p, delta, delta_dot, 0.0) == pytest.approx(reference, rel=1e-14, abs=1e-300)
        assert coefficient(f_kind, f_p, speed) == pytest.approx(_friction_law(speed), rel=1e-14)


def test_law_without_twin_or_with_too_many_parameters_keeps_the_python_path(monkeypatch):
    normal = ToyCubic(stiffness=1.0, damping=0.0)
    monkeypatch.setattr(ToyCubic, "compiled_twin", lambda self: None)
    assert kernels.pack_normal(normal) is None
    monkeypatch.setattr(ToyCubic, "compiled_twin", lambda self: LawTwin(_toy_cubic_py, np.ones(kernels.N_PARAMS + 1)))
    assert kernels.pack_normal(normal) is None


def _system(tmp_path):
    model = load_text(slider_urdf(LAWS), tmp_path)
    system = System(model, None)
    assert isinstance(system._compiled, CompiledReducedRHS)
    return model, system


def test_sliding_contact_on_the_compiled_rhs_obeys_the_laws(tmp_path):
    """q = (slide, drop): penetration δ = −drop, δ̇ = −drop rate, slip speed |slide rate|; 1 kg."""
    model, system = _system(tmp_path)
    contact = next(e for e in system.elements if type(e) is Contact)
    rng = np.random.default_rng(4)
    loaded = 0
    for k in range(24):
        contact.state.active = k % 4 != 0   # the discrete state the engine's events would set
        q = np.array([rng.uniform(-1.0, 1.0), rng.uniform(-3e-3, 1e-3)])   # depth up to 3 mm
        v = np.array([rng.normal(scale=0.3), rng.normal(scale=0.2)])
        y = np.concatenate([q, v, [0.0, 0.0]])
        t = float(rng.uniform(0.0, 1.0))
        got = system._compiled(t, y)
        assert got is not None
        delta, delta_dot, speed = -q[1], -v[1], abs(v[0])
        normal = _normal_law(delta, delta_dot, 4e8, 3e4) if contact.state.active else 0.0
        mu = _friction_law(speed)
        expected = np.array([-mu * normal * np.sign(v[0]), -9.81 + normal])
        np.testing.assert_allclose(got[2:4], expected, rtol=1e-12, atol=1e-12 * max(1.0, abs(normal)))
        if normal > 0.0:   # unclipped: the damping part's power and friction's
            dissipated = 3e4 * delta * delta_dot ** 2 + mu * normal * speed
            assert got[-1] == pytest.approx(dissipated, rel=1e-12, abs=1e-12)
            loaded += 1
    assert loaded >= 6   # normal and friction dissipation were checked in many states


def test_run_falls_freely_to_the_onset_and_friction_slows_the_block(tmp_path):
    model, _ = _system(tmp_path)
    run = simulate(model, 0.3, rtol=1e-9, atol=1e-12, progress=False, t_eval=np.linspace(0, 0.3, 31),
                   initial={"drop": 0.02, "slide_dot": 0.8})
    intervals = run.meta["discrete"]["C"]["intervals"]
    assert len(intervals) >= 1
    assert intervals[0]["start"] == pytest.approx(math.sqrt(2.0 * 0.02 / 9.81), abs=1e-9)   # free fall
    before = run.t < intervals[0]["start"]
    np.testing.assert_allclose(run.velocities[before, 0], 0.8, rtol=1e-12)   # no friction in flight
    slide = run.positions[:, 0]
    assert slide[-1] - slide[0] < 0.8 * 0.3 - 1e-3   # friction did slow the block


def _not_compilable_py(p, delta, delta_dot, impact_velocity):
    return float(Fraction(1, 3)) * p[0] * delta


def test_twin_that_does_not_compile_warns_and_keeps_the_python_law(monkeypatch):
    monkeypatch.setattr(ToyCubic, "compiled_twin", lambda self: LawTwin(_not_compilable_py, (1.0,)))
    with pytest.warns(RuntimeWarning, match="_not_compilable_py does not compile"):
        assert kernels.pack_normal(ToyCubic(stiffness=1.0, damping=0.0)) is None


def test_bridge_ball_comes_to_rest_on_the_toy_law(tmp_path):
    """The PyBullet bridge's compiled ground call with the twins: a 1 kg ball (r = 5 cm) dropped from 10 cm onto
    the toy law (K = 4e8 N/m³, D = 3e4: damping ratio ≈ 0.45 at rest) lands, and after 0.6 s rests at the
    height 0.05 − δ with K δ³ = m g (δ = 2.9 mm): to 1e-7 m (the decayed oscillation is below 1e-9 m)."""
    pybullet = pytest.importorskip("pybullet")
    from biobullet.bridge.bridge import Bridge
    from biobullet.contact.testbed import drop_urdf

    model = load_text(drop_urdf(LAWS), tmp_path)
    client = pybullet.connect(pybullet.DIRECT)
    try:
        with Bridge(model, client, dt=1e-4, initial={"drop": 0.1}) as bridge:
            assert bridge.contacts._ground is not None   # the compiled ground call, with the twins
            heights = []
            for _ in range(6000):
                bridge.step()
                heights.append(bridge.state()[1][0])
            intervals = bridge.contacts.intervals()
    finally:
        pybullet.disconnect(client)
    rest = 0.05 - (9.81 / 4e8) ** (1.0 / 3.0)
    assert len(intervals) >= 1 and min(heights) < rest
    assert heights[-1] == pytest.approx(rest, abs=1e-7)
