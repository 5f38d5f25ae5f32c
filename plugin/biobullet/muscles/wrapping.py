"""Wrapping surfaces: OpenSim's wrap of one straight path segment over a surface, in the surface's frame.

`_cylinder_wrap_py(p1, p2, radius, length, axis, sign, r1, r2)` follows OpenSim 4.6's WrapCylinder::wrapLine for
a path with a single wrap (no tangent-point adjustment, which OpenSim applies only when a path has several):
the 2-D tangent points in the plane across the cylinder axis (z), the choice among the four (by the quadrant
`axis`/`sign`, sign 0 = all sides), their axial placement where the lines through them meet the plane through
p1, p2 and the apex, and the helical arc between them, √((r θ)² + Δz²). Status: NO_WRAP, INSIDE_RADIUS (an end
inside the cylinder), WRAPPED (wraps, but other segments may wrap with a smaller length change) or
MANDATORY_WRAP (the segment crosses the cylinder).

Every quantity is complex so that the same code gives exact derivatives by the complex step (Squire & Trapp
1998): with p1 + i h e_k (h = 1e-30), Im(l)/h is ∂l/∂p1_k to round-off; branches are decided on real parts.
Lengths in m.
"""
from __future__ import annotations

import cmath
import math

import numpy as np

from biobullet.core import jit

NO_WRAP, INSIDE_RADIUS, WRAPPED, MANDATORY_WRAP = 0, 1, 2, 3
CYLINDER, SPHERE, ELLIPSOID, TORUS = 0, 1, 2, 3
SURFACE_CODES = {"cylinder": CYLINDER, "sphere": SPHERE, "ellipsoid": ELLIPSOID, "torus": TORUS}
#: surface types whose wrapping is evaluated (the others are refused by `path.compile_paths`)
EVALUATED = ("cylinder", "sphere")
EPS = 2.220446049250313e-16
LINE_EPSILON = 1e-5       # OpenSim's WrapMath LINE_EPSILON
ROUNDOFF = 2e-13          # OpenSim's ROUNDOFF_ERROR (SimmMacros.h)
COMPLEX_STEP = 1e-30


def _dot_py(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross_py(a, b, out):
    x = a[1] * b[2] - a[2] * b[1]
    y = a[2] * b[0] - a[0] * b[2]
    z = a[0] * b[1] - a[1] * b[0]
    out[0], out[1], out[2] = x, y, z


def _normalize_py(a, out):
    """out = a/|a| (zero when |a| < eps, as OpenSim's NormalizeOrZero); returns |a|."""
    magnitude = cmath.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
    if magnitude.real >= EPS:
        for i in range(3):
            out[i] = a[i] / magnitude
    else:
        for i in range(3):
            out[i] = 0.0
    return magnitude


def _sign_py(value):
    """OpenSim's DSIGN: +1 for ≥ 0."""
    return 1 if value.real >= 0.0 else -1


def _closest_on_line_py(point, line_point, line, out):
    """The point of the line through `line_point` along `line` closest to `point` (OpenSim's
    GetClosestPointOnLineToPoint); returns its parameter along `line`."""
    v1 = np.empty(3, np.complex128)
    v2 = np.empty(3, np.complex128)
    for i in range(3):
        v1[i] = point[i] - line_point[i]
    magnitude = _normalize_py(v1, v1)
    magnitude2 = _normalize_py(line, v2)
    t = _dot_py(v1, v2) * magnitude
    for i in range(3):
        out[i] = line_point[i] + t * v2[i]
    return t / magnitude2


def _distance_squared_to_z_axis_py(point):
    return point[0] * point[0] + point[1] * point[1]


def _det3_py(m):
    return (m[0, 0] * (m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1]) - m[0, 1] * (m[1, 0] * m[2, 2] - m[1, 2] * m[2, 0])
            + m[0, 2] * (m[1, 0] * m[2, 1] - m[1, 1] * m[2, 0]))


