"""Finite-segment expansion of a `<flexible>` link: N spring–damper sections joining N+1 rigid bodies.

Division (the "modified" rigid-finite-element division, second-order accurate): a link of length L along its
x axis is cut at the N section points x_k = (k − ½) h, h = L/N, k = 1..N. Between sections lie rigid bodies:
body 0 = [0, h/2] (keeps the link's name, its parent joint and everything attached near x = 0), bodies
k = 1..N−1 = [x_k, x_{k+1}] (length h), body N = [L − h/2, L] (carries the link's children, e.g. the next joint).
Each body has the mass ρA·len and, about its own z axis, (ρA·len)·len²/12 (+ ρI·len for Timoshenko: the rotary
inertia of the cross sections). Its centre line is the beam's centre line (rigid: no deformation inside).

At section k the beam's strain energy over the length h centred on it is lumped into joints (bending in the
link's x–y plane, about z):
  * bending: revolute joint `<link>__bend<k>` (axis z), spring EI/h (N m/rad): ∫½EIθ'² dx ≈ ½(EI/h)Δθ²;
    Kelvin–Voigt (paper 002 eq. 11, D = ∫ Kv I w''ẇ'' dx): damper Kv·I/h (N m s/rad);
  * shear (Timoshenko, `shear=True`): a prismatic joint `<link>__shear<k>` along the local y axis in front of the
    bending joint (a massless link between them), spring κGA/h (N/m): ∫½κGA(w' − θ)² dx ≈ ½(κGA/h)Δu², since
    the rigid bodies carry θ and the transverse jump Δu at the section is the shear strain γ times h.
    A prismatic shear joint was chosen over an "equivalent" rotational compliance because the latter depends on
    the load case (a tip load and a distributed load need different values), the prismatic joint does not.
    Euler–Bernoulli (or `shear=False`): rigid in shear, bending joints only.
Air damping γ (force per unit length and velocity) acts on absolute velocities, not on a joint: it is added as
a Python force element (`SegmentAirDamping`, lumped at the body centres) by `load_segmented_model`.

The springs are ordinary `<joint_spring>` elements in the generated URDF, so the reference engine and the PyBullet
bridge (through `forces.applied_forces`, every step) apply the same elastic forces without any extra hook.
Assumptions (checked, ModelError otherwise): the flexible link's beam axis is its x axis from 0 to L; bending
is in its x–y plane. Boundary conditions are those of the attachments (a fixed joint clamps, a revolute joint
pins, nothing = free); the `boundary`/`modes` attributes belong to the assumed-modes formulation and are ignored.
Points on the link (springs, contacts, loops, muscle points and wrap surfaces) move to the segment holding
them; a file's `<coordinates>` gets the bending (and shear) joints: they are independent elastic coordinates.
"""
from __future__ import annotations

import hashlib
import math
import os
import tempfile
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from biobullet.core import jit
from biobullet.core.atomic import write_text
from biobullet.core.attributes import vector3
from biobullet.core.errors import ModelError, SourceRef, did_you_mean

SEPARATOR = "__"
#: most segments per flexible link (each adds one or two joints)
MAX_SEGMENTS = 200
_AIR_DAMPING_PARAMETERS = "flexible.segments.air_damping"   # Model.derived: {element: (fparams, iparams)}


@dataclass(frozen=True)
class SegmentLayout:
    """Numbers of one expanded link (SI units). bodies: (start, end) of each rigid body along x (m)."""

    link: str
    theory: str
    segments: int
    length: float
    h: float
    mass_per_length: float  # ρA, kg/m
    rotary_per_length: float  # ρI, kg m (0 for Euler–Bernoulli)
    bending_stiffness: float  # EI/h, N m/rad
    bending_damping: float  # Kv I/h, N m s/rad
    shear_stiffness: float | None  # κGA/h, N/m (None: rigid in shear)
    air_damping: float  # γ, N s/m²
    thickness: float  # m, sqrt(12 I/A) (visual only)
    width: float  # m, A/thickness (visual only)

    @property
    def bodies(self) -> list[tuple[float, float]]:
        n, h, L = self.segments, self.h, self.length
        cuts = [0.0] + [(k - 0.5) * h for k in range(1, n + 1)] + [L]
        return list(zip(cuts[:-1], cuts[1:]))

    def body_names(self) -> list[str]:
        return [self.link] + [f"{self.link}{SEPARATOR}seg{k}" for k in range(1, self.segments + 1)]

    def locate(self, x: float) -> tuple[int, float]:
        """(body index, x in that body's frame) of the point at x (m) along the original link."""
        bodies = self.bodies
        for k, (a, b) in enumerate(bodies):
            if x <= b + 1e-12 * self.length or k == len(bodies) - 1:
                return k, x - a
        raise AssertionError  # pragma: no cover


