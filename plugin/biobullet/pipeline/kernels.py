"""The compiled stages of `pipeline.stages`, each bound to the compiled kernels it calls (`core.jit.compiled`:
cached on disk, loaded on later runs). Each function returns the kernel.

One right-hand side for every model without loops and one for every model with them (`rhs_kernel`): each has every
force element (joint springs and stops, springs, ground contacts, plug-in elements, muscles) and the tape
interpreter, so models of every feature share it (compiled once per installation). The `loops` flag is the one
feature flag left: bound as a constant, numba prunes the loop stage's branch before typing it, and a right-hand side
with it compiled in costs 5–10 % more per call on a model without loops (arm7: 7.6 vs 7.0 µs, coupled_chain 7.0 vs
6.4 µs, thread CPU of direct calls), where springs, contacts, plug-ins and the tape interpreter compiled in cost
nothing measurable (±0.5 %). The forward kernel keeps `loops` likewise.

A stage that takes the structured arguments (CompiledModel, DataArrays, ForceRows) is bound into the compositions
(`forward_kernel`, `rhs_kernel`) inlined (`inline=True`), so it is not compiled apart either: a call of a separate
compiled function passes every array of those tuples with its reference count taken and released (measured: the
four-bar's right-hand side 10.5 → 15–26 µs), an inlined one passes nothing. The tree kernel, which takes plain
arrays, stays a call, and so does the loop Newton of the right-hand side (`constraints.newton_kernel.newton_kernel`):
compiled once instead of once per variant. The forward kernel with loops (the public calls: compiled on a model's
first public call, never by a run) inlines the loop Newton (its solve stays a call): 0.15–0.3 µs less per call,
≈ 14 s more CPU for that first call's compile, measured before `core.jit` made numba copy an inlined callee's
scope once, which cut the whole kernel's compile 45.1 → 17.5 s (docs/speed.md, "Cold start")."""
from __future__ import annotations

from biobullet.algorithms import compiled_kernels
from biobullet.core import jit
from biobullet.model.tree import position_rate_py
from biobullet.pipeline import stages
from biobullet.spatial.dense import MASS_PIVOT_RATIO, massless_coordinate_py


def has_loops(model) -> bool:
    """Whether a compiled model's coordinate map has loop resolvers (the loop stage's Newton kernel): the one
    feature flag of the right-hand side (module docstring)."""
    return bool(model.loops.stages.shape[0])


def _variant(**flags: bool) -> str:
    """The variant name of a kernel compiled with these feature flags ("" with all of them on)."""
    return "_".join(f"no_{name}" for name, on in flags.items() if not on)


def _compiled_with(function, callees, inline: bool = False, variant: str = "", nogil: bool = True,
                   nrt: bool = True):
    """`core.jit.compiled` with the muscle entries bound (`muscles.dynamics.entry_bindings`: the stages call them
    with `ForceRows.muscles`, an address); `callees`: the bindings, or a function giving them (evaluated on the
    kernel's first build only: a run asks for its kernel again)."""
    from biobullet.muscles.dynamics import (entry_bindings, load_muscle_state, muscle_forces, muscle_state_size,
                                            store_muscle_rates)

    def bindings() -> dict:
        return {**entry_bindings(jit.compiling()), "muscle_state_size": muscle_state_size,
                "load_muscle_state": load_muscle_state, "store_muscle_rates": store_muscle_rates,
                "muscle_forces": muscle_forces, **(callees() if callable(callees) else callees)}
    return jit.compiled(function, bind=bindings, inline=inline, variant=variant, nogil=nogil, nrt=nrt)


def ltdl_kernel():
    """The compiled `ltdl_solve_py`."""
    return jit.compiled(stages.ltdl_solve_py)


def joint_state_kernel(inline: bool = False, loops: bool = True, inline_newton: bool = False):
    """The compiled `joint_state_stage_py` (`inline_newton`: with the loop Newton inlined, the public calls' variant,
    `forward_kernel`)."""
    from biobullet.constraints.newton_kernel import newton_kernel
    from biobullet.model.joint_jets import jets_kernel
    callees = {"_STATE": stages.state_into_py, "_JETS": jets_kernel(), "_LOOPS": loops,
               "_POSITIONS": stages.positions_and_rates_py, "_KEEP": inline_newton}
    if loops:
        callees["_NEWTON"] = newton_kernel(inline=inline_newton)
    variant = _variant(loops=loops) + ("newton_inlined" if inline_newton else "")
    return _compiled_with(stages.joint_state_stage_py, callees, inline, variant)


