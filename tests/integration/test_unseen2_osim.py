"""Hand-mangled OpenSim files and bad muscle arguments found by the second unseen-input probe: one clear error
naming the file, the element and the attribute (OpenSim 4.6 rejects the same files), CLI exit 2."""
from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.core.errors import ModelError

ARM26 = Path(biobullet.__file__).parent / "data" / "opensim" / "arm26.osim"


def _without_body(text: str, name: str) -> str:
    start = text.index(f'<Body name="{name}">')
    return text[:start] + text[text.index("</Body>", start) + len("</Body>"):]


MANGLED = {
    # the humerus deleted: the shoulder's child offset frame hangs on a body that does not exist
    "missing_body": (lambda text: _without_body(text, "r_humerus"),
                     '<PhysicalOffsetFrame name="r_humerus_offset">: attribute \'socket_parent\': unknown frame '
                     "'/bodyset/r_humerus'"),
    # two bodies named r_humerus: was blamed on the frame that names the renamed one
    "duplicate_body": (lambda text: text.replace('<Body name="r_ulna_radius_hand">', '<Body name="r_humerus">'),
                       '<Body name="r_humerus">: attribute \'name\': duplicate body name'),
    "unknown_frame_parent": (lambda text: text.replace("<socket_parent>/bodyset/base</socket_parent>",
                                                       "<socket_parent>/bodyset/nowhere</socket_parent>", 1),
                             '<PhysicalOffsetFrame name="base_offset">: attribute \'socket_parent\': unknown frame '
                             "'/bodyset/nowhere'"),
}


@pytest.mark.parametrize("case", sorted(MANGLED))
def test_a_mangled_osim_names_the_element_and_attribute(tmp_path, case) -> None:
    """Each file was 'frame parent ... is no body, frame or ground' naming no element (the missing body, the
    unknown parent) or the wrong one (a duplicate body name). Now the element and attribute at fault."""
    from biobullet.cli import main
    mangle, expected = MANGLED[case]
    path = tmp_path / f"{case}.osim"
    path.write_text(mangle(ARM26.read_text()))
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["info", str(path)])
    assert code == 2
    assert "Traceback" not in err.getvalue()
    assert f"{case}.osim: {expected}" in err.getvalue()


@pytest.mark.parametrize("case", sorted(MANGLED))
def test_opensim_rejects_the_same_files(tmp_path, case) -> None:
    """The oracle: OpenSim 4.6 refuses each mangled file too (its socket cannot connect), so the error is not
    a refusal of something OpenSim accepts."""
    opensim = pytest.importorskip("opensim")
    path = tmp_path / f"{case}.osim"
    path.write_text(MANGLED[case][0](ARM26.read_text()))
    with pytest.raises(Exception, match="Failed to connect Socket 'parent'"):
        opensim.Model(str(path)).initSystem()


@pytest.fixture(scope="module")
def arm26():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return biobullet.load_model(str(ARM26))


@pytest.mark.parametrize("activation, message", [
    ("x", "argument 'activation' is not a vector of real numbers (got str"),
    (None, "argument 'activation' is not a vector of real numbers (got NoneType"),
    (0.5j, "argument 'activation' is not a vector of real numbers (got complex"),
    (np.nan, "argument 'activation' contains NaN"),
    ([0.5] * 7, "argument 'activation' has 7 entries"),
    (1.5, "activation outside [0, 1]"),
])
def test_equilibrium_forces_name_a_bad_activation(arm26, activation, message) -> None:
    """Text was numpy's bare ValueError, a complex number a bare TypeError, None and NaN 'outside [0, 1]'; none
    named the file. Now one ModelError naming the file and the argument, as `q` gets."""
    from biobullet import muscles
    with pytest.raises(ModelError) as caught:
        muscles.equilibrium_tendon_forces(arm26, np.zeros(2), activation)
    assert message in str(caught.value) and str(ARM26) in str(caught.value)

