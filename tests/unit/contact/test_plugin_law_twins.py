"""Plug-in contact laws with a compiled twin (`NormalLaw.compiled_twin` / `FrictionLaw.compiled_twin`,
contact/base.py): a toy normal law (F = K δ³ + D δ δ̇ for δ > 0, clipped) and a toy friction law
(μ_eff = μ tanh(s / v0) + σ s) registered here.

Reference: the laws' own vectorised numpy methods (`force`, `coefficient`) and the engine's generic path
(`System._checked_rhs`: `Contact.generalized_force` and `Contact.dissipated_power` from numpy kinematics and the
Python laws). The compiled law dispatch (`contact.kernels._normal_force_py` / `_friction_coefficient_py`, the
twin reached by its address) must equal the numpy laws to 1e-14 relative; a sliding block on the ground must run
on the compiled right-hand side with ẏ equal to the generic path to 1e-12 relative with the contact active and
inactive, and whole runs compiled / generic must agree within the integration tolerance with the same contact
intervals.
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
from biobullet.core import jit
from biobullet.core.attributes import number
from biobullet.integrate.compiled_explicit import CompiledExplicitRHS
from biobullet.integrate.engine import System, simulate

pytestmark = pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: plug-in twins need the compiled path")


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


def test_twins_are_reached_by_address_and_equal_the_numpy_laws():
    normal, friction = ToyCubic(stiffness=4e8, damping=2e6), ToyTanh(mu=0.5, v0=0.01, viscous=0.2)
    kind, p = kernels.pack_normal(normal)
    f_kind, f_p = kernels.pack_friction(friction)
    assert kind >= kernels.PLUGIN_KIND and f_kind >= kernels.PLUGIN_KIND
    force, coefficient = kernels.normal_force_kernel(), kernels.friction_coefficient_kernel()
    rng = np.random.default_rng(2)
    for delta, delta_dot, speed in zip(rng.uniform(-2e-3, 5e-3, 300), rng.normal(scale=0.5, size=300),
                                       np.abs(rng.normal(scale=0.05, size=300))):
        reference = float(normal.force(delta, delta_dot))
        assert force(kind, p, delta, delta_dot, 0.0) == pytest.approx(reference, rel=1e-14, abs=1e-300)
        assert coefficient(f_kind, f_p, speed) == pytest.approx(float(friction.coefficient(speed)), rel=1e-14)


def test_law_without_twin_or_with_too_many_parameters_keeps_the_python_path(monkeypatch):
    normal = ToyCubic(stiffness=1.0, damping=0.0)
    monkeypatch.setattr(ToyCubic, "compiled_twin", lambda self: None)
    assert kernels.pack_normal(normal) is None
    monkeypatch.setattr(ToyCubic, "compiled_twin", lambda self: LawTwin(_toy_cubic_py, np.ones(kernels.N_PARAMS + 1)))
    assert kernels.pack_normal(normal) is None


def _systems(tmp_path):
    model = load_text(slider_urdf(LAWS), tmp_path)
    fast, slow = System(model, None), System(model, None, {"compiled": False})
    assert isinstance(fast._compiled, CompiledExplicitRHS) and slow._compiled is None
    return model, fast, slow


def test_sliding_contact_on_the_compiled_rhs_equals_the_generic_path(tmp_path):
    model, fast, slow = _systems(tmp_path)
    rng = np.random.default_rng(4)
    loaded = 0
    for k in range(60):
        for system in (fast, slow):   # the discrete state the engine's events would set
            for contact in (e for e in system.elements if type(e) is Contact):
                contact.state.active = k % 4 != 0
        q = np.array([rng.uniform(-1.0, 1.0), rng.uniform(-3e-3, 1e-3)])   # depth up to 3 mm
        v = np.array([rng.normal(scale=0.3), rng.normal(scale=0.2)])
        y = np.concatenate([q, v, [0.0, 0.0]])
        t = float(rng.uniform(0.0, 1.0))
        got, ref = fast._compiled(t, y), slow._checked_rhs(t, y)
        assert got is not None
        assert np.abs(got - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max()), (k, got - ref)
        loaded += ref[-1] > 0.0
    assert loaded >= 20   # normal and friction dissipation were compared in many states


def test_whole_runs_agree(tmp_path):
    model, _, _ = _systems(tmp_path)
    runs = [simulate(model, 0.3, rtol=1e-9, atol=1e-12, compiled=c, progress=False, t_eval=np.linspace(0, 0.3, 31),
                     initial={"drop": 0.02, "slide_dot": 0.8}) for c in (True, False)]
    assert np.abs(runs[0].positions - runs[1].positions).max() < 1e-7
    intervals = [r.meta["discrete"]["C"]["intervals"] for r in runs]
    assert len(intervals[0]) == len(intervals[1]) >= 1
    for a, b in zip(*intervals):
        assert a["start"] == pytest.approx(b["start"], abs=1e-7)
    slide = runs[0].positions[:, 0]
    assert slide[-1] - slide[0] < 0.8 * 0.3 - 1e-3   # friction did slow the block


def _not_compilable_py(p, delta, delta_dot, impact_velocity):
    return float(Fraction(1, 3)) * p[0] * delta


def test_twin_that_does_not_compile_warns_and_keeps_the_python_law(monkeypatch):
    monkeypatch.setattr(ToyCubic, "compiled_twin", lambda self: LawTwin(_not_compilable_py, (1.0,)))
    with pytest.warns(RuntimeWarning, match="_not_compilable_py does not compile"):
        assert kernels.pack_normal(ToyCubic(stiffness=1.0, damping=0.0)) is None


def test_bridge_steps_with_the_twin_as_with_the_python_law(tmp_path, monkeypatch):
    """The PyBullet bridge's compiled ground call with the twins against its Python-law path (the twin switched
    off): same heights and contact intervals to round-off over 3,000 steps of a drop onto the toy law."""
    pybullet = pytest.importorskip("pybullet")
    from biobullet.bridge.bridge import Bridge
    from biobullet.contact.testbed import drop_urdf

    model = load_text(drop_urdf(LAWS), tmp_path)
    runs = []
    for twin in (True, False):
        if not twin:
            monkeypatch.setattr(ToyCubic, "compiled_twin", lambda self: None)
        client = pybullet.connect(pybullet.DIRECT)
        try:
            with Bridge(model, client, dt=1e-4, initial={"drop": 0.1}) as bridge:   # ball radius 0.05 m
                assert (bridge.contacts._ground is not None) == twin   # the compiled ground call only with twins
                heights = []
                for _ in range(3000):
                    bridge.step()
                    heights.append(bridge.state()[1][0])
                runs.append((np.array(heights), bridge.contacts.intervals()))
        finally:
            pybullet.disconnect(client)
    (h_twin, i_twin), (h_python, i_python) = runs
    assert h_twin.min() < 0.05 - 1e-3 and len(i_twin) == len(i_python) >= 1   # it did land on the toy law
    assert np.abs(h_twin - h_python).max() < 1e-10
    assert i_twin[0]["peak_force"] == pytest.approx(i_python[0]["peak_force"], rel=1e-9)
