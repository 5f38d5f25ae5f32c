"""Parse the `<biobullet>` block of a model file (see DESIGN.md, "Model file").

Gravity, base type, initial state, the independent coordinates and joint functions are read here;
loops, force elements, contacts and flexible links are checked for references (links and joints exist)
and handed on as ElementDescriptions to the layers that own them; `<muscle>` elements are kept as XML text
for `biobullet.muscles` (it needs their children).
"""
from __future__ import annotations

import dataclasses
import functools
import xml.etree.ElementTree as ET

from biobullet.core.plugins import entry_point_names
from biobullet.core.errors import ModelError, SourceRef, did_you_mean
from biobullet.core.attributes import check_known_attributes, number, optional_vec3, required, source_of
from biobullet.model.description import (ElementDescription, InitialDescription, JointFunctionDescription, ModelDescription,
                          frozen_mapping)

SUPPORTED_VERSIONS = ("1",)
# Elements handed on to later layers, with the attributes each one accepts (None: the owning layer checks them).
DELEGATED_ELEMENTS: dict[str, set[str] | None] = {
    "loop": None,           # common attributes + the loop type's own (constraints.loops.parse_loop checks them)
    "spring": {"name", "link_a", "xyz_a", "link_b", "xyz_b", "stiffness", "rest_length", "damping"},
    "joint_spring": {"name", "joint", "stiffness", "rest", "damping"},
    "joint_torque": None,   # constant `value`, or a time function: type="fourier" ...
    "joint_stop": {"name", "joint", "lower", "upper", "stiffness", "damping", "type", "exponent", "smoothing"},
    "coordinate_limit": {"name", "joint", "upper", "upper_stiffness", "lower", "lower_stiffness", "damping",
                         "transition"},   # OpenSim's CoordinateLimitForce
    "contact": None,
    "flexible": None,
    "segment_joint": {"name", "joints"},   # link-segment grouping (dynamics.link_segment checks the joints)
}
#: elements that declare how a formulation groups joints (link_segment's two-axis and ball groups) and add no force:
#: engines that do not use them have nothing to apply
ANNOTATION_ELEMENTS = frozenset({"segment_joint"})
#: force elements of other packages: entry-point group whose names are further element tags (their classes check
#: their own attributes when the model's force elements are built)
FORCE_ELEMENT_GROUP = "biobullet.force_elements"
#: most loops, force elements, contacts and flexible links in one `<biobullet>` block (bounded work: each one is
#: evaluated at every step; 1,000 plug-in stops take a 0.02 s run ~20 s, 8,000 more than a minute)
MAX_ELEMENTS = 2000
#: most `<muscle>`s in one model (OpenSim's whole-body models have ~100–300): a 7 MB file of 40,000 two-point
#: muscles ran a 0.01 s run with excitations 400 s, then ran out of memory for the muscles' records
MAX_MUSCLES = 2000
KNOWN_ELEMENTS = ("gravity", "base", "initial", "coordinates", "joint_function", "muscle", *DELEGATED_ELEMENTS)
#: elements that say one thing about the whole model: a second one is refused, not silently preferred
SINGLE_ELEMENTS = frozenset({"gravity", "base", "coordinates"})
#: elements read here, whose values are attributes only: text or a child element in them (OpenSim's habit,
#: `<gravity>0 -9.81 0</gravity>`) would be silently ignored
ATTRIBUTE_ONLY_ELEMENTS = frozenset({"gravity", "base", "initial", "coordinates", "joint_function"})


