"""The `biobullet` command line (also `python -m biobullet`): info, validate, simulate, run, sweep, bench, view.

Start-up is kept fast: this module imports only the standard library; numerical packages are imported
inside the command that needs them. Exit codes: 0 success, 1 unexpected internal error, 2 bad input
(usage error, malformed model, failed solve, validation disagreement, feature not available), 3 `validate`
compared nothing (every oracle refused the model: the notes say why), 130 interrupted (Ctrl-C), 143 terminated
(SIGTERM: stopped as on Ctrl-C, partial results kept).
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import os
import sys
from typing import Any, Callable, Sequence

from biobullet.core.arguments import (MAX_SAMPLES, count, output_path, port, positive_float, positive_int,
                                      relative_tolerance, seed, terminate_as_interrupt)
from biobullet.core.atomic import json_default

PROG = "biobullet"
EXIT_OK, EXIT_INTERNAL, EXIT_ERROR, EXIT_NOT_COMPARED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the hand-written line breaks of descriptions and examples."""


def _studies_help(parser: argparse.ArgumentParser) -> str:
    """`run --help`: the usual help, then the installed studies (read from their entry points only when help is
    shown, so building the parser stays light; a usage error shows the usage line alone)."""
    import textwrap

    from biobullet.studies import studies
    text = argparse.ArgumentParser.format_help(parser)
    try:
        table = studies()
    except Exception as error:  # noqa: BLE001  (a broken third-party catalogue must not hide the help)
        return text + f"\nstudies: cannot be listed ({error})\n"
    if not table:
        return text + "\nstudies: none installed (install biobullet with its studies)\n"
    width = max(len(name) for name in table)
    lines = ["", "studies:"]
    for name in sorted(table):
        wrapped = textwrap.wrap(table[name][1], 100 - width - 4) or [""]
        lines.append(f"  {name:<{width}}  {wrapped[0]}")
        lines += [" " * (width + 4) + more for more in wrapped[1:]]
    return text + "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------- parser
