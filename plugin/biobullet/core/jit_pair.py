"""A numba StructRef holding the fields of two NamedTuples (a compiled model's and its data's) in one flat record,
passed to a compiled kernel as one pointer.

Why one record, flat: numba converts a NamedTuple argument array by array on every call from Python (≈ 3 µs for
the ≈ 50 arrays of a compiled model and its data); a StructRef converts once, when a kernel builds it
(`pack_record`), and a call then passes one pointer whose fields are the same buffers. Flat,
because reading a field takes a reference on what it reads: a field holding a whole tuple took one on each of its
arrays (≈ 50 atomic increments and as many decrements a call, ≈ 0.4 µs of a small tree's 2 µs call, measured
with perf), a flat field on one array.

A call passes the record by its address, an integer (`address_of`, `record_at`): numba converts a StructRef
argument by looking its `_meminfo` attribute up by a name it builds on every call (≈ 0.1 µs, a tenth of a small
tree's call); an integer converts in nanoseconds. The holder of the address keeps the record alive (a `Data` holds
both).

Beside `core.jit`, this is the one other module that imports numba (a type definition with its field access,
three intrinsics; its one kernel, `pack_record`'s, compiled through `core.jit`); it is imported where a record is
first built, never at `import biobullet`. Records in use: the public calls' workspace (a compiled model and its data,
`pipeline.data.Data`), the loop stage's tables, warm starts and Newton work arrays (`constraints.newton_kernel.
loop_record`: passed from kernel to kernel as one pointer, not as tuples of ≈ 50 arrays), a run's muscle rows. `new_pair(model, data)`
gives a namespace of both tuples' fields in Python (the uncompiled form, read the same way) and a `PairRef` in a
compiled kernel. The two tuples' field names must differ. `borrow_pair` builds the same record without references
on its arrays (no atomic reference counts in the kernels that read it; its caller keeps the arrays alive).
"""
from __future__ import annotations

from types import SimpleNamespace

from llvmlite import ir
from numba import typeof
from numba.core import cgutils, imputils, types
from numba.core.datamodel import default_manager, models
from numba.core.extending import intrinsic, overload
from numba.core.imputils import lower_getattr_generic, lower_setattr_generic
from numba.core.typing.templates import AttributeTemplate, infer_getattr
from numba.experimental import structref


