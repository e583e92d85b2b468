"""Conformance checks for oracle backends, action spaces and policies.

In the manner of MathOptInterface's ``Test.runtests`` and scikit-learn's
``check_estimator``: each check runs a fixed list of named cases against an
independent truth (brute force over ``space.enumerate()``, ``scipy.optimize.milp``
on the formulation) and raises ``AssertionError`` naming the failing case,
the space, the query and what was expected. A case a backend declares it does
not answer (see :class:`~cmab_milp.oracles.registry.Capabilities`) is skipped,
not failed. Each check returns ``{case: "passed" | "skipped: why"}``.

* :func:`check_oracle` judges a registered backend through its public methods;
* :func:`check_space` checks that ``contains``, ``enumerate``, ``m`` and the
  formulation describe the same set;
* :func:`check_policy` plays a policy class and checks feasibility, counting,
  reproducibility, reuse and bulk play.

Example
-------
>>> import cmab_milp as cm
>>> from cmab_milp.testing import check_oracle, check_space
>>> report = check_oracle("enumerate", spaces={"card": cm.Cardinality(5, 2)})
>>> report["near_ties"], report["norm"]
('passed', 'passed')
>>> check_space(cm.Cardinality(4, 2))["formulation"]
'passed'
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import networkx as nx
import numpy as np

from .oracles.base import Oracle, UnsupportedQuery
from .oracles.registry import BACKENDS, Capabilities, check_backend_name, make_oracle
from .spaces import (
    ActionSpace,
    Cardinality,
    ExplicitActions,
    GraphicMatroid,
    Intersection,
    Matchings,
    PartitionMatroid,
    SpanningTrees,
    STPaths,
)

__all__ = ["ORACLE_CASES", "POLICY_CASES", "SPACE_CASES", "check_oracle", "check_policy", "check_space", "small_spaces"]

ORACLE_CASES = (
    "linear",
    "ties",
    "near_ties",
    "restrictions",
    "infeasible",
    "norm",
    "invalid",
    "time_limit",
    "determinism",
    "batch",
    "ledger",
)
SPACE_CASES = ("enumerate", "contains", "m", "formulation")
POLICY_CASES = ("feasible", "ledger", "same_seed", "reuse", "bulk")


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


# ------------------------------------------------------------------ helpers
class _Cases:
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


def _describe(query: Mapping[str, Any]) -> str:
    parts = []
    for key, value in query.items():
        if isinstance(value, np.ndarray):
            value = np.array2string(value, precision=17, separator=", ", max_line_width=10**6)
        parts.append(f"{key}={value}")
    return "{" + ", ".join(parts) + "}"


def _action_str(action: np.ndarray | None) -> str:
    return "None" if action is None else f"arms {np.flatnonzero(action).tolist()}"


def _feasible_mask(actions: np.ndarray, q: Mapping[str, Any]) -> np.ndarray:
    ok = np.ones(len(actions), bool)
    for i in q.get("include", ()):
        ok &= actions[:, i]
    for i in q.get("exclude", ()):
        ok &= ~actions[:, i]
    for i, j in q.get("forbid_pairs", ()):
        ok &= ~(actions[:, i] & actions[:, j])
    return ok


def _values(actions: np.ndarray, q: Mapping[str, Any], kind: str) -> np.ndarray:
    dense = actions.astype(float)
    if kind == "linear":
        return dense @ np.asarray(q["weights"], float)
    quad = np.einsum("ni,ij,nj->n", dense, np.asarray(q["M"], float), dense)
    return dense @ q["mu"] + q.get("sign", 1) * q["f"] * np.sqrt(np.maximum(quad, 0.0))


def _ask(oracle: Oracle, kind: str, q: Mapping[str, Any]) -> np.ndarray | None:
    return oracle.argmax(**q) if kind == "linear" else oracle.argmax_norm(**q)


class _OracleJudge:
    """Asks one backend's oracle on one space and compares with brute force."""

    def __init__(self, cases: _Cases, oracle: Oracle, label: str, caps: Capabilities):
        self.cases, self.oracle, self.label, self.caps = cases, oracle, label, caps
        self.space = oracle.space
        self.actions = self.space.enumerate()
        self.may_decline = caps.declines_some(self.space)

    def where(self) -> str:
        return f"space {self.label!r} ({self.space!r})"

    def ask(self, case: str, kind: str, q: Mapping[str, Any]) -> tuple[bool, np.ndarray | None]:
        """(answered, answer); a decline is a skip only where the backend declares it may decline."""
        try:
            return True, _ask(self.oracle, kind, q)
        except UnsupportedQuery as exc:
            if self.may_decline:
                self.cases.skip(case, f"declined on {self.label} (declared)")
                return False, None
            self.cases.fail(
                case,
                self.where(),
                f"query {_describe(q)} raised UnsupportedQuery ({exc}), "
                "but the backend's capabilities declare it answers such queries",
            )
        except (ValueError, AssertionError):
            raise
        except Exception as exc:
            self.cases.fail(case, self.where(), f"query {_describe(q)} raised {type(exc).__name__}: {exc}")
        raise AssertionError("unreachable")  # pragma: no cover

    def judge(self, case: str, kind: str, q: Mapping[str, Any]) -> np.ndarray | None:
        """Ask ``q`` and check the answer against brute force; return the answer."""
        answered, answer = self.ask(case, kind, q)
        if not answered:
            return None
        ok = _feasible_mask(self.actions, q)
        where = self.where()
        if not ok.any():
            if answer is not None:
                self.cases.fail(
                    case, where, f"query {_describe(q)}: expected None (no action qualifies), got {_action_str(answer)}"
                )
            self.cases.passed(case)
            return None
        values = _values(self.actions, q, kind)
        best = float(values[ok].max())
        best_action = self.actions[np.flatnonzero(ok)[int(np.argmax(values[ok]))]]
        expected = f"value {best!r} ({_action_str(best_action)})"
        if answer is None:
            self.cases.fail(case, where, f"query {_describe(q)}: expected {expected}, got None")
        if not isinstance(answer, np.ndarray) or answer.dtype != bool or answer.shape != (self.space.d,):
            self.cases.fail(
                case,
                where,
                f"query {_describe(q)}: expected a bool array of shape ({self.space.d},), "
                f"got {type(answer).__name__} {getattr(answer, 'dtype', '')} {getattr(answer, 'shape', '')}",
            )
        if not self.space.contains(answer):
            self.cases.fail(case, where, f"query {_describe(q)}: {_action_str(answer)} is not an action of the space")
        if not _feasible_mask(answer[None, :], q)[0]:
            self.cases.fail(case, where, f"query {_describe(q)}: {_action_str(answer)} breaks the restrictions")
        got = float(_values(answer[None, :], q, kind)[0])
        tol = self.caps.tolerance_for(kind) * (1.0 + abs(best))
        if got < best - tol:
            self.cases.fail(
                case,
                where,
                f"query {_describe(q)}: expected {expected}, got value {got!r} "
                f"({_action_str(answer)}), short by {best - got:.3g} > tolerance {tol:.3g}",
            )
        self.cases.passed(case)
        return answer


