"""Force elements on files the second unseen-input probe wrote: a `<joint_contact_stop>` (the studies' element)
with lower ≥ upper was taken silently (both stops then push at every angle); a `<spring>` with rest_length 0
passes through zero length (its direction undefined there) conserving energy."""
from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest

import biobullet

PENDULUM = """<?xml version="1.0"?>
<robot name="pendulum">
  <link name="world"/>
  <link name="a"><inertial><origin xyz="0 0 -0.5"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j" type="continuous"><parent link="world"/><child link="a"/><axis xyz="0 1 0"/></joint>
  <biobullet version="1">
    <gravity xyz="0 0 -9.81"/>
    <initial joint="j" position="0.3" velocity="0"/>
    {element}
  </biobullet>
</robot>
"""


@pytest.mark.parametrize("lower, upper", [("1", "-1"), ("0.5", "0.5")])
def test_a_joint_contact_stop_needs_lower_below_upper(tmp_path, lower, upper) -> None:
    from biobullet.cli import main
    path = tmp_path / "stop.urdf"
    path.write_text(PENDULUM.format(element=f'<joint_contact_stop name="st" joint="j" lower="{lower}" '
                                            f'upper="{upper}" lever="0.01" stiffness="75000" damping="20"/>'))
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["info", str(path)])
    assert code == 2
    assert (f'<joint_contact_stop name="st">: attribute \'upper\': upper {float(upper):g} is not above lower '
            f'{float(lower):g}') in err.getvalue()


def test_a_zero_rest_length_spring_conserves_energy_through_zero_length(tmp_path) -> None:
    """A spring of rest length 0 from the pendulum's point (0, 0, −1) to the world's (0, 0, −1) has length
    l = 2 sin(θ/2): the pendulum swings through l = 0 (θ = 0) twice a period. The energy written out by hand,
    E = ½ I θ̇² − m g (L/2) cos θ + ½ k l² (I about the pivot = 0.01 + 1 · 0.5²), stays constant to the
    integrator's tolerance (1e-11 relative: a force with a wrong direction at l = 0 would kick it)."""
    path = tmp_path / "spring.urdf"
    path.write_text(PENDULUM.format(element='<spring name="s" link_a="a" xyz_a="0 0 -1" link_b="world" '
                                            'xyz_b="0 0 -1" stiffness="100" rest_length="0" damping="0"/>'))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = biobullet.load_model(str(path))
    run = biobullet.simulate(model, 2.0, rtol=1e-11, atol=1e-12)
    theta, rate = np.asarray(run.q)[:, 0], np.asarray(run.v)[:, 0]
    assert theta.min() < -0.29   # it did swing through zero length
    energy = 0.5 * 0.26 * rate ** 2 - 9.81 * 0.5 * np.cos(theta) + 0.5 * 100.0 * (2.0 - 2.0 * np.cos(theta))
    assert np.ptp(energy) < 1e-8
