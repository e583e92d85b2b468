"""Crew-assignment benchmark: the covariance-adaptive policies at d = 120.

Run: ``.venv/bin/python bench/crew.py [--quick] [--horizon T] [--ols-horizon T] [--budget S]``

The problem is ``problems/crew_matching.toml``: matchings of K(10, 12) (d = 120,
m = 10), correlated Gaussian noise. Each policy plays one run (seed 1) on the
oracle backend ``--backend`` (default ``highs``), one after the other:

* AROQ-C with a one-pass warm-up and SROQ-C at ``T = --horizon`` (default 10^5);
* OLS-UCB-C (a norm query every round) at ``--ols-horizon`` (default 300)
  rounds only; its wall time at ``T`` is *extrapolated* linearly from its
  seconds per round (printed as such).

A policy still running after ``--budget`` seconds (default 1200) is stopped at
the end of its current stretch; the row then says at which round (``stopped
at t``), and the time to ``T`` is extrapolated from the rounds played (a lower
bound for AROQ-C, whose updates are spread over the whole run).

Printed per policy: rounds played, wall seconds (and extrapolated to ``T``),
oracle queries, adaptivity rounds, seconds in the oracle, milliseconds per
query, the largest single query (milliseconds) and the regret at the last
round played; a policy stopped inside a batch (SROQ-C's representatives) says how much of the batch
it answered and how long the whole batch would take at that rate. ``--quick``: ``T = 10^4`` (past
the 7,260-round warm-ups), 40 OLS-UCB-C rounds, budget 300 s.

Measured on 2026-12-01 (``--prune``, highs, 2 oracle threads, the 2-core machine shared; seconds per query are
thread time). The queries get harder as a run goes, so a linear extrapolation of the first rounds misleads; the
rows per decade of rounds show the trend.

* AROQ-C, exact, final main (``--budget 1200``, load 2-3): warm-up 1,870 linear queries (0.5 ms each), then 284
  updates in rounds 7,261-9,279, 4.2 s each on average (slowest 43.6 s). Session-start code (load 5): 221 updates
  to t = 8,727 in 1,300 s. Gurobi's MIQCP stopped at 60 s on all 5 of the hardest updates tried.
* AROQ-C, ``--norm-gap 0.01 --time-limit 1`` (before the helpers' merge): 43,458 rounds in 2,400 s, 2,344 updates,
  all approximate, worst proven ratio 0.83.
* AROQ-C, ``--norm-gap 0.01`` alone (reproducible; later main with the exact Glover rows, load 4-5): 365 updates
  to t = 9,689 in 1,800 s, 4.95 s each (slowest 77 s), worst proven ratio 0.990. Most updates in rounds 7,300-9,700
  take 3-9 s even in the approximate mode (HiGHS's ``mip_rel_gap`` = 0.01 is slower there than exact on some).
* AROQ-C, exact, after the concave branch took bipartite matchings (sign +1 size and conflict terms, node
  shifts; final main, ``--budget 600``, load 2-3): 17,170 rounds in 600 s, 995 updates, 0.60 s each (slowest
  1.9 s): rounds 1,000-9,999 0.18 s a query, rounds 10,000-17,170 0.88 s. Before the node shifts
  (``--budget 900``): 13,625 rounds, 1.22 s a query (slowest 10.3 s). With the tuned root diagonal and lowered
  node forms (commit a02461f, a helper's benchmarks beside it): 16,692 rounds in 600 s, 962 updates, rounds
  1,000-9,999 0.14 s a query, 10,000-16,692 0.97 s: no change end to end (its captured slowest queries alone
  run 10-30% faster).
* SROQ-C, exact, with the lowered node forms and the tuned root (a639ab0, idle machine): T = 10^5 in 290 s wall,
  pair queries 37 ms (slowest 251 ms), arm queries 52 ms, regret 102,147.2 (the same).
* SROQ-C, exact, with the sign +1 branch on an indefinite ``M`` (bounded on its PSD majorant; ``M`` is indefinite just
  after the warm-up, where the outer approximation took 65 ms a pair query): T = 10^5 in 166 s wall, 14,741 pair
  queries at 20.8 ms (slowest 95 ms), 360 arm queries at 36.5 ms, the same regret 102,147.2.
* SROQ-C, exact, final main (``--budget 600``, load 2-3): T = 10^5 in 335 s wall (2 oracle threads), 14,741
  pair queries at 43 ms thread time (slowest 251 ms), 360 arm queries at 60 ms, regret 102,147 (as the
  approximate run's). An earlier commit of the day (full first incumbent, both root forms): 451 s.
* OLS-UCB-C, exact: 855 rounds in 4,000 s (load 5-7): rounds 10-99 0.8 s a query, rounds 100-855 5.2 s.
  With the concave branch (``--ols-horizon 2000 --budget 400``, load 2-3): 1,463 rounds in 400 s; rounds
  10-99 0.11 s a query, 100-999 0.23 s, 1,000-1,463 0.39 s (slowest 0.81 s): T = 10^5 would take many hours.
  With the lowered node forms and the tuned root diagonal (a02461f), side by side with 0f6ad8e (``--ols-horizon
  1200 --budget 400``, one after the other, machine otherwise idle, same regret 3,248.6): 1,200 rounds in 81.5 s
  against 276.9 s; rounds 10-99 33 ms a query against 82, 100-999 62 ms against 229, 1,000-1,200 111 ms against
  312. Searches: 66 / 133 / 261 nodes median in those windows, 25 of 1,186 tuned: the gain is the node forms
  (one eigenvalue where the former per-node shift cost ~1 ms).
* AROQ-C, ``--norm-gap 0.05`` (reproducible; the approximate mode stops a query on the tuned root's bound, a bound on
  every action, instead of waiting for the nodes keyed before the tuning): T = 10^5 in 207 s, 3,957 updates at
  52 ms (slowest 103 ms), worst proven ratio 0.950, regret 22,615 at t = 16,000 (the exact run: 23,685) and 46,294
  at T. Before that stop: 55,483 rounds in 900 s (0.36 s a query in rounds 10,000-55,483). ``--norm-gap 0.02``:
  21,119 rounds in 900 s (0.94 s a query in rounds 10,000-21,119; a second run beside it). OLS-UCB-C with
  ``--norm-gap 0.05 --ols-horizon 100000``: 5,124 rounds in 900 s, 34 ms a query in rounds 100-999 and 0.21 s in
  1,000-5,124 (its tuned root stays ~7% above the optimum, so the search goes on).
* OLS-UCB-C, ``--norm-gap 0.05 --ols-horizon 100000`` with carried answers (``reuse=0.5``, the policy's default:
  a round first offers the last solve's answer and the 32 best actions its search met, proven within 5% of the
  round's optimum by a drift bound, :mod:`cmab_milp.oracles.norm.carry`; solves aim at 2.5%): T = 10^5 in 642 s,
  304 solves at 1.9 s (slowest 37 s; 17 of them take 20-58 s, in rounds 15,000-45,000), 99,682 carried answers at
  0.4 ms, worst proven ratio 0.950, regret 48,221 at T (2,730 at t = 1,000 and 17,623 at t = 10,000).
  Carrying the answer alone (no runners-up): 23,206 rounds in 600 s, 1,035 solves at 0.58 s; its own index falls
  as it is played, so it failed the bound after ~30 rounds.
  ``--reuse 0.7`` (solves at 1.5%): T in 722 s, 204 solves at 3.1 s, regret 48,604; ``--reuse 0.3`` (at 3.5%): 22,000
  rounds at 513 s where 0.5 had 23,754 at 400 s. A rerun of the default: the same numbers in 741 s (tests beside it).
* AROQ-C, ``--norm-gap 0.05 --reuse 0.5`` (its ``reuse`` is off by default): T = 10^5 in 72 s, 33 solves (2.0 s
  each) and 3,844 carried updates, regret 22,745 at t = 16,000 and 48,795 at T (without: 22,615 and 46,294; 268 s
  through ``simulate`` just before).
* SROQ-C asks ~5,000 pair representatives per epoch (15,109 in a run): exact, ~0.26-1.1 s each. With
  ``--norm-gap 0.01`` (final main, idle machine): T = 10^5 in 253 s wall, 14,740 pair queries at 32 ms, every
  norm answer approximate, worst proven ratio 0.990. With ``--time-limit 0.5`` too (CI running beside it for
  4 minutes): t = 32,801 in 600 s, 121 ms per pair query, worst proven ratio 0.199 (a query stopped at its
  limit keeps the weak bound of its first MILP).

``--prune`` runs AROQ-C and SROQ-C with ``prune=True`` (AROQ-C: the shared warm-up cover;
SROQ-C: only the pair representatives it uses and does not already know); ``--no-hints`` asks
the norm queries without incumbent hints (for before/after).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cmab_milp as cm
from cmab_milp.experiments import load_problem
from cmab_milp.policies.covariance import CovarianceIndex

PROBLEM = Path(__file__).resolve().parents[1] / "problems" / "crew_matching.toml"


class _OverBudget(Exception):
    """The policy's time is up (raised by every oracle answer after the deadline)."""