def layout(link: str, *, length: float, youngs_modulus: float, shear_modulus: float, shear_coefficient: float,
           area: float, second_moment: float, density: float, segments: int, theory: str = "timoshenko",
           kelvin_voigt: float = 0.0, air_damping: float = 0.0, shear: bool | None = None) -> SegmentLayout:
    """Segment data from beam data (SI units). shear: None = True for Timoshenko, False for Euler–Bernoulli."""
    from biobullet.flexible.beam import make_parameters
    make_parameters(length, youngs_modulus, shear_modulus, shear_coefficient, area, second_moment, density,
                    "cf", theory)  # validates every number (ModelError naming it)
    if isinstance(segments, bool) or not isinstance(segments, (int, np.integer)) or not 1 <= segments <= MAX_SEGMENTS:
        # (the file's attribute is capped; the keyword was not: segments=10**6 built a million-joint URDF)
        raise ModelError(f"'segments' must be an integer in 1 … {MAX_SEGMENTS}, got {segments!r}",
                         attribute="segments", expected=f"an integer in 1 … {MAX_SEGMENTS}")
    for name, value in (("kelvin_voigt", kelvin_voigt), ("air_damping", air_damping)):
        if not (math.isfinite(value) and value >= 0.0):
            raise ModelError(f"'{name}' must be >= 0, got {value!r}", attribute=name, expected="a number >= 0")
    timo = theory == "timoshenko"
    shear = timo if shear is None else bool(shear)
    if shear and not timo:
        raise ModelError("shear joints need theory='timoshenko'", attribute="shear", expected="False")
    h = length / segments
    thickness = math.sqrt(12.0 * second_moment / area)
    return SegmentLayout(
        link=link, theory=theory, segments=int(segments), length=float(length), h=h,
        mass_per_length=density * area, rotary_per_length=density * second_moment if timo else 0.0,
        bending_stiffness=youngs_modulus * second_moment / h, bending_damping=kelvin_voigt * second_moment / h,
        shear_stiffness=shear_coefficient * shear_modulus * area / h if shear else None,
        air_damping=float(air_damping), thickness=thickness, width=area / thickness)


# ----------------------------------------------------------------------------------------------- URDF rewriting
def _fmt(v: float) -> str:
    return repr(float(v))


def _xyz(text: str | None, source: SourceRef, key: str = "xyz") -> np.ndarray:
    return np.array(vector3(source, {key: text} if text is not None else {}, key))


def _inertial(parent: ET.Element, lay: SegmentLayout, a: float, b: float) -> None:
    ln = b - a
    m = lay.mass_per_length * ln
    izz = m * ln * ln / 12.0 + lay.rotary_per_length * ln
    ixx = max(lay.mass_per_length * (lay.thickness ** 2 + lay.width ** 2) / 12.0 * ln, 1e-12 * izz)
    iyy = m * (ln * ln + lay.width ** 2) / 12.0 + lay.rotary_per_length * ln
    inertial = ET.SubElement(parent, "inertial")
    ET.SubElement(inertial, "origin", xyz=f"{_fmt(0.5 * ln)} 0 0", rpy="0 0 0")
    ET.SubElement(inertial, "mass", value=_fmt(m))
    ET.SubElement(inertial, "inertia", ixx=_fmt(ixx), ixy="0", ixz="0", iyy=_fmt(iyy), iyz="0", izz=_fmt(izz))
    visual = ET.SubElement(parent, "visual")
    ET.SubElement(visual, "origin", xyz=f"{_fmt(0.5 * ln)} 0 0", rpy="0 0 0")
    geometry = ET.SubElement(visual, "geometry")
    ET.SubElement(geometry, "box", size=f"{_fmt(ln)} {_fmt(lay.thickness)} {_fmt(lay.width)}")


