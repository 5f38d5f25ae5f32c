"""Rigid-body algorithms on the tree, free functions of (model, x, ẋ): kinematics, CRBA, RNEA and their
batched / compiled kernels."""
