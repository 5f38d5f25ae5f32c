"""Wrapping surfaces: OpenSim's wrap of one straight path segment over a surface, in the surface's frame.

`torus_wrap_py` follows OpenSim 4.6's WrapTorus::wrapLine (the closest point of the line to the centre circle
by OpenSim's lmdif_C, ported for one unknown in `_circle_search_py`, then a cylinder there).
`ellipsoid_wrap_py` follows OpenSim 4.6's WrapEllipsoid::wrapLine (the wrapping plane through c1 from the
"Frans"/fan/hybrid techniques, calcTangentPoint's iteration, CalcDistanceOnEllipsoid's 1-mm polyline; see its
docstring) and `sphere_wrap_py` WrapSphere::wrapLine. `cylinder_wrap_py(p1, p2, radius, length, axis, sign,
single, r1, r2)` follows OpenSim 4.6's WrapCylinder::wrapLine; on a path with several wraps (`single` False) it
also slides the tangent points as _make_spiral_path does (`_adjust_spiral_py`). For a single wrap:
the 2-D tangent points in the plane across the cylinder axis (z), the choice among the four (by the quadrant
`axis`/`sign`, sign 0 = all sides), their axial placement where the lines through them meet the plane through
p1, p2 and the apex, and the helical arc between them, √((r θ)² + Δz²). Status: NO_WRAP, INSIDE_RADIUS (an end
inside the cylinder), WRAPPED (wraps, but other segments may wrap with a smaller length change) or
MANDATORY_WRAP (the segment crosses the cylinder).

Every quantity is complex: the imaginary part carries the tangent of a forward-mode derivative along one
direction of motion (`path`: one pass per direction), scaled by h = 1e-30 so that products of two tangents fall
below round-off — Im(l)/h is dl/ds exact to round-off, no truncation error (the complex step of Squire & Trapp
1998). Branches are decided on real parts; the torus's closest point on its centre circle, found by OpenSim's
iteration, is differentiated through that iteration (its iterate, not the stationary point, sets the wrap).
Lengths in m.
"""
from __future__ import annotations

import cmath
import math

import numpy as np

from biobullet.core import jit

KERNEL_ERROR_MODEL = "numpy"   # one error model wherever reached (the stage's, by address: core.jit._error_model)

NO_WRAP, INSIDE_RADIUS, WRAPPED, MANDATORY_WRAP = 0, 1, 2, 3
#: OpenSim's "wrapped" with no tangent points (WrapTorus where its cylinder does not wrap): never inserted, but
#: not NO_WRAP for applyWrapObjects' order swap
EMPTY_WRAP = 4
CYLINDER, SPHERE, ELLIPSOID, TORUS = 0, 1, 2, 3
SURFACE_CODES = {"cylinder": CYLINDER, "sphere": SPHERE, "ellipsoid": ELLIPSOID, "torus": TORUS}
EPS = 2.220446049250313e-16
LINE_EPSILON = 1e-5       # OpenSim's WrapMath LINE_EPSILON
ROUNDOFF = 2e-13          # OpenSim's ROUNDOFF_ERROR (SimmMacros.h)
COMPLEX_STEP = 1e-30
TANGENCY_THRESHOLD = 0.1 * math.pi / 180.0   # rad: OpenSim's WrapCylinder tangency test on multi-wrap paths
SPIRAL_ITERATIONS = 100   # OpenSim's MAX_ITERATIONS of the tangent-point adjustment
SPIRAL_CHORD = 0.002      # m: OpenSim's helix chord on multi-wrap paths
# OpenSim's lmdif_C (OpenSim/Common/Lmdif.cpp) differs from MINPACK here: a constant forward-difference step,
# its own machine constants, an initial step bound of `factor` whenever |factor·|diag·x|| <= 1e-4, and the
# Jacobian's evaluations not counted against maxfev
LMDIF_DIFFERENCE_STEP = 1e-5
LMDIF_MACHEP = 1.2e-16
LMDIF_DWARF = 1.0e-38
CIRCLE_TOLERANCE = 1e-4   # WrapTorus::findClosestPoint's lmdif ftol and xtol
CIRCLE_STEP_BOUND = 0.2   # its lmdif step factor
CIRCLE_EVALUATIONS = 500  # its lmdif maxfev
TORUS_CYLINDER_LENGTH = 10000.0   # m: WrapTorus's CYL_LENGTH


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
    if magnitude2.real == 0.0:   # a zero `line` (OpenSim: NaN, unused by its callers)
        return 0.0 + 0.0j
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


def _middle_across_axis_py(p1, p2, span):
    """m_h of `_cylinder_apex_py` (the middle across the axis) as s l + δ n, for ends whose projections across the
    axis are `span` > 0 apart; (m_x, m_y)."""
    lx = (p2[0] - p1[0]) / span
    ly = (p2[1] - p1[1]) / span
    offset = (p1[1] * p2[0] - p1[0] * p2[1]) / span   # δ = p1_h · n, n = (−l_y, l_x)
    a1 = p1[0] * lx + p1[1] * ly
    a2 = p2[0] * lx + p2[1] * ly
    if a1.real < 0.0 < a2.real:   # ρ = |a| (1 + e), e = √(1 + δ²/a²) − 1 written without cancellation
        q1 = offset * offset / (a1 * a1)
        q2 = offset * offset / (a2 * a2)
        e1 = q1 / (cmath.sqrt(1.0 + q1) + 1.0)
        e2 = q2 / (cmath.sqrt(1.0 + q2) + 1.0)
        along = -a1 * a2 * (e1 - e2) / (-a1 * (1.0 + e1) + a2 * (1.0 + e2))
    else:
        rho1 = cmath.sqrt(a1 * a1 + offset * offset)
        rho2 = cmath.sqrt(a2 * a2 + offset * offset)
        along = (a1 * rho2 + a2 * rho1) / (rho1 + rho2)
    return along * lx - offset * ly, along * ly + offset * lx


