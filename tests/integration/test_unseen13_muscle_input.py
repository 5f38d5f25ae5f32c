"""muscleinput — bad muscle input found by hunt11's probe, each silently ignored or refused late by the old code.

Every case must now be one ModelError (or the OpenSim importer's one "muscles not imported" warning) naming the
file, the element and the attribute. OpenSim 4.6 is the oracle where it refuses the same file.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import biobullet
from biobullet.core.errors import ModelError
from biobullet.muscles.description import MuscleParameters
from biobullet.muscles.osim import load_osim_muscles

ARM26 = biobullet.__file__.replace("__init__.py", "data/opensim/arm26.osim")


def muscle_urdf(folder, attributes: str = "", inner: str = "") -> str:
    """A slider between two links pulled by one muscle `m` with `attributes` and children `inner`."""
    path = folder / "bad.urdf"
    path.write_text(f"""<robot name="r"><link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/>
      </inertial></link><link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/></inertial>
      </link><joint name="j" type="prismatic"><parent link="a"/><child link="b"/><axis xyz="1 0 0"/>
      <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <biobullet><muscle name="m" {attributes} max_isometric_force="100" optimal_fiber_length="0.1"
        tendon_slack_length="0.2">{inner}
        <point link="a" xyz="-0.5 0 0"/><point link="b" xyz="0 0 0"/></muscle></biobullet></robot>""")
    return str(path)


def arm26_with(folder, muscle: str, line: str) -> str:
    """arm26.osim with `line` (an XML property) written first into muscle `muscle`."""
    text = open(ARM26, encoding="utf-8").read()
    start = text.index(f'<Thelen2003Muscle name="{muscle}">')
    at = text.index("<max_isometric_force>", start)
    path = folder / "arm26_bad.osim"
    path.write_text(text[:at] + line + "\n" + text[at:], encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("model, name, suggestion", [
    ("degroote2016", "defualt_activation", "default_activation"),          # a typo
    ("thelen2003", "kshapeactive", "KshapeActive"),                         # OpenSim's spelling, other case
    ("degroote2016", "KshapeActive", None),                                 # Thelen's parameter on DeGroote
    ("millard2012", "ActiveForceLengthCurve.minimum_valu", "ActiveForceLengthCurve.minimum_value")])
def test_an_unknown_muscle_parameter_is_named(model, name, suggestion, tmp_path):
    """A `<parameter>` name the muscle model does not read was dropped silently (the muscle ran on the default).
    Now it is refused naming the file, the muscle's <parameter>, the name and the known names."""
    tendon = ' tendon="compliant"' if model == "thelen2003" else ""
    path = muscle_urdf(tmp_path, f'model="{model}"{tendon}', f'<parameter name="{name}" value="0.3"/>')
    with pytest.raises(ModelError) as error:
        biobullet.load_model(path)
    message = str(error.value)
    assert message.startswith(path)
    assert '<muscle name="m"> <parameter>' in message and f"unknown {model} parameter '{name}'" in message
    expected = message.split("(expected", 1)[1]   # the known names are listed
    assert ("shallow_ascending_slope, minimum_value" in expected if model == "millard2012"
            else "default_activation" in expected)
    assert "more characters" not in expected
    if suggestion is not None:
        assert f"did you mean '{suggestion}'" in message


def test_the_code_reads_only_names_of_the_table():
    """The table is the code's: reading a name outside it fails, so no parameter can be read without files being
    allowed to give it (nor a misspelled read pass unnoticed)."""
    with pytest.raises(KeyError):
        MuscleParameters(1.0, 0.1, 0.2).value("defualt_activation", 0.5)


