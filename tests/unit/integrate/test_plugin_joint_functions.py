"""Third-party joint-function types with compiled jets (`JointFunction.compiled_jets` → `JetsKernel`): the compiled
explicit right-hand side calls them by address (`model.joint_jets`, kind PLUGIN). Checked against the documented
law written out in the test and physics (`rhs_oracles`): at random states the tree's j3 is the law's value and ẏ
satisfies d'Alembert's principle with Pinocchio's inverse dynamics (so the jets' gradient and Hessian terms are
right: ẋ is the configuration's rate, the accelerations balance); whole runs, also with a kernel that declines
some states (per-call hand-over, counted in `meta["right_hand_side"]`), obey the same at their states; a kernel
that does not compile warns once and runs on the callback path.

Toy type: θ = a sin(b x₁) + c x₁ x₂ + d t² (two inputs and time: every jet term, mixed second derivatives
included); it declines x₁ > `limit`."""
from __future__ import annotations

import math
from pathlib import Path
from typing import ClassVar

import biobullet
import numpy as np
import pytest
from biobullet.functions import JointFunction, registry
from biobullet.functions.base import JetsKernel
from biobullet.integrate.compiled_rhs import CompiledReducedRHS
from biobullet.integrate.engine import System
from rhs_oracles import PinocchioTree, assert_dalembert, states_of



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


def _assert_law_and_dynamics(system, tree, t, y) -> None:
    """j3 = 0.4 sin(1.7 j1) + 0.3 j1 j2 + 0.2 t² (the file's parameters) at the tree state to round-off, and ẏ
    satisfies d'Alembert's principle (no force elements)."""
    x, _ = system.tree_state(t, y)
    expected = 0.4 * math.sin(1.7 * x[0]) + 0.3 * x[0] * x[1] + 0.2 * t * t
    assert abs(x[2] - expected) <= 1e-14 * max(1.0, abs(expected))
    assert_dalembert(system, tree, t, y, system.rhs(t, y))


def test_compiled_rhs_calls_the_plugin_jets_and_obeys_the_law(toy_type, tmp_path):
    model = _model(tmp_path)
    system = System(model, "reduced")
    assert isinstance(system._compiled, CompiledReducedRHS)
    tree = PinocchioTree(model)
    rng = np.random.default_rng(11)
    for _ in range(6):
        y = system.initial_vector({}, 0.0)
        y[:4] = rng.uniform(-1.5, 1.5, 4)
        t = float(rng.uniform(0.0, 3.0))
        assert system._compiled(t, y.copy()) is not None
        _assert_law_and_dynamics(system, tree, t, y)


def test_runs_obey_the_law_and_declined_states_hand_over(toy_type, tmp_path):
    kw = {"rtol": 1e-10, "atol": 1e-12, "initial": {"j1": 0.6, "j2": -0.4}, "progress": False,
          "t_eval": np.linspace(0.0, 1.0, 11)}
    for extra, handed in (("", False), ('limit="0.3"', True)):
        model = _model(tmp_path, extra)
        run = biobullet.simulate(model, 1.0, **kw)
        report = run.meta["right_hand_side"]
        assert report["path"] == "compiled explicit map"
        assert (report["callback_calls"] > 0) == handed, report
        system, tree = System(model, "reduced"), PinocchioTree(model)
        for t, y in states_of(system, run, (0, 5, 10)):   # j1 = 0.6 > limit at t = 0: the declined branch
            _assert_law_and_dynamics(system, tree, t, y)


def test_a_kernel_that_does_not_compile_warns_and_runs_generic(toy_type, tmp_path):
    model = _model(tmp_path, 'broken="true"')
    with pytest.warns(RuntimeWarning, match="toy_coupling|ToyCoupling"):
        run = biobullet.simulate(model, 0.05, progress=False)
    assert run.meta["right_hand_side"]["path"] != "compiled explicit map"
