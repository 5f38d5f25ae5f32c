"""Fast paths of the reduced formulations agree with the plain ones.

- "reduced" (the compiled tree kernel) and "reduced_pinocchio" give the (M, h) of the body-frame recursions
  ("reduced_recursive") on shipped models and a mixed chain;
- fused linear joint functions (LinearBlock, affine maps) give the same jets, Hessians included, as evaluating
  the functions one by one;
- the cheap argument check still rejects NaN / ±inf and wrong sizes.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.dynamics.formulation import get_formulation
from biobullet.core.errors import ModelError
from biobullet.model.coordinates import CoordinateMap

ROOT = Path(__file__).resolve().parents[2]


def _mixed_chain(tmp_path) -> Path:
    """Six-joint chain: a, b independent; two fused linear functions, a polynomial, two more linear ones (one of
    them chained), so the coordinate map is "general" with LinearBlocks; one joint prismatic."""
    axes = ["0 0 1", "0 1 0", "1 0 0", "0.6 0.8 0", "0 0 1", "0 1 0"]
    links = "".join(f'''<link name="l{k}"><inertial><origin xyz="0.05 0.02 {0.1 + 0.01 * k}" rpy="0 0 0"/>
      <mass value="{1.0 + 0.2 * k}"/><inertia ixx="0.03" ixy="0.001" ixz="0" iyy="0.035" iyz="0.002" izz="0.025"/>
      </inertial></link>''' for k in range(7))
    names = ["a", "c", "d", "b", "e", "f"]
    joints = "".join(f'''<joint name="{n}" type="{'prismatic' if n == 'e' else 'revolute'}"><parent link="l{k}"/>
      <child link="l{k + 1}"/><origin xyz="0.1 0 0.2" rpy="0.1 0.2 0.3"/><axis xyz="{axes[k]}"/>
      <limit lower="-3" upper="3" effort="100" velocity="10"/></joint>''' for k, n in enumerate(names))
    text = f'''<robot name="mixed">{links}{joints}
  <biobullet version="1">
    <coordinates names="a b"/>
    <joint_function joint="c" type="linear" inputs="a b" coefficients="0.5 -0.3" offset="0.1"/>
    <joint_function joint="d" type="linear" inputs="c" coefficients="2.0" offset="-0.2"/>
    <joint_function joint="e" type="polynomial" inputs="d" coefficients="0.01 0.05 0.02"/>
    <joint_function joint="f" type="linear" inputs="e a" coefficients="1.5 0.4"/>
  </biobullet>
</robot>'''
    path = tmp_path / "mixed.urdf"
    path.write_text(text, encoding="utf-8")
    return path


def _state(model, rng):
    x = rng.uniform(-1.5, 1.5, model.n_config)
    if model.floating_base:
        x[3:7] /= np.linalg.norm(x[3:7])
    return x, rng.normal(size=model.n_tangent), rng.normal(size=model.n_tangent)


@pytest.mark.parametrize("formulation", ["reduced", "reduced_pinocchio"])
@pytest.mark.parametrize("name", ["arm7.urdf", "humanoid.urdf", "shoulder_rhythm.urdf", "elastic_robot_3link.urdf",
                                  "fourbar_knee.urdf", "mixed"])
def test_formulation_equals_the_body_frame_recursions(name, formulation, tmp_path):
    """(M, h) of the compiled world-frame kernel ("reduced") and of Pinocchio's projection equal the body-frame
    CRBA/RNEA of "reduced_recursive" (an independent formulation); the separate entry points follow the same path."""
    if formulation == "reduced_pinocchio":
        pytest.importorskip("pinocchio")
    model = biobullet.load_model(_mixed_chain(tmp_path) if name == "mixed" else ROOT / "urdf" / name)
    f = get_formulation(formulation)
    q, v = model.initial_state()
    rng = np.random.default_rng(5)
    v = v + rng.normal(scale=0.3, size=model.nv)
    mass, h = f.mass_and_bias(model, q, v, 0.0)
    np.testing.assert_allclose(mass, mass.T, atol=1e-12)
    np.testing.assert_allclose(f.mass_matrix(model, q, 0.0), mass, atol=1e-10, rtol=1e-10)
    np.testing.assert_allclose(f.bias_forces(model, q, v, 0.0), h, atol=1e-10, rtol=1e-10)
    mass_r, h_r = get_formulation("reduced_recursive").mass_and_bias(model, q, v, 0.0)
    np.testing.assert_allclose(mass, mass_r, atol=1e-9, rtol=1e-9)
    np.testing.assert_allclose(h, h_r, atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("name", ["shoulder_rhythm.urdf", "mixed"])
def test_fused_linear_functions_equal_one_by_one(name, tmp_path):
    model = biobullet.load_model(_mixed_chain(tmp_path) if name == "mixed" else ROOT / "urdf" / name)
    fused = model.coordinate_map
    if name == "mixed":
        assert fused.kind == "general"
        assert [type(r).__name__ for r in fused._plan] == ["LinearBlock", "ExplicitFunction", "ExplicitFunction"]
    plain = CoordinateMap(fused.n_joints, fused.independent, fused.resolvers)
    plain._plan, plain.kind = fused.resolvers, "general"  # unfused reference: every resolver on its own
    rng = np.random.default_rng(11)
    q, _ = model.initial_state()
    q = q[model._base_q:]
    for _ in range(3):
        qq = q + rng.normal(scale=0.05, size=q.size)
        qd = rng.normal(size=q.size)
        a, b = fused.evaluate(qq, 0.0, qd), plain.evaluate(qq, 0.0, qd)
        for field in ("theta", "gradient", "rate", "gamma"):
            np.testing.assert_allclose(getattr(a, field), getattr(b, field), atol=1e-12, rtol=1e-12)
        for with_hessian in (True, False):
            ha, hb = (fused.evaluate_hessians(qq, 0.0, with_hessian=with_hessian),
                      plain.evaluate_hessians(qq, 0.0, with_hessian=with_hessian))
            for x, y in zip(ha, hb):
                if x is None:
                    assert y is None
                else:
                    np.testing.assert_allclose(x, y, atol=1e-12, rtol=1e-12)


def test_chained_linear_functions_compose(tmp_path):
    """A linear function of another linear function's output, in one fused block."""
    from biobullet.functions.linear import LinearFunction
    from biobullet.model.coordinates import ExplicitFunction, LinearBlock
    f1 = ExplicitFunction(1, (0,), LinearFunction(("a",), (2.0,), 0.5))
    f2 = ExplicitFunction(2, (1, 3), LinearFunction(("b", "d"), (-3.0, 1.0), 1.0))
    cmap = CoordinateMap(4, (0, 3), [f1, f2])
    assert cmap.kind == "affine" and isinstance(cmap._plan[0], LinearBlock)
    jets = cmap.evaluate(np.array([0.3, -0.2]), 0.0, np.array([1.0, 2.0]))
    t1 = 2 * 0.3 + 0.5
    np.testing.assert_allclose(jets.theta, [0.3, t1, -3 * t1 + 1 - 0.2, -0.2], atol=1e-15)
    np.testing.assert_allclose(jets.gradient, [[1, 0], [2, 0], [-6, 1], [0, 1]], atol=1e-15)
    np.testing.assert_allclose(jets.rate, [1, 2, -4, 2], atol=1e-15)
    np.testing.assert_allclose(jets.gamma, 0, atol=0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("name", ["arm7.urdf", "humanoid.urdf", "shoulder_rhythm.urdf"])  # direct, floating, affine
def test_cheap_check_rejects_non_finite(bad, name):
    model = biobullet.load_model(ROOT / "urdf" / name)
    q, v = model.initial_state()
    for formulation in ("reduced", "reduced_pinocchio"):
        if formulation == "reduced_pinocchio":
            pytest.importorskip("pinocchio")
        f = get_formulation(formulation)
        q_bad = q.copy()
        q_bad[-1] = bad
        with pytest.raises(ModelError, match="NaN or infinite"):
            f.mass_and_bias(model, q_bad, v, 0.0)
        v_bad = v.copy()
        v_bad[-1] = bad
        with pytest.raises(ModelError, match="NaN or infinite"):
            f.mass_and_bias(model, q, v_bad, 0.0)
        with pytest.raises(ModelError, match="entries"):
            f.mass_and_bias(model, q[:-1], v, 0.0)
    # huge but finite values pass the check
    assert model.checked("q", np.full(model.nq, 1e300), model.nq) is not None