class PairType(types.StructRef):
    """The numba type of a PairRef (its fields' names and types: the two tuples')."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(kind)) for name, kind in fields)


# PairType registered as `structref.register` does, but its fields are read and written without numba's runtime:
# the payload found from the meminfo by the address arithmetic of numba's `NRT_MemInfo_data_fast` (the meminfo's
# fourth member, after refct, dtor, dtor_info), not by a call the runtime must provide. A kernel compiled without
# the runtime (`core.jit.compiled(nrt=False)`: no reference-count calls at all) can then read a record
# (`pipeline.stages.forward_py`); numba's own structref getattr refuses there ("NRT required").
default_manager.register(PairType, models.StructRefModel)
_MEMINFO_HEAD = ir.LiteralStructType([cgutils.intp_t, cgutils.voidptr_t, cgutils.voidptr_t, cgutils.voidptr_t])


def _payload(context, builder, kind, value):
    """The fields of the record `value` (numba type `kind`) as a struct proxy of its payload."""
    meminfo = cgutils.create_struct_proxy(kind)(context, builder, value=value).meminfo
    head = builder.bitcast(meminfo, _MEMINFO_HEAD.as_pointer())
    data = builder.load(cgutils.gep(builder, head, 0, 3))
    payload = kind.get_data_type()
    pointer = builder.bitcast(data, context.data_model_manager[payload].get_value_type().as_pointer())
    return cgutils.create_struct_proxy(payload)(context, builder, ref=pointer)


@infer_getattr
class _PairAttribute(AttributeTemplate):
    key = PairType

    def generic_resolve(self, typ, attr):
        if attr in typ.field_dict:
            return typ.field_dict[attr]


@lower_getattr_generic(PairType)
def _pair_getattr(context, builder, kind, value, attr):
    field = getattr(_payload(context, builder, kind, value), attr)
    return imputils.impl_ret_borrowed(context, builder, kind.field_dict[attr], field)


@lower_setattr_generic(PairType)
def _pair_setattr(context, builder, signature, args, attr):
    kind, value_kind = signature.args
    payload = _payload(context, builder, kind, args[0])
    value = context.cast(builder, args[1], value_kind, kind.field_dict[attr])
    old = getattr(payload, attr)
    if context.enable_nrt:   # (the new reference first: the old value may be the new one)
        context.nrt.incref(builder, value_kind, value)
        context.nrt.decref(builder, value_kind, old)
    setattr(payload, attr, value)


class PairRef(structref.StructRefProxy):
    """The fields of a (model, data) pair as the compiled kernels hold them; opaque to Python."""


structref.define_boxing(PairType, PairRef)


def new_pair(model, data):
    """The fields of the NamedTuples `model` and `data` in one record: a namespace in Python; a PairRef in a
    compiled kernel (the overload below)."""
    return SimpleNamespace(**model._asdict(), **data._asdict())


def borrow_pair(model, data):
    """`new_pair` whose record borrows its arrays: every array it holds (in nested tuples too) has no reference
    count (numba's meminfo NULL), so taking and dropping references on them — at each field read and at each
    compiled call they are passed to, ≈ 2 atomic operations per array per call level — costs a null test, not
    an atomic add. The record then does not keep them alive: the caller holds `model` and `data` as long as the
    record is in use (a `Data` holds its compiled model, its arrays and its record). A
    kernel never returns such an array to Python (nothing would own it). In Python the same namespace as
    `new_pair`."""
    return new_pair(model, data)


def _borrowed(context, builder, kind, value):
    """`value` (of numba type `kind`) with the meminfo of every array in it NULL (`borrow_pair`)."""
    if isinstance(kind, types.Array):
        array = context.make_array(kind)(context, builder, value=value)
        array.meminfo = cgutils.get_null_value(array.meminfo.type)
        return array._getvalue()
    if isinstance(kind, types.BaseTuple):
        for k, member in enumerate(kind):
            part = _borrowed(context, builder, member, builder.extract_value(value, k))
            value = builder.insert_value(value, part, k)
    return value


def _fields_storer(borrow: bool):
    @intrinsic
    def store_fields(typingctx, record, model, data):
        """Each member of the tuples `model` and `data` into the field of `record` of its name (a reference
        taken; `borrow`: `_borrowed`)."""
        def codegen(context, builder, signature, args):
            for kind, value in zip(signature.args[1:], args[1:]):
                for k, (name, member) in enumerate(zip(kind.fields, kind)):
                    store = context.get_setattr(name, types.none(signature.args[0], member))
                    part = builder.extract_value(value, k)
                    store(builder, (args[0], _borrowed(context, builder, member, part) if borrow else part))
            return context.get_dummy_value()
        return types.none(record, model, data), codegen
    return store_fields


def _pair_builder(store_fields):
    def typer(model, data):
        kind = PairType(list(zip(model.fields, model)) + list(zip(data.fields, data)))

        def build(model, data):
            record = structref.new(kind)
            store_fields(record, model, data)
            return record
        return build
    return typer


overload(new_pair)(_pair_builder(_fields_storer(False)))
overload(borrow_pair)(_pair_builder(_fields_storer(True)))


def record_type(model, data) -> PairType:
    """The numba type of `new_pair(model, data)` in a compiled kernel."""
    first, second = typeof(model), typeof(data)
    return PairType(list(zip(first.fields, first)) + list(zip(second.fields, second)))


def type_stand_in(model, data) -> SimpleNamespace:
    """An object numba types as the record of `new_pair(model, data)` (`record_type`, its `_numba_type_`) and that
    holds nothing: for a look-up of a kernel's argument types (`core.jit.is_cached`) that must not build — compile
    the packing kernel for — the record itself."""
    return SimpleNamespace(_numba_type_=record_type(model, data))


def address_of(record):
    """The address of `record` (a PairRef) as an integer in a compiled kernel; `record` itself in Python."""
    return record


@intrinsic
def _address_of(typingctx, record):
    def codegen(context, builder, signature, args):
        meminfo = cgutils.create_struct_proxy(signature.args[0])(context, builder, value=args[0]).meminfo
        return builder.ptrtoint(meminfo, context.get_value_type(types.intp))
    return types.intp(record), codegen


@overload(address_of)
def _address_of_compiled(record):
    return lambda record: _address_of(record)


def _record_itself(address):
    return address


def record_reader(model, data):
    """An intrinsic `read(address)` for a compiled kernel (bound into it as a global): the record of
    `new_pair(model, data)`'s type at `address` (`address_of`), a new reference. Its `_biobullet_signature` (what
    `core.jit` digests for a bound intrinsic) is the record's type, so a kernel cached for another layout is
    compiled again. With numba switched off (`core.jit.ENABLED`), the uncompiled kernels' reader: in Python the
    "address" is the record itself (`address_of`)."""
    from biobullet.core import jit
    if not jit.compiling():
        return _record_itself
    kind = record_type(model, data)

    @intrinsic
    def read(typingctx, address):
        def codegen(context, builder, signature, args):
            record = cgutils.create_struct_proxy(kind)(context, builder)
            record.meminfo = builder.inttoptr(args[0], record.meminfo.type)
            value = record._getvalue()
            if context.enable_nrt:   # released where the kernel drops the record (a kernel compiled
                context.nrt.incref(builder, kind, value)   # without the runtime counts none)
            return value
        return kind(address), codegen
    read._biobullet_signature = str(kind)
    return read


def pack_record_py(model, data):
    """(the record of the NamedTuples `model` and `data` (`new_pair`), its address): the caller keeps the record
    alive while the address is in use."""
    record = new_pair(model, data)
    return record, address_of(record)


def pack_borrowed_record_py(model, data):
    """`pack_record_py` whose record borrows the arrays (`borrow_pair`: no reference counts on them in the
    kernels): the caller keeps `model` and `data` alive as long as the record."""
    record = borrow_pair(model, data)
    return record, address_of(record)


def pack_record(model, data, borrowed: bool = False) -> tuple:
    """`pack_record_py` compiled (cached on disk beside this file, whose source is the record's layout), one
    specialisation per pair of NamedTuple types — the public calls' workspace, the loop record, a run's muscle
    rows — whatever the model (`borrowed`: `pack_borrowed_record_py`); in Python (numba off) the namespace, itself."""
    from biobullet.core import jit
    return jit.compiled(pack_borrowed_record_py if borrowed else pack_record_py)(model, data)
