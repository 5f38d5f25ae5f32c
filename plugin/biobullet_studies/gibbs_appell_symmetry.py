"""Exact mirror symmetry of an `ElasticChain` motion (paper 002 drop: O1↔O4, O2↔O3, δ1 = δ3), the drop's
round-off projection (`gibbs_appell_drop.simulate_drop(symmetry="auto")`; a paper-002 driver aid, so it lives with
the studies, a client of the library).

Why projecting is legitimate: if the chain data are mirror symmetric (link i and link n+1−i have equal length,
mass and modal data, mode j of one being ±(mode j of the other)(l − η)) and the initial state is mirror
symmetric, the exact solution stays on the symmetric manifold for all time (the equations, the contact and
friction laws and the switching conditions are equivariant under the mirror, and the solution is unique).
Round-off breaks the symmetry at ~1e-16 per step and the drop amplifies it (~10× per 0.15 s: the multiple
impacts are unstable to antisymmetric perturbations), so without correction the computed motion leaves the
manifold after ~1 s. `MirrorSymmetry.project` maps a state back to the closest symmetric state; applied at
short intervals it removes only that round-off (the size of every correction is recorded and is ~1e-15), so the
physics — the symmetric solution — is unchanged. It is not applied to an asymmetric model or initial state.

Coordinates in which the mirror is linear: the chord midpoint C = (O_1 + O_{n+1})/2, the absolute link angles
φ_i and the modal amplitudes δ. The mirror about the vertical line x = x_s maps
C → (2x_s − C_x, C_y), φ_i → −φ_{n+1−i}, δ_ij → s_ij δ_{n+1−i, j} (w'(η) = w(l − η) after reversal and reflection;
s_ij = ±1 from the mode shapes). The projection averages a state with its mirror image in these coordinates and
maps back (q from φ and the end rotations, O_1 from C and the chord).
"""
from __future__ import annotations

import math

import numpy as np

from biobullet.core.errors import ModelError

_SAMPLES = np.linspace(0.0, 1.0, 9)


