"""The link-segment structure read from model files: grouped joints, sizes, and one clear error per bad input."""
from __future__ import annotations

import numpy as np
import pytest

import biobullet
from biobullet.dynamics import link_segment as ls
from biobullet.model.bundled import bundled_model

INERTIAL = ('<inertial><origin xyz="0 0 -0.1" rpy="0 0 0"/><mass value="1"/>'
            '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.005"/></inertial>')
MASSLESS = '<inertial><mass value="0"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial>'


def _arm(tmp_path, group='', second_axis="0 0 1", second_xyz="0 0 0", middle=MASSLESS, extra=""):
    text = f"""<robot name="arm"><link name="base">{INERTIAL}</link><link name="upper">{INERTIAL}</link>
<link name="middle">{middle}</link><link name="fore">{INERTIAL}</link>
<joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/><origin xyz="0 0 0.2"/>
<axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
<joint name="flex" type="continuous"><parent link="upper"/><child link="middle"/><origin xyz="0 0 -0.3"/>
<axis xyz="0 1 0"/></joint>
<joint name="pron" type="continuous"><parent link="middle"/><child link="fore"/><origin xyz="{second_xyz}"/>
<axis xyz="{second_axis}"/></joint>{extra}
<biobullet version="1">{group}</biobullet></robot>"""
    path = tmp_path / "arm.urdf"
    path.write_text(text)
    return biobullet.load_model(path)


def test_two_axis_group_sizes_and_matches_the_reduced_formulation(tmp_path):
    model = _arm(tmp_path, '<segment_joint name="elbow" joints="flex pron"/>')
    s = ls.structure(model)
    assert [j.kind for j in s.joints] == ["hinge", "two_axis"]
    assert s.n_segments == 2 and ls.system_size(model) == 6 * 2 + 3 * 2 + 2 + 1
    rng = np.random.default_rng(0)
    q, v, tau = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
    a = model.forward_dynamics(q, v, tau, formulation="link_segment")
    reference = model.forward_dynamics(q, v, tau, formulation="reduced")
    assert np.max(np.abs(a - reference)) <= 1e-10 * np.max(np.abs(reference))


def test_ungrouped_massless_link_is_rejected_with_its_name(tmp_path):
    model = _arm(tmp_path)
    with pytest.raises(biobullet.ModelError, match="'middle' moves no mass"):
        ls.structure(model)


@pytest.mark.parametrize("kwargs, message", [
    (dict(second_axis="0 1 0"), "not perpendicular"),
    (dict(second_xyz="0 0 -0.05"), "origin offset"),
    (dict(middle=INERTIAL), "has mass"),
])
def test_bad_groups_give_one_clear_error(tmp_path, kwargs, message):
    model = _arm(tmp_path, '<segment_joint name="elbow" joints="flex pron"/>', **kwargs)
    with pytest.raises(biobullet.ModelError, match=message) as info:
        ls.structure(model)
    assert "segment_joint" in str(info.value) and "joints" in str(info.value)


def test_group_listing_errors(tmp_path):
    for group, message in (('<segment_joint name="e" joints="flex"/>', "1 joints listed"),
                           ('<segment_joint name="e" joints="flex nope"/>', "unknown joint 'nope'"),
                           ('<segment_joint name="e" joints="pron flex"/>', "not the child joint")):
        model = _arm(tmp_path, group)
        with pytest.raises(biobullet.ModelError, match=message):
            ls.structure(model)
    with pytest.raises(biobullet.ModelError, match="attribute 'colour'"):
        _arm(tmp_path, '<segment_joint name="e" joints="flex pron" colour="red"/>')


def test_planar_reduction_needs_hinges_parallel_to_the_normal():
    model = biobullet.load_model(bundled_model("sprint_leg.urdf"))
    x, xd, _, _ = model.joint_state(model.neutral_configuration(), np.zeros(model.nv))
    with pytest.raises(biobullet.ModelError, match="not perpendicular to the plane"):
        ls.assemble(model, x, xd, planar=(1.0, 0.0, 0.0))


def test_reference_engine_integrates_through_the_link_segment_formulation():
    model = biobullet.load_model(bundled_model("sprint_leg.urdf"))
    q0 = model.neutral_configuration()
    q0[7], q0[8] = -0.5, 0.2
    runs = {name: biobullet.simulate(model, 0.2, formulation=name, rtol=1e-10, atol=1e-12,
                                     initial=(q0, np.zeros(model.nv)))
            for name in ("link_segment", "reduced")}
    assert np.max(np.abs(runs["link_segment"].positions[-1] - runs["reduced"].positions[-1])) < 1e-8


def test_a_state_the_formulation_cannot_evaluate_is_one_clear_error():
    """pitching_arm's free-floating trunk: q = 0 has a zero quaternion (the compiled kernels divided by its zero
    length: a bare ZeroDivisionError); a tree state with a NaN rate likewise. Each public call says what is wrong."""
    model = biobullet.load_model(bundled_model("pitching_arm.urdf"))
    q, v = np.zeros(model.nq), np.zeros(model.nv)
    x, xd, _, _ = model.joint_state(model.neutral_configuration(), v, 0.0)
    xd = xd.copy()
    xd[-1] = np.nan
    for call in (lambda: ls.mass_and_bias(model, q, v), lambda: ls.forward_dynamics(model, q, v),
                 lambda: ls.system_arrays(model, q, v),   # (the tree state: q's layout for this tree)
                 lambda: ls.system_arrays(model, x, xd)):
        with pytest.raises(biobullet.SolverError, match="cannot evaluate this state: q or v is not finite"):
            call()
