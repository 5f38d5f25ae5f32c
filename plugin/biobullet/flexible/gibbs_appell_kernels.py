"""Kernels of the Gibbs–Appell elastic chain (paper 002): its mechanics and its drop's right-hand side.

One kernel (`_chain_terms_py`) evaluates, for a state (z, ż) of an `ElasticChain` and the contact phase (active
points, stored impact velocities δ̇⁻): the forward kinematics recursion, M(z) and h(z, ż) (what
`ElasticChain.kinematics` and `mass_and_bias` return: they call it with contact off), the contact forces of
`biobullet_studies.gibbs_appell_drop.contact_forces` (the chain's normal and friction laws by their kernels in
`contact.kernels`: any law with a kernel or a compiled twin) and U = Σ_k J_kᵀ (F_T, F_N); `_elastic_rhs_py` adds the elastic and
damping forces and solves M z̈ = −h − Kδ − Dδ̇ + U by Cholesky; it also gives the three energy-work rates of the
drop. Each is compiled on first use (`core.jit.lazy`), or run by Python with numba disabled (debugging).

`CompiledChain.build(chain)` packs the chain's constant arrays once (`ChainTables`, with its scratch arrays
`ChainWork`: the kernels take these two records), or returns None for a contact law without a kernel
(a plug-in law's Python callback: the drop then takes the law classes with the kernel's M and h). A call that fails (Cholesky pivot not positive,
non-finite result) returns False. Units: SI, conventions of `flexible/gibbs_appell.py`.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from biobullet.algorithms import compiled_kernels as _compiled
from biobullet.contact import kernels as contact_kernels
from biobullet.core import jit

# info slots (int64)
_N_LINKS, _N_COORD, _MMAX, _FLOATING, _IX0, _IX1, _CONTACT, _NORMAL_KIND, _FRICTION_KIND = range(9)
# par slots (float64)
_G, _GROUND, _BX, _BY = range(4)


class ChainTables(NamedTuple):
    """One chain's constant arrays as the kernels take them (`CompiledChain.__init__` says what each holds)."""

    info: np.ndarray      # int64 slots _N_LINKS … _FRICTION_KIND (law kinds of `contact.kernels`)
    par: np.ndarray       # float64 slots _G … _BY
    normal_p: np.ndarray  # the normal law's kernel parameters (`contact.kernels.pack_normal`)
    friction_p: np.ndarray  # the friction law's (`pack_friction`)
    lk: np.ndarray        # (n, 3): length, mass, first moment per link
    dstart: np.ndarray    # first modal coordinate per link
    nm: np.ndarray        # modes per link
    lconst: np.ndarray    # (n, 3+m, 3+m) constant link-mass blocks
    jphi: np.ndarray      # (n, N) rows of φ = J_φ z
    ew: np.ndarray        # (n, N) end-deflection rows
    wint: np.ndarray      # (n, m) ∫ρA w dx per mode
    mt: np.ndarray        # (n, m, m) translational modal mass
    stiff: np.ndarray     # (N, N) K
    damp: np.ndarray      # (N, N) D


class ChainWork(NamedTuple):
    """The kernels' scratch arrays for one chain (n links, N coordinates), allocated once."""

    p: np.ndarray         # (n+1, 2) joint points
    v: np.ndarray         # (n+1, 2) their velocities
    jac: np.ndarray       # (n+1, 2, N) point Jacobians
    phi: np.ndarray       # (n,) link angles
    phid: np.ndarray      # (n,) their rates
    mass: np.ndarray      # (N, N)
    bias: np.ndarray      # (N,)
    fn: np.ndarray        # (n+1,) normal forces
    ft: np.ndarray        # (n+1,) friction forces
    rhs: np.ndarray       # (N,)
    low: np.ndarray       # (N, N) Cholesky factor
    acc: np.ndarray       # (N,)


def chain_work(n_links: int, n_coordinates: int) -> ChainWork:
    """Scratch arrays for a chain of n_links links and n_coordinates coordinates."""
    n, nc = n_links, n_coordinates
    return ChainWork(np.empty((n + 1, 2)), np.empty((n + 1, 2)), np.empty((n + 1, 2, nc)), np.empty(n), np.empty(n),
                     np.empty((nc, nc)), np.empty(nc), np.empty(n + 1), np.empty(n + 1), np.empty(nc),
                     np.zeros((nc, nc)), np.empty(nc))