def _random_restrictions(rng: np.random.Generator, d: int, pairs: bool) -> dict[str, Any]:
    arms = rng.permutation(d).tolist()
    q: dict[str, Any] = {}
    if rng.random() < 0.6:
        q["include"] = arms[:1]
    if rng.random() < 0.7:
        q["exclude"] = arms[1 : 1 + int(rng.integers(1, 3))]
    if pairs and d >= 4 and rng.random() < 0.6:
        q["forbid_pairs"] = [(arms[2], arms[3])] + ([(arms[0], arms[-1])] if rng.random() < 0.5 else [])
    return q


def _psd(rng: np.random.Generator, d: int) -> np.ndarray:
    a = rng.normal(size=(d, d))
    return a @ a.T / d + 0.1 * np.eye(d)


def _oracle_cases_on(judge: _OracleJudge, rng: np.random.Generator, fresh: Callable[[], Oracle]) -> None:
    cases, caps, space = judge.cases, judge.caps, judge.space
    d = space.d
    pairs = caps.forbid_pairs
    tol = caps.tolerance
    if cases.wanted("linear"):
        for _ in range(4):
            judge.judge("linear", "linear", {"weights": rng.normal(size=d)})
        judge.judge("linear", "linear", {"weights": -np.ones(d)})
    if cases.wanted("ties"):
        for scale in (0.0, 1e-12):  # exact ties, then ties broken by 1e-12 (inside any tolerance)
            for _ in range(3):
                w = rng.integers(-2, 5, d) / 4 + scale * rng.integers(0, 2, d)
                judge.judge("ties", "linear", {"weights": w})
        judge.judge("ties", "linear", {"weights": np.zeros(d)})
    if cases.wanted("near_ties"):
        for _ in range(4):  # gaps of 50x the declared tolerance must be resolved
            w = rng.integers(-2, 5, d) / 4
            eps = 50 * tol * (1.0 + np.abs(w).sum())
            judge.judge("near_ties", "linear", {"weights": w + eps * rng.integers(0, 2, d)})
    if cases.wanted("restrictions"):
        if not pairs:
            cases.skip("restrictions", "forbid_pairs not declared: include/exclude only")
        for _ in range(8):  # near-tied weights, so a restriction ignored shows as a wrong value
            w = rng.integers(-2, 5, d) / 4
            w = w + 50 * tol * (1.0 + np.abs(w).sum()) * rng.integers(0, 2, d)
            judge.judge("restrictions", "linear", {"weights": w, **_random_restrictions(rng, d, pairs)})
    if cases.wanted("infeasible"):
        _infeasible(judge, rng, pairs)
    if cases.wanted("norm"):
        if not caps.norm:
            cases.skip("norm", "the backend declares no norm queries")
        else:
            for sign in (1, -1):
                for k in range(3):
                    a = rng.normal(size=(d, d))
                    M = _psd(rng, d) if k != 1 else (a + a.T) / 2  # k == 1: indefinite, sqrt(max(a M a, 0))
                    q = {"mu": rng.normal(size=d), "M": M, "f": float(rng.uniform(0.2, 2.0)), "sign": sign}
                    if k == 2:
                        q.update(_random_restrictions(rng, d, pairs))
                    judge.judge("norm", "norm", q)
    if cases.wanted("invalid"):
        _invalid(judge)
    if cases.wanted("determinism") or cases.wanted("batch"):
        _determinism(judge, rng, fresh)