def _intersect_lines_py(p1, p2, p3, p4, near1, near2):
    """Closest points of lines p1→p2 and p3→p4 (OpenSim's IntersectLines); (ok, s, t) with s, t the
    parameters along each segment (0 at the first point, 1 at the second)."""
    vec1 = np.empty(3, np.complex128)
    vec2 = np.empty(3, np.complex128)
    for i in range(3):
        vec1[i] = p2[i] - p1[i]
        vec2[i] = p4[i] - p3[i]
    magnitude1 = _normalize_py(vec1, vec1)
    magnitude2 = _normalize_py(vec2, vec2)
    normal = np.empty(3, np.complex128)
    _cross_py(vec1, vec2, normal)
    denominator = _dot_py(normal, normal)
    if abs(denominator.real) <= ROUNDOFF:
        return False, 0.0 + 0.0j, 0.0 + 0.0j
    m = np.empty((3, 3), np.complex128)
    for i in range(3):
        m[0, i] = p3[i] - p1[i]
        m[1, i] = vec1[i]
        m[2, i] = normal[i]
    t = _det3_py(m) / denominator
    for i in range(3):
        near2[i] = p3[i] + t * vec2[i]
        m[1, i] = vec2[i]
    s = _det3_py(m) / denominator
    for i in range(3):
        near1[i] = p1[i] + s * vec1[i]
    return True, s / magnitude1, t / magnitude2


def _intersect_segment_plane_py(a, b, normal, d, out):
    """Where segment a→b meets the plane normal·x + d = 0 (OpenSim's IntersectLineSegPlane)."""
    dot = (b[0] - a[0]) * normal[0] + (b[1] - a[1]) * normal[1] + (b[2] - a[2]) * normal[2]
    if abs(dot.real) < LINE_EPSILON:
        return False
    t = (-d - normal[0] * a[0] - normal[1] * a[1] - normal[2] * a[2]) / dot
    if t.real < -LINE_EPSILON or t.real > 1.0 + LINE_EPSILON:
        return False
    for i in range(3):
        out[i] = a[i] + t * (b[i] - a[i])
    return True


def _atan2_py(y, x):
    """atan2 continued to complex arguments with small imaginary parts (for the complex step)."""
    real = math.atan2(y.real, x.real)
    denominator = x.real * x.real + y.real * y.real
    if denominator == 0.0:
        return real + 0.0j
    return real + 1j * (x.real * y.imag - y.real * x.imag) / denominator


def _acos_py(x):
    """acos continued to complex arguments (real part clamped to [−1, 1] as a cosine computed from unit vectors
    may exceed it by round-off)."""
    real = min(max(x.real, -1.0), 1.0)
    if abs(real) == 1.0:
        return math.acos(real) + 0.0j
    return math.acos(real) - 1j * x.imag / math.sqrt(1.0 - real * real)


def _tangents_py(point, foot, radius, a, b):
    """The two tangent points on the cylinder of the lines from `point` in the plane across the axis through
    `foot` (its foot on the axis); returns the distance of `point` from the axis."""
    v = np.empty(3, np.complex128)
    u = np.empty(3, np.complex128)
    for i in range(3):
        v[i] = point[i] - foot[i]
    distance = _normalize_py(v, v)
    sin_theta = radius / distance
    along = radius * sin_theta
    across = cmath.sqrt(radius * radius - along * along)
    u[0], u[1], u[2] = -v[1], v[0], 0.0 * v[0]   # axis (0, 0, 1) × v
    for i in range(3):
        a[i] = foot[i] + along * v[i] + across * u[i]
        b[i] = foot[i] + along * v[i] - across * u[i]
    return distance