def _cylinder_apex_py(p1, p2, radius, t, far_side, apex):
    """OpenSim's apex of the cylinder wrap (the surface's frame, axis z): the middle m = p1 + t (p2 − p1)
    (t = ρ1/(ρ1 + ρ2), ρ the ends' distances from the axis), its foot on the axis, the plane through p1, p2 and
    that foot, and of the two points of the cylinder on the horizontal line across that plane the one nearer m
    (the farther with `far_side`). Written out, that point is the foot + r m_h/|m_h| (m_h: m across the axis; −r
    with `far_side`), because z × ((p1 − foot) × (p2 − foot)) = (z2 − z1) m_h. Evaluated so, with m_h = s l + δ n
    (`_middle_across_axis_py`: l, n the unit vector along the ends' projection across the axis and its normal,
    δ the projection's distance from the axis, s = (a1 ρ2 + a2 ρ1)/(ρ1 + ρ2) with a the ends' coordinates
    along l) without cancellation: where the path's line passes the axis (a wrap of quadrant "all" switching
    sides) OpenSim's cross product of nearly opposite vectors loses the apex's direction to round-off, and the
    length's derivative (the moment arm) with it. OpenSim's degenerate case (z1 = z2 or m_h = 0: the apex is the
    foot) is kept."""
    apex[0] = 0.0 * p1[0]
    apex[1] = 0.0 * p1[1]
    apex[2] = p1[2] + t * (p2[2] - p1[2])
    if p1[2].real == p2[2].real:
        return
    dx = p2[0] - p1[0]
    dy = p2[1] - p1[1]
    span = cmath.sqrt(dx * dx + dy * dy)
    if span.real < EPS:   # both ends above one point across the axis: nothing cancels
        mx = p1[0] + t * dx
        my = p1[1] + t * dy
    else:
        mx, my = _middle_across_axis_py(p1, p2, span)
    size = cmath.sqrt(mx * mx + my * my)
    if size.real == 0.0:
        return
    scale = -radius / size if far_side else radius / size
    apex[0] = scale * mx
    apex[1] = scale * my


def cylinder_wrap_py(p1, p2, radius, length, axis, sign, single, r1, r2):
    """(status, wrap length) of the segment p1→p2 over the cylinder (module docstring); r1, r2 receive the
    tangent points (complex arrays of 3; the surface's frame). `single`: the path has one wrap; otherwise
    OpenSim slides the tangent points axially until the straight parts meet the helix within 0.1°."""
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
    apex = np.empty(3, np.complex128)
    _cylinder_apex_py(p1, p2, radius, t, far_side, apex)
    normal = np.empty(3, np.complex128)
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
    if not single:
        _adjust_spiral_py(p1, p2, radius, long_wrap, r1, r2)
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


def _spiral_point_py(r, angle, rise, out):
    """OpenSim 4.6's CalcSpiralWrapPoint: r turned by `angle` about the cylinder axis (z), raised by `rise`."""
    c = cmath.cos(angle)
    s = cmath.sin(angle)
    out[0] = c * r[0] - s * r[1]
    out[1] = s * r[0] + c * r[1]
    out[2] = r[2] + rise


def _adjust_tangent_py(end, r, wrap_point):
    """OpenSim's _adjust_tangent_point: when the line end→r and the first helix chord r→wrap_point meet the axis
    (z) at angles differing by more than 0.1°, slide r 1.5 times toward where the line end→wrap_point crosses
    r's generator; True when r moved."""
    to_r = np.empty(3, np.complex128)
    to_wrap = np.empty(3, np.complex128)
    for i in range(3):
        to_r[i] = r[i] - end[i]
        to_wrap[i] = wrap_point[i] - r[i]
    _normalize_py(to_r, to_r)
    _normalize_py(to_wrap, to_wrap)
    if abs((_acos_py(to_r[2]) - _acos_py(to_wrap[2])).real) <= TANGENCY_THRESHOLD:
        return False
    direction = np.zeros(3, np.complex128)
    direction[2] = 1.0
    end_foot = np.empty(3, np.complex128)
    wrap_foot = np.empty(3, np.complex128)
    _closest_on_line_py(end, r, direction, end_foot)
    _closest_on_line_py(wrap_point, r, direction, wrap_foot)
    near = np.empty(3, np.complex128)
    crossing = np.empty(3, np.complex128)
    for i in range(3):
        crossing[i] = r[i]
    _intersect_lines_py(end, wrap_point, end_foot, wrap_foot, near, crossing)
    for i in range(3):
        r[i] += 1.5 * (crossing[i] - r[i])
    return True


def _adjust_spiral_py(p1, p2, radius, long_wrap, r1, r2):
    """OpenSim 4.6's _make_spiral_path on a path with several wraps: while the helix from r1 to r2 has at least
    two 2-mm chords, adjust r1 (`_adjust_tangent_py`) against the helix point a chord after it, then r2 against
    the point a chord before it — that point turned from the already adjusted r1, as OpenSim's lambda reads r1
    by reference — at most 100 times."""
    point = np.empty(3, np.complex128)
    sense = -1.0 if long_wrap else 1.0
    for _ in range(SPIRAL_ITERATIONS):
        rise = r2[2] - r1[2]
        theta = _atan2_py(r1[0] * r2[1] - r1[1] * r2[0], r1[0] * r2[0] + r1[1] * r2[1])
        if long_wrap:
            theta = 2.0 * math.pi - theta
        helix = cmath.sqrt((radius * theta) ** 2 + rise * rise)
        chords = int(helix.real / SPIRAL_CHORD)
        if chords < 2:
            return
        t = 1.0 / chords
        _spiral_point_py(r1, sense * t * theta, t * rise, point)
        moved1 = _adjust_tangent_py(p1, r1, point)
        _spiral_point_py(r1, sense * (1.0 - t) * theta, (1.0 - t) * rise, point)
        moved2 = _adjust_tangent_py(p2, r2, point)
        if not (moved1 or moved2):
            return


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


def sphere_wrap_py(p1, p2, radius, axis, sign, r1, r2):
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


# ------------------------------------------------------------------------------------------------ ellipsoid
#: OpenSim 4.6's WrapEllipsoid constants (WrapEllipsoid.cpp)
ELLIPSOID_TINY = 1e-8         # calcTangentPoint's squared-residual tolerance (normalized units)
MU_BLEND_MIN = 0.7073         # below: the fan technique alone
MU_BLEND_MAX = 0.9            # above: the "Frans" technique alone
FAN_SAMPLES = 300
SV_BOUNDARY_BLEND = 0.3
ELLIPSOID_SEGMENT = 0.001     # m: the surface path's polyline segment (CalcDistanceOnEllipsoid)
ELLIPSOID_MAX_SEGMENTS = 499
HYBRID, MIDPOINT, AXIAL = 0, 1, 2
WRAP_METHODS = {"hybrid": HYBRID, "midpoint": MIDPOINT, "axial": AXIAL}


def _fabs_py(x):
    """|x| continued analytically (x or −x by the sign of the real part), for the complex step."""
    return x if x.real >= 0.0 else -x


