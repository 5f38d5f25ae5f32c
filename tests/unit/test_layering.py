"""No module imports another module's private name (issue 23): a `_name` of a biobullet module is used only inside
that module — by `from biobullet.x import _name` (relative or absolute, top level or inside a function) nor as
`x._name` on an imported biobullet module. What another module needs is public (kernels included: a kernel another
module binds or calls is `NAME_py`, a module's own is `_NAME_py`). Nor does a module use a private attribute of an
object whose class lives in another module (`bridge._samples` outside bridge.py): the owner makes it public (a
documented attribute, a method, a shared state record) or the code moves to the owner."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugin"


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


#: a module's syntax tree, parsed once for both checks of this file (read only)
_parsed = functools.lru_cache(maxsize=None)(ast.parse)


def private_imports(source: str, module: str, package: bool = False) -> list[str]:
    """The private names `source` (the text of module `module`) takes from other biobullet modules, as
    'line: module.name'."""
    here = module.split(".") if package else module.split(".")[:-1]
    tree = _parsed(source)
    found: list[str] = []
    bound: dict[str, str] = {}   # local name → the biobullet module (or module member) it is bound to
    nodes = list(ast.walk(tree))   # (one walk: the imports bind first, then every attribute is read)
    for node in nodes:
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
    for node in nodes:
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


# ---------------------------------------------------------------------------------------------- private attributes
#: private attributes of other libraries' objects that are those libraries' only way to reach a value: namedtuple's
#: public API, numba's struct proxy (`cgutils`) in an intrinsic's code generation (core/jit.py), and the client id
#: of a pybullet_utils BulletClient, which it keeps only as `_client` (bridge/connection.py)
FOREIGN_API = frozenset({"_replace", "_fields", "_asdict", "_make", "_field_defaults", "_getvalue", "_client"})
#: TEMPORARY, the lead removes each entry once the owning branch has fixed it (this session's ownership map):
#: (file, offending expression) → the branch that owns the file. Only these exact uses are tolerated; the core/jit.py
#: ones (numba's Dispatcher internals) are on the testtime branch, not yet merged when this list was written.
AWAITING_OWNER_FIX = {
    ("plugin/biobullet/core/jit.py", "kernel._cache"): "testtime",
    ("plugin/biobullet/core/jit.py", "kernel._pyfunc"): "testtime",
    ("plugin/biobullet/core/jit.py", "entry._cache"): "testtime",
}
_ATTRIBUTE_CALLS = ("getattr", "setattr", "hasattr", "delattr")


def _private_attribute_use(node: ast.AST) -> tuple[ast.AST, str, bool] | None:
    """(base, name, store) if `node` uses a private attribute `base._name` or is a getattr-family call with a
    constant private name; else None."""
    if isinstance(node, ast.Attribute) and _is_private(node.attr):
        return node.value, node.attr, isinstance(node.ctx, (ast.Store, ast.Del))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ATTRIBUTE_CALLS \
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
            and isinstance(node.args[1].value, str) and _is_private(node.args[1].value):
        return node.args[0], node.args[1].value, node.func.id in ("setattr", "delattr")
    return None


def _nodes_and_scopes(tree: ast.AST):
    """(node, the innermost function whose walk reaches it — its decorators and defaults included — or None at
    module level) for every node of `tree`, in one walk."""
    stack: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while stack:
        node, scope = stack.pop()
        yield node, scope
        inner = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else scope
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))


def _locally_made(function: ast.AST) -> set[str]:
    """Names a function binds itself (the objects it made: assignments, nested defs), not its arguments."""
    names = set()
    for node in ast.walk(function):
        if node is not function and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                parts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
                names.update(part.id for part in parts if isinstance(part, ast.Name))
    return names


def foreign_private_attributes(source: str) -> list[str]:
    """The private attributes `source` (one module) uses on objects whose class lives elsewhere, as 'line: expr'.

    A module owns a private name `_x` that a class or function of it defines: a `def`/`class _x`, a class-body
    assignment, an attribute written on `self`/`cls`, or on an object the writing function made itself (a local
    name it assigned, e.g. a copy of `self`). Then `obj._x` is allowed anywhere in the module (another instance of
    its own class). Writing `_x` on an argument or another module's object, or reading a `_x` the module does not
    own, is an offence: what another module needs is public (an attribute, a method, a shared state record)."""
    tree = _parsed(source)
    owned: set[str] = set()
    offences: list[tuple[int, str]] = []
    made: dict[int, set[str]] = {}   # id(function) → the names it binds itself (module level: none)
    for node, scope in _nodes_and_scopes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            owned.add(node.name)
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                targets = statement.targets if isinstance(statement, ast.Assign) else \
                    [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) else []
                owned.update(t.id for t in targets if isinstance(t, ast.Name))
                if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__"
                                                             for t in statement.targets):
                    owned.update(c.value for c in ast.walk(statement.value)
                                 if isinstance(c, ast.Constant) and isinstance(c.value, str))
        use = _private_attribute_use(node)
        if use is None:
            continue
        # a use belongs to the function it is written in (the innermost one)
        base, name, store = use
        base_name = base.id if isinstance(base, ast.Name) else None
        if base_name in ("self", "cls"):
            if store:
                owned.add(name)
            continue
        if store:
            if scope is not None and id(scope) not in made:
                made[id(scope)] = _locally_made(scope)
            if scope is not None and base_name in made[id(scope)]:
                owned.add(name)
            else:
                offences.append((node.lineno, ast.unparse(node)))
            continue
        offences.append((node.lineno, name, ast.unparse(base) if not isinstance(node, ast.Call)
                         else f"getattr({ast.unparse(base)}, {name!r})"))
    found = []
    for offence in offences:
        if len(offence) == 2:
            found.append(f"{offence[0]}: {offence[1]}")
        else:
            line, name, text = offence
            if name in owned or name in FOREIGN_API:
                continue
            found.append(f"{line}: {text if text.startswith('getattr(') else text + '.' + name}")
    return sorted(found, key=lambda hit: (int(hit.split(":")[0]), hit))


def test_the_check_finds_private_attributes_of_other_modules_objects():
    source = ("import copy\n"
              "class Stage:\n"
              "    _table = None\n"
              "    __slots__ = ('_slot',)\n"
              "    def __init__(self, bridge):\n"
              "        self._rows = bridge._linear\n"               # 6: another module's object
              "        bridge._lambda = 0.0\n"                       # 7: written on an argument
              "        setattr(bridge, '_xdd', None)\n"              # 8: the same through setattr
              "    def copy_for(self, other):\n"
              "        run = copy.copy(self)\n"
              "        run._state = other._rows\n"                   # own: made here; _rows is this module's
              "        return run._table, other._slot, other._helper()\n"
              "    def _helper(self):\n"
              "        return getattr(self.bridge, '_samples', None), point._replace(x=1)\n"   # 14
              "def f(bridge):\n"
              "    return bridge._read_state(), bridge.map._dof\n"   # 16
              "def tagged():\n"
              "    def caller(): pass\n"
              "    caller._signature = 'f8'\n"                         # own: a function it made
              "    return caller\n")
    assert foreign_private_attributes(source) == [
        "6: bridge._linear", "7: bridge._lambda", "8: setattr(bridge, '_xdd', None)",
        "14: getattr(self.bridge, '_samples')", "16: bridge._read_state", "16: bridge.map._dof"]


def test_no_module_uses_private_attributes_of_another_modules_objects():
    offences = []
    for path in sorted(PLUGIN.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        offences += [f"{relative}:{hit}" for hit in foreign_private_attributes(path.read_text(encoding="utf-8"))
                     if (relative, hit.split(": ", 1)[1]) not in AWAITING_OWNER_FIX]
    assert not offences, "private attributes of other modules' objects:\n" + "\n".join(offences)