def _assignment(text: str) -> tuple[str, float]:
    """Parse NAME=VALUE (for --set)."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"value of {name.strip()!r} is not a number: {value!r}") from None
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"value of {name.strip()!r} is not finite: {value!r}")
    return name.strip(), number


def _add(sub, name: str, summary: str, description: str, examples: str) -> argparse.ArgumentParser:
    """The subcommand `name`, run by the function `cmd_NAME` of this module."""
    parser = sub.add_parser(name, help=summary, description=f"{summary}\n\n{description}".rstrip(),
                            epilog="examples:\n" + examples, formatter_class=_Formatter)
    parser.set_defaults(subparser=parser,  # for usage errors found after parsing
                        handler=globals()[f"cmd_{name}"])
    return parser


#: most random states per model and random trees one `validate` may ask for (each state costs every formulation
#: and oracle, ≈ 10–100 ms: the caps are hours of work, a typo beyond them would be days)
MAX_VALIDATE_SAMPLES = 100_000
MAX_RANDOM_TREES = 10_000


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand (no side effects, nothing heavy imported)."""
    parser = argparse.ArgumentParser(
        prog=PROG, formatter_class=_Formatter,
        description="biobullet: biomechanics multibody models (URDF + <biobullet> block) for PyBullet, "
                    "validated against Pinocchio.",
        epilog="examples:\n  biobullet info arm7\n  biobullet validate urdf/arm7.urdf --samples 20\n"
               "  biobullet --quiet simulate andrews_squeezer --t-end 0.03 --out squeezer.csv\n\n"
               "MODEL is a .urdf file or the name of a bundled model (arm7, shoulder_rhythm, fourbar_knee, ...).\n"
               "Set BIOBULLET_DEBUG=1 to see the traceback of an internal error.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    loudness = parser.add_mutually_exclusive_group()
    loudness.add_argument("-q", "--quiet", action="store_true",
                          help="errors only on stderr: no progress, warnings or notes (results still on stdout)")
    loudness.add_argument("-v", "--verbose", action="store_true",
                          help="also debug messages of the `biobullet` logger (e.g. what PyBullet and Pinocchio "
                               "printed while loading, which is kept off the terminal otherwise)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    info = _add(sub, "info", "describe a model: bodies, joints, coordinates, functions, loops, forces, contacts",
                "Loads MODEL (URDF with an optional <biobullet> block), checks it and prints what biobullet\n"
                "compiled from it. Exit code 2 if the model is malformed (the message names file, element\n"
                "and attribute).",
                "  biobullet info urdf/arm7.urdf\n  biobullet info urdf/humanoid.urdf --floating-base\n"
                "  biobullet info urdf/shoulder_rhythm.urdf --json > shoulder.json\n")
    info.add_argument("model", metavar="MODEL", help="model file (.urdf)")
    _base_flags(info)
    info.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")

    validate = _add(sub, "validate", "check every formulation against Pinocchio (and PyBullet) on random states",
                    "Compares mass matrix, bias forces, forward dynamics and Jacobians of every formulation\n"
                    "with the oracles at random states. Exit code 0 only if all agree within the tolerance,\n"
                    "2 otherwise. Progress goes to stderr; with --json stdout holds only the JSON report\n"
                    "(with --random: {\"ok\": bool, \"models\": [report, ..]}):\n"
                    '  {"model": .., "ok": bool, "checks": [{"quantity", "formulation", "oracle",\n'
                    '                                        "max_abs_error", "max_rel_error"}, ..]}',
                    "  biobullet validate urdf/arm7.urdf\n  biobullet validate urdf/arm7.urdf --samples 50 --seed 3 "
                    "--tol 1e-10\n  biobullet validate --random 20 --json > random.json\n")
    validate.add_argument("model", metavar="MODEL", nargs="?", help="model file (optional with --random)")
    _base_flags(validate)
    validate.add_argument("--samples", type=count(MAX_VALIDATE_SAMPLES), default=10, metavar="N",
                          help=f"random states per model (default 10, at most {MAX_VALIDATE_SAMPLES:,})")
    validate.add_argument("--seed", type=seed, default=0, metavar="S", help="random seed (default 0)")
    validate.add_argument("--tol", type=relative_tolerance, default=1e-9, metavar="T",
                          help="relative tolerance, in (0, 1) (default 1e-9)")
    validate.add_argument("--random", type=count(MAX_RANDOM_TREES), default=None, metavar="N",
                          help=f"validate N random trees instead of MODEL (at most {MAX_RANDOM_TREES:,})")
    validate.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")

    simulate = _add(sub, "simulate", "integrate a model in time and write the trajectory as CSV",
                    "CSV columns: t, every joint coordinate by URDF joint name, then <name>_dot for each.\n"
                    "The initial state comes from the model's <initial> elements, overridden by --set.",
                    "  biobullet simulate urdf/andrews_squeezer.urdf --t-end 0.03 --out squeezer.csv\n"
                    "  biobullet simulate urdf/arm7.urdf --t-end 2 --set joint_2=0.5 --set joint_2_dot=-1 "
                    "--rtol 1e-10 --out arm.csv\n"
                    "  biobullet simulate urdf/arm7.urdf --t-end 2 --engine pybullet --dt 1e-3 --out arm_pb.csv\n"
                    "  biobullet simulate arm26 --t-end 1 --excitation all=0.05 --excitation BRA=0.5 --out arm26.csv\n")
    simulate.add_argument("model", metavar="MODEL", help="model file (.urdf)")
    simulate.add_argument("--t-end", type=positive_float, required=True, metavar="T", help="end time (s)")
    simulate.add_argument("--engine", choices=("reference", "pybullet"), default="reference",
                          help="reference = our formulations + SciPy (default); pybullet = the bridge")
    simulate.add_argument("--rtol", type=relative_tolerance, default=None, metavar="R",
                          help="reference engine: the integrator's relative tolerance, in [2.2e-14, 1) (default 1e-9)")
    simulate.add_argument("--atol", type=positive_float, default=None, metavar="A",
                          help="reference engine: the integrator's absolute tolerance, in the state's units "
                               "(rad, m, rad/s, m/s; default 1e-12)")
    simulate.add_argument("--dt", type=positive_float, default=None, metavar="H",
                          help="s: the output interval of the reference engine (default: 1001 samples over "
                               "0 … T), the time step of the pybullet engine (default 1 ms; with <flexible> links "
                               "smaller, from their stability limit)")
    simulate.add_argument("--set", dest="overrides", type=_assignment, action="extend", nargs="+", default=[],
                          metavar="NAME=VALUE", help="initial value of a coordinate (NAME) or its rate (NAME_dot)")
    simulate.add_argument("--out", required=True, metavar="FILE.csv",
                          help="output file: CSV, or .npz (reference engine: every record); written atomically, "
                               "and on failure or interruption the partial run goes to FILE.csv.partial.csv")
    simulate.add_argument("--excitation", dest="excitations", type=_assignment, action="append", default=[],
                          metavar="NAME=VALUE", help="a muscle's constant excitation in [0, 1] (repeatable; "
                          "all=VALUE for every muscle, named ones override it); with any, the muscles act and "
                          "their records are CSV columns <muscle>:<record>")
    simulate.add_argument("--method", default=None, metavar="M",
                          help="reference engine: the integrator, DOP853 (default; a run found stiff goes on with "
                               "Radau), Radau, BDF, LSODA, RK45 or RK23")
    simulate.add_argument("--formulation", default=None, metavar="F",
                          help="reference engine: the equations of motion, reduced (default), reduced_recursive, "
                               "reduced_pinocchio, matrix_calculus, multipliers or link_segment")
    simulate.add_argument("--gui", action="store_true",
                          help="pybullet engine only: show PyBullet's GUI while stepping (needs a display)")
    _base_flags(simulate)

    run = _add(sub, "run", "run a paper study end to end (plots, video, report, summary.json)",
               "Writes DIR/summary.json with the study's key figures (keys documented per scenario).",
               "  biobullet run andrews --out out/andrews\n  biobullet run shoulder --json\n")
    run.format_help = lambda: _studies_help(run)
    run.add_argument("scenario", metavar="SCENARIO", help="study name (listed below)")
    run.add_argument("--out", default=None, metavar="DIR", help="output directory (default out/SCENARIO)")
    run.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    run.add_argument("--modes", default=None, metavar="SET",
                     help="elastic-robot only: boundary pairs per link (s = simply supported, c = clamped), "
                          "ss-ss-ss (default), cc-cc-cc, sc-cc-cs or cs-ss-sc")

    sweep = _add(sub, "sweep", "run a parameter sweep described by a config file",
                 "Runs every case of CONFIG, locally or on a Dask scheduler.",
                 "  biobullet sweep plugin/biobullet/sweep/examples/damped_oscillator.json --out out/sweep\n"
                 "  biobullet sweep sweeps/prosthesis_k.json --scheduler tcp://127.0.0.1:8786\n")
    from biobullet.sweep.cli import add_arguments   # one definition for `biobullet sweep` and `-m biobullet.sweep`
    add_arguments(sweep)

    bench = _add(sub, "bench", "measure speed ratios (bridge vs bare PyBullet, formulations vs Pinocchio)",
                 "Times mass matrix + bias forces of every formulation against Pinocchio on the bundled arm7,\n"
                 "humanoid and shoulder models, and a PyBullet step with and without the bridge on the shoulder\n"
                 "model; ratios taken in one run (about a minute; --quick: a few seconds, noisier). Writes\n"
                 "DIR/bench.json.",
                 "  biobullet bench\n  biobullet bench --quick --json > bench.json\n")
    bench.add_argument("--quick", action="store_true", help="a few rounds only (seconds; noisier ratios)")
    bench.add_argument("--out", default="out/bench", metavar="DIR", help="output directory (default out/bench)")
    bench.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    bench.add_argument("--work-precision", action="store_true",
                       help="error at t_end vs wall time against MuJoCo and Pinocchio (coupled chain, four-bar, "
                            "Andrews, ball drop): DIR/work_precision.json and one plot per model")
    bench.add_argument("--scaling", action="store_true",
                       help="cost per right-hand side vs DOF (7-100 joints, chains and trees) against Pinocchio: "
                            "DIR/scaling.json, DIR/scaling.png")
    convert = _add(sub, "convert", "translate an OpenSim .osim model into URDF + <biobullet> block",
                   "Writes the URDF text (links, joints, joint functions of the coordinates, couplings, gravity,\n"
                   "initial state) that `load_model(MODEL)` loads, so both always agree; PyBullet and Pinocchio\n"
                   "load the tree part unchanged. Components that cannot be represented (muscles, markers, ...)\n"
                   "are reported on stderr, one warning each; with --strict they refuse the file (exit 2).",
                   "  biobullet convert arm26 --out arm26.urdf    # a bundled OpenSim model by name\n"
                   "  biobullet convert gait2392.osim --out gait2392.urdf --strict\n")
    convert.add_argument("model", metavar="MODEL", help="OpenSim model file (.osim)")
    convert.add_argument("--out", required=True, metavar="FILE.urdf", help="output URDF file (written atomically)")
    convert.add_argument("--strict", action="store_true",
                         help="refuse a model with components that cannot be represented")

    view = _add(sub, "view", "show a model in the browser (sliders, markers) or replay a trajectory",
                "Serves an interactive 3D view on http://127.0.0.1:PORT (this machine only): one slider per\n"
                "generalized coordinate, every dependent joint following; toggles for COMs, joint axes,\n"
                "contact points and loop residuals. With --trajectory: play/pause and a time slider.\n"
                "With --html: writes a self-contained replay page instead (no server; opens offline).",
                "  biobullet view urdf/shoulder_rhythm.urdf\n"
                "  biobullet view urdf/fourbar_knee.urdf --trajectory knee.csv\n"
                "  biobullet view urdf/fourbar_knee.urdf --trajectory knee.csv --html knee.html\n")
    view.add_argument("model", metavar="MODEL", help="model file (.urdf)")
    _base_flags(view)
    view.add_argument("--trajectory", default=None, metavar="RUN.csv",
                      help="trajectory to play (.csv of `biobullet simulate`, or .npz)")
    view.add_argument("--html", default=None, metavar="OUT.html",
                      help="write a self-contained HTML replay of --trajectory and exit")
    view.add_argument("--port", type=port, default=8080, metavar="P", help="port (default 8080)")
    view.add_argument("--segments", type=positive_int, default=6, metavar="N",
                      help="rigid segments per <flexible> link (default 6)")
    return parser


def _base_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--floating-base", dest="floating_base", action="store_const", const=True, default=None,
                       help="treat the root link as a free-floating base (overrides the file)")
    group.add_argument("--fixed-base", dest="floating_base", action="store_const", const=False,
                       help="weld the root link to the world (overrides the file)")
    parser.add_argument("--inertia", choices=("warn", "repair", "strict"), default="warn",
                        help="physically impossible inertia tensors (indefinite, or violating the triangle "
                             "inequality): warn = keep them as Pinocchio does and warn (default), repair = use the "
                             "nearest physical tensor, strict = reject the file")
    parser.add_argument("--no-joint-limits", dest="joint_limits", action="store_false",
                        help="ignore the URDF <limit>s of revolute and prismatic joints (by default they act as "
                             "stiff joint stops on both engines, as in PyBullet)")


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("biobullet")
    except Exception:  # noqa: BLE001  (not installed: running from the source tree)
        return "0.1.0"


