"""The anthropomorph as a model file: `ChainModel` → URDF + `<biobullet>` text, and the tree model it loads into.

Only elements of the model-file contract (DESIGN.md) are used. Plane x–y, gravity (0, −g, 0), revolute axes z.
  world ─x (prismatic, +x)─ hip_x ─y (prismatic, +y)─ hip          (massless; the hip does not rotate)
  every link i, from the hip outwards along its chain:
    [unrotate_i: revolute z at the parent link's far end, joint function θ = −φ_parent]   (distal links only)
    phi_i:  revolute z, coordinate = the paper's ABSOLUTE angle φ_i (the frame above is parallel to the world's)
    l_i:    prismatic along σ_i x (legs −x, trunk +x), coordinate l_i, `<joint_spring>` k_i, L0_i, c_i; the next
            link's joint sits at its child (`end_i`)
    com_i:  prismatic along σ_i x, joint function s = ρ_i l_i, child `com_i`:
              constant I_i: mass m_i, inertia (0, I_i, I_i) (a thin rod along the link; only izz acts in the plane)
              I_i(t):       massless, carrying two point masses m_i/2 on prismatic sliders along the link at ±d(t),
                            d(t) = sqrt(I_i(t)/m_i) (`expression` joint functions of t): r± = c ± d e, so
                            T = ½ m |ċ|² + ½ m d² φ̇² + ½ m ḋ² — the φ equation gets d/dt(I φ̇) = I φ̈ + İ φ̇,
                            the last term depends on t only (no generalized force; the tree's kinetic energy
                            includes it), gravity acts at c (docs/anthropomorph.md, "The model file").
`<coordinates names="x y phi1…phin l1…ln">` makes the tree model's q and v exactly the paper's, in that order (no
permutation). `tree_model(chain)` loads the text once (kept in `chain.derived`) without a file.
"""
from __future__ import annotations

import math
import os
from xml.sax.saxutils import quoteattr

from biobullet.core.atomic import write_text
from biobullet.core.errors import ModelError
from biobullet.dynamics.api import build_model
from biobullet.extensible.chain_model import ChainModel, InertiaLaw
from biobullet.model.model import Model
from biobullet.model.urdf import description_from_root, parse_xml

#: range of the hip and point-mass sliders [m]; a link's length and COM slider range over [0, 2 L0] (URDF needs
#: limits, which biobullet and PyBullet apply as joint stops: none of them is reached in the paper's motions, where
#: the links stretch by < 1 %; `biobullet validate` samples states within them)
SLIDER_RANGE = 100.0
#: angle of each leg from the vertical in the file's `<initial>` state [rad]
SPREAD = 0.15
#: radius of a link's drawn rod [m] (visuals only)
VISUAL_RADIUS = 0.02


def _number(value: float) -> str:
    """Shortest text that reads back as exactly `value`."""
    return repr(float(value))


def _inertia_expression(law: InertiaLaw) -> tuple[str, str]:
    """(expression, parameters) of I(t) in the expression language, the coefficients as named parameters (exact)."""
    if law.kind == "polynomial":
        terms = ["c0"] + [f"c{k}*t**{k}" if k > 1 else "c1*t" for k in range(1, len(law.coefficients))]
        parameters = [f"c{k}={_number(c)}" for k, c in enumerate(law.coefficients)]
        return " + ".join(terms), " ".join(parameters)
    # (w only with a harmonic to read it: a parameter the expression never reads is warned about at load)
    terms, parameters = ["a0"], [f"a0={_number(law.coefficients[0])}"]
    if len(law.coefficients) > 1:
        parameters.append(f"w={_number(2.0 * math.pi / law.period)}")
    for k in range(1, len(law.coefficients)):
        wk = "w" if k == 1 else f"{k}*w"
        terms += [f"a{k}*cos({wk}*t)", f"b{k}*sin({wk}*t)"]
        parameters += [f"a{k}={_number(law.coefficients[k])}", f"b{k}={_number(law.sine[k - 1])}"]
    return " + ".join(terms), " ".join(parameters)


