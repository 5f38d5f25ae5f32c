"""Build an `ElasticChain` from a model file: URDF chain + `<flexible>` / `<contact>` elements (DESIGN.md).

The URDF must be a planar chain in the x–y plane: optionally two prismatic joints with axes x then y (the
floating planar base, coordinates X1, X2 of O_1), then one revolute/continuous joint about z per link. Each
link carrying a `<flexible>` element becomes one chain link; a link without one is rigid (uniform rod, mass from
its `<inertial>`). `<contact>` elements must sit at joint points (xyz = 0 0 0 or the link end).
Joint origins carry no rotation; the base joints and the first revolute joint sit at the origin, every later
joint at xyz = L 0 0 of its parent (the chain places its links by their lengths alone).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from biobullet.core.attributes import REQUIRED, number, vector3
from biobullet.core.errors import ModelError, SourceRef

FLEXIBLE_ATTRIBUTES = {"link", "theory", "boundary", "modes", "youngs_modulus", "shear_modulus",
                       "shear_coefficient", "area", "second_moment", "density", "kelvin_voigt", "air_damping",
                       "segments", "length"}
#: most modes per link (a mode costs one coordinate; thousands are a typo, never a model)
MAX_MODES = 50
_REQUIRED = ("youngs_modulus", "shear_modulus", "shear_coefficient", "area", "second_moment", "density")


def beam_numbers(source: SourceRef, a: Mapping[str, Any], default_length: float | None) -> dict[str, Any]:
    """The checked numbers of a `<flexible>` element that the Gibbs–Appell chain and the segment expansion
    (`segments.expand_urdf`) both read (SI units): the six section and material numbers, length (default: the
    link's extent to its child joint), kelvin_voigt and air_damping."""
    kw: dict[str, Any] = {key: number(source, a, key, positive=True) for key in _REQUIRED}
    if kw["shear_coefficient"] > 1.2:
        raise source.error("shear_coefficient", f"got {kw['shear_coefficient']:g}", "0 < kappa <= 1.2")
    kw["length"] = number(source, a, "length", default_length if default_length is not None else REQUIRED,
                          positive=True)
    kw["kelvin_voigt"] = number(source, a, "kelvin_voigt", 0.0, non_negative=True)
    kw["air_damping"] = number(source, a, "air_damping", 0.0, non_negative=True)
    return kw


def flexible_attributes(element: Any, default_length: float | None) -> dict[str, Any]:
    """Validated keyword arguments of `link_from_beam` from one `<flexible>` ElementDescription."""
    from biobullet.flexible import BOUNDARIES, THEORIES
    from biobullet.core.attributes import check_known_attributes, choice, integer
    source, a = element.source, element.attributes
    check_known_attributes(source, a, FLEXIBLE_ATTRIBUTES)
    theory = choice(source, a, "theory", THEORIES, "timoshenko", what="theory")
    boundary = choice(source, a, "boundary", BOUNDARIES, what="boundary")
    n_modes = integer(source, a, "modes", 1, at_least=0, at_most=MAX_MODES)
    return {**beam_numbers(source, a, default_length), "boundary": boundary, "theory": theory, "n_modes": n_modes}


def _single_law(elements: list[Any], builder: Any, what: str) -> Any:
    laws = [builder(e.attributes, e.source) for e in elements]
    if not laws:
        return None
    first = laws[0]
    for law, e in zip(laws[1:], elements[1:]):
        if type(law) is not type(first) or law.parameters != first.parameters:
            raise e.source.error(f"{what}_law", "every contact of an elastic chain must use the same law",
                                 f"the same {what} law and parameters as the first <contact>")
    return first


def _check_chain_origins(file: str, prismatic: list[Any], revolute: list[Any]) -> None:
    """The chain places its links by their lengths alone: each joint's <origin> has no rotation, the base joints
    and the first revolute joint sit at the origin, every later joint on its parent's x axis. ModelError naming the
    joint otherwise (the chain ignored a rotation, an offset of its first joint and the direction of a child
    joint, of which it took only the distance)."""
    for k, joint in enumerate((*prismatic, *revolute)):
        source = SourceRef(file, f"{joint.source.element} <origin>")
        if np.any(np.abs(joint.origin_rpy) > 1e-12):
            raise source.error("rpy", "an elastic chain's joints carry no rotation (the chain would ignore it)",
                               "0 0 0")
        x, y, z = (float(v) for v in joint.origin_xyz)
        if k <= len(prismatic) and (x, y, z) != (0.0, 0.0, 0.0):
            raise source.error("xyz", "the chain starts at the world origin (the chain would ignore this offset)",
                               "0 0 0 (place the chain with <initial> positions of its base joints)")
        if k > len(prismatic) and not (x > 0.0 and abs(y) <= 1e-12 and abs(z) <= 1e-12):
            raise source.error("xyz", f"{x:g} {y:g} {z:g} is not on the parent link's x axis (the chain would take "
                               "only its distance)", "L 0 0 with L > 0, the parent link's length")


#: the `<biobullet>` elements an elastic chain runs (with `<gravity>` and `<initial>`)
CHAIN_ELEMENTS = ("flexible", "contact")


def refuse_ignored(desc: Any, file: str) -> None:
    """ModelError naming the first part of the file an elastic chain would leave out: a joint function (its joint
    would move freely), a loop, a force element, a muscle, a `<base type="floating">` (the chain's floating base
    is its two prismatic joints). Before, `ElasticChain.from_model_file` ran such a file without them."""
    expected = "<flexible>, <contact>, <gravity> and <initial> only (run other elements on the segmented model: " \
               "biobullet.flexible.segments.load_segmented_model)"
    for function in desc.joint_functions:
        raise function.source.error("joint", f"an elastic chain has no joint functions (joint {function.joint!r} "
                                    "would move freely)", expected)
    for element in desc.elements:
        if element.tag not in CHAIN_ELEMENTS:
            raise element.source.error(None, f"an elastic chain does not run <{element.tag}> elements (it would "
                                       "be left out)", expected)
    if desc.muscles:
        raise ModelError("an elastic chain does not run muscles (they would be left out)", file=file,
                         element="<muscle>", expected=expected)
    if desc.base_type == "floating":
        raise ModelError("an elastic chain's floating base is two leading prismatic joints (x, y), not a floating "
                         "root (it would be left out)", file=file, element="<base>", attribute="type",
                         expected="fixed, with prismatic joints along x then y for a floating planar base")


def refuse_limits(file: str, joints: list[Any]) -> None:
    """ModelError naming the first chain joint whose URDF `<limit>` the URDF engine makes a joint stop (a revolute or
    prismatic joint with lower < upper: `forces.elements.limit_stops`): the elastic chain has no joint stops, so it
    would run past the limit where the URDF engine (and the segmented model of the same file) stops."""
    for joint in joints:
        if joint.type in ("revolute", "prismatic") and joint.lower is not None and joint.upper is not None \
                and joint.lower < joint.upper:
            raise ModelError(f"joint {joint.name!r} has a URDF <limit> (lower {joint.lower:g}, upper {joint.upper:g}), "
                             "which the URDF engine makes a joint stop; an elastic chain has no joint stops (the "
                             "limit would be left out)", file=file, element=f'<joint name="{joint.name}"> <limit>',
                             attribute="lower", expected="no limit on the chain's joints (a continuous joint, or "
                             "lower > upper: PyBullet's 'no limit'), or ElasticChain.from_model_file(path, "
                             "joint_limits=False) to run without it, as load_model(path, joint_limits=False) does")


def chain_from_model_file(cls: type, path: str | Path, *, joint_limits: bool = True, **overrides: Any) -> Any:
    """Parse `path` (see module docstring) into `cls` (ElasticChain); overrides go to the constructor.
    joint_limits: a URDF `<limit>` on a chain joint is refused (`refuse_limits`); False: ignored, as
    `load_model(path, joint_limits=False)` ignores it."""
    from biobullet.contact import friction_law_from_attributes, normal_law_from_attributes
    from biobullet.flexible.gibbs_appell import FlexibleLinkData, link_from_beam
    from biobullet.dynamics.api import model_from_file as load_model
    desc = load_model(path).description
    file = str(path)
    refuse_ignored(desc, file)
    joints = [j for j in desc.joints if j.movable]
    prismatic = [j for j in joints if j.type == "prismatic"]
    revolute = [j for j in joints if j.type in ("revolute", "continuous")]
    if len(prismatic) not in (0, 2) or (prismatic and joints[:2] != prismatic):
        raise ModelError("an elastic chain has either no prismatic joint or two leading ones (x, y base)",
                         file=file, element="<joint>", attribute="type")
    if prismatic and [tuple(np.round(j.axis, 12)) for j in prismatic] != [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0)]:
        raise ModelError("the base prismatic joints must have axes 1 0 0 and 0 1 0", file=file,
                         element=f'<joint name="{prismatic[0].name}">', attribute="axis")
    if not revolute:
        raise ModelError("no revolute joint: not a chain", file=file, element="<joint>", attribute="type")
    for j in revolute:
        if tuple(np.round(j.axis, 12)) != (0.0, 0.0, 1.0):
            raise ModelError("chain joints must turn about z", file=file, element=f'<joint name="{j.name}">',
                             attribute="axis", expected="0 0 1")
    _check_chain_origins(file, prismatic, revolute)
    if joint_limits:
        refuse_limits(file, prismatic + revolute)
    chain_links = {j.child for j in revolute}
    for link in desc.links:   # (a tool on a fixed joint, a massive slider: left out of the chain without a word)
        if link.name not in chain_links and link.inertial is not None and link.inertial.mass > 0.0:
            raise ModelError(f"link {link.name!r} has a mass of {link.inertial.mass:g} kg outside the chain's links "
                             "(the chain would leave it out)", file=file, element=f'<link name="{link.name}">',
                             attribute="inertial", expected="mass only on the links of the revolute chain")
    by_parent = {j.parent: j for j in revolute}
    flex = {e.get("link"): e for e in desc.elements_of("flexible")}
    links: list[Any] = []
    for k, j in enumerate(revolute):
        if k > 0 and j.parent != revolute[k - 1].child:
            raise ModelError("revolute joints must form one serial chain", file=file,
                             element=f'<joint name="{j.name}">', attribute="parent")
        child_joint = by_parent.get(j.child)
        default_len = float(np.linalg.norm(child_joint.origin_xyz)) if child_joint is not None else None
        element = flex.pop(j.child, None)
        if element is not None:
            kw = flexible_attributes(element, default_len)
            links.append(link_from_beam(j.child, **kw))
        else:
            inertial = desc.link(j.child).inertial
            if default_len is None or inertial is None:
                raise ModelError("a rigid chain link needs an <inertial> and a child joint", file=file,
                                 element=f'<link name="{j.child}">', attribute="inertial")
            links.append(FlexibleLinkData.rigid(j.child, default_len, inertial.mass))
    if flex:
        e = next(iter(flex.values()))
        raise e.source.error("link", f"link {e.get('link')!r} is not a link of the revolute chain",
                             "a link moved by one of the chain's revolute joints")
    contacts = list(desc.elements_of("contact"))
    names = [j.child for j in revolute]
    points = []
    for e in contacts:
        link = e.get("link")
        xyz = np.array(vector3(e.source, e.attributes, "xyz"))
        if link not in names:
            raise e.source.error("link", f"{link!r} is not a chain link", "a chain link")
        i = names.index(link)
        if np.allclose(xyz, 0.0, atol=1e-9):
            points.append(i)
        elif np.allclose(xyz, (links[i].length, 0.0, 0.0), atol=1e-9):
            points.append(i + 1)
        else:
            raise e.source.error("xyz", "contacts of an elastic chain sit at joint points",
                                 f"0 0 0 or {links[i].length:g} 0 0")
        if number(e.source, e.attributes, "ground_height", 0.0) != 0.0 or e.get("ground", "plane") != "plane":
            raise e.source.error("ground_height", "only the ground plane y = 0 is supported", "0")
    normal = _single_law(contacts, normal_law_from_attributes, "normal")
    if normal is not None and normal.point_depth != 1.0:
        raise contacts[0].source.error("point_depth", "an elastic chain's contacts act at their joint points",
                                       "1 or no point_depth")
    friction = _single_law(contacts, friction_law_from_attributes, "friction")
    gx, gy, gz = desc.gravity
    if gx != 0.0 or gz != 0.0 or gy > 0.0:
        raise ModelError("gravity must point along -y for a planar chain", file=file, element="<gravity>",
                         attribute="xyz", expected="0 -g 0")
    init = {i.joint: i for i in desc.initial}
    for i in desc.initial:
        if i.velocity:
            raise i.source.error("velocity", "non-zero initial velocities are not supported here", "0")
    angles = tuple(init[j.name].position if j.name in init else 0.0 for j in revolute)
    base = tuple(init[j.name].position if j.name in init else 0.0 for j in prismatic) or (0.0, 0.0)
    kwargs: dict[str, Any] = dict(gravity=-gy, base="floating" if prismatic else "pinned",
                                  normal_law=normal, friction_law=friction,
                                  contact_points=tuple(sorted(set(points))) if contacts else (),
                                  initial_angles=angles, initial_base=base, name=desc.name)
    kwargs.update(overrides)
    return cls(links, **kwargs)
