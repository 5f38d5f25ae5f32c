"""Flexible links on the PyBullet bridge: the finite-segment expansion (`flexible.segments`) stepped by PyBullet.

`Bridge(model)` expands a model's `<flexible>` links on load (options `segments`, `shear`, `air_damping`); this
module holds the stability helpers it uses and `centre_line` for plotting.

The elastic forces need no bridge hook: the expansion writes `<joint_spring>` elements (bending EI/h with the
Kelvin–Voigt damper Kv·I/h, shear κGA/h) and `Bridge.apply()` already sums `forces.applied_forces` — which also
includes the Python-added `SegmentAirDamping` — before every `stepSimulation()`.

PyBullet integrates those forces explicitly (semi-implicit Euler with the torque held over the step), which is
stable only for ω_max·dt < 2, ω_max the highest natural frequency of the segmented model. `stable_time_step`
gives dt = `fraction`·2/ω_max from the linearised model (`natural_frequencies`); `FlexibleBridge` checks the
step it is given and raises ModelError if it is unstable. Stiff shear joints of slender beams make ω_max large
(paper-002 links with 16 segments: ω_max ≈ 8e4 rad/s); use `shear=False` there if shear is negligible.
"""
from __future__ import annotations

import os

import numpy as np

from biobullet.core.errors import ModelError


def highest_frequency(model, q0=None) -> float:
    """ω_max (rad/s) of the model linearised at rest about q0 (default: the model's initial state)."""
    from biobullet.flexible.segments import natural_frequencies
    q0 = model.initial_state()[0] if q0 is None else q0
    return float(natural_frequencies(model, q0)[-1])


def stable_time_step(model, q0=None, fraction: float = 0.25) -> float:
    """dt = fraction · 2/ω_max (s): fraction < 1 is inside PyBullet's explicit stability limit ω_max dt < 2."""
    if not 0.0 < fraction < 1.0:
        raise ModelError(f"argument 'fraction' is {fraction!r}", attribute="fraction", expected="0 < fraction < 1")
    return fraction * 2.0 / highest_frequency(model, q0)


def centre_line(model, x: np.ndarray, layout) -> np.ndarray:
    """World positions (N+2, 3) of the expanded link's section points: x = 0, the N sections, x = L."""
    from biobullet.algorithms.kinematics import body_placements, frame_placement
    placements = body_placements(model, x)
    names = layout.body_names()
    pts = []
    for k, (name, (a, b)) in enumerate(zip(names, layout.bodies)):
        r, p = frame_placement(model, x, name, placements)
        pts.append(p)
        if k == len(names) - 1:
            pts.append(r @ np.array([b - a, 0.0, 0.0]) + p)
    return np.array(pts)


def ground_up(model, path: str | os.PathLike[str]) -> list:
    """The model's `<contact>` elements, with the ground normal set to "up" (−gravity direction) on those whose
    `<contact>` gives no `ground_normal` (the element's default is +z, PyBullet's convention). Paper-002 files
    are planar in x–y with gravity −y and the Gibbs–Appell reader takes the ground as y = h regardless of
    `ground_normal`; this makes the rigid engine and the bridge see the same ground. Mutates the elements
    (they belong to `model`, so `biobullet.simulate(model)` uses the corrected ground too); returns them."""
    import xml.etree.ElementTree as ET
    from biobullet.contact.element import contact_elements
    from biobullet.contact.geometry import GroundPlane
    from biobullet.core.frozen import set_parameter
    block = ET.parse(path).getroot().find("biobullet")
    explicit = {e.get("name") for e in (block.findall("contact") if block is not None else [])
                if e.get("ground_normal") is not None}
    g = np.asarray(model.gravity, dtype=float)
    elements = list(contact_elements(model))
    if not np.any(g):
        return elements
    up = tuple(float(v) for v in -g / np.linalg.norm(g))
    for c in elements:
        if c.name not in explicit:
            set_parameter(c, "ground", GroundPlane(c.ground.height, up))   # (before anything packed it)
    return elements