def _ellipse_closest_py(a, b, u, v, out, i, j):
    """OpenSim's closestPointToEllipse (Eberly, Graphics Gems IV): the point (out[i], out[j]) of the ellipse
    (x/a)² + (y/b)² = 1 closest to (u, v), with OpenSim's special cases near the axes."""
    a2 = a * a
    b2 = b * b
    a2u2 = a2 * u * u
    b2v2 = b2 * v * v
    near_x = abs(u.real) <= ROUNDOFF
    near_y = abs(v.real) <= ROUNDOFF
    if near_x and near_y:
        if a.real < b.real:
            out[i] = -a if u.real < 0.0 else a
            out[j] = v
        else:
            out[i] = u
            out[j] = -b if v.real < 0.0 else b
        return
    if near_x:
        if a.real >= b.real or abs(v.real) >= (b - a2 / b).real:
            out[i] = u
            out[j] = b if v.real >= 0.0 else -b
        else:
            y = b2 * v / (b2 - a2)
            ydb = y / b
            out[j] = y
            out[i] = a * cmath.sqrt(_fabs_py(1.0 - ydb * ydb))
        return
    if near_y:
        if b.real >= a.real or abs(u.real) >= (a - b2 / a).real:
            out[i] = a if u.real >= 0.0 else -a
            out[j] = v
        else:
            x = a2 * u / (a2 - b2)
            xda = x / a
            out[i] = x
            out[j] = b * cmath.sqrt(_fabs_py(1.0 - xda * xda))
        return
    t = 0.0 + 0.0j
    if ((u / a) ** 2 + (v / b) ** 2).real >= 1.0:
        t = (a if a.real >= b.real else b) * cmath.sqrt(u * u + v * v)
    p = t + a2
    q = t + b2
    for _ in range(64):
        p = t + a2
        q = t + b2
        f = p * p * q * q - a2u2 * q * q - b2v2 * p * p
        if abs(f.real) < 1e-9:
            break
        t -= f / (2.0 * (p * q * (p + q) - a2u2 * q - b2v2 * p))
    out[i] = a2 * u / p
    out[j] = b2 * v / q


def _ellipsoid_closest_py(a, dimensions, point, out, special_axis):
    """OpenSim's WrapEllipsoid::findClosestPoint: the point `out` of the ellipsoid with semi-axes `a` closest to
    `point`; near a coordinate plane (or on `special_axis` ≥ 0) the 2-D ellipse of that plane's cross-section;
    `out` is left as it was when the 3-D Newton iteration does not converge in 64 steps (as OpenSim's)."""
    u, v, w = point[0], point[1], point[2]
    if special_axis < 0:
        smallest = math.inf
        for i in range(3):
            if abs(point[i].real) <= ROUNDOFF:
                radii = 0.0
                for j in range(3):
                    if j != i:
                        radii += dimensions[j]
                if smallest > radii:
                    special_axis = i
                    smallest = radii
    if special_axis == 0:
        out[0] = u
        _ellipse_closest_py(a[1], a[2], v, w, out, np.int64(1), np.int64(2))
        return
    if special_axis == 1:
        out[1] = v
        _ellipse_closest_py(a[2], a[0], w, u, out, np.int64(2), np.int64(0))
        return
    if special_axis == 2:
        out[2] = w
        _ellipse_closest_py(a[0], a[1], u, v, out, np.int64(0), np.int64(1))
        return
    # Newton on the real parts (OpenSim's iterates), then the tangent of the root by the implicit function
    # theorem on f(t) = 0: Im t = −Im f(t) / f′(t) (`_closest_residual_py`)
    a2, b2, c2 = a[0] * a[0], a[1] * a[1], a[2] * a[2]
    a2u2, b2v2, c2w2 = a2 * u * u, b2 * v * v, c2 * w * w
    t = 0.0
    if ((u / a[0]) ** 2 + (v / a[1]) ** 2 + (w / a[2]) ** 2).real >= 1.0:
        largest = a[0].real
        if a[1].real > largest:
            largest = a[1].real
        if a[2].real > largest:
            largest = a[2].real
        t = largest * math.sqrt((u * u + v * v + w * w).real)
    for _ in range(64):
        f, slope = _closest_residual_py(t, a2.real, b2.real, c2.real, a2u2.real, b2v2.real, c2w2.real)
        if abs(f) < 1e-9:
            f_tangent, _ = _closest_residual_py(t + 0.0j, a2, b2, c2, a2u2, b2v2, c2w2)
            root = t + 1j * (-f_tangent.imag / slope)
            out[0] = a2 * u / (root + a2)
            out[1] = b2 * v / (root + b2)
            out[2] = c2 * w / (root + c2)
            return
        t -= f / slope


def _closest_residual_py(t, a2, b2, c2, a2u2, b2v2, c2w2):
    """(f, df/dt) of WrapEllipsoid::findClosestPoint's sextic in the Lagrange multiplier t (f = 0 at the closest
    point): real or tangent-carrying arguments alike."""
    p = t + a2
    q = t + b2
    r = t + c2
    f = p * p * q * q * r * r - a2u2 * q * q * r * r - b2v2 * p * p * r * r - c2w2 * p * p * q * q
    pq = p * q
    pr = p * r
    qr = q * r
    return f, 2.0 * (p * q * r * (qr + pr + pq) - a2u2 * qr * (q + r) - b2v2 * pr * (p + r) - c2w2 * pq * (p + q))


def _invert4_py(matrix, inverse):
    """Gauss–Jordan inverse of a 4 × 4 matrix (partial pivoting on real parts), for calcTangentPoint."""
    work = np.empty((4, 8), np.complex128)
    for i in range(4):
        for j in range(4):
            work[i, j] = matrix[i, j]
            work[i, j + 4] = 1.0 if i == j else 0.0
    for column in range(4):
        pivot = column
        for row in range(column + 1, 4):
            if abs(work[row, column].real) > abs(work[pivot, column].real):
                pivot = row
        if pivot != column:
            for j in range(8):
                work[column, j], work[pivot, j] = work[pivot, j], work[column, j]
        scale = work[column, column]
        if scale.real == 0.0:
            scale = EPS + 0.0j
        for j in range(8):
            work[column, j] = work[column, j] / scale
        for row in range(4):
            if row != column:
                factor = work[row, column]
                for j in range(8):
                    work[row, j] -= factor * work[column, j]
    for i in range(4):
        for j in range(4):
            inverse[i, j] = work[i, j + 4]


def _tangent_residuals_py(r1, p1, a, vs, vs4, d1, ee):
    """calcTangentPoint's residuals (in the plane, on the ellipsoid, tangent plane through r1 and p1); returns
    their sum of squares."""
    ee[0] = vs[0] * r1[0] + vs[1] * r1[1] + vs[2] * r1[2] + vs4
    ee[1] = -1.0 + (r1[0] / a[0]) ** 2 + (r1[1] / a[1]) ** 2 + (r1[2] / a[2]) ** 2
    ee[2] = 0.0 + 0.0j
    ee[3] = 0.0 + 0.0j
    for i in range(3):
        normal = 2.0 * r1[i] / (a[i] * a[i])
        ee[2] += normal * r1[i]
        ee[3] += normal * p1[i]
    ee[2] += d1
    ee[3] += d1
    return ee[0] * ee[0] + ee[1] * ee[1] + ee[2] * ee[2] + ee[3] * ee[3]


