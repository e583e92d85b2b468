"""Norm queries at d = 100 to 120: ours (highs) vs Gurobi's and SCIP's nonconvex MIQCPs, side by side.

Run: ``.venv/bin/python bench/norm_large.py [--quick] [--queries 3] [--time-limit 20] [--only TEXT]``
(a backend not installed is left out; ``--backends highs,gurobi`` picks some).

Families (issue 12): Cardinality(100, 10), matchings of K(10, 12) (d=120), matchings of
K15 (d=105), spanning trees of a 6x6 grid (d=60) and an 8x8 grid (d=112), s-t paths on an
8x8 grid (d=112); f in 0.1, 0.3, 1, 3; both signs. ``M = A A^T / d + 0.1 I`` (A Gaussian),
``mu ~ U[0, 1]``; every other query has restrictions (an arm included, two excluded, two
forbidden pairs). Each query is asked of every backend in turn (interleaved: the machine is
shared), with a time limit per query; a stopped query counts as the limit and is marked
``*``. Answers are compared by value. Prints a markdown table: median / max seconds per
backend and the ratio of our median to Gurobi's (on queries both finished).
``--quick``: two families, f in 0.3 and 1, two queries each.

Measured (shared 2-core machine, one run, ``--sign -1 --f 0.3,1 --queries 2 --time-limit 10
--backends highs,gurobi``), after the space's root cuts entered the norm model; median / max s,
ours / Gurobi's median (before, at f = 0.3: trees 6x6 18.8, trees 8x8 6.9, paths 8x8 8.8)::

    family               f    highs          gurobi         ratio
    Cardinality(100,10)  0.3  0.65 / 0.68    0.23 / 0.28    2.80
    Matchings K(10,12)   0.3  0.93 / 1.35    0.17 / 0.20    5.36
    Matchings K15        0.3  1.13 / 1.63    0.20 / 0.23    5.52
    Trees 6x6 grid       0.3  0.16 / 0.17    0.05 / 0.06    3.59
    Trees 8x8 grid       0.3  0.45 / 0.52    0.21 / 0.27    2.12
    s-t paths 8x8 grid   0.3  3.40 / 3.72    1.12 / 1.91    3.03
    Matchings K15        1    8.93 / 10 (1*) 7.23 / 10 (1*) 1.76
    Trees 6x6 grid       1    3.05 / 4.28    0.73 / 1.13    4.21
    s-t paths 8x8 grid   1    10 (2*)        4.65 / 7.37    -

At f = 1 Cardinality(100,10), K(10,12) and trees 8x8 stopped at 10 s on both.
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
from cmab_milp.oracles.base import OracleError, norm_objective


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


def run_cell(space, make, backends: list[str], n: int, limit: float) -> dict[str, list[tuple[float, bool]]]:
    oracles = {b: cm.make_oracle(space, b, time_limit=limit) for b in backends}
    times: dict[str, list[tuple[float, bool]]] = {b: [] for b in backends}
    for k in range(n):
        q = make(k)
        values = {}
        for b, oracle in oracles.items():
            start = time.perf_counter()
            try:
                answer = oracle.argmax_norm(**q)
                times[b].append((time.perf_counter() - start, False))
                values[b] = -np.inf if answer is None else norm_objective(q["mu"], q["M"], q["f"], q["sign"], answer)
            except OracleError:
                times[b].append((time.perf_counter() - start, True))
        solved = list(values.values())
        if solved and max(solved) - min(solved) > 1e-6 * (1 + abs(max(solved))):
            print(f"  !! values disagree: {values}", flush=True)
    for oracle in oracles.values():
        oracle.close()
    return times


def _cell(entries: list[tuple[float, bool]]) -> str:
    secs = [t for t, _ in entries]
    stopped = sum(s for _, s in entries)
    text = f"{statistics.median(secs):.2f} / {max(secs):.2f}"
    return text + (f" ({stopped}*)" if stopped else "")


def _ratio(ours: list[tuple[float, bool]], ref: list[tuple[float, bool]]) -> str:
    both = [(a, b) for (a, sa), (b, sb) in zip(ours, ref, strict=True) if not sa and not sb]
    if not both:
        return "-"
    return f"{statistics.median(a for a, _ in both) / statistics.median(b for _, b in both):.2f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two families, f in 0.3 and 1, two queries each")
    parser.add_argument("--queries", type=int, default=3, help="queries per family, f and sign")
    parser.add_argument("--time-limit", type=float, default=20.0, help="seconds per query and backend")
    parser.add_argument("--only", default="", help="run only families whose name contains this")
    parser.add_argument("--backends", default="highs,gurobi,scip", help="comma-separated backends")
    parser.add_argument("--f", default="", help="comma-separated values of f (default 0.1,0.3,1,3)")
    parser.add_argument("--sign", type=int, default=0, help="+1 or -1 only (default both)")
    args = parser.parse_args(argv)
    backends = [b for b in args.backends.split(",") if b in cm.available_backends()]
    fs = [float(x) for x in args.f.split(",")] if args.f else ([0.3, 1.0] if args.quick else [0.1, 0.3, 1.0, 3.0])
    n = 2 if args.quick else args.queries
    signs = [args.sign] if args.sign else [1, -1]
    ref = "gurobi" if "gurobi" in backends else None
    print(f"seconds per query, median / max over {n}; limit {args.time_limit:g} s (* stopped)\n")
    head = "| family | d | f | sign | " + " | ".join(backends) + (" | ours / gurobi |" if ref else " |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1), flush=True)
    for fam, (label, space) in enumerate(spaces(args.quick).items()):
        if args.only not in label:
            continue
        for f in fs:
            for sign in signs:
                rng = np.random.default_rng([fam, round(f * 1000), sign + 1])  # the same queries every run
                times = run_cell(space, query_maker(space, f, sign, rng), backends, n, args.time_limit)
                cells = " | ".join(_cell(times[b]) for b in backends)
                ratio = f" | {_ratio(times['highs'], times[ref])} |" if ref and "highs" in backends else " |"
                print(f"| {label} | {space.d} | {f:g} | {sign:+d} | {cells}{ratio}", flush=True)


if __name__ == "__main__":
    main()