def _cylinder_wrap_py(p1, p2, radius, length, axis, sign, r1, r2):
    """(status, wrap length) of the segment p1→p2 over the cylinder (module docstring); r1, r2 receive the
    tangent points (complex arrays of 3; the surface's frame)."""
    r_squared = radius * radius
    if _distance_squared_to_z_axis_py(p1).real < r_squared or _distance_squared_to_z_axis_py(p2).real < r_squared:
        return INSIDE_RADIUS, 0.0 + 0.0j
    start = np.zeros(3, np.complex128)
    end = np.zeros(3, np.complex128)
    start[2] = -0.5 * length
    end[2] = 0.5 * length
    near12 = np.zeros(3, np.complex128)
    near00 = np.zeros(3, np.complex128)
    ok, t12, t00 = _intersect_lines_py(p1, p2, start, end, near12, near00)
    crossing = ok and _squared_distance_py(near12, near00) < r_squared.real and 0.0 < t12.real < 1.0
    status = WRAPPED
    constrained = sign != 0
    if not constrained:
        if crossing:
            status = MANDATORY_WRAP
        else:
            return NO_WRAP, 0.0 + 0.0j
    axis_point = np.zeros(3, np.complex128)
    axis_point[2] = -1.0
    direction = np.zeros(3, np.complex128)
    direction[2] = 1.0
    p11 = np.empty(3, np.complex128)
    p22 = np.empty(3, np.complex128)
    _closest_on_line_py(p1, axis_point, direction, p11)
    _closest_on_line_py(p2, axis_point, direction, p22)
    r1a = np.empty(3, np.complex128)
    r1b = np.empty(3, np.complex128)
    r2a = np.empty(3, np.complex128)
    r2b = np.empty(3, np.complex128)
    p11_distance = _tangents_py(p1, p11, radius, r1a, r1b)
    p22_distance = _tangents_py(p2, p22, radius, r2a, r2b)
    far_side = False
    long_wrap = False
    if constrained:
        if _sign_py(p1[axis]) == sign or _sign_py(p2[axis]) == sign:
            if crossing:
                status = MANDATORY_WRAP
            elif _sign_py(p1[axis]) != _sign_py(p2[axis]) and _sign_py(near12[axis]) != sign:
                status = WRAPPED
            else:
                return NO_WRAP, 0.0 + 0.0j
        alpha = _acos_py(_angle_cosine_py(r1a, p11, r2b, p22))
        beta = _acos_py(_angle_cosine_py(r1b, p11, r2a, p22))
        a_on = _sign_py(r1a[axis]) == sign
        b_on = _sign_py(r1b[axis]) == sign
        use_a = True   # r1 = r1a, r2 = r2b; else r1 = r1b, r2 = r2a
        if a_on and b_on:
            use_a = _sign_py(r2a[axis]) != sign
            far_side = (alpha.real > beta.real) if use_a else not (alpha.real > beta.real)
        elif a_on:
            use_a = True
            far_side = alpha.real > beta.real
        elif b_on:
            use_a = False
            far_side = not (alpha.real > beta.real)
        else:
            if _sign_py(r2a[axis]) == sign:
                use_a = False
                far_side = not (alpha.real > beta.real)
            elif _sign_py(r2b[axis]) == sign:
                use_a = True
                far_side = alpha.real > beta.real
            else:
                use_a = alpha.real > beta.real
                far_side = True
        for i in range(3):
            r1[i] = r1a[i] if use_a else r1b[i]
            r2[i] = r2b[i] if use_a else r2a[i]
        along_muscle = 0.0 + 0.0j
        for i in range(3):
            along_muscle += ((r1[i] - p1[i]) + (r2[i] - p2[i])) * ((r1[i] - p11[i]) + (r2[i] - p22[i]))
        long_wrap = along_muscle.real < 0.0
    else:
        unit = np.empty((4, 3), np.complex128)
        for i in range(3):
            unit[0, i] = r1a[i] - p11[i]
            unit[1, i] = r1b[i] - p11[i]
            unit[2, i] = r2a[i] - p22[i]
            unit[3, i] = r2b[i] - p22[i]
        for k in range(4):
            _normalize_py(unit[k], unit[k])
        dot1 = _dot_py(unit[0], unit[2]).real
        dot2 = _dot_py(unit[0], unit[3]).real
        dot3 = _dot_py(unit[1], unit[2]).real
        dot4 = _dot_py(unit[1], unit[3]).real
        for i in range(3):
            if dot1 > dot2 and dot1 > dot3 and dot1 > dot4:
                r1[i], r2[i] = r1a[i], r2a[i]
            elif dot2 > dot3 and dot2 > dot4:
                r1[i], r2[i] = r1a[i], r2b[i]
            elif dot3 > dot4:
                r1[i], r2[i] = r1b[i], r2a[i]
            else:
                r1[i], r2[i] = r1b[i], r2b[i]
    # the apex: where the plane through both ends meets the cylinder, on the side the path wraps
    t = p11_distance / (p11_distance + p22_distance)
    middle = np.empty(3, np.complex128)
    for i in range(3):
        middle[i] = p1[i] + t * (p2[i] - p1[i])
    axis_foot = np.empty(3, np.complex128)
    _closest_on_line_py(middle, axis_point, direction, axis_foot)
    normal = np.empty(3, np.complex128)
    _plane_normal_py(p1, p2, axis_foot, normal)
    vertical1 = np.empty(3, np.complex128)
    vertical2 = np.empty(3, np.complex128)
    _cross_py(direction, normal, vertical1)
    _normalize_py(vertical1, vertical1)
    _cross_py(normal, direction, vertical2)
    _normalize_py(vertical2, vertical2)
    apex1 = np.empty(3, np.complex128)
    apex2 = np.empty(3, np.complex128)
    for i in range(3):
        apex1[i] = axis_foot[i] + radius * vertical1[i]
        apex2[i] = axis_foot[i] + radius * vertical2[i]
    distance1 = 0.0
    distance2 = 0.0
    for i in range(3):
        distance1 += ((middle[i] - apex1[i]) ** 2).real
        distance2 += ((middle[i] - apex2[i]) ** 2).real
    first = (distance1 < distance2) != far_side
    apex = apex1 if first else apex2
    _plane_normal_py(p1, p2, apex, normal)
    d = -p1[0] * normal[0] - p1[1] * normal[1] - p1[2] * normal[2]
    low = np.empty(3, np.complex128)
    high = np.empty(3, np.complex128)
    crossing_point = np.empty(3, np.complex128)
    on_line = np.empty(3, np.complex128)
    for end_index in range(2):
        r = r1 if end_index == 0 else r2
        for i in range(3):
            low[i] = r[i] - 10.0 * direction[i]
            high[i] = r[i] + 10.0 * direction[i]
        if _intersect_segment_plane_py(low, high, normal, d, crossing_point):
            # as OpenSim does for both ends: the line through p11 with p22 itself as its direction, and the
            # crossing kept when its foot there is nearer the other end's foot than the two feet are
            _closest_on_line_py(crossing_point, p11, p22, on_line)
            other = p22 if end_index == 0 else p11
            if _squared_distance_py(on_line, other) < _squared_distance_py(p11, p22):
                for i in range(3):
                    r[i] = crossing_point[i]
    half = 0.5 * length
    if (r1[2].real < -half or r1[2].real > half) and (r2[2].real < -half or r2[2].real > half):
        return NO_WRAP, 0.0 + 0.0j
    # the helix from r1 to r2
    axial = r2[2] - r1[2]
    u = np.empty(3, np.complex128)
    w = np.empty(3, np.complex128)
    u[0], u[1], u[2] = r1[0], r1[1], 0.0 * r1[0]
    w[0], w[1], w[2] = r2[0], r2[1], 0.0 * r2[0]
    theta = _atan2_py(u[0] * w[1] - u[1] * w[0], u[0] * w[0] + u[1] * w[1])
    if long_wrap:
        theta = 2.0 * math.pi - theta
    arc = radius * theta
    return status, cmath.sqrt(arc * arc + axial * axial)


