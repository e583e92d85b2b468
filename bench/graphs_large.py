"""Restricted MILP queries on graphs with hundreds of edges: highs (root cuts on / off, flow rows) vs gurobi / scip.

Measured figures and the ideas tried with this script: ``docs/performance.md`` (section "Graphs").

Run: ``.venv/bin/python bench/graphs_large.py [--quick] [--queries 5] [--time-limit 60] [--only trees]
[--optimistic 0.03]`` (``--optimistic``: that share of the shortest-path queries' weights above 0, as UCB
indices of little-observed links are)

Families: spanning trees and forests of a 20x20 grid (760 edges) with
``forbid_pairs`` (4 pairs of edges sharing a node), spanning trees with a
knapsack side row, longest simple s-t paths (positive weights) on a 10x10 grid,
and shortest s-t paths on a 17x17 grid (544 edges) with ``forbid_pairs``, alone
and with a knapsack row (resource-constrained); on the grids' digraphs (both directions
of every edge): longest paths of a 6x6 grid (120 arcs) and resource-constrained shortest
paths of the 17x17 grid (1,088 arcs). ``--quick``: 16x16 / 8x8 / 12x12 / 5x5 sizes, 3
queries, no scip.

Variants: ``highs`` (root cuts on, the default), ``highs-restarts`` (``highs`` with
HiGHS's restarts in path queries with a positive weight, as before the fourth round), ``auto-before`` (``auto``
as before the hop-limit changes of issue 43) and ``auto-unoriented`` (one of them: :data:`VARIANT_OPTIONS`),
``highs-nofix`` (``highs`` without the fourth round's reduced-cost fixing of shortest-path queries),
``highs-before`` (``highs`` without
the third round's MIP starts, candidate hooks, sparse tree rows and skipped root cuts:
see :data:`VARIANT_SPACE` and :data:`VARIANT_TUNING`), ``highs-noroot`` (root cuts
off: lazy cuts on integer candidates only, as before), ``highs-flow``
(root cuts plus the single-commodity flow rows of
the spaces' ``flow=True`` option), ``highs-unoriented`` (paths
with ``oriented=False``: no orientation columns), ``gurobi`` (one thread, lazy
callback) and ``scip`` when installed. Every query is asked of each variant in
turn (interleaved: the machine is shared), with a time limit per query (each
solve has it, and an alarm stops the query between solves); a query stopped by
it counts as its time and is marked. Answers are compared by value.
Compile is the time to build the space's formulation and the solver's model.
Prints a markdown table: compile, median and max query time, ratio of the
medians to gurobi's, and the same median and ratio in CPU seconds of the process (every
solver here runs one thread: on a loaded machine the CPU time is the steadier figure).

The figures this script measured, round by round, and the ideas tried with it and dropped:
``docs/performance.md``, section "Graphs".
"""

from __future__ import annotations

import argparse
import inspect
import signal
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

#: The space options of a variant (keywords of the graph space constructors; each family's space takes those its
#: class has): ``highs-before`` without the sparse tree rows, ``highs-flow`` with the single-commodity flow rows,
#: ``highs-unoriented`` without the orientation columns of undirected paths.
VARIANT_SPACE = {
    "highs-before": {"sparse_cuts": False},
    "highs-flow": {"flow": True},
    "highs-unoriented": {"oriented": False},
}

#: The ``highs`` tuning options of a variant (:class:`~cmab_milp.oracles.mip.tuning.HighsTuning`): ``highs-before``
#: without the MIP starts and candidate hooks; ``highs-nofix`` without the reduced-cost fixing of shortest-path
#: queries (``PathStarts.start_plan``).
VARIANT_TUNING = {
    "highs-before": {"prepare_queries": False, "root_cuts_nonpositive": True},
    "highs-nofix": {"fix_arms": False},
    # ``highs`` with HiGHS's restarts in path queries with a positive weight (as first measured)
    "highs-restarts": {"positive_cost_options": False},
}