# ---------------------------------------------------------------------------------------------- info
def model_info(model) -> dict[str, Any]:
    """Everything `biobullet info` shows, as plain JSON-serialisable data."""
    description = model.description
    links = {body.index: body.link for body in model.bodies}
    merged: dict[int, list[str]] = {}
    for name in model.link_names:
        merged.setdefault(model.frame(name).body, []).append(name)
    bodies = [{"link": b.link, "joint": b.joint or "(free)", "type": b.joint_type,
               "parent": links.get(b.parent, "world"), "mass": float(b.mass),
               "links": merged.get(b.index, [b.link])} for b in model.bodies]
    functions = {f.joint: f for f in description.joint_functions}
    independent = set(model.independent_joint_names)
    joints = []
    for joint in description.joints:
        entry: dict[str, Any] = {"name": joint.name, "type": joint.type, "parent": joint.parent,
                                 "child": joint.child, "axis": list(joint.axis) if joint.movable else None,
                                 "lower": joint.lower, "upper": joint.upper}
        if joint.multi_dof:   # coordinates in the leading block of q (see model.tree)
            entry["role"], entry["function"], entry["inputs"] = "independent (multi-DOF)", None, []
            if joint.type == "planar":
                entry["axis"] = list(joint.axis)
        elif not joint.movable:
            entry["role"], entry["function"], entry["inputs"] = "fixed", None, []
        elif joint.name in functions:
            item = functions[joint.name]
            kind = getattr(item.function, "type_name", type(item.function).__name__)
            if item.source.element.endswith("<mimic>"):
                kind += " (mimic)"
            entry["role"], entry["function"], entry["inputs"] = "dependent", kind, list(item.function.inputs)
        elif joint.name in independent:
            entry["role"], entry["function"], entry["inputs"] = "independent", None, []
        else:
            entry["role"], entry["function"], entry["inputs"] = "dependent", "implicit (loop closure)", []
        joints.append(entry)
    groups = {"loops": ("loop",), "forces": ("spring", "joint_spring", "joint_torque", "joint_stop"),
              "contacts": ("contact",), "flexible": ("flexible",)}
    elements = {key: [{"element": e.tag, **dict(e.attributes)} for e in description.elements if e.tag in tags]
                for key, tags in groups.items()}
    return {"name": model.name, "file": model.file, "base_type": description.base_type,
            "gravity": [float(g) for g in model.gravity],
            "total_mass": float(sum(link.inertial.mass for link in description.links if link.inertial)),
            "moving_mass": float(model.total_mass), "world_links": merged.get(-1, []),
            "bodies": bodies, "joints": joints,
            "coordinates": {"q": list(model.coordinate_names), "v": list(model.velocity_names)},
            "joint_limits": description.joint_limits, **elements}


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], indent: str = "  ") -> list[str]:
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(row[k]) for row in cells) for k in range(len(headers))]
    lines = [indent + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, indent + "  ".join("-" * w for w in widths))
    return lines


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return " ".join(_cell(v) for v in value) if value else "-"
    return str(value)