def query_kind(query) -> str:
    """``linear`` or ``norm+1`` / ``norm-1``, with the restriction: ``all``, ``arm``, ``pair`` or ``other`` include."""
    kind = "linear" if not hasattr(query, "sign") else f"norm{query.sign:+d}"
    include = query.restrictions.include
    return f"{kind} {dict(enumerate(['all', 'arm', 'pair'])).get(len(include), 'other')}"


class _Watch:
    """Wraps the oracle: the longest single answer, answers given, the size of the batch under way, a deadline,
    and per :func:`query_kind` the count, seconds and slowest answer (``kinds``; thread time, not wall time)."""

    def __init__(self, oracle: cm.Oracle, deadline: float):
        self.slowest, self.answered, self.batch, self.batch_start = 0.0, 0, 0, 0.0
        self.kinds: dict[str, list[float]] = {}
        self.t = 1  # the round being planned (set by :func:`run`)
        self.decades: dict[int, list[float]] = {}  # floor(log10 t) -> [queries, seconds]
        lock = threading.Lock()  # argmax_batch answers in worker threads
        answer, batch = oracle._answer, oracle.argmax_batch

        def timed(query):
            start = time.perf_counter()
            if start > deadline:
                raise _OverBudget
            try:
                return answer(query)
            finally:
                took = time.perf_counter() - start
                with lock:
                    self.slowest = max(self.slowest, took)
                    self.answered += 1
                    kind = query_kind(query)
                    if getattr(query, "carry", None) is not None:  # one query a round: the stats are its own
                        carried = getattr(getattr(oracle, "last_norm_stats", None), "method", "") == "carried"
                        kind += " carried" if carried else " solved"
                    entry = self.kinds.setdefault(kind, [0, 0.0, 0.0])
                    entry[0] += 1
                    entry[1] += took
                    entry[2] = max(entry[2], took)
                    decade = self.decades.setdefault(len(str(self.t)) - 1, [0, 0.0])
                    decade[0] += 1
                    decade[1] += took

        def batched(queries):
            self.batch, self.batch_start, self.answered = len(queries), time.perf_counter(), 0
            return batch(queries)

        oracle._answer = timed  # type: ignore[method-assign]
        oracle.argmax_batch = batched  # type: ignore[method-assign]