def _ellipsoid_tangent_py(pe, r1, p1, a, vs, vs4):
    """OpenSim's WrapEllipsoid::calcTangentPoint: move r1 (in place) until it lies on the ellipsoid, in the plane
    (vs, vs4), and the line from p1 touches the ellipsoid there (damped Gauss–Newton with OpenSim's step
    control, to a squared residual of 1e-8 in normalized units or 50 iterations). Centre at the origin."""
    if abs(pe.real) < 0.0001:
        for i in range(3):
            r1[i] = p1[i]
        return
    ee = np.empty(4, np.complex128)
    v = np.empty(4, np.complex128)
    vt = np.empty(4, np.complex128)
    diag = np.empty(4, np.complex128)
    dedth = np.zeros((4, 4), np.complex128)
    dedth2 = np.empty((4, 4), np.complex128)
    inverse = np.empty((4, 4), np.complex128)
    d1 = 0.0 + 0.0j
    for i in range(3):
        d1 -= 2.0 * r1[i] / (a[i] * a[i]) * r1[i]
    ssq = _tangent_residuals_py(r1, p1, a, vs, vs4, d1, ee)
    ssqo = ssq
    alpha = 0.01
    p1m = np.empty(3, np.complex128)
    p1r1 = np.empty(3, np.complex128)
    nit = 0
    while ssq.real > ELLIPSOID_TINY and nit < 50:
        nit += 1
        for i in range(3):
            dedth[i, 0] = vs[i]
            dedth[i, 1] = 2.0 * r1[i] / (a[i] * a[i])
            dedth[i, 2] = 2.0 * (2.0 * r1[i]) / (a[i] * a[i])
            dedth[i, 3] = 2.0 * p1[i] / (a[i] * a[i])
        dedth[3, 0] = 0.0
        dedth[3, 1] = 0.0
        dedth[3, 2] = 1.0
        dedth[3, 3] = 1.0
        for i in range(3):
            p1r1[i] = p1[i] - r1[i]
            p1m[i] = p1[i]
        _normalize_py(p1r1, p1r1)
        _normalize_py(p1m, p1m)
        pcos = _dot_py(p1r1, p1m)
        dd = 1.0 + 0.0j
        if pcos.real > 0.1:
            power = 1.0 + 0.0j
            for _ in range(100):
                power *= pcos
            dd = 1.0 - power
        for i in range(4):
            v[i] = 0.0
            for j in range(4):
                v[i] -= dedth[i, j] * ee[j]
        for i in range(4):
            for j in range(4):
                dedth2[i, j] = 0.0
                for k in range(4):
                    dedth2[i, j] += dedth[i, k] * dedth[j, k]
        for i in range(4):
            diag[i] = dedth2[i, i]
        nit2 = 0
        while ssq.real >= ssqo.real and nit2 < 1000:
            for i in range(4):
                dedth2[i, i] = diag[i] * (1.0 + alpha)
            _invert4_py(dedth2, inverse)
            for i in range(4):
                vt[i] = 0.0
                for j in range(4):
                    vt[i] += dd * inverse[i, j] * v[j] / 16.0
            for i in range(3):
                r1[i] += vt[i]
            d1 += vt[3]
            ssqo = ssq
            ssq = _tangent_residuals_py(r1, p1, a, vs, vs4, d1, ee)
            alpha *= 4.0
            nit2 += 1
        alpha /= 8.0
        fakt = 0.5
        nit2 = 0
        while ssq.real <= ssqo.real and nit2 < 1000:
            fakt *= 2.0
            for i in range(3):
                r1[i] += vt[i] * fakt
            d1 += vt[3] * fakt
            ssqo = ssq
            ssq = _tangent_residuals_py(r1, p1, a, vs, vs4, d1, ee)
            nit2 += 1
        for i in range(3):
            r1[i] -= vt[i] * fakt
        d1 -= vt[3] * fakt
        ssq = _tangent_residuals_py(r1, p1, a, vs, vs4, d1, ee)
        ssqo = ssq


def _ellipsoid_arc_py(r1, r2, a, vs, vs4, far_side, factor, ends):
    """OpenSim's CalcDistanceOnEllipsoid: the surface path from r1 to r2 in the plane (vs, vs4) as a polyline of
    ⌊|r1 − r2| / 1 mm⌋ segments (at most 499; one below 1 mm), its points where rays from the plane's point a0
    meet the ellipsoid; returns (its length in normalized units, number of points); ends[0], ends[1] receive the
    second and the second-to-last point (the wrong-way test)."""
    distance = cmath.sqrt((r1[0] - r2[0]) ** 2 + (r1[1] - r2[1]) ** 2 + (r1[2] - r2[2]) ** 2)
    physical = distance / factor
    for i in range(3):
        ends[0, i] = r2[i]
        ends[1, i] = r1[i]
    if physical.real < ELLIPSOID_SEGMENT:
        return distance, 2
    segments = min(int(physical.real / ELLIPSOID_SEGMENT), ELLIPSOID_MAX_SEGMENTS)
    largest = 0
    for i in range(1, 3):
        if abs(vs[i].real) > abs(vs[largest].real):
            largest = i
    mu = -vs4 / vs[largest]
    a0 = np.zeros(3, np.complex128)
    a0[largest] = mu
    ar1 = np.empty(3, np.complex128)
    ar2 = np.empty(3, np.complex128)
    for i in range(3):
        ar1[i] = r1[i] - a0[i]
        ar2[i] = r2[i] - a0[i]
    _normalize_py(ar1, ar1)
    _normalize_py(ar2, ar2)
    phi0 = _acos_py(_dot_py(ar1, ar2))
    dphi = -(2.0 * math.pi - phi0) / segments if far_side else phi0 / segments
    vsz = np.empty(3, np.complex128)
    vsy = np.empty(3, np.complex128)
    _cross_py(ar1, ar2, vsz)
    _normalize_py(vsz, vsz)
    _cross_py(vsz, ar1, vsy)
    previous = np.empty(3, np.complex128)
    point = np.empty(3, np.complex128)
    ray = np.empty(3, np.complex128)
    for i in range(3):
        previous[i] = r1[i]
    length = 0.0 + 0.0j
    for k in range(segments - 1):
        phi = (k + 1) * dphi
        c = cmath.cos(phi)
        s = cmath.sin(phi)
        aa = 0.0 + 0.0j
        bb = 0.0 + 0.0j
        cc = -1.0 + 0.0j
        for i in range(3):
            ray[i] = c * ar1[i] + s * vsy[i]
            f1 = ray[i] / a[i]
            f2 = a0[i] / a[i]
            aa += f1 * f1
            bb += 2.0 * f1 * f2
            cc += f2 * f2
        mu3 = (-bb + cmath.sqrt(bb * bb - 4.0 * aa * cc)) / (2.0 * aa)
        for i in range(3):
            point[i] = a0[i] + mu3 * ray[i]
        length += cmath.sqrt((point[0] - previous[0]) ** 2 + (point[1] - previous[1]) ** 2
                             + (point[2] - previous[2]) ** 2)
        if k == 0:
            for i in range(3):
                ends[0, i] = point[i]
        for i in range(3):
            ends[1, i] = point[i]
            previous[i] = point[i]
    length += cmath.sqrt((r2[0] - previous[0]) ** 2 + (r2[1] - previous[1]) ** 2 + (r2[2] - previous[2]) ** 2)
    return length, segments + 1