def format_info(info: dict[str, Any]) -> str:
    """Human-readable, aligned text of `model_info`."""
    lines = [f"model        {info['name']}", f"file         {info['file']}", f"base         {info['base_type']}",
             f"gravity      {_cell(info['gravity'])} m/s²",
             f"total mass   {info['total_mass']:.6g} kg (moving {info['moving_mass']:.6g} kg)",
             f"coordinates  nq={len(info['coordinates']['q'])} nv={len(info['coordinates']['v'])}",
             "joint limits " + ("URDF <limit>s act as joint stops (--no-joint-limits: ignored)"
                                if info["joint_limits"] else "URDF <limit>s ignored (--no-joint-limits)"), "",
             f"bodies ({len(info['bodies'])})"]
    lines += _table(("link", "joint", "type", "parent", "mass [kg]", "merged links"),
                    [(b["link"], b["joint"], b["type"], b["parent"], b["mass"], b["links"][1:])
                     for b in info["bodies"]])
    if info["world_links"]:
        lines.append("  welded to the world: " + " ".join(info["world_links"]))
    lines += ["", f"joints ({len(info['joints'])})"]
    lines += _table(("name", "type", "parent", "child", "axis", "lower", "upper", "role", "function", "inputs"),
                    [(j["name"], j["type"], j["parent"], j["child"], j["axis"], j["lower"], j["upper"], j["role"],
                      j["function"], j["inputs"]) for j in info["joints"]])
    lines += ["", "coordinates", "  q: " + (" ".join(info["coordinates"]["q"]) or "-"),
              "  v: " + (" ".join(info["coordinates"]["v"]) or "-")]
    for key, title in (("loops", "loops"), ("forces", "force elements"), ("contacts", "contacts"),
                       ("flexible", "flexible links")):
        items = info[key]
        lines += ["", f"{title} ({len(items)})"]
        for item in items:
            attributes = " ".join(f'{k}="{v}"' for k, v in item.items() if k != "element")
            lines.append(f"  <{item['element']}> {attributes}")
    return "\n".join(lines)


