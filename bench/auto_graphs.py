"""Does ``auto`` keep within 2x of the fastest exact backend on the graph families? Side by side, one run.

Run: ``.venv/bin/python bench/auto_graphs.py [--quick] [--families SUBSTRING] [--queries N] [--repeats R]``

The families of ``bench/graphs_large.py`` with and without side rows (trees and forests with
``forbid_pairs`` or a knapsack row, longest and shortest s-t paths, hop limits, digraphs) and the
news space (cardinality, a group limit, conflicts), and small spaces with rules of every family (the ads and
routing problems of issue 39; measure these with ``--families small --queries 400``, a CUCB run's count).
``--quick`` uses small sizes (3x3 to 5x5 grids),
the default the bench's sizes (20x20 trees, 10x10 and 17x17 path grids, 6x6 digraphs). For each family,
``auto`` and every installed exact backend build a fresh oracle and answer the same ``N`` queries (first
query and model building included: what a user of ``auto`` pays), in interleaved repeats, best of ``R``;
a backend that refuses the space, declines a query or stops at its time limit (``--limit`` seconds per
solve) is shown as ``-``. Printed per family: the seconds per backend, the backend ``auto`` routed to,
``auto / fastest`` (target: at most 2x) and whether every backend's answers agree in value.

This measurement was a test (``tests/oracles/core/test_auto.py``, the bench sizes under ``slow``: cases of
134 s, 308 s and over 18 CPU-minutes); the test now checks only what ``auto`` picks. The figures:
``docs/performance.md``, "Oracle core and backends".
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cmab_milp as cm
from cmab_milp.oracles.core.base import OracleError, UnsupportedQuery
from cmab_milp.oracles.core.registry import capabilities

EXACT = [b for b in ("highs", "scip", "ortools", "enumerate", "combinatorial") if b in cm.available_backends()]


def grid(n: int) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, n))


def hop_limited(n: int, hops: int, directed: bool = False) -> cm.ActionSpace:
    g = grid(n).to_directed() if directed else grid(n)
    space = cm.STPaths(g, 0, n * n - 1)
    return space.with_constraint(np.ones(space.d), "<=", hops)


def news() -> cm.ActionSpace:
    """The news space: 5 of 30 articles, at most 2 of a topic, conflicting pairs."""
    space = cm.Cardinality(30, 5, exact=True).with_group(list(range(10)), at_most=2)
    return space.with_conflicts([(i, i + 1) for i in range(10, 29, 2)])


def rcsp(n: int, directed: bool) -> cm.ActionSpace:
    """s-t paths of an n x n grid under a resource (knapsack) row."""
    g = grid(n)
    r = np.random.default_rng(1).uniform(0.5, 1.5, g.number_of_edges())
    space = cm.STPaths(g.to_directed() if directed else g, 0, n * n - 1)
    index = {e: k for k, e in enumerate(g.edges())}
    cost = np.array([r[index[(u, v)] if (u, v) in index else index[(v, u)]] for u, v in space.arms])
    return space.with_constraint(cost, "<=", 0.75 * (2 * n - 2) + 0.25 * cost.sum() / len(cost) * (2 * n - 2))


def conflicting_pairs(space: cm.ActionSpace, rng: np.random.Generator, k: int = 3) -> list[tuple[int, int]]:
    """``k`` pairs of arms sharing a node (so that ``forbid_pairs`` binds)."""
    pairs: list[tuple[int, int]] = []
    while len(pairs) < k:
        i, j = sorted(rng.choice(space.d, 2, replace=False).tolist())
        if set(space.arms[i]) & set(space.arms[j]):
            pairs.append((i, j))
    return pairs


def ads() -> cm.ActionSpace:
    """12 ads in 4 slots (matchings of K(12, 4)), ads 0 and 1 exclusive, a budget: 7,669 actions (issue 39)."""
    space = cm.Matchings(nx.complete_bipartite_graph(12, 4))
    exclusive = [1.0 if ad in (0, 1) else 0.0 for ad, _ in space.arms]
    price = [1.0 + ad for ad, _ in space.arms]
    return space.with_constraint(exclusive, "<=", 1).with_budget(price, 23)


def routing() -> cm.ActionSpace:
    """s-t paths of a 20-node, 35-link network, at most 6 hops, link (0, 15) excluded: 13 paths (issue 39)."""
    space = cm.STPaths(nx.gnm_random_graph(20, 35, seed=25), 0, 19).with_constraint(np.ones(35), "<=", 6)
    return space.with_constraint({(0, 15): 1.0}, "==", 0)


def small_constrained() -> dict[str, Callable[[], cm.ActionSpace]]:
    """Small spaces with rules, one per family (the same at every size): enumeration should win on each."""

    def uniform(n: int) -> np.ndarray:  # each build draws the same numbers
        return np.random.default_rng(3).uniform(0.5, 1.5, n)

    return {
        "small: ads (matchings + conflict row + budget)": ads,
        "small: routing (paths, hop limit, one link excluded)": routing,
        "small: spanning trees 3x4 + conflicts + budget": lambda: (
            cm.SpanningTrees(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 4)))
            .with_conflicts([(0, 1), (4, 9)])
            .with_budget(uniform(17), 10.0)
        ),
        "small: forests of K5 + conflicts": lambda: cm.GraphicMatroid(nx.complete_graph(5)).with_conflicts(
            [(0, 9), (2, 5)]
        ),
        "small: partition matroid + conflicts + budget": lambda: (
            cm.PartitionMatroid([list(range(k, k + 5)) for k in range(0, 20, 5)], [2, 2, 2, 2])
            .with_conflicts([(0, 5), (6, 11)])
            .with_budget(uniform(20), 5.0)
        ),
        "small: perfect matchings of K8 + conflicts": lambda: cm.Matchings(
            nx.complete_graph(8), perfect=True
        ).with_conflicts([(0, 27)]),
        "small: cardinality + a side row of mixed signs": lambda: cm.Cardinality(16, 3).with_constraint(
            np.random.default_rng(3).normal(size=16), "<=", 0.5
        ),
    }


Family = tuple[Callable[[], cm.ActionSpace], Callable[[cm.ActionSpace, np.random.Generator], dict]]


def families(big: bool) -> dict[str, Family]:
    """name -> (space builder, query maker(space, rng)); small unless ``big``."""
    tree, path, rc, di = (20, 10, 17, 6) if big else (3, 3, 5, 3)

    def normal(space, rng):
        return {"weights": rng.normal(size=space.d)}

    def restricted(space, rng):
        return {"weights": rng.normal(size=space.d), "forbid_pairs": conflicting_pairs(space, rng)}

    def longest(space, rng):
        return {"weights": rng.uniform(0.1, 1.0, space.d)}

    def shortest(space, rng):
        return {"weights": -rng.uniform(0.1, 1.0, space.d), "forbid_pairs": conflicting_pairs(space, rng)}

    knapsack = np.random.default_rng(2).uniform(0.5, 1.5, 2 * tree * (tree - 1))
    return {
        "spanning trees + forbid_pairs": (lambda: cm.SpanningTrees(grid(tree)), restricted),
        "forests + forbid_pairs": (lambda: cm.GraphicMatroid(grid(tree)), restricted),
        "spanning trees + knapsack": (
            lambda: cm.SpanningTrees(grid(tree)).with_constraint(knapsack, "<=", 0.9 * (tree * tree - 1)),
            normal,
        ),
        "longest paths": (lambda: cm.STPaths(grid(path), 0, path * path - 1), longest),
        "longest paths + hop limit": (lambda: hop_limited(path, 6 * path if big else 6), longest),
        "longest paths, digraph": (lambda: cm.STPaths(grid(di).to_directed(), 0, di * di - 1), longest),
        "longest paths, digraph + hop limit": (lambda: hop_limited(di, 2 * di + 2, directed=True), longest),
        "shortest paths + forbid_pairs": (lambda: cm.STPaths(grid(rc), 0, rc * rc - 1), shortest),
        "shortest paths + forbid_pairs + knapsack": (lambda: rcsp(rc, False), shortest),
        "shortest paths, digraph + forbid_pairs + knapsack": (lambda: rcsp(rc, True), shortest),
        "news (cardinality + group + conflicts)": (news, normal),
        **{name: (build, longest) for name, build in small_constrained().items()},
    }


def run(backend: str, family: Family, n: int, limit: float) -> tuple[float, list[float], str]:
    """(seconds to build and answer ``n`` queries, their values, auto's main route); ``inf`` when it cannot."""
    make_space, make_query = family
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    values = []
    try:
        space = make_space()
        options = {"time_limit": limit} if capabilities(backend).time_limit else {}
        oracle = cm.make_oracle(space, backend, **options)
        for _ in range(n):
            q = make_query(space, rng)
            a = oracle.argmax(**q)
            values.append(-np.inf if a is None else float(q["weights"] @ a))
    except (ValueError, UnsupportedQuery, OracleError):  # refused, declined, stopped, too many actions
        return np.inf, [], ""
    took = time.perf_counter() - start
    route = oracle.routes.most_common(1)[0][0] if backend == "auto" and oracle.routes else ""
    return took, values, route


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (3x3 to 5x5 grids)")
    parser.add_argument("--families", default="", help="only the families whose name contains this")
    parser.add_argument("--queries", type=int, default=3, help="queries per oracle (default 3)")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved repeats, best kept (default 2)")
    parser.add_argument("--limit", type=float, default=60.0, help="seconds per solve (default 60)")
    args = parser.parse_args()
    contenders = ["auto", *EXACT]
    print(f"exact backends installed: {', '.join(EXACT)}; {args.queries} queries, best of {args.repeats}")
    print("| family | " + " | ".join(contenders) + " | auto used | auto / fastest | answers agree |")
    print("|---" * (len(contenders) + 4) + "|")
    for name, family in families(not args.quick).items():
        if args.families not in name:
            continue
        best: dict[str, float] = {}
        answers: dict[str, list[float]] = {}
        route = ""
        for _ in range(args.repeats):  # interleaved: the contenders of one family share the machine's state
            for backend in contenders:
                took, values, used = run(backend, family, args.queries, args.limit)
                best[backend] = min(best.get(backend, np.inf), took)
                if values:
                    answers[backend] = values
                route = used or route
        fastest = min(best[b] for b in EXACT)
        agree = all(np.allclose(v, answers.get("auto", v), rtol=1e-9, atol=1e-9) for v in answers.values())
        cells = [f"{best[b]:.3f}" if np.isfinite(best[b]) else "-" for b in contenders]
        ratio = best["auto"] / fastest if np.isfinite(best["auto"]) and fastest > 0 else np.inf
        print(f"| {name} | " + " | ".join(cells) + f" | {route or '-'} | {ratio:.2f} | {'yes' if agree else 'NO'} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
