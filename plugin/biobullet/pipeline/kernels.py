"""The compiled stages of `pipeline.stages`, each bound to the compiled kernels it calls (`core.jit.compiled`:
cached on disk, loaded on later runs). Each function returns the kernel, or None without numba.

A stage that takes the structured arguments (CompiledModel, DataArrays, ForceRows) is bound into its callers
inlined (`inline=True`): a call of a separate compiled function passes every array of those tuples with its
reference count taken and released (measured: the four-bar's right-hand side 10.5 → 15–26 µs), an inlined one
passes nothing. The tree kernel, which takes plain arrays, stays a call."""
from __future__ import annotations

from biobullet.algorithms import compiled_kernels
from biobullet.core import jit
from biobullet.pipeline import stages


def _all(callees: dict) -> dict | None:
    return None if None in callees.values() else callees


def _compiled_with(function, callees: dict | None, inline: bool = False):
    return None if callees is None else jit.compiled(function, bind=callees, inline=inline)


def state_kernel():
    """The compiled `_state_into_py`."""
    return jit.compiled(stages._state_into_py)


def position_rate_kernel():
    """The compiled `_position_rate_py`."""
    return jit.compiled(stages._position_rate_py)


def ltdl_kernel():
    """The compiled `_ltdl_solve_py`."""
    return jit.compiled(stages._ltdl_solve_py)


def joint_state_kernel(inline: bool = False):
    """The compiled `_joint_state_stage_py`."""
    from biobullet.constraints.newton_kernel import newton_kernel
    from biobullet.model.joint_jets import jets_kernel
    return _compiled_with(stages._joint_state_stage_py, _all({
        "_STATE": state_kernel(), "_JETS": jets_kernel(), "_NEWTON": newton_kernel()}), inline)


def solve_kernel(inline: bool = False):
    """The compiled `_solve_stage_py`."""
    factor, solve = compiled_kernels.cholesky_kernels()
    return _compiled_with(stages._solve_stage_py, _all({
        "_PROJECT": compiled_kernels.project_upper_kernel(), "_LTDL": ltdl_kernel(), "_CHOLESKY_FACTOR": factor,
        "_CHOLESKY_SOLVE": solve}), inline)


def forward_kernel():
    """The compiled `_forward_py`."""
    return _compiled_with(stages._forward_py, _all({
        "_JOINT_STATE": joint_state_kernel(inline=True), "_TREE": compiled_kernels.tree_dynamics_kernel(),
        "_SOLVE": solve_kernel(inline=True), "_PROJECT": compiled_kernels.project_upper_kernel()}))


def applied_forces_kernel(inline: bool = False):
    """The compiled `_applied_forces_py`."""
    from biobullet.contact.kernels import ground_forces_kernel
    from biobullet.forces.compiled import joint_forces_kernel, plugin_forces_kernel, spring_forces_kernel
    from biobullet.muscles.dynamics import muscle_stage_kernel, numba_entries
    numba_entries()   # the muscle entries by type: a run without muscles compiles none of the stage
    return _compiled_with(stages._applied_forces_py, _all({
        "_JOINT_FORCES": joint_forces_kernel(), "_SPRING_FORCES": spring_forces_kernel(),
        "_GROUND_FORCES": ground_forces_kernel(), "_PLUGIN_FORCES": plugin_forces_kernel(),
        "_MUSCLE_KERNEL": muscle_stage_kernel()}), inline)


def forces_kernel(inline: bool = False):
    """The compiled `_forces_stage_py`."""
    from biobullet.constraints.loop_kernels import tree_kinematics_kernel
    return _compiled_with(stages._forces_stage_py, _all({
        "_KINEMATICS": tree_kinematics_kernel(), "_APPLIED": applied_forces_kernel(inline=True)}), inline)


def generalized_forces_kernel(inline: bool = False):
    """The compiled `_generalized_forces_py`."""
    return jit.compiled(stages._generalized_forces_py, inline=inline)


def rhs_kernel():
    """The compiled `_rhs_py`."""
    return _compiled_with(stages._rhs_py, _all({
        "_JOINT_STATE": joint_state_kernel(), "_FORCES": forces_kernel(),
        "_TREE": compiled_kernels.tree_dynamics_kernel(), "_SOLVE": solve_kernel(),
        "_GENERALIZED": generalized_forces_kernel(), "_POSITION_RATE": position_rate_kernel()}))
