"""One ``[[policies]]`` entry of a problem file: its label, kind, oracle backend, oracle options and constants.

:func:`parse_policies` reads the entries (every error at once); a
:class:`PolicySpec` is plain data and builds its oracle on demand
(:meth:`PolicySpec.oracle_for`). Oracle options are keys of the entry:

``gap = 0.01``
    the certified approximate mode: the backend returns the best action found
    with a proven ratio to the optimum (``make_oracle(space, backend,
    gap=...)``; a number in ``[0, 1)``); the run then reports the
    alpha-regret beside the regret, with alpha the ratio the oracle proved.
``norm_gap = 0.01``
    the same mode for norm queries (``highs``: the covariance policies' index), see
    :class:`~cmab_milp.oracles.backends.highs.HighsOracle`; with ``time_limit`` a norm query past
    its limit returns its best action with the ratio its bound proves.
``time_limit = 5``
    seconds per solve (``make_oracle(space, backend, time_limit=...)``; a norm query's
    limit covers the whole query).
``workers = 2``
    threads of the oracle's batches (``make_oracle(space, backend, workers=...)``, every backend;
    default ``min(4, cores)``); answers do not depend on it.
``ties = "classes"``
    the one tie rule (``make_oracle(space, backend, ties=...)``, every backend; default ``"off"``,
    each backend's own choice among ties):
    with ``"classes"`` or ``"exact"`` every exact backend returns the same action among exact ties, so
    a solver swap changes the time, not the curve (:mod:`~cmab_milp.oracles.core.ties`).
``tuning = {side_starts = false}``
    the backend's tuning options (``highs``: :class:`~cmab_milp.oracles.mip.tuning.HighsTuning`;
    each is exact either way), checked by the backend's declared record.

A backend that takes no such option is refused at the key, before any work.

>>> from cmab_milp.experiments.problem.schema import Table
>>> entry = Table({"name": "A", "kind": "AROQ", "oracle": "enumerate"}, "policies[0]", "f.toml")
>>> specs = parse_policies([entry], "f.toml")
>>> specs[0].oracle, specs[0].oracle_options
('enumerate', {})
"""

from __future__ import annotations

import inspect
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from ... import catalogue
from ...oracles.core.registry import check_backend_name, make_oracle
from .kinds import _resolve_class
from .registry import check_name
from .schema import ProblemError, ProblemErrors, Table, plain
from .schema_data import POLICY, finish, read