def _massless_link(root: ET.Element, name: str) -> ET.Element:
    link = ET.SubElement(root, "link", name=name)
    inertial = ET.SubElement(link, "inertial")
    ET.SubElement(inertial, "origin", xyz="0 0 0", rpy="0 0 0")
    ET.SubElement(inertial, "mass", value="0")
    ET.SubElement(inertial, "inertia", ixx="0", ixy="0", ixz="0", iyy="0", iyz="0", izz="0")
    return link


def _joint(root: ET.Element, name: str, kind: str, parent: str, child: str, x: float, axis: str) -> None:
    joint = ET.SubElement(root, "joint", name=name, type=kind)
    ET.SubElement(joint, "parent", link=parent)
    ET.SubElement(joint, "child", link=child)
    ET.SubElement(joint, "origin", xyz=f"{_fmt(x)} 0 0", rpy="0 0 0")
    ET.SubElement(joint, "axis", xyz=axis)
    if kind == "prismatic":
        ET.SubElement(joint, "limit", lower="-1", upper="1", effort="0", velocity="1e6")


def _flexible_numbers(element: ET.Element, default_length: float | None, file: str) -> dict:
    from biobullet.core.attributes import check_known_attributes, choice, integer, source_of
    from biobullet.flexible.beam import THEORIES
    from biobullet.flexible.gibbs_appell_io import FLEXIBLE_ATTRIBUTES, beam_numbers
    source, a = source_of(file, element, "link"), element.attrib
    check_known_attributes(source, a, FLEXIBLE_ATTRIBUTES)
    return {**beam_numbers(source, a, default_length),
            "theory": choice(source, a, "theory", THEORIES, "timoshenko", what="theory"),
            "segments": integer(source, a, "segments", 8, at_least=1, at_most=MAX_SEGMENTS)}


def _warn_replaced_mass(link: ET.Element, lay: SegmentLayout, file: str, where: str) -> None:
    """Warn when the link's own `<inertial>` mass differs from the beam's ρ·A·L, which replaces it (a motor or a
    payload modelled in the link's inertial was dropped without a word)."""
    import warnings
    mass = link.find("inertial/mass")
    try:
        own = float(mass.get("value")) if mass is not None else None
    except (TypeError, ValueError):
        return   # (the URDF loader names a malformed mass)
    beam = lay.mass_per_length * lay.length
    if own is not None and math.isfinite(own) and abs(own - beam) > 1e-3 * max(abs(beam), abs(own)):
        warnings.warn(f"{file}: {where}: the link's <inertial> mass {own:g} kg is replaced by the beam's "
                      f"density·area·length = {beam:g} kg (and its centre of mass and inertia by the beam's); put "
                      "other masses on a child link", stacklevel=5)


def _retarget_points(block: ET.Element, flexible: ET.Element, lay: SegmentLayout, file: str) -> None:
    """Move every point given on the flexible link (contacts, springs, loops, and the points and wrap surfaces
    inside muscles) to the segment body that holds it, in that body's frame; a muscle's moving point (its position
    a function of a coordinate, so of no one segment) is refused."""
    names = lay.body_names()
    for other in block.iter():   # (nested: a muscle's <point link=..> stayed on segment 0 as a rigid extension)
        if other is flexible or other.tag == "flexible":
            continue
        if other.tag == "moving_point" and other.get("link") == lay.link:
            raise ModelError(f"a muscle's moving point on the flexible link {lay.link!r}: its position moves along "
                             "the beam, across the segments", file=file, element=f'<moving_point link="{lay.link}">',
                             attribute="link", expected="a rigid link, or fixed <point>s on the flexible link")
        for suffix in ("", "_a", "_b"):
            if other.get("link" + suffix) == lay.link:
                point = _xyz(other.get("xyz" + suffix), SourceRef(file, f"<{other.tag}>"), "xyz" + suffix)
                k, x_local = lay.locate(float(point[0]))
                other.set("link" + suffix, names[k])
                other.set("xyz" + suffix, f"{_fmt(x_local)} {_fmt(point[1])} {_fmt(point[2])}")


