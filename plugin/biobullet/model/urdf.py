"""Parse a URDF file (tree of links and joints) plus its `<biobullet>` block into a ModelDescription.

Only what dynamics needs is read from URDF: links' `<inertial>`, joints' type, parent, child, origin, axis,
limits and `<mimic>`. Visual and collision geometry are left to PyBullet. Nothing in the file is executed.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from biobullet.core.arguments import flag_argument
from biobullet.core.errors import ModelError, SourceRef, bare, did_you_mean, shown
from biobullet.core.attributes import REQUIRED, floats, number, optional_vec3, required, source_of, to_float
from biobullet.model.description import (InertialDescription, JointDescription, LinkDescription, ModelDescription,
                          MOVABLE_JOINT_TYPES, MULTI_DOF_JOINT_TYPES)
from biobullet.model.bundled import resolve_model_path
from biobullet.model.extension import parse_extension
from biobullet.model.meshes import MESH_EXTENSIONS, check_mesh_size, find_mesh_file
from biobullet.model.plausibility import check_units
from biobullet.spatial.rotations import rpy_to_matrix

SUPPORTED_JOINT_TYPES = MOVABLE_JOINT_TYPES + MULTI_DOF_JOINT_TYPES + ("fixed",)
# Relative slack for the triangle inequality and for semi-definiteness: thin rods, plates and point masses sit
# exactly on the boundary, and files print their tensors to a few digits.
TRIANGLE_TOLERANCE = 1e-9
# What to do with a physically impossible inertia tensor (indefinite, or principal moments violating the
# triangle inequality I1 + I2 ≥ I3). Point masses (zero tensor) and other semi-definite tensors that satisfy the
# triangle inequality (a thin rod: 0, I, I) are physical bodies and always load.
#   "warn"   (default) keep the file's tensor, as Pinocchio does, and warn once per file naming the links and
#            how far each is from the nearest physical tensor — the file loads as in PyBullet and Pinocchio;
#   "repair" replace it by the nearest physical tensor (Frobenius norm: same principal axes, principal moments
#            projected onto the triangle-inequality cone) and say which links changed and by how much;
#   "strict" reject the file with a ModelError naming the link and attribute.
INERTIA_POLICIES = ("warn", "repair", "strict")
DEFAULT_INERTIA_POLICY = "warn"


def load_description(path: str | os.PathLike[str], floating_base: bool | None = None,
                     inertia: str = DEFAULT_INERTIA_POLICY, joint_limits: bool = True) -> ModelDescription:
    """Read and validate a model file (or a bundled model by bare name: "shoulder_rhythm"). Raises ModelError
    naming file, element and attribute on bad input, or naming the argument for a wrong argument type.

    `inertia`: policy for physically impossible inertia tensors, one of INERTIA_POLICIES (see there).
    `joint_limits`: URDF `<limit>`s act as joint stops (default, as in PyBullet); False ignores them.
    """
    file = resolve_model_path(path)
    floating_base = flag_argument(floating_base, "floating_base", optional=True)
    joint_limits = flag_argument(joint_limits, "joint_limits")
    if not isinstance(inertia, str) or inertia not in INERTIA_POLICIES:
        raise ModelError(f"unknown inertia policy {inertia!r}", argument="inertia",
                         expected="one of " + ", ".join(INERTIA_POLICIES))
    data = read_bytes(file)
    return dataclasses.replace(description_from_root(parse_xml(file, data), file, floating_base, inertia,
                                                     joint_limits), source_text=data)


def description_from_root(robot: ET.Element, file: str, floating_base: bool | None = None,
                          inertia: str = DEFAULT_INERTIA_POLICY, joint_limits: bool = True) -> ModelDescription:
    """The ModelDescription of a parsed URDF root element `<robot>` read from (or translated from) `file`."""
    if robot.tag == "OpenSimDocument":   # (read here by a caller that takes URDF only, e.g. Bridge(path))
        raise ModelError("an OpenSim model, not a URDF", file=file, element="<OpenSimDocument>",
                         expected="a URDF, or this model loaded by biobullet.load_model(path) (which imports .osim "
                         "files) and passed as the Model, or converted by `biobullet convert`")
    if robot.tag != "robot":
        raise ModelError(f"root element is <{robot.tag}>", file=file, element=f"<{robot.tag}>", expected="<robot>")
    _check_block_spelling(file, robot)
    _check_attribute_spelling(file, robot)
    _check_nested_blocks(file, robot, len(robot.findall("biobullet")))
    for material in robot.findall("material"):
        _check_color(file, material, source_of(file, material).element)
    issues: list[tuple[str, str, float, bool]] = []
    missing_meshes: list[str] = []
    links = tuple(_parse_link(file, element, ordinal, inertia, issues, missing_meshes)
                  for ordinal, element in enumerate(robot.findall("link"), 1))
    if not links:
        raise ModelError("the model has no <link>", file=file, element="<robot>")
    _check_unique(file, [link.name for link in links], "link")
    link_names = {link.name for link in links}
    joint_elements = robot.findall("joint")
    if len(joint_elements) > MAX_JOINTS:
        raise ModelError(f"{len(joint_elements)} joints: more than {MAX_JOINTS}", file=file, element="<robot>",
                         expected=f"at most {MAX_JOINTS} <joint>s (every run's mass matrix grows with joints × "
                         "tree depth)")
    joints = tuple(_parse_joint(file, element, link_names) for element in joint_elements)
    _check_unique(file, [joint.name for joint in joints], "joint")
    root = _check_tree(file, links, joints)
    extension = robot.findall("biobullet")
    if len(extension) > 1:
        raise ModelError("more than one <biobullet> block", file=file, element="<biobullet>", expected="at most one")
    description = ModelDescription(name=robot.attrib.get("name", os.path.basename(file)), file=file,
                                   links=links, joints=joints, root_link=root, inertia_policy=inertia,
                                   inertia_issues=tuple(issues), joint_limits=joint_limits)
    if issues:
        warnings.warn(inertia_summary(description), stacklevel=3)
    if missing_meshes:
        more = f"; and {len(missing_meshes) - 3} more" if len(missing_meshes) > 3 else ""
        warnings.warn(f"{file}: {len(missing_meshes)} mesh file(s) not found (or not {'/'.join(MESH_EXTENSIONS)}): "
                      f"{'; '.join(missing_meshes[:3])}{more} — PyBullet (`simulate --engine pybullet`) cannot load the "
                      "file and `view` cannot draw a missing visual; the reference engine does not read meshes",
                      stacklevel=3)
    description = parse_extension(description, extension[0] if extension else None, floating_base)
    check_units(description)
    return description


#: namespaces of xacro elements: the three URIs xacro files declare (xacro itself goes by the `xacro:` prefix), and
#: the one `_parse_declaring_prefixes` gives an undeclared `xacro:` prefix
XACRO_NAMESPACES = ("http://www.ros.org/wiki/xacro", "http://ros.org/wiki/xacro", "http://wiki.ros.org/xacro",
                    "urn:biobullet:undeclared:xacro")
#: largest model file read (bytes): the bundled models are < 100 kB; a bigger file is refused before parsing
MAX_FILE_BYTES = 16 * 1024 * 1024
#: most XML elements in one model file
MAX_ELEMENTS = 200_000
#: most `<joint>`s in one model (every link but the root is a joint's child): the dense tree mass matrix of a run
#: grows with joints × tree depth — a 1,500-long chain costs ~0.1 s of CPU per right-hand side (URDF robots have
#: tens to a few hundred joints; as `extension.MAX_ELEMENTS` bounds the `<biobullet>` elements)
MAX_JOINTS = 2000
#: deepest nesting of XML elements (a URDF nests at most ~7 deep; PyBullet's and urdfdom's parsers recurse per
#: level, and 150,000 levels took PyBullet minutes)
MAX_DEPTH = 64
#: encodings a model file may declare (XML 1.0 requires UTF-8/UTF-16 support; Latin-1/ASCII are common)
ENCODINGS = ("utf-8", "utf8", "us-ascii", "ascii", "iso-8859-1", "latin-1", "latin1", "utf-16")
_DECLARATION = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([^"']*)["']""")
#: DTD declarations refused in a model file, with what they declare. Entities expand (billion laughs); an attribute
#: list's default value is copied into every element of its tag that lacks the attribute — a 180 kB file of 20,000
#: empty elements and one 100 kB default took 2 GB — and silently sets values PyBullet and Pinocchio (whose parsers
#: ignore the DTD) never see
DTD_DECLARATIONS = {"<!ENTITY": "XML entities", "<!ATTLIST": "default attribute values"}


