"""Complete validation of a model's elements at load time, so `info` and `validate` reject what `simulate` would.

`load_description` checks the URDF and the `<biobullet>` block's structure (links, joints, functions); the
element families above the model layer (force elements — springs, torques, stops, plugins —, contacts,
flexible links and muscles) parse their own attributes only when first used. `check_elements(model)` asks each family to
build its elements now, so that every malformed element is reported when the model is loaded, with the same
one-line ModelError `simulate` would give. `time_function_check(model, t_end)` additionally evaluates the
model's time-dependent joint functions over the run's interval, so that an expression with a pole inside the
interval (``1/(t-0.1)``) is reported before integrating instead of minutes into the run.

`runnable_check(model, engine)` refuses elements an engine cannot run (a `<flexible>` link is run neither by the
reference engine nor by the plain bridge: it needs the segment expansion or the Gibbs–Appell chain), instead of
ignoring them.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np


#: samples of each time-dependent function over [0, t_end] in `time_function_check`
TIME_SAMPLES = 257


def check_elements(model: Any) -> Any:
    """Build every element of `model` once (force elements incl. plugins, contacts, flexible links); raises the
    first element's ModelError. Returns `model` (for chaining)."""
    from biobullet.contact.element import contact_elements
    from biobullet.forces.collection import force_elements

    trajectory_columns_check(model)
    force_elements(model)
    contact_elements(model)
    flexible_elements(model)
    if model.description.muscles:
        from biobullet.muscles.api import muscle_set
        muscle_set(model)
    return model


def trajectory_columns_check(model: Any) -> None:
    """The trajectory files' columns (`t`, positions, then `<joint>_dot` rates) must name one value each: joints `j`
    and `j_dot` wrote two `j_dot` columns, and the file was read back split at the wrong one."""
    from biobullet.core.errors import ModelError
    joints = tuple(model.joint_names)
    base_q, base_v = tuple(model.coordinate_names[:model.base_nq]), tuple(model.velocity_names[:model.base_nv])
    seen = {"t": "the time"}
    for column, owner, joint in [*((name, "a position or rate of a multi-DOF joint", "") for name in base_q + base_v),
                                 *((name, f"joint {name!r}", name) for name in joints),
                                 *((f"{name}_dot", f"the rate of joint {name!r}", name) for name in joints)]:
        if column in seen:
            raise ModelError(f"the trajectory column {column!r} would be both {seen[column]} and {owner}",
                             file=model.description.file, element=f'<joint name="{joint}">' if joint else "<joint>",
                             attribute="name",
                             expected="joint names that differ from each other's `_dot` rate columns and from 't'")
        seen[column] = owner


def flexible_elements(model: Any) -> list[dict[str, Any]]:
    """Validated keyword arguments of every `<flexible>` link of `model` (see `gibbs_appell_io`)."""
    from biobullet.flexible.gibbs_appell_io import flexible_attributes

    description = model.description
    result = []
    seen: set[str] = set()
    for element in description.elements_of("flexible"):
        link = element.get("link")
        if link is None:
            raise element.source.error("link", "missing required attribute", "the name of a <link>")
        if link in seen:
            raise element.source.error("link", "this link is made flexible twice", "one <flexible> per link")
        seen.add(link)
        ends = [joint.origin_xyz[0] for joint in description.joints if joint.parent == link]
        default_length = max(ends) if ends and max(ends) > 0 else None
        result.append(flexible_attributes(element, default_length))
    return result


def runnable_check(model: Any, engine: str) -> None:
    """Refuse elements `engine` ('reference' or 'pybullet') would otherwise silently ignore."""
    flexible = list(model.description.elements_of("flexible"))
    if flexible and engine != "pybullet":   # the bridge expands flexible links into segments
        element = flexible[0]
        raise element.source.error(
            None, f"the {engine} engine of biobullet simulate does not run <flexible> links (they would be "
            "ignored)", "a rigid model, or the Python API: biobullet.flexible.segments.load_segmented_model "
            "(segment expansion) or ElasticChain.from_model_file (Gibbs–Appell)")


