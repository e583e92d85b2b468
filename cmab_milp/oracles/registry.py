"""One table of oracle backends, resolved by name.

``make_oracle(space, "pulp:PULP_CBC_CMD")`` looks up ``"pulp"`` and passes
``"PULP_CBC_CMD"`` as its ``solver``. A backend declares the modules it needs,
so :func:`available_backends` can report what is usable without importing
solvers. Users add backends with :func:`register_backend`.

Example
-------
>>> import cmab_milp as cm
>>> "highs" in cm.available_backends()
True
>>> cm.make_oracle(cm.Cardinality(3, 1), "enumerate").name
'enumerate'
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..spaces.base import ActionSpace
from .base import Oracle

__all__ = ["BACKENDS", "Backend", "available_backends", "make_oracle", "register_backend"]


@dataclass(frozen=True)
class Backend:
    """A named way to build an oracle: ``target`` is ``"module:Class"`` or a callable."""

    name: str
    target: str | Callable[..., Oracle]
    requires: tuple[str, ...] = ()
    description: str = ""
    takes_solver: bool = False

    def available(self) -> bool:
        return all(importlib.util.find_spec(mod) is not None for mod in self.requires)

    def factory(self) -> Callable[..., Oracle]:
        if callable(self.target):
            return self.target
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)


BACKENDS: dict[str, Backend] = {}


def register_backend(
    name: str,
    target: str | Callable[..., Oracle],
    requires: tuple[str, ...] = (),
    description: str = "",
    takes_solver: bool = False,
) -> None:
    """Add (or replace) a backend; ``target(space, **options)`` must return an :class:`Oracle`."""
    if not name or ":" in name:
        raise ValueError(f"backend name must be non-empty and without ':', got {name!r}")
    BACKENDS[name] = Backend(name, target, tuple(requires), description, takes_solver)


_PKG = "cmab_milp.oracles"
register_backend("highs", f"{_PKG}.highs:HighsOracle", ("highspy",), "MILP compiled once on HiGHS")
register_backend("pulp", f"{_PKG}.pulp_backend:PulpOracle", ("pulp",), "model rebuilt per query via PuLP", True)
register_backend("combinatorial", f"{_PKG}.combinatorial:CombinatorialOracle", (), "specialised exact algorithms")
register_backend("enumerate", f"{_PKG}.enumerate:EnumerateOracle", (), "vectorised brute force")
register_backend("auto", f"{_PKG}.auto:AutoOracle", ("highspy",), "fastest exact method per query")
register_backend("scip", f"{_PKG}.scip:ScipOracle", ("pyscipopt",), "MILP / MIQCP via SCIP (pyscipopt)")


def available_backends() -> list[str]:
    """Names of registered backends whose required modules are installed."""
    return [name for name, b in BACKENDS.items() if b.available()]


def make_oracle(space: ActionSpace, backend: str | Oracle = "highs", **options: Any) -> Oracle:
    """Build an oracle for ``space``.

    ``backend`` is a registered name, ``"name:SOLVER"`` for backends that take a
    solver (``"pulp:PULP_CBC_CMD"``), or an existing :class:`Oracle` (returned
    as is after checking it answers for this space).
    """
    if isinstance(backend, Oracle):
        if backend.space is not space and backend.space.d != space.d:
            raise ValueError("the given oracle was built for a space with another d")
        return backend
    if not isinstance(backend, str):
        raise ValueError(f"backend must be a name or an Oracle, got {type(backend).__name__}")
    name, _, solver = backend.partition(":")
    entry = BACKENDS.get(name)
    if entry is None:
        raise ValueError(f"unknown oracle backend {backend!r}; known: {sorted(BACKENDS)}")
    if solver:
        if not entry.takes_solver:
            raise ValueError(f"backend {name!r} takes no solver suffix (got {backend!r})")
        options = {"solver": solver, **options}
    if not entry.available():
        missing = [m for m in entry.requires if importlib.util.find_spec(m) is None]
        raise ValueError(f"backend {name!r} needs the missing module(s) {missing}; install them first")
    if not isinstance(space, ActionSpace):
        raise ValueError(f"space must be an ActionSpace, got {type(space).__name__}")
    return entry.factory()(space, **options)