def _dots_py(u, x, w, y):
    """(u·x, w·y) of four vectors of one length."""
    a = 0.0
    b = 0.0
    for k in range(x.shape[0]):
        a += u[k] * x[k]
        b += w[k] * y[k]
    return a, b


def _chain_terms_py(z, zd, active, vimp, tables, work):
    """Into `work`: kinematics p, v (n+1, 2), point Jacobians jac (n+1, 2, N), φ, φ̇ (n); M (N, N); h (N)
    including the contact forces' −Σ J_kᵀ F_k; F_N, F_T (n+1) of the active contacts. All are overwritten."""
    info, par, lk, dstart, nm = tables.info, tables.par, tables.lk, tables.dstart, tables.nm
    lconst, jphi, ew, wint, mt = tables.lconst, tables.jphi, tables.ew, tables.wint, tables.mt
    p, v, jac, phi, phid = work.p, work.v, work.jac, work.phi, work.phid
    mass, bias, fn, ft = work.mass, work.bias, work.fn, work.ft
    n = info[_N_LINKS]
    nc = info[_N_COORD]
    for i in range(n):
        phi[i], phid[i] = _DOTS(jphi[i], z, jphi[i], zd)
    for a in range(nc):
        jac[0, 0, a] = 0.0
        jac[0, 1, a] = 0.0
        bias[a] = 0.0
        for b in range(nc):
            mass[a, b] = 0.0
    if info[_FLOATING]:
        x = z[info[_IX0]]
        y = z[info[_IX1]]
        vx = zd[info[_IX0]]
        vy = zd[info[_IX1]]
        jac[0, 0, info[_IX0]] = 1.0
        jac[0, 1, info[_IX1]] = 1.0
    else:
        x = par[_BX]
        y = par[_BY]
        vx = 0.0
        vy = 0.0
    cx = 0.0
    cy = par[_G]
    p[0, 0] = x
    p[0, 1] = y
    v[0, 0] = vx
    v[0, 1] = vy
    mmax = info[_MMAX]
    brows = np.empty((3 + mmax, nc))
    lmat = np.empty((3 + mmax, 3 + mmax))
    hl = np.empty(3 + mmax)
    mtd = np.empty(mmax + 1)
    for i in range(n):
        m = nm[i]
        d0 = dstart[i]
        length = lk[i, 0]
        lmass = lk[i, 1]
        first = lk[i, 2]
        cs = math.cos(phi[i])
        sn = math.sin(phi[i])
        om = phid[i]
        # ---- this link's Gibbs–Appell terms, from the start point's state (c_O, J_O) before advancing
        c1 = cs * cx + sn * cy
        c2 = cs * cy - sn * cx
        r = 3 + m
        for a in range(nc):
            j0 = jac[i, 0, a]
            j1 = jac[i, 1, a]
            brows[0, a] = cs * j0 + sn * j1
            brows[1, a] = cs * j1 - sn * j0
            brows[2, a] = jphi[i, a]
            for j in range(m):
                brows[3 + j, a] = 0.0
        for j in range(m):
            brows[3 + j, d0 + j] = 1.0
        for a in range(r):
            for b in range(r):
                lmat[a, b] = lconst[i, a, b]
        sw = 0.0
        swd = 0.0
        dmd = 0.0
        mdd = 0.0
        for j in range(m):
            s = 0.0
            for k in range(m):
                s += mt[i, j, k] * z[d0 + k]
            mtd[j] = s
            sw += wint[i, j] * z[d0 + j]
            swd += wint[i, j] * zd[d0 + j]
            dmd += z[d0 + j] * s
            mdd += s * zd[d0 + j]
        lmat[0, 2] = -sw
        lmat[2, 0] = -sw
        lmat[2, 2] += dmd
        hl[0] = lmass * c1 - om * om * first - 2.0 * om * swd
        hl[1] = lmass * c2 - om * om * sw
        hl[2] = first * c2 - sw * c1 + 2.0 * om * mdd
        for j in range(m):
            hl[3 + j] = wint[i, j] * c2 - om * om * mtd[j]
        # M += Bᵀ L B, h += Bᵀ hl (rows of B are short: 3 + m)
        for a in range(nc):
            t0 = 0.0
            for k in range(r):
                t0 += brows[k, a] * hl[k]
            bias[a] += t0
        for k in range(r):
            for a in range(nc):
                # (Bᵀ L)[a, k]
                s = 0.0
                for q in range(r):
                    s += brows[q, a] * lmat[q, k]
                if s != 0.0:
                    for b in range(nc):
                        mass[a, b] += s * brows[k, b]
        # ---- advance to the end point O_{i+1}
        wl, wld = _DOTS(ew[i], z, ew[i], zd)
        x += cs * length - sn * wl
        y += sn * length + cs * wl
        bx = -om * wl
        by = om * length + wld
        vx += cs * bx - sn * by
        vy += sn * bx + cs * by
        gx = -om * om * length - 2.0 * om * wld
        gy = -om * om * wl
        cx += cs * gx - sn * gy
        cy += sn * gx + cs * gy
        p[i + 1, 0] = x
        p[i + 1, 1] = y
        v[i + 1, 0] = vx
        v[i + 1, 1] = vy
        for a in range(nc):
            j0 = -wl * jphi[i, a]
            j1 = length * jphi[i, a] + ew[i, a]
            jac[i + 1, 0, a] = jac[i, 0, a] + cs * j0 - sn * j1
            jac[i + 1, 1, a] = jac[i, 1, a] + sn * j0 + cs * j1
    # ---- contacts (gibbs_appell_drop.contact_forces): U = Σ J_kᵀ (F_T, F_N) enters h with a minus sign
    for k in range(n + 1):
        fn[k] = 0.0
        ft[k] = 0.0
        if not active[k] or info[_CONTACT] == 0:
            continue
        f = _NORMAL_FORCE(info[_NORMAL_KIND], tables.normal_p, par[_GROUND] - p[k, 1], -v[k, 1], vimp[k])
        fn[k] = f
        if f > 0.0:
            slip = v[k, 0]
            sign = 1.0 if slip > 0.0 else (-1.0 if slip < 0.0 else 0.0)
            ft[k] = -sign * _FRICTION_COEFFICIENT(info[_FRICTION_KIND], tables.friction_p, abs(slip)) * f
        for a in range(nc):
            bias[a] -= jac[k, 0, a] * ft[k] + jac[k, 1, a] * fn[k]


