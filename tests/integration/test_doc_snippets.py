"""Every ```python and ```sh snippet of README.md and docs/*.md runs, in order, from an empty temporary directory.

This is what a newcomer does: copy the snippets of one page into a fresh directory, top to bottom. So a snippet may
use only bundled models by name and files that an earlier snippet of the same page wrote (`knee.csv` must come
from a `simulate ... --out knee.csv` above its `view --trajectory knee.csv`). `sh` snippets hold `biobullet`
commands only (`> FILE` redirects stdout). Each snippet runs inside this test process, as its own process would run
it (tests/in_process.py: a Python snippet in a fresh `__main__` namespace, a command through `biobullet.cli.main`,
with the snippet's directory as working directory, MPLBACKEND=Agg, stdout/stderr captured, the exit code checked):
what a page's snippets share is only the files they write, as for a reader; the end-to-end `python -m biobullet`
run of each command is tests/integration/test_cli.py's. A snippet that is
not meant to run (installs packages, serves until Ctrl-C, needs the source checkout) carries the line

    <!-- snippet: not run (the reason) -->

just above its fence; `test_skipped_snippets_are_few_and_say_why` keeps those few and explained.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

import in_process

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP = re.compile(r"<!--\s*snippet:\s*not run\s*\((.+)\)\s*-->")
FENCE = re.compile(r"^```(python|sh)\s*$")
#: most snippets a page may exempt from running
MAX_SKIPPED = 2


def snippets(page: Path) -> list[tuple[int, str, str, str | None]]:
    """(line number, language, code, skip reason or None) of every ```python / ```sh block of `page`."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out, k = [], 0
    while k < len(lines):
        match = FENCE.match(lines[k])
        if not match:
            k += 1
            continue
        start, body = k + 1, []
        k += 1
        while k < len(lines) and lines[k].strip() != "```":
            body.append(lines[k])
            k += 1
        reason = SKIP.search(lines[start - 2]) if start >= 2 else None
        out.append((start, match.group(1), "\n".join(body) + "\n", reason.group(1) if reason else None))
        k += 1
    return out


#: what a reader's terminal would not change: pictures drawn off-screen
ENVIRONMENT = {"MPLBACKEND": "Agg"}


def run_shell_line(line: str, cwd: Path, where: str) -> None:
    words = shlex.split(line, comments=True)
    if not words:
        return
    assert words[0] == "biobullet", (f"{where}: `{line.strip()}` is not a biobullet command; mark the snippet "
                                     "<!-- snippet: not run (reason) --> if it is not meant to run")
    target = None
    if ">" in words:
        target = cwd / words[words.index(">") + 1]
        words = words[:words.index(">")]
    done = in_process.cli(*words[1:], cwd=cwd, env=ENVIRONMENT)
    if target is not None:
        target.write_text(done.stdout)
    assert done.returncode == 0, f"{where}: `{line.strip()}` exited {done.returncode}:\n{done.stderr[-3000:]}"


def run_python(code: str, cwd: Path, where: str) -> None:
    done = in_process.source(code, where, cwd=cwd, env=ENVIRONMENT)
    assert done.returncode == 0, f"{where}: the snippet failed:\n{done.stderr[-3000:]}"


PAGES_WITH_SNIPPETS = [page for page in PAGES if snippets(page)]


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES_WITH_SNIPPETS, ids=[page.name for page in PAGES_WITH_SNIPPETS])
def test_every_snippet_runs_from_an_empty_directory(page, tmp_path):
    ran = 0
    for line, language, code, reason in snippets(page):
        if reason is not None:
            continue
        where = f"{page.relative_to(ROOT)}:{line}"
        if language == "python":
            run_python(code, tmp_path, where)
        else:
            for number, text in enumerate(code.splitlines()):
                run_shell_line(text, tmp_path, f"{where} (+{number})")
        ran += 1
    assert ran, f"{page.name}: every snippet is marked not run"


def test_skipped_snippets_are_few_and_say_why():
    for page in PAGES_WITH_SNIPPETS:
        reasons = [reason for _, _, _, reason in snippets(page) if reason is not None]
        assert len(reasons) <= MAX_SKIPPED, f"{page.name}: {len(reasons)} snippets are not run"
        assert all(len(reason.strip()) >= 10 for reason in reasons), f"{page.name}: say why a snippet is not run"


def test_the_extractor_finds_the_readme_snippets():
    found = snippets(ROOT / "README.md")
    languages = [language for _, language, _, _ in found]
    assert languages.count("python") >= 2 and languages.count("sh") >= 3
    assert any("load_model(\"shoulder_rhythm\")" in code for _, _, code, _ in found)
    # the make targets need the checkout: they are the README's marked snippet
    assert [code.split()[0] for _, _, code, reason in found if reason] == ["make", "biobullet"]
