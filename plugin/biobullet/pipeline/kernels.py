"""The compiled stages of `pipeline.stages`, each bound to the compiled kernels it calls (`core.jit.compiled`:
cached on disk, loaded on later runs). Each function returns the kernel.

A model compiles only the stages of the features it has (`features`): the joint-state stage without the
expression-tape interpreter and plug-in jets when its function table has neither (`tapes`), the force stage
without springs, ground contacts and plug-in elements when its force rows have none (`cartesian`), and without
the tree kinematics when it has none of those and no muscles (`muscles`; the muscle stage itself is called by address, `muscles.dynamics`). Each combination is its own
kernel (a `core.jit.compiled` variant, cached apart); the flags are bound as constants, so numba prunes the absent
features' branches before typing them.

A stage that takes the structured arguments (CompiledModel, DataArrays, ForceRows) is bound into the compositions
(`forward_kernel`, `rhs_kernel`) inlined (`inline=True`), so it is not compiled apart either: a call of a separate
compiled function passes every array of those tuples with its reference count taken and released (measured: the
four-bar's right-hand side 10.5 → 15–26 µs), an inlined one passes nothing. The tree kernel, which takes plain
arrays, stays a call, and so does the loop Newton (`constraints.newton_kernel.newton_kernel`): compiled once for
every variant with loops instead of once per variant."""
from __future__ import annotations

from biobullet.algorithms import compiled_kernels
from biobullet.core import jit
from biobullet.model.tree import position_rate_py
from biobullet.pipeline import stages


def features(model, forces=None) -> dict[str, bool]:
    """The feature flags of a compiled model (and a run's ForceRows): `tapes` — its joint-function table has
    EXPRESSION or PLUGIN rows; `loops` — loop resolvers in its coordinate map (the loop stage's Newton kernel);
    `cartesian` — springs, ground contacts or plug-in force elements; `muscles` — the muscle stage (like the
    cartesian elements, it reads the tree kinematics). Joint spring-dampers and stops are no flag: every force
    stage has them (0.6 s of compile CPU; as a flag they made a second right-hand side, 6 s, for models without)."""
    from biobullet.model.joint_jets import has_tapes
    flags = {"tapes": has_tapes(model.jets_table), "loops": bool(model.loops.stages.shape[0])}
    if forces is not None:
        flags["cartesian"] = bool(forces.spring_bodies.shape[0] or forces.contact_index.shape[0]
                                  or forces.plugin_addresses.shape[0])
        flags["muscles"] = bool(len(forces.muscles))
    return flags


def _variant(**flags: bool) -> str:
    """The variant name of a kernel compiled with these feature flags ("" with all of them on)."""
    return "_".join(f"no_{name}" for name, on in flags.items() if not on)


def _compiled_with(function, callees: dict, inline: bool = False, variant: str = "", nogil: bool = True):
    from biobullet.muscles.dynamics import numba_entries
    numba_entries()   # every stage composition types the muscle entries (a run without muscles: their empty forms)
    return jit.compiled(function, bind=callees, inline=inline, variant=variant, nogil=nogil)


def state_kernel():
    """The compiled `state_into_py`."""
    return jit.compiled(stages.state_into_py)


def ltdl_kernel():
    """The compiled `ltdl_solve_py`."""
    return jit.compiled(stages.ltdl_solve_py)


def joint_state_kernel(inline: bool = False, tapes: bool = True, loops: bool = True):
    """The compiled `joint_state_stage_py`."""
    from biobullet.constraints.newton_kernel import newton_kernel
    from biobullet.model.joint_jets import jets_kernel
    callees = {"_STATE": stages.state_into_py, "_JETS": jets_kernel(tapes), "_LOOPS": loops}
    if loops:
        callees["_NEWTON"] = newton_kernel()
    return _compiled_with(stages.joint_state_stage_py, callees, inline, _variant(tapes=tapes, loops=loops))


def solve_kernel(inline: bool = False):
    """The compiled `solve_stage_py`."""
    factor, solve = compiled_kernels.cholesky_kernels()
    return _compiled_with(stages.solve_stage_py, {
        "_PROJECT": compiled_kernels.project_upper_kernel(), "_LTDL": ltdl_kernel(), "_CHOLESKY_FACTOR": factor,
        "_CHOLESKY_SOLVE": solve}, inline)