def time_function_check(model: Any, t_end: float, t0: float = 0.0) -> None:
    """Evaluate every time-dependent joint function at TIME_SAMPLES times in [t0, t_end] at the initial inputs;
    a non-finite value or derivative raises a ModelError naming the function, the time and the inputs."""
    if not (isinstance(t_end, (int, float)) and isinstance(t0, (int, float)) and math.isfinite(t_end)
            and math.isfinite(t0) and t_end > t0):
        return
    from biobullet.constraints.implicit import declared_configuration, loop_resolvers
    from biobullet.core.errors import EvaluationError, SolverError
    from biobullet.forces.collection import force_elements

    times = np.linspace(float(t0), float(t_end), TIME_SAMPLES)
    for element in force_elements(model):   # actuator time functions (joint_torque type=...)
        torque = getattr(element, "torque", None)
        if torque is None or getattr(element, "function", None) is None:
            continue
        for t in times:
            try:
                value = float(torque(float(t)))
            except (ArithmeticError, ValueError, EvaluationError) as exc:
                value = exc
            if not isinstance(value, float) or not math.isfinite(value):
                raise element.source.error(None, f"the torque is not finite at t = {t:.6g} s ({value})",
                                           f"a function defined over the whole run, t = {t0:g} … {t_end:g} s")
        pole = _singularity(element.function, [], t0, t_end)
        if pole is not None:
            raise element.source.error(None, f"the torque function is singular at t = {pole:.6g} s (a pole or "
                                       "the edge of its domain)", f"a function defined over t = {t0:g} … {t_end:g} s")
    x0 = None   # (the initial state only where a function depends on time: a loop model's assembly costs a solve)
    names = list(model.joint_names)
    for item in model.description.joint_functions:
        function = item.function
        if not getattr(function, "uses_time", False):
            continue
        if x0 is None:   # (the declared loop solutions where they close: not the branch of the model's last call)
            try:
                x0 = declared_configuration(model) if loop_resolvers(model) else None
            except SolverError:
                pass
            if x0 is None:
                x0 = model.joint_configuration(model.initial_state()[0])
        # (x0 = [floating base and multi-DOF joints (base_nq entries), θ of the 1-DOF joints in joint_names order])
        values = [float(x0[model.base_nq + names.index(n)]) if n in names else 0.0
                  for n in function.inputs]
        pole = _singularity(function, values, t0, t_end)
        if pole is not None:
            raise item.source.error(None, f"the joint function is singular at t = {pole:.6g} s (a pole or the edge "
                                    "of its domain)", f"a function defined over t = {t0:g} … {t_end:g} s")
        for t in times:
            try:
                value, gradient, hessian = function.evaluate(np.array(values), float(t))
                finite = math.isfinite(value) and np.all(np.isfinite(gradient)) and np.all(np.isfinite(hessian))
            except (ArithmeticError, ValueError) as exc:
                finite, value = False, exc
            if not finite:
                inputs = ", ".join(f"{n}={v:.6g}" for n, v in zip(function.inputs, values))
                raise item.source.error(None, f"the joint function is not finite at t = {t:.6g} s"
                                        f"{' with ' + inputs if inputs else ''} (value {value})",
                                        f"a function defined over the whole run, t = {t0:g} … {t_end:g} s")


def _singularity(function: Any, values: list[float], t0: float, t_end: float) -> float | None:
    """The first singularity in [t0, t_end] of an expression function's time dependence at fixed inputs (SymPy's
    `singularities`: poles, log/sqrt branch points), or None (none found, or not an expression, or SymPy cannot
    tell — this is a cheap extra check, the sampled one still runs)."""
    symbolic = getattr(function, "symbolic", None)
    if symbolic is None or symbolic.count_ops() > 200:
        return None
    try:
        import sympy
        time_symbol = sympy.Symbol(f"_z{len(function.inputs)}")
        fixed = symbolic.subs({sympy.Symbol(f"_z{k}"): sympy.Float(v) for k, v in enumerate(values)})
        found = sympy.singularities(fixed, time_symbol, sympy.Interval(float(t0), float(t_end)))
        points = sorted(float(p) for p in found) if isinstance(found, sympy.FiniteSet) else []
    except Exception:  # noqa: BLE001  (SymPy gives up on many expressions: then only the sampled check runs)
        return None
    return points[0] if points else None


__all__ = ["check_elements", "flexible_elements", "runnable_check", "time_function_check"]