def parse_extension(description: ModelDescription, block: ET.Element | None,
                    floating_base: bool | None) -> ModelDescription:
    file = description.file
    links = {link.name for link in description.links}
    joints = {joint.name: joint for joint in description.joints}
    movable = {name for name, joint in joints.items() if joint.movable}
    changes: dict[str, object] = {}
    functions: list[JointFunctionDescription] = []
    initial: list[InitialDescription] = []
    elements: list[ElementDescription] = []
    muscles: list[str] = []
    if block is not None:
        block_source = SourceRef(file, "<biobullet>")
        version = block.attrib.get("version", "1")
        if version not in SUPPORTED_VERSIONS:
            raise block_source.error("version", f"unsupported version {version!r}",
                                     " or ".join(f'"{v}"' for v in SUPPORTED_VERSIONS))
        changes["extension_version"] = version
        text = " ".join(filter(None, [block.text, *(child.tail for child in block)])).strip()
        if text:   # (a <![CDATA[...]]> section is text too: elements written inside one are not elements)
            raise block_source.error(None, f"the text {text[:40]!r} inside <biobullet> is not read",
                                     "elements (and comments) only in the <biobullet> block")
        plugin_tags = functools.cache(lambda: entry_point_names(FORCE_ELEMENT_GROUP))   # (read once per file)
        seen_single: set[str] = set()
        for element in block:
            if not isinstance(element.tag, str):  # comments
                continue
            source = source_of(file, element)
            tag = element.tag
            if tag in ATTRIBUTE_ONLY_ELEMENTS:
                _check_attributes_only(source, element)
            if tag in SINGLE_ELEMENTS:
                if tag in seen_single:
                    raise source.error(None, f"a second <{tag}> element: the block has one already, and one of "
                                       "the two would be ignored", f"at most one <{tag}> in the <biobullet> block")
                seen_single.add(tag)
            if tag == "gravity":
                check_known_attributes(source, element, {"xyz"})
                changes["gravity"] = optional_vec3(source, element, "xyz", (0.0, 0.0, -9.81))
            elif tag == "base":
                check_known_attributes(source, element, {"type"})
                base_type = required(source, element, "type")
                if base_type not in ("fixed", "floating"):
                    raise source.error("type", f"unknown base type {base_type!r}{did_you_mean(base_type, ('fixed', 'floating'))}",
                                       "fixed or floating")
                changes["base_type"] = base_type
            elif tag == "initial":
                check_known_attributes(source, element, {"joint", "position", "velocity"})
                joint = _movable_joint(source, element, "joint", movable, joints)
                initial.append(InitialDescription(joint, number(source, element, "position", None),
                                                  number(source, element, "velocity", None), source))
            elif tag == "coordinates":
                check_known_attributes(source, element, {"names"})
                names = tuple(required(source, element, "names").split())
                for name in names:
                    if name not in movable:
                        raise source.error("names", f"unknown joint {name!r}{did_you_mean(name, movable)}",
                                           _joint_list(movable))
                if len(set(names)) != len(names):
                    raise source.error("names", "a coordinate is listed twice", "distinct joint names")
                changes["coordinates"] = names
            elif tag == "joint_function":
                functions.append(_parse_joint_function(source, element, movable, joints))
            elif tag == "muscle":   # parsed whole by biobullet.muscles (a later layer) when the model is checked
                if len(muscles) == MAX_MUSCLES:
                    raise source.error(None, f"more than {MAX_MUSCLES} muscles",
                                       f"at most {MAX_MUSCLES} <muscle>s (each one's path and records are evaluated "
                                       "at every step of a run)")
                muscles.append(ET.tostring(element, encoding="unicode"))
            elif tag in DELEGATED_ELEMENTS or tag in plugin_tags():
                allowed = DELEGATED_ELEMENTS.get(tag)
                if allowed is not None:
                    check_known_attributes(source, element, allowed)
                for key in ("link", "link_a", "link_b"):
                    if key in element.attrib and element.attrib[key] not in links:
                        raise source.error(key, f"unknown link {element.attrib[key]!r}"
                                           f"{did_you_mean(element.attrib[key], links)}",
                                           "the name of a <link> in this file")
                if "joint" in element.attrib:
                    _movable_joint(source, element, "joint", movable, joints)
                elements.append(ElementDescription(tag, frozen_mapping(dict(element.attrib)), source))
                if len(elements) > MAX_ELEMENTS:
                    raise source.error(None, f"more than {MAX_ELEMENTS} loops, force elements, contacts and "
                                       "flexible links", f"at most {MAX_ELEMENTS} (every one is evaluated at "
                                       "every step of a run)")
            else:
                known = (*KNOWN_ELEMENTS, *entry_point_names(FORCE_ELEMENT_GROUP))
                raise ModelError(f"unknown element <{tag}>{did_you_mean(tag, known)}", file=file,
                                 element=f"<biobullet> <{tag}>",
                                 expected="one of " + ", ".join(
                                     f"<{k}>" for k in (*KNOWN_ELEMENTS, *sorted(
                                         plugin_tags() - set(KNOWN_ELEMENTS)))))
    functions.extend(_mimic_functions(description))
    _check_functions(file, functions)
    seen_initial: set[str] = set()
    driven = {item.joint: item.source.element for item in functions}
    for item in initial:
        if item.joint in seen_initial:
            raise item.source.error("joint", "initial state given twice for this joint", "one <initial> per joint")
        seen_initial.add(item.joint)
        if item.joint in driven:   # it would be ignored: the function's value at the inputs' initial state is used
            raise item.source.error("joint", f"joint {item.joint!r} is driven by {driven[item.joint]}: its position "
                                    "and velocity follow from the function's inputs, so this initial state would "
                                    "be ignored", "an <initial> for an independent joint (or a loop's dependent "
                                    "joint, as the first guess of the assembly)")
    if floating_base is not None:
        changes["base_type"] = "floating" if floating_base else "fixed"
    return dataclasses.replace(description, joint_functions=tuple(functions), initial=tuple(initial),
                               elements=tuple(elements), muscles=tuple(muscles), **changes)


