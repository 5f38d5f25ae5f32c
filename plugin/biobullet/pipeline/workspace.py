"""The (compiled model, data arrays) pair the forward kernel's entry takes as one argument, held by a `Data`.

Why: numba converts a NamedTuple argument array by array on every call from Python — the compiled model, its loop
table and the data arrays hold ≈ 50 arrays, ≈ 3 µs per call (measured), two to three times Pinocchio's whole
`crba`. A numba StructRef holding both tuples converts once, when `pack_workspace` builds it; a call then passes
one pointer and reads the tuples' arrays (the same buffers: what Python writes into data.arrays — the loop warm
starts — the kernel sees). Imported where the entry is first built (`Data`), not at `import biobullet`.

`WorkspaceRef` fields: `model` (CompiledModel), `data` (DataArrays). `pack_workspace_py(model, data)` is the
constructor kernel; its uncompiled form gives a `WorkspacePair` NamedTuple with the same two fields, which the
uncompiled stages read the same way.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from numba.core import types
from numba.core.extending import overload
from numba.experimental import structref

from biobullet.core import jit


@structref.register
class WorkspaceType(types.StructRef):
    """The numba type of a WorkspaceRef (its fields' types: a CompiledModel's and a DataArrays')."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(kind)) for name, kind in fields)


class WorkspaceRef(structref.StructRefProxy):
    """A workspace as the compiled kernels hold it (module docstring); opaque to Python."""


structref.define_boxing(WorkspaceType, WorkspaceRef)


class WorkspacePair(NamedTuple):
    """The uncompiled form of a WorkspaceRef."""

    model: Any
    data: Any


def new_workspace(model, data):
    """A WorkspacePair in Python; a WorkspaceRef in a compiled kernel (the overload below)."""
    return WorkspacePair(model, data)


@overload(new_workspace)
def _new_workspace_compiled(model, data):
    kind = WorkspaceType([("model", model), ("data", data)])

    def build(model, data):
        workspace = structref.new(kind)
        workspace.model = model
        workspace.data = data
        return workspace
    return build


def pack_workspace_py(model, data):
    """The workspace of a CompiledModel and its DataArrays."""
    return new_workspace(model, data)


def pack_workspace(model, data):
    """`pack_workspace_py` compiled (cached on disk; one specialisation serves every model), called once per Data."""
    kernel = jit.compiled(pack_workspace_py)
    return pack_workspace_py(model, data) if kernel is None else kernel(model, data)
