"""``check_oracle`` / ``oracle_checks``: a registered backend against brute force, one check per case."""

from __future__ import annotations

import itertools
import pickle
import sys
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

import numpy as np

from ..oracles.core.base import Oracle, UnsupportedQuery
from ..oracles.core.registry import BACKENDS, Capabilities, check_backend_name, make_oracle
from ..spaces import ActionSpace
from .common import Cases, Check, action_str, describe, run_checks, small_spaces
from .oracle_judge import OracleJudge, ask

__all__ = ["ORACLE_CASES", "check_oracle", "oracle_checks"]

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
    "pickling",
)


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


def _oracle_cases_on(judge: OracleJudge, rng: np.random.Generator, fresh: Callable[[], Oracle]) -> None:
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
        for _ in range(4):  # gaps of 5x the declared tolerance must be resolved
            w = rng.integers(-2, 5, d) / 4
            eps = 5 * tol * (1.0 + np.abs(w).sum())
            judge.judge("near_ties", "linear", {"weights": w + eps * rng.integers(0, 2, d)})
    if cases.wanted("restrictions"):
        if not pairs:
            cases.skip("restrictions", "forbid_pairs not declared: include/exclude only")
        for _ in range(8):  # near-tied weights, so a restriction ignored shows as a wrong value
            w = rng.integers(-2, 5, d) / 4
            w = w + 5 * tol * (1.0 + np.abs(w).sum()) * rng.integers(0, 2, d)
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
    if cases.wanted("pickling"):
        _pickling(judge, rng, fresh)


def _pickling(judge: OracleJudge, rng: np.random.Generator, fresh: Callable[[], Oracle]) -> None:
    """A pickled oracle, new and after queries, unpickles to one answering the same."""
    d, where, cls = judge.space.d, judge.where(), type(judge.oracle)
    found = sys.modules.get(cls.__module__)  # pickle finds a class by module and name
    for part in cls.__qualname__.split("."):
        found = getattr(found, part, None)
    if found is not cls:
        return judge.cases.skip("pickling", f"the oracle's class {cls.__qualname__} cannot be imported by name")
    queries = [{"weights": w} for w in (-np.linspace(0.1, 1.0, d), rng.normal(size=d), rng.integers(0, 3, d) / 2.0)]
    copies = {"a new oracle": _pickled(judge, fresh(), "a new oracle")}  # (never asked: no threads to close)
    if all(judge.ask("pickling", "linear", q)[0] for q in queries):
        copies["an oracle after queries"] = _pickled(judge, judge.oracle, "an oracle after queries")
        for said, copy in copies.items():
            for q in queries:
                a, b = judge.ask("pickling", "linear", q)[1], ask(copy, "linear", q)
                if not _same(a, b):
                    judge.cases.fail(
                        "pickling", where, f"{describe(q)}: {action_str(a)}, {said} unpickled {action_str(b)}"
                    )
            copy.close()
        judge.cases.passed("pickling")


def _pickled(judge: OracleJudge, oracle: Oracle, said: str) -> Oracle:  # type: ignore[return]
    try:
        return pickle.loads(pickle.dumps(oracle))
    except Exception as exc:  # any failure to pickle is the finding (fail raises)
        judge.cases.fail("pickling", judge.where(), f"{said} does not pickle: {type(exc).__name__}: {exc}")


def _infeasible(judge: OracleJudge, rng: np.random.Generator, pairs: bool) -> None:
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


def _invalid(judge: OracleJudge) -> None:
    d, oracle = judge.space.d, judge.oracle
    table = [("linear", make, what) for make, what in _BAD_LINEAR]
    if judge.caps.norm:
        table += [("norm", make, what) for make, what in _BAD_NORM]
    before = oracle.ledger.queries
    for kind, make, what in table:
        q = make(d)
        try:
            ask(oracle, kind, q)
        except ValueError:
            continue
        except Exception as exc:
            judge.cases.fail(
                "invalid",
                judge.where(),
                f"{what} {describe(q)} raised {type(exc).__name__}: {exc}, expected ValueError",
            )
        judge.cases.fail("invalid", judge.where(), f"{what} {describe(q)} was accepted, expected ValueError")
    if oracle.ledger.queries != before:
        judge.cases.fail("invalid", judge.where(), "refused queries were counted in the ledger")
    judge.cases.passed("invalid")


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))


def _determinism(judge: OracleJudge, rng: np.random.Generator, fresh: Callable[[], Oracle]) -> None:
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
        orders = (  # each query again at once, then in reverse order (after other queries)
            (zip(queries, first, strict=True), "asked twice: first {}, then {}"),
            (zip(reversed(queries), reversed(first), strict=True), "after other queries: first {}, later {}"),
        )
        for pairs, said in orders:
            for q, a in pairs:
                again = judge.ask("determinism", "linear", q)[1]
                if not _same(a, again):
                    cases.fail(
                        "determinism", where, f"query {describe(q)} " + said.format(action_str(a), action_str(again))
                    )
        other = fresh()
        try:
            renewed = [ask(other, "linear", q) for q in queries]
        finally:
            other.close()
        for q, a, new in zip(queries, first, renewed, strict=True):
            if not _same(a, new):
                cases.fail(
                    "determinism",
                    where,
                    f"query {describe(q)}: {action_str(a)} from one oracle, "
                    f"{action_str(new)} from a fresh oracle on the same space",
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
                    f"query {describe(q)}: single answer {action_str(a)}, batch answer {action_str(b)}",
                )
        cases.passed("batch")


