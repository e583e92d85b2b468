"""Norm queries on small spaces: ``auto`` against a numpy enumeration of every action (issue 43, item 2).

Run: ``.venv/bin/python bench/enumerate_norm.py [--repeats R] [--small-repeats S] [--quick]``

Per space: the microseconds of one covariance-norm query ``mu @ a + f * sqrt(a @ M @ a)`` (a dense PSD
``M``, a new random query each repeat) answered by

* ``numpy``: ``A @ mu + f * sqrt(((A @ M) * A).sum(1))`` over the action matrix ``A`` (built once,
  outside the timing), then ``argmax`` -- BLAS products, not portable, no restrictions checked;
* ``auto``: ``make_oracle(space, "auto").argmax_norm(mu, M, f)``, the public call (input checks, routing,
  the certified portable answer);
* ``before``: the enumerate backend's previous norm path on the same query (every action's ``a M a`` by
  ``m^2`` gathers, a BLAS product for ``mu @ a``, then the portable settling), for the before / after ratio;

interleaved, one BLAS thread for all, median of ``R`` (``S`` on spaces of at most 5,000 actions). Each
auto answer's value is checked against the numpy optimum (within ``1e-9``). ``route`` is the backend ``auto`` picked.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import networkx as nx
import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cmab_milp as cm
from cmab_milp.oracles.backends.enumerate import EnumerateOracle
from cmab_milp.oracles.core.queries import NormQuery


def before(oracle: EnumerateOracle, query: NormQuery) -> np.ndarray | None:
    """The enumerate backend's norm path before the prefix sums (kept here to measure against)."""
    quad = oracle.quadratic_forms(query.M)
    radius = query.sign * query.f * np.sqrt(np.maximum(quad, 0.0))
    scale = float(np.abs(query.mu).max(initial=0.0))
    return oracle._best(oracle._dense @ query.mu + radius, query, query.mu, scale, radius)


def spaces(quick: bool) -> dict[str, cm.ActionSpace]:
    small = ((5, 2), (6, 3), (8, 4), (10, 3), (10, 5))  # 16 to 638 actions: the fixed cost per query decides
    out = {f"Cardinality({d}, {m})": cm.Cardinality(d, m) for d, m in (*small, (15, 4), (20, 5), (25, 4))}
    if not quick:
        more = ((15, 8), (20, 3), (25, 5), (20, 6), (20, 7), (25, 6))
        out.update({f"Cardinality({d}, {m})": cm.Cardinality(d, m) for d, m in more})
    out["PartitionMatroid(5 blocks of 4, caps 2)"] = cm.PartitionMatroid(
        [list(range(4 * k, 4 * k + 4)) for k in range(5)], [2] * 5
    )
    out["Matchings(K4)"] = cm.Matchings(nx.complete_graph(4))
    out["Matchings(K6)"] = cm.Matchings(nx.complete_graph(6))
    out["Matchings(K(4,4))"] = cm.Matchings(nx.complete_bipartite_graph(4, 4))
    if not quick:
        out["Matchings(K8)"] = cm.Matchings(nx.complete_graph(8))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--small-repeats", type=int, default=400, help="repeats on spaces of at most 5,000 actions")
    parser.add_argument("--quick", action="store_true", help="fewer spaces")
    args = parser.parse_args()
    threadpool_limits(1)
    print("| space | d | actions | route | numpy us | auto us | auto / numpy | before us | before / auto |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, space in spaces(args.quick).items():
        d = space.d
        A = space.enumerate(10**6).astype(float)
        auto = cm.make_oracle(space, "auto")
        old = EnumerateOracle(space, 10**6)
        rng = np.random.default_rng(d)
        times: dict[str, list[float]] = {"numpy": [], "auto": [], "before": []}
        repeats = args.small_repeats if len(A) <= 5_000 else args.repeats
        for _ in range(repeats + 1):  # the first round (planning, first builds) is not timed
            mu = rng.uniform(0, 1, d)
            B = rng.normal(size=(d, d))
            M = 0.1 * (B @ B.T) / d
            f = 1.0
            query = old.norm_query(mu, M, f)
            got: dict[str, object] = {}
            for name in ("numpy", "auto", "before"):
                start = time.perf_counter()
                if name == "numpy":
                    values = A @ mu + f * np.sqrt(np.maximum(((A @ M) * A).sum(axis=1), 0.0))
                    got[name] = A[int(np.argmax(values))]
                elif name == "auto":
                    got[name] = auto.argmax_norm(mu, M, f)
                else:
                    got[name] = before(old, old.norm_query(mu, M, f))
                times[name].append(time.perf_counter() - start)
            best = query.value(got["numpy"])
            assert abs(query.value(got["auto"]) - best) <= 1e-9 * (1 + abs(best)), label
            assert np.array_equal(got["auto"], got["before"]) or auto.routes.get("enumerate", 0) == 0, label
        med = {k: statistics.median(v[1:]) * 1e6 for k, v in times.items()}
        route = ", ".join(sorted(auto.routes))
        print(
            f"| {label} | {d} | {len(A):,} | {route} | {med['numpy']:.1f} | {med['auto']:.1f} |"
            f" {med['auto'] / med['numpy']:.2f} | {med['before']:.1f} | {med['before'] / med['auto']:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