def expand_urdf(text: str, *, segments: int | dict[str, int] | None = None, shear: bool | None = None,
                file: str = "<string>") -> tuple[str, dict[str, SegmentLayout]]:
    """Rewrite URDF text: every `<flexible>` link becomes N+1 bodies, N bending (and shear) joints with
    `<joint_spring>`s. segments overrides the file's `segments` (one number, or per link). Returns (text, layouts)."""
    root = ET.fromstring(text)
    block = root.find("biobullet")
    flex = [] if block is None else block.findall("flexible")
    if not flex:
        raise ModelError("no <flexible> element to expand", file=file, element="<biobullet>", attribute="flexible")
    links = {l.get("name"): l for l in root.findall("link")}
    joints = root.findall("joint")
    flexible_links = [element.get("link") for element in flex]
    if isinstance(segments, dict):   # a per-link override for a link that is not flexible was silently dropped
        for name in segments:
            if name not in flexible_links:
                raise ModelError(f"segments for {name!r}, which is no <flexible> link"
                                 f"{did_you_mean(name, flexible_links)}", file=file, argument="segments",
                                 expected="a number, or one per <flexible> link: " + ", ".join(flexible_links))
    elif segments is not None and not isinstance(segments, (int, np.integer)):   # 1.5: was AttributeError
        raise ModelError(f"segments {segments!r} is neither an integer nor a dict of them", file=file,
                         argument="segments", expected=f"an integer in 1 … {MAX_SEGMENTS}, or one per link")
    from biobullet.model.extension import MAX_ELEMENTS
    from biobullet.model.urdf import MAX_JOINTS
    layouts: dict[str, SegmentLayout] = {}
    added, elements = 0, len(block)
    for element in flex:
        name = element.get("link")
        where = f'<flexible link="{name}">'
        if not name:
            raise ModelError("missing required attribute", file=file, element="<flexible>", attribute="link",
                             expected="the name of a <link>")
        if flexible_links.count(name) > 1:   # (the second expansion met the first's segment links: an error
            # about the generated file's <link name="..__seg1">)
            raise ModelError(f"link {name!r} has {flexible_links.count(name)} <flexible> elements", file=file,
                             element=where, attribute="link", expected="one <flexible> per link")
        if name not in links:
            raise ModelError(f"unknown link {name!r}{did_you_mean(name, links)}", file=file, element=where, attribute="link",
                             expected="the name of a <link>")
        children = [j for j in joints if j.find("parent").get("link") == name]
        ends = [_xyz(j.find("origin").get("xyz") if j.find("origin") is not None else None,
                     SourceRef(file, f'<joint name="{j.get("name")}"> <origin>')) for j in children]
        default_length = float(max(e[0] for e in ends)) if ends else None
        kw = _flexible_numbers(element, default_length, file)
        n = segments if isinstance(segments, (int, np.integer)) else (segments or {}).get(name, kw["segments"])
        kw["segments"] = n
        try:
            lay = layout(name, shear=shear, **kw)
        except ModelError as exc:
            raise ModelError(exc.detail, file=file, element=where, attribute=exc.attribute or "segments",
                             expected=exc.expected) from None
        layouts[name] = lay
        added += n * (1 if lay.shear_stiffness is None else 2)   # joints, and as many <joint_spring>s
        if len(joints) + added > MAX_JOINTS or elements + added > MAX_ELEMENTS:
            # (the load of the generated file refused it, naming the temp file and none of the segment counts)
            raise ModelError(f"the segments add {added} joints and joint springs to the file's {len(joints)} joints "
                             f"and {elements} elements: more than {MAX_JOINTS} joints or {MAX_ELEMENTS} elements",
                             file=file, element=where, attribute="segments",
                             expected="fewer segments (or fewer flexible links)")
        link = links[name]
        _warn_replaced_mass(link, lay, file, where)
        for child in list(link):
            if child.tag in ("inertial", "visual", "collision"):
                link.remove(child)
        bodies, names = lay.bodies, lay.body_names()
        _inertial(link, lay, *bodies[0])
        prev = name
        for k in range(1, n + 1):
            a, b = bodies[k]
            body = ET.SubElement(root, "link", name=names[k])
            _inertial(body, lay, a, b)
            x_local = bodies[k - 1][1] - bodies[k - 1][0]
            if lay.shear_stiffness is not None:
                mid = f"{name}{SEPARATOR}shear_link{k}"
                _massless_link(root, mid)
                _joint(root, f"{name}{SEPARATOR}shear{k}", "prismatic", prev, mid, x_local, "0 1 0")
                _joint(root, f"{name}{SEPARATOR}bend{k}", "revolute_free", mid, names[k], 0.0, "0 0 1")
            else:
                _joint(root, f"{name}{SEPARATOR}bend{k}", "revolute_free", prev, names[k], x_local, "0 0 1")
            prev = names[k]
        for j, end in zip(children, ends):
            # (beyond L the child hung on a rigid extension of the last segment, without a word)
            if abs(end[1]) > 1e-12 or abs(end[2]) > 1e-12 or end[0] < -1e-12 or end[0] > lay.length * (1 + 1e-9):
                raise ModelError(f"child joint {j.get('name')!r} at xyz = {end[0]:g} {end[1]:g} {end[2]:g} is not on "
                                 f"the beam axis (x from 0 to L = {lay.length:g})", file=file, element=where,
                                 attribute="link", expected="children at xyz = x 0 0 with 0 ≤ x ≤ L")
            k, x_local = lay.locate(float(end[0]))
            j.find("parent").set("link", names[k])
            origin = j.find("origin")   # (absent: URDF's zero origin; was an AttributeError)
            (ET.SubElement(j, "origin") if origin is None else origin).set("xyz", f"{_fmt(x_local)} 0 0")
        _retarget_points(block, element, lay, file)
        coordinates = block.find("coordinates")
        if coordinates is not None:   # the elastic joints are independent coordinates (were taken as loop-dependent:
            # "loop 'close' gives 2 equations for 3 dependent joints (h2, h3, beam__bend1)")
            elastic = [f"{name}{SEPARATOR}{kind}{k}" for k in range(1, n + 1)
                       for kind in (("shear", "bend") if lay.shear_stiffness is not None else ("bend",))]
            coordinates.set("names", " ".join([*coordinates.get("names", "").split(), *elastic]))
        block.remove(element)
        block.append(ET.Comment(f" <flexible link=\"{name}\"> expanded into {n} segments "
                                f"({'bending + shear' if lay.shear_stiffness is not None else 'bending'}) "))
        for k in range(1, n + 1):
            ET.SubElement(block, "joint_spring", name=f"{name}{SEPARATOR}bend{k}_spring",
                          joint=f"{name}{SEPARATOR}bend{k}", stiffness=_fmt(lay.bending_stiffness), rest="0",
                          damping=_fmt(lay.bending_damping))
            if lay.shear_stiffness is not None:
                # Kelvin–Voigt of paper 002 damps curvature only (D = ∫ Kv I w''ẇ''), so no shear damper
                ET.SubElement(block, "joint_spring", name=f"{name}{SEPARATOR}shear{k}_spring",
                              joint=f"{name}{SEPARATOR}shear{k}", stiffness=_fmt(lay.shear_stiffness), rest="0",
                              damping="0")
    # one element a line: PyBullet's URDF reader breaks lines longer than 8191 bytes mid-token (the generated
    # springs and segments, appended on one line, made "Cannot load URDF file" for 8 segments with shear)
    ET.indent(root)
    out = ET.tostring(root, encoding="unicode").replace('type="revolute_free"', 'type="continuous"')
    return '<?xml version="1.0"?>\n' + out + "\n", layouts


