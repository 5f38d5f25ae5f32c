"""Third-party joint-function types with compiled jets (`JointFunction.compiled_jets` → `JetsKernel`): the compiled
explicit right-hand side calls them by address (`model.joint_jets`, kind PLUGIN). Checked against the generic path
(the type's own `evaluate`): ẏ at random states, whole runs, a kernel that declines some states (per-call
hand-over, counted in `meta["right_hand_side"]`), and a kernel that does not compile (one warning, generic path).

Toy type: θ = a sin(b x₁) + c x₁ x₂ + d t² (two inputs and time: every jet term, mixed second derivatives
included); it declines x₁ > `limit`."""
from __future__ import annotations

import math
from pathlib import Path
from typing import ClassVar

import biobullet
import numpy as np
import pytest
from biobullet.core import jit
from biobullet.functions import JointFunction, registry
from biobullet.functions.base import JetsKernel
from biobullet.integrate.compiled_explicit import CompiledExplicitRHS
from biobullet.integrate.engine import System

pytestmark = pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: plug-in jets run only inside the kernels")


def _toy_jets_py(z, params, jet):
    a, b, c, d, limit = params[0], params[1], params[2], params[3], params[4]
    x1, x2, t = z[0], z[1], z[2]
    if x1 > limit:
        return 1
    s, co = math.sin(b * x1), math.cos(b * x1)
    jet[0] = a * s + c * x1 * x2 + d * t * t
    jet[1], jet[2], jet[3] = a * b * co + c * x2, c * x1, 2.0 * d * t
    jet[4], jet[5], jet[6] = -a * b * b * s, c, 0.0      # (x1, x1), (x1, x2), (x1, t)
    jet[7], jet[8], jet[9] = 0.0, 0.0, 2.0 * d           # (x2, x2), (x2, t), (t, t)
    return 0


def _broken_jets_py(z, params, jet):
    jet[0] = "not a number"   # does not compile with the jets signature
    return 0


class ToyCoupling(JointFunction):
    type_name: ClassVar[str] = "toy_coupling"
    attributes: ClassVar[tuple[str, ...]] = ("a", "b", "c", "d", "limit", "broken")

    def __init__(self, inputs, params, broken=False) -> None:
        super().__init__(inputs)
        self.params = np.asarray(params, dtype=float)
        self.broken = broken

    @classmethod
    def from_attributes(cls, attributes, inputs, source):
        return cls(inputs, [float(attributes.get(k, "10")) for k in ("a", "b", "c", "d", "limit")],
                   attributes.get("broken") == "true")

    @property
    def uses_time(self) -> bool:
        return True

    def evaluate(self, x, t):
        a, b, c, d, _ = self.params
        x1, x2 = float(x[0]), float(x[1])
        s, co = math.sin(b * x1), math.cos(b * x1)
        value = a * s + c * x1 * x2 + d * t * t
        gradient = np.array([a * b * co + c * x2, c * x1, 2.0 * d * t])
        hessian = np.array([[-a * b * b * s, c, 0.0], [c, 0.0, 0.0], [0.0, 0.0, 2.0 * d]])
        return value, gradient, hessian

    def compiled_jets(self):
        return JetsKernel(_broken_jets_py if self.broken else _toy_jets_py, self.params)


@pytest.fixture()
def toy_type(monkeypatch):
    registry.get("linear")   # the built-ins in before the snapshot
    monkeypatch.setattr(registry.JOINT_FUNCTIONS, "_table", dict(registry.JOINT_FUNCTIONS._table))
    registry.register(ToyCoupling)
    return ToyCoupling


def _model(tmp_path: Path, extra: str = ""):
    links, joints = [], []
    for k in range(1, 4):
        links.append(f'<link name="l{k}"><inertial><origin xyz="0.02 0 -0.15"/><mass value="{1.0 + 0.2 * k}"/>'
                     '<inertia ixx="0.02" ixy="0" ixz="0.002" iyy="0.025" iyz="0" izz="0.006"/></inertial></link>')
        parent = "base" if k == 1 else f"l{k - 1}"
        joints.append(f'<joint name="j{k}" type="continuous"><parent link="{parent}"/><child link="l{k}"/>'
                      f'<origin xyz="0 0 {-0.3 if k > 1 else 0}" rpy="0.2 0 0"/><axis xyz="0 1 0"/></joint>')
    text = ('<robot name="toy"><link name="base"/>' + "".join(links) + "".join(joints)
            + '<biobullet version="1"><gravity xyz="0 0 -9.81"/>'
            + f'<joint_function joint="j3" type="toy_coupling" inputs="j1 j2" a="0.4" b="1.7" c="0.3" d="0.2" {extra}/>'
            + '</biobullet></robot>')
    path = tmp_path / f"toy_{abs(hash(extra))}.urdf"
    path.write_text(text)
    return biobullet.load_model(path)


def test_compiled_rhs_calls_the_plugin_jets_and_equals_the_generic_path(toy_type, tmp_path):
    model = _model(tmp_path)
    fast, slow = System(model, "reduced"), System(model, "reduced", {"compiled": False})
    assert isinstance(fast._compiled, CompiledExplicitRHS)
    rng = np.random.default_rng(11)
    for _ in range(30):
        y = fast.initial_vector({}, 0.0)
        y[:4] = rng.uniform(-1.5, 1.5, 4)
        t = float(rng.uniform(0.0, 3.0))
        compiled = fast._compiled(t, y.copy())
        assert compiled is not None
        generic = slow._checked_rhs(t, y.copy())
        np.testing.assert_allclose(compiled, generic, rtol=1e-12, atol=1e-12 * np.max(np.abs(generic)))


def test_runs_agree_and_declined_states_hand_over(toy_type, tmp_path):
    kw = {"rtol": 1e-10, "atol": 1e-12, "initial": {"j1": 0.6, "j2": -0.4}, "progress": False}
    for extra, handed in (("", False), ('limit="0.3"', True)):
        model = _model(tmp_path, extra)
        fast = biobullet.simulate(model, 1.0, **kw)
        slow = biobullet.simulate(model, 1.0, compiled=False, **kw)
        report = fast.meta["right_hand_side"]
        assert report["path"] == "compiled explicit map"
        assert (report["generic_calls"] > 0) == handed, report
        np.testing.assert_allclose(fast.positions, slow.positions, rtol=0, atol=1e-8)


def test_a_kernel_that_does_not_compile_warns_and_runs_generic(toy_type, tmp_path):
    model = _model(tmp_path, 'broken="true"')
    with pytest.warns(RuntimeWarning, match="toy_coupling|ToyCoupling"):
        run = biobullet.simulate(model, 0.05, progress=False)
    assert run.meta["right_hand_side"]["path"] == "generic"
