"""Fuzz campaign: thousands of mutations of every bundled model, each loaded like a hostile user would.

    python tools/fuzz_campaign.py --count 10000 [--workers 2] [--seed 1] [--simulate-every 10]
                                  [--out docs/fuzz_campaign.md] [--json out/fuzz_campaign.json]

Each mutant (one to three random edits of a bundled model: hostile attribute values — NaN, ±inf, 1e308, 400-digit
integers, control characters, 100 kB strings, expressions with poles or outside their domain —, deleted or
duplicated elements and attributes, renamed tags, unknown attributes, truncated or byte-flipped files, changed
encoding declarations, deep function chains) goes through

  1. `biobullet info MUTANT` (in-process, `biobullet.cli.main`): exit 0, or exit 2 with one line on stderr;
  2. if it loads: the Python API at the initial state and three random states — mass_matrix, bias_forces,
     forward_dynamics, joint_configuration: finite arrays, or a BiobulletError (never NaN, never another
     exception);
  3. every `--simulate-every`-th loadable mutant: `biobullet simulate MUTANT --t-end 0.02` (exit 0 or 2).

Every simulated mutant is then replayed as HTML (`biobullet view MUTANT --trajectory RUN --html PAGE`). The second
campaign (issue 27) added blank values, `<biobullet>` blocks nested in links/joints/visuals, deep XML nesting,
hostile `<visual>`/`<collision>` geometry, thousands of copies of one element, stiffened springs and contacts, and
names hostile to an HTML page (`<!--<script>`, `</script>`, `]]>`).

Outcomes: `ok` (loaded, every check finite), `rejected` (clean exit 2 / BiobulletError), `internal` (exit 1 or any
other exception), `nan` (a non-finite array returned), `slow` (a command over `--limit` s of CPU time, default 60),
`inconsistent` (the viewer refused a visual that `info` accepted), `unsafe_html` (raw `<`, `>` or `&` in the replay
page's embedded data). The
results table (per model and per outcome, with examples of every non-clean case) is written to `--out`. The
campaign is deterministic for a given --seed. Exit code 0 iff there is no internal, nan or slow case.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import random
import re
import signal
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugin"))

HOSTILE_NUMBERS = ["", " ", "nan", "NaN", "inf", "-inf", "1e308", "-1e308", "1e-320", "0", "-0", "-1", "1e200",
                   "-1e200", "abc", "1 2", "1,5", "0x10", "1_000", "9" * 400, "1e99999", "+", "--1", "١٢",
                   "1e12", "-1e12", "3.4028235e38", "1/0", "0.5 0.5 0.5 0.5", "0 0 0", "0 0 1e300", "1e6 1e6 1e6"]
HOSTILE_TEXT = ["", "x" * 100_000, "a&#10;Traceback (most recent call last):&#13;", "\u202e\u0000", "🦴",
                "..", "../../etc/passwd", "/dev/null", "name with spaces", "<>", "'\"", "\t\n"]
EXPRESSIONS = ["1/t", "log(t)", "1/(t-0.01)", "log(j)", "acos(2 + j)", "exp(1000*j)", "sqrt(-1 - j*j)",
               "exp(" * 30 + "j" + ")" * 30, "j" + "**j" * 20, "9" * 400 + "*j", "(" * 150 + "j" + ")" * 150,
               "__import__('os').system('true')", "j.__class__", "t**-1", "tan(pi/2 + 0*j)", "1e308*1e308*j",
               "atan2(0, 0*j)", "j**0.5", "(-1)**j", "sinh(1e5*j)", "0/0 + j", "j/0"]
TAGS = ["robot", "link", "joint", "inertial", "mass", "inertia", "origin", "axis", "parent", "child", "limit",
        "mimic", "biobullet", "joint_function", "loop", "spring", "joint_spring", "joint_torque", "joint_stop",
        "contact", "flexible", "initial", "gravity", "base", "coordinates", "muscle"]
ENCODINGS = ["UTF-32", "klingon", "UTF-16", "ISO-8859-1", "EBCDIC-CP-US", "utf-7", "ascii"]
# second campaign (issue 27): blank values, names hostile to an HTML page, visual/collision geometry
BLANKS = ["", " ", "\t", " &#10; "]
HTML_NAMES = ["&lt;!--&lt;script&gt;", "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;", "]]&gt;",
              "&amp;lt;", "a&#x2028;b"]
SHAPES = ['<box size="{v}"/>', '<sphere radius="{v}"/>', '<cylinder radius="{v}" length="1"/>',
          '<capsule radius="0.1" length="{v}"/>', '<mesh filename="{v}"/>', '<mesh filename="a.stl" scale="{v}"/>',
          '<torus radius="{v}"/>', '']


# ------------------------------------------------------------------------------------------------ mutation
def _attribute_spans(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(2), m.end(2), m.group(1)) for m in re.finditer(r'\b([A-Za-z_][\w:-]*)="([^"]*)"', text)]


def _element_spans(text: str) -> list[tuple[int, int]]:
    spans = [(m.start(), m.end()) for m in re.finditer(r"<(\w+)\b[^<>]*/>", text)]
    spans += [(m.start(), m.end()) for m in re.finditer(r"<(\w+)\b[^<>]*>(?:(?!<\1\b).)*?</\1>", text, re.S)]
    return spans


def mutate(text: str, rng: random.Random) -> tuple[str, str]:
    """One random edit of model text; returns (new text, description)."""
    kind = rng.choice(["number", "number", "number", "text", "expression", "drop_attribute", "drop_element",
                       "duplicate_element", "rename_tag", "unknown_attribute", "swap", "truncate", "bytes",
                       "encoding", "chain", "huge_comment",
                       "blank", "nest_block", "deep_nesting", "shape", "many_elements", "stiffen", "html_name"])
    if kind in ("nest_block", "deep_nesting", "shape", "many_elements", "stiffen", "html_name"):
        return mutate_second(text, rng, kind)
    attrs = _attribute_spans(text)
    if kind in ("number", "text", "expression", "drop_attribute", "unknown_attribute", "swap", "blank") and attrs:
        start, end, name = rng.choice(attrs)
        if kind == "blank":
            value = rng.choice(BLANKS)
            return text[:start] + value + text[end:], f"{name}={value!r} (blank)"
        if kind == "number":
            value = rng.choice(HOSTILE_NUMBERS)
            return text[:start] + value + text[end:], f"{name}={value[:20]!r}"
        if kind == "text":
            value = rng.choice(HOSTILE_TEXT)
            return text[:start] + value + text[end:], f"{name}=<text {len(value)} chars>"
        if kind == "expression":
            value = rng.choice(EXPRESSIONS)
            if "expression=" in text and rng.random() < 0.7:
                m = rng.choice(list(re.finditer(r'expression="([^"]*)"', text)))
                inputs = re.search(r'inputs="([^"]*)"', text[max(0, m.start() - 300):m.start()])
                joint = (inputs.group(1).split() or ["t"])[0] if inputs else "t"
                value = value.replace("j", joint) if joint != "t" else value.replace("j", "t")
                return text[:m.start(1)] + value + text[m.end(1):], f"expression={value[:30]!r}"
            return text[:start] + value + text[end:], f"{name}={value[:30]!r}"
        if kind == "drop_attribute":
            m = re.search(r'\s' + re.escape(name) + r'="[^"]*"', text[max(0, start - len(name) - 3):end + 1])
            a = max(0, start - len(name) - 3)
            if m:
                return text[:a + m.start()] + text[a + m.end():], f"drop {name}"
        if kind == "unknown_attribute":
            return text[:end + 1] + ' bogus_attr="1"' + text[end + 1:], f"unknown attribute after {name}"
        if kind == "swap":
            other = rng.choice(attrs)
            a, b = (start, end), (other[0], other[1])
            if a[0] > b[0]:
                a, b = b, a
            if a[1] <= b[0]:
                va, vb = text[a[0]:a[1]], text[b[0]:b[1]]
                return text[:a[0]] + vb + text[a[1]:b[0]] + va + text[b[1]:], f"swap {name}/{other[2]}"
    elements = _element_spans(text)
    if kind in ("drop_element", "duplicate_element") and elements:
        start, end = rng.choice(elements)
        if kind == "drop_element":
            return text[:start] + text[end:], f"drop {text[start:start + 30]!r}"
        return text[:end] + text[start:end] + text[end:], f"duplicate {text[start:start + 30]!r}"
    if kind == "rename_tag":
        tags = list(re.finditer(r"<(\w+)", text))
        if tags:
            m = rng.choice(tags)
            new = rng.choice(TAGS)
            close = text.find(f"</{m.group(1)}>", m.end())
            if close >= 0 and rng.random() < 0.5:
                text = text[:close + 2] + new + text[close + 2 + len(m.group(1)):]
            return text[:m.start(1)] + new + text[m.end(1):], f"<{m.group(1)}> → <{new}>"
    if kind == "truncate":
        cut = rng.randrange(len(text))
        return text[:cut], f"truncated at {cut}"
    if kind == "bytes":
        pos = rng.randrange(len(text))
        junk = rng.choice(["\x00", "\x1b[2J", "&#0;", "&bogus;", "<", "&", "]]>", "\ud800"[:0] + "\uffff", "<!--"])
        return text[:pos] + junk + text[pos:], f"insert {junk!r} at {pos}"
    if kind == "encoding":
        body = re.sub(r"^\s*<\?xml[^>]*\?>", "", text)
        enc = rng.choice(ENCODINGS)
        return f'<?xml version="1.0" encoding="{enc}"?>' + body, f"encoding {enc}"
    if kind == "chain":
        n = rng.choice([50, 500, 1500])
        links = "".join(f'<link name="fz{i}"><inertial><mass value="0.1"/><inertia ixx="1e-3" iyy="1e-3" '
                        f'izz="1e-3" ixy="0" ixz="0" iyz="0"/></inertial></link>' for i in range(n))
        found = re.search(r'<link name="([^"]+)"', text)
        if found is None:
            return text, "chain skipped (no link)"
        root = found.group(1)
        joints = "".join(f'<joint name="fzj{i}" type="revolute"><parent link="{root if i == 0 else f"fz{i-1}"}"/>'
                         f'<child link="fz{i}"/><axis xyz="0 0 1"/>'
                         + (f'<mimic joint="fzj{i + 1}"/>' if i < n - 1 else "") + "</joint>" for i in range(n))
        return text.replace("</robot>", links + joints + "</robot>"), f"{n}-long mimic chain"
    if kind == "huge_comment":
        size = rng.choice([10_000, 500_000])
        return text.replace("<robot", "<!--" + "x" * size + "--><robot", 1), f"{size}-byte comment"
    return text, "unchanged"


def mutate_second(text: str, rng: random.Random, kind: str) -> tuple[str, str]:
    """The mutation kinds of the second campaign (issue 27)."""
    if kind == "nest_block":   # the <biobullet> block moved inside a link, a joint or a visual
        block = re.search(r"<biobullet\b.*?</biobullet>", text, re.S)
        hosts = [m for m in re.finditer(r"<(link|joint|visual|inertial)\b[^<>]*[^/]>", text)]
        if block is None or not hosts:
            return text, "nest_block skipped"
        host = rng.choice(hosts)
        moved = text[:block.start()] + text[block.end():] if block.start() > host.end() else text
        if moved is text:
            return text, "nest_block skipped"
        return moved[:host.end()] + block.group() + moved[host.end():], f"<biobullet> nested in <{host.group(1)}>"
    if kind == "deep_nesting":
        depth = rng.choice([70, 10_000, 150_000])
        return text.replace("</link>", "<x>" * depth + "</x>" * depth + "</link>", 1), f"{depth}-deep nesting"
    if kind == "shape":   # a <visual> or <collision> with a hostile origin or geometry on a random link
        value = rng.choice(HOSTILE_NUMBERS + ["-0.1", "-1 1 1", "1 1 1 1"])
        origin = rng.choice(["", f'<origin xyz="{value}"/>', f'<origin rpy="{value}"/>'])
        shape = rng.choice(SHAPES).format(v=value if not origin else "0.1 0.1 0.1")
        element = rng.choice(["visual", "collision"])
        return (text.replace("</link>", f"<{element}>{origin}<geometry>{shape}</geometry></{element}></link>", 1),
                f"<{element}> {origin} {shape}"[:100])
    if kind == "many_elements":   # thousands of copies of one <biobullet> element (renamed)
        children = list(re.finditer(r"<(contact|spring|joint_spring|joint_torque|joint_stop|joint_contact_stop)\b"
                                    r"[^<>]*/>", text))
        if not children:
            return text, "many_elements skipped"
        child = rng.choice(children).group()
        count = rng.choice([1000, 8000])
        copies = "".join(re.sub(r'name="([^"]*)"', lambda m, k=k: f'name="{m.group(1)}_fz{k}"', child)
                         for k in range(count))
        return text.replace(child, child + copies, 1), f"{count} copies of <{child[1:child.find(' ')]}>"
    if kind == "stiffen":   # a stiff mutant: every stiffness and damping raised
        factor = rng.choice([1e3, 1e4, 1e6])

        def raise_value(m: re.Match) -> str:
            try:
                return f'{m.group(1)}="{float(m.group(2)) * factor:g}"'
            except ValueError:
                return m.group(0)
        return re.sub(r'\b(stiffness|damping)="([^"]*)"', raise_value, text), f"stiffness and damping ×{factor:g}"
    names = list(re.finditer(r'\bname="([^"]*)"', text))   # html_name
    if not names:
        return text, "html_name skipped"
    m = rng.choice(names)
    value = rng.choice(HTML_NAMES)
    return text.replace(f'"{m.group(1)}"', f'"{value}"'), f"name {m.group(1)!r} → {value!r} everywhere"


def mutant(text: str, rng: random.Random) -> tuple[str, str]:
    notes = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        text, note = mutate(text, rng)
        notes.append(note)
    return text, "; ".join(notes)


# ------------------------------------------------------------------------------------------------ checking
class _Timeout(BaseException):
    """Raised by the per-command timer; a BaseException so that the CLI's last-resort handler (which turns any
    Exception into "internal error") cannot swallow it."""


def _alarm(signum, frame):  # noqa: ARG001
    raise _Timeout()


def _run_cli(argv: list[str], limit: float) -> tuple[int | str, str, float]:
    from biobullet.cli import main
    err = io.StringIO()
    started = time.process_time()
    signal.setitimer(signal.ITIMER_PROF, limit)   # CPU time: a loaded machine does not make a command "slow"
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code: int | str = main(argv)
    except _Timeout:
        code = "slow"
    except SystemExit as exc:  # argparse
        code = exc.code if isinstance(exc.code, int) else 2
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    seconds = time.process_time() - started
    if code == 1 and seconds >= limit:   # the timer fired inside a compiled kernel: Numba turns it into SystemError
        code = "slow"
    return code, err.getvalue(), seconds


def _api_checks(path: str, seed: int, limit: float) -> tuple[str, str]:
    import numpy as np

    from biobullet import load_model
    from biobullet.core.errors import BiobulletError
    rng = np.random.default_rng(seed)
    signal.setitimer(signal.ITIMER_PROF, limit)
    try:
        model = load_model(path)
        q0, v0 = model.initial_state()
        states = [(q0, v0)] + [(model.neutral_configuration() + (0 if model.floating_base else
                                                                rng.uniform(-1, 1, model.nq)),
                                rng.uniform(-1, 1, model.nv)) for _ in range(3)]
        for k, (q, v) in enumerate(states):
            if model.floating_base and k:
                q = q0.copy()
            t = float(rng.uniform(0, 0.5)) if k else 0.0
            for name, call in (("joint_configuration", lambda: model.joint_configuration(q, t)),
                               ("mass_matrix", lambda: model.mass_matrix(q, t)),
                               ("bias_forces", lambda: model.bias_forces(q, v, t)),
                               ("forward_dynamics", lambda: model.forward_dynamics(q, v, t=t))):
                try:
                    value = np.asarray(call(), dtype=float)
                except BiobulletError:
                    continue
                if not np.all(np.isfinite(value)):
                    return "nan", f"{name} returned non-finite values at state {k}"
        return "ok", ""
    except BiobulletError as exc:
        return "rejected", str(exc)[:200]
    except _Timeout:
        return "slow", f"API checks over {limit:g} s"
    except Exception as exc:  # noqa: BLE001  (the campaign reports every escape)
        return "internal", f"{type(exc).__name__}: {str(exc)[:200]}"
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)


def _traceback(err: str) -> bool:
    return any(line.startswith("Traceback") for line in err.splitlines())


def warm_up() -> None:
    """Pool initializer: compile the numerical kernels (Numba) once per worker by running every bundled model
    through the API, so that the per-command time limit measures the command, not the JIT compiler."""
    import warnings

    import numpy as np
    warnings.simplefilter("ignore")
    from biobullet import load_model
    from biobullet.cli import main as cli
    for path in sorted((REPO / "urdf").glob("*.urdf")):
        try:
            model = load_model(path)
            q, v = model.initial_state()
            model.forward_dynamics(q, v)
            model.forward_dynamics(q + 0.01, v + 0.1, t=0.01)
            np.asarray(model.bias_forces(q, v))
            with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(io.StringIO()):
                cli(["simulate", str(path), "--t-end", "0.002", "--out", os.path.join(tmp, "w.csv")])
        except Exception:  # noqa: BLE001  (a bundled model the API cannot run at rest: warm-up only)
            pass


def _load_warned_of_missing_mesh(model: str, view_error: str) -> bool:
    """Whether loading `model` warns of the missing mesh file the viewer refused (`info` warns of a missing mesh
    rather than refusing the file: the dynamics read no mesh; see docs/hostile_input.md)."""
    import warnings

    from biobullet import load_model
    if "mesh file" not in view_error or "not found" not in view_error:
        return False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_model(model)
    link = re.search(r'<link name="[^"]*"> <visual> number \d+', view_error)
    return link is not None and any("mesh file" in str(w.message) and link.group() in str(w.message)
                                    for w in caught)


def _html_check(model: str, trajectory: str, page: str, limit: float) -> tuple[str, str]:
    """`biobullet view MODEL --trajectory RUN --html PAGE` of a simulated mutant: the page's embedded data must be
    inert in HTML (no raw <, >, &), and the viewer may not refuse a visual that `info` accepted (a missing mesh
    file: `info` must have warned of it)."""
    code, err, _ = _run_cli(["view", model, "--trajectory", trajectory, "--html", page], limit)
    lines = [line for line in err.splitlines() if "error" in line]
    if code == "slow":
        return "slow", f"view --html over {limit:g} s"
    if code == 1 or "internal error" in err or _traceback(err):
        return "internal", "view: " + (lines[-1] if lines else err[-200:])
    if code == 2:
        refused_shape = lines and ("<visual>" in lines[-1] or "<collision>" in lines[-1])
        if refused_shape and not _load_warned_of_missing_mesh(model, lines[-1]):
            return "inconsistent", "view refused what info accepted: " + lines[-1][:160]
        return "ok", ""
    with open(page, encoding="utf-8") as handle:
        html = handle.read()
    data = html[html.index('<script id="data"'):]
    data = data[data.index(">") + 1:data.index("</script>")]
    unsafe = sorted(set(data) & set("<>&\u2028\u2029"))
    return ("unsafe_html", f"raw {unsafe} in the page's JSON") if unsafe else ("ok", "")


def check_one(task: tuple[int, str, str, str, bool, float]) -> dict:
    index, model_name, text, note, simulate, limit = task
    import warnings
    warnings.simplefilter("ignore")
    signal.signal(signal.SIGPROF, _alarm)
    with tempfile.TemporaryDirectory(prefix="fuzz") as tmp:
        path = os.path.join(tmp, "mutant.urdf")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(text)
        if note.startswith("encoding UTF-32") or "encoding UTF-16" in note:
            enc = "utf-32" if "UTF-32" in note else "utf-16"
            with open(path, "wb") as handle:
                handle.write(text.encode(enc, errors="replace"))
        record = {"index": index, "model": model_name, "mutation": note[:160]}
        code, err, seconds = _run_cli(["info", path], limit)
        lines = [line for line in err.splitlines() if line.strip()]
        record["info_seconds"] = round(seconds, 3)
        if code == "slow":
            record.update(outcome="slow", detail=f"info over {limit:g} s")
            return record
        if code == 0:
            outcome, detail = _api_checks(path, index, limit)
            if outcome == "ok" and simulate:
                out = os.path.join(tmp, "trajectory.csv")
                sim_code, sim_err, sim_seconds = _run_cli(["simulate", path, "--t-end", "0.02", "--out", out],
                                                          limit)
                record["simulate_seconds"] = round(sim_seconds, 3)
                record["simulated"] = True
                sim_lines = [line for line in sim_err.splitlines() if "error" in line]
                if sim_code == "slow":
                    outcome, detail = "slow", f"simulate over {limit:g} s"
                elif sim_code == 1 or "internal error" in sim_err or _traceback(sim_err):
                    outcome, detail = "internal", "simulate: " + (sim_lines[-1] if sim_lines else sim_err[-200:])
                elif sim_code == 2 and len(sim_lines) != 1:
                    outcome, detail = "internal", f"simulate: {len(sim_lines)} error lines"
                elif sim_code == 0:
                    outcome, detail = _html_check(path, out, os.path.join(tmp, "replay.html"), limit)
            record.update(outcome=outcome, detail=detail)
        elif code == 2 and len(lines) == 1 and lines[0].startswith("biobullet: error:") \
                and not _traceback(err):
            record.update(outcome="rejected", detail=lines[0][:200])
        else:
            record.update(outcome="internal", detail=f"exit {code}: {(lines[-1] if lines else '')[:200]}"
                          + (f" ({len(lines)} lines)" if len(lines) != 1 else ""))
        return record


#: outcomes that are findings (anything but ok and a clean rejection)
BAD_OUTCOMES = ("internal", "nan", "slow", "inconsistent", "unsafe_html")


# ------------------------------------------------------------------------------------------------ campaign
def bundled_models() -> dict[str, str]:
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted((REPO / "urdf").glob("*.urdf"))}


def tasks(count: int, seed: int, simulate_every: int, limit: float, only: set[int] | None = None):
    rng = random.Random(seed)
    models = bundled_models()
    names = sorted(models)
    for index in range(count):
        name = names[index % len(names)]
        text, note = mutant(models[name], rng)   # always drawn, so that --only reproduces the same mutants
        if only is None or index in only:
            yield (index, name, text, note, (simulate_every > 0 and index % simulate_every == 0) or
                   only is not None, limit)


def write_table(records: list[dict], path: Path, args: argparse.Namespace, wall: float) -> None:
    outcomes = ["ok", "rejected", "internal", "nan", "slow", "inconsistent", "unsafe_html"]
    per_model: dict[str, Counter] = defaultdict(Counter)
    for r in records:
        per_model[r["model"]][r["outcome"]] += 1
    total = Counter(r["outcome"] for r in records)
    simulated = sum(1 for r in records if r.get("simulated"))
    slowest = max(records, key=lambda r: max(r.get("info_seconds", 0), r.get("simulate_seconds", 0)))
    lines = ["# Fuzz campaign: mutated bundled models", "",
             f"Generated by `python tools/fuzz_campaign.py --count {args.count} --seed {args.seed} "
             f"--workers {args.workers} --simulate-every {args.simulate_every}` "
             f"({len(records)} mutants, {wall / 60:.1f} min wall time).", "",
             "Each mutant is one to three random edits of a bundled model (hostile numbers, control characters, "
             "long strings, expressions with poles or outside their domain, deleted/duplicated/renamed elements "
             "and attributes, truncated files, odd encodings, long mimic chains, big comments; since issue 27 also "
             "blank values, nested <biobullet> blocks, deep nesting, hostile visual/collision geometry, thousands "
             "of copies of an element, stiffened springs and contacts, HTML-hostile names), run through "
             "`biobullet info`, the Python API at four states (mass_matrix, bias_forces, forward_dynamics, "
             f"joint_configuration) and, for every {args.simulate_every}th loadable mutant, `biobullet simulate "
             "--t-end 0.02` and its HTML replay. `rejected` = exit 2 with one line (or a BiobulletError from the "
             "API); `internal` = exit 1 / another exception; `nan` = a non-finite array returned; "
             f"`slow` = a command over {args.limit:g} s of CPU time; `inconsistent` = the viewer refused a visual that `info` "
             "accepted; `unsafe_html` = raw <, > or & in the replay's embedded data.", "",
             "| model | " + " | ".join(outcomes) + " |", "|---|" + "---|" * len(outcomes)]
    for name in sorted(per_model):
        lines.append(f"| {name} | " + " | ".join(str(per_model[name][o]) for o in outcomes) + " |")
    lines.append("| **total** | " + " | ".join(f"**{total[o]}**" for o in outcomes) + " |")
    lines += ["", f"Simulated: {simulated} mutants. Slowest command (CPU time): "
              f"{max(slowest.get('info_seconds', 0), slowest.get('simulate_seconds', 0)):.2f} s "
              f"({slowest['model']}: {slowest['mutation'][:80]}).", ""]
    bad = [r for r in records if r["outcome"] in BAD_OUTCOMES]
    if bad:
        lines += ["## Cases to fix", "", "| # | model | mutation | outcome | detail |", "|---|---|---|---|---|"]
        for r in bad[:200]:
            cell = lambda s: str(s).replace("|", "\\|").replace("\n", " ")[:160]  # noqa: E731
            lines.append(f"| {r['index']} | {r['model']} | `{cell(r['mutation'])}` | {r['outcome']} | "
                         f"`{cell(r['detail'])}` |")
    else:
        lines += ["No internal error, no silent NaN, no slow command."]
    sample = Counter(r["detail"].split(":")[-2].strip() if r["outcome"] == "rejected" and ":" in r["detail"]
                     else "" for r in records)
    del sample
    path.parent.mkdir(parents=True, exist_ok=True)
    from biobullet.core.atomic import write_text
    write_text(path, "\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--simulate-every", type=int, default=10)
    parser.add_argument("--limit", type=float, default=60.0, help="CPU seconds allowed per command")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "fuzz_campaign.md")
    parser.add_argument("--json", type=Path, default=None, help="every record as JSON lines")
    parser.add_argument("--only", type=int, nargs="+", default=None, metavar="INDEX",
                        help="rerun only these mutants of the campaign (same --count/--seed), simulate included")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    records: list[dict] = []
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(args.workers, initializer=warm_up) as pool:
        for record in pool.imap_unordered(check_one, tasks(args.count, args.seed, args.simulate_every, args.limit,
                                                          set(args.only) if args.only else None),
                                          chunksize=4):
            records.append(record)
            if record["outcome"] in BAD_OUTCOMES:
                print(f"[{record['index']}] {record['model']}: {record['outcome']}: {record['mutation'][:80]} → "
                      f"{record['detail'][:160]}", file=sys.stderr, flush=True)
            if len(records) % 250 == 0:
                counts = Counter(r["outcome"] for r in records)
                print(f"{len(records)}/{args.count} {dict(counts)} {time.perf_counter() - started:.0f} s",
                      file=sys.stderr, flush=True)
    records.sort(key=lambda r: r["index"])
    if args.json:
        from biobullet.core.atomic import write_text
        write_text(args.json, "".join(json.dumps(r) + "\n" for r in records))
    write_table(records, args.out, args, time.perf_counter() - started)
    bad = sum(1 for r in records if r["outcome"] in BAD_OUTCOMES)
    print(f"{len(records)} mutants: {dict(Counter(r['outcome'] for r in records))}; results in {args.out}",
          file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