def _infeasible(judge: _OracleJudge, rng: np.random.Generator, pairs: bool) -> None:
    actions, d = judge.actions, judge.space.d
    w = rng.normal(size=d)
    judge.judge("infeasible", "linear", {"weights": w, "include": [0], "exclude": [0]})
    together = actions.T.astype(int) @ actions.astype(int)
    never = [(i, j) for i, j in itertools.combinations(range(d), 2) if together[i, j] == 0]
    for i, j in never[:3]:  # two arms no action holds together: not trivially infeasible
        judge.judge("infeasible", "linear", {"weights": w, "include": [i, j]})
    needed = [i for i in range(d) if len(actions) and actions[:, i].all()]
    if needed:  # exclude an arm every action holds
        judge.judge("infeasible", "linear", {"weights": w, "exclude": needed[:1]})
    # every arm excluded: only the empty action is left, where the space has one
    judge.judge("infeasible", "linear", {"weights": w, "exclude": list(range(d))})
    if pairs and d >= 2:
        judge.judge("infeasible", "linear", {"weights": w, "include": [0, 1], "forbid_pairs": [(0, 1)]})
        if never:  # a pair no action holds: forbidding it changes nothing
            i, j = never[0]
            judge.judge("infeasible", "linear", {"weights": w, "include": [i], "forbid_pairs": [(i, j)]})


_BAD_LINEAR = [
    (lambda d: {"weights": np.ones(d + 1)}, "weights of the wrong shape"),
    (lambda d: {"weights": np.r_[np.ones(d - 1), np.nan]}, "NaN weight"),
    (lambda d: {"weights": np.r_[np.ones(d - 1), np.inf]}, "infinite weight"),
    (lambda d: {"weights": np.ones(d), "include": [d]}, "include out of range"),
    (lambda d: {"weights": np.ones(d), "exclude": [-1]}, "exclude out of range"),
    (lambda d: {"weights": np.ones(d), "forbid_pairs": [(0, d)]}, "forbid_pairs out of range"),
    (lambda d: {"weights": np.ones(d), "include": [0.5]}, "non-integer arm"),
]
_BAD_NORM = [
    (lambda d: {"mu": np.ones(d), "M": np.eye(d + 1), "f": 1.0}, "M of the wrong shape"),
    (lambda d: {"mu": np.ones(d), "M": np.eye(d), "f": np.nan}, "NaN f"),
    (lambda d: {"mu": np.ones(d), "M": np.eye(d), "f": -1.0}, "negative f"),
    (lambda d: {"mu": np.r_[np.ones(d - 1), np.nan], "M": np.eye(d), "f": 1.0}, "NaN mu"),
    (lambda d: {"mu": np.ones(d), "M": np.eye(d), "f": 1.0, "sign": 0}, "sign 0"),
    (lambda d: {"mu": np.ones(d), "M": np.eye(d), "f": 1.0, "exclude": [d]}, "exclude out of range"),
]


