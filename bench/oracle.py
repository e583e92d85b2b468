"""Oracle benchmark: per-query median microseconds per family x backend, and ratios.

Measured figures and the ideas tried with this script: ``docs/performance.md`` (sections "Oracles" and
"Oracle core and backends").

Run: ``.venv/bin/python bench/oracle.py [--quick] [--backends highs,auto,...]``

Contenders that are compared are measured side by side in one run, with their
blocks interleaved (this machine is shared and noisy: absolute times drift,
ratios much less). Printed: a table of medians, then the ratios the targets
refer to:

* ``highs`` compiled re-solve vs a bare highspy ``changeColsCost`` + ``run()``
  loop on the same model (target: at most 1.25x) and vs building the model per
  query (target: at least 1.5x faster);
* ``auto`` vs the bare numpy / scipy call on cardinality, partition-matroid and
  assignment queries (target: within 10x);
* ``argmax_norm`` via ``auto`` vs vectorised enumeration at d=20 m=5 (target:
  within 3x) and absolute time at d=40 m=6 (target: under one second);
* the tie rule (``oracles/core/ties.py``): each query with it vs without it, on weights
  in ``[0, 1]`` (target: at most 1.10x) and on tied weights (its cost where it works);
  ``--ties-only --ties classes,exact`` for both modes (``"exact"``: certificates of a unique optimum,
  ``oracles/core/ties_unique.py``, else a second solve).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import numpy as np
from scipy.optimize import linear_sum_assignment

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cmab_milp as cm
from cmab_milp.oracles.backends.highs import HighsOracle
from cmab_milp.oracles.backends.highs_model import CompiledModel


def grid_dag(n: int) -> nx.DiGraph:
    g = nx.DiGraph()
    for i in range(n):
        for j in range(n):
            if i + 1 < n:
                g.add_edge(i * n + j, (i + 1) * n + j)
            if j + 1 < n:
                g.add_edge(i * n + j, i * n + j + 1)
    return g


def families() -> dict[str, Callable[[], cm.ActionSpace]]:
    grid6 = nx.convert_node_labels_to_integers(nx.grid_2d_graph(6, 6))
    grid5 = nx.convert_node_labels_to_integers(nx.grid_2d_graph(5, 5))
    return {
        "cardinality d=20 m=3": lambda: cm.Cardinality(20, 3),
        "partition 4x5 cap 2": lambda: cm.PartitionMatroid([list(range(k, k + 5)) for k in range(0, 20, 5)], [2] * 4),
        "spanning trees 6x6 grid": lambda: cm.SpanningTrees(grid6),
        "s-t paths 10x10 grid DAG": lambda: cm.STPaths(grid_dag(10), 0, 99),
        "s-t paths 5x5 grid cyclic": lambda: cm.STPaths(grid5, 0, 24),
        "bipartite matching 10x10": lambda: cm.Matchings(nx.complete_bipartite_graph(10, 10)),
    }


def timed_block(fn: Callable[[int], object], start: int, n: int) -> float:
    """Median seconds of n calls fn(start), ..., fn(start+n-1)."""
    times = []
    for k in range(start, start + n):
        t0 = time.perf_counter()
        fn(k)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def side_by_side(contenders: dict[str, Callable[[int], object]], rounds: int, block: int) -> dict[str, float]:
    """Interleave blocks of each contender; return the median of block medians (microseconds)."""
    for fn in contenders.values():  # warm-up: compile models, enumerate, lazy cuts
        for k in range(3):
            fn(k)
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for r in range(rounds):
        for name, fn in contenders.items():
            samples[name].append(timed_block(fn, r * block, block))
    return {name: 1e6 * statistics.median(v) for name, v in samples.items()}


def weights_for(d: int, n: int = 512, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0, 1, (n, d))


def backend_table(backends: list[str], rounds: int, block: int) -> None:
    print("\n## Per-query median (us): linear argmax, UCB-like weights in [0, 1]\n")
    header = f"| {'family':28s} | " + " | ".join(f"{b:>16s}" for b in backends) + " |"
    print(header)
    print("|" + "-" * 30 + "|" + "|".join("-" * 18 for _ in backends) + "|")
    for name, build in families().items():
        space = build()
        w = weights_for(space.d)
        contenders = {}
        for b in backends:
            try:
                oracle = cm.make_oracle(space, b)
                oracle.argmax(w[0])
            except (ValueError, cm.UnsupportedQuery) as exc:
                contenders[b] = str(exc).split(";")[0][:14]
                continue
            slow = b.startswith(("pulp", "scip"))
            contenders[b] = (oracle, slow)
        timed = {
            b: (lambda k, o=v[0], w=w: o.argmax(w[k % len(w)])) for b, v in contenders.items() if isinstance(v, tuple)
        }
        fast = {b: f for b, f in timed.items() if not contenders[b][1]}
        slow = {b: f for b, f in timed.items() if contenders[b][1]}
        result = side_by_side(fast, rounds, block) if fast else {}
        if slow:
            result.update(side_by_side(slow, max(2, rounds // 3), max(3, block // 5)))
        cells = []
        for b in backends:
            v = contenders[b]
            cells.append(f"{result[b]:16.1f}" if b in result else f"{'n/a: ' + v:>16s}"[:16])
        print(f"| {name:28s} | " + " | ".join(cells) + " |")


def tied_weights_for(d: int, n: int = 512, seed: int = 0) -> np.ndarray:
    """Bernoulli-like UCB indices: each arm's weight one of four values, so equal weights (ties) are everywhere."""
    return np.random.default_rng(seed).choice([0.81, 0.64, 0.57, 0.52], size=(n, d))


