"""`load_segmented_model`'s `segments` keyword, found by the second unseen-input probe: the file's attribute is
capped at MAX_SEGMENTS, the keyword was not (segments=10**6 began building a million-joint URDF and never came
back), a float raised a bare AttributeError, and a per-link entry for a link that is not flexible was dropped
without a word. Each is now one ModelError naming the argument, before any expansion."""
from __future__ import annotations

from pathlib import Path

import pytest

from biobullet.core.errors import ModelError
from biobullet.flexible.segments import MAX_SEGMENTS, load_segmented_model

ROBOT = Path(__file__).resolve().parents[2] / "urdf" / "elastic_robot_3link.urdf"


@pytest.mark.parametrize("segments, message", [
    (MAX_SEGMENTS + 1, "'segments' must be an integer in 1 … 200, got 201"),   # (10**6 would hang the old code)
    (1.5, "argument 'segments': segments 1.5 is neither an integer nor a dict"),
    ({"link4": 3}, "argument 'segments': segments for 'link4', which is no <flexible> link"),
])
def test_segments_keyword_is_checked(tmp_path, segments, message) -> None:
    with pytest.raises(ModelError) as caught:
        load_segmented_model(ROBOT, tmp_path / "expanded.urdf", segments=segments)
    assert message in str(caught.value)
    assert not (tmp_path / "expanded.urdf").exists()


def test_one_segment_per_link_counts_the_joints(tmp_path) -> None:
    """The smallest expansion: the file's five rigid coordinates plus, per link and segment, a bending and a
    shear joint (Timoshenko) — 5 + 3 × 2 = 11, counted from the theory, not from the code."""
    model, layouts = load_segmented_model(ROBOT, tmp_path / "expanded.urdf", segments=1)
    assert sorted(layouts) == ["link1", "link2", "link3"]
    assert model.nq == 5 + 3 * 2
