"""Linear queries on a base space plus side rows: highs before / with starts / with starts and fixing, vs Gurobi.

Measured figures and the ideas tried with this script: ``docs/performance.md`` (section "Oracles").

Run: ``.venv/bin/python bench/side_rows.py [--queries 30] [--only TEXT] [--covers]``

Families: Cardinality(200, 20) with one knapsack row (``bench/extra_solvers.py``'s
case) and with two; a partition matroid (10 blocks of 20 arms, at most 3 each) with a knapsack
row; spanning trees of an 8x8 grid with a knapsack row. Every other query has restrictions (an
arm included, two excluded, two forbidden pairs). Variants, each its own oracle, asked the same
query in turn (interleaved: the machine is shared):

* ``before``: no side plan (``tuning={"side_starts": False}``), the HiGHS MILP alone;
* ``start``: the Lagrangian start of :mod:`cmab_milp.oracles.mip.side_starts`, HiGHS without restarts
  and RINS/RENS (``fix_arms: False``);
* ``start+fix``: also the arms the flip bounds fix (``solve_cores: False``);
* ``+cores``: also the enumeration of the free arms when few (the default);
* ``+covers`` (``--covers``): ``start+fix`` plus the extended cover cuts of
  :mod:`cmab_milp.oracles.mip.cover_cuts` separated on the LP relaxation, as query rows;
* ``gurobi``: one thread, when ``gurobipy`` is installed.

Answers are compared by value. Prints ms per query (median / max) and the ratio of each median to
Gurobi's.

Measured (one run, 2 cores shared with other work (load 3-5), 40 queries a family, ms median /
max, and the ratio of the medians to Gurobi's)::

    family                         before        start         start+fix     +cores        +covers       gurobi
    Cardinality(200,20) + knapsack 9.80 / 26.1   8.72 / 16.9   5.29 / 10.8   1.73 / 21.5   5.45 / 25.0   2.88 / 21.9
        ratio to gurobi            3.40x         3.02x         1.83x         0.60x         1.89x
    Cardinality + 2 knapsacks      43.9 / 218    16.3 / 46.0   14.0 / 42.1   12.9 / 42.3   16.8 / 45.7   17.1 / 75.5
        ratio to gurobi            2.56x         0.95x         0.82x         0.75x         0.98x
    partition 10x20 + knapsack     8.84 / 49.0   7.52 / 15.7   5.18 / 11.4   2.03 / 11.2   6.73 / 12.2   2.89 / 21.9
        ratio to gurobi            3.05x         2.60x         1.79x         0.70x         2.33x
    trees 8x8 grid + knapsack      30.1 / 231    32.3 / 108    35.2 / 100    32.7 / 96.1   36.0 / 98.6   158 / 1758
        ratio to gurobi            0.19x         0.20x         0.22x         0.21x         0.23x

Every answer agreed in value. Fixing and cores apply to cardinality and partition bases (closed-form
flip bounds; ~185 of 200 arms fixed); trees get the start only (no gain: HiGHS finds such trees at
once). Cover cuts cost an LP solve per query and gained nothing (HiGHS separates its own lifted
covers): off by default.
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

#: variant -> (side_starts, fix_arms, solve_cores, side_cover_cuts): the ``highs`` tuning options it sets
VARIANTS = {
    "before": (False, False, False, False),
    "start": (True, False, False, False),
    "start+fix": (True, True, False, False),
    "+cores": (True, True, True, False),
    "+covers": (True, True, False, True),
}
_FLAGS = ("side_starts", "fix_arms", "solve_cores", "side_cover_cuts")


def families(rng: np.random.Generator) -> dict[str, tuple[cm.ActionSpace, Callable[[int], dict]]]:
    c = rng.uniform(0.5, 1.5, 200)
    card = cm.Cardinality(200, 20).with_constraint(c, "<=", 12.0)
    two = card.with_constraint(rng.uniform(0.5, 1.5, 200), "<=", 11.0)
    blocks = [list(range(k * 20, (k + 1) * 20)) for k in range(10)]
    part = cm.PartitionMatroid(blocks, [3] * 10).with_constraint(c, "<=", 12.0)
    trees = cm.SpanningTrees(nx.convert_node_labels_to_integers(nx.grid_2d_graph(8, 8)))
    trees_knap = trees.with_constraint(rng.uniform(0.5, 1.5, trees.d), "<=", 0.9 * 63)
    out = {}
    for name, space in {
        "Cardinality(200,20) + knapsack": card,
        "Cardinality(200,20) + 2 knapsacks": two,
        "partition 10x20 cap 3 + knapsack": part,
        "spanning trees 8x8 + knapsack": trees_knap,
    }.items():

        def make(k: int, d=space.d) -> dict:
            q = {"weights": rng.normal(size=d)}
            if k % 2:
                arms = rng.permutation(d)
                q["include"] = [int(arms[0])]
                q["exclude"] = [int(arms[1]), int(arms[2])]
                q["forbid_pairs"] = [(int(arms[3]), int(arms[4])), (int(arms[5]), int(arms[6]))]
            return q

        out[name] = (space, make)
    return out


def run_family(space, make, variants: list[str], gurobi: bool, n: int) -> dict[str, list[float]]:
    oracles = {v: cm.make_oracle(space, "highs", tuning=dict(zip(_FLAGS, VARIANTS[v], strict=True))) for v in variants}
    if gurobi:
        oracles["gurobi"] = cm.make_oracle(space, "gurobi")
    times: dict[str, list[float]] = {v: [] for v in oracles}
    for k in range(n):
        q = make(k)
        values = {}
        for v, oracle in oracles.items():
            start = time.perf_counter()
            answer = oracle.argmax(**q)
            times[v].append(time.perf_counter() - start)
            values[v] = -np.inf if answer is None else float(q["weights"] @ answer)
        top = max(values.values())
        if min(values.values()) < top - 1e-9 * (1 + abs(top)):
            print(f"  !! values disagree: {values}", flush=True)
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=30, help="queries per family")
    parser.add_argument("--only", default="", help="run only families whose name contains this")
    parser.add_argument("--covers", action="store_true", help="also the variant with cover cuts")
    args = parser.parse_args(argv)
    variants = [v for v in VARIANTS if args.covers or v != "+covers"]
    gurobi = "gurobi" in cm.available_backends()
    rng = np.random.default_rng(0)
    names = [*variants, *(["gurobi"] if gurobi else [])]
    print(f"ms per query, median / max ({args.queries} queries a family, half of them restricted)")
    print(f"{'family':36s}" + "".join(f"{v:>18s}" for v in names) + "   ratio to gurobi (median)")
    for name, (space, make) in families(rng).items():
        if args.only not in name:
            continue
        times = run_family(space, make, variants, gurobi, args.queries)
        cells = "".join(
            f"{statistics.median(times[v]) * 1e3:8.2f} /{max(times[v]) * 1e3:7.1f}" + " " * 2 for v in names
        )
        ratio = ""
        if gurobi:
            ref = statistics.median(times["gurobi"])
            ratio = ", ".join(f"{v} {statistics.median(times[v]) / ref:.2f}x" for v in variants)
        print(f"{name:36s}{cells} {ratio}", flush=True)


if __name__ == "__main__":
    main()
