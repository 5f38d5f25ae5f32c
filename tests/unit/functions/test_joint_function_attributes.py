"""Bad XML attributes of every built-in type give a ModelError that names file, element and attribute."""
from __future__ import annotations

import pytest

from biobullet.core.errors import ModelError, SourceRef
from biobullet.functions import get

SRC = SourceRef("bad.urdf", '<joint_function joint="J">')

BAD = [  # (type, inputs, attributes, offending attribute)
    ("linear", ("A", "B"), {"coefficients": "1 x"}, "coefficients"),
    ("linear", ("A", "B"), {"coefficients": "1 nan"}, "coefficients"),
    ("linear", ("A", "B"), {"coefficients": "1 inf"}, "coefficients"),
    ("linear", ("A", "B"), {"coefficients": "1"}, "coefficients"),
    ("linear", ("A", "B"), {"coefficients": "1 2 3"}, "coefficients"),
    ("linear", ("A", "B"), {}, "coefficients"),
    ("linear", ("A",), {"coefficients": "1", "offset": "zero"}, "offset"),
    ("linear", ("A",), {"coefficients": "1", "offset": "1 2"}, "offset"),
    ("linear", (), {"coefficients": ""}, "inputs"),
    ("linear", ("A", "A"), {"coefficients": "1 1"}, "inputs"),
    ("linear", ("A",), {"coefficients": "1", "multiplier": "2"}, "multiplier"),
    ("polynomial", ("A",), {}, "coefficients"),
    ("polynomial", ("A",), {"coefficients": ""}, "coefficients"),
    ("polynomial", ("A",), {"coefficients": "1 NaN"}, "coefficients"),
    ("polynomial", ("A",), {"coefficients": "1,2"}, "coefficients"),
    ("polynomial", ("A", "B"), {"coefficients": "1 2"}, "inputs"),
    ("polynomial", (), {"coefficients": "1 2"}, "inputs"),
    ("spline", ("A",), {"y": "0 1"}, "x"),
    ("spline", ("A",), {"x": "0 1"}, "y"),
    ("spline", ("A",), {"x": "0 1 2", "y": "0 1"}, "y"),
    ("spline", ("A",), {"x": "0", "y": "0"}, "x"),
    ("spline", ("A",), {"x": "0 2 1", "y": "0 1 2"}, "x"),
    ("spline", ("A",), {"x": "0 1 1", "y": "0 1 2"}, "x"),
    ("spline", ("A",), {"x": "0 1 a", "y": "0 1 2"}, "x"),
    ("spline", ("A",), {"x": "0 1 2", "y": "0 inf 2"}, "y"),
    ("spline", ("A",), {"x": "0 1 2", "y": "0 1 2", "boundary": "periodic"}, "boundary"),
    ("spline", ("A",), {"x": "0 1 2", "y": "0 1 2", "boundary": "clamped"}, "slopes"),
    ("spline", ("A",), {"x": "0 1 2", "y": "0 1 2", "boundary": "clamped", "slopes": "1"}, "slopes"),
    ("spline", ("A",), {"x": "0 1 2", "y": "0 1 2", "slopes": "1 2"}, "slopes"),
    ("spline", ("A", "B"), {"x": "0 1 2", "y": "0 1 2"}, "inputs"),
    ("fourier", (), {}, "period"),
    ("fourier", (), {"period": "0"}, "period"),
    ("fourier", (), {"period": "-1"}, "period"),
    ("fourier", (), {"period": "nan"}, "period"),
    ("fourier", (), {"period": "1", "a": "1 2", "b": "1"}, "b"),
    ("fourier", (), {"period": "1", "a0": "x"}, "a0"),
    ("fourier", (), {"period": "1", "a": "1 inf"}, "a"),
    ("fourier", ("A",), {"period": "1"}, "inputs"),
    ("fourier", (), {"period": "1", "inputs": "A"}, "inputs"),
    ("fourier", (), {"period": "1", "phase": "0"}, "phase"),
]


@pytest.mark.parametrize("type_name,inputs,attributes,attribute", BAD)
def test_bad_attribute_names_the_attribute(type_name: str, inputs: tuple[str, ...], attributes: dict,
                                           attribute: str) -> None:
    full = {"joint": "J", "type": type_name, **attributes}
    if "inputs" not in full and inputs:
        full["inputs"] = " ".join(inputs)
    with pytest.raises(ModelError) as info:
        get(type_name).from_attributes(full, inputs, SRC)
    error = info.value
    assert error.attribute == attribute
    assert str(error).startswith('bad.urdf: <joint_function joint="J">: ')
    assert f"attribute '{attribute}'" in str(error)
    assert error.expected  # says what was expected


def test_unknown_attribute_lists_accepted_ones() -> None:
    with pytest.raises(ModelError) as info:
        get("spline").from_attributes({"joint": "J", "type": "spline", "x": "0 1", "y": "0 1", "bc": "natural"},
                                      ("A",), SRC)
    assert info.value.attribute == "bc"
    for name in ("joint", "type", "inputs", "x", "y", "boundary", "slopes"):
        assert name in info.value.expected
