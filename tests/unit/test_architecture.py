"""The layering of docs/architecture.md holds: import-linter's contracts (pyproject.toml) are kept, the package graph
of the library is acyclic counting imports inside functions too, and each shared mechanism has one definition."""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugin"
LIBRARY = PLUGIN / "biobullet"


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(PLUGIN).with_suffix("").parts)
    package = parts[-1] == "__init__"
    if package:
        parts = parts[:-1]
    return ".".join(parts), package


def _imported_modules(path: Path) -> set[str]:
    """Every module imported anywhere in the file (top level and inside functions), as absolute names."""
    name, package = _module_name(path)
    here = name.split(".") if package else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _package_graph() -> dict[str, set[str]]:
    """biobullet's first-level packages/modules → the ones they import."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path in LIBRARY.rglob("*.py"):
        name, _ = _module_name(path)
        parts = name.split(".")
        source = parts[1] if len(parts) > 1 else "__init__"
        for target in _imported_modules(path):
            pieces = target.split(".")
            if pieces[0] == "biobullet" and len(pieces) > 1 and pieces[1] != source:
                candidate = LIBRARY / pieces[1]
                if candidate.is_dir() or candidate.with_suffix(".py").is_file():
                    graph[source].add(pieces[1])
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_package_graph_is_acyclic_counting_imports_inside_functions() -> None:
    graph = _package_graph()
    assert {"core", "model", "dynamics", "constraints"} <= set(graph) | {"core"}
    assert _cycle(graph) is None, "import cycle: " + " → ".join(_cycle(graph) or [])


def test_cycle_detection_sees_a_cycle() -> None:
    # the check above can fail: the same walk finds a planted two-package cycle
    assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_library_never_imports_the_studies() -> None:
    offenders = [str(path.relative_to(ROOT)) for path in LIBRARY.rglob("*.py")
                 if any(m.split(".")[0] == "biobullet_studies" for m in _imported_modules(path))]
    assert offenders == []


def _lint_imports() -> str | None:
    beside = Path(sys.executable).with_name("lint-imports")
    return str(beside) if beside.exists() else shutil.which("lint-imports")


def test_import_linter_contracts_are_kept() -> None:
    command = _lint_imports()
    if command is None:
        pytest.fail("import-linter is not installed (it is in the test extra: pip install -e '.[test]')")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGIN), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([command, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def _definitions(pattern: str) -> list[str]:
    regex = re.compile(pattern, re.M)
    return [str(p.relative_to(ROOT)) for p in PLUGIN.rglob("*.py") if regex.search(p.read_text(encoding="utf-8"))]


def test_one_jit_helper() -> None:
    # numba is reached through biobullet.core.jit only (one place compiles kernels), and core.jit_pair's one
    # StructRef type definition (no kernel)
    assert sorted(_definitions(r"^\s*(import numba|from numba)")) == ["plugin/biobullet/core/jit.py",
                                                                     "plugin/biobullet/core/jit_pair.py"]


def test_one_formulation_base_covers_the_multiplier_form() -> None:
    from biobullet.dynamics.formulation import JOINT, formulation_names
    assert "multipliers" in formulation_names(JOINT)
    engine = (LIBRARY / "integrate" / "engine.py").read_text(encoding="utf-8")
    assert '"multipliers"' not in engine   # the engine asks the formulation, it never tests the name
