"""Does ``auto`` stay within 2x of the fastest exact backend? Per-query medians, side by side.

Run: ``.venv/bin/python bench/auto_dispatch.py [--quick] [--slow]``

Cases: every family of ``bench/oracle.py`` (linear queries, UCB-like weights in
[0, 1]), the norm cases measured before (covariance-norm queries on a 10x4
bipartite matching space, spanning trees, s-t paths) and the cardinality norm
cases of ``bench/oracle.py``. Norm queries: ``M = A A^T / d + I``,
``mu ~ U[0, 1]``, ``f = 1``, both signs. Contenders: ``auto`` and every exact
backend that answers the case (``highs``, ``combinatorial``, ``enumerate``;
``scip`` and ``pulp:HiGHS`` with ``--slow``). Each is warmed up (models built,
actions enumerated; ``auto``'s first query on a fresh space is shown apart), then timed in interleaved
blocks; a backend slower than 1 s a query is timed on 2 queries. Printed: the
median per query, which backend ``auto`` used, and ``auto / fastest``
(target <= 2x). Figures: ``docs/performance.md``, "Oracle core and backends".
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from oracle import families, grid_dag  # bench/oracle.py: the same linear families

import cmab_milp as cm


def _grid(n: int, k: int) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, k))


def norm_families() -> dict[str, Callable[[], cm.ActionSpace]]:
    return {
        "bipartite matching 10x4": lambda: cm.Matchings(nx.complete_bipartite_graph(10, 4)),
        "spanning trees 3x4 grid": lambda: cm.SpanningTrees(_grid(3, 4)),
        "spanning trees 4x4 grid": lambda: cm.SpanningTrees(_grid(4, 4)),
        "s-t paths 5x5 grid cyclic": lambda: cm.STPaths(_grid(5, 5), 0, 24),
        "s-t paths 6x6 grid DAG": lambda: cm.STPaths(grid_dag(6), 0, 35),
        "cardinality d=10 m=3": lambda: cm.Cardinality(10, 3),
        "cardinality d=20 m=5": lambda: cm.Cardinality(20, 5),
    }


def contenders(space: cm.ActionSpace, kind: str, slow: bool) -> dict[str, cm.Oracle]:
    names = ["auto", "highs", "combinatorial", "enumerate"] + (["scip", "pulp:HiGHS"] if slow else [])
    out = {}
    for name in names:
        if name.split(":")[0] not in cm.available_backends():
            continue
        caps = cm.oracles.core.registry.capabilities(name)
        if kind == "norm" and not caps.norm:
            continue
        try:
            out[name] = cm.make_oracle(space, name)
        except ValueError:
            continue  # refused up front: combinatorial on an unfit space, enumeration past its cap
    return out


def bench_case(build: Callable[[], cm.ActionSpace], kind: str, sign: int, slow: bool, rounds: int, block: int) -> dict:
    space = build()
    d = space.d
    rng = np.random.default_rng(d)
    weights = rng.uniform(0, 1, (256, d))
    a = rng.normal(size=(d, d))
    M = a @ a.T / d + np.eye(d)

    def ask(oracle: cm.Oracle, k: int):
        if kind == "linear":
            return oracle.argmax(weights[k % len(weights)])
        return oracle.argmax_norm(weights[k % len(weights)], M, 1.0, sign)

    # auto's one-off cost (planning, counting actions by enumeration) on a space nobody enumerated yet
    start = time.perf_counter()
    ask(cm.make_oracle(build(), "auto"), 0)
    auto_setup = time.perf_counter() - start
    timed: dict[str, Callable[[int], object]] = {}
    setup: dict[str, float] = {}
    per_query: dict[str, float] = {}
    oracles = contenders(space, kind, slow)
    for name, oracle in oracles.items():
        start = time.perf_counter()
        try:
            ask(oracle, 0)
        except cm.UnsupportedQuery:
            continue
        setup[name] = time.perf_counter() - start
        start = time.perf_counter()
        ask(oracle, 1)
        per_query[name] = time.perf_counter() - start
        timed[name] = lambda k, o=oracle: ask(o, k)
    samples: dict[str, list[float]] = {name: [] for name in timed}
    for r in range(rounds):
        for name, fn in timed.items():
            n = block if per_query[name] < 0.05 else (3 if per_query[name] < 1.0 else 1)
            if r > 0 and per_query[name] >= 1.0:
                continue  # one timed query of a > 1 s backend is enough to know it loses
            for k in range(n):
                start = time.perf_counter()
                fn(2 + r * block + k)
                samples[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(v) for name, v in samples.items()}
    routes = dict(oracles["auto"].routes) if "auto" in oracles else {}
    return {"medians": medians, "setup": setup, "routes": routes, "auto_setup": auto_setup}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--slow", action="store_true", help="also time scip and pulp:HiGHS")
    args = parser.parse_args()
    rounds, block = (3, 10) if args.quick else (5, 30)
    cases = [(name, build, "linear", 1) for name, build in families().items()]
    cases += [(name, build, "norm", sign) for name, build in norm_families().items() for sign in (1, -1)]
    print(f"cmab_milp {cm.__version__}; per-query median in ms")
    print("(last column: auto's first query on a fresh space, with its planning and enumeration)\n")
    print(f"| {'case':34s} | {'auto route':14s} | {'auto':>9s} | {'fastest other':>22s} | {'ratio':>6s} | others")
    print("|" + "-" * 36 + "|" + "-" * 16 + "|" + "-" * 11 + "|" + "-" * 24 + "|" + "-" * 8 + "|-------")
    worst = 0.0
    for name, build, kind, sign in cases:
        result = bench_case(build, kind, sign, args.slow, rounds, block)
        med = result["medians"]
        if "auto" not in med:
            print(f"| {name:34s} | auto could not answer")
            continue
        others = {k: v for k, v in med.items() if k != "auto"}
        best = min(others, key=others.get)
        ratio = med["auto"] / min(med["auto"], others[best])
        worst = max(worst, ratio)
        label = f"{name} {kind}{'' if kind == 'linear' else f' {sign:+d}'}"
        route = "+".join(sorted(result["routes"], key=result["routes"].get, reverse=True))
        rest = ", ".join(f"{k} {1e3 * v:.3f}" for k, v in sorted(others.items(), key=lambda kv: kv[1]))
        print(
            f"| {label:34s} | {route:14s} | {1e3 * med['auto']:9.3f} | {best + ' ' + f'{1e3 * others[best]:.3f}':>22s} "
            f"| {ratio:5.2f}x | {rest}; auto first query {1e3 * result['auto_setup']:.0f} ms",
            flush=True,
        )
    print(f"\nworst auto / fastest exact = {worst:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
