"""Lazy attributes of a package (PEP 562): a public name is imported from its module on first access, so that
importing the package stays light."""
from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def lazy_attributes(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """The module-level `__getattr__` of `package`: `modules` maps each lazy name to the module that defines it
    under the same name (absolute, or relative to `package`: ".frames")."""
    def __getattr__(name: str) -> Any:
        if name in modules:
            return getattr(importlib.import_module(modules[name], package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__
