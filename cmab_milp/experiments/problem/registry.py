"""What a problem file may name: the library's own kinds plus what trusted plugins register.

A problem file is data. Every name in it (a space, environment or policy kind
of the :mod:`~cmab_milp.catalogue`, a graph generator, a draw) is looked up in a
table; nothing a file says is ever imported. Code the user trusts comes in from outside the file: a module named
with ``cmab-milp ... --plugin MODULE`` (or imported by the user's own script)
calls :func:`register_kind` to make its classes nameable. As a shortcut, a
public class defined in a module loaded by :func:`load_plugins` may also be
written ``"MODULE:Class"``; any other ``"module:attr"`` is refused.

A name is a plain identifier: letters, digits and ``_``, not starting with ``_``
(so ``__class__``, ``_private``, ``os.path.join`` and ``lambda x: x`` are
refused with the key that holds them).

Example
-------
>>> class MyEnv: ...
>>> register_kind("environment", "MyEnv", MyEnv)
>>> registered("environment")["MyEnv"] is MyEnv
True
>>> check_name("__class__")
Traceback (most recent call last):
...
ValueError: '__class__' is not a plain name (letters, digits and _, not starting with _)
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from collections.abc import Sequence
from typing import Any

from ... import catalogue

__all__ = ["FAMILIES", "check_name", "load_plugins", "plugin_class", "plugins", "register_kind", "registered"]

#: Families of names a problem file may use, and what :func:`register_kind` takes for each (the catalogue's).
FAMILIES: dict[str, str] = {family: catalogue.FAMILIES[family] for family in ("space", "environment", "policy")}

_MODULE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*$")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
#: The kinds added by trusted code: the catalogue's own table (one registry), family -> name -> class.
_KINDS = catalogue._ADDED
_PLUGINS: list[str] = []

check_name = catalogue.check_name


def register_kind(family: str, name: str, obj: Any) -> None:
    """Make ``obj`` nameable as ``kind = "name"`` in the ``family`` tables of problem files.

    The same as :func:`cmab_milp.catalogue.register` (``family`` one of its
    families; ``obj`` a class of that family). Call it from a module given to
    ``--plugin`` (or from your own script before
    :func:`~cmab_milp.experiments.load_problem`).
    """
    catalogue.register(family, name, obj)


def registered(family: str) -> dict[str, Any]:
    """The kinds registered for ``family`` by trusted code (name -> class), a copy."""
    return catalogue.added(family)


def plugins() -> list[str]:
    """Modules loaded by :func:`load_plugins`, in order."""
    return list(_PLUGINS)


def load_plugins(modules: Sequence[str]) -> list[str]:
    """Import each trusted module (``--plugin``): its import may call :func:`register_kind`.

    Raises ``ValueError`` for a name that is not a dotted module path or a
    module that cannot be imported.
    """
    for module in modules:
        if not isinstance(module, str) or not _MODULE.match(module):
            raise ValueError(f"--plugin {module!r}: expected a module path such as mypackage.kinds")
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ValueError(f"--plugin {module}: cannot import it ({exc})") from None
        if module not in _PLUGINS:
            _PLUGINS.append(module)
    return plugins()


def plugin_class(spec: str) -> Any:
    """The public class ``Class`` of ``"MODULE:Class"`` when ``MODULE`` was loaded with :func:`load_plugins`.

    Nothing is imported here: a module not given with ``--plugin`` is refused.
    """
    module, _, attr = spec.partition(":")
    if not _MODULE.match(module) or not _NAME.match(attr):
        raise ValueError(f"{spec!r} is not a plain name (letters, digits and _, not starting with _) nor MODULE:Class")
    if module not in _PLUGINS:
        loaded = ", ".join(_PLUGINS) or "none"
        raise ValueError(
            f"{spec!r} names code in module {module!r}, which a problem file cannot import; "
            f"register the kind from a module given with --plugin (loaded plugins: {loaded})"
        )
    obj = vars(sys.modules[module]).get(attr)
    if not inspect.isclass(obj):
        raise ValueError(f"plugin module {module!r} defines no class {attr!r}")
    return obj
