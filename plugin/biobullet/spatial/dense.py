"""Small dense solvers of the equations of motion, and the round-off bound every mass-matrix factorisation keeps."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from biobullet.core import jit
from biobullet.core.errors import SolverError

#: a mass matrix's factorisation declines a pivot (the inertia its direction has left once the directions before it
#: are eliminated) not above MASS_PIVOT_RATIO × its own diagonal entry: singular to round-off. A pivot's round-off is
#: ≈ n · 1.1e-16 of that entry (measured at exactly singular states: 2e-16 to 1.1e-15, either sign); the smallest
#: legitimate ratio measured is 5e-13 (the anthropomorph settling towards its near-parallel stance in the jump study,
#: t ≈ 3 s, cond(M) 1e14), then 8.8e-8 (shoulder_simplified at random states; docs/architecture.md, "solve"). 1e-14
#: sits between: 9× above the round-off seen, 50× below the smallest legitimate pivot.
MASS_PIVOT_RATIO = 1e-14

#: The relative test cannot catch a diagonal entry that is round-off itself: a hinge whose axis passes through a
#: point mass (or a body with no inertia along it), a ball joint centred on a point mass, a prismatic joint moving
#: massless links have M_r[c, c] ≈ ±1e-17 of the subtree's inertia, and a positive one passed (v̇ finite and
#: meaningless). So each coordinate's own diagonal entry — its inertia about its own motion, before any elimination:
#: "moves no mass" is a property of that entry alone — must also be above MASS_FLOOR_RATIO × the bound that entry
#: can reach when its direction moves mass (`direction_mass_bounds`, from the masses, inertias and distances of the
#: bodies it moves, so a 1 mm, 1 g finger or a model in millimetres and grams scales with it). The entry's round-off
#: is ≈ a few ε of that bound (the inertias are summed about each root's anchor); 1e-12 sits ≥ 1000× above it and
#: ≥ 1e6× below the smallest diagonal / bound measured on the bundled models (docs/architecture.md, "solve").
#: Pivots after elimination keep the relative test only: a small pivot of a combination of coordinates that each
#: move mass is a near-singular posture (the anthropomorph's straight flight, cond(M) 1e14), not a massless joint.
MASS_FLOOR_RATIO = 1e-12


def model_reach(bodies: Sequence) -> float:
    """L (m): Σ over non-root bodies of |joint origin| and over bodies of |centre of mass| — a bound of any centre of
    mass's distance from its root's anchor (`direction_mass_bounds`; validate's physical scales)."""
    # (a root body's own placement is left out: the recursions sum each root's subtree about its anchor, so a model
    # mounted 100 km from the world origin keeps its own scale — tests/validation/test_far_from_origin.py)
    return sum(float(np.linalg.norm(b.translation)) * (b.parent >= 0) + float(np.linalg.norm(b.com)) for b in bodies)


def direction_mass_bounds(bodies: Sequence, ancestry: np.ndarray) -> np.ndarray:
    """Per tree direction k (n_tangent,) an upper bound of the tree's M[k, k] over configurations, in k's own
    units (kg for a translation, kg·m² for a rotation): Σ over the bodies b that k moves (ancestry[b, k] ≠ 0) of
    m_b |s_lin|² + (trace(I_c,b) + m_b L²) |s_ang|², s the direction's motion subspace column (joint frame) and L the
    model's reach: Σ over non-root bodies of |joint origin| and over bodies of |centre of mass|, a bound of any
    centre of mass's distance from its root's anchor (about which the pipeline sums the inertias) and from any
    joint axis while no prismatic joint carries it farther (then the bound is lower than the true one, and so is
    the floor: never a refusal of a direction that moves mass). A rotation's M[k, k] = Σ a·I_c a + m d² ≤
    trace(I_c) + m L² (a unit axis); a translation's = Σ m."""
    reach = model_reach(bodies)
    n_tangent = ancestry.shape[1] if ancestry.ndim == 2 else 0
    with np.errstate(over="ignore", invalid="ignore"):   # (a COM at 1e200 m: an infinite bound, no floor)
        moment = np.array([b.mass * np.float64(reach) ** 2 + float(np.trace(b.inertia_com)) for b in bodies])
    mass = np.array([b.mass for b in bodies])
    bounds = np.zeros(n_tangent)
    for b in bodies:
        s = np.asarray(b.motion_subspace, dtype=float)
        for d in range(b.nv):
            k = b.v_index + d
            moved = ancestry[:, k] != 0
            bounds[k] = (float(s[:3, d] @ s[:3, d]) * float(np.sum(mass[moved]))
                         + float(s[3:, d] @ s[3:, d]) * float(np.sum(moment[moved])))
    return bounds


def mass_floor_root(bounds: np.ndarray) -> np.ndarray:
    """√(MASS_FLOOR_RATIO × bound) per tree direction (`CompiledModel.mass_floor_root`, what `massless_coordinate_py`
    reads); 0 where the bound is not finite (magnitudes that overflow: the relative test and the finiteness checks
    decide)."""
    bounds = np.asarray(bounds, dtype=float)
    return np.where(np.isfinite(bounds), np.sqrt(MASS_FLOOR_RATIO * np.where(np.isfinite(bounds), bounds, 0.0)), 0.0)


def massless_coordinate_py(mass, floor_root, gradient, projected):
    """The first coordinate c whose own diagonal entry M_r[c, c] is not above its floor, −1 when none: c moves no
    mass (MASS_FLOOR_RATIO). The floor is floor_root[c]² for a tree solved as M itself (`projected` False: G the
    identity), else (Σ_a |G[a, c]| floor_root[a])² for M_r = Gᵀ M G (|M_ab| ≤ √(M_aa M_bb) bounds its entries, and
    their round-off, the same way). One compare per diagonal entry; a NaN entry is left to the factorisation."""
    for c in range(mass.shape[0]):
        if projected:
            root = 0.0
            for a in range(gradient.shape[0]):
                root += abs(gradient[a, c]) * floor_root[a]
        else:
            root = floor_root[c]
        if mass[c, c] <= root * root:
            return c
    return -1


def massless_coordinate(mass: np.ndarray, floor_root: np.ndarray, gradient: np.ndarray | None) -> int | None:
    """`massless_coordinate_py` from Python (`gradient` None: the identity map), None when every coordinate moves
    mass: the check formulations' and the error path's reading of the pipeline's test."""
    mass = _writable(mass)
    projected = gradient is not None
    index = _massless_coordinate(mass, _writable(floor_root), _writable(gradient) if projected else mass, projected)
    return None if index < 0 else int(index)


def massless_coordinates(mass: np.ndarray, floor_root: np.ndarray, gradient: np.ndarray | None) -> list[int]:
    """Every coordinate `massless_coordinate` refuses (for a report that lists them all)."""
    mass = np.array(mass, dtype=float)
    found: list[int] = []
    while (index := massless_coordinate(mass, floor_root, gradient)) is not None:
        found.append(index)
        mass[index, index] = np.inf   # (the next scan passes it)
    return found


def _writable(array) -> np.ndarray:
    """`array` as a writable C-contiguous float64 array, copied only when it is not one (a read-only argument
    would compile the kernel once more)."""
    array = np.ascontiguousarray(array, dtype=float)
    return array if array.flags.writeable else array.copy()


_massless_coordinate = jit.lazy(massless_coordinate_py)


def coordinate_floor(floor_root: np.ndarray, gradient: np.ndarray | None, index: int) -> float:
    """The floor coordinate `index`'s own diagonal entry is compared with (`massless_coordinate_py`): floor_root² of
    a tree direction, (Σ_a |G[a, c]| floor_root[a])² through G (`gradient` None: the identity map)."""
    root = float(floor_root[index]) if gradient is None else float(np.abs(gradient[:, index]) @ floor_root)
    return root * root


def massless_text(names: Sequence[str], index: int, entry: float, floor: float) -> str:
    """Why a solve refused coordinate names[index]: its own diagonal entry `entry` is not above its `floor`
    (`coordinate_floor`), MASS_FLOOR_RATIO of the most the bodies it moves could have about it at the model's reach
    — the ratio measured is said, not only the verdict (a 1 cm, 1 kg wheel spinning at the end of a 10 km arm moves
    mass, but 5e-13 of the m L² its bodies reach there: below what float64 resolves next to it)."""
    bound = floor / MASS_FLOOR_RATIO
    ratio = entry / bound if bound > 0.0 else float("nan")
    return (f"coordinate {names[index]!r} moves no mass at the model's scale: its own inertia about its motion (the "
            f"mass matrix's diagonal entry, {entry:.3g}) is {ratio:.3g} of the most the bodies it moves could have "
            f"about it at the model's reach ({bound:.3g}: their masses at the reach, their inertias), not above "
            f"{MASS_FLOOR_RATIO:g}, where the round-off of the model's larger terms is as large — a hinge whose axis "
            "passes through a point mass or through a body with no inertia along it, a ball joint centred on a point "
            "mass, a prismatic joint moving massless links, or bodies too small for the model's size (a 1 cm wheel "
            "at the end of a 10 km arm); no acceleration of it is defined (give a moved body mass off the axis, "
            "make the joint fixed, or bring the model's sizes closer)")


def declined_pivot(mass: np.ndarray) -> int | None:
    """The first direction j whose Cholesky pivot is not above MASS_PIVOT_RATIO · M[j, j] (M singular to round-off
    or not positive definite), None when every pivot is: for the error path (O(n⁴))."""
    for j in range(mass.shape[0]):
        try:
            pivot = np.linalg.cholesky(mass[:j + 1, :j + 1])[j, j] ** 2
        except np.linalg.LinAlgError:
            return j
        if not pivot > MASS_PIVOT_RATIO * mass[j, j]:
            return j
    return None


def singular_mass_text(names: Sequence[str], index: int | None) -> str:
    """Why a solve declined: the mass matrix singular to round-off at the direction `index` (names[index]), or
    not positive definite."""
    if index is None:
        return ("the mass matrix is singular or not positive definite (a joint moves no mass, or a joint function "
                "makes coordinates redundant)")
    return (f"the mass matrix is singular to round-off at this state: coordinate {names[index]!r} has no inertia "
            f"left once the coordinates before it are accounted for (its pivot is not above {MASS_PIVOT_RATIO:g} "
            "of its diagonal entry: it moves no mass the others do not already move, or a joint function makes "
            "coordinates redundant)")


def solve_spd(mass: np.ndarray, rhs: np.ndarray, file: str | None = None, names: Sequence[str] = ()) -> np.ndarray:
    """M⁻¹ rhs for a symmetric positive definite M (Cholesky); SolverError naming `file` and the coordinate
    (`names`, one per row) where M is singular to round-off (`MASS_PIVOT_RATIO`) or not positive definite."""
    try:
        factor = np.linalg.cholesky(mass)
    except np.linalg.LinAlgError:
        factor = None
    if factor is None or not np.all(np.diagonal(factor) ** 2 > MASS_PIVOT_RATIO * np.diagonal(mass)):
        prefix = f"{file}: " if file else ""
        index = declined_pivot(mass)
        raise SolverError(prefix + singular_mass_text(names, index if names else None)) from None
    y = np.linalg.solve(factor, rhs)
    return np.linalg.solve(factor.T, y)
