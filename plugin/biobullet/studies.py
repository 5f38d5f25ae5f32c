"""Paper studies run by `biobullet run NAME`: found through the entry-point group `biobullet.studies`.

Each entry point names a catalogue `{name: (module, description)}` (the bundled one is
`biobullet_studies.registry:STUDIES`); a study module has `run(out_dir, **options) -> dict`. The library imports
no study by name: studies are a client package, and other packages can add theirs the same way.
"""
from __future__ import annotations

import importlib
import inspect
import json
import os
import time
from importlib import metadata
from typing import Any, Mapping

from biobullet.core.errors import ModelError, did_you_mean
from biobullet.core.plugins import PluginError

STUDY_GROUP = "biobullet.studies"


def studies() -> dict[str, tuple[str, str]]:
    """Every registered study: name → (module, one-line description)."""
    table: dict[str, tuple[str, str]] = {}
    for ep in metadata.entry_points(group=STUDY_GROUP):
        try:
            catalogue = ep.load()
        except Exception as exc:  # noqa: BLE001  (another package's import error, reported with its origin)
            raise PluginError(f"entry point {ep.name!r} = {ep.value!r} of group {STUDY_GROUP!r} cannot be "
                              f"loaded: {type(exc).__name__}: {exc}") from None
        if not isinstance(catalogue, Mapping):
            raise PluginError(f"entry point {ep.name!r} = {ep.value!r} of group {STUDY_GROUP!r} is not a "
                              "mapping of study name → (module, description)")
        for name, (module, description) in catalogue.items():
            table.setdefault(str(name), (str(module), str(description)))
    return table


def run_scenario(name: str, out_dir: str, **options: Any) -> dict:
    """Run study `name` into `out_dir`; returns its summary (also written to out_dir/summary.json)."""
    table = studies()
    if name not in table:
        raise ModelError(f"unknown scenario {name!r}{did_you_mean(name, table)}", argument="SCENARIO",
                         expected="one of " + (", ".join(sorted(table)) or
                                               "(none installed: install biobullet with its studies)"))
    module = importlib.import_module(table[name][0])
    parameters = inspect.signature(module.run).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    for option in options:
        if not takes_any and (option not in parameters or option == "out_dir"):
            accepted = [p for p in parameters if p != "out_dir"]
            raise ModelError(f"scenario {name!r} has no option {option!r}", argument=f"--{option}",
                             expected=("options " + ", ".join(accepted)) if accepted else "no options")
    started = time.perf_counter()
    summary = module.run(out_dir, **options)
    wall = time.perf_counter() - started
    return _with_real_time_factor(summary, wall, out_dir)


def _with_real_time_factor(summary: Any, wall: float, out_dir: str) -> Any:
    """Add `wall_seconds` and, when the study reports `simulated_seconds` (total simulated time of its runs),
    `real_time_factor` = simulated / wall seconds to the summary and to out_dir/summary.json (atomically).

    Study contract: every summary has `simulated_seconds` — a number, or None for a study that is not a
    simulation, then with `simulated_seconds_reason`. Both are copied into summary.json as well."""
    if not isinstance(summary, dict):
        return summary
    summary["wall_seconds"] = wall
    simulated = summary.get("simulated_seconds")
    if isinstance(simulated, (int, float)) and simulated > 0 and wall > 0:
        summary["real_time_factor"] = float(simulated) / wall
    path = os.path.join(out_dir, "summary.json")
    if os.path.isfile(path):
        from biobullet.core.atomic import write_text
        try:
            with open(path, encoding="utf-8") as handle:
                written = json.load(handle)
        except (OSError, ValueError):
            return summary
        if isinstance(written, dict):
            for key in ("wall_seconds", "real_time_factor", "simulated_seconds", "simulated_seconds_reason"):
                if key in summary:
                    written[key] = summary[key]
            write_text(path, json.dumps(written, indent=2, default=str) + "\n")
    return summary