def tie_rule_cost(backends: list[str], rounds: int, block: int, mode: str = "classes") -> None:
    """The tie rule's cost per query (ties.first_optimum): ``argmax`` with ``ties=mode`` vs ``ties="off"``."""
    print(f"\n## The tie rule's cost: per-query median (us) of argmax with ties={mode!r} / 'off', and the ratio\n")
    print("| family                       | backend       | weights | with rule | without | ratio |")
    print("|------------------------------|---------------|---------|-----------|---------|-------|")
    for name, build in families().items():
        space = build()
        for b in backends:
            try:
                with_rule, without = cm.make_oracle(space, b, ties=mode), cm.make_oracle(space, b, ties="off")
                with_rule.argmax(weights_for(space.d)[0])
            except (ValueError, cm.UnsupportedQuery):
                continue
            for kind, ws in (("[0, 1]", weights_for(space.d)), ("tied", tied_weights_for(space.d))):
                res = side_by_side(
                    {
                        "with": lambda k, o=with_rule, ws=ws: o.argmax(ws[k % len(ws)]),
                        "without": lambda k, o=without, ws=ws: o.argmax(ws[k % len(ws)]),
                    },
                    rounds,
                    block,
                )
                cells = f"{res['with']:9.1f} | {res['without']:7.1f} | {res['with'] / res['without']:5.2f}"
                print(f"| {name:28s} | {b:13s} | {kind:7s} | {cells} |")


def compiled_vs_bare_vs_rebuild(rounds: int, block: int) -> None:
    print("\n## HiGHS compiled re-solve (cardinality d=20 m=3), as LP (default, integral) and as MILP\n")
    space = cm.Cardinality(20, 3)
    w = weights_for(20)
    idx = np.arange(20, dtype=np.int32)
    for mode, lp in (("LP", True), ("MILP", False)):
        oracle = cm.make_oracle(space, "highs", lp_when_integral=lp)
        bare = CompiledModel(space.formulation(), integer=not lp)

        def bare_loop(k: int, bare: CompiledModel = bare) -> object:
            bare.h.changeColsCost(20, idx, w[k % len(w)])
            bare.h.run()
            return bare.h.getSolution().col_value

        def rebuild(k: int, lp: bool = lp) -> object:
            return HighsOracle(space, lp_when_integral=lp).argmax(w[k % len(w)])

        res = side_by_side(
            {"oracle": lambda k, o=oracle: o.argmax(w[k % len(w)]), "bare highspy": bare_loop, "rebuild": rebuild},
            rounds,
            block,
        )
        print(f"  {mode}: " + "  ".join(f"{k} {v:8.1f} us" for k, v in res.items()))
        print(f"    compiled / bare highspy  = {res['oracle'] / res['bare highspy']:.2f}x   (target <= 1.25x)")
        print(f"    rebuild / compiled       = {res['rebuild'] / res['oracle']:.2f}x   (target >= 1.5x)")


