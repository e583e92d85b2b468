"""Two checkouts of cmab_milp, the same queries, interleaved per query: per-family medians and same answers.

Measured figures: ``docs/performance.md`` (section "Oracles").

Run: ``.venv/bin/python bench/paired_trees.py BEFORE_DIR AFTER_DIR [--linear 60] [--large 7] [--norm 9]``
(for example ``git worktree add /tmp/before <commit>`` for BEFORE_DIR). Each tree runs in its own process,
built from that tree's ``bench/oracle.py`` and ``bench/graphs_large.py`` families (``--quick`` sizes); the two
answer query ``k`` one after the other, in alternating order, so the shared machine's drift hits both alike.
Prints a table: family, queries, median ms before and after, their ratio, the median of the per-query ratios (the
same query on both: robust to the drift between queries), and how many answers were the same action.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

LINEAR = [
    "cardinality d=20 m=3",
    "partition 4x5 cap 2",
    "spanning trees 6x6 grid",
    "s-t paths 10x10 grid DAG",
    "s-t paths 5x5 grid cyclic",
    "bipartite matching 10x10",
]
LARGE = [
    "spanning trees 16x16 + forbid_pairs",
    "forests 16x16 + forbid_pairs",
    "spanning trees 16x16 + knapsack row",
    "longest s-t paths 8x8",
    "longest s-t paths 5x5 directed",
    "shortest s-t paths 12x12 directed + forbid_pairs + knapsack",
    "shortest s-t paths 12x12 + forbid_pairs",
    "shortest s-t paths 12x12 + forbid_pairs + knapsack",
]


def worker(root: Path) -> None:
    """One tree's side: build a family's oracle on command, time its queries."""
    sys.path[:0] = [str(root), str(root / "bench")]
    import graphs_large
    import numpy as np
    import oracle as oracle_bench

    import cmab_milp as cm

    state: dict = {}
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "build":
            rng = np.random.default_rng(cmd["seed"])
            if cmd["kind"] == "linear":
                space = oracle_bench.families()[cmd["name"]]()
                queries = [{"weights": rng.uniform(0, 1, space.d)} for _ in range(cmd["n"])]
            elif cmd["kind"] == "large":
                make_space, make_query = graphs_large.families(True)[cmd["name"]]
                space = make_space()
                queries = [make_query(space, rng) for _ in range(cmd["n"])]
            else:
                d, m = cmd["d"], cmd["m"]
                space, queries = cm.Cardinality(d, m), []
                for _ in range(cmd["n"]):
                    a = rng.normal(size=(d, d))
                    M = a @ a.T / d + np.eye(d)
                    queries.append({"mu": rng.uniform(0, 1, d), "M": M, "f": 1.0, "sign": cmd["sign"]})
            state = {"oracle": cm.make_oracle(space, "highs"), "queries": queries, "norm": cmd["kind"] == "norm"}
            print(json.dumps({"ok": True}), flush=True)
        else:
            q, oracle = state["queries"][cmd["k"]], state["oracle"]
            start = time.perf_counter()
            answer = oracle.argmax_norm(**q) if state["norm"] else oracle.argmax(**q)
            seconds = time.perf_counter() - start
            print(
                json.dumps({"t": seconds, "a": None if answer is None else np.flatnonzero(answer).tolist()}), flush=True
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--linear", type=int, default=60, help="queries per bench/oracle.py family")
    parser.add_argument("--large", type=int, default=7, help="queries per bench/graphs_large.py --quick family")
    parser.add_argument("--norm", type=int, default=9, help="norm queries per Cardinality case")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", default="", help="run only families whose name contains this")
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    procs = {
        t: subprocess.Popen(
            [sys.executable, __file__, "--worker", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for t, root in trees.items()
    }

    def ask(t: str, msg: dict) -> dict:
        procs[t].stdin.write(json.dumps(msg) + "\n")
        procs[t].stdin.flush()
        return json.loads(procs[t].stdout.readline())

    jobs = [({"kind": "linear", "name": n, "n": args.linear}, n) for n in LINEAR]
    jobs += [({"kind": "large", "name": n, "n": args.large}, n) for n in LARGE]
    jobs += [
        ({"kind": "norm", "d": d, "m": m, "sign": s, "n": args.norm}, f"argmax_norm Cardinality({d}, {m}) sign {s:+d}")
        for d, m in ((10, 3), (20, 5))
        for s in (1, -1)
    ]
    ratios = []
    print("| family | queries | before ms | after ms | after / before | per-query ratio | same answers |")
    print("|---|---|---|---|---|---|---|")
    for build, label in jobs:
        if not build["n"] or args.only not in label:
            continue
        for t in trees:
            ask(t, {"op": "build", "seed": args.seed, **build})
        times: dict[str, list[float]] = {t: [] for t in trees}
        same = 0
        for k in range(build["n"]):
            order = list(trees) if k % 2 == 0 else list(trees)[::-1]
            got = {t: ask(t, {"op": "query", "k": k}) for t in order}
            for t in trees:
                times[t].append(got[t]["t"])
            same += got["before"]["a"] == got["after"]["a"]
        b, a = statistics.median(times["before"]), statistics.median(times["after"])
        paired = statistics.median(x / y for x, y in zip(times["after"], times["before"], strict=True))
        ratios.append(paired)
        n = build["n"]
        print(
            f"| {label} | {n} | {1e3 * b:.3f} | {1e3 * a:.3f} | {a / b:.3f} | {paired:.3f} | {same}/{n} |", flush=True
        )
    print(
        f"\ngeometric mean of the per-query ratios: {statistics.geometric_mean(ratios):.3f} over {len(ratios)} families"
    )
    for proc in procs.values():
        proc.stdin.close()
        proc.wait()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker(Path(sys.argv[2]))
    else:
        main()
