"""`biobullet.analysis` with the inputs a newcomer's first script passes (hunt10): a NaN sample, no samples.

Each test failed on the code before the fix."""
from __future__ import annotations

import math

import numpy as np
import pytest

from biobullet.analysis import metrics, poincare


@pytest.mark.parametrize("metric", [metrics.rmse, metrics.nrmse, metrics.pearson])
def test_a_metric_of_a_signal_with_a_nan_names_the_sample(metric) -> None:
    """`nrmse([0, 1, nan], [0, 1, 2])` returned nan (and `pearson`, `rmse` too) without a word: a diverged run
    scored as 'nan' beside real scores."""
    reference = np.array([0.0, 1.0, 2.0, 3.0])
    other = np.array([0.0, 1.0, math.nan, 3.0])
    with pytest.raises(ValueError, match=r"the other signal is not finite at sample 2 \(nan\)"):
        metric(reference, other)
    with pytest.raises(ValueError, match=r"the reference signal is not finite at sample 2 \(nan\)"):
        metric(other, reference)
    # finite signals: the definitions (rmse of a 0.5 offset is 0.5; a shifted copy correlates exactly)
    assert metrics.rmse(reference, reference + 0.5) == 0.5
    assert metrics.pearson(reference, 2.0 * reference + 1.0) == 1.0


def test_classify_period_of_no_samples_says_so() -> None:
    """`classify_period([])` raised numpy's "zero-size array to reduction operation maximum which has no
    identity"."""
    with pytest.raises(ValueError, match=r"k, m ≥ 1, got shape \(0, 1\)"):
        poincare.classify_period(np.array([]))
