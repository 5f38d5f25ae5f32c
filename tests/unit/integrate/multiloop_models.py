"""Closed-loop test models built from urdf/fourbar_knee.urdf's numbers (shared by the multi-stage compiled
right-hand-side tests and their benchmark): two four-bar knees on one base, and a knee whose loop's known joint
is driven by an explicit joint function (with a second function taking a loop-dependent joint as input)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
KNEE = ROOT / "urdf" / "fourbar_knee.urdf"

_FOOT = ('<link name="foot"><inertial><origin xyz="0.05 0 -0.03"/><mass value="0.6"/>'
         '<inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.002"/></inertial></link>')
_BASE = ('<link name="base"><inertial><mass value="1.0"/>'
         '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>')


def _parts() -> tuple[str, str]:
    """(links and joints of the knee, its <loop> element)."""
    text = KNEE.read_text()
    body = text[text.index("<link name=\"thigh\">"):text.index("<biobullet")]
    body = re.sub(r"<visual>.*?</visual>", "", body, flags=re.DOTALL)
    loop = re.search(r"<loop [^>]*/>", text).group(0)
    return body, loop


def _renamed(text: str, suffix: str) -> str:
    for name in ("thigh", "posterior_link", "anterior_link", "shank", "knee_A", "knee_D", "knee_B", "knee_C"):
        text = re.sub(rf'"{name}"', f'"{name}{suffix}"', text)
    return text


def _hip(name: str, child: str, y: float) -> str:
    return (f'<joint name="{name}" type="continuous"><parent link="base"/><child link="{child}"/>'
            f'<origin xyz="0 {y:g} 0" rpy="0 0 0"/><axis xyz="0 1 0"/></joint>')


def two_knees(directory: Path) -> Path:
    """Two four-bar knees (one loop each) on hips of one fixed base; a damped spring across knee 1 (thigh to
    shank, as the prosthesis's damper), a joint spring-damper at hip 2. Independent: hips and both knee_A."""
    body, loop = _parts()
    text = ('<?xml version="1.0"?>\n<robot name="two_knees">' + _BASE + _hip("hip_1", "thigh_1", 0.15)
            + _hip("hip_2", "thigh_2", -0.15) + _renamed(body, "_1") + _renamed(body, "_2")
            + '<biobullet version="1"><gravity xyz="0 0 -9.81"/><base type="fixed"/>'
            + _renamed(loop, "_1") + _renamed(loop, "_2")
            + '<coordinates names="hip_1 knee_A_1 hip_2 knee_A_2"/>'
            + '<spring name="damper" link_a="thigh_1" xyz_a="-0.01 0 -0.05" link_b="shank_1" xyz_b="0.03 0 -0.1"'
              ' stiffness="300" rest_length="0.12" damping="2"/>'
            + '<joint_spring name="hip_2_spring" joint="hip_2" stiffness="5" rest="0.2" damping="0.1"/>'
            + '</biobullet></robot>')
    path = directory / "two_knees.urdf"
    path.write_text(text)
    return path


def driven_knee(directory: Path, drive_known: bool = True) -> Path:
    """One four-bar knee on a hip; knee_A (the loop's known joint) = a polynomial of the hip angle, and an ankle
    on the shank = an expression of knee_D (a loop-dependent joint) and t. Independent: the hip only.
    `drive_known=False`: knee_A independent too (functions only after the loop)."""
    body, loop = _parts()
    ankle = ('<joint name="ankle" type="continuous"><parent link="shank"/><child link="foot"/>'
             '<origin xyz="0.01 0 -0.38" rpy="0 0 0"/><axis xyz="0 1 0"/></joint>')
    text = ('<?xml version="1.0"?>\n<robot name="driven_knee">' + _BASE + _hip("hip", "thigh", 0.0) + body
            + _FOOT + ankle + '<biobullet version="1"><gravity xyz="0 0 -9.81"/><base type="fixed"/>' + loop
            + ('<joint_function joint="knee_A" type="polynomial" inputs="hip" coefficients="0.3 0.8 0.2"/>'
               if drive_known else "")
            + '<joint_function joint="ankle" type="expression" inputs="knee_D" expression="0.4*sin(knee_D) + 0.5*t"/>'
            + ('<coordinates names="hip"/>' if drive_known else '<coordinates names="hip knee_A"/>')
            + '<spring name="damper" link_a="thigh" xyz_a="-0.01 0 -0.05" link_b="foot" xyz_b="0.03 0 0.0"'
              ' stiffness="300" rest_length="0.3" damping="2"/>'
            + '</biobullet></robot>')
    path = directory / ("driven_knee.urdf" if drive_known else "knee_with_ankle.urdf")
    path.write_text(text)
    return path


def floating_knee(directory: Path, damping: float = 2.0) -> Path:
    """One four-bar knee on a hip of a free-floating base (the loop's ground link is the base, which moves), a
    spring from the thigh to the shank with `damping` (N·s/m; 0: a conservative model) and a joint spring at the
    hip. Independent: the base pose and twist, the hip and knee_A."""
    body, loop = _parts()
    text = ('<?xml version="1.0"?>\n<robot name="floating_knee">' + _BASE + _hip("hip", "thigh", 0.0) + body
            + '<biobullet version="1"><gravity xyz="0 0 -9.81"/><base type="floating"/>' + loop
            + '<coordinates names="hip knee_A"/>'
            + '<spring name="damper" link_a="thigh" xyz_a="-0.01 0 -0.05" link_b="shank" xyz_b="0.03 0 -0.1"'
              f' stiffness="300" rest_length="0.12" damping="{damping:g}"/>'
            + f'<joint_spring name="hip_spring" joint="hip" stiffness="5" rest="0.2" damping="{damping / 20:g}"/>'
            + '</biobullet></robot>')
    path = directory / f"floating_knee_{damping:g}.urdf"
    path.write_text(text)
    return path


def two_resolvers(directory: Path, floating: bool = False):
    """A Model whose coordinate map is built by hand (as a user building a `CoordinateMap` can), on the two-knee
    model: loop 1 (knee 1) as its own `LoopResolver`, then knee_A_2 = a polynomial of knee_D_1 (a joint loop 1
    makes dependent — the loader cannot order this: one resolver holds all loops of a file), then loop 2 (knee 2,
    known joints hip_2 and knee_A_2) as a second resolver: stages (loop, function, loop). Independent: hip_1,
    knee_A_1, hip_2 (and the base with `floating`)."""
    import numpy as np
    from biobullet.constraints.implicit import LoopResolver
    from biobullet.constraints.loops import loop_supports, parse_loops
    from biobullet.dynamics import api
    from biobullet.functions.polynomial import PolynomialFunction
    from biobullet.integrate.checks import check_elements
    from biobullet.model.coordinates import CoordinateMap, ExplicitFunction
    from biobullet.model.model import Model
    from biobullet.model.urdf import load_description

    path = two_knees(directory)
    text = path.read_text().replace('<coordinates names="hip_1 knee_A_1 hip_2 knee_A_2"/>',
                                    '<coordinates names="hip_1 knee_A_1 hip_2"/>')
    if floating:
        text = text.replace('<base type="fixed"/>', '<base type="floating"/>')
    path = directory / ("two_resolvers_floating.urdf" if floating else "two_resolvers.urdf")
    path.write_text(text)

    def build_map(model):
        slot = {name: k for k, name in enumerate(model.joint_names)}
        loops = parse_loops(model.description, model._frames)
        independent = [slot["hip_1"], slot["knee_A_1"], slot["hip_2"]]
        resolvers = []
        for loop in loops:
            support = sorted(loop_supports(model, loop))
            suffix = loop.name[-2:]
            known = [k for k in support if model.joint_names[k] in ("hip" + suffix, "knee_A" + suffix)]
            dependent = [k for k in support if k not in known]
            resolvers.append(LoopResolver(model, (loop,), tuple(dependent), tuple(known),
                                          np.zeros(len(dependent)), np.ones(len(dependent), dtype=bool)))
        drive = ExplicitFunction(slot["knee_A_2"], (slot["knee_D_1"],),
                                 PolynomialFunction(("knee_D_1",), (0.1, 0.6, 0.3)))
        return CoordinateMap(model.n_joints, independent, [resolvers[0], drive, resolvers[1]])

    class HandBuiltMap(Model):
        def _build_coordinate_map(self, description):
            return build_map(self)

    return check_elements(HandBuiltMap(load_description(path), loop_resolver_factory=api.build_loop_resolver,
                                       dynamics=api))


def count_compiled_calls(monkeypatch) -> dict:
    """Count the calls of `CompiledReducedRHS.__call__` and those it handed to the callback stage (returned None),
    for the rest of the test: {"compiled": n, "handed over": m}."""
    from biobullet.integrate import compiled_rhs
    calls = {"compiled": 0, "handed over": 0}
    original = compiled_rhs.CompiledReducedRHS.__call__

    def counted(self, t, y):
        out = original(self, t, y)
        calls["compiled"] += 1
        calls["handed over"] += out is None
        return out

    monkeypatch.setattr(compiled_rhs.CompiledReducedRHS, "__call__", counted)
    return calls
