"""biobullet.validate: oracles (Pinocchio, PyBullet), random models, and `validate_model` reports.

Light on import: Pinocchio and PyBullet are imported only when an oracle is built.
"""
from __future__ import annotations

from biobullet.validate.report import (Check, ValidationReport, random_state, random_tree_reports, validate_model,
                                       validate_random_trees)

__all__ = ["Check", "ValidationReport", "random_state", "random_tree_reports", "validate_model",
           "validate_random_trees"]
