"""Command line of sweeps: ``biobullet sweep CONFIG`` and ``python -m biobullet.sweep CONFIG``."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from biobullet.core.arguments import output_path, positive_int, terminate_as_interrupt

EXIT_OK, EXIT_INTERNAL, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The sweep arguments (shared by the main CLI and ``python -m biobullet.sweep``)."""
    parser.add_argument("config", metavar="CONFIG", help="sweep configuration file (.json or .toml)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="address of a running Dask scheduler (default: a local cluster on 127.0.0.1)")
    parser.add_argument("--out", default=None, type=output_path, metavar="DIR",
                        help="output directory (default: the config's 'out', else out/<config name>)")
    parser.add_argument("--workers", default=None, type=positive_int, metavar="N",
                        help="local worker processes, one thread each (default: one per core; ignored with "
                             "--scheduler)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def cli_sweep(args: argparse.Namespace) -> int:
    """Handler of ``biobullet sweep``: run the sweep, print where the results are; raises BiobulletError."""
    from biobullet.core.atomic import check_writable
    from biobullet.sweep.runner import run_sweep

    if args.out is not None:   # before any work (the runner checks again)
        check_writable(args.out, folder=True)
    with terminate_as_interrupt() as terminated:   # SIGTERM stops the sweep as Ctrl-C does
        try:
            result = run_sweep(args.config, scheduler=args.scheduler, workers=getattr(args, "workers", None),
                               out=args.out, progress=not getattr(args, "no_progress", False))
        except KeyboardInterrupt as stop:
            kept = getattr(stop, "result", None)   # (`runner.SweepInterrupted`: what was kept)
            what = ("finished points are kept" if kept is None else
                    f"{len(kept.ok)} of {len(kept.config.points())} points finished and kept in {kept.out}")
            print(f"biobullet sweep: {'terminated' if terminated else 'interrupted'} — {what}; "
                  "run the same command again to resume", file=sys.stderr)
            return 128 + terminated[0] if terminated else EXIT_INTERRUPTED
    n_points = len(result.config.points())
    print(f"{result.config.name}: {len(result.ok)}/{n_points} points ok, {len(result.failed)} failed "
          f"({result.computed} computed, {result.skipped} reused); results in {result.out}", file=sys.stderr)
    for record in result.failed[:10]:
        print(f"  failed {record['id']} {record['params']}: {record['error']}", file=sys.stderr)
    return EXIT_OK if not result.failed else EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m biobullet.sweep``: same exit codes as the ``biobullet`` command."""
    parser = argparse.ArgumentParser(prog="python -m biobullet.sweep",
                                     description="Run a biobullet parameter sweep on dask.distributed.")
    add_arguments(parser)
    args = parser.parse_args(argv)
    from biobullet.core.errors import BiobulletError
    try:
        return cli_sweep(args)
    except BiobulletError as exc:
        print(f"biobullet sweep: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("\nbiobullet sweep: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
