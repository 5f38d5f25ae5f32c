"""Mesh files named by URDF `<mesh filename>`: where they are looked up, for the load-time check and the viewer.

Only paths are examined (`os.path.isfile`), nothing is read: the viewer reads the mesh it draws, the load checks
that the files the URDF names exist.
"""
from __future__ import annotations

import os

from biobullet.core.errors import ModelError

#: mesh formats the viewer reads (trimesh); PyBullet reads .stl, .obj and .dae
MESH_EXTENSIONS = (".stl", ".obj", ".dae", ".ply", ".off", ".glb", ".gltf")
#: largest mesh file read (bytes): a body's mesh is a few MB; the parsers (trimesh, PyBullet's) take several
#: times a file's size in memory (a 2 GB sparse .stl took 4.3 GB and 31 s to come out as an empty mesh)
MAX_MESH_BYTES = 256 * 1024 * 1024


def find_mesh_file(file: str, filename: str) -> str | None:
    """The existing mesh file named by `filename` in URDF `file`, or None: `package://PKG/rest` is looked up as a
    directory PKG next to or above the URDF's directory, then in $ROS_PACKAGE_PATH; `file://` and relative names
    are taken from the URDF's directory. A file whose extension is not in MESH_EXTENSIONS is no mesh (None)."""
    base = os.path.dirname(os.path.abspath(file))
    candidates: list[str] = []
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://"):].partition("/")
        roots = []
        directory = base
        while True:
            roots.append(directory)
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
        roots += [r for r in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if r]
        for root in roots:
            if os.path.basename(root) == package:
                candidates.append(os.path.join(root, rest))
            candidates.append(os.path.join(root, package, rest))
    elif filename.startswith("file://"):
        candidates.append(filename[len("file://"):])
    else:
        candidates.append(os.path.join(base, filename))
    for candidate in candidates:
        if os.path.isfile(candidate):
            if os.path.splitext(candidate)[1].lower() not in MESH_EXTENSIONS:
                return None
            return candidate
    return None


def check_mesh_size(file: str, where: str, path: str) -> None:
    """A ModelError naming `<mesh filename>` of element `where` when the mesh file `path` is over MAX_MESH_BYTES."""
    size = os.path.getsize(path)
    if size > MAX_MESH_BYTES:
        raise ModelError(f"mesh file {path!r} is {size / 2**20:.0f} MiB", file=file, element=f"{where} <mesh>",
                         attribute="filename", expected=f"a mesh file of at most {MAX_MESH_BYTES // 2**20} MiB")


def resolve_mesh_path(file: str, where: str, filename: str | None) -> str:
    """`find_mesh_file`, or a ModelError naming the file, the element `where` and the attribute `filename`."""
    if not filename:
        raise ModelError("mesh without filename", file=file, element=f"{where} <mesh>", attribute="filename",
                         expected="a mesh file name")
    found = find_mesh_file(file, filename)
    if found is None:
        raise ModelError(f"mesh file {filename!r} not found (or not a mesh)", file=file, element=f"{where} <mesh>",
                         attribute="filename", expected=f"an existing {'/'.join(MESH_EXTENSIONS)} file "
                         "(package:// is looked up in the URDF's directory, its parents and $ROS_PACKAGE_PATH)")
    check_mesh_size(file, where, found)
    return found
