"""highs vs gurobi vs ortools, side by side in one run: per-query medians, maxima and ratios to Gurobi.

Run: ``.venv/bin/python bench/extra_solvers.py [--queries 5] [--norm-queries 1] [--time-limit 60]``
(needs ``pip install cmab_milp[gurobi,ortools]``; a backend not installed is left out).

Linear families (highs, gurobi, ortools): cardinality d=200, a partition matroid (10 blocks of
20, at most 3 each) and spanning trees of an 8x8 grid, each with a knapsack row, longest
simple s-t paths (positive weights) on 8x8 and 10x10 grids, spanning trees of a 6x6 grid with
``forbid_pairs``. Norm families (highs, gurobi; CP-SAT declares none): Cardinality(100, 10)
and the matchings of K(10, 12), f = 0.3 and 1.0, both signs. Every query is asked of each
backend in turn (interleaved: this machine is shared), with a time limit per query; a query
stopped by it counts as the limit and is marked. Answers are compared by value (each backend
breaks ties its own way).
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

import cmab_milp as cm
from cmab_milp.oracles.core.base import OracleError
from cmab_milp.oracles.core.queries import norm_objective


def _grid(n: int) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, n))


def linear_families(rng: np.random.Generator) -> dict[str, tuple[cm.ActionSpace, Callable[[], dict]]]:
    knap = cm.Cardinality(200, 20).with_constraint(rng.uniform(0.5, 1.5, 200), "<=", 12.0)
    trees = cm.SpanningTrees(_grid(6))
    edges = [tuple(e) for e in trees.arms]

    def tree_query() -> dict:
        pairs = []
        while len(pairs) < 4:  # pairs of edges sharing a node: the restriction binds
            i, j = sorted(rng.choice(trees.d, 2, replace=False).tolist())
            if set(edges[i]) & set(edges[j]):
                pairs.append((i, j))
        return {"weights": rng.normal(size=trees.d), "forbid_pairs": pairs}

    blocks = [list(range(k * 20, (k + 1) * 20)) for k in range(10)]
    part = cm.PartitionMatroid(blocks, [3] * 10).with_constraint(rng.uniform(0.5, 1.5, 200), "<=", 12.0)
    grid8 = cm.SpanningTrees(_grid(8))
    trees_knap = grid8.with_constraint(rng.uniform(0.5, 1.5, grid8.d), "<=", 0.9 * 63)
    out = {
        "cardinality d=200 m=20 + knapsack": (knap, lambda: {"weights": rng.normal(size=200)}),
        "partition 10x20 cap 3 + knapsack": (part, lambda: {"weights": rng.normal(size=200)}),
        "spanning trees 8x8 + knapsack": (trees_knap, lambda: {"weights": rng.normal(size=grid8.d)}),
        "spanning trees 6x6 + forbid_pairs": (trees, tree_query),
    }
    for n in (8, 10):
        space = cm.STPaths(_grid(n), 0, n * n - 1)
        out[f"longest s-t paths {n}x{n} grid"] = (space, lambda s=space: {"weights": rng.uniform(0.1, 1.0, s.d)})
    return out


def norm_families(rng: np.random.Generator) -> dict[str, tuple[cm.ActionSpace, Callable[[], dict]]]:
    out = {}
    spaces = {
        "Cardinality(100, 10)": cm.Cardinality(100, 10),
        "Matchings K(10,12)": cm.Matchings(nx.complete_bipartite_graph(10, 12)),
    }
    for label, space in spaces.items():
        for f in (0.3, 1.0):
            for sign in (1, -1):

                def make(space=space, f=f, sign=sign) -> dict:
                    d = space.d
                    a = rng.normal(size=(d, d))
                    return {"mu": rng.uniform(0, 1, d), "M": a @ a.T / d + 0.1 * np.eye(d), "f": f, "sign": sign}

                out[f"norm {label} f={f} sign={sign:+d}"] = (space, make)
    return out


def _value(kind: str, q: dict, action: np.ndarray | None) -> float:
    if action is None:
        return -np.inf
    if kind == "linear":
        return float(q["weights"] @ action)
    return norm_objective(q["mu"], q["M"], q["f"], q["sign"], action)


def run_family(kind: str, space, make, backends: list[str], n: int, limit: float) -> dict[str, list]:
    oracles = {b: cm.make_oracle(space, b, time_limit=limit) for b in backends}
    times: dict[str, list] = {b: [] for b in backends}
    for _ in range(n):
        q = make()
        values = {}
        for b, oracle in oracles.items():
            start = time.perf_counter()
            try:
                answer = oracle.argmax(**q) if kind == "linear" else oracle.argmax_norm(**q)
                times[b].append((time.perf_counter() - start, ""))
                values[b] = _value(kind, q, answer)
            except OracleError:
                times[b].append((time.perf_counter() - start, "stopped"))
        solved = list(values.values())
        if solved and max(solved) - min(solved) > 1e-6 * (1 + abs(max(solved))):
            print(f"  !! values disagree: {values}", flush=True)
    for oracle in oracles.values():
        oracle.close()
    return times


def _cell(entries: list) -> str:
    secs = [t for t, _ in entries]
    stopped = sum(1 for _, s in entries if s)
    med = statistics.median(secs)
    text = f"{med * 1e3:9.1f} / {max(secs) * 1e3:9.1f}"
    return text + (f" ({stopped} stopped)" if stopped else "")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=5, help="linear queries per family")
    parser.add_argument("--norm-queries", type=int, default=1, help="norm queries per family")
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per query and backend")
    parser.add_argument("--only", default="", help="run only families whose name contains this")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    have = [b for b in ("highs", "gurobi", "ortools") if b in cm.available_backends()]
    jobs = [("linear", name, *fam, have, args.queries) for name, fam in linear_families(rng).items()]
    norm_backends = [b for b in have if cm.oracles.core.registry.capabilities(b).norm]
    jobs += [("norm", name, *fam, norm_backends, args.norm_queries) for name, fam in norm_families(rng).items()]
    rows = []
    print(f"ms per query, median / max; time limit {args.time_limit:g} s; backends {have}", flush=True)
    for kind, name, space, make, backends, n in jobs:
        if args.only not in name or n < 1:
            continue
        times = run_family(kind, space, make, backends, n, args.time_limit)
        cells = {b: _cell(t) for b, t in times.items()}
        meds = {b: statistics.median(t for t, _ in times[b]) for b in backends}
        ratios = {b: meds[b] / meds["gurobi"] for b in backends if "gurobi" in meds and b != "gurobi"}
        line = f"{name:42s} (d={space.d:3d}, n={n}) " + " | ".join(f"{b}: {c}" for b, c in cells.items())
        line += "   ratio to gurobi: " + ", ".join(f"{b} {r:.2f}x" for b, r in ratios.items())
        print(line, flush=True)
        rows.append(line)


if __name__ == "__main__":
    main()
