"""Shared by the muscle-dynamics tests: the bundled arm26 with a chosen subset of its muscles, and a run of OpenSim's
Manager under constant excitations (the oracle of tests/validation and the slow tier in tests/benchmarks)."""
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


def opensim_run(osim, path: str, excitations, activation: float, t_end: float):
    """OpenSim 4.6's Manager (accuracy 1e-10) on the .osim file `path`: constant excitations (a number for every
    muscle or a mapping by name), every activation `activation`, fibers equilibrated (`equilibrateMuscles`), from
    the default pose to t_end (s). Returns the equilibrated fiber lengths {muscle: m}, the coordinates at t_end
    {name: (value, speed)} and {muscle: (fiber length, activation)} at t_end."""
    model = osim.Model(path)
    controller = osim.PrescribedController()
    muscles = model.getMuscles()
    for k in range(muscles.getSize()):
        name = muscles.get(k).getName()
        controller.addActuator(muscles.get(k))
        value = excitations[name] if isinstance(excitations, dict) else excitations
        controller.prescribeControlForActuator(name, osim.Constant(value))
    model.addController(controller)
    state = model.initSystem()
    for k in range(muscles.getSize()):
        muscles.get(k).setActivation(state, activation)
    model.equilibrateMuscles(state)
    start = {muscles.get(k).getName(): muscles.get(k).getFiberLength(state) for k in range(muscles.getSize())}
    manager = osim.Manager(model)
    manager.setIntegratorAccuracy(1e-10)
    state.setTime(0.0)
    manager.initialize(state)
    end = manager.integrate(t_end)
    model.realizeDynamics(end)
    coordinates = model.getCoordinateSet()
    values = {coordinates.get(i).getName(): (coordinates.get(i).getValue(end), coordinates.get(i).getSpeedValue(end))
              for i in range(coordinates.getSize())}
    final = {muscles.get(k).getName(): (muscles.get(k).getFiberLength(end), muscles.get(k).getActivation(end))
             for k in range(muscles.getSize())}
    return start, values, final