def _link(name: str, mass: float = 0.0, inertia: tuple[float, float, float] | None = None, visual: str = "") -> str:
    inertial = ""
    if mass != 0.0 or inertia is not None:
        ixx, iyy, izz = inertia or (0.0, 0.0, 0.0)
        inertial = (f'<inertial><origin xyz="0 0 0"/><mass value="{_number(mass)}"/><inertia ixx="{_number(ixx)}" '
                    f'ixy="0" ixz="0" iyy="{_number(iyy)}" iyz="0" izz="{_number(izz)}"/></inertial>')
    return f'  <link name="{name}">{inertial}{visual}</link>' if inertial or visual else f'  <link name="{name}"/>'


def _rod_visual(sigma: float, rest_length: float) -> str:
    """A cylinder of the rest length along the link (for pictures only: it does not stretch)."""
    return (f'<visual><origin xyz="{_number(0.5 * sigma * rest_length)} 0 0" rpy="0 {_number(math.pi / 2)} 0"/>'
            f'<geometry><cylinder radius="{_number(VISUAL_RADIUS)}" length="{_number(rest_length)}"/></geometry>'
            '</visual>')


def _ball_visual() -> str:
    return f'<visual><geometry><sphere radius="{_number(2.0 * VISUAL_RADIUS)}"/></geometry></visual>'


def _joint(name: str, kind: str, parent: str, child: str, axis: str, limits: tuple[float, float] | None = None) -> str:
    limit = "" if limits is None else \
        f'<limit lower="{_number(limits[0])}" upper="{_number(limits[1])}" effort="0" velocity="1000"/>'
    return (f'  <joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="0 0 0" rpy="0 0 0"/><axis xyz="{axis}"/>{limit}</joint>')


