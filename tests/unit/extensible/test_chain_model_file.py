"""Chain-model JSON format: round trip, reference sets, and one clear ModelError per kind of bad input."""
from __future__ import annotations

import json

import numpy as np
import pytest
from biobullet.core.errors import ModelError
from biobullet.extensible.chain_model import load, loads, six_link_reference, three_link_reference


def test_round_trip_and_numbering(tmp_path):
    model = six_link_reference()
    path = tmp_path / "six.json"
    path.write_text(model.to_json(), encoding="utf-8")
    again = load(path)
    q = np.concatenate([[0.1, 1.0], np.linspace(1.2, 1.9, 6), model.rest_lengths])
    assert np.array_equal(model.mass_matrix(q), again.mass_matrix(q))
    assert again.coordinate_names == ["x", "y"] + [f"phi{i}" for i in range(1, 7)] + [f"l{i}" for i in range(1, 7)]
    assert again.feet == (0, 3)          # leg 1 foot→hip: link 1 is the shank; leg 2 hip→foot: link 4
    assert model.dof == 14 and three_link_reference().dof == 8
    assert [j.name for j in model.joints][0].startswith("hip:")


def test_time_function_inertia_from_file():
    doc = json.loads(three_link_reference().to_json())
    doc["trunk"][0]["inertia"] = {"kind": "polynomial", "coefficients": [2.0, 0.5, -0.1]}
    model = loads(json.dumps(doc))
    assert model.time_varying_inertia
    assert model.inertia(2.0)[2] == pytest.approx(2.0 + 1.0 - 0.4)
    assert model.inertia_rate(2.0)[2] == pytest.approx(0.5 - 0.4)


@pytest.mark.parametrize("mutate, attribute", [
    (lambda d: d["leg1"][0].update(mass=-1.0), "mass"),
    (lambda d: d["leg1"][0].update(n=1.5), "n"),
    (lambda d: d["leg2"][0].update(stiffness="1e5"), "stiffness"),
    (lambda d: d["trunk"][0].pop("rest_length"), "rest_length"),
    (lambda d: d["trunk"][0].update(inertia={"kind": "fourier", "coefficients": [1.0, 0.1], "sine": [],
                                             "period": 1.0}), "inertia.sine"),
    (lambda d: d.update(leg2=[]), "leg2"),
])
def test_bad_input_names_the_attribute(mutate, attribute):
    doc = json.loads(three_link_reference().to_json())
    mutate(doc)
    with pytest.raises(ModelError) as err:
        loads(json.dumps(doc), file="model.json")
    assert err.value.file == "model.json"
    assert err.value.attribute == attribute


def test_not_json_and_nan_refused():
    with pytest.raises(ModelError, match="not valid JSON"):
        loads("{leg1: ", file="x.json")
    text = three_link_reference().to_json().replace('"mass": 10.0', '"mass": NaN', 1)
    with pytest.raises(ModelError, match="not valid JSON"):
        loads(text, file="x.json")
    with pytest.raises(ModelError, match="unknown key"):
        loads(json.dumps({**json.loads(three_link_reference().to_json()), "script": "rm -rf"}))
