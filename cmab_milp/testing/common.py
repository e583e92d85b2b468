"""Shared pieces of the conformance kit: checks (one per case), running them, pytest items, messages, small spaces.

A kit exposes its cases as ``Check`` s (``oracle_checks``, ``space_checks``, ``policy_checks``): each
runs one case and returns ``"passed"`` or ``"skipped: why"``, or raises ``AssertionError`` naming the case.
:func:`run_checks` runs them all and reports every failure; :func:`parametrize_with_checks` makes one
pytest item of each (scikit-learn's convention), so one failing case does not hide the others.

>>> checks = [Check("one", lambda: "passed"), Check("two", lambda: "skipped: not declared")]
>>> run_checks("demo", checks)
{'one': 'passed', 'two': 'skipped: not declared'}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

import networkx as nx
import numpy as np

from ..spaces.base import ActionSpace, Intersection
from ..spaces.graphs import GraphicMatroid, Matchings, SpanningTrees, STPaths
from ..spaces.sets import Cardinality, ExplicitActions, PartitionMatroid

__all__ = ["Check", "check_params", "parametrize_with_checks", "run_checks", "small_spaces"]


def _dag() -> nx.DiGraph:
    return nx.DiGraph([(0, 1), (0, 2), (1, 2), (1, 3), (2, 3), (2, 4), (3, 4), (0, 3)])


def _grid(n: int, k: int) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, k))


def small_spaces() -> dict[str, ActionSpace]:
    """One small space per family (at most a few hundred actions): the default of :func:`check_oracle`."""
    return {
        "cardinality": Cardinality(6, 2),
        "cardinality-exact": Cardinality(5, 2, exact=True),
        "partition": PartitionMatroid([[0, 1, 2], [3, 4], [5, 6]], [2, 1, 1]),
        "graphic": GraphicMatroid(nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3), (3, 0)])),
        "spanning-trees": SpanningTrees(_grid(2, 3)),
        "paths-dag": STPaths(_dag(), 0, 4),
        "paths-cyclic": STPaths(_grid(3, 3), 0, 8),
        "matchings-bipartite": Matchings(nx.complete_bipartite_graph(2, 3)),
        "matchings-perfect": Matchings(nx.complete_graph(4), perfect=True),
        "explicit": ExplicitActions(np.random.default_rng(7).random((8, 6)) < 0.45),
        "with-constraint": Cardinality(6, 3).with_constraint([3, 1, 2, 2, 1, 3], "<=", 5),
        "intersection": Intersection(Cardinality(6, 3), PartitionMatroid([[0, 1, 2], [3, 4, 5]], [1, 2])),
    }


class Cases:
    """Collects case outcomes and formats failures."""

    def __init__(self, title: str, include: Iterable[str] | None, exclude: Iterable[str] | None, known: tuple):
        for name in [*(include or ()), *(exclude or ())]:
            if name not in known:
                raise ValueError(f"unknown case {name!r}; cases: {', '.join(known)}")
        self.title = title
        self.selected = [c for c in known if (include is None or c in include) and c not in (exclude or ())]
        self.report: dict[str, str] = {}
        self.skips: dict[str, list[str]] = {}

    def wanted(self, case: str) -> bool:
        return case in self.selected

    def skip(self, case: str, why: str) -> None:
        self.skips.setdefault(case, []).append(why)

    def passed(self, case: str) -> None:
        self.report.setdefault(case, "passed")

    def fail(self, case: str, where: str, detail: str) -> None:
        raise AssertionError(f"{self.title}: case {case!r} failed on {where}: {detail}")

    def finish(self) -> dict[str, str]:
        out = {}
        for case in self.selected:
            if case in self.report:
                out[case] = self.report[case]
            elif case in self.skips:
                out[case] = "skipped: " + "; ".join(dict.fromkeys(self.skips[case]))
            else:
                out[case] = "skipped: no applicable space"
        return out


def describe(query: Mapping[str, Any]) -> str:
    parts = []
    for key, value in query.items():
        if isinstance(value, np.ndarray):
            value = np.array2string(value, precision=17, separator=", ", max_line_width=10**6)
        parts.append(f"{key}={value}")
    return "{" + ", ".join(parts) + "}"


def action_str(action: np.ndarray | None) -> str:
    return "None" if action is None else f"arms {np.flatnonzero(action).tolist()}"


class Check(NamedTuple):
    """One case of a kit: ``run()`` returns ``"passed"`` or ``"skipped: why"``, or raises ``AssertionError``."""

    name: str
    run: Callable[[], str]


def run_checks(title: str, checks: Iterable[Check]) -> dict[str, str]:
    """Run every check; ``{case: "passed" | "skipped: why"}``, or one ``AssertionError`` holding every failure.

    A single failure is raised with its own message; several are listed after a first line naming them.

    >>> def wrong():
    ...     raise AssertionError("demo: case 'two' failed on x: y")
    >>> run_checks("demo", [Check("one", lambda: "passed"), Check("two", wrong)])
    Traceback (most recent call last):
    ...
    AssertionError: demo: case 'two' failed on x: y
    """
    report: dict[str, str] = {}
    failed: dict[str, str] = {}
    for check in checks:
        try:
            report[check.name] = check.run()
        except AssertionError as exc:
            failed[check.name] = str(exc)
    if len(failed) == 1:
        raise AssertionError(next(iter(failed.values())))
    if failed:
        head = f"{title}: {len(failed)} cases failed ({', '.join(failed)})"
        raise AssertionError("\n".join([head, *failed.values()]))
    return report


def _as_test(check: Check) -> Callable[[], None]:
    def run() -> None:
        import pytest

        outcome = check.run()
        if outcome.startswith("skipped"):
            pytest.skip(outcome.removeprefix("skipped: "))

    run.__name__ = run.__qualname__ = check.name
    return run


def check_params(checks: Iterable[Check], label: str = "", marks: Iterable[Any] = ()) -> list:
    """One ``pytest.param`` per check, id ``"label-case"``: the test calls it (a skipped case skips the item).

    ``marks`` are added to every param (e.g. ``pytest.mark.slow``).
    """
    import pytest

    prefix = f"{label}-" if label else ""
    return [pytest.param(_as_test(c), id=f"{prefix}{c.name}", marks=list(marks)) for c in checks]


def parametrize_with_checks(checks: Iterable[Check] | Mapping[str, Iterable[Check]]) -> Any:
    """A ``pytest.mark.parametrize("check", ...)`` with one item per case (scikit-learn's convention).

    ``checks`` is a kit's checks, or a mapping label -> checks (ids ``"label-case"``); the test
    function takes ``check`` and calls it::

        @parametrize_with_checks({"enumerate": oracle_checks("enumerate")})
        def test_enumerate_conforms(check):
            check()

    >>> from cmab_milp.testing import oracle_checks
    >>> mark = parametrize_with_checks({"enumerate": oracle_checks("enumerate", include=["linear", "norm"])})
    >>> [param.id for param in mark.args[1]]
    ['enumerate-linear', 'enumerate-norm']
    """
    import pytest

    groups = checks.items() if isinstance(checks, Mapping) else [("", checks)]
    return pytest.mark.parametrize("check", [p for label, group in groups for p in check_params(group, label)])