#: The ``make_oracle`` options of a variant: ``auto-before`` is ``auto`` as before issue 43's path changes
#: (SCIP with the orientation columns and its own strong branching, CP-SAT without the parity of hop limits);
#: ``auto-unoriented`` has only the first of them (SCIP without the orientation columns, SCIP's branching).
VARIANT_OPTIONS = {
    "auto-before": {"backend_options": {"scip": {"oriented": True, "params": None}, "ortools": {"parity": False}}},
    "auto-unoriented": {"backend_options": {"scip": {"params": None}}},
}


def _options(cls: type, options: dict) -> dict:
    """The entries of ``options`` that ``cls``'s constructor takes."""
    names = inspect.signature(cls).parameters
    return {k: v for k, v in options.items() if k in names}


def _trees(graph: nx.Graph, options: dict) -> cm.SpanningTrees:
    return cm.SpanningTrees(graph, **_options(cm.SpanningTrees, options))


def _forests(graph: nx.Graph, options: dict) -> cm.GraphicMatroid:
    return cm.GraphicMatroid(graph, **_options(cm.GraphicMatroid, options))


def _paths(graph: nx.Graph, s, t, options: dict) -> cm.STPaths:
    return cm.STPaths(graph, s, t, **_options(cm.STPaths, options))


def _grid(n: int) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, n))


def _adjacent_pairs(space, rng: np.random.Generator, k: int = 4) -> list[tuple[int, int]]:
    pairs = []
    while len(pairs) < k:  # pairs of edges sharing a node: the restriction binds
        i, j = sorted(rng.choice(space.d, 2, replace=False).tolist())
        if set(space.arms[i]) & set(space.arms[j]):
            pairs.append((i, j))
    return pairs


def _directed_rcsp(grid: nx.Graph, n: int, budget: float, options: dict) -> cm.ActionSpace:
    """Paths of the grid with both directions of every edge, each arc using its edge's resource ``r``."""
    space = _paths(grid.to_directed(), 0, n * n - 1, options)
    return space.with_constraint(np.array([grid[u][v]["r"] for u, v in space.arms]), "<=", budget)


def _hops(graph: nx.Graph, n: int, hops: int, options: dict) -> cm.ActionSpace:
    """s-t paths of an ``n x n`` grid (or its digraph) with at most ``hops`` edges."""
    space = _paths(graph, 0, n * n - 1, options)
    return space.with_constraint(np.ones(space.d), "<=", hops)