def cmd_info(args: argparse.Namespace) -> int:
    from biobullet.loader import load_model   # every element validated at load

    info = model_info(load_model(args.model, floating_base=args.floating_base, inertia=args.inertia,
                                   joint_limits=args.joint_limits))
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False))
    else:
        print(format_info(info))
    return EXIT_OK


# ---------------------------------------------------------------------------------------------- validate
def _progress_printer(unit: str) -> Callable[..., None]:
    """A `progress(done, total)` callback for the validators: one short line per call on stderr."""
    stream = sys.stderr
    interactive = getattr(stream, "isatty", lambda: False)()

    def progress(done: int, total: int, *_: Any) -> None:
        end = "\n" if not interactive or done >= total else ""
        print(f"\r{PROG}: validate: {unit} {done}/{total}" if interactive else
              f"{PROG}: validate: {unit} {done}/{total}", file=stream, end=end, flush=True)

    return progress


@contextlib.contextmanager
def _stdout_to_stderr():
    """Send everything written to file descriptor 1 (also by C libraries, e.g. PyBullet's banner) to stderr."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no real stdout (embedded use): nothing to protect
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _report_dict(report) -> dict[str, Any]:
    if hasattr(report, "to_dict"):
        return report.to_dict()
    payload = report.to_json()
    return json.loads(payload) if isinstance(payload, str) else payload


def cmd_validate(args: argparse.Namespace) -> int:
    if args.random is None and args.model is None:
        raise _UsageError("MODEL is required unless --random N is given")
    if args.random is not None and args.model is not None:
        raise _UsageError("give either MODEL or --random N, not both")
    if args.random is not None and args.floating_base is not None:
        raise _UsageError("--floating-base/--fixed-base cannot be combined with --random "
                          "(random trees alternate fixed and floating bases)")
    reports: list = []
    interrupted = False
    try:
        with _stdout_to_stderr():
            _run_validation(args, reports)
    except KeyboardInterrupt:
        if not reports:
            raise
        interrupted = True   # report the models validated so far, then stop as interrupted
    ok = bool(reports) and all(report.ok for report in reports) and not interrupted
    disagree = any(not check.ok for report in reports for check in report.checks)
    unchecked = [report.model for report in reports if report.nothing_compared]
    if args.json:
        payload = (_report_dict(reports[0]) if args.random is None else
                   {"ok": ok, "models": [_report_dict(report) for report in reports],
                    **({"interrupted": True} if interrupted else {})})
        print(json.dumps(payload, indent=2, ensure_ascii=False, default=json_default))
    else:
        print("\n\n".join(report.to_table() for report in reports))
        if interrupted:
            print(f"\nINTERRUPTED after {len(reports)} of {args.random} models: "
                  f"{'DISAGREEMENT: some checks exceed the tolerance' if disagree else 'all checks so far agree'}")
        elif disagree or not unchecked:
            print(f"\n{'all checks agree' if ok else 'DISAGREEMENT: some checks exceed the tolerance'}")
        else:
            print(f"\nNOTHING COMPARED: every oracle refused {', '.join(unchecked[:5])} (their reasons are in the "
                  "notes above); nothing was checked")
    if interrupted:
        sys.stdout.flush()
        raise KeyboardInterrupt(f"the {len(reports)} models validated before it are reported on standard output")
    return EXIT_OK if ok else EXIT_ERROR if disagree or not unchecked else EXIT_NOT_COMPARED


def _run_validation(args: argparse.Namespace, reports: list) -> None:
    """Append the reports of `validate` (one model, or --random N trees) to `reports` as each one finishes."""
    from biobullet.validate import random_tree_reports, validate_model
    if args.random is not None:
        for report in random_tree_reports(args.random, seed=args.seed, samples=args.samples, tol=args.tol,
                                          progress=_progress_printer("model")):
            reports.append(report)
        return
    from biobullet.loader import load_model   # every element validated at load
    reports.append(validate_model(load_model(args.model, floating_base=args.floating_base, inertia=args.inertia,
                                             joint_limits=args.joint_limits),
                                  samples=args.samples, seed=args.seed, tol=args.tol,
                                  progress=_progress_printer("sample")))


# ---------------------------------------------------------------------------------------------- later commands


def _output_name(path: str, option: str) -> None:
    """An output argument names a file or folder (`output_path`), as a usage error naming `option`."""
    try:
        output_path(path)
    except argparse.ArgumentTypeError as exc:
        raise _UsageError(f"{option} {exc}") from None


def _check_output_file(path: str, option: str = "--out", inputs: Sequence[str | None] = ()) -> None:
    """An output file argument: absent or a regular file, in a folder where a file can be created — checked before
    any work (the writer checks again), so that a long run is not computed and then lost — and none of the
    command's `inputs` (models by file or bundled name, trajectories)."""
    from biobullet.core.atomic import check_writable
    _output_name(path, option)
    if inputs and os.path.exists(path):
        from biobullet.model.bundled import resolve_model_path
        resolved = []
        for given in filter(None, inputs):
            with contextlib.suppress(Exception):   # an unknown name: the command itself says so
                given = resolve_model_path(given)
            resolved.append(given)
        inputs = resolved
    check_writable(path, inputs=tuple(inputs))


