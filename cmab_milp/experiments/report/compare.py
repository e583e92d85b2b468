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
* argmax may differ on ties; only values are compared;
* a backend that declares itself approximate (``Capabilities(exact=False)``,
  e.g. ``dist_greedy``) is held to its declared ratio instead
  (``value >= ratio * best``) and reported with the worst ratio it reached.

Runs of the general-reward policies record their distribution-index queries
too (with their reward and outcome grid); those are replayed on the
distribution backends (``dist_enumerate``, ``dist_branch_bound``,
``dist_milp``, ``dist_greedy``, ...) and declined by the others.

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

from ...oracles import BACKENDS, Oracle, available_backends, check_backend_name, make_oracle
from ...oracles.core.base import UnsupportedQuery
from ...oracles.core.queries import LinearQuery
from ..run.command_help import described
from .compare_report import build_report, save_plot

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

#: A recorded query: linear, norm, or a distribution-index query (``cmab_milp.nonlinear.oracles.IndexQuery``).
Query = Any


# ------------------------------------------------------------------ record
class RecordingOracle(Oracle):
    """An oracle that answers through ``inner`` and keeps every query, in the order answered.

    ``queries`` holds the validated :class:`~cmab_milp.oracles.core.base.LinearQuery` /
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
    from ...simulation import simulate
    from ..problem.builders import build_policy
    from ..problem.schema import Table

    names = [p.name for p in problem.policies]
    name = names[0] if policy is None else policy
    if name not in names:
        raise ValueError(f"policy {name!r} is not in {problem.file}; its policies: {', '.join(names)}")
    T = problem.steps if horizon is None else int(horizon)
    if T < 1:
        raise ValueError(f"horizon must be >= 1, got {T}")
    spec = problem.policy(name)
    space = problem.build_space()
    env = problem.build_environment(space)
    table = Table(spec.to_dict(), f"policies[{names.index(name)}]", problem.file)
    told = None if problem.policy_horizon(name) is None else T  # a policy not told the horizon still is not
    oracle = spec.oracle_for(space)  # the name, or the oracle built with the entry's options (gap, time_limit)
    agent = build_policy(table, spec.kind, space, told, oracle, dict(spec.constants))
    if hasattr(agent.oracle, "recorded"):  # a general-reward policy: index queries and its inner linear ones
        recorder = RecordingOracle(agent.oracle.linear)
        agent.oracle._linear_oracle = recorder
        agent.oracle.recorded = recorder.queries
    else:
        recorder = RecordingOracle(oracle if isinstance(oracle, Oracle) else make_oracle(space, oracle))
        agent = build_policy(table, spec.kind, space, told, recorder, dict(spec.constants))
    result = simulate(agent, env, T, seed=seed, progress=False)  # the command prints its own lines
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
def candidate_backends(distribution: bool = False) -> list[str]:
    """Every backend usable here, each PuLP solver separately (``pulp:HiGHS``, ...).

    The distribution-index backends (``dist_*``) only with ``distribution``
    (for runs that asked such queries: on linear queries they only forward to
    an inner backend).

    >>> {"highs", "enumerate"} <= set(candidate_backends()), "dist_greedy" in candidate_backends(True)
    (True, True)
    """
    names: list[str] = []
    for name in available_backends():
        if BACKENDS[name].capabilities.distribution and not distribution:
            continue
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


def _is_index(query: Query) -> bool:
    return hasattr(query, "pmf")


def _ask(oracle: Oracle, query: Query) -> np.ndarray | None:
    r = query.restrictions
    if isinstance(query, LinearQuery):
        return oracle.argmax(query.weights, r.include, r.exclude, r.forbid_pairs)
    if _is_index(query):
        return oracle.argmax_index(query.pmf, r.include, r.exclude, r.forbid_pairs)
    return oracle.argmax_norm(query.mu, query.M, query.f, query.sign, r.include, r.exclude, r.forbid_pairs)


class _Built:
    """The oracles of one backend: one per (reward, grid) of the index queries (distribution backends)."""

    def __init__(self, space: Any, name: str, queries: Sequence[Query]):
        self.space, self.name = space, name
        self.distribution = BACKENDS[name.partition(":")[0]].capabilities.distribution
        first = next((q for q in queries if _is_index(q)), None)
        self.default = () if first is None else (first.reward, first.grid)
        self.oracles: dict[tuple, Oracle] = {}
        self.oracle(None)  # build once up front: a refusal of the space is reported as one decline

    def oracle(self, query: Query | None) -> Oracle:
        key = (query.reward, query.grid) if query is not None and _is_index(query) else self.default
        if key not in self.oracles:
            options = dict(zip(("reward", "grid"), key, strict=False)) if self.distribution else {}
            self.oracles[key] = make_oracle(self.space, self.name, **options)
        return self.oracles[key]

    def ratio(self) -> float | None:
        """The declared ratio of an approximate backend (``proven_ratio``), None for an exact one."""
        if BACKENDS[self.name.partition(":")[0]].capabilities.exact:
            return None
        return min(float(getattr(o, "proven_ratio", 1.0)) for o in self.oracles.values())

    def close(self) -> None:
        for oracle in self.oracles.values():
            oracle.close()


def compare_backends(space: Any, queries: Sequence[Query], backends: Sequence[str] | None = None) -> dict[str, Any]:
    """Ask every backend every query; the report of agreement, disagreement, declines and speed.

    ``backends`` defaults to :func:`candidate_backends`. Each backend is built
    once (its ``setup_seconds``) and timed per query.
    """
    has_index = any(_is_index(q) for q in queries)
    names = candidate_backends(has_index) if backends is None else list(dict.fromkeys(backends))
    check_backends(names)
    n = len(queries)
    # outcome per (backend, query): ("answer", action or None, seconds) | ("declined", reason) | ("error", message)
    outcomes: dict[str, list[tuple]] = {}
    setup: dict[str, dict[str, Any]] = {}
    ratios: dict[str, float] = {}
    for name in names:
        start = time.perf_counter()
        try:
            built = _Built(space, name, queries)
        except ValueError as exc:  # refused up front (enumerate past its cap, missing module, unfit reward)
            setup[name] = {"setup_seconds": time.perf_counter() - start, "refused": str(exc)}
            outcomes[name] = [("declined", f"refused the space: {exc}")] * n
            continue
        setup[name] = {"setup_seconds": time.perf_counter() - start, "refused": None}
        rows = []
        for query in queries:
            if _is_index(query) and not built.distribution:
                rows.append(("declined", "the backend declares no distribution-index queries"))
                continue
            start = time.perf_counter()
            try:
                answer = _ask(built.oracle(query), query)
            except UnsupportedQuery as exc:
                rows.append(("declined", str(exc) or "UnsupportedQuery"))
                continue
            except Exception as exc:  # reported, never hidden (a refused grid of a learned support included)
                rows.append(("error", f"{type(exc).__name__}: {exc}"))
                continue
            rows.append(("answer", answer, time.perf_counter() - start))
        if built.ratio() is not None:
            ratios[name] = built.ratio()
        built.close()
        outcomes[name] = rows
    return build_report(space, queries, names, outcomes, setup, ratios)


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
    from ..run.storage import write_json

    if max_queries is not None and max_queries < 1:
        raise ValueError(f"max_queries must be >= 1 (or None for all), got {max_queries}")
    stream = sys.stderr if stream is None else stream
    if backends is not None:
        check_backends(list(backends))  # before the recorded run
    start = time.perf_counter()
    space, queries, facts = record_queries(problem, policy, seed, horizon)
    has_index = any(_is_index(q) for q in queries)
    names = candidate_backends(has_index) if backends is None else list(dict.fromkeys(backends))
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
        ratio = "" if "declared_ratio" not in b else f", ratio >= {b['declared_ratio']:.3g} (worst {b['worst_ratio']})"
        stream.write(
            f"  {name:<22} {timing}{b['agree']} agree, {b['disagree']} disagree, "
            f"{b['declined']} declined, {b['errors']} errors{ratio}\n"
        )
    verdict = "all answering backends agree" if report["all_agree"] else "DISAGREEMENTS found (see oracles.json)"
    stream.write(f"{verdict}; {report['unverified_queries']} queries answered by fewer than two backends\n")
    return report


# ------------------------------------------------------------ command line
def add_command(sub: Any) -> None:
    """Add ``compare-oracles`` to the ``cmab-milp`` subcommands (an ``argparse`` subparsers object).

    Its description (``cmab-milp compare-oracles --help``): record the oracle queries of one policy's run,
    replay them on every available backend, check the optimal values agree, and write DIR/oracles.json and
    DIR/oracles.png. Exit code 1 if any backend disagrees or fails.
    """
    about = "replay one run's oracle queries on every backend and check they agree"
    p = sub.add_parser("compare-oracles", help=about, description=described(add_command))
    p.add_argument("problem", help="problem file (TOML)")
    p.add_argument("--out", required=True, help="folder for oracles.json and oracles.png")
    p.add_argument("--policy", help="policy (by name) whose queries are recorded (default: the first)")
    p.add_argument("--seed", type=int, default=0, help="seed of the recorded run (default 0)")
    p.add_argument("--horizon", type=int, help="horizon of the recorded run (default: the problem's)")
    p.add_argument(
        "--backends",
        help="comma-separated backends (default: every available one, each PuLP solver; the "
        "distribution backends dist_* too when the run asked general-reward index queries)",
    )
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
    from .. import load_problem

    problem = load_problem(args.problem)
    options = {key: getattr(args, key) for key in ("policy", "seed", "horizon")}
    options["backends"] = [b.strip() for b in args.backends.split(",") if b.strip()] if args.backends else None
    options.update(max_queries=args.max_queries or None, plot=not args.no_plot)
    try:
        report = compare_oracles(problem, args.out, **options)
    except ValueError as exc:
        sys.stderr.write(f"cmab-milp: error: {exc}\n")
        return 2
    return 0 if report["all_agree"] else 1
