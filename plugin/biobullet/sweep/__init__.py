"""Parameter sweeps on dask.distributed: ``run_sweep(config)`` / ``biobullet sweep CONFIG``.

A config names a point function (registry name or ``biobullet.<module>:<function>``), fixed parameters and
swept axes; every point is a Dask task, its result a JSON file written atomically by the driver, so sweeps
resume after a kill. Importing this package imports neither dask nor numpy.
"""
from __future__ import annotations

from biobullet.core.lazy import lazy_attributes
from biobullet.sweep.config import Axis, Point, SweepConfig, load_config, point_id
from biobullet.sweep.registry import register_point_function, registered_names
from biobullet.sweep.schema import Param, PointSpec, point_function

__all__ = ["Axis", "Param", "Point", "PointSpec", "SweepConfig", "SweepError", "SweepResult", "cli_sweep",
           "load_config", "point_function", "point_id", "register_point_function", "registered_names",
           "run_sweep"]


# the runner and the CLI load on first use (they pull in nothing heavy at import either, but stay separate)
__getattr__ = lazy_attributes(__name__, {"run_sweep": ".runner", "SweepResult": ".runner", "SweepError": ".runner",
                                         "cli_sweep": ".cli"})
