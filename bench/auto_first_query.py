"""What a new ``auto`` oracle pays on its first queries: planning, then the first linear and norm queries.

Run: ``.venv/bin/python bench/auto_first_query.py [--trees main=/work/main,branch=.] [--only TEXT,TEXT] [--norm]``

Per space (the families of ``bench/norm_large.py`` and ``bench/oracle.py``, and every ``problems/`` file's space),
in a fresh process per space and source tree (each tree's ``cmab_milp`` on ``PYTHONPATH``; the trees interleaved,
since the machine is shared), CPU milliseconds of: ``plan_lin`` / ``plan_norm+`` (ranking the backends for a
linear / norm query shape on a new oracle), and on other new oracles the first linear query against the median
of the next three (``lin_first`` / ``lin_later``), with ``--norm`` the same for a norm query (``f = 0.05``, sign -1).
The process warms up first (imports, a HiGHS model), so a first query's excess over the later ones is planning
and building the backend. The routes per shape must be the same in every tree (``same routes``).

Measured (issue 43's note; 2 shared cores, one BLAS thread): the 8x8 grid's s-t paths (``bench/norm_large.py``)
planned a norm query in 1,335 ms, now 7 ms (first norm query 2,289 -> 41 ms); spanning trees of the 6x6 / 8x8
grids 13,944 / 24,665 -> 0.3 / 0.2 ms; ``problems/network_design.toml`` 3,162 -> 1,003 ms (100,352 spanning
trees listed for the enumeration it picks); every route the same.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def grid(n: int) -> nx.Graph:
    return nx.convert_node_labels_to_integers(nx.grid_2d_graph(n, n))


def grid_dag(n: int) -> nx.DiGraph:
    return nx.DiGraph([(u, v) for u, v in grid(n).edges()])  # labels grow right and down: acyclic


def spaces() -> dict[str, Callable]:
    import cmab_milp as cm
    from cmab_milp.experiments.problem.problem_file import load_problem

    out: dict[str, Callable] = {
        "NL Cardinality(100,10)": lambda: cm.Cardinality(100, 10),
        "NL Matchings K(10,12)": lambda: cm.Matchings(nx.complete_bipartite_graph(10, 12)),
        "NL Matchings K15": lambda: cm.Matchings(nx.complete_graph(15)),
        "NL Trees 6x6": lambda: cm.SpanningTrees(grid(6)),
        "NL Trees 8x8": lambda: cm.SpanningTrees(grid(8)),
        "NL s-t paths 8x8": lambda: cm.STPaths(grid(8), 0, 63),
        "NL Forests 8x8": lambda: cm.GraphicMatroid(grid(8)),
        "OR partition 4x5 cap 2": lambda: cm.PartitionMatroid(
            [list(range(k, k + 5)) for k in range(0, 20, 5)], [2] * 4
        ),
        "OR paths DAG 10x10": lambda: cm.STPaths(grid_dag(10), 0, 99),
        "OR paths 5x5 cyclic": lambda: cm.STPaths(grid(5), 0, 24),
        "OR bipartite 10x10": lambda: cm.Matchings(nx.complete_bipartite_graph(10, 10)),
    }
    for path in sorted(glob.glob(str(ROOT / "problems" / "*.toml"))):
        out["P " + Path(path).stem] = load_problem(path).build_space
    return out


def measure(name: str, norm: bool) -> dict:
    """The figures of one space in this process (``cmab_milp`` as imported)."""
    import cmab_milp as cm
    from cmab_milp.oracles.core.auto_facts import QueryShape

    warm = cm.make_oracle(cm.Cardinality(6, 2), "auto")
    warm.argmax(np.arange(6.0))
    warm.argmax_norm(np.arange(6.0), np.eye(6), 0.1, sign=-1)
    highs = cm.make_oracle(cm.Cardinality(60, 30), "highs")
    highs.argmax(np.arange(60.0))
    highs.argmax_norm(np.arange(60.0), np.eye(60), 0.1, sign=-1)
    make = spaces()[name]
    rng = np.random.default_rng(0)
    row: dict = {"space": name}
    oracle = cm.make_oracle(make(), "auto")
    shapes = {"lin": QueryShape("linear"), "n+": QueryShape("norm", 1), "n-": QueryShape("norm", -1)}
    for key, shape in (("plan_lin", shapes["lin"]), ("plan_norm+", shapes["n+"])):
        start = time.process_time()
        oracle.plan(shape)
        row[key] = time.process_time() - start
    row["routes"] = {key: oracle.plan(shape)[:1] for key, shape in shapes.items()}
    d = oracle.space.d
    kinds = [("lin", lambda o: o.argmax(rng.normal(size=d)))]
    if norm:

        def norm_query(o):
            a = rng.normal(size=(d, d))
            return o.argmax_norm(rng.uniform(0, 1, d), a @ a.T / d + 0.1 * np.eye(d), 0.05, sign=-1)

        kinds.append(("norm", norm_query))
    for kind, ask in kinds:
        fresh = cm.make_oracle(make(), "auto")
        seconds = []
        for _ in range(4):
            start = time.process_time()
            ask(fresh)
            seconds.append(time.process_time() - start)
        row[f"{kind}_first"], row[f"{kind}_later"] = seconds[0], statistics.median(seconds[1:])
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", default=f"this={ROOT}", help="name=path,... source trees to compare")
    parser.add_argument("--only", default="", help="comma-separated parts of space names")
    parser.add_argument("--norm", action="store_true", help="also time a first norm query")
    parser.add_argument("--worker", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        warnings.simplefilter("ignore")
        print(json.dumps(measure(args.worker, args.norm)))
        return
    trees = dict(item.split("=", 1) for item in args.trees.split(","))
    names = [n for n in spaces() if not args.only or any(part in n for part in args.only.split(","))]
    keys = ["plan_lin", "plan_norm+", "lin_first", "lin_later"] + (["norm_first", "norm_later"] if args.norm else [])
    print("space".ljust(30), " | ".join(f"{k} ({' -> '.join(trees)})" for k in keys))
    for k, name in enumerate(names):
        rows = {}
        for tree in list(trees) if k % 2 == 0 else list(trees)[::-1]:  # alternate which tree goes first
            path = str(Path(trees[tree]).resolve())
            env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
            command = [sys.executable, str(ROOT / "bench" / "auto_first_query.py"), "--worker", name]
            done = subprocess.run(command + ["--norm"] * args.norm, cwd=path, env=env, capture_output=True, text=True)
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            rows[tree] = json.loads(lines[-1]) if lines else {}
        cells = [" -> ".join(f"{1e3 * rows[t][key]:.1f}" if key in rows[t] else "-" for t in trees) for key in keys]
        same = len({json.dumps(r.get("routes")) for r in rows.values()}) == 1
        print(name.ljust(30), " | ".join(cells), "same routes" if same else "ROUTES DIFFER", flush=True)


if __name__ == "__main__":
    main()
