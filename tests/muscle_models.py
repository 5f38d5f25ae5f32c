"""Shared by the muscle-dynamics tests: the bundled arm26 with a chosen subset of its muscles, and a run of OpenSim's
Manager under constant excitations (the oracle of tests/validation and the slow tier in tests/benchmarks)."""
from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

ARM26 = Path(__file__).resolve().parents[1] / "plugin" / "biobullet" / "data" / "opensim" / "arm26.osim"
#: arm26's muscles whose paths are evaluated (TRIlat, TRImed, BRA wrap over the cylinder "TRI")
EVALUATED = ("TRIlat", "TRImed", "BICshort", "BRA")

#: a free-floating pelvis with a hip and a knee, three muscles: one over a cylinder on the thigh, one to a moving
#: point on the shank, one straight (load with floating_base=True)
LEG_URDF = """<robot name="leg">
  <link name="pelvis"><inertial><origin xyz="0 0 0.05"/><mass value="10"/>
    <inertia ixx="0.1" iyy="0.12" izz="0.08"/></inertial></link>
  <link name="thigh"><inertial><origin xyz="0.01 0 -0.2"/><mass value="5"/>
    <inertia ixx="0.07" iyy="0.07" izz="0.01"/></inertial></link>
  <link name="shank"><inertial><origin xyz="0 0.01 -0.2"/><mass value="3"/>
    <inertia ixx="0.04" iyy="0.04" izz="0.005"/></inertial></link>
  <joint name="hip" type="revolute"><parent link="pelvis"/><child link="thigh"/><origin xyz="0 0.08 0"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="knee" type="revolute"><parent link="thigh"/><child link="shank"/><origin xyz="0 0 -0.4"/>
    <axis xyz="0 1 0"/><limit lower="-0.5" upper="2.5" effort="1" velocity="1"/></joint>
  <biobullet>
    <muscle name="extensor" model="degroote2016" max_isometric_force="200" optimal_fiber_length="0.1"
            tendon_slack_length="0.52">
      <point link="pelvis" xyz="0.08 0.08 0.05"/>
      <wrap name="kneecap" type="cylinder" link="thigh" xyz="0 0 -0.4" xyz_body_rotation="1.5707963 0 0"
            radius="0.04" length="0.2" quadrant="+x"/>
      <point link="shank" xyz="0.05 0 -0.1"/>
    </muscle>
    <muscle name="flexor" model="thelen2003" tendon="compliant" max_isometric_force="150"
            optimal_fiber_length="0.12" tendon_slack_length="0.32">
      <point link="pelvis" xyz="-0.05 0.08 0"/>
      <moving_point link="shank" coordinate="knee" range="-0.5 2.5" xyz="0 0 -0.15">
        <x type="polynomial" coefficients="-0.03 0.01"/></moving_point>
    </muscle>
    <muscle name="hip_flexor" model="degroote2016" max_isometric_force="150" optimal_fiber_length="0.08"
            tendon_slack_length="0.12">
      <point link="pelvis" xyz="0.06 0.05 0.08"/>
      <point link="thigh" xyz="0.03 0 -0.1"/>
    </muscle>
  </biobullet>
</robot>
"""


def leg_pose() -> tuple[np.ndarray, np.ndarray]:
    """A tilted, turned, moving pose with the knee bent (the extensor over its cylinder)."""
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    quaternion = np.concatenate([np.sin(0.35) * axis, [np.cos(0.35)]])   # (x, y, z, w): 0.7 rad
    q = np.concatenate([[0.1, -0.2, 1.0], quaternion, [0.4, 1.1]])
    v = np.array([0.2, -0.1, 0.3, 0.5, -0.4, 0.2, 1.0, -2.0])
    return q, v


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


def opensim_pinned_arm(osim):
    """(model, arm): an OpenSim 4.6 model with one 1 kg arm (COM 0.2 m below its pin, inertia 0.01 kg m²) on a pin
    joint `elbow` at the ground's origin — the one-muscle arm of the muscle tests."""
    model = osim.Model()
    arm = osim.Body("arm", 1.0, osim.Vec3(0, -0.2, 0), osim.Inertia(0.01))
    model.addBody(arm)
    model.addJoint(osim.PinJoint("elbow", model.getGround(), osim.Vec3(0), osim.Vec3(0), arm, osim.Vec3(0),
                                 osim.Vec3(0)))
    return model, arm


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
