"""Norm queries at d = 100 to 120: ours (highs) vs Gurobi's and SCIP's nonconvex MIQCPs, side by side.

Run: ``.venv/bin/python bench/norm_large.py [--quick] [--queries 3] [--time-limit 20] [--only TEXT,TEXT]
[--clock cpu|wall] [--per-query]`` (a backend not installed is left out; ``--backends highs,gurobi`` picks some;
``scip-resolve`` is SCIP re-solving per lazy-cut round, as before the one tree). Issue 43 item 3's run:
``--only "Cardinality,K(10,12),Trees 8x8,s-t paths" --backends highs,gurobi --f 0.1,0.3,1 --per-query``.

Seconds are process CPU time unless ``--clock wall`` (the machine is shared; the time limit stays wall-clock).
Besides the table per cell it prints, with ``--per-query``, each query with the norm method that answered it
(``highs``: its MILPs, nodes, linear queries) and, at the end, per family over all its queries: ``highs``'s
median, its slowest query (which, how solved, Gurobi's time) and the worst ratio ours / Gurobi over the queries
Gurobi finished, with how many exceed 1.5x.

Families: Cardinality(100, 10), matchings of K(10, 12) (d=120), matchings of
K15 (d=105), spanning trees of a 6x6 grid (d=60) and an 8x8 grid (d=112), s-t paths on an
8x8 grid (d=112), forests of an 8x8 grid (d=112); f in 0.1, 0.3, 1, 3; both signs.
``M = A A^T / d + 0.1 I`` (A Gaussian), ``mu ~ U[0, 1]``; every other query has restrictions (an arm
included, two excluded, two forbidden pairs). Each query is asked of every backend in turn (interleaved: the machine is
shared), with a time limit per query; a stopped query counts as the limit and is marked
``*``. Answers are compared by value. Prints a markdown table: median / max seconds per
backend and the ratio of our median to Gurobi's (on queries both finished).
``--quick``: two families, f in 0.3 and 1, two queries each.

The methods' own measurements and the ideas tried (per family): ``docs/performance.md``, section "Norm queries";
today's figures for the issue's four families: its section "Norm index at d = 100-150".

Measured, sign -1 (shared 2-core machine, one run each, ``--sign -1 --queries 2 --time-limit 10
--backends highs,gurobi,scip``, the three backends interleaved per query): median / max s; before =
the secant MILPs (commit 03cb608), after = :mod:`cmab_milp.oracles.norm.branch.minus` (branch and
bound on the combinatorial linear oracle, convex-hull bounds) where it applies, i.e. all but the
s-t paths (cyclic graph: still the secant MILPs); ratio = after / Gurobi's median on the queries
both finished. ``*``: stopped at the limit. Gurobi's paths model exceeds its size-limited licence
(an immediate error, counted as stopped). SCIP overran the 10 s limit (up to 110 s)::

    family               f    before          after           gurobi          scip                ratio
    Cardinality(100,10)  0.1  0.28 / 0.33     0.06 / 0.09     0.12 / 0.13     8.20 / 9.35         0.47
    Cardinality(100,10)  0.3  0.62 / 0.65     0.05 / 0.05     0.21 / 0.23     10.17 / 10.19 (2*)  0.23
    Cardinality(100,10)  1    10.02 / 10.03 (2*) 0.47 / 0.71     10.05 / 10.05 (2*) 10.22 / 10.27 (2*)  -
    Cardinality(100,10)  3    10.02 / 10.03 (2*) 10.00 / 10.01 (2*) 10.01 / 10.01 (2*) 10.15 / 10.16 (2*)  -
    Matchings K(10,12)   0.1  0.33 / 0.33     0.05 / 0.06     0.09 / 0.10     2.59 / 3.95         0.53
    Matchings K(10,12)   0.3  1.13 / 1.48     0.04 / 0.04     0.17 / 0.23     10.29 / 10.32 (2*)  0.22
    Matchings K(10,12)   1    10.02 / 10.02 (2*) 0.41 / 0.42     10.02 / 10.03 (2*) 10.27 / 10.30 (2*)  -
    Matchings K(10,12)   3    10.02 / 10.04 (2*) 9.86 / 10.00 (1*) 10.02 / 10.03 (2*) 10.22 / 10.25 (2*)  -
    Matchings K15        0.1  0.36 / 0.40     0.09 / 0.11     0.10 / 0.10     2.17 / 2.82         0.98
    Matchings K15        0.3  0.97 / 1.16     0.27 / 0.32     0.18 / 0.18     7.11 / 10.19 (1*)   1.50
    Matchings K15        1    10.02 / 10.03 (2*) 3.60 / 5.23     7.53 / 10.03 (1*) 10.19 / 10.22 (2*)  0.39
    Matchings K15        3    10.04 / 10.04 (2*) 9.61 / 10.01 (1*) 10.03 / 10.03 (2*) 10.18 / 10.18 (2*)  -
    Trees 6x6 grid       0.1  0.21 / 0.23     0.02 / 0.02     0.12 / 0.22     56.28 / 109.66 (1*) 0.15
    Trees 6x6 grid       0.3  0.42 / 0.43     0.02 / 0.03     0.07 / 0.11     22.14 / 28.14       0.29
    Trees 6x6 grid       1    8.23 / 9.60     0.03 / 0.03     0.71 / 1.10     10.02 / 10.02 (2*)  0.04
    Trees 6x6 grid       3    10.01 / 10.01 (2*) 1.32 / 1.98     10.01 / 10.01 (2*) 10.02 / 10.02 (2*)  -
    Trees 8x8 grid       0.1  1.63 / 2.16     0.05 / 0.05     0.13 / 0.14     27.17 / 32.17 (2*)  0.36
    Trees 8x8 grid       0.3  0.65 / 0.90     0.04 / 0.05     0.20 / 0.27     10.17 / 10.17 (2*)  0.21
    Trees 8x8 grid       1    10.04 / 10.04 (2*) 0.43 / 0.54     10.03 / 10.04 (2*) 10.23 / 10.26 (2*)  -
    Trees 8x8 grid       3    10.04 / 10.06 (2*) 10.00 / 10.00 (2*) 10.04 / 10.04 (2*) 10.20 / 10.21 (2*)  -
    s-t paths 8x8 grid   0.1  3.92 / 4.32     2.15 / 2.68     0.02 / 0.03 (2*) 13.00 / 15.72 (2*)  -
    s-t paths 8x8 grid   0.3  8.10 / 10.03 (1*) 7.49 / 10.01 (1*) 0.03 / 0.05 (2*) 10.27 / 10.30 (2*)  -
    s-t paths 8x8 grid   1    10.02 / 10.02 (2*) 10.04 / 10.06 (2*) 0.02 / 0.03 (2*) 10.21 / 10.23 (2*)  -
    s-t paths 8x8 grid   3    10.02 / 10.02 (2*) 10.01 / 10.01 (2*) 0.02 / 0.04 (2*) 10.24 / 10.25 (2*)  -

Every query answered by two or three of them got the same value (within 1e-6). Before, ours / Gurobi
at f = 0.1 and 0.3 was 0.8-9.7; after, 0.04-0.53 except general matchings (0.98 and 1.50: the
blossom algorithm's ~1 ms per linear query). At f = 3 Cardinality(100,10), K(10,12) (one of two) and
trees 8x8 stop at 10 s (and at 40 s, tried), as Gurobi does: the convex relaxation is far from the
optimum there (Cardinality, f = 3: 4.03 against 1.25).

Later (same queries, s; session start a36e112 -> main, each query in two processes alternately):
the diagonal shift of the sign -1 bound (``relaxation_matrix``) takes K(10,12) f = 3 11.1 -> 5.7,
trees 6x6 f = 3 0.46 / 1.44 -> 0.21 / 0.80, trees 8x8 f = 1 0.41 / 0.16 -> 0.25 / 0.09. Sign +1: the
concave branch and bound on trees (``plus_branch``) takes trees 6x6 f = 1 15.3 / 11.6 -> 0.74 / 0.34
and trees 8x8 f = 1 stopped at 30 s (both) -> 0.52 / 0.75; Glover's rows from the linear oracle
(``lifting.exact_row_bounds``) take K(10,12) f = 1 3.05 / 2.92 -> 1.67 / 1.83; Cardinality(100,10)
f = 1 is unchanged (0.55 / 0.71). With Gurobi (``--sign 1 --backends highs,gurobi --queries 2
--time-limit 20``, median / max): trees 6x6 f = 0.1 / 0.3 / 1: 0.07 / 0.04 / 1.00 s (Gurobi 0.10 /
0.21 / stopped), trees 8x8: 0.08 / 0.17 / 2.60 (Gurobi 0.62 / 3.82 / stopped), forests 8x8: 0.21 /
0.33 / 8.78 (Gurobi 0.24 / 1.99 / stopped), K(10,12): 0.09 / 0.23 / 2.13 (Gurobi 0.05 / 0.26 /
stopped); f = 3 stops on both everywhere but one forest query.

Later still (``--sign 1 --backends highs,gurobi --queries 3 --time-limit 10 --f 0.1,0.3,1``; the concave
branch with size and conflict terms now serves bipartite matchings too, BLAS on one thread), median /
max s, ours (Gurobi): K(10,12) 0.05 / 0.06 (0.04 / 0.08), 0.08 / 0.08 (0.33 / 0.49), 0.37 / 0.70
(stopped); trees 6x6 0.02 / 0.05 (0.04 / 0.06), 0.02 / 0.04 (0.10 / 0.12), 0.16 / 0.30 (stopped);
trees 8x8 0.03 / 0.03 (0.19 / 0.26), 0.03 / 0.07 (1.70 / 3.64), 0.43 / 0.63 (stopped); forests 8x8
0.03 / 0.07 (0.09 / 0.14), 0.10 / 0.11 (1.97 / 7.62), 4.11 / 8.55 (stopped).

Sign +1 on the s-t paths (``bench/norm_crew.py --large "s-t paths" --f 0.1,0.3,1,3 --variants no-plus-paths,new
--backends highs --time-limit 10``: these queries, interleaved), median / max s, the outer approximation ->
:mod:`cmab_milp.oracles.norm.paths.plus`: f = 0.1 0.95 / 1.53 -> 0.05 / 0.16; f = 0.3 stopped (2 of 3) -> 0.18 /
0.43; f = 1 and 3 stopped either way (f = 1, the one query that finishes in 20 s: 2,087 nodes).

End of that session (``--backends highs,gurobi --queries 3 --time-limit 10``, both signs, f = 0.1 to 3; general
matchings now bounded over the fractional matching polytope, paths with the star terms), median / max s, ours
(Gurobi): at f <= 1 every family answers in at most 0.89 s median and 1.13 s max (Gurobi stops at 10 s on all at
f = 1) except s-t paths at f = 1 (sign +1 8.85 / stopped once, sign -1 2.27 / 2.39; Gurobi refuses the model). K15:
sign +1 f = 1 0.89 / 1.00, f = 3 2.69 / 6.51; sign -1 f = 1 0.18 / 0.34, f = 3 0.46 / 1.52. Ours / Gurobi on the
queries both finish: 0.02-1.15. At f = 3 Cardinality, trees 8x8, forests and paths stop (both signs), K(10, 12)
3.68 (+1) and 9.28 (-1) with one stop each, trees 6x6 3.92 / 6.52 (+1) and 0.19 / 0.83 (-1); Gurobi stops on all.
Then Kruskal prepared per node with an inlined union-find (``combinatorial.prepare_kruskal``, the same actions):
trees 6x6 f = 3 sign +1 3.01 / 4.09 / 6.51 -> 1.86 / 2.41 / 4.03 s, trees and forests 8x8 at f = 1 1.4-1.6x faster.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cmab_milp as cm
from cmab_milp.oracles.core.base import OracleError
from cmab_milp.oracles.core.queries import norm_objective


def _grid(n: int) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, n))


def spaces(quick: bool) -> dict[str, cm.ActionSpace]:
    out = {
        "Cardinality(100,10)": cm.Cardinality(100, 10),
        "Matchings K(10,12)": cm.Matchings(nx.complete_bipartite_graph(10, 12)),
    }
    if quick:
        return out
    out["Matchings K15"] = cm.Matchings(nx.complete_graph(15))
    out["Trees 6x6 grid"] = cm.SpanningTrees(_grid(6))
    out["Trees 8x8 grid"] = cm.SpanningTrees(_grid(8))
    out["s-t paths 8x8 grid"] = cm.STPaths(_grid(8), 0, 63)
    out["Forests 8x8 grid"] = cm.GraphicMatroid(_grid(8))  # last: the other families keep their seeds
    return out


def query_maker(space: cm.ActionSpace, f: float, sign: int, rng: np.random.Generator) -> Callable[[int], dict]:
    d = space.d

    def make(k: int) -> dict:
        a = rng.normal(size=(d, d))
        q = {"mu": rng.uniform(0, 1, d), "M": a @ a.T / d + 0.1 * np.eye(d), "f": f, "sign": sign}
        if k % 2:  # restrictions: the argmax of a random linear objective gives a feasible include
            arms = rng.permutation(d)
            q["include"] = [int(arms[0])]
            q["exclude"] = [int(arms[1]), int(arms[2])]
            q["forbid_pairs"] = [(int(arms[3]), int(arms[4])), (int(arms[5]), int(arms[6]))]
        return q

    return make


def _make(space: cm.ActionSpace, backend: str, limit: float) -> cm.Oracle:
    """``backend``'s oracle; ``scip-resolve``: SCIP re-solving per cut round (before the one tree)."""
    if backend == "scip-resolve":
        return cm.make_oracle(space, "scip", time_limit=limit, one_tree=False)
    return cm.make_oracle(space, backend, time_limit=limit)