def test_a_non_numeric_default_activation_in_an_osim_file_is_named(tmp_path):
    """`<default_activation>abc</default_activation>` was dropped (the run started at 0.05; OpenSim 4.6 also reads
    its default). It is refused like every numeric property: the importer warns 'muscles not imported' naming the
    file, the muscle and the property, and loads the skeleton."""
    path = arm26_with(tmp_path, "TRIlong", "<default_activation>abc</default_activation>")
    with pytest.raises(ModelError, match=r'arm26_bad\.osim.*<Thelen2003Muscle name="TRIlong">.*default_activation'):
        load_osim_muscles(path)
    with pytest.warns(UserWarning, match=r'muscles not imported.*arm26_bad\.osim.*TRIlong.*default_activation'):
        model = biobullet.load_model(path)
    assert biobullet.muscles.names(model) == ()
    assert model.nv == 2   # the skeleton (shoulder, elbow) still loads


def test_a_rigid_tendon_thelen_muscle_is_refused_at_load(tmp_path):
    """A Thelen2003 muscle with a rigid tendon (no force–velocity curve) loaded and was refused only when a run
    started. It is refused at load: in a URDF naming the muscle and `tendon`; in an .osim file (OpenSim 4.6 refuses
    the whole file: "ignore_tendon_compliance flag is not currently implemented") naming the muscle and
    ignore_tendon_compliance, no muscle imported."""
    with pytest.raises(ModelError, match=r'bad\.urdf.*<muscle name="m">.*tendon.*Thelen2003 muscle with a rigid'):
        biobullet.load_model(muscle_urdf(tmp_path, 'model="thelen2003"'))
    path = arm26_with(tmp_path, "TRIlong", "<ignore_tendon_compliance>true</ignore_tendon_compliance>")
    with pytest.raises(ModelError, match=r'<Thelen2003Muscle name="TRIlong">.*ignore_tendon_compliance'):
        load_osim_muscles(path)
    with pytest.warns(UserWarning, match=r"muscles not imported.*TRIlong.*ignore_tendon_compliance"):
        assert biobullet.muscles.names(biobullet.load_model(path)) == ()
    osim = pytest.importorskip("opensim")
    osim.Logger.setLevelString("error")
    with pytest.raises(RuntimeError, match="ignore_tendon_compliance"):
        osim.Model(path).initSystem()


def test_bundled_and_imported_muscles_still_load():
    """Every muscle of the bundled OpenSim models imports (their kept properties are accepted by the `<muscle>`
    parser the importer's output goes through), with no warning about muscles."""
    for name in ("arm26", "Tug_of_War_Millard", "leg6dof9musc"):
        path = ARM26.replace("arm26", name)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = biobullet.load_model(path)
        assert not [str(w.message) for w in caught if "muscle" in str(w.message).partition(".osim: ")[2]]
        assert biobullet.muscles.names(model) == load_osim_muscles(path).names != ()


def test_a_fully_driven_mechanism_says_why_it_cannot_be_simulated(tmp_path):
    """Every joint prescribed by a joint function of time (0 independent coordinates): `simulate` said "the model
    has no moving joint", false (the joint moves). It now says every joint is prescribed, and the call it names
    gives the prescribed motion: θ = 0.3 sin 2t, θ̇ = 0.6 cos 2t."""
    path = tmp_path / "driven.urdf"
    path.write_text("""<robot name="driven"><link name="base"><inertial><mass value="1"/>
      <inertia ixx="1" iyy="1" izz="1"/></inertial></link><link name="arm"><inertial><mass value="1"/>
      <inertia ixx="1" iyy="1" izz="1"/></inertial></link><joint name="j1" type="revolute"><parent link="base"/>
      <child link="arm"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
      <biobullet><joint_function joint="j1" type="expression" expression="0.3*sin(2*t)"/></biobullet></robot>""")
    model = biobullet.load_model(path)
    with pytest.raises(ModelError, match=r"driven\.urdf.*every joint \(j1\) is prescribed by joint functions") as e:
        biobullet.simulate(model, 1.0)
    assert "no moving joint" not in str(e.value)
    x, xd = model.joint_state([], [], 0.7)[:2]
    assert x[0] == pytest.approx(0.3 * math.sin(1.4), abs=1e-14)
    assert xd[0] == pytest.approx(0.6 * math.cos(1.4), abs=1e-14)
    from biobullet.cli import main
    assert main(["simulate", str(path), "--t-end", "1", "--out", str(tmp_path / "out.csv")]) == 2