def forward_features(model) -> dict[str, bool]:
    """The feature flags of `forward_kernel` for a compiled model: `loops` and `mapped` — a joint-function table or
    loops, which the joint-state stage evaluates (without them x = q, ẋ = v). A mapped model's joint state always
    has the tape interpreter: without it a forward kernel costs 1.7 s less to compile (coupled_chain: 10.1 vs
    11.8 s of CPU) and nothing per call (±2 %), but models with and without tapes were two compiles of 4.7 s."""
    return {"loops": features(model)["loops"],
            "mapped": bool(model.jets_table.shape[0] or model.loops.stages.shape[0])}


def forward_kernel(read_record, loops: bool = True, mapped: bool = True):
    """The compiled `forward_py` (flags: `forward_features`); `read_record`: the intrinsic giving the workspace
    record at its address (`core.jit_pair.record_reader`)."""
    callees = {"_READ_RECORD": read_record, "_MAPPED": mapped, "_STATE": stages.state_into_py,
               "_TREE": compiled_kernels.tree_dynamics_kernel(),
               "_SOLVE": solve_kernel(inline=True), "_PROJECT": compiled_kernels.project_upper_kernel()}
    if mapped:
        callees["_JOINT_STATE"] = joint_state_kernel(inline=True, loops=loops)
    # (called from Python for ≈ 0.3 µs of work: it keeps the GIL, `core.jit.compiled`)
    return _compiled_with(stages.forward_py, callees, variant=_variant(loops=loops, mapped=mapped),
                          nogil=False)


def applied_forces_kernel(inline: bool = False, cartesian: bool = True):
    """The compiled `_applied_forces_py`."""
    from biobullet.forces.compiled import joint_forces_kernel
    from biobullet.muscles.dynamics import entries_digest
    callees = {"_CARTESIAN": cartesian, "_JOINT_FORCES": joint_forces_kernel(),
               "_MUSCLE_ENTRIES": entries_digest()}   # (bound for the cache digest only: the muscle entries' source)
    if cartesian:
        from biobullet.contact.kernels import ground_forces_kernel
        from biobullet.forces.compiled import plugin_forces_kernel, spring_forces_kernel
        callees.update({"_SPRING_FORCES": spring_forces_kernel(), "_GROUND_FORCES": ground_forces_kernel(),
                        "_PLUGIN_FORCES": plugin_forces_kernel()})
    return _compiled_with(stages.applied_forces_py, callees, inline, _variant(cartesian=cartesian))


def forces_kernel(inline: bool = False, cartesian: bool = True, muscles: bool = True):
    """The compiled `_forces_stage_py`."""
    callees = {"_READS_KINEMATICS": cartesian or muscles,
               "_APPLIED": applied_forces_kernel(inline=True, cartesian=cartesian)}
    if cartesian or muscles:
        from biobullet.constraints.loop_kernels import tree_kinematics_kernel
        callees["_KINEMATICS"] = tree_kinematics_kernel()
    return _compiled_with(stages.forces_stage_py, callees, inline, _variant(cartesian=cartesian,
                                                                                     muscles=muscles))


def generalized_forces_kernel(inline: bool = False):
    """The compiled `generalized_forces_py`."""
    return jit.compiled(stages.generalized_forces_py, inline=inline)


def rhs_kernel(tapes: bool = True, cartesian: bool = True, loops: bool = True, muscles: bool = True,
               inline: bool = False):
    """The compiled `_rhs_py` for a model with these features (`features`); `inline`: to be inlined into the loop
    map's right-hand side (`integrate.compiled_rhs._loop_rhs_py`), which then compiles it once, as one kernel."""
    # cartesian elements bring the tape interpreter along (1.2 s more compile CPU for a ground contact's right-hand
    # side of 25 s): one right-hand side fewer to compile (12.6 s) than if the two combined in every way
    tapes = tapes or cartesian
    return _compiled_with(stages.rhs_py, {
        "_JOINT_STATE": joint_state_kernel(inline=True, tapes=tapes, loops=loops),
        "_FORCES": forces_kernel(inline=True, cartesian=cartesian, muscles=muscles),
        "_TREE": compiled_kernels.tree_dynamics_kernel(), "_SOLVE": solve_kernel(inline=True),
        "_GENERALIZED": generalized_forces_kernel(inline=True), "_POSITION_RATE": position_rate_py},
        inline, _variant(tapes=tapes, cartesian=cartesian, loops=loops, muscles=muscles))
