#!/usr/bin/env python3
"""Generate urdf/prosthesis_fourbar.urdf (paper 003 prosthesis study) — every number is computed here.

    python tools/make_prosthesis_urdf.py [--check]

SUBSTITUTE DATA (paper 003's Tables 1-4 are missing from the source); sources:
- Segment lengths: Winter DA (2009) Biomechanics and Motor Control of Human Movement, 4th ed., Wiley, Fig. 4.1
  proportions for the paper-003 subject (H = 1.82 m, the value behind the gait data's hip height):
  thigh (hip - knee joint centre) 0.245 H = 0.4459 m, shank (knee - ankle) 0.246 H = 0.4477 m, ankle height
  0.039 H = 0.0710 m, foot length 0.152 H = 0.2766 m.  Straight standing leg 0.965 m = the maximum of the
  substitute hip height (0.9625 m at mid-stance, gait "walking_1ms", mean 0.94 m): a straight leg with a flat
  foot would load the ground at mid-stance by ~0.5 mm (kinematic check printed by the script).
- Pylon shortened by 15 mm (SHORTEN): with the hip trajectory of an intact subject a full-length passive leg
  that stays extended in stance is pressed 36 mm into the ground in terminal stance (3.6 kN; the intact knee
  flexes there, the locked prosthetic knee cannot); a prosthesis set ~1-1.5 cm short for toe clearance is a
  common alignment choice.  Result: heel strike at t = 0 with ~9 mm penetration, stance loading ≤ ~0.9 kN.
- Foot contact points: heel 0.06 m behind the ankle (0.22 foot length), toe point 0.19 m ahead (0.25 m
  heel-toe = 0.90 foot length, the forefoot rocker of a prosthetic foot), both at the sole (ankle height).
- Masses (prosthesis, NOT anatomical segments): polycentric hydraulic knee ~0.9 kg (Ottobock 3R60 class,
  manufacturer order of magnitude; value not verified against a data sheet); pylon + tube/pyramid adapters
  0.25 kg; prosthetic foot 0.6 kg (0.5-0.7 kg typical for energy-storing feet, manufacturer order of
  magnitude).  The knee mass is split into the two rockers (0.1 kg each, slender rods) and the lower chassis
  (0.7 kg, lumped at the shank pivot line); shank body = lower chassis + pylon = 0.95 kg.
- Four-bar knee: the polycentric linkage of urdf/fourbar_knee.urdf (Radcliffe 1994 design features) in paper
  003's topology: the two thigh pivots lie on one line perpendicular to the thigh (paper 003: gamma1 = 90 deg),
  so the posterior thigh pivot is raised to the height of the anterior one and moved 8 design-mm forward
  (|AB| 17 mm after scaling: the damper moment arm dl/dflexion is then 23 mm/rad at extension — with the
  original 17-design-mm spacing it is 60 mm/rad and at k = 1.5e4 N/m the stored 9 J whip the knee 20-30 deg
  into hyperextension against the paper's soft stop, 7.5 N m/rad).  Scaled so that the damper
  diagonal has the paper's free length l0 = 168.79 mm at full extension.
- Damper diagonal: paper 003 places the hydraulic damper along "BD" with dl/dtheta1 = l_AD l_AB sin(theta1)/l,
  theta1 = angle BAD, and B = A + l_AB u1, u1 = (-cos a1, sin a1): the paper's A is the ANTERIOR thigh pivot,
  B the POSTERIOR one, D the shank end of the rocker from A.  In this file's letters (A posterior, B anterior,
  D on the posterior rocker, C on the anterior rocker) the paper's BD is the diagonal A-C.  (The first version
  attached the damper to this file's B-D: that length is non-monotonic — maximal at 26 deg flexion, back to l0
  at 72 deg — so the "return spring" held the knee flexed: a labelling error, fixed here.)
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "urdf" / "prosthesis_fourbar.urdf"

H = 1.82                                   # m, subject height (Winter proportions)
L_THIGH, L_SHANK, H_ANKLE = 0.245 * H, 0.246 * H, 0.039 * H
SHORTEN = 0.015   # m, pylon shortened (alignment; see docstring)
L_SHANK -= SHORTEN
HEEL, TOE = -0.06, 0.19                    # m, contact points ahead of the ankle (x), at the sole
L0 = 0.16879                               # m, damper free length (paper 003)
# four-bar in the unscaled design frame (mm, x anterior, z up, origin = knee reference point)
A0, B0, D0, C0 = (-6.0, 41.0), (3.0, 41.0), (-12.0, -51.0), (22.0, -42.0)
M_LINK, M_SHANK, M_FOOT = 0.10, 0.95, 0.60  # kg
GAMMA2_NOTE = "paper 003 gamma2 = 24 deg (CD to shank) is not imposed: the coupler follows the linkage design"


def _sub(p, q):
    return (p[0] - q[0], p[1] - q[1])


def _norm(v):
    return math.hypot(v[0], v[1])


def geometry() -> dict:
    scale = L0 / (_norm(_sub(C0, A0)) * 1e-3)      # m per design mm ... (design mm → m) × scale
    s = 1e-3 * scale
    A, B, D, C = [(p[0] * s, p[1] * s) for p in (A0, B0, D0, C0)]
    knee_ref_z = -L_THIGH                          # knee reference point in the thigh frame (hip at origin)
    A_t = (A[0], knee_ref_z + A[1])
    B_t = (B[0], knee_ref_z + B[1])
    d_AD = _sub(D, A)                              # shank frame at D, posterior-link frame at A
    c_a = _sub(C, B)                               # C in the anterior-link frame (at B)
    c_b = _sub(C, D)                               # C in the shank frame (at D)
    ankle = (0.0 - D[0], -L_SHANK - D[1])          # ankle straight below the knee reference
    return {"scale": scale, "A": A, "B": B, "C": C, "D": D, "A_t": A_t, "B_t": B_t, "d_AD": d_AD, "c_a": c_a,
            "c_b": c_b, "ankle": ankle}


def _f(x: float) -> str:
    return f"{x:.9g}"


def _xyz(v) -> str:
    return f"{_f(v[0])} 0 {_f(v[1])}"


def _inertial(m, c, i) -> str:
    return (f'<inertial><origin xyz="{_xyz(c)}"/><mass value="{_f(m)}"/><inertia ixx="{_f(i)}" ixy="0" ixz="0" '
            f'iyy="{_f(i)}" iyz="0" izz="{_f(i)}"/></inertial>')


def _bar(p, q, width, material) -> str:
    mid = ((p[0] + q[0]) / 2, (p[1] + q[1]) / 2)
    v = _sub(q, p)
    pitch = math.atan2(-v[1], v[0])
    return (f'<visual><origin xyz="{_xyz(mid)}" rpy="0 {_f(pitch)} 0"/><geometry><box size="{_f(_norm(v))} '
            f'{_f(width)} {_f(width)}"/></geometry><material name="{material}"/></visual>')


def build_urdf() -> str:
    from biobullet_studies.gait import load_gait

    g = geometry()
    gait = load_gait("walking_1ms")
    ad, bc = _norm(g["d_AD"]), _norm(g["c_a"])
    # inertias: rockers slender rods (m L²/12); shank body: chassis 0.7 kg at the pivot line + pylon 0.25 kg
    # uniform rod over the shank length; foot: box 0.2766 × 0.07 m about its centre
    i_ad, i_bc = M_LINK * ad ** 2 / 12, M_LINK * bc ** 2 / 12
    chassis, pylon = 0.70, 0.25
    pylon_len = abs(g["ankle"][1])
    z_ch, z_py = 0.5 * g["c_b"][1], -0.5 * pylon_len
    zc = (chassis * z_ch + pylon * z_py) / M_SHANK
    xc = (chassis * 0.5 * g["c_b"][0] + pylon * g["ankle"][0]) / M_SHANK
    i_s = (chassis * 0.04 ** 2 + chassis * (z_ch - zc) ** 2 + pylon * pylon_len ** 2 / 12
           + pylon * (z_py - zc) ** 2)
    foot_len = 0.152 * H
    foot_c = ((HEEL + TOE) / 2, -0.5 * H_ANKLE)
    i_f = M_FOOT * (foot_len ** 2 + H_ANKLE ** 2) / 12
    hip = {k: gait.fourier_attributes(k) for k in ("hip_x", "hip_y", "thigh")}

    def jf(joint, attrs):
        return (f'<joint_function joint="{joint}" type="fourier" period="{attrs["period"]}" a0="{attrs["a0"]}" '
                f'a="{attrs["a"]}" b="{attrs["b"]}"/>')
    ank = gait.fourier_attributes("ankle")
    knee_ref = (0.0, -L_THIGH)
    lines = [
        '<?xml version="1.0"?>',
        "<!-- GENERATED by tools/make_prosthesis_urdf.py (all numbers and their SOURCES are in that script's",
        "     docstring; SUBSTITUTE data: paper 003's tables are missing). Hip-driven transfemoral prosthesis of",
        "     paper 003 (Lue et al. 2020), sagittal plane x-z (x forward, z up, joint axes along y). Frame: the",
        "     TREADMILL BELT frame (ground at rest, joint `treadmill` x = v t carries the lab forward at 1 m/s).",
        "     hip_x / hip_y / hip: Fourier drivers of the substitute gait biobullet_studies.gait 'walking_1ms'.",
        f"     Segments (Winter 2009, H = {H} m): thigh {L_THIGH:.4f} m (hip - knee reference), shank {L_SHANK:.4f} m",
        f"     (knee reference - ankle), ankle height {H_ANKLE:.4f} m; heel {HEEL} m, toe {TOE} m from the ankle.",
        f"     Four-bar (letters of urdf/fourbar_knee.urdf: A posterior, B anterior thigh pivots; D, C shank pivots),",
        f"     thigh pivots on one line perpendicular to the thigh (paper 003 gamma1 = 90 deg), scale {g['scale']:.6f}",
        f"     design-mm -> mm: |AC| at full extension = {L0 * 1e3:.2f} mm = damper free length. Damper = paper 003's",
        "     'BD' = diagonal posterior thigh pivot (A here) - shank end of the anterior rocker (C here).",
        "     All joint angles 0 = full extension. Knee flexion = knee_A + knee_D.",
        "     Masses: knee ~0.9 kg (3R60 class) split 0.1/0.1/0.7, pylon 0.25 kg, foot 0.6 kg (SUBSTITUTES).",
        "     Ankle: positive = dorsiflexion (axis 0 -1 0); hip: positive = flexion (axis 0 -1 0). -->",
        '<robot name="prosthesis_fourbar">',
        '  <material name="grey"><color rgba="0.6 0.62 0.68 1"/></material>',
        '  <material name="dark"><color rgba="0.25 0.25 0.3 1"/></material>',
        '  <material name="skin"><color rgba="0.85 0.7 0.6 1"/></material>',
        '  <link name="world"/>',
    ]
    tiny = _inertial(0.001, (0, 0), 1e-6)
    for name in ("lab", "hip_slider", "pelvis"):
        lines.append(f'  <link name="{name}">{tiny}</link>')
    lines += [
        '  <link name="thigh">',
        f'    {_inertial(2.0, (0.0, -0.18), 0.03)}',
        f'    {_bar((0.0, 0.0), (0.0, g["A_t"][1] + 0.02), 0.09, "skin")}',
        f'    {_bar(g["A_t"], g["B_t"], 0.02, "dark")}',
        '  </link>',
        '  <link name="posterior_link">',
        f'    {_inertial(M_LINK, (g["d_AD"][0] / 2, g["d_AD"][1] / 2), i_ad)}',
        f'    {_bar((0, 0), g["d_AD"], 0.012, "grey")}',
        '  </link>',
        '  <link name="anterior_link">',
        f'    {_inertial(M_LINK, (g["c_a"][0] / 2, g["c_a"][1] / 2), i_bc)}',
        f'    {_bar((0, 0), g["c_a"], 0.012, "grey")}',
        '  </link>',
        '  <link name="shank">',
        f'    {_inertial(M_SHANK, (xc, zc), i_s)}',
        f'    {_bar((0, 0), g["c_b"], 0.02, "dark")}',
        f'    {_bar((g["c_b"][0] / 2, g["c_b"][1] / 2), g["ankle"], 0.03, "dark")}',
        '  </link>',
        '  <link name="foot">',
        f'    {_inertial(M_FOOT, foot_c, i_f)}',
        f'    {_bar((HEEL, -H_ANKLE + 0.02), (TOE + 0.03, -H_ANKLE + 0.02), 0.04, "grey")}',
        f'    {_bar((0, 0), (0, -H_ANKLE + 0.02), 0.04, "grey")}',
        '  </link>',
        '  <joint name="treadmill" type="prismatic"><parent link="world"/><child link="lab"/><origin xyz="0 0 0"/><axis xyz="1 0 0"/><limit lower="-1000" upper="1000" effort="0" velocity="100"/></joint>',
        '  <joint name="hip_x" type="prismatic"><parent link="lab"/><child link="hip_slider"/><origin xyz="0 0 0"/><axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="0" velocity="100"/></joint>',
        '  <joint name="hip_y" type="prismatic"><parent link="hip_slider"/><child link="pelvis"/><origin xyz="0 0 0"/><axis xyz="0 0 1"/><limit lower="0" upper="2" effort="0" velocity="100"/></joint>',
        '  <joint name="hip" type="continuous"><parent link="pelvis"/><child link="thigh"/><origin xyz="0 0 0"/><axis xyz="0 -1 0"/></joint>',
        f'  <joint name="knee_A" type="continuous"><parent link="thigh"/><child link="posterior_link"/><origin xyz="{_xyz(g["A_t"])}"/><axis xyz="0 1 0"/></joint>',
        f'  <joint name="knee_D" type="continuous"><parent link="posterior_link"/><child link="shank"/><origin xyz="{_xyz(g["d_AD"])}"/><axis xyz="0 1 0"/></joint>',
        f'  <joint name="knee_B" type="continuous"><parent link="thigh"/><child link="anterior_link"/><origin xyz="{_xyz(g["B_t"])}"/><axis xyz="0 1 0"/></joint>',
        f'  <joint name="ankle" type="continuous"><parent link="shank"/><child link="foot"/><origin xyz="{_xyz(g["ankle"])}"/><axis xyz="0 -1 0"/></joint>',
        '  <biobullet version="1">',
        '    <gravity xyz="0 0 -9.81"/>',
        '    <base type="fixed"/>',
        '    <joint_function joint="treadmill" type="expression" expression="v*t" parameters="v=1.0"/>',
        f'    {jf("hip_x", hip["hip_x"])}',
        f'    {jf("hip_y", hip["hip_y"])}',
        f'    {jf("hip", hip["thigh"])}',
        f'    <loop name="knee_C" type="planar" link_a="anterior_link" xyz_a="{_xyz(g["c_a"])}" link_b="shank" xyz_b="{_xyz(g["c_b"])}" normal="0 1 0"/>',
        '    <coordinates names="knee_A ankle"/>',
    ]
    for j in ("knee_A", "knee_D", "knee_B", "ankle"):
        lines.append(f'    <initial joint="{j}" position="0" velocity="0"/>')
    lines += [
        "    <!-- hydraulic damper = paper 003 'BD' (posterior thigh pivot A - anterior shank pivot C here):",
        "         F = -k (l - l0) - c dl/dt, l0 = 168.79 mm; default k = 1.6e4 N/m, c/k = 0.05 s; the study overrides k, c -->",
        f'    <spring name="damper" link_a="thigh" xyz_a="{_xyz(g["A_t"])}" link_b="shank" xyz_b="{_xyz(g["c_b"])}" stiffness="16000" rest_length="{L0}" damping="800"/>',
        "    <!-- knee hyperextension stop between AB and BC at offset d = 1 cm (paper 003 eqs. 8-9) -->",
        '    <joint_contact_stop name="knee_stop" joint="knee_B" lower="0" lever="0.01" stiffness="75000" damping="20" smoothing="1e6"/>',
        "    <!-- ankle torsion spring tracking the reference ankle angle (paper 003 eq. 12) -->",
        f'    <joint_spring_reference name="ankle_spring" joint="ankle" stiffness="10" damping="0.2" type="fourier" period="{ank["period"]}" a0="{ank["a0"]}" a="{ank["a"]}" b="{ank["b"]}"/>',
        f'    <contact name="heel" link="foot" xyz="{_xyz((HEEL, -H_ANKLE))}" normal_law="kelvin_voigt_smooth" stiffness="1e5" damping="20" smoothing="1e6" friction_law="regularized" mu="0.6" v0="1e-4"/>',
        f'    <contact name="toe" link="foot" xyz="{_xyz((TOE, -H_ANKLE))}" normal_law="kelvin_voigt_smooth" stiffness="1e5" damping="20" smoothing="1e6" friction_law="regularized" mu="0.6" v0="1e-4"/>',
        '  </biobullet>',
        '</robot>',
    ]
    return "\n".join(lines) + "\n"


def check() -> None:
    """Kinematic check: straight leg, flat foot, hip at the gait data's mid-stance height."""
    from biobullet_studies.gait import load_gait

    g = geometry()
    gait = load_gait("walking_1ms")
    leg = L_THIGH + L_SHANK + H_ANKLE
    print(f"scale {g['scale']:.6f}; |AD| {_norm(g['d_AD']) * 1e3:.1f} mm, |BC| {_norm(g['c_a']) * 1e3:.1f} mm, "
          f"|AB| {_norm(_sub(g['B'], g['A'])) * 1e3:.1f} mm, |DC| {_norm(g['c_b']) * 1e3:.1f} mm, "
          f"|AC| {_norm(_sub(g['C'], g['A'])) * 1e3:.2f} mm")
    import numpy as np
    t = np.linspace(0, 1, 1001)
    hy, th = gait.evaluate("hip_y", t), gait.evaluate("thigh", t)
    i = int(np.argmax(hy[:500]))
    print(f"straight leg + ankle height = {leg:.4f} m; hip max in stance {hy[i]:.4f} m at t = {t[i]:.2f} "
          f"(thigh {math.degrees(th[i]):.1f} deg): vertical reach {leg * math.cos(th[i]):.4f} m -> "
          f"penetration {1e3 * (leg * math.cos(th[i]) - hy[i]):.1f} mm")
    print(f"hip at t = 0: {hy[0]:.4f} m, thigh {math.degrees(th[0]):.1f} deg; straight leg heel height "
          f"(foot perpendicular to shank) {1e3 * (hy[0] - leg * math.cos(th[0]) + HEEL * math.sin(th[0])):.1f} mm")


if __name__ == "__main__":
    import sys
    sys.path.insert(0, str(ROOT / "plugin"))
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    OUT.write_text(build_urdf(), encoding="utf-8")
    print(f"wrote {OUT}")
    check()