def auto_vs_bare(rounds: int, block: int) -> None:
    print("\n## auto vs the bare numpy / scipy call\n")
    card = cm.Cardinality(20, 3)
    w = weights_for(20)
    part = cm.PartitionMatroid([list(range(k, k + 5)) for k in range(0, 20, 5)], [2] * 4)
    bip = cm.Matchings(nx.complete_bipartite_graph(10, 10))
    wb = weights_for(bip.d)
    left = {v: i for i, v in enumerate(range(10))}
    rows = np.array([left.get(u, left.get(v)) for u, v in bip.arms])
    cols = np.array([(v if u in left else u) - 10 for u, v in bip.arms])

    def bare_card(k: int) -> object:
        return np.argpartition(-w[k % len(w)], 2)[:3]

    def bare_part(k: int) -> object:
        x = w[k % len(w)].reshape(4, 5)
        return np.argsort(-x, axis=1)[:, :2]

    def bare_assign(k: int) -> object:
        cost = np.zeros((10, 10))
        cost[rows, cols] = -wb[k % len(wb)]
        return linear_sum_assignment(cost)

    cases = [
        ("cardinality", card, w, bare_card),
        ("partition matroid", part, w, bare_part),
        ("assignment 10x10", bip, wb, bare_assign),
    ]
    for name, space, ws, bare in cases:
        auto = cm.make_oracle(space, "auto")
        res = side_by_side({"auto": lambda k, o=auto, ws=ws: o.argmax(ws[k % len(ws)]), "bare": bare}, rounds, block)
        print(
            f"  {name:18s} auto {res['auto']:8.1f} us  bare {res['bare']:8.1f} us  "
            f"ratio {res['auto'] / res['bare']:5.1f}x  (target <= 10x)"
        )


def norm_queries(rounds: int, block: int, quick: bool) -> None:
    print("\n## argmax_norm per query (cardinality; M = A A^T / d + I; mu ~ U[0,1]; f = 1)\n")
    sizes = [(10, 3), (20, 5)] if quick else [(10, 3), (20, 5), (40, 6)]
    for d, m in sizes:
        rng = np.random.default_rng(d)
        a = rng.normal(size=(d, d))
        M = a @ a.T / d + np.eye(d)
        mus = rng.uniform(0, 1, (64, d))
        space = cm.Cardinality(d, m)
        for sign in (+1, -1):
            contenders = {}
            for b in ("auto", "highs", "enumerate", "scip"):
                if b == "enumerate" and d >= 40:
                    continue
                if b == "scip" and (importlib.util.find_spec("pyscipopt") is None or d >= 40):
                    continue
                try:
                    oracle = cm.make_oracle(space, b)
                    oracle.argmax_norm(mus[0], M, 1.0, sign)
                except (ValueError, cm.UnsupportedQuery, ImportError, NotImplementedError) as exc:
                    print(f"  d={d} m={m} sign={sign:+d} {b}: unavailable ({str(exc)[:60]})")
                    continue
                contenders[b] = lambda k, o=oracle, s=sign, mus=mus, M=M: o.argmax_norm(mus[k % len(mus)], M, 1.0, s)
            n_rounds, n_block = (rounds, block) if d < 40 else (2, 3)
            if d >= 20:
                n_rounds, n_block = max(2, n_rounds // 2), max(3, n_block // 4)
            res = side_by_side(contenders, n_rounds, n_block)
            line = "  ".join(f"{b} {v / 1e3:8.2f} ms" for b, v in res.items())
            extra = ""
            if "enumerate" in res and "auto" in res:
                extra = f"  auto/enumerate {res['auto'] / res['enumerate']:.2f}x"
            print(f"  d={d:2d} m={m} sign={sign:+d}: {line}{extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, skip d=40 norm queries")
    parser.add_argument(
        "--backends",
        default="highs,auto,combinatorial,enumerate,pulp:PULP_CBC_CMD,pulp:HiGHS,scip",
        help="comma-separated backends for the family table",
    )
    parser.add_argument("--ties-only", action="store_true", help="only the tie rule's cost table")
    parser.add_argument("--ties", default="classes", help="the tie rule's modes to compare with 'off', comma-separated")
    args = parser.parse_args()
    rounds, block = (3, 20) if args.quick else (7, 60)
    backends = [b for b in args.backends.split(",") if b]
    print(f"cmab_milp {cm.__version__}; backends available: {cm.available_backends()}")
    if args.ties_only:
        for mode in args.ties.split(","):
            tie_rule_cost([b for b in backends if not b.startswith(("pulp", "scip"))], rounds, block, mode)
        return
    compiled_vs_bare_vs_rebuild(rounds, block)
    auto_vs_bare(rounds, block)
    backend_table(backends, rounds, block)
    tie_rule_cost([b for b in backends if not b.startswith(("pulp", "scip"))], rounds, block)
    norm_queries(rounds, block, args.quick)


if __name__ == "__main__":
    main()
