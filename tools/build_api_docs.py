"""Build the API reference (HTML, pdoc) of biobullet's public modules from their docstrings: `make docs`.

    python tools/build_api_docs.py [--out out/api] [--no-show-source] [--no-search]

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
          "biobullet.opensim", "biobullet.pipeline", "biobullet.envs")   # (biobullet.muscles: a submodule pdoc reaches from biobullet)


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


def build(out: Path, *, show_source: bool = True, search: bool = True) -> list[str]:
    """Write the reference into `out`; returns pdoc's warnings (empty when complete). show_source / search: pdoc's
    highlighted source of each function and its search index (most of the build's time; no name depends on them)."""
    import pdoc
    import pdoc.render

    resolve_public_names()
    evaluate_named_tuple_annotations()
    pdoc.render.configure(show_source=show_source, search=search)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*PUBLIC, output_directory=out)
    return [str(w.message) for w in caught if "pdoc" in (w.filename or "") or issubclass(w.category, UserWarning)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/api", help="output folder (default out/api)")
    parser.add_argument("--no-show-source", dest="show_source", action="store_false",
                        help="leave out each function's source (as pdoc's own option)")
    parser.add_argument("--no-search", dest="search", action="store_false", help="leave out the search index")
    args = parser.parse_args(argv)
    problems = build(Path(args.out), show_source=args.show_source, search=args.search)
    for problem in problems:
        print(f"build_api_docs: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"API reference: {Path(args.out) / 'index.html'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