def _elastic_rhs_py(z, zd, active, vimp, tables, work, out):
    """out = [ż, z̈, −żᵀDż, F_N·ẏ, F_T·ẋ] (length 2N + 3); False when the Cholesky factor or a value fails."""
    n = tables.info[_N_LINKS]
    nc = tables.info[_N_COORD]
    stiff, damp = tables.stiff, tables.damp
    _chain_terms(z, zd, active, vimp, tables, work)
    v, mass, bias, fn, ft, rhs = work.v, work.mass, work.bias, work.fn, work.ft, work.rhs
    power = 0.0
    for a in range(nc):
        kz, dz = _DOTS(stiff[a], z, damp[a], zd)
        rhs[a] = -bias[a] - kz - dz
        power -= zd[a] * dz
    low, acc = work.low, work.acc
    if not _cholesky_factor(mass, low, 1e-14):
        return False
    _cholesky_solve(low, rhs, acc)
    pn = 0.0
    pt = 0.0
    for k in range(n + 1):
        pn += fn[k] * v[k, 1]
        pt += ft[k] * v[k, 0]
    for a in range(nc):
        out[a] = zd[a]
        out[nc + a] = acc[a]
    out[2 * nc] = power
    out[2 * nc + 1] = pn
    out[2 * nc + 2] = pt
    for a in range(2 * nc + 3):
        if not np.isfinite(out[a]):
            return False
    return True


def _elastic_outputs_py(zs, zds, actives, vimps, tables, work, points, velocities, normal, friction, energies):
    """Sampled outputs of a drop for every row: joint points and velocities, contact forces, and energies
    (T = ½żᵀMż, V_g (`ElasticChain.gravity_energy`), V_e = ½zᵀKz) as energies[row] = (T, V_g, V_e)."""
    n = tables.info[_N_LINKS]
    nc = tables.info[_N_COORD]
    par, lk, dstart, nm, wint, stiff = tables.par, tables.lk, tables.dstart, tables.nm, tables.wint, tables.stiff
    phi, mass = work.phi, work.mass
    for row in range(zs.shape[0]):
        z = zs[row]
        zd = zds[row]
        _chain_terms(z, zd, actives[row], vimps[row], tables, work)
        # element by element: a broadcast row assignment compiles numba's shape-error message (≈ 2 s of CPU)
        for i in range(n + 1):
            points[row, i, 0] = work.p[i, 0]
            points[row, i, 1] = work.p[i, 1]
            velocities[row, i, 0] = work.v[i, 0]
            velocities[row, i, 1] = work.v[i, 1]
            normal[row, i] = work.fn[i]
            friction[row, i] = work.ft[i]
        t = 0.0
        e = 0.0
        for a in range(nc):
            sm, sk = _DOTS(mass[a], zd, stiff[a], z)
            t += zd[a] * sm
            e += z[a] * sk
        energies[row, 0] = 0.5 * t
        energies[row, 2] = 0.5 * e
        g = 0.0
        for i in range(n):
            sw = 0.0
            for j in range(nm[i]):
                sw += wint[i, j] * z[dstart[i] + j]
            g += lk[i, 1] * points[row, i, 1] + math.sin(phi[i]) * lk[i, 2] + math.cos(phi[i]) * sw
        energies[row, 1] = par[_G] * g