def _check_attributes_only(source: SourceRef, element: ET.Element) -> None:
    """One ModelError for text or a child element inside `element` (comments are fine): nothing reads them."""
    child = next((c for c in element if isinstance(c.tag, str)), None)
    text = " ".join(filter(None, [element.text, *(c.tail for c in element)])).strip()
    if child is None and not text:
        return
    what = f"a child element <{child.tag}>" if child is not None else f"the text {text[:40]!r}"
    raise source.error(None, f"{what} inside <{element.tag}> is not read (every value of this element is an "
                       "attribute)", f'attributes only, e.g. <{element.tag} {_EXAMPLES[element.tag]}/>')


_EXAMPLES = {"gravity": 'xyz="0 0 -9.81"', "base": 'type="floating"', "initial": 'joint="J" position="0.1"',
             "coordinates": 'names="q1 q2"', "joint_function": 'joint="J" type="linear" inputs="A" coefficients="2"'}


def _joint_list(names) -> str:
    return "one of " + ", ".join(sorted(names)) if names else "a movable joint (the model has none)"


def _movable_joint(source: SourceRef, element: ET.Element, attribute: str, movable: set[str], joints) -> str:
    name = required(source, element, attribute)
    _check_one_dof(source, attribute, name, movable, joints)
    return name


def _check_one_dof(source: SourceRef, attribute: str, name: str, movable: set[str], joints) -> None:
    """A joint function's output and inputs are 1-DOF coordinates (revolute, continuous, prismatic)."""
    if name in movable:
        return
    if name in joints and joints[name].multi_dof:   # spherical, planar, floating: several coordinates
        raise source.error(attribute, f"joint {name!r} is {joints[name].type}: it has several degrees of freedom "
                           "(a quaternion or a planar pose), and joint functions map single coordinates",
                           "a revolute, continuous or prismatic joint")
    if name in joints:
        raise source.error(attribute, f"joint {name!r} is {joints[name].type}, not movable",
                           "a revolute, continuous or prismatic joint")
    raise source.error(attribute, f"unknown joint {name!r}{did_you_mean(name, movable)}", _joint_list(movable))


