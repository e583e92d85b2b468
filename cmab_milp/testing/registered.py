"""What the conformance checks run on: every registered backend, space kind and policy kind.

A conformance suite that writes its own list of backends misses the one registered tomorrow.
:func:`registered_kinds` reads the :mod:`~cmab_milp.catalogue` instead, the one list of kinds: the
oracle backends of :func:`~cmab_milp.register_backend` (one entry per usable solver of a backend that
takes ``"name:SOLVER"``), the space kinds and the policy kinds (the library's own and those registered by
trusted code, :func:`cmab_milp.catalogue.register`, plugins included). An entry that cannot run here (an
optional solver not installed) stays in the list with the reason, so a test skips it saying why
instead of silently checking less.

>>> from cmab_milp.testing import registered_kinds
>>> backends = {kind.name: kind for kind in registered_kinds("backend")}
>>> backends["highs"].available, backends["highs"].obj
(True, 'highs')
>>> sorted(kind.name for kind in registered_kinds("space"))[:2]
['Cardinality', 'ExplicitActions']
>>> [kind.obj.__name__ for kind in registered_kinds("policy") if kind.name == "CUCB"]
['CUCB']
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import dataclass
from typing import Any

from .. import catalogue
from ..oracles.core.registry import Backend

__all__ = ["FAMILIES", "Registered", "registered_kinds"]

#: The families :func:`registered_kinds` lists.
FAMILIES = ("backend", "space", "policy")


@dataclass(frozen=True)
class Registered:
    """One registered backend, space kind or policy kind, and why it cannot run here (if it cannot).

    ``obj`` is what a check takes: the backend spec for :func:`~cmab_milp.testing.check_oracle`
    (``"pulp:HiGHS"``), the class for spaces and policies; ``None`` when ``unavailable`` says why not.
    """

    family: str
    name: str
    obj: Any = None
    unavailable: str | None = None

    @property
    def available(self) -> bool:
        return self.unavailable is None


def _extras() -> dict[str, str]:
    """Distribution name (normalised) -> the extra of this package that installs it."""
    try:
        requirements = importlib.metadata.requires("cmab_milp") or []
    except importlib.metadata.PackageNotFoundError:  # run from a source tree without installing
        return {}
    out = {}
    for requirement in requirements:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement)
        extra = re.search(r"extra\s*==\s*[\"']([^\"']+)[\"']", requirement)
        if name and extra:
            out.setdefault(re.sub(r"[-_.]+", "_", name.group(0).lower()), extra.group(1))
    return out


def _missing(what: str, modules: list[str]) -> str:
    extras = _extras()
    wanted = sorted({extras[m] for m in (re.sub(r"[-_.]+", "_", m.lower()) for m in modules) if m in extras})
    hint = f" (pip install 'cmab_milp[{','.join(wanted)}]')" if wanted else ""
    return f"{what} needs {', '.join(modules)}, not installed{hint}"


def _backends() -> list[Registered]:
    out = []
    for name in catalogue.names("backend"):
        entry = catalogue.lookup("backend", name)
        missing = entry.capabilities.missing_modules()
        if missing:
            out.append(Registered("backend", name, None, _missing(f"backend {name!r}", missing)))
        elif entry.takes_solver:
            out += _solver_specs(name, entry)
        else:
            out.append(Registered("backend", name, name))
    return out


def _solver_specs(name: str, entry: Backend) -> list[Registered]:
    solvers = entry.solvers()
    if not solvers:
        label = entry.capabilities.solver_label or name
        return [Registered("backend", name, None, f"backend {name!r}: no {label} solver available here")]
    return [Registered("backend", f"{name}:{solver}", f"{name}:{solver}") for solver in solvers]


def _classes(family: str) -> list[Registered]:
    from ..spaces.rules import RuleSpace

    out = []
    for name in sorted(catalogue.names(family)):
        try:
            cls = catalogue.lookup(family, name)
        except ImportError as exc:  # a library kind whose optional dependency is missing here
            out.append(Registered(family, name, None, f"{family} {name!r} cannot be imported here: {exc}"))
            continue
        if not (family == "space" and issubclass(cls, RuleSpace)):  # side rules: checked on the spaces they wrap
            out.append(Registered(family, name, cls))
    return out


def registered_kinds(family: str) -> list[Registered]:
    """Every registered entry of ``family`` (``"backend"``, ``"space"`` or ``"policy"``), usable or not.

    Backends keep the registry's order, one entry per usable solver for those that take one
    (``"pulp:HiGHS"``); space and policy kinds (the library's own and those added with
    :func:`~cmab_milp.experiments.register_kind`) are sorted by name; the side-rule spaces
    (``ConstrainedSpace``, ``ConflictSpace``) are left out, checked on the spaces they wrap. An entry that cannot run
    here carries the reason in ``unavailable`` (and ``obj`` is ``None``).
    """
    if family == "backend":
        return _backends()
    if family in ("space", "policy"):
        return _classes(family)
    raise ValueError(f"unknown family {family!r}; families: {', '.join(FAMILIES)}")
