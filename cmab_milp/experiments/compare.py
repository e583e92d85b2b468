"""Solver swap: replay the oracle queries of one run against every backend and check they agree.

A run of one policy is recorded through a :class:`RecordingOracle` (a wrapper
that keeps every validated query it answers; the normal path never pays for
it), then :func:`compare_backends` asks every backend the same queries and
checks each answer independently of the backend that gave it:

* the answer must be an action of the space that obeys the query's
  restrictions (``space.contains`` and the restrictions), else ``infeasible``;
* its objective value, recomputed here, must be within ``1e-9 * (1 + |best|)``
  of the best value any backend reached with a feasible action (a feasible
  action is a certificate: every backend that falls short of it is wrong),
  else ``suboptimal``; ``None`` (no action qualifies) while some backend found
  a feasible action is ``missed``;
* argmax may differ on ties; only values are compared.

A backend that raises :class:`~cmab_milp.UnsupportedQuery`, or refuses the
space when built (``enumerate`` past its size cap raises ``ValueError``),
*declines*: counted, never mistaken for agreement. Any other exception is an
``error``. Queries that fewer than two backends answered are counted as
``unverified``. :func:`compare_oracles` does it all for a problem file and
writes ``oracles.json`` and ``oracles.png``.

Example
-------
>>> import numpy as np
>>> import cmab_milp as cm
>>> space = cm.Cardinality(5, 2)
>>> recorder = RecordingOracle(cm.make_oracle(space, "enumerate"))
>>> _ = recorder.argmax(np.array([0.3, -0.1, 0.8, 0.2, 0.5]))
>>> _ = recorder.argmax(np.array([0.3, -0.1, 0.8, 0.2, 0.5]), exclude=[2])
>>> report = compare_backends(space, recorder.queries, ["highs", "enumerate", "combinatorial"])
>>> report["all_agree"], report["backends"]["highs"]["agree"], report["backends"]["combinatorial"]["declined"]
(True, 2, 0)
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from ..oracles import BACKENDS, Oracle, available_backends, check_backend_name, make_oracle
from ..oracles.base import LinearQuery, NormQuery, UnsupportedQuery, tolerance

__all__ = [
    "RecordingOracle",
    "add_command",
    "candidate_backends",
    "check_backends",
    "compare_backends",
    "compare_oracles",
    "record_queries",
    "save_plot",
]

Query = LinearQuery | NormQuery

#: Disagreements kept as examples per backend in the report.
EXAMPLES = 5


# ------------------------------------------------------------------ record
class RecordingOracle(Oracle):
    """An oracle that answers through ``inner`` and keeps every query, in the order answered.

    ``queries`` holds the validated :class:`~cmab_milp.oracles.base.LinearQuery` /
    ``NormQuery`` objects (weights, restrictions); queries of one batch are kept
    in the order their answers finish. The ledger counts as the inner oracle's would.

    >>> import cmab_milp as cm
    >>> recorder = RecordingOracle(cm.make_oracle(cm.Cardinality(3, 1), "enumerate"))
    >>> recorder.argmax([0.1, 0.5, 0.2]).astype(int).tolist(), len(recorder.queries), recorder.name
    ([0, 1, 0], 1, 'enumerate')
    """

    def __init__(self, inner: Oracle):
        if not isinstance(inner, Oracle):
            raise ValueError(f"inner must be an Oracle, got {type(inner).__name__}")
        super().__init__(inner.space)
        self.inner = inner
        self.name = inner.name
        self.queries: list[Query] = []
        self._lock = threading.Lock()

    def _answer(self, query: Query) -> np.ndarray | None:
        answer = self.inner._answer(query)
        with self._lock:
            self.queries.append(query)
        return answer

    def max_workers(self) -> int:
        return self.inner.max_workers()

    def close(self) -> None:
        super().close()
        self.inner.close()


def record_queries(
    problem: Any, policy: str | None = None, seed: int = 0, horizon: int | None = None
) -> tuple[Any, list[Query], dict[str, Any]]:
    """Run one policy of a :class:`~cmab_milp.experiments.Problem` and keep its oracle queries.

    Returns the space, the queries in the order asked, and facts about the run
    (policy, its backend, seed, horizon, regret). ``policy`` defaults to the
    problem's first; ``horizon`` to the problem's.
    """
    from ..simulation import simulate
    from .builders import build_policy
    from .schema import Table

    names = [p.name for p in problem.policies]
    name = names[0] if policy is None else policy
    if name not in names:
        raise ValueError(f"policy {name!r} is not in {problem.file}; its policies: {', '.join(names)}")
    T = problem.horizon if horizon is None else int(horizon)
    if T < 1:
        raise ValueError(f"horizon must be >= 1, got {T}")
    spec = problem.policy(name)
    space = problem.build_space()
    env = problem.build_environment(space)
    recorder = RecordingOracle(make_oracle(space, spec.oracle))
    table = Table(spec.to_dict(), f"policies[{names.index(name)}]", problem.file)
    told = None if problem.policy_horizon(name) is None else T  # a policy not told the horizon still is not
    agent = build_policy(table, spec.kind, space, told, recorder, dict(spec.constants))
    result = simulate(agent, env, T, seed=seed)
    recorder.close()
    facts = {
        "policy": name,
        "kind": spec.kind,
        "recorded_with": spec.oracle,
        "seed": seed,
        "horizon": T,
        "regret": float(np.asarray(result.regret)[-1]),
    }
    return space, list(recorder.queries), facts


# ----------------------------------------------------------------- compare
def candidate_backends() -> list[str]:
    """Every backend usable here, each PuLP solver separately (``pulp:HiGHS``, ...).

    >>> {"highs", "enumerate"} <= set(candidate_backends())
    True
    """
    names: list[str] = []
    for name in available_backends():
        solvers = BACKENDS[name].solvers()
        names += [f"{name}:{solver}" for solver in solvers] if solvers else [name]
    return names


def check_backends(names: Sequence[str]) -> None:
    """Refuse, before any work, a backend that is unknown, not installed, or a PuLP solver not available here.

    >>> try:
    ...     check_backends(["highs", "no_such"])
    ... except ValueError as exc:
    ...     print(str(exc).split(";")[0])
    unknown oracle backend 'no_such'
    """
    if not names:
        raise ValueError("no backends to compare")
    for spec in names:
        check_backend_name(spec)


def _ask(oracle: Oracle, query: Query) -> np.ndarray | None:
    r = query.restrictions
    if isinstance(query, LinearQuery):
        return oracle.argmax(query.weights, r.include, r.exclude, r.forbid_pairs)
    return oracle.argmax_norm(query.mu, query.M, query.f, query.sign, r.include, r.exclude, r.forbid_pairs)


def _describe(query: Query, d: int) -> dict[str, Any]:
    """The query as JSON-able data, enough to ask it again (a norm query's ``M`` only for d <= 20)."""
    r = query.restrictions
    out: dict[str, Any] = {"kind": "linear" if isinstance(query, LinearQuery) else "norm"}
    if isinstance(query, LinearQuery):
        out["weights"] = query.weights.tolist()
    else:
        out.update(mu=query.mu.tolist(), f=query.f, sign=query.sign)
        if d <= 20:
            out["M"] = query.M.tolist()
    out.update(include=list(r.include), exclude=list(r.exclude), forbid_pairs=[list(p) for p in r.forbid_pairs])
    return out


def _feasible(space: Any, query: Query, action: np.ndarray) -> bool:
    action = np.asarray(action, dtype=bool)
    return action.shape == (space.d,) and bool(space.contains(action)) and query.restrictions.admits(action)


def compare_backends(space: Any, queries: Sequence[Query], backends: Sequence[str] | None = None) -> dict[str, Any]:
    """Ask every backend every query; the report of agreement, disagreement, declines and speed.

    ``backends`` defaults to :func:`candidate_backends`. Each backend is built
    once (its ``setup_seconds``) and timed per query.
    """
    names = candidate_backends() if backends is None else list(dict.fromkeys(backends))
    check_backends(names)
    n = len(queries)
    # outcome per (backend, query): ("answer", action or None, seconds) | ("declined", reason) | ("error", message)
    outcomes: dict[str, list[tuple]] = {}
    setup: dict[str, dict[str, Any]] = {}
    for name in names:
        start = time.perf_counter()
        try:
            oracle = make_oracle(space, name)
        except ValueError as exc:  # refused up front (enumerate past its cap, missing module)
            setup[name] = {"setup_seconds": time.perf_counter() - start, "refused": str(exc)}
            outcomes[name] = [("declined", f"refused the space: {exc}")] * n
            continue
        setup[name] = {"setup_seconds": time.perf_counter() - start, "refused": None}
        rows = []
        for query in queries:
            start = time.perf_counter()
            try:
                answer = _ask(oracle, query)
            except UnsupportedQuery as exc:
                rows.append(("declined", str(exc) or "UnsupportedQuery"))
                continue
            except Exception as exc:  # reported, never hidden
                rows.append(("error", f"{type(exc).__name__}: {exc}"))
                continue
            rows.append(("answer", answer, time.perf_counter() - start))
        oracle.close()
        outcomes[name] = rows
    return _report(space, queries, names, outcomes, setup)


def _report(
    space: Any, queries: Sequence[Query], names: list[str], outcomes: dict[str, list[tuple]], setup: dict
) -> dict[str, Any]:
    n = len(queries)
    stats = {
        name: {
            "agree": 0,
            "disagree": 0,
            "declined": 0,
            "errors": 0,
            "declined_reasons": {},
            "disagreements": [],
            "error_examples": [],
            "_seconds": [],
        }
        for name in names
    }
    unverified = 0
    for k, query in enumerate(queries):
        values: dict[str, float | None] = {}  # feasible value, or None for "no action"
        infeasible: set[str] = set()
        for name in names:
            outcome = outcomes[name][k]
            if outcome[0] != "answer":
                continue
            stats[name]["_seconds"].append(outcome[2])
            action = outcome[1]
            if action is None:
                values[name] = None
            elif _feasible(space, query, action):
                values[name] = query.value(np.asarray(action, dtype=bool))
            else:
                infeasible.add(name)
        if len(values) + len(infeasible) < 2:
            unverified += 1
        found = {name: v for name, v in values.items() if v is not None}
        best_by = max(found, key=found.get) if found else None
        best = found[best_by] if found else None
        for name in names:
            outcome, entry = outcomes[name][k], stats[name]
            if outcome[0] == "declined":
                entry["declined"] += 1
                entry["declined_reasons"][outcome[1]] = entry["declined_reasons"].get(outcome[1], 0) + 1
                continue
            if outcome[0] == "error":
                entry["errors"] += 1
                if len(entry["error_examples"]) < EXAMPLES:
                    entry["error_examples"].append(
                        {"query": k, "error": outcome[1], "asked": _describe(query, space.d)}
                    )
                continue
            problem, value = None, values.get(name)
            if name in infeasible:
                problem = "infeasible"
            elif value is None and best is not None:
                problem = "missed"
            elif value is not None and value < best - tolerance(best):
                problem = "suboptimal"
            if problem is None:
                entry["agree"] += 1
                continue
            entry["disagree"] += 1
            if len(entry["disagreements"]) < EXAMPLES:
                example = {"query": k, "problem": problem, "value": value, "best": best, "best_by": best_by}
                if value is not None and best is not None:
                    example["gap"] = best - value
                example["action"] = (
                    np.flatnonzero(np.asarray(outcome[1], dtype=bool)).tolist() if outcome[1] is not None else None
                )
                example["asked"] = _describe(query, space.d)
                entry["disagreements"].append(example)
    backends = {}
    for name in names:
        entry = stats[name]
        seconds = np.asarray(entry.pop("_seconds"), dtype=float)
        backends[name] = {
            "answered": len(seconds),
            "agree": entry["agree"],
            "disagree": entry["disagree"],
            "declined": entry["declined"],
            "errors": entry["errors"],
            "median_seconds": float(np.median(seconds)) if len(seconds) else None,
            "p95_seconds": float(np.percentile(seconds, 95)) if len(seconds) else None,
            "total_seconds": float(seconds.sum()),
            **setup[name],
            "declined_reasons": entry["declined_reasons"],
            "disagreements": entry["disagreements"],
            "error_examples": entry["error_examples"],
        }
    kinds = {"linear": sum(isinstance(q, LinearQuery) for q in queries)}
    kinds["norm"] = n - kinds["linear"]
    return {
        "queries": n,
        "kinds": kinds,
        "tolerance": "1e-9 * (1 + |best|), best = the largest value reached by a feasible answer",
        "unverified_queries": unverified,
        "all_agree": all(b["disagree"] == 0 and b["errors"] == 0 for b in backends.values()),
        "backends": backends,
    }


# --------------------------------------------------------------------- plot
def save_plot(report: dict[str, Any], path: str | Path) -> Path:
    """A bar chart of median seconds per query (p95 as the whisker), log scale, one bar per backend.

    Bars are labelled with agree / disagree / declined counts; a backend with
    disagreements or errors is drawn in red.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = list(report["backends"].items())
    timed = [b for _, b in rows if b["median_seconds"] is not None]
    low = max(min((b["median_seconds"] for b in timed), default=1e-4) / 3, 1e-7)
    high = max((b["p95_seconds"] for b in timed), default=1e-2) * 60
    figure = Figure(figsize=(7.5, 0.55 * max(len(rows), 1) + 1.4), layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    for y, (_, b) in enumerate(rows):
        label = f"{b['agree']} agree, {b['disagree']} disagree, {b['declined']} declined"
        if b["errors"]:
            label += f", {b['errors']} errors"
        if b["median_seconds"] is None:  # declined (or failed) every query: no time to show
            ax.text(low * 1.15, y, "no answers: " + label, va="center", fontsize=8, color="#7f8c8d")
            continue
        bad = b["disagree"] or b["errors"]
        ax.barh(y, b["median_seconds"], color="#c0392b" if bad else "#2e86c1")
        ax.plot([b["median_seconds"], b["p95_seconds"]], [y, y], color="black", lw=1)
        ax.text(b["p95_seconds"] * 1.15, y, label, va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), [name for name, _ in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(low, high)
    ax.set_xlabel("seconds per query (bar: median, line to p95)")
    ax.set_title(f"{report['queries']} replayed queries" + ("" if report["all_agree"] else "  (DISAGREEMENTS)"))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", dpi=120)
    return path


# ---------------------------------------------------------------- the whole
def _spread(n: int, keep: int | None) -> list[int]:
    """``keep`` indices spread evenly over ``range(n)``, in order (all if ``keep`` is None or >= n)."""
    if keep is None or keep >= n:
        return list(range(n))
    return sorted(set(np.linspace(0, n - 1, keep).round().astype(int).tolist()))


def compare_oracles(
    problem: Any,
    out_dir: str | Path,
    *,
    policy: str | None = None,
    seed: int = 0,
    horizon: int | None = None,
    backends: Sequence[str] | None = None,
    max_queries: int | None = 200,
    plot: bool = True,
    stream: TextIO | None = None,
) -> dict[str, Any]:
    """Record one run of ``policy`` on ``problem``, replay its queries on ``backends``, write the report.

    ``max_queries`` keeps that many queries spread evenly over the run, in
    order (``None``: all). Writes ``out_dir/oracles.json`` (and ``oracles.png``)
    and returns the report.
    """
    from .storage import write_json

    if max_queries is not None and max_queries < 1:
        raise ValueError(f"max_queries must be >= 1 (or None for all), got {max_queries}")
    stream = sys.stderr if stream is None else stream
    names = candidate_backends() if backends is None else list(dict.fromkeys(backends))
    check_backends(names)
    start = time.perf_counter()
    space, queries, facts = record_queries(problem, policy, seed, horizon)
    stream.write(
        f"{problem.file}: recorded {len(queries)} queries of {facts['policy']} "
        f"(T={facts['horizon']}, seed {seed}, {facts['recorded_with']}) in {time.perf_counter() - start:.1f} s\n"
    )
    if not queries:
        raise ValueError(f"policy {facts['policy']!r} asked its oracle no queries: nothing to compare")
    kept = _spread(len(queries), max_queries)
    stream.write(f"replaying {len(kept)} queries on {len(names)} backends: {', '.join(names)}\n")
    report = compare_backends(space, [queries[k] for k in kept], names)
    report = {
        "problem": problem.file,
        "space": f"{type(space).__name__} d={space.d} m={space.m}",
        "recorded": {**facts, "queries": len(queries)},
        "replayed_query_indices": kept if len(kept) < len(queries) else "all",
        **report,
    }
    out = Path(out_dir)
    write_json(out / "oracles.json", report)
    if plot:
        save_plot(report, out / "oracles.png")
    for name, b in report["backends"].items():
        timing = "" if b["median_seconds"] is None else f"median {b['median_seconds'] * 1e3:.3g} ms, "
        timing += "" if b["p95_seconds"] is None else f"p95 {b['p95_seconds'] * 1e3:.3g} ms; "
        stream.write(
            f"  {name:<22} {timing}{b['agree']} agree, {b['disagree']} disagree, "
            f"{b['declined']} declined, {b['errors']} errors\n"
        )
    verdict = "all answering backends agree" if report["all_agree"] else "DISAGREEMENTS found (see oracles.json)"
    stream.write(f"{verdict}; {report['unverified_queries']} queries answered by fewer than two backends\n")
    return report


# ------------------------------------------------------------ command line
def add_command(sub: Any) -> None:
    """Add ``compare-oracles`` to the ``cmab-milp`` subcommands (an ``argparse`` subparsers object)."""
    p = sub.add_parser(
        "compare-oracles",
        help="replay one run's oracle queries on every backend and check they agree",
        description="Record the oracle queries of one policy's run, replay them on every available backend, "
        "check the optimal values agree, and write DIR/oracles.json and DIR/oracles.png. "
        "Exit code 1 if any backend disagrees or fails.",
    )
    p.add_argument("problem", help="problem file (TOML)")
    p.add_argument("--out", required=True, help="folder for oracles.json and oracles.png")
    p.add_argument("--policy", help="policy (by name) whose queries are recorded (default: the first)")
    p.add_argument("--seed", type=int, default=0, help="seed of the recorded run (default 0)")
    p.add_argument("--horizon", type=int, help="horizon of the recorded run (default: the problem's)")
    p.add_argument("--backends", help="comma-separated backends (default: every available one, each PuLP solver)")
    p.add_argument(
        "--max-queries",
        type=int,
        default=200,
        help="replay this many queries spread over the run (default 200; 0: all)",
    )
    p.add_argument("--no-plot", action="store_true", help="skip oracles.png")
    p.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    """Handler of ``compare-oracles``: 0 all agree, 1 disagreement or error, 2 refused input."""
    from . import load_problem

    problem = load_problem(args.problem)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()] if args.backends else None
    try:
        report = compare_oracles(
            problem,
            args.out,
            policy=args.policy,
            seed=args.seed,
            horizon=args.horizon,
            backends=backends,
            max_queries=args.max_queries or None,
            plot=not args.no_plot,
        )
    except ValueError as exc:
        sys.stderr.write(f"cmab-milp: error: {exc}\n")
        return 2
    return 0 if report["all_agree"] else 1