def _spread(length: int, count: int) -> np.ndarray:
    """Rounds per action of a stretch of ``length`` rounds cycling through ``count`` actions."""
    per = np.full(count, length // count)
    per[: length % count] += 1
    return per


def run(
    policy: cm.Policy,
    env,
    T: int,
    budget: float,
    seed: int = 1,
    checkpoints: tuple[int, ...] = (),
    progress: float | None = None,
) -> dict:
    """Play ``policy`` up to ``T`` rounds or ``budget`` seconds; the totals (a small ``simulate``).

    Past the budget the oracle refuses every further answer; a run stopped inside a batch says how
    much of the batch it answered (``batch``, ``answered``, ``batch_seconds``). ``at``: the regret after
    each of ``checkpoints`` played (to compare runs that stop at different rounds). ``progress``: print the round,
    wall seconds and regret every that many seconds.
    """
    _, best = env.optimal(policy.space, "highs")
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    watch = _Watch(policy.oracle, start + budget)
    policy.reset()
    ledger = policy.oracle.ledger
    q0, r0, s0 = ledger.snapshot()
    t, regret, inside = 1, 0.0, None
    at: dict[int, float] = {}
    try:
        shown = start
        while t <= T and time.perf_counter() - start < budget:
            if progress is not None and time.perf_counter() - shown >= progress:
                shown = time.perf_counter()
                print(f"    ... t = {t - 1}, {shown - start:.0f} s, regret {regret:.1f}", flush=True)
            watch.t = t
            stretch = policy.plan()
            length = min(stretch.length, T - t + 1)
            stats = env.observe(stretch.actions, length, rng, policy.needs)
            gaps = best - env.expected_rewards(stretch.actions)
            for point in checkpoints:
                if t <= point < t + length:
                    at[point] = regret + float(_spread(point - t + 1, len(gaps)) @ gaps)
            regret += float(_spread(length, len(gaps)) @ gaps)
            policy.update(length, stats)
            t += length
    except _OverBudget:
        inside = (watch.batch, watch.answered, time.perf_counter() - watch.batch_start)
    wall = time.perf_counter() - start
    q, r, s = ledger.snapshot()
    return {
        "played": t - 1,
        "wall": wall,
        "queries": q - q0,
        "rounds": r - r0,
        "oracle": s - s0,
        "slowest": watch.slowest,
        "regret": regret,
        "at": at,
        "inside": inside,
        "kinds": watch.kinds,
        "decades": watch.decades,
    }


def decade_rows(decades: dict[int, list[float]], played: int) -> list[str]:
    """Per decade of rounds (``[10^k, 10^(k+1))``): queries, oracle seconds and ms per query.

    The queries get cheaper as the counts grow (``M`` shrinks like ``1/n``), so the rate of the
    first rounds overstates the whole run; the per-decade rates show the trend.

    >>> decade_rows({0: [9, 0.9], 1: [90, 4.5]}, 99)[1].split()[:4]
    ['rounds', '10-99:', '90', 'queries,']
    """
    rows = []
    for k in sorted(decades):
        count, seconds = decades[k]
        last = min(10 ** (k + 1) - 1, played)
        rate = 1000 * seconds / count
        rows.append(f"rounds {10**k}-{last}: {count} queries, {seconds:.1f} s in the oracle, {rate:.1f} ms/query")
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T = 10^4, 40 OLS-UCB-C rounds, budget 300 s")
    parser.add_argument("--prune", action="store_true", help="AROQ-C and SROQ-C with prune=True")
    parser.add_argument("--no-hints", action="store_true", help="no incumbent hints in the norm queries")
    parser.add_argument("--horizon", type=int, default=None, help="T for AROQ-C and SROQ-C (default 10^5)")
    parser.add_argument("--ols-horizon", type=int, default=None, help="rounds OLS-UCB-C plays (default 300)")
    parser.add_argument("--budget", type=float, default=None, help="seconds per policy before it is stopped")
    parser.add_argument("--backend", default="highs")
    parser.add_argument("--norm-gap", type=float, default=None, help="highs norm_gap (approximate norm queries)")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per query (a norm query in all)")
    parser.add_argument("--policies", default="AROQ-C,SROQ-C,OLS-UCB-C", help="comma-separated subset")
    parser.add_argument("--reuse", type=float, default=None, help="OLS-UCB-C's and AROQ-C's reuse (default: theirs)")
    parser.add_argument("--progress", type=float, default=None, help="print the round reached every S seconds")
    parser.add_argument(
        "--checkpoints", default="1000,10000,16000,30000,50000", help="rounds at which to print the regret"
    )
    args = parser.parse_args(argv)
    T = args.horizon or (10_000 if args.quick else 100_000)
    ols_T = min(T, args.ols_horizon or (40 if args.quick else 300))
    budget = args.budget or (300.0 if args.quick else 1200.0)

    if args.no_hints:
        CovarianceIndex.hints_for = lambda self, query: ()  # type: ignore[method-assign]
    problem = load_problem(PROBLEM)
    space = problem.build_space()
    env = problem.build_environment(space)
    prune = {"prune": True} if args.prune else {}  # (the code before prune existed takes no such keyword)
    reuse = {} if args.reuse is None else {"reuse": args.reuse}
    builders = {
        "AROQ-C": lambda oracle: cm.AROQCov(space, T, oracle=oracle, warmup_cycles=1, **prune, **reuse),
        "SROQ-C": lambda oracle: cm.SROQCov(space, T, oracle=oracle, **prune),
        "OLS-UCB-C": lambda oracle: cm.OLSUCBC(space, T, oracle=oracle, **reuse),
        "OLS-UCB-C-solved": lambda oracle: cm.OLSUCBC(space, T, oracle=oracle, reuse=None),  # every round solved
    }
    names = [n.strip() for n in args.policies.split(",") if n.strip()]
    unknown = sorted(set(names) - set(builders))
    if unknown:
        raise SystemExit(f"unknown policies {unknown}; choose from {sorted(builders)}")
    print(f"{space!r}, d={space.d}, m={space.m}; backend {args.backend}; T={T}; budget {budget:.0f} s per policy;")
    hints = "off" if args.no_hints else "on"
    print(f"prune={args.prune}; hints {hints}; norm_gap {args.norm_gap}; time limit {args.time_limit}")
    header = f"{'policy':10} {'played':>7} {'wall s':>8} {'at T s':>9} {'queries':>8} {'rounds':>7}"
    print(header + f" {'oracle s':>9} {'ms/query':>9} {'max ms':>8} {'regret':>10}")
    per_round: dict[str, float] = {}
    for name in names:
        horizon = ols_T if name.startswith("OLS-UCB-C") else T
        options = {k: v for k, v in (("norm_gap", args.norm_gap), ("time_limit", args.time_limit)) if v is not None}
        policy = builders[name](cm.make_oracle(space, args.backend, **options))
        checkpoints = tuple(int(c) for c in args.checkpoints.split(",") if c.strip())
        out = run(policy, env, horizon, budget, checkpoints=checkpoints, progress=args.progress)
        at_T = out["wall"] * T / max(out["played"], 1)
        per_round[name] = 1000 * out["wall"] / max(out["played"], 1)
        note = "" if out["played"] >= T else f"  (played {out['played']} rounds; 'at T' extrapolated linearly)"
        if out["inside"] is not None:
            size, answered, seconds = out["inside"]
            note += (
                f"\n    stopped inside a batch of {size} queries after answering {answered} in {seconds:.0f} s:"
                f" the batch alone would take ~{seconds * size / max(answered, 1):.0f} s"
            )
        per_query = 1000 * out["oracle"] / max(out["queries"], 1)
        print(
            f"{name:10} {out['played']:7d} {out['wall']:8.1f} {at_T:9.0f} {out['queries']:8d} {out['rounds']:7d}"
            f" {out['oracle']:9.1f} {per_query:9.1f} {1000 * out['slowest']:8.0f} {out['regret']:10.1f}{note}",
            flush=True,
        )
        for kind, (count, seconds, slowest) in sorted(out["kinds"].items()):
            print(
                f"    {kind:12} {count:6d} queries {seconds:8.1f} s {1000 * seconds / count:8.1f} ms/query"
                f" (max {1000 * slowest:.0f} ms)"
            )
        if policy.oracle.ledger.approximate:
            ledger = policy.oracle.ledger
            print(f"    approximate answers: {ledger.approximate}, worst proven ratio {ledger.worst_ratio:.4f}")
        if out["at"]:
            print("    regret at " + ", ".join(f"t={c}: {r:.1f}" for c, r in sorted(out["at"].items())))
        for row in decade_rows(out["decades"], out["played"]):
            print(f"    {row}")
        if name == "AROQ-C":
            print(f"    warm-up: {policy.warmup_queries} queries; updates after it: {policy.updates}")
        if name == "SROQ-C":
            for record in getattr(policy, "history", []):
                asked = (
                    f", {record['pair_queries']} pair queries, {record['pairs_skipped']} skipped" if args.prune else ""
                )
                print(
                    f"    epoch at t={record['start']}: {len(record['survivors'])} arms, {record['pairs']} pairs{asked}"
                )
    if len(per_round) > 1:  # the runs of this one invocation, side by side
        first = names[0]
        print(f"side by side, wall ms per round played (ratio to {first}; runs of different lengths compare loosely):")
        for name, ms in per_round.items():
            print(f"    {name:18} {ms:9.2f} ms  {ms / max(per_round[first], 1e-12):7.3f}x")


if __name__ == "__main__":
    main()