def _invalid(judge: _OracleJudge) -> None:
    d, oracle = judge.space.d, judge.oracle
    table = [("linear", make, what) for make, what in _BAD_LINEAR]
    if judge.caps.norm:
        table += [("norm", make, what) for make, what in _BAD_NORM]
    before = oracle.ledger.queries
    for kind, make, what in table:
        q = make(d)
        try:
            _ask(oracle, kind, q)
        except ValueError:
            continue
        except Exception as exc:
            judge.cases.fail(
                "invalid",
                judge.where(),
                f"{what} {_describe(q)} raised {type(exc).__name__}: {exc}, expected ValueError",
            )
        judge.cases.fail("invalid", judge.where(), f"{what} {_describe(q)} was accepted, expected ValueError")
    if oracle.ledger.queries != before:
        judge.cases.fail("invalid", judge.where(), "refused queries were counted in the ledger")
    judge.cases.passed("invalid")


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))


def _determinism(judge: _OracleJudge, rng: np.random.Generator, fresh: Callable[[], Oracle]) -> None:
    cases, d, pairs = judge.cases, judge.space.d, judge.caps.forbid_pairs
    # exact ties: the answer must still depend on the query and the space only
    queries = [{"weights": rng.integers(0, 3, d) / 2.0} for _ in range(3)]
    queries += [{"weights": rng.integers(0, 3, d) / 2.0, **_random_restrictions(rng, d, pairs)} for _ in range(3)]
    oracle = judge.oracle
    first = []
    for q in queries:
        answered, answer = judge.ask("determinism", "linear", q)
        if not answered:
            return
        first.append(answer)
    where = judge.where()
    if cases.wanted("determinism"):
        for q, a in zip(queries, first, strict=True):
            again = judge.ask("determinism", "linear", q)[1]
            if not _same(a, again):
                cases.fail(
                    "determinism",
                    where,
                    f"query {_describe(q)} asked twice: first {_action_str(a)}, then {_action_str(again)}",
                )
        for q, a in zip(reversed(queries), reversed(first), strict=True):  # after other queries
            later = judge.ask("determinism", "linear", q)[1]
            if not _same(a, later):
                cases.fail(
                    "determinism",
                    where,
                    f"query {_describe(q)} after other queries: first {_action_str(a)}, later {_action_str(later)}",
                )
        other = fresh()
        try:
            renewed = [_ask(other, "linear", q) for q in queries]
        finally:
            other.close()
        for q, a, new in zip(queries, first, renewed, strict=True):
            if not _same(a, new):
                cases.fail(
                    "determinism",
                    where,
                    f"query {_describe(q)}: {_action_str(a)} from one oracle, "
                    f"{_action_str(new)} from a fresh oracle on the same space",
                )
        cases.passed("determinism")
    if cases.wanted("batch"):
        batch = [dict(q, kind="linear") for q in queries]
        if judge.caps.norm:
            nq = {"mu": rng.integers(0, 3, d) / 2.0, "M": _psd(rng, d), "f": 0.5}
            batch.append(dict(nq, kind="norm"))
            first = [*first, judge.ask("batch", "norm", nq)[1]]
        answers = oracle.argmax_batch(batch)
        for q, a, b in zip(batch, first, answers, strict=True):
            if not _same(a, b):
                cases.fail(
                    "batch",
                    where,
                    f"query {_describe(q)}: single answer {_action_str(a)}, batch answer {_action_str(b)}",
                )
        cases.passed("batch")