def read_xml(file: str) -> ET.Element:
    """The root element of model file `file`, read with bounded work: the size is checked before reading,
    the encoding declaration must name a supported encoding, entity declarations (billion laughs) are refused,
    and the element count is bounded. Every failure is a ModelError naming the file."""
    return parse_xml(file, read_bytes(file))


def read_bytes(file: str) -> bytes:
    """The bytes of model file `file` (at most MAX_FILE_BYTES; ModelError naming the file otherwise)."""
    if not os.path.isfile(file):
        raise ModelError("no such file" if not os.path.exists(file) else "not a regular file", file=file)
    size = os.path.getsize(file)
    if size > MAX_FILE_BYTES:
        raise ModelError(f"file is {size / 2**20:.1f} MiB; model files are limited to {MAX_FILE_BYTES // 2**20} MiB",
                         file=file)
    try:
        with open(file, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ModelError(f"cannot read the file ({exc.strerror})", file=file) from None
    if len(data) > MAX_FILE_BYTES:
        raise ModelError(f"file is over {MAX_FILE_BYTES // 2**20} MiB", file=file)
    return data


def parse_xml(file: str, data: bytes) -> ET.Element:
    """The root element of the XML text `data` of model file `file` (see `read_xml`)."""
    if len(data) > MAX_FILE_BYTES:
        raise ModelError(f"file is over {MAX_FILE_BYTES // 2**20} MiB", file=file)
    if data.startswith((b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00")) or data[:4] in (b"\x00\x00\x00<", b"<\x00\x00\x00"):
        raise ModelError("file is UTF-32 encoded", file=file, expected="a UTF-8 (or UTF-16, Latin-1) model file")
    match = _DECLARATION.match(data[:400])
    if match:
        declared = match.group(1).decode("ascii", "replace").strip().lower()
        if declared not in ENCODINGS:
            raise ModelError(f"unsupported encoding {shown(declared)} in the XML declaration", file=file,
                             expected="encoding UTF-8 (or UTF-16, ISO-8859-1, US-ASCII)")
    # lenient where PyBullet and Pinocchio are: whitespace (or a byte-order mark) before the `<?xml ...?>`
    stripped = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    line_shift = data[:len(data) - len(stripped)].count(b"\n")
    # and, as PyBullet is, NUL padding after the root element (pybullet_data/humanoid/humanoid.urdf ends in one)
    # (not in UTF-16, whose text has NUL bytes everywhere: its first four bytes have one, ASCII-based text none)
    padded = stripped.endswith(b"\x00") and b"\x00" not in stripped[:4]
    data = stripped.rstrip(b"\x00 \t\r\n") if padded else stripped
    xacro = ModelError("this is a xacro file (a macro template), not a URDF: expand it first with "
                       "`xacro FILE > FILE.urdf`", file=file, expected="a plain URDF file")
    # (in UTF-16 too, whose "<!ENTITY" has a NUL byte after or before each character)
    for marker, what in DTD_DECLARATIONS.items():
        if any(marker.encode(encoding) in data for encoding in ("ascii", "utf-16-le", "utf-16-be")):
            raise ModelError(f"the file declares {what} ({marker}>); model files may not", file=file,
                             expected="plain XML without a DTD")
    try:
        robot = _parse_declaring_prefixes(data)
    except ET.ParseError as exc:
        if b"<xacro:" in data or file.endswith(".xacro"):
            raise xacro from None
        message = str(exc)
        if line_shift and exc.position:
            line, column = exc.position
            message = f"{message.split(': line')[0]}: line {line + line_shift}, column {column}"
        raise ModelError(f"not well-formed XML ({message})", file=file) from None
    except (LookupError, ValueError, UnicodeError) as exc:
        raise ModelError(f"cannot decode the file ({exc})", file=file, expected="a UTF-8 model file") from None
    _check_size(file, robot)
    _drop_default_namespace(robot)
    _check_names(file, robot)
    # many expanded URDFs still declare xmlns:xacro; only xacro *elements* make a template
    if any(isinstance(e.tag, str) and e.tag.startswith("{") and e.tag[1:].partition("}")[0].rstrip("/")
           in XACRO_NAMESPACES for e in robot.iter()):
        raise xacro
    return robot


#: a namespace prefix in a tag or an attribute name (`<drake:member`, ` drake:acceleration=`)
_PREFIX_USE = re.compile(rb"[<\s]([A-Za-z_][\w.-]*):[A-Za-z_][\w.-]*")
#: a declared prefix (`xmlns:xacro="..."`)
_PREFIX_DECLARATION = re.compile(rb"xmlns:([A-Za-z_][\w.-]*)\s*=")
#: the root element's start-tag name, after the declaration, comments and a DOCTYPE
_ROOT_TAG = re.compile(rb"<([A-Za-z_][\w.:-]*)")


def _parse_declaring_prefixes(data: bytes) -> ET.Element:
    """The root element of `data`. Files exported for Drake use prefixed tags and attributes
    (`<drake:collision_filter_group>`, `drake:acceleration=`) often without declaring the prefix; XML namespaces
    make that an error ("unbound prefix"), but PyBullet and Pinocchio read such files and ignore the elements. So
    do we: the undeclared prefixes are declared on the root element (same line, so positions stay) and the file is
    parsed again; anything else is the first parse's error."""
    try:
        return _parse_bytes(data)
    except ET.ParseError as exc:
        if not str(exc).startswith("unbound prefix"):
            raise
        first = exc
    root = _ROOT_TAG.search(data)
    declared = set(_PREFIX_DECLARATION.findall(data))
    prefixes = sorted(set(_PREFIX_USE.findall(data)) - declared - {b"xmlns", b"xml"})
    if root is None or not prefixes:
        raise first
    declarations = b"".join(b' xmlns:%s="urn:biobullet:undeclared:%s"' % (prefix, prefix) for prefix in prefixes)
    try:
        return _parse_bytes(data[:root.end()] + declarations + data[root.end():])
    except ET.ParseError:
        raise first from None


def _drop_default_namespace(robot: ET.Element) -> None:
    """`<robot xmlns="URI">` puts every unprefixed element in URI; PyBullet and Pinocchio ignore namespaces and read
    such a file as plain URDF, and so do we: the root's namespace is taken off the tags in it."""
    if not (isinstance(robot.tag, str) and robot.tag.startswith("{") and robot.tag.endswith("}robot")):
        return
    namespace = robot.tag[:-len("robot")]
    if namespace[1:-1].rstrip("/") in XACRO_NAMESPACES:   # (a template: refused as one below)
        return
    for element in robot.iter():
        if isinstance(element.tag, str) and element.tag.startswith(namespace):
            element.tag = element.tag[len(namespace):]


def _parse_bytes(data: bytes) -> ET.Element:
    parser = ET.XMLParser()
    parser.feed(data)
    return parser.close()


#: how close (difflib ratio, case folded) an element's name may come to "biobullet" before it is taken for a
#: misspelt block: `biobulet`, `bio_bullet`, `BioBullet` are; URDF extensions (`gazebo`, `transmission`) are far
BLOCK_NAME_RATIO = 0.85


def _check_block_spelling(file: str, robot: ET.Element) -> None:
    """PyBullet and Pinocchio skip unknown elements, and so would we: a block named `<BioBullet>`, `<biobulet>`,
    `<bb:biobullet>` or `<biobullet xmlns="...">` was silently not read, and the model lost its joint functions,
    loops and forces. Such an element is an error naming it."""
    seen: set[str] = set()   # (each distinct tag compared once: a file may have 200,000 elements)
    for element in robot.iter():
        if not isinstance(element.tag, str) or element.tag == "biobullet" or element.tag in seen:
            continue
        seen.add(element.tag)
        written = element.tag.rpartition("}")[2]
        local = written.rpartition(":")[2].casefold()
        if difflib.SequenceMatcher(None, local, "biobullet").ratio() < BLOCK_NAME_RATIO:
            continue
        namespace = element.tag[1:].partition("}")[0] if element.tag.startswith("{") else ""
        if namespace.startswith("urn:biobullet:undeclared:"):   # (`_parse_declaring_prefixes`: `bb:biobullet`)
            written, namespace = f"{namespace.rpartition(':')[2]}:{written}", ""
        why = f"an element in the XML namespace {shown(namespace)}" if namespace else "not spelt <biobullet>"
        raise ModelError(f"{why}, so it is not read as the <biobullet> block", file=file,
                         element=f"<{bare(written, 40)}>",
                         expected="<biobullet> in lower case, without a namespace prefix or xmlns")


#: the attributes of the URDF elements the dynamics read, by path from `<link>` / `<joint>`
URDF_ATTRIBUTES: dict[tuple[str, ...], frozenset[str]] = {
    ("link",): frozenset({"name"}), ("link", "inertial", "origin"): frozenset({"xyz", "rpy"}),
    ("link", "inertial", "mass"): frozenset({"value"}),
    ("link", "inertial", "inertia"): frozenset({"ixx", "ixy", "ixz", "iyy", "iyz", "izz"}),
    ("joint",): frozenset({"name", "type"}), ("joint", "origin"): frozenset({"xyz", "rpy"}),
    ("joint", "axis"): frozenset({"xyz"}), ("joint", "parent"): frozenset({"link"}),
    ("joint", "child"): frozenset({"link"}), ("joint", "limit"): frozenset({"lower", "upper", "effort", "velocity"}),
    ("joint", "mimic"): frozenset({"joint", "multiplier", "offset"}),
    ("joint", "dynamics"): frozenset({"damping", "friction"}),
}


def _check_attribute_spelling(file: str, robot: ET.Element) -> None:
    """A misspelt attribute of an element the dynamics read (`Ixy=`, `<origin xzy=...>`, `<limit lowr=...>`,
    `<mimic multiplyer=...>`) was skipped like any unknown attribute — by PyBullet and Pinocchio too — and its
    value silently replaced by the default. An unknown attribute that misspells a known one (`_misspelt`) is an
    error naming it; others (and prefixed ones, `drake:acceleration`) are extensions and stay ignored."""
    for top in robot:
        if top.tag not in ("link", "joint"):
            continue
        where = source_of(file, top).element
        stack = [((top.tag,), top, where)]
        while stack:
            path, element, described = stack.pop()
            known = URDF_ATTRIBUTES.get(path, frozenset())
            for key in element.attrib if known else ():
                meant = _misspelt(key, known)
                if meant is not None:
                    raise ModelError(f"unknown attribute (did you mean {meant!r}?): it would be silently ignored "
                                     "and its value taken as the default", file=file, element=described, attribute=key,
                                     expected="one of " + ", ".join(sorted(known)))
            if len(path) < 3:   # (the deepest path above)
                stack.extend(((*path, child.tag), child, f"{described} <{child.tag}>") for child in element
                             if isinstance(child.tag, str))


def _misspelt(key: str, known: frozenset[str]) -> str | None:
    """The known attribute `key` is a misspelling of — the same but for case or the order of its letters, or
    difflib ratio ≥ 0.8 (`lowr`, `multiplyer`) — else None: extensions such as urdfdom's `command_effort` and
    `gear_velocity` beside `effort` and `velocity` (ratio 0.6, 0.76) and prefixed names are not."""
    if key in known or ":" in key or "{" in key:
        return None
    for name in sorted(known):
        if key.casefold() == name or sorted(key.casefold()) == sorted(name) \
                or difflib.SequenceMatcher(None, key.casefold(), name).ratio() >= 0.8:
            return name
    return None


def _check_nested_blocks(file: str, robot: ET.Element, direct: int) -> None:
    """A `<biobullet>` block is read only directly under `<robot>`: one nested anywhere else (in a `<link>`, a
    `<joint>`, another `<biobullet>`) would be silently ignored, and the model would lose its joint functions."""
    if sum(1 for _ in robot.iter("biobullet")) == direct:
        return
    parent_of = {child: parent for parent in robot.iter() for child in parent}
    nested = next(block for block in robot.iter("biobullet") if parent_of[block] is not robot)
    ancestors = []
    element = parent_of[nested]
    while element is not robot:
        ancestors.append(source_of(file, element).element)
        element = parent_of[element]
    where = " ".join(reversed(ancestors))
    raise ModelError(f"a <biobullet> block nested inside {where} is not read there", file=file,
                     element=f"{where} <biobullet>", expected="the <biobullet> block directly under <robot>")


def _check_size(file: str, robot: ET.Element) -> None:
    """At most MAX_ELEMENTS elements nested at most MAX_DEPTH deep (one walk with an explicit stack)."""
    count = 0
    stack = [(robot, 1, "<robot>")]
    while stack:
        element, depth, path = stack.pop()
        count += 1
        if count > MAX_ELEMENTS:
            raise ModelError(f"more than {MAX_ELEMENTS} XML elements", file=file,
                             expected=f"at most {MAX_ELEMENTS} elements")
        if depth > MAX_DEPTH:
            raise ModelError(f"XML elements nested more than {MAX_DEPTH} deep", file=file, element=path,
                             expected=f"elements nested at most {MAX_DEPTH} deep")
        if depth <= 2:  # name the top-level element the deep nesting is in
            path = source_of(file, element).element if depth == 2 else path
        stack.extend((child, depth + 1, path) for child in element)


#: characters no name may hold: control characters (a line break or tab splits `info`'s tables and the CSV header),
#: and the invisible direction marks and overrides that make a name display as another one
_NAME_FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: first characters that make a spreadsheet read a CSV header cell as a formula (`=HYPERLINK(...)`, CWE-1236)
_FORMULA_START = ("=", "+", "-", "@")
#: longest name (characters): names head table columns and CSV headers (a 5 MB joint name made a trajectory header
#: longer than `Trajectory.from_csv` reads back); real ones are below 100
MAX_NAME_CHARS = 1000


def _check_names(file: str, root: ET.Element) -> None:
    """Every element's `name` is shown in tables, written into CSV headers and web pages: printable, no formula."""
    for element in root.iter():
        value = element.attrib.get("name")
        if value is None:
            continue
        if len(value) > MAX_NAME_CHARS:
            raise ModelError(f"the name is {len(value)} characters long", file=file,
                             element=f"<{element.tag} name={shown(value, 40)}>", attribute="name",
                             expected=f"a name of at most {MAX_NAME_CHARS} characters")
        bad = _NAME_FORBIDDEN.search(value)
        if bad or value.strip().startswith(_FORMULA_START):
            problem = (f"holds the character U+{ord(bad.group()):04X}" if bad else
                       f"starts with {value.strip()[0]!r} (a spreadsheet opening the CSV would run it as a formula)")
            raise ModelError(f"the name {problem}", file=file, element=f"<{element.tag} name={shown(value)}>",
                             attribute="name", expected="a name of visible characters, not starting with = + - @")


def _check_unique(file: str, names: list[str], kind: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ModelError(f"duplicate {kind} name", file=file, element=f'<{kind} name="{name}">',
                             attribute="name", expected=f"unique {kind} names")
        seen.add(name)


def inertia_summary(description: ModelDescription) -> str:
    """One sentence on the physically impossible inertia tensors of a description ('' if none)."""
    issues = description.inertia_issues
    if not issues:
        return ""
    shown = "; ".join(f"{link} ({problem}, {distance:.2%} from the nearest physical tensor)"
                      for link, problem, distance, _ in issues[:8])
    more = f"; and {len(issues) - 8} more" if len(issues) > 8 else ""
    if issues[0][3]:
        return (f"{description.file}: inertia repaired (replaced by the nearest physical tensor) for "
                f"{len(issues)} link(s): {shown}{more}")
    return (f"{description.file}: physically impossible inertia kept as in the file (as Pinocchio does; PyBullet "
            f"replaces such tensors by zero or their diagonal) for {len(issues)} link(s): {shown}{more}. Use inertia=\"repair\" "
            f"(CLI: --inertia repair) to replace them by the nearest physical tensors, or \"strict\" to reject them")


def _parse_link(file: str, element: ET.Element, ordinal: int, policy: str = DEFAULT_INERTIA_POLICY,
                issues: list | None = None, missing_meshes: list[str] | None = None) -> LinkDescription:
    source = source_of(file, element)
    if not element.attrib.get("name", "").strip():
        raise ModelError("missing required attribute", file=file, element=f"<link> (link number {ordinal} in the file)",
                         attribute="name", expected="a unique link name")
    name = required(source, element, "name")
    _check_shapes(file, element, name, missing_meshes if missing_meshes is not None else [])
    _check_single_children(SourceRef(file, f'<link name="{name}">'), element, ("inertial",))
    inertial_element = element.find("inertial")
    inertial = None
    if inertial_element is not None:
        inertial = _parse_inertial(SourceRef(file, f'<link name="{name}"> <inertial>'), inertial_element,
                                   policy, issues if issues is not None else [], name)
    return LinkDescription(name=name, inertial=inertial, source=source)


#: geometry elements and their required size attributes (count of numbers; all non-negative, m); collisions may
#: also use PyBullet's `<plane normal>` and `<cdf filename>`
GEOMETRY_SIZES = {"box": (("size", 3),), "sphere": (("radius", 1),), "cylinder": (("radius", 1), ("length", 1)),
                  "capsule": (("radius", 1), ("length", 1)), "mesh": ()}
COLLISION_ONLY_GEOMETRY = ("plane", "cdf")


def _check_shapes(file: str, link: ET.Element, name: str, missing_meshes: list[str]) -> None:
    """Every `<visual>` and `<collision>` of a link, checked at load as everything else is (dynamics never reads
    them, but the viewer, the HTML replay and PyBullet do): a finite origin, exactly one known geometry with its
    sizes (non-negative finite numbers) and, for a mesh, a file name and a finite scale; a colour of four numbers
    in [0, 1]. A mesh file that does not exist is added to `missing_meshes` ('<link> <visual> <mesh> filename
    'X'' entries) for one warning per file: PyBullet and the viewer refuse such a file, but the dynamics do not
    read meshes (and Pinocchio loads it), so it is no load error."""
    for kind in ("visual", "collision"):
        known = tuple(GEOMETRY_SIZES) + (COLLISION_ONLY_GEOMETRY if kind == "collision" else ())
        expected = "<geometry> with one of <" + ">, <".join(known) + ">"
        for ordinal, shape_element in enumerate(link.findall(kind), 1):
            source = SourceRef(file, f'<link name="{name}"> <{kind}> number {ordinal}')
            origin = shape_element.find("origin")
            if origin is not None:
                origin_source = SourceRef(file, source.element + " <origin>")
                optional_vec3(origin_source, origin, "xyz")
                optional_vec3(origin_source, origin, "rpy")
            geometry = shape_element.find("geometry")
            # (a <material> inside <geometry> is misplaced but harmless: PyBullet and the viewer skip it)
            shapes = [child for child in geometry if child.tag != "material"] if geometry is not None else []
            if len(shapes) != 1:
                raise source.error(None, "missing <geometry>" if geometry is None else
                                   f"<geometry> has {len(shapes)} shapes", expected)
            shape = shapes[0]
            shape_source = SourceRef(file, f"{source.element} <geometry> <{shape.tag}>")
            if shape.tag not in known:
                raise source.error(None, f"unknown geometry <{shape.tag}>", expected)
            for attribute, count in GEOMETRY_SIZES.get(shape.tag, ()):
                floats(shape_source, shape, attribute, REQUIRED, count=count, non_negative=True)
            if shape.tag in ("mesh", "cdf"):
                required(shape_source, shape, "filename")
            if shape.tag == "mesh":   # (PyBullet reads the first three numbers; some files give four)
                floats(shape_source, shape, "scale", None, min_count=3, max_count=4)
                found = find_mesh_file(file, shape.get("filename", ""))
                if found is None:
                    missing_meshes.append(f"{shape_source.element} filename={shown(shape.get('filename', ''))}")
                else:
                    check_mesh_size(file, f"{source.element} <geometry>", found)
            if shape.tag == "plane":
                optional_vec3(shape_source, shape, "normal", (0.0, 0.0, 1.0))
            material = shape_element.find("material")
            if material is not None:
                _check_color(file, material, source.element + " <material>")


def _check_color(file: str, material: ET.Element, where: str) -> None:
    color = material.find("color")
    if color is not None:
        floats(SourceRef(file, where + " <color>"), color, "rgba", None, count=4, at_least=0.0, at_most=1.0)


def _parse_inertial(source: SourceRef, element: ET.Element, policy: str = DEFAULT_INERTIA_POLICY,
                    issues: list | None = None, link: str = "") -> InertialDescription:
    _check_single_children(source, element, ("origin", "mass", "inertia"))
    origin = element.find("origin")
    xyz = optional_vec3(source, origin, "xyz")
    rpy = optional_vec3(source, origin, "rpy")
    mass_element = element.find("mass")
    if mass_element is None:
        raise source.error(None, "missing <mass>", '<mass value="..."/>')
    mass_source = SourceRef(source.file, source.element + " <mass>")
    mass = to_float(mass_source, "value", required(mass_source, mass_element, "value"))
    if mass < 0:
        raise mass_source.error("value", f"negative mass {mass:g} kg", "mass ≥ 0")
    inertia_element = element.find("inertia")
    inertia_source = SourceRef(source.file, source.element + " <inertia>")
    if inertia_element is None:
        if mass > 0:
            raise source.error(None, "missing <inertia>", "<inertia ixx iyy izz ixy ixz iyz/>")
        components = dict.fromkeys(("ixx", "iyy", "izz", "ixy", "ixz", "iyz"), 0.0)
    else:
        components = {key: number(inertia_source, inertia_element, key, 0.0)
                      for key in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
    c = components
    local = np.array([[c["ixx"], c["ixy"], c["ixz"]], [c["ixy"], c["iyy"], c["iyz"]], [c["ixz"], c["iyz"], c["izz"]]])
    if np.any(local != 0.0):
        problem = _inertia_problem(local)
        if problem is not None:
            if policy == "strict":
                _check_inertia(inertia_source, local)
            repaired = nearest_physical_inertia(local)
            scale = float(np.abs(local).max())   # (the norms of a 1e308 tensor overflow: distance nan %)
            distance = float(np.linalg.norm((repaired - local) / scale) / np.linalg.norm(local / scale))
            if issues is not None:
                issues.append((link, problem, distance, policy == "repair"))
            if policy == "repair":
                local = repaired
    rotation = rpy_to_matrix(rpy)
    inertia = rotation @ local @ rotation.T
    return InertialDescription(mass=mass, com=xyz, inertia=tuple(tuple(float(v) for v in row) for row in inertia))


_DIAGONAL = ("ixx", "iyy", "izz")
_OFF_DIAGONAL = (("ixy", 0, 1), ("ixz", 0, 2), ("iyz", 1, 2))


def _inertia_problem(inertia: np.ndarray) -> str | None:
    """None for a physical tensor (positive semi-definite, triangle inequality), else what is wrong."""
    # in units of the largest entry: the sum of two principal moments of 1e308 overflowed (a numpy warning)
    principal = np.linalg.eigvalsh(inertia / np.abs(inertia).max())
    scale = float(np.abs(principal).max())
    if principal[0] < -TRIANGLE_TOLERANCE * scale:
        return "indefinite"
    a, b, c = principal
    if a + b < c - TRIANGLE_TOLERANCE * scale:
        return "triangle inequality violated"
    return None


def nearest_physical_inertia(inertia: np.ndarray) -> np.ndarray:
    """The physical inertia tensor nearest to `inertia` in the Frobenius norm.

    Physical tensors form a spectral set (principal moments λ with λ_i ≤ λ_j + λ_k, which implies λ ≥ 0), so the
    nearest one keeps the principal axes and projects λ onto that cone. The cone is {T d : d ≥ 0} with
    T = 1 1ᵀ − I (d = the principal second moments of the mass distribution), a non-negative least-squares problem.
    """
    from scipy.optimize import nnls
    scale = float(np.abs(inertia).max()) or 1.0   # (in units of the largest entry: no overflow at 1e308)
    principal, axes = np.linalg.eigh(inertia / scale)
    cone = np.ones((3, 3)) - np.eye(3)
    moments, _ = nnls(cone, principal)
    projected = cone @ moments
    return axes @ np.diag(projected * scale) @ axes.T


def _check_inertia(source: SourceRef, inertia: np.ndarray) -> None:
    """Positive definite and physically realisable; the error names the attribute most likely at fault."""
    principal = np.linalg.eigvalsh(inertia)
    if principal[0] < -TRIANGLE_TOLERANCE * float(np.abs(principal).max()):
        diagonal = np.diag(inertia)
        if diagonal.min() <= 0:
            culprit = _DIAGONAL[int(np.argmin(diagonal))]
        else:  # diagonal fine: an off-diagonal product of inertia is too large
            culprit = max(_OFF_DIAGONAL, key=lambda item: abs(inertia[item[1], item[2]])
                          / math.sqrt(diagonal[item[1]] * diagonal[item[2]]))[0]
        raise source.error(culprit, f"inertia tensor is indefinite (principal moments "
                           f"{', '.join(f'{p:.6g}' for p in principal)})", "a positive semi-definite tensor")
    a, b, c = principal
    if a / c + b / c < 1 - TRIANGLE_TOLERANCE:   # (divided: a + b of 1e308 moments overflows)
        culprit = _DIAGONAL[int(np.argmax(np.diag(inertia)))]
        raise source.error(culprit, f"principal moments {a:.6g}, {b:.6g}, {c:.6g} violate the triangle inequality "
                           f"({a:.6g} + {b:.6g} < {c:.6g})", "I1 + I2 ≥ I3 for a physical body")


#: children a `<joint>` has at most one of: PyBullet and Pinocchio (urdfdom) read the first and skip the others
JOINT_SINGLE_CHILDREN = ("parent", "child", "origin", "axis", "limit", "mimic", "dynamics")


def _check_single_children(source: SourceRef, element: ET.Element, tags: tuple[str, ...]) -> None:
    """A second `<origin>`, `<axis>`, `<mass>`, ... of one element that says something else was silently skipped
    (we, PyBullet and Pinocchio read the first): an error naming it, as a second `<gravity>` in the block is. An
    exact repeat is harmless and loads (pybullet_data's spirit40newer.urdf repeats an `<axis>`)."""
    for tag in tags:
        first, *others = element.findall(tag) or [None]
        if any(_content(other) != _content(first) for other in others):
            raise source.error(None, f"a second <{tag}> that differs from the first: only the first is read (here, "
                               "by PyBullet and by Pinocchio), the other would be silently ignored",
                               f"at most one <{tag}>")


def _content(element: ET.Element) -> tuple:
    """What an element says: its attributes, text and children, recursively (not the text after it)."""
    return (element.tag, dict(element.attrib), (element.text or "").strip(),
            tuple(_content(child) for child in element))


def _parse_joint(file: str, element: ET.Element, link_names: set[str]) -> JointDescription:
    source = source_of(file, element)
    name = required(source, element, "name")
    joint_type = required(source, element, "type")
    if joint_type not in SUPPORTED_JOINT_TYPES:
        raise source.error("type", f"unsupported joint type {joint_type!r}", "one of " + ", ".join(SUPPORTED_JOINT_TYPES))
    _check_single_children(source, element, JOINT_SINGLE_CHILDREN)
    ends = {}
    for tag in ("parent", "child"):
        end = element.find(tag)
        end_source = SourceRef(file, f'{source.element} <{tag}>')
        if end is None:
            raise source.error(None, f"missing <{tag}>", f'<{tag} link="..."/>')
        link = required(end_source, end, "link")
        if link not in link_names:
            raise end_source.error("link", f"unknown link {link!r}{did_you_mean(link, link_names)}",
                                   "the name of a <link> in this file")
        ends[tag] = link
    origin = element.find("origin")
    origin_source = SourceRef(file, f"{source.element} <origin>")
    xyz = optional_vec3(origin_source, origin, "xyz")
    rpy = optional_vec3(origin_source, origin, "rpy")
    axis_element = element.find("axis")
    axis_source = SourceRef(file, f"{source.element} <axis>")
    axis = optional_vec3(axis_source, axis_element, "xyz", (1.0, 0.0, 0.0))
    norm = math.hypot(*axis)   # (scaled: the sum of squares of "0 1e308 1e308" overflows, and the axis became zero)
    if joint_type in MOVABLE_JOINT_TYPES or joint_type == "planar":  # planar: the axis is the plane's normal
        if norm < 1e-12:
            raise axis_source.error("xyz", f"zero axis {axis_element.attrib['xyz']!r}", "a non-zero direction")
        axis = (axis[0] / norm, axis[1] / norm, axis[2] / norm)
    lower = upper = None
    limit = element.find("limit")
    if limit is not None and joint_type in ("revolute", "prismatic"):
        limit_source = SourceRef(file, f"{source.element} <limit>")
        lower = number(limit_source, limit, "lower", None)
        upper = number(limit_source, limit, "upper", None)
        if lower is not None and upper is not None and lower > upper:
            # PyBullet's convention (its pybullet_data uses it): lower > upper means "no limit"; Pinocchio loads
            # such files too. Only sampling and joint stops read the limits.
            lower = upper = None
    mimic = None
    mimic_element = element.find("mimic")
    if mimic_element is not None:
        mimic_source = SourceRef(file, f"{source.element} <mimic>")
        mimic = (required(mimic_source, mimic_element, "joint"),
                 number(mimic_source, mimic_element, "multiplier", 1.0),
                 number(mimic_source, mimic_element, "offset", 0.0))
    return JointDescription(name=name, type=joint_type, parent=ends["parent"], child=ends["child"],
                            origin_xyz=xyz, origin_rpy=rpy, axis=axis, lower=lower, upper=upper,
                            mimic=mimic, source=source)


def _check_tree(file: str, links: tuple[LinkDescription, ...], joints: tuple[JointDescription, ...]) -> str:
    parent_of: dict[str, JointDescription] = {}
    for joint in joints:
        if joint.child in parent_of:
            raise ModelError(f"link {joint.child!r} is the child of two joints ({parent_of[joint.child].name!r} "
                             f"and {joint.name!r}); URDF describes a tree — close loops with <biobullet><loop>",
                             file=file, element=f'<joint name="{joint.name}"> <child>', attribute="link")
        if joint.child == joint.parent:
            raise ModelError("a joint connects a link to itself", file=file,
                             element=f'<joint name="{joint.name}"> <child>', attribute="link")
        parent_of[joint.child] = joint
    roots = [link.name for link in links if link.name not in parent_of]
    if len(roots) != 1:
        detail = "no root link (the joints form a cycle)" if not roots else f"several root links: {', '.join(roots)}"
        raise ModelError(detail, file=file, element="<robot>", expected="exactly one link that is no joint's child")
    reaches_root = {roots[0]}   # links known to reach the root: each is walked once (linear on a long chain)
    for link in links:  # every link must reach the root
        path, seen, name = [], set(), link.name
        while name not in reaches_root and name in parent_of:
            if name in seen:
                raise ModelError(f"the joints form a cycle through link {name!r}", file=file,
                                 element=f'<joint name="{parent_of[name].name}">')
            seen.add(name)
            path.append(name)
            name = parent_of[name].parent
        reaches_root.update(path)
    return roots[0]