def _plane_normal_py(a, b, center, normal):
    """Unit normal of the plane through a, b and center: (a − c)/|a − c| × (b − c)/|b − c|, normalized."""
    u = np.empty(3, np.complex128)
    w = np.empty(3, np.complex128)
    for i in range(3):
        u[i] = a[i] - center[i]
        w[i] = b[i] - center[i]
    _normalize_py(u, u)
    _normalize_py(w, w)
    _cross_py(u, w, normal)
    _normalize_py(normal, normal)


def _sphere_tangents_py(point, n, radius, a, b):
    """The two tangent points on the sphere (centre at the origin) of the lines from `point` in the plane with
    normal n: point + |p| cos β (cos β y ∓ sin β z), y = −p/|p|, z = n × y, sin β = r/|p|."""
    y = np.empty(3, np.complex128)
    z = np.empty(3, np.complex128)
    for i in range(3):
        y[i] = -point[i]
    distance = _normalize_py(y, y)
    _cross_py(n, y, z)
    angle = cmath.asin(radius / distance)
    reach = distance * cmath.cos(angle)
    for i in range(3):
        a[i] = point[i] + reach * (cmath.cos(angle) * y[i] - cmath.sin(angle) * z[i])
        b[i] = point[i] + reach * (cmath.cos(angle) * y[i] + cmath.sin(angle) * z[i])


