"""No module imports another module's private name (issue 23): a `_name` of a biobullet module is used only inside
that module — by `from biobullet.x import _name` (relative or absolute, top level or inside a function) nor as
`x._name` on an imported biobullet module. What another module needs is public (kernels included: a kernel another
module binds or calls is `NAME_py`, a module's own is `_NAME_py`)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugin"


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(source: str, module: str, package: bool = False) -> list[str]:
    """The private names `source` (the text of module `module`) takes from other biobullet modules, as
    'line: module.name'."""
    here = module.split(".") if package else module.split(".")[:-1]
    tree = ast.parse(source)
    found: list[str] = []
    bound: dict[str, str] = {}   # local name → the biobullet module (or module member) it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            origin = ".".join(here[:len(here) - node.level + 1] + [node.module or ""]).strip(".") if node.level \
                else node.module or ""
            if not origin.split(".")[0].startswith("biobullet"):
                continue
            for alias in node.names:
                if _is_private(alias.name) and origin != module:
                    found.append(f"{node.lineno}: {origin}.{alias.name}")
                bound[alias.asname or alias.name] = f"{origin}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0].startswith("biobullet"):
                    bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                        alias.name.split(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            chain, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound and bound[value.id] != module:
                found.append(f"{node.lineno}: {bound[value.id]}.{'.'.join(reversed(chain))}")
    return found


def test_the_check_finds_every_form_of_private_import():
    source = ("from biobullet.model.tree import _AXIS\n"
              "from .stages import _rhs_py as rhs\n"
              "def f():\n"
              "    from biobullet.algorithms import compiled_kernels as ck\n"
              "    import biobullet.pipeline.stages\n"
              "    return ck._ROT, biobullet.pipeline.stages._forward_py\n"
              "from biobullet.pipeline.kernels import _own, public\n"
              "from numpy import _private_of_numpy\n")
    found = private_imports(source, "biobullet.pipeline.kernels")
    assert found == ["1: biobullet.model.tree._AXIS", "2: biobullet.pipeline.stages._rhs_py",
                     "6: biobullet.algorithms.compiled_kernels._ROT", "6: biobullet.pipeline.stages._forward_py"]


def test_no_module_imports_a_private_name_of_another():
    offences = []
    for path in sorted(PLUGIN.rglob("*.py")):
        parts = list(path.relative_to(PLUGIN).with_suffix("").parts)
        package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if package else parts)
        offences += [f"{path.relative_to(ROOT)}:{hit}"
                     for hit in private_imports(path.read_text(encoding="utf-8"), module, package)]
    assert not offences, "private names imported across modules:\n" + "\n".join(offences)