def expand_flexible(path: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *,
                    segments: int | dict[str, int] | None = None,
                    shear: bool | None = None) -> tuple[Path, dict[str, SegmentLayout]]:
    """Write the segmented URDF of `path` (atomically) to `out` (default: a content-addressed file in the temp
    directory, so repeated calls reuse it). Returns (path of the new URDF, layouts by link name)."""
    src = Path(path)
    try:
        text = src.read_text()
    except OSError as exc:
        raise ModelError(f"cannot read {src}: {exc.strerror}", file=str(src)) from None
    new, layouts = expand_urdf(text, segments=segments, shear=shear, file=str(src))
    if out is None:
        digest = hashlib.sha1(new.encode()).hexdigest()[:16]
        out = Path(tempfile.gettempdir()) / "biobullet-segments" / f"{src.stem}-{digest}.urdf"
    out = Path(out)
    if not (out.exists() and out.read_text() == new):
        write_text(out, new)
    return out, layouts


# ----------------------------------------------------------------------------------------------- air damping
class SegmentAirDamping:
    """Air damping γ of one expanded link: F = −γ·len·v at each body centre (lumped), as a ForceElement."""

    def __new__(cls, lay: SegmentLayout):  # built lazily so that importing this module stays light
        from biobullet.forces import ForceElement

        class _AirDamping(ForceElement):
            tag = "segment_air_damping"
            uses_placements = False   # its own kinematics (the shared tree kinematics)

            def __init__(self) -> None:
                super().__init__(f"{lay.link}{SEPARATOR}air_damping")
                self.layout = lay

            @classmethod
            def from_description(cls, model, element):  # pragma: no cover - Python-only element
                raise NotImplementedError

            def _parameters(self, model) -> tuple[np.ndarray, np.ndarray]:
                """(fparams, iparams) of `_air_damping_force_py` for this model, kept in `model.derived` (it lives
                with the model)."""
                table = model.derive(_AIR_DAMPING_PARAMETERS, dict)
                packed = table.get(self)
                if packed is None:
                    bodies, points, coeffs = [], [], []
                    for name, (a, b) in zip(lay.body_names(), lay.bodies):
                        frame = model.frame(name)
                        bodies.append(int(frame.body))
                        points.append(frame.rotation @ np.array([0.5 * (b - a), 0.0, 0.0]) + frame.translation)
                        coeffs.append(lay.air_damping * (b - a))
                    packed = table[self] = (
                        np.concatenate([coeffs, np.array(points, dtype=float).reshape(-1)]),
                        np.array([len(bodies), *bodies], dtype=np.int64))
                return packed

            def compiled_kernel(self, model):
                from biobullet.forces.base import ForceKernel
                fparams, iparams = self._parameters(model)
                return ForceKernel(_air_damping_force_py, fparams, iparams, kinematics=True)

            def _evaluate(self, model, x, xd):
                """(τ, dissipated power) by `_air_damping_force_py` (compiled, or run by Python without numba) on
                the shared tree kinematics."""
                from biobullet.constraints.loops import tree_kinematics
                kin = tree_kinematics(model, x)
                fparams, iparams = self._parameters(model)
                tau, power = np.zeros(model.n_tangent), np.zeros(2)
                air_damping(0.0, np.ascontiguousarray(x, dtype=float), np.ascontiguousarray(xd, dtype=float),
                            np.array(kin.rotations), np.array(kin.positions), np.array(kin.subspace),
                            np.ascontiguousarray(kin.arrays.ancestry, dtype=float), fparams, iparams, tau, power)
                return tau, power[1]

            def generalized_force(self, model, x, xd, t, placements=None):
                return self._evaluate(model, x, xd)[0]

            def dissipated_power(self, model, x, xd):
                return float(self._evaluate(model, x, xd)[1])

        return _AirDamping()


