"""The compiled model's and the data arrays' fields in one record, the argument the forward kernel's entry takes,
held by a `Data`.

Why: numba converts a NamedTuple argument array by array on every call from Python — the compiled model, its loop
table and the data arrays hold ≈ 50 arrays, ≈ 3 µs per call (measured), two to three times Pinocchio's whole
`crba`. A numba StructRef holding their fields (`core.jit_pair.PairRef`) converts once, when `pack_workspace`
builds it; a call then passes its address (an integer, `core.jit_pair.record_at`) and reads the fields (the same
buffers: what Python writes into data.arrays — the loop warm starts — the kernel sees). Imported where the entry is first built (`Data`), not at
`import biobullet`. The uncompiled form is a namespace of the same fields, which the uncompiled stages read the
same way.
"""
from __future__ import annotations

import hashlib
import inspect

from biobullet.core import jit, jit_pair
from biobullet.core.jit_pair import address_of, borrow_pair, new_pair


def pack_workspace_py(model, data):
    """(the workspace record of a CompiledModel and its DataArrays, its address): the caller keeps the record
    alive while the address is in use."""
    record = new_pair(model, data)
    return record, address_of(record)


def pack_borrowed_workspace_py(model, data):
    """`pack_workspace_py` whose record borrows the arrays (`core.jit_pair.borrow_pair`: no reference counts
    on them in the kernels): the caller keeps `model` and `data` alive as long as the record."""
    record = borrow_pair(model, data)
    return record, address_of(record)


def pack_workspace(model, data, borrowed: bool = False):
    """`pack_workspace_py` compiled (cached on disk; one specialisation serves every model), called once per Data
    (`borrowed`: `pack_borrowed_workspace_py`) and for a run's muscle rows (`pipeline.force_rows.muscle_record`:
    a second specialisation). The record's layout comes from `core.jit_pair` (its type is what this kernel
    returns): its source's digest is bound as a constant, so a cache built with another layout is dropped
    (`core.jit.compiled`)."""
    layout = hashlib.sha256(inspect.getsource(jit_pair).encode()).hexdigest()
    pack = pack_borrowed_workspace_py if borrowed else pack_workspace_py
    return jit.compiled(pack, bind={"_RECORD_LAYOUT": layout})(model, data)