def _ledger(cases: _Cases, oracle: Oracle, label: str, norm: bool) -> None:
    where = f"space {label!r} ({oracle.space!r})"
    ledger = oracle.ledger
    start = (ledger.queries, ledger.rounds, ledger.seconds)
    if start[:2] != (0, 0):
        cases.fail("ledger", where, f"a new oracle's ledger holds queries={start[0]}, rounds={start[1]}")
    d = oracle.space.d
    w = -np.linspace(0.1, 1.0, d)  # weights <= 0: answered even by algorithms that decline NP-hard cases
    oracle.argmax(w)
    oracle.argmax(w, include=[0], exclude=[0])  # infeasible: still an answered query
    batch = [{"weights": w}, {"weights": 2 * w, "kind": "linear"}]
    if norm:
        batch.append({"kind": "norm", "mu": w, "M": np.eye(d), "f": 1.0})
    oracle.argmax_batch(batch)
    expected = (2 + len(batch), 3)
    got = (ledger.queries, ledger.rounds)
    if got != expected:
        cases.fail(
            "ledger",
            where,
            f"after 2 single queries and a batch of {len(batch)}: expected (queries, rounds) = {expected}, got {got}",
        )
    if not ledger.seconds >= start[2] or not np.isfinite(ledger.seconds):
        cases.fail("ledger", where, f"ledger seconds went from {start[2]} to {ledger.seconds}")
    cases.passed("ledger")


def _time_limit(cases: _Cases, caps: Capabilities, backend: str, options: dict, space: ActionSpace, label: str) -> None:
    """A declared ``time_limit``: a generous limit answers exactly; a non-positive or non-finite one is refused."""
    where = f"space {label!r} ({space!r})"
    if not caps.time_limit:
        cases.skip("time_limit", "the backend declares no time_limit option")
        return
    oracle = make_oracle(space, backend, **{**options, "time_limit": 600.0})
    try:
        judge = _OracleJudge(cases, oracle, label, caps)
        judge.judge("time_limit", "linear", {"weights": -np.linspace(0.1, 1.0, space.d)})
    finally:
        oracle.close()
    for bad in (-1.0, 0.0, float("nan"), float("inf")):
        try:
            limited = make_oracle(space, backend, **{**options, "time_limit": bad})
            limited.argmax(-np.linspace(0.1, 1.0, space.d))
        except ValueError:
            continue
        except Exception as exc:
            cases.fail("time_limit", where, f"time_limit={bad} raised {type(exc).__name__}: {exc}, expected ValueError")
        cases.fail("time_limit", where, f"time_limit={bad} was accepted, expected ValueError (positive and finite)")
    cases.passed("time_limit")