def _air_damping_force_py(t, x, xd, rot, pos, sub, ancestry, fparams, iparams, tau, power):
    """The lumped air drag F = −c v at points of the segment bodies as a force kernel
    (`forces.base.FORCE_KERNEL_SIGNATURE`): τ −= Σ_s c_s J_sᵀ J_s ẋ, J_s the world linear point Jacobian (columns
    S_lin + S_ang × p of the directions that move the body; spatial motion about the world origin, linear part
    first); dissipated power Σ c |v|² into power[1]. iparams = [S, body_0 … body_{S−1}], fparams = [c_0 … c_{S−1},
    then the S points (body frame, m) row by row]."""
    count = iparams[0]
    n_tangent = xd.shape[0]
    for s in range(count):
        i = iparams[1 + s]
        c = fparams[s]
        b0, b1, b2 = fparams[count + 3 * s], fparams[count + 3 * s + 1], fparams[count + 3 * s + 2]
        p0 = rot[i, 0, 0] * b0 + rot[i, 0, 1] * b1 + rot[i, 0, 2] * b2 + pos[i, 0]
        p1 = rot[i, 1, 0] * b0 + rot[i, 1, 1] * b1 + rot[i, 1, 2] * b2 + pos[i, 1]
        p2 = rot[i, 2, 0] * b0 + rot[i, 2, 1] * b1 + rot[i, 2, 2] * b2 + pos[i, 2]
        v0 = v1 = v2 = 0.0
        for k in range(n_tangent):
            if ancestry[i, k] == 0.0:
                continue
            a0, a1, a2 = sub[3, k], sub[4, k], sub[5, k]
            v0 += (sub[0, k] + a1 * p2 - a2 * p1) * xd[k]
            v1 += (sub[1, k] + a2 * p0 - a0 * p2) * xd[k]
            v2 += (sub[2, k] + a0 * p1 - a1 * p0) * xd[k]
        power[1] += c * (v0 * v0 + v1 * v1 + v2 * v2)
        for k in range(n_tangent):
            if ancestry[i, k] == 0.0:
                continue
            a0, a1, a2 = sub[3, k], sub[4, k], sub[5, k]
            j0 = sub[0, k] + a1 * p2 - a2 * p1
            j1 = sub[1, k] + a2 * p0 - a0 * p2
            j2 = sub[2, k] + a0 * p1 - a1 * p0
            tau[k] -= c * (j0 * v0 + j1 * v1 + j2 * v2)
    return 0


