"""Names a package imports on first use (PEP 562), so importing the package stays cheap.

>>> import types
>>> pkg = types.ModuleType("demo")
>>> pkg.__getattr__, pkg.__dir__ = lazy_names(vars(pkg), "demo", {"sqrt": "math"})
>>> pkg.sqrt(4.0), "sqrt" in dir(pkg)
(2.0, True)
>>> pkg.cbrt
Traceback (most recent call last):
...
AttributeError: module 'demo' has no attribute 'cbrt'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    namespace: dict[str, Any], package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` serving ``names`` (name -> module, ``.x`` relative to it).

    A name is imported from its module on first access and then stored in
    ``namespace`` (the package's globals), so later lookups are plain attribute reads.
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__
