"""The crew problem's real norm queries (sign +1): ours, its variants and Gurobi, side by side.

Measured figures and the ideas tried with this script: ``docs/performance.md`` (sections "Norm queries" and
"Oracles").

Run: ``.venv/bin/python bench/norm_crew.py [--updates 6] [--arms 6] [--pairs 6] [--variants base,...]
[--backends highs,gurobi] [--time-limit 20]``

The queries are the covariance policies' own (``problems/crew_matching.toml``: matchings of
K(10, 12), d = 120, m = 10). AROQ-C (one-pass pruned warm-up, seed 1) is played with the real
policy until it has asked ``--updates`` norm queries after its warm-up (t ~ 7,300; ~15 s); each is
kept with its ``mu``, ``M``, ``f`` and hints (the previous answer):

* ``all``: the unrestricted queries as asked (AROQ-C, OLS-UCB-C);
* ``arm``: ``include`` one arm (SROQ-C's arm representatives), hinted with the unrestricted
  answer when it holds the arm (as :meth:`~cmab_milp.policies.covariance.CovarianceIndex.hints_for`);
* ``pair``: ``include`` two arms that share a matching (SROQ-C's pair representatives, ~5,000 per
  epoch), hinted likewise (rarely: few pairs lie in the answer).

``--large NAME`` takes instead the queries (sign +1, or ``--sign -1``) of ``bench/norm_large.py`` (its family named
like ``NAME``, its seeds; ``--f``, ``--queries``, ``--sign``); ``--time-limit`` then applies to ``highs`` too.

Each query is asked of every contender in turn (interleaved: the machine is shared). Contenders
are ``highs`` under each ``--variants`` entry (tuning options of the sign +1 method, below) and
the other ``--backends`` (Gurobi's nonconvex MIQCP, one thread, time limit per query; a stopped
query counts as the limit and is marked ``*``). Answers are compared by value. Printed per kind:
median / max seconds and the ratio of each contender's median to the first's.

Measured (2026-12-01, shared 2-core machine, load 4-6; ``before`` is commit 03cb608, ``new`` the
defaults: ascent restarts and swaps for the first incumbent, sign +1 MILPs without presolve; before
the uniform start was added)::

    crew (--updates 6 --arms 6 --pairs 6, Gurobi --time-limit 5)
    kind  n  before         new            gurobi             new / before
    all   6  0.559 / 1.532  0.361 / 0.524  5.02 / 5.08 (6*)   0.65
    arm   6  0.675 / 1.033  0.262 / 0.414  5.02 / 5.04 (6*)   0.39
    pair  6  0.368 / 0.759  0.263 / 0.461  5.03 / 5.05 (6*)   0.72

    --large (bench/norm_large.py's queries; medians over 2-4, s)
    Cardinality(100,10) f=0.3  0.14-0.22 -> 0.15-0.17 (Gurobi 0.20-0.30); f=1  6.1 / 14.0 -> 1.6 / 2.0 (Gurobi 20*)
    Matchings K(10,12)  f=0.3  2.22 / 1.57 / 2.61 -> 0.65 / 0.56 / 0.43 (3 queries)
    Matchings K(10,12), 2 queries per f, median / max (Gurobi, 20 s limit):
        f=0.1  0.30 / 0.36 -> 0.43 / 0.61 (0.28 / 0.31; rerun, 4 queries: 0.054 -> 0.057)
        f=0.3  3.97 / 4.95 -> 1.31 / 1.59 (1.14 / 1.40)
        f=1    18.5 / 25.6 -> 15.8 / 20.1 (20* both);    f=3    260 / 401 -> 219 / 295 (20* both)
    Cardinality(100,10) at f=3: a query ran past 20 minutes (the run was stopped).
    Matchings K15       f=0.3  0.57 -> 0.46;  Trees 6x6 f=0.3  0.30 -> 0.31;  s-t paths 8x8 f=0.3  36 -> 22

Later AROQ-C updates are harder. The first 209 updates (t up to 8,619), each asked of the final
defaults and of ``before`` in turn (load ~3): medians 0.49 / 0.64 s, maxima 13.4 / 14.7 s, totals
221 / 261 s, the new defaults faster on 172; updates 101-209: medians 0.72 / 0.98 s. The slowest
(updates ~199-209: 7-13 s) need 2-3 outer-approximation MILPs: neither the hint nor the heuristics
found the optimum, and each MILP is a full branch and bound (HiGHS offers no working lazy-constraint
callback yet, ERGO-Code/HiGHS#3078, so a tangent cannot join a running tree). HiGHS's strong
branching is ~80% of the LP iterations there; lowering ``mip_pscost_minreliable`` (0, 2, 4) did
not help (8 slow queries, medians 4.2-5.5 s against 4.4 s). On those 8 the optimum shares at most
1 arm with the incumbent (restarts leaving out one or two arms, or forcing one in, never reach
it); the extra ascent from the uniform point's gradient step reaches it in 2 of them (1.32 / 1.45 s
against 2.63 / 3.99 s; median of the 8: 1.79 s against 2.35 s), and costs nothing measurable on
the early queries (``no-uniform``: medians 0.39 / 0.28 / 0.29 s against 0.39 / 0.33 / 0.26 s).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cmab_milp as cm
from cmab_milp.experiments import load_problem
from cmab_milp.oracles.core.base import OracleError
from cmab_milp.oracles.core.queries import norm_objective

PROBLEM = Path(__file__).resolve().parents[1] / "problems" / "crew_matching.toml"

#: Variants of the sign +1 method: ``highs`` tuning options (:class:`~cmab_milp.oracles.mip.tuning.HighsTuning`).
VARIANTS: dict[str, dict[str, object]] = {
    "new": {},  # the defaults
    "before": {"plus_restart_budget": 0, "plus_local_checks": 0, "plus_presolve": True, "uniform_start": False},
    "presolve": {"plus_presolve": True},
    "no-restarts": {"plus_restart_budget": 0},
    "no-swaps": {"plus_local_checks": 0},
    "no-uniform": {"uniform_start": False},
    "sorted-rows": {"exact_row_bounds": False},  # Glover's rows from sorted sums only (before 13bbd1b)
    "oa": {"plus_branch": False},  # the outer approximation (bipartite matchings took it before 7924f5d)
    "diagonal": {"concave_overestimator": False},  # the concave branch with the diagonal shift alone
    "no-reform": {"concave_reform": 0.0},  # no node shifts its own arms again
    "no-tune": {"concave_tune_after": 0},  # the root's diagonal by trace only (before 9da3707)
    "rescale": {"concave_shift_down": False},  # node forms: a new scaled shift (matchings; before 9da3707)
    "before-tune": {"concave_tune_after": 0, "concave_shift_down": False},  # 0f6ad8e's branch
    "no-trial": {"plus_branch_try": 0},  # no budgeted branch before the outer approximation (before f7d2c42)
    "no-plus-paths": {"plus_paths": False},  # cyclic s-t paths by the outer approximation (before plus_paths)
    "no-vertex-terms": {"paths_vertex_taus": ()},  # plus_paths: the diagonal form alone (before the stars)
    "no-fractional": {"fractional_matchings": False},  # general matchings: blossom linear queries
}


def crew_queries(updates: int, arms: int, pairs: int, seed: int = 1) -> tuple[cm.ActionSpace, list[tuple[str, dict]]]:
    """The crew space and ``(kind, query keywords)`` built from AROQ-C's first ``updates`` norm queries."""
    problem = load_problem(PROBLEM)
    space = problem.build_space()
    env = problem.build_environment(space)
    oracle = cm.make_oracle(space, "highs")
    policy = cm.AROQCov(space, 100_000, oracle=oracle, warmup_cycles=1, prune=True)
    captured: list[tuple[object, np.ndarray]] = []
    answer = oracle._answer

    def record(query):
        action = answer(query)
        if hasattr(query, "sign") and query.sign > 0 and not query.restrictions.include:
            captured.append((query, action))
        return action

    oracle._answer = record  # type: ignore[method-assign]
    rng = np.random.default_rng(seed)
    policy.reset()
    while len(captured) < updates:
        stretch = policy.plan()
        policy.update(stretch.length, env.observe(stretch.actions, stretch.length, rng, policy.needs))
    oracle.close()
    pick = np.random.default_rng([seed, 7])
    together = _together(space)
    out: list[tuple[str, dict]] = []
    for k, (q, action) in enumerate(captured):
        base = {"mu": q.mu, "M": q.M, "f": q.f, "sign": 1}
        out.append(("all", {**base, "hints": q.hints}))
        for _ in range(-(-arms // updates) if k < arms else 0):
            i = int(pick.integers(space.d))
            out.append(("arm", {**base, "include": [i], "hints": (action,) if action[i] else ()}))
        for _ in range(-(-pairs // updates) if k < pairs else 0):
            i, j = together[int(pick.integers(len(together)))]
            hints = (action,) if action[i] and action[j] else ()
            out.append(("pair", {**base, "include": [i, j], "hints": hints}))
    return space, out


def large_queries(family: str, fs: list[float], n: int, sign: int = 1) -> tuple[cm.ActionSpace, list[tuple[str, dict]]]:
    """The queries of ``bench/norm_large.py`` (its seeds) of ``sign`` on the first family named like ``family``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from norm_large import query_maker, spaces

    for fam, (label, space) in enumerate(spaces(False).items()):
        if family in label:
            out = []
            for f in fs:
                make = query_maker(space, f, sign, np.random.default_rng([fam, round(f * 1000), sign + 1]))
                out += [(f"f={f:g}", make(k)) for k in range(n)]
            return space, out
    raise SystemExit(f"no family of bench/norm_large.py is named like {family!r}")


def _together(space: cm.ActionSpace) -> list[tuple[int, int]]:
    """Pairs of arms that some action holds together (for matchings: edges with no common end)."""
    labels = space.arms
    return [
        (i, j)
        for i in range(space.d)
        for j in range(i + 1, space.d)
        if not set(np.ravel(labels[i]).tolist()) & set(np.ravel(labels[j]).tolist())
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=6, help="unrestricted queries (AROQ-C updates)")
    parser.add_argument("--arms", type=int, default=6, help="arm-restricted queries")
    parser.add_argument("--pairs", type=int, default=6, help="pair-restricted queries")
    parser.add_argument("--variants", default="before,new", help=f"comma-separated, of {sorted(VARIANTS)}")
    parser.add_argument("--backends", default="highs,gurobi", help="comma-separated backends")
    parser.add_argument("--time-limit", type=float, default=20.0, help="seconds per query (other backends)")
    parser.add_argument("--large", default="", help="instead: bench/norm_large.py's family with this name")
    parser.add_argument("--f", default="0.3,1", help="--large: comma-separated values of f")
    parser.add_argument("--queries", type=int, default=3, help="--large: queries per f")
    parser.add_argument("--sign", type=int, default=1, choices=(1, -1), help="--large: the queries' sign")
    args = parser.parse_args(argv)
    names = [v for v in args.variants.split(",") if v]
    unknown = sorted(set(names) - set(VARIANTS))
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; choose from {sorted(VARIANTS)}")
    started = time.perf_counter()
    if args.large:
        space, queries = large_queries(args.large, [float(x) for x in args.f.split(",")], args.queries, args.sign)
    else:
        space, queries = crew_queries(args.updates, args.arms, args.pairs)
    print(f"{len(queries)} queries on {space!r} in {time.perf_counter() - started:.0f} s", flush=True)
    backends = [b for b in args.backends.split(",") if b and b in cm.available_backends()]
    contenders: list[tuple[str, cm.Oracle, str | None]] = []
    if "highs" in backends:
        limit = args.time_limit if args.large else None  # (the crew's queries: exact, however long)
        made = [(v, cm.make_oracle(space, "highs", time_limit=limit, tuning=VARIANTS[v])) for v in names]
        contenders += [(f"highs:{v}", oracle, v) for v, oracle in made]
    contenders += [(b, cm.make_oracle(space, b, time_limit=args.time_limit), None) for b in backends if b != "highs"]
    times: dict[str, dict[str, list[tuple[float, bool]]]] = {}
    for n, (kind, q) in enumerate(queries):
        values = {}
        for label, oracle, _ in contenders:
            start = time.perf_counter()
            try:
                action = oracle.argmax_norm(**q)
                took, stopped = time.perf_counter() - start, False
                values[label] = norm_objective(q["mu"], q["M"], q["f"], q["sign"], action)
            except OracleError:
                took, stopped = time.perf_counter() - start, True
            times.setdefault(kind, {}).setdefault(label, []).append((took, stopped))
        solved = list(values.values())
        line = " ".join(f"{label} {times[kind][label][-1][0]:.3f}" for label, _, _ in contenders)
        print(f"  {n:3d} {kind:4} {line}", flush=True)
        if solved and max(solved) - min(solved) > 1e-9 * (1 + abs(max(solved))):
            print(f"  !! values disagree: {values}", flush=True)
    for _, oracle, _ in contenders:
        oracle.close()
    labels = [label for label, _, _ in contenders]
    print("\n| kind | n | " + " | ".join(labels) + " | " + " | ".join(f"{x} / {labels[0]}" for x in labels[1:]) + " |")
    print("|" + "---|" * (2 * len(labels) + 1))
    for kind, per in times.items():
        cells = " | ".join(_cell(per[label]) for label in labels)
        ratios = " | ".join(_ratio(per[label], per[labels[0]]) for label in labels[1:])
        print(f"| {kind} | {len(per[labels[0]])} | {cells} | {ratios} |")


def _cell(entries: list[tuple[float, bool]]) -> str:
    secs = [t for t, _ in entries]
    stopped = sum(s for _, s in entries)
    return f"{statistics.median(secs):.3f} / {max(secs):.3f}" + (f" ({stopped}*)" if stopped else "")


def _ratio(ours: list[tuple[float, bool]], ref: list[tuple[float, bool]]) -> str:
    return f"{statistics.median(t for t, _ in ours) / statistics.median(t for t, _ in ref):.2f}"


if __name__ == "__main__":
    main()