def ellipsoid_wrap_py(p1_in, p2_in, dimensions, axis, sign, method, r1_out, r2_out):
    """(status, wrap length) of the segment p1→p2 over the ellipsoid with semi-axes `dimensions` (m) centred at
    the origin, as OpenSim 4.6's WrapEllipsoid::wrapLine: work in units scaled by 3/(a+b+c); the segment must
    cross the ellipsoid; the wrapping plane through p1, p2 and a surface point c1 found by the "Frans" technique
    (closest point where the segment crosses the plane of the axis most parallel to it), the "fan" technique
    (mean direction to the surface over 298 samples along the chord) or their blend (`method` HYBRID), flipped
    to the active quadrant; tangent points by calcTangentPoint; the arc as CalcDistanceOnEllipsoid's polyline,
    the far side when the near one wraps the wrong way (a constrained quadrant)."""
    factor = 3.0 / (dimensions[0] + dimensions[1] + dimensions[2])
    p1 = np.empty(3, np.complex128)
    p2 = np.empty(3, np.complex128)
    a = np.empty(3, np.complex128)
    for i in range(3):
        p1[i] = p1_in[i] * factor
        p2[i] = p2_in[i] * factor
        a[i] = dimensions[i] * factor
    p1e = -1.0 + (p1[0] / a[0]) ** 2 + (p1[1] / a[1]) ** 2 + (p1[2] / a[2]) ** 2
    p2e = -1.0 + (p2[0] / a[0]) ** 2 + (p2[1] / a[1]) ** 2 + (p2[2] / a[2]) ** 2
    if p1e.real < -0.0001 or p2e.real < -0.0001:
        return INSIDE_RADIUS, 0.0 + 0.0j
    p1p2 = np.empty(3, np.complex128)
    p1m = np.empty(3, np.complex128)
    p2m = np.empty(3, np.complex128)
    for i in range(3):
        p1p2[i] = p1[i] - p2[i]
        p1m[i] = p1[i]
        p2m[i] = p2[i]
    _normalize_py(p1m, p1m)
    _normalize_py(p2m, p2m)
    if abs((_dot_py(p1m, p2m) - 1.0).real) < 0.0001:
        return NO_WRAP, 0.0 + 0.0j
    aa = 0.0 + 0.0j
    bb = 0.0 + 0.0j
    cc = -1.0 + 0.0j
    for i in range(3):
        f1 = p1p2[i] / a[i]
        f2 = p2[i] / a[i]
        aa += f1 * f1
        bb += 2.0 * f1 * f2
        cc += f2 * f2
    disc = bb * bb - 4.0 * aa * cc
    if disc.real < 0.0:
        return NO_WRAP, 0.0 + 0.0j
    l1 = (-bb + cmath.sqrt(disc)) / (2.0 * aa)
    l2 = (-bb - cmath.sqrt(disc)) / (2.0 * aa)
    if not (0.0 < l1.real < 1.0) or not (0.0 < l2.real < 1.0):
        return NO_WRAP, 0.0 + 0.0j
    r1 = np.empty(3, np.complex128)
    r2 = np.empty(3, np.complex128)
    r1r2 = np.empty(3, np.complex128)
    for i in range(3):
        r1[i] = p2[i] + l1 * p1p2[i]
        r2[i] = p2[i] + l2 * p1p2[i]
        r1r2[i] = r2[i] - r1[i]
    # the wrapping plane: c1 by the "Frans" technique, the fan, or their blend
    mu = np.empty(3, np.complex128)
    _normalize_py(p1p2, mu)
    t = np.empty(3, np.complex128)
    t_sv = np.zeros((3, 3), np.complex128)
    t_c1 = np.zeros((3, 3), np.complex128)
    c1 = np.zeros(3, np.complex128)
    sv = np.zeros(3, np.complex128)
    for i in range(3):
        mu[i] = _fabs_py(mu[i])
        if r1r2[i].real == 0.0:   # OpenSim divides by zero here; this axis is then never the most parallel
            t[i] = math.inf
            continue
        t[i] = -r1[i] / r1r2[i]
        for j in range(3):
            t_sv[i, j] = r1[j] + t[i] * r1r2[j]
        _ellipsoid_closest_py(a, dimensions, t_sv[i], t_c1[i], i)
    best = 0
    for i in range(1, 3):
        if mu[i].real > mu[best].real:
            best = i
    fan_weight = -math.inf + 0.0j
    if method == HYBRID or method == AXIAL:
        if method == HYBRID and mu[best].real > MU_BLEND_MIN:
            s = 1.0 + 0.0j
            if t[best].real < 0.0 or t[best].real > 1.0:
                s = 0.0 + 0.0j
            elif t[best].real < SV_BOUNDARY_BLEND:
                s = t[best] / SV_BOUNDARY_BLEND
            elif t[best].real > 1.0 - SV_BOUNDARY_BLEND:
                s = (1.0 - t[best]) / SV_BOUNDARY_BLEND
            if s.real < 1.0:
                mu[best] = MU_BLEND_MIN + s * (mu[best] - MU_BLEND_MIN)
        if method == AXIAL or mu[best].real > MU_BLEND_MIN:
            for i in range(3):
                c1[i] = t_c1[best, i]
                sv[i] = t_sv[best, i]
        if method == HYBRID and mu[best].real < MU_BLEND_MAX:
            v_sum = np.zeros(3, np.complex128)
            blade = np.empty(3, np.complex128)
            for i in range(3):
                t_sv[2, i] = r1[i] + 0.5 * r1r2[i]
            for k in range(1, FAN_SAMPLES - 1):
                tt = k / FAN_SAMPLES
                for j in range(3):
                    t_sv[0, j] = r1[j] + tt * r1r2[j]
                _ellipsoid_closest_py(a, dimensions, t_sv[0], t_c1[0], np.int64(-1))
                for j in range(3):
                    blade[j] = t_c1[0, j] - t_sv[0, j]
                _normalize_py(blade, blade)
                for j in range(3):
                    v_sum[j] += blade[j]
            _normalize_py(v_sum, v_sum)
            for i in range(3):
                t_c1[0, i] = t_sv[2, i] + v_sum[i]
            if mu[best].real <= MU_BLEND_MIN:
                _ellipsoid_closest_py(a, dimensions, t_c1[0], c1, np.int64(-1))
                for i in range(3):
                    sv[i] = t_sv[2, i]
                fan_weight = 1.0 + 0.0j
            else:
                tt = (mu[best] - MU_BLEND_MIN) / (MU_BLEND_MAX - MU_BLEND_MIN)
                _ellipsoid_closest_py(a, dimensions, t_c1[0], t_c1[1], np.int64(-1))
                for i in range(3):
                    t_c1[2, i] = tt * c1[i] + (1.0 - tt) * t_c1[1, i]
                    sv[i] = tt * sv[i] + (1.0 - tt) * t_sv[2, i]
                _ellipsoid_closest_py(a, dimensions, t_c1[2], c1, np.int64(-1))
                fan_weight = 1.0 - tt
    else:
        for i in range(3):
            sv[i] = r1[i] + 0.5 * (r2[i] - r1[i])
        _ellipsoid_closest_py(a, dimensions, sv, c1, np.int64(-1))
    if method != AXIAL or 0.0 < t[best].real < 1.0:
        for i in range(3):
            r1[i] = c1[i]
            r2[i] = c1[i]
    if sign != 0 and _sign_py(c1[axis]) != sign:
        # flip c1 to the active side (OpenSim's fan-weight bisection after the flip is unreachable: its test
        # EQUAL_WITHIN_ERROR(fanWeight, -Infinity) is never true, so the weight stays -inf unless the fan ran)
        original = c1[axis]
        c1[axis] = -c1[axis]
        for i in range(3):
            r1[i] = c1[i]
            r2[i] = c1[i]
        if fan_weight.real > 1.0:
            fan_weight = 1.0 + 0.0j
        if fan_weight.real > 0.0:
            bisection = (original + c1[axis]) / 2.0
            c1[axis] = c1[axis] + fan_weight * (bisection - c1[axis])
            moved = c1.copy()
            _ellipsoid_closest_py(a, dimensions, moved, c1, np.int64(-1))
    p1c1 = np.empty(3, np.complex128)
    vs = np.empty(3, np.complex128)
    for i in range(3):
        p1c1[i] = p1[i] - c1[i]
    _cross_py(p1p2, p1c1, vs)
    _normalize_py(vs, vs)
    vs4 = -_dot_py(vs, c1)
    _ellipsoid_tangent_py(p1e, r1, p1, a, vs, vs4)
    _ellipsoid_tangent_py(p2e, r2, p2, a, vs, vs4)
    ends = np.empty((2, 3), np.complex128)
    length, n_points = _ellipsoid_arc_py(r1, r2, a, vs, vs4, np.bool_(False), factor, ends)
    if sign != 0 and n_points > 2:
        # a wrong-way wrap (the first or last surface segment turns back toward its end) goes round the far side
        r1p1 = np.empty(3, np.complex128)
        r1w1 = np.empty(3, np.complex128)
        r2p2 = np.empty(3, np.complex128)
        r2w2 = np.empty(3, np.complex128)
        for i in range(3):
            r1p1[i] = p1[i] - r1[i]
            r1w1[i] = ends[0, i] - r1[i]
            r2p2[i] = p2[i] - r2[i]
            r2w2[i] = ends[1, i] - r2[i]
        _normalize_py(r1p1, r1p1)
        _normalize_py(r1w1, r1w1)
        _normalize_py(r2p2, r2p2)
        _normalize_py(r2w2, r2w2)
        if _dot_py(r1p1, r1w1).real > 0.0 or _dot_py(r2p2, r2w2).real > 0.0:
            length, n_points = _ellipsoid_arc_py(r1, r2, a, vs, vs4, np.bool_(True), factor, ends)
    for i in range(3):
        r1_out[i] = r1[i] / factor
        r2_out[i] = r2[i] / factor
    return MANDATORY_WRAP, length / factor


