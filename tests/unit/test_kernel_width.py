"""No numba kernel of the library is wider than MAX_PARAMETERS (issue 23): every `_NAME_py` function (a kernel
whose uncompiled form is the same function) takes structured arguments — named tuples of arrays such as
`constraints.solve.ConstraintRows` or `bridge.kernels.StepGains` — not dozens of positional parameters."""
from __future__ import annotations

import ast
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[2] / "plugin" / "biobullet"
#: the widest a kernel may be (issue 23: "no kernel wider than 12 parameters")
MAX_PARAMETERS = 12


def _parameter_count(function: ast.FunctionDef) -> int:
    a = function.args
    return (len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None)
            + (a.kwarg is not None))


def wide_kernels(source: str, limit: int = MAX_PARAMETERS) -> list[tuple[str, int]]:
    """(name, parameter count) of every `_NAME_py` function in `source` with more than `limit` parameters."""
    return [(node.name, _parameter_count(node)) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef) and node.name.startswith("_") and node.name.endswith("_py")
            and _parameter_count(node) > limit]


def test_the_width_check_sees_a_wide_kernel() -> None:
    thirteen = ", ".join(f"a{k}" for k in range(13))
    source = (f"def _wide_py({thirteen}):\n    return 0\n"
              "def _narrow_py(a, *rest, key=1, **more):\n    return 0\n"
              f"def helper({thirteen}):\n    return 0\n")
    assert wide_kernels(source) == [("_wide_py", 13)]
    assert wide_kernels(source, limit=3) == [("_wide_py", 13), ("_narrow_py", 4)]


def test_no_kernel_wider_than_twelve_parameters() -> None:
    files = sorted(LIBRARY.rglob("*.py"))
    assert len(files) > 50   # the library was found
    wide = [f"{path.relative_to(LIBRARY)}: {name} takes {count}" for path in files
            for name, count in wide_kernels(path.read_text(encoding="utf-8"))]
    assert not wide, "kernels wider than 12 parameters (pass named tuples):\n" + "\n".join(wide)