air_damping = jit.lazy(_air_damping_force_py)   # compiled on first use, or run by Python without numba


def load_segmented_model(path: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *,
                         segments: int | dict[str, int] | None = None, shear: bool | None = None,
                         air_damping: bool = True, floating_base: bool | None = None):
    """`expand_flexible` + `load_model`; adds `SegmentAirDamping` for links with γ > 0. Returns (Model, layouts)."""
    from biobullet.forces import add_force_element
    from biobullet.dynamics.api import model_from_file as load_model
    file, layouts = expand_flexible(path, out, segments=segments, shear=shear)
    model = load_model(file, floating_base=floating_base)
    if air_damping:
        for lay in layouts.values():
            if lay.air_damping > 0.0:
                add_force_element(model, SegmentAirDamping(lay))
    return model, layouts


# ----------------------------------------------------------------------------------------------- linearisation
def linear_stiffness(model, q0=None, *, step: float = 1e-6) -> np.ndarray:
    """K = −∂(Q − h)/∂q at rest (v = 0, t = 0) by central differences of the model's own forces (joint springs,
    gravity). Exact up to round-off for the linear joint springs."""
    from biobullet.forces import applied_forces
    q0 = model.neutral_configuration() if q0 is None else np.asarray(q0, dtype=float)
    v0 = np.zeros(model.nv)

    def net(q):
        x, xd, _, _ = model.joint_state(q, v0)
        return model.generalized_forces(applied_forces(model, x, xd, 0.0), q) - model.bias_forces(q, v0)

    K = np.empty((model.nv, model.nv))
    for i in range(model.nv):
        dq = np.zeros(model.nq)
        dq[i] = step
        K[:, i] = -(net(q0 + dq) - net(q0 - dq)) / (2.0 * step)
    return 0.5 * (K + K.T)


@contextmanager
def kept_warm_starts(model):
    """Within the block, solves of the model's coordinate map leave no trace: the loop resolvers' warm starts (the
    last solution each starts from) are put back afterwards, so a query (a linearisation, a stability check) does
    not move the model's next solution by round-off."""
    resolvers = [r for r in (model.coordinate_map.resolvers or ()) if hasattr(r, "rewind")]
    saved = [dict(vars(r)) for r in resolvers]
    try:
        yield
    finally:
        for resolver, state in zip(resolvers, saved):
            vars(resolver).clear()
            vars(resolver).update(state)


def natural_frequencies(model, q0=None, *, supports: tuple[tuple[str, tuple[float, float, float], int], ...] = (),
                        n: int | None = None) -> np.ndarray:
    """Natural angular frequencies (rad/s, ascending) of the model linearised at rest about q0: eigenvalues of
    M⁻¹K restricted to the null space of the linearised support constraints. supports: (link, xyz, axis)
    triples — the point xyz of the link may not move along the world axis (0 x, 1 y, 2 z) (e.g. a roller)."""
    from scipy.linalg import eigh, null_space
    from biobullet.algorithms.kinematics import frame_jacobian
    q0 = model.neutral_configuration() if q0 is None else np.asarray(q0, dtype=float)
    with kept_warm_starts(model):
        M = model.mass_matrix(q0)
        K = linear_stiffness(model, q0)
        T = np.eye(model.nv)
        if supports:
            x, G = model.coordinate_gradient(q0)
            rows = [frame_jacobian(model, x, link, np.asarray(xyz, float))[axis] @ G
                    for link, xyz, axis in supports]
            T = null_space(np.array(rows))
    lam = eigh(T.T @ K @ T, T.T @ M @ T, eigvals_only=True)
    omega = np.sqrt(np.clip(lam, 0.0, None))
    return omega if n is None else omega[:n]


__all__ = ["SegmentLayout", "layout", "expand_urdf", "expand_flexible", "load_segmented_model",
           "SegmentAirDamping", "kept_warm_starts", "linear_stiffness", "natural_frequencies", "SEPARATOR"]