def families(quick: bool, optimistic: float = 0.0) -> dict[str, tuple[Callable[[dict], cm.ActionSpace], Callable]]:
    """name -> (space builder(space options), query maker(space, rng)); ``optimistic``: the share of the
    shortest-path queries' weights drawn above 0 instead (uniform on [0, 0.3]: a UCB index of a little-observed
    link)."""
    big, paths, rcsp, directed = (16, 8, 12, 5) if quick else (20, 10, 17, 6)
    resource = np.random.default_rng(1).uniform(0.5, 1.5, 2 * rcsp * (rcsp - 1))

    def restricted(space, rng):
        return {"weights": rng.normal(size=space.d), "forbid_pairs": _adjacent_pairs(space, rng)}

    def rcsp_query(space, rng):  # shortest path (negative lengths) under a resource budget
        query = {"weights": -rng.uniform(0.1, 1.0, space.d), "forbid_pairs": _adjacent_pairs(space, rng)}
        if optimistic:
            up = rng.random(space.d) < optimistic
            query["weights"] = np.where(up, rng.uniform(0.0, 0.3, space.d), query["weights"])
        return query

    # the budget lies halfway between the least resource of any s-t path and that of a path of fewest edges
    grid = _grid(rcsp)
    for k, (u, v) in enumerate(grid.edges()):
        grid[u][v]["r"] = resource[k]
    least = nx.shortest_path_length(grid, 0, rcsp * rcsp - 1, weight="r")
    budget = 0.5 * (least + 2 * (rcsp - 1))
    return {
        f"spanning trees {big}x{big} + forbid_pairs": (lambda o: _trees(_grid(big), o), restricted),
        f"forests {big}x{big} + forbid_pairs": (lambda o: _forests(_grid(big), o), restricted),
        f"spanning trees {big}x{big} + knapsack row": (
            lambda o: _trees(_grid(big), o).with_constraint(
                np.random.default_rng(2).uniform(0.5, 1.5, 2 * big * (big - 1)), "<=", 0.9 * (big * big - 1)
            ),
            lambda space, rng: {"weights": rng.normal(size=space.d)},
        ),
        f"longest s-t paths {paths}x{paths}": (
            lambda o: _paths(_grid(paths), 0, paths * paths - 1, o),
            lambda space, rng: {"weights": rng.uniform(0.1, 1.0, space.d)},
        ),
        f"longest s-t paths {directed}x{directed} directed": (
            lambda o: _paths(_grid(directed).to_directed(), 0, directed * directed - 1, o),
            lambda space, rng: {"weights": rng.uniform(0.1, 1.0, space.d)},
        ),
        # hop limits (a side row) and the 8x8 grid digraph
        f"longest s-t paths {paths}x{paths} + at most {6 * paths} edges": (
            lambda o: _hops(_grid(paths), paths, 6 * paths, o),
            lambda space, rng: {"weights": rng.uniform(0.1, 1.0, space.d)},
        ),
        f"longest s-t paths {directed}x{directed} directed + at most {directed * directed - 15} arcs": (
            lambda o: _hops(_grid(directed).to_directed(), directed, directed * directed - 15, o),
            lambda space, rng: {"weights": rng.uniform(0.1, 1.0, space.d)},
        ),
        f"longest s-t paths {directed + 2}x{directed + 2} directed": (
            lambda o: _paths(_grid(directed + 2).to_directed(), 0, (directed + 2) ** 2 - 1, o),
            lambda space, rng: {"weights": rng.uniform(0.1, 1.0, space.d)},
        ),
        f"shortest s-t paths {rcsp}x{rcsp} directed + forbid_pairs + knapsack": (
            lambda o: _directed_rcsp(grid, rcsp, budget, o),
            rcsp_query,
        ),
        f"shortest s-t paths {rcsp}x{rcsp} + forbid_pairs": (
            lambda o: _paths(_grid(rcsp), 0, rcsp * rcsp - 1, o),
            rcsp_query,
        ),
        f"shortest s-t paths {rcsp}x{rcsp} + forbid_pairs + knapsack": (
            lambda o: _paths(_grid(rcsp), 0, rcsp * rcsp - 1, o).with_constraint(resource, "<=", budget),
            rcsp_query,
        ),
    }


def build(variant: str, make_space: Callable[[dict], cm.ActionSpace], limit: float):
    """(oracle, compile seconds) of one variant; the space is built afresh (its formulation is cached per space)."""
    start = time.perf_counter()
    space = make_space(VARIANT_SPACE.get(variant, {}))
    space.formulation()
    backend = variant.split("-")[0]
    tuning = {"tuning": VARIANT_TUNING[variant]} if variant in VARIANT_TUNING else {}
    oracle = cm.make_oracle(space, backend, time_limit=limit, **tuning, **VARIANT_OPTIONS.get(variant, {}))
    if backend == "auto":  # plan now (as the others compile now); its first query still counts the rest
        from cmab_milp.oracles.core.auto import QueryShape

        oracle.plan(QueryShape("linear", positive=True))
    if backend == "highs":
        oracle.root_cuts = variant != "highs-noroot"
        oracle.model(integer=True)
    return space, oracle, time.perf_counter() - start


class _Stopped(Exception):
    """A query ran past the time limit (checked between solves: the lazy loop re-solves many times)."""