@dataclass
class Timing:
    """One query on one backend: seconds (the chosen clock), whether it stopped, and (``highs``) how it was solved."""

    seconds: float
    stopped: bool
    how: str = ""


def _how(oracle: cm.Oracle) -> str:
    """The norm method that answered the last query on ``oracle`` and its counts (``highs`` only)."""
    stats = getattr(oracle, "last_norm_stats", None)
    if stats is None:
        return ""
    extra = ", ".join(f"{k}={v}" for k, v in sorted(stats.extra.items()) if isinstance(v, (int, float)))
    return f"{stats.method}: {stats.milp_solves} MILPs" + (f", {extra}" if extra else "")


def run_cell(
    space, make, backends: list[str], n: int, limit: float, clock: Callable[[], float] = time.process_time
) -> dict[str, list[Timing]]:
    """``n`` queries, each asked of every backend in turn; per backend its :class:`Timing` per query."""
    oracles = {b: _make(space, b, limit) for b in backends}
    times: dict[str, list[Timing]] = {b: [] for b in backends}
    for k in range(n):
        q = make(k)
        values = {}
        for b, oracle in oracles.items():
            start = clock()
            try:
                answer = oracle.argmax_norm(**q)
                times[b].append(Timing(clock() - start, False, _how(oracle)))
                values[b] = -np.inf if answer is None else norm_objective(q["mu"], q["M"], q["f"], q["sign"], answer)
            except OracleError:
                times[b].append(Timing(clock() - start, True, _how(oracle)))
        solved = list(values.values())
        if solved and max(solved) - min(solved) > 1e-6 * (1 + abs(max(solved))):
            print(f"  !! values disagree: {values}", flush=True)
    for oracle in oracles.values():
        oracle.close()
    return times


