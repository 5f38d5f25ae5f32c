"""check_derivatives: passes correct analytic derivatives and catches wrong ones."""
from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from biobullet.functions import JointFunction, check_derivatives


class Rosenbrockish(JointFunction):
    """θ = (1 − x)² + 10 (y − x²)² + x sin(t), hand-derived jet; `defect` corrupts one entry."""

    type_name: ClassVar[str] = "test_rosenbrockish"

    def __init__(self, defect: str = "") -> None:
        super().__init__(("X", "Y"))
        self.defect = defect

    @classmethod
    def from_attributes(cls, attributes, inputs, source):  # pragma: no cover - not built from XML
        return cls()

    def evaluate(self, x, t):
        a, b = x
        value = (1 - a) ** 2 + 10 * (b - a * a) ** 2 + a * np.sin(t)
        gradient = np.array([-2 * (1 - a) - 40 * a * (b - a * a) + np.sin(t), 20 * (b - a * a), a * np.cos(t)])
        hessian = np.array([[2 - 40 * b + 120 * a * a, -40 * a, np.cos(t)],
                            [-40 * a, 20.0, 0.0],
                            [np.cos(t), 0.0, -a * np.sin(t)]])
        if self.defect == "gradient":
            gradient[1] *= 1.001  # a 0.1 % error must be caught at tol 1e-6
        elif self.defect == "hessian":
            hessian[2, 2] = 0.0  # forgot the ∂²/∂t² term
        elif self.defect == "asymmetric":
            hessian[0, 2] = 0.0  # mixed term only on one side
        return value, gradient, hessian


@pytest.mark.parametrize("point", [(0.3, -0.4, 0.0), (1.7, 2.5, 3.0), (-120.0, 55.0, 1e3)])
def test_correct_derivatives_pass(point) -> None:
    result = check_derivatives(Rosenbrockish(), point[:2], point[2])
    assert result.ok, str(result)
    # central differences at h ≈ 6e-6: truncation + rounding ≪ 1e-6 even at |x| ~ 100, t = 1000 s
    assert result.gradient_rel_error < 1e-7 and result.hessian_rel_error < 1e-7


@pytest.mark.parametrize("defect", ["gradient", "hessian", "asymmetric"])
def test_wrong_derivatives_are_caught(defect: str) -> None:
    result = check_derivatives(Rosenbrockish(defect), [0.3, 0.8], 0.5)
    assert not result.ok


def test_explicit_step_and_result_shapes() -> None:
    result = check_derivatives(Rosenbrockish(), np.array([0.2, 0.1]), 0.4, h=1e-4)
    np.testing.assert_array_equal(result.step, [1e-4] * 3)
    assert result.gradient_fd.shape == (3,) and result.hessian_fd.shape == (3, 3)
    assert result.ok  # h=1e-4: truncation ~h²·f'''/6 ≈ 4e-8 relative, still well inside 1e-6