# ------------------------------------------------------------------------------------------------ torus
def _circle_residual_py(start, direction, radius, u):
    """(residual, ∂residual/∂u) of OpenSim's WrapTorus::calcCircleResids: d/du of the squared distance from the
    point start + u·direction (unit direction) to the circle of `radius` about z in the plane z = 0."""
    c2 = 2.0 * (start[0] * direction[0] + start[1] * direction[1] + start[2] * direction[2])
    c3 = start[0] * direction[0] + start[1] * direction[1]
    c4 = direction[0] * direction[0] + direction[1] * direction[1]
    c5 = start[0] * start[0] + start[1] * start[1]
    rho = cmath.sqrt(u * u * c4 + 2.0 * c3 * u + c5)
    if rho.real == 0.0:   # on the torus's axis, where every circle point is as near (OpenSim: 0/0)
        return c2 + 2.0 * u, 2.0 + 0.0j
    residual = c2 + 2.0 * u - 2.0 * radius * (2.0 * c4 * u + 2.0 * c3) / rho
    slope = 2.0 - 4.0 * radius * (c4 / rho - (c4 * u + c3) * (c4 * u + c3) / (rho * rho * rho))
    return residual, slope


def _lm_step_py(r, diag, qtb, delta, par):
    """MINPACK's lmpar for one unknown: the Levenberg–Marquardt parameter `par` with |diag·x| within 10 % of
    `delta` (or 0 when the Gauss–Newton step fits) and the step x of (r² + par·diag²) x = r·qtb, the latter by
    qrsolv's Givens rotation; returns (par, x). Complex (the tangent in the imaginary parts, `_fabs_py`), every
    branch decided on real parts."""
    zero = 0.0 + 0.0j
    x = qtb / r if r.real != 0.0 else zero
    dxnorm = _fabs_py(diag * x)
    fp = dxnorm - delta
    if fp.real <= 0.1 * delta.real:
        return zero, x
    parl = zero
    if r.real != 0.0:
        temp = _fabs_py(diag * (diag * x / dxnorm) / r)
        parl = ((fp / delta) / temp) / temp
    gnorm = _fabs_py(r * qtb / diag)
    paru = gnorm / delta
    if paru.real == 0.0:
        paru = LMDIF_DWARF / (delta if delta.real < 0.1 else 0.1 + 0.0j)
    par = parl if par.real < parl.real else par
    par = paru if paru.real < par.real else par
    if par.real == 0.0:
        par = gnorm / dxnorm
    for iteration in range(1, 11):
        if par.real == 0.0:
            par = LMDIF_DWARF + 0.0j if LMDIF_DWARF > 0.001 * paru.real else 0.001 * paru
        damping = cmath.sqrt(par) * diag
        rotated = r
        rhs = qtb
        if damping.real != 0.0:   # qrsolv: one Givens rotation of [r; damping]
            if abs(r.real) < abs(damping.real):
                cotangent = r / damping
                sine = 0.5 / cmath.sqrt(0.25 + 0.25 * cotangent * cotangent)
                cosine = sine * cotangent
            else:
                tangent = damping / r
                cosine = 0.5 / cmath.sqrt(0.25 + 0.25 * tangent * tangent)
                sine = cosine * tangent
            rotated = cosine * r + sine * damping
            rhs = cosine * qtb
        x = rhs / rotated if rotated.real != 0.0 else zero
        dxnorm = _fabs_py(diag * x)
        previous = fp
        fp = dxnorm - delta
        if abs(fp.real) <= 0.1 * delta.real or (parl.real == 0.0 and fp.real <= previous.real < 0.0) \
                or iteration == 10:
            break
        temp = _fabs_py(diag * (diag * x / dxnorm) / rotated)
        correction = ((fp / delta) / temp) / temp
        if fp.real > 0.0 and par.real > parl.real:
            parl = par
        if fp.real < 0.0 and par.real < paru.real:
            paru = par
        par = par + correction if (par + correction).real > parl.real else parl
    return par, x