def _parse_joint_function(source: SourceRef, element: ET.Element, movable: set[str],
                          joints) -> JointFunctionDescription:
    from biobullet.functions import registry

    joint = _movable_joint(source, element, "joint", movable, joints)
    type_name = required(source, element, "type")
    cls = registry.get(type_name)
    if cls is None:
        raise source.error("type", f"unknown joint-function type {type_name!r}"
                           f"{did_you_mean(type_name, registry.names())}", "one of " + ", ".join(registry.names()))
    inputs = tuple(element.attrib.get("inputs", "").split())
    for name in inputs:
        _check_one_dof(source, "inputs", name, movable, joints)
    if joint in inputs:
        raise source.error("inputs", f"joint {joint!r} is an input of its own function", "other joints")
    allowed = {"joint", "type", "inputs", *cls.attributes}
    check_known_attributes(source, element, allowed)
    function = cls.from_attributes(frozen_mapping(dict(element.attrib)), inputs, source)
    return JointFunctionDescription(joint, function, source)


def _mimic_functions(description: ModelDescription) -> list[JointFunctionDescription]:
    from biobullet.functions.linear import LinearFunction

    import warnings
    result = []
    movable = {joint.name for joint in description.joints if joint.movable}
    multi_dof = {joint.name: joint.type for joint in description.joints if joint.multi_dof}
    for joint in description.joints:
        if joint.mimic is not None and (joint.name in multi_dof or joint.mimic[0] in multi_dof):
            # a mimic couples single coordinates; PyBullet ignores <mimic> altogether, so the file still loads
            which = joint.name if joint.name in multi_dof else joint.mimic[0]
            warnings.warn(f"{description.file}: <joint name=\"{joint.name}\"> <mimic> involves the {multi_dof[which]} "
                          f"joint {which!r}, which has several degrees of freedom: ignored, {joint.name!r} stays "
                          "independent (a mimic couples single coordinates; PyBullet ignores <mimic>)", stacklevel=4)
            continue
        if joint.mimic is None or not joint.movable:
            continue
        source = SourceRef(description.file, f'<joint name="{joint.name}"> <mimic>')
        target, multiplier, offset = joint.mimic
        if target not in movable:
            # PyBullet ignores <mimic>, Pinocchio does unless asked: a dangling reference (a typo in the file)
            # leaves the joint independent there, so it does here, with a warning
            warnings.warn(f"{description.file}: <joint name=\"{joint.name}\"> <mimic> names the unknown joint "
                          f"{target!r}: ignored, {joint.name!r} stays independent (as in PyBullet and Pinocchio)",
                          stacklevel=4)
            continue
        if target == joint.name:
            raise source.error("joint", "a joint cannot mimic itself", "another joint")
        result.append(JointFunctionDescription(joint.name, LinearFunction.mimic(target, multiplier, offset), source))
    return result


def _check_functions(file: str, functions: list[JointFunctionDescription]) -> None:
    by_joint: dict[str, JointFunctionDescription] = {}
    for item in functions:
        if item.joint in by_joint:
            first = by_joint[item.joint].source.element
            raise item.source.error("joint", f"joint {item.joint!r} is made dependent twice (also by {first})",
                                    "at most one function (or <mimic>) per joint")
        by_joint[item.joint] = item
    # Depth-first search with an explicit stack (a chain of thousands of functions or <mimic>s must not hit
    # Python's recursion limit): 1 = on the current path, 2 = done.
    state: dict[str, int] = {}
    for start in by_joint:
        if state.get(start):
            continue
        path: list[str] = [start]
        stack = [iter(by_joint[start].function.inputs)]
        state[start] = 1
        while stack:
            name = next(stack[-1], None)
            if name is None:
                state[path.pop()] = 2
                stack.pop()
                continue
            if name not in by_joint or state.get(name) == 2:
                continue
            if state.get(name) == 1:
                cycle = path[path.index(name):] + [name]
                shown_cycle = " → ".join(cycle if len(cycle) <= 12 else cycle[:5] + ["…"] + cycle[-5:])
                raise by_joint[name].source.error("inputs", "cyclic joint-function inputs: " + shown_cycle,
                                                  "inputs that do not depend back on this joint")
            state[name] = 1
            path.append(name)
            stack.append(iter(by_joint[name].function.inputs))
