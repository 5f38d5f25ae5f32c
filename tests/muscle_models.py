"""Shared by the muscle-dynamics tests: the bundled arm26 with a chosen subset of its muscles (its BIClong and
TRIlong wrap over an ellipsoid and several surfaces, which the paths do not evaluate yet)."""
from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

ARM26 = Path(__file__).resolve().parents[1] / "plugin" / "biobullet" / "data" / "opensim" / "arm26.osim"
#: arm26's muscles whose paths are evaluated (TRIlat, TRImed, BRA wrap over the cylinder "TRI")
EVALUATED = ("TRIlat", "TRImed", "BICshort", "BRA")


def arm26_with(muscles, folder, rigid=()) -> str:
    """Write arm26.osim keeping only `muscles` (ForceSet entries) into `folder`, those in `rigid` with a rigid
    tendon (`ignore_tendon_compliance`); returns the file's path."""
    tree = ET.parse(ARM26)
    for force_set in tree.getroot().iter("ForceSet"):
        objects = force_set.find("objects")
        for element in list(objects):
            if element.get("name") not in muscles:
                objects.remove(element)
            elif element.get("name") in rigid:
                ET.SubElement(element, "ignore_tendon_compliance").text = "true"
    path = Path(folder) / ("arm26_" + "_".join(muscles) + ("_rigid" if rigid else "") + ".osim")
    tree.write(path)
    return str(path)


def load_quietly(path):
    import biobullet
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # markers are reported, not imported
        return biobullet.load_model(path)
