"""A two-field numba StructRef (`model`, `data`): two NamedTuples of arrays passed to a compiled kernel as one
pointer. numba converts a NamedTuple argument array by array on every call from Python (≈ 3 µs for the ≈ 50 arrays
of a compiled model and its data); a StructRef holding both converts once, when a kernel builds it
(`pipeline.workspace.pack_workspace`), and a call then passes one pointer whose fields are the same buffers.

Beside `core.jit`, this is the one other module that imports numba (a type definition, no kernel); it is imported
where a pair is first built, never at `import biobullet`. `new_pair(model, data)` gives a `Pair` NamedTuple in
Python (the uncompiled form, read the same way) and a `PairRef` in a compiled kernel.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from numba.core import types
from numba.core.extending import overload
from numba.experimental import structref


@structref.register
class PairType(types.StructRef):
    """The numba type of a PairRef (its fields' types: the two tuples')."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(kind)) for name, kind in fields)


class PairRef(structref.StructRefProxy):
    """A (model, data) pair as the compiled kernels hold it; opaque to Python."""


structref.define_boxing(PairType, PairRef)


class Pair(NamedTuple):
    """The uncompiled form of a PairRef."""

    model: Any
    data: Any


def new_pair(model, data):
    """A Pair in Python; a PairRef in a compiled kernel (the overload below)."""
    return Pair(model, data)


@overload(new_pair)
def _new_pair_compiled(model, data):
    kind = PairType([("model", model), ("data", data)])

    def build(model, data):
        pair = structref.new(kind)
        pair.model = model
        pair.data = data
        return pair
    return build