def _point_heights_py(z, tables, out):
    """y of the joint points O_1..O_{n+1} (`ElasticChain.point_heights`)."""
    info, par, lk, jphi, ew = tables.info, tables.par, tables.lk, tables.jphi, tables.ew
    n = info[_N_LINKS]
    y = z[info[_IX1]] if info[_FLOATING] else par[_BY]
    out[0] = y
    for i in range(n):
        f, w = _DOTS(jphi[i], z, ew[i], z)
        y += lk[i, 0] * math.sin(f) + w * math.cos(f)
        out[i + 1] = y


# The Python twins call these names; `jit.compiled(..., bind=_bindings)` rebinds them to the compiled callees.
_chain_terms = _chain_terms_py
_cholesky_factor = _compiled.cholesky_factor_py
_cholesky_solve = _compiled.cholesky_solve_py
_NORMAL_FORCE, _FRICTION_COEFFICIENT = contact_kernels.normal_force, contact_kernels.friction_coefficient
_DOTS = _dots_py


def _law_bindings() -> dict:
    return {"_NORMAL_FORCE": contact_kernels.normal_force_kernel(),
            "_FRICTION_COEFFICIENT": contact_kernels.friction_coefficient_kernel(), "_DOTS": _dots_py}


def _bindings() -> dict:
    return {"_chain_terms": _chain_terms_py, "_cholesky_factor": _compiled.cholesky_factor_py,
            "_cholesky_solve": _compiled.cholesky_solve_py, **_law_bindings()}


# each compiled on its first call (numba's on-disk cache), or run by Python with numba disabled (debugging)
elastic_rhs = jit.lazy(_elastic_rhs_py, bind=_bindings)
elastic_outputs = jit.lazy(_elastic_outputs_py, bind=_bindings)
point_heights = jit.lazy(_point_heights_py, bind={"_DOTS": _dots_py})
chain_terms = jit.lazy(_chain_terms_py, bind=_law_bindings)
#: the law slots of a chain's mechanics without contact (`CompiledChain.mechanics`)
NO_CONTACT = (0, 0, 0, np.zeros(contact_kernels.N_PARAMS), np.zeros(contact_kernels.N_PARAMS))


def _law_parameters(chain: Any) -> tuple | None:
    """(contact?, normal kind, friction kind, normal params, friction params) of the chain's laws
    (`contact.kernels.pack_normal`, `pack_friction`), or None (a law without a kernel)."""
    if chain.normal_law is None:
        return NO_CONTACT
    normal = contact_kernels.pack_normal(chain.normal_law)
    friction = (contact_kernels.FRICTION_NONE, np.zeros(contact_kernels.N_PARAMS)) if chain.friction_law is None \
        else contact_kernels.pack_friction(chain.friction_law)
    if normal is None or friction is None:
        return None
    return 1, normal[0], friction[0], normal[1], friction[1]


