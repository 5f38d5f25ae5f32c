"""Make PyBullet simulate the bodies the model describes (same masses and inertia tensors as the engine).

PyBullet departs from the URDF file (and from Pinocchio and the reference engine) in three ways, even with
`URDF_USE_INERTIA_FROM_FILE`:
  * a link without `<inertial>` gets 1 kg and a unit inertia (the URDF specification says: zero mass and inertia);
  * a tensor that violates the triangle inequality is replaced by zero ("Bad inertia tensor properties"), an
    indefinite one by its diagonal;
  * under `load_model(..., inertia="repair")` the model uses the nearest physical tensor, PyBullet the file's.
`match_inertia` sets each such link's mass and principal moments with `changeDynamics`. PyBullet keeps the
inertial frame it computed at load time (COM position and principal axes cannot be changed afterwards), so a link
is matched only where the model's tensor is diagonal in that frame — always true for the three cases above
(repair keeps the principal axes; a link without `<inertial>` has zero inertia); any other link is named in a
warning. A massless root of a floating base cannot be matched: PyBullet makes a body with a massless base static.
"""
from __future__ import annotations

import warnings

import numpy as np

from biobullet.core.native import import_pybullet
from biobullet.core.errors import ModelError

#: relative tolerance on masses and tensors (PyBullet stores floats from a diagonalisation: ~1e-7 relative)
TOLERANCE = 1e-6
#: PyBullet's URDF importer stops its Jacobi diagonalisation (`btMatrix3x3::diagonalize(basis, 1e-6, 30)`) once every
#: off-diagonal entry is within 1e-6 of the trace and drops what is left: its principal frame then reproduces a
#: tensor with nearly equal moments (TIAGo's wheels: 0.0049974, 0.0049975) only to that bound, twice it allowed
DIAGONALISATION = 2e-6


def model_link_inertia(link) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass kg, COM m, tensor about the COM kg·m²) of a described link, link frame; zero without `<inertial>`."""
    if link.inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    return float(link.inertial.mass), np.array(link.inertial.com, float), np.array(link.inertial.inertia, float)


def massless_base_error(model, link: str, what: str) -> ModelError:
    """The error of a floating base whose root link `link` PyBullet stores without mass (`what`: how it came to)."""
    return ModelError(f"the floating base's root link '{link}' {what}: PyBullet makes such a body static (its base "
                      "never moves), so the bridge cannot run this model; give the link a mass, or load the model "
                      "with floating_base=False", file=model.file, element=f'<link name="{link}">',
                      attribute="inertial")


def massless_links(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """The links whose stored mass went from > 0 to 0 between two `{link: (mass, inertia diagonal)}` reads:
    changeDynamics(mass=0) — PyBullet zeroes the link's inertia with it, so its joint carries no inertia and no
    step (the bridge's solve or PyBullet's) has a defined acceleration for it."""
    return [name for name, values in after.items() if values[0] == 0.0 and before.get(name, values)[0] > 0.0]


def _kept_inertia(name: str, mass: float, info, massless_root: bool) -> str:
    """Why PyBullet keeps its own inertia of link `name` (model mass `mass`, kg; `info`: getDynamicsInfo) and the
    values it keeps: the user reads how far the bridge's robot is from the file's (a massless root given PyBullet's
    default 1 kg and unit moments moves unlike the file's robot, not by a step error)."""
    moments = ", ".join(f"{value:.6g}" for value in info[2])
    why = ("a massless floating root would make PyBullet's body static" if massless_root
           else "its inertial frame (COM, principal axes), fixed at load time, does not fit the model's")
    return (f"{name}: {why}; the model's {mass:.6g} kg, PyBullet's {info[0]:.6g} kg and principal moments "
            f"{moments} kg·m²")


def match_inertia(model, client: int, body: int, link_index: dict[str, int],
                  description=None) -> tuple[list[str], list[str]]:
    """Set PyBullet's mass and principal moments of every link whose inertia differs from the model's; returns the
    links changed and those PyBullet cannot take. Warns once naming links without `<inertial>` (set to zero mass as in the engine) and once
    naming links that PyBullet cannot represent. Raises ModelError when a user's body was loaded without
    `URDF_USE_INERTIA_FROM_FILE` (every tensor differs, not only the three cases above). `description`: what
    the body should be (default the model's; validation passes the description of the file PyBullet read)."""
    p = import_pybullet()   # banner kept off the terminal (core.native)
    from biobullet.spatial.rotations import quaternion_to_matrix
    description = model.description if description is None else description
    issue_links = {issue[0] for issue in description.inertia_issues}
    changed, missing, impossible, foreign = [], [], [], []
    kept: list[str] = []   # per link of `impossible`: why, and the values PyBullet simulates instead
    for link in description.links:
        index = link_index.get(link.name)
        if index is None or (index < 0 and not model.floating_base):
            continue  # a fixed base does not enter the dynamics
        mass, com, inertia = model_link_inertia(link)
        info = p.getDynamicsInfo(body, index, physicsClientId=client)
        if index < 0 and info[0] == 0.0:
            raise massless_base_error(model, link.name, "has no mass")
        rotation = quaternion_to_matrix(info[4])
        stored = rotation @ np.diag(info[2]) @ rotation.T
        scale = max(float(np.abs(inertia).max()), float(np.abs(stored).max()), 1e-12)
        same_mass = abs(info[0] - mass) <= TOLERANCE * max(mass, 1e-12)
        dropped = DIAGONALISATION * float(np.abs(np.diag(inertia)).sum())
        if same_mass and float(np.abs(stored - inertia).max()) <= TOLERANCE * scale + dropped + 1e-12:
            continue
        special = link.inertial is None or link.name in issue_links
        if not special:
            foreign.append(link.name)
            continue
        principal = rotation.T @ inertia @ rotation
        off_diagonal = float(np.abs(principal - np.diag(np.diag(principal))).max())
        if off_diagonal > TOLERANCE * scale or (index < 0 and mass == 0.0) \
                or (mass > 0 and float(np.abs(np.asarray(info[3]) - com).max()) > TOLERANCE * max(1.0, np.abs(com).max())
                    and link.inertial is not None):
            impossible.append(link.name)
            kept.append(_kept_inertia(link.name, mass, info, index < 0 and mass == 0.0))
            continue
        p.changeDynamics(body, index, mass=mass, localInertiaDiagonal=np.diag(principal).tolist(),
                         physicsClientId=client)
        changed.append(link.name)
        if link.inertial is None:
            missing.append(link.name)
    if foreign:
        raise ModelError(f"PyBullet body {body} has different inertia on links {', '.join(foreign[:5])} than the "
                         "file (loaded without flags=URDF_USE_INERTIA_FROM_FILE?)", file=model.file,
                         attribute="body_id")
    if missing:
        warnings.warn(f"{model.file}: links without <inertial> ({', '.join(missing)}) have zero mass and inertia "
                      "(URDF specification, Pinocchio, the reference engine); PyBullet's default of 1 kg was set "
                      "to zero so that the bridge simulates the same robot", stacklevel=3)
    if impossible:
        warnings.warn(f"{model.file}: PyBullet cannot take the model's inertia of links {', '.join(impossible)} "
                      f"({'; '.join(kept)}); the bridge simulates PyBullet's values for them: another robot than the "
                      "reference engine's, whose runs differ from the bridge's by more than its step error",
                      stacklevel=3)
    return changed, impossible