def _ledger(cases: Cases, oracle: Oracle, label: str, norm: bool) -> None:
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


def _time_limit(cases: Cases, caps: Capabilities, backend: str, options: dict, space: ActionSpace, label: str) -> None:
    """A declared ``time_limit``: a generous limit answers exactly; a non-positive or non-finite one is refused."""
    where = f"space {label!r} ({space!r})"
    if not caps.time_limit:
        cases.skip("time_limit", "the backend declares no time_limit option")
        return
    oracle = make_oracle(space, backend, **{**options, "time_limit": 600.0})
    try:
        judge = OracleJudge(cases, oracle, label, caps)
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


# ------------------------------------------------------------------ one check per case
def _run_case(
    case: str, backend: str, caps: Capabilities, labelled: dict[str, ActionSpace], options: dict, seed: int
) -> str:
    """Run ``case`` on every space the backend accepts, each on oracles of its own; its outcome."""
    cases = Cases(f"check_oracle({backend!r})", [case], None, ORACLE_CASES)
    rng = np.random.default_rng(seed)
    for label, space in labelled.items():
        if not caps.accepts_space(space):
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
            if case == "time_limit":
                if not caps.declines_some(space):  # once, on the first space where every query is answered
                    _time_limit(cases, caps, backend, options, space, label)
                    break
            elif case == "ledger":
                _ledger_case(cases, caps, fresh, label, space)
            else:
                _oracle_cases_on(OracleJudge(cases, oracle, label, caps), rng, fresh)
        finally:
            oracle.close()
    return cases.finish()[case]


def _ledger_case(cases: Cases, caps: Capabilities, fresh: Callable[[], Oracle], label: str, space: ActionSpace) -> None:
    counted = fresh()
    try:
        _ledger(cases, counted, label, caps.norm)
    except UnsupportedQuery as exc:
        if not caps.declines_some(space):
            cases.fail("ledger", f"space {label!r} ({space!r})", f"UnsupportedQuery on a declared query: {exc}")
        cases.skip("ledger", f"declined on {label} (declared)")
    except (ValueError, RuntimeError) as exc:
        cases.fail("ledger", f"space {label!r} ({space!r})", f"{type(exc).__name__}: {exc}")
    finally:
        counted.close()


def oracle_checks(
    backend: str,
    *,
    spaces: Mapping[str, ActionSpace] | Iterable[ActionSpace] | None = None,
    seed: int = 0,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> list[Check]:
    """The cases of :func:`check_oracle` as ``Check`` s (a name and a callable), one per case.

    Arguments as :func:`check_oracle` (checked here, before any case runs). Each check builds its own
    oracles (``seed`` seeds each case's queries), so the cases run in any order, alone or as pytest
    items (:func:`~cmab_milp.testing.parametrize_with_checks`).

    >>> import cmab_milp as cm
    >>> [check.name for check in oracle_checks("enumerate", include=["linear", "ledger"])]
    ['linear', 'ledger']
    >>> oracle_checks("enumerate", spaces=[cm.Cardinality(4, 2)], include=["norm"])[0].run()
    'passed'
    """
    name, _ = check_backend_name(backend)
    caps = BACKENDS[name].capabilities
    selected = Cases(f"check_oracle({backend!r})", include, exclude, ORACLE_CASES).selected
    if spaces is None:
        spaces = small_spaces()
    labelled = dict(spaces) if isinstance(spaces, Mapping) else {repr(s): s for s in spaces}
    for label, space in labelled.items():
        if not isinstance(space, ActionSpace):
            raise ValueError(f"spaces[{label!r}] is not an ActionSpace: {space!r}")
    options = dict(options or {})
    known = BACKENDS[name].options()
    if known is not None and set(options) - set(known):
        raise ValueError(
            f"backend {name!r} takes no option(s) {sorted(set(options) - set(known))}; its options: {known}"
        )
    return [Check(case, partial(_run_case, case, backend, caps, labelled, options, seed)) for case in selected]


def check_oracle(backend: str, **kit: Any) -> dict[str, str]:
    """Check a registered backend against brute force; raise ``AssertionError`` naming the failing cases.

    Every case runs (:func:`oracle_checks`, which takes the same keyword arguments); the error holds
    every failure, each naming its case, the space, the query and what was expected.

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

    >>> import cmab_milp as cm
    >>> check_oracle("combinatorial", spaces=[cm.Cardinality(4, 2)], include=["norm", "linear"])["norm"]
    'skipped: the backend declares no norm queries'
    """
    return run_checks(f"check_oracle({backend!r})", oracle_checks(backend, **kit))
