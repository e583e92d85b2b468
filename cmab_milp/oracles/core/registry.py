"""One table of oracle backends, resolved by name, each with the capabilities it declares.

``make_oracle(space, "pulp:PULP_CBC_CMD")`` looks up ``"pulp"`` and passes
``"PULP_CBC_CMD"`` as its ``solver``. A backend declares, in a
:class:`Capabilities` record, what it answers (linear and norm queries,
``forbid_pairs``, time limits), its tolerance, the spaces it accepts, the
modules it needs, its options and an estimated cost per query (read by
``auto``). :func:`make_oracle` is the one validator: it refuses an unfit
backend (unknown name or option, missing module, unfit space) with a
``ValueError`` before any work. Users add backends with
:func:`register_backend` and check them with :func:`cmab_milp.testing.check_oracle`.

Example
-------
>>> import cmab_milp as cm
>>> "highs" in cm.available_backends()
True
>>> cm.make_oracle(cm.Cardinality(3, 1), "enumerate").name
'enumerate'
>>> capabilities("combinatorial").norm
False
>>> check_backend_name("pulp:HiGHS")
('pulp', 'HiGHS')
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...spaces.base import ActionSpace
from .base import Oracle, check_gap, check_workers
from .capabilities import Capabilities, _resolve

__all__ = [
    "BACKENDS",
    "COMMON_OPTIONS",
    "Backend",
    "Capabilities",
    "available_backends",
    "capabilities",
    "check_backend_name",
    "make_oracle",
    "register_backend",
]


#: Options every backend takes, applied by :func:`make_oracle` to the oracle its factory built.
COMMON_OPTIONS = ("workers",)


@dataclass(frozen=True)
class Backend:
    """A named way to build an oracle: ``target`` is ``"module:Class"`` or a callable."""

    name: str
    target: str | Callable[..., Oracle]
    description: str = ""
    capabilities: Capabilities = field(default_factory=Capabilities)

    @property
    def requires(self) -> tuple[str, ...]:
        return self.capabilities.requires

    @property
    def takes_solver(self) -> bool:
        return self.capabilities.takes_solver

    def available(self) -> bool:
        return not self.capabilities.missing_modules()

    def factory(self) -> Callable[..., Oracle]:
        return _resolve(self.target)

    def solvers(self) -> list[str]:
        """Solver names usable with ``"name:SOLVER"`` here (empty if it takes none)."""
        lister = _resolve(self.capabilities.solvers)
        return list(lister()) if self.takes_solver and lister is not None else []

    def options(self) -> tuple[str, ...] | None:
        """Option names it takes (the factory's and :data:`COMMON_OPTIONS`); ``None`` when it takes any."""
        if self.capabilities.options is not None:
            return (*self.capabilities.options, *COMMON_OPTIONS)
        try:
            params = list(inspect.signature(self.factory()).parameters.values())[1:]  # after the space
        except (TypeError, ValueError):  # a builtin or C callable: nothing to read
            return None
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            return None
        own = tuple(p.name for p in params if p.kind is not inspect.Parameter.VAR_POSITIONAL)
        return (*own, *(o for o in COMMON_OPTIONS if o not in own))


BACKENDS: dict[str, Backend] = {}


def register_backend(
    name: str,
    target: str | Callable[..., Oracle],
    requires: Sequence[str] = (),
    description: str = "",
    takes_solver: bool = False,
    capabilities: Capabilities | None = None,
) -> None:
    """Add (or replace) a backend; ``target(space, **options)`` must return an :class:`Oracle`.

    ``capabilities`` declares what it answers (default: a full exact backend,
    linear and norm queries on every space); ``requires`` and ``takes_solver``
    are merged into it.

    >>> from cmab_milp.oracles.backends.enumerate import EnumerateOracle
    >>> register_backend("my_enum", EnumerateOracle, capabilities=Capabilities(forbid_pairs=True))
    >>> capabilities("my_enum").requires
    ()
    >>> del BACKENDS["my_enum"]
    """
    if not isinstance(name, str) or not name or ":" in name:
        raise ValueError(f"backend name must be a non-empty string without ':', got {name!r}")
    if not (callable(target) or (isinstance(target, str) and ":" in target)):
        raise ValueError(f"backend target must be a callable or 'module:attr', got {target!r}")
    caps = Capabilities() if capabilities is None else capabilities
    if not isinstance(caps, Capabilities):
        raise ValueError(f"capabilities must be a Capabilities record, got {type(caps).__name__}")
    merged = tuple(dict.fromkeys([*caps.requires, *requires]))
    caps = replace(caps, requires=merged, takes_solver=caps.takes_solver or bool(takes_solver))
    BACKENDS[name] = Backend(name, target, description, caps)


# ------------------------------------------------- built-in declarations
_PKG = "cmab_milp.oracles.backends"
_COSTS = "cmab_milp.oracles.core.auto_costs"
_SCIP_TIME = ("time_limit", -math.inf, 1e20, "SCIP's limits/time")  # (<= 0: refused by every backend's own check)
#: The built-in backends: name, ``module:Class`` under ``cmab_milp.oracles.backends`` (``auto`` under
#: ``core``), description, capabilities. Named by strings: the core imports no backend.
_BUILT_IN: list[tuple[str, str, str, Capabilities]] = [
    (
        "highs",
        "highs:HighsOracle",
        "MILP compiled once on HiGHS",
        Capabilities(
            time_limit=True,
            approximate=True,
            requires=("highspy",),
            cost=f"{_COSTS}:highs_cost",
            tuning="cmab_milp.oracles.mip.tuning:HighsTuning",
        ),
    ),
    (
        "pulp",
        "pulp:PulpOracle",
        "model rebuilt per query via PuLP",
        # gap= only with the solvers whose bound is read (backends.pulp.BOUND_SOLVERS)
        Capabilities(
            norm=False,
            time_limit=True,
            approximate=True,
            approximate_solvers=("HiGHS", "SCIP_PY"),
            requires=("pulp",),
            takes_solver=True,
            solvers=f"{_PKG}.pulp:available_pulp_solvers",
            solver_label="PuLP",
        ),
    ),
    (
        "combinatorial",
        "combinatorial:CombinatorialOracle",
        "specialised exact algorithms",
        # CombinatorialOracle answers forbid_pairs on ExplicitActions only (a scan): declared
        # as not answered, which is what holds for every structured family
        Capabilities(
            norm=False,
            forbid_pairs=False,
            accepts=f"{_PKG}.combinatorial:accepts_space",
            spaces="Cardinality, PartitionMatroid, GraphicMatroid, SpanningTrees, STPaths, Matchings and"
            " ExplicitActions (no side constraints, conflicts or intersections); include and exclude"
            " restrictions (forbid_pairs only on ExplicitActions); on cyclic s-t paths only exclude and"
            " weights <= 0 (longest simple path is NP-hard)",
            may_decline=f"{_PKG}.combinatorial:declines_space",
            cost=f"{_COSTS}:combinatorial_cost",
        ),
    ),
    (
        "enumerate",
        "enumerate:EnumerateOracle",
        "vectorised brute force",
        Capabilities(spaces="spaces small enough to enumerate", cost=f"{_COSTS}:enumerate_cost"),
    ),
    (
        "auto",
        "cmab_milp.oracles.core.auto:AutoOracle",
        "fastest exact method per query",
        Capabilities(
            time_limit=True,
            spaces="every space (it picks among the backends that accept it)",
            ranges=(_SCIP_TIME,),  # it may hand its time limit to the scip backend
        ),
    ),
    (
        "scip",
        "scip:ScipOracle",
        "MILP / MIQCP via SCIP (pyscipopt)",
        # the quadratic row is met to SCIP's feasibility tolerance: see backends.scip.NORM_SLACK; cost: auto.scip_cost
        Capabilities(
            time_limit=True,
            approximate=True,
            norm_tolerance=1e-6,
            requires=("pyscipopt",),
            cost=f"{_COSTS}:scip_cost",
            ranges=(_SCIP_TIME,),
        ),
    ),
    (
        "gurobi",
        "gurobi:GurobiOracle",
        "MILP / nonconvex MIQCP via Gurobi (gurobipy; pip licence: 2000 variables and rows)",
        # the quadratic row is met to Gurobi's FeasibilityTol: see backends.gurobi.NORM_SLACK; no cost: for comparison
        Capabilities(
            time_limit=True,
            approximate=True,
            norm_tolerance=1e-6,
            requires=("gurobipy",),
            spaces="every space within the licence's size (pip licence: 2000 variables and rows, 199 arms for norms)",
        ),
    ),
    (
        "ortools",
        "ortools:OrtoolsOracle",
        "linear queries via OR-Tools CP-SAT (weights scaled to integers, error bound checked)",
        # norm=False: CP-SAT's integers cannot prove sqrt(a M a) within 1e-9 (see backends.ortools); cost:
        # auto.ortools_cost (directed longest paths); no gap: its bound is the rounding error of an integer optimum
        Capabilities(
            norm=False,
            time_limit=True,
            requires=("ortools",),
            cost=f"{_COSTS}:ortools_cost",
            spaces="formulations with integer auxiliary columns of finite bounds (every built-in family)",
        ),
    ),
]
for _name, _target, _description, _caps in _BUILT_IN:
    _full = _target if _target.startswith("cmab_milp.") else f"{_PKG}.{_target}"
    register_backend(_name, _full, description=_description, capabilities=_caps)


# ------------------------------------------------------------ look-ups
def available_backends() -> list[str]:
    """Names of registered backends whose required modules are installed.

    >>> {"highs", "enumerate", "combinatorial", "auto"} <= set(available_backends())
    True
    """
    return [name for name, b in BACKENDS.items() if b.available()]


def capabilities(name: str) -> Capabilities:
    """The :class:`Capabilities` declared by backend ``name`` (a ``":SOLVER"`` suffix is ignored)."""
    backend, _ = check_backend_name(name, installed=False)
    return BACKENDS[backend].capabilities


def check_backend_name(spec: Any, *, installed: bool = True) -> tuple[str, str | None]:
    """Validate a backend spec ``"name"`` or ``"name:SOLVER"``; return ``(name, solver or None)``.

    Refuses (``ValueError``) an unknown name, a solver suffix on a backend that
    takes none, and, with ``installed`` (default), a backend whose modules are
    missing or a solver that is not available here. This is the one check every
    entry point (``make_oracle``, problem files, ``compare-oracles``) calls.

    >>> check_backend_name("highs")
    ('highs', None)
    >>> try:
    ...     check_backend_name("cplex")
    ... except ValueError as exc:
    ...     print(str(exc).split(";")[0])
    unknown oracle backend 'cplex'
    """
    if not isinstance(spec, str):
        raise ValueError(f"an oracle backend is a name such as 'highs', got {type(spec).__name__} {spec!r}")
    name, colon, solver = spec.partition(":")
    entry = BACKENDS.get(name)
    if entry is None:
        raise ValueError(f"unknown oracle backend {spec!r}; known: {', '.join(sorted(BACKENDS))}")
    if colon and not solver:
        raise ValueError(f"oracle backend {spec!r} has an empty ':SOLVER' suffix")
    if solver and not entry.takes_solver:
        raise ValueError(f"backend {name!r} takes no solver suffix (no ':SOLVER'; got {spec!r})")
    if installed:
        missing = entry.capabilities.missing_modules()
        if missing:
            raise ValueError(f"backend {name!r} needs the missing module(s) {missing}; install them first")
        if solver and entry.capabilities.solvers is not None:
            usable = entry.solvers()
            if solver not in usable:
                label = entry.capabilities.solver_label or name
                raise ValueError(
                    f"unknown or unavailable {label} solver {solver!r}: "
                    f"{label} solver {solver!r} is not available here; available: {usable}"
                )
    return name, solver or None


def _check_approximate(name: str, solver: str | None, caps: Capabilities, gap: Any) -> None:
    """Refuse ``gap=`` out of ``[0, 1)`` or on a backend (or solver) without a dual bound."""
    check_gap(gap)
    fit = [n for n, b in BACKENDS.items() if b.capabilities.approximate]
    if not caps.approximate:
        raise ValueError(
            f"backend {name!r} has no certified approximate mode (gap=): it needs a solver with a dual bound"
            f" to prove a ratio; backends that take gap: {', '.join(fit)}"
        )
    allowed = caps.approximate_solvers
    if allowed is not None and solver not in allowed:
        raise ValueError(
            f"gap= on backend {name!r} needs a solver that reports a dual bound: one of"
            f" {', '.join(f'{name}:{s}' for s in allowed)} (got {name + ':' + solver if solver else name!r})"
        )


def make_oracle(space: ActionSpace, backend: str | Oracle = "highs", **options: Any) -> Oracle:
    """Build an oracle for ``space``, refusing an unfit backend before any work.

    Parameters
    ----------
    space : ActionSpace
    backend : str or Oracle
        A registered name (:func:`available_backends`), ``"name:SOLVER"`` for backends that take
        a solver (``"pulp:PULP_CBC_CMD"``), or an existing :class:`Oracle` (returned as is after
        checking it answers for this space).
    **options
        The backend's options (its :class:`Capabilities`): ``gap=``, ``norm_gap=``,
        ``time_limit=`` where declared; ``workers=n`` (every backend) sets the threads of
        ``argmax_batch``.

    Returns
    -------
    Oracle

    Raises
    ------
    ValueError
        An unknown name or option, a missing module, or a space the backend does not accept.

    Examples
    --------
    >>> import numpy as np
    >>> import cmab_milp as cm
    >>> make_oracle(cm.Cardinality(4, 2), "highs").argmax(np.array([0.1, 0.5, 0.2, 0.9])).nonzero()[0].tolist()
    [1, 3]
    >>> try:
    ...     make_oracle(cm.Cardinality(4, 2).with_constraint([1, 1, 1, 1], "<=", 1), "combinatorial")
    ... except ValueError as exc:
    ...     print(str(exc)[:60])
    backend 'combinatorial' does not accept ConstrainedSpace; it
    """
    if isinstance(backend, Oracle):
        if backend.space is not space and backend.space.d != space.d:
            raise ValueError("the given oracle was built for a space with another d")
        return backend
    if not isinstance(backend, str):
        raise ValueError(f"backend must be a name or an Oracle, got {type(backend).__name__}")
    name, solver = check_backend_name(backend)
    entry = BACKENDS[name]
    if not isinstance(space, ActionSpace):
        raise ValueError(f"space must be an ActionSpace, got {type(space).__name__}")
    caps = entry.capabilities
    if not caps.accepts_space(space):
        raise ValueError(f"backend {name!r} does not accept {type(space).__name__}; it answers {caps.spaces}")
    workers = check_workers(options.pop("workers", None))
    if options.get("gap") is not None:
        _check_approximate(name, solver, caps, options["gap"])
    refused = caps.out_of_range(options)
    if refused is not None:
        raise ValueError(f"backend {name!r} option {refused[0]}: {refused[1]}")
    if options.get("tuning") is not None and caps.tuning is not None:
        options["tuning"] = caps.check_tuning(options["tuning"])  # unknown names, bad values: refused here
    if solver:
        options = {"solver": solver, **options}
    known = entry.options()
    if known is not None:
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise ValueError(
                f"backend {name!r} takes no option(s) {unknown}; its options: {', '.join(known) or 'none'}"
            )
    oracle = entry.factory()(space, **options)
    if workers is not None:
        oracle.workers = workers
    return oracle