def _check_output_dir(path: str) -> None:
    """An output folder argument (`--out DIR`): absent or a folder, where files can be created."""
    from biobullet.core.atomic import check_writable
    _output_name(path, "--out")
    if os.path.exists(path) and not os.path.isdir(path):
        raise _UsageError(f"--out {path[:200]!r} exists and is not a directory")
    check_writable(path, folder=True)


#: simulate's options that only one engine reads: given to the other, they were ignored without a word
ENGINE_OPTIONS = {"reference": ("gui",), "pybullet": ("rtol", "atol", "method", "formulation")}


def cmd_simulate(args: argparse.Namespace) -> int:
    ignored = [f"--{name}" for name in ENGINE_OPTIONS[args.engine] if getattr(args, name) not in (None, False)]
    if ignored:
        other = "pybullet" if args.engine == "reference" else "reference"
        raise _UsageError(f"{', '.join(ignored)}: only the {other} engine reads {'it' if len(ignored) == 1 else 'them'}"
                          f" (this run: --engine {args.engine})")
    _check_output_file(args.out, inputs=[args.model])
    # (the reference engine's samples are the multiples of dt below t_end and t_end itself: one more than the steps;
    # --t-end 2000 --dt 2e-4 passed here and failed in the engine naming an argument "t_eval" the user never gave)
    count = args.t_end / args.dt + (args.engine == "reference") if args.dt is not None else 0
    if count > MAX_SAMPLES:
        what = "output samples" if args.engine == "reference" else "PyBullet steps"
        raise _UsageError(f"--t-end {args.t_end:g} with --dt {args.dt:g} asks for {count:.8g} "
                          f"{what}; the limit is {MAX_SAMPLES:.0e} (use a larger --dt)")
    if args.dt is None and args.engine == "pybullet":
        # the bridge's default step is at most DEFAULT_OWNED_DT, and it records every step: `--t-end 1e9` ran (and
        # filled memory) for days without this
        from biobullet.bridge.bridge import DEFAULT_OWNED_DT
        if args.t_end / DEFAULT_OWNED_DT > MAX_SAMPLES:
            raise _UsageError(f"--t-end {args.t_end:g} asks for at least {args.t_end / DEFAULT_OWNED_DT:.3g} PyBullet "
                              f"steps at the default step ({DEFAULT_OWNED_DT * 1e3:g} ms or less); the limit is "
                              f"{MAX_SAMPLES:.0e} (a shorter --t-end, or a larger --dt)")
    if args.engine == "reference":
        from biobullet.integrate import cli_simulate   # the engine's CLI adapter (checks, progress, summary)
        from biobullet.model.bundled import resolve_model_path
        from biobullet.opensim import OSIM_SUFFIX
        if resolve_model_path(args.model).lower().endswith(OSIM_SUFFIX):
            from biobullet.loader import load_model
            return cli_simulate(args, load_model(args.model, floating_base=args.floating_base, inertia=args.inertia))
        return cli_simulate(args)
    from biobullet.bridge import simulate as bridge_simulate
    from biobullet.integrate.checks import runnable_check, time_function_check
    from biobullet.loader import load_model

    model = load_model(args.model, floating_base=args.floating_base, inertia=args.inertia,
                                   joint_limits=args.joint_limits)
    runnable_check(model, args.engine)
    time_function_check(model, args.t_end)
    options: dict[str, Any] = dict(initial=dict(args.overrides), out=args.out)
    if args.excitations:
        from biobullet.muscles.dynamics import excitations_by_name
        options["excitations"] = excitations_by_name(model, args.excitations)
    if args.dt is not None:
        options["dt"] = args.dt
    if args.gui:
        options["gui"] = True
    trajectory = bridge_simulate(model, args.t_end, **options)
    print(f"wrote {args.out} ({len(trajectory.t)} samples, t = 0 … {args.t_end:g} s)", file=sys.stderr)
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    from biobullet.studies import run_scenario

    out = args.out or os.path.join("out", args.scenario)
    _check_output_dir(out)
    options = {key: value for key, value in vars(args).items()
               if key in ("modes",) and value is not None}
    from biobullet.core.atomic import LOCK_NAME, folder_lock
    created = not os.path.isdir(out)
    os.makedirs(out, exist_ok=True)
    try:
        with folder_lock(out, "run"):   # one command at a time writes into a folder
            try:
                summary = run_scenario(args.scenario, out, **options)
            except KeyboardInterrupt:
                raise KeyboardInterrupt(f"the files the study finished are kept in {out}") from None
    except BaseException:
        # a study that stopped before writing anything (a bad option is refused there) leaves no folder behind
        if created and os.listdir(out) == [LOCK_NAME]:
            os.remove(os.path.join(out, LOCK_NAME))
            os.rmdir(out)
        raise
    if isinstance(summary, dict) and "real_time_factor" in summary:
        print(f"{args.scenario}: {summary['simulated_seconds']:.4g} s simulated in {summary['wall_seconds']:.3g} s "
              f"wall: real-time factor {summary['real_time_factor']:.3g}", file=sys.stderr)
    elif isinstance(summary, dict) and summary.get("simulated_seconds_reason"):
        print(f"{args.scenario}: no real-time factor ({summary['simulated_seconds_reason']}); "
              f"{summary['wall_seconds']:.3g} s wall", file=sys.stderr)
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False, default=json_default))
    else:
        print(f"{args.scenario}: results in {out}", file=sys.stderr)
    return EXIT_OK