def model_file_text(chain: ChainModel) -> str:
    """The URDF + `<biobullet>` text of `chain` (see the module docstring); deterministic, numbers exact."""
    if not isinstance(chain, ChainModel):
        raise ModelError(f"{chain!r} is not a ChainModel", argument="chain", expected="a ChainModel")
    n = chain.n_links
    links = [_link("world"), _link("hip_x"), _link("hip")]
    joints = [_joint("x", "prismatic", "world", "hip_x", "1 0 0", (-SLIDER_RANGE, SLIDER_RANGE)),
              _joint("y", "prismatic", "hip_x", "hip", "0 1 0", (-SLIDER_RANGE, SLIDER_RANGE))]
    extension = [f'    <gravity xyz="0 {_number(-chain.gravity)} 0"/>', '    <base type="fixed"/>']
    for c in range(3):
        parent_end, parent_index = "hip", None
        for i in chain.chain_order(c):
            link = chain.links[i]
            axis = "-1 0 0" if chain.sigma[i] < 0 else "1 0 0"
            frame = "hip"
            if parent_index is not None:
                frame = f"unrotated{i + 1}"
                links.append(_link(frame))
                joints.append(_joint(f"unrotate{i + 1}", "continuous", parent_end, frame, "0 0 1"))
                extension.append(f'    <joint_function joint="unrotate{i + 1}" type="linear" '
                                 f'inputs="phi{parent_index + 1}" coefficients="-1.0"/>')
            links += [_link(f"link{i + 1}", visual=_rod_visual(chain.sigma[i], link.rest_length)), _link(f"end{i + 1}")]
            joints += [_joint(f"phi{i + 1}", "continuous", frame, f"link{i + 1}", "0 0 1"),
                       _joint(f"l{i + 1}", "prismatic", f"link{i + 1}", f"end{i + 1}", axis,
                              (0.0, 2.0 * link.rest_length)),
                       _joint(f"com{i + 1}", "prismatic", f"link{i + 1}", f"com{i + 1}", axis,
                              (0.0, 2.0 * link.rest_length))]
            extension += [f'    <joint_spring joint="l{i + 1}" stiffness="{_number(link.stiffness)}" '
                          f'rest="{_number(link.rest_length)}" damping="{_number(link.damping)}"/>',
                          f'    <joint_function joint="com{i + 1}" type="linear" inputs="l{i + 1}" '
                          f'coefficients="{_number(chain.rho[i])}"/>']
            law = link.inertia
            if not law.time_varying:
                inertia = float(law.value(0.0))
                links.append(_link(f"com{i + 1}", link.mass, (0.0, inertia, inertia), _ball_visual()))
            else:
                links.append(_link(f"com{i + 1}", visual=_ball_visual()))
                expression, parameters = _inertia_expression(law)
                for side, sign in (("plus", ""), ("minus", "-")):
                    body = f"{side}{i + 1}"
                    links.append(_link(body, 0.5 * link.mass, (0.0, 0.0, 0.0)))
                    joints.append(_joint(body, "prismatic", f"com{i + 1}", body, "1 0 0",
                                         (-SLIDER_RANGE, SLIDER_RANGE)))
                    extension.append(f'    <joint_function joint="{body}" type="expression" '
                                     f'expression="{sign}sqrt(({expression})/m)" '
                                     f'parameters="{parameters} m={_number(link.mass)}"/>')
            parent_end, parent_index = f"end{i + 1}", i
    names = ["x", "y"] + [f"phi{i + 1}" for i in range(n)] + [f"l{i + 1}" for i in range(n)]
    extension.append(f'    <coordinates names="{" ".join(names)}"/>')
    # a standing posture, legs apart (every link parallel makes M singular, docs/anthropomorph.md): leg 1 turned by
    # +SPREAD, leg 2 by −SPREAD from the vertical, the trunk vertical, rest lengths, the lower foot on y = 0
    angle = {c: math.pi / 2 + spread for c, spread in ((0, SPREAD), (1, -SPREAD), (2, 0.0))}
    legs = [sum(chain.links[i].rest_length for i in chain.chain_order(c)) * math.cos(SPREAD) for c in (0, 1)]
    initial = {"x": 0.0, "y": max(legs)} | {f"phi{i + 1}": angle[int(chain.chain[i])] for i in range(n)} \
        | {f"l{i + 1}": chain.links[i].rest_length for i in range(n)}
    extension += [f'    <initial joint="{k}" position="{_number(v)}" velocity="0.0"/>' for k, v in initial.items()]
    header = ("<!-- GENERATED by biobullet.extensible.model_file.model_file_text from a ChainModel "
              "(paper 004's planar anthropomorph with extensible links; docs/anthropomorph.md,\n"
              "     \"The model file\"). Plane x-y, y up; coordinates x, y (hip), phi_i (absolute link angles from +x),\n"
              "     l_i (link lengths), paper numbering. Massless frames carry no <inertial>; the visuals are for pictures. -->")
    return "\n".join(['<?xml version="1.0"?>', header, f'<robot name={quoteattr(chain.name)}>', *links, *joints,
                      '  <biobullet version="1">', *extension, "  </biobullet>", "</robot>", ""])


def write_model_file(chain: ChainModel, path: str | os.PathLike[str]) -> None:
    """Write `model_file_text(chain)` to `path` atomically."""
    write_text(path, model_file_text(chain))


def tree_model(chain: ChainModel) -> Model:
    """The tree Model of `chain`'s model file, loaded from the text once and kept in `chain.derived`."""
    model = chain.derived.get("tree_model")
    if model is None:
        file = f"<{chain.name}: generated model file>"
        description = description_from_root(parse_xml(file, model_file_text(chain).encode("utf-8")), file)
        model = chain.derived["tree_model"] = build_model(description)
    return model


__all__ = ["model_file_text", "write_model_file", "tree_model"]
