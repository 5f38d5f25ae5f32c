"""The (compiled model, data arrays) pair the forward kernel's entry takes as one argument, held by a `Data`.

Why: numba converts a NamedTuple argument array by array on every call from Python — the compiled model, its loop
table and the data arrays hold ≈ 50 arrays, ≈ 3 µs per call (measured), two to three times Pinocchio's whole
`crba`. A numba StructRef holding both tuples (`core.jit_pair.PairRef`, fields `model`: CompiledModel, `data`:
DataArrays) converts once, when `pack_workspace` builds it; a call then passes one pointer and reads the tuples'
arrays (the same buffers: what Python writes into data.arrays — the loop warm starts — the kernel sees). Imported
where the entry is first built (`Data`), not at `import biobullet`. The uncompiled form is a `core.jit_pair.Pair`
NamedTuple with the same two fields, which the uncompiled stages read the same way.
"""
from __future__ import annotations

from biobullet.core import jit
from biobullet.core.jit_pair import new_pair


def pack_workspace_py(model, data):
    """The workspace of a CompiledModel and its DataArrays."""
    return new_pair(model, data)


def pack_workspace(model, data):
    """`pack_workspace_py` compiled (cached on disk; one specialisation serves every model), called once per Data."""
    kernel = jit.compiled(pack_workspace_py)
    return pack_workspace_py(model, data) if kernel is None else kernel(model, data)
