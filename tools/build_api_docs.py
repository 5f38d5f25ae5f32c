"""Build the API reference (HTML, pdoc) of biobullet's public modules from their docstrings: `make docs`.

    python tools/build_api_docs.py [--out out/api]

The public modules (PUBLIC) export names lazily through a module `__getattr__` (so `import biobullet` stays
light); pdoc reads a module's `__dict__`, so every name of each `__all__` is resolved first. Exit code 1, with the
reason, when a public name does not resolve or pdoc warns: the reference never builds silently incomplete.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
import warnings
from pathlib import Path

PUBLIC = ("biobullet", "biobullet.loader", "biobullet.model", "biobullet.integrate", "biobullet.bridge",
          "biobullet.forces", "biobullet.contact", "biobullet.constraints", "biobullet.dynamics", "biobullet.functions",
          "biobullet.flexible", "biobullet.conventions", "biobullet.validate", "biobullet.core.errors",
          "biobullet.opensim", "biobullet.pipeline")   # (biobullet.muscles: a submodule pdoc reaches from biobullet)


def resolve_public_names() -> None:
    """Import every public module and put each lazily exported `__all__` name into its `__dict__`."""
    for name in PUBLIC:
        module = importlib.import_module(name)
        for attribute in getattr(module, "__all__", ()):
            if attribute not in module.__dict__:
                setattr(module, attribute, getattr(module, attribute))


def evaluate_named_tuple_annotations() -> None:
    """Every NamedTuple of the public packages gets its constructor's annotations evaluated in its own module:
    with postponed annotations (`from __future__ import annotations`) pdoc evaluates the strings of a NamedTuple's
    generated `__new__` in that function's namespace, where the module's imports (np) are missing."""
    import pkgutil
    import typing

    for name in PUBLIC:
        package = importlib.import_module(name)
        modules = [package] + [importlib.import_module(info.name) for info in
                               pkgutil.walk_packages(getattr(package, "__path__", []), name + ".")]
        for module in modules:
            for value in list(vars(module).values()):
                if isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields") \
                        and value.__module__ == module.__name__:
                    with contextlib.suppress(Exception):   # (an annotation that cannot be evaluated stays a string)
                        value.__new__.__annotations__ = typing.get_type_hints(value)


def build(out: Path) -> list[str]:
    """Write the reference into `out`; returns pdoc's warnings (empty when complete)."""
    import pdoc

    resolve_public_names()
    evaluate_named_tuple_annotations()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*PUBLIC, output_directory=out)
    return [str(w.message) for w in caught if "pdoc" in (w.filename or "") or issubclass(w.category, UserWarning)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/api", help="output folder (default out/api)")
    args = parser.parse_args(argv)
    problems = build(Path(args.out))
    for problem in problems:
        print(f"build_api_docs: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"API reference: {Path(args.out) / 'index.html'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
