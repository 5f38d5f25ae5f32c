"""The compiled stages of `pipeline.stages`, each bound to the compiled kernels it calls (`core.jit.compiled`:
cached on disk, loaded on later runs). Each function returns the kernel, or None without numba."""
from __future__ import annotations

from biobullet.algorithms import compiled_kernels
from biobullet.core import jit
from biobullet.pipeline import stages


def _all(callees: dict) -> dict | None:
    return None if None in callees.values() else callees


def _compiled_with(function, callees: dict | None):
    return None if callees is None else jit.compiled(function, bind=callees)


def state_kernel():
    """The compiled `_state_into_py`."""
    return jit.compiled(stages._state_into_py)


def position_rate_kernel():
    """The compiled `_position_rate_py`."""
    return jit.compiled(stages._position_rate_py)


def ltdl_kernel():
    """The compiled `_ltdl_solve_py`."""
    return jit.compiled(stages._ltdl_solve_py)


def joint_state_kernel():
    """The compiled `_joint_state_stage_py`."""
    from biobullet.model.joint_jets import jets_kernel
    return _compiled_with(stages._joint_state_stage_py, _all({"_STATE": state_kernel(), "_JETS": jets_kernel()}))


def solve_kernel():
    """The compiled `_solve_stage_py`."""
    factor, solve = compiled_kernels.cholesky_kernels()
    return _compiled_with(stages._solve_stage_py, _all({
        "_PROJECT": compiled_kernels.project_upper_kernel(), "_LTDL": ltdl_kernel(), "_CHOLESKY_FACTOR": factor,
        "_CHOLESKY_SOLVE": solve}))


def forward_kernel():
    """The compiled `_forward_py`."""
    return _compiled_with(stages._forward_py, _all({
        "_JOINT_STATE": joint_state_kernel(), "_TREE": compiled_kernels.tree_dynamics_kernel(),
        "_SOLVE": solve_kernel(), "_PROJECT": compiled_kernels.project_upper_kernel()}))


def forces_kernel():
    """The compiled `_forces_stage_py`."""
    from biobullet.constraints.loop_kernels import tree_kinematics_kernel
    from biobullet.contact.kernels import ground_forces_kernel
    from biobullet.forces.compiled import joint_forces_kernel, plugin_forces_kernel, spring_forces_kernel
    return _compiled_with(stages._forces_stage_py, _all({
        "_KINEMATICS": tree_kinematics_kernel(), "_JOINT_FORCES": joint_forces_kernel(),
        "_SPRING_FORCES": spring_forces_kernel(), "_GROUND_FORCES": ground_forces_kernel(),
        "_PLUGIN_FORCES": plugin_forces_kernel()}))


def rhs_kernel():
    """The compiled `_rhs_py`."""
    return _compiled_with(stages._rhs_py, _all({
        "_JOINT_STATE": joint_state_kernel(), "_FORCES": forces_kernel(),
        "_TREE": compiled_kernels.tree_dynamics_kernel(), "_SOLVE": solve_kernel(),
        "_POSITION_RATE": position_rate_kernel()}))