def _cell(entries: list[Timing]) -> str:
    secs = [t.seconds for t in entries]
    stopped = sum(t.stopped for t in entries)
    text = f"{statistics.median(secs):.2f} / {max(secs):.2f}"
    return text + (f" ({stopped}*)" if stopped else "")


def _ratio(ours: list[Timing], ref: list[Timing]) -> str:
    both = [(a.seconds, b.seconds) for a, b in zip(ours, ref, strict=True) if not a.stopped and not b.stopped]
    if not both:
        return "-"
    return f"{statistics.median(a for a, _ in both) / statistics.median(b for _, b in both):.2f}"


def summary(rows: list[tuple[str, str, Timing, Timing | None]], bound: float = 1.5) -> list[str]:
    """Per family, over all its queries: ours' median, the slowest query (which, how solved, Gurobi's time), the
    worst ratio ours / Gurobi over the queries Gurobi finished, and how many exceed ``bound``; markdown lines.

    ``rows``: (family, query label, ours, Gurobi's or ``None``).

    >>> rows = [("A", "f=1 +1 #0", Timing(2.0, False, "x"), Timing(1.0, False)),
    ...         ("A", "f=1 +1 #1", Timing(0.5, False), Timing(1.0, True))]
    >>> print("\\n".join(summary(rows)[2:]))
    | A | 2 | 1.25 | 2.00 f=1 +1 #0 (x; gurobi 1.00) | 2.00 f=1 +1 #0 | 1 |
    """
    out = [
        f"| family | queries | median | slowest (query; how; gurobi) | worst ours / gurobi | over {bound:g}x |",
        "|---|---|---|---|---|---|",
    ]
    for family in dict.fromkeys(r[0] for r in rows):
        mine = [r for r in rows if r[0] == family]
        median = statistics.median(r[2].seconds for r in mine)
        label, ours, ref = max(((r[1], r[2], r[3]) for r in mine), key=lambda r: r[1].seconds)
        star = "*" if ours.stopped else ""
        theirs = "" if ref is None else f"; gurobi {ref.seconds:.2f}{'*' if ref.stopped else ''}"
        slowest = f"{ours.seconds:.2f}{star} {label} ({ours.how}{theirs})"
        ratios = [(r[2].seconds / r[3].seconds, r[1]) for r in mine if r[3] is not None and not r[3].stopped]
        worst = max(ratios, default=None)
        worst_text = "-" if worst is None else f"{worst[0]:.2f} {worst[1]}"
        over = sum(ratio > bound for ratio, _ in ratios)
        out.append(f"| {family} | {len(mine)} | {median:.2f} | {slowest} | {worst_text} | {over} |")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two families, f in 0.3 and 1, two queries each")
    parser.add_argument("--queries", type=int, default=3, help="queries per family, f and sign")
    parser.add_argument("--time-limit", type=float, default=20.0, help="seconds per query and backend")
    parser.add_argument("--only", default="", help="comma-separated: run only families whose name contains one")
    parser.add_argument("--backends", default="highs,gurobi,scip", help="comma-separated backends")
    parser.add_argument("--f", default="", help="comma-separated values of f (default 0.1,0.3,1,3)")
    parser.add_argument("--sign", type=int, default=0, help="+1 or -1 only (default both)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="process CPU time (default) or wall")
    parser.add_argument("--per-query", action="store_true", help="also print every query: seconds and how solved")
    args = parser.parse_args(argv)
    have = cm.available_backends()
    backends = [b for b in args.backends.split(",") if b in have or (b == "scip-resolve" and "scip" in have)]
    fs = [float(x) for x in args.f.split(",")] if args.f else ([0.3, 1.0] if args.quick else [0.1, 0.3, 1.0, 3.0])
    n = 2 if args.quick else args.queries
    signs = [args.sign] if args.sign else [1, -1]
    ref = "gurobi" if "gurobi" in backends else None
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    only = [name for name in args.only.split(",") if name] or [""]
    print(f"{args.clock} seconds per query, median / max over {n}; limit {args.time_limit:g} s (* stopped)\n")
    head = "| family | d | f | sign | " + " | ".join(backends) + (" | ours / gurobi |" if ref else " |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1), flush=True)
    rows: list[tuple[str, str, Timing, Timing | None]] = []
    for fam, (label, space) in enumerate(spaces(args.quick).items()):
        if not any(name in label for name in only):
            continue
        for f in fs:
            for sign in signs:
                rng = np.random.default_rng([fam, round(f * 1000), sign + 1])  # the same queries every run
                times = run_cell(space, query_maker(space, f, sign, rng), backends, n, args.time_limit, clock)
                cells = " | ".join(_cell(times[b]) for b in backends)
                ratio = f" | {_ratio(times['highs'], times[ref])} |" if ref and "highs" in backends else " |"
                print(f"| {label} | {space.d} | {f:g} | {sign:+d} | {cells}{ratio}", flush=True)
                if "highs" in backends:
                    for k, ours in enumerate(times["highs"]):
                        theirs = times[ref][k] if ref else None
                        rows.append((label, f"f={f:g} {sign:+d} #{k}", ours, theirs))
                        if args.per_query:
                            other = "" if theirs is None else f" gurobi {theirs.seconds:.2f}{'*' * theirs.stopped}"
                            print(
                                f"    {label} f={f:g} {sign:+d} #{k}: {ours.seconds:.2f}{'*' * ours.stopped}"
                                f" ({ours.how}){other}",
                                flush=True,
                            )
    if rows:
        print("\nours (highs) per family, over every query above:\n")
        print("\n".join(summary(rows)), flush=True)


if __name__ == "__main__":
    main()
