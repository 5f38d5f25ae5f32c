"""README.md and docs/*.md name only files and definitions that exist: every repository path written in backquotes
or as a link (`tests/...py`, `demos/...`, `integrate/engine.py` relative to plugin/biobullet/, ...) is there, and a
module written next to a name (`integrate/engine.py` `System._rhs`, `forces/elements.py::limit_stops`,
`constraints/newton_kernel._loop_newton_py`, `biobullet.core.jit.compiled`) defines that name (read from the
source with ast, nothing imported). A made-up path, module or name fails the check (the last test)."""
from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "plugin" / "biobullet"
STUDIES = ROOT / "plugin" / "biobullet_studies"
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Folders at the repository's top level that a written path may start with; `out/` is made by runs, not stored.
TOP_LEVEL = ("tests/", "plugin/", "docs/", "demos/", "tools/", "urdf/", "sweeps/")
# Suffixes of files (a written `a/b.name` with another suffix is module a/b.py and its definition `name`).
FILE_SUFFIXES = {".py", ".md", ".png", ".gif", ".svg", ".html", ".urdf", ".osim", ".json", ".csv", ".txt", ".toml",
                 ".stl", ".obj", ".vtp", ".xml", ".npz"}
PLACEHOLDER = re.compile(r"[<>*…{}]|\bNAME\b|\bTYPE\b|\bPKG\b|\bOUT\b")
PATH_SPAN = re.compile(r"[\w./-]+(?:::[\w.]+)?")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A dotted name of the library: `biobullet.core.jit.compiled`, `pipeline.stages.rhs_py`, `contact.kernels` (the
# package prefix may be left out when the first part is one of the library's packages).
DOTTED = re.compile(r"(?:biobullet(?:_studies)?\.)?[a-z_]+(?:\.[A-Za-z_]\w*)+(?:\(\))?")
# A module followed by a name in backquotes: "`integrate/engine.py` `System._rhs`" or "`muscles/path.py`'s `name`".
MODULE_THEN_NAME = re.compile(r"`([\w/]+\.py)`(?:'s)?[ \t]+`([A-Za-z_][\w.]*)(?:\(\))?`")


@lru_cache(maxsize=None)
def _library_packages() -> set[str]:
    return {path.name for path in LIBRARY.iterdir() if path.is_dir() and (path / "__init__.py").is_file()}


def resolve(written: str, document: Path) -> Path | None:
    """The file or folder a written repository path names, or None when the text is not a checkable repository path
    (placeholders, generated outputs, absolute paths). A bare `name.py` must be some file of the repository."""
    if PLACEHOLDER.search(written) or "://" in written or written.startswith(("/", "~", "out/", "#")):
        return None
    if written.startswith(TOP_LEVEL):
        return ROOT / written
    if written.startswith("biobullet_studies/"):
        return STUDIES / written.removeprefix("biobullet_studies/")
    if written.split("/")[0] in _library_packages() and "/" in written:
        return LIBRARY / written
    if document.parent != ROOT and written.startswith(("../", "./", "gallery/")):
        return document.parent / written
    if "/" not in written and written.endswith(".py"):  # a bare file name: some file of the repository has it
        return _files_named().get(written, ROOT / "(no file named this)" / written)
    return None


@lru_cache(maxsize=None)
def _files_named() -> dict[str, Path]:
    """The repository's Python files by bare name (one of them where several share a name)."""
    return {path.name: path for folder in ("plugin", "tests", "demos", "tools") for path in (ROOT / folder).rglob("*.py")}


def _split_name(written: str) -> tuple[str, str | None]:
    """`a/b.py::name` and `a/b.name` (a module path with a definition) → (path, name); otherwise (written, None)."""
    if "::" in written:
        path, name = written.split("::", 1)
        return path, name
    last = written.rsplit("/", 1)[-1]
    if "/" in written and "." in last and Path(last).suffix not in FILE_SUFFIXES:
        path, name = written.rsplit(".", 1)
        if not Path(path).suffix:
            return f"{path}.py", name
    return written, None


@lru_cache(maxsize=None)
def _definitions(path: Path) -> dict[str, set[str]]:
    """Top-level names a module defines (functions, classes, assignments, imports) → the names each class defines
    (methods, class attributes, attributes its methods set on self)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: dict[str, set[str]] = {}

    def targets(node: ast.AST) -> list[str]:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            nodes = node.targets if isinstance(node, ast.Assign) else [node.target]
            return [leaf.id for target in nodes for leaf in ast.walk(target) if isinstance(leaf, ast.Name)]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [node.name]
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
        return []

    for node in tree.body:
        for name in targets(node):
            found.setdefault(name, set())
        if isinstance(node, ast.If):  # definitions under `if TYPE_CHECKING:` or a numba switch
            for inner in ast.walk(node):
                for name in targets(inner):
                    found.setdefault(name, set())
        if isinstance(node, ast.ClassDef):
            members = found[node.name]
            for inner in node.body:
                members.update(targets(inner))
            for inner in ast.walk(node):
                if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id == "self" \
                        and isinstance(inner.ctx, ast.Store):
                    members.add(inner.attr)
    return found


def defines(path: Path, name: str) -> bool:
    """Whether the module defines `name` at top level or as a member of one of its classes (`Class.member` looks
    inside that class; deeper names are not checked)."""
    parts = name.split(".")
    definitions = _definitions(path)
    if len(parts) == 1:
        return name in definitions or any(name in members for members in definitions.values())
    if len(parts) == 2 and parts[0] in definitions:
        members = definitions[parts[0]]
        # A name imported or assigned at top level (not a class) is an object whose members ast cannot see.
        return parts[1] in members or not members
    return True


def dotted_problem(written: str) -> str | None:
    """Why a dotted library name that reaches a module file names nothing there, or None when it resolves or is
    not checkable (it does not reach a module: `bridge.apply()`, `model.workspace` are instances' attributes)."""
    parts = written.removesuffix("()").split(".")
    # Without the package prefix `bridge.x.y` may be an instance's attributes: only a prefixed name's missing module
    # is reported.
    prefixed = parts[0] in ("biobullet", "biobullet_studies")
    if parts[0] == "biobullet_studies":
        here, parts = STUDIES, parts[1:]
    else:
        if parts[0] == "biobullet":
            parts = parts[1:]
        elif parts[0] not in _library_packages():
            return None
        here = LIBRARY
    for k, part in enumerate(parts):
        if (here / part).is_dir():
            here = here / part
        elif (here / f"{part}.py").is_file():
            rest = parts[k + 1:]
            if len(rest) > 2 or not rest or defines(here / f"{part}.py", ".".join(rest)):
                return None
            return f"{here.relative_to(ROOT)}/{part}.py defines no {'.'.join(rest)}"
        elif prefixed and k < len(parts) - 1 and not defines(here / "__init__.py", part):   # `pkg.gone_module.name`
            return f"{here.relative_to(ROOT)} has no module {part}"
        else:   # a name of a package (lazy exports, entry-point groups, an instance's attribute): not checked
            return None
    return None


def problems(text: str, document: Path) -> list[str]:
    """The written paths and module-name pairs of one document that name nothing in the repository."""
    found: list[str] = []
    spans = [span.strip() for span in CODE_SPAN.findall(text)]
    links = [link.split("#", 1)[0] for link in LINK.findall(text) if not link.startswith(("http", "mailto:", "#"))]
    for written in spans + links:
        if written and "/" not in written and DOTTED.fullmatch(written):
            why = dotted_problem(written)
            if why:
                found.append(f"{document.name}: `{written}`: {why}")
            continue
        if not written or not PATH_SPAN.fullmatch(written):
            continue
        path_text, name = _split_name(written)
        path = resolve(path_text, document)
        if path is None:
            continue
        if not path.exists():
            found.append(f"{document.name}: `{written}` does not exist ({path.relative_to(ROOT)})")
        elif name and path.suffix == ".py" and not defines(path, name):
            found.append(f"{document.name}: `{written}`: {path.relative_to(ROOT)} defines no {name}")
    for module, name in MODULE_THEN_NAME.findall(text):
        path = resolve(module, document)
        if path is not None and path.is_file() and not defines(path, name):
            found.append(f"{document.name}: `{module}` `{name}`: {path.relative_to(ROOT)} defines no {name}")
    return found


def test_every_written_path_and_name_exists() -> None:
    found = [problem for document in DOCUMENTS for problem in problems(document.read_text(encoding="utf-8"), document)]
    assert not found, "\n".join(found)


def test_a_made_up_path_or_name_is_reported() -> None:
    readme = ROOT / "README.md"
    text = ("See `integrate/engine.py` `System._rhs` and `tests/rhs_oracles.py`, "
            "but also `integrate/compiled_explicit.py`, `tests/benchmarks/test_made_up_speed.py`, "
            "[a link](demos/no_such_demo.py), `integrate/engine.py` `System._no_such_stage`, "
            "`forces/elements.py::no_such_law`, `constraints/newton_kernel._no_such_kernel_py`, "
            "`pipeline.stages.no_such_stage_py`, `biobullet.integrate.compiled_explicit.CompiledExplicitRHS`; "
            "real ones: `pipeline.stages.rhs_py`, `biobullet.core.jit.compiled`, `bridge.apply()`, "
            "`bridge.contacts.intervals()`.")
    found = problems(text, readme)
    assert len(found) == 8, found
    for made_up in ("compiled_explicit.py", "test_made_up_speed.py", "no_such_demo.py", "_no_such_stage",
                    "no_such_law", "_no_such_kernel_py", "no_such_stage_py", "no module compiled_explicit"):
        assert any(made_up in problem for problem in found), made_up
    assert not any(real in problem for problem in found
                   for real in ("rhs_oracles", "System._rhs`", "rhs_py`", "jit.compiled", "apply()", "intervals()"))