def _sphere_wrap_py(p1, p2, radius, axis, sign, r1, r2):
    """(status, wrap length) of the segment p1→p2 over the sphere of `radius` at the origin, as OpenSim 4.6's
    WrapSphere::wrapLine: the segment must cross the sphere; the tangent points lie in the plane through p1, p2
    and the centre, chosen as the pair closest in direction (or by the quadrant); the arc r · acos(r̂1·r̂2)
    (OpenSim's far-side arc −r(2π − angle) kept as it is). A segment through the centre, where OpenSim reuses the
    previous state's wrap, is NO_WRAP here."""
    if _length_py(p1).real < radius or _length_py(p2).real < radius:
        return INSIDE_RADIUS, 0.0 + 0.0j
    ri = np.empty(3, np.complex128)
    for i in range(3):
        ri[i] = p1[i] - p2[i]
    a = _dot_py(ri, ri)
    b = 2.0 * _dot_py(p2, ri)
    c = _dot_py(p2, p2) - radius * radius
    disc = b * b - 4.0 * a * c
    if disc.real < 0.0:
        return NO_WRAP, 0.0 + 0.0j
    l1 = (-b + cmath.sqrt(disc)) / (2.0 * a)
    l2 = (-b - cmath.sqrt(disc)) / (2.0 * a)
    if not (0.0 < l1.real < 1.0) or not (0.0 < l2.real < 1.0) or l1.real < l2.real:
        return NO_WRAP, 0.0 + 0.0j
    p1p2 = np.empty(3, np.complex128)
    np2 = np.empty(3, np.complex128)
    normal = np.empty(3, np.complex128)
    _normalize_py(ri, p1p2)
    _normalize_py(p2, np2)
    _cross_py(p1p2, np2, normal)
    if _length_py(normal).real < 1e-5:
        return NO_WRAP, 0.0 + 0.0j
    _normalize_py(normal, normal)
    r1a = np.empty(3, np.complex128)
    r1b = np.empty(3, np.complex128)
    r2a = np.empty(3, np.complex128)
    r2b = np.empty(3, np.complex128)
    _sphere_tangents_py(p1, normal, radius, r1a, r1b)
    _sphere_tangents_py(p2, normal, radius, r2a, r2b)
    unit = np.empty((4, 3), np.complex128)
    _normalize_py(r1a, unit[0])
    _normalize_py(r1b, unit[1])
    _normalize_py(r2a, unit[2])
    _normalize_py(r2b, unit[3])
    j1 = _dot_py(unit[0], unit[2]).real
    j2 = _dot_py(unit[0], unit[3]).real
    j3 = _dot_py(unit[1], unit[2]).real
    j4 = _dot_py(unit[1], unit[3]).real
    first_a = (j1 > j2 and j1 > j3 and j1 > j4) or (not (j1 > j2 and j1 > j3 and j1 > j4) and j2 > j3 and j2 > j4)
    second_a = (j1 > j2 and j1 > j3 and j1 > j4) or (not (j1 > j2 and j1 > j3 and j1 > j4)
                                                     and not (j2 > j3 and j2 > j4) and j3 > j4)
    status = WRAPPED
    far_side = False
    if sign != 0:
        if _sign_py(p1[axis]) == sign or _sign_py(p2[axis]) == sign:
            foot = np.empty(3, np.complex128)
            origin = np.zeros(3, np.complex128)
            t = -_closest_on_line_py(origin, p1, p1p2, foot)   # p1p2 points from p2 to p1
            if _dot_py(foot, foot).real < radius * radius and 0.0 < t.real < 1.0:
                status = MANDATORY_WRAP
            elif _sign_py(p1[axis]) != _sign_py(p2[axis]) and _sign_py(foot[axis]) != sign:
                status = WRAPPED
            else:
                return NO_WRAP, 0.0 + 0.0j
        if _sign_py(p1[axis]) != sign or _sign_py(p2[axis]) != sign:
            toward = np.empty(3, np.complex128)
            for i in range(3):
                toward[i] = -p1[i] - p2[i]
            _normalize_py(toward, toward)
            first_a = _dot_py(unit[0], toward).real > _dot_py(unit[1], toward).real
            second_a = _dot_py(unit[2], toward).real > _dot_py(unit[3], toward).real
            for i in range(3):
                r1[i] = r1a[i] if first_a else r1b[i]
                r2[i] = r2a[i] if second_a else r2b[i]
                toward[i] = (r1[i] - p1[i]) + (r2[i] - p2[i])
            _normalize_py(toward, toward)
            if toward[axis].real * sign < 0.0:   # the other pair
                first_a = not first_a
                second_a = not second_a
            along = 0.0 + 0.0j
            for i in range(3):
                r = r1a[i] if first_a else r1b[i]
                s = r2a[i] if second_a else r2b[i]
                along += ((r - p1[i]) + (s - p2[i])) * (r + s)
            far_side = along.real < 0.0
    for i in range(3):
        r1[i] = r1a[i] if first_a else r1b[i]
        r2[i] = r2a[i] if second_a else r2b[i]
    n1 = np.empty(3, np.complex128)
    n2 = np.empty(3, np.complex128)
    _normalize_py(r1, n1)
    _normalize_py(r2, n2)
    angle = _acos_py(_dot_py(n1, n2))
    if far_side:
        angle = -(2.0 * math.pi - angle)
    return status, radius * angle


