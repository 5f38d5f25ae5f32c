"""Finite-segment expansion of `<flexible>` links: structure of the generated model and convergence of the
first bending frequency to the Timoshenko value.

Reference: `flexible.beam_modes` (exact Timoshenko frequency equation; paper-002 section data, unrounded).
The segmented model is linearised at rest (M from the Model, K = −∂(Q − h)/∂q of its joint springs) and
ω² = eig(M⁻¹K) (pinned–pinned: restricted to the null space of the roller constraint y(L) = 0).

Observed relative error of ω₁ (paper-002 section, `segments` N, bending + shear joints):

| N  | cantilever L = 1 m | rate | cantilever L = 0.1 m (L/t = 8) | pinned–pinned L = 1 m |
|----|--------------------|------|--------------------------------|-----------------------|
| 4  | 1.45e-2            |      | 1.42e-2                        | −3.1e-4               |
| 8  | 3.60e-3            | 2.01 | 3.51e-3                        | −1.8e-5               |
| 16 | 8.97e-4            | 2.00 | 8.75e-4                        | −1.2e-6               |
| 32 | 2.24e-4            | 2.00 | 2.19e-4                        | −1.2e-7               |

The documented default N = 8 is within 0.4 % (requirement: 2 %); the error falls as N⁻² (rate = log2 of
successive error ratios). Without the shear joints the thick cantilever stays ≈1 % too stiff (Euler–Bernoulli
limit), which shows the shear joints carry the Timoshenko shear flexibility.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from biobullet.core.errors import ModelError
from biobullet.flexible import beam_modes
from biobullet_studies.paper002 import TABLE3_UNROUNDED
from biobullet.flexible.segments import expand_urdf, load_segmented_model, natural_frequencies

BEAM = ('theory="timoshenko" youngs_modulus="2e11" shear_modulus="7.6923076923076923e10" '
        'shear_coefficient="0.8333333333333334" area="3.75e-4" second_moment="4.8828125e-9" '
        'density="2666.6666666666667" kelvin_voigt="125"')


def urdf(joint: str, length: float, segments: int = 8, extra: str = "") -> str:
    axis = '<axis xyz="0 0 1"/>' if joint != "fixed" else ""
    return f"""<?xml version="1.0"?>
<robot name="beam_{joint}">
  <link name="wall"/>
  <link name="beam"><inertial><origin xyz="{length / 2} 0 0"/><mass value="1"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="0.08" iyz="0" izz="0.08"/></inertial></link>
  <joint name="support" type="{joint}"><parent link="wall"/><child link="beam"/><origin xyz="0 0 0"/>{axis}</joint>
  <biobullet version="1">
    <gravity xyz="0 0 0"/>
    <flexible link="beam" boundary="cf" length="{length}" {BEAM} segments="{segments}"/>
    {extra}
  </biobullet>
</robot>
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("segments")
    out = {}
    for key, joint, length in (("cf", "fixed", 1.0), ("cf_thick", "fixed", 0.1), ("ss", "continuous", 1.0)):
        out[key] = d / f"{key}.urdf"
        out[key].write_text(urdf(joint, length))
    return out


def first_frequency(path: Path, n: int, shear: bool | None = None) -> float:
    model, layouts = load_segmented_model(path, segments=n, shear=shear)
    lay = layouts["beam"]
    supports = ()
    if model.joint_names[0] == "support":  # pinned at x = 0 (revolute): add the roller y(L) = 0
        k, x_local = lay.locate(lay.length)
        supports = ((lay.body_names()[k], (x_local, 0.0, 0.0), 1),)
    return float(natural_frequencies(model, supports=supports, n=1)[0])


def reference(boundary: str, length: float, theory: str = "timoshenko") -> float:
    return float(beam_modes(boundary=boundary, n_modes=1, theory=theory,
                            **{**TABLE3_UNROUNDED, "length": length}).omega[0])


@pytest.mark.parametrize("key, boundary, length", [("cf", "cf", 1.0), ("cf_thick", "cf", 0.1)])
def test_cantilever_converges_as_n_squared(files, key, boundary, length) -> None:
    ref = reference(boundary, length)
    err = np.array([first_frequency(files[key], n) / ref - 1.0 for n in (4, 8, 16, 32)])
    assert np.all(err > 0.0)  # rigid segments make the discrete beam stiffer
    assert abs(err[1]) < 4e-3  # documented default N = 8: within 0.4 % (issue: 2 %)
    rates = np.log2(err[:-1] / err[1:])
    assert np.all(np.abs(rates - 2.0) < 0.05), rates  # second-order division (sections at (k − ½)h)