# ------------------------------------------------------------------ check_oracle
def check_oracle(
    backend: str,
    *,
    spaces: Mapping[str, ActionSpace] | Iterable[ActionSpace] | None = None,
    seed: int = 0,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """Check a registered backend against brute force; raise ``AssertionError`` naming the failing case.

    Parameters
    ----------
    backend:
        A registered name (``"highs"``, ``"pulp:HiGHS"``, a name given to
        :func:`~cmab_milp.register_backend`).
    spaces:
        Small spaces to check on (a mapping label -> space, or a list);
        default :func:`small_spaces`. Spaces the backend does not accept
        (its declared capabilities) are skipped.
    seed:
        Seed of the random queries.
    include, exclude:
        Case names (:data:`ORACLE_CASES`) to run or to leave out.
    options:
        Keyword options for ``make_oracle``.

    Returns
    -------
    dict
        ``{case: "passed" | "skipped: why"}``.

    >>> check_oracle("combinatorial", spaces=[Cardinality(4, 2)], include=["norm", "linear"])["norm"]
    'skipped: the backend declares no norm queries'
    """
    name, _ = check_backend_name(backend)
    caps = BACKENDS[name].capabilities
    cases = _Cases(f"check_oracle({backend!r})", include, exclude, ORACLE_CASES)
    if spaces is None:
        spaces = small_spaces()
    labelled = dict(spaces) if isinstance(spaces, Mapping) else {repr(s): s for s in spaces}
    options = dict(options or {})
    known = BACKENDS[name].options()
    if known is not None and set(options) - set(known):
        raise ValueError(
            f"backend {name!r} takes no option(s) {sorted(set(options) - set(known))}; its options: {known}"
        )
    rng = np.random.default_rng(seed)
    timed = False
    for label, space in labelled.items():
        if not isinstance(space, ActionSpace):
            raise ValueError(f"spaces[{label!r}] is not an ActionSpace: {space!r}")
        if not caps.accepts_space(space):
            for case in cases.selected:
                cases.skip(case, f"{label} not accepted (declared)")
            continue

        def fresh(space: ActionSpace = space) -> Oracle:
            return make_oracle(space, backend, **options)

        try:
            oracle = fresh()
        except ValueError as exc:
            raise AssertionError(
                f"check_oracle({backend!r}): make_oracle refused space {label!r} ({space!r}), "
                f"which the backend's capabilities accept: {exc}"
            ) from None
        try:
            _oracle_cases_on(_OracleJudge(cases, oracle, label, caps), rng, fresh)
            if cases.wanted("time_limit") and not timed and not caps.declines_some(space):
                _time_limit(cases, caps, backend, options, space, label)
                timed = True
            if cases.wanted("ledger"):
                counted = fresh()
                try:
                    _ledger(cases, counted, label, caps.norm)
                except UnsupportedQuery as exc:
                    if not caps.declines_some(space):
                        cases.fail(
                            "ledger", f"space {label!r} ({space!r})", f"UnsupportedQuery on a declared query: {exc}"
                        )
                    cases.skip("ledger", f"declined on {label} (declared)")
                except (ValueError, RuntimeError) as exc:
                    cases.fail("ledger", f"space {label!r} ({space!r})", f"{type(exc).__name__}: {exc}")
                finally:
                    counted.close()
        finally:
            oracle.close()
    return cases.finish()


# ------------------------------------------------------------------ check_space
def _milp_optimum(space: ActionSpace, weights: np.ndarray) -> tuple[float, np.ndarray] | None:
    """Maximise ``weights @ a`` over the formulation with scipy's MILP, separators as lazy cuts."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix, vstack

    form = space.formulation()
    n = form.n_cols
    c = np.zeros(n)
    c[: space.d] = -weights
    integrality = np.r_[np.ones(space.d), form.aux_integer.astype(float)]
    bounds = Bounds(np.r_[np.zeros(space.d), form.aux_lb], np.r_[np.ones(space.d), form.aux_ub])
    a, lo, hi = form.matrix()
    extra: list = []
    for _ in range(500):
        rows = [a] + [csr_matrix((r.coefs, ([0] * len(r.cols), r.cols)), shape=(1, n)) for r in extra]
        lows = np.r_[lo, [r.lb for r in extra]]
        highs = np.r_[hi, [r.ub for r in extra]]
        cons = [LinearConstraint(vstack(rows).tocsr(), lows, highs)] if len(lows) else []
        res = milp(c, integrality=integrality, bounds=bounds, constraints=cons, options={"mip_rel_gap": 0.0})
        if res.status == 2:  # infeasible
            return None
        if res.x is None:
            raise AssertionError(f"scipy.optimize.milp failed on the formulation of {space!r}: {res.message}")
        action = res.x[: space.d] > 0.5
        cuts = form.violated_rows(action)
        if not cuts:
            return -float(res.fun), action
        extra.extend(cuts)
    raise AssertionError(f"the separators of {space!r} did not converge in 500 rounds")


def check_space(
    space: ActionSpace,
    *,
    seed: int = 0,
    n_weights: int = 12,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
) -> dict[str, str]:
    """Check that ``enumerate``, ``contains``, ``m`` and the formulation describe one set.

    The space must be small enough to enumerate. ``enumerate``: distinct bool
    rows of width ``d``, each contained; ``contains``: true exactly on those rows
    (every 0/1 vector for ``d <= 14``, else random vectors and one-arm flips of
    the rows); ``m``: the largest row size; ``formulation``: its optimum found
    by ``scipy.optimize.milp`` (with the lazy cuts) equals brute force for
    random weights, and the optimal vector is an action.
    """
    if not isinstance(space, ActionSpace):
        raise ValueError(f"space must be an ActionSpace, got {type(space).__name__}")
    cases = _Cases(f"check_space({space!r})", include, exclude, SPACE_CASES)
    rng = np.random.default_rng(seed)
    d = space.d
    where = "the space"
    actions = space.enumerate()
    if cases.wanted("enumerate"):
        if actions.dtype != bool or actions.ndim != 2 or actions.shape[1] != d:
            cases.fail("enumerate", where, f"expected a bool (n, {d}) array, got {actions.dtype} {actions.shape}")
        if len(np.unique(actions, axis=0)) != len(actions):
            cases.fail("enumerate", where, "enumerate() lists some action twice")
        for row in actions:
            if not space.contains(row):
                cases.fail("enumerate", where, f"enumerated {_action_str(row)} is not contained")
        bound = space.count_upper_bound()
        if bound is not None and bound < len(actions):
            cases.fail("enumerate", where, f"count_upper_bound() = {bound} < {len(actions)} enumerated actions")
        if len(space.arms) != d:
            cases.fail("enumerate", where, f"{len(space.arms)} arm labels for d={d}")
        cases.passed("enumerate")
    listed = {row.tobytes() for row in actions}
    if cases.wanted("contains"):
        if d <= 14:
            grid = np.array(list(itertools.product([False, True], repeat=d)), bool).reshape(-1, d)
        else:
            flips = actions[rng.integers(len(actions), size=min(200, 4 * len(actions)))].copy()
            flips[np.arange(len(flips)), rng.integers(d, size=len(flips))] ^= True
            grid = (
                np.vstack([rng.random((300, d)) < rng.uniform(0.05, 0.5, (300, 1)), flips])
                if len(actions)
                else (rng.random((300, d)) < 0.3)
            )
        for x in grid:
            if space.contains(x) != (x.tobytes() in listed):
                state = "contains() accepts" if space.contains(x) else "contains() refuses"
                cases.fail(
                    "contains",
                    where,
                    f"{state} {_action_str(x)}, which enumerate() {'omits' if space.contains(x) else 'lists'}",
                )
        cases.passed("contains")
    if cases.wanted("m"):
        expected = int(actions.sum(axis=1).max()) if len(actions) else 0
        if int(space.m) != expected:
            cases.fail("m", where, f"space.m = {space.m}, but the largest enumerated action has {expected} arms")
        cases.passed("m")
    if cases.wanted("formulation"):
        dense = actions.astype(float)
        weights = [np.ones(d), -np.ones(d)] + [rng.normal(size=d) for _ in range(n_weights)]
        for w in weights:
            found = _milp_optimum(space, w)
            if not len(actions):
                if found is not None:
                    cases.fail("formulation", where, "the formulation has a solution but enumerate() is empty")
                continue
            best = float((dense @ w).max())
            if found is None:
                cases.fail(
                    "formulation",
                    where,
                    f"weights {_describe({'w': w})}: formulation infeasible, brute force optimum {best!r}",
                )
            value, action = found
            if abs(value - best) > 1e-7 * (1 + abs(best)) or not space.contains(action):
                cases.fail(
                    "formulation",
                    where,
                    f"weights {_describe({'w': w})}: formulation optimum {value!r} "
                    f"at {_action_str(action)}, brute force optimum {best!r}",
                )
        cases.passed("formulation")
    return cases.finish()


# ------------------------------------------------------------------ check_policy
_MEANS = np.array([0.9, 0.85, 0.2, 0.4, 0.6, 0.1])
_VALUES = np.array([0.2, 0.4, 0.6, 0.8, 1.0])


def _default_setup(cls: type, space: ActionSpace, constants: dict[str, Any]):
    """An environment fitting ``cls`` (by what its constructor and index need) and the constants."""
    from .environments import DiscreteArms, GaussianNoise, UniformNoise

    d = space.d
    means = np.resize(_MEANS, d)
    params = inspect.signature(cls).parameters
    if "support" in params and "reward" in params:  # general-reward family
        probs = np.array([np.roll([0.96, 0.01, 0.01, 0.01, 0.01], k) for k in range(d)])
        constants = {"reward": "sqrt_sum", "support": _VALUES, **constants}
        return (lambda: DiscreteArms(_VALUES, probs, reward=constants["reward"], seed=0)), constants
    probe = cls(space, 10, oracle="enumerate", **constants)
    if "outer" in probe.needs:
        cov = 0.02 * (np.eye(d) + 0.5 * np.ones((d, d)))
        return (lambda: GaussianNoise(means, cov, seed=0)), constants
    return (lambda: UniformNoise(means, width=0.5, seed=0)), constants


def _played(result) -> np.ndarray:
    rows = [actions[np.arange(rounds) % len(actions)] for _, rounds, actions in result.info["trace"]]
    return np.concatenate(rows)


def _same_run(a, b) -> str | None:
    """None if two results are the same run, else what differs."""
    for field in ("t", "queries", "rounds"):
        if not np.array_equal(getattr(a, field), getattr(b, field)):
            return f"{field}: {np.asarray(getattr(a, field))[-3:]} vs {np.asarray(getattr(b, field))[-3:]}"
    if not np.allclose(a.regret, b.regret, rtol=1e-12, atol=1e-9):
        return f"regret: {a.regret[-1]!r} vs {b.regret[-1]!r}"
    if not np.array_equal(_played(a), _played(b)):
        first = int(np.flatnonzero((_played(a) != _played(b)).any(axis=1))[0])
        return f"the actions played differ from round {first + 1}"
    return None


def check_policy(
    cls: type,
    *,
    space: ActionSpace | None = None,
    backend: str = "enumerate",
    T: int = 300,
    seed: int = 0,
    env: Callable[[], Any] | None = None,
    constants: Mapping[str, Any] | None = None,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
) -> dict[str, str]:
    """Play ``cls`` and check it; raise ``AssertionError`` naming the failing case.

    Cases (:data:`POLICY_CASES`): every played action is feasible; the oracle
    ledger matches the queries and rounds the run reports; the same seed gives
    the same numbers and actions; a reused policy object replays the run of a
    fresh one; bulk play equals round-by-round play (``simulate(..., bulk=False)``).

    Parameters
    ----------
    cls:
        A policy class, built as ``cls(space, T, oracle=backend, **constants)``.
    space:
        Default: 6 arms, at most 2, not both of arms 0 and 1.
    env:
        A function returning a fresh environment; default: one fitting the
        family (uniform noise, correlated Gaussian for covariance-adaptive
        policies, discrete outcomes with ``sqrt_sum`` for general rewards).
    """
    from .simulation import simulate

    if not isinstance(cls, type):
        raise ValueError(f"cls must be a policy class, got {cls!r}")
    space = Cardinality(6, 2).with_constraint([1, 1, 0, 0, 0, 0], "<=", 1) if space is None else space
    constants = dict(constants or {})
    if env is None:
        env, constants = _default_setup(cls, space, constants)
    cases = _Cases(f"check_policy({cls.__name__})", include, exclude, POLICY_CASES)

    def build():
        return cls(space, T, oracle=backend, **constants)

    where = f"space {space!r}, backend {backend!r}, T={T}, seed={seed}"
    policy = build()
    first = simulate(policy, env(), T, seed=seed, trace=True)
    if cases.wanted("feasible"):
        played = _played(first)
        if len(played) != T:
            cases.fail("feasible", where, f"{len(played)} actions played in {T} rounds")
        for row in np.unique(played, axis=0):
            if not space.contains(row):
                cases.fail("feasible", where, f"played {_action_str(row)}, which is not an action of the space")
        cases.passed("feasible")
    if cases.wanted("ledger"):
        ledger = policy.oracle.ledger
        reported = (int(first.queries[-1]), int(first.rounds[-1]))
        if reported != (ledger.queries, ledger.rounds):
            cases.fail(
                "ledger",
                where,
                f"the run reports queries, rounds = {reported}, the oracle ledger {(ledger.queries, ledger.rounds)}",
            )
        if ledger.queries <= 0 or ledger.rounds > ledger.queries:
            cases.fail(
                "ledger", where, f"queries={ledger.queries}, rounds={ledger.rounds}: expected 0 < rounds <= queries"
            )
        for curve in ("queries", "rounds"):
            if (np.diff(np.asarray(getattr(first, curve))) < 0).any():
                cases.fail("ledger", where, f"the {curve} curve decreases")
        cases.passed("ledger")
    if cases.wanted("same_seed"):
        differs = _same_run(first, simulate(build(), env(), T, seed=seed, trace=True))
        if differs:
            cases.fail("same_seed", where, f"two fresh policies, same seed: {differs}")
        cases.passed("same_seed")
    if cases.wanted("reuse"):
        differs = _same_run(first, simulate(policy, env(), T, seed=seed, trace=True))
        if differs:
            cases.fail("reuse", where, f"the policy object simulated again with the same seed: {differs}")
        cases.passed("reuse")
    if cases.wanted("bulk"):
        bulk = simulate(build(), env(), T, seed=seed + 1, trace=True, record=T)
        single = simulate(build(), env(), T, seed=seed + 1, trace=True, record=T, bulk=False)
        differs = _same_run(bulk, single)
        if differs:
            cases.fail("bulk", where, f"bulk play vs round-by-round play (bulk=False): {differs}")
        cases.passed("bulk")
    return cases.finish()
