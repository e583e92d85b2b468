"""What the conformance checks run on: every registered backend, space kind and policy kind.

A conformance suite that writes its own list of backends misses the one registered tomorrow.
:func:`registered_kinds` reads the registries instead: the oracle backends of
:func:`~cmab_milp.register_backend` (one entry per usable solver of a backend that takes
``"name:SOLVER"``), the space kinds and the policy kinds a problem file may name
(:mod:`cmab_milp.experiments.problem.registry`, plugins included). An entry that cannot run here (an
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

import importlib
import importlib.metadata
import re
from dataclasses import dataclass
from typing import Any

from ..oracles.core.registry import BACKENDS, Backend

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
    for name, entry in BACKENDS.items():
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


def _classes(family: str, known: dict[str, str]) -> list[Registered]:
    from ..experiments.problem.registry import registered

    out = {}
    for name, module in sorted(known.items()):
        try:
            out[name] = Registered(family, name, getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError) as exc:
            out[name] = Registered(family, name, None, f"{family} {name!r} cannot be imported here: {exc}")
    for name, cls in registered(family).items():  # kinds registered by plugins or the user's script
        out[name] = Registered(family, name, cls)
    return [out[name] for name in sorted(out)]


def registered_kinds(family: str) -> list[Registered]:
    """Every registered entry of ``family`` (``"backend"``, ``"space"`` or ``"policy"``), usable or not.

    Backends keep the registry's order, one entry per usable solver for those that take one
    (``"pulp:HiGHS"``); space and policy kinds (the library's own and those added with
    :func:`~cmab_milp.experiments.register_kind`) are sorted by name. An entry that cannot run
    here carries the reason in ``unavailable`` (and ``obj`` is ``None``).
    """
    if family == "backend":
        return _backends()
    if family == "space":
        import cmab_milp

        from ..experiments.problem.kinds import space_kinds

        return _classes("space", dict.fromkeys(space_kinds(), cmab_milp.__name__))
    if family == "policy":
        from ..experiments.problem.kinds import policy_kinds

        return _classes("policy", policy_kinds())
    raise ValueError(f"unknown family {family!r}; families: {', '.join(FAMILIES)}")