def _circle_search_py(start, direction, radius):
    """u where the line start + u·direction comes closest to the circle, as WrapTorus::findClosestPoint finds it:
    MINPACK's lmdif as OpenSim's lmdif_C has it (see LMDIF_*) on the one residual `_circle_residual_py` from
    u = 0: forward-difference slope, diag scaling (mode 1), step bound 0.2, ftol = xtol = 1e-4, at most 500
    evaluations. Which stationary point it reaches decides the wrap, and its iterate (not the exact stationary
    point: ftol 1e-4) sets the cylinder, so the tangent is carried through every iteration in the imaginary parts
    (`_fabs_py`; branches and iteration counts on real parts): where the residual's slope nearly vanishes the
    iterate's derivative is not the implicit function theorem's of the stationary point."""
    zero = 0.0 + 0.0j
    x = zero
    fvec = _circle_residual_py(start, direction, radius, x)[0]
    evaluations = 1
    fnorm = _fabs_py(fvec)
    par = zero
    diag = 1.0 + 0.0j
    delta = zero
    xnorm = zero
    first = True
    while True:
        fjac = (_circle_residual_py(start, direction, radius, x + LMDIF_DIFFERENCE_STEP)[0] - fvec) \
            / LMDIF_DIFFERENCE_STEP
        column_norm = _fabs_py(fjac)
        r = -fjac                           # qrfac of the 1 × 1 Jacobian
        qtf = -fvec if fjac.real != 0.0 else fvec
        if first:
            diag = column_norm if column_norm.real != 0.0 else 1.0 + 0.0j
            xnorm = _fabs_py(diag * x)
            delta = CIRCLE_STEP_BOUND * xnorm
            if abs(delta.real) <= 1e-4:
                delta = CIRCLE_STEP_BOUND + 0.0j
        if fnorm.real == 0.0 or column_norm.real == 0.0:   # gnorm = 0 <= gtol
            return x
        diag = column_norm if column_norm.real > diag.real else diag
        while True:
            par, step = _lm_step_py(r, diag, qtf, delta, par)
            step = -step
            trial = x + step
            pnorm = _fabs_py(diag * step)
            if first and pnorm.real < delta.real:
                delta = pnorm
            f_trial = _circle_residual_py(start, direction, radius, trial)[0]
            evaluations += 1
            fnorm_trial = _fabs_py(f_trial)
            actual = -1.0 + 0.0j
            if 0.1 * fnorm_trial.real < fnorm.real:
                actual = 1.0 - (fnorm_trial / fnorm) ** 2
            temp1 = _fabs_py(r * step) / fnorm
            temp2 = cmath.sqrt(par) * pnorm / fnorm
            predicted = temp1 * temp1 + temp2 * temp2 / 0.5
            directional = -(temp1 * temp1 + temp2 * temp2)
            ratio = actual / predicted if predicted.real != 0.0 else zero
            if ratio.real <= 0.25:
                temp = 0.5 + 0.0j if actual.real >= 0.0 else 0.5 * directional / (directional + 0.5 * actual)
                if 0.1 * fnorm_trial.real >= fnorm.real or temp.real < 0.1:
                    temp = 0.1 + 0.0j
                delta = temp * (delta if delta.real < pnorm.real / 0.1 else pnorm / 0.1)
                par = par / temp
            elif par.real == 0.0 or ratio.real >= 0.75:
                delta = pnorm / 0.5
                par = 0.5 * par
            if ratio.real >= 1e-4:
                x = trial
                fvec = f_trial
                xnorm = _fabs_py(diag * x)
                fnorm = fnorm_trial
                first = False
            if abs(actual.real) <= CIRCLE_TOLERANCE and predicted.real <= CIRCLE_TOLERANCE and \
                    0.5 * ratio.real <= 1.0:
                return x
            if delta.real <= CIRCLE_TOLERANCE * xnorm.real or evaluations >= CIRCLE_EVALUATIONS:
                return x
            if abs(actual.real) <= LMDIF_MACHEP and predicted.real <= LMDIF_MACHEP and 0.5 * ratio.real <= 1.0:
                return x
            if delta.real <= LMDIF_MACHEP * xnorm.real:
                return x
            if ratio.real >= 1e-4:
                break


def _circle_point_py(start, end, radius, out):
    """The point of the line start → end nearest the circle (WrapTorus::findClosestPoint's search from `start`,
    complex: the tangent carried through the search's iterations); returns the distance to the circle."""
    direction = np.empty(3, np.complex128)
    for i in range(3):
        direction[i] = end[i] - start[i]
    _normalize_py(direction, direction)
    u = _circle_search_py(start, direction, radius)
    for i in range(3):
        out[i] = start[i] + u * direction[i]
    rho = cmath.sqrt(out[0] * out[0] + out[1] * out[1])
    return cmath.sqrt(out[0] * out[0] + out[1] * out[1] + out[2] * out[2] + radius * radius - 2.0 * radius * rho)


