"""``check_oracle``: a registered backend against brute force, case by case."""

from __future__ import annotations

import itertools
import pickle
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from ..oracles.core.base import Oracle, UnsupportedQuery
from ..oracles.core.registry import BACKENDS, Capabilities, check_backend_name, make_oracle
from ..spaces import ActionSpace
from .common import Cases, action_str, describe, small_spaces

__all__ = ["ORACLE_CASES", "check_oracle"]

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

    def __init__(self, cases: Cases, oracle: Oracle, label: str, caps: Capabilities):
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
                f"query {describe(q)} raised UnsupportedQuery ({exc}), "
                "but the backend's capabilities declare it answers such queries",
            )
        except (ValueError, AssertionError):
            raise
        except Exception as exc:
            self.cases.fail(case, self.where(), f"query {describe(q)} raised {type(exc).__name__}: {exc}")
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
                    case, where, f"query {describe(q)}: expected None (no action qualifies), got {action_str(answer)}"
                )
            self.cases.passed(case)
            return None
        values = _values(self.actions, q, kind)
        best = float(values[ok].max())
        best_action = self.actions[np.flatnonzero(ok)[int(np.argmax(values[ok]))]]
        expected = f"value {best!r} ({action_str(best_action)})"
        if answer is None:
            self.cases.fail(case, where, f"query {describe(q)}: expected {expected}, got None")
        if not isinstance(answer, np.ndarray) or answer.dtype != bool or answer.shape != (self.space.d,):
            self.cases.fail(
                case,
                where,
                f"query {describe(q)}: expected a bool array of shape ({self.space.d},), "
                f"got {type(answer).__name__} {getattr(answer, 'dtype', '')} {getattr(answer, 'shape', '')}",
            )
        if not self.space.contains(answer):
            self.cases.fail(case, where, f"query {describe(q)}: {action_str(answer)} is not an action of the space")
        if not _feasible_mask(answer[None, :], q)[0]:
            self.cases.fail(case, where, f"query {describe(q)}: {action_str(answer)} breaks the restrictions")
        got = float(_values(answer[None, :], q, kind)[0])
        tol = self.caps.tolerance_for(kind) * (1.0 + abs(best))
        if kind == "linear":  # the values are float sums: cancelling weights carry their rounding
            weights = np.abs(np.asarray(q["weights"], float))  # (as the pipeline: at most one more 1e-9)
            tol += min(2.0 * self.space.d * float(np.finfo(float).eps) * float(weights.sum()), 1e-9)
        if got < best - tol:
            self.cases.fail(
                case,
                where,
                f"query {describe(q)}: expected {expected}, got value {got!r} "
                f"({action_str(answer)}), short by {best - got:.3g} > tolerance {tol:.3g}",
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


def _pickling(judge: _OracleJudge, rng: np.random.Generator, fresh: Callable[[], Oracle]) -> None:
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
                a, b = judge.ask("pickling", "linear", q)[1], _ask(copy, "linear", q)
                if not _same(a, b):
                    judge.cases.fail(
                        "pickling", where, f"{describe(q)}: {action_str(a)}, {said} unpickled {action_str(b)}"
                    )
            copy.close()
        judge.cases.passed("pickling")


def _pickled(judge: _OracleJudge, oracle: Oracle, said: str) -> Oracle:  # type: ignore[return]
    try:
        return pickle.loads(pickle.dumps(oracle))
    except Exception as exc:  # any failure to pickle is the finding (fail raises)
        judge.cases.fail("pickling", judge.where(), f"{said} does not pickle: {type(exc).__name__}: {exc}")


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
                f"{what} {describe(q)} raised {type(exc).__name__}: {exc}, expected ValueError",
            )
        judge.cases.fail("invalid", judge.where(), f"{what} {describe(q)} was accepted, expected ValueError")
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
            renewed = [_ask(other, "linear", q) for q in queries]
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

    >>> import cmab_milp as cm
    >>> check_oracle("combinatorial", spaces=[cm.Cardinality(4, 2)], include=["norm", "linear"])["norm"]
    'skipped: the backend declares no norm queries'
    """
    name, _ = check_backend_name(backend)
    caps = BACKENDS[name].capabilities
    cases = Cases(f"check_oracle({backend!r})", include, exclude, ORACLE_CASES)
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