def _alarm(signum, frame):
    raise _Stopped


def _ask(oracle, query: dict, limit: float):
    """The oracle's answer, or raise OracleError / _Stopped when it takes longer than ``limit`` seconds."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return oracle.argmax(**query)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def run_family(name, make_space, make_query, variants, n, limit, seed=0):
    built = {}
    for v in variants:
        try:
            built[v] = build(v, make_space, limit)
        except ValueError as exc:  # e.g. gurobi's size-limited licence
            print(f"  {v}: refused ({exc})", flush=True)
    rng = np.random.default_rng(seed)
    space = next(iter(built.values()))[0]
    times = {v: [] for v in built}
    for _ in range(n):
        q = make_query(space, rng)
        values = {}
        for v, (_, oracle, _) in built.items():
            start, cpu = time.perf_counter(), time.process_time()
            try:
                answer = _ask(oracle, q, limit)
                times[v].append((time.perf_counter() - start, False, time.process_time() - cpu))
                values[v] = -np.inf if answer is None else float(q["weights"] @ answer)
            except (OracleError, _Stopped):
                times[v].append((time.perf_counter() - start, True, time.process_time() - cpu))
        solved = list(values.values())
        if solved and max(solved) - min(solved) > 1e-6 * (1 + abs(max(solved))):
            print(f"  !! values disagree: {values}", flush=True)
    for _, oracle, _ in built.values():
        oracle.close()
    return {v: (built[v][2], times[v]) for v in built}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller graphs, 3 queries, no scip")
    parser.add_argument("--queries", type=int, default=None, help="queries per family (default 5, quick 3)")
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per query and variant")
    parser.add_argument("--only", default="", help="run only families whose name contains this")
    parser.add_argument(
        "--optimistic", type=float, default=0.0, help="share of the shortest-path weights drawn above 0 (e.g. 0.03)"
    )
    parser.add_argument("--variants", default="", help="comma-separated subset of the variants")
    args = parser.parse_args(argv)
    n = args.queries or (3 if args.quick else 5)
    have = cm.available_backends()
    variants = [
        "highs",
        "highs-restarts",
        "highs-nofix",
        "highs-before",
        "highs-noroot",
        "highs-flow",
        "highs-unoriented",
    ]
    variants += [b for b in ("gurobi", "scip") if b in have and not (args.quick and b == "scip")]
    variants += [b for b in ("auto", "auto-before", "auto-unoriented", "ortools") if b.split("-")[0] in have]
    if args.variants:
        variants = [v for v in variants if v in args.variants.split(",")]
    print(f"{n} queries a family, time limit {args.time_limit:g} s; variants {variants}\n", flush=True)
    print("| family | variant | compile s | median s | max s | ratio to gurobi | median CPU s | CPU ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for name, (make_space, make_query) in families(args.quick, args.optimistic).items():
        if args.only not in name:
            continue
        result = run_family(name, make_space, make_query, variants, n, args.time_limit)
        meds = {v: statistics.median(t for t, _, _ in ts) for v, (_, ts) in result.items()}
        cpus = {v: statistics.median(c for _, _, c in ts) for v, (_, ts) in result.items()}
        for v, (compile_s, ts) in result.items():
            stopped = sum(s for _, s, _ in ts)
            ratio = f"{meds[v] / meds['gurobi']:.2f}" if "gurobi" in meds and meds["gurobi"] > 0 else "-"
            cpu_ratio = f"{cpus[v] / cpus['gurobi']:.2f}" if "gurobi" in cpus and cpus["gurobi"] > 0 else "-"
            mark = f" ({stopped} stopped)" if stopped else ""
            top = max(t for t, _, _ in ts)
            print(
                f"| {name} | {v} | {compile_s:.3f} | {meds[v]:.3f}{mark} | {top:.3f} | {ratio} | {cpus[v]:.3f} "
                f"| {cpu_ratio} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