def torus_wrap_py(p1, p2, inner_radius, outer_radius, axis, sign, single, r1, r2):
    """(status, wrap length) of the segment p1→p2 over the torus (centre circle of `outer_radius` about z in
    z = 0, tube of `inner_radius`), as OpenSim 4.6's WrapTorus::wrapLine: the point of the segment's line
    nearest the centre circle (searched from each end, the nearer kept; with a quadrant the one on its side,
    NO_WRAP when neither is), and there a cylinder of the tube's radius and 10 km along the circle's tangent,
    quadrant +x (towards the torus's axis), wrapped as `cylinder_wrap_py`. OpenSim reports a cylinder's wrap
    as WRAPPED, never MANDATORY_WRAP (the segment is chosen by the smallest length change), and a cylinder that
    does not wrap as WRAPPED with no tangent points (EMPTY_WRAP here)."""
    near1 = np.empty(3, np.complex128)
    near2 = np.empty(3, np.complex128)
    distance1 = _circle_point_py(p1, p2, outer_radius, near1)
    distance2 = _circle_point_py(p2, p1, outer_radius, near2)
    if sign != 0:
        side1 = _sign_py(near1[axis]) == sign
        side2 = _sign_py(near2[axis]) == sign
        if side1 and side2:
            first = distance1.real < distance2.real
        elif side1 or side2:
            first = side1
        else:
            return NO_WRAP, 0.0 + 0.0j
    else:
        first = distance1.real < distance2.real
    near = near1 if first else near2
    axial_distance = cmath.sqrt(near[0] * near[0] + near[1] * near[1])
    if axial_distance.real == 0.0:   # the line meets the torus's axis there: no nearest circle point (OpenSim: NaN)
        return NO_WRAP, 0.0 + 0.0j
    scale = outer_radius / axial_distance
    # the cylinder's axes in the torus frame: x from the circle point towards the axis, y = −z, z = x × y
    x_axis = np.empty(3, np.complex128)
    x_axis[0], x_axis[1], x_axis[2] = -near[0] * scale, -near[1] * scale, 0.0 * near[0]
    _normalize_py(x_axis, x_axis)
    rotation = np.zeros((3, 3), np.complex128)
    for i in range(3):
        rotation[0, i] = x_axis[i]
    rotation[1, 2] = -1.0
    _cross_py(x_axis, rotation[1], rotation[2])
    offset = np.empty(3, np.complex128)
    for row in range(3):   # the circle point, −(x_axis), in the cylinder's axes, negated
        offset[row] = -(rotation[row, 0] * near[0] * scale + rotation[row, 1] * near[1] * scale)
    q1 = np.empty(3, np.complex128)
    q2 = np.empty(3, np.complex128)
    for row in range(3):
        q1[row] = offset[row] + _dot_py(rotation[row], p1)
        q2[row] = offset[row] + _dot_py(rotation[row], p2)
    c1 = np.empty(3, np.complex128)
    c2 = np.empty(3, np.complex128)
    status, length = cylinder_wrap_py(q1, q2, inner_radius, TORUS_CYLINDER_LENGTH, np.int64(0), np.int64(1), single,
                                      c1, c2)
    if status != WRAPPED and status != MANDATORY_WRAP:
        return EMPTY_WRAP, 0.0 + 0.0j
    for i in range(3):
        r1[i] = (rotation[0, i] * (c1[0] - offset[0]) + rotation[1, i] * (c1[1] - offset[1])
                 + rotation[2, i] * (c1[2] - offset[2]))
        r2[i] = (rotation[0, i] * (c2[0] - offset[0]) + rotation[1, i] * (c2[1] - offset[1])
                 + rotation[2, i] * (c2[2] - offset[2]))
    return WRAPPED, length



def wrap_bindings() -> dict:
    """The kernels the wrap kernels call (for `core.jit.compiled`'s bind), each compiled once as a function of its
    own, layer by layer (leaves first): inlining them at every call site multiplies the compile time."""
    layers = (
        {"_dot_py": _dot_py, "_cross_py": _cross_py, "_normalize_py": _normalize_py, "_sign_py": _sign_py,
         "_det3_py": _det3_py, "_distance_squared_to_z_axis_py": _distance_squared_to_z_axis_py,
         "_atan2_py": _atan2_py, "_acos_py": _acos_py, "_squared_distance_py": _squared_distance_py,
         "_length_py": _length_py, "_angle_cosine_py": _angle_cosine_py, "_fabs_py": _fabs_py,
         "_invert4_py": _invert4_py, "_spiral_point_py": _spiral_point_py,
         "_tangent_residuals_py": _tangent_residuals_py, "_circle_residual_py": _circle_residual_py,
         "_middle_across_axis_py": _middle_across_axis_py,
         "_closest_residual_py": _closest_residual_py},
        {"_closest_on_line_py": _closest_on_line_py, "_intersect_lines_py": _intersect_lines_py,
         "_intersect_segment_plane_py": _intersect_segment_plane_py, "_tangents_py": _tangents_py,
         "_sphere_tangents_py": _sphere_tangents_py, "_plane_normal_py": _plane_normal_py,
         "_ellipse_closest_py": _ellipse_closest_py, "_ellipsoid_tangent_py": _ellipsoid_tangent_py,
         "_ellipsoid_arc_py": _ellipsoid_arc_py, "_cylinder_apex_py": _cylinder_apex_py, "_lm_step_py": _lm_step_py},
        {"_adjust_tangent_py": _adjust_tangent_py, "_ellipsoid_closest_py": _ellipsoid_closest_py},
        {"_adjust_spiral_py": _adjust_spiral_py, "_circle_search_py": _circle_search_py},
        {"_circle_point_py": _circle_point_py, "cylinder_wrap_py": cylinder_wrap_py})
    bound: dict = {}
    for layer in layers:
        bound.update({name: jit.compiled(kernel, bind=dict(bound)) for name, kernel in layer.items()})
    return bound


#: the wrap kernel of each surface code (CYLINDER, SPHERE, ELLIPSOID, TORUS)
SURFACE_KERNELS = (cylinder_wrap_py, sphere_wrap_py, ellipsoid_wrap_py, torus_wrap_py)


def surface_signatures() -> tuple[str, ...]:
    """The numba signatures of SURFACE_KERNELS (each compiled as a C callable reached by its address,
    `path.wrap_address`): complex 3-vectors in, the tangent points out, (status, arc length) back."""
    vector = "complex128[::1]"
    ends = f"{vector}, {vector}"
    return tuple(f"Tuple((int64, complex128))({ends}, {arguments}, {ends})" for arguments in (
        "float64, float64, int64, int64, boolean",           # cylinder: radius, length, axis, sign, single
        "float64, int64, int64",                             # sphere: radius, axis, sign
        "float64[::1], int64, int64, int64",                 # ellipsoid: dimensions, axis, sign, method
        "float64, float64, int64, int64, boolean"))          # torus: inner and outer radius, axis, sign, single


__all__ = ["NO_WRAP", "INSIDE_RADIUS", "WRAPPED", "MANDATORY_WRAP", "EMPTY_WRAP", "SURFACE_CODES", "WRAP_METHODS",
           "SURFACE_KERNELS", "surface_signatures"]
