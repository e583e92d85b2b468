"""Seconds per query on perrault's road graph (cyclic, undirected, 170 arms): ``auto``, weights <= 0 with many zeros.

The queries of ``problems/perrault_shortest_path.toml``'s early rounds: indices clipped at 0, so most weights
are exactly 0 and the rest negative. Plain queries and "a shortest path through an edge" (SROQ's representatives,
``include=[i]``), with ``ties="off"`` or ``"classes"``. One JSON line per setting. To compare two trees, run it
with each on ``PYTHONPATH`` in turn (the machine is shared: interleave them)::

    PYTHONPATH=/path/to/tree python bench/paths_ruled.py --ties off,classes --kinds plain,through --zeros 1,0.9,0.5
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import cmab_milp as cm
from cmab_milp.experiments.problem.problem_file import load_problem

PROBLEM = Path(__file__).resolve().parent.parent / "problems" / "perrault_shortest_path.toml"


def measure(ties: str, kind: str, zeros: float, queries: int, seed: int = 7) -> dict:
    """CPU seconds per query of ``auto`` on the file's space (after one warm-up query of each shape)."""
    space = load_problem(PROBLEM).build_space()
    oracle = cm.make_oracle(space, "auto", ties=ties)
    oracle.argmax(-np.ones(space.d))
    oracle.argmax(-np.ones(space.d), include=[5])
    rng = np.random.default_rng(seed)
    times = []
    for _ in range(queries):
        w = np.where(rng.random(space.d) < zeros, 0.0, -rng.uniform(0.0, 1.0, space.d))
        include = [int(rng.integers(space.d))] if kind == "through" else []
        start = time.process_time()
        oracle.argmax(w, include=include)
        times.append(time.process_time() - start)
    return {
        "ties": ties,
        "kind": kind,
        "zeros": zeros,
        "queries": queries,
        "median_ms": round(1e3 * float(np.median(times)), 3),
        "max_ms": round(1e3 * max(times), 3),
        "routes": dict(oracle.routes),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ties", default="off,classes", help="tie modes, comma-separated")
    parser.add_argument("--kinds", default="plain,through", help="plain and/or through (one edge in)")
    parser.add_argument("--zeros", default="1,0.9,0.5", help="shares of zero weights, comma-separated")
    parser.add_argument("--queries", type=int, default=30, help="queries per setting")
    args = parser.parse_args()
    for ties in args.ties.split(","):
        for kind in args.kinds.split(","):
            for zeros in args.zeros.split(","):
                print(json.dumps(measure(ties, kind, float(zeros), args.queries)), flush=True)


if __name__ == "__main__":
    main()
