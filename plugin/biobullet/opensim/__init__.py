"""OpenSim `.osim` models as biobullet models: the importer (no OpenSim needed).

`load_osim(path)` reads the file (`document`), translates it into URDF text with a `<biobullet>` block
(`translate`) and loads that text through the URDF path, so `biobullet convert model.osim --out model.urdf`
writes exactly what `load_model("model.osim")` loads. `osim_body_links(path)` gives, for each OpenSim body, its
link and the body frame in the link frame (muscle path points and markers are given in body frames).
Muscles (Thelen2003, Millard2012Equilibrium, DeGrooteFregly2016) become `<muscle>` elements on the bodies' links
(`opensim.muscles`). CoordinateActuators, TorqueActuators and PointActuators are inputs: `osim_actuators(path)`
and `actuator_forces(model, actuators, q, controls)` (`opensim.actuators`). Components the importer cannot represent are reported: one warning each (other path
actuators: one warning listing them), or,
with `strict=True`, one ModelError listing them all.
"""
from __future__ import annotations

import dataclasses
import os
import warnings

from biobullet.core.errors import ModelError
from biobullet.opensim.actuators import INPUT_ACTUATORS, ActuatorInput, actuator_forces, osim_actuators
from biobullet.opensim.document import Document, read_document
from biobullet.model.bundled import resolve_model_path
from biobullet.opensim.muscles import represented_muscle_types
from biobullet.opensim.translate import BodyLink, Translation, translate

#: file name suffix dispatched to this importer by `biobullet.load_model`
OSIM_SUFFIX = ".osim"


def osim_translation(path: str | os.PathLike[str], *, strict: bool = False) -> Translation:
    """The translation of an .osim file (URDF text, body map, reports); warns once per report, or raises a
    ModelError listing them all when `strict`. `path` may be a bundled model's bare name ("arm26")."""
    file = resolve_model_path(path)
    document = read_document(file)
    translation = translate(document)
    reports = translation.reports + unmapped_reports(document, translation.mapped)
    if strict and reports:
        raise ModelError("components the importer cannot represent (strict): " + "; ".join(reports), file=file,
                         expected="a model without them, or strict off (each is then reported by a warning)")
    for report in reports:
        warnings.warn(f"{file}: {report}", stacklevel=3)
    for note in document.notes:   # imported as OpenSim reads it: a warning, not a refusal under `strict`
        warnings.warn(f"{file}: {note}", stacklevel=3)
    return translation


def unmapped_reports(document: Document, mapped: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """One line per force or constraint (but those in `mapped`), contact geometry or other component that is
    not imported (muscles and other path-based forces in one line, markers in one line)."""
    reports = []
    muscles = represented_muscle_types()
    paths = [f"{force.type} {force.name}" for force in document.forces if force.element.find("GeometryPath")
             is not None and force.type not in muscles]
    if paths:
        reports.append(f"{len(paths)} path actuator(s) not imported (only the muscle classes "
                       f"{', '.join(sorted(muscles))} are): " + ", ".join(paths))
    for force in document.forces:
        if force.element.find("GeometryPath") is not None or force.path in mapped:
            continue
        if force.type in INPUT_ACTUATORS:
            continue   # inputs: `osim_actuators` / `actuator_forces`
        if force.type == "PointToPointActuator":
            reports.append(f"{force.type} {force.name}: an input, not imported (apply it as a force on its bodies)")
        else:
            reports.append(f"{force.type} {force.name}: not imported")
    for constraint in document.constraints:
        if constraint.path in mapped:
            continue
        reports.append(f"{constraint.type} {constraint.name}: not imported")
    for geometry in document.contact_geometry.values():
        if geometry.path in mapped:
            continue
        reports.append(f"{geometry.type} {geometry.name}: not imported")
    markers = [c.name for c in document.other if c.type == "Marker"]
    if markers:
        reports.append(f"{len(markers)} marker(s) not imported: " + ", ".join(markers))
    for component in document.other:
        if component.type != "Marker":
            reports.append(f"{component.type} {component.name}: not imported")
    return tuple(reports)


def osim_urdf(path: str | os.PathLike[str], *, strict: bool = False) -> str:
    """The URDF text (with its `<biobullet>` block) that `load_osim` loads."""
    return osim_translation(path, strict=strict).urdf


def osim_body_links(path: str | os.PathLike[str]) -> dict[str, BodyLink]:
    """For each OpenSim body (and the ground), its URDF link and the body frame in the link frame."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return osim_translation(path).bodies


def load_osim(path: str | os.PathLike[str], *, strict: bool = False, inertia: str = "warn"):
    """The Model of an .osim file (see the module docstring); ModelError naming file, element and property on
    bad input."""
    file = resolve_model_path(path)
    return model_of(file, osim_translation(file, strict=strict), inertia)


def model_of(file: str, translation: Translation, inertia: str = "warn"):
    """The Model of a translation of `file` (the URDF path: parse, assemble, check every element)."""
    from biobullet.dynamics.api import build_model
    from biobullet.integrate.checks import check_elements
    from biobullet.model.urdf import description_from_root, parse_xml

    root = parse_xml(file, translation.urdf.encode("utf-8"))
    # OpenSim's coordinate ranges (written as URDF <limit>s) do not act in its dynamics: no limit stops
    description = dataclasses.replace(description_from_root(root, file, None, inertia, joint_limits=False),
                                      translated_urdf=translation.urdf)
    return check_elements(build_model(description))


def convert_osim(path: str | os.PathLike[str], out: str | os.PathLike[str], *, strict: bool = False) -> str:
    """Write the URDF text of an .osim file to `out` (atomically, after loading it as `load_osim` does, so a
    file that would not load is never written); returns the text."""
    from biobullet.core.atomic import write_text

    file = resolve_model_path(path)
    translation = osim_translation(file, strict=strict)
    model_of(file, translation)
    write_text(out, translation.urdf)
    return translation.urdf


__all__ = ["OSIM_SUFFIX", "BodyLink", "Translation", "Document", "read_document", "load_osim", "convert_osim",
           "osim_urdf", "osim_translation",
           "osim_body_links", "unmapped_reports", "model_of", "ActuatorInput", "osim_actuators", "actuator_forces"]
