"""The oracle backends by name: each a factory, found by a lazy ``"module:attr"`` path, that declares itself.

``make_oracle(space, "pulp:PULP_CBC_CMD")`` looks up ``"pulp"`` and passes
``"PULP_CBC_CMD"`` as its ``solver``. A backend is one module: its factory (the
adapter class) carries its own :class:`Capabilities` record as ``CAPABILITIES``
(what it answers: linear and norm queries, ``forbid_pairs``, time limits; its
tolerance, the spaces it accepts, the modules it needs, its options, an
estimated cost per query read by ``auto``) and a ``DESCRIPTION``, beside the
code that honours them. This registry keeps only names and lazy paths
(:data:`BUILT_IN`): the declaration is read on first use, so ``import
cmab_milp`` imports no backend (and no backend module imports its solver
before a model is built). :func:`make_oracle` is the one validator: it refuses
an unfit backend (unknown name or option, missing module, unfit space) with a
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import cached_property
from typing import Any

from ...spaces.base import ActionSpace
from .base import Oracle, check_gap, check_workers
from .capabilities import Capabilities, _resolve
from .option_checks import check_ties

__all__ = [
    "BACKENDS",
    "BUILT_IN",
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
COMMON_OPTIONS = ("workers", "ties")


def _declared(factory: Any, attribute: str) -> Any:
    """The factory's own ``attribute`` (``CAPABILITIES``, ``DESCRIPTION``), not one inherited from a class it extends.

    A subclass registered under a new name answers differently from its base, so it declares its own
    (or is given ``capabilities=`` at registration); otherwise it gets the default, a full exact backend.
    """
    own = getattr(factory, "__dict__", None)
    return own.get(attribute) if isinstance(own, Mapping) else None


class Backend:
    """A registered backend: its name, its factory and the :class:`Capabilities` it declares.

    ``target`` is the factory, ``factory(space, **options) -> Oracle``, given as itself or as a
    ``"module:attr"`` path imported on first use. ``capabilities`` and ``description`` are the ones
    given at registration, else those the factory declares (its own ``CAPABILITIES`` and
    ``DESCRIPTION``), read on first use; ``requires`` and ``takes_solver`` given at registration are
    merged into them.

    >>> entry = BACKENDS["ortools"]
    >>> entry.capabilities.norm, entry.requires, entry.description.split(" ")[0]
    (False, ('ortools',), 'linear')
    """

    def __init__(
        self,
        name: str,
        target: str | Callable[..., Oracle],
        description: str = "",
        capabilities: Capabilities | None = None,
        requires: Sequence[str] = (),
        takes_solver: bool = False,
    ):
        self.name, self.target = name, target
        self._description, self._given = description, capabilities
        self._requires, self._takes_solver = tuple(requires), bool(takes_solver)

    def __repr__(self) -> str:
        return f"Backend({self.name!r}, {self.target!r})"

    @cached_property
    def capabilities(self) -> Capabilities:
        """What it answers and accepts (read once; a module the factory cannot import is a missing requirement)."""
        caps = self._given
        if caps is None:
            try:
                caps = _declared(self.factory(), "CAPABILITIES")
            except ModuleNotFoundError as exc:  # its module imports a package not installed here
                module = self.target_module()
                if exc.name is None or module == exc.name or module.startswith(exc.name + "."):
                    raise ValueError(f"backend {self.name!r}: no module {exc.name!r} for {self.target!r}") from exc
                caps = Capabilities(requires=(exc.name,))
            caps = Capabilities() if caps is None else caps
        if not isinstance(caps, Capabilities):
            raise ValueError(f"backend {self.name!r}: capabilities must be a Capabilities record, got {caps!r}")
        merged = tuple(dict.fromkeys([*caps.requires, *self._requires]))
        return replace(caps, requires=merged, takes_solver=caps.takes_solver or self._takes_solver)

    @property
    def description(self) -> str:
        if self._description:
            return self._description
        try:
            return str(_declared(self.factory(), "DESCRIPTION") or "")
        except ImportError:
            return ""

    @property
    def requires(self) -> tuple[str, ...]:
        return self.capabilities.requires

    @property
    def takes_solver(self) -> bool:
        return self.capabilities.takes_solver

    def available(self) -> bool:
        return not self.capabilities.missing_modules()

    def target_module(self) -> str:
        """The module its factory comes from."""
        target = self.target
        return target.partition(":")[0] if isinstance(target, str) else getattr(target, "__module__", "") or ""

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

    ``target`` is the factory or its ``"module:attr"`` path (imported on first use).
    ``capabilities`` declares what it answers (default: what the factory declares as its own
    ``CAPABILITIES``, else a full exact backend, linear and norm queries on every space);
    ``requires`` and ``takes_solver`` are merged into it.

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
    if capabilities is not None and not isinstance(capabilities, Capabilities):
        raise ValueError(f"capabilities must be a Capabilities record, got {type(capabilities).__name__}")
    BACKENDS[name] = Backend(name, target, description, capabilities, requires, takes_solver)


#: The built-in backends, in the order ``auto`` and the kits list them: name -> its factory's lazy path.
#: Each factory declares its capabilities beside its code (``CAPABILITIES``); the core imports no backend.
BUILT_IN: dict[str, str] = {
    "highs": "cmab_milp.oracles.backends.highs:HighsOracle",
    "pulp": "cmab_milp.oracles.backends.pulp:PulpOracle",
    "combinatorial": "cmab_milp.oracles.backends.combinatorial:CombinatorialOracle",
    "enumerate": "cmab_milp.oracles.backends.enumerate:EnumerateOracle",
    "auto": "cmab_milp.oracles.core.auto:AutoOracle",
    "scip": "cmab_milp.oracles.backends.scip:ScipOracle",
    "gurobi": "cmab_milp.oracles.backends.gurobi:GurobiOracle",
    "ortools": "cmab_milp.oracles.backends.ortools:OrtoolsOracle",
    # the general-reward index (cmab_milp.nonlinear), one factory per way of answering it
    "dist_auto": "cmab_milp.nonlinear.backends:dist_auto",
    "dist_enumerate": "cmab_milp.nonlinear.backends:dist_enumerate",
    "dist_branch_bound": "cmab_milp.nonlinear.backends:dist_branch_bound",
    "dist_milp": "cmab_milp.nonlinear.backends:dist_milp",
    "dist_greedy": "cmab_milp.nonlinear.backends:dist_greedy",
}
for _name, _path in BUILT_IN.items():
    register_backend(_name, _path)


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
        ``argmax_batch``; ``ties=`` (every backend) which exact ties the one tie rule settles
        (:mod:`~cmab_milp.oracles.core.ties`: ``"off"``, ``"classes"``, ``"exact"``).

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
    ties = check_ties(options.pop("ties", None))
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
    if ties is not None:
        oracle.ties = ties
    return oracle