def test_pinned_pinned_within_tolerance_and_converging(files) -> None:
    ref = reference("ss", 1.0)
    err = np.abs([first_frequency(files["ss"], n) / ref - 1.0 for n in (4, 8, 16, 32)])
    assert err[1] < 1e-4
    assert np.all(np.diff(err) < 0.0) and err[-1] < 1e-6


def test_shear_joints_carry_the_timoshenko_shear(files) -> None:
    ref = reference("cf", 0.1)  # L/t = 8: shear lowers ω₁ by 1.2 % against Euler–Bernoulli
    assert reference("cf", 0.1, "euler_bernoulli") / ref - 1.0 > 0.01
    with_shear = first_frequency(files["cf_thick"], 16) / ref - 1.0
    without = first_frequency(files["cf_thick"], 16, shear=False) / ref - 1.0
    assert abs(with_shear) < 1e-3 and without > 0.009


def test_generated_model_structure(files) -> None:
    model, layouts = load_segmented_model(files["cf"], segments=8)
    lay = layouts["beam"]
    assert len(lay.body_names()) == 9 and lay.h == pytest.approx(0.125)
    # mass preserved: ρA L = 1 kg over the half bodies at the ends and 7 interior bodies
    masses = {b.link: b.mass for b in model.bodies}
    # body 0 ("beam", h/2 long, 1/16 kg) is welded to the wall by the clamp, so it is not a moving body
    assert "beam" not in masses
    assert sum(masses[n] for n in lay.body_names()[1:]) == pytest.approx(1.0 - 1.0 / 16.0, rel=1e-14)
    assert masses["beam__seg8"] == pytest.approx(1.0 / 16.0, rel=1e-14)
    assert lay.bending_stiffness == pytest.approx(2e11 * 4.8828125e-9 / 0.125, rel=1e-15)
    assert lay.bending_damping == pytest.approx(125 * 4.8828125e-9 / 0.125, rel=1e-15)
    kappa_g_a = 0.8333333333333334 * 7.6923076923076923e10 * 3.75e-4
    assert lay.shear_stiffness == pytest.approx(kappa_g_a / 0.125, rel=1e-15)
    names = model.joint_names
    assert sum(n.startswith("beam__bend") for n in names) == 8
    assert sum(n.startswith("beam__shear") for n in names) == 8


def test_children_and_points_are_retargeted() -> None:
    extra = '<contact name="tip" link="beam" xyz="1 0 0" normal_law="kelvin_voigt" stiffness="1e5" damping="1"/>'
    text = urdf("fixed", 1.0, extra=extra).replace(
        '<biobullet', '<link name="mass"><inertial><mass value="0.5"/><inertia ixx="1e-6" ixy="0" ixz="0" '
        'iyy="1e-6" iyz="0" izz="1e-6"/></inertial></link><joint name="tip_mass" type="fixed"><parent link="beam"/>'
        '<child link="mass"/><origin xyz="1 0 0"/></joint><biobullet')
    new, layouts = expand_urdf(text, segments=4)
    assert '<parent link="beam__seg4" />' in new and 'name="tip_mass"' in new
    assert 'link="beam__seg4" xyz="0.125 0.0 0.0"' in new  # x = L is h/2 into the last (half) body
    import xml.etree.ElementTree as ET
    assert ET.fromstring(new).find("biobullet").find("flexible") is None


def test_bad_segments_raise_model_error(tmp_path) -> None:
    f = tmp_path / "bad.urdf"
    f.write_text(urdf("fixed", 1.0).replace('segments="8"', 'segments="zero"'))
    with pytest.raises(ModelError, match="segments"):
        load_segmented_model(f)
    f.write_text(urdf("fixed", 1.0).replace('segments="8"', 'segments="0"'))
    with pytest.raises(ModelError, match="segments"):
        load_segmented_model(f)
    assert math.isfinite(first_frequency(files_path(tmp_path), 2))


def files_path(d: Path) -> Path:
    f = d / "ok.urdf"
    f.write_text(urdf("fixed", 1.0))
    return f