def cmd_sweep(args: argparse.Namespace) -> int:
    from biobullet.sweep import cli_sweep
    return cli_sweep(args)


def cmd_bench(args: argparse.Namespace) -> int:
    _check_output_dir(args.out)
    if getattr(args, "work_precision", False) or getattr(args, "scaling", False):
        if args.work_precision:
            from biobullet.bench.work_precision import format_work_precision, run_work_precision
            summary = run_work_precision(quick=args.quick, out=args.out)
            print(json.dumps(summary, indent=2) if args.json else format_work_precision(summary))
            print(f"bench: results in {os.path.join(args.out, 'work_precision.json')}", file=sys.stderr)
        if args.scaling:
            from biobullet.bench.scaling import format_scaling, run_scaling
            summary = run_scaling(quick=args.quick, out=args.out)
            print(json.dumps(summary, indent=2) if args.json else format_scaling(summary))
            print(f"bench: results in {os.path.join(args.out, 'scaling.json')}", file=sys.stderr)
        return EXIT_OK
    from biobullet.bench import format_bench, run_bench

    summary = run_bench(quick=args.quick, out=args.out)
    print(json.dumps(summary, indent=2) if args.json else format_bench(summary))
    print(f"bench: results in {os.path.join(args.out, 'bench.json')}", file=sys.stderr)
    return EXIT_OK


def cmd_convert(args: argparse.Namespace) -> int:
    from biobullet.model.bundled import resolve_model_path
    from biobullet.opensim import OSIM_SUFFIX, convert_osim

    args.model = resolve_model_path(args.model)   # a bundled model's bare name ("arm26") or a file
    if not args.model.lower().endswith(OSIM_SUFFIX):
        raise _UsageError(f"MODEL {args.model[:200]!r} is not an OpenSim model (expected a {OSIM_SUFFIX} file)")
    _check_output_file(args.out, inputs=[args.model])
    convert_osim(args.model, args.out, strict=args.strict)
    print(f"wrote {args.out}", file=sys.stderr)
    return EXIT_OK