def solve_kernel(inline: bool = False):
    """The compiled `solve_stage_py`."""
    factor, solve = compiled_kernels.cholesky_kernels()
    return _compiled_with(stages.solve_stage_py, {
        "_PROJECT": compiled_kernels.project_upper_into_kernel(), "_LTDL": ltdl_kernel(), "_CHOLESKY_FACTOR": factor,
        "_CHOLESKY_SOLVE": solve, "_PIVOT_RATIO": MASS_PIVOT_RATIO,
        "_MASSLESS": jit.compiled(massless_coordinate_py)}, inline)


def forward_kernel(read_record, loops: bool = True):
    """The compiled `forward_py` (`loops`: `has_loops`); `read_record`: the intrinsic giving the workspace record at
    its address (`core.jit_pair.record_reader`). Models with and without joint functions share it: the joint-state
    stage returns after its prologue for x = q, ẋ = v."""
    def callees() -> dict:
        return {"_READ_RECORD": read_record,
                "_TREE": compiled_kernels.tree_dynamics_into_kernel(),
                "_JOINT_STATE": joint_state_kernel(inline=True, loops=loops, inline_newton=loops),
                "_SOLVE": solve_kernel(inline=True), "_PROJECT": compiled_kernels.project_upper_into_kernel()}
    # (called from Python for ≈ 0.3 µs of work: it keeps the GIL, `core.jit.compiled`). Without numba's runtime: it
    # allocates nothing, and every array it reads is borrowed (the workspace record's, `core.jit_pair.borrow_pair`;
    # q, v, τ from its NRT-free entry), so the reference counts it took at each record field read, slice and tuple
    # — ≈ 150 calls of NRT_incref / NRT_decref per mass-matrix call of the four-bar, ≈ 240 per bias call — were
    # null tests; the record's fields are read without the runtime (`core.jit_pair`)
    return _compiled_with(stages.forward_py, callees, variant=_variant(loops=loops), nogil=False, nrt=False)


def forward_entry(read_record, loops: bool, *args):
    """The public calls' entry from Python for the argument types of `args` (called once with them,
    `core.jit.direct_entry`): `forward_entry_py` over `forward_kernel(read_record, loops)`, compiled without numba's
    reference-counting runtime (`core.jit.compiled(nrt=False)`: ≈ 0.15–0.2 µs less per call, docs/speed.md), as the
    forward kernel is (`forward_kernel`; compiled first, under its own flags: compiled inside the entry's compile,
    a callee takes its caller's runtime switch)."""
    entry = jit.compiled(stages.forward_entry_py, bind=lambda: {"_FORWARD": forward_kernel(read_record, loops)},
                         variant=_variant(loops=loops), nogil=False, nrt=False)
    if not jit.is_cached(entry, *args):
        jit.matched_entry(forward_kernel(read_record, loops), *args)
    return jit.direct_entry(entry, *args)


def applied_forces_kernel(inline: bool = False):
    """The compiled `applied_forces_py`."""
    from biobullet.contact.kernels import ground_forces_kernel
    from biobullet.forces.compiled import joint_forces_kernel, plugin_forces_kernel, spring_forces_kernel
    return _compiled_with(stages.applied_forces_py, {
        "_JOINT_FORCES": joint_forces_kernel(), "_SPRING_FORCES": spring_forces_kernel(),
        "_GROUND_FORCES": ground_forces_kernel(), "_PLUGIN_FORCES": plugin_forces_kernel()}, inline)


def forces_kernel(inline: bool = False):
    """The compiled `forces_stage_py`."""
    from biobullet.constraints.loop_kernels import tree_kinematics_kernel
    return _compiled_with(stages.forces_stage_py, lambda: {"_KINEMATICS": tree_kinematics_kernel(),
                                                           "_APPLIED": applied_forces_kernel(inline=True)}, inline)


def generalized_forces_kernel(inline: bool = False):
    """The compiled `generalized_forces_py`."""
    return jit.compiled(stages.generalized_forces_py, inline=inline)


def rhs_kernel(loops: bool = True):
    """The compiled `rhs_py`: one kernel for every model without loops (`loops=False`) and one for every model with
    them (`has_loops`), whatever its joint functions, force elements, contacts, plug-ins and muscles (module
    docstring)."""
    return _compiled_with(stages.rhs_py, lambda: {
        "_JOINT_STATE": joint_state_kernel(inline=True, loops=loops), "_FORCES": forces_kernel(inline=True),
        "_TREE": compiled_kernels.tree_dynamics_into_kernel(), "_SOLVE": solve_kernel(inline=True),
        "_GENERALIZED": generalized_forces_kernel(inline=True), "_POSITION_RATE": position_rate_py},
        variant=_variant(loops=loops))
