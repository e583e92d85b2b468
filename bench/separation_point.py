"""Per-LP-point cost of the connectivity separation (the fractional separator of s-t paths).

Run: ``.venv/bin/python bench/separation_point.py [--engine scipy|ortools]`` (the max-flow engine of
``cmab_milp/oracles/mip/maxflow.py``; default: OR-Tools when installed). The LP points are every round
of HiGHS LP relaxations with the separator's cuts until none (5 queries per instance, weights
``U(0.1, 1)``); each point is separated 3 times and the mean is printed, split by whether the
point violates a row (the cheap component rows usually find it) or not (one max flow per node).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import networkx as nx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cmab_milp as cm
from cmab_milp.oracles.backends.highs_model import CompiledModel
from cmab_milp.oracles.mip.graph_cuts import fractional_cuts


def _grid(n: int) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, n))


def lp_points(space: cm.STPaths, queries: int = 5) -> list[np.ndarray]:
    """The arm values of every LP relaxation point of the cut rounds."""
    f = space.formulation()
    points = []
    for q in range(queries):
        lp = CompiledModel(f, integer=False)
        lp.set_costs(np.random.default_rng(q).uniform(0.1, 1.0, space.d))
        x = lp.run_relaxation()
        for _ in range(100):
            points.append(np.asarray(x[: space.d]))
            cuts = fractional_cuts(f, points[-1])
            if not cuts:
                break
            lp.add_rows(cuts)
            x = lp.run_relaxation()
    return points


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default=None, choices=["scipy", "ortools"])
    args = parser.parse_args(argv)
    if args.engine:
        import cmab_milp.oracles.mip.maxflow as maxflow

        maxflow.default_engine = lambda: args.engine  # this run's engine (a bench switch, not a library option)
    print("| instance | LP points | violated | ms per point |")
    print("|---|---|---|---|")
    instances = [("10x10 grid", _grid(10), 10), ("6x6 digraph", _grid(6).to_directed(), 6)]
    instances.append(("8x8 digraph", _grid(8).to_directed(), 8))
    for name, graph, n in instances:
        space = cm.STPaths(graph, 0, n * n - 1)
        f = space.formulation()
        points = lp_points(space)
        for label, violated in (("yes", True), ("no", False)):
            group = [x for x in points if bool(fractional_cuts(f, x)) == violated]
            start = time.perf_counter()
            for _ in range(3):
                for x in group:
                    fractional_cuts(f, x)
            per = (time.perf_counter() - start) / (3 * max(1, len(group)))
            print(f"| {name} | {len(group)} | {label} | {per * 1e3:.2f} |", flush=True)


if __name__ == "__main__":
    main()
