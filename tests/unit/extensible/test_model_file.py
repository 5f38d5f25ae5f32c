"""The anthropomorph's model file (`extensible.model_file`): the bundled files are the generator's output, the
generated files load and agree with Pinocchio (time-varying inertias included), and `ChainModel`'s dynamics run on
the file's tree model (a plumbing check: the independent checks of M and h are tests/unit/extensible/
test_lagrange_sympy.py, SymPy, and the Pinocchio comparison here)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from biobullet import load_model
from biobullet.extensible.chain_model import (ChainModel, InertiaLaw, Link, reference_flight_state, six_link_reference,
                                              three_link_reference)
from biobullet.extensible.model_file import model_file_text, write_model_file

URDF_DIR = Path(__file__).resolve().parents[3] / "urdf"
BUNDLED = {"anthropomorph_six_link.urdf": six_link_reference, "anthropomorph_three_link.urdf": three_link_reference}


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_file_is_the_generators_output(name):
    assert (URDF_DIR / name).read_text(encoding="utf-8") == model_file_text(BUNDLED[name]())


def test_bundled_file_runs_chain_models_dynamics():
    chain = six_link_reference()
    model = load_model(URDF_DIR / "anthropomorph_six_link.urdf")
    assert model.coordinate_names == tuple(chain.coordinate_names)
    q, v = reference_flight_state(chain)
    assert np.array_equal(model.mass_matrix(q), chain.mass_matrix(q))
    # h of the file's tree: ChainModel's h without the link springs, which the file carries as <joint_spring>s
    n = chain.n_links
    spring = np.zeros(chain.dof)
    spring[2 + n:] = chain.stiffness * (q[2 + n:] - chain.rest_lengths)
    h = chain.bias_forces(q, v)
    assert np.max(np.abs(model.bias_forces(q, v) - (h - spring))) <= 1e-15 * np.abs(h).max()   # (one addition)


def time_varying_chain() -> ChainModel:
    """Three links: a polynomial I(t) on leg 1, a Fourier I(t) on the trunk, a constant one on leg 2."""
    links = [Link(mass=8.0, n=0.55, rest_length=0.8, stiffness=2e4, damping=5.0,
                  inertia=InertiaLaw("polynomial", (0.5, 0.2, -0.05)), name="leg1"),
             Link(mass=8.0, n=0.55, rest_length=0.8, stiffness=2e4, name="leg2"),
             Link(mass=30.0, n=0.4, rest_length=0.7, stiffness=5e4,
                  inertia=InertiaLaw("fourier", (1.5, 0.3, 0.1), (-0.2, 0.05), 0.8), name="trunk")]
    return ChainModel.build(links[:1], links[1:2], links[2:], name="time_varying")


def test_generated_files_agree_with_pinocchio(tmp_path):
    """`biobullet validate` (every formulation against Pinocchio: M, h, v̇ on random states and times) on a
    generated file with point masses at ±sqrt(I(t)/m) and on a bundled one."""
    pytest.importorskip("pinocchio")
    from biobullet.validate import validate_model
    path = tmp_path / "time_varying.urdf"
    write_model_file(time_varying_chain(), path)
    for file in (path, URDF_DIR / "anthropomorph_three_link.urdf"):
        report = validate_model(load_model(file), samples=3, seed=2, tol=1e-9, oracles=("pinocchio",))
        assert report.ok, "\n" + report.to_table()
        compared = {(c.quantity, c.formulation) for c in report.checks if c.oracle == "pinocchio"}
        assert {("mass_matrix", "reduced"), ("bias_forces", "reduced"), ("forward_dynamics", "reduced")} <= compared


def test_a_strangers_name_stays_a_name():
    """The chain's name (free text in its JSON file) is escaped: markup in it adds no element to the model file."""
    chain = three_link_reference()
    hostile = ChainModel(chain.links, chain.chain_sizes, name='x"/><link name="extra"/><!-- -- & <')
    model = hostile.tree_model()
    assert model.name == hostile.name and "extra" not in model.link_names