def _length_py(v):
    return cmath.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


def _angle_cosine_py(a, a_foot, b, b_foot):
    """cos of the angle between a − a_foot and b − b_foot."""
    dot = 0.0 + 0.0j
    na = 0.0 + 0.0j
    nb = 0.0 + 0.0j
    for i in range(3):
        x = a[i] - a_foot[i]
        y = b[i] - b_foot[i]
        dot += x * y
        na += x * x
        nb += y * y
    return dot / (cmath.sqrt(na) * cmath.sqrt(nb))


def _squared_distance_py(a, b):
    return ((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2 + (a[2] - b[2]) ** 2).real


def wrap_bindings() -> dict:
    """The kernels the wrap kernels call (for `core.jit.compiled`'s bind), each compiled once as a function of its
    own (leaves first): inlining them at every call site multiplies the compile time."""
    leaves = {"_dot_py": _dot_py, "_cross_py": _cross_py, "_normalize_py": _normalize_py, "_sign_py": _sign_py,
              "_det3_py": _det3_py, "_distance_squared_to_z_axis_py": _distance_squared_to_z_axis_py,
              "_atan2_py": _atan2_py, "_acos_py": _acos_py, "_squared_distance_py": _squared_distance_py,
              "_length_py": _length_py, "_angle_cosine_py": _angle_cosine_py}
    leaves = {name: jit.compiled(kernel) or kernel for name, kernel in leaves.items()}
    middle = {"_closest_on_line_py": _closest_on_line_py, "_intersect_lines_py": _intersect_lines_py,
              "_intersect_segment_plane_py": _intersect_segment_plane_py, "_tangents_py": _tangents_py,
              "_sphere_tangents_py": _sphere_tangents_py, "_plane_normal_py": _plane_normal_py}
    return {**leaves, **{name: jit.compiled(kernel, bind=leaves) or kernel for name, kernel in middle.items()}}


cylinder_wrap = jit.lazy(_cylinder_wrap_py, bind=wrap_bindings)
sphere_wrap = jit.lazy(_sphere_wrap_py, bind=wrap_bindings)

__all__ = ["NO_WRAP", "INSIDE_RADIUS", "WRAPPED", "MANDATORY_WRAP", "SURFACE_CODES", "EVALUATED", "cylinder_wrap",
           "sphere_wrap"]
