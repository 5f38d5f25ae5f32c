"""The "reduced_recursive" check's body-frame CRBA and RNEA (numba kernels on `algorithms.body_frame`'s tree):
their vectors' sizes guarded (the kernels' direct entries read exactly n_config / n_tangent entries and do not
check), any float64 vector layout taken, and the recursions kept apart from the pipeline's kernel they check."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from biobullet import load_model
from biobullet.algorithms.crba import crba
from biobullet.algorithms.rnea import rnea
from biobullet.conventions import PinocchioMap, build_pinocchio_model
from biobullet.core.errors import ModelError

pin = pytest.importorskip("pinocchio")
ROOT = Path(__file__).resolve().parents[2]
ARM7 = ROOT / "urdf" / "arm7.urdf"


def _state(model, seed=4):
    rng = np.random.default_rng(seed)
    q, _ = model.initial_state()
    q = q + 0.4 * rng.normal(size=model.nq) * (np.arange(model.nq) >= model.base_nq)
    x, xd = model.joint_state(q, rng.normal(size=model.nv))[:2]
    return np.array(x), np.array(xd), rng.normal(size=model.n_tangent)


@pytest.mark.parametrize("floating", [False, True])
def test_strided_and_list_vectors_match_pinocchio(floating):
    """A strided view and a list (converted, not read past their entries) give Pinocchio's M and τ (1e-12: the
    tolerance of tests/unit/test_conventions.py's comparison of the same recursions)."""
    model = load_model(ARM7, floating_base=floating)
    pm = build_pinocchio_model(model)
    data, mapping = pm.createData(), PinocchioMap(model, pm)
    x, xd, xdd = _state(model)
    mass = mapping.matrix_from_pinocchio(pin.crba(pm, data, mapping.config_to_pinocchio(x)))
    mass = np.triu(mass) + np.triu(mass, 1).T
    tau = mapping.velocity_from_pinocchio(pin.rnea(pm, data, mapping.config_to_pinocchio(x),
                                                   mapping.velocity_to_pinocchio(xd), mapping.velocity_to_pinocchio(xdd)))
    strided = np.repeat(x, 2)[::2]
    assert not strided.flags.c_contiguous
    assert np.abs(crba(model, strided) - mass).max() < 1e-12
    assert np.abs(rnea(model, list(x), xd[::-1][::-1], tuple(xdd)) - tau).max() < 1e-12 * max(1.0, np.abs(tau).max())


@pytest.mark.parametrize("call, argument", [
    (lambda m, x, xd, xdd: crba(m, x[:-1]), "x"), (lambda m, x, xd, xdd: crba(m, np.append(x, 0.0)), "x"),
    (lambda m, x, xd, xdd: rnea(m, x, xd[:-1], xdd), "xd"), (lambda m, x, xd, xdd: rnea(m, x, xd, xdd[:3]), "xdd"),
    (lambda m, x, xd, xdd: rnea(m, x[:2], xd, xdd), "x")])
def test_wrong_sizes_name_the_argument(call, argument):
    """A vector of another size is one ModelError naming it (the old numpy recursions raised IndexError on a short
    x and silently read the first entries of a long one; the compiled entries would read past the end)."""
    model = load_model(ARM7)
    with pytest.raises(ModelError, match=f"argument '{argument}' has"):
        call(model, *_state(model))


def test_recursions_do_not_use_the_pipeline_tree():
    """The check stays independent of what it checks: crba.py, rnea.py and body_frame.py import neither the
    pipeline's world-frame kernels (algorithms/compiled_kernels.py, algorithms/vectorized.py) nor its packed tree
    (model.tree.pack_tree)."""
    folder = ROOT / "plugin" / "biobullet" / "algorithms"
    for name in ("crba.py", "rnea.py", "body_frame.py"):
        for node in ast.walk(ast.parse((folder / name).read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.module not in ("biobullet.algorithms.compiled_kernels", "biobullet.algorithms.vectorized",
                                           "biobullet.pipeline"), (name, node.module)
                assert "pack_tree" not in {alias.name for alias in node.names}, name
