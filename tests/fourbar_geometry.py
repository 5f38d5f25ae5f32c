"""Analytic position solution and instantaneous centre of rotation (ICR) of the polycentric four-bar knee
(urdf/fourbar_knee.urdf) -- an independent oracle in plain numpy (never imports biobullet).

Sagittal plane x-z of the thigh frame: x anterior, z proximal, joint axes (0, 1, 0);
a positive rotation about +y is knee FLEXION (it swings the distal shank posteriorly).  Points (x, z) in metres:

    A  posterior thigh pivot      B  anterior thigh pivot       (AB fixed on the thigh/socket)
    D  posterior shank pivot      C  anterior shank pivot       (DC fixed on the shank)
    posterior link AD, anterior link BC; letters as in paper 003 (Lue et al. 2020).

Flexion phi = rotation of the shank relative to the thigh (0 at full extension).  URDF joint angles:
knee_A = rotation of AD relative to the thigh, knee_B = rotation of BC relative to the thigh,
knee_D = rotation of the shank relative to AD = phi - knee_A.  The ICR of the shank relative to the thigh is the
intersection of lines AD and BC (paper 003, ICR formula; Radcliffe 1994).
"""
from __future__ import annotations

import numpy as np

# full-extension geometry (synthetic design, see urdf/README.md)
A0 = np.array([-0.014, 0.024])
B0 = np.array([0.003, 0.041])
D0 = np.array([-0.012, -0.051])
C0 = np.array([0.022, -0.042])

L_AD = float(np.linalg.norm(D0 - A0))
L_BC = float(np.linalg.norm(C0 - B0))
L_DC = float(np.linalg.norm(C0 - D0))
L_AB = float(np.linalg.norm(B0 - A0))


def rot(angle):
    """Rotation about +y acting on (x, z) coordinates: x' = x cos + z sin, z' = -x sin + z cos."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, s], [-s, c]])


def angle_of(v_from, v_to):
    """Angle a with rot(a) @ v_from parallel to v_to (same convention as rot)."""
    cross = v_from[1] * v_to[0] - v_from[0] * v_to[1]     # component giving sin for this convention
    return float(np.arctan2(cross, v_from @ v_to))


def solve(phi):
    """Four-bar configuration at knee flexion phi [rad] (closed form).

    Returns dict with points A, B, C, D (thigh frame, (x, z)) and URDF joint angles knee_A, knee_B, knee_D.
    """
    a, c = D0 - A0, C0 - D0
    w = A0 - B0 + rot(phi) @ c                   # C - B = w + rot(tA) a  ->  |w + rot(tA) a| = L_BC
    p = w @ a                                     # w . rot(t) a = p cos t + q sin t
    q = w[0] * a[1] - w[1] * a[0]
    rho = np.hypot(p, q)
    cosarg = (L_BC**2 - w @ w - a @ a) / (2.0 * rho)
    if abs(cosarg) > 1.0:
        raise ValueError(f"four-bar cannot assemble at flexion {phi!r}")
    psi = np.arctan2(q, p)
    t_a = psi + _BRANCH * np.arccos(cosarg)
    t_a = (t_a + 0.5 * np.pi) % (2 * np.pi) - 0.5 * np.pi   # knee_A in [-pi/2, 3pi/2)
    d = A0 + rot(t_a) @ a
    cc = d + rot(phi) @ c
    t_b = angle_of(C0 - B0, cc - B0)
    return {"A": A0.copy(), "B": B0.copy(), "C": cc, "D": d,
            "knee_A": float(t_a), "knee_B": t_b, "knee_D": float(phi - t_a), "flexion": float(phi)}


def _find_branch():
    a, c = D0 - A0, C0 - D0
    w = A0 - B0 + c
    p, q = w @ a, w[0] * a[1] - w[1] * a[0]
    psi = np.arctan2(q, p)
    # at phi = 0, t_a = 0 must be a root: 0 = psi + s * acos(..)  ->  s = -sign(psi)
    return -1.0 if psi > 0 else 1.0


_BRANCH = _find_branch()


def line_intersection(p1, p2, p3, p4):
    """Intersection of line p1-p2 with line p3-p4 (2-D)."""
    d1, d2 = p2 - p1, p4 - p3
    mat = np.array([d1, -d2]).T
    s = np.linalg.solve(mat, p3 - p1)
    return p1 + s[0] * d1


def icr(phi):
    """ICR of the shank relative to the thigh at flexion phi: intersection of lines AD and BC."""
    cfg = solve(phi)
    return line_intersection(cfg["A"], cfg["D"], cfg["B"], cfg["C"])


def icr_paper003(cfg):
    """The same point by paper 003's explicit formula (x_P, y_P) written with (x, z) for (x, y)."""
    (xa, ya), (xb, yb), (xc, yc), (xd, yd) = cfg["A"], cfg["B"], cfg["C"], cfg["D"]
    den = (ya - yd) * (xb - xc) - (yb - yc) * (xa - xd)
    xp = ((xb - xc) * (xd * ya - xa * yd) - (xa - xd) * (xc * yb - xb * yc)) / den
    yp = ((yb - yc) * (xd * ya - xa * yd) - (ya - yd) * (xc * yb - xb * yc)) / den
    return np.array([xp, yp])


def shank_point(phi, p_local):
    """Thigh-frame position of a point given in shank coordinates (origin D, axes parallel to thigh at phi=0)."""
    cfg = solve(phi)
    return cfg["D"] + rot(phi) @ np.asarray(p_local, dtype=float)


def j_curve(phis):
    """ICR positions (n x 2) over an array of flexion angles."""
    return np.array([icr(p) for p in phis])
