"""Immutable description of a planar anthropomorph with extensible links (paper 004, Chigarev & Borisov).

A floating hip point (x, y) carries three chains of straight, axially extensible links: leg 1 and leg 2 (pointing
down, along −e_i) and the trunk (pointing up, along +e_i), with e_i = (cos φ_i, sin φ_i) and φ_i the ABSOLUTE angle
of link i from the horizontal, counter-clockwise [rad]. Every link i has
  m_i  mass [kg]; n_i  the paper's centre-of-mass fraction (legs: COM at (1−n_i) l_i from the link's proximal
       joint, trunk: at n_i l_i — eqs. (1), (10) of the paper; ρ_i = 1 − n_i on legs, n_i on the trunk);
  L0_i rest length [m]; k_i axial stiffness [N/m]; c_i axial damping [N·s/m] (0 in the paper);
  I_i(t) central moment of inertia [kg·m²], a constant or a prescribed time function (`InertiaLaw`).

Link numbering follows the paper: leg 1 is listed FOOT → HIP (six links: 1 shank, 2 thigh), leg 2 HIP → FOOT
(3 thigh, 4 shank), the trunk lower → upper (5, 6). Generalized coordinates q = (x, y, φ_1…φ_n, l_1…l_n), DOF 2n + 2.

Joint moments: one per joint between two links, n − 1 in all (``model.joints``): inside a chain between a link and
its proximal neighbour, and at the hip between the first trunk link and the proximal link of each leg. A joint
moment τ acts +τ on the child link and −τ on the parent link (parent = proximal neighbour; at the hip the parent is
the first trunk link), so it enters the φ rows as Bᵀ τ. The paper's three-link (4)–(6) with M_{3−1}, M_{3−2} are
exactly these hip moments. Optional ankle moments (ground on the foot link, + counter-clockwise) act only in
support.

File format (JSON, see `from_json` and docs/anthropomorph.md): no code, no expressions — numbers only.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from biobullet.core.errors import ModelError

CHAINS = ("leg1", "leg2", "trunk")
SIGMA = {"leg1": -1.0, "leg2": -1.0, "trunk": 1.0}
GRAVITY = 9.81
FORMAT_NAME = "biobullet.extensible_chain"
FORMAT_VERSION = 1


def _number(value: Any, what: str, *, positive: bool = False, nonnegative: bool = False,
            file: str | None = None, element: str | None = None) -> float:
    """A finite float, or a ModelError naming the attribute (JSON booleans and strings are refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ModelError(f"{value!r} is not a number", file=file, element=element, attribute=what,
                         expected="a finite number")
    v = float(value)
    if not math.isfinite(v):
        raise ModelError(f"{v!r} is not finite", file=file, element=element, attribute=what, expected="a finite number")
    if positive and v <= 0.0:
        raise ModelError(f"{v:g} must be > 0", file=file, element=element, attribute=what, expected="a positive number")
    if nonnegative and v < 0.0:
        raise ModelError(f"{v:g} must be ≥ 0", file=file, element=element, attribute=what,
                         expected="a non-negative number")
    return v


@dataclass(frozen=True)
class InertiaLaw:
    """I(t) as data: ``constant`` (value), ``polynomial`` I = Σ c_k t^k (ascending powers, t in s), or ``fourier``
    I = a_0 + Σ_k [a_k cos(kωt) + b_k sin(kωt)], ω = 2π/period. Units kg·m². `value(t)` and `rate(t)` = İ(t)."""

    kind: str = "constant"
    coefficients: tuple[float, ...] = (0.0,)
    sine: tuple[float, ...] = ()
    period: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in ("constant", "polynomial", "fourier"):
            raise ModelError(f"unknown inertia kind {self.kind!r}", attribute="kind",
                             expected="'constant', 'polynomial' or 'fourier'")
        if len(self.coefficients) < 1:
            raise ModelError("no coefficients", attribute="coefficients", expected="at least one number")
        for i, c in enumerate(self.coefficients + self.sine):
            _number(c, f"coefficients[{i}]")
        if self.kind == "constant" and len(self.coefficients) != 1:
            raise ModelError("a constant inertia has one value", attribute="coefficients", expected="one number")
        if self.kind == "fourier":
            _number(self.period, "period", positive=True)
            if len(self.sine) != len(self.coefficients) - 1:
                raise ModelError(f"{len(self.sine)} sine coefficients for {len(self.coefficients)} cosine ones",
                                 attribute="sine", expected="len(cosine) − 1 sine coefficients b_1…b_K")

    @property
    def time_varying(self) -> bool:
        return self.kind != "constant" and any(c != 0.0 for c in self.coefficients[1:] + self.sine)

    def value(self, t: float | np.ndarray) -> float | np.ndarray:
        if self.kind == "constant":
            return self.coefficients[0] + 0.0 * np.asarray(t) if np.ndim(t) else self.coefficients[0]
        if self.kind == "polynomial":
            return np.polynomial.polynomial.polyval(t, self.coefficients)
        w = 2.0 * math.pi / self.period
        t = np.asarray(t, dtype=float)
        k = np.arange(1, len(self.coefficients))
        arg = np.multiply.outer(t, k * w)
        return self.coefficients[0] + np.cos(arg) @ np.asarray(self.coefficients[1:]) + np.sin(arg) @ np.asarray(self.sine)

    def rate(self, t: float | np.ndarray) -> float | np.ndarray:
        if self.kind == "constant":
            return 0.0 * np.asarray(t) if np.ndim(t) else 0.0
        if self.kind == "polynomial":
            return np.polynomial.polynomial.polyval(t, np.polynomial.polynomial.polyder(self.coefficients)) \
                if len(self.coefficients) > 1 else 0.0 * np.asarray(t, dtype=float)
        w = 2.0 * math.pi / self.period
        t = np.asarray(t, dtype=float)
        k = np.arange(1, len(self.coefficients))
        arg = np.multiply.outer(t, k * w)
        return (-np.sin(arg) @ (k * w * np.asarray(self.coefficients[1:]))
                + np.cos(arg) @ (k * w * np.asarray(self.sine)))

    def to_json(self) -> Any:
        if self.kind == "constant":
            return self.coefficients[0]
        out: dict[str, Any] = {"kind": self.kind, "coefficients": list(self.coefficients)}
        if self.kind == "fourier":
            out.update(sine=list(self.sine), period=self.period)
        return out


@dataclass(frozen=True)
class Link:
    """One extensible link (SI units; see the module docstring for n and the inertia)."""

    mass: float
    n: float
    rest_length: float
    stiffness: float
    damping: float = 0.0
    inertia: float | InertiaLaw | None = None   # None → m L0² / 12 (uniform rod at rest length)
    name: str = ""

    def __post_init__(self) -> None:
        for key in ("mass", "n", "rest_length", "stiffness", "damping"):
            object.__setattr__(self, key, _number(getattr(self, key), key))
        _number(self.mass, "mass", positive=True)
        n = _number(self.n, "n")
        if not 0.0 <= n <= 1.0:
            raise ModelError(f"n = {n:g} is outside [0, 1]", attribute="n", expected="a COM fraction in [0, 1]")
        _number(self.rest_length, "rest_length", positive=True)
        _number(self.stiffness, "stiffness", positive=True)
        _number(self.damping, "damping", nonnegative=True)
        if self.inertia is None:
            object.__setattr__(self, "inertia", InertiaLaw("constant", (self.mass * self.rest_length ** 2 / 12.0,)))
        elif not isinstance(self.inertia, InertiaLaw):
            object.__setattr__(self, "inertia", InertiaLaw("constant", (_number(self.inertia, "inertia",
                                                                                 nonnegative=True),)))
        if self.inertia.time_varying and not self.inertia.value(0.0) > 0.0:
            # the model file carries I(t) as two point masses at ±sqrt(I/m): it must stay > 0 (checked again
            # at every time the dynamics are evaluated, `ChainModel.tree_model`)
            raise ModelError(f"I(0) = {float(self.inertia.value(0.0)):g} kg·m² is not positive", element=self.name or None,
                             attribute="inertia", expected="a time-varying inertia > 0 wherever it is evaluated")


@dataclass(frozen=True)
class Joint:
    """A joint between `parent` and `child` link (0-based paper indices); moment +τ on child, −τ on parent."""

    parent: int
    child: int
    name: str


@dataclass(frozen=True, eq=False)
class ChainModel:
    """Floating hip + three chains of extensible links; immutable, with derived index arrays (see module doc).

    Construct with `ChainModel.build(leg1, leg2, trunk, gravity=9.81)`: leg1 FOOT → HIP, leg2 HIP → FOOT, trunk
    HIP → TOP, each a non-empty sequence of `Link`.
    """

    links: tuple[Link, ...]
    chain_sizes: tuple[int, int, int]
    gravity: float = GRAVITY
    name: str = "anthropomorph"
    # derived (filled in __post_init__)
    chain: np.ndarray = field(init=False, repr=False)      # chain index 0/1/2 per link
    sigma: np.ndarray = field(init=False, repr=False)      # −1 legs, +1 trunk
    rho: np.ndarray = field(init=False, repr=False)        # COM fraction from the proximal joint
    proximal: np.ndarray = field(init=False, repr=False)   # P[k, j] = 1 if j is strictly proximal to k (same chain)
    com_coeff: np.ndarray = field(init=False, repr=False)  # C[k, j] = 1 proximal, ρ_k on the diagonal, else 0
    mu: np.ndarray = field(init=False, repr=False)         # μ_j = m_j ρ_j + S_j
    joints: tuple[Joint, ...] = field(init=False, repr=False)
    joint_matrix: np.ndarray = field(init=False, repr=False)  # B (n−1 × n): generalized φ force = Bᵀ τ
    feet: tuple[int, int] = field(init=False, repr=False)      # distal link of leg 1 and leg 2
    leg_masks: tuple[np.ndarray, np.ndarray] = field(init=False, repr=False)  # 1.0 on the links of leg 1 / leg 2
    stiffness_array: np.ndarray = field(init=False, repr=False)   # k_i, L0_i, c_i per link (read-only)
    rest_array: np.ndarray = field(init=False, repr=False)
    damping_array: np.ndarray = field(init=False, repr=False)
    # what library modules derive from the model once (the tree model of its model file), as `Model.derived`
    derived: dict[str, Any] = field(init=False, repr=False, compare=False, default_factory=dict)

    @classmethod
    def build(cls, leg1: Sequence[Link], leg2: Sequence[Link], trunk: Sequence[Link], *, gravity: float = GRAVITY,
              name: str = "anthropomorph") -> ChainModel:
        for chain_name, chain in (("leg1", leg1), ("leg2", leg2), ("trunk", trunk)):
            if len(chain) < 1:
                raise ModelError(f"chain {chain_name} has no links", argument=chain_name, expected="at least one Link")
            for link in chain:
                if not isinstance(link, Link):
                    raise ModelError(f"{link!r} is not a Link", argument=chain_name, expected="Link objects")
        return cls(tuple(leg1) + tuple(leg2) + tuple(trunk), (len(leg1), len(leg2), len(trunk)),
                   _number(gravity, "gravity", nonnegative=True), name)

    def __post_init__(self) -> None:
        n = len(self.links)
        k1, k2, k3 = self.chain_sizes
        if k1 + k2 + k3 != n or min(self.chain_sizes) < 1:
            raise ModelError(f"chain sizes {self.chain_sizes} do not add up to {n} links", argument="chain_sizes")
        chain = np.repeat([0, 1, 2], self.chain_sizes)
        # proximal → distal order of every chain, in paper indices
        orders = [list(range(k1 - 1, -1, -1)), list(range(k1, k1 + k2)), list(range(k1 + k2, n))]
        m = np.array([lk.mass for lk in self.links])
        nn = np.array([lk.n for lk in self.links])
        sigma = np.array([SIGMA[CHAINS[c]] for c in chain])
        rho = np.where(chain < 2, 1.0 - nn, nn)
        prox = np.zeros((n, n))
        joints = []
        for c, order in enumerate(orders):
            for pos, k in enumerate(order):
                prox[k, order[:pos]] = 1.0
                if pos > 0:
                    joints.append(Joint(order[pos - 1], k, f"{self.link_name(order[pos - 1])}-{self.link_name(k)}"))
                elif c < 2:
                    root = orders[2][0]
                    joints.append(Joint(root, k, f"hip:{self.link_name(root)}-{self.link_name(k)}"))
        com = prox + np.diag(rho)
        mu = com.T @ m
        B = np.zeros((len(joints), n))
        for r, jt in enumerate(joints):
            B[r, jt.child], B[r, jt.parent] = 1.0, -1.0
        for name, value in (("chain", chain), ("sigma", sigma), ("rho", rho), ("proximal", prox), ("com_coeff", com),
                            ("mu", mu), ("joint_matrix", B), ("stiffness_array", self.stiffness),
                            ("rest_array", self.rest_lengths), ("damping_array", self.damping)):
            value = np.array(value)
            value.setflags(write=False)
            object.__setattr__(self, name, value)
        object.__setattr__(self, "joints", tuple(joints))
        object.__setattr__(self, "feet", (orders[0][-1], orders[1][-1]))
        masks = tuple((chain == c).astype(float) for c in (0, 1))
        for mask in masks:
            mask.setflags(write=False)
        object.__setattr__(self, "leg_masks", masks)

    # ---- simple views -------------------------------------------------------------------------------------
    @property
    def n_links(self) -> int:
        return len(self.links)

    @property
    def dof(self) -> int:
        return 2 * self.n_links + 2

    @property
    def masses(self) -> np.ndarray:
        return np.array([lk.mass for lk in self.links])

    @property
    def total_mass(self) -> float:
        return float(self.masses.sum())

    @property
    def rest_lengths(self) -> np.ndarray:
        return np.array([lk.rest_length for lk in self.links])

    @property
    def stiffness(self) -> np.ndarray:
        return np.array([lk.stiffness for lk in self.links])

    @property
    def damping(self) -> np.ndarray:
        return np.array([lk.damping for lk in self.links])

    @property
    def time_varying_inertia(self) -> bool:
        return any(lk.inertia.time_varying for lk in self.links)

    def inertia(self, t: float = 0.0) -> np.ndarray:
        return np.array([lk.inertia.value(t) for lk in self.links], dtype=float)

    def inertia_rate(self, t: float = 0.0) -> np.ndarray:
        return np.array([lk.inertia.rate(t) for lk in self.links], dtype=float)

    def link_name(self, i: int) -> str:
        return self.links[i].name or f"link{i + 1}"

    @property
    def coordinate_names(self) -> list[str]:
        n = self.n_links
        return ["x", "y"] + [f"phi{i + 1}" for i in range(n)] + [f"l{i + 1}" for i in range(n)]

    # ---- dynamics: the vocabulary of every model kind, on the tree model of the model file (SI units) ---------
    def tree_model(self, t: float = 0.0):
        """The tree `biobullet.Model` of this chain's model file (`model_file`, loaded once); its q and v are this
        model's (x, y, φ, l). A time-varying I(t) must be > 0 at `t` (ModelError naming the link otherwise)."""
        model = self.derived.get("constant_inertia_tree")   # (the per-call path: no checks to make)
        if model is not None:
            return model
        from biobullet.extensible.model_file import tree_model
        if not self.time_varying_inertia:
            model = self.derived["constant_inertia_tree"] = tree_model(self)
            return model
        values = self.inertia(t)
        if not np.all(values > 0.0):
            k = int(np.argmin(values > 0.0))
            raise ModelError(f"I(t = {float(t):.9g} s) = {values[k]:g} kg·m² is not positive", element=self.link_name(k),
                             attribute="inertia", expected="a time-varying inertia > 0 wherever it is evaluated")
        return tree_model(self)

    def mass_matrix(self, q: np.ndarray, t: float = 0.0) -> np.ndarray:
        """M(q, t), (2n+2)²."""
        return self.tree_model(t).mass_matrix(np.asarray(q, dtype=float), float(t))

    def elastic_forces(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The links' springs and dampers k (l − L0) + c l̇ (n: the l rows; the model file's `<joint_spring>`s)."""
        n = self.n_links
        return self.stiffness_array * (q[2 + n:] - self.rest_array) + self.damping_array * v[2 + n:]

    def bias_forces(self, q: np.ndarray, v: np.ndarray, t: float = 0.0) -> np.ndarray:
        """h(q, v, t) of M v̇ + h = Q: velocity, gravity, İφ̇ (the tree's), spring and damper terms."""
        q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
        h = self.tree_model(t).bias_forces(q, v, float(t))
        h[2 + self.n_links:] += self.elastic_forces(q, v)
        return h

    def forward_dynamics(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray | None = None,
                         t: float = 0.0) -> np.ndarray:
        """v̇ from M v̇ = Q − h: the tree model's forward dynamics (the pipeline's solve) with the links' springs
        and dampers as generalized forces; `tau` = Q (2n+2), default zero. The pipeline's SolverError where M is
        singular to round-off (every link parallel: stretching every link about its fixed COM then has no
        inertia; it names the link length whose pivot is refused)."""
        q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
        force = np.zeros(self.dof) if tau is None else np.array(tau, dtype=float)
        if force.shape != (self.dof,):
            raise ModelError(f"got shape {force.shape}", argument="tau", expected=f"({self.dof},) generalized forces")
        force[2 + self.n_links:] -= self.elastic_forces(q, v)
        return self.tree_model(t).forward_dynamics(q, v, force, float(t))

    def chain_order(self, c: int) -> list[int]:
        """Paper indices of chain c (0 leg1, 1 leg2, 2 trunk) from the hip outwards."""
        idx = [i for i in range(self.n_links) if self.chain[i] == c]
        return idx[::-1] if c == 0 else idx

    # ---- file format --------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        k1, k2, _ = self.chain_sizes
        def link_dict(lk: Link) -> dict[str, Any]:
            return {"name": lk.name, "mass": lk.mass, "n": lk.n, "rest_length": lk.rest_length,
                    "stiffness": lk.stiffness, "damping": lk.damping, "inertia": lk.inertia.to_json()}
        return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "name": self.name, "gravity": self.gravity,
                "leg1": [link_dict(lk) for lk in self.links[:k1]],
                "leg2": [link_dict(lk) for lk in self.links[k1:k1 + k2]],
                "trunk": [link_dict(lk) for lk in self.links[k1 + k2:]]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


_LINK_KEYS = {"name", "mass", "n", "rest_length", "stiffness", "damping", "inertia"}
_TOP_KEYS = {"format", "version", "name", "gravity", "leg1", "leg2", "trunk"}


def _inertia_from(value: Any, file: str | None, element: str) -> InertiaLaw | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        return InertiaLaw("constant", (_number(value, "inertia", nonnegative=True, file=file, element=element),))
    unknown = set(value) - {"kind", "coefficients", "sine", "period"}
    if unknown:
        raise ModelError(f"unknown key(s) {sorted(unknown)}", file=file, element=element, attribute="inertia",
                         expected="kind, coefficients, sine, period")
    kind = value.get("kind", "polynomial")
    coeffs = value.get("coefficients")
    sine = value.get("sine", [])
    if not isinstance(coeffs, list) or not isinstance(sine, list):
        raise ModelError("coefficients/sine must be lists of numbers", file=file, element=element,
                         attribute="inertia", expected="lists of numbers")
    try:
        return InertiaLaw(str(kind), tuple(_number(c, "inertia.coefficients", file=file, element=element)
                                           for c in coeffs),
                          tuple(_number(c, "inertia.sine", file=file, element=element) for c in sine),
                          _number(value.get("period", 1.0), "inertia.period", file=file, element=element))
    except ModelError as err:
        if err.file:
            raise
        raise ModelError(err.detail, file=file, element=element, attribute="inertia." + (err.attribute or ""),
                         expected=err.expected) from None


def from_dict(data: Any, *, file: str | None = None) -> ChainModel:
    """Build a ChainModel from the parsed JSON document (see docs/anthropomorph.md); errors name file/key."""
    if not isinstance(data, Mapping):
        raise ModelError("the document is not a JSON object", file=file, expected="an object with leg1, leg2, trunk")
    if data.get("format", FORMAT_NAME) != FORMAT_NAME:
        raise ModelError(f"format {data.get('format')!r}", file=file, attribute="format", expected=repr(FORMAT_NAME))
    if data.get("version", FORMAT_VERSION) != FORMAT_VERSION:
        raise ModelError(f"version {data.get('version')!r}", file=file, attribute="version",
                         expected=str(FORMAT_VERSION))
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise ModelError(f"unknown key(s) {sorted(unknown)}", file=file, expected=", ".join(sorted(_TOP_KEYS)))
    chains = []
    for cname in CHAINS:
        items = data.get(cname)
        if not isinstance(items, list) or not items:
            raise ModelError(f"'{cname}' is missing or empty", file=file, attribute=cname,
                             expected="a non-empty list of link objects")
        links = []
        for i, item in enumerate(items):
            element = f"{cname}[{i}]"
            if not isinstance(item, Mapping):
                raise ModelError("not an object", file=file, element=element, expected="a link object")
            bad = set(item) - _LINK_KEYS
            if bad:
                raise ModelError(f"unknown key(s) {sorted(bad)}", file=file, element=element,
                                 expected=", ".join(sorted(_LINK_KEYS)))
            for key in ("mass", "n", "rest_length", "stiffness"):
                if key not in item:
                    raise ModelError("missing", file=file, element=element, attribute=key, expected="a number")
            nm = item.get("name", "")
            if not isinstance(nm, str):
                raise ModelError(f"{nm!r}", file=file, element=element, attribute="name", expected="a string")
            vals = {key: _number(item[key], key, file=file, element=element)
                    for key in ("mass", "n", "rest_length", "stiffness")}
            vals["damping"] = _number(item.get("damping", 0.0), "damping", file=file, element=element)
            try:
                links.append(Link(inertia=_inertia_from(item.get("inertia"), file, element), name=nm, **vals))
            except ModelError as err:
                if err.file:
                    raise
                raise ModelError(err.detail, file=file, element=element, attribute=err.attribute,
                                 expected=err.expected) from None
        chains.append(links)
    gravity = _number(data.get("gravity", GRAVITY), "gravity", nonnegative=True, file=file)
    name = data.get("name", "anthropomorph")
    return ChainModel.build(*chains, gravity=gravity, name=str(name))


def _reject_constant(token: str) -> float:
    raise ValueError(f"non-standard JSON number {token}")


def loads(text: str, *, file: str | None = None) -> ChainModel:
    """Parse the JSON text of a chain model (NaN/Infinity tokens refused)."""
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as err:
        raise ModelError(f"not valid JSON: {err}", file=file, expected="a JSON chain-model document") from None
    return from_dict(data, file=file)


def load(path: str | os.PathLike[str]) -> ChainModel:
    """Read a chain model file (JSON, UTF-8)."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as err:
        raise ModelError(f"cannot read: {err}", file=path) from None
    return loads(text, file=path)


# ---- reference parameter sets (issue #15; documented substitutes, the paper gives none) --------------------------
def _links(m, n, L0, k, names, damping=0.0):
    return [Link(mass=mi, n=ni, rest_length=li, stiffness=k, damping=damping, name=nm)
            for mi, ni, li, nm in zip(m, n, L0, names)]


def six_link_reference(*, damping: float = 0.0) -> ChainModel:
    """Six links: m = (3.5, 7, 7, 3.5, 20, 25) kg, n = (.57, .57, .57, .57, .5, .5), L0 = (.45, .45, .45, .45, .30,
    .45) m, k = 1e5 N/m, I = m L0²/12, g = 9.81 m/s². Paper numbering: 1 shank, 2 thigh (leg 1, foot → hip),
    3 thigh, 4 shank (leg 2), 5 lower, 6 upper trunk."""
    links = _links((3.5, 7, 7, 3.5, 20, 25), (0.57, 0.57, 0.57, 0.57, 0.5, 0.5), (0.45, 0.45, 0.45, 0.45, 0.30, 0.45),
                   1.0e5, ("shank1", "thigh1", "thigh2", "shank2", "trunk_lower", "trunk_upper"), damping)
    return ChainModel.build(links[0:2], links[2:4], links[4:6], name="six_link_reference")


def three_link_reference(*, damping: float = 0.0) -> ChainModel:
    """Three links: m = (10, 10, 46) kg, n = (.55, .55, .4), L0 = (.9, .9, .8) m, k = 1e5 N/m, I = m L0²/12."""
    links = _links((10, 10, 46), (0.55, 0.55, 0.4), (0.9, 0.9, 0.8), 1.0e5, ("leg1", "leg2", "trunk"), damping)
    return ChainModel.build(links[0:1], links[1:2], links[2:3], name="three_link_reference")


def reference_flight_state(model: ChainModel | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The issue's six-link flight initial state (q, v): x = 0, y = 1, φ = π/2 + (.1, .3, −.3, −.1, 0, .05),
    l = 1.01 L0; v = (1, 1.5, .5, −1, 1, −.5, .2, −.3, .05, 0, 0, −.05, 0, 0)."""
    model = model or six_link_reference()
    if model.n_links != 6:
        raise ModelError("the reference flight state is for six links", argument="model")
    q = np.concatenate([[0.0, 1.0], np.pi / 2 + np.array([0.1, 0.3, -0.3, -0.1, 0.0, 0.05]),
                        1.01 * model.rest_lengths])
    v = np.array([1.0, 1.5, 0.5, -1.0, 1.0, -0.5, 0.2, -0.3, 0.05, 0.0, 0.0, -0.05, 0.0, 0.0])
    return q, v
