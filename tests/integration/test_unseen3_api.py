"""Found by the third unseen-input probe: `forward_dynamics` / `bias_forces` / `mass_matrix` with
formulation="matrix_calculus" and a q or v of the wrong length raised a bare numpy ValueError ("matmul: Input operand
1 has a mismatch ...", or a broadcast error) instead of the one clear error naming the argument that every other
formulation gives (DESIGN.md: bad input names the argument)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.core.errors import ModelError

URDF = Path(__file__).resolve().parents[2] / "urdf"


@pytest.mark.parametrize("call, argument", [
    (lambda m, n: m.forward_dynamics(np.zeros(n), np.zeros(m.nv), formulation="matrix_calculus"), "q"),
    (lambda m, n: m.forward_dynamics(np.zeros(m.nq), np.zeros(n), formulation="matrix_calculus"), "v"),
    (lambda m, n: m.bias_forces(np.zeros(m.nq), np.zeros(n), formulation="matrix_calculus"), "v"),
    (lambda m, n: m.mass_matrix(np.zeros(n), formulation="matrix_calculus"), "q"),
])
def test_matrix_calculus_names_a_wrong_length_argument(call, argument) -> None:
    """arm7 (7 hinges, fixed base): 5 entries instead of 7 → ModelError naming the argument and the count."""
    model = biobullet.load_model(URDF / "arm7.urdf")
    with pytest.raises(ModelError, match=f"argument '{argument}' has 5 entries"):
        call(model, 5)