class MirrorSymmetry:
    """Mirror map of an ElasticChain about the vertical line x = axis (floating base only)."""

    def __init__(self, chain, axis: float, signs: list[np.ndarray]) -> None:
        self.chain, self.axis, self.signs = chain, float(axis), signs
        n = len(chain.links)
        self._rev = np.arange(n)[::-1]
        self.max_correction = 0.0  # largest |change| of z or ż made by `project` (m, rad, m/s, rad/s)
        self.n_projections = 0

    # ------------------------------------------------------------------ detection
    @classmethod
    def detect(cls, chain, z0: np.ndarray, zd0: np.ndarray, rtol: float = 1e-12) -> "MirrorSymmetry | None":
        """The symmetry of (chain, initial state), or None if the chain data or the state are not mirror
        symmetric (to rtol; the paper's cs links are built from their own root solve and match sc to ~1e-15)."""
        if chain.base != "floating":
            return None
        links, n = chain.links, len(chain.links)
        signs = []
        for i in range(n):
            a, b = links[i], links[n - 1 - i]
            if a.n_modes != b.n_modes or not math.isclose(a.length, b.length, rel_tol=rtol) \
                    or not math.isclose(a.mass, b.mass, rel_tol=rtol):
                return None
            if a.n_modes == 0:
                signs.append(np.zeros(0))
                continue
            if a.modes is None or b.modes is None:
                return None
            x = _SAMPLES * a.length
            wa, wb = a.shape(x), b.shape(a.length - x)
            s = np.sign(np.sum(wa * wb, axis=1))
            if np.any(s == 0) or np.abs(wa - s[:, None] * wb).max() > 1e3 * rtol * max(np.abs(wa).max(), 1.0):
                return None
            if not (np.allclose(a.stiffness, b.stiffness * np.outer(s, s), rtol=rtol, atol=0.0)
                    and np.allclose(a.damping, b.damping * np.outer(s, s), rtol=rtol, atol=0.0)):
                return None
            signs.append(s)
        contacts = set(chain.contact_points)
        if contacts != {n - k for k in contacts}:
            return None
        sym = cls(chain, 0.0, signs)
        (cx, _), phi, delta = sym.split(z0)
        sym.axis = cx
        scale = 1.0 + np.abs(z0).max()
        z1, zd1 = sym.mirror(z0, zd0)
        if np.abs(z1 - z0).max() > 1e3 * rtol * scale or np.abs(zd1 - zd0).max() > 1e3 * rtol * (1 + np.abs(zd0).max()):
            return None
        return sym

    # ------------------------------------------------------------------ coordinates
    def _chord(self, phi: np.ndarray, delta: list[np.ndarray]) -> np.ndarray:
        out = np.zeros(2)
        for link, f, d in zip(self.chain.links, phi, delta):
            wl = float(link.end_w @ d) if link.n_modes else 0.0
            c, s = math.cos(f), math.sin(f)
            out += (c * link.length - s * wl, s * link.length + c * wl)
        return out

    def _chord_rate(self, phi, phid, delta, deltad) -> np.ndarray:
        out = np.zeros(2)
        for link, f, fd, d, dd in zip(self.chain.links, phi, phid, delta, deltad):
            wl = float(link.end_w @ d) if link.n_modes else 0.0
            wld = float(link.end_w @ dd) if link.n_modes else 0.0
            c, s = math.cos(f), math.sin(f)
            out += (-fd * (s * link.length + c * wl) - s * wld, fd * (c * link.length - s * wl) + c * wld)
        return out

    def split(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """(C, φ, δ) of configuration z."""
        ch = self.chain
        phi = ch.angle_rows @ z
        delta = [z[d] for d in ch.idx_d]
        return z[ch.idx_x] + 0.5 * self._chord(phi, delta), phi, delta

    def join(self, c: np.ndarray, phi: np.ndarray, delta: list[np.ndarray]) -> np.ndarray:
        """Configuration z from (C, φ, δ)."""
        ch = self.chain
        z = np.zeros(ch.n_coordinates)
        for i, (link, d) in enumerate(zip(ch.links, delta)):
            z[ch.idx_d[i]] = d
            prev = 0.0
            if i:  # φ_i = φ_{i−1} + ψ_{i−1} + q_i
                prev = phi[i - 1] + (float(ch.links[i - 1].end_rotation @ delta[i - 1])
                                     if ch.links[i - 1].n_modes else 0.0)
            z[ch.idx_q[i]] = phi[i] - prev
        z[ch.idx_x] = c - 0.5 * self._chord(phi, delta)
        return z

    def _with_rates(self, z: np.ndarray, zd: np.ndarray):
        """(C, φ, δ) of `split` and their rates (Ċ, φ̇, δ̇)."""
        ch = self.chain
        c, phi, delta = self.split(z)
        phid = ch.angle_rows @ zd
        deltad = [zd[d] for d in ch.idx_d]
        cd = zd[ch.idx_x] + 0.5 * self._chord_rate(phi, phid, delta, deltad)
        return c, phi, delta, cd, phid, deltad

    def mirror(self, z: np.ndarray, zd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The mirror image (z', ż') of a state."""
        c, phi, delta, cd, phid, deltad = self._with_rates(z, zd)
        r = self._rev
        c_m = np.array([2.0 * self.axis - c[0], c[1]])
        cd_m = np.array([-cd[0], cd[1]])
        phi_m, phid_m = -phi[r], -phid[r]
        delta_m = [self.signs[i] * delta[r[i]] for i in range(len(r))]
        deltad_m = [self.signs[i] * deltad[r[i]] for i in range(len(r))]
        return self._state(c_m, cd_m, phi_m, phid_m, delta_m, deltad_m)

    def _state(self, c, cd, phi, phid, delta, deltad) -> tuple[np.ndarray, np.ndarray]:
        ch = self.chain
        z = self.join(c, phi, delta)
        zd = np.zeros(ch.n_coordinates)
        for i in range(len(ch.links)):
            zd[ch.idx_d[i]] = deltad[i]
            prev = 0.0
            if i:
                prev = phid[i - 1] + (float(ch.links[i - 1].end_rotation @ deltad[i - 1])
                                      if ch.links[i - 1].n_modes else 0.0)
            zd[ch.idx_q[i]] = phid[i] - prev
        zd[ch.idx_x] = cd - 0.5 * self._chord_rate(phi, phid, delta, deltad)
        return z, zd

    def project(self, z: np.ndarray, zd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The symmetric state closest (in (C, φ, δ) coordinates: their mean with the mirror image) to (z, ż)."""
        c, phi, delta, cd, phid, deltad = self._with_rates(z, zd)
        r = self._rev
        c_s = np.array([self.axis, c[1]])
        cd_s = np.array([0.0, cd[1]])
        phi_s, phid_s = 0.5 * (phi - phi[r]), 0.5 * (phid - phid[r])
        delta_s = [0.5 * (delta[i] + self.signs[i] * delta[r[i]]) for i in range(len(r))]
        deltad_s = [0.5 * (deltad[i] + self.signs[i] * deltad[r[i]]) for i in range(len(r))]
        z_s, zd_s = self._state(c_s, cd_s, phi_s, phid_s, delta_s, deltad_s)
        self.max_correction = max(self.max_correction, float(np.abs(z_s - z).max()), float(np.abs(zd_s - zd).max()))
        self.n_projections += 1
        return z_s, zd_s


def mirror_symmetry(chain, z0=None, zd0=None) -> MirrorSymmetry | None:
    """`MirrorSymmetry.detect` for the chain's own initial state by default."""
    if z0 is None:
        z0, zd0 = chain.initial_state()
    if not isinstance(chain.links, tuple):
        raise ModelError("not an ElasticChain", attribute="chain")
    return MirrorSymmetry.detect(chain, np.asarray(z0, float), np.asarray(zd0, float))


__all__ = ["MirrorSymmetry", "mirror_symmetry"]
