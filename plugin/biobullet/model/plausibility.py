"""Unit plausibility: values that load but look like the wrong unit (degrees for radians, mm/s² for m/s²).

Each suspicious value gets one `UnitWarning` naming the file and element; the model still loads (the file may
mean it). Checked at load: `<initial position>` of an angle beyond the joint's `<limit>` or beyond ±2π, spline
knots spanning more than 2π on an angle input, a gravity magnitude above 100 m/s² or below 0.1 m/s² (not 0), a
link heavier than 1 t (grams?) and a joint origin farther than 100 m from its parent (millimetres?).
"""
from __future__ import annotations

import math
import warnings

from biobullet.functions.spline import SplineFunction
from biobullet.model.description import ModelDescription

#: |g| above this (m/s²) looks like mm/s² or cm/s² (Earth 9.81, Jupiter 24.8)
GRAVITY_TOO_LARGE = 100.0
#: 0 < |g| below this (m/s²) looks like a value in g's or km/s² (0 switches gravity off and is fine)
GRAVITY_TOO_SMALL = 0.1
#: slack on the limits for an initial angle (rad): files print limits to a few digits
LIMIT_SLACK = 1e-6
ANGULAR_TYPES = ("revolute", "continuous")
#: one link above this (kg) looks like grams (a 2 kg upper arm written as 2000); no link of pybullet_data reaches 1 t
MASS_TOO_LARGE = 1000.0
#: a joint origin farther than this (m) from its parent's frame looks like millimetres (a 0.45 m thigh as 450)
LENGTH_TOO_LARGE = 100.0


class UnitWarning(UserWarning):
    """A value loads but looks like the wrong unit (degrees for radians, mm for m); the message names it.
    Filter with `warnings.filterwarnings("ignore", category=biobullet.UnitWarning)`."""


def _warn(description: ModelDescription, element: str, message: str) -> None:
    warnings.warn(f"{description.file}: {element}: {message}", UnitWarning, stacklevel=4)


def check_units(description: ModelDescription) -> None:
    """Warn once per suspicious element of a parsed model description (see the module docstring)."""
    joints = {joint.name: joint for joint in description.joints}
    g = math.hypot(*description.gravity)   # (no overflow for components near 1e308, as a sum of squares has)
    if g > GRAVITY_TOO_LARGE or 0.0 < g < GRAVITY_TOO_SMALL:
        _warn(description, "<biobullet> <gravity>", f"|g| = {g:g} m/s² looks like the wrong unit "
              "(expected m/s², Earth 9.81: -9810 would be mm/s²)")
    for link in description.links:
        if link.inertial is not None and link.inertial.mass > MASS_TOO_LARGE:
            _warn(description, link.source.element, f"mass {link.inertial.mass:g} kg looks like the wrong unit "
                  "(grams? masses are in kg)")
    for joint in description.joints:
        reach = max(abs(c) for c in joint.origin_xyz)
        if reach > LENGTH_TOO_LARGE:
            _warn(description, f"{joint.source.element} <origin>", f"xyz {reach:g} m from the parent frame looks like "
                  "the wrong unit (millimetres? lengths are in m)")
    for item in description.initial:
        joint = joints.get(item.joint)
        if joint is None or joint.type not in ANGULAR_TYPES or item.position is None:
            continue
        position = item.position
        low = joint.lower if joint.type == "revolute" else None
        high = joint.upper if joint.type == "revolute" else None
        beyond = (low is not None and position < low - LIMIT_SLACK) or (high is not None and position > high + LIMIT_SLACK)
        if beyond:
            _warn(description, item.source.element, f"position {position:g} rad is beyond the joint's <limit> "
                  f"[{low:g}, {high:g}] rad" + (f" (degrees? {position:g}° = {math.radians(position):.4g} rad)"
                                                 if abs(position) > 2 * math.pi else ""))
        elif abs(position) > 2 * math.pi:
            _warn(description, item.source.element, f"position {position:g} rad is more than a full turn "
                  f"(degrees? {position:g}° = {math.radians(position):.4g} rad)")
    for function in description.joint_functions:
        if not isinstance(function.function, SplineFunction):
            continue
        knots, inputs = function.function.x, function.function.inputs
        if len(inputs) != 1 or inputs[0] not in joints or joints[inputs[0]].type not in ANGULAR_TYPES:
            continue
        span = float(max(knots) - min(knots))
        if span > 2 * math.pi:
            _warn(description, function.source.element, f"spline knots x span {span:g} rad on the angle input "
                  f"{inputs[0]!r}, more than a full turn (degrees? knots are in radians)")


__all__ = ["UnitWarning", "check_units", "GRAVITY_TOO_LARGE", "GRAVITY_TOO_SMALL", "MASS_TOO_LARGE", "LENGTH_TOO_LARGE"]
