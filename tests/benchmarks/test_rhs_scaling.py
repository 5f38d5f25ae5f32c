"""Cost per right-hand side vs DOF (`biobullet bench --scaling`): chains and branched trees of 7 … 100 joints,
biobullet's engine right-hand side and the reduced formulation's M, h against Pinocchio. Writes
out/bench/scaling.json and scaling.png and prints the table (ratios reported, not asserted)."""
from __future__ import annotations

import os

import numpy as np

from biobullet.bench.scaling import format_scaling, run_scaling, tree_urdf


def test_scaling(capsys, tmp_path):
    summary = run_scaling(quick=os.environ.get("BIOBULLET_BENCH_QUICK", "0") == "1", out=os.path.join("out", "bench"))
    with capsys.disabled():
        print("\n" + format_scaling(summary))
    assert set(summary["families"]) == {"chain", "branched tree"}


def test_generated_models_match_pinocchio(tmp_path):
    """The generated trees are valid models: biobullet's M equals Pinocchio's CRBA on them."""
    import pinocchio as pin

    from biobullet.conventions import PinocchioMap, build_pinocchio_model
    from biobullet.loader import load_model
    for branched in (False, True):
        path = tmp_path / f"m{branched}.urdf"
        path.write_text(tree_urdf(15, branched))
        model = load_model(path)
        q = np.random.default_rng(0).uniform(-1, 1, model.nq)
        pm = build_pinocchio_model(model)
        index = PinocchioMap(model, pm)
        mass = pin.crba(pm, pm.createData(), index.config_to_pinocchio(q))
        mass = np.triu(mass) + np.triu(mass, 1).T
        assert np.allclose(model.mass_matrix(q), index.matrix_from_pinocchio(mass), atol=1e-12)