class CompiledChain:
    """The packed constant arrays of one `ElasticChain` and its compiled kernels (see module docstring)."""

    def __init__(self, chain: Any, laws: tuple) -> None:
        n, nc = len(chain.links), chain.n_coordinates
        mmax = max(link.n_modes for link in chain.links)
        floating = chain.base == "floating"
        ix = chain.idx_x if floating else (0, 0)
        contact, normal_kind, friction_kind, normal_p, friction_p = laws
        lconst = np.zeros((n, 3 + mmax, 3 + mmax))
        wint = np.zeros((n, max(mmax, 1)))
        mt = np.zeros((n, max(mmax, 1), max(mmax, 1)))
        for i, link in enumerate(chain.links):
            m = link.n_modes
            lconst[i, :3 + m, :3 + m] = chain.link_mass_blocks[i]
            wint[i, :m] = link.w_integral
            mt[i, :m, :m] = link.mass_translational
        self.tables = ChainTables(
            np.array([n, nc, mmax, int(floating), ix[0], ix[1], contact, normal_kind, friction_kind], np.int64),
            np.array([chain.gravity, chain.ground_height, chain.base_position[0], chain.base_position[1]], dtype=float),
            np.ascontiguousarray(normal_p, dtype=float), np.ascontiguousarray(friction_p, dtype=float),
            np.array([[l.length, l.mass, l.first_moment] for l in chain.links], dtype=float),
            np.array([chain.idx_q[i] + 1 for i in range(n)], np.int64),
            np.array([l.n_modes for l in chain.links], np.int64), lconst,
            np.ascontiguousarray(chain.angle_rows, dtype=float),
            np.ascontiguousarray(chain.end_deflection_rows, dtype=float), wint, mt,
            np.ascontiguousarray(chain.stiffness_matrix, dtype=float),
            np.ascontiguousarray(chain.damping_matrix, dtype=float))
        self.work = chain_work(n, nc)
        self.n_links, self.n_coordinates = n, nc
        self._inactive, self._no_impact = np.zeros(n + 1, dtype=bool), np.zeros(n + 1)
        self._entries: dict[str, Any] = {}   # the per-call kernels' direct entries (`core.jit.direct_entry`)

    @classmethod
    def build(cls, chain: Any) -> "CompiledChain | None":
        """The kernels of `chain`'s drop, or None (a contact law the kernels do not implement)."""
        laws = _law_parameters(chain)
        return None if laws is None else cls(chain, laws)

    @classmethod
    def mechanics(cls, chain: Any) -> "CompiledChain":
        """The kernels of `chain` with contact off: kinematics, M and h (`terms`), joint heights."""
        return cls(chain, NO_CONTACT)

    def terms(self, z: np.ndarray, zd: np.ndarray) -> ChainWork:
        """`self.work` holding the kinematics (p, v, jac, phi, phid), M and h at (z, ż), no contact forces
        (arrays overwritten by the next call)."""
        chain_terms(np.ascontiguousarray(z, dtype=float), np.ascontiguousarray(zd, dtype=float), self._inactive,
                    self._no_impact, self.tables, self.work)
        return self.work

    def rhs(self, z: np.ndarray, zd: np.ndarray, active: np.ndarray, vimp: np.ndarray, out: np.ndarray) -> bool:
        """out[:] = [ż, z̈, −żᵀDż, F_N·ẏ, F_T·ẋ]; False: the kernel declined (Cholesky pivot, non-finite value:
        the caller's general path decides and reports)."""
        args = (np.ascontiguousarray(z, dtype=float), np.ascontiguousarray(zd, dtype=float), active, vimp,
                self.tables, self.work, out)
        entry = self._entries.get("rhs")
        if entry is None:   # numba's type matching of the two records would cost more than the kernel's work
            entry = self._entries["rhs"] = jit.direct_entry(elastic_rhs.resolve(), *args)
        return bool(entry(*args))

    def point_heights(self, z: np.ndarray) -> np.ndarray:
        """y of O_1..O_{n+1} (m)."""
        out = np.empty(self.n_links + 1)
        args = (np.ascontiguousarray(z, dtype=float), self.tables, out)
        entry = self._entries.get("heights")
        if entry is None:
            entry = self._entries["heights"] = jit.direct_entry(point_heights.resolve(), *args)
        entry(*args)
        return out

    def outputs(self, z: np.ndarray, zd: np.ndarray, active: np.ndarray,
                vimp: np.ndarray) -> tuple[np.ndarray, ...]:
        """(points, velocities, F_N, F_T, T, V_g, V_e) for T sampled rows (shapes as in `DropResult`)."""
        rows, npts = z.shape[0], self.n_links + 1
        points, velocities = np.empty((rows, npts, 2)), np.empty((rows, npts, 2))
        normal, friction = np.empty((rows, npts)), np.empty((rows, npts))
        energies = np.empty((rows, 3))
        elastic_outputs(np.ascontiguousarray(z), np.ascontiguousarray(zd), np.ascontiguousarray(active),
                      np.ascontiguousarray(vimp, dtype=float), self.tables, self.work, points, velocities, normal,
                      friction, energies)
        return points, velocities, normal, friction, energies[:, 0], energies[:, 1], energies[:, 2]


__all__ = ["CompiledChain"]
