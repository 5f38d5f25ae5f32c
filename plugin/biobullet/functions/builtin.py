"""Imports the built-in joint-function modules so that their `@register` decorators run.

Imported lazily by `registry` on the first lookup; SciPy/SymPy are only imported inside the classes.
"""
from __future__ import annotations

from biobullet.functions import expression, fourier, linear, natural_spline, polynomial, spline  # noqa: F401