__all__ = ["ORACLE_OPTIONS", "PolicySpec", "parse_policies"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")

#: Keys of a ``[[policies]]`` entry passed to ``make_oracle`` (approximate mode, per-solve limit, threads, tie rule).
ORACLE_OPTIONS = ("gap", "norm_gap", "time_limit", "workers", "ties")


@dataclass(frozen=True)
class PolicySpec:
    """One ``[[policies]]`` entry: label, class name, oracle backend, its options and constants."""

    name: str
    kind: str
    oracle: str = "highs"
    constants: dict[str, Any] = field(default_factory=dict)
    #: ``"unknown"``: the policy is built with ``T=None`` whatever ``[run] horizon`` says; None: the run's.
    horizon: str | None = None
    #: Options of ``make_oracle`` (``gap``, ``norm_gap``, ``time_limit``; see :data:`ORACLE_OPTIONS`).
    oracle_options: dict[str, Any] = field(default_factory=dict)
    #: ``on_request = true``: run only when named (``cmab-milp run --policies NAME``), e.g. a policy that
    #: needs hours where the others need minutes; a plain ``run`` leaves it out.
    on_request: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The entry as file data (``horizon`` and the oracle options only when set: older digests stay)."""
        data = asdict(self)
        if data["horizon"] is None:
            del data["horizon"]
        if not data["on_request"]:
            del data["on_request"]
        data.update(data.pop("oracle_options"))
        return data

    def oracle_for(self, space: Any) -> Any:
        """What the policy is built with: the backend name, or the oracle built with the options."""
        return make_oracle(space, self.oracle, **self.oracle_options) if self.oracle_options else self.oracle


def parse_policies(tables: list[Table], file: str, *, check_kinds: bool = True) -> list[PolicySpec]:
    """The validated entries (``ProblemErrors`` with every mistake).

    ``check_kinds=False`` leaves the policy kinds unresolved (reading a results folder builds nothing).
    """
    if not tables:
        raise ProblemError(file, "policies", "needs at least one [[policies]] entry")
    specs: list[PolicySpec] = []
    errors: list[ProblemError] = []
    seen: dict[str, int] = {}
    for k, table in enumerate(tables):
        try:
            specs.append(_parse_policy(table, k, seen, check_kinds))
        except ProblemErrors as exc:
            errors.extend(exc.errors)
        except ProblemError as exc:
            errors.append(exc)
    if errors:
        raise errors[0] if len(errors) == 1 else ProblemErrors(errors)
    return specs


def default_oracle(cls: type | None) -> str:
    """The oracle a policy kind gets when its entry names none: its class's own default, as in Python.

    ``CTS``, ``ESCB`` and ``AROQESCB`` default to ``"auto"``, the paper's nine to ``"highs"`` (contract
    sections 4 and 8); a class without a string default (or an unknown kind) gets ``"highs"``.

    >>> import cmab_milp as cm
    >>> default_oracle(cm.CTS), default_oracle(cm.CUCB)
    ('auto', 'highs')
    """
    try:
        default = inspect.signature(cls).parameters["oracle"].default if cls is not None else None
    except (KeyError, TypeError, ValueError):
        default = None
    return default if isinstance(default, str) else "highs"


def _parse_policy(table: Table, k: int, seen: dict[str, int], check_kinds: bool = True) -> PolicySpec:
    file = table.file
    errors: list[ProblemError] = []
    try:
        name = read(table, POLICY, "name")
        if not _NAME.match(name):
            raise table.error("name", f"{name!r}: use letters, digits and _ . + - (it names a results folder)")
        if name in seen:
            raise table.error("name", f"duplicate policy name {name!r} (also policies[{seen[name]}])")
        seen[name] = k
    except ProblemError as exc:  # the kind and the oracle are still checked
        errors.append(exc)
    cls = None
    try:
        kind = read(table, POLICY, "kind")
        # the class is looked up now, so that a wrong kind is reported with the file's other mistakes
        kind_table = Table({"kind": kind}, table.key, file)
        if check_kinds:
            cls = _resolve_class(kind_table, "kind", "policy")
        else:  # still the class's default oracle when it resolves (a plug-in's may not be loaded)
            try:
                cls = _resolve_class(kind_table, "kind", "policy")
            except ProblemError:
                cls = None
    except ProblemError as exc:
        errors.append(exc)
    try:
        oracle = read(table, POLICY, "oracle")
        oracle = default_oracle(cls) if oracle is None else oracle
        _, _, solver = oracle.partition(":")
        try:
            if solver:
                check_name(solver)  # a file's solver name is a plain name, looked up in PuLP's own list
            check_backend_name(oracle)  # the one backend validator (unknown, not installed, unfit suffix or solver)
        except ValueError as exc:
            raise table.error("oracle", str(exc)) from None
    except ProblemError as exc:
        errors.append(exc)
    if errors:
        raise errors[0] if len(errors) == 1 else ProblemErrors(errors)
    constants_table = read(table, POLICY, "constants")
    constants = {} if constants_table is None else plain(constants_table.data, table.path("constants"), file)
    settings = {"horizon": read(table, POLICY, "horizon"), "oracle_options": _oracle_options(table, oracle)}
    settings["on_request"] = read(table, POLICY, "on_request")
    finish(table, POLICY)
    return PolicySpec(name=name, kind=kind, oracle=oracle, constants=constants, **settings)


def _oracle_options(table: Table, oracle: str) -> dict[str, Any]:
    """``gap``, ``norm_gap`` (in [0, 1)), ``time_limit`` (> 0 seconds), ``workers`` (an integer >= 1) and
    ``ties`` (a tie rule mode), each refused if the backend takes none."""
    options: dict[str, Any] = {}
    backend = catalogue.lookup("backend", oracle.partition(":")[0])  # checked by check_backend_name already
    for key in ORACLE_OPTIONS:
        if key not in table:
            continue
        value = read(table, POLICY, key)  # workers: an integer >= 1; the others numbers
        if key in ("gap", "norm_gap") and not 0 <= value < 1:
            raise table.error(key, f"a relative optimality gap in [0, 1), got {value}")
        if key == "time_limit" and not value > 0:
            raise table.error(key, f"seconds per solve, > 0, got {value}")
        known = backend.options()
        if known is not None and key not in known:
            raise table.error(
                key, f"backend {oracle!r} takes no {key} option (its options: {', '.join(known) or 'none'})"
            )
        options[key] = value
    refused = backend.capabilities.out_of_range(options)
    if refused is not None:  # beyond what the backend's solver accepts (SCIP: time limits up to 1e20 s)
        raise table.error(refused[0], f"backend {oracle!r}: {refused[1]}")
    if "tuning" in table:
        data = read(table, POLICY, "tuning").data
        caps = backend.capabilities
        if caps.tuning is None:
            raise table.error("tuning", f"backend {oracle!r} takes no tuning option")
        try:
            caps.check_tuning(data)
        except ValueError as exc:
            raise table.error("tuning", str(exc)) from None
        options["tuning"] = dict(data)
    return options
