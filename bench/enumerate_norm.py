"""The ``enumerate`` backend's norm queries with a diagonal ``M``: the short path against the full quadratic form.

Run: ``.venv/bin/python bench/enumerate_norm.py [--repeats R]``

Per space: the seconds of one diagonal-``M`` norm query on ``enumerate`` (``m`` gathers an action),
the same query with every action's full quadratic form (``m^2`` gathers, the path every ``M`` took
before), and ``highs`` on the same query, side by side, interleaved, median of ``R``. The two
enumeration paths give the same values bit for bit (``tests/oracles/backends/test_enumerate_norm.py``). Figures:
``docs/performance.md``, "Oracle core and backends".
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cmab_milp as cm
from cmab_milp.oracles.backends.enumerate import EnumerateOracle


def full_forms(oracle: EnumerateOracle, M: np.ndarray) -> np.ndarray:
    """Every action's ``a M a`` by ``m^2`` gathers (the general path)."""
    padded = np.zeros((oracle.d + 1, oracle.d + 1))
    padded[: oracle.d, : oracle.d] = M
    idx = oracle._index
    total = np.zeros(len(idx))
    for p in range(idx.shape[1]):
        total += padded[idx[:, p][:, None], idx].sum(axis=1)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print("| space | actions | diagonal path ms | full form ms | full / diagonal | highs ms | highs / diagonal |")
    print("|---|---|---|---|---|---|---|")
    for d, m in ((10, 3), (15, 4), (20, 5), (25, 5)):
        space = cm.Cardinality(d, m)
        enum, highs = EnumerateOracle(space), cm.make_oracle(space, "highs")
        rng = np.random.default_rng(d)
        times: dict[str, list[float]] = {"diag": [], "full": [], "highs": []}
        for _ in range(args.repeats):
            mu, M = rng.uniform(0, 1, d), np.diag(rng.uniform(0.01, 1.0, d))
            for name in ("diag", "full", "highs"):  # interleaved
                start = time.perf_counter()
                if name == "diag":
                    a = enum.argmax_norm(mu, M, 1.0)
                elif name == "full":
                    quad = full_forms(enum, M)
                    values = enum._dense @ mu + np.sqrt(np.maximum(quad, 0.0))
                    b = enum.actions[int(np.argmax(values))]
                else:
                    c = highs.argmax_norm(mu, M, 1.0)
                times[name].append(time.perf_counter() - start)
            assert (
                np.array_equal(a, b)
                and abs(enum.norm_query(mu, M, 1.0).value(c) - enum.norm_query(mu, M, 1.0).value(a)) < 1e-9
            )
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        print(
            f"| Cardinality({d}, {m}) | {len(enum.actions)} | {med['diag']:.2f} | {med['full']:.2f} |"
            f" {med['full'] / med['diag']:.1f} | {med['highs']:.2f} | {med['highs'] / med['diag']:.1f} |"
        )


if __name__ == "__main__":
    main()
