"""urdf/elastic_robot_3link.urdf (`<flexible>` + `<contact>` elements) loads into the same ElasticChain as
`paper002_chain()`, and malformed `<flexible>` attributes raise a ModelError naming them."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from biobullet_studies.paper002 import paper002_chain
from biobullet.flexible.gibbs_appell import ElasticChain
from biobullet.core.errors import ModelError

URDF = Path(__file__).resolve().parents[3] / "urdf" / "elastic_robot_3link.urdf"


def test_model_file_equals_paper002() -> None:
    a, b = ElasticChain.from_model_file(URDF), paper002_chain()
    assert a.coordinate_names == b.coordinate_names
    assert a.contact_points == (0, 1, 2, 3)
    za, _ = a.initial_state()
    zb, _ = b.initial_state()
    assert np.array_equal(za, zb)
    rng = np.random.default_rng(0)
    z, zd = zb + 0.01 * rng.normal(size=zb.size), rng.normal(size=zb.size)
    Ma, ha = a.mass_and_bias(z, zd)
    Mb, hb = b.mass_and_bias(z, zd)
    assert np.abs(Ma - Mb).max() < 1e-12 * np.abs(Mb).max()  # density written with 17 digits
    assert np.abs(ha - hb).max() < 1e-12 * np.abs(hb).max()
    assert np.allclose(a.forward_dynamics(z, zd), b.forward_dynamics(z, zd), rtol=1e-10, atol=1e-9)
    assert a.normal_law.parameters == b.normal_law.parameters
    assert a.friction_law.parameters == b.friction_law.parameters
    assert a.gravity == b.gravity == 9.81


@pytest.mark.parametrize("old,new,attribute", [
    ('boundary="ss" modes="1" length', 'boundary="sx" modes="1" length', "boundary"),
    ('modes="1"', 'modes="-1"', "modes"),
    ('density="2666.6666666666667"', 'density="-1"', "density"),
    ('area="3.75e-4"', 'area="abc"', "area"),
    ('theory="timoshenko"', 'theory="timo"', "theory"),
    ('air_damping="0.025"', 'air_damping="0.025" colour="red"', "colour"),
    ('shear_coefficient="0.8333333333333334"', 'shear_coefficient="3"', "shear_coefficient"),
])
def test_bad_flexible_attribute(tmp_path: Path, old: str, new: str, attribute: str) -> None:
    text = URDF.read_text()
    assert old in text
    bad = tmp_path / "bad.urdf"
    bad.write_text(text.replace(old, new, 1))
    with pytest.raises(ModelError) as info:
        ElasticChain.from_model_file(bad)
    assert info.value.attribute == attribute
    assert "flexible" in str(info.value)


def test_contact_off_joint_point(tmp_path: Path) -> None:
    bad = tmp_path / "bad.urdf"
    bad.write_text(URDF.read_text().replace('name="O4" link="link3" xyz="1 0 0"', 'name="O4" link="link3" xyz="0.5 0 0"'))
    with pytest.raises(ModelError) as info:
        ElasticChain.from_model_file(bad)
    assert info.value.attribute == "xyz"