def cmd_view(args: argparse.Namespace) -> int:
    if args.html:
        if not args.trajectory:
            raise _UsageError("--html needs --trajectory RUN.csv")
        _check_output_file(args.html, "--html", inputs=[args.model, args.trajectory])
        from biobullet.render.html import export_html
        from biobullet.render.viewer import load_view_model
        model, layouts = load_view_model(args.model, floating_base=args.floating_base, segments=args.segments)
        export_html(model, args.trajectory, args.html, layouts=layouts)
        print(f"wrote {args.html}", file=sys.stderr)
        return EXIT_OK
    from biobullet.render.viewer import serve
    serve(args.model, trajectory=args.trajectory, port=args.port, floating_base=args.floating_base,
          segments=args.segments)
    return EXIT_OK


# ---------------------------------------------------------------------------------------------- entry point
class _UsageError(Exception):
    """Argument combination argparse cannot express; reported as a usage error."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (see the module docstring)."""
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 with a usage message on bad arguments
    import logging
    import warnings
    # a user-facing warning is one line, without the library's source line (put back at the end: `main` called
    # from Python — a script, a test — leaves the process's warning format and the library logger as it found them)
    python_format = warnings.formatwarning
    warnings.formatwarning = lambda message, category, *rest, **kw: f"{PROG}: warning: {message}\n"
    errors = sys.stderr   # errors always reach the terminal; --quiet silences everything else on stderr
    handler = logging.StreamHandler(errors)
    handler.setFormatter(logging.Formatter(f"{PROG}: %(levelname)s: %(message)s"))
    library_logger = logging.getLogger("biobullet")
    logger_level = library_logger.level
    library_logger.addHandler(handler)
    library_logger.setLevel(logging.DEBUG if args.verbose else logging.ERROR if args.quiet else logging.WARNING)
    quiet = contextlib.ExitStack()
    if args.quiet:
        quiet.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        quiet.enter_context(contextlib.redirect_stderr(quiet.enter_context(open(os.devnull, "w"))))
    terminated = quiet.enter_context(terminate_as_interrupt())   # SIGTERM stops a run as Ctrl-C does
    try:
        from biobullet.core.errors import BiobulletError
        try:
            with quiet:
                code = args.handler(args)
                sys.stdout.flush()   # a full disk behind stdout is reported here, not at exit
                return code
        except _UsageError as exc:
            args.subparser.error(str(exc))
        except BiobulletError as exc:
            print(f"{PROG}: error: {exc}", file=errors)
            return EXIT_ERROR
    except KeyboardInterrupt as exc:
        # what was kept: simulate's IntegrationError names its partial trajectory, other commands say it in words
        cause = exc.args[0] if exc.args else None
        kept = (f"; partial trajectory written to {cause.partial_path}" if getattr(cause, "partial_path", None)
                else f"; {cause}" if isinstance(cause, str) else "")
        print(f"\n{PROG}: {'terminated' if terminated else 'interrupted'}{kept}", file=errors)
        return 128 + terminated[0] if terminated else EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `biobullet info x.urdf | head`: the reader left, stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO) or not _raised_here(exc):
            return _internal_error(exc, errors)
        # a command's print(): `biobullet info x --json > file` on a full disk; nothing more can reach stdout
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"{PROG}: error: cannot write the results to standard output: {exc.strerror}", file=errors)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001  (last resort: one line, no traceback unless debugging)
        return _internal_error(exc, errors)
    finally:
        library_logger.removeHandler(handler)
        library_logger.setLevel(logger_level)
        warnings.formatwarning = python_format
    return EXIT_OK


def _raised_here(exc: BaseException) -> bool:
    """Whether `exc` was raised by this module's own code (its prints to standard output), not by a callee."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename == __file__


def _internal_error(exc: Exception, errors) -> int:
    """One line for an exception that is no user's fault (the traceback with BIOBULLET_DEBUG=1); Ctrl-C caught
    inside a compiled kernel is still an interruption."""
    from biobullet.core.errors import interrupted
    if interrupted(exc):   # Ctrl-C while a compiled kernel ran (another command's): numba's SystemError
        print(f"\n{PROG}: interrupted", file=errors)
        return EXIT_INTERRUPTED
    if os.environ.get("BIOBULLET_DEBUG") == "1":
        import traceback
        traceback.print_exc()
    detail = str(exc).splitlines()[0] if str(exc) else ""
    print(f"{PROG}: internal error: {type(exc).__name__}{': ' + detail if detail else ''} — please report "
          f"this as a bug (set BIOBULLET_DEBUG=1 to see the traceback)", file=errors)
    return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
